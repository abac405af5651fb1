// Rows grouped by exact position: the data behind a summary, kept when there
// are few distinct predictions (base-rate models, discrete forecasts, small
// sketches). From atoms smECEσ is exact at any σ > 0, however small
// (smoothing/exact_integral.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include "summary/metric.hpp"

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

}  // namespace smoothece
