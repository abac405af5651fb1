// Paired bootstrap of several models scored on the same rows: every
// replicate gives each row ONE Exponential(1) multiplier (the Bayesian
// bootstrap, as resample.hpp) and scores every model under it, so that a
// difference of two models' SmoothECE varies only as much as the rows make
// it (resampling each model's cells on their own would add the two
// variances, not their difference's).
//
// The rows are grouped into units: rows that share their label and, for
// every model, a unit cell (at most half the σ resolved wide). A unit draws
// one factor (the Gamma of its Σw and Σw², exactly the sum of its rows'
// multipliers) and moves each model's residual mass by (factor − 1) times
// the unit's residual, placed at the unit's mean position. So a replicate's
// node masses are the full sample's exact masses plus the drawn change:
// only the change is placed at unit resolution, and a replicate with every
// factor 1 is the full sample itself.
#pragma once

#include <cstdint>
#include <vector>

#include "resampling/resample.hpp"
#include "summary/metric.hpp"

namespace smoothece {

// Rows grouped into units for the paired bootstrap of `models` models. Sums
// add across batches, threads and machines (units with equal keys merge).
struct PairedUnits {
    std::int64_t models = 0;
    std::vector<std::int64_t> cells;  // per model: unit cells over the grid [0, 1]
    int weight_exp = 0;               // weights are scaled by 2^weight_exp, as in a Summary
    // Per unit u: its key (the cell of each model, then the label), at
    // key[u·(models + 1) + m]; its rows' Σw and Σw²; and per model m, at
    // [u·models + m], Σw(y − f) and Σw·x (x the grid position).
    std::vector<std::uint32_t> key;
    std::vector<double> weight, weight_sq, residual, weight_x;

    std::int64_t size() const { return static_cast<std::int64_t>(weight.size()); }
    // Every weight sum rescaled to 2^new_exp (as Summary::rescale).
    void rescale(int new_exp);
};

// One model's part of a paired bootstrap: its full sample's residual node
// masses (weights scaled by 2^weight_exp) on a grid of `intervals`, and the
// full sample's σ* in grid units.
struct PairedBase {
    std::vector<double> nodes;
    std::int64_t intervals = 0;
    double sigma_star = 0.0;
};

struct PairedRequest {
    std::int64_t count = 0;
    std::uint64_t seed = 0;
    WeightKind weights = WeightKind::Importance;
    std::int64_t threads = 0;
    double scale = 1.0;         // the mapping's span: σ in metric units = scale · σ on the grid
    double total_weight = 0.0;  // Σw of the full sample, scaled by 2^weight_exp
};

struct PairedReplicates {
    std::int64_t models = 0;
    std::vector<double> sigma_star;  // metric units, count × models, a replicate's models side by side
    std::int64_t unresolved = 0;     // replicate σ* below a base's grid (reported at its bound)
    std::int64_t units = 0;          // units that drew
    double widest_unit = 0.0;        // the widest unit cell over its model's σ* (grid units)
};

// The grid a model's base lies on: 16 nodes per σ at the full sample's σ*
// (grid units), a power of two in [64, kMaxPairedIntervals]; replicates
// resolve σ* down to half of it.
constexpr std::int64_t kMaxPairedIntervals = std::int64_t{1} << 16;
std::int64_t paired_intervals(double sigma_star);
// Unit cells for a base of `intervals`: 4 intervals (σ*/4) wide.
// Arrays coarsen them while there are more than this many units.
constexpr std::int64_t kMaxPairedUnits = std::int64_t{1} << 16;
std::int64_t paired_unit_cells(std::int64_t intervals);

// Replicates b = 0 … count − 1, each from its own stream (seed, b): the same
// numbers on every thread count.
PairedReplicates paired_replicates(const std::vector<PairedBase>& bases, const PairedUnits& units,
                                   const PairedRequest& request);

}  // namespace smoothece
