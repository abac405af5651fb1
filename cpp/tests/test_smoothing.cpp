// Smoothing: the spectrum's read-offs are exact samples on coarser grids and
// by either transform, the two builds of the dip scan agree, and σ*'s search
// finds known fixpoints.
#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core_rows.hpp"
#include "smoothing/dip_kernel.hpp"
#include "smoothing/exact_integral.hpp"
#include "smoothing/fixpoint.hpp"
#include "smoothing/spectrum.hpp"

using namespace smoothece;
using namespace smoothece::testing;

namespace {

// The smoothed masses read off a coarser grid are exact samples of the
// fine grid's values, also where the spectrum has not decayed by the
// coarse grid's Nyquist frequency (σ = 1.5 coarse nodes: it folds).
TEST(spectrum_coarse_read_off) {
    const std::int64_t fine = 4096;
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    std::vector<double> masses(static_cast<std::size_t>(fine + 1));
    for (double& m : masses) m = u(rng);
    const Spectrum spectrum(masses.data(), fine);
    std::vector<double> r(static_cast<std::size_t>(fine + 1)), F(r.size());
    for (std::int64_t coarse : {2048, 512, 16}) {
        const double sigma = 1.5 / static_cast<double>(coarse);
        spectrum.evaluate(sigma, r.data(), F.data());
        std::vector<double> rc(static_cast<std::size_t>(coarse + 1)), Fc(rc.size());
        spectrum.evaluate(sigma, rc.data(), Fc.data(), coarse);
        double worst = 0.0, scale = 0.0;
        for (std::int64_t j = 0; j <= coarse; ++j) {
            const auto at = static_cast<std::size_t>(j * (fine / coarse));
            worst = std::max({worst, std::fabs(rc[static_cast<std::size_t>(j)] - r[at]),
                              std::fabs(Fc[static_cast<std::size_t>(j)] - F[at])});
            scale = std::max({scale, std::fabs(r[at]), std::fabs(F[at])});
        }
        check(worst <= 1e-12 * scale, "spectrum read off " + std::to_string(coarse) +
                                          " of 4096 intervals at 1.5 nodes per sigma: exact samples");
    }
}

// The spectrum of masses on 3072 intervals (by the inverse transform)
// equals that of the same masses on every fourth node of 12288 intervals
// (by the forward transform), read off the same nodes.
TEST(spectrum_inverse_transform) {
    const std::int64_t coarse = 3072, fine = 4 * coarse;
    std::mt19937_64 rng(12);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    std::vector<double> masses(static_cast<std::size_t>(coarse + 1)), spread(static_cast<std::size_t>(fine + 1), 0.0);
    for (std::size_t j = 0; j < masses.size(); ++j) spread[4 * j] = masses[j] = u(rng);
    std::vector<double> r(masses.size()), F(masses.size()), rf(masses.size()), Ff(masses.size());
    const double sigma = 4.0 / static_cast<double>(coarse);  // the spectrum is below e^-79 at k = 3072
    Spectrum(masses.data(), coarse).evaluate(sigma, r.data(), F.data());
    Spectrum(spread.data(), fine).evaluate(sigma, rf.data(), Ff.data(), coarse);
    double worst = 0.0, scale = 0.0;
    for (std::size_t j = 0; j < r.size(); ++j) {
        worst = std::max({worst, std::fabs(r[j] - rf[j]), std::fabs(F[j] - Ff[j])});
        scale = std::max({scale, std::fabs(rf[j]), std::fabs(Ff[j])});
    }
    check(worst <= 1e-12 * scale, "spectrum by the inverse transform (3072 intervals) equals the forward one's");
}

// The dip scan: both builds of any_dip find a dip exactly where a cell by
// cell test (cell_holds_dip) finds one, over ranges of every length mod 4
// and start, on values with dips planted and without.
TEST(dip_kernels_alike) {
    if (!both_kernel_builds()) return;
#if defined(SMOOTHECE_HAVE_AVX2_KERNEL)
    std::mt19937_64 rng(23);
    std::uniform_real_distribution<double> u(0.5, 1.5);
    const std::int64_t n = 67;
    const double h = 1.0 / static_cast<double>(n - 1), inv_h = 1.0 / h, noise = 1e-9;
    bool agree = true;
    int with_dip = 0, cases = 0;
    for (int trial = 0; trial < 200; ++trial) {
        // r > 0 throughout with F its running integral: no dips, unless a
        // cell's rise of F is cut to a tenth of its trapezoid, so that the
        // Hermite interpolant's slope dips below zero inside the cell.
        std::vector<double> r(static_cast<std::size_t>(n)), F(r.size(), 0.0);
        for (double& v : r) v = u(rng);
        for (std::size_t j = 1; j < F.size(); ++j) F[j] = F[j - 1] + h * 0.5 * (r[j - 1] + r[j]);
        if (trial % 2 == 1) {
            const auto j = static_cast<std::size_t>(rng() % static_cast<std::uint64_t>(n - 1));
            const double cut = F[j + 1] - F[j] - 0.05 * h * (r[j] + r[j + 1]);
            for (std::size_t k = j + 1; k < F.size(); ++k) F[k] -= cut;
        }
        for (std::int64_t begin = 0; begin < 5; ++begin) {
            for (std::int64_t end = begin; end < n; end += 7) {
                bool by_cells = false;
                for (std::int64_t j = begin; j < end; ++j) by_cells |= cell_holds_dip(r.data(), F.data(), j, inv_h, noise);
                const bool a = baseline::any_dip(r.data(), F.data(), begin, end, inv_h, noise);
                const bool b = avx2::any_dip(r.data(), F.data(), begin, end, inv_h, noise);
                agree &= a == by_cells && b == by_cells;
                with_dip += by_cells ? 1 : 0;
                ++cases;
            }
        }
    }
    check(agree && with_dip > cases / 10 && with_dip < cases,
          "AVX2 and baseline any_dip agree with the cell-by-cell test (" + std::to_string(cases) + " ranges, " +
              std::to_string(with_dip) + " with a dip)");
#endif
}

}  // namespace

