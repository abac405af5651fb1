// The row loops of the passes (bin_kernel.hpp), compiled once per
// instruction set (runtime/kernels.hpp).
#include "pass/bin_kernel.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "summary/summary.hpp"

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

// Copies rows [begin, begin + count) of a column into doubles. The
// contiguous case is its own loop so that the compiler vectorizes it.
template <class T>
void load(const Column& c, std::int64_t begin, std::int64_t count, double* out) {
    if (c.stride == static_cast<std::int64_t>(sizeof(T))) {
        const T* p = reinterpret_cast<const T*>(c.data) + begin;
        for (std::int64_t k = 0; k < count; ++k) out[k] = static_cast<double>(p[k]);
    } else {
        for (std::int64_t k = 0; k < count; ++k) out[k] = static_cast<double>(c.at<T>(begin + k));
    }
}

using Loader = void (*)(const Column&, std::int64_t, std::int64_t, double*);

// One loader per dtype, chosen once per call: the kernel itself is compiled
// once per kind of cell, not once per combination of input dtypes.
Loader loader_for(DType dtype) {
    return dispatch_dtype(dtype, [](auto tag) -> Loader { return &load<decltype(tag)>; });
}

// Adds mass[k]·(1, λ, λ², λ³) with λ = lam[k] to the four sums at
// base + slot[k]·stride (doubles), and with kLinear (LinearCell's layout)
// mass[k]·λ⁴ (as m·((λ·λ)·(λ·λ))) to the fifth and, with kWeighted too, 1 for
// a positive mass to the sixth and mass[k]² to the seventh, for k in
// [0, count), in row order: all in one visit to the cell, whose line a
// second loop over the block would find gone from L1 (a block's 512 cells
// fill it). With AVX2 four rows' powers are formed at once and transposed,
// and each add of the four is one 32-byte read-modify-write; the products
// (m·λ, m·(λ·λ), m·((λ·λ)·λ)) are the same either way, so both builds give
// identical sums.
template <bool kLinear = false, bool kWeighted = false>
void add_powers(double* base, std::int64_t stride, const std::int32_t* slot, const double* lam, const double* mass,
                std::int64_t count) {
    auto add_linear = [](double* dst, double m, double l2) {
        dst[4] += m * (l2 * l2);
        if constexpr (kWeighted) {
            dst[5] += m > 0.0 ? 1.0 : 0.0;
            dst[6] += m * m;
        }
    };
    // Every row of the block in one cell (a base rate, a point mass): each
    // add would wait for the one before it, so the sums go to four lanes
    // first and into the cell once.
    unsigned other = 0;
    for (std::int64_t i = 0; i < count; ++i) other |= static_cast<unsigned>(slot[i] != slot[0]);
    if (count >= 8 && other == 0) {
        double lane[4][4] = {};
        double* dst = base + static_cast<std::int64_t>(slot[0]) * stride;
        for (std::int64_t i = 0; i < count; ++i) {  // row i to lane i mod 4
            const double l = lam[i], m = mass[i], l2 = l * l;
            double* sums = lane[i & 3];
            sums[0] += m;
            sums[1] += m * l;
            sums[2] += m * l2;
            sums[3] += m * (l2 * l);
            if constexpr (kLinear) add_linear(dst, m, l2);
        }
        for (int p = 0; p < 4; ++p) dst[p] += (lane[0][p] + lane[1][p]) + (lane[2][p] + lane[3][p]);
        return;
    }
    std::int64_t k = 0;
#if defined(__AVX2__)
    for (; k + 4 <= count; k += 4) {
        const __m256d l = _mm256_loadu_pd(lam + k), m = _mm256_loadu_pd(mass + k);
        const __m256d l2 = _mm256_mul_pd(l, l), l3 = _mm256_mul_pd(l2, l);
        const __m256d p0 = m, p1 = _mm256_mul_pd(m, l), p2 = _mm256_mul_pd(m, l2), p3 = _mm256_mul_pd(m, l3);
        const __m256d t0 = _mm256_unpacklo_pd(p0, p1), t1 = _mm256_unpackhi_pd(p0, p1);
        const __m256d t2 = _mm256_unpacklo_pd(p2, p3), t3 = _mm256_unpackhi_pd(p2, p3);
        const __m256d row[4] = {_mm256_permute2f128_pd(t0, t2, 0x20), _mm256_permute2f128_pd(t1, t3, 0x20),
                                _mm256_permute2f128_pd(t0, t2, 0x31), _mm256_permute2f128_pd(t1, t3, 0x31)};
        for (int i = 0; i < 4; ++i) {
            double* dst = base + static_cast<std::int64_t>(slot[k + i]) * stride;
            _mm256_storeu_pd(dst, _mm256_add_pd(_mm256_loadu_pd(dst), row[i]));
            if constexpr (kLinear) add_linear(dst, mass[k + i], lam[k + i] * lam[k + i]);
        }
    }
#endif
    for (; k < count; ++k) {
        double* dst = base + static_cast<std::int64_t>(slot[k]) * stride;
        const double l = lam[k], m = mass[k], l2 = l * l, l3 = l2 * l;
        dst[0] += m;
        dst[1] += m * l;
        dst[2] += m * l2;
        dst[3] += m * l3;
        if constexpr (kLinear) add_linear(dst, m, l2);
    }
}

