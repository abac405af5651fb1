#include "smoothing/exact_integral.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "runtime/pool.hpp"
#include "smoothing/integrate_abs.hpp"
#include "smoothing/spectrum.hpp"
#include "summary/summary.hpp"

namespace smoothece {
namespace {

// Beyond this many σ a Gaussian's mass is below Φ(−9) ≈ 1e-19.
constexpr double kReach = 9.0;
// Local grids are smoothed in windows of at most this many intervals.
constexpr std::int64_t kWindowIntervals = std::int64_t{1} << 18;

// ∫ |r| over lattice nodes [i0, i1] of one window [e0, e0 + m] of the lattice
// with spacing 1/lattice (positions u = x·lattice): the atoms in the window
// are binned onto its m intervals and smoothed with the reflected kernel
// (reflection at a window edge is the true one at 0 or 1, or lies ≥ kReach·σ
// from every atom that matters).
double window_integral(const std::vector<double>& u, const std::vector<double>& residual, std::size_t first,
                       std::size_t last, double e0, std::int64_t m, double i0, double i1, double sigma_lattice) {
    std::vector<double> masses(static_cast<std::size_t>(m + 1), 0.0);
    for (std::size_t i = first; i < last; ++i) {
        const double pos = u[i] - e0;
        const std::int64_t cell = std::min(static_cast<std::int64_t>(pos), m - 1);
        const double lam = pos - static_cast<double>(cell), a = residual[i];
        const double mom[4] = {a, a * lam, a * lam * lam, a * lam * lam * lam};
        spread_cubic(masses, cell, mom);
    }
    const Spectrum spectrum(masses.data(), m);
    std::vector<double> r(masses.size()), F(masses.size());
    spectrum.evaluate(sigma_lattice / static_cast<double>(m), r.data(), F.data());
    return integrate_abs(r.data(), F.data(), static_cast<std::int64_t>(i0 - e0), static_cast<std::int64_t>(i1 - e0), m);
}

}  // namespace

namespace {

// The direct sums cut each Gaussian at this many σ: 2Φ(−6) = 2e-9 of its
// mass left out, which bounds the integral's error from the cut (relative to
// Σ|residual|).
constexpr double kDirectReach = 6.0;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

// The nodes t_k = lo + k·h, k in [0, n], of one cluster at σ, and the
// factors its Gaussians step along them by (the same for every atom).
struct Nodes {
    double sigma, lo, h;
    std::int64_t n;
    double a, inv_var, norm;  // 1/2σ², 1/σ², 1/(σ√2π)
    double m, m2, m4, m16;    // m = e^(−2ah²) and its powers

