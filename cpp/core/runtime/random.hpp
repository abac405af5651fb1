// Random numbers that are the same on every platform, compiler and thread
// count: the Philox4x64-10 counter-based generator and our own samplers.
//
// Why our own: std::mt19937_64 is specified bit for bit, but the standard
// library's distributions (binomial, discrete, normal, ...) are not, so with
// them a seed would give other bootstrap replicates with another standard
// library.
//
// Why counter-based: a Philox block is a pure function of (counter, key), so
// replicate b draws from its own stream without any state shared with, or
// advanced by, other replicates or threads; a stream costs two words to start.
//
// Layout. RandomStream(seed, stream) uses the key {seed, stream} and the
// counters {0, 0, 0, 0}, {1, 0, 0, 0}, {2, 0, 0, 0}, ...: block j is
// philox4x64_10({j, 0, 0, 0}, {seed, stream}), and next_u64() returns its four
// words in order before it computes block j + 1. The same words come from
// numpy.random.Philox(key=seed + stream·2^64, counter=2^256 − 1).random_raw():
// numpy adds one to the counter before each block, so its first block is at 0.
//
// Why our own log and exp: the samplers' results must not depend on the C
// library's transcendental functions, which differ between platforms in the
// last bit. Everything below is built from IEEE-754 operations that are
// correctly rounded everywhere (+ − × ÷, sqrt, comparisons, floor, and exact
// bit manipulation), so the results are bit-identical wherever doubles are
// evaluated in double precision and nothing is fused or reassociated (no
// -ffast-math; no fused multiply-add, see below). The series in portable::log
// and portable::exp are the textbook ones (atanh and Bernoulli), with enough
// terms that truncation stays far below half an ulp; both are within one ulp
// of the true value (cpp/tests/test_random.cpp).
//
// Pure C++17, standard library only.
#pragma once

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#if defined(__FAST_MATH__)
#error "random.hpp: -ffast-math would change the samplers' results; compile without it"
#endif

// Clang fuses a·b + c by default where the target has FMA; this header opts
// out itself (and restores the setting at its end). GCC fuses only outside
// ISO mode (-std=gnu++*), hence -ffp-contract=off in the build.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

