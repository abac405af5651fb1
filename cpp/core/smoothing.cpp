#include "smoothing.hpp"

#include <fftw3.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

#include "bin_kernel.hpp"
#include "pool.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace smoothece {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kNegligible = 1.3e-24;  // e^-55: a Gaussian factor below this is dropped

// FFTW planning is not thread-safe; execution of an existing plan on new
// arrays is. Plans are made once per length and direction under a lock and
// kept for the life of the process (the cache is leaked on purpose: threads
// may still use it while the process exits). Each direction is planned on
// first use only: an estimated plan still costs 0.5–2 ms to make, and most
// lengths go one way only (read-offs inverse, spectra mostly forward).
enum class Direction { kForward, kInverse };  // r2c, c2r of one even length

fftw_plan shared_plan_for(std::int64_t length, Direction direction) {
    static auto* mutex = new std::mutex;
    static auto* cache = new std::map<std::pair<std::int64_t, Direction>, fftw_plan>;
    std::lock_guard<std::mutex> lock(*mutex);
    const auto key = std::make_pair(length, direction);
    auto it = cache->find(key);
    if (it != cache->end()) return it->second;
    FftwBuffer real(length + 2), complex(length + 2);
    auto* c = reinterpret_cast<fftw_complex*>(complex.data());
    const int n = static_cast<int>(length);
    const fftw_plan plan = direction == Direction::kForward
                               ? fftw_plan_dft_r2c_1d(n, real.data(), c, FFTW_ESTIMATE)
                               : fftw_plan_dft_c2r_1d(n, c, real.data(), FFTW_ESTIMATE | FFTW_DESTROY_INPUT);
    if (!plan) throw std::runtime_error("FFTW could not plan a transform of size " + std::to_string(length));
    return cache->emplace(key, plan).first->second;
}

fftw_plan plan_for(std::int64_t length, Direction direction) {
    // Each thread remembers the plans it has used, so the lock is taken once
    // per thread, length and direction, not once per transform.
    thread_local std::map<std::pair<std::int64_t, Direction>, fftw_plan> known;
    const auto key = std::make_pair(length, direction);
    const auto seen = known.find(key);
    if (seen != known.end()) return seen->second;
    const fftw_plan plan = shared_plan_for(length, direction);
    known.emplace(key, plan);
    return plan;
}

// Scratch arrays of the calling thread, grown as needed and reused.
struct Scratch {
    FftwBuffer real, complex;
    void reserve(std::int64_t length) {
        if (real.size() < length + 2) {
            real = FftwBuffer(length + 2);
            complex = FftwBuffer(length + 2);
        }
    }
};

Scratch& scratch() {
    thread_local Scratch s;
    return s;
}

// Entries 0..n of a table of value(k), grown as needed (each caller keeps
// one per thread).
template <class Value>
const double* grown(std::vector<double>& table, std::int64_t n, Value value) {
    if (static_cast<std::int64_t>(table.size()) <= n) {
        const std::size_t old = table.size();
        table.resize(static_cast<std::size_t>(n + 1));
        for (std::size_t k = old; k < table.size(); ++k) table[k] = value(k);
    }
    return table.data();
}

// 1/(πk) for k = 0..n (entry 0 is 0).
const double* reciprocals(std::int64_t n) {
    thread_local std::vector<double> table;
    return grown(table, n, [](std::size_t k) { return k == 0 ? 0.0 : 1.0 / (kPi * static_cast<double>(k)); });
}

// The numbers 0..n as doubles: read from a table, j·x vectorizes (SSE2 has
// no packed int64 → double conversion).
const double* node_indices(std::int64_t n) {
    thread_local std::vector<double> table;
    return grown(table, n, [](std::size_t k) { return static_cast<double>(k); });
}

}  // namespace

FftwBuffer::FftwBuffer(std::int64_t doubles)
    : ptr_(doubles > 0 ? static_cast<double*>(fftw_malloc(sizeof(double) * static_cast<std::size_t>(doubles))) : nullptr),
      size_(doubles) {
    if (doubles > 0 && !ptr_) throw std::bad_alloc();
}

