// Steps 3–4: the integral ∫|r̂σ| and the fixpoint σ* = smECE_{σ*}.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "grid.hpp"
#include "smoothing.hpp"

namespace smoothece {

// Grid resolution: a σ is evaluated on G = 2^k ≥ kNodesPerSigma/σ intervals
// (at least kMinIntervals). Smoothing and integration are exact up to
// rounding; what remains is the error of linear binning, O((h/σ)²) relative,
// ≲ 1e-7 for σ ≥ 0.002 at this resolution (measured against the exact
// integral in tests/test_accuracy.py).
constexpr double kNodesPerSigma = 16.0;
constexpr std::int64_t kMinIntervals = 256;
constexpr std::int64_t kDefaultFineIntervals = std::int64_t{1} << 15;  // σ ≥ 0.00049
constexpr std::int64_t kMaxIntervals = std::int64_t{1} << 22;          // σ ≥ 3.8e-6
// The logit metric's grid spans 2·(27.63 + 10) = 75.3 logit units: 2^17 cells
// resolve σ ≥ 0.009 there (σ* is rarely smaller; a second pass handles it).
constexpr std::int64_t kDefaultLogitIntervals = std::int64_t{1} << 17;
constexpr double kLogitPad = 10.0;  // ≥ 10σ for every σ ≤ 1, where σ* lies

// Intervals needed to evaluate σ to the accuracy contract.
std::int64_t intervals_for_sigma(double sigma);
// Smallest σ that a grid of `intervals` evaluates to the accuracy contract.
double min_sigma_for(std::int64_t intervals);

// ∫₀¹ |r| from r and its antiderivative F at the nodes j/G: the sum over the
// sign-constant pieces of |F(end) − F(start)|. Roots are located inside the
// cells where r changes sign, on the cubic Hermite interpolant of F. Since F
// comes from the spectrum, this is exact up to the O(h⁴) interpolation at the
// roots: there is no quadrature error and no error from the kinks of |r|.
double integrate_abs(const double* r, const double* F, std::int64_t intervals);

// smECEσ for residual sums binned at any resolution: evaluates each σ on the
// coarsest nested grid that resolves it, caching each level's spectrum.
class ResidualLevels {
public:
    explicit ResidualLevels(GridSums fine);
    double smece_sigma(double sigma);
    double min_sigma() const { return min_sigma_for(fine_.intervals); }
    double total_weight() const { return fine_.total_weight; }
    const GridSums& sums() const { return fine_; }
    GridSums release() { return std::move(fine_); }
    bool all_zero() const;

private:
    const SmoothedMasses& level(std::int64_t intervals);
    GridSums fine_;
    std::map<std::int64_t, std::unique_ptr<SmoothedMasses>> levels_;
    std::vector<double> values_, antiderivative_;
};

struct FixpointResult {
    double sigma = 0.0;        // σ*
    int evaluations = 0;       // smECEσ evaluations used
    bool resolved = true;      // false if σ* is below what `levels` resolves; then
                               // sigma is a rough lower estimate of σ*
};

// σ* (in grid units) with smECE_{σ*} = scale·σ* to |scale·(σ − σ*)| ≤ tol
// (plus the evaluation error), by Brent's method on g(σ) = smECEσ − scale·σ
// (strictly decreasing). scale is 1 on [0, 1] and the span of the logit
// grid for the logit metric. The bracket starts at [σ_min, smECE_{σ_min}/scale]:
// since smECEσ is non-increasing, scale·σ* ≤ smECE_{σ_min}.
// A hint > 0 (a guess of σ*, e.g. the full sample's σ* for a bootstrap
// replicate) starts the bracket at hint/2 when σ* lies above it, which skips
// the evaluation on the finest grid.
FixpointResult solve_fixpoint(ResidualLevels& levels, double scale = 1.0, double tol = 1e-10, double hint = 0.0);

// The logit metric (paper Section 5.3): smoothing with the plain Gaussian in
// logit space. Positions logit(f) are mapped onto [0, 1] with `pad` logit
// units of margin beyond ±logit(1 − ε) on each side; with pad ≥ 10σ the
// reflections at the ends change the integral by less than Φ(−10) ≈ 1e-23, so
// the reflected kernel on the mapped grid is the plain Gaussian on ℝ.
LogitMapping logit_mapping(double pad);
// 1 for the default metric; the logit grid's span in logit units otherwise
// (σ in the metric's units = span · σ on the grid).
double metric_span(const Inputs& in);

// σ* of rows together with the grid sums it was found on: bins on a grid of
// `first_intervals` and, only if σ* lies below what that grid resolves, bins
// again on a finer one. full = true keeps the weight and label sums too.
struct RowsFixpoint {
    double sigma = 0.0;
    GridSums sums;
};
RowsFixpoint fixpoint_of_rows(const Inputs& in, std::int64_t first_intervals, bool full, int threads,
                              double hint = 0.0);

// The first grid for n rows. σ* of calibrated data sits near its noise
// floor, about 0.3·n^(-1/3); the grid resolves a third of that (capped at
// kDefaultFineIntervals), and the rare σ* below it gets a second pass. Small
// inputs thus skip the fixed cost of the fine grid.
std::int64_t first_intervals_for_rows(std::int64_t n);

// The complete SmoothECE of rows, in the units of in's metric.
// fine_intervals = 0: first_intervals_for_rows.
double smece_of_rows(const Inputs& in, int threads, std::int64_t fine_intervals = 0);
// smECEσ of rows at a fixed σ (in the units of in's metric), binned on the grid that σ needs.
double smece_sigma_of_rows(const Inputs& in, double sigma, int threads);

}  // namespace smoothece
