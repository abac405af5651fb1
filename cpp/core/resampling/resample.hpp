// Uncertainty by resampling (README, Architecture): bootstrap replicates and
// consistency replicates (labels redrawn as y* ~ Bernoulli(f), the null of
// perfect calibration), drawn per resampling cell of a summary, at a cost
// that depends on neither n nor 1/σ* beyond the grid σ* needs.
//
// Bootstrap: every row gets an Exponential(1) multiplier (the Bayesian
// bootstrap, Rubin 1981: the same mean and variance of the replicate weights
// as redrawing rows with replacement, Poisson-style). The replicate weight of
// a cell's n rows of unit weight is then exactly Gamma(n); with importance
// weights it is Σ wᵢEᵢ, drawn as the Gamma with its mean Σw and variance Σw²
// (a row is a unit: the spread of the weights counts), with frequency
// weights as Gamma(Σw) (a weight counts rows). Zero-weight rows carry nothing.
// Consistency: a cell's positive weight Σ wᵢBᵢ, Bᵢ ~ Bernoulli(f̄): exactly
// Binomial when its weights are equal, else the scaled Beta with mean f̄Σw and
// variance f̄(1 − f̄)Σw². Within a cell the drawn mass keeps the cell's profile
// over the grid nodes (rows move by less than half the smallest σ resolved).
//
// Each replicate b draws from its own counter-based stream (seed, b), so the
// numbers depend on neither the thread count nor the platform.
//
// Here: draws.hpp (what a replicate draws per group), resample_groups.*
// (a grid summary's cells joined into groups that draw together),
// grid_replicates.cpp (replicates of a grid summary), atom_replicates.cpp
// (of exact atoms) with atom_columns.* (their curves), band.cpp (quantiles and pointwise bands),
// group_smoothing.* and lanes_kernel.* (the bootstrap curves of many
// replicates at once).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/buffer.hpp"
#include "summary/atoms.hpp"
#include "summary/summary.hpp"

namespace smoothece {

enum class ResampleKind : std::uint8_t { Bootstrap = 0, Consistency = 1 };

enum class WeightKind : std::uint8_t { Importance = 0, Frequency = 1 };

// A null statistic counts as at least the observed one from this fraction of
// it up: replicates solve σ* to 1e-4 relative, the observed σ* to rounding, so
// a tie (a few rows, discrete forecasts: a null equal to the statistic) would
// otherwise fall either side by chance. Used by every calibration test's p-value.
constexpr double kNullTie = 1.0 - 1e-4;

struct ResampleRequest {
    ResampleKind kind = ResampleKind::Bootstrap;
    std::int64_t count = 0;
    std::uint64_t seed = 0;
    double hint = 0.0;        // σ* of the full sample (grid units); 0: unknown (consistency)
    double band_sigma = 0.0;  // grid units: smECE and μ̂ of every replicate at this σ
    std::int64_t mesh_intervals = 0;  // 0: no μ̂ curves
    bool at_band = false;             // also smECE at band_sigma (for a fixed σ)
    double band_level = 0.0;          // > 0 (with curves): their pointwise band at this level
    WeightKind weights = WeightKind::Importance;
    std::int64_t threads = 0;
    double work_nodes_per_sigma = 0.0;  // the work grid's nodes per σ at the hint; 0: the default (a test's knob)
};

struct Replicates {
    std::vector<double> sigma_star;     // σ* of each replicate, metric units
    std::vector<double> smece_at_band;  // smECE at band_sigma
    // μ̂ at band_sigma, mesh points × replicates, row-major: a mesh point's
    // replicates side by side, as the band's quantiles read them. Gigabytes
    // for 10^6 replicates: in huge pages, which fill and free in a tenth of
    // the time of small ones (0.35 s to free 4 GB of those).
    RowVector<double> mu;
    std::int64_t mesh_points = 0;
    std::int64_t unresolved = 0;        // replicates whose σ* lies below the grid (reported at the bound)
    std::vector<std::uint8_t> below_grid;  // per replicate: 1 where its σ* is that bound (empty: none is)
    bool band_resolved = true;             // whether band_sigma lies within what the replicates resolve
    std::vector<double> band_lower, band_upper;  // per mesh point, when a band level was asked
};

// The linear-interpolation quantile (numpy's default) of sorted values.
double quantile_sorted(const std::vector<double>& sorted, double q);

// The `level` bootstrap interval {low, high} of a statistic estimated as
// `value`, from its replicates (NaN ones left out): the smallest interval
// symmetric about `value` that holds the replicates' equal-tailed percentile
// interval [q₋, q₊], value ± max(q₊ − value, value − q₋); with `nonnegative`
// (a SmoothECE, which noise inflates) symmetric on the squared scale and never
// below 0: √max(0, value² − d), √(value² + d), d = max(q₊² − value², value² − q₋²).
// It always holds `value`; {NaN, NaN} without a valid replicate. The one
// interval rule (python/smoothece/_util.py bootstrap_interval says why and
// calls it): arrays, sketches and groups report the same interval.
std::pair<double, double> bootstrap_interval(double value, std::vector<double> replicates, double level,
                                             bool nonnegative);

// The equal-tailed pointwise band of curves (values: points × count, a
// point's curves side by side) at `level`: at each point the (1 − level)/2
// and (1 + level)/2 quantiles of its values, as numpy's linear method gives
// them, NaN values left out and NaN where a point has none. The points are
// shared out over up to `threads` threads.
void pointwise_band(const std::vector<double>& values, std::int64_t count, double level, std::int64_t threads,
                    std::vector<double>& lower, std::vector<double>& upper);
void pointwise_band(const double* values, std::size_t size, std::int64_t count, double level, std::int64_t threads,
                    std::vector<double>& lower, std::vector<double>& upper);
// The pointwise band of the replicates' curves (out.mu) into out.band_lower
// and out.band_upper, when the request asks for curves and a band level.
void add_band(const ResampleRequest& request, Replicates& out);

// Replicates of a full summary.
Replicates resample(const Summary& full, const ResampleRequest& request);
// Whether grid replicates smooth only the window their residual reaches (the
// default) or the whole work grid; returns the previous setting. A test hook,
// for the process: the tests compare the two.
bool set_replicate_windows(bool enabled);
// Replicates of exact atoms (few distinct predictions), each atom drawing
// on its own: every σ evaluated exactly.
Replicates resample(const Atoms& atoms, const ResampleRequest& request, std::int64_t band_intervals);
// Replicates of a full summary from the atoms behind it: drawn as the
// summary's replicates draw (its resampling groups, the same streams), each
// replicate's σ* then solved from its atoms (to 1e-4, replicate_solve.hpp;
// each smECEσ within 1.4e-5 of the exact one) and its curves read off as
// the summary's would be: the numbers of resample(full, request) without
// the grid's binning, for few atoms (resample_from_atoms).
Replicates resample(const Atoms& atoms, const Summary& full, const ResampleRequest& request);
// Whether a summary's replicates come from its atoms (that route): where
// its rows repeat few positions (discrete forecasts), and the route costs
// at most about twice the grid's or little (an estimate from the sizes of
// the grids each would transform). On the grid, the part of an atom's mass
// that its cubic weights put on a node of the next resampling cell takes
// that cell's draw: a bias where every row sits on a few positions (the
// consistency null of 900 rows at 0.1, 0.5 and 0.9 comes out 3.3% high,
// tests/test_discrete_resampling.py), which the atoms' route does not have.
bool resample_from_atoms(const Atoms& atoms, const Summary& full, const ResampleRequest& request);

}  // namespace smoothece
