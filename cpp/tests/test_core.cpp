// Tests of the C++ core without Python: built with -DSMOOTHECE_BUILD_TESTS=ON
// and run by ctest (.ci/run does). The Python suite checks accuracy in depth
// against an independent exact evaluator; this checks that the core stands
// alone the way the bindings drive it: hand-derived values, the fixpoint,
// the logit metric, threads, exact atoms, resampling, the summary's merge and
// bytes, and the error contract.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "analysis.hpp"
#include "bin_kernel.hpp"
#include "errors.hpp"
#include "groups.hpp"
#include "resample.hpp"
#include "rows.hpp"
#include "sketch.hpp"
#include "smoothing.hpp"

using namespace smoothece;

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
    if (!ok) ++failures;
}

struct Rows {
    std::vector<double> f, w;
    std::vector<std::uint8_t> y;

    Inputs inputs(std::int64_t begin = 0, std::int64_t end = -1) const {
        if (end < 0) end = static_cast<std::int64_t>(f.size());
        Inputs in;
        const std::int64_t n = end - begin;
        in.f = {reinterpret_cast<const char*>(f.data() + begin), n, sizeof(double), DType::Float64, "f"};
        in.y = {reinterpret_cast<const char*>(y.data() + begin), n, sizeof(std::uint8_t), DType::Bool, "y"};
        if (!w.empty()) in.w = {reinterpret_cast<const char*>(w.data() + begin), n, sizeof(double), DType::Float64, "weights"};
        return in;
    }
};

double smece(const Rows& r, Metric metric = Metric::L1, std::int64_t threads = 1) {
    return Analysis::of_rows(r.inputs(), metric, Content::Residual, threads).smece(threads).sigma;
}

double smece_sigma(const Rows& r, double sigma, Metric metric = Metric::L1) {
    return Analysis::of_rows(r.inputs(), metric, Content::Residual, 1, sigma).smece_sigma(sigma, 1).value;
}

Rows random_rows(std::size_t n, std::uint64_t seed, bool weighted = false) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u;
    std::lognormal_distribution<double> lognormal;
    Rows r;
    for (std::size_t i = 0; i < n; ++i) {
        r.f.push_back(u(rng));
        r.y.push_back(u(rng) < r.f.back() * r.f.back() ? 1 : 0);
        if (weighted) r.w.push_back(lognormal(rng));
    }
    return r;
}


#if defined(SMOOTHECE_HAVE_AVX2_KERNEL)
// Bins rows with both kernels into the same kind of cells and says whether
// they agree bit for bit and in their verdict on the rows.
template <class Cell>
bool kernels_agree(const Inputs& in, const PassSpec& spec) {
    const std::size_t slots = static_cast<std::size_t>(spec.cells) * (std::is_same_v<Cell, FullCell> || std::is_same_v<Cell, LinearCell> ? 2 : 1) +
                              (std::is_same_v<Cell, ResidualNode> ? 1 : 0);
    std::vector<Cell> a(slots, Cell{}), b(slots, Cell{});
    PassTotals ta, tb;
    const bool ok_a = baseline::bin_range(in, spec, 0, in.size(), a.data(), ta);
    const bool ok_b = avx2::bin_range(in, spec, 0, in.size(), b.data(), tb);
    if (ok_a != ok_b) return false;
    if (!ok_a) return true;  // both refused the rows
    // Field by field (bit for bit: -0.0 and 0.0 differ), not byte by byte: cells have padding.
    auto fields = [](const Cell& c) {
        if constexpr (std::is_same_v<Cell, FullCell>)
            return std::vector<double>{c.w.p[0], c.w.p[1], c.w.p[2], c.w.p[3], c.wf.p[0], c.wf.p[1], c.wf.p[2], c.wf.p[3], c.rows, c.w2};
        else if constexpr (std::is_same_v<Cell, LinearCell>)
            return std::vector<double>{c.w.p[0], c.w.p[1], c.w.p[2], c.w.p[3], c.w4, c.rows, c.w2};
        else if constexpr (std::is_same_v<Cell, ResidualCell>)
            return std::vector<double>{c.a.p[0], c.a.p[1], c.a.p[2], c.a.p[3]};
        else
            return std::vector<double>{c.mass};
    };
    for (std::size_t i = 0; i < slots; ++i) {
        const std::vector<double> x = fields(a[i]), y = fields(b[i]);
        if (std::memcmp(x.data(), y.data(), x.size() * sizeof(double)) != 0) return false;
    }
    return ta.weight == tb.weight &&
           ta.max_weight == tb.max_weight && ta.positive_rows == tb.positive_rows;
}
#endif

}  // namespace

