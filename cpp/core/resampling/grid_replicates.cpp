// Replicates of a grid summary: its resampling cells joined into groups, a
// factor drawn per group, and each replicate's masses, σ* and curves from
// the groups' scaled masses.
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>

#include "resampling/draws.hpp"
#include "resampling/group_smoothing.hpp"
#include "resampling/resample.hpp"
#include "resampling/replicate_solve.hpp"
#include "resampling/resample_groups.hpp"
#include "runtime/pool.hpp"
#include "runtime/random.hpp"
#include "smoothing/curves.hpp"
#include "smoothing/fixpoint.hpp"
#include "smoothing/integrate_abs.hpp"
#include "smoothing/spectrum.hpp"

namespace smoothece {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// A replicate's masses lie on a work grid of kWorkNodesPerSigma nodes per σ
// at the hint (or the band σ, if smaller), binned group by group from the
// summary's own grid (Profiles, quintic weights): its σ* moves by ≤ 1.2e-5
// against the summary's own grid at 3 nodes per σ, ≤ 1.0e-4 at 2 (max over
// 200 replicates of calibrated, crossing, weighted and logit data, n = 1e5
// and 1e6, bootstrap and consistency; cubic weights gave 1.6e-4 at 3 and
// 3.2e-5 at 5). So a replicate whose σ* lies below the hint stays on the
// work grid down to kMinWorkNodesPerSigma nodes per σ (2/3 of the hint),
// then moves to the summary's grid. smECEσ is read off at
// kEvalNodesPerSigma nodes per σ: the nodes are exact samples at any spacing
// (Spectrum::evaluate), and the roots of r between them, located on the
// cubic Hermite interpolant of its integral, move replicate σ* by ≤ 2.5e-5
// against 4 nodes per σ (calibrated, crossing and weighted data, n =
// 1e4–1e6, both metrics): within kReplicateTolerance. The curves' base keeps
// kCurveNodesPerSigma at the band σ. Below kMinNodesPerSigma nodes per σ of
// the summary's grid a σ* is reported at that bound.
constexpr double kWorkNodesPerSigma = 3.0;
constexpr double kMinWorkNodesPerSigma = 2.0;
constexpr double kCurveNodesPerSigma = 8.0;
constexpr double kEvalNodesPerSigma = 3.0;
constexpr double kMinNodesPerSigma = 4.0;

// The smallest grid size 2^k or 3·2^k (cheap for FFTW) at least v, within
// [lo, hi] (hi a power of two).
std::int64_t grid_at_least(double v, std::int64_t lo, std::int64_t hi) {
    std::int64_t g = 16;
    while (g < hi && (static_cast<double>(g) < v || g < lo)) {
        const std::int64_t three = g / 2 * 3;  // 3·2^(k−1) lies between 2^k and 2^(k+1)
        if (three >= lo && static_cast<double>(three) >= v) return three;
        g *= 2;
    }
    return std::min(g, hi);
}

// --- The replicate of a grid summary ------------------------------------------------------

// The node arrays a replicate scales, on one grid, and the group of each node.
// Arrays on a coarser grid than the summary's are its arrays rebinned (as
// restricted() rebins them), each only where it is used.
enum class BaseUse : std::uint8_t { Residual, Curves };  // σ* (residual profiles) or μ̂ curves

struct Base {
    std::int64_t intervals = 0;
    // bootstrap: w0, w1 and, for the residual, f0 and w1 − f1; consistency: f, w
    std::vector<double> w0, w1, f0, w1_minus_f1, f, w;
    std::vector<std::int32_t> group;

