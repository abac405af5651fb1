// The two steps every grid replicate takes once its residual masses are
// drawn: smECEσ read off their spectrum, and σ* from a hint close to it.
// Shared by the replicates of one summary (grid_replicates.cpp), the
// paired replicates of several models (paired.cpp) and the exact atoms
// drawn as a summary's groups draw (atom_replicates.cpp), with the plan of
// a summary's replicates they share.
#pragma once

#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include "resampling/resample.hpp"
#include "smoothing/spectrum.hpp"
#include "summary/summary.hpp"

namespace smoothece {

// smECEσ (σ in grid units) of a replicate's residual spectrum over its total
// weight, read off a grid of 3 nodes per σ: exact samples of r, with the
// roots between them located on the cubic Hermite interpolant of ∫r
// (replicate σ* within 2.5e-5 of 4 nodes per σ). r and F are scratch.
double replicate_smece(const Spectrum& spectrum, double sigma, double total, std::vector<double>& r,
                       std::vector<double>& F);

// The smallest replicate σ* a summary's grid resolves (grid units): below
// it a replicate of the grid reports this bound.
double replicate_limit(const Summary& full);
// The σ* (grid units) replicate 0, the pilot, starts from: the request's
// hint (the full sample's σ*), else the noise floor of calibrated data of the
// summary's rows; at least replicate_limit.
double pilot_hint(const Summary& full, const ResampleRequest& req);
// The intervals of the grid a band of the summary's replicates is read off:
// the mesh itself (exact: Spectrum::evaluate folds the spectrum), or for the
// logit metric a grid fine enough to interpolate at the mesh's positions.
std::int64_t band_read_intervals(const Summary& full, const ResampleRequest& req);

// σ* of a replicate (grid units, smece(σ) = scale·σ) to about 1e-4
// relative, from `hint` (the full sample's σ*, close), a Newton step with
// `slope` (d smece/dσ at the hint; 0: unknown) and then secant steps in
// log-log coordinates inside the bracket every evaluation gives. Returns σ*
// and whether it lies above `limit` (else σ* < limit, reported as limit).
// hint_value: smece(hint) when known already.
std::pair<double, bool> replicate_fixpoint(const std::function<double(double)>& smece, double scale, double limit,
                                           double hint, double slope,
                                           double hint_value = std::numeric_limits<double>::quiet_NaN());

}  // namespace smoothece
