#include "products/paired_sketch.hpp"

#include <algorithm>
#include <stdexcept>

#include "answers/comparison.hpp"
#include "pass/rows.hpp"
#include "runtime/errors.hpp"

namespace smoothece {

std::string key_bytes_of(const PairedUnits& u, std::size_t unit) {
    const auto width = static_cast<std::size_t>(u.models + 1);
    return std::string(reinterpret_cast<const char*>(u.key.data() + unit * width), width * sizeof(std::uint32_t));
}

PairedSketch::PairedSketch(Metric metric, std::int64_t resolution, std::int64_t models, std::int64_t unit_cells)
    : mapping_(metric == Metric::Logit ? Mapping::logit() : Mapping::l1()), unit_cells_(unit_cells) {
    if (models < 2 || models > 64) throw InputError("models must be from 2 to 64, got " + std::to_string(models), "models");
    if (unit_cells < 16 || unit_cells > (std::int64_t{1} << 16) || (unit_cells & (unit_cells - 1)) != 0)
        throw InputError("unit_cells must be a power of two from 16 to 65536, got " + std::to_string(unit_cells),
                         "unit_cells");
    sketches_.reserve(static_cast<std::size_t>(models));
    for (std::int64_t m = 0; m < models; ++m) sketches_.emplace_back(metric, resolution);
    units_.models = models;
    units_.cells.assign(static_cast<std::size_t>(models), unit_cells);
}

PairedSketch::PairedSketch(const PairedSketch& other) : mapping_(other.mapping_), unit_cells_(other.unit_cells_) {
    std::lock_guard<std::mutex> lock(other.mutex_);
    sketches_ = other.sketches_;
    units_ = other.units_;
    index_ = other.index_;
}

std::int64_t PairedSketch::unit_cells() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return unit_cells_;
}

std::int64_t PairedSketch::units() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return units_.size();
}

std::size_t PairedSketch::memory_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::size_t bytes = 0;
    for (const Sketch& s : sketches_) bytes += s.memory_bytes();
    const auto n = static_cast<std::size_t>(units_.size()), k = static_cast<std::size_t>(units_.models);
    // the sums and keys, and the index: its key string and node
    return bytes + n * ((2 + 2 * k) * sizeof(double) + (k + 1) * sizeof(std::uint32_t)) +
           n * (sizeof(std::string) + (k + 1) * sizeof(std::uint32_t) + 4 * sizeof(void*));
}

// Units of `batch` (at cells ≥ this sketch's) added into this sketch's, by
// key, then coarser cells while there are more than kMaxSketchUnits.
void PairedSketch::add_units(const PairedUnits& batch_in) {
    PairedUnits batch = batch_in;
    const auto k = static_cast<std::size_t>(units_.models), width = k + 1;
    // the batch's keys at this sketch's cells (a cell of 2c or 2c + 1 is c of half as many)
    for (std::int64_t cells = batch.cells[0]; cells > unit_cells_; cells /= 2) {
        for (std::size_t u = 0; u < static_cast<std::size_t>(batch.size()); ++u)
            for (std::size_t m = 0; m < k; ++m) batch.key[u * width + m] >>= 1;
    }
    const int exp = std::max(units_.weight_exp, batch.weight_exp);
    if (units_.size() == 0) units_.weight_exp = exp;
    units_.rescale(exp);
    batch.rescale(exp);
    for (std::size_t u = 0; u < static_cast<std::size_t>(batch.size()); ++u) {
        const auto [it, added] = index_.emplace(key_bytes_of(batch, u), static_cast<std::size_t>(units_.size()));
        const std::size_t at = it->second;
        if (added) {
            units_.key.insert(units_.key.end(), batch.key.begin() + static_cast<std::ptrdiff_t>(u * width),
                              batch.key.begin() + static_cast<std::ptrdiff_t>((u + 1) * width));
            units_.weight.push_back(0.0);
            units_.weight_sq.push_back(0.0);
            units_.residual.resize(units_.residual.size() + k, 0.0);
            units_.weight_x.resize(units_.weight_x.size() + k, 0.0);
        }
        units_.weight[at] += batch.weight[u];
        units_.weight_sq[at] += batch.weight_sq[u];
        for (std::size_t m = 0; m < k; ++m) {
            units_.residual[at * k + m] += batch.residual[u * k + m];
            units_.weight_x[at * k + m] += batch.weight_x[u * k + m];
        }
    }
    while (units_.size() > kMaxSketchUnits && unit_cells_ > kMinUnitCells) coarsen_to(unit_cells_ / 2);
}

