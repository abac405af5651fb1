#include "smoothing/integrate_abs.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "runtime/kernels.hpp"
#include "smoothing/dip_kernel.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace smoothece {
namespace {

// The index of the lowest set bit of x ≠ 0.
inline int count_trailing_zeros(std::uint64_t x) {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(x);
#else
    int k = 0;
    for (; (x & 1) == 0; x >>= 1) ++k;
    return k;
#endif
}

// H(s) on cell [j, j+1]: the cubic Hermite interpolant of F (values F, slopes r).
double hermite_at(const double* r, const double* F, std::int64_t j, double h, double s) {
    const double s2 = s * s, s3 = s2 * s;
    return (2 * s3 - 3 * s2 + 1) * F[j] + (s3 - 2 * s2 + s) * h * r[j] + (-2 * s3 + 3 * s2) * F[j + 1] +
           (s3 - s2) * h * r[j + 1];
}

// F at the root of r inside cell [j, j+1] (r changes sign there), on the
// cubic Hermite interpolant H of F (values F, slopes r): its derivative is a
// quadratic q(s) with q(0) = r0, q(1) = r1 of opposite signs, so exactly one
// root lies in (0, 1); the stable quadratic formula finds it.
double antiderivative_at_root(const double* r, const double* F, std::int64_t j, double h) {
    const double r0 = r[j], r1 = r[j + 1], F0 = F[j], F1 = F[j + 1];
    const double d = (F1 - F0) / h;
    const double qa = -6.0 * d + 3.0 * r0 + 3.0 * r1, qb = 6.0 * d - 4.0 * r0 - 2.0 * r1;
    double s;
    const double disc = qb * qb - 4.0 * qa * r0;
    if (std::fabs(qa) <= 1e-12 * (std::fabs(qb) + std::fabs(r0)) || !(disc >= 0.0)) {
        s = r0 / (r0 - r1);  // (nearly) linear: the secant root
    } else {
        const double t = -0.5 * (qb + std::copysign(std::sqrt(disc), qb));
        const double s1 = t / qa, s2 = t != 0.0 ? r0 / t : s1;
        s = (s1 >= 0.0 && s1 <= 1.0) ? s1 : s2;
    }
    return hermite_at(r, F, j, h, std::min(std::max(s, 0.0), 1.0));
}

// What the pieces miss: a dip of r to the other side of zero between two
// nodes on one side (r̂σ grazing zero, narrower than the node spacing) is
// counted with its sign inside its piece, where |r| needs it the other way:
// 2·|∫ over the dip| (cell_holds_dip, dip_kernel.hpp: H′ = q crosses zero
// twice inside a cell whose nodes lie on one side), the dip being [vertex ∓
// root] of q. The scan over the cells vectorizes (any_dip); dips are rare,
// and the cells that hold them are found in a second loop.
double dip_correction(const double* r, const double* F, std::int64_t begin, std::int64_t end, double h, double noise) {
    const double inv_h = 1.0 / h;
    if (!SMOOTHECE_KERNEL_CALL(any_dip, r, F, begin, end, inv_h, noise)) return 0.0;  // the scan, four cells a step with AVX2
    double extra = 0.0;
    for (std::int64_t j = begin; j < end; ++j) {
        if (!cell_holds_dip(r, F, j, inv_h, noise)) continue;
        double qa, qb;
        dip_quadratic(r, F, j, inv_h, qa, qb);
        const double vertex = -qb / (2.0 * qa), half = std::sqrt(qb * qb - (4.0 * qa) * r[j]) / (2.0 * std::fabs(qa));
        extra += 2.0 * std::fabs(hermite_at(r, F, j, h, std::min(vertex + half, 1.0)) -
                                 hermite_at(r, F, j, h, std::max(vertex - half, 0.0)));
    }
    return extra;
}

}  // namespace