namespace smoothece {

static_assert(std::numeric_limits<double>::is_iec559, "the samplers need IEEE-754 doubles");
static_assert(FLT_EVAL_METHOD == 0,
              "the samplers need doubles evaluated in double precision (on 32-bit x86: -msse2 -mfpmath=sse)");

// ---------------------------------------------------------------------------
// Philox4x64-10 (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy
// as 1, 2, 3", SC11, 2011; the Random123 library).

namespace detail {

// The 128-bit product a·b: returns the low word and stores the high one. This
// one is built from 32-bit halves, for compilers without a 128-bit integer.
inline std::uint64_t mulhilo_portable(std::uint64_t a, std::uint64_t b, std::uint64_t& high) {
    const std::uint64_t a_lo = a & 0xFFFFFFFFu, a_hi = a >> 32;
    const std::uint64_t b_lo = b & 0xFFFFFFFFu, b_hi = b >> 32;
    const std::uint64_t lo_lo = a_lo * b_lo, hi_lo = a_hi * b_lo, lo_hi = a_lo * b_hi, hi_hi = a_hi * b_hi;
    const std::uint64_t middle = (lo_lo >> 32) + (hi_lo & 0xFFFFFFFFu) + lo_hi;  // < 2^64: no carry lost
    high = hi_hi + (hi_lo >> 32) + (middle >> 32);
    return (middle << 32) | (lo_lo & 0xFFFFFFFFu);
}

// SMOOTHECE_PORTABLE_MULHILO forces the portable product (the tests build it both ways).
#if defined(__SIZEOF_INT128__) && !defined(SMOOTHECE_PORTABLE_MULHILO)
__extension__ typedef unsigned __int128 uint128_t;
inline std::uint64_t mulhilo(std::uint64_t a, std::uint64_t b, std::uint64_t& high) {
    const uint128_t product = static_cast<uint128_t>(a) * b;
    high = static_cast<std::uint64_t>(product >> 64);
    return static_cast<std::uint64_t>(product);
}
#else
inline std::uint64_t mulhilo(std::uint64_t a, std::uint64_t b, std::uint64_t& high) {
    return mulhilo_portable(a, b, high);
}
#endif

// Round r (0-based) of Philox4x64: the key is bumped r times by the Weyl constants.
inline void philox_round(std::array<std::uint64_t, 4>& counter, const std::array<std::uint64_t, 2>& key,
                         std::uint64_t r) {
    constexpr std::uint64_t kMultiplier0 = 0xD2E7470EE14C6C93u, kMultiplier1 = 0xCA5A826395121157u;
    constexpr std::uint64_t kWeyl0 = 0x9E3779B97F4A7C15u, kWeyl1 = 0xBB67AE8584CAA73Bu;
    std::uint64_t hi0, hi1;
    const std::uint64_t lo0 = mulhilo(kMultiplier0, counter[0], hi0);
    const std::uint64_t lo1 = mulhilo(kMultiplier1, counter[2], hi1);
    counter = {hi1 ^ counter[1] ^ (key[0] + r * kWeyl0), lo1, hi0 ^ counter[3] ^ (key[1] + r * kWeyl1), lo0};
}

}  // namespace detail

inline std::array<std::uint64_t, 4> philox4x64_10(std::array<std::uint64_t, 4> counter,
                                                  std::array<std::uint64_t, 2> key) {
    // Written out: GCC leaves a ten-round loop rolled at -O2, about 15% slower.
    detail::philox_round(counter, key, 0);
    detail::philox_round(counter, key, 1);
    detail::philox_round(counter, key, 2);
    detail::philox_round(counter, key, 3);
    detail::philox_round(counter, key, 4);
    detail::philox_round(counter, key, 5);
    detail::philox_round(counter, key, 6);
    detail::philox_round(counter, key, 7);
    detail::philox_round(counter, key, 8);
    detail::philox_round(counter, key, 9);
    return counter;
}

// ---------------------------------------------------------------------------
// log, exp, log1p from basic operations (see the header comment).

namespace detail {

inline std::uint64_t bits_of(double x) {
    std::uint64_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    return bits;
}

inline double double_of(std::uint64_t bits) {
    double x;
    std::memcpy(&x, &bits, sizeof x);
    return x;
}

// 2^e for a normal power, e in [−1022, 1023].
inline double power_of_two(int e) { return double_of(static_cast<std::uint64_t>(e + 1023) << 52); }

// ln 2 = kLn2Hi + kLn2Lo, where kLn2Hi ends in 20 zero bits so that k·kLn2Hi
// is exact for every |k| < 2^20, which covers every exponent of a double.
constexpr double kLn2Hi = 0x1.62e42feep-1;
constexpr double kLn2Lo = 0x1.a39ef35793c76p-33;
constexpr double kSqrt2 = 1.4142135623730951;

// With s = f/(2 + f), log(1 + f) = 2·atanh(s) = 2s + s·R(s²), where
// R(z) = Σ_{j≥1} 2z^j/(2j + 1). For f in [√2/2 − 1, √2 − 1], |s| ≤ 0.1716 and
// the ten terms here leave a truncation below 10^−18 relative.
inline double atanh_series_tail(double z) {
    const double w = z * z;
    // Odd and even powers of z apart: two short dependency chains.
    const double odd = z * (2.0 / 3 + w * (2.0 / 7 + w * (2.0 / 11 + w * (2.0 / 15 + w * (2.0 / 19)))));
    const double even = w * (2.0 / 5 + w * (2.0 / 9 + w * (2.0 / 13 + w * (2.0 / 17 + w * (2.0 / 21)))));
    return odd + even;
}

// log(2^k·(1 + f)) + c for f in [√2/2 − 1, √2 − 1] and a correction c of about
// an ulp of the result. 2s = f − s·f is rewritten around hfsq = f²/2 so that
// the rounding errors stay below the leading f.
inline double log_of_reduced(int k, double f, double c) {
    const double s = f / (2.0 + f);
    const double r = atanh_series_tail(s * s);
    const double hfsq = 0.5 * f * f;
    const double dk = static_cast<double>(k);
    return dk * kLn2Hi - ((hfsq - (s * (hfsq + r) + (dk * kLn2Lo + c))) - f);
}

// x = 2^k·m with m in [√2/2, √2), for finite x > 0.
inline double split_exponent(double x, int& k) {
    std::uint64_t bits = bits_of(x);
    k = 0;
    if (bits >> 52 == 0) {  // subnormal: scale into the normal range first
        bits = bits_of(x * 0x1p54);
        k = -54;
    }
    k += static_cast<int>(bits >> 52) - 1023;
    double m = double_of((bits & 0x000FFFFFFFFFFFFFu) | 0x3FF0000000000000u);
    if (m > kSqrt2) {
        m *= 0.5;
        ++k;
    }
    return m;
}

}  // namespace detail

namespace portable {

inline double log(double x) {
    if (!(x > 0.0) || x == std::numeric_limits<double>::infinity()) {
        if (x == 0.0) return -std::numeric_limits<double>::infinity();
        return x < 0.0 ? std::numeric_limits<double>::quiet_NaN() : x;  // NaN or +inf
    }
    int k;
    const double m = detail::split_exponent(x, k);
    return detail::log_of_reduced(k, m - 1.0, 0.0);
}

inline double log1p(double x) {
    if (!(x > -1.0) || x == std::numeric_limits<double>::infinity()) {
        if (x == -1.0) return -std::numeric_limits<double>::infinity();
        return x < -1.0 ? std::numeric_limits<double>::quiet_NaN() : x;
    }
    const double u = 1.0 + x;
    int k;
    const double m = detail::split_exponent(u, k);
    if (k == 0) return detail::log_of_reduced(0, x, 0.0);  // u = 1 + x up to rounding: use x itself
    // log(1 + x) = log(u) + log1p((1 + x − u)/u) ≈ log(u) + (1 + x − u)/u, a
    // term of about an ulp; 1 + x − u is exact (Fast2Sum, larger operand first).
    const double c = (x > 1.0 ? 1.0 - (u - x) : x - (u - 1.0)) / u;
    return detail::log_of_reduced(k, m - 1.0, c);
}

// log1p(x) − x without the cancellation near 0: with s = x/(2 + x),
// log1p(x) = 2s + s·R = x − s·x + s·R, so log1p(x) − x = s·(R − x). Outside the
// series' range the plain difference cancels at most a factor ~6 (a few ulp).
inline double log1pmx(double x) {
    if (!(x >= detail::kSqrt2 / 2 - 1.0 && x <= detail::kSqrt2 - 1.0)) return portable::log1p(x) - x;
    const double s = x / (2.0 + x);
    return s * (detail::atanh_series_tail(s * s) - x);
}

// exp(x) = 2^k·exp(r), r = x − k·ln 2 in [−ln2/2, ln2/2]. exp(r) = 1 + r +
// r·c/(2 − c) with c = r − (r·coth(r/2) − 2), and r·coth(r/2) − 2 =
// Σ_{j≥1} 2·B_{2j}·r^{2j}/(2j)! (Bernoulli numbers); six terms leave a
// truncation below 10^−17.
inline double exp(double x) {
    if (x != x) return x;
    if (x > 710.0) return std::numeric_limits<double>::infinity();
    if (x < -746.0) return 0.0;
    constexpr double kInvLn2 = 1.4426950408889634;
    const int k = static_cast<int>(x * kInvLn2 + (x < 0.0 ? -0.5 : 0.5));
    const double dk = static_cast<double>(k);
    const double hi = x - dk * detail::kLn2Hi;  // exact
    const double lo = dk * detail::kLn2Lo;
    const double r = hi - lo;
    const double t = r * r;
    const double t2 = t * t;
    const double series = t * ((1.0 / 6 + t2 * (1.0 / 15120 + t2 * (1.0 / 23950080))) +
                               t * (-1.0 / 360 + t2 * (-1.0 / 604800 + t2 * (-691.0 / 653837184000))));
    const double c = r - series;
    const double y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);
    if (k > 1023) return (y * 2.0) * detail::power_of_two(1023);
    if (k < -1021) return (y * detail::power_of_two(k + 1000)) * detail::power_of_two(-1000);  // one rounding
    return y * detail::power_of_two(k);
}

// The error of Stirling's formula for log k!:
//   log k! = (k + ½)·log(k + 1) − (k + 1) + ½·log(2π) + stirling_tail(k),
// for k ≥ 0 (Hörmann 1993's f_c). Tabulated up to 9, then the Stirling series
// in 1/(k + 1) through the 1/(k + 1)^13 term (error < 10^−17).
inline double stirling_tail(std::int64_t k) {
    // log k! − (k + ½)·log(k + 1) + (k + 1) − ½·log(2π), computed to 60 digits and rounded.
    static constexpr double kSmall[10] = {
        0.08106146679532726,  0.0413406959554093,   0.02767792568499834,  0.020790672103765093,
        0.016644691189821193, 0.013876128823070748, 0.01189670994589177,  0.010411265261972096,
        0.009255462182712733, 0.00833056343336287};
    if (k < 10) return kSmall[k];
    const double inv_z = 1.0 / (static_cast<double>(k) + 1.0);
    const double w = inv_z * inv_z;
    return inv_z * (1.0 / 12 +
                    w * (-1.0 / 360 +
                         w * (1.0 / 1260 + w * (-1.0 / 1680 + w * (1.0 / 1188 + w * (-691.0 / 360360 + w * (1.0 / 156)))))));
}

}  // namespace portable