void PairedSketch::coarsen_to(std::int64_t cells) {
    PairedUnits old = std::move(units_);
    units_ = PairedUnits();
    units_.models = old.models;
    units_.weight_exp = old.weight_exp;
    index_.clear();
    unit_cells_ = cells;
    units_.cells.assign(static_cast<std::size_t>(old.models), cells);
    add_units(old);
}

void PairedSketch::update(const std::vector<Inputs>& models, std::int64_t threads) {
    if (models.size() != sketches_.size())
        throw InputError("this paired sketch holds " + std::to_string(sketches_.size()) + " models, got " +
                             std::to_string(models.size()) + " prediction arrays", "predictions");
    // Each model's batch into a sketch of its own first: every row is checked
    // before anything is added.
    std::vector<Sketch> batch;
    batch.reserve(models.size());
    for (std::size_t m = 0; m < models.size(); ++m) {
        batch.emplace_back(mapping_.metric, sketches_[0].resolution());
        try {
            batch.back().update(models[m], threads);
        } catch (const InputError& err) {  // which model's rows (the caller names it)
            throw InputError("model " + std::to_string(m) + ": " + err.what(), err.argument, err.index, err.value,
                             err.count, err.size);
        }
    }
    std::vector<std::int64_t> cells;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        cells = units_.cells;
    }
    // (another thread may coarsen the cells meanwhile: add_units brings these units to them)
    const PairedUnits units = units_of_rows(models, mapping_, cells, weight_exponent_of(models[0]));
    std::lock_guard<std::mutex> lock(mutex_);
    for (std::size_t m = 0; m < sketches_.size(); ++m) sketches_[m].merge(batch[m]);
    add_units(units);
}

void PairedSketch::merge(const PairedSketch& other) {
    if (&other == this) {
        const PairedSketch copy(other);
        merge(copy);
        return;
    }
    std::scoped_lock lock(mutex_, other.mutex_);
    if (other.sketches_.size() != sketches_.size() || other.mapping_ != mapping_ ||
        other.sketches_[0].resolution() != sketches_[0].resolution())
        throw InputError("cannot merge paired sketches of different models, metric or resolution", "other");
    for (std::size_t m = 0; m < sketches_.size(); ++m) sketches_[m].merge(other.sketches_[m]);
    if (other.unit_cells_ < unit_cells_) coarsen_to(other.unit_cells_);  // both on the coarser cells
    add_units(other.units_);
}

PairedReplicates PairedSketch::replicates(const std::vector<double>& sigma_star, std::int64_t count,
                                          std::uint64_t seed, WeightKind weights, std::int64_t threads) const {
    if (sigma_star.size() != sketches_.size()) throw std::invalid_argument("one σ* per model is needed");
    PairedUnits units;
    std::vector<Analysis> analyses;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        units = units_;
        for (const Sketch& s : sketches_) analyses.push_back(s.analysis());
    }
    PairedRequest req;
    req.count = count;
    req.seed = seed;
    req.weights = weights;
    req.threads = threads;
    req.scale = mapping_.span;
    std::vector<PairedBase> bases(analyses.size());
    int exp = 0;
    for (std::size_t m = 0; m < analyses.size(); ++m) {
        PairedBase& base = bases[m];
        base.sigma_star = sigma_star[m] / mapping_.span;
        Summary s = analyses[m].residual_on(paired_intervals(base.sigma_star), threads);
        if (m > 0 && s.weight_exp != exp) s.rescale(exp);  // the models' weights are the same rows'
        exp = s.weight_exp;
        base.intervals = s.intervals;
        base.nodes = std::move(s.residual);
        req.total_weight = s.weight;
    }
    units.rescale(exp);
    return paired_replicates(bases, units, req);
}

}  // namespace smoothece
