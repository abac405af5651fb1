#include "bin_kernel.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#if defined(__AVX2__)
#include <immintrin.h>
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

// (1, λ, λ², λ³) of one row, and adding v·(1, λ, λ², λ³) to four contiguous
// sums. With AVX2 the powers are built in one register (blends and two
// multiplies) and the add is one 32-byte read-modify-write; the products are
// formed in the same order either way, so both builds give identical sums.
struct Powers {
#if defined(__AVX2__)
    explicit Powers(double l) {
        const __m256d one = _mm256_set1_pd(1.0), lv = _mm256_set1_pd(l);
        v = _mm256_mul_pd(_mm256_mul_pd(_mm256_blend_pd(one, lv, 0b1110), _mm256_blend_pd(one, lv, 0b1100)),
                          _mm256_blend_pd(one, lv, 0b1000));
    }
    void add(double* dst, double m) const {
        _mm256_storeu_pd(dst, _mm256_add_pd(_mm256_loadu_pd(dst), _mm256_mul_pd(v, _mm256_set1_pd(m))));
    }
    __m256d v;
#else
    explicit Powers(double l) : l1(l), l2(l * l), l3(l * l * l) {}
    void add(double* dst, double m) const {
        dst[0] += m;
        dst[1] += m * l1;
        dst[2] += m * l2;
        dst[3] += m * l3;
    }
    double l1, l2, l3;
#endif
};

// Bins rows [begin, end). Returns false at the first block holding a row
// that breaks the input contract (the caller then reports it).
template <class Cell, class F, class Y, class W>
bool bin_typed(const Inputs& in, std::int64_t begin, std::int64_t end, std::int64_t intervals, Cell* cells,
               double& total_weight) {
    const double lo = in.clip_lo, hi = in.clip_hi;
    const double scale = static_cast<double>(intervals);
    constexpr bool kFull = std::is_same_v<Cell, FullCell>;
    static_assert(sizeof(Cell) == (kFull ? 12 : 4) * sizeof(double), "a cell is its power sums, contiguous");
    double f[kBlock], y[kBlock], w[kBlock], pos[kBlock];
    alignas(64) double lam[kBlock], res[kBlock], wy[kBlock];
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
        // Cell, position in the cell and the masses of each row (vectorized).
        for (std::int64_t k = 0; k < count; ++k) {
            const double x = pos[k] * scale;
            const std::int32_t j = std::min(static_cast<std::int32_t>(x), last);  // x ≥ 0: truncation is floor
            cell[k] = j;
            lam[k] = x - static_cast<double>(j);
            const double wk = std::is_void_v<W> ? 1.0 : w[k];
            res[k] = wk * (y[k] - f[k]);
            if constexpr (kFull) {
                w[k] = wk;
                wy[k] = wk * y[k];
            }
        }
        // The scatter: per row, one read-modify-write of its cell's power sums.
        for (std::int64_t k = 0; k < count; ++k) {
            double* dst = reinterpret_cast<double*>(cells + cell[k]);
            const Powers p(lam[k]);
            p.add(dst, res[k]);
            if constexpr (kFull) {
                p.add(dst + 4, w[k]);
                p.add(dst + 8, wy[k]);
            }
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