// Spreads mass[k]·(1, λ, λ², λ³) with λ = lam[k] (the products of
// add_powers) straight onto nodes slot[k] − 1 … slot[k] + 2 of node[0, last],
// with the cubic weights a cell's sums get (spread_cubic), in row order.
// With AVX2 four rows' weights are formed at once and transposed, and a row
// away from both ends is one 32-byte read-modify-write; the same sums
// either way.
void spread_rows(double* node, std::int64_t last, const std::int32_t* slot, const double* lam, const double* mass,
                 std::int64_t count) {
    auto spread_one = [&](std::int64_t k) {
        const double l = lam[k], m = mass[k], l2 = l * l;
        const double powers[4] = {m, m * l, m * l2, m * (l2 * l)};
        spread_cubic(node, last, slot[k], powers);
    };
    std::int64_t k = 0;
#if defined(__AVX2__)
    const __m256d sixth = _mm256_set1_pd(1.0 / 6.0), half = _mm256_set1_pd(0.5), two = _mm256_set1_pd(2.0),
                  three = _mm256_set1_pd(3.0), minus = _mm256_set1_pd(-0.0);
    for (; k + 4 <= count; k += 4) {
        bool interior = true;  // nodes slot − 1 … slot + 2 all within [0, last]
        for (int i = 0; i < 4; ++i) interior &= slot[k + i] >= 1 && slot[k + i] + 2 <= last;
        if (!interior) {  // a row at either end: reflected, one at a time
            for (int i = 0; i < 4; ++i) spread_one(k + i);
            continue;
        }
        const __m256d l = _mm256_loadu_pd(lam + k), m = _mm256_loadu_pd(mass + k);
        const __m256d l2 = _mm256_mul_pd(l, l), l3 = _mm256_mul_pd(l2, l);
        const __m256d p0 = m, p1 = _mm256_mul_pd(m, l), p2 = _mm256_mul_pd(m, l2), p3 = _mm256_mul_pd(m, l3);
        // cubic_weights, operation for operation.
        const __m256d before = _mm256_mul_pd(
            _mm256_xor_pd(_mm256_add_pd(_mm256_sub_pd(p3, _mm256_mul_pd(three, p2)), _mm256_mul_pd(two, p1)), minus), sixth);
        const __m256d left = _mm256_mul_pd(
            _mm256_add_pd(_mm256_sub_pd(_mm256_sub_pd(p3, _mm256_mul_pd(two, p2)), p1), _mm256_mul_pd(two, p0)), half);
        const __m256d right = _mm256_mul_pd(
            _mm256_xor_pd(_mm256_sub_pd(_mm256_sub_pd(p3, p2), _mm256_mul_pd(two, p1)), minus), half);
        const __m256d after = _mm256_mul_pd(_mm256_sub_pd(p3, p1), sixth);
        const __m256d t0 = _mm256_unpacklo_pd(before, left), t1 = _mm256_unpackhi_pd(before, left);
        const __m256d t2 = _mm256_unpacklo_pd(right, after), t3 = _mm256_unpackhi_pd(right, after);
        const __m256d row[4] = {_mm256_permute2f128_pd(t0, t2, 0x20), _mm256_permute2f128_pd(t1, t3, 0x20),
                                _mm256_permute2f128_pd(t0, t2, 0x31), _mm256_permute2f128_pd(t1, t3, 0x31)};
        for (int i = 0; i < 4; ++i) {
            double* dst = node + slot[k + i] - 1;
            _mm256_storeu_pd(dst, _mm256_add_pd(_mm256_loadu_pd(dst), row[i]));
        }
    }
#endif
    for (; k < count; ++k) spread_one(k);
}

