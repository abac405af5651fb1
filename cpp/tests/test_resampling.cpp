// Resampling: the two builds of the lane sums agree, group smoothing equals
// the transform of scaled masses, replicates do not depend on the thread
// count or on the grid a replicate's σ* is solved on, the band is the
// replicates' order statistics, and consistency replicates of miscalibrated
// data lie below its σ*.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "answers/analysis.hpp"
#include "answers/comparison.hpp"
#include "core_rows.hpp"
#include "pass/rows.hpp"
#include "resampling/atom_columns.hpp"
#include "resampling/group_smoothing.hpp"
#include "resampling/lanes_kernel.hpp"
#include "resampling/paired.hpp"
#include "resampling/resample.hpp"
#include "smoothing/curves.hpp"
#include "smoothing/spectrum.hpp"

using namespace smoothece;
using namespace smoothece::testing;

namespace {

// Resampling's group curves: both builds add the same lanes.
TEST(lanes_kernels_alike) {
    if (!both_kernel_builds()) return;
#if defined(SMOOTHECE_HAVE_AVX2_KERNEL)
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
#endif
}

// Group smoothing: Σ_g factor_g·(group g's smoothed masses) equals the
// transform of the masses scaled by their group's factor, read off an
// output grid coarser, finer, or of another base (3·2^k against 2^k),
// with masses at both ends, and at a σ wide enough to need the images
// beyond the first reflection; and with groups that hold no node.
TEST(group_smoothing) {
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

// σ* of the shared rows and their full analysis.
struct Bootstrapped {
    Analysis full = Analysis::of_rows(shared_rows().inputs(), Metric::L1, Content::Full, 1);
    double star = full.smece(1).sigma;
    Replicates one = full.replicates(ResampleKind::Bootstrap, 64, 42, star, 64, WeightKind::Importance, false, 1);
};

// The same seed gives the same replicates on any thread count; replicates
// of calibrated data scatter around their noise floor.
TEST(bootstrap_threads) {
    Bootstrapped b;
    const Replicates two = b.full.replicates(ResampleKind::Bootstrap, 64, 42, b.star, 64, WeightKind::Importance, false, 2);
    check(b.one.sigma_star == two.sigma_star && b.one.mu.size() == two.mu.size(), "bootstrap: threads give the same replicates");
    double mean = 0.0;
    for (double s : b.one.sigma_star) mean += s / 64.0;
    check(std::fabs(mean - b.star) < 0.5 * b.star, "bootstrap replicates near sigma*");
}

// The interval rule on hand cases: replicates 1..5 (unsorted, a NaN left out) at level 0.5 have
// percentile ends q₋ = 2, q₊ = 4 ((5 − 1)·0.25 = 1 and (5 − 1)·0.75 = 3: exact order statistics).
TEST(bootstrap_interval_rule) {
    const double nan = std::nan("");
    const std::vector<double> reps{5.0, 1.0, nan, 3.0, 2.0, 4.0};
    auto is = [](std::pair<double, double> got, double low, double high) {
        return std::fabs(got.first - low) <= 1e-15 && std::fabs(got.second - high) <= 1e-15;
    };
    check(is(bootstrap_interval(3.0, reps, 0.5, false), 2.0, 4.0), "interval: symmetric percentile ends as they are");
    check(is(bootstrap_interval(2.5, reps, 0.5, false), 1.0, 4.0), "interval: 2.5 ± max(4 − 2.5, 2.5 − 2)");
    check(is(bootstrap_interval(3.0, reps, 0.5, true), std::sqrt(2.0), 4.0), "interval: squared scale, 9 ± max(16 − 9, 9 − 4)");
    check(is(bootstrap_interval(1.0, reps, 0.5, true), 0.0, 4.0), "interval: a value below q- reaches 0 (1 − 15 < 0)");
    check(is(bootstrap_interval(5.0, reps, 0.5, true), 2.0, std::sqrt(46.0)), "interval: a value above q+, 25 ± (25 − 4)");
    const std::vector<double> signed_reps{-3.0, -2.0, -1.0, 0.0, 1.0};
    check(is(bootstrap_interval(-1.0, signed_reps, 0.5, false), -2.0, 0.0), "interval: signed values are not clipped");
    const auto none = bootstrap_interval(1.0, {nan, nan}, 0.5, true);
    const auto no_value = bootstrap_interval(nan, reps, 0.5, true);
    check(std::isnan(none.first) && std::isnan(none.second) && std::isnan(no_value.first) && std::isnan(no_value.second),
          "interval: NaN without a valid replicate or value");
}

// The band of the curves: at each mesh point, the order statistics of its replicates (sorted here).
TEST(bootstrap_band) {
    Bootstrapped b;
    const Replicates& one = b.one;
    const Replicates banded =
        b.full.replicates(ResampleKind::Bootstrap, 64, 42, b.star, 64, WeightKind::Importance, false, 2, 0.9);
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
}

TEST(consistency_below_star) {
    Bootstrapped b;
    const Replicates null = b.full.replicates(ResampleKind::Consistency, 64, 42, b.star, 0, WeightKind::Importance, false, 2);
    double above = 0.0;
    for (double s : null.sigma_star) above += s >= b.star ? 1.0 : 0.0;
    check(above / 64.0 < 0.1, "consistency replicates of miscalibrated data lie below its sigma*");
}

// A replicate's σ* does not depend on the grid it is solved on: on the
// default work grid as on the summary's own grid (masses binned group by
// group; scaling coarse nodes by the group they lie in would move σ* by up
// to 4%), for calibrated data (σ* at its noise floor, many groups), weighted
// or not, bootstrap and consistency.
TEST(work_grid_sigma_star) {
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
}

// Paired units: each unit's sums are those of its rows (summed here row by
// row), every row lands in the unit of its own cells and label, and the
// units' total is the rows'.
TEST(paired_units_hold_their_rows_sums) {
    const Rows a = random_rows(3000, 21, true);
    Rows b = a;
    for (double& f : b.f) f = std::sqrt(f);
    const std::vector<Inputs> models = {a.inputs(), b.inputs()};
    const std::vector<std::int64_t> cells = {16, 32};
    const PairedUnits units = units_of_rows(models, Mapping::l1(), cells, 0);
    double weight = 0.0, residual_b = 0.0;
    bool found_all = true;
    for (std::size_t i = 0; i < a.f.size(); ++i) {
        const auto ca = static_cast<std::uint32_t>(std::min(a.f[i] * 16.0, 15.0));
        const auto cb = static_cast<std::uint32_t>(std::min(b.f[i] * 32.0, 31.0));
        bool found = false;
        for (std::int64_t u = 0; u < units.size(); ++u) {
            const auto* k = units.key.data() + u * 3;
            found = found || (k[0] == ca && k[1] == cb && k[2] == a.y[i]);
        }
        found_all = found_all && found;
        weight += a.w[i];
        residual_b += a.w[i] * (a.y[i] - b.f[i]);
    }
    check(found_all, "every row's (cells, label) is a unit");
    double unit_weight = 0.0, unit_residual_b = 0.0;
    for (std::int64_t u = 0; u < units.size(); ++u) {
        unit_weight += units.weight[static_cast<std::size_t>(u)];
        unit_residual_b += units.residual[static_cast<std::size_t>(u) * 2 + 1];
    }
    check(std::fabs(unit_weight - weight) <= 1e-9 * weight, "the units weigh what the rows weigh");
    check(std::fabs(unit_residual_b - residual_b) <= 1e-9 * weight, "model b's residual sums to the rows'");
    check(units.size() <= 2 * 16 * 32, "at most one unit per (cells, label)");
}

// A model compared with itself: both columns of every replicate agree, and
// the replicates do not depend on the thread count.
TEST(paired_replicates_of_a_model_and_itself) {
    const Rows a = random_rows(20000, 22);
    const double s = smece(a);
    const std::vector<Inputs> models = {a.inputs(), a.inputs()};
    const PairedReplicates one = paired_bootstrap_of_rows(models, Metric::L1, {s, s}, 64, 5, WeightKind::Importance, 1);
    const PairedReplicates two = paired_bootstrap_of_rows(models, Metric::L1, {s, s}, 64, 5, WeightKind::Importance, 2);
    bool same = true, spread = false;
    for (std::size_t b = 0; b < 64; ++b) {
        same = same && one.sigma_star[2 * b] == one.sigma_star[2 * b + 1];
        spread = spread || std::fabs(one.sigma_star[2 * b] - s) > 1e-4 * s;
    }
    check(same, "a model and itself get the same replicate values");
    check(spread, "the replicates vary");
    check(one.sigma_star == two.sigma_star, "the same replicates on 1 and 2 threads");
    check(one.unresolved == 0, "every replicate resolved");
}

}  // namespace

namespace {

// Atoms at grid positions x with weights w and label weights l (l ≤ w).
Atoms atoms_at(const Mapping& mapping, const std::vector<double>& x, const std::vector<double>& w,
               const std::vector<double>& l) {
    Atoms a;
    a.mapping = mapping;
    a.x = x;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double f = mapping.prediction(x[i]);
        a.by_label[0].push_back({1.0, w[i] - l[i], (w[i] - l[i]) * (w[i] - l[i]), (w[i] - l[i]) * f});
        a.by_label[1].push_back({1.0, l[i], l[i] * l[i], l[i] * f});
        a.rows += 2;
    }
    return a;
}

}  // namespace

