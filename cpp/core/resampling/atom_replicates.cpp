// Replicates of exact atoms (few distinct predictions), every σ evaluated
// from the atoms themselves: each atom drawing as a resampling group of its
// own (solved exactly), or the atoms drawing as the resampling groups of
// their summary draw (the same draws as the summary's own replicates, each
// then solved to a replicate's precision by direct sums or local grids:
// no binning into cells).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <vector>

#include "pass/rows.hpp"
#include "resampling/atom_columns.hpp"
#include "resampling/draws.hpp"
#include "resampling/replicate_solve.hpp"
#include "resampling/resample.hpp"
#include "resampling/resample_groups.hpp"
#include "runtime/pool.hpp"
#include "runtime/random.hpp"
#include "smoothing/curves.hpp"
#include "smoothing/exact_integral.hpp"
#include "smoothing/fixpoint.hpp"
#include "smoothing/spectrum.hpp"

namespace smoothece {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// The exact integral resolves every σ down to this.
constexpr double kExactLimit = 1e-300;
// Replicates of a summary come from its atoms only where the rows repeat
// their positions: at least this many rows an atom (discrete forecasts).
constexpr double kRowsPerAtom = 4.0;
// ... and where that costs at most twice the grid's, or at most this much a
// replicate (nodes transformed, about 0.1 ms).
constexpr double kSmallExactCost = 131072.0;
// Columns (atom_columns.hpp) are kept up to this many values (32 MB); more
// atoms bin and transform each replicate's masses instead.
constexpr double kMaxColumnValues = 4.0 * 1024 * 1024;
// The exact integral of a replicate drawn per group smooths clusters of
// atoms on local grids of 8 to 16 nodes per σ (a power of two), not 16 to
// 32: replicate σ* within 2.4e-6 of the finer grids (11 and 101 values, n =
// 1e3 and 1e5, logit metric, bootstrap and consistency), two atoms within
// 1.2e-5 of the closed form (4 nodes per σ: 2.2e-4, beyond the solver's
// 1e-4), at half the time.
constexpr double kReplicateNodesPerSigma = 8.0;
// The direct sums (direct_abs_integral) of a replicate: 6 nodes per σ,
// within a relative 4e-6 of the exact integral (101 forecast values on the
// logit axis, σ from 0.003 to 0.3 logit units; local grids of 8 nodes per
// σ: 1.3e-5) and 9e-6 for two atoms (1.4e-5), up to this σ (grid units),
// where a Gaussian's reach (6σ) stays within a quarter of the axis.
constexpr double kDirectNodesPerSigma = 6.0;
constexpr double kMaxDirectSigma = 1.0 / 32.0;

// The curves of replicates of atoms: through columns where they fit, else
// each replicate's masses binned onto the band's grid and smoothed.
class AtomCurves {
public:
    AtomCurves(const Atoms& atoms, std::int64_t intervals, double sigma, std::int64_t mesh_intervals)
        : atoms_(atoms), intervals_(intervals), sigma_(sigma) {
        if (AtomColumns::size(atoms.x, intervals, sigma, intervals) <= kMaxColumnValues)
            columns_.emplace(atoms.x, intervals, sigma, intervals, atoms.mapping, mesh_intervals);
    }

    // μ̂ of the replicate `rep` (the atoms with a replicate's masses) into out[m·stride].
    void mu(const Atoms& rep, std::int64_t mesh_intervals, double* out, std::int64_t stride) const {
        if (columns_) {
            thread_local std::vector<double> weight, label;
            weight.resize(rep.size());
            label.resize(rep.size());
            for (std::size_t i = 0; i < rep.size(); ++i) {
                label[i] = rep.by_label[1][i].weight;
                weight[i] = rep.by_label[0][i].weight + label[i];
            }
            columns_->mu(weight.data(), label.data(), out, stride);
            return;
        }
        const Summary s = summarise_atoms(rep, Content::Full, intervals_);
        std::vector<double> weight(s.w0.size()), label(s.w0.size()), w(s.w0.size());
        for (std::size_t j = 0; j < w.size(); ++j) w[j] = s.w0[j] + s.w1[j];
        Spectrum(w.data(), intervals_).evaluate(sigma_, weight.data(), nullptr);
        Spectrum(s.w1.data(), intervals_).evaluate(sigma_, label.data(), nullptr);
        mu_on_mesh(weight, label, atoms_.mapping, mesh_intervals, out, stride);
    }

private:
    const Atoms& atoms_;
    std::int64_t intervals_;
    double sigma_;
    std::optional<AtomColumns> columns_;
};

}  // namespace