void FftwBuffer::Free::operator()(double* p) const { fftw_free(p); }

Spectrum::Spectrum(const double* masses, std::int64_t intervals)
    : intervals_(intervals), coeff_(new double[static_cast<std::size_t>(intervals + 1)]) {
    if (intervals < 2) throw std::logic_error("smoothing needs at least two grid intervals");
    const std::int64_t g = intervals, length = 2 * g;
    Scratch& s = scratch();
    s.reserve(length);
    // S_k = Σ_j m_j·e^{−iπjk/G} over the mirrored masses (2m_0, m_1, …, 2m_G,
    // …, m_1) = 2m_0 + 2m_G(−1)^k + 2Σ_{0<j<G} m_j cos(πjk/G). Either the
    // forward transform of the mirrored masses, or the inverse transform of
    // the masses read as a real half spectrum (the same sum with m_0 and m_G
    // once). FFTW's estimated plans run the inverse a third faster at the
    // lengths 6,144 and 12,288 (resampling's work grids) and the forward up to
    // 30% faster at most other lengths (bench/fft_plans.md).
    double* spec = s.complex.data();
    double* real = s.real.data();
    if (length % 3 == 0 && length >= 6144 && length <= 12288) {
        for (std::int64_t j = 0; j <= g; ++j) {
            spec[2 * j] = masses[j];
            spec[2 * j + 1] = 0.0;
        }
        fftw_execute_dft_c2r(plan_for(length, Direction::kInverse), reinterpret_cast<fftw_complex*>(spec), real);
        const double ends[2] = {masses[0] + masses[g], masses[0] - masses[g]};  // m_0 + m_G(−1)^k
        for (std::int64_t k = 0; k <= g; ++k) coeff_[k] = real[k] + ends[k & 1];
        return;
    }
    real[0] = 2.0 * masses[0];
    real[g] = 2.0 * masses[g];
    for (std::int64_t j = 1; j < g; ++j) real[j] = real[length - j] = masses[j];
    fftw_execute_dft_r2c(plan_for(length, Direction::kForward), real, reinterpret_cast<fftw_complex*>(spec));
    for (std::int64_t k = 0; k <= g; ++k) coeff_[k] = spec[2 * k];
}

