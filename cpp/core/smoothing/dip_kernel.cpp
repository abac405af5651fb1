// any_dip (dip_kernel.hpp), compiled once per instruction set
// (runtime/kernels.hpp).
#include "smoothing/dip_kernel.hpp"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#ifndef SMOOTHECE_KERNEL_NS
#error "compile dip_kernel.cpp with -DSMOOTHECE_KERNEL_NS=<namespace>"
#endif

namespace smoothece::SMOOTHECE_KERNEL_NS {

bool any_dip(const double* r, const double* F, std::int64_t begin, std::int64_t end, double inv_h, double noise) {
    // cell_holds_dip (dip_kernel.hpp) for every cell, four a step with AVX2
    // in its order of operations (no contraction: the same in any build). The
    // scalar loop, which CPUs without AVX2 take, costs a sixth of a
    // calibration test's time.
    std::int64_t j = begin;
    bool found = false;
#if defined(__AVX2__)
    const __m256d inv = _mm256_set1_pd(inv_h), two = _mm256_set1_pd(2.0), three = _mm256_set1_pd(3.0),
                  four = _mm256_set1_pd(4.0), six = _mm256_set1_pd(6.0), zero = _mm256_setzero_pd(),
                  band = _mm256_set1_pd(noise), abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFF));
    __m256d any = zero;
    for (; j + 4 <= end; j += 4) {
        const __m256d r0 = _mm256_loadu_pd(r + j), r1 = _mm256_loadu_pd(r + j + 1);
        const __m256d d = _mm256_mul_pd(_mm256_sub_pd(_mm256_loadu_pd(F + j + 1), _mm256_loadu_pd(F + j)), inv);
        const __m256d qa = _mm256_sub_pd(_mm256_mul_pd(three, _mm256_add_pd(r0, r1)), _mm256_mul_pd(six, d));
        const __m256d qb = _mm256_sub_pd(_mm256_sub_pd(_mm256_mul_pd(six, d), _mm256_mul_pd(four, r0)), _mm256_mul_pd(two, r1));
        __m256d dip = _mm256_and_pd(_mm256_cmp_pd(_mm256_mul_pd(r0, r1), zero, _CMP_GT_OQ),
                                    _mm256_cmp_pd(_mm256_and_pd(r0, abs_mask), band, _CMP_GT_OQ));
        dip = _mm256_and_pd(dip, _mm256_cmp_pd(_mm256_and_pd(r1, abs_mask), band, _CMP_GT_OQ));
        dip = _mm256_and_pd(dip, _mm256_cmp_pd(_mm256_mul_pd(qa, r0), zero, _CMP_GT_OQ));
        dip = _mm256_and_pd(dip, _mm256_cmp_pd(_mm256_mul_pd(qa, qb), zero, _CMP_LT_OQ));
        dip = _mm256_and_pd(dip, _mm256_cmp_pd(_mm256_and_pd(qb, abs_mask),
                                               _mm256_mul_pd(two, _mm256_and_pd(qa, abs_mask)), _CMP_LT_OQ));
        dip = _mm256_and_pd(dip, _mm256_cmp_pd(_mm256_mul_pd(qb, qb), _mm256_mul_pd(_mm256_mul_pd(four, qa), r0), _CMP_GT_OQ));
        any = _mm256_or_pd(any, dip);
    }
    found = _mm256_movemask_pd(any) != 0;
#endif
    for (; j < end; ++j) found |= cell_holds_dip(r, F, j, inv_h, noise);
    return found;
}

}  // namespace smoothece::SMOOTHECE_KERNEL_NS
