// The hot loop of the binning pass. This file is compiled twice: once for
// the baseline instruction set and, on x86-64, once with AVX2 + FMA; grid.cpp
// picks one at run time. Each copy lives in its own namespace
// (SMOOTHECE_KERNEL_NS) so the two never clash. -ffp-contract=off keeps both
// copies bit-identical.
#pragma once

#include <cstdint>

#include "common.hpp"

namespace smoothece {

// Per-cell accumulators. A row in cell j at fraction λ adds m·(1 − λ) to node
// j and m·λ to node j + 1; keeping Σm and Σm·λ per *cell* makes that one
// read-modify-write of one aligned struct, and nodes are formed at the end:
// node_j = (Σm − Σmλ)_cell j + (Σmλ)_cell j−1.
struct alignas(16) ResidualCell {
    double m, ml;
};
struct alignas(64) FullCell {
    double r, rl, w, wl, wy, wyl;
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
