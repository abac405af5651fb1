// add_lanes (lanes_kernel.hpp), compiled once per instruction set
// (runtime/kernels.hpp).
#include "resampling/lanes_kernel.hpp"

#if defined(__AVX2__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

#ifndef SMOOTHECE_KERNEL_NS
#error "compile lanes_kernel.cpp with -DSMOOTHECE_KERNEL_NS=<namespace>"
#endif

namespace smoothece::SMOOTHECE_KERNEL_NS {

void add_lanes(const double* src, std::int64_t count, const double* factor, double* dst) {
    // By hand: compilers vectorize across i instead, transposing every 8 x 2
    // block, at twice the time of the plain loop. A multiply, then an add,
    // as in the plain loop: the same sums in every build.
#if defined(__AVX2__)
    const __m256d c0 = _mm256_loadu_pd(factor), c1 = _mm256_loadu_pd(factor + 4);
    for (std::int64_t i = 0; i < count; ++i, dst += 8) {
        const __m256d value = _mm256_set1_pd(src[i]);
        _mm256_storeu_pd(dst, _mm256_add_pd(_mm256_loadu_pd(dst), _mm256_mul_pd(c0, value)));
        _mm256_storeu_pd(dst + 4, _mm256_add_pd(_mm256_loadu_pd(dst + 4), _mm256_mul_pd(c1, value)));
    }
#elif defined(__SSE2__)
    const __m128d c01 = _mm_loadu_pd(factor), c23 = _mm_loadu_pd(factor + 2), c45 = _mm_loadu_pd(factor + 4),
                  c67 = _mm_loadu_pd(factor + 6);
    for (std::int64_t i = 0; i < count; ++i, dst += 8) {
        const __m128d value = _mm_set1_pd(src[i]);
        _mm_storeu_pd(dst, _mm_add_pd(_mm_loadu_pd(dst), _mm_mul_pd(c01, value)));
        _mm_storeu_pd(dst + 2, _mm_add_pd(_mm_loadu_pd(dst + 2), _mm_mul_pd(c23, value)));
        _mm_storeu_pd(dst + 4, _mm_add_pd(_mm_loadu_pd(dst + 4), _mm_mul_pd(c45, value)));
        _mm_storeu_pd(dst + 6, _mm_add_pd(_mm_loadu_pd(dst + 6), _mm_mul_pd(c67, value)));
    }
#else
    for (std::int64_t i = 0; i < count; ++i, dst += 8)
        for (int l = 0; l < 8; ++l) dst[l] += factor[l] * src[i];
#endif
}

}  // namespace smoothece::SMOOTHECE_KERNEL_NS