// ---------------------------------------------------------------------------
// Log-probability ratios for the acceptance tests of BTRD and PTRS. Every
// term is O(1), so the results keep full precision even where n or the mean
// is far beyond 2^53 (the textbook forms subtract terms of size n·log n).

namespace detail {

constexpr double kHalfLog2Pi = 0.9189385332046728;

// log(f(k)/f(m)) for Binomial(n, p), k = m + d, given the exact split
// (n + 1)·p = m + frac. From Stirling's formula for the four factorials,
//   −(m + ½)·log1pmx(d/(m + 1)) − (n − m + ½)·log1pmx(−d/(n − m + 1))
//   + (d/2)·(1/(m + 1) − 1/(n − m + 1)) + d·log((n − k + 1)·p / ((k + 1)·q))
//   + stirling_tail(m) + stirling_tail(n − m) − stirling_tail(k) − stirling_tail(n − k),
// where (n − k + 1)·p − (k + 1)·q = (n + 2)·p − (k + 1) = frac + p − 1 − d.
inline double binomial_log_ratio(std::int64_t n, double p, std::int64_t m, double frac, std::int64_t k) {
    const double q = 1.0 - p;
    const double d = static_cast<double>(k - m);
    const double m1 = static_cast<double>(m) + 1.0, nm1 = static_cast<double>(n - m) + 1.0;
    const double k1 = static_cast<double>(k) + 1.0;
    return -(m1 - 0.5) * portable::log1pmx(d / m1) - (nm1 - 0.5) * portable::log1pmx(-d / nm1) +
           0.5 * d * (1.0 / m1 - 1.0 / nm1) + d * portable::log1p((frac + p - 1.0 - d) / (k1 * q)) +
           portable::stirling_tail(m) + portable::stirling_tail(n - m) - portable::stirling_tail(k) -
           portable::stirling_tail(n - k);
}

// log f(k) for Poisson(mean), given delta = k + 1 − mean. With z = k + 1 and
// Stirling's formula for k!, log f(k) = −k·log(z/mean) + delta − ½·log(2πz) − stirling_tail(k),
// and −k·log1p(x) + delta = −k·log1pmx(x) + delta·(1 − delta)/mean for x = delta/mean.
inline double poisson_log_pmf(double mean, std::int64_t k, double delta) {
    const double dk = static_cast<double>(k);
    return -dk * portable::log1pmx(delta / mean) + delta * (1.0 - delta) / mean -
           (kHalfLog2Pi + 0.5 * portable::log(dk + 1.0)) - portable::stirling_tail(k);
}

// n·p split exactly into floor (returned) and fraction, for 0 < p ≤ ½ and
// n·p ≥ 1 (BTRD's range): with p = P·2^−E, the product n·P (< 2^117) is held
// in two words and E lies in [53, 117].
inline std::int64_t floor_of_product(std::uint64_t n, double p, double& fraction) {
    const std::uint64_t bits = bits_of(p);
    const std::uint64_t mantissa = (bits & 0x000FFFFFFFFFFFFFu) | 0x0010000000000000u;
    const int e = 1075 - static_cast<int>(bits >> 52);
    std::uint64_t high;
    const std::uint64_t low = mulhilo(n, mantissa, high);
    if (e >= 64) {
        const int shift = e - 64;
        const std::uint64_t rest = shift == 0 ? 0 : high & ((std::uint64_t{1} << shift) - 1);
        fraction = static_cast<double>(rest) * power_of_two(64 - e) + static_cast<double>(low) * power_of_two(-e);
        return static_cast<std::int64_t>(high >> shift);
    }
    fraction = static_cast<double>(low & ((std::uint64_t{1} << e) - 1)) * power_of_two(-e);
    return static_cast<std::int64_t>((high << (64 - e)) | (low >> e));
}

// The ziggurat of Marsaglia & Tsang (J. Statist. Software 5(8), 2000) for the
// standard normal: 256 layers of equal area under f(x) = exp(−x²/2), x ≥ 0.
// Layer i ≥ 1 is the box [0, x[i]] × [f[i], f[i + 1]], f[i] = f(x[i]); layer 0
// is [0, x[0]] × [0, f(r)], whose part beyond r stands for the tail, so that
// x[0]·f(r) = r·f(r) + ∫_r^∞ f, the common area. Built at first use from
// portable::exp and log, so the tables are the same everywhere; the layers'
// areas agree to ~10^−13.
struct NormalZiggurat {
    static constexpr double kTailStart = 3.6541528853610088;    // r, Marsaglia & Tsang's for 256 layers
    static constexpr double kLayerArea = 0.004928673233974655;  // r·f(r) + ∫_r^∞ f, to 17 digits
    std::array<double, 257> x{}, f{};
    NormalZiggurat() {
        f[1] = portable::exp(-0.5 * kTailStart * kTailStart);
        x[0] = kLayerArea / f[1];
        x[1] = kTailStart;
        for (std::size_t i = 1; i < 255; ++i) {
            x[i + 1] = std::sqrt(-2.0 * portable::log(kLayerArea / x[i] + f[i]));
            f[i + 1] = portable::exp(-0.5 * x[i + 1] * x[i + 1]);
        }
        x[256] = 0.0;  // the top layer closes at the mode
        f[256] = 1.0;
    }
};

inline const NormalZiggurat& normal_ziggurat() {
    static const NormalZiggurat tables;
    return tables;
}

}  // namespace detail

