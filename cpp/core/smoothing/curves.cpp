#include "smoothing/curves.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "smoothing/spectrum.hpp"

namespace smoothece {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The node sums at the resolution σ needs (restricted from finer sums).
Summary sums_for_sigma(const Summary& full, double sigma) {
    const std::int64_t g = std::min(intervals_for_sigma(sigma), full.intervals);
    return full.restricted(g);
}

std::vector<double> sum_of(const std::vector<double>& a, const std::vector<double>& b) {
    std::vector<double> out(a.size());
    for (std::size_t j = 0; j < a.size(); ++j) out[j] = a[j] + b[j];
    return out;
}

// Masses smoothed at σ, read off the grid's own nodes: where they reach a
// part of the grid, only its window (window_of: 10σ beyond them, its nodes the
// grid's) is transformed, and the rest is 0. A base rate's curves on the
// logit axis: a few hundred of its 2^17 intervals.
std::vector<double> smoothed(const std::vector<double>& masses, std::int64_t g, double sigma) {
    std::vector<double> out(masses.size(), 0.0);
    std::int64_t first = g + 1, last = -1;
    for (std::int64_t j = 0; j <= g; ++j)
        if (masses[static_cast<std::size_t>(j)] != 0.0) {
            first = std::min(first, j);
            last = j;
        }
    if (last < first) return out;
    const GridWindow w = window_of(g, first, last, sigma);
    if (w.whole) {
        Spectrum(masses.data(), g).evaluate(sigma, out.data(), nullptr);
        return out;
    }
    double* window = out.data() + w.first;
    Spectrum(masses.data() + w.first, w.intervals).evaluate(sigma * w.scale, window, nullptr);
    for (std::int64_t j = 0; j <= w.intervals; ++j) window[j] *= w.scale;
    return out;
}

// ∫₀¹ |v| by the trapezoid rule with the kink of |v| in sign-change cells
// integrated on the linear interpolant (diagnostic accuracy, O(h²)).
double integrate_abs_trapezoid(const std::vector<double>& v) {
    const auto intervals = static_cast<std::int64_t>(v.size()) - 1;
    double sum = 0.0;
    for (std::size_t j = 0; j + 1 < v.size(); ++j) {
        const double a = v[j], b = v[j + 1];
        sum += ((a < 0.0) != (b < 0.0) && a != 0.0 && b != 0.0) ? (a * a + b * b) / (2.0 * (std::fabs(a) + std::fabs(b)))
                                                               : 0.5 * (std::fabs(a) + std::fabs(b));
    }
    return sum / static_cast<double>(intervals);
}

// The node left of grid position x ∈ [0, 1] on a grid of g intervals: the
// interpolation of at_position is between it and the next.
std::size_t node_left_of(double x, std::size_t g, double& lam) {
    const double u = std::min(std::max(x, 0.0), 1.0) * static_cast<double>(g);
    const auto j = std::min(static_cast<std::size_t>(u), g - 1);
    lam = u - static_cast<double>(j);
    return j;
}

// Linear interpolation of node values v (nodes j/G) at grid position x ∈ [0, 1].
double at_position(const std::vector<double>& v, double x) {
    double lam;
    const std::size_t j = node_left_of(x, v.size() - 1, lam);
    return (1.0 - lam) * v[j] + lam * v[j + 1];
}

// μ̂ = label/weight, NaN where the density is negligible (relative 1e-12),
// clamped to [0, 1] against the rounding of the cubic binning.
double mu_of(double weight, double label, double floor) {
    return weight > floor ? std::min(1.0, std::max(0.0, label / weight)) : kNaN;
}

// The grid positions of the logit mesh's points t_k = k/M (the ends
// clamped to 1/M and 1 − 1/M), then of t = 0 and t = 1 themselves: kept per
// thread for the last mesh asked, since each replicate's curves read the
// same ones (two logarithms a point).
const std::vector<double>& logit_mesh_positions(const Mapping& map, std::int64_t mesh_intervals) {
    thread_local Mapping mapping;
    thread_local std::int64_t intervals = -1;
    thread_local std::vector<double> x;
    if (intervals != mesh_intervals || mapping != map) {
        const double edge = 1.0 / static_cast<double>(mesh_intervals);
        x.resize(static_cast<std::size_t>(mesh_intervals + 3));
        for (std::int64_t k = 0; k <= mesh_intervals; ++k) {
            const double t = static_cast<double>(k) / static_cast<double>(mesh_intervals);
            x[static_cast<std::size_t>(k)] = map.position(std::min(std::max(t, edge), 1.0 - edge));
        }
        x[static_cast<std::size_t>(mesh_intervals + 1)] = map.position(0.0);
        x[static_cast<std::size_t>(mesh_intervals + 2)] = map.position(1.0);
        mapping = map;
        intervals = mesh_intervals;
    }
    return x;
}

// Calls fn(t, weight, label, dx/dt, μ) at each mesh point t of the
// probability axis, from smoothed node values on the grid. For the l1 metric
// the mesh is every step-th node; for the logit metric the curves are read
// off at x = (logit(t) − lo)/span, and densities pick up dx/dt =
// 1/(span·t(1 − t)) (the end points, where that diverges, repeat their
// neighbours). μ at the ends is read where predictions of exactly 0 and 1
// sit (logit ∓27.6) when any are near: a ratio has no Jacobian, and there it
// has their rows (read at t = 1/512 and 511/512 instead, every μ of such
// data would be NaN).
// `most` is the largest weight at a node, which sets the density's floor.
// Points that `live` marks 0 read zero weight and label (mesh_points_reached)
// and are handed NaN without reading them.
template <class Fn>
void read_off(const std::vector<double>& weight, const std::vector<double>& label, const Mapping& map,
              std::int64_t mesh_intervals, double most, Fn&& fn, const std::vector<char>* live = nullptr) {
    const auto g = static_cast<std::int64_t>(weight.size()) - 1;
    const double floor = 1e-12 * most;
    if (!map.is_logit()) {
        const std::int64_t step = g / std::min(mesh_intervals, g);
        if (g % step != 0 || g / step != std::min(mesh_intervals, g))  // the callers' mesh_points would be wrong
            throw std::logic_error("the mesh must take every step-th node of the grid it is read off");
        for (std::int64_t j = 0, k = 0; j <= g; j += step, ++k) {
            const auto ju = static_cast<std::size_t>(j);
            const double t = static_cast<double>(j) / static_cast<double>(g);
            if (live && !(*live)[static_cast<std::size_t>(k)]) fn(t, 0.0, 0.0, 1.0, kNaN);
            else fn(t, weight[ju], label[ju], 1.0, mu_of(weight[ju], label[ju], floor));
        }
        return;
    }
    const double edge = 1.0 / static_cast<double>(mesh_intervals);
    const std::vector<double>& position = logit_mesh_positions(map, mesh_intervals);
    for (std::int64_t k = 0; k <= mesh_intervals; ++k) {
        const double t = static_cast<double>(k) / static_cast<double>(mesh_intervals);
        const double tc = std::min(std::max(t, edge), 1.0 - edge);
        if (live && !(*live)[static_cast<std::size_t>(k)]) {
            fn(t, 0.0, 0.0, 1.0 / (map.span * tc * (1.0 - tc)), kNaN);
            continue;
        }
        const double x = position[static_cast<std::size_t>(k)], w = at_position(weight, x), l = at_position(label, x);
        double mu = mu_of(w, l, floor);
        if (tc != t) {  // an end: its own μ where rows sit there, else its neighbour's, as the densities
            const double end = position[static_cast<std::size_t>(mesh_intervals + (k == 0 ? 1 : 2))];
            const double mu_end = mu_of(at_position(weight, end), at_position(label, end), floor);
            if (!std::isnan(mu_end)) mu = mu_end;
        }
        fn(t, w, l, 1.0 / (map.span * tc * (1.0 - tc)), mu);
    }
}

}  // namespace

