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

inline void add_stats(AtomStats& into, const AtomStats& s) {
    into.rows += s.rows;
    into.weight += s.weight;
    into.weight_sq += s.weight_sq;
    into.weight_f += s.weight_f;
}

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

// A sketch keeps positions to 2^-40 (9.1e-13 of the grid). For x in [0, 1]
// the last bit of x + 2^12 is worth 2^-40, so (x + 2^12) − 2^12 is x rounded
// to the nearest multiple of 2^-40 (ties to even, as nearbyint), exactly, in
// two additions that vectorize; a kept position rounds to itself. Keys are
// the multiples (below 2^41), in the order of the positions.
constexpr double kSketchKeyScale = 0x1p40;
inline double sketch_rounded(double x) { return (x + 0x1p12) - 0x1p12; }
inline std::uint64_t sketch_key(double x) { return static_cast<std::uint64_t>(sketch_rounded(x) * kSketchKeyScale); }
inline double sketch_position(std::uint64_t key) { return static_cast<double>(key) / kSketchKeyScale; }

// The union of two sets (same mapping; weights on the smaller exponent, that
// of the larger weights), in one sorted merge.
Atoms merged(const Atoms& a, const Atoms& b);

}  // namespace smoothece