    Base(const Summary& full, std::int64_t g, ResampleKind kind, BaseUse use, const ResampleGroups& groups)
        : intervals(g), group(groups.of_nodes(g)) {
        // A summary array on this grid: itself, or rebinned into `rebinned`.
        auto on_grid = [&](const std::vector<double>& a, std::vector<double>& rebinned) -> const std::vector<double>& {
            if (g == full.intervals) return a;
            rebinned = rebin_nodes(a, g);
            return rebinned;
        };
        std::vector<double> scratch[4];
        if (kind == ResampleKind::Bootstrap) {
            w0 = on_grid(full.w0, scratch[0]);
            w1 = on_grid(full.w1, scratch[1]);
            if (use == BaseUse::Curves) return;  // a bootstrap curve reads the weights alone
            f0 = on_grid(full.f0, scratch[2]);
            const std::vector<double>& f1 = on_grid(full.f1, scratch[3]);
            w1_minus_f1.resize(w1.size());
            for (std::size_t j = 0; j < w1.size(); ++j) w1_minus_f1[j] = w1[j] - f1[j];
        } else {
            const std::vector<double>& f_zero = on_grid(full.f0, scratch[0]);
            const std::vector<double>& f_one = on_grid(full.f1, scratch[1]);
            const std::vector<double>& w_zero = on_grid(full.w0, scratch[2]);
            const std::vector<double>& w_one = on_grid(full.w1, scratch[3]);
            f.resize(f_zero.size());
            w.resize(w_zero.size());
            for (std::size_t j = 0; j < f.size(); ++j) {
                f[j] = f_zero[j] + f_one[j];
                w[j] = w_zero[j] + w_one[j];
            }
        }
    }
};

// The weights of the nodes k − 2 … k + 3 (k = ⌊x⌋) that a point mass at
// x = k + λ, λ ∈ [0, 1), gets from the adjoint of quintic Lagrange
// interpolation: they keep its moments to order 5, so a grid of h carries
// the mass's smoothing with an error O((h/σ)⁶).
std::array<double, 6> quintic_weights(double lam) {
    // L_i(λ) = Π_{m≠i} (λ − m)/(i − m) over the nodes m = −2 … 3: prefix and
    // suffix products of the six factors, over the denominators' products.
    constexpr double kDenominator[6] = {-120.0, 24.0, -12.0, 12.0, -24.0, 120.0};
    double factor[6], prefix[6], suffix[6];
    for (int m = 0; m < 6; ++m) factor[m] = lam - static_cast<double>(m - 2);
    prefix[0] = 1.0;
    suffix[5] = 1.0;
    for (int m = 1; m < 6; ++m) prefix[m] = prefix[m - 1] * factor[m - 1];
    for (int m = 4; m >= 0; --m) suffix[m] = suffix[m + 1] * factor[m + 1];
    std::array<double, 6> w{};
    for (int i = 0; i < 6; ++i) w[static_cast<std::size_t>(i)] = prefix[i] * suffix[i] / kDenominator[i];
    return w;
}

// What a replicate scales, group by group, on the grid its σ* is solved on:
// each group's residual masses on the summary's own grid (where a node's
// group is that of the resampling cell it lies in), each node binned onto
// this grid as a point mass with quintic weights (reflected at 0 and 1, as
// spread_cubic reflects). Binning is linear, so Σ_g factor_g·profile_g is
// the binning of the scaled masses of the summary's grid: a coarse node near
// a group boundary carries each group's part with that group's factor, where
// scaling coarse nodes by the group they lie in would hand a neighbour's mass
// the wrong factor (a node's width of it: on grids of 8 nodes per σ, 1/8 to
// 1/4 of a group, which moves replicate σ* by up to 4% with the grid).
// Arrays: bootstrap w1 − f1 and f0; consistency f.
//
// Stored node by node: node k takes the parts of the groups group[k] …
// group[k] + width − 1 (a run: the groups' windows move monotonically along
// the grid), values k·width … (k + 1)·width − 1, so that a replicate sums
// each node's parts in registers and writes it once. (Group by group, the
// overlapping windows' read-modify-writes of each node would miss store
// forwarding: a tenth of a consistency replicate.)
struct Profiles {
    std::int64_t intervals = 0, width = 0;
    std::int64_t first_reached = 0, last_reached = -1;  // the nodes some group reaches (elsewhere 0)
    std::vector<std::int32_t> group;  // per node: the first of its run of groups
    std::vector<double> values[2];

