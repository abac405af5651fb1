// Step 1 of the algorithm: one O(n) pass that checks every row and linearly
// bins it onto the grid nodes j/G, j = 0..G. The per-node sums are the
// sufficient statistic of everything downstream (DESIGN.md §2).
#pragma once

#include <cstdint>
#include <vector>

#include "common.hpp"

namespace smoothece {

// Per-node sums on the grid of `intervals` equal cells (intervals + 1 nodes).
// A row at f with f·G = j + λ spreads its mass over nodes j−1..j+2 with the
// weights of cubic Lagrange interpolation (grid.cpp, spread_cubic), so the
// node masses keep the rows' moments up to order 3.
struct GridSums {
    std::int64_t intervals = 0;
    std::vector<double> residual;  // Σ w·(y − f)
    std::vector<double> weight;    // Σ w     (empty unless binned with full = true)
    std::vector<double> label;     // Σ w·y   (likewise)
    double total_weight = 0.0;
    std::int64_t count = 0;

    bool full() const { return !weight.empty(); }
    std::int64_t nodes() const { return intervals + 1; }

    // The sums on a grid of `coarse` intervals; `coarse` must divide intervals.
    GridSums restrict_to(std::int64_t coarse, bool residual_only = false) const;
    // Adds another grid's sums (same number of intervals) to this one.
    void merge(const GridSums& other);
};

// Bins `in` onto `intervals` cells (intervals ≥ 3), on up to `threads` threads (0 = all cores).
// full = false keeps only the residual sums (all that the SmoothECE needs).
// Throws std::invalid_argument naming the argument, first bad index, its value
// and the number of bad values when a row breaks the input contract.
// Rows with all-zero weights are refused unless allow_zero_weight (a batch of
// a stream may weigh nothing; the stream as a whole is checked when queried).
GridSums bin_rows(const Inputs& in, std::int64_t intervals, bool full, int threads, bool allow_zero_weight = false);

// Checks every row without binning (used where rows are read differently).
void check_rows(const Inputs& in);

}  // namespace smoothece
