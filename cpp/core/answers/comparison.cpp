#include "answers/comparison.hpp"

#include <algorithm>
#include <stdexcept>

#include "pass/rows.hpp"
#include "summary/summary.hpp"

namespace smoothece {
namespace {

// Dense ids for keys id·cells + cell of every row: the ids of the previous
// model refined by this model's cell. A table of all combinations where it is
// small, else an open-addressing hash table over the combinations that occur.
std::int64_t refine(std::vector<std::uint32_t>& id, std::int64_t ids, const std::vector<std::uint32_t>& cell,
                    std::int64_t cells) {
    const auto n = id.size();
    const std::int64_t combinations = ids * cells;
    std::int64_t next = 0;
    if (combinations <= (std::int64_t{1} << 22)) {
        std::vector<std::int32_t> table(static_cast<std::size_t>(combinations), -1);
        for (std::size_t i = 0; i < n; ++i) {
            auto& slot = table[static_cast<std::size_t>(static_cast<std::int64_t>(id[i]) * cells + cell[i])];
            if (slot < 0) slot = static_cast<std::int32_t>(next++);
            id[i] = static_cast<std::uint32_t>(slot);
        }
        return next;
    }
    int bits = 4;
    while ((std::size_t{1} << bits) < 2 * std::min<std::size_t>(n, static_cast<std::size_t>(combinations))) ++bits;
    constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
    std::vector<std::uint64_t> keys(std::size_t{1} << bits, kEmpty);
    std::vector<std::uint32_t> values(keys.size());
    const std::size_t mask = keys.size() - 1;
    for (std::size_t i = 0; i < n; ++i) {
        const auto key = static_cast<std::uint64_t>(id[i]) * static_cast<std::uint64_t>(cells) + cell[i];
        std::size_t slot = fibonacci_slot(key, bits);
        while (keys[slot] != kEmpty && keys[slot] != key) slot = (slot + 1) & mask;
        if (keys[slot] == kEmpty) {
            keys[slot] = key;
            values[slot] = static_cast<std::uint32_t>(next++);
        }
        id[i] = values[slot];
    }
    return next;
}

}  // namespace

PairedUnits units_of_rows(const std::vector<Inputs>& models, const Mapping& mapping,
                          const std::vector<std::int64_t>& cells, int weight_exp) {
    const std::size_t k = models.size();
    if (k == 0 || cells.size() != k) throw std::invalid_argument("one cell count per model is needed");
    const auto n = static_cast<std::size_t>(models[0].size());
    PairedUnits units;
    units.models = static_cast<std::int64_t>(k);
    units.cells = cells;
    units.weight_exp = weight_exp;
    if (static_cast<double>(n) >= 4.0e9) throw std::length_error("a paired bootstrap takes at most 4e9 rows");

    // Unit ids: the label, refined model by model by its cell.
    std::vector<std::uint32_t> id(n), cell(n);
    std::int64_t ids = 2;
    for (std::size_t m = 0; m < k; ++m) {
        const auto c = static_cast<double>(cells[m]);
        for_each_block(models[m], [&](std::int64_t b, std::int64_t count, const double* f, const double* y, const double*) {
            for (std::int64_t j = 0; j < count; ++j) {
                const auto i = static_cast<std::size_t>(b + j);
                const double x = mapping.position(std::min(std::max(f[j], 0.0), 1.0));
                cell[i] = static_cast<std::uint32_t>(std::min<double>(x * c, c - 1.0));
                if (m == 0) id[i] = y[j] == 1.0 ? 1u : 0u;
            }
        });
        ids = refine(id, ids, cell, cells[m]);
    }

    const auto units_count = static_cast<std::size_t>(ids);
    units.key.assign(units_count * (k + 1), 0);
    units.weight.assign(units_count, 0.0);
    units.weight_sq.assign(units_count, 0.0);
    units.residual.assign(units_count * k, 0.0);
    units.weight_x.assign(units_count * k, 0.0);
    for (std::size_t m = 0; m < k; ++m) {
        const auto c = static_cast<double>(cells[m]);
        for_each_block(models[m], [&](std::int64_t b, std::int64_t count, const double* f, const double* y, const double* w) {
            for (std::int64_t j = 0; j < count; ++j) {
                const auto i = static_cast<std::size_t>(b + j);
                const std::size_t u = id[i];
                const double wi = w ? std::ldexp(w[j], weight_exp) : 1.0;
                const double fi = std::min(std::max(f[j], 0.0), 1.0);
                const double x = mapping.position(fi);
                units.key[u * (k + 1) + m] = static_cast<std::uint32_t>(std::min<double>(x * c, c - 1.0));
                units.residual[u * k + m] += wi * (y[j] - fi);
                units.weight_x[u * k + m] += wi * x;
                if (m == 0) {
                    units.key[u * (k + 1) + k] = y[j] == 1.0 ? 1u : 0u;
                    units.weight[u] += wi;
                    units.weight_sq[u] += wi * wi;
                }
            }
        });
    }
    return units;
}

PairedReplicates paired_bootstrap_of_rows(const std::vector<Inputs>& models, Metric metric,
                                          const std::vector<double>& sigma_star, std::int64_t count,
                                          std::uint64_t seed, WeightKind weights, std::int64_t threads) {
    if (models.empty() || sigma_star.size() != models.size()) throw std::invalid_argument("one σ* per model is needed");
    const Mapping mapping = metric == Metric::Logit ? Mapping::logit() : Mapping::l1();
    const int weight_exp = weight_exponent_of(models[0]);
    std::vector<PairedBase> bases(models.size());
    std::vector<std::int64_t> cells(models.size());
    PairedRequest req;
    req.count = count;
    req.seed = seed;
    req.weights = weights;
    req.threads = threads;
    req.scale = mapping.span;
    for (std::size_t m = 0; m < models.size(); ++m) {
        PairedBase& base = bases[m];
        base.sigma_star = sigma_star[m] / mapping.span;
        base.intervals = paired_intervals(base.sigma_star);
        Summary s = summarise_rows(models[m], PassOptions{mapping, Content::Residual, base.intervals, threads, true});
        if (s.weight_exp != weight_exp) throw std::logic_error("the models' passes scaled the weights differently");
        base.nodes = std::move(s.residual);
        req.total_weight = s.weight;
        cells[m] = paired_unit_cells(base.intervals);
    }
    // Units at a quarter of each σ* while they are few; beyond kMaxPairedUnits
    // (noisy models, several of them: up to one unit a row) every model's
    // cells halve, down to one σ* wide, so that a replicate's cost stays that
    // of its grids, not of the rows. Within a unit the rows share a label, so
    // their residuals differ by no more than the cell's width in f: a coarser
    // unit places their change of mass less finely, and nothing else.
    PairedUnits units = units_of_rows(models, mapping, cells, weight_exp);
    for (;;) {
        if (units.size() <= kMaxPairedUnits) break;
        bool coarser = false;
        for (std::size_t m = 0; m < models.size(); ++m) {
            if (static_cast<double>(cells[m]) / 2.0 * bases[m].sigma_star >= 1.0) {
                cells[m] /= 2;
                coarser = true;
            }
        }
        if (!coarser) break;
        units = units_of_rows(models, mapping, cells, weight_exp);
    }
    return paired_replicates(bases, units, req);
}

}  // namespace smoothece
