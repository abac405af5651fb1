// The hot loop of the binning pass. This file is compiled twice: once for
// the baseline instruction set and, on x86-64, once with AVX2 + FMA; grid.cpp
// picks one at run time. Each copy lives in its own namespace
// (SMOOTHECE_KERNEL_NS) so the two never clash. -ffp-contract=off keeps both
// copies bit-identical.
#pragma once

#include <cstdint>

#include "common.hpp"

namespace smoothece {

// Per-cell accumulators: for each quantity m (residual w(y − f), weight w,
// label w·y) the power sums Σ m·λ^p, p = 0..3, of the rows in the cell, with
// λ ∈ [0, 1] the row's position inside it. A row is one read-modify-write of
// one aligned struct; grid.cpp turns the sums into node masses afterwards.
struct alignas(32) Moments {
    double p0, p1, p2, p3;
};
struct ResidualCell {
    Moments r;
};
struct FullCell {
    Moments r, w, wy;
};

#define SMOOTHECE_DECLARE_BIN_KERNEL(ns)                                                                   \
    namespace ns {                                                                                     \
    bool bin_range(const Inputs& in, std::int64_t begin, std::int64_t end, std::int64_t intervals,     \
                   ResidualCell* cells, double& total_weight);                                         \
    bool bin_range(const Inputs& in, std::int64_t begin, std::int64_t end, std::int64_t intervals,     \
                   FullCell* cells, double& total_weight);                                             \
    }

SMOOTHECE_DECLARE_BIN_KERNEL(baseline)
#if defined(SMOOTHECE_HAVE_AVX2_KERNEL)
SMOOTHECE_DECLARE_BIN_KERNEL(avx2)
#endif

}  // namespace smoothece
