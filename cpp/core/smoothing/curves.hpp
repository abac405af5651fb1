// The smoothed reliability diagram (paper Section 4) from a full summary.
#pragma once

#include <cstdint>
#include <vector>

#include "summary/summary.hpp"

namespace smoothece {

// Curves at bandwidth σ on the mesh t_k = k/M of the probability axis
// (for the logit metric, smoothed in logit space and read off at logit(t_k)).
struct DiagramCurves {
    double sigma = 0.0;                    // bandwidth, in the metric's units
    std::vector<double> mesh;              // t_k
    std::vector<double> density;           // δ̂σ(t) = (1/W) Σ wᵢ K̃σ(t, fᵢ), a density on [0, 1]
    std::vector<double> density_positive;  // δ̂σ of the rows with y = 1, normalised to 1
    std::vector<double> density_negative;  // ... y = 0
    std::vector<double> mu;                // μ̂σ(t) = Σ wᵢyᵢK̃ / Σ wᵢK̃; NaN where the density vanishes
    double smece_sigma = 0.0;              // smECEσ at the σ asked for (NaN when it was σ*)
    double smece_tilde = 0.0;              // ∫ |μ̂σ(t) − t| δ̂σ(t) dt, the diagram's own integral
    double total_weight = 0.0;
    std::uint64_t rows = 0;
};

// Curves at σ (grid units) from a full summary, on `mesh_intervals` + 1
// points (fewer for the l1 metric when σ is large: the mesh never is finer
// than the grid that resolves σ).
DiagramCurves curves_at(const Summary& full, double sigma, std::int64_t mesh_intervals);

// The mesh of curves read off a grid of `grid_intervals`: its number of points.
std::int64_t mesh_points(const Mapping& mapping, std::int64_t grid_intervals, std::int64_t mesh_intervals);
// The nodes of a grid of `grid_intervals` that μ̂ on the mesh (mu_on_mesh)
// reads, increasing: every step-th (l1), or the two around each point's
// position (logit); only their sums matter.
std::vector<std::int64_t> mesh_nodes(const Mapping& mapping, std::int64_t grid_intervals, std::int64_t mesh_intervals);
// μ̂ on that mesh from the smoothed weight and label sums at the grid's
// nodes, point m into out[m·stride] (a replicate's column of the band's table).
void mu_on_mesh(const std::vector<double>& weight, const std::vector<double>& label, const Mapping& mapping,
                std::int64_t mesh_intervals, double* out, std::int64_t stride);
// The same with the largest weight at a node given (`most`: where the weight
// is known to vanish but at a few nodes, the caller finds it among those),
// and, unless null, the points that may read weight (mesh_points_reached):
// the others are NaN without a read.
void mu_on_mesh(const std::vector<double>& weight, const std::vector<double>& label, const Mapping& mapping,
                std::int64_t mesh_intervals, double* out, std::int64_t stride, double most,
                const std::vector<char>* live = nullptr);
// Per point of that mesh, whether it reads a node where `reached` is
// positive (or is an end of the mesh): where weight can be, given the nodes
// that can hold it.
std::vector<char> mesh_points_reached(const std::vector<double>& reached, const Mapping& mapping,
                                      std::int64_t mesh_intervals);

}  // namespace smoothece