// The columns of atoms: their sums at the read nodes are the transform of
// the atoms binned as a pass bins them (summarise_atoms, Spectrum), on the
// probability and the logit axis, with atoms at and near both ends (whose
// mirror images the transform folds back), read off the bin grid itself,
// a coarser and a finer one; μ̂ on the mesh as mu_on_mesh reads it from
// the transform's sums.
TEST(atom_columns_are_the_transform) {
    struct Case { Metric metric; std::int64_t bin, read; double sigma; };
    for (const Case c : {Case{Metric::L1, 1024, 1024, 0.02}, Case{Metric::L1, 8192, 512, 0.004},
                         Case{Metric::L1, 256, 512, 0.3}, Case{Metric::Logit, 65536, 65536, 3e-4},
                         Case{Metric::Logit, 131072, 8192, 2e-3}}) {
        const Mapping mapping = c.metric == Metric::Logit ? Mapping::logit() : Mapping::l1();
        std::vector<double> x{0.0, 3e-4, 0.2, 0.2 + 1e-3, 0.5, 0.73, 1.0 - 2e-4, 1.0};
        if (c.metric == Metric::Logit)
            x = {mapping.position(0.0), mapping.position(0.01), mapping.position(0.3), mapping.position(0.3001),
                 mapping.position(0.5), mapping.position(0.9), mapping.position(1.0)};
        std::mt19937_64 rng(21);
        std::uniform_real_distribution<double> u(0.1, 1.0);
        std::vector<double> w(x.size()), l(x.size());
        for (std::size_t i = 0; i < x.size(); ++i) {
            w[i] = u(rng);
            l[i] = w[i] * u(rng);
        }
        const Atoms atoms = atoms_at(mapping, x, w, l);
        const Summary s = summarise_atoms(atoms, Content::Full, c.bin);
        std::vector<double> masses(s.w0.size()), weight(static_cast<std::size_t>(c.read + 1)), label(weight.size());
        for (std::size_t j = 0; j < masses.size(); ++j) masses[j] = s.w0[j] + s.w1[j];
        Spectrum(masses.data(), c.bin).evaluate(c.sigma, weight.data(), nullptr, c.read);
        Spectrum(s.w1.data(), c.bin).evaluate(c.sigma, label.data(), nullptr, c.read);
        const std::int64_t mesh = std::min<std::int64_t>(512, c.read);
        const AtomColumns columns(x, c.bin, c.sigma, c.read, mapping, mesh);
        const std::vector<double> by_columns = columns.sums(w.data()), label_columns = columns.sums(l.data());
        const double top = *std::max_element(weight.begin(), weight.end());
        double worst = 0.0;
        for (std::size_t j = 0; j < weight.size(); ++j)
            worst = std::max({worst, std::fabs(by_columns[j] - weight[j]), std::fabs(label_columns[j] - label[j])});
        const auto points = static_cast<std::size_t>(mesh_points(mapping, c.read, mesh));
        std::vector<double> mu_fft(points), mu_dense(points), mu_columns(points);
        mu_on_mesh(weight, label, mapping, mesh, mu_fft.data(), 1);
        mu_on_mesh(weight, label, mapping, mesh, mu_dense.data(), 1, 1e4 * top);  // NaN below 1e-8 of the peak
        columns.mu(w.data(), l.data(), mu_columns.data(), 1);
        double mu_worst = 0.0;
        std::size_t finite_fft = 0, finite_columns = 0, dense = 0;
        for (std::size_t m = 0; m < points; ++m) {
            finite_fft += !std::isnan(mu_fft[m]);
            finite_columns += !std::isnan(mu_columns[m]);
            dense += !std::isnan(mu_dense[m]);
            if (!std::isnan(mu_dense[m])) mu_worst = std::max(mu_worst, std::fabs(mu_dense[m] - mu_columns[m]));
        }
        const std::string what = std::string(metric_name(c.metric)) + " bin " + std::to_string(c.bin) + " read " +
                                 std::to_string(c.read) + " sigma " + std::to_string(c.sigma);
        check(worst <= 1e-12 * top, what + ": column sums are the transform's (worst " + std::to_string(worst / top) + " of the peak)");
        // Where the density is near its floor (1e-12 of the peak) μ̂ rests on
        // the transform's rounding: compared where it is above 1e-8 of it
        // (NaN at the same points but for a few near the floor).
        check(!(mu_worst > 1e-7) && dense > 0 && finite_columns + 2 >= finite_fft && finite_fft + 2 >= finite_columns,
              what + ": the same mu on the mesh (worst " + std::to_string(mu_worst) + " at " + std::to_string(dense) +
                  " points)");
    }
}

