#include "bin_kernel.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#if defined(__AVX2__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>  // part of every x86-64 CPU
#endif

#ifndef SMOOTHECE_KERNEL_NS
#error "compile bin_kernel.cpp with -DSMOOTHECE_KERNEL_NS=<namespace>"
#endif

namespace smoothece::SMOOTHECE_KERNEL_NS {
namespace {

constexpr double kMaxWeight = std::numeric_limits<double>::max();
constexpr std::int64_t kBlock = 256;  // rows decoded per block (fits in L1)

// Copies rows [begin, begin + count) of a column into doubles. The contiguous
// case is a separate loop so that the compiler vectorizes the conversion.
template <class T>
void load_block(const Column& c, std::int64_t begin, std::int64_t count, double* out) {
    if (c.stride == static_cast<std::int64_t>(sizeof(T))) {
        const T* p = reinterpret_cast<const T*>(c.data) + begin;
        for (std::int64_t k = 0; k < count; ++k) out[k] = static_cast<double>(p[k]);
    } else {
        for (std::int64_t k = 0; k < count; ++k) out[k] = static_cast<double>(c.at<T>(begin + k));
    }
}

// Bins rows [begin, end). Returns false at the first block holding a row
// that breaks the input contract (the caller then reports it).
template <class Cell, class F, class Y, class W>
bool bin_typed(const Inputs& in, std::int64_t begin, std::int64_t end, std::int64_t intervals, Cell* cells,
               double& total_weight) {
    const double lo = in.clip_lo, hi = in.clip_hi;
    const double scale = static_cast<double>(intervals);
    // Doubles one row adds to its cell: Σm·λ^p, p = 0..3, for each quantity m.
    constexpr int kSums = std::is_same_v<Cell, FullCell> ? 12 : 4;
    static_assert(sizeof(Cell) == kSums * sizeof(double), "a cell is its power sums, contiguous");
    double f[kBlock], y[kBlock], w[kBlock], pos[kBlock];
    alignas(64) double add[kBlock * kSums];
    std::int32_t cell[kBlock];  // int32: G ≤ 2^22, and it lets the conversion vectorize
    const auto last = static_cast<std::int32_t>(intervals - 1);
    double wsum = 0.0;
    for (std::int64_t b = begin; b < end; b += kBlock) {
        const std::int64_t count = std::min(kBlock, end - b);
        load_block<F>(in.f, b, count, f);
        load_block<Y>(in.y, b, count, y);
        if constexpr (!std::is_void_v<W>) load_block<W>(in.w, b, count, w);
        // Checks and clamping in one branch-free loop that the compiler
        // vectorizes. NaN fails every comparison, so it counts as bad too.
        std::int64_t bad = 0;
        for (std::int64_t k = 0; k < count; ++k) {
            const double fk = f[k], yk = y[k];
            bad += (fk >= lo ? 0 : 1) + (fk <= hi ? 0 : 1) + ((yk == 0.0) | (yk == 1.0) ? 0 : 1);
            if constexpr (!std::is_void_v<W>) {
                const double wk = w[k];
                bad += (wk >= 0.0 ? 0 : 1) + (wk <= kMaxWeight ? 0 : 1);
                wsum += wk;
            }
            const double fc = std::min(std::max(fk, 0.0), 1.0);
            f[k] = fc;
            pos[k] = fc;
        }
        if (bad) return false;
        if constexpr (std::is_void_v<W>) wsum += static_cast<double>(count);
        if (in.logit.enabled) {
            // Logit metric: the grid lives in logit space, mapped onto [0, 1].
            const double eps = kLogitEpsilon, lo_z = in.logit.lo, inv = in.logit.inv_span;
            for (std::int64_t k = 0; k < count; ++k) {
                const double p = std::min(std::max(f[k], eps), 1.0 - eps);
                pos[k] = (std::log(p) - std::log1p(-p) - lo_z) * inv;
            }
        }
        // Cell, position in the cell and the power sums each row adds (vectorized).
        for (std::int64_t k = 0; k < count; ++k) {
            const double x = pos[k] * scale;
            const std::int32_t j = std::min(static_cast<std::int32_t>(x), last);  // x ≥ 0: truncation is floor
            cell[k] = j;
            const double l1 = x - static_cast<double>(j), l2 = l1 * l1, l3 = l2 * l1;
            const double wk = std::is_void_v<W> ? 1.0 : w[k];
            const double r = wk * (y[k] - f[k]);
            double* a = add + kSums * k;
            a[0] = r;
            a[1] = r * l1;
            a[2] = r * l2;
            a[3] = r * l3;
            if constexpr (kSums == 12) {
                const double wy = wk * y[k];
                a[4] = wk;
                a[5] = wk * l1;
                a[6] = wk * l2;
                a[7] = wk * l3;
                a[8] = wy;
                a[9] = wy * l1;
                a[10] = wy * l2;
                a[11] = wy * l3;
            }
        }
        // The scatter: one contiguous add of kSums doubles per row (whole
        // 32-byte vectors where the instruction set has them; compilers do not
        // vectorize this loop themselves, as they cannot rule out aliasing).
        for (std::int64_t k = 0; k < count; ++k) {
            double* dst = reinterpret_cast<double*>(cells + cell[k]);
            const double* a = add + kSums * k;
#if defined(__AVX2__)
            for (int p = 0; p < kSums; p += 4)
                _mm256_store_pd(dst + p, _mm256_add_pd(_mm256_load_pd(dst + p), _mm256_load_pd(a + p)));
#elif defined(__SSE2__)
            for (int p = 0; p < kSums; p += 2)
                _mm_store_pd(dst + p, _mm_add_pd(_mm_load_pd(dst + p), _mm_load_pd(a + p)));
#else
            for (int p = 0; p < kSums; ++p) dst[p] += a[p];
#endif
        }
    }
    total_weight += wsum;
    return true;
}

template <class Cell>
bool bin_dispatch_impl(const Inputs& in, std::int64_t begin, std::int64_t end, std::int64_t intervals, Cell* cells,
                       double& total_weight) {
    return with_input_types(in, [&](auto f_tag, auto y_tag, auto w_tag) {
        using W = std::conditional_t<std::is_same_v<decltype(w_tag), NoWeights>, void, decltype(w_tag)>;
        return bin_typed<Cell, decltype(f_tag), decltype(y_tag), W>(in, begin, end, intervals, cells, total_weight);
    });
}

}  // namespace

bool bin_range(const Inputs& in, std::int64_t begin, std::int64_t end, std::int64_t intervals, ResidualCell* cells,
               double& total_weight) {
    return bin_dispatch_impl(in, begin, end, intervals, cells, total_weight);
}

bool bin_range(const Inputs& in, std::int64_t begin, std::int64_t end, std::int64_t intervals, FullCell* cells,
               double& total_weight) {
    return bin_dispatch_impl(in, begin, end, intervals, cells, total_weight);
}

}  // namespace smoothece::SMOOTHECE_KERNEL_NS
