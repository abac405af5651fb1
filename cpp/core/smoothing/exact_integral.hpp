// smECEσ of atoms (rows grouped by exact position) computed exactly, at any
// σ > 0 however small: for small σ the kernel is local, so an isolated
// position contributes |its residual sum| and each cluster of nearby
// positions is integrated on a grid of its own.
#pragma once

#include <vector>

namespace smoothece {

// ∫₀¹ |Σᵢ residualᵢ K̃σ(t, xᵢ)| dt (not yet divided by the total weight), σ
// in grid units, exact to rounding for every σ > 0: positions more than
// 17σ apart do not interact (Gaussian tails below 1e-17), so the positions
// fall into clusters; a lone position contributes |residual| (the reflected
// kernel keeps its mass in [0, 1]) and a cluster is smoothed on a local grid
// of 16 nodes per σ, in windows of bounded size.
// nodes_per_sigma: the local grids' least resolution (the binning error
// falls as its fourth power: at 16, two atoms of opposite residual are
// within 1e-6 of their closed form, relative, at 8 within 1.2e-5, which
// replicates, solved to 1e-4, afford).
double exact_abs_integral(const std::vector<double>& x, const std::vector<double>& residual, double sigma,
                          double nodes_per_sigma = 16.0);

// Σ over positions of |residual|: the limit of the integral as σ → 0, and an
// upper bound of it for every σ.
double abs_residual_sum(const std::vector<double>& residual);

}  // namespace smoothece
