#include "bin_kernel.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

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
    double f[kBlock], y[kBlock], w[kBlock], pos[kBlock], lam[kBlock], lam2[kBlock], lam3[kBlock];
    std::int32_t cell[kBlock];  // int32: G ≤ 2^22, and it lets the conversion vectorize
    const auto last = static_cast<std::int32_t>(intervals - 1);
    double wsum = 0.0;
    for (std::int64_t b = begin; b < end; b += kBlock) {
        const std::int64_t count = std::min(kBlock, end - b);
        load_block<F>(in.f, b, count, f);
        load_block<Y>(in.y, b, count, y);
        if constexpr (!std::is_void_v<W>) load_block<W>(in.w, b, count, w);
        // Checks and arithmetic in one branch-free loop that the compiler
        // vectorizes. NaN fails every comparison, so it counts as bad too.
        std::int64_t bad = 0;
        for (std::int64_t k = 0; k < count; ++k) {
            const double fk = f[k], yk = y[k];
            const double wk = std::is_void_v<W> ? 1.0 : w[k];
            bad += (fk >= lo ? 0 : 1) + (fk <= hi ? 0 : 1) + ((yk == 0.0) | (yk == 1.0) ? 0 : 1) +
                   (wk >= 0.0 ? 0 : 1) + (wk <= kMaxWeight ? 0 : 1);
            const double fc = std::min(std::max(fk, 0.0), 1.0);
            f[k] = fc;
            pos[k] = fc;
            w[k] = wk;
        }
        if (bad) return false;
        if (in.logit.enabled) {
            // Logit metric: the grid lives in logit space, mapped onto [0, 1].
            const double eps = kLogitEpsilon, lo_z = in.logit.lo, inv = in.logit.inv_span;
            for (std::int64_t k = 0; k < count; ++k) {
                const double p = std::min(std::max(f[k], eps), 1.0 - eps);
                pos[k] = (std::log(p) - std::log1p(-p) - lo_z) * inv;
            }
        }
        for (std::int64_t k = 0; k < count; ++k) {
            const double x = pos[k] * scale;
            const std::int32_t j = std::min(static_cast<std::int32_t>(x), last);  // x ≥ 0: truncation is floor
            cell[k] = j;
            const double l = x - static_cast<double>(j);
            lam[k] = l;
            lam2[k] = l * l;
            lam3[k] = l * l * l;
        }
        for (std::int64_t k = 0; k < count; ++k) {
            Cell& c = cells[cell[k]];
            const double l1 = lam[k], l2 = lam2[k], l3 = lam3[k];
            auto add = [&](Moments& m, double v) {
                m.p0 += v;
                m.p1 += v * l1;
                m.p2 += v * l2;
                m.p3 += v * l3;
            };
            add(c.r, w[k] * (y[k] - f[k]));
            if constexpr (std::is_same_v<Cell, FullCell>) {
                add(c.w, w[k]);
                add(c.wy, w[k] * y[k]);
            }
            wsum += w[k];
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