    Profiles(const Base& fine, std::int64_t coarse, ResampleKind kind, std::int64_t groups) : intervals(coarse) {
        const bool bootstrap = kind == ResampleKind::Bootstrap;
        const std::vector<double>* arrays[2] = {bootstrap ? &fine.w1_minus_f1 : &fine.f, bootstrap ? &fine.f0 : nullptr};
        const int count = bootstrap ? 2 : 1;
        const std::int64_t g = fine.intervals;
        // Fine node i lies in coarse cell q at fraction λ, as in rebin_nodes.
        auto cell_of = [&](std::int64_t i, double& lam) {
            const std::int64_t whole = i * coarse;
            const std::int64_t q = std::min(whole / g, coarse - 1);
            lam = static_cast<double>(whole - q * g) / static_cast<double>(g);
            return q;
        };
        // Each group's window of coarse nodes [lo, hi] and its values there.
        std::vector<std::int64_t> lo_of(static_cast<std::size_t>(groups)), hi_of(lo_of.size()), at_of(lo_of.size() + 1, 0);
        std::vector<double> windows[2];
        std::vector<double> scratch[2];
        for (int a = 0; a < count; ++a) scratch[a].assign(static_cast<std::size_t>(coarse + 1), 0.0);
        std::int64_t end = 0;  // the groups' nodes are runs, in order
        for (std::int64_t grp = 0; grp < groups; ++grp) {
            const std::int64_t begin = end;
            while (end <= g && fine.group[static_cast<std::size_t>(end)] == grp) ++end;
            // The group's coarse nodes: its own on the same grid, else those its
            // nodes' masses reach (q − 2 … q + 3, reflected into [0, coarse]).
            double lam;
            std::int64_t lo = begin, hi = end - 1;
            if (coarse != g && begin < end) {
                lo = std::max<std::int64_t>(0, cell_of(begin, lam) - 2);
                hi = std::min(coarse, cell_of(end - 1, lam) + 3);
            }
            for (std::int64_t i = begin; i < end; ++i) {
                const auto at = static_cast<std::size_t>(i);
                if (coarse == g) {
                    for (int a = 0; a < count; ++a) scratch[a][at] = (*arrays[a])[at];
                    continue;
                }
                const std::int64_t q = cell_of(i, lam);
                const std::array<double, 6> w = quintic_weights(lam);
                for (int a = 0; a < count; ++a) {
                    const double v = (*arrays[a])[at];
                    for (std::size_t k = 0; k < 6; ++k)
                        scratch[a][static_cast<std::size_t>(reflected_node(q - 2 + static_cast<std::int64_t>(k), coarse))] += v * w[k];
                }
            }
            const auto u = static_cast<std::size_t>(grp);
            if (begin == end) {  // no nodes: an empty window where the last one starts, keeping them in order
                lo = u > 0 ? lo_of[u - 1] : 0;
                hi = lo - 1;
            }
            lo_of[u] = lo;
            hi_of[u] = hi;
            at_of[u + 1] = at_of[u] + (hi_of[u] - lo + 1);
            for (int a = 0; a < count; ++a) {
                for (std::int64_t k = lo; k <= hi; ++k) {
                    windows[a].push_back(scratch[a][static_cast<std::size_t>(k)]);
                    scratch[a][static_cast<std::size_t>(k)] = 0.0;
                }
            }
        }
        // Node k's groups: from the first whose window reaches k to the last
        // that starts at or before it, padded to a run of `width` groups (the
        // most any node has; moved back at the last group), with 0 where a
        // group misses k: every node sums the same number of parts, so the
        // replicate's loop over them is always predicted.
        const auto nodes = static_cast<std::size_t>(coarse + 1);
        const auto group_count = lo_of.size();
        std::vector<std::size_t> reach(nodes);
        std::size_t first_reaching = 0;
        for (std::size_t k = 0; k < nodes; ++k) {
            const auto node = static_cast<std::int64_t>(k);
            while (first_reaching < group_count && hi_of[first_reaching] < node) ++first_reaching;
            std::size_t end_group = first_reaching;
            while (end_group < group_count && lo_of[end_group] <= node) ++end_group;
            reach[k] = first_reaching;
            width = std::max(width, static_cast<std::int64_t>(end_group - first_reaching));
        }
        const auto w = static_cast<std::size_t>(width);
        group.resize(nodes);
        for (std::size_t k = 0; k < nodes; ++k)
            group[k] = static_cast<std::int32_t>(std::min(reach[k], group_count - std::min(w, group_count)));
        for (int a = 0; a < count; ++a) values[a].assign(nodes * w, 0.0);
        for (std::size_t grp = 0; grp < group_count; ++grp) {
            for (std::int64_t k = lo_of[grp]; k <= hi_of[grp]; ++k) {
                const auto node = static_cast<std::size_t>(k);
                const auto slot = node * w + (grp - static_cast<std::size_t>(group[node]));
                for (int a = 0; a < count; ++a)
                    values[a][slot] = windows[a][static_cast<std::size_t>(at_of[grp] + (k - lo_of[grp]))];
            }
        }
        // The nodes that carry mass: every group has nodes, but most may hold no rows.
        first_reached = coarse + 1;
        for (std::size_t k = 0; k < nodes; ++k)
            for (std::size_t i = 0; i < w; ++i)
                for (int a = 0; a < count; ++a)
                    if (values[a][k * w + i] != 0.0) {
                        first_reached = std::min(first_reached, static_cast<std::int64_t>(k));
                        last_reached = static_cast<std::int64_t>(k);
                    }
    }
};

// A bootstrap replicate's weight and label masses on nodes first … first +
// intervals of the base's grid into [0 … intervals] (for its curves, where
// group sums would cost more than transforms).
void replicate_weights(const Base& base, const ReplicateDraw& d, std::int64_t first, std::int64_t intervals,
                       std::vector<double>& weight, std::vector<double>& label) {
    const auto nodes = static_cast<std::size_t>(intervals + 1), at = static_cast<std::size_t>(first);
    weight.resize(nodes);
    label.resize(nodes);
    for (std::size_t j = 0; j < nodes; ++j) {
        const auto grp = static_cast<std::size_t>(base.group[at + j]);
        label[j] = d.s1[grp] * base.w1[at + j];
        weight[j] = d.s0[grp] * base.w0[at + j] + label[j];
    }
}

// The replicate's residual masses on nodes first … first + intervals of the
// profiles' grid into residual[0 … intervals]: each node's parts summed in
// group order.
void replicate_residual(const Profiles& p, const ReplicateDraw& d, ResampleKind kind, std::int64_t first,
                        std::int64_t intervals, std::vector<double>& residual) {
    const auto nodes = static_cast<std::size_t>(intervals + 1), width = static_cast<std::size_t>(p.width);
    residual.resize(nodes);
    const std::int32_t* group = p.group.data() + first;
    const double* v0 = p.values[0].data() + first * p.width;
    const double* v1 = p.values[1].empty() ? nullptr : p.values[1].data() + first * p.width;
    const double *s0 = d.s0.data(), *s1 = d.s1.data();
    // Four nodes at a time: four independent sums (one node's is a chain of
    // dependent additions), each in group order.
    auto sum_nodes = [&](auto part) {
        std::size_t k = 0;
        for (; k + 4 <= nodes; k += 4) {
            double sum[4] = {0.0, 0.0, 0.0, 0.0};
            for (std::size_t i = 0; i < width; ++i)
                for (std::size_t j = 0; j < 4; ++j) sum[j] += part(static_cast<std::size_t>(group[k + j]) + i, (k + j) * width + i);
            for (std::size_t j = 0; j < 4; ++j) residual[k + j] = sum[j];
        }
        for (; k < nodes; ++k) {
            double sum = 0.0;
            for (std::size_t i = 0; i < width; ++i) sum += part(static_cast<std::size_t>(group[k]) + i, k * width + i);
            residual[k] = sum;
        }
    };
    if (kind == ResampleKind::Bootstrap) sum_nodes([&](std::size_t g, std::size_t at) { return s1[g] * v0[at] - s0[g] * v1[at]; });
    else sum_nodes([&](std::size_t g, std::size_t at) { return (s1[g] - 1.0) * v0[at]; });
}

// The smoothed weight and label (Σw·f) masses of a consistency base at the
// band σ, read off the band's grid: the part of every replicate's curves
// that does not change.
struct FixedCurves {
    std::vector<double> weight, label;
};

FixedCurves fixed_curves(const Base& base, double sigma, std::int64_t out_intervals) {
    FixedCurves c;
    c.weight.resize(static_cast<std::size_t>(out_intervals + 1));
    c.label.resize(c.weight.size());
    Spectrum(base.w.data(), base.intervals).evaluate(sigma, c.weight.data(), nullptr, out_intervals);
    Spectrum(base.f.data(), base.intervals).evaluate(sigma, c.label.data(), nullptr, out_intervals);
    return c;
}

// A stage's replicates smooth the window of the work grid their residual
// reaches (window_of, spectrum.hpp); smECEσ is then read off the window's own
// nodes (kEvalNodesPerSigma per σ, placed elsewhere than on the whole axis:
// within that read-off's accuracy, tests/test_replicate_windows.py). A window
// is what the logit axis needs (75 units, of which calibrated data at 1e5
// rows reaches 13: each replicate's transforms and read-offs 5× shorter). A
// σ above the window's sigma_max is smoothed on the whole work grid.
std::atomic<bool> windows_enabled{true};
// A stage's window serves σ up to this many times the larger of the hint and the band σ.
constexpr double kWindowSigmas = 4.0;

// window_of, or the whole grid where the test hook turned windows off.
GridWindow replicate_window(std::int64_t g, std::int64_t first, std::int64_t last, double sigma_max,
                            std::int64_t band_out) {
    if (!windows_enabled.load(std::memory_order_relaxed)) return GridWindow::whole_grid(g, sigma_max);
    return window_of(g, first, last, sigma_max, band_out);
}

}  // namespace