// The exact integral of two atoms of opposite residual, d apart, far from
// 0 and 1: ∫|φσ(t − a) − φσ(t − b)| dt = 2(2Φ(d/2σ) − 1) in closed form, on
// local grids of 16 nodes per σ (σ* of the rows) and of 8 (replicates,
// solved to 1e-4).
TEST(exact_integral_two_atoms) {
    const double sigma = 1e-3;
    double worst16 = 0.0, worst8 = 0.0;
    for (const double d : {0.3, 1.0, 2.5, 6.0}) {
        for (const double a : {0.4, 0.40037, 0.6123}) {
            const std::vector<double> x{a, a + d * sigma}, r{1.0, -1.0};
            const double exact = 2.0 * std::erf(d / (2.0 * std::sqrt(2.0)));
            worst16 = std::max(worst16, std::fabs(exact_abs_integral(x, r, sigma) / exact - 1.0));
            worst8 = std::max(worst8, std::fabs(exact_abs_integral(x, r, sigma, 8.0) / exact - 1.0));
        }
    }
    check(worst16 < 2e-6, "two atoms, 16 nodes per sigma: the closed form (worst relative " + std::to_string(worst16) + ")");
    check(worst8 < 2e-5, "two atoms, 8 nodes per sigma: the closed form (worst relative " + std::to_string(worst8) + ")");
}