Replicates resample(const Atoms& atoms, const ResampleRequest& req, std::int64_t band_intervals) {
    if (req.count < 1) throw std::invalid_argument("the number of replicates must be at least 1");
    const bool curves = req.mesh_intervals > 0;
    const int weight_exp = atoms.weight_exp;
    const double scale = atoms.mapping.span;
    Replicates out;
    out.sigma_star.assign(static_cast<std::size_t>(req.count), 0.0);
    out.smece_at_band.assign(static_cast<std::size_t>(req.count), 0.0);
    out.mesh_points = curves ? mesh_points(atoms.mapping, band_intervals, req.mesh_intervals) : 0;
    assign_interruptibly(out.mu, static_cast<std::size_t>(req.count * out.mesh_points), kNaN);
    const std::size_t n = atoms.size();
    std::vector<BootstrapDraw> bootstrap[2];
    std::vector<ConsistencyDraw> consistency;
    if (req.kind == ResampleKind::Bootstrap) {
        for (int y = 0; y < 2; ++y) {
            bootstrap[y].reserve(n);
            for (const AtomStats& a : atoms.by_label[y]) bootstrap[y].emplace_back(a.weight, a.weight_sq, weight_exp, req.weights);
        }
    } else {
        consistency.reserve(n);
        std::size_t table_values = ConsistencyDraw::table_budget(req.count);
        for (std::size_t i = 0; i < n; ++i) {
            const AtomStats& a0 = atoms.by_label[0][i];
            const AtomStats& a1 = atoms.by_label[1][i];
            consistency.emplace_back(a0.rows + a1.rows, a0.weight + a1.weight, a0.weight_sq + a1.weight_sq,
                                     a0.weight_f + a1.weight_f, weight_exp, req.weights, table_values);
        }
    }
    // The curves at the σ the diagram's own curve is drawn at: at least what
    // the grid resolves (at a base rate's σ* of 3e-17 the band would be a
    // spike: finite at 1 of the 119 mesh points where μ̂ is).
    const double curve_sigma = std::max(req.band_sigma, min_sigma_for(band_intervals));
    std::optional<AtomCurves> atom_curves;
    if (curves) atom_curves.emplace(atoms, band_intervals, curve_sigma, req.mesh_intervals);
    const int nthreads = thread_count(req.threads, req.count, 1);
    parallel_for(nthreads, [&](int t) {
        Atoms rep = atoms;
        std::vector<double> residual(n);
        for (std::int64_t b = t; b < req.count; b += nthreads) {
            interruption_point();
            RandomStream rng(req.seed, stream_of(req.kind, b));
            double total = 0.0;
            for (std::size_t i = 0; i < n; ++i) {
                const AtomStats& a0 = atoms.by_label[0][i];
                const AtomStats& a1 = atoms.by_label[1][i];
                if (req.kind == ResampleKind::Bootstrap) {
                    const double s0 = bootstrap[0][i](rng);
                    const double s1 = bootstrap[1][i](rng);
                    rep.by_label[0][i].weight = s0 * a0.weight;
                    rep.by_label[0][i].weight_f = s0 * a0.weight_f;
                    rep.by_label[1][i].weight = s1 * a1.weight;
                    rep.by_label[1][i].weight_f = s1 * a1.weight_f;
                } else {
                    const double weight = a0.weight + a1.weight, weight_f = a0.weight_f + a1.weight_f;
                    const double positive = consistency[i](rng) * weight_f;  // the new label-1 weight
                    const double f_bar = weight > 0.0 ? weight_f / weight : 0.0;
                    rep.by_label[1][i].weight = positive;
                    rep.by_label[1][i].weight_f = positive * f_bar;
                    rep.by_label[0][i].weight = weight - positive;
                    rep.by_label[0][i].weight_f = (weight - positive) * f_bar;
                }
                residual[i] = rep.residual(i);
                total += rep.by_label[0][i].weight + rep.by_label[1][i].weight;
            }
            auto smece = [&](double s) { return exact_abs_integral(rep.x, residual, s) / total; };
            const double hint = req.hint > 0.0 ? req.hint : abs_residual_sum(residual) / total / scale;
            const Fixpoint fix = solve_fixpoint(smece, scale, kExactLimit, hint, {1e-9});
            out.sigma_star[static_cast<std::size_t>(b)] = fix.resolved ? fix.sigma * scale : 0.0;
            if (req.at_band) out.smece_at_band[static_cast<std::size_t>(b)] = smece(req.band_sigma);
            if (curves) atom_curves->mu(rep, req.mesh_intervals, out.mu.data() + b, req.count);
        }
    });
    add_band(req, out);
    return out;
}

