// The summary of the rows: everything every answer needs (README,
// Architecture: "summarise once, answer from the summary").
//
// Node masses on the grid t_j = j/G, j = 0..G (each row spread onto the four
// nodes around it with cubic weights that keep its moments to order 3):
//   residual  Σ w(y − f)                      (always)
//   w0, w1    Σ w of the rows with y = 0, 1   (full summaries)
//   f0, f1    Σ w·f of those rows             (full summaries)
// from which the diagram's density Σw = w0 + w1 and label sums Σwy = w1 follow,
// and, per resampling cell (G/8 cells) and label, the rows of positive weight,
// Σw, Σw² and Σw·f that resampling draws from. Sums add across batches,
// threads and machines.
#pragma once

#include <cstdint>
#include <vector>

#include "summary/metric.hpp"

namespace smoothece {

enum class Content : std::uint8_t {
    Residual = 0,  // the residual sums alone: all that σ* and smECEσ need
    Full = 1,      // everything: the diagram and resampling too
};

// Grid resolution: σ is evaluated on G ≥ kNodesPerSigma/σ intervals. With
// cubic moment binning the error is O((h/σ)⁴), ≲ 1e-8 at this resolution
// (tests/test_accuracy.py measures it against the exact integral).
constexpr double kNodesPerSigma = 16.0;
constexpr std::int64_t kMinIntervals = 64;
constexpr std::int64_t kMaxIntervals = std::int64_t{1} << 22;
// The first grid of a pass over n rows is capped here (1 MB of residual
// cells per thread); σ* below what it resolves gets a second look.
constexpr std::int64_t kFirstIntervalsCap = std::int64_t{1} << 15;
constexpr std::int64_t kLogitFirstIntervalsCap = std::int64_t{1} << 17;
// On the logit axis a residual summary's first grid may grow to 2^19 (16 MB
// of cells a thread) while it keeps at least 4 rows an interval (2^18 from
// 1.05e6 rows, 2^19 from 2.1e6): the floor of 4e6 calibrated rows resolved
// in one pass (83 ms) rather than a pass, the look for atoms and a second
// pass on the finer grid (245 ms); 2e6 rows (2^18, two passes) 114 ms against 120; at 1e6 rows
// the two passes and 2^17 cost less than one pass on 2^19 (78 vs 88 ms).
constexpr std::int64_t kLogitResidualFirstIntervalsCap = std::int64_t{1} << 19;
constexpr std::int64_t kLogitRowsPerInterval = 4;
constexpr double kFirstGridFloorFraction = 0.6;
// A residual summary's first grid from this many rows on (below).
constexpr std::int64_t kResidualFloorRows = 5000000;
constexpr double kResidualFloorFraction = 0.8;
// Resampling cells are this many grid intervals wide: half the smallest σ
// the grid resolves, so that a cell never blurs the kernel.
constexpr std::int64_t kIntervalsPerResampleCell = 8;

// Smallest power of two G ≥ kNodesPerSigma/σ (within [kMinIntervals, kMaxIntervals]).
std::int64_t intervals_for_sigma(double sigma);
// Smallest σ evaluated to the accuracy contract on `intervals`.
double min_sigma_for(std::int64_t intervals);
// The first grid for n rows in `mapping`'s metric. On the probability axis
// it resolves kFirstGridFloorFraction of the noise floor of calibrated data
// (σ* ≈ 0.3·n^(−1/3); σ*/floor measured ≥ 0.65 at n = 100, ≥ 0.75 at 1e3,
// ≥ 0.9 from 1e5 on, 40–300 data sets each), as a power of two: calibrated
// data needs no second look, and small inputs skip the fixed cost of a
// finer grid (O(G) work is most of a call below ~1e4 rows). Powers of two
// only: every level and σ-grid is then nested in it (results agree across
// paths to rounding), and the 512-interval mesh takes every step-th node.
// A residual summary (σ* and smECEσ alone) of kResidualFloorRows rows or
// more resolves kResidualFloorFraction of the floor instead: from 6.2e6 to
// 1.5e7 rows that is 2^14 intervals, not 2^15, and the cells, 512 KB a
// thread instead of 1 MB, stay in a core's L2 cache beside the stream of
// rows (1e7 rows: 12-14% less time). σ*/floor was ≥ 0.83 in 500 calibrated
// sets of 1e5 rows and ≥ 0.887 in 300 of 2.31e5 rows (where 0.8 of the
// floor is a power of two's resolution), ≥ 0.97 at 1e6 and 1e7. Below 5e6
// rows it would save as much (12-20% at 1e5 and 1e6), but there the finer
// grid resolves the σ* of exactly calibrated discrete forecasts, which the
// coarser one sends to the few-atoms pass (2.5x the time at 1e5 and 1e6
// rows); a cheaper second look would let the rule hold at every n. A full
// summary keeps the finer grid, which its resampling cells follow.
std::int64_t first_intervals(std::int64_t n, const Mapping& mapping, Content content);

// Per resampling cell c and label y (index 2c + y).
struct ResampleCells {
    std::int64_t cells = 0;
    std::vector<double> rows, weight, weight_sq, weight_f;