// μ̂ of the columns sums the label only at the nodes the mesh reads: to the
// bit what mu_on_mesh gives from the sums at every node (sums()), with the
// weight's sums made per call or once (smoothed_weight), on both axes, with
// atoms at the ends, a weightless atom and a grid coarser than the mesh.
TEST(atom_columns_mu_reads_only_the_mesh) {
    struct Case { Metric metric; std::int64_t bin, read, mesh; double sigma; };
    for (const Case c : {Case{Metric::L1, 1024, 1024, 512, 0.02}, Case{Metric::L1, 256, 256, 512, 0.3},
                         Case{Metric::L1, 8192, 512, 512, 0.004}, Case{Metric::Logit, 65536, 65536, 512, 3e-4},
                         Case{Metric::Logit, 131072, 16384, 512, 2e-3}, Case{Metric::Logit, 4096, 4096, 100, 0.05}}) {
        const Mapping mapping = c.metric == Metric::Logit ? Mapping::logit() : Mapping::l1();
        std::vector<double> several{0.0, 3e-4, 0.2, 0.2 + 1e-3, 0.5, 0.73, 1.0 - 2e-4, 1.0};
        if (c.metric == Metric::Logit)
            several = {mapping.position(0.0), mapping.position(0.01), mapping.position(0.3), mapping.position(0.3001),
                       mapping.position(0.5), mapping.position(0.9), mapping.position(1.0)};
        // Several atoms (one weightless, one without label), and one alone
        // (a base rate: its column reaches a few of the mesh's nodes).
        for (const std::vector<double>& x : {several, std::vector<double>{mapping.position(0.37)}}) {
            std::mt19937_64 rng(23);
            std::uniform_real_distribution<double> u(0.1, 1.0);
            std::vector<double> w(x.size()), l(x.size());
            for (std::size_t i = 0; i < x.size(); ++i) {
                w[i] = u(rng);
                l[i] = w[i] * u(rng);
            }
            if (x.size() > 4) {
                w[2] = l[2] = 0.0;
                l[4] = 0.0;
            }
            const AtomColumns columns(x, c.bin, c.sigma, c.read, mapping, c.mesh);
            const std::vector<double> weight = columns.sums(w.data()), label = columns.sums(l.data());
            const auto points = static_cast<std::size_t>(mesh_points(mapping, c.read, c.mesh));
            std::vector<double> expected(points), per_call(points), once(points);
            mu_on_mesh(weight, label, mapping, c.mesh, expected.data(), 1);
            columns.mu(w.data(), l.data(), per_call.data(), 1);
            columns.mu(columns.smoothed_weight(w.data()), l.data(), once.data(), 1);
            bool same = true;
            std::size_t finite = 0;
            for (std::size_t m = 0; m < points; ++m) {
                for (const double v : {per_call[m], once[m]})
                    same &= std::isnan(v) ? std::isnan(expected[m]) : v == expected[m];
                finite += !std::isnan(expected[m]);
            }
            check(same && finite >= (x.size() > 1 ? 50u : 1u),
                  std::string(metric_name(c.metric)) + " read " + std::to_string(c.read) + " mesh " +
                      std::to_string(c.mesh) + ", " + std::to_string(x.size()) + " atoms: mu from the mesh's nodes is mu from all (" +
                      std::to_string(finite) + " of " + std::to_string(points) + " finite)");
        }
    }
}