bool set_replicate_windows(bool enabled) { return windows_enabled.exchange(enabled); }

double replicate_limit(const Summary& full) { return kMinNodesPerSigma / static_cast<double>(full.intervals); }

double pilot_hint(const Summary& full, const ResampleRequest& req) {
    const double floor = 0.3 / std::cbrt(std::max(1.0, static_cast<double>(full.positive_rows))) / full.mapping.span;
    return std::max(req.hint > 0.0 ? req.hint : floor, replicate_limit(full));
}

std::int64_t band_read_intervals(const Summary& full, const ResampleRequest& req) {
    const std::int64_t band = std::min(full.intervals, intervals_for_sigma(req.band_sigma));
    const std::int64_t mesh = std::max<std::int64_t>(1, req.mesh_intervals);
    return full.mapping.is_logit() ? std::max(mesh, std::min(band, intervals_for_sigma(req.band_sigma * 2.0)))
                                   : std::min(mesh, band);
}

// smECEσ of one replicate's residual spectrum, read off a grid with
// kEvalNodesPerSigma nodes per σ.
double replicate_smece(const Spectrum& spectrum, double sigma, double total, std::vector<double>& r,
                       std::vector<double>& F) {
    const std::int64_t g = read_intervals(kEvalNodesPerSigma / sigma, kMaxIntervals);
    r.resize(static_cast<std::size_t>(g + 1));
    F.resize(static_cast<std::size_t>(g + 1));
    spectrum.evaluate(sigma, r.data(), F.data(), g);
    return integrate_abs(r.data(), F.data(), 0, g, g) / total;
}