// ---------------------------------------------------------------------------

// Every sampler takes its random numbers one statement at a time: C++ leaves
// the order of evaluation of an expression's operands unspecified, so two draws
// in one expression could come in another order with another compiler.
class RandomStream {
public:
    RandomStream(std::uint64_t seed, std::uint64_t stream) : key_{seed, stream} {}

    std::uint64_t next_u64() {
        if (next_word_ == 4) next_block();
        return block_[static_cast<std::size_t>(next_word_++)];
    }

    // [0, 1), multiples of 2^−53 (the top 53 bits of a word).
    double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1p-53; }

    // (0, 1), odd multiples of 2^−53 (52 random bits): a logarithm's argument.
    double uniform_open() { return (static_cast<double>(next_u64() >> 12) + 0.5) * 0x1p-52; }

    // Standard normal by the ziggurat (detail::NormalZiggurat): 98.5% of
    // draws take one word, whose low 8 bits choose the layer and top 53 bits the
    // position in it.
    double normal() {
        unsigned spare;
        return normal(spare);
    }

    // The same draw, and in `spare` the three bits of its word that it leaves
    // unread (8–10): uniform on 0…7 and independent of the normal.
    double normal(unsigned& spare) {
        const detail::NormalZiggurat& z = detail::normal_ziggurat();
        for (;;) {
            const std::uint64_t word = next_u64();
            spare = static_cast<unsigned>(word >> 8) & 7u;
            const std::size_t i = word & 0xFF;
            const double u = (static_cast<double>(word >> 11) - 0x1p52 + 0.5) * 0x1p-52;  // in (−1, 1), symmetric
            const double x = u * z.x[i];
            if (std::fabs(x) < z.x[i + 1]) return x;  // inside the layer's core
            if (i == 0) return normal_tail(u < 0.0);
            if (z.f[i] + uniform() * (z.f[i + 1] - z.f[i]) < portable::exp(-0.5 * x * x)) return x;  // the wedge
        }
    }

    double exponential() { return -portable::log(uniform_open()); }

    // Gamma(shape, scale 1), shape > 0 (see Gamma).
    double gamma(double shape);

    // Beta(a, b) = X/(X + Y) for X ~ Gamma(a), Y ~ Gamma(b), a, b > 0. When a or
    // b is below 1 the gammas are drawn as logarithms, so that neither
    // underflows and X/(X + Y) = 1/(1 + exp(log Y − log X)) stays defined however
    // small a, b and a + b are (tiny shapes put nearly all the mass at 0 and 1,
    // and draws closer to them than doubles resolve come out as 0 or 1).
    double beta(double a, double b) {
        if (!(a > 0.0 && b > 0.0 && a < std::numeric_limits<double>::infinity() &&
              b < std::numeric_limits<double>::infinity()))
            throw std::invalid_argument("beta: both shapes must be positive and finite");
        if (a >= 1.0 && b >= 1.0) {
            const double x = gamma_at_least_one(a);
            return x / (x + gamma_at_least_one(b));
        }
        const double log_x = log_gamma(a);
        return 1.0 / (1.0 + portable::exp(log_gamma(b) - log_x));
    }

    // Binomial(n, p), exact for every n ≥ 0 and p in [0, 1] (see Binomial).
    std::int64_t binomial(std::int64_t n, double p);

    // Poisson(mean), exact for 0 ≤ mean ≤ 2^62: inversion below 10, else PTRS
    // (Hörmann 1993). mean = 0 gives 0 without using random numbers.
    std::int64_t poisson(double mean) {
        if (!(mean >= 0.0 && mean <= kMaxPoissonMean))
            throw std::invalid_argument("poisson: needs 0 <= mean <= 2^62");
        if (mean == 0.0) return 0;
        if (mean < 10.0) return poisson_inversion(mean);
        return poisson_ptrs(mean);
    }

    static constexpr double kMaxPoissonMean = 0x1p62;

