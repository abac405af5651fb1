// What every grid replicate takes once its residual masses are drawn:
// smECEσ read off their spectrum, and σ* (solve_fixpoint) to
// kReplicateTolerance from a hint close to it.
// Shared by the replicates of one summary (grid_replicates.cpp), the
// paired replicates of several models (paired.cpp) and the exact atoms
// drawn as a summary's groups draw (atom_replicates.cpp), with the plan of
// a summary's replicates they share.
#pragma once

#include <cstdint>
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

// A replicate's σ* to about this relative precision (solve_fixpoint's
// tolerance): far below the spread of the replicates (≳ 1e-2).
inline constexpr double kReplicateTolerance = 1e-4;

}  // namespace smoothece
