#include "smoothing/exact_integral.hpp"

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
