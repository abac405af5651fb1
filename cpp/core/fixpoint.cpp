#include "fixpoint.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "summary.hpp"

namespace smoothece {
namespace {

// Fine node masses binned onto a coarser nested grid (Summary::restricted's rule).
std::vector<double> restrict_to(const std::vector<double>& fine, std::int64_t coarse) {
    Summary s;
    s.intervals = static_cast<std::int64_t>(fine.size()) - 1;
    s.residual = fine;
    return s.restricted(coarse).residual;
}

}  // namespace

ResidualLevels::ResidualLevels(std::vector<double> nodes, std::int64_t intervals)
    : nodes_(std::move(nodes)), intervals_(intervals) {}

bool ResidualLevels::all_zero() const {
    return std::all_of(nodes_.begin(), nodes_.end(), [](double r) { return r == 0.0; });
}

double ResidualLevels::net() const {
    double sum = 0.0;
    for (double r : nodes_) sum += r;
    return std::fabs(sum);
}

double ResidualLevels::min_sigma() const { return min_sigma_for(intervals_); }

const Spectrum& ResidualLevels::level(std::int64_t intervals) {
    auto& slot = levels_[intervals];
    if (!slot) {
        // Each level from the next finer one (kept): O(G) in all, not O(G) per level.
        std::int64_t finer = intervals;
        while (finer < intervals_ && masses_.find(finer * 2) == masses_.end()) finer *= 2;
        if (finer < intervals_) finer *= 2;
        const std::vector<double>& source = finer == intervals_ ? nodes_ : masses_[finer];
        if (intervals != intervals_) masses_[intervals] = restrict_to(source, intervals);
        slot = std::make_unique<Spectrum>(intervals == intervals_ ? nodes_.data() : masses_[intervals].data(), intervals);
    }
    return *slot;
}

double ResidualLevels::integral(double sigma) {
    const std::int64_t g = std::min(intervals_for_sigma(sigma), intervals_);
    const Spectrum& spectrum = level(g);
    values_.resize(static_cast<std::size_t>(g + 1));
    antiderivative_.resize(static_cast<std::size_t>(g + 1));
    spectrum.evaluate(sigma, values_.data(), antiderivative_.data());
    return integrate_abs(values_.data(), antiderivative_.data(), 0, g, g);
}

Fixpoint solve_fixpoint(const std::function<double(double)>& smece, double scale, double limit, double guess,
                        double tol, double slope) {
    Fixpoint res;
    auto g = [&](double s) {
        ++res.evaluations;
        return smece(s) - scale * s;
    };
    auto settle = [&res](double s, bool resolved, double lower, double upper) {
        res.sigma = s;
        res.resolved = resolved;
        res.lower = lower;
        res.upper = upper;
        return res;
    };
    const double top = 1.0 / scale;  // smECEσ ≤ 1, hence σ* ≤ 1/scale
    // Bracket: a with g(a) ≥ 0 below σ*, b with g(b) ≤ 0 above it. Since
    // smECEσ is non-increasing, g(x) > 0 gives σ* ≤ smece(x)/scale and
    // g(x) < 0 gives σ* ≥ smece(x)/scale: each evaluation bounds the other side.
    const double x0 = std::min(std::max(guess, limit), top);
    const double g0 = g(x0);
    if (g0 == 0.0) return settle(x0, true, x0, x0);
    double a = 0.0, fa = 0.0, b = 0.0, fb = 0.0;
    bool have_a = g0 > 0.0, have_b = g0 < 0.0;
    (have_a ? a : b) = x0;
    (have_a ? fa : fb) = g0;
    if (have_b && x0 <= limit) return settle(limit, false, std::max(0.0, (g0 + scale * x0) / scale), limit);
    double next = std::min(top, std::max(limit, (g0 + scale * x0) / scale));
    if (slope != 0.0) {  // a Newton step, where it falls inside the bound
        const double newton = x0 - g0 / (slope - scale);
        if (newton > std::min(x0, next) && newton < std::max(x0, next)) next = newton;
    }
    for (int step = 0; step < 2 && !(have_a && have_b); ++step) {
        const double fx = g(next);
        if (fx == 0.0) return settle(next, true, next, next);
        if (fx > 0.0) {
            a = next;
            fa = fx;
            have_a = true;
            if (!have_b && a >= top) return settle(top, true, top, top);
            next = std::min(top, (fx + scale * next) / scale);
        } else {
            b = next;
            fb = fx;
            have_b = true;
            if (!have_a && b <= limit) return settle(limit, false, std::max(0.0, (fx + scale * b) / scale), limit);
            next = std::max(limit, (fx + scale * next) / scale);
        }
    }
    if (!(have_a && have_b)) return settle(have_a ? a : b, true, have_a ? a : b, have_a ? a : b);  // rounding
    // Brent's method (zeroin) on [a, b] with g(a), g(b) of opposite signs:
    // inverse quadratic / secant steps, bisection whenever a step would leave
    // the bracket or converge slowly.
    double c = a, fc = fa, d = b - a, e = d;
    for (int iter = 0; iter < 200; ++iter) {
        if ((fb > 0.0) == (fc > 0.0)) {
            c = a;
            fc = fa;
            d = e = b - a;
        }
        if (std::fabs(fc) < std::fabs(fb)) {
            a = b;
            b = c;
            c = a;
            fa = fb;
            fb = fc;
            fc = fa;
        }
        const double tol1 = 2.0 * 1e-16 * std::fabs(b) + 0.5 * tol;
        const double m = 0.5 * (c - b);
        if (std::fabs(m) <= tol1 || fb == 0.0) break;
        if (std::fabs(e) >= tol1 && std::fabs(fa) > std::fabs(fb)) {
            double p, q, r;
            const double s = fb / fa;
            if (a == c) {
                p = 2.0 * m * s;
                q = 1.0 - s;
            } else {
                q = fa / fc;
                r = fb / fc;
                p = s * (2.0 * m * q * (q - r) - (b - a) * (r - 1.0));
                q = (q - 1.0) * (r - 1.0) * (s - 1.0);
            }
            if (p > 0.0) q = -q;
            else p = -p;
            if (2.0 * p < std::min(3.0 * m * q - std::fabs(tol1 * q), std::fabs(e * q))) {
                e = d;
                d = p / q;
            } else {
                d = m;
                e = m;
            }
        } else {
            d = m;
            e = m;
        }
        a = b;
        fa = fb;
        b += std::fabs(d) > tol1 ? d : (m > 0 ? tol1 : -tol1);
        b = std::max(b, limit);
        fb = g(b);
    }
    res.sigma = b;
    res.lower = std::min(b, c);
    res.upper = std::max(b, c);
    return res;
}

}  // namespace smoothece
