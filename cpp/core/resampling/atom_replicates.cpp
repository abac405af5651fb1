// Replicates of exact atoms (few distinct predictions): each atom draws as a
// resampling group of its own, and every σ is evaluated exactly.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "pass/rows.hpp"
#include "resampling/draws.hpp"
#include "resampling/resample.hpp"
#include "runtime/pool.hpp"
#include "runtime/random.hpp"
#include "smoothing/curves.hpp"
#include "smoothing/exact_integral.hpp"
#include "smoothing/fixpoint.hpp"
#include "smoothing/spectrum.hpp"

namespace smoothece {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

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
    out.mu.assign(static_cast<std::size_t>(req.count * out.mesh_points), kNaN);
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
    const int nthreads = thread_count(req.threads, req.count, 1);
    parallel_for(nthreads, [&](int t) {
        Atoms rep = atoms;
        std::vector<double> residual(n);
        for (std::int64_t b = t; b < req.count; b += nthreads) {
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
            const Fixpoint fix = solve_fixpoint(smece, scale, 1e-300, hint, 1e-9);
            out.sigma_star[static_cast<std::size_t>(b)] = fix.resolved ? fix.sigma * scale : 0.0;
            if (req.at_band) out.smece_at_band[static_cast<std::size_t>(b)] = smece(req.band_sigma);
            if (curves) {
                const Summary s = summarise_atoms(rep, Content::Full, band_intervals);
                std::vector<double> weight(s.w0.size()), label(s.w0.size()), w(s.w0.size());
                for (std::size_t j = 0; j < w.size(); ++j) w[j] = s.w0[j] + s.w1[j];
                Spectrum(w.data(), band_intervals).evaluate(curve_sigma, weight.data(), nullptr);
                Spectrum(s.w1.data(), band_intervals).evaluate(curve_sigma, label.data(), nullptr);
                mu_on_mesh(weight, label, atoms.mapping, req.mesh_intervals, out.mu.data() + b, req.count);
            }
        }
    });
    add_band(req, out);
    return out;
}

}  // namespace smoothece