// Replicates of a summary from its atoms draw as the summary's own replicates
// do: with every atom's rows in the middle of a resampling cell (where the
// grid's binning keeps a row's mass inside its cell) the two routes give the
// same σ* to the grid's accuracy, replicate by replicate, for both kinds and
// both metrics; on 1 and 2 threads alike; no replicate below a grid.
TEST(atoms_draw_as_their_summary) {
    for (const Metric metric : {Metric::L1, Metric::Logit}) {
        const Mapping mapping = metric == Metric::Logit ? Mapping::logit() : Mapping::l1();
        const std::int64_t n = 20000;
        const std::int64_t g = first_intervals(n, mapping, Content::Full);
        // Eleven positions spread over the data's range, each at 3.5 intervals
        // into a cell of 8 (a row's four nodes j − 1 … j + 2 stay in it).
        const double lo = metric == Metric::Logit ? mapping.position(0.02) : 0.02;
        const double hi = metric == Metric::Logit ? mapping.position(0.98) : 0.98;
        std::vector<double> f_values;
        for (int k = 0; k <= 10; ++k) {
            const double x = lo + (hi - lo) * k / 10.0;
            const double cell = std::floor(x * static_cast<double>(g) / 8.0);
            f_values.push_back(mapping.prediction((8.0 * cell + 3.5) / static_cast<double>(g)));
        }
        Rows rows;
        std::mt19937_64 rng(33);
        std::uniform_real_distribution<double> u;
        for (std::int64_t i = 0; i < n; ++i) {
            const double f = f_values[static_cast<std::size_t>(i % 11)];
            rows.f.push_back(f);
            rows.y.push_back(u(rng) < f ? 1 : 0);
        }
        Analysis analysis = Analysis::of_rows(rows.inputs(), metric, Content::Full, 1);
        const Summary& s = analysis.summary();
        const double star = analysis.smece(1).sigma / s.mapping.span;
        const std::shared_ptr<RowsBehind> behind = rows_of_arrays(rows.inputs(), s.mapping, s.weight_exp);
        const Atoms* atoms = behind->few_atoms(64, 1);
        check(atoms != nullptr && atoms->size() == 11 && s.intervals == g, std::string(metric_name(metric)) + ": eleven atoms");
        if (!atoms) continue;
        for (const ResampleKind kind : {ResampleKind::Bootstrap, ResampleKind::Consistency}) {
            ResampleRequest req;
            req.kind = kind;
            req.count = 40;
            req.seed = 9;
            req.hint = kind == ResampleKind::Bootstrap ? star : 0.0;
            req.band_sigma = std::max(star, s.min_sigma());
            req.threads = 1;
            const Replicates grid = resample(s, req);
            const Replicates exact = resample(*atoms, s, req);
            req.threads = 2;
            const Replicates two = resample(*atoms, s, req);
            double worst = 0.0;
            for (std::size_t b = 0; b < grid.sigma_star.size(); ++b)
                worst = std::max(worst, std::fabs(exact.sigma_star[b] / grid.sigma_star[b] - 1.0));
            const std::string what = std::string(metric_name(metric)) + " " +
                                     (kind == ResampleKind::Bootstrap ? "bootstrap" : "consistency");
            check(worst < 2e-4, what + ": replicates from the atoms are the grid's (worst " + std::to_string(worst) + ")");
            check(two.sigma_star == exact.sigma_star && exact.unresolved == 0, what + ": the same on 2 threads, all resolved");
        }
    }
}
