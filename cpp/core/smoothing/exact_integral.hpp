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

// The same integral with r̂σ summed directly, atom by atom, at the nodes of
// a grid of nodes_per_sigma nodes per σ across each cluster (positions more
// than 12σ apart do not interact: each Gaussian is cut at 6σ, which leaves
// out 2e-9 of its mass), its antiderivative by the trapezoid rule with the
// derivatives' end correction (exact for cubics), and ∫|r| on the cubic
// Hermite interpolant as integrate_abs takes it. No binning: the error is
// that of the quadrature, O(nodes_per_sigma^-4) (at 6: two atoms of
// opposite residual within 9e-6 of their closed form, local grids of 8
// nodes per σ within 1.4e-5), at a cost of 12·nodes_per_sigma kernel values
// an atom, and no transform: for atoms a fraction of σ or more apart (the
// replicates of discrete forecasts on the logit axis) a tenth of the local
// grids' time or less. Needs 6σ < 1/4 (no image beyond the first reflection).
double direct_abs_integral(const std::vector<double>& x, const std::vector<double>& residual, double sigma,
                           double nodes_per_sigma);

// Σ over positions of |residual|: the limit of the integral as σ → 0, and an
// upper bound of it for every σ.
double abs_residual_sum(const std::vector<double>& residual);

}  // namespace smoothece