// The direct sums (replicates of discrete forecasts): two atoms of opposite
// residual against their closed form, and clusters of random atoms at and
// near 0 and 1 (where the reflections' images count), in the middle and
// alone, against the local grids at 64 nodes per σ (binning error ~4e-9),
// at 6 nodes per σ (what replicates use) and at 4.
TEST(direct_integral_against_closed_form_and_local_grids) {
    double worst_pair = 0.0, worst_grid = 0.0;
    const double sigma = 1e-3;
    for (const double d : {0.1, 0.3, 1.0, 2.5, 6.0, 11.0, 12.5}) {
        for (const double a : {0.4, 0.40037, 0.6123}) {
            const std::vector<double> x{a, a + d * sigma}, r{1.0, -1.0};
            const double exact = 2.0 * std::erf(d / (2.0 * std::sqrt(2.0)));
            worst_pair = std::max(worst_pair, std::fabs(direct_abs_integral(x, r, sigma, 6.0) / exact - 1.0));
            worst_grid = std::max(worst_grid, std::fabs(exact_abs_integral(x, r, sigma, 8.0) / exact - 1.0));
        }
    }
    check(worst_pair < 1e-5 && worst_pair < worst_grid,
          "two atoms, 6 nodes per sigma: the closed form (worst relative " + std::to_string(worst_pair) +
              "; local grids of 8 nodes per sigma: " + std::to_string(worst_grid) + ")");
    std::mt19937_64 rng(31);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    double worst6 = 0.0, worst4 = 0.0;
    int cases = 0;
    for (const double s : {2e-4, 1e-3, 5e-3, 0.02}) {
        for (int trial = 0; trial < 6; ++trial) {
            std::vector<double> x{0.0, 1.0};
            for (const double centre : {0.0, 0.3, 0.7, 1.0})
                for (int k = 0; k < 6; ++k) x.push_back(std::min(1.0, std::max(0.0, centre + (u(rng) - 0.5) * 12.0 * s)));
            x.push_back(0.5);  // alone, far from the clusters
            std::sort(x.begin(), x.end());
            x.erase(std::unique(x.begin(), x.end()), x.end());
            std::vector<double> r(x.size());
            for (double& v : r) v = u(rng) - 0.45;
            const double reference = exact_abs_integral(x, r, s, 64.0);
            worst6 = std::max(worst6, std::fabs(direct_abs_integral(x, r, s, 6.0) / reference - 1.0));
            worst4 = std::max(worst4, std::fabs(direct_abs_integral(x, r, s, 4.0) / reference - 1.0));
            ++cases;
        }
    }
    check(worst6 < 1e-5 && worst4 < 5e-5, "random clusters at and near the ends (" + std::to_string(cases) +
                                              " cases): 6 nodes per sigma within " + std::to_string(worst6) +
                                              ", 4 within " + std::to_string(worst4) + " of the local grids");
}

// σ* of c + a·σ^(−½) by bisection in long double: smece − scale·σ decreases.
double bisected_fixpoint(double c, double a, double scale) {
    long double lo = 1e-12L, hi = 1.0L / scale;
    for (int i = 0; i < 200; ++i) {
        const long double mid = 0.5L * (lo + hi);
        (c + a / std::sqrt(mid) > scale * mid ? lo : hi) = mid;
    }
    return static_cast<double>(0.5L * (lo + hi));
}

// σ*'s search on hand-made non-increasing functions whose fixpoint is known:
// a·σ^(−½) (noise: σ* = (a/scale)^(2/3)), a constant c (a residual of one
// sign: σ* = c/scale), noise on a residual c + a·σ^(−½) (σ* by bisection)
// and a step from 0.3 to 0.1 at t (σ* = t, where g jumps across 0), from
// guesses far on either side, at the value's tolerance and at a replicate's;
// σ* within the tolerance, inside the bracket reported, and for the smooth
// ones in at most 6 evaluations.
TEST(fixpoint_known_fixpoints) {
    struct Known {
        std::string name;
        std::function<double(double)> smece;
        double star;
        bool smooth;
    };
    const double scale = 2.0, t = 0.0731;
    const std::vector<Known> known{
        {"a/sqrt(sigma)", [](double s) { return 0.013 / std::sqrt(s); }, std::cbrt(0.013 * 0.013 / (scale * scale)), true},
        {"constant", [](double) { return 0.137; }, 0.137 / scale, true},
        {"c + a/sqrt(sigma)", [](double s) { return 0.01 + 0.004 / std::sqrt(s); }, bisected_fixpoint(0.01, 0.004, scale), true},
        {"step", [t](double s) { return s < t ? 0.3 : 0.1; }, t, false},
    };
    for (const Known& k : known) {
        for (const double tol : {1e-14, 1e-4}) {
            for (const double off : {1e-4, 0.5, 1.0, 1.3, 20.0}) {
                const double guess = k.star * off;
                const std::string what = k.name + ", tol " + std::to_string(tol) + ", guess " + std::to_string(off) + " sigma*";
                const Fixpoint fix = solve_fixpoint(k.smece, scale, 1e-9, guess, {tol});
                check(fix.resolved && std::fabs(fix.sigma - k.star) <= 2.0 * tol * k.star,
                      what + ": sigma* " + std::to_string(fix.sigma) + " in " + std::to_string(fix.evaluations) + " evaluations");
                if (k.smooth) check(fix.evaluations <= 6, what + ": at most 6 evaluations");
                check(fix.lower <= k.star && k.star <= fix.upper && fix.lower <= fix.sigma && fix.sigma <= fix.upper,
                      what + ": the bracket holds sigma* and the answer");
            }
        }
    }
}