private:
    // |x| > r (Marsaglia 1964): r + a with a = −log(U1)/r, accepted when −2·log(U2) > a².
    double normal_tail(bool negative) {
        constexpr double r = detail::NormalZiggurat::kTailStart;
        for (;;) {
            const double a = -portable::log(uniform_open()) / r;
            const double b = -portable::log(uniform_open());
            if (b + b > a * a) return negative ? -(r + a) : r + a;
        }
    }

    double gamma_at_least_one(double shape);

    // log of a Gamma(shape) variate, without underflow for small shapes.
    double log_gamma(double shape) {
        if (shape >= 1.0) return portable::log(gamma_at_least_one(shape));
        const double log_g = portable::log(gamma_at_least_one(shape + 1.0));
        return log_g + portable::log(uniform_open()) / shape;
    }

    // Inversion: walks up the pmf from 0, f(k + 1) = f(k)·mean/(k + 1).
    std::int64_t poisson_inversion(double mean) {
        const double f0 = portable::exp(-mean);
        for (;;) {
            double u = uniform();
            double f = f0;
            for (std::int64_t k = 0;; ++k) {
                if (u <= f) return k;
                u -= f;
                f *= mean / static_cast<double>(k + 1);
                if (!(f > 0.0)) break;  // rounding left u above the total: draw again
            }
        }
    }

    // PTRS: Hörmann, "The transformed rejection method for generating Poisson
    // random variables", Insurance: Mathematics and Economics 12 (1993), with
    // the paper's constants. As in BTRD, variates are placed relative to
    // ⌊mean⌋, and the final test uses detail::poisson_log_pmf.
    std::int64_t poisson_ptrs(double mean) {
        const double base = std::floor(mean);
        const double frac = mean - base;
        const double sqrt_mean = std::sqrt(mean);
        const double b = 0.931 + 2.53 * sqrt_mean;
        const double a = -0.059 + 0.02483 * b;
        const double inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
        const double v_r = 0.9277 - 3.6224 / (b - 2.0);
        for (;;) {
            const double u = uniform() - 0.5;
            const double v = uniform();
            const double us = 0.5 - std::fabs(u);
            const double offset = std::floor((2.0 * a / us + b) * u + frac + 0.43);  // k − ⌊mean⌋
            if (!(offset >= -base && offset < 0x1p62)) continue;  // k < 0, or us = 0
            const std::int64_t k = static_cast<std::int64_t>(base) + static_cast<std::int64_t>(offset);
            if (us >= 0.07 && v <= v_r) return k;
            if (us < 0.013 && v > us) continue;
            if (portable::log(v * inv_alpha / (a / (us * us) + b)) <=
                detail::poisson_log_pmf(mean, k, offset + 1.0 - frac))
                return k;
        }
    }

    // Apart from next_u64, so that its common case (a word of the block at
    // hand) inlines into the samplers.
    void next_block() {
        block_ = philox4x64_10({block_index_++, 0, 0, 0}, key_);
        next_word_ = 0;
    }

    std::array<std::uint64_t, 2> key_;
    std::uint64_t block_index_ = 0;  // of the next block
    std::array<std::uint64_t, 4> block_{};
    int next_word_ = 4;  // 4: the block is used up
};

// Binomial(n, p), exact for every n ≥ 0 and p in [0, 1]: inversion when
// n·min(p, 1 − p) < 10, else BTRD (Hörmann 1993); p > ½ by symmetry. The
// degenerate cases (n = 0, p = 0, p = 1) use no random numbers. The
// constants are computed once, so that many draws of one (n, p) (a
// resampling cell's, in every replicate) pay only for the draws.
class Binomial {
public:
    Binomial(std::int64_t n, double p) : n_(n) {
        if (n < 0 || !(p >= 0.0 && p <= 1.0)) throw std::invalid_argument("binomial: needs n >= 0 and 0 <= p <= 1");
        flip_ = p > 0.5;
        if (flip_) p = 1.0 - p;  // exact here
        p_ = p;
        if (n == 0 || p == 0.0) return;
        q_ = 1.0 - p;
        r_ = p / q_;
        nr_ = (static_cast<double>(n) + 1.0) * r_;
        if (static_cast<double>(n) * p < 10.0) {
            route_ = Route::Inversion;
            f0_ = portable::exp(static_cast<double>(n) * portable::log1p(-p));  // (1 − p)^n ≥ e^−14
            return;
        }
        // BTRD, with the paper's constants. Variates are placed relative to
        // the mode m, whose split (n + 1)·p = m + frac is exact, so no integer
        // is ever rounded to a double; the final test uses detail::binomial_log_ratio.
        route_ = Route::Btrd;
        m_ = detail::floor_of_product(static_cast<std::uint64_t>(n) + 1, p, frac_);
        npq_ = static_cast<double>(n) * p * q_;
        const double sqrt_npq = std::sqrt(npq_);
        b_ = 1.15 + 2.53 * sqrt_npq;
        a_ = -0.0873 + 0.0248 * b_ + 0.01 * p;
        c_minus_m_ = frac_ - p + 0.5;  // c = n·p + ½ = m + frac − p + ½
        alpha_ = (2.83 + 5.1 / b_) * sqrt_npq;
        v_r_ = 0.92 - 4.2 / b_;
        u_r_v_r_ = 0.86 * v_r_;
    }

