#include "resampling/paired.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "resampling/draws.hpp"
#include "resampling/replicate_solve.hpp"
#include "runtime/pool.hpp"
#include "runtime/random.hpp"
#include "smoothing/fixpoint.hpp"
#include "smoothing/spectrum.hpp"
#include "summary/summary.hpp"

namespace smoothece {
namespace {

// A replicate resolves σ* down to this many nodes per σ of its base's grid
// (the spectrum needs σG ≥ 8; cubic binning errs by O((h/σ)⁴) there).
constexpr double kMinNodesPerSigma = 8.0;
constexpr std::int64_t kUnitIntervals = 4;

// Where a unit's change of mass goes on a base's grid: its mean position's
// cell and offset, and the cubic weights' moments per unit of mass.
struct Placement {
    std::int64_t cell = 0;
    double power[4] = {1.0, 0.0, 0.0, 0.0};
};

Placement place(double x, std::int64_t intervals) {
    const double at = std::min(std::max(x, 0.0), 1.0) * static_cast<double>(intervals);
    Placement p;
    p.cell = std::min(static_cast<std::int64_t>(at), intervals - 1);
    const double lam = at - static_cast<double>(p.cell);
    p.power[1] = lam;
    p.power[2] = lam * lam;
    p.power[3] = lam * lam * lam;
    return p;
}

struct Scratch {
    std::vector<double> change, nodes, r, F;
};

}  // namespace

void PairedUnits::rescale(int new_exp) {
    const int shift = new_exp - weight_exp;
    if (shift == 0) return;
    for (auto* sums : {&weight, &residual, &weight_x})
        for (double& v : *sums) v = std::ldexp(v, shift);
    for (double& v : weight_sq) v = std::ldexp(v, 2 * shift);
    weight_exp = new_exp;
}

std::int64_t paired_intervals(double sigma_star) {
    std::int64_t g = 64;
    while (g < kMaxPairedIntervals && static_cast<double>(g) * sigma_star < kNodesPerSigma) g *= 2;
    return g;
}

std::int64_t paired_unit_cells(std::int64_t intervals) { return std::max<std::int64_t>(1, intervals / kUnitIntervals); }

PairedReplicates paired_replicates(const std::vector<PairedBase>& bases, const PairedUnits& units,
                                   const PairedRequest& req) {
    const auto models = static_cast<std::size_t>(units.models);
    if (bases.size() != models || models == 0) throw std::invalid_argument("one base per model is needed");
    if (req.count < 1) throw std::invalid_argument("the number of replicates must be at least 1");
    if (!(req.total_weight > 0.0)) throw std::invalid_argument("the rows weigh nothing");
    const auto count = static_cast<std::size_t>(units.size());

    // Units draw in the order of their keys, so that the numbers depend on
    // the rows alone: not on their order, nor on how a sketch was batched.
    const auto width = static_cast<std::size_t>(units.models + 1);
    if (units.key.size() != count * width) throw std::invalid_argument("the units' keys do not match their sums");
    std::vector<std::size_t> order(count);
    for (std::size_t u = 0; u < count; ++u) order[u] = u;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return std::lexicographical_compare(units.key.begin() + static_cast<std::ptrdiff_t>(a * width),
                                            units.key.begin() + static_cast<std::ptrdiff_t>((a + 1) * width),
                                            units.key.begin() + static_cast<std::ptrdiff_t>(b * width),
                                            units.key.begin() + static_cast<std::ptrdiff_t>((b + 1) * width));
    });
    // Each unit's draw (in key order), and where its change of mass lands on each base.
    std::vector<BootstrapDraw> draws;
    draws.reserve(count);
    for (const std::size_t u : order) draws.emplace_back(units.weight[u], units.weight_sq[u], units.weight_exp, req.weights);
    std::vector<Placement> placed(count * models);
    std::vector<double> slope(models, std::numeric_limits<double>::quiet_NaN());
    for (std::size_t m = 0; m < models; ++m) {
        const PairedBase& base = bases[m];
        if (static_cast<std::int64_t>(base.nodes.size()) != base.intervals + 1)
            throw std::invalid_argument("a base's nodes do not match its grid");
        for (std::size_t u = 0; u < count; ++u) {
            const double w = units.weight[u];
            placed[u * models + m] = place(w > 0.0 ? units.weight_x[u * models + m] / w : 0.0, base.intervals);
        }
        // d smECEσ/dσ of the full sample at its σ*: the replicates' first step.
        const Spectrum spectrum(base.nodes.data(), base.intervals);
        std::vector<double> r, F;
        const double s = base.sigma_star, limit = kMinNodesPerSigma / static_cast<double>(base.intervals);
        if (s * 0.99 >= limit)
            slope[m] = (replicate_smece(spectrum, 1.01 * s, req.total_weight, r, F) -
                        replicate_smece(spectrum, 0.99 * s, req.total_weight, r, F)) / (0.02 * s);
    }

    PairedReplicates out;
    out.models = units.models;
    out.units = units.size();
    for (std::size_t m = 0; m < models; ++m)
        out.widest_unit = std::max(out.widest_unit, 1.0 / (static_cast<double>(units.cells[m]) * bases[m].sigma_star));
    out.sigma_star.assign(static_cast<std::size_t>(req.count) * models, 0.0);
    std::vector<char> resolved(out.sigma_star.size(), 1);
    const int nthreads = thread_count(req.threads, req.count, 1);
    parallel_items<Scratch>(nthreads, req.count, [&](std::int64_t b, Scratch& s) {
        interruption_point();
        RandomStream rng(req.seed, stream_of(ResampleKind::Bootstrap, b));
        s.change.resize(count);
        double total = req.total_weight;
        for (std::size_t j = 0; j < count; ++j) {
            const std::size_t u = order[j];
            s.change[u] = draws[j](rng) - 1.0;
            total += s.change[u] * units.weight[u];
        }
        for (std::size_t m = 0; m < models; ++m) {
            const PairedBase& base = bases[m];
            s.nodes = base.nodes;
            for (std::size_t u = 0; u < count; ++u) {
                const double mass = s.change[u] * units.residual[u * models + m];
                if (mass == 0.0) continue;
                const Placement& p = placed[u * models + m];
                const double moments[4] = {mass, mass * p.power[1], mass * p.power[2], mass * p.power[3]};
                spread_cubic(s.nodes, p.cell, moments);
            }
            const Spectrum spectrum(s.nodes.data(), base.intervals);
            auto smece = [&](double sigma) { return replicate_smece(spectrum, sigma, total, s.r, s.F); };
            const double limit = kMinNodesPerSigma / static_cast<double>(base.intervals);
            const Fixpoint fix =
                solve_fixpoint(smece, req.scale, limit, std::max(base.sigma_star, limit), {kReplicateTolerance, slope[m]});
            const std::size_t at = static_cast<std::size_t>(b) * models + m;
            out.sigma_star[at] = fix.sigma * req.scale;
            resolved[at] = fix.resolved;
        }
    });
    out.unresolved = std::count(resolved.begin(), resolved.end(), 0);
    return out;
}

}  // namespace smoothece