    void resize(std::int64_t cells_);
    std::size_t slots() const { return rows.size(); }
};

struct Summary {
    Mapping mapping;
    Content content = Content::Residual;
    std::int64_t intervals = 0;  // G
    std::vector<double> residual;
    std::vector<double> w0, w1, f0, f1;  // full only
    ResampleCells cells;                 // full only
    std::uint64_t rows = 0;              // all rows, zero weights included
    std::uint64_t positive_rows = 0;     // rows of positive weight
    double weight = 0.0;                 // Σ w · 2^weight_exp
    int weight_exp = 0;                  // every weight was multiplied by 2^weight_exp

    bool full() const { return content == Content::Full; }
    std::int64_t nodes() const { return intervals + 1; }
    double total_weight() const;  // Σ w in the caller's units
    double min_sigma() const { return min_sigma_for(intervals); }

    // An empty summary of the given shape.
    static Summary empty(const Mapping& mapping, Content content, std::int64_t intervals);
    // The node sums on a coarser grid (any coarse ≤ G); cells unchanged.
    Summary restricted(std::int64_t coarse, bool residual_only = false) const;
    // Adds another summary of the same shape (weights rescaled to the larger exponent).
    void merge(const Summary& other);
    // Rescales every weight sum to 2^new_exp (exact but for underflow of negligible sums).
    void rescale(int new_exp);
    // A full summary's residual is w1 − f0 − f1 at each node: a function of
    // what it stores, so that merging and serializing cannot make them disagree.
    void derive_residual();
};

// Node masses on a grid of `coarse` ≤ G intervals: each node of the fine grid
// binned as a point mass, exactly as a row there would be (exact moments to
// order 3, so the error stays O((h/σ)⁴) of the coarse grid).
std::vector<double> rebin_nodes(const std::vector<double>& fine, std::int64_t coarse);

// A cell's power sums m[p] = Σ w·λ^p (p = 0..3) as masses on nodes cell−1,
// cell, cell+1 and cell+2: the adjoint of cubic Lagrange interpolation.
struct CubicWeights {
    double before, left, right, after;
};
inline CubicWeights cubic_weights(const double* m) {
    constexpr double kSixth = 1.0 / 6.0;
    return {-(m[3] - 3.0 * m[2] + 2.0 * m[1]) * kSixth, (m[3] - 2.0 * m[2] - m[1] + 2.0 * m[0]) * 0.5,
            -(m[3] - m[2] - 2.0 * m[1]) * 0.5, (m[3] - m[1]) * kSixth};
}

// Node j of a grid of `last` intervals reflected into [0, last]: the nodes
// beyond 0 and 1 (j < 0, j > last) carry mass for their mirror images
// (K̃σ(t, −x) = K̃σ(t, x)), for |j| and 2·last − j up to last away.
inline std::int64_t reflected_node(std::int64_t j, std::int64_t last) {
    return j < 0 ? -j : (j > last ? 2 * last - j : j);
}

// Spreads one cell's power sums onto nodes cell−1..cell+2 of node[0, last]
// with those weights (reflected at 0 and 1: K̃σ(t, −x) = K̃σ(t, x)).
// Inline: it runs once per occupied cell in every pass and restriction.
inline void spread_cubic(double* node, std::int64_t last, std::int64_t cell, const double (&m)[4]) {
    const auto [w_before, w_left, w_right, w_after] = cubic_weights(m);
    if (cell >= 1 && cell + 2 <= last) {  // interior: no reflection needed
        double* n = node + cell;
        n[-1] += w_before;
        n[0] += w_left;
        n[1] += w_right;
        n[2] += w_after;
        return;
    }
    // Nodes −1 and G+1 lie outside [0, 1]; their mass goes to the mirror images 1 and G−1.
    auto at = [&](std::int64_t j) -> double& { return node[reflected_node(j, last)]; };
    at(cell - 1) += w_before;
    at(cell) += w_left;
    at(cell + 1) += w_right;
    at(cell + 2) += w_after;
}
inline void spread_cubic(std::vector<double>& node, std::int64_t cell, const double (&m)[4]) {
    spread_cubic(node.data(), static_cast<std::int64_t>(node.size()) - 1, cell, m);
}

}  // namespace smoothece
