#include "smece.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace smoothece {

std::int64_t intervals_for_sigma(double sigma) {
    if (!(sigma > 0.0) || !std::isfinite(sigma))
        throw std::invalid_argument("sigma must be a positive finite number, got " + std::to_string(sigma));
    std::int64_t g = kMinIntervals;
    while (g < kMaxIntervals && static_cast<double>(g) * sigma < kNodesPerSigma) g *= 2;
    return g;
}

double min_sigma_for(std::int64_t intervals) { return kNodesPerSigma / static_cast<double>(intervals); }

double integrate_abs(const double* r, const double* F, std::int64_t intervals) {
    const double h = 1.0 / static_cast<double>(intervals);
    double total = 0.0, segment_start = 0.0;  // F at the last root (or at 0)
    for (std::int64_t j = 0; j < intervals; ++j) {
        const double r0 = r[j], r1 = r[j + 1];
        if ((r0 < 0.0 && r1 > 0.0) || (r0 > 0.0 && r1 < 0.0)) {
            // Cubic Hermite interpolant H of F on the cell (values F, slopes r);
            // its derivative, a quadratic q(s) with q(0) = r0, q(1) = r1, has
            // exactly one root in (0, 1). Bisection finds it to machine precision.
            const double F0 = F[j], F1 = F[j + 1];
            const double d = (F1 - F0) / h;
            const double qa = -6.0 * d + 3.0 * r0 + 3.0 * r1, qb = 6.0 * d - 4.0 * r0 - 2.0 * r1;
            auto q = [&](double s) { return (qa * s + qb) * s + r0; };
            double lo = 0.0, hi = 1.0;
            for (int it = 0; it < 60; ++it) {
                const double mid = 0.5 * (lo + hi);
                if ((q(mid) > 0.0) == (r0 > 0.0)) lo = mid; else hi = mid;
            }
            const double s = 0.5 * (lo + hi), s2 = s * s, s3 = s2 * s;
            const double F_root = (2 * s3 - 3 * s2 + 1) * F0 + (s3 - 2 * s2 + s) * h * r0 + (-2 * s3 + 3 * s2) * F1 +
                                  (s3 - s2) * h * r1;
            total += std::fabs(F_root - segment_start);
            segment_start = F_root;
        } else if (r1 == 0.0) {
            total += std::fabs(F[j + 1] - segment_start);
            segment_start = F[j + 1];
        }
    }
    return total + std::fabs(F[intervals] - segment_start);
}

ResidualLevels::ResidualLevels(GridSums fine) : fine_(std::move(fine)) {}

bool ResidualLevels::all_zero() const {
    return std::all_of(fine_.residual.begin(), fine_.residual.end(), [](double r) { return r == 0.0; });
}

const SmoothedMasses& ResidualLevels::level(std::int64_t intervals) {
    auto& slot = levels_[intervals];
    if (!slot) {
        if (intervals == fine_.intervals) {
            slot = std::make_unique<SmoothedMasses>(fine_.residual.data(), intervals);
        } else {
            const GridSums coarse = fine_.restrict_to(intervals, /*residual_only=*/true);
            slot = std::make_unique<SmoothedMasses>(coarse.residual.data(), intervals);
        }
    }
    return *slot;
}

double ResidualLevels::smece_sigma(double sigma) {
    const std::int64_t g = std::min(intervals_for_sigma(sigma), fine_.intervals);
    const SmoothedMasses& masses = level(g);
    values_.resize(static_cast<std::size_t>(g + 1));
    antiderivative_.resize(static_cast<std::size_t>(g + 1));
    masses.evaluate(sigma, values_.data(), antiderivative_.data());
    return integrate_abs(values_.data(), antiderivative_.data(), g) / fine_.total_weight;
}