namespace {

// What the replicates drawn as a summary's groups draw share.
struct GroupedPlan {
    const Atoms& atoms;
    const ResampleRequest& req;
    double scale = 1.0;
    std::vector<std::int64_t> cell;  // each atom's resampling cell in the summary
    std::optional<AtomColumns> columns;
    // A consistency replicate's weights are the atoms' own: their smoothed
    // sums, made once.
    std::optional<AtomColumns::Weight> weight;
    bool direct = false;  // smECEσ by direct sums (direct_abs_integral), not on local grids
};

// smECEσ·W of atoms at x with these residuals, as the plan evaluates it.
double plan_integral(const GroupedPlan& plan, const std::vector<double>& residual, double sigma) {
    if (plan.direct && sigma < kMaxDirectSigma) return direct_abs_integral(plan.atoms.x, residual, sigma, kDirectNodesPerSigma);
    return exact_abs_integral(plan.atoms.x, residual, sigma, kReplicateNodesPerSigma);
}

struct GroupedOutcome {
    double sigma_star = 0.0, at_band = 0.0, slope = 0.0;
};

// Replicate b drawn per the groups, solved from `hint` (with the pilot's
// `slope`) exactly; its curves into mu[0], mu[count], … when mu is given.
GroupedOutcome grouped_replicate(const GroupedPlan& plan, const ResampleGroups& groups, std::int64_t b, double hint,
                                 double slope, bool want_slope, double* mu) {
    const ResampleRequest& req = plan.req;
    const Atoms& atoms = plan.atoms;
    const bool bootstrap = req.kind == ResampleKind::Bootstrap;
    RandomStream rng(req.seed, stream_of(req.kind, b));
    thread_local ReplicateDraw d;
    // Only the atoms' groups are read: the weighted ones (a weightless
    // atom's factors multiply nothing).
    draw_weighted_groups(groups, req.kind, rng, d);
    thread_local std::vector<double> residual, weight, label;
    const std::size_t n = atoms.size();
    residual.resize(n);
    weight.resize(n);
    label.resize(n);
    bool positive = false, negative = false;
    double net = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        const AtomStats& a0 = atoms.by_label[0][i];
        const AtomStats& a1 = atoms.by_label[1][i];
        const auto g = static_cast<std::size_t>(plan.cell[i] / groups.per);
        if (bootstrap) {
            const double s0 = d.s0[g], s1 = d.s1[g];
            label[i] = s1 * a1.weight;
            weight[i] = s0 * a0.weight + label[i];
            residual[i] = s1 * (a1.weight - a1.weight_f) - s0 * a0.weight_f;
        } else {
            const double weight_f = a0.weight_f + a1.weight_f;
            label[i] = d.s1[g] * weight_f;  // the positive weight drawn
            weight[i] = a0.weight + a1.weight;
            residual[i] = (d.s1[g] - 1.0) * weight_f;
        }
        net += residual[i];
        positive = positive || residual[i] > 0.0;
        negative = negative || residual[i] < 0.0;
    }
    const double total = d.total_weight, scale = plan.scale;
    auto smece = [&](double s) { return plan_integral(plan, residual, s) / total; };
    GroupedOutcome out;
    if (!(positive && negative)) {
        // One sign (or none): a positive kernel keeps it, smECEσ = |Σ r|/W at every σ.
        out.sigma_star = std::abs(net) / total;
        if (req.at_band) out.at_band = out.sigma_star;
    } else {
        // As a grid replicate starts (grid_replicates.cpp): a consistency
        // replicate near its band σ starts there.
        double start = hint, start_value = kNaN;
        const double sb = req.band_sigma;
        if (!bootstrap && sb >= hint / 1.25 && sb <= hint * 1.25) {
            start = sb;
            start_value = smece(sb);
        }
        const double star = solve_fixpoint(smece, scale, kExactLimit, start, {kReplicateTolerance, slope, start_value}).sigma;
        out.sigma_star = star * scale;
        if (req.at_band) out.at_band = smece(req.band_sigma);
        if (want_slope) out.slope = (smece(1.01 * star) - smece(0.99 * star)) / (0.02 * star);
    }
    if (mu) {
        if (plan.weight) plan.columns->mu(*plan.weight, label.data(), mu, req.count);
        else plan.columns->mu(weight.data(), label.data(), mu, req.count);
    }
    return out;
}