// The replicates' start: the slope at the guess (of this function, or of one
// 10% off) makes the first step Newton's, and smece(guess) given saves an
// evaluation without changing the steps.
TEST(fixpoint_replicate_start) {
    const double scale = 1.0, a = 0.02;
    const double star = std::cbrt(a * a);
    auto smece = [a](double s) { return a / std::sqrt(s); };
    for (const double off : {0.8, 0.97, 1.05, 1.4}) {
        const double guess = star * off;
        for (const double like : {1.0, 1.1}) {
            const double slope = -0.5 * like * a / (guess * std::sqrt(guess));
            const Fixpoint plain = solve_fixpoint(smece, scale, 1e-9, guess, {1e-4, slope});
            const Fixpoint given = solve_fixpoint(smece, scale, 1e-9, guess, {1e-4, slope, smece(guess)});
            const std::string what = "guess " + std::to_string(off) + " sigma*, slope x" + std::to_string(like);
            check(plain.resolved && std::fabs(plain.sigma / star - 1.0) <= 2e-4 && plain.lower <= star && star <= plain.upper,
                  what + ": within 1e-4 in " + std::to_string(plain.evaluations) + " evaluations");
            check(plain.evaluations <= 3, what + ": at most 3 evaluations");
            check(given.sigma == plain.sigma && given.evaluations == plain.evaluations - 1,
                  what + ": smece(guess) given, the same steps and one evaluation fewer");
        }
    }
    // A slope of 0 is known flat (a residual of one sign): the Newton step is σ*.
    const Fixpoint flat = solve_fixpoint([](double) { return 0.2; }, 2.0, 1e-9, 0.13, {1e-4, 0.0});
    check(flat.resolved && flat.sigma == 0.1 && flat.evaluations == 2, "flat, slope 0: sigma* at the second evaluation");
}

// σ* below the limit the evaluator reaches is reported as the bound
// [lower, limit), unresolved, lower ≤ σ* (a·σ^(−½), σ* = 1e-6 against a
// limit of 1e-4): from a guess above it, from the limit itself (with and
// without its value given, and with a replicate's slope), and the counts of
// the bench hook add up.
TEST(fixpoint_bound) {
    const double a = 1e-9, limit = 1e-4, star = std::cbrt(a * a);
    auto smece = [a](double s) { return a / std::sqrt(s); };
    const auto [searches, evaluations] = fixpoint_counts();
    int made = 0;
    const double slope = -0.5 * a / (limit * std::sqrt(limit));
    const std::vector<std::pair<std::string, FixpointOptions>> starts{
        {"value's search", {1e-14}}, {"replicate's search", {1e-4, slope}}, {"replicate's, value given", {1e-4, slope, smece(limit)}}};
    for (const auto& [name, options] : starts) {
        for (const double guess : {limit, 3e-3, 0.2}) {
            const Fixpoint fix = solve_fixpoint(smece, 1.0, limit, guess, options);
            made += fix.evaluations;
            const std::string what = name + " from " + std::to_string(guess);
            check(!fix.resolved && fix.sigma == limit && fix.upper == limit && fix.lower <= star && fix.lower >= 0.0,
                  what + ": the bound [" + std::to_string(fix.lower) + ", limit) in " + std::to_string(fix.evaluations) +
                      " evaluations");
        }
    }
    const auto [searches_after, evaluations_after] = fixpoint_counts();
    check(searches_after - searches == 9 && evaluations_after - evaluations == static_cast<std::uint64_t>(made),
          "fixpoint_counts: 9 searches and their evaluations");
}