void Spectrum::evaluate(double sigma, double* values, double* antiderivative, std::int64_t out_intervals) const {
    interruption_point();
    // The output grid may be finer (the coefficients beyond G are 0) or
    // coarser: then the coefficients beyond M fold onto 0..M (at the nodes
    // j/M, cos(πkj/M) and sin(πkj/M) repeat with period 2M in k and are even
    // and odd about M), so the coarse nodes are exact samples either way.
    const std::int64_t g = out_intervals > 0 ? out_intervals : intervals_, length = 2 * g;
    const std::int64_t known = std::min(g, intervals_);
    const fftw_plan inverse = plan_for(length, Direction::kInverse);
    Scratch& s = scratch();
    s.reserve(length);
    double* c = s.complex.data();  // interleaved (re, im), k = 0..G
    const double* S = coeff_.get();
    // ĝ_k = exp(−π²σ²k²/2), in four interleaved recurrences
    // ĝ_{k+4} = ĝ_k·e^{a(8k+16)} (independent chains, so the multiplies
    // pipeline), restarted from exact values every 64 steps (rounding grows
    // by ≲ 32 ulp); zero from the first block below e^-55 ≈ 1e-24: what is
    // dropped, ≤ 1e-24·G·max|S_k|, lies below the transform's own rounding.
    const double a = -0.5 * kPi * kPi * sigma * sigma, step = std::exp(32.0 * a);
    const double* inv = reciprocals(intervals_);  // 1/(πk)
    // Coefficient k (blocks of 64 from k0 to k1 ≤ `last`) into slot(k, ĝ_k·S_k).
    auto coefficients = [&](std::int64_t first, std::int64_t last, auto&& slot) {
        for (std::int64_t k0 = first; k0 <= last; k0 += 64) {
            double gk[4], ratio[4];
            for (int i = 0; i < 4; ++i) {
                const auto kd = static_cast<double>(k0 + i);
                gk[i] = std::exp(a * kd * kd);
                ratio[i] = std::exp(a * (8.0 * kd + 16.0));
            }
            if (gk[0] < kNegligible) return k0 - 1;
            const std::int64_t k1 = std::min(last, k0 + 63);
            std::int64_t k = k0;
            for (; k + 3 <= k1; k += 4) {
                for (int i = 0; i < 4; ++i) {
                    slot(k + i, gk[i] * S[k + i]);
                    gk[i] *= ratio[i];
                    ratio[i] *= step;
                }
            }
            for (int i = 0; k + i <= k1; ++i) slot(k + i, gk[i] * S[k + i]);  // the last block's remainder
        }
        return last;
    };
    const std::int64_t kmax = coefficients(0, known, [&](std::int64_t k, double ck) {
        c[2 * k] = ck;
        c[2 * k + 1] = -ck * inv[k];
    });
    for (std::int64_t k = kmax + 1; k <= g; ++k) c[2 * k] = c[2 * k + 1] = 0.0;
    if (kmax == known && known < intervals_) {
        // The inverse transform counts slots 0 and M once and every other
        // slot twice (as k and −k); the spectrum counts S_G once and every
        // other S_k twice. So the terms that land on slot 0 or M count twice
        // there, S_G half as much as the rest, and the sine terms (zero at
        // the nodes of slots 0 and M) flip sign on the mirrored half.
        c[2 * g] *= 2.0;
        coefficients(known + 1, intervals_, [&](std::int64_t k, double ck) {
            if (k == intervals_) ck *= 0.5;
            const std::int64_t r = k % length;
            const std::int64_t at = r <= g ? r : length - r;
            if (at == 0 || at == g) {
                c[2 * at] += 2.0 * ck;
            } else {
                c[2 * at] += ck;
                c[2 * at + 1] += r < g ? -ck * inv[k] : ck * inv[k];
            }
        });
    }
    c[1] = 0.0;
    c[2 * g + 1] = 0.0;
    double* out = s.real.data();
    fftw_execute_dft_c2r(inverse, reinterpret_cast<fftw_complex*>(c), out);
    // out_j = 2 r(t_j) + O_j with O odd: r_j = (out_j + out_{2G−j})/4, O_j = (out_j − out_{2G−j})/2.
    values[0] = 0.5 * out[0];
    values[g] = 0.5 * out[g];
    for (std::int64_t j = 1; j < g; ++j) values[j] = 0.25 * (out[j] + out[length - j]);
    if (!antiderivative) return;
    const double slope = 0.5 * S[0];  // F(t) = (S_0 t + O(t))/2
    const double per_node = slope / static_cast<double>(g);
    const double* index = node_indices(g);
    antiderivative[0] = 0.0;
    antiderivative[g] = slope;
    for (std::int64_t j = 1; j < g; ++j) antiderivative[j] = per_node * index[j] + 0.25 * (out[j] - out[length - j]);
}

std::int64_t read_intervals(double at_least, std::int64_t most) {
    for (std::int64_t power = kMinReadIntervals; power <= most; power *= 2) {
        for (const std::int64_t m : {power, power / 8 * 9, power / 4 * 5, power / 2 * 3})
            if (static_cast<double>(m) >= at_least) return std::min(m, most);
    }
    return most;
}