// Read-off nodes of one evaluation of a grid replicate, as replicate_smece
// takes them.
double grid_evaluation_cost(double sigma) {
    const double nodes = 3.0 / sigma;
    return nodes * std::log2(2.0 * nodes + 2.0);
}

// Calls cluster(i, j, span) for each run x[i … j) of two atoms or more whose
// neighbours lie within 2·reach, span its extent ± reach inside [0, 1].
template <class Cluster>
void for_each_cluster(const std::vector<double>& x, double reach, Cluster&& cluster) {
    std::size_t i = 0;
    while (i < x.size()) {
        std::size_t j = i + 1;
        while (j < x.size() && x[j] - x[j - 1] <= 2.0 * reach) ++j;
        if (j > i + 1) cluster(i, j, std::min(1.0, x[j - 1] + reach) - std::max(0.0, x[i] - reach));
        i = j;
    }
}

// Nodes of the local grids an exact evaluation of the atoms at σ smooths
// (exact_abs_integral's clusters), plus one per atom.
double exact_evaluation_cost(const std::vector<double>& x, double sigma) {
    double lattice = 2.0;
    while (lattice * sigma < kReplicateNodesPerSigma) lattice *= 2.0;
    const double reach = (std::ceil(9.0 * sigma * lattice) + 2.0) / lattice;
    double cost = static_cast<double>(x.size());
    for_each_cluster(x, reach, [&](std::size_t, std::size_t, double span) {
        const double nodes = std::max(64.0, span * lattice);
        cost += 2.0 * nodes * std::log2(4.0 * nodes);
    });
    return cost;
}

// The same for the direct sums: kernel values (each atom of a cluster, 12σ
// of nodes) and nodes (each cluster's span: atoms more than 12σ apart do not
// share one), each about as costly as a unit of exact_evaluation_cost.
double direct_evaluation_cost(const std::vector<double>& x, double sigma) {
    if (!(sigma < kMaxDirectSigma)) return std::numeric_limits<double>::infinity();
    const double reach = 6.0 * sigma, per_atom = 12.0 * kDirectNodesPerSigma;
    double cost = static_cast<double>(x.size());
    for_each_cluster(x, reach, [&](std::size_t i, std::size_t j, double span) {
        cost += static_cast<double>(j - i) * per_atom + span / sigma * kDirectNodesPerSigma;
    });
    return cost;
}

}  // namespace

bool resample_from_atoms(const Atoms& atoms, const Summary& full, const ResampleRequest& req) {
    if (!full.full() || atoms.size() == 0 || kRowsPerAtom * static_cast<double>(atoms.size()) > static_cast<double>(full.positive_rows))
        return false;
    const double hint = pilot_hint(full, req);
    // A grid replicate: its residual binned onto the work grid and
    // transformed, then about three evaluations; each at the smaller of the
    // hint and the band σ (replicate σ* spread about the hint). Its curves:
    // a transform of the band's read-off grid (consistency), two of a base
    // of 8 nodes per σ (bootstrap).
    const double low = std::min(hint, req.band_sigma);
    auto transform = [](double nodes) { return nodes * std::log2(2.0 * nodes + 2.0); };
    const double work = std::min(static_cast<double>(full.intervals), 3.0 / low);
    double grid = transform(work) + 3.0 * grid_evaluation_cost(low);
    const std::int64_t read = band_read_intervals(full, req);
    if (req.mesh_intervals > 0) {
        grid += transform(static_cast<double>(read));
        if (req.kind == ResampleKind::Bootstrap)
            grid += 2.0 * transform(std::min(static_cast<double>(full.intervals), 8.0 / low));
    }
    // The same replicate from the atoms: three to four exact evaluations at
    // σ a little above the data's (the band σ: a test's statistic; the hint
    // of a bootstrap), and its curves' columns. (A test's pilot starts from
    // the noise floor of continuous data, which overstates the σ* of a few
    // atoms' replicates.)
    const double high = 1.25 * (req.kind == ResampleKind::Bootstrap ? std::max(hint, req.band_sigma) : req.band_sigma);
    double exact = 4.0 * exact_evaluation_cost(atoms.x, high);
    if (req.mesh_intervals > 0) {
        const double values = AtomColumns::size(atoms.x, full.intervals, req.band_sigma, read);
        if (values > kMaxColumnValues) return false;
        // Summed twice a replicate; made once (four kernel evaluations a value).
        exact += 2.0 * values + 40.0 * values / static_cast<double>(req.count);
    }
    return exact <= 2.0 * grid || exact <= kSmallExactCost;
}

