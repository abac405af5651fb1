// Steps 3–4: smECEσ of a summary's residual sums, and the fixpoint
// σ* = smECE_{σ*} (Definition 3 of the paper).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <utility>
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

// Where σ* lies. resolved: |sigma − σ*| ≤ tol·σ* (plus the error of the
// evaluations). Otherwise σ* is below `upper`, the smallest σ the evaluator
// resolves, and at least `lower`; sigma = upper.
struct Fixpoint {
    double sigma = 0.0;
    bool resolved = true;
    double lower = 0.0, upper = 0.0;
    int evaluations = 0;  // calls of smece (a guess_value given is none)
};

// How a search starts and when it stops. A data set's value asks 1e-14 from
// a rough guess; a bootstrap or null replicate ~1e-4 from its full sample's
// σ* (close), with that sample's slope there and often smece(guess) already
// read off for the band.
struct FixpointOptions {
    double tol = 1e-14;  // relative: stops at |Δσ| ≤ tol·σ, or an error estimate ≤ tol
    // d smece/dσ at the guess, of this function or one close to it, for a
    // Newton first step; NaN: not known, the first step takes smECEσ ∝ σ^(−½).
    double slope = std::numeric_limits<double>::quiet_NaN();
    double guess_value = std::numeric_limits<double>::quiet_NaN();  // smece(guess), when known
};

// σ (in grid units) with smece(σ) = scale·σ, for a non-increasing smece(σ)
// defined on [limit, ∞): g(σ) = smece(σ) − scale·σ is strictly decreasing;
// σ* < limit is reported as the bound [lower, limit), unresolved.
// Every evaluation bounds σ* on both sides (a bracket that only shrinks); the
// steps are those of a power-law model through the last two evaluations
// (smECEσ behaves like σ^(−½) for noise and σ^0 for a one-signed residual;
// the first step a Newton step with options.slope when given), from the
// third on inverse quadratic interpolation in the same log-log coordinates,
// bisecting whenever a step would leave the bracket.
// Typically 2–6 evaluations from a rough guess at 1e-14 (one where the
// residual has one sign); 1–3 for a replicate at 1e-4 from its full
// sample's σ* (bench/fixpoint.py).
Fixpoint solve_fixpoint(const std::function<double(double)>& smece, double scale, double limit, double guess,
                        const FixpointOptions& options);

// Searches and their evaluations since the process started (a bench hook).
std::pair<std::uint64_t, std::uint64_t> fixpoint_counts();

}  // namespace smoothece
