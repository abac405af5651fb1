#include "smoothing/spectrum.hpp"

#include <fftw3.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "runtime/pool.hpp"

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
    // 30% faster at most other lengths (bench/results/fft_plans.md).
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

namespace {

constexpr double kWindowPad = 10.0;
// A window is used where it is at most this share of the grid.
constexpr double kWindowShare = 0.75;

std::int64_t common_divisor(std::int64_t a, std::int64_t b) {
    while (b != 0) a = std::exchange(b, a % b);
    return a;
}

}  // namespace

GridWindow GridWindow::whole_grid(std::int64_t g, double sigma_max) {
    GridWindow w;
    w.intervals = g;
    w.sigma_max = sigma_max;
    return w;
}

GridWindow window_of(std::int64_t g, std::int64_t first, std::int64_t last, double sigma_max, std::int64_t band_out) {
    GridWindow w = GridWindow::whole_grid(g, sigma_max);
    if (last < first) return w;
    // Window ends on multiples of q nodes are band nodes too.
    const std::int64_t q = band_out > 0 ? g / common_divisor(g, band_out) : 1;
    const auto pad = static_cast<std::int64_t>(std::ceil(kWindowPad * sigma_max * static_cast<double>(g)));
    const std::int64_t lo = std::max<std::int64_t>(0, first - pad) / q * q;
    const std::int64_t hi = std::min(g, (last + pad + q - 1) / q * q);
    // A transform length FFTW runs fast (read_intervals' sizes) in steps of q.
    const std::int64_t steps = (hi - lo + q - 1) / q;
    std::int64_t friendly = 1;
    while (friendly < steps && friendly < kMinReadIntervals) friendly *= 2;
    if (friendly < steps) friendly = read_intervals(static_cast<double>(steps), std::max<std::int64_t>(steps, 64) * 2);
    const std::int64_t intervals = friendly * q;
    if (static_cast<double>(intervals) > kWindowShare * static_cast<double>(g)) return w;
    w.whole = false;
    w.first = std::min(lo, g - intervals);
    w.intervals = intervals;
    w.scale = static_cast<double>(g) / static_cast<double>(intervals);
    if (band_out > 0) {
        w.band_first = w.first / q * (band_out / common_divisor(g, band_out));
        w.band_intervals = intervals / q * (band_out / common_divisor(g, band_out));
    }
    return w;
}

}  // namespace smoothece