// Rows [b, b + count) of a column as doubles: in place when it is a
// contiguous float64 column, else converted into `buffer`.
const double* block_of(const Column& c, Loader load, std::int64_t b, std::int64_t count, double* buffer) {
    if (c.dtype == DType::Float64 && c.stride == static_cast<std::int64_t>(sizeof(double)))
        return reinterpret_cast<const double*>(c.data) + b;
    load(c, b, count, buffer);
    return buffer;
}

// How far ahead of the rows being placed the AVX2 loops ask for lines of
// the columns they read in place, one line at a time as they go. Asking for
// the next block's lines all at once leaves the loads of f waiting (smece on
// 1e7 rows, one thread: 21.9 ms that way, 16.2 ms this way; 512 to 2048 rows
// ahead measure alike, 256 worse), and gains nothing for converted columns
// either (int64 labels, strided predictions), which are not prefetched.
constexpr std::int64_t kAheadRows = 1024;

// Asks for the line holding next[k], once a line: k steps by four, and a line
// holds 64 / sizeof(T) rows. Nothing for a null `next` (a column converted
// into a buffer, or the last rows of the data).
template <class T>
void prefetch_line(const T* next, std::int64_t k) {
    constexpr std::int64_t kRowsPerLine = 64 / static_cast<std::int64_t>(sizeof(T));
    if (next != nullptr && k % kRowsPerLine == 0) __builtin_prefetch(next + k);
}