Replicates resample(const Atoms& atoms, const Summary& full, const ResampleRequest& req) {
    if (!full.full()) throw std::logic_error("resampling needs a full summary");
    if (req.count < 1) throw std::invalid_argument("the number of replicates must be at least 1");
    if (!(req.band_sigma > 0.0)) throw std::invalid_argument("the band bandwidth must be positive");
    if (atoms.mapping != full.mapping) throw std::logic_error("atoms and summary of different metrics");
    const bool curves = req.mesh_intervals > 0;
    GroupedPlan plan{atoms, req, full.mapping.span, {}, std::nullopt, std::nullopt, false};
    // Each atom's cell as the pass placed its rows (bin_kernel.cpp, to_nodes).
    const auto g = static_cast<double>(full.intervals);
    plan.cell.resize(atoms.size());
    for (std::size_t i = 0; i < atoms.size(); ++i)
        plan.cell[i] = std::min(static_cast<std::int64_t>(atoms.x[i] * g), full.intervals - 1) / kIntervalsPerResampleCell;
    const std::int64_t band = std::min(full.intervals, intervals_for_sigma(req.band_sigma));
    if (curves) {
        plan.columns.emplace(atoms.x, full.intervals, req.band_sigma, band_read_intervals(full, req), full.mapping,
                             req.mesh_intervals);
        if (req.kind == ResampleKind::Consistency) {
            std::vector<double> weight(atoms.size());
            for (std::size_t i = 0; i < atoms.size(); ++i) weight[i] = atoms.by_label[0][i].weight + atoms.by_label[1][i].weight;
            plan.weight = plan.columns->smoothed_weight(weight.data());
        }
    }

    Replicates out;
    out.sigma_star.assign(static_cast<std::size_t>(req.count), 0.0);
    out.smece_at_band.assign(static_cast<std::size_t>(req.count), 0.0);
    out.mesh_points = curves ? mesh_points(full.mapping, band, req.mesh_intervals) : 0;
    assign_interruptibly(out.mu, static_cast<std::size_t>(req.count * out.mesh_points), kNaN);
    auto mu_of = [&](std::int64_t b) { return curves ? out.mu.data() + b : nullptr; };
    auto record = [&](std::int64_t b, const GroupedOutcome& o) {
        out.sigma_star[static_cast<std::size_t>(b)] = o.sigma_star;
        out.smece_at_band[static_cast<std::size_t>(b)] = o.at_band;
    };
    // The pilot and then the rest, on the groups the summary's own
    // replicates draw from (resample(const Summary&, …)): the same draws.
    const double scale = full.mapping.span, limit = replicate_limit(full);
    double hint = pilot_hint(full, req);
    // One evaluation for every replicate of the call (smECEσ then moves
    // smoothly with σ in each search): the cheaper one near the σ* expected.
    const double expected = std::min(hint, req.band_sigma);
    plan.direct = direct_evaluation_cost(atoms.x, expected) < exact_evaluation_cost(atoms.x, expected);
    const ResampleGroups pilot_groups(full.cells, hint, req.kind, req.weights, full.weight_exp, 1, req.threads);
    const GroupedOutcome pilot = grouped_replicate(plan, pilot_groups, 0, hint, kNaN, true, mu_of(0));
    record(0, pilot);
    hint = std::max(pilot.sigma_star / scale, limit);
    if (req.count > 1) {
        const ResampleGroups groups(full.cells, hint, req.kind, req.weights, full.weight_exp, req.count - 1, req.threads);
        const int nthreads = thread_count(req.threads, req.count - 1, 1);
        // Runs of 8 replicates, so that no two threads write the same cache
        // line of the curves (a mesh point's replicates lie side by side).
        constexpr std::int64_t kRun = 8;
        const std::int64_t runs = (req.count - 1 + kRun - 1) / kRun;
        parallel_items<char>(nthreads, runs, [&](std::int64_t r, char&) {
            const std::int64_t begin = 1 + r * kRun, end = std::min(req.count, begin + kRun);
            for (std::int64_t b = begin; b < end; ++b) {
                interruption_point();
                record(b, grouped_replicate(plan, groups, b, hint, pilot.slope, false, mu_of(b)));
            }
        });
    }
    add_band(req, out);
    return out;
}

}  // namespace smoothece