namespace {

struct Plan {
    const Summary* full = nullptr;
    ResampleRequest request;
    double hint = 0.0, slope = kNaN;  // slope: d smece/dσ at the hint, once the pilot has it
    std::int64_t band = 0;      // the grid of the curves (as in curves_at)
    std::int64_t band_out = 0;  // the grid the band is read off (the mesh; for logit a multiple of it)
};

// What the replicates of one stage share: their resampling groups, the work
// grid's base, the summary's own grid's base (for σ* below the work grid's
// reach) and, for curves, on the base c: the groups' smoothed weights by
// label (bootstrap, where group sums are the cheaper way) or the curves'
// fixed part (consistency).
struct Stage {
    const ResampleGroups& groups;
    const Profiles& work;
    const Profiles& fine;
    const Base& curve_base;
    GridWindow window;        // of the work grid
    GridWindow curve_window;  // of the curves' base (bootstrap)
    bool group_curves = false;
    GroupSmoothing curves;
    FixedCurves fixed;

    // replicates: how many will run on this stage.
    Stage(const Plan& plan, const ResampleGroups& g, const Profiles& w, const Profiles& f, const Base& c, std::int64_t replicates)
        : groups(g), work(w), fine(f), curve_base(c) {
        const ResampleRequest& req = plan.request;
        // Replicate σ* lie about the hint (a few times it at most, but for
        // models far from calibration), and the band σ is read too.
        const bool band = req.kind == ResampleKind::Consistency && req.mesh_intervals > 0;
        window = replicate_window(w.intervals, w.first_reached, w.last_reached,
                                  kWindowSigmas * std::max(plan.hint, req.band_sigma), band ? plan.band_out : 0);
        if (req.mesh_intervals == 0) return;
        if (req.kind == ResampleKind::Consistency) {
            fixed = fixed_curves(c, req.band_sigma, plan.band_out);
            return;
        }
        // Group sums cost a window of output nodes per group (±9 band σ);
        // two transforms of the base about G·log2(2G). A band σ far above
        // the replicates' σ* (a σ fixed by the caller) makes the windows wide.
        // The groups' smoothed windows cost a transform's worth of work or
        // more to build (a kernel window per input node), which one replicate
        // (the pilot) does not win back: 0.5 ms of a 1e6-row diagram.
        std::int64_t first = c.intervals + 1, last = -1;  // the base's nodes with weight
        for (std::int64_t j = 0; j <= c.intervals; ++j)
            if (c.w0[static_cast<std::size_t>(j)] != 0.0 || c.w1[static_cast<std::size_t>(j)] != 0.0) {
                first = std::min(first, j);
                last = j;
            }
        curve_window = replicate_window(c.intervals, first, last, req.band_sigma, plan.band_out);
        const double reach = 18.0 * req.band_sigma * static_cast<double>(plan.band_out) + 2.0;
        const double sums = static_cast<double>(groups.count) * reach + static_cast<double>(plan.band_out);
        const auto transformed = static_cast<double>(curve_window.intervals);
        const double transforms = transformed * std::log2(2.0 * transformed);
        group_curves = replicates > 1 && sums <= transforms;
        if (group_curves)
            curves = GroupSmoothing(c.intervals, c.group, groups.count, {&c.w0, &c.w1}, req.band_sigma, plan.band_out);
    }
};

struct Outcome {
    double sigma_star = 0.0, at_band = 0.0, slope = 0.0;
    bool resolved = true;
};

// The draws of a run of up to kLanes bootstrap replicates (lane l: the run's
// l-th), kept for their curves, which GroupSmoothing::sum_lanes then sums for
// all of them at once.
constexpr std::size_t kLanes = GroupSmoothing::kLanes;
struct RunDraws {
    std::vector<double> s0, s1;  // [group·kLanes + lane]