FixpointResult solve_fixpoint(ResidualLevels& levels, double scale, double tol, double hint) {
    FixpointResult res;
    if (levels.all_zero()) return res;  // r̂σ ≡ 0 for every σ: σ* = 0
    auto g = [&](double s) {
        ++res.evaluations;
        return levels.smece_sigma(s) - scale * s;
    };
    double a = levels.min_sigma(), fa = -1.0;
    if (hint > 2.0 * a) {  // start from the hint when σ* lies above hint/2
        fa = g(0.5 * hint);
        if (fa >= 0.0) a = 0.5 * hint;
    }
    if (fa < 0.0) fa = g(a);
    if (fa < 0.0) {
        // σ* is below what this grid resolves. Step down on the same grid
        // (less accurate there, but good enough to size the next grid).
        res.resolved = false;
        res.sigma = a;
        for (int k = 0; k < 6 && g(res.sigma) < 0.0; ++k) res.sigma /= 4.0;
        return res;
    }
    double b = std::min(1.0, fa + scale * a) / scale;  // smECE_a ≥ smECE_{σ*} = scale·σ*, and smECE ≤ 1
    double fb = g(b);
    if (fb >= 0.0) {  // smECEσ is flat on [a, b] (e.g. a single row), so σ* = b
        res.sigma = b;
        return res;
    }
    // Brent's method (zeroin): inverse quadratic / secant steps, falling back
    // to bisection whenever a step would leave the bracket or converge slowly.
    double c = a, fc = fa, d = b - a, e = d;
    for (int iter = 0; iter < 200; ++iter) {
        if ((fb > 0.0) == (fc > 0.0)) {
            c = a;
            fc = fa;
            d = e = b - a;
        }
        if (std::fabs(fc) < std::fabs(fb)) {
            a = b; b = c; c = a;
            fa = fb; fb = fc; fc = fa;
        }
        const double tol1 = 2.0 * 1e-16 * std::fabs(b) + 0.5 * tol / scale;
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
            if (p > 0.0) q = -q; else p = -p;
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
        fb = g(b);
    }
    res.sigma = b;
    return res;
}

LogitMapping logit_mapping(double pad) {
    const double edge = std::log((1.0 - kLogitEpsilon) / kLogitEpsilon) + pad;
    return {true, -edge, 1.0 / (2.0 * edge)};
}

double metric_span(const Inputs& in) { return in.logit.enabled ? 1.0 / in.logit.inv_span : 1.0; }

RowsFixpoint fixpoint_of_rows(const Inputs& in, std::int64_t first_intervals, bool full, int threads, double hint) {
    std::int64_t intervals = first_intervals;
    const double span = metric_span(in);
    for (;;) {
        ResidualLevels levels(bin_rows(in, intervals, full, threads));
        const FixpointResult fix = solve_fixpoint(levels, span, 1e-10, hint / span);
        if (fix.resolved || intervals >= kMaxIntervals) return {fix.sigma * span, levels.release()};
        // σ* < σ_min: only for very large, very well calibrated data. One more
        // pass over the rows, on the grid that the estimate of σ* needs.
        intervals = std::min(kMaxIntervals, std::max(intervals * 2, intervals_for_sigma(fix.sigma)));
    }
}

std::int64_t first_intervals_for_rows(std::int64_t n) {
    const double guess = 0.1 / std::cbrt(static_cast<double>(std::max<std::int64_t>(n, 1)));
    return std::min(kDefaultFineIntervals, intervals_for_sigma(guess));
}

double smece_of_rows(const Inputs& in, int threads, std::int64_t fine_intervals) {
    if (fine_intervals <= 0) fine_intervals = first_intervals_for_rows(in.f.size);
    return fixpoint_of_rows(in, fine_intervals, /*full=*/false, threads).sigma;
}

double smece_sigma_of_rows(const Inputs& in, double sigma, int threads) {
    const double grid_sigma = sigma / metric_span(in);
    ResidualLevels levels(bin_rows(in, intervals_for_sigma(grid_sigma), /*full=*/false, threads));
    return levels.smece_sigma(grid_sigma);
}

}  // namespace smoothece