// Checks and bins rows [begin, end). Returns false at the first block that
// holds a row breaking the input contract (the caller then finds and
// reports it; nothing the caller owns has been changed).
template <class Cell, bool kWeighted, bool kLogit>
bool bin_typed(const Inputs& in, const PassSpec& spec, std::int64_t begin, std::int64_t end, Cell* cells,
               PassTotals& totals) {
    constexpr bool kFull = std::is_same_v<Cell, FullCell>, kLinear = std::is_same_v<Cell, LinearCell>;
    constexpr bool kNodes = std::is_same_v<Cell, ResidualNode>;
    constexpr std::int64_t kStride = static_cast<std::int64_t>(sizeof(Cell) / sizeof(double));
    const Loader load_f = loader_for(in.f.dtype), load_y = loader_for(in.y.dtype);
    const Loader load_w = kWeighted ? loader_for(in.w.dtype) : nullptr;
    const double lo = in.clip_lo, hi = in.clip_hi, scale = static_cast<double>(spec.cells);
    // 2^weight_exp as two finite factors (it may lie beyond 2^1023 for subnormal weights).
    const int first_exp = std::min(std::max(spec.weight_exp, -600), 600);
    const double scale_1 = std::ldexp(1.0, first_exp), scale_2 = std::ldexp(1.0, spec.weight_exp - first_exp);
    const auto last = static_cast<std::int32_t>(spec.cells - 1);
    double f_buffer[kBlock], y_buffer[kBlock], w_buffer[kBlock];
    alignas(64) double fc[kBlock], lam[kBlock], mass[kBlock], mass_f[kBlock], wk[kBlock];
    std::int32_t slot[kBlock];  // int32: cells ≤ 2^22, and it lets the conversion vectorize
    double weight_sum = 0.0, sum_lanes[4] = {0.0, 0.0, 0.0, 0.0}, max_lanes[4] = {0.0, 0.0, 0.0, 0.0};
    std::int64_t positive = 0;
    auto* base = reinterpret_cast<double*>(cells);
    // A row's cell, its position λ in the cell and its masses, from its
    // prediction clamped into [0, 1], its grid position and its label.
    auto place = [&](std::int64_t k, double fck, double position, double yk) {
        const double x = position * scale;
        const std::int32_t j = std::min(static_cast<std::int32_t>(x), last);  // x ≥ 0: truncation is floor
        lam[k] = x - static_cast<double>(j);
        const double m = kWeighted ? wk[k] : 1.0;
        if constexpr (kFull || kLinear) {
            slot[k] = 2 * j + static_cast<std::int32_t>(yk);
            mass[k] = m;
            if constexpr (kFull) mass_f[k] = m * fck;
        } else {
            slot[k] = j;
            mass[k] = m * (yk - fck);
        }
    };
    // Checks rows [first, count) of a block and places them: one branch-free
    // loop that the compiler vectorizes (two for the logit metric, whose
    // logarithms do not vectorize). NaN fails every comparison, so it counts
    // as bad too. Returns nonzero if a row breaks the contract.
    auto check_and_place = [&](std::int64_t first, std::int64_t count, const auto* f, const auto* y) {
        std::uint64_t bad = 0;
        for (std::int64_t k = first; k < count; ++k) {
            const double fk = static_cast<double>(f[k]), yk = static_cast<double>(y[k]);
            bad |= bad_row(fk, yk, lo, hi);
            const double fck = std::min(std::max(fk, 0.0), 1.0);
            if constexpr (kLogit) {
                fc[k] = fck;
            } else {
                place(k, fck, fck, yk);
            }
        }
        if constexpr (kLogit) {
            if (bad) return bad;
            for (std::int64_t k = first; k < count; ++k) lam[k] = spec.mapping.position(fc[k]);
            for (std::int64_t k = first; k < count; ++k) place(k, fc[k], lam[k], static_cast<double>(y[k]));
        }
        return bad;
    };
#if defined(__AVX2__)
    // check_and_place for the l1 metric, four rows a step with the same
    // operations (the same λ, slots and masses; the last rows of a block
    // that are not four go through check_and_place), reading predictions in
    // place when they are float32 or float64 in one run, and labels when they
    // are one byte each in one run (bool, uint8: nearly every caller's). The
    // compiler's code for the scalar loop (min and max as compare and blend,
    // the labels converted in a loop of their own) takes 1.5 times as long.
    const __m256d lo4 = _mm256_set1_pd(lo), hi4 = _mm256_set1_pd(hi), zero4 = _mm256_setzero_pd(),
                  one4 = _mm256_set1_pd(1.0), scale4 = _mm256_set1_pd(scale);
    const __m128i last4 = _mm_set1_epi32(last);
    auto place4 = [&](std::int64_t k, __m256d fk, __m256d yk, __m128i yi, __m256d& bad4) {
        bad4 = _mm256_or_pd(bad4, _mm256_or_pd(_mm256_cmp_pd(fk, lo4, _CMP_NGE_UQ), _mm256_cmp_pd(fk, hi4, _CMP_NLE_UQ)));
        const __m256d fck = _mm256_min_pd(_mm256_max_pd(fk, zero4), one4);  // NaN → 0: reported, never binned
        const __m256d x = _mm256_mul_pd(fck, scale4);
        const __m128i j = _mm_min_epi32(_mm256_cvttpd_epi32(x), last4);
        _mm256_store_pd(lam + k, _mm256_sub_pd(x, _mm256_cvtepi32_pd(j)));
        const __m256d m = kWeighted ? _mm256_load_pd(wk + k) : one4;
        auto* slots = reinterpret_cast<__m128i*>(slot + k);
        if constexpr (kFull || kLinear) {
            _mm_storeu_si128(slots, _mm_add_epi32(_mm_add_epi32(j, j), yi));
            _mm256_store_pd(mass + k, m);
            if constexpr (kFull) _mm256_store_pd(mass_f + k, _mm256_mul_pd(m, fck));
        } else {
            _mm_storeu_si128(slots, j);
            const __m256d r = _mm256_sub_pd(yk, fck);
            _mm256_store_pd(mass + k, kWeighted ? _mm256_mul_pd(m, r) : r);
        }
    };
    auto load4 = [](const auto* f, std::int64_t k) {  // exact for float
        if constexpr (std::is_same_v<std::decay_t<decltype(*f)>, float>) return _mm256_cvtps_pd(_mm_loadu_ps(f + k));
        else return _mm256_loadu_pd(f + k);
    };
    // f_next, y_next: the columns kAheadRows rows on, or null (prefetch_line).
    auto check_and_place_bytes = [&](std::int64_t count, const auto* f, const std::uint8_t* y, const auto* f_next,
                                     const std::uint8_t* y_next) -> std::uint64_t {
        std::uint8_t labels = 0;  // every label's bits: 0 or 1 when all are
        for (std::int64_t k = 0; k < count; ++k) labels |= y[k];
        __m256d bad4 = _mm256_setzero_pd();
        std::int64_t k = 0;
        for (; k + 4 <= count; k += 4) {
            prefetch_line(f_next, k);
            prefetch_line(y_next, k);
            std::int32_t four;
            std::memcpy(&four, y + k, sizeof four);
            const __m128i yi = _mm_cvtepu8_epi32(_mm_cvtsi32_si128(four));
            place4(k, load4(f, k), _mm256_cvtepi32_pd(yi), yi, bad4);
        }
        return static_cast<std::uint64_t>(_mm256_movemask_pd(bad4)) | (labels >> 1) | check_and_place(k, count, f, y);
    };
    auto check_and_place_doubles = [&](std::int64_t count, const auto* f, const double* y, const auto* f_next) -> std::uint64_t {
        const __m256d all_ones = _mm256_castsi256_pd(_mm256_set1_epi64x(-1));
        __m256d bad4 = _mm256_setzero_pd();
        std::int64_t k = 0;
        for (; k + 4 <= count; k += 4) {
            prefetch_line(f_next, k);
            const __m256d yk = _mm256_loadu_pd(y + k);
            const __m256d binary = _mm256_or_pd(_mm256_cmp_pd(yk, zero4, _CMP_EQ_OQ), _mm256_cmp_pd(yk, one4, _CMP_EQ_OQ));
            bad4 = _mm256_or_pd(bad4, _mm256_xor_pd(binary, all_ones));
            place4(k, load4(f, k), yk, _mm256_cvttpd_epi32(_mm256_max_pd(yk, zero4)), bad4);
        }
        return static_cast<std::uint64_t>(_mm256_movemask_pd(bad4)) | check_and_place(k, count, f, y);
    };
    const bool y_bytes = (in.y.dtype == DType::Bool || in.y.dtype == DType::UInt8) && in.y.stride == 1;
    const bool f_floats = in.f.dtype == DType::Float32 && in.f.stride == static_cast<std::int64_t>(sizeof(float));
    // f: the block's predictions, in place (f_in_place) or converted.
    auto check_and_place_fast = [&](std::int64_t b, std::int64_t count, const auto* f, bool f_in_place) -> std::uint64_t {
        const bool ahead = b + count + kAheadRows <= in.size();
        const auto* f_next = ahead && f_in_place ? f + kAheadRows : nullptr;
        if (y_bytes) {
            const auto* y = reinterpret_cast<const std::uint8_t*>(in.y.data) + b;
            return check_and_place_bytes(count, f, y, f_next, ahead ? y + kAheadRows : nullptr);
        }
        load_y(in.y, b, count, y_buffer);
        return check_and_place_doubles(count, f, y_buffer, f_next);
    };
#endif
    for (std::int64_t b = begin; b < end; b += kBlock) {
        const std::int64_t count = std::min(kBlock, end - b);
        const double* w = kWeighted ? block_of(in.w, load_w, b, count, w_buffer) : nullptr;
        std::uint64_t bad = 0;
        if constexpr (kWeighted) {
            // Four lanes for the maximum and the sum: one chain of dependent
            // additions through the rows would take 4 cycles a row (the sum
            // rounds in the lanes' order; the maximum is the same either way).
            auto weigh = [&](std::int64_t k, int lane) {
                const double v = w[k];
                bad |= bad_weight(v);
                max_lanes[lane] = v > max_lanes[lane] ? v : max_lanes[lane];
                wk[k] = v * scale_1 * scale_2;  // exact: powers of two, normal results
                sum_lanes[lane] += wk[k];
                positive += wk[k] > 0.0 ? 1 : 0;
            };
            std::int64_t k = 0;
#if defined(__AVX2__)
            {  // the same, four rows a step (GCC does not vectorize weigh)
                const __m256d factor_1 = _mm256_set1_pd(scale_1), factor_2 = _mm256_set1_pd(scale_2);
                const __m256d most = _mm256_set1_pd(kMaxWeight), zero = _mm256_setzero_pd();
                __m256d bad4 = _mm256_setzero_pd(), max4 = _mm256_loadu_pd(max_lanes), sum4 = _mm256_loadu_pd(sum_lanes);
                const double* w_next = w != w_buffer && b + count + kAheadRows <= in.size() ? w + kAheadRows : nullptr;
                for (; k + 4 <= count; k += 4) {
                    prefetch_line(w_next, k);
                    const __m256d v = _mm256_loadu_pd(w + k);
                    bad4 = _mm256_or_pd(bad4, _mm256_or_pd(_mm256_cmp_pd(v, zero, _CMP_NGE_UQ), _mm256_cmp_pd(v, most, _CMP_NLE_UQ)));
                    max4 = _mm256_max_pd(v, max4);  // v > max ? v : max, as weigh
                    const __m256d scaled = _mm256_mul_pd(_mm256_mul_pd(v, factor_1), factor_2);
                    _mm256_store_pd(wk + k, scaled);
                    sum4 = _mm256_add_pd(sum4, scaled);
                    positive += __builtin_popcount(static_cast<unsigned>(_mm256_movemask_pd(_mm256_cmp_pd(scaled, zero, _CMP_GT_OQ))));
                }
                bad |= static_cast<std::uint64_t>(_mm256_movemask_pd(bad4));
                _mm256_storeu_pd(max_lanes, max4);
                _mm256_storeu_pd(sum_lanes, sum4);
            }
#endif
            for (; k + 4 <= count; k += 4)
                for (int lane = 0; lane < 4; ++lane) weigh(k + lane, lane);
            for (; k < count; ++k) weigh(k, 0);
        }
#if defined(__AVX2__)
        if constexpr (!kLogit) {
            if (f_floats) {
                bad |= check_and_place_fast(b, count, reinterpret_cast<const float*>(in.f.data) + b, true);
            } else {
                const double* f = block_of(in.f, load_f, b, count, f_buffer);
                bad |= check_and_place_fast(b, count, f, f != f_buffer);
            }
        } else
#endif
        {
            load_y(in.y, b, count, y_buffer);
            bad |= check_and_place(0, count, block_of(in.f, load_f, b, count, f_buffer), y_buffer);
        }
        if (bad) return false;
        if constexpr (!kWeighted) {
            weight_sum += static_cast<double>(count);
            positive += count;
        }
        // The scatter: per row, one read-modify-write of its cell's sums.
        if constexpr (kFull) {
            add_powers(base, kStride, slot, lam, mass, count);
            add_powers(base + 4, kStride, slot, lam, mass_f, count);
            for (std::int64_t k = 0; k < count; ++k) {
                FullCell& c = cells[slot[k]];
                const double m = mass[k];
                c.rows += m > 0.0 ? 1.0 : 0.0;
                c.w2 += m * m;
            }
        } else if constexpr (kLinear) {
            static_assert(offsetof(LinearCell, w4) == 4 * sizeof(double) && offsetof(LinearCell, rows) == 5 * sizeof(double) &&
                              offsetof(LinearCell, w2) == 6 * sizeof(double), "add_powers<true, …> writes this layout");
            add_powers<true, kWeighted>(base, kStride, slot, lam, mass, count);
        } else if constexpr (kNodes) {
            spread_rows(base, spec.cells, slot, lam, mass, count);
        } else {
            add_powers(base, kStride, slot, lam, mass, count);
        }
    }
    if constexpr (kWeighted) weight_sum = (sum_lanes[0] + sum_lanes[1]) + (sum_lanes[2] + sum_lanes[3]);
    const double max_weight = std::max(std::max(max_lanes[0], max_lanes[1]), std::max(max_lanes[2], max_lanes[3]));
    totals.weight += weight_sum;
    totals.max_weight = std::max(totals.max_weight, kWeighted ? max_weight : 1.0);
    totals.positive_rows += positive;
    return true;
}