    void reset(std::int64_t groups) {
        s0.assign(static_cast<std::size_t>(groups) * kLanes, 0.0);
        s1.assign(s0.size(), 0.0);
    }
    void keep(const ReplicateDraw& d, std::size_t lane) {
        for (std::size_t g = 0; g < d.s0.size(); ++g) {
            s0[g * kLanes + lane] = d.s0[g];
            s1[g * kLanes + lane] = d.s1[g];
        }
    }
};

// μ̂ = label/weight read off the mesh into mu[0], mu[count], mu[2·count], …
void write_curve(const Plan& plan, const std::vector<double>& weight, const std::vector<double>& label, double* mu) {
    mu_on_mesh(weight, label, plan.full->mapping, plan.request.mesh_intervals, mu, plan.request.count);
}

// One replicate from its stream; its curves into mu[0], mu[count], mu[2·count], … when asked
// (group curves: its draws into lane `lane` of `run`, for run_curves).
Outcome run_replicate(const Plan& plan, const Stage& stage, std::int64_t b, double* mu, bool want_slope,
                      RunDraws* run, std::size_t lane) {
    const ResampleRequest& req = plan.request;
    const Summary& full = *plan.full;
    const bool bootstrap = req.kind == ResampleKind::Bootstrap, curves = mu != nullptr;
    RandomStream rng(req.seed, stream_of(req.kind, b));
    thread_local ReplicateDraw d;
    draw_groups(stage.groups, req.kind, rng, d);
    thread_local std::vector<double> residual, whole_residual, fine_residual, r, F;
    const Profiles& work = stage.work;
    const GridWindow& window = stage.window;
    replicate_residual(work, d, req.kind, window.first, window.intervals, residual);
    const double total = d.total_weight;
    const Spectrum spectrum(residual.data(), window.intervals);  // on the window's own grid
    std::unique_ptr<Spectrum> whole, fine;
    auto whole_spectrum = [&]() -> const Spectrum& {  // the same draw on the whole work grid
        if (window.whole) return spectrum;
        if (!whole) {
            replicate_residual(work, d, req.kind, 0, work.intervals, whole_residual);
            whole = std::make_unique<Spectrum>(whole_residual.data(), work.intervals);
        }
        return *whole;
    };
    auto fine_spectrum = [&]() -> const Spectrum& {  // the same draw on the summary's own grid
        if (&stage.fine == &work) return whole_spectrum();
        if (!fine) {
            replicate_residual(stage.fine, d, req.kind, 0, stage.fine.intervals, fine_residual);
            fine = std::make_unique<Spectrum>(fine_residual.data(), stage.fine.intervals);
        }
        return *fine;
    };
    const double work_limit = kMinWorkNodesPerSigma / static_cast<double>(work.intervals);
    // smECEσ, read off r and F on a grid of the window (windowed: true) or of the whole axis.
    bool windowed = false;
    auto smece = [&](double s) {
        windowed = !window.whole && s >= work_limit && s <= window.sigma_max;
        if (windowed) return replicate_smece(spectrum, s * window.scale, total, r, F);
        return replicate_smece(s >= work_limit ? whole_spectrum() : fine_spectrum(), s, total, r, F);
    };
    const double scale = full.mapping.span;
    const double limit = kMinNodesPerSigma / static_cast<double>(full.intervals);
    // A consistency replicate's curves need its residual at the band σ (the
    // statistic's σ*). When that σ lies near the hint, as for data near the
    // null, the search starts there, so the evaluation serves both; the same
    // with and without curves, so σ* does not depend on them.
    double start = plan.hint, start_value = kNaN;
    thread_local std::vector<double> change;  // the band's change of label mass, once read off
    change.clear();
    if (req.kind == ResampleKind::Consistency) {
        const double sb = req.band_sigma;
        const bool near = sb >= plan.hint / 1.25 && sb <= plan.hint * 1.25;
        if (near || curves) {
            const double value = smece(sb);
            if (near) {
                start = sb;
                start_value = value;
            }
            // The grid smece(sb) was read off: its nodes may include the band's
            // (exact samples; a window's densities per its own unit, so × scale);
            // beyond a window the change is 0.
            const auto g = static_cast<std::int64_t>(r.size()) - 1;
            const std::int64_t band_first = windowed ? window.band_first : 0;
            const std::int64_t band_intervals = windowed ? window.band_intervals : plan.band_out;
            if (curves && band_intervals > 0 && g % band_intervals == 0) {
                const auto step = static_cast<std::size_t>(g / band_intervals);
                const double unit = windowed ? window.scale : 1.0;
                change.assign(static_cast<std::size_t>(plan.band_out + 1), 0.0);
                for (std::size_t j = 0; j <= static_cast<std::size_t>(band_intervals); ++j)
                    change[static_cast<std::size_t>(band_first) + j] = r[j * step] * unit;
            }
        }
    }
    const Fixpoint fix = solve_fixpoint(smece, scale, limit, start, {kReplicateTolerance, plan.slope, start_value});
    const double star = fix.sigma;
    Outcome out;
    out.sigma_star = star * scale;
    out.resolved = fix.resolved;
    if (req.at_band) out.at_band = smece(req.band_sigma);
    if (want_slope) out.slope = (smece(1.01 * star) - smece(0.99 * star)) / (0.02 * star);
    if (curves) {
        // μ̂ at the band σ on the band's grid: the groups' smoothed masses
        // scaled by the draw or the replicate's masses smoothed (bootstrap),
        // or the fixed curves plus the change of label mass, the residual
        // smoothed (consistency).
        thread_local std::vector<double> weight, label, weight_masses, label_masses;
        if (bootstrap && stage.group_curves) {
            if (!run) throw std::logic_error("group curves are summed by runs");
            run->keep(d, lane);
            return out;
        }
        if (bootstrap) {
            // On the curves' window (beyond it both curves are 0: no weight
            // within 10 band σ), per the axis' unit.
            const GridWindow& cw = stage.curve_window;
            replicate_weights(stage.curve_base, d, cw.first, cw.intervals, weight_masses, label_masses);
            const std::int64_t first = cw.whole ? 0 : cw.band_first, intervals = cw.whole ? plan.band_out : cw.band_intervals;
            label.assign(static_cast<std::size_t>(plan.band_out + 1), 0.0);
            weight.assign(label.size(), 0.0);
            Spectrum(label_masses.data(), cw.intervals).evaluate(req.band_sigma * cw.scale, label.data() + first, nullptr, intervals);
            Spectrum(weight_masses.data(), cw.intervals).evaluate(req.band_sigma * cw.scale, weight.data() + first, nullptr, intervals);
            if (!cw.whole)
                for (std::int64_t j = first; j <= first + intervals; ++j) {
                    label[static_cast<std::size_t>(j)] *= cw.scale;
                    weight[static_cast<std::size_t>(j)] *= cw.scale;
                }
        } else {
            label.resize(stage.fixed.label.size());
            if (change.size() == label.size()) {
                std::copy(change.begin(), change.end(), label.begin());
            } else if (!window.whole && req.band_sigma <= window.sigma_max) {
                std::fill(label.begin(), label.end(), 0.0);
                double* inside = label.data() + window.band_first;
                spectrum.evaluate(req.band_sigma * window.scale, inside, nullptr, window.band_intervals);
                for (std::int64_t j = 0; j <= window.band_intervals; ++j) inside[j] *= window.scale;  // per the axis' unit
            } else {
                whole_spectrum().evaluate(req.band_sigma, label.data(), nullptr, plan.band_out);
            }
            for (std::size_t j = 0; j < label.size(); ++j) label[j] += stage.fixed.label[j];
            weight = stage.fixed.weight;
        }
        write_curve(plan, weight, label, mu);
    }
    return out;
}

// The curves of a run's replicates from their kept draws, lane l into mu + l.
void run_curves(const Plan& plan, const Stage& stage, const RunDraws& run, std::size_t lanes, double* mu) {
    thread_local std::vector<double> label_lanes, weight_lanes, weight, label;
    stage.curves.sum_lanes(1, run.s1.data(), label_lanes);
    stage.curves.sum_lanes(0, run.s0.data(), weight_lanes);
    const auto nodes = static_cast<std::size_t>(stage.curves.nodes());
    label.resize(nodes);
    weight.resize(nodes);
    for (std::size_t l = 0; l < lanes; ++l) {
        for (std::size_t j = 0; j < nodes; ++j) {
            label[j] = label_lanes[j * kLanes + l];
            weight[j] = weight_lanes[j * kLanes + l] + label[j];
        }
        write_curve(plan, weight, label, mu + l);
    }
}

// Replicates [begin, end), at most kLanes of them, each handed to record as
// it is solved, their curves into mu + (b − begin) when mu is given; group
// curves (bootstrap) summed for all of them at the end.
template <class Record>
void run_replicates(const Plan& plan, const Stage& stage, std::int64_t begin, std::int64_t end, double* mu,
                    bool want_slope, RunDraws& draws, Record&& record) {
    const bool grouped = mu && plan.request.kind == ResampleKind::Bootstrap && stage.group_curves;
    if (grouped) draws.reset(stage.groups.count);
    for (std::int64_t b = begin; b < end; ++b) {
        const auto lane = static_cast<std::size_t>(b - begin);
        record(b, run_replicate(plan, stage, b, mu ? mu + lane : nullptr, want_slope, grouped ? &draws : nullptr, lane));
    }
    if (grouped) run_curves(plan, stage, draws, static_cast<std::size_t>(end - begin), mu);
}

}  // namespace

