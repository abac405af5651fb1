// The two answers about uncertainty, as every caller reports them (arrays,
// sketches, groups, the CLI through them): the bootstrap interval of a
// SmoothECE and the test of perfect calibration. Each is computed here once,
// from the replicates of one analysis, and says what its numbers are: a
// value, or only a bound (σ* below what a sketch's grid resolves, with no
// rows behind it to look further), in which case nothing is computed from it.
#pragma once

#include <cstdint>
#include <vector>

#include "answers/analysis.hpp"
#include "resampling/resample.hpp"

namespace smoothece {

// What a reported SmoothECE is.
enum class Standing : std::uint8_t {
    Resolved = 0,  // the value (to the accuracy contract)
    Bound = 1,     // an upper bound only: σ* lies below the grid; no interval, test or curves from it
};

struct UncertaintyRequest {
    std::int64_t count = 1000;  // replicates
    std::uint64_t seed = 0;
    double level = 0.95;
    WeightKind weights = WeightKind::Importance;
    std::int64_t threads = 0;
    std::int64_t mesh_intervals = 0;  // > 0: also the pointwise band of μ̂ on this mesh
};

struct BootstrapAnswer {
    Standing standing = Standing::Resolved;
    double value = 0.0;  // σ*, or smECEσ at the fixed σ (metric units)
    double sigma = 0.0;  // the bandwidth: σ* or the fixed σ
    double low = 0.0, high = 0.0;  // the interval (bootstrap_interval's rule); NaN for a bound
    std::vector<double> replicates;
    // Replicates whose σ* lies below the grid: reported at its bound, and
    // counted as 0 by the interval (whose lower end can then only move down).
    std::int64_t below_grid = 0;
    std::vector<double> band_lower, band_upper;  // of μ̂, when a mesh was asked
};

// The bootstrap at σ* (fixed_sigma ≤ 0) or at a fixed σ (metric units).
// Throws InputError("sigma") for a fixed σ finer than the replicates resolve.
BootstrapAnswer bootstrap_answer(Analysis& analysis, double fixed_sigma, const UncertaintyRequest& request);

struct TestAnswer {
    Standing standing = Standing::Resolved;
    double statistic = 0.0;  // σ*
    // (1 + #{null ≥ statistic·kNullTie}) / (1 + count); NaN for a bound. A
    // null statistic below the grid counts at its bound: below a statistic
    // the grid resolves (its bound is 4× finer than the smallest σ resolved),
    // so there the p-value is exact; otherwise conservative.
    double p_value = 0.0;
    std::vector<double> null;
    std::int64_t below_grid = 0;  // null statistics reported at the grid's bound
    std::vector<double> band_lower, band_upper;  // the consistency band at band_sigma, when a mesh was asked
};

// The test of perfect calibration; its band (with a mesh) at band_sigma
// (metric units; ≤ 0: at the statistic).
TestAnswer test_answer(Analysis& analysis, const UncertaintyRequest& request, double band_sigma = 0.0);

}  // namespace smoothece