    std::int64_t operator()(RandomStream& rng) const {
        std::int64_t k = 0;
        if (route_ == Route::Inversion) k = inversion(rng);
        else if (route_ == Route::Btrd) k = btrd(rng);
        return flip_ ? n_ - k : k;
    }

private:
    enum class Route { Zero, Inversion, Btrd };

    // Walks up the pmf from 0, f(k + 1) = f(k)·((n + 1)·r/(k + 1) − r), r = p/q.
    // When rounding leaves u above the computed total, it draws again.
    std::int64_t inversion(RandomStream& rng) const {
        for (;;) {
            double u = rng.uniform();
            double f = f0_;
            for (std::int64_t k = 0;; ++k) {
                if (u <= f) return k;
                u -= f;
                if (k == n_) break;
                f *= nr_ / static_cast<double>(k + 1) - r_;
                if (!(f > 0.0)) break;
            }
        }
    }

    // BTRD: Hörmann, "The generation of binomial random variates", J. Statist.
    // Comput. Simul. 46 (1993), for p ≤ ½ and n·p ≥ 10.
    std::int64_t btrd(RandomStream& rng) const {
        for (;;) {
            // Step 1: the box in the middle of the hat; accepted at once.
            double v = rng.uniform();
            if (v <= u_r_v_r_) {
                const double u = v / v_r_ - 0.43;
                return m_ + static_cast<std::int64_t>(std::floor((2.0 * a_ / (0.5 - std::fabs(u)) + b_) * u + c_minus_m_));
            }
            // Step 2: a point under the rest of the hat.
            double u;
            if (v >= v_r_) {
                u = rng.uniform() - 0.5;
            } else {
                u = v / v_r_ - 0.93;
                u = std::copysign(0.5, u) - u;
                v = v_r_ * rng.uniform();
            }
            // Step 3.0: the candidate k; us = 0 gives an infinite offset, rejected.
            const double us = 0.5 - std::fabs(u);
            const double offset = std::floor((2.0 * a_ / us + b_) * u + c_minus_m_);
            if (!(std::fabs(offset) < 0x1p62)) continue;
            const std::int64_t k = m_ + static_cast<std::int64_t>(offset);
            if (k < 0 || k > n_) continue;
            v *= alpha_ / (a_ / (us * us) + b_);
            const std::int64_t distance = k > m_ ? k - m_ : m_ - k;
            if (distance <= 15) {
                // Step 3.1: f(k)/f(m) as a product of successive ratios.
                double f = 1.0;
                for (std::int64_t i = m_ + 1; i <= k; ++i) f *= nr_ / static_cast<double>(i) - r_;
                for (std::int64_t i = k + 1; i <= m_; ++i) v *= nr_ / static_cast<double>(i) - r_;
                if (v <= f) return k;
                continue;
            }
            // Step 3.2: squeeze around log f(k)/f(m) ≈ −km²/(2npq).
            v = portable::log(v);
            const double km = static_cast<double>(distance);
            const double rho = (km / npq_) * (((km / 3.0 + 0.625) * km + 1.0 / 6.0) / npq_ + 0.5);
            const double t = -km * km / (2.0 * npq_);
            if (v < t - rho) return k;
            if (v > t + rho) continue;
            // Step 3.3: the exact test.
            if (v <= detail::binomial_log_ratio(n_, p_, m_, frac_, k)) return k;
        }
    }

    std::int64_t n_;
    bool flip_ = false;
    Route route_ = Route::Zero;
    double p_ = 0.0, q_ = 1.0, r_ = 0.0, nr_ = 0.0, f0_ = 1.0;  // inversion and BTRD
    std::int64_t m_ = 0;                                       // BTRD from here on
    double frac_ = 0.0, npq_ = 0.0, b_ = 0.0, a_ = 0.0, c_minus_m_ = 0.0, alpha_ = 0.0, v_r_ = 0.0, u_r_v_r_ = 0.0;
};

inline std::int64_t RandomStream::binomial(std::int64_t n, double p) { return Binomial(n, p)(*this); }

// Binomial(n, p) from a table of its probabilities, for many draws of one
// (n, p) (a resampling group's, in every replicate): Walker's alias method
// (Vose's construction), one 64-bit word per draw and no rejection. The word's
// product with the table size K splits it into a slot (the high word, ⌊wK/2^64⌋)
// and a fraction (the low word: within a slot, every K-th of [0, 2^64)):
// the slot's own value if the fraction lies below its threshold, else its
// alias. So a draw reads one 8-byte entry, whose address the word alone
// gives: a caller can draw the words of many tables first and prefetch their
// entries, letting the cache misses overlap (the guided inversion this
// replaced read a guide entry, then the distribution function where its
// search started, two dependent misses and a search: 14 ns a draw in
// replicates of 683 tables, against 6 ns). The table holds the values whose
// probability is at least 2^−70 of the mode's (all the others together weigh
// less than 2^−60), from the ratio recurrence f(k ± 1)/f(k) with + − × ÷
// alone, so it is the same on every platform; the probabilities it draws with
// are within 1e-14 of the exact ones (the tests).
class BinomialTable {
public:
    // Beyond this many values (n·p·(1 − p) above ~4e4) the table is empty: use Binomial.
    static constexpr std::size_t kMaxValues = 4096;

