// The hot loops of the passes over the rows: binning a range of rows into
// cells (or straight onto nodes), spreading interior cells onto the nodes,
// and the few-atoms pass's checks. A kernel source (runtime/kernels.hpp):
// compiled once per instruction set, the build for this CPU chosen at run
// time by grid_pass.cpp and atoms_pass.cpp.
#pragma once

#include <cstdint>

#include "pass/columns.hpp"
#include "runtime/kernels.hpp"
#include "summary/metric.hpp"

namespace smoothece {

// Power sums Σ m·λ^p, p = 0..3, of the rows in one cell, with λ ∈ [0, 1] the
// row's position inside the cell: enough to spread the rows onto the nodes
// with cubic weights that keep their moments to order 3 (grid_pass.cpp).
struct alignas(32) Moments {
    double p[4];
};

// What the smece pass keeps per cell: the moments of the residual w(y − f).
struct ResidualCell {
    Moments a;
};

// The smece pass straight onto the grid's nodes, no cells: each row's
// moments spread as a cell's would be (one node per cell boundary, G + 1 of
// them). For few rows a cell (grid_pass.cpp: at most two), where zeroing the
// cells and spreading each of them costs more than the rows do.
struct ResidualNode {
    double mass;
};

// What the full pass keeps per (cell, label), at index 2·cell + label: the
// moments of w and of w·f, the rows of positive weight and Σw².
struct alignas(16) FullCell {
    Moments w, wf;
    double rows, w2;
};

// What the full pass keeps per (cell, label), at index 2·cell + label, for
// the l1 metric, where a row's prediction is its position (j + λ)/cells: the
// moments Σw·λ^p for p = 0..4, from which those of w·f follow as
// (j·Σwλ^p + Σwλ^(p+1))/cells; the rows of positive weight and Σw² (left 0
// for unit weights: both are then Σλ⁰). One cache line: half the memory of a
// FullCell pair, and one line touched per row instead of two.
struct alignas(64) LinearCell {
    Moments w;
    double w4, rows, w2, unused;
};

// Totals of one range of rows.
struct PassTotals {
    double weight = 0.0;      // Σ w (scaled)
    double max_weight = 0.0;  // largest w (unscaled)
    std::int64_t positive_rows = 0;
};

// What a pass is asked for.
struct PassSpec {
    Mapping mapping;
    std::int64_t cells = 0;     // cells on [0, 1]
    int weight_exp = 0;         // every weight is multiplied by 2^weight_exp
};

// bin_range: checks and bins rows [begin, end) into cells (or nodes), adding
// to `totals`; false at the first block holding a row that breaks the input
// contract (nothing the caller owns is changed).
// add_interior_nodes: the cubic weights of cells 1 … G−3 (which reach nodes
// without reflection) added to nodes 0 … G−1 (grid_pass.cpp spreads the rest).
// check_block: the few-atoms pass's checks (atoms_pass.cpp) of a block of rows,
// with predictions in [lo, hi] and labels 0 or 1: copies each prediction
// clamped into [0, 1] (−0 as +0) to f_out and each label to y_out, and
// returns nonzero if a row breaks the contract. A loop that vectorizes with
// AVX2 (GCC does not vectorize it for SSE2).
#define SMOOTHECE_DECLARE_BIN_KERNEL(ns)                                                                   \
    namespace ns {                                                                                     \
    bool bin_range(const Inputs& in, const PassSpec& spec, std::int64_t begin, std::int64_t end,       \
                   ResidualCell* cells, PassTotals& totals);                                           \
    bool bin_range(const Inputs& in, const PassSpec& spec, std::int64_t begin, std::int64_t end,       \
                   FullCell* cells, PassTotals& totals);                                               \
    bool bin_range(const Inputs& in, const PassSpec& spec, std::int64_t begin, std::int64_t end,       \
                   LinearCell* cells, PassTotals& totals);                                             \
    bool bin_range(const Inputs& in, const PassSpec& spec, std::int64_t begin, std::int64_t end,       \
                   ResidualNode* nodes, PassTotals& totals);                                           \
    void add_interior_nodes(const ResidualCell* cells, std::int64_t intervals, double* nodes);         \
    std::uint64_t check_block(const double* f, const double* y, std::int64_t count, double lo, double hi, \
                              double* f_out, double* y_out);                                           \
    }
SMOOTHECE_EACH_KERNEL_BUILD(SMOOTHECE_DECLARE_BIN_KERNEL)

}  // namespace smoothece
