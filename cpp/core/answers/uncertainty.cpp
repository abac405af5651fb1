#include "answers/uncertainty.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <utility>

#include "runtime/errors.hpp"

namespace smoothece {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string number(double v) {
    std::ostringstream s;
    s.precision(3);
    s << v;
    return s.str();
}

// Frequency weights count rows: a replicate of fewer than one row in all
// is no sample, and its draws (a Gamma or a Binomial of that many rows) no statistic.
void check_rows_counted(const Analysis& analysis, const UncertaintyRequest& request) {
    const double total = analysis.summary().total_weight();
    if (request.weights == WeightKind::Frequency && total < 1.0)
        throw InputError("weight_kind='frequency' reads the weights as counts of rows, but they sum to " + number(total) +
                             ", less than one row: pass weight_kind='importance' for weights that are not counts",
                         "weight_kind");
}

}  // namespace

BootstrapAnswer bootstrap_answer(Analysis& analysis, double fixed_sigma, const UncertaintyRequest& request) {
    check_rows_counted(analysis, request);
    const bool fixed = fixed_sigma > 0.0;
    BootstrapAnswer out;
    // smECEσ first: smece() may move the analysis to a finer summary, and the
    // value must be smece_sigma's (and the diagram's) to the bit.
    if (fixed) out.value = analysis.smece_sigma(fixed_sigma, request.threads).value;
    const SigmaStar star = analysis.smece(request.threads);  // the replicates' hint (and σ*'s atoms, if any)
    if (fixed) {
        const double finest = analysis.min_resampled_sigma();
        if (fixed_sigma < finest * (1.0 - 1e-12))
            throw InputError("sigma=" + number(fixed_sigma) + " lies below " + number(finest) +
                                 ", the smallest bandwidth whose bootstrap replicates these cells resolve",
                             "sigma", -1, fixed_sigma);
        out.sigma = fixed_sigma;
    } else {
        out.value = out.sigma = star.sigma;
        if (!star.resolved) {
            out.standing = Standing::Bound;
            out.low = out.high = kNaN;
            return out;
        }
    }
    Replicates reps = analysis.replicates(ResampleKind::Bootstrap, request.count, request.seed, out.sigma,
                                          request.mesh_intervals, request.weights, fixed, request.threads,
                                          request.mesh_intervals > 0 ? request.level : 0.0);
    out.replicates = fixed ? std::move(reps.smece_at_band) : std::move(reps.sigma_star);
    out.below_grid = fixed ? 0 : reps.unresolved;
    // A replicate σ* below the grid is somewhere in [0, bound): taken as 0, the
    // interval holds the one its true value would give.
    std::vector<double> for_interval = out.replicates;
    if (out.below_grid > 0)
        for (std::size_t b = 0; b < for_interval.size(); ++b)
            if (reps.below_grid[b]) for_interval[b] = 0.0;
    std::tie(out.low, out.high) = bootstrap_interval(out.value, std::move(for_interval), request.level, true);
    out.band_lower = std::move(reps.band_lower);
    out.band_upper = std::move(reps.band_upper);
    return out;
}

TestAnswer test_answer(Analysis& analysis, const UncertaintyRequest& request, double band_sigma) {
    check_rows_counted(analysis, request);
    TestAnswer out;
    const SigmaStar star = analysis.smece(request.threads);
    out.statistic = star.sigma;
    if (!star.resolved) {
        out.standing = Standing::Bound;
        out.p_value = kNaN;
        return out;
    }
    Replicates reps = analysis.replicates(ResampleKind::Consistency, request.count, request.seed,
                                          band_sigma > 0.0 ? band_sigma : star.sigma, request.mesh_intervals,
                                          request.weights, false, request.threads,
                                          request.mesh_intervals > 0 ? request.level : 0.0);
    out.null = std::move(reps.sigma_star);
    out.below_grid = reps.unresolved;
    const auto above = std::count_if(out.null.begin(), out.null.end(),
                                     [&](double s) { return s >= out.statistic * kNullTie; });
    out.p_value = static_cast<double>(1 + above) / static_cast<double>(1 + request.count);
    out.band_lower = std::move(reps.band_lower);
    out.band_upper = std::move(reps.band_upper);
    return out;
}

}  // namespace smoothece