Replicates resample(const Summary& full, const ResampleRequest& req) {
    if (!full.full()) throw std::logic_error("resampling needs a full summary");
    if (req.count < 1) throw std::invalid_argument("the number of replicates must be at least 1");
    if (!(req.band_sigma > 0.0)) throw std::invalid_argument("the band bandwidth must be positive");
    Plan plan;
    plan.full = &full;
    plan.request = req;
    plan.band = std::min(full.intervals, intervals_for_sigma(req.band_sigma));
    plan.band_out = band_read_intervals(full, req);
    const bool curves = req.mesh_intervals > 0;

    Replicates out;
    out.sigma_star.assign(static_cast<std::size_t>(req.count), 0.0);
    out.smece_at_band.assign(static_cast<std::size_t>(req.count), 0.0);
    out.mesh_points = curves ? mesh_points(full.mapping, plan.band, req.mesh_intervals) : 0;
    assign_interruptibly(out.mu, static_cast<std::size_t>(req.count * out.mesh_points), kNaN);
    auto mu_of = [&](std::int64_t b) { return curves ? out.mu.data() + b : nullptr; };
    std::vector<char> resolved(static_cast<std::size_t>(req.count), 1);
    auto record = [&](std::int64_t b, const Outcome& o) {
        out.sigma_star[static_cast<std::size_t>(b)] = o.sigma_star;
        out.smece_at_band[static_cast<std::size_t>(b)] = o.at_band;
        resolved[static_cast<std::size_t>(b)] = o.resolved;
    };

    // Replicate 0, the pilot, is solved on the summary's own grid from the
    // full sample's σ* (bootstrap) or from the noise floor of calibrated data
    // (consistency); its σ* and slope then seed every other replicate, whose
    // grids are sized to it. Always the same way, so the numbers do not
    // depend on the thread count.
    const double scale = full.mapping.span;
    const double limit = replicate_limit(full);
    plan.hint = pilot_hint(full, req);
    // The work grid resolves σ* near the hint and the band σ (an evaluation
    // there serves the curves); the curves' base resolves both as well.
    auto grid_for = [&](double nodes_per_sigma) {
        return grid_at_least(nodes_per_sigma / std::min(plan.hint, req.band_sigma), 16, full.intervals);
    };
    // Groups draw one factor each, so they must be narrow next to every σ a
    // replicate is read at: σ* near the hint, and the band σ (a fixed σ below
    // σ* would otherwise see each group's share of the sample's own profile
    // move as one, and its replicates would miss most of their noise).
    auto group_sigma = [&] { return std::min(plan.hint, req.band_sigma); };
    const ResampleGroups pilot_groups(full.cells, group_sigma(), req.kind, req.weights, full.weight_exp, 1, req.threads);
    const Base pilot_base(full, full.intervals, req.kind, BaseUse::Residual, pilot_groups);
    const Profiles pilot_work(pilot_base, full.intervals, req.kind, pilot_groups.count);
    // The pilot's σ* is solved on the summary's own grid; its bootstrap curves
    // come from a base sized like the other replicates' curves.
    std::optional<Base> pilot_curves;
    if (curves && req.kind == ResampleKind::Bootstrap) pilot_curves.emplace(full, grid_for(kCurveNodesPerSigma), req.kind, BaseUse::Curves, pilot_groups);
    const Stage pilot_stage(plan, pilot_groups, pilot_work, pilot_work, pilot_curves ? *pilot_curves : pilot_base, 1);
    Outcome pilot;
    RunDraws draws;
    run_replicates(plan, pilot_stage, 0, 1, mu_of(0), true, draws, [&](std::int64_t b, const Outcome& o) {
        record(b, o);
        pilot = o;
    });
    plan.hint = std::max(pilot.sigma_star / scale, limit);
    plan.slope = pilot.slope;

    if (req.count > 1) {
        const ResampleGroups groups(full.cells, group_sigma(), req.kind, req.weights, full.weight_exp, req.count - 1, req.threads);
        // Sized for the band σ also when no curves are asked: the same σ* then
        // come with and without them.
        const Base fine_base(full, full.intervals, req.kind, BaseUse::Residual, groups);
        const Profiles work(fine_base, grid_for(req.work_nodes_per_sigma > 0.0 ? req.work_nodes_per_sigma : kWorkNodesPerSigma),
                            req.kind, groups.count);
        const Profiles fine(fine_base, full.intervals, req.kind, groups.count);
        std::optional<Base> curve_base;
        if (curves) curve_base.emplace(full, grid_for(kCurveNodesPerSigma), req.kind, BaseUse::Curves, groups);
        const Stage stage(plan, groups, work, fine, curve_base ? *curve_base : fine_base, req.count - 1);
        const int nthreads = thread_count(req.threads, req.count - 1, 1);
        // Runs of 8 replicates per thread whose curves fill whole cache lines
        // (a mesh point's replicates lie side by side), so that no two threads
        // write the same line; group curves are summed for a whole run at once.
        constexpr std::int64_t kRun = 8;
        static_assert(kRun == static_cast<std::int64_t>(kLanes), "a run's curves are summed as one set of lanes");
        const auto shift = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(out.mu.data()) / sizeof(double) % kRun);
        // Runs handed out one by one, not dealt in turn: on a shared machine
        // a thread that loses its core for a while leaves its runs to the
        // others. (Each replicate draws from its own stream: the numbers do
        // not depend on which thread runs it.)
        const std::int64_t runs = (req.count + shift + kRun - 1) / kRun;
        parallel_items<RunDraws>(nthreads, runs, [&](std::int64_t r, RunDraws& run_draws) {
            const std::int64_t first = r * kRun - shift;
            const std::int64_t begin = std::max<std::int64_t>(first, 1), end = std::min(req.count, first + kRun);
            if (begin < end) run_replicates(plan, stage, begin, end, mu_of(begin), false, run_draws, record);
        });
    }
    out.unresolved = std::count(resolved.begin(), resolved.end(), 0);
    if (out.unresolved > 0)
        for (char r : resolved) out.below_grid.push_back(r ? 0 : 1);
    add_band(req, out);
    return out;
}

}  // namespace smoothece