    BinomialTable() = default;
    BinomialTable(std::int64_t n, double p) {
        if (n < 0 || !(p >= 0.0 && p <= 1.0)) throw std::invalid_argument("binomial: needs n >= 0 and 0 <= p <= 1");
        if (n == 0 || p == 0.0 || p == 1.0) {  // one value
            first_ = p == 1.0 ? n : 0;
            slots_.assign(1, slot(0.0, 0));
            return;
        }
        const double ratio = p / (1.0 - p), inverse_ratio = (1.0 - p) / p;
        const auto mode = std::min(n, static_cast<std::int64_t>(std::floor((static_cast<double>(n) + 1.0) * p)));
        // f(k)/f(mode), walking away from the mode into one array centred on
        // it (per thread, made once: 64 KB would be much for a small stack).
        constexpr double kNegligible = 0x1p-70;  // of the mode's probability
        thread_local std::vector<double> ratios(2 * kMaxValues + 1);
        constexpr std::size_t centre = kMaxValues;
        ratios[centre] = 1.0;
        std::size_t below = 0, above = 0;
        for (double f = 1.0; below < kMaxValues && mode - static_cast<std::int64_t>(below) > 0; ++below) {
            const auto k = static_cast<double>(mode - static_cast<std::int64_t>(below));
            f *= k * inverse_ratio / (static_cast<double>(n) - k + 1.0);
            if (f < kNegligible) break;
            ratios[centre - below - 1] = f;
        }
        for (double f = 1.0; above < kMaxValues && mode + static_cast<std::int64_t>(above) < n; ++above) {
            const auto k = static_cast<double>(mode + static_cast<std::int64_t>(above));
            f *= (static_cast<double>(n) - k) * ratio / (k + 1.0);
            if (f < kNegligible) break;
            ratios[centre + above + 1] = f;
        }
        const std::size_t size = below + above + 1;
        if (size > kMaxValues) return;
        first_ = mode - static_cast<std::int64_t>(below);
        const double* f = ratios.data() + (centre - below);
        double lane[4] = {0.0, 0.0, 0.0, 0.0};  // four independent sums, as they pipeline
        std::size_t i = 0;
        for (; i + 4 <= size; i += 4)
            for (std::size_t j = 0; j < 4; ++j) lane[j] += f[i + j];
        for (; i < size; ++i) lane[0] += f[i];
        const double total = (lane[0] + lane[1]) + (lane[2] + lane[3]);
        // Vose: each slot's mass K·P(i) (1 on average); a slot below 1 is
        // topped up from one of 1 or more, which keeps what is left and, once
        // that is below 1, is topped up from the next in turn. (The slots of
        // 1 or more are the centre of the distribution, the others its tails:
        // runs, so the branches are mostly predicted.)
        thread_local std::vector<double> masses(kMaxValues);
        thread_local std::vector<std::uint16_t> order(kMaxValues);
        double* mass = masses.data();
        std::uint16_t* stack = order.data();  // the slots below 1 from the front, the others from the back
        std::size_t smalls = 0, next_large = size;
        const double scale = static_cast<double>(size) / total;
        for (i = 0; i < size; ++i) {
            mass[i] = f[i] * scale;
            if (mass[i] < 1.0) stack[smalls++] = static_cast<std::uint16_t>(i);
            else stack[--next_large] = static_cast<std::uint16_t>(i);
        }
        slots_.resize(size);
        std::uint64_t* slots = slots_.data();
        // Every slot first draws its own value (threshold 0, its own alias): what
        // a slot keeps that no large is left to top up.
        for (i = 0; i < size; ++i) slots[i] = slot(0.0, i);
        if (next_large < size) {
            std::size_t large = size - 1;  // the larges in reverse: stack[size − 1] first
            std::uint16_t l = stack[large];
            auto top_up = [&](std::uint16_t s) {
                slots[s] = slot(mass[s], l);
                mass[l] = (mass[l] + mass[s]) - 1.0;
            };
            for (std::size_t k = 0; k < smalls; ++k) {
                top_up(stack[k]);
                while (mass[l] < 1.0 && large > next_large) {  // l is small now: the next large tops it up
                    const std::uint16_t was = l;
                    l = stack[--large];
                    top_up(was);
                }
            }
        }
    }

    // False when (n, p) needs more than kMaxValues values.
    bool tabulated() const { return !slots_.empty(); }
    std::size_t size() const { return slots_.size(); }

    // The value a 64-bit word draws.
    std::int64_t at(std::uint64_t word) const {
        std::uint64_t i;
        const std::uint64_t fraction = detail::mulhilo(word, slots_.size(), i);
        const std::uint64_t e = slots_[i];
        return first_ + static_cast<std::int64_t>(fraction < (e & ~kAliasMask) ? i : e & kAliasMask);
    }
    // For a run of draws from many tables: brings in the entry a word reads.
    void prefetch(std::uint64_t word) const {
        std::uint64_t i;
        detail::mulhilo(word, slots_.size(), i);
        __builtin_prefetch(slots_.data() + i);
    }