template <class Cell>
bool bin_dispatch(const Inputs& in, const PassSpec& spec, std::int64_t begin, std::int64_t end, Cell* cells,
                  PassTotals& totals) {
    const bool logit = spec.mapping.is_logit();
    if constexpr (std::is_same_v<Cell, LinearCell>) {  // positions are predictions: the l1 metric only
        if (logit) throw std::logic_error("linear cells need the l1 metric");
        return in.has_weights() ? bin_typed<Cell, true, false>(in, spec, begin, end, cells, totals)
                                : bin_typed<Cell, false, false>(in, spec, begin, end, cells, totals);
    }
    if (in.has_weights()) {
        return logit ? bin_typed<Cell, true, true>(in, spec, begin, end, cells, totals)
                     : bin_typed<Cell, true, false>(in, spec, begin, end, cells, totals);
    }
    return logit ? bin_typed<Cell, false, true>(in, spec, begin, end, cells, totals)
                 : bin_typed<Cell, false, false>(in, spec, begin, end, cells, totals);
}

}  // namespace

bool bin_range(const Inputs& in, const PassSpec& spec, std::int64_t begin, std::int64_t end, ResidualCell* cells,
               PassTotals& totals) {
    return bin_dispatch(in, spec, begin, end, cells, totals);
}