GroupSmoothing::GroupSmoothing(std::int64_t intervals, const std::vector<std::int32_t>& group, std::int64_t groups,
                               const std::vector<const std::vector<double>*>& arrays, double sigma, std::int64_t out_intervals)
    : nodes_(out_intervals + 1), first_(static_cast<std::size_t>(groups), 0), end_(first_), offset_(first_) {
    // Positions in units of 1/L, L = lcm(G, M): input node j at j·L/G,
    // output node m at m·L/M, mirror images at −j·L/G + 2nL and j·L/G + 2nL.
    // The mirrored Gaussian of the smoothing is then a table of integer
    // offsets, cut where it is below e^-40 of its peak.
    const std::int64_t L = std::lcm(intervals, out_intervals);
    const std::int64_t in_step = L / intervals, out_step = L / out_intervals;
    const double sigma_l = sigma * static_cast<double>(L);
    const auto half = static_cast<std::int64_t>(9.0 * sigma_l);
    std::vector<double> kernel(static_cast<std::size_t>(2 * half + 1));
    const double norm = static_cast<double>(L) / (sigma_l * std::sqrt(2.0 * kPi));
    for (std::int64_t k = -half; k <= half; ++k) {
        const double d = static_cast<double>(k) / sigma_l;
        kernel[static_cast<std::size_t>(k + half)] = norm * std::exp(-0.5 * d * d);
    }
    const std::int64_t images = half / (2 * L) + 1;
    auto floor_div = [](std::int64_t a, std::int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); };
    std::vector<std::int64_t> lo(first_.size(), intervals + 1), hi(first_.size(), -1);  // each group's nodes
    for (std::int64_t j = 0; j <= intervals; ++j) {
        const auto g = static_cast<std::size_t>(group[static_cast<std::size_t>(j)]);
        lo[g] = std::min(lo[g], j);
        hi[g] = std::max(hi[g], j);
    }
    std::size_t size = 0;
    for (std::size_t g = 0; g < first_.size(); ++g) {
        if (hi[g] < lo[g]) continue;
        first_[g] = std::max<std::int64_t>(0, floor_div(lo[g] * in_step - half + out_step - 1, out_step));
        end_[g] = std::min(nodes_, floor_div(hi[g] * in_step + half, out_step) + 1);
        offset_[g] = static_cast<std::int64_t>(size);
        size += static_cast<std::size_t>(std::max<std::int64_t>(0, end_[g] - first_[g]));
    }
    values_.assign(arrays.size(), std::vector<double>(size, 0.0));
    for (std::size_t a = 0; a < arrays.size(); ++a) {
        const std::vector<double>& mass = *arrays[a];
        for (std::size_t g = 0; g < first_.size(); ++g) {
            double* out = values_[a].data();
            const std::int64_t shift = offset_[g] - first_[g];  // output node m is out[shift + m]
            for (std::int64_t j = lo[g]; j <= hi[g]; ++j) {
                const double m_j = mass[static_cast<std::size_t>(j)];
                if (m_j == 0.0) continue;
                // A mass at 0 or 1 is its own mirror image and counts twice, as in the transform.
                for (std::int64_t n = -images; n <= images; ++n) {
                    for (const std::int64_t at : {j * in_step + 2 * n * L, -j * in_step + 2 * n * L}) {
                        const std::int64_t m0 = std::max(first_[g], floor_div(at - half + out_step - 1, out_step));
                        const std::int64_t m1 = std::min(end_[g] - 1, floor_div(at + half, out_step));
                        for (std::int64_t m = m0; m <= m1; ++m)
                            out[shift + m] += m_j * kernel[static_cast<std::size_t>(m * out_step - at + half)];
                    }
                }
            }
        }
    }
}

void GroupSmoothing::sum_lanes(std::size_t array, const double* factor, std::vector<double>& out) const {
    out.assign(static_cast<std::size_t>(nodes_) * kLanes, 0.0);
    const double* v = values_[array].data();
    for (std::size_t g = 0; g < first_.size(); ++g) {
        const double* c = factor + g * kLanes;
        const double* src = v + offset_[g];
        double* dst = out.data() + static_cast<std::size_t>(first_[g]) * kLanes;
        const std::int64_t count = end_[g] - first_[g];
        static_assert(kLanes == 8, "add_lanes sums eight lanes");
        add_lanes(src, count, c, dst);
    }
}

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
// 2·|∫ over the dip| (cell_holds_dip, bin_kernel.hpp: H′ = q crosses zero
// twice inside a cell whose nodes lie on one side), the dip being [vertex ∓
// root] of q. The scan over the cells vectorizes (any_dip); dips are rare,
// and the cells that hold them are found in a second loop.
double dip_correction(const double* r, const double* F, std::int64_t begin, std::int64_t end, double h, double noise) {
    const double inv_h = 1.0 / h;
    if (!any_dip(r, F, begin, end, inv_h, noise)) return 0.0;  // the scan, four cells a step with AVX2
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
