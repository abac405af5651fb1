// Resampling's group curves summed for eight replicates side by side
// (GroupSmoothing::sum_lanes). A kernel source (runtime/kernels.hpp):
// compiled once per instruction set, the build for this CPU chosen at run
// time.
#pragma once

#include <cstdint>

#include "runtime/kernels.hpp"

namespace smoothece {

// add_lanes: dst[8i + l] += factor[l]·src[i] for i < count, l < 8.
#define SMOOTHECE_DECLARE_LANES_KERNEL(ns)                                                        \
    namespace ns {                                                                            \
    void add_lanes(const double* src, std::int64_t count, const double* factor, double* dst); \
    }
SMOOTHECE_EACH_KERNEL_BUILD(SMOOTHECE_DECLARE_LANES_KERNEL)

}  // namespace smoothece