    Nodes(double sigma_, double lo_, double h_, std::int64_t n_)
        : sigma(sigma_), lo(lo_), h(h_), n(n_), a(0.5 / (sigma_ * sigma_)), inv_var(1.0 / (sigma_ * sigma_)),
          norm(kInvSqrt2Pi / sigma_), m(std::exp(-2.0 * a * h_ * h_)) {
        m2 = m * m;
        m4 = m2 * m2;
        m16 = (m4 * m4) * (m4 * m4);
    }
};

// Adds c·φσ(t − z) to r and its derivative to dr at the nodes within
// kDirectReach·σ of z. Along the nodes the Gaussian is a product of ratios
// that themselves change by a constant factor: φ(d + h)/φ(d) = e^(−a(2dh +
// h²)) = q·m^k at node k (q that of the first node): no exp a node. Four
// nodes a step, each lane stepping by 4h, so that the lanes' products do
// not wait on each other.
void add_gaussian(double z, double c, const Nodes& g, double* r, double* dr) {
    const double reach = kDirectReach * g.sigma, h = g.h;
    const std::int64_t k0 = std::max<std::int64_t>(0, static_cast<std::int64_t>(std::ceil((z - reach - g.lo) / h)));
    const std::int64_t k1 = std::min<std::int64_t>(g.n, static_cast<std::int64_t>(std::floor((z + reach - g.lo) / h)));
    if (k0 > k1) return;
    const double d0 = g.lo + static_cast<double>(k0) * h - z;
    const double q = std::exp(-g.a * (2.0 * d0 * h + h * h)), q2 = q * q;
    // Lane l starts at node k0 + l with v = c·φσ(d) = v0·q^l·m^(l(l−1)/2),
    // and its ratio over four nodes q^4·m^(4l + 6), which changes by m^16
    // from one step to the next.
    double v[4], ratio[4], d[4];
    v[0] = c * g.norm * std::exp(-g.a * d0 * d0);
    v[1] = v[0] * q;
    v[2] = v[1] * (q * g.m);
    v[3] = v[2] * (q * g.m2);
    ratio[0] = (q2 * q2) * (g.m4 * g.m2);
    for (int l = 1; l < 4; ++l) ratio[l] = ratio[l - 1] * g.m4;
    for (int l = 0; l < 4; ++l) d[l] = d0 + static_cast<double>(l) * h;
    const double step = 4.0 * h, inv_var = g.inv_var, m16 = g.m16;
    std::int64_t k = k0;
#if defined(__SSE2__)
    // The same operations, two lanes a register (the compiler does not pair
    // them: r and dr might overlap).
    __m128d v01 = _mm_loadu_pd(v), v23 = _mm_loadu_pd(v + 2), q01 = _mm_loadu_pd(ratio), q23 = _mm_loadu_pd(ratio + 2);
    __m128d d01 = _mm_loadu_pd(d), d23 = _mm_loadu_pd(d + 2);
    const __m128d m16x = _mm_set1_pd(m16), stepx = _mm_set1_pd(step), inv_varx = _mm_set1_pd(inv_var);
    for (; k + 3 <= k1; k += 4) {
        _mm_storeu_pd(r + k, _mm_add_pd(_mm_loadu_pd(r + k), v01));
        _mm_storeu_pd(r + k + 2, _mm_add_pd(_mm_loadu_pd(r + k + 2), v23));
        _mm_storeu_pd(dr + k, _mm_sub_pd(_mm_loadu_pd(dr + k), _mm_mul_pd(_mm_mul_pd(v01, d01), inv_varx)));
        _mm_storeu_pd(dr + k + 2, _mm_sub_pd(_mm_loadu_pd(dr + k + 2), _mm_mul_pd(_mm_mul_pd(v23, d23), inv_varx)));
        v01 = _mm_mul_pd(v01, q01);
        v23 = _mm_mul_pd(v23, q23);
        q01 = _mm_mul_pd(q01, m16x);
        q23 = _mm_mul_pd(q23, m16x);
        d01 = _mm_add_pd(d01, stepx);
        d23 = _mm_add_pd(d23, stepx);
    }
    _mm_storeu_pd(v, v01);
    _mm_storeu_pd(v + 2, v23);
    _mm_storeu_pd(d, d01);
    _mm_storeu_pd(d + 2, d23);
#else
    for (; k + 3 <= k1; k += 4) {
        for (int l = 0; l < 4; ++l) {
            r[k + l] += v[l];
            dr[k + l] -= v[l] * d[l] * inv_var;
            v[l] *= ratio[l];
            ratio[l] *= m16;
            d[l] += step;
        }
    }
#endif
    for (int l = 0; k + l <= k1; ++l) {
        r[k + l] += v[l];
        dr[k + l] -= v[l] * d[l] * inv_var;
    }
}

}  // namespace

double direct_abs_integral(const std::vector<double>& x, const std::vector<double>& residual, double sigma,
                           double nodes_per_sigma) {
    const double reach = kDirectReach * sigma;
    if (!(sigma > 0.0) || !(reach < 0.25)) throw std::logic_error("direct_abs_integral needs 0 < 6 sigma < 1/4");
    thread_local std::vector<double> r, dr, F;
    double total = 0.0;
    std::size_t i = 0;
    const std::size_t size = x.size();
    while (i < size) {
        std::size_t j = i + 1;
        while (j < size && x[j] - x[j - 1] <= 2.0 * reach) ++j;
        if (j == i + 1) {
            total += std::fabs(residual[i]);  // the reflected kernel keeps all its mass in [0, 1]
            i = j;
            continue;
        }
        const double lo = std::max(0.0, x[i] - reach), hi = std::min(1.0, x[j - 1] + reach);
        const auto n = std::max<std::int64_t>(2, static_cast<std::int64_t>(std::ceil((hi - lo) * nodes_per_sigma / sigma)));
        const double h = (hi - lo) / static_cast<double>(n);
        r.assign(static_cast<std::size_t>(n + 1), 0.0);
        dr.assign(static_cast<std::size_t>(n + 1), 0.0);
        F.resize(static_cast<std::size_t>(n + 1));
        // r and r' per node (times h): integrate_abs then works on nodes one apart.
        const Nodes nodes(sigma, lo, h, n);
        for (std::size_t k = i; k < j; ++k) {
            const double c = residual[k] * h;
            if (c == 0.0) continue;
            add_gaussian(x[k], c, nodes, r.data(), dr.data());
            // The reflections at 0 and 1 (K̃σ's images within reach of [0, 1]).
            if (x[k] < reach) add_gaussian(-x[k], c, nodes, r.data(), dr.data());
            if (x[k] > 1.0 - reach) add_gaussian(2.0 - x[k], c, nodes, r.data(), dr.data());
        }
        // F(lo) = 0: at 0 by definition, else below the cluster's reach. Each
        // node's increment ½(r₀ + r₁)h + (r′₀ − r′₁)h²/12, summed four at a
        // time along the chain (the running sum waits on one add per four nodes).
        const double corr = h / 12.0;
        const double *rv = r.data(), *dv = dr.data();
        double* Fv = F.data();
        auto increment = [rv, dv, corr](std::size_t u) { return 0.5 * (rv[u] + rv[u + 1]) + corr * (dv[u] - dv[u + 1]); };
        Fv[0] = 0.0;
        std::size_t u = 0;
        const auto last = static_cast<std::size_t>(n);
        for (; u + 4 <= last; u += 4) {
            const double a = increment(u), b = a + increment(u + 1), c = increment(u + 2), d = c + increment(u + 3);
            const double base = Fv[u];
            Fv[u + 1] = base + a;
            Fv[u + 2] = base + b;
            Fv[u + 3] = base + (b + c);
            Fv[u + 4] = base + (b + d);
        }
        for (; u < last; ++u) Fv[u + 1] = Fv[u] + increment(u);
        total += integrate_abs(r.data(), F.data(), 0, n, 1);
        i = j;
    }
    return total;
}

double abs_residual_sum(const std::vector<double>& residual) {
    double total = 0.0;
    for (double a : residual) total += std::fabs(a);
    return total;
}

double exact_abs_integral(const std::vector<double>& x, const std::vector<double>& residual, double sigma,
                          double nodes_per_sigma) {
    if (!(sigma > 0.0)) throw std::logic_error("exact_abs_integral needs sigma > 0");
    // A lattice of 16 nodes per σ covers [0, 1]; windows of it are smoothed
    // where positions cluster. Positions are in lattice units from here on.
    // At least two intervals (σ ≥ 16), as a spectrum needs.
    double lattice = 2.0;
    while (lattice * sigma < nodes_per_sigma) lattice *= 2.0;
    const double reach = std::ceil(kReach * sigma * lattice) + 2.0;  // in lattice intervals
    std::vector<double> u(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) u[i] = x[i] * lattice;
    double total = 0.0;
    std::size_t i = 0;
    while (i < u.size()) {
        // The cluster [i, j): neighbours closer than two reaches interact.
        std::size_t j = i + 1;
        while (j < u.size() && u[j] - u[j - 1] <= 2.0 * reach) ++j;
        if (j == i + 1) {
            total += std::fabs(residual[i]);  // the reflected kernel keeps all its mass in [0, 1]
            i = j;
            continue;
        }
        // Integrate over [lo, hi] (the cluster and a reach on either side,
        // within [0, 1]) window by window.
        const double lo = std::max(0.0, std::floor(u[i]) - reach), hi = std::min(lattice, std::ceil(u[j - 1]) + reach);
        std::int64_t m = 64;
        while (m < kWindowIntervals && static_cast<double>(m) < hi - lo + 2.0 * reach) m *= 2;
        double start = lo;
        std::size_t first = i;
        while (start < hi) {
            interruption_point();
            // The window [e0, e1] reaches a margin beyond the integration range
            // [start, end] unless it ends at the true boundary 0 or lattice.
            double e0 = start > 0.0 ? start - reach : 0.0;
            double e1 = e0 + static_cast<double>(m);
            if (e1 > lattice) {
                e1 = lattice;
                e0 = std::max(0.0, e1 - static_cast<double>(m));
            }
            const std::int64_t width = static_cast<std::int64_t>(e1 - e0);
            const double end = std::min(hi, e1 < lattice ? e1 - reach : e1);
            while (first < j && u[first] < e0) ++first;
            std::size_t last = first;
            while (last < j && u[last] <= e1) ++last;
            total += window_integral(u, residual, first, last, e0, width, start, end, sigma * lattice);
            start = end;
        }
        i = j;
    }
    return total;
}

}  // namespace smoothece