DiagramCurves curves_at(const Summary& full, double sigma, std::int64_t mesh_intervals) {
    if (!full.full()) throw std::logic_error("the diagram needs a full summary");
    if (mesh_intervals < 1) throw std::invalid_argument("the mesh needs at least one interval");
    const Summary sums = sums_for_sigma(full, sigma);
    const std::int64_t g = sums.intervals;
    const auto nodes = static_cast<std::size_t>(g + 1);
    const std::vector<double> weight = smoothed(sum_of(sums.w0, sums.w1), g, sigma);
    const std::vector<double> label = smoothed(sums.w1, g, sigma);

    DiagramCurves out;
    const Mapping& map = full.mapping;
    out.sigma = sigma * map.span;
    out.total_weight = full.total_weight();
    out.rows = full.rows;
    const double total = full.weight;
    double positive = 0.0;
    for (double v : sums.w1) positive += v;
    const double negative = total - positive;

    // smẼCE = (1/W) ∫ |Σ wyK̃ − t Σ wK̃| dx over the grid (dx-densities: the
    // change of variables to the probability axis cancels).
    std::vector<double> gap(nodes, 0.0);
    for (std::size_t j = 0; j < nodes; ++j)  // (0 beyond the weight's window: no prediction to take there)
        if (weight[j] != 0.0 || label[j] != 0.0)
            gap[j] = label[j] - map.prediction(static_cast<double>(j) / static_cast<double>(g)) * weight[j];
    out.smece_tilde = integrate_abs_trapezoid(gap) / total;

    const double most = *std::max_element(weight.begin(), weight.end());
    read_off(weight, label, map, mesh_intervals, most, [&](double t, double w, double l, double jacobian, double mu) {
        out.mesh.push_back(t);
        out.density.push_back(w / total * jacobian);
        out.density_positive.push_back(positive > 0.0 ? l / positive * jacobian : kNaN);
        out.density_negative.push_back(negative > 0.0 ? (w - l) / negative * jacobian : kNaN);
        out.mu.push_back(mu);
    });
    return out;
}