    std::int64_t operator()(RandomStream& rng) const { return at(rng.next_u64()); }

    std::int64_t first() const { return first_; }
    // Slot i draws first + i when the word's fraction lies below threshold(i)
    // (of 2^64), else first + alias(i) (for the tests).
    std::uint64_t threshold(std::size_t i) const { return slots_[i] & ~kAliasMask; }
    std::size_t alias(std::size_t i) const { return static_cast<std::size_t>(slots_[i] & kAliasMask); }
    // P(K = first + i) as the table draws it (for the tests).
    std::vector<double> probabilities() const {
        std::vector<double> out(slots_.size(), 0.0);
        const double per_slot = 1.0 / static_cast<double>(slots_.size());
        for (std::size_t i = 0; i < slots_.size(); ++i) {
            const double own = static_cast<double>(threshold(i)) * 0x1p-64;
            out[i] += own * per_slot;
            out[alias(i)] += (1.0 - own) * per_slot;
        }
        return out;
    }

private:
    // A slot in one word: the threshold, the fraction below which the slot
    // draws its own value, ⌊m·2^52⌋·2^12 for its mass m in [0, 1) (so the
    // comparison reads the fraction's top 52 bits), and the alias in the low
    // 12 bits (kMaxValues values).
    static constexpr int kAliasBits = 12;
    static constexpr std::uint64_t kAliasMask = (std::uint64_t{1} << kAliasBits) - 1;
    static_assert(kMaxValues <= (std::size_t{1} << kAliasBits), "an alias fits its bits");
    static std::uint64_t slot(double m, std::size_t alias) {
        const auto t = m <= 0.0 ? 0 : static_cast<std::uint64_t>(std::min(m, 1.0 - 0x1p-53) * 0x1p52);
        return t << kAliasBits | static_cast<std::uint64_t>(alias);
    }

    std::int64_t first_ = 0;
    std::vector<std::uint64_t> slots_;
};

// Gamma(shape, scale 1), shape > 0: Marsaglia & Tsang (2000) for shape ≥ 1;
// below, Gamma(shape + 1)·U^(1/shape), which may underflow to 0 for tiny
// shapes. As with Binomial, the constants are computed once per shape.
class Gamma {
public:
    explicit Gamma(double shape) : shape_(shape), boosted_(shape < 1.0) {
        if (!(shape > 0.0 && shape < std::numeric_limits<double>::infinity()))
            throw std::invalid_argument("gamma: the shape must be positive and finite");
        d_ = (boosted_ ? shape + 1.0 : shape) - 1.0 / 3;
        c_ = 1.0 / std::sqrt(9.0 * d_);
        k_ = c_ * c_ / 12.0;
    }

    double operator()(RandomStream& rng) const {
        const double g = marsaglia_tsang(rng);
        if (!boosted_) return g;
        return g * portable::exp(portable::log(rng.uniform_open()) / shape_);
    }

    // Gamma(shape) for shape ≥ 1; for smaller shapes Gamma(shape + 1).
    double marsaglia_tsang(RandomStream& rng) const {
        for (;;) {
            double x, v;
            unsigned eighth;  // the uniform's first three bits: u ∈ [eighth/8, (eighth + 1)/8)
            do {
                x = rng.normal(eighth);
                v = 1.0 + c_ * x;
            } while (v <= 0.0);
            const double t = c_ * x;
            v = v * v * v;
            const double x2 = x * x;
            // Two squeezes before the exact test log u < x²/2 + d(1 − v + log v).
            // The first is Marsaglia and Tsang's. The second is tight for large
            // shapes, where the first sends 10% of draws to the logarithms: with
            // h = x²/2 + d(1 − v + log v) = d·φ(t), the series of log(1 + t)
            // bounds φ(t) below by −(3/4)t⁴/min(1 + t, 1), so h ≥ −k·x⁴/min(1 + t, 1)
            // (k = c²/12), and log u ≤ u − 1 < h whenever (1 − u)·min(1 + t, 1) > k·x⁴.
            const double squeeze = 1.0 - 0.0331 * (x2 * x2), bound = k_ * (x2 * x2), below_one = std::min(1.0 + t, 1.0);
            // u's first three bits are the normal's spare ones. Where every u
            // of that eighth passes a squeeze, the draw is accepted whatever
            // u's other bits, which are then never drawn: the same draws as
            // testing a full u, with one word instead of two ~7/8 of the time.
            if (0.125 * (eighth + 1) <= squeeze || 0.125 * (7 - eighth) * below_one > bound) return d_ * v;
            const std::uint64_t bits = (std::uint64_t{eighth} << 49) | (rng.next_u64() >> 15);  // 52 bits
            const double u = (static_cast<double>(bits) + 0.5) * 0x1p-52;                      // as uniform_open
            if (u < squeeze || (1.0 - u) * below_one > bound) return d_ * v;
            if (portable::log(u) < 0.5 * x2 + d_ * (1.0 - v + portable::log(v))) return d_ * v;
        }
    }

private:
    double shape_;
    bool boosted_;  // shape < 1: drawn as Gamma(shape + 1)·U^(1/shape)
    double d_ = 0.0, c_ = 0.0, k_ = 0.0;
};

inline double RandomStream::gamma(double shape) { return Gamma(shape)(*this); }
inline double RandomStream::gamma_at_least_one(double shape) { return Gamma(shape).marsaglia_tsang(*this); }

}  // namespace smoothece

#if defined(__clang__)
#pragma STDC FP_CONTRACT DEFAULT
#endif
