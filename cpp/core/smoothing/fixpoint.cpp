#include "smoothing/fixpoint.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "smoothing/integrate_abs.hpp"
#include "summary/summary.hpp"

namespace smoothece {
namespace {

constexpr double kReadNodesPerSigma = 8.0;
constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

ResidualLevels::ResidualLevels(std::vector<double> nodes, std::int64_t intervals)
    : nodes_(std::move(nodes)), intervals_(intervals) {}

double ResidualLevels::net() const {
    double sum[4] = {0.0, 0.0, 0.0, 0.0};  // independent chains: the adds pipeline
    std::size_t j = 0;
    for (; j + 4 <= nodes_.size(); j += 4)
        for (int i = 0; i < 4; ++i) sum[i] += nodes_[j + static_cast<std::size_t>(i)];
    for (; j < nodes_.size(); ++j) sum[0] += nodes_[j];
    return std::fabs((sum[0] + sum[1]) + (sum[2] + sum[3]));
}

double ResidualLevels::min_sigma() const { return min_sigma_for(intervals_); }

const Spectrum& ResidualLevels::level(std::int64_t intervals) {
    auto& slot = levels_[intervals];
    if (!slot) slot = std::make_unique<Spectrum>(masses(intervals).data(), intervals);
    return *slot;
}

const std::vector<double>& ResidualLevels::masses(std::int64_t intervals) {
    if (intervals == intervals_) return nodes_;
    const auto kept = masses_.find(intervals);
    if (kept != masses_.end()) return kept->second;
    // Halved level by level from the summary's grid (each halving a fixed
    // stencil, every level kept): O(G) in all, and a level's masses do not
    // depend on which levels were asked for before.
    const bool nested = intervals_ % intervals == 0 && ((intervals_ / intervals) & (intervals_ / intervals - 1)) == 0;
    std::vector<double> coarse = rebin_nodes(nested ? masses(2 * intervals) : nodes_, intervals);
    return masses_.emplace(intervals, std::move(coarse)).first->second;
}

double ResidualLevels::integral(double sigma) {
    // The coarsest level with kNodesPerSigma nodes per σ, but not the one at
    // half the summary's grid: it saves half a transform's length at most,
    // and building it (a halving and a transform) costs more than that when
    // σ*'s search has the full grid's spectrum already, as it mostly does
    // (the first grid is sized for σ* near its noise floor: a calibrated
    // 1000-row group built both in half its calls).
    std::int64_t g = intervals_for_sigma(sigma);
    if (2 * g >= intervals_) g = intervals_;
    const Spectrum& spectrum = level(g);
    // The masses need kNodesPerSigma nodes per σ (binning error); the smooth
    // r and F are read off exactly at kReadNodesPerSigma (the spectrum is
    // below e^-300 at that grid's Nyquist frequency), where only the roots
    // of r are interpolated: a root misplaced by δ costs |r'|δ², ~1e-10.
    const std::int64_t read = read_intervals(kReadNodesPerSigma / sigma, g);
    values_.resize(static_cast<std::size_t>(read + 1));
    antiderivative_.resize(static_cast<std::size_t>(read + 1));
    spectrum.evaluate(sigma, values_.data(), antiderivative_.data(), read);
    return integrate_abs(values_.data(), antiderivative_.data(), 0, read, read);
}

namespace {

std::atomic<std::uint64_t> searches{0}, evaluations{0};

Fixpoint search(const std::function<double(double)>& smece, double scale, double limit, double guess,
                const FixpointOptions& options) {
    const double tol = options.tol;
    Fixpoint res;
    auto settle = [&res](double s, bool resolved, double lower, double upper) {
        res.sigma = s;
        res.resolved = resolved;
        res.lower = lower;
        res.upper = upper;
        return res;
    };
    // σ* lies in [lo, hi]: smECEσ ≤ 1 gives σ* ≤ 1/scale, and since smECEσ is
    // non-increasing, every evaluation bounds both sides: smece(x) > scale·x
    // gives σ* ∈ (x, smece(x)/scale], smece(x) < scale·x gives
    // σ* ∈ [smece(x)/scale, x). (Below `limit` the evaluator cannot look.)
    double lo = limit, hi = 1.0 / scale;
    bool lo_seen = false;  // whether σ* ≥ lo is known (lo = limit is only where the evaluator stops)
    // An end at an x evaluated is open (σ* ≠ x there); one at smece(x)/scale
    // is closed, and a step may land on it: where smECEσ is flat (a residual
    // of one sign at these σ) the power law's step is exactly that end.
    bool lo_open = false, hi_open = false;
    double x = std::min(std::max(guess, lo), hi);
    bool known = x == guess && !std::isnan(options.guess_value);  // smece(x) given
    double previous_x = 0.0, previous_e = 0.0, earlier_x = 0.0, earlier_e = 0.0;
    for (int iter = 0; iter < 100; ++iter) {
        double e = options.guess_value;
        if (!known) {
            e = smece(x);
            ++res.evaluations;
        }
        known = false;
        const double g = e - scale * x;
        if (g == 0.0) return settle(x, true, x, x);
        if (g > 0.0) {
            if (x >= lo) {
                lo = x;
                lo_open = true;
            }
            lo_seen = true;
            if (e / scale <= hi) {
                hi = e / scale;
                hi_open = false;
            }
        } else {
            if (x <= limit) return settle(limit, false, std::max(0.0, e / scale), limit);
            if (x <= hi) {
                hi = x;
                hi_open = true;
            }
            if (e / scale >= lo) {
                lo = e / scale;
                lo_open = false;
                lo_seen = true;
            }
        }
        // Next: the fixpoint of the power law through the last two
        // evaluations, smECEσ ≈ e·(σ/x)^(−p) (noise makes it ~σ^(−1/2), a
        // flat residual σ^0), kept inside the bracket. The first step takes
        // p = ½, or Newton's step with the slope given.
        double p = 0.5;
        const bool two_points = previous_e > 0.0 && e > 0.0 && previous_x != x;
        if (two_points) p = std::min(4.0, std::max(0.0, -std::log(e / previous_e) / std::log(x / previous_x)));
        double next = p == 0.0 ? e / scale : (e > 0.0 ? std::exp((std::log(e / scale) + p * std::log(x)) / (1.0 + p)) : 0.0);
        if (!two_points && !std::isnan(options.slope)) next = x - g / (options.slope - scale);
        // The error of a model step, about the product of the errors of the
        // points it was fitted through (with the constant near 1 here: the
        // log-log residual is nearly linear), taken as the product of their
        // log-distances to it. None for the first step (one point, an assumed
        // slope) or a bisection.
        double estimate = two_points ? std::fabs(std::log(next / x)) * std::fabs(std::log(next / previous_x)) : kInf;
        // With three evaluations, inverse quadratic interpolation of the same
        // log-log residual h(u) = log(smECE/scale) − u, u = log σ (order ~1.84
        // against the power law's ~1.62: one evaluation fewer from a rough
        // guess), where it lands inside the bracket.
        if (earlier_e > 0.0 && previous_e > 0.0 && e > 0.0) {
            const double u0 = std::log(earlier_x), u1 = std::log(previous_x), u2 = std::log(x);
            const double h0 = std::log(earlier_e / scale) - u0, h1 = std::log(previous_e / scale) - u1,
                         h2 = std::log(e / scale) - u2;
            if (h0 != h1 && h0 != h2 && h1 != h2) {
                const double u = u0 * h1 * h2 / ((h0 - h1) * (h0 - h2)) + u1 * h0 * h2 / ((h1 - h0) * (h1 - h2)) +
                                 u2 * h0 * h1 / ((h2 - h0) * (h2 - h1));
                const double candidate = std::exp(u);
                if (candidate > lo && candidate < hi) {
                    next = candidate;
                    estimate = std::fabs(u - u0) * std::fabs(u - u1) * std::fabs(u - u2);
                }
            }
        }
        if (hi - lo <= tol * hi) return settle(std::min(std::max(next, lo), hi), true, lo, hi);
        if (!((next > lo || (next == lo && !lo_open)) && (next < hi || (next == hi && !hi_open)))) {
            next = lo_seen ? std::sqrt(lo) * std::sqrt(hi) : lo;  // bisect, or look at the limit
            estimate = kInf;
        }
        // Done when the step is within the tolerance or its error estimate is
        // (that saves the evaluation that would only confirm the step: 4.4
        // evaluations a call on calibrated 1,000-row sets, against 5.4).
        if (std::fabs(next - x) <= tol * x || estimate <= tol) return settle(next, true, lo, hi);
        earlier_x = previous_x;
        earlier_e = previous_e;
        previous_x = x;
        previous_e = e;
        x = next;
    }
    return settle(x, true, lo, hi);
}

}  // namespace

Fixpoint solve_fixpoint(const std::function<double(double)>& smece, double scale, double limit, double guess,
                        const FixpointOptions& options) {
    const Fixpoint fix = search(smece, scale, limit, guess, options);
    searches.fetch_add(1, std::memory_order_relaxed);
    evaluations.fetch_add(static_cast<std::uint64_t>(fix.evaluations), std::memory_order_relaxed);
    return fix;
}

std::pair<std::uint64_t, std::uint64_t> fixpoint_counts() {
    return {searches.load(std::memory_order_relaxed), evaluations.load(std::memory_order_relaxed)};
}

}  // namespace smoothece
