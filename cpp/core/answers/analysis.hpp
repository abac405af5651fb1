// Answers from a summary: σ*, smECEσ, the diagram's curves and the
// replicates, each from the summary of one pass over the rows. Where the
// question is finer than the summary resolves (σ* or σ below its grid), the
// rows behind the summary get a second look, when there are rows behind it:
// the exact distinct predictions if they are few (base rates, discrete
// forecasts), else a finer grid, else every distinct prediction, sorted.
// A sketch that kept only its grid answers with what it can prove instead.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "pass/columns.hpp"
#include "resampling/resample.hpp"
#include "smoothing/curves.hpp"
#include "smoothing/fixpoint.hpp"
#include "summary/atoms.hpp"
#include "summary/summary.hpp"

namespace smoothece {

// A second look at the data behind a summary.
class RowsBehind {
public:
    virtual ~RowsBehind() = default;
    // Another summary of the same rows at another resolution.
    virtual Summary summarise(Content content, std::int64_t intervals, std::int64_t threads) = 0;
    // The rows grouped by distinct position, when there are at most
    // `max_atoms` positions (computed once, on up to `threads` threads); null otherwise.
    virtual const Atoms* few_atoms(std::size_t max_atoms, std::int64_t threads) = 0;
    // Every distinct position (computed once).
    virtual const Atoms& all_atoms() = 0;
    // The few atoms already known (looked for and found, or kept), else null: no look.
    virtual const Atoms* known_atoms() const = 0;
    // `size` rows drawn uniformly (with replacement), clamped predictions and labels.
    virtual void sample(std::int64_t size, std::uint64_t seed, std::vector<double>& f, std::vector<double>& y) = 0;
};

// The caller's arrays (the caller keeps them alive and unchanged).
std::shared_ptr<RowsBehind> rows_of_arrays(const Inputs& in, const Mapping& mapping, int weight_exp);
// Atoms kept by a sketch.
std::shared_ptr<RowsBehind> rows_of_atoms(std::shared_ptr<const Atoms> atoms);

// Where σ* lies, in the metric's units. resolved: σ* to 1e-10 (plus the
// evaluation error, ≲ 1e-8). Otherwise σ* ∈ [lower, upper) with upper the
// smallest σ the summary resolves and no rows behind it to look further.
struct SigmaStar {
    double sigma = 0.0;
    bool resolved = true;
    double lower = 0.0, upper = 0.0;
};

struct SmeceValue {
    double value = 0.0;
    bool resolved = true;  // false: σ below the summary's grid, with no rows behind it
};

class Analysis {
public:
    Analysis(Summary summary, std::shared_ptr<RowsBehind> rows);

    // One checked pass over arrays in the metric: the summary of `content` on
    // the first grid for n rows (or for a bandwidth `sigma` the caller will
    // ask about, in the metric's units).
    static Analysis of_rows(const Inputs& in, Metric metric, Content content, std::int64_t threads, double sigma = 0.0);

    const Summary& summary() const { return summary_; }

    // The smallest fixed σ (metric units) that of_rows summarises for, on a
    // grid that resolves it (and its replicates); below, σ is answered from
    // the rows' atoms, which resampling does not draw from.
    static double finest_fixed_sigma(Metric metric);

    SigmaStar smece(std::int64_t threads);
    SmeceValue smece_sigma(double sigma, std::int64_t threads);
    // Curves at σ (metric units), or at σ* when sigma ≤ 0 (drawn at the
    // smallest σ the grid resolves if σ* lies below it).
    DiagramCurves curves(double sigma, std::int64_t mesh_intervals, std::int64_t threads);
    // Replicates for uncertainty, with μ̂ and smECE at band_sigma (metric units).
    // at_band: also smECE of every replicate at band_sigma; band_level > 0:
    // also the pointwise band of their μ̂ at that level.
    Replicates replicates(ResampleKind kind, std::int64_t count, std::uint64_t seed, double band_sigma,
                          std::int64_t mesh_intervals, WeightKind weights, bool at_band, std::int64_t threads,
                          double band_level = 0.0);
    // The smallest σ (metric units) at which replicates() resolves the band:
    // the summary's grid (arrays are summarised for a fixed σ the caller
    // names, down to the direct limit), or 0 where it resamples exact atoms.
    // After smece() (which may find the atoms).
    double min_resampled_sigma();
    // The residual sums on a grid of `intervals`: from the rows behind the
    // summary where there are, else the summary's own, restricted (on at
    // most its grid: the result's intervals say which).
    Summary residual_on(std::int64_t intervals, std::int64_t threads);
    // `size` (f, y) pairs for tick marks, drawn reproducibly.
    void sample(std::int64_t size, std::uint64_t seed, std::vector<double>& f, std::vector<double>& y);

private:
    ResidualLevels& levels();
    double scale() const { return summary_.mapping.span; }
    // smECEσ from exact atoms (σ in grid units).
    double atoms_smece(const Atoms& atoms, double sigma) const;

    Summary summary_;
    std::shared_ptr<RowsBehind> rows_;
    std::unique_ptr<ResidualLevels> levels_;
    std::optional<SigmaStar> sigma_star_;
    const Atoms* exact_ = nullptr;  // the atoms σ* came from, when it lay below every grid
};

}  // namespace smoothece
