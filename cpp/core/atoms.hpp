// Rows grouped by exact position: the data behind a summary, kept when there
// are few distinct predictions (base-rate models, discrete forecasts, small
// sketches). From atoms smECEσ is exact at any σ > 0, however small: for
// small σ the kernel is local, so an isolated position contributes
// |its residual sum| and each cluster of nearby positions is integrated on a
// grid of its own.
#pragma once

#include <cstdint>
#include <vector>

#include "metric.hpp"

namespace smoothece {

// The rows at one position with one label.
struct AtomStats {
    double rows = 0.0;       // rows of positive weight
    double weight = 0.0;     // Σ w (scaled like the summary's weights)
    double weight_sq = 0.0;  // Σ w²
    double weight_f = 0.0;   // Σ w·f
};

struct Atoms {
    Mapping mapping;
    std::vector<double> x;             // distinct grid positions, increasing
    std::vector<AtomStats> by_label[2];  // per position, the rows with y = 0 and y = 1
    std::uint64_t rows = 0;            // all rows, zero weights included
    int weight_exp = 0;                // every weight was multiplied by 2^weight_exp

    std::size_t size() const { return x.size(); }
    double residual(std::size_t i) const { return by_label[1][i].weight - by_label[0][i].weight_f - by_label[1][i].weight_f; }
    double total_weight_scaled() const;
    void rescale(int new_exp);
};

// The union of two sets (same mapping; weights on the smaller exponent, that
// of the larger weights), in one sorted merge.
Atoms merged(const Atoms& a, const Atoms& b);

// ∫₀¹ |Σᵢ residualᵢ K̃σ(t, xᵢ)| dt (not yet divided by the total weight), σ
// in grid units, exact to rounding for every σ > 0: positions more than
// 17σ apart do not interact (Gaussian tails below 1e-17), so the positions
// fall into clusters; a lone position contributes |residual| (the reflected
// kernel keeps its mass in [0, 1]) and a cluster is smoothed on a local grid
// of 16 nodes per σ, in windows of bounded size.
double exact_abs_integral(const std::vector<double>& x, const std::vector<double>& residual, double sigma);

// Σ over positions of |residual|: the limit of the integral as σ → 0, and an
// upper bound of it for every σ.
double abs_residual_sum(const std::vector<double>& residual);

}  // namespace smoothece