int main() {
    // One row at 0.3 with y = 1: r = 0.7·K̃σ(·, 0.3), which integrates to 0.7 for every σ.
    {
        const Rows one{{0.3}, {}, {1}};
        for (double sigma : {1e-9, 0.002, 0.05, 1.0})
            check(std::fabs(smece_sigma(one, sigma) - 0.7) < 1e-12, "single row: smECE_sigma = 0.7 at sigma " + std::to_string(sigma));
        check(std::fabs(smece(one) - 0.7) < 1e-12, "single row: sigma* = 0.7");
    }
    // A base rate: 1000 rows at one prediction (the kernel sums a block in one
    // cell in lanes): r = R·K̃σ(·, 0.3) with R = Σ(y − f), so smECEσ = |R|/n at every σ.
    {
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
    check(std::fabs(smece_sigma(Rows{{0.0}, {}, {1}}, 0.1) - 1.0) < 1e-12, "mass at 0 counts twice");
    // Every residual zero: sigma* = 0 exactly.
    check(smece(Rows{{0.0, 1.0, 1.0}, {}, {0, 1, 1}}) == 0.0, "no residual: sigma* = 0");
    // Two point masses whose residual sums nearly cancel: σ* far below any grid, exact from atoms.
    {
        const Rows r{{0.3, 0.3, 0.7, 0.7}, {3.0, 7.001, 7.0, 3.0}, {1, 0, 1, 0}};
        const double expected = std::fabs(3.0 * (1.0 - 0.3) - 7.001 * 0.3) / 20.001;
        check(std::fabs(smece(r) - expected) < 1e-16, "atoms below the grid: sigma* exact");
    }
#if defined(SMOOTHECE_HAVE_AVX2_KERNEL)
    // The AVX2 kernel (four rows a step, hand-written) bins exactly as the
    // baseline one: every kind of cell, both metrics, weighted or not,
    // predictions as float64 or float32, labels as bytes, doubles or a
    // strided view, row counts that are not multiples of four, predictions
    // at 0 and 1 and clamped, and bad rows refused alike.
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        bool all = true;
        int cases = 0;
        std::mt19937_64 rng(17);
        std::uniform_real_distribution<double> u;
        for (std::int64_t n : {1, 3, 4, 5, 511, 512, 513, 1031, 5000}) {
            std::vector<double> f(static_cast<std::size_t>(n)), y_double(f.size()), w(f.size());
            std::vector<float> f_single(f.size());
            std::vector<std::uint8_t> y(f.size()), y_wide(2 * f.size());
            for (std::size_t i = 0; i < f.size(); ++i) {
                f[i] = i % 11 == 0 ? 0.0 : i % 13 == 0 ? 1.0 : i % 17 == 0 ? -0.0 : u(rng) * 1.2 - 0.1;  // some clipped
                y[i] = u(rng) < 0.4 ? 1 : 0;
                y_double[i] = y[i];
                y_wide[2 * i] = y[i];
                w[i] = i % 5 == 0 ? 0.0 : std::exp(u(rng) * 4.0 - 2.0);
                f_single[i] = static_cast<float>(f[i]);
            }
            for (int labels = 0; labels < 6; ++labels) {  // 3 to 5: the same with float32 predictions
                for (bool weighted : {false, true}) {
                    for (bool logit : {false, true}) {
                        for (bool bad : {false, true}) {
                            Inputs in;
                            in.f = {reinterpret_cast<const char*>(f.data()), n, sizeof(double), DType::Float64, "f"};
                            if (labels >= 3) in.f = {reinterpret_cast<const char*>(f_single.data()), n, sizeof(float), DType::Float32, "f"};
                            if (labels % 3 == 0) in.y = {reinterpret_cast<const char*>(y.data()), n, 1, DType::Bool, "y"};
                            if (labels % 3 == 1) in.y = {reinterpret_cast<const char*>(y_double.data()), n, sizeof(double), DType::Float64, "y"};
                            if (labels % 3 == 2) in.y = {reinterpret_cast<const char*>(y_wide.data()), n, 2, DType::UInt8, "y"};
                            if (weighted) in.w = {reinterpret_cast<const char*>(w.data()), n, sizeof(double), DType::Float64, "w"};
                            in.clip_lo = -0.1;
                            in.clip_hi = 1.1;
                            const std::size_t at = static_cast<std::size_t>(n / 2);
                            const double saved_f = f[at];
                            const float saved_single = f_single[at];
                            const std::uint8_t saved_y = y[at];
                            if (bad) {  // a NaN prediction, or a label 2 in the byte labels
                                if (labels % 3 == 0) y[at] = 2;
                                else f[at] = f_single[at] = std::nanf("");
                            }
                            PassSpec spec{logit ? Mapping::logit() : Mapping::l1(), 1024, 0};
                            bool agree = kernels_agree<ResidualCell>(in, spec) && kernels_agree<FullCell>(in, spec) &&
                                               kernels_agree<ResidualNode>(in, spec) &&
                                               (logit || kernels_agree<LinearCell>(in, spec));
                            if (labels == 1 && !weighted && !logit) {  // the few-atoms pass's checks
                                std::vector<double> fa(f.size()), ya(f.size()), fb(f.size()), yb(f.size());
                                const std::uint64_t bad_a = baseline::check_block(f.data(), y_double.data(), n, -0.1, 1.1, fa.data(), ya.data());
                                const std::uint64_t bad_b = avx2::check_block(f.data(), y_double.data(), n, -0.1, 1.1, fb.data(), yb.data());
                                agree &= (bad_a != 0) == bad && (bad_b != 0) == bad;
                                if (!bad) agree &= std::memcmp(fa.data(), fb.data(), fa.size() * sizeof(double)) == 0 && ya == yb &&
                                                   std::none_of(fa.begin(), fa.end(), [](double x) { return std::signbit(x); });
                            }
                            if (!agree)
                                std::printf("     kernels differ: %lld rows, labels %d, weighted %d, logit %d, bad row %d\n",
                                            static_cast<long long>(n), labels, weighted, logit, bad);
                            all &= agree;
                            f[at] = saved_f;
                            f_single[at] = saved_single;
                            y[at] = saved_y;
                            ++cases;
                        }
                    }
                }
            }
        }
        check(all, "AVX2 and baseline kernels bin identically (" + std::to_string(cases) + " inputs, 4 kinds of cells)");
        // Resampling's group curves: both builds add the same lanes.
        std::mt19937_64 lane_rng(3);
        std::normal_distribution<double> normal;
        std::vector<double> src(37), factor(8), a(37 * 8), b;
        for (double& v : src) v = normal(lane_rng);
        for (double& v : factor) v = std::exp(normal(lane_rng));
        for (double& v : a) v = normal(lane_rng);
        const std::vector<double> before = a;
        b = a;
        baseline::add_lanes(src.data(), 37, factor.data(), a.data());
        avx2::add_lanes(src.data(), 37, factor.data(), b.data());
        bool lanes_ok = a == b;
        for (std::size_t i = 0; i < 37; ++i)
            for (std::size_t l = 0; l < 8; ++l) lanes_ok &= b[8 * i + l] == before[8 * i + l] + factor[l] * src[i];
        check(lanes_ok, "AVX2 and baseline add_lanes give dst + factor x src, the same in both");
    }
#endif
    // The full pass's node masses (for l1 the moments of w·f follow from
    // those of w) give the residual that the residual pass sums directly.
    for (bool weighted : {false, true}) {
        const Rows r = random_rows(200000, 5, weighted);
        PassOptions opts;
        opts.mapping = Mapping::l1();
        opts.intervals = 4096;
        opts.threads = 2;
        opts.content = Content::Residual;
        const Summary direct = summarize_rows(r.inputs(), opts);
        opts.content = Content::Full;
        const Summary full = summarize_rows(r.inputs(), opts);
        double worst = 0.0, scale = 0.0, weight = 0.0, weight_f = 0.0, f_sum = 0.0;
        for (std::size_t j = 0; j < direct.residual.size(); ++j) {
            worst = std::max(worst, std::fabs(full.residual[j] - direct.residual[j]));
            scale = std::max(scale, std::fabs(full.w0[j]) + std::fabs(full.w1[j]));
            f_sum += full.f0[j] + full.f1[j];
        }
        for (std::size_t i = 0; i < r.f.size(); ++i) {
            const double w = weighted ? r.w[i] : 1.0;
            weight += w;
            weight_f += w * r.f[i];
        }
        check(worst <= 1e-12 * scale && std::fabs(f_sum * std::ldexp(1.0, -full.weight_exp) - weight_f) <= 1e-10 * weight,
              std::string("full pass (l1") + (weighted ? ", weighted" : "") + "): residual as the residual pass, sum of w*f exact");
    }
    // Few rows for the grid are spread straight onto the nodes (no cells):
    // each node gets the rows' cubic Lagrange weights (basis at nodes −1, 0,
    // 1, 2 of the row's cell; reflected at 0 and 1), summed here row by row,
    // and the same rows eight times over (the cell path) give eight times
    // the masses. Rows at 0, 1 and in both end cells exercise the reflection.
    for (bool weighted : {false, true}) {
        Rows r = random_rows(301, 17, weighted);
        for (double edge : {0.0, 1.0, 0.0004, 0.9996, 0.001, 0.999}) {
            r.f.push_back(edge);
            r.y.push_back(1);
            if (weighted) r.w.push_back(0.7);
        }
        const std::int64_t g = 1024;
        PassOptions opts;
        opts.mapping = Mapping::l1();
        opts.intervals = g;
        opts.content = Content::Residual;
        const Summary spread = summarize_rows(r.inputs(), opts);
        std::vector<double> expected(static_cast<std::size_t>(g + 1), 0.0);
        auto at = [&](std::int64_t j) -> double& { return expected[static_cast<std::size_t>(j < 0 ? -j : j > g ? 2 * g - j : j)]; };
        for (std::size_t i = 0; i < r.f.size(); ++i) {
            const double x = r.f[i] * static_cast<double>(g);
            const auto j = std::min<std::int64_t>(static_cast<std::int64_t>(x), g - 1);
            const double l = x - static_cast<double>(j), m = (weighted ? r.w[i] : 1.0) * (r.y[i] - r.f[i]);
            at(j - 1) += -m * l * (l - 1.0) * (l - 2.0) / 6.0;
            at(j) += m * (l + 1.0) * (l - 1.0) * (l - 2.0) / 2.0;
            at(j + 1) += -m * (l + 1.0) * l * (l - 2.0) / 2.0;
            at(j + 2) += m * (l + 1.0) * l * (l - 1.0) / 6.0;
        }
        Rows eight;
        for (int copy = 0; copy < 8; ++copy) {
            eight.f.insert(eight.f.end(), r.f.begin(), r.f.end());
            eight.y.insert(eight.y.end(), r.y.begin(), r.y.end());
            eight.w.insert(eight.w.end(), r.w.begin(), r.w.end());
        }
        const Summary cells = summarize_rows(eight.inputs(), opts);
        double by_hand = 0.0, by_cells = 0.0, scale = 0.0;
        for (std::size_t j = 0; j < expected.size(); ++j) {
            by_hand = std::max(by_hand, std::fabs(spread.residual[j] - expected[j]));
            by_cells = std::max(by_cells, std::fabs(8.0 * spread.residual[j] - cells.residual[j]));
            scale = std::max(scale, std::fabs(expected[j]));
        }
        check(by_hand <= 1e-13 * scale && by_cells <= 1e-12 * scale && spread.rows == 307,
              std::string("rows spread onto the nodes") + (weighted ? " (weighted)" : "") +
                  ": the cubic weights summed by hand, and the cell path's masses");
    }
    // The smoothed masses read off a coarser grid are exact samples of the
    // fine grid's values, also where the spectrum has not decayed by the
    // coarse grid's Nyquist frequency (σ = 1.5 coarse nodes: it folds).
    {
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
    {
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
    // Group smoothing: Σ_g factor_g·(group g's smoothed masses) equals the
    // transform of the masses scaled by their group's factor, read off an
    // output grid coarser, finer, or of another base (3·2^k against 2^k),
    // with masses at both ends, and at a σ wide enough to need the images
    // beyond the first reflection; and with groups that hold no node.
    {
        std::mt19937_64 rng(13);
        std::uniform_real_distribution<double> u(0.0, 1.0);
        struct Case { std::int64_t intervals, out; double sigma; std::int64_t per_group, stride = 1; };
        for (const Case c : {Case{3072, 512, 0.003, 5}, Case{1536, 2048, 0.004, 3}, Case{48, 512, 0.6, 4},
                             Case{4096, 4096, 0.001, 7}, Case{3072, 512, 0.003, 5, 3}}) {
            std::vector<double> w0(static_cast<std::size_t>(c.intervals + 1)), w1(w0.size()), scaled(w0.size());
            std::vector<std::int32_t> group(w0.size());
            for (std::size_t j = 0; j < w0.size(); ++j) {
                w0[j] = u(rng);
                w1[j] = u(rng) < 0.2 ? 0.0 : u(rng);  // some empty nodes
                group[j] = static_cast<std::int32_t>(static_cast<std::int64_t>(j) / c.per_group * c.stride);
            }
            const std::int64_t groups = group.back() + 1;
            // Eight sets of factors at once (one per lane): each lane equals
            // the transform of the masses scaled by its set.
            constexpr std::size_t kLanes = GroupSmoothing::kLanes;
            std::vector<std::vector<double>> sets(kLanes, std::vector<double>(static_cast<std::size_t>(groups)));
            std::vector<double> lanes(static_cast<std::size_t>(groups) * kLanes), by_lanes;
            for (std::size_t l = 0; l < kLanes; ++l)
                for (std::size_t g = 0; g < sets[l].size(); ++g) lanes[g * kLanes + l] = sets[l][g] = 2.0 * u(rng);
            const GroupSmoothing smoothing(c.intervals, group, groups, {&w0, &w1}, c.sigma, c.out);
            double worst = 0.0, scale = 0.0;
            for (std::size_t a = 0; a < 2; ++a) {
                const std::vector<double>& mass = a == 0 ? w0 : w1;
                smoothing.sum_lanes(a, lanes.data(), by_lanes);
                for (std::size_t l = 0; l < kLanes; ++l) {
                    for (std::size_t j = 0; j < mass.size(); ++j) scaled[j] = sets[l][static_cast<std::size_t>(group[j])] * mass[j];
                    std::vector<double> expected(static_cast<std::size_t>(c.out + 1));
                    Spectrum(scaled.data(), c.intervals).evaluate(c.sigma, expected.data(), nullptr, c.out);
                    for (std::size_t m = 0; m < expected.size(); ++m) {
                        worst = std::max(worst, std::fabs(by_lanes[m * kLanes + l] - expected[m]));
                        scale = std::max(scale, std::fabs(expected[m]));
                    }
                }
            }
            check(worst <= 1e-12 * scale,
                  "group smoothing of " + std::to_string(c.intervals) + " intervals read off " + std::to_string(c.out) +
                      " at sigma " + std::to_string(c.sigma) + (c.stride > 1 ? " (two groups in three empty)" : "") +
                      ", eight sets of factors at once: each equals the transform of its scaled masses");
        }
    }
    // Grouping rows that come in parts: every part has weights, or none does.
    {
        const Rows weighted = random_rows(100, 14, true), plain = random_rows(100, 15);
        const std::vector<std::int64_t> codes(100, 0);
        bool refused = false;
        try {
            gather_groups({weighted.inputs(), plain.inputs()}, {codes.data(), codes.data()}, 1, 1);
        } catch (const std::invalid_argument&) {
            refused = true;
        }
        check(refused, "gather_groups refuses parts with and without weights");
    }
    // Gathering by group: each group's rows in their original order, predictions
    // clamped as every pass clamps them, labels intact (they ride in the sign bit,
    // so 0 and −0 with either label are the cases to get right); weights alongside.
    {
        const Rows rows{{-0.0, 0.0, 1.0, 0.25, -0.005, 1.005, 0.5, 0.0, -0.0},
                        {1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0},
                        {1, 0, 1, 0, 1, 0, 1, 1, 0}};
        Inputs in = rows.inputs();
        in.clip_lo = -0.01;
        in.clip_hi = 1.01;
        const std::vector<std::int64_t> codes = {1, 0, 1, 2, 0, 1, 2, 0, 1};
        for (std::int64_t threads : {1, 2}) {
            const GroupedRows grouped = gather_groups(in, codes.data(), 4, threads);
            GroupBuffer buffer;
            for (std::int64_t g = 0; g < 4; ++g) {
                const Inputs got = grouped.rows_of(g, buffer);
                std::size_t k = 0;
                for (std::size_t i = 0; i < codes.size(); ++i) {
                    if (codes[i] != g) continue;
                    const double f = std::min(std::max(rows.f[i], 0.0), 1.0) + 0.0;
                    check(k < static_cast<std::size_t>(got.size()) && buffer.f[k] == f && !std::signbit(buffer.f[k]) &&
                              buffer.y[k] == rows.y[i] && reinterpret_cast<const double*>(got.w.data)[k] == rows.w[i],
                          "gather_groups: row " + std::to_string(i) + " in group " + std::to_string(g));
                    ++k;
                }
                check(static_cast<std::int64_t>(k) == got.size(), "gather_groups: group " + std::to_string(g) + "'s size");
            }
        }
    }
    // Random data: the fixpoint, monotonicity, threads, the logit metric.
    const Rows data = random_rows(300000, 7);
    const double s1 = smece(data, Metric::L1, 1), s2 = smece(data, Metric::L1, 2);
    {
        check(std::fabs(s1 - s2) < 1e-12, "1 and 2 threads agree");
        check(std::fabs(smece_sigma(data, s1) - s1) < 1e-8, "smECE at sigma* equals sigma*");
        double previous = 2.0;
        bool monotone = true;
        for (double sigma = 1e-7; sigma < 1.0; sigma *= 2.5) {
            const double v = smece_sigma(data, sigma);
            monotone = monotone && v <= previous + 1e-12;
            previous = v;
        }
        check(monotone, "smECE_sigma non-increasing in sigma, 1e-7 to 1");
        const double z = smece(data, Metric::Logit);
        check(z > 0.0 && std::fabs(smece_sigma(data, z, Metric::Logit) - z) < 1e-8, "logit metric: smECE at sigma* equals sigma*");
    }
    // Weights: scaling by any power of ten, subnormal included, changes nothing.
    {
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
    // The summary: a sketch built in two batches and merged equals the arrays, and round-trips its bytes.
    for (Metric metric : {Metric::L1, Metric::Logit}) {
        const std::string name = metric == Metric::L1 ? "l1" : "logit";
        Sketch a(metric, std::int64_t{1} << 15), b(metric, std::int64_t{1} << 15);
        a.update(data.inputs(0, 100000), 1);
        b.update(data.inputs(100000), 1);
        a.merge(b);
        const Sketch c = Sketch::from_bytes(a.to_bytes());
        check(c.to_bytes() == a.to_bytes(), name + ": sketch bytes round trip");
        const double arrays = smece(data, metric);
        check(std::fabs(c.analysis().smece(1).sigma - arrays) < 1e-7, name + ": merged sketch equals the arrays");
        Sketch small(metric, 1024);
        small.update(data.inputs(0, 300), 1);
        check(small.exact(), name + ": a small sketch keeps its rows exactly");
        const Sketch small_back = Sketch::from_bytes(small.to_bytes());
        check(small_back.to_bytes() == small.to_bytes(), name + ": exact sketch bytes round trip");
    }
    // Resampling: the same seed gives the same replicates on any thread count;
    // replicates of calibrated data scatter around their noise floor.
    {
        Analysis full = Analysis::of_rows(data.inputs(), Metric::L1, Content::Full, 1);
        const double star = full.smece(1).sigma;
        const Replicates one = full.replicates(ResampleKind::Bootstrap, 64, 42, star, 64, WeightKind::Importance, false, 1);
        const Replicates two = full.replicates(ResampleKind::Bootstrap, 64, 42, star, 64, WeightKind::Importance, false, 2);
        check(one.sigma_star == two.sigma_star && one.mu.size() == two.mu.size(), "bootstrap: threads give the same replicates");
        double mean = 0.0;
        for (double s : one.sigma_star) mean += s / 64.0;
        check(std::fabs(mean - star) < 0.5 * star, "bootstrap replicates near sigma*");
        // The band of the curves: at each mesh point, the order statistics of its replicates (sorted here).
        const Replicates banded =
            full.replicates(ResampleKind::Bootstrap, 64, 42, star, 64, WeightKind::Importance, false, 2, 0.9);
        bool band_ok = banded.mu == one.mu && banded.band_lower.size() == static_cast<std::size_t>(one.mesh_points);
        std::int64_t full_points = 0;  // points every replicate reaches
        for (std::size_t m = 0; band_ok && m < banded.band_lower.size(); ++m) {
            std::vector<double> at(one.mu.begin() + static_cast<std::ptrdiff_t>(m * 64),
                                   one.mu.begin() + static_cast<std::ptrdiff_t>((m + 1) * 64));
            at.erase(std::remove_if(at.begin(), at.end(), [](double v) { return std::isnan(v); }), at.end());
            std::sort(at.begin(), at.end());
            // (64 − 1)·0.05 = 3.15: between the 4th and 5th smallest; (64 − 1)·0.95 = 59.85.
            const double lo = at.empty() ? 0.0 : at[3] + (63 * 0.05 - 3.0) * (at[4] - at[3]);
            const double hi = at.empty() ? 0.0 : at[59] + (63 * 0.95 - 59.0) * (at[60] - at[59]);
            full_points += at.size() == 64;
            band_ok = at.size() == 64 ? std::fabs(banded.band_lower[m] - lo) <= 1e-15 && std::fabs(banded.band_upper[m] - hi) <= 1e-15
                                      : at.empty() ? std::isnan(banded.band_lower[m]) : true;
        }
        check(band_ok && full_points > one.mesh_points / 2, "bootstrap band: the order statistics of each mesh point's replicates");
        const Replicates null = full.replicates(ResampleKind::Consistency, 64, 42, star, 0, WeightKind::Importance, false, 2);
        double above = 0.0;
        for (double s : null.sigma_star) above += s >= star ? 1.0 : 0.0;
        check(above / 64.0 < 0.1, "consistency replicates of miscalibrated data lie below its sigma*");
    }
    // A replicate's σ* does not depend on the grid it is solved on: on the
    // default work grid as on the summary's own grid (masses binned group by
    // group; scaling coarse nodes by the group they lie in moved σ* by up to
    // 4%), for calibrated data (σ* at its noise floor, many groups), weighted
    // or not, bootstrap and consistency.
    for (const bool weighted : {false, true}) {
        Rows calibrated = random_rows(100000, 11, weighted);
        std::mt19937_64 rng(12);
        std::uniform_real_distribution<double> u;
        for (std::size_t i = 0; i < calibrated.f.size(); ++i) calibrated.y[i] = u(rng) < calibrated.f[i] ? 1 : 0;
        Analysis full = Analysis::of_rows(calibrated.inputs(), Metric::L1, Content::Full, 1);
        const Summary& s = full.summary();
        const double star = full.smece(1).sigma / s.mapping.span;
        for (const ResampleKind kind : {ResampleKind::Bootstrap, ResampleKind::Consistency}) {
            ResampleRequest req;
            req.kind = kind;
            req.count = 48;
            req.seed = 5;
            req.hint = kind == ResampleKind::Bootstrap ? star : 0.0;
            req.band_sigma = star;
            req.threads = 2;
            const Replicates work = resample(s, req);
            req.work_nodes_per_sigma = 1e9;  // every replicate on the summary's grid
            const Replicates own = resample(s, req);
            double worst = 0.0;
            for (std::size_t b = 0; b < work.sigma_star.size(); ++b)
                worst = std::max(worst, std::fabs(work.sigma_star[b] / own.sigma_star[b] - 1.0));
            check(worst < 1e-4, std::string(weighted ? "weighted " : "") +
                                    (kind == ResampleKind::Bootstrap ? "bootstrap" : "consistency") +
                                    " replicates: the work grid gives the summary grid's sigma* (worst " +
                                    std::to_string(worst) + ")");
        }
    }
    // The error contract: a bad value is named with its index, as fields too.
    {
        Rows bad{{0.1, 1.5, 0.2, 2.0}, {}, {0, 1, 1, 0}};
        bool named = false;
        try {
            smece(bad);
        } catch (const InputError& e) {
            named = std::string(e.what()).rfind("f[1] = 1.5:", 0) == 0 && e.argument == "f" && e.index == 1 &&
                    e.value == 1.5 && e.count == 2 && e.size == 4;
        }
        check(named, "bad prediction: InputError f[1] = 1.5, 2 of 4");
        bool corrupt = false;
        try {
            Sketch::from_bytes("not a sketch, and too short to be one: forty or more bytes long, sixty-four even");
        } catch (const CorruptSketch&) {
            corrupt = true;
        }
        check(corrupt, "foreign bytes refused as a corrupt sketch");
        Sketch s(Metric::L1, 256);
        const Rows huge{{0.5, 0.5}, {1.5e308, 1.5e308}, {1, 0}};
        bool overflow = false;
        try {
            s.update(huge.inputs(0, 1), 1);
            s.update(huge.inputs(1, 2), 1);
        } catch (const InputError& e) {
            overflow = e.argument == "weights" && s.rows() == 1;
        }
        check(overflow, "a total weight that would overflow is refused and changes nothing");
    }
    std::printf("%d failure(s)\n", failures);
    return failures == 0 ? 0 : 1;
}
