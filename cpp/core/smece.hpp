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
constexpr std::int64_t kDefaultFineIntervals = std::int64_t{1} << 15;  // σ ≥ 0.00195
constexpr std::int64_t kMaxIntervals = std::int64_t{1} << 22;          // σ ≥ 1.5e-5

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

// σ* with |σ − σ*| ≤ tol (plus the evaluation error), by Brent's method on
// g(σ) = smECEσ − σ (strictly decreasing, slope ≤ −1). The bracket starts at
// [σ_min, smECE_{σ_min}]: since smECEσ is non-increasing, σ* ≤ smECE_{σ_min}.
FixpointResult solve_fixpoint(ResidualLevels& levels, double tol = 1e-10);

// σ* of rows together with the grid sums it was found on: bins on a grid of
// `first_intervals` and, only if σ* lies below what that grid resolves, bins
// again on a finer one. full = true keeps the weight and label sums too.
struct RowsFixpoint {
    double sigma = 0.0;
    GridSums sums;
};
RowsFixpoint fixpoint_of_rows(const Inputs& in, std::int64_t first_intervals, bool full, int threads);

// The complete SmoothECE of rows.
double smece_of_rows(const Inputs& in, int threads, std::int64_t fine_intervals = kDefaultFineIntervals);
// smECEσ of rows at a fixed σ, binned on the grid that σ needs.
double smece_sigma_of_rows(const Inputs& in, double sigma, int threads);

}  // namespace smoothece