bool bin_range(const Inputs& in, const PassSpec& spec, std::int64_t begin, std::int64_t end, FullCell* cells,
               PassTotals& totals) {
    return bin_dispatch(in, spec, begin, end, cells, totals);
}

bool bin_range(const Inputs& in, const PassSpec& spec, std::int64_t begin, std::int64_t end, LinearCell* cells,
               PassTotals& totals) {
    return bin_dispatch(in, spec, begin, end, cells, totals);
}

bool bin_range(const Inputs& in, const PassSpec& spec, std::int64_t begin, std::int64_t end, ResidualNode* nodes,
               PassTotals& totals) {
    return bin_dispatch(in, spec, begin, end, nodes, totals);
}

void add_interior_nodes(const ResidualCell* cells, std::int64_t g, double* node) {
    // Interior cell j adds the cubic weights before/left/right/after of its
    // moments to nodes j−1 … j+2, so node k gets ((after(k−2) + right(k−1)) +
    // left(k)) + before(k+1). Every weight is computed once, a block of
    // cells at a time into arrays on the stack (each cell's moments read
    // once), and no node depends on another, so both loops vectorize (4 a
    // step with AVX2; the sums are the same in either build).
    auto weights = [cells](std::int64_t j) { return cubic_weights(cells[j].a.p); };
    auto after = [&](std::int64_t j) { return weights(j).after; };
    auto right = [&](std::int64_t j) { return weights(j).right; };
    auto left = [&](std::int64_t j) { return weights(j).left; };
    auto before = [&](std::int64_t j) { return weights(j).before; };
    node[0] += before(1);
    node[1] += left(1) + before(2);
    node[2] += (right(1) + left(2)) + before(3);
    constexpr std::int64_t kBlock = 256;
    for (std::int64_t k0 = 3; k0 <= g - 4; k0 += kBlock) {
        const std::int64_t count = std::min(kBlock, g - 3 - k0);
        // Cells k0 − 2 … k0 + count: the weights each node of the block needs.
        double w[4][kBlock + 3];
        for (std::int64_t i = 0; i < count + 3; ++i) {
            const CubicWeights c = weights(k0 - 2 + i);
            w[0][i] = c.after;
            w[1][i] = c.right;
            w[2][i] = c.left;
            w[3][i] = c.before;
        }
        for (std::int64_t k = 0; k < count; ++k) node[k0 + k] += ((w[0][k] + w[1][k + 1]) + w[2][k + 2]) + w[3][k + 3];
    }
    node[g - 3] += (after(g - 5) + right(g - 4)) + left(g - 3);
    node[g - 2] += after(g - 4) + right(g - 3);
    node[g - 1] += after(g - 3);
}

std::uint64_t check_block(const double* f, const double* y, std::int64_t count, double lo, double hi, double* f_out,
                          double* y_out) {
    std::uint64_t bad = 0;  // 64 bits, as wide as the comparisons: no packing
    for (std::int64_t k = 0; k < count; ++k) {
        const double fk = f[k], yk = y[k];
        bad |= bad_row(fk, yk, lo, hi);
        f_out[k] = std::min(std::max(fk, 0.0), 1.0) + 0.0;  // −0 → +0
        y_out[k] = yk;
    }
    return bad;
}

}  // namespace smoothece::SMOOTHECE_KERNEL_NS
