// The smoothed reliability diagram (paper Section 4) and the resampling that
// gives it uncertainty (DESIGN.md §2, step 5).
#pragma once

#include <cstdint>
#include <vector>

#include "common.hpp"
#include "grid.hpp"

namespace smoothece {

// Curves of the diagram at bandwidth σ on the mesh t_k = k/M.
struct DiagramCurves {
    double sigma = 0.0;
    std::vector<double> mesh;
    std::vector<double> density;           // δ̂σ(t) = (1/W) Σ wᵢ K̃σ(t, fᵢ)
    std::vector<double> density_positive;  // δ̂σ of the rows with y = 1, normalised to 1
    std::vector<double> density_negative;  // ... y = 0
    std::vector<double> mu;                // μ̂σ(t) = Σ wᵢyᵢK̃ / Σ wᵢK̃; NaN where the density vanishes
    double smece_sigma = 0.0;              // smECEσ (exact, from the residual sums)
    double smece_tilde = 0.0;              // ∫ |μ̂σ(t) − t| δ̂σ(t) dt (the diagram's own integral)
    double total_weight = 0.0, positive_weight = 0.0;
    std::int64_t count = 0;
};

// Curves at σ from full grid sums; the mesh has min(mesh_intervals, G) cells.
DiagramCurves diagram_at(const GridSums& full, double sigma, std::int64_t mesh_intervals);

// The diagram of rows at σ* (sigma ≤ 0) or at a given σ.
DiagramCurves diagram_of_rows(const Inputs& in, double sigma, std::int64_t mesh_intervals, int threads);

// Counts of rows per (cell of f, label), with their weights and weighted
// predictions: the data that resampling acts on. Dense, so it adds up across
// batches and machines like GridSums. Group index = 2·cell + label.
struct CellCounts {
    std::int64_t cells = 0;
    std::vector<std::int64_t> count;
    std::vector<double> weight, weighted_f;

    explicit CellCounts(std::int64_t cells_ = 0);
    void merge(const CellCounts& other);
    // The counts on `coarse` cells (coarse must divide cells): exact.
    CellCounts coarsen(std::int64_t coarse) const;
    std::int64_t rows() const;
};
CellCounts count_cells(const Inputs& in, std::int64_t cells, int threads);

// The non-empty groups of CellCounts. Rows in a group are represented by the
// group's weighted mean prediction and mean weight, which moves each row by
// less than 1/(2·cells).
struct CellHistogram {
    std::int64_t cells = 0;
    std::vector<double> f_mean, w_mean;
    std::vector<std::uint8_t> label;
    std::vector<std::int64_t> cell, count;  // groups in order of (cell, label)
    std::int64_t rows = 0;
};
CellHistogram groups_of(const CellCounts& counts);

enum class ResampleKind {
    Bootstrap,    // rows redrawn with replacement (multinomial over groups)
    Consistency,  // labels redrawn as y* ~ Bernoulli(f): the null of perfect calibration
};

// Replicate statistics: σ* of each replicate, its smECE and μ̂ at band_sigma on the mesh
// (row-major, replicates × mesh points). Replicate b draws from its own RNG
// stream seeded by (seed, b), so results do not depend on the thread count.
struct Replicates {
    std::vector<double> sigma_star;
    std::vector<double> smece_at_band;  // smECE at band_sigma
    std::vector<double> mu;
    std::int64_t mesh_points = 0;
};
Replicates resample(const CellHistogram& hist, ResampleKind kind, std::int64_t replicates, std::uint64_t seed,
                    double band_sigma, std::int64_t mesh_intervals, int threads);

// Cells of the resampling histogram for a band at σ: the grid σ needs, so
// rows move by at most 1/(2·cells) ≤ σ/32 (and there are far fewer groups to
// redraw than rows when n is large).
std::int64_t resample_cells_for_sigma(double sigma);

}  // namespace smoothece
