// Answers of one data set (Analysis): hand-derived values, σ* below every
// grid from exact atoms, the fixpoint, monotonicity in σ, threads, the logit
// metric, and invariance to the weights' scale.
#include <cmath>
#include <string>

#include <random>

#include "answers/analysis.hpp"
#include "answers/uncertainty.hpp"
#include "core_rows.hpp"
#include "products/sketch.hpp"
#include "runtime/errors.hpp"

using namespace smoothece;
using namespace smoothece::testing;

namespace {

// One row at 0.3 with y = 1: r = 0.7·K̃σ(·, 0.3), which integrates to 0.7 for every σ.
TEST(single_row) {
    const Rows one{{0.3}, {}, {1}};
    for (double sigma : {1e-9, 0.002, 0.05, 1.0})
        check(std::fabs(smece_sigma(one, sigma) - 0.7) < 1e-12, "single row: smECE_sigma = 0.7 at sigma " + std::to_string(sigma));
    check(std::fabs(smece(one) - 0.7) < 1e-12, "single row: sigma* = 0.7");
}

// A base rate: 1000 rows at one prediction (the kernel sums a block in one
// cell in lanes): r = R·K̃σ(·, 0.3) with R = Σ(y − f), so smECEσ = |R|/n at every σ.
TEST(base_rate) {
    Rows base;
    double residual = 0.0;
    for (int i = 0; i < 1000; ++i) {
        base.f.push_back(0.3);
        base.y.push_back(i % 7 < 2 ? 1 : 0);
        residual += base.y.back() - 0.3;
    }
    for (double sigma : {0.01, 0.05, 0.3})
        check(std::fabs(smece_sigma(base, sigma) - std::fabs(residual) / 1000.0) < 1e-12,
              "base rate: smECE_sigma = |sum of residuals|/n at sigma " + std::to_string(sigma));
}

// A mass at an end point is its own mirror image: f = 0, y = 1 gives 1.
TEST(mass_at_end_counts_twice) {
check(std::fabs(smece_sigma(Rows{{0.0}, {}, {1}}, 0.1) - 1.0) < 1e-12, "mass at 0 counts twice");
}

// Every residual zero: sigma* = 0 exactly.
TEST(no_residual) {
check(smece(Rows{{0.0, 1.0, 1.0}, {}, {0, 1, 1}}) == 0.0, "no residual: sigma* = 0");
}

// Two point masses whose residual sums nearly cancel: σ* far below any grid, exact from atoms.
TEST(atoms_below_grid) {
    const Rows r{{0.3, 0.3, 0.7, 0.7}, {3.0, 7.001, 7.0, 3.0}, {1, 0, 1, 0}};
    const double expected = std::fabs(3.0 * (1.0 - 0.3) - 7.001 * 0.3) / 20.001;
    check(std::fabs(smece(r) - expected) < 1e-16, "atoms below the grid: sigma* exact");
}

TEST(threads_agree) {
    const Rows& data = shared_rows();
    check(std::fabs(smece(data, Metric::L1, 1) - smece(data, Metric::L1, 2)) < 1e-12, "1 and 2 threads agree");
}

TEST(smece_at_sigma_star) {
    const Rows& data = shared_rows();
    const double s1 = smece(data, Metric::L1, 1);
    check(std::fabs(smece_sigma(data, s1) - s1) < 1e-8, "smECE at sigma* equals sigma*");
}

TEST(monotone_in_sigma) {
    const Rows& data = shared_rows();
    double previous = 2.0;
    bool monotone = true;
    for (double sigma = 1e-7; sigma < 1.0; sigma *= 2.5) {
        const double v = smece_sigma(data, sigma);
        monotone = monotone && v <= previous + 1e-12;
        previous = v;
    }
    check(monotone, "smECE_sigma non-increasing in sigma, 1e-7 to 1");
}

TEST(logit_fixpoint) {
    const Rows& data = shared_rows();
    const double z = smece(data, Metric::Logit);
    check(z > 0.0 && std::fabs(smece_sigma(data, z, Metric::Logit) - z) < 1e-8, "logit metric: smECE at sigma* equals sigma*");
}

// Weights: scaling by any power of ten, subnormal included, changes nothing.
TEST(weights_scale_invariant) {
    Rows r = random_rows(2000, 3, true);
    const double base = smece(r);
    bool invariant = true;
    for (double factor : {1e-310, 1e-200, 1e200, 1e300}) {
        Rows scaled = r;
        for (double& w : scaled.w) w *= factor;
        invariant = invariant && std::fabs(smece(scaled) - base) < 1e-12;
    }
    check(invariant, "weights: invariant to scaling, subnormal and huge included");
}

}  // namespace

// The uncertainty answers say what their numbers are: a sketch whose grid
// does not resolve σ* (256 intervals: σ ≥ 1/16; calibrated rows put σ* near
// 0.01) answers with a bound and computes no interval or p-value from it;
// the same rows as arrays give both, and a fixed σ finer than the cells is refused.
TEST(uncertainty_answers_never_come_from_a_bound) {
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> u;
    Rows calibrated;
    for (int i = 0; i < 50000; ++i) {
        calibrated.f.push_back(u(rng));
        calibrated.y.push_back(u(rng) < calibrated.f.back() ? 1 : 0);
    }
    UncertaintyRequest request;
    request.count = 50;
    request.seed = 3;
    request.threads = 1;
    Sketch coarse(Metric::L1, 256);
    coarse.update(calibrated.inputs(), 1);
    Analysis sketch = coarse.analysis();
    const BootstrapAnswer bound = bootstrap_answer(sketch, 0.0, request);
    check(bound.standing == Standing::Bound && std::isnan(bound.low) && std::isnan(bound.high) && bound.replicates.empty(),
          "a bound gets no interval");
    const TestAnswer untested = test_answer(sketch, request);
    check(untested.standing == Standing::Bound && std::isnan(untested.p_value) && untested.null.empty(),
          "a bound gets no p-value");
    bool refused = false;
    try {
        bootstrap_answer(sketch, 0.01, request);
    } catch (const InputError& e) {
        refused = e.argument == "sigma";
    }
    check(refused, "a fixed sigma below the sketch's cells is refused, naming sigma");
    Analysis arrays = Analysis::of_rows(calibrated.inputs(), Metric::L1, Content::Full, 1);
    const BootstrapAnswer value = bootstrap_answer(arrays, 0.0, request);
    check(value.standing == Standing::Resolved && value.low <= value.value && value.value <= value.high &&
              value.replicates.size() == 50,
          "arrays: an interval around the value");
    const TestAnswer tested = test_answer(arrays, request);
    check(tested.standing == Standing::Resolved && tested.p_value > 0.0 && tested.p_value <= 1.0,
          "arrays: a p-value");
    check(value.value < bound.value, "the bound lies above the value");
}
