// The hot loop of the pass over the rows. bin_kernel.cpp is compiled twice:
// once for the baseline instruction set and, on x86-64, once with AVX2 + FMA;
// rows.cpp picks one at run time. Each copy lives in its own namespace
// (SMOOTHECE_KERNEL_NS) so the two never clash; -ffp-contract=off keeps both
// bit-identical.
#pragma once

#include <cmath>
#include <cstdint>

#include "columns.hpp"
#include "metric.hpp"

namespace smoothece {

// Power sums Σ m·λ^p, p = 0..3, of the rows in one cell, with λ ∈ [0, 1] the
// row's position inside the cell: enough to spread the rows onto the nodes
// with cubic weights that keep their moments to order 3 (rows.cpp).
struct alignas(32) Moments {
    double p[4];
};

// What the smece pass keeps per cell: the moments of the residual w(y − f).
struct ResidualCell {
    Moments a;
};

// The smece pass straight onto the grid's nodes, no cells: each row's
// moments spread as a cell's would be (one node per cell boundary, G + 1 of
// them). For few rows a cell (rows.cpp: at most two), where zeroing the
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

// add_interior_nodes: the cubic weights of cells 1 … G−3 (which reach nodes
// without reflection) added to nodes 0 … G−1 (rows.cpp spreads the rest).
// check_block: the few-atoms pass's checks (rows.cpp) of a block of rows,
// with predictions in [lo, hi] and labels 0 or 1: copies each prediction
// clamped into [0, 1] (−0 as +0) to f_out and each label to y_out, and
// returns nonzero if a row breaks the contract. A loop that vectorizes with
// AVX2 (GCC does not vectorize it for SSE2).
// add_lanes: dst[8i + l] += factor[l]·src[i] for i < count, l < 8 (resampling's
// group curves, GroupSmoothing::sum_lanes: eight replicates side by side).
// any_dip: whether a cell [j, j+1], begin ≤ j < end, holds a dip of r to the
// other side of zero (cell_holds_dip below, operation for operation).
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
    void add_lanes(const double* src, std::int64_t count, const double* factor, double* dst);          \
    bool any_dip(const double* r, const double* F, std::int64_t begin, std::int64_t end, double inv_h,  \
                 double noise);                                                                        \
    }

SMOOTHECE_DECLARE_BIN_KERNEL(baseline)
#if defined(SMOOTHECE_HAVE_AVX2_KERNEL)
SMOOTHECE_DECLARE_BIN_KERNEL(avx2)
#endif

// The derivative q(s) = r0 + qb·s + qa·s² on cell [j, j+1] of the cubic
// Hermite interpolant of F (values F, slopes r), with inv_h = 1/h.
inline void dip_quadratic(const double* r, const double* F, std::int64_t j, double inv_h, double& qa, double& qb) {
    const double r0 = r[j], r1 = r[j + 1], d = (F[j + 1] - F[j]) * inv_h;
    qa = 3.0 * (r0 + r1) - 6.0 * d;
    qb = 6.0 * d - 4.0 * r0 - 2.0 * r1;
}

// Whether q dips to the other side of zero inside the cell while r0 and r1
// lie beyond `noise` on one side: it curves back (qa·r0 > 0) to a vertex in
// (0, 1) (qa·qb < 0, |qb| < 2|qa|) beyond zero (qb² > 4qa·r0). Products
// only, no division: any_dip's AVX2 loop does the same operations.
inline bool cell_holds_dip(const double* r, const double* F, std::int64_t j, double inv_h, double noise) {
    const double r0 = r[j], r1 = r[j + 1];
    double qa, qb;
    dip_quadratic(r, F, j, inv_h, qa, qb);
    return (r0 * r1 > 0.0) & (std::fabs(r0) > noise) & (std::fabs(r1) > noise) & (qa * r0 > 0.0) &
           (qa * qb < 0.0) & (std::fabs(qb) < 2.0 * std::fabs(qa)) & (qb * qb > (4.0 * qa) * r0);
}

// add_lanes and any_dip from the kernel built for this CPU (rows.cpp).
void add_lanes(const double* src, std::int64_t count, const double* factor, double* dst);
bool any_dip(const double* r, const double* F, std::int64_t begin, std::int64_t end, double inv_h, double noise);

}  // namespace smoothece
