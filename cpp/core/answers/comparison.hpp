// Several models scored on the same rows (the same labels and weights): the
// paired bootstrap of their SmoothECEs (resampling/paired.hpp), from arrays.
#pragma once

#include <cstdint>
#include <vector>

#include "pass/columns.hpp"
#include "resampling/paired.hpp"

namespace smoothece {

// The rows grouped into units: per model the unit cell of its prediction
// among `cells[m]` over the grid [0, 1] of `mapping`, and the label. Every
// model's Inputs hold the same y and w (only f differs); weights are scaled
// by 2^weight_exp.
PairedUnits units_of_rows(const std::vector<Inputs>& models, const Mapping& mapping,
                          const std::vector<std::int64_t>& cells, int weight_exp);

// Paired replicates of the models' SmoothECE, given each model's σ* of the
// full sample (metric units): one pass over the rows per model for its base
// (residual sums on the grid paired_intervals gives), one to form units.
PairedReplicates paired_bootstrap_of_rows(const std::vector<Inputs>& models, Metric metric,
                                          const std::vector<double>& sigma_star, std::int64_t count,
                                          std::uint64_t seed, WeightKind weights, std::int64_t threads);

}  // namespace smoothece