std::vector<std::int64_t> mesh_nodes(const Mapping& mapping, std::int64_t grid_intervals, std::int64_t mesh_intervals) {
    std::vector<std::int64_t> nodes;
    if (!mapping.is_logit()) {
        const std::int64_t step = grid_intervals / std::min(mesh_intervals, grid_intervals);
        for (std::int64_t j = 0; j <= grid_intervals; j += step) nodes.push_back(j);
        return nodes;
    }
    // read_off reads every position of the mesh (the ends' own among them).
    for (const double x : logit_mesh_positions(mapping, mesh_intervals)) {
        double lam;
        const auto j = static_cast<std::int64_t>(node_left_of(x, static_cast<std::size_t>(grid_intervals), lam));
        nodes.push_back(j);
        nodes.push_back(j + 1);
    }
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    return nodes;
}

std::int64_t mesh_points(const Mapping& mapping, std::int64_t grid_intervals, std::int64_t mesh_intervals) {
    return (mapping.is_logit() ? mesh_intervals : std::min(mesh_intervals, grid_intervals)) + 1;
}

void mu_on_mesh(const std::vector<double>& weight, const std::vector<double>& label, const Mapping& mapping,
                std::int64_t mesh_intervals, double* out, std::int64_t stride) {
    mu_on_mesh(weight, label, mapping, mesh_intervals, out, stride, *std::max_element(weight.begin(), weight.end()));
}

void mu_on_mesh(const std::vector<double>& weight, const std::vector<double>& label, const Mapping& mapping,
                std::int64_t mesh_intervals, double* out, std::int64_t stride, double most,
                const std::vector<char>* live) {
    read_off(
        weight, label, mapping, mesh_intervals, most,
        [&](double, double, double, double, double mu) {
            *out = mu;
            out += stride;
        },
        live);
}

std::vector<char> mesh_points_reached(const std::vector<double>& reached, const Mapping& mapping,
                                      std::int64_t mesh_intervals) {
    // A point whose nodes are all unreached reads weight 0 there: NaN
    // whatever the sums. The mesh's ends may take their neighbour's μ̂ (read_off): always read.
    std::vector<char> live;
    read_off(reached, reached, mapping, mesh_intervals, 1.0, [&](double t, double w, double, double, double) {
        live.push_back(w > 0.0 || t == 0.0 || t == 1.0 ? 1 : 0);
    });
    return live;
}

}  // namespace smoothece
