// The passes over the rows: the two builds of the kernels bin alike, the
// full pass agrees with the residual pass, few rows go straight onto the
// nodes with the cells' weights, and a bad row is named.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "core_rows.hpp"
#include "pass/bin_kernel.hpp"
#include "pass/rows.hpp"
#include "summary/blocked.hpp"
#include "pass/rows.hpp"
#include "runtime/errors.hpp"

using namespace smoothece;
using namespace smoothece::testing;

namespace {

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

// The AVX2 kernel (four rows a step, hand-written) bins exactly as the
// baseline one: every kind of cell, both metrics, weighted or not,
// predictions as float64 or float32, labels as bytes, doubles or a strided
// view, row counts that are not multiples of four, predictions at 0 and 1
// and clamped, and bad rows refused alike.
TEST(kernels_bin_alike) {
    if (!both_kernel_builds()) return;
#if defined(SMOOTHECE_HAVE_AVX2_KERNEL)
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
#endif
}

// The full pass's node masses (for l1 the moments of w·f follow from those
// of w) give the residual that the residual pass sums directly.
TEST(full_pass_residual) {
    for (bool weighted : {false, true}) {
        const Rows r = random_rows(200000, 5, weighted);
        PassOptions opts;
        opts.mapping = Mapping::l1();
        opts.intervals = 4096;
        opts.threads = 2;
        opts.content = Content::Residual;
        const Summary direct = summarise_rows(r.inputs(), opts);
        opts.content = Content::Full;
        const Summary full = summarise_rows(r.inputs(), opts);
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
}

// Few rows for the grid are spread straight onto the nodes (no cells): each
// node gets the rows' cubic Lagrange weights (basis at nodes −1, 0, 1, 2 of
// the row's cell; reflected at 0 and 1), summed here row by row, and the
// same rows eight times over (the cell path) give eight times the masses.
// Rows at 0, 1 and in both end cells exercise the reflection.
TEST(rows_onto_nodes) {
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
        const Summary spread = summarise_rows(r.inputs(), opts);
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
        const Summary cells = summarise_rows(eight.inputs(), opts);
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
}

// The error contract: a bad value is named with its index, as fields too.
TEST(bad_prediction_named) {
    Rows bad{{0.1, 1.5, 0.2, 2.0}, {}, {0, 1, 1, 0}};
    bool named = false;
    try {
        smece(bad);
    } catch (const InputError& e) {
        named = std::string(e.what()).rfind("f[1] = 1.5:", 0) == 0 && e.argument == "f" && e.index == 1 &&
                e.value == 1.5 && e.count == 2 && e.size == 4;
    }
    check(named, "bad prediction: InputError f[1] = 1.5, 2 of 4");
}

}  // namespace

// The blocked grid (a sketch's): rows spread onto blocks give the grid
// pass's sums (to rounding), on both metrics, with and without weights; a
// round trip through blocks and merges in either order keep them; only the
// blocks rows reach are held.
TEST(blocked_summary_matches_the_grid_pass) {
    auto worst = [](const Summary& a, const Summary& b) {
        double scale = 0.0, diff = 0.0;
        const std::vector<double>* pa[] = {&a.w0, &a.w1, &a.f0, &a.f1, &a.cells.rows, &a.cells.weight,
                                           &a.cells.weight_sq, &a.cells.weight_f, &a.residual};
        const std::vector<double>* pb[] = {&b.w0, &b.w1, &b.f0, &b.f1, &b.cells.rows, &b.cells.weight,
                                           &b.cells.weight_sq, &b.cells.weight_f, &b.residual};
        for (int k = 0; k < 9; ++k)
            for (std::size_t i = 0; i < pa[k]->size(); ++i) {
                scale = std::max(scale, std::fabs((*pa[k])[i]));
                diff = std::max(diff, std::fabs((*pa[k])[i] - (*pb[k])[i]));
            }
        return diff / scale;
    };
    for (const Metric metric : {Metric::L1, Metric::Logit}) {
        for (const bool weighted : {false, true}) {
            Rows rows = random_rows(20000, 31, weighted);
            for (std::size_t i = 0; i < 300; ++i) rows.f[i] = i % 2 ? 1.0 : 0.0;  // piled at both ends
            const Mapping mapping = metric == Metric::Logit ? Mapping::logit() : Mapping::l1();
            const std::int64_t g = 1 << 16;
            const std::string what = std::string(metric_name(metric)) + (weighted ? ", weighted" : "");
            const Summary grid = summarise_rows(rows.inputs(), PassOptions{mapping, Content::Full, g, 1, false});
            const BlockedSummary blocks = summarise_rows_blocked(rows.inputs(), mapping, g);
            const Summary spread = blocks.dense();
            check(worst(grid, spread) < 1e-12 && spread.positive_rows == grid.positive_rows &&
                      spread.rows == grid.rows && std::fabs(spread.weight / grid.weight - 1.0) < 1e-12,
                  "rows spread onto blocks sum as the grid pass does (" + what + ")");
            check(worst(BlockedSummary(grid).dense(), grid) == 0.0, "a summary through blocks is itself (" + what + ")");
            BlockedSummary first = summarise_rows_blocked(rows.inputs(0, 7000), mapping, g);
            BlockedSummary second = summarise_rows_blocked(rows.inputs(7000), mapping, g);
            BlockedSummary copy = first;  // shares its blocks, written apart
            first.merge(second);
            second.merge(copy);
            check(worst(first.dense(), grid) < 1e-12 && worst(second.dense(), grid) < 1e-12 &&
                      worst(copy.dense(), summarise_rows_blocked(rows.inputs(0, 7000), mapping, g).dense()) == 0.0,
                  "blocks merge in either order, a copy unchanged (" + what + ")");
            if (metric == Metric::Logit)  // the rows lie on a third of the logit axis, and at its two piles
                check(blocks.held_blocks() < blocks.blocks() / 2, "only the blocks rows reach are held (" +
                                                                      std::to_string(blocks.held_blocks()) + " of " +
                                                                      std::to_string(blocks.blocks()) + ")");
        }
    }
}

// The few-atoms pass keys rows by prediction (on the logit axis too, whose
// position it takes once an atom): predictions the clamp gives one position
// are one atom, positions strictly increase, and each atom holds its rows'
// own Σw·f; the same with a thread per share of rows.
TEST(atoms_of_clamped_predictions_are_one_position) {
    Rows rows;
    const double values[] = {0.0, 1e-15, 3e-13, 1e-12, 0.25, 1.0 - 1e-13, 1.0};
    for (int k = 0; k < 700; ++k) {
        rows.f.push_back(values[k % 7]);
        rows.y.push_back(static_cast<std::uint8_t>(k % 3 == 0));
        rows.w.push_back(1.0 + 0.125 * (k % 5));
    }
    for (const bool weighted : {false, true}) {
        Rows r = rows;
        if (!weighted) r.w.clear();
        for (const Metric metric : {Metric::Logit, Metric::L1}) {
            const Mapping mapping = metric == Metric::Logit ? Mapping::logit() : Mapping::l1();
            const std::optional<Atoms> atoms = atoms_of_rows(r.inputs(), mapping, 0, 64, 1);
            const std::string what = std::string(metric_name(metric)) + (weighted ? ", weighted" : "");
            check(atoms.has_value(), "few atoms found (" + what + ")");
            // logit: {≤ 1e-12}, 0.25, {≥ 1 − 1e-12}; l1: every value its own position.
            check(atoms->size() == (metric == Metric::Logit ? 3u : 7u), "clamped predictions share an atom (" + what + ")");
            bool increasing = true;
            for (std::size_t i = 1; i < atoms->size(); ++i) increasing = increasing && atoms->x[i] > atoms->x[i - 1];
            check(increasing, "atom positions strictly increase (" + what + ")");
            double rows_sum = 0.0, weight_f = 0.0, expected_f = 0.0;
            for (std::size_t i = 0; i < atoms->size(); ++i)
                for (int y = 0; y < 2; ++y) {
                    rows_sum += atoms->by_label[y][i].rows;
                    weight_f += atoms->by_label[y][i].weight_f;
                }
            for (std::size_t k = 0; k < r.f.size(); ++k) expected_f += (weighted ? r.w[k] : 1.0) * r.f[k];
            check(rows_sum == 700.0 && std::fabs(weight_f - expected_f) <= 1e-12 * expected_f,
                  "every row counted once, with its own prediction (" + what + ")");
        }
    }
}
