#include "products/sketch.hpp"

#include <cmath>
#include <unordered_set>

#include "pass/rows.hpp"
#include "runtime/errors.hpp"

namespace smoothece {

std::string merge_mismatch(const std::string& what, Metric metric, std::int64_t resolution, Metric other_metric,
                           std::int64_t other_resolution) {
    return "cannot merge " + what + " of different metric or resolution (" + metric_name(metric) + " at " +
           std::to_string(resolution) + " and " + metric_name(other_metric) + " at " + std::to_string(other_resolution) +
           ")";
}
namespace {

constexpr std::int64_t kMinResolution = 256;
// Batches of at least this many rows per grid interval take the grid pass
// (threaded, vectorized); smaller ones are spread onto the blocks.
constexpr std::int64_t kGridPassRowsPerInterval = 4;

bool is_power_of_two(std::int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

[[noreturn]] void throw_too_many_rows(std::uint64_t rows) {
    throw InputError("the sketch's row count would pass 2^53 (9.0e15 rows), beyond which its counts are not exact",
                     "rows", -1, static_cast<double>(rows), 1, 1);
}

// Σw·f of each atom as f·Σw at its rounded prediction: what the bytes
// restore, and the same whatever order the rows' sums were added in.
void own_weight_f(Atoms& atoms) {
    for (std::size_t i = 0; i < atoms.size(); ++i) {
        const double f = atoms.mapping.prediction(atoms.x[i]);
        for (int y = 0; y < 2; ++y) atoms.by_label[y][i].weight_f = atoms.by_label[y][i].weight * f;
    }
}

// The sketch's atoms: positions rounded to 2^-40 (equal keys combined), rows
// of zero weight dropped (they carry nothing; the row total keeps them), and
// Σw·f its own (own_weight_f).
Atoms canonical(const Atoms& in) {
    Atoms out;
    out.mapping = in.mapping;
    out.rows = in.rows;
    out.weight_exp = in.weight_exp;
    out.x.reserve(in.size());
    for (auto& v : out.by_label) v.reserve(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
        const double x = sketch_rounded(in.x[i]);
        if (!(in.by_label[0][i].weight > 0.0) && !(in.by_label[1][i].weight > 0.0)) continue;
        if (out.x.empty() || out.x.back() != x) {
            out.x.push_back(x);
            out.by_label[0].emplace_back();
            out.by_label[1].emplace_back();
        }
        for (int y = 0; y < 2; ++y) {
            const AtomStats& s = in.by_label[y][i];
            if (!(s.weight > 0.0)) continue;
            AtomStats& d = out.by_label[y].back();
            d.rows += s.rows;
            d.weight += s.weight;
            d.weight_sq += s.weight_sq;
        }
    }
    own_weight_f(out);
    return out;
}

}  // namespace

Sketch::Sketch(Metric metric, std::int64_t resolution)
    : mapping_(metric == Metric::Logit ? Mapping::logit() : Mapping::l1()), resolution_(resolution) {
    if (!is_power_of_two(resolution) || resolution < kMinResolution || resolution > kMaxIntervals)
        throw InputError("resolution must be a power of two between " + std::to_string(kMinResolution) + " and " +
                             std::to_string(kMaxIntervals) + ", got " + std::to_string(resolution),
                         "resolution", -1, static_cast<double>(resolution), 1, 1);
    Atoms empty;
    empty.mapping = mapping_;
    state_.atoms = std::make_shared<const Atoms>(std::move(empty));
}

Sketch::Sketch(const Sketch& other)
    : mapping_(other.mapping_), resolution_(other.resolution_), state_(other.snapshot()) {}

Sketch::Sketch(Sketch&& other) noexcept : mapping_(other.mapping_), resolution_(other.resolution_) {
    std::lock_guard<std::mutex> lock(other.mutex_);
    state_ = std::move(other.state_);
}

Sketch& Sketch::operator=(const Sketch& other) {
    if (this != &other) {
        Sketch copy(other);
        std::lock_guard<std::mutex> lock(mutex_);
        mapping_ = copy.mapping_;
        resolution_ = copy.resolution_;
        state_ = std::move(copy.state_);
    }
    return *this;
}

Sketch::State Sketch::snapshot() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return state_;
}

double Sketch::State::total_scaled() const { return atoms ? atoms->total_weight_scaled() : grid->weight; }

int Sketch::State::weight_exp() const { return atoms ? atoms->weight_exp : grid->weight_exp; }

double Sketch::State::positive_rows() const {
    if (!atoms) return static_cast<double>(grid->positive_rows);
    double n = 0.0;
    for (int y = 0; y < 2; ++y)
        for (const AtomStats& a : atoms->by_label[y]) n += a.rows;
    return n;
}

Sketch::State Sketch::add(const State& a, const State& b) const {
    State out;
    if (b.rows > kMaxSketchRows - a.rows) throw_too_many_rows(a.rows);
    out.rows = a.rows + b.rows;
    out.traits = a.traits + b.traits;
    // Atoms stay atoms while their union is few: that depends on the rows
    // alone (a batch's atoms count positions as the sketch keeps them).
    if (a.atoms && b.atoms) {
        Atoms both = merged(*a.atoms, *b.atoms);
        both.rows = out.rows;
        own_weight_f(both);
        if (both.size() <= max_atoms()) {
            out.atoms = std::make_shared<const Atoms>(std::move(both));
            check_totals(out);
            return out;
        }
        out.grid = BlockedSummary(mapping_, resolution_);
        out.grid->add(both);
    } else {
        // Copies share the blocks: only those the other part reaches are copied.
        out.grid = a.grid ? *a.grid : BlockedSummary(mapping_, resolution_);
        if (a.atoms) out.grid->add(*a.atoms);
        if (b.grid) out.grid->merge(*b.grid);
        else out.grid->add(*b.atoms);
    }
    out.grid->rows = out.rows;
    check_totals(out);
    return out;
}

void Sketch::check_totals(const State& s) const {
    const double total = std::ldexp(s.total_scaled(), -s.weight_exp());
    if (!std::isfinite(total))
        throw InputError("weights: the sketch's total weight would overflow (above 1.8e308); rescale the weights",
                         "weights", -1, total, 1, 1);
}

void Sketch::update(const Inputs& in, std::int64_t threads) {
    check_shapes(in, /*allow_empty=*/true);
    if (in.size() == 0) return;
    // The batch's own state first (the slow part, outside the lock): its atoms
    // if they are few, else its summary on the grid.
    State batch;
    batch.rows = static_cast<std::uint64_t>(in.size());
    if (exact()) {  // still the atoms form (exact() locks for that read alone)
        if (auto atoms = atoms_of_rows(in, mapping_, weight_exponent_of(in), max_atoms(), 1, AtomKeys::Sketch)) {
            batch.atoms = std::make_shared<const Atoms>(canonical(*atoms));
        }
    }
    if (!batch.atoms) {
        // The grid pass costs O(resolution) besides its rows; a batch much
        // smaller than the grid is spread row by row onto the blocks it reaches.
        if (in.size() >= kGridPassRowsPerInterval * resolution_)
            batch.grid = BlockedSummary(summarise_rows(in, PassOptions{mapping_, Content::Full, resolution_, threads, true}));
        else
            batch.grid = summarise_rows_blocked(in, mapping_, resolution_);
    }
    // After the pass (the rows are valid); once a weight had a fraction the
    // sketch's traits stay so, and its batches need no look.
    batch.traits = weight_traits().whole ? weight_traits_of(in.w) : WeightTraits{false, false};
    std::lock_guard<std::mutex> lock(mutex_);
    state_ = add(state_, batch);
}

Sketch Sketch::merge_all(const std::vector<Sketch>& parts, Metric metric, std::int64_t resolution) {
    Sketch out(metric, resolution);
    std::vector<std::shared_ptr<const Atoms>> atoms;
    std::optional<BlockedSummary> grid;
    std::uint64_t rows = 0;
    WeightTraits traits;
    for (const Sketch& part : parts) {
        if (part.mapping_.metric != metric || part.resolution_ != resolution)
            throw InputError(merge_mismatch("sketches", metric, resolution, part.mapping_.metric, part.resolution_), "other");
        std::lock_guard<std::mutex> lock(part.mutex_);
        const State& s = part.state_;
        if (s.rows > kMaxSketchRows - rows) throw_too_many_rows(rows);
        rows += s.rows;
        traits = traits + s.traits;
        if (s.atoms) {
            if (s.atoms->size() > 0) atoms.push_back(s.atoms);
        } else if (grid) {
            grid->merge(*s.grid);
        } else {
            grid = *s.grid;
        }
    }
    // Do the parts' positions stay few together? Counted in one hash set that
    // stops at the first position too many (continuous data stop early).
    bool few = !grid;
    if (few) {
        std::unordered_set<std::uint64_t> positions;
        positions.reserve(2 * out.max_atoms() + 2);
        for (const auto& a : atoms) {
            for (double x : a->x) positions.insert(sketch_key(x));
            if (positions.size() > out.max_atoms()) break;
        }
        few = positions.size() <= out.max_atoms();
    }
    // Then pairwise merges, in a balanced tree, every union within the atoms form.
    while (few && atoms.size() > 1) {
        std::vector<std::shared_ptr<const Atoms>> next;
        for (std::size_t i = 0; i < atoms.size(); i += 2)
            next.push_back(i + 1 == atoms.size() ? atoms[i]
                                                 : std::make_shared<const Atoms>(merged(*atoms[i], *atoms[i + 1])));
        atoms = std::move(next);
    }
    if (few) {
        Atoms all = atoms.empty() ? Atoms{} : *atoms.front();
        all.mapping = out.mapping_;
        all.rows = rows;
        own_weight_f(all);
        out.state_.atoms = std::make_shared<const Atoms>(std::move(all));
    } else {
        if (!grid) grid = BlockedSummary(out.mapping_, resolution);
        for (const auto& a : atoms) grid->add(*a);
        grid->rows = rows;
        out.state_.atoms = nullptr;
        out.state_.grid = std::move(grid);
    }
    out.state_.rows = rows;
    out.state_.traits = traits;
    out.check_totals(out.state_);
    return out;
}

void Sketch::merge(const Sketch& other) {
    if (other.mapping_.metric != mapping_.metric || other.resolution_ != resolution_)
        throw InputError(merge_mismatch("sketches", mapping_.metric, resolution_, other.mapping_.metric, other.resolution_),
                         "other");
    const State theirs = other.snapshot();  // taken before this sketch's lock: s.merge(s) is safe
    std::lock_guard<std::mutex> lock(mutex_);
    state_ = add(state_, theirs);
}

Analysis Sketch::analysis() const {
    const State s = snapshot();
    if (s.rows == 0) throw InputError("the sketch is empty: update it with some rows first", "sketch");
    if (!(s.total_scaled() > 0.0))
        throw InputError("weights: the sketch's weights sum to zero; at least one must be positive", "weights");
    if (s.atoms) {
        const auto positive = static_cast<std::int64_t>(s.positive_rows());
        Summary summary = summarise_atoms(*s.atoms, Content::Full, first_intervals(positive, mapping_, Content::Full));
        return Analysis(std::move(summary), rows_of_atoms(s.atoms));
    }
    return Analysis(s.grid->dense(), nullptr);
}

std::uint64_t Sketch::rows() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return state_.rows;
}

double Sketch::total_weight() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::ldexp(state_.total_scaled(), -state_.weight_exp());
}

bool Sketch::exact() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return state_.atoms != nullptr;
}

WeightTraits Sketch::weight_traits() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return state_.traits;
}

std::size_t Sketch::memory_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::size_t bytes = sizeof(Sketch);
    if (state_.atoms) bytes += state_.atoms->size() * (sizeof(double) + 2 * sizeof(AtomStats));
    else bytes += state_.grid->memory_bytes();
    return bytes;
}

}  // namespace smoothece