double integrate_abs(const double* r, const double* F, std::int64_t begin, std::int64_t end, std::int64_t intervals) {
    const double h = 1.0 / static_cast<double>(intervals);
    const std::int64_t n = end - begin + 1;
    // Signs flipping at rounding level (in the tails of a bump, say) are not
    // roots: r counts as zero within `noise` of it, and a piece ends only
    // where r passes from one side of that band to the other (at its first
    // sign change inside the band). A scan looks only for the other side's
    // next node; the nodes in between never need a side of their own.
    // The largest and smallest |r| (NaN ignored, as std::max ignores a NaN
    // second argument, and noted), in independent lanes.
    const double* v = r + begin;
    double most = 0.0, least = std::numeric_limits<double>::infinity();
    bool nan = false;
    std::int64_t j = 0;
#if defined(__SSE2__)
    const __m128d abs_mask = _mm_castsi128_pd(_mm_set1_epi64x(0x7FFFFFFFFFFFFFFF));
    __m128d hi0 = _mm_setzero_pd(), hi1 = hi0, lo0 = _mm_set1_pd(least), lo1 = lo0, nan01 = hi0;
    for (; j + 4 <= n; j += 4) {
        const __m128d a0 = _mm_and_pd(_mm_loadu_pd(v + j), abs_mask), a1 = _mm_and_pd(_mm_loadu_pd(v + j + 2), abs_mask);
        hi0 = _mm_max_pd(a0, hi0);  // maxpd and minpd return the second operand when either is NaN
        hi1 = _mm_max_pd(a1, hi1);
        lo0 = _mm_min_pd(a0, lo0);
        lo1 = _mm_min_pd(a1, lo1);
        nan01 = _mm_or_pd(nan01, _mm_cmpunord_pd(a0, a1));
    }
    double lanes[2];
    _mm_storeu_pd(lanes, _mm_max_pd(hi0, hi1));
    most = std::max(lanes[0], lanes[1]);
    _mm_storeu_pd(lanes, _mm_min_pd(lo0, lo1));
    least = std::min(lanes[0], lanes[1]);
    nan = _mm_movemask_pd(nan01) != 0;
#endif
    for (; j < n; ++j) {
        const double a = std::fabs(v[j]);
        most = std::max(most, a);
        least = std::min(least, a);
        nan |= std::isnan(a);
    }
    const double noise = 64.0 * std::numeric_limits<double>::epsilon() * most;
    // No node within the band (the common case; NaN and 0 fail the test):
    // every sign change of r between two nodes is a root. The signs go into
    // bit words and the roots are read off their changes, so there is no
    // branch per node to mispredict and the roots' square roots and divisions
    // overlap. The same roots, in the same order, as the scan below.
    if (least > noise && !nan) {
        thread_local std::vector<std::uint64_t> positive;
        const auto words = static_cast<std::size_t>((n + 63) / 64);
        positive.assign(words + 1, 0);
        for (std::size_t w = 0; w < words; ++w) {
            const std::int64_t first = static_cast<std::int64_t>(64 * w), last = std::min(first + 64, n);
            std::uint64_t bits = 0;
            std::int64_t k = first;
#if defined(__SSE2__)
            for (; k + 2 <= last; k += 2)
                bits |= static_cast<std::uint64_t>(_mm_movemask_pd(_mm_cmpgt_pd(_mm_loadu_pd(v + k), _mm_setzero_pd())))
                        << (k - first);
#endif
            for (; k < last; ++k) bits |= static_cast<std::uint64_t>(v[k] > 0.0) << (k - first);
            positive[w] = bits;
        }
        double total = 0.0, piece_start = F[begin];
        for (std::size_t w = 0; w < words; ++w) {
            // Bit k: nodes 64w + k and 64w + k + 1 differ in sign (the last node has no successor).
            std::uint64_t change = positive[w] ^ ((positive[w] >> 1) | (positive[w + 1] << 63));
            if (w + 1 == words) change &= (n - 1) % 64 == 0 ? 0 : ~std::uint64_t{0} >> (64 - (n - 1) % 64);
            for (; change != 0; change &= change - 1) {
                const std::int64_t k = static_cast<std::int64_t>(64 * w) + count_trailing_zeros(change);
                const double root_F = antiderivative_at_root(r, F, begin + k, h);
                total += std::fabs(root_F - piece_start);
                piece_start = root_F;
            }
        }
        return total + std::fabs(F[end] - piece_start) + dip_correction(r, F, begin, end, h, noise);
    }
    // The first node at or after `from` beyond the band on one side (n if none):
    // four nodes a test, since the runs between sign changes are long.
    auto next_beyond = [v, n, noise](std::int64_t from, bool above) {
        std::int64_t i = from;
        if (above) {
            for (; i + 4 <= n; i += 4)
                if ((v[i] > noise) | (v[i + 1] > noise) | (v[i + 2] > noise) | (v[i + 3] > noise)) break;
            while (i < n && !(v[i] > noise)) ++i;
        } else {
            for (; i + 4 <= n; i += 4)
                if ((v[i] < -noise) | (v[i + 1] < -noise) | (v[i + 2] < -noise) | (v[i + 3] < -noise)) break;
            while (i < n && !(v[i] < -noise)) ++i;
        }
        return i;
    };
    auto in_band = [noise](double x) { return !(x > noise) && !(x < -noise); };
    double total = 0.0, piece_start = F[begin];
    const std::int64_t first_above = next_beyond(0, true), first_below = next_beyond(0, false);
    std::int64_t at = std::min(first_above, first_below);  // the current side's first node
    if (at == n) return std::fabs(F[end] - piece_start);  // r is noise throughout
    bool above = first_above < first_below;
    // The first crossing is the other side's first node, already found (n:
    // one sign throughout, the common case for a miscalibrated model).
    for (std::int64_t cross = std::max(first_above, first_below); cross < n; cross = next_beyond(at + 1, !above)) {
        // The last node on the old side before the crossing, then the first
        // strict sign change after it.
        std::int64_t k = cross - 1;
        while (in_band(v[k])) --k;
        double root_F = F[begin + cross];
        for (; k < cross; ++k) {
            const double r0 = v[k], r1 = v[k + 1];
            if ((r0 < 0.0 && r1 > 0.0) || (r0 > 0.0 && r1 < 0.0)) {
                root_F = antiderivative_at_root(r, F, begin + k, h);
                break;
            }
            if (r1 == 0.0) {
                root_F = F[begin + k + 1];
                break;
            }
        }
        total += std::fabs(root_F - piece_start);
        piece_start = root_F;
        at = cross;
        above = !above;
    }
    return total + std::fabs(F[end] - piece_start) + dip_correction(r, F, begin, end, h, noise);
}

}  // namespace smoothece
