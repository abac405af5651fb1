#include "atoms.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "pool.hpp"
#include "smoothing.hpp"
#include "summary.hpp"

namespace smoothece {
namespace {

// Beyond this many σ a Gaussian's mass is below Φ(−9) ≈ 1e-19.
constexpr double kReach = 9.0;
// Local grids are smoothed in windows of at most this many intervals.
constexpr std::int64_t kWindowIntervals = std::int64_t{1} << 18;

// Multiplies the weight sums by 2^delta.
void scale_stats(AtomStats& s, int delta) {
    s.weight = std::ldexp(s.weight, delta);
    s.weight_sq = std::ldexp(s.weight_sq, 2 * delta);
    s.weight_f = std::ldexp(s.weight_f, delta);
}

void add_stats(AtomStats& into, const AtomStats& s) {
    into.rows += s.rows;
    into.weight += s.weight;
    into.weight_sq += s.weight_sq;
    into.weight_f += s.weight_f;
}

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

double Atoms::total_weight_scaled() const {
    double total = 0.0;
    for (int y = 0; y < 2; ++y)
        for (const AtomStats& s : by_label[y]) total += s.weight;
    return total;
}

void Atoms::rescale(int new_exp) {
    if (new_exp == weight_exp) return;
    for (int y = 0; y < 2; ++y)
        for (AtomStats& s : by_label[y]) scale_stats(s, new_exp - weight_exp);
    weight_exp = new_exp;
}

Atoms merged(const Atoms& a, const Atoms& b) {
    if (a.mapping != b.mapping) throw std::logic_error("merging atoms of different metrics");
    // The common exponent: the larger weights set the scale (a set without
    // weight takes the other's). Only a set whose exponent changes is copied.
    int e = a.weight_exp;
    if (a.weight_exp != b.weight_exp) {
        if (a.total_weight_scaled() == 0.0) e = b.weight_exp;
        else if (b.total_weight_scaled() > 0.0) e = std::min(a.weight_exp, b.weight_exp);
    }
    std::optional<Atoms> a_scaled, b_scaled;
    if (a.weight_exp != e) (a_scaled = a)->rescale(e);
    if (b.weight_exp != e) (b_scaled = b)->rescale(e);
    const Atoms& p = a_scaled ? *a_scaled : a;
    const Atoms& q = b_scaled ? *b_scaled : b;
    Atoms out;
    out.mapping = a.mapping;
    out.weight_exp = e;
    out.rows = a.rows + b.rows;
    // Written by index into room for both, then cut to what the union holds.
    const std::size_t np = p.size(), nq = q.size();
    out.x.resize(np + nq);
    for (auto& v : out.by_label) v.resize(np + nq);
    std::size_t i = 0, j = 0, k = 0;
    auto copy = [&out, &k](const Atoms& from, std::size_t at) {
        out.x[k] = from.x[at];
        out.by_label[0][k] = from.by_label[0][at];
        out.by_label[1][k] = from.by_label[1][at];
        ++k;
    };
    while (i < np && j < nq) {
        if (p.x[i] < q.x[j]) {
            copy(p, i++);
        } else if (q.x[j] < p.x[i]) {
            copy(q, j++);
        } else {
            copy(p, i++);
            add_stats(out.by_label[0][k - 1], q.by_label[0][j]);
            add_stats(out.by_label[1][k - 1], q.by_label[1][j]);
            ++j;
        }
    }
    while (i < np) copy(p, i++);
    while (j < nq) copy(q, j++);
    out.x.resize(k);
    for (auto& v : out.by_label) v.resize(k);
    return out;
}

double abs_residual_sum(const std::vector<double>& residual) {
    double total = 0.0;
    for (double a : residual) total += std::fabs(a);
    return total;
}

double exact_abs_integral(const std::vector<double>& x, const std::vector<double>& residual, double sigma) {
    if (!(sigma > 0.0)) throw std::logic_error("exact_abs_integral needs sigma > 0");
    // A lattice of 16 nodes per σ covers [0, 1]; windows of it are smoothed
    // where positions cluster. Positions are in lattice units from here on.
    // At least two intervals (σ ≥ 16), as a spectrum needs.
    double lattice = 2.0;
    while (lattice * sigma < kNodesPerSigma) lattice *= 2.0;
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
