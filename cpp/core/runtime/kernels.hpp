// Kernels built once per instruction set and chosen at run time, so that one
// binary runs on any x86-64 CPU and uses AVX2 where the CPU has it.
//
// A kernel source (pass/bin_kernel.cpp, smoothing/dip_kernel.cpp,
// resampling/lanes_kernel.cpp) is compiled once per build (CMakeLists.txt,
// smoothece_kernel), with SMOOTHECE_KERNEL_NS naming the build's namespace:
// smoothece::baseline everywhere and, on x86-64, smoothece::avx2 (AVX2 +
// FMA). -ffp-contract=off keeps the builds' sums bit-identical. A kernel's
// header declares its functions in every build with
// SMOOTHECE_EACH_KERNEL_BUILD, and callers reach the build for this CPU
// through SMOOTHECE_KERNEL_CALL.
#pragma once

namespace smoothece {

#if defined(SMOOTHECE_HAVE_AVX2_KERNEL)
// Whether this CPU runs the AVX2 build (asked once).
inline bool avx2_kernel() {
    static const bool has_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return has_avx2;
}
#endif

}  // namespace smoothece

// declare(ns) for each build's namespace.
#if defined(SMOOTHECE_HAVE_AVX2_KERNEL)
#define SMOOTHECE_EACH_KERNEL_BUILD(declare) declare(baseline) declare(avx2)
#else
#define SMOOTHECE_EACH_KERNEL_BUILD(declare) declare(baseline)
#endif

// fn(args...) from the build for this CPU.
#if defined(SMOOTHECE_HAVE_AVX2_KERNEL)
#define SMOOTHECE_KERNEL_CALL(fn, ...) \
    (::smoothece::avx2_kernel() ? ::smoothece::avx2::fn(__VA_ARGS__) : ::smoothece::baseline::fn(__VA_ARGS__))
#else
#define SMOOTHECE_KERNEL_CALL(fn, ...) ::smoothece::baseline::fn(__VA_ARGS__)
#endif
