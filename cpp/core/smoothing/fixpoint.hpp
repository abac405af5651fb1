// Steps 3–4: smECEσ of a summary's residual sums, and the fixpoint
// σ* = smECE_{σ*} (Definition 3 of the paper).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "smoothing/spectrum.hpp"

namespace smoothece {

// ∫₀¹ |r̂σ| (times the total weight) of residual node masses at any σ the
// grid resolves: each σ on the coarsest nested grid with ≥ kNodesPerSigma
// nodes per σ, each level's spectrum computed once.
class ResidualLevels {
public:
    ResidualLevels(std::vector<double> nodes, std::int64_t intervals);

    double integral(double sigma);  // σ in grid units, ≥ min_sigma()
    double min_sigma() const;
    std::int64_t intervals() const { return intervals_; }
    // |Σ masses|: the integral's value as σ → ∞ and a lower bound of it at every σ.
    double net() const;

private:
    const Spectrum& level(std::int64_t intervals);
    const std::vector<double>& masses(std::int64_t intervals);  // node masses on a coarser grid
    std::vector<double> nodes_;
    std::int64_t intervals_;
    std::map<std::int64_t, std::unique_ptr<Spectrum>> levels_;
    std::map<std::int64_t, std::vector<double>> masses_;  // node masses of the coarser levels (halved, kept)
    std::vector<double> values_, antiderivative_;
};

// Where σ* lies. resolved: |sigma − σ*| ≤ tol (plus the error of the
// evaluations). Otherwise σ* is below `upper`, the smallest σ the evaluator
// resolves, and at least `lower`; sigma = upper.
struct Fixpoint {
    double sigma = 0.0;
    bool resolved = true;
    double lower = 0.0, upper = 0.0;
    int evaluations = 0;
};

// σ (in grid units) with smece(σ) = scale·σ, for a non-increasing smece(σ)
// defined on [limit, ∞): g(σ) = smece(σ) − scale·σ is strictly decreasing.
// Every evaluation bounds σ* on both sides (a bracket that only shrinks); the
// steps are those of a power-law model through the last two evaluations
// (smECEσ behaves like σ^(−½) for noise and σ^0 for a one-signed residual),
// from the third on inverse quadratic interpolation in the same log-log
// coordinates, bisecting whenever a step would leave the bracket; stops at a
// relative step |Δσ| ≤ tol·σ.
// Typically 3–6 evaluations from a guess near σ*.
Fixpoint solve_fixpoint(const std::function<double(double)>& smece, double scale, double limit, double guess,
                        double tol);

}  // namespace smoothece
