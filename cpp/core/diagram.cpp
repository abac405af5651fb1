#include "diagram.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>

#include "smece.hpp"
#include "smoothing.hpp"

namespace smoothece {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The grid sums at the resolution σ needs (restricted from finer sums).
GridSums sums_for_sigma(const GridSums& full, double sigma) {
    const std::int64_t g = std::min(intervals_for_sigma(sigma), full.intervals);
    return g == full.intervals ? full : full.restrict_to(g);
}

std::int64_t mesh_step(std::int64_t intervals, std::int64_t mesh_intervals) {
    if (mesh_intervals < 1) throw std::invalid_argument("the mesh needs at least one interval");
    const std::int64_t m = std::min(mesh_intervals, intervals);
    if (intervals % m != 0) throw std::invalid_argument("mesh intervals must be a power of two");
    return intervals / m;
}

// μ̂σ = smoothed Σwy / smoothed Σw, NaN where the density is negligible
// (relative 1e-12), clamped to [0, 1] against the rounding of the cubic binning.
double ratio(double label, double weight, double weight_floor) {
    if (!(weight > weight_floor)) return kNaN;
    return std::min(1.0, std::max(0.0, label / weight));
}

// ∫₀¹|g| by the trapezoid rule with the kink of |g| in sign-change cells
// integrated on the linear interpolant (diagnostic accuracy, O(h²)).
double integrate_abs_trapezoid(const std::vector<double>& g) {
    const auto intervals = static_cast<std::int64_t>(g.size()) - 1;
    double sum = 0.0;
    for (std::size_t j = 0; j + 1 < g.size(); ++j) {
        const double a = g[j], b = g[j + 1];
        sum += ((a < 0.0) != (b < 0.0) && a != 0.0 && b != 0.0) ? (a * a + b * b) / (2.0 * (std::fabs(a) + std::fabs(b)))
                                                               : 0.5 * (std::fabs(a) + std::fabs(b));
    }
    return sum / static_cast<double>(intervals);
}

std::uint64_t splitmix64(std::uint64_t x) {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

}  // namespace

DiagramCurves diagram_at(const GridSums& full, double sigma, std::int64_t mesh_intervals) {
    if (!full.full()) throw std::logic_error("diagram_at needs weight and label sums");
    const GridSums sums = sums_for_sigma(full, sigma);
    const std::int64_t g = sums.intervals;
    const auto nodes = static_cast<std::size_t>(g + 1);
    std::vector<double> weight(nodes), label(nodes), residual(nodes), antiderivative(nodes);
    SmoothedMasses(sums.weight.data(), g).evaluate(sigma, weight.data(), nullptr);
    SmoothedMasses(sums.label.data(), g).evaluate(sigma, label.data(), nullptr);
    SmoothedMasses(sums.residual.data(), g).evaluate(sigma, residual.data(), antiderivative.data());

    DiagramCurves out;
    out.sigma = sigma;
    out.total_weight = sums.total_weight;
    out.count = sums.count;
    double positive = 0.0;
    for (double v : sums.label) positive += v;
    out.positive_weight = positive;
    const double negative = sums.total_weight - positive;
    out.smece_sigma = integrate_abs(residual.data(), antiderivative.data(), g) / sums.total_weight;

    // smẼCE = (1/W) ∫ |Σ wyK̃ − t Σ wK̃| dt, on the grid nodes.
    std::vector<double> gap(nodes);
    for (std::size_t j = 0; j < nodes; ++j) gap[j] = label[j] - static_cast<double>(j) / static_cast<double>(g) * weight[j];
    out.smece_tilde = integrate_abs_trapezoid(gap) / sums.total_weight;

    const std::int64_t step = mesh_step(g, mesh_intervals);
    const double floor = 1e-12 * *std::max_element(weight.begin(), weight.end());
    for (std::int64_t j = 0; j <= g; j += step) {
        const auto ju = static_cast<std::size_t>(j);
        out.mesh.push_back(static_cast<double>(j) / static_cast<double>(g));
        out.density.push_back(weight[ju] / sums.total_weight);
        out.density_positive.push_back(positive > 0.0 ? label[ju] / positive : kNaN);
        out.density_negative.push_back(negative > 0.0 ? (weight[ju] - label[ju]) / negative : kNaN);
        out.mu.push_back(ratio(label[ju], weight[ju], floor));
    }
    return out;
}

DiagramCurves diagram_of_rows(const Inputs& in, double sigma, std::int64_t mesh_intervals, int threads) {
    if (sigma > 0.0) return diagram_at(bin_rows(in, intervals_for_sigma(sigma), /*full=*/true, threads), sigma, mesh_intervals);
    // Two passes: σ* from the residual sums alone (the smece pass, with its
    // small cells), then the three sums on the grid that σ* needs, which is
    // usually far coarser than the fine grid (a third of the cache misses).
    const RowsFixpoint fix = fixpoint_of_rows(in, first_intervals_for_rows(in.f.size), /*full=*/false, threads);
    // σ* = 0 only when every residual is 0 (f = y on every row); the curves
    // are then drawn at the smallest σ the grid resolves.
    const double draw_sigma = std::max(fix.sigma, min_sigma_for(fix.sums.intervals));
    DiagramCurves out =
        diagram_at(bin_rows(in, intervals_for_sigma(draw_sigma), /*full=*/true, threads), draw_sigma, mesh_intervals);
    out.sigma = fix.sigma;
    return out;
}

std::int64_t resample_cells_for_sigma(double sigma) {
    return std::min<std::int64_t>(std::int64_t{1} << 14, intervals_for_sigma(sigma));
}

CellCounts::CellCounts(std::int64_t cells_)
    : cells(cells_),
      count(static_cast<std::size_t>(2 * cells_), 0),
      weight(static_cast<std::size_t>(2 * cells_), 0.0),
      weighted_f(static_cast<std::size_t>(2 * cells_), 0.0) {}

void CellCounts::merge(const CellCounts& other) {
    if (other.cells != cells) throw std::invalid_argument("cannot merge cell counts of different resolution");
    for (std::size_t g = 0; g < count.size(); ++g) {
        count[g] += other.count[g];
        weight[g] += other.weight[g];
        weighted_f[g] += other.weighted_f[g];
    }
}

CellCounts CellCounts::coarsen(std::int64_t coarse) const {
    if (coarse < 1 || cells % coarse != 0) throw std::invalid_argument("coarse cells must divide the cells");
    const std::int64_t factor = cells / coarse;
    CellCounts out(coarse);
    for (std::int64_t g = 0; g < 2 * cells; ++g) {
        const auto src = static_cast<std::size_t>(g);
        const auto dst = static_cast<std::size_t>(2 * ((g / 2) / factor) + g % 2);
        out.count[dst] += count[src];
        out.weight[dst] += weight[src];
        out.weighted_f[dst] += weighted_f[src];
    }
    return out;
}

std::int64_t CellCounts::rows() const {
    std::int64_t n = 0;
    for (std::int64_t c : count) n += c;
    return n;
}

CellCounts count_cells(const Inputs& in, std::int64_t cells, int threads) {
    const std::int64_t n = in.f.size;
    const int nthreads = effective_threads(threads, n, std::max<std::int64_t>(1 << 16, 8 * cells));
    std::vector<CellCounts> acc(static_cast<std::size_t>(nthreads));
    parallel_for(nthreads, [&](int t) {
        CellCounts& a = acc[static_cast<std::size_t>(t)];
        a = CellCounts(cells);
        const std::int64_t begin = n * t / nthreads, end = n * (t + 1) / nthreads;
        // The rows were checked by the binning pass over the same rows; only
        // the clamp of an opted-in clip is repeated here.
        with_input_types(in, [&](auto f_tag, auto y_tag, auto w_tag) {
            using F = decltype(f_tag);
            using Y = decltype(y_tag);
            using W = decltype(w_tag);
            const double scale = static_cast<double>(cells);
            for (std::int64_t i = begin; i < end; ++i) {
                const double f = std::min(std::max(static_cast<double>(in.f.at<F>(i)), 0.0), 1.0);
                double w = 1.0;
                if constexpr (!std::is_same_v<W, NoWeights>) w = static_cast<double>(in.w.at<W>(i));
                const auto cell = std::min(static_cast<std::int64_t>(f * scale), cells - 1);
                const auto g = static_cast<std::size_t>(2 * cell + (in.y.at<Y>(i) != Y(0) ? 1 : 0));
                a.count[g] += 1;
                a.weight[g] += w;
                a.weighted_f[g] += w * f;
            }
            return 0;
        });
    });
    for (std::size_t t = 1; t < acc.size(); ++t) acc[0].merge(acc[t]);
    return std::move(acc[0]);
}

CellHistogram groups_of(const CellCounts& counts) {
    CellHistogram out;
    out.cells = counts.cells;
    for (std::int64_t g = 0; g < 2 * counts.cells; ++g) {
        const auto gi = static_cast<std::size_t>(g);
        const std::int64_t count = counts.count[gi];
        if (count == 0) continue;
        const double w = counts.weight[gi];
        // Zero-weight rows stay in the draw (they are rows) but carry no mass.
        out.f_mean.push_back(w > 0.0 ? counts.weighted_f[gi] / w
                                     : (static_cast<double>(g / 2) + 0.5) / static_cast<double>(counts.cells));
        out.w_mean.push_back(w / static_cast<double>(count));
        out.label.push_back(static_cast<std::uint8_t>(g % 2));
        out.cell.push_back(g / 2);
        out.count.push_back(count);
        out.rows += count;
    }
    return out;
}

Replicates resample(const CellHistogram& hist, ResampleKind kind, std::int64_t replicates, std::uint64_t seed,
                    double band_sigma, std::int64_t mesh_intervals, int threads) {
    if (replicates < 1) throw std::invalid_argument("the number of replicates must be at least 1");
    if (!(band_sigma > 0.0)) throw std::invalid_argument("the band bandwidth must be positive");
    const std::int64_t first_intervals = std::min(kDefaultFineIntervals, intervals_for_sigma(0.5 * band_sigma));
    const std::int64_t mesh_points = std::min(mesh_intervals, intervals_for_sigma(band_sigma)) + 1;

    Replicates out;
    out.mesh_points = mesh_points;
    out.sigma_star.assign(static_cast<std::size_t>(replicates), 0.0);
    out.smece_at_band.assign(static_cast<std::size_t>(replicates), 0.0);
    out.mu.assign(static_cast<std::size_t>(replicates * mesh_points), kNaN);

    const int nthreads = effective_threads(threads, replicates, 1);
    parallel_for(nthreads, [&](int t) {
        std::vector<double> f, w;
        std::vector<std::uint8_t> y;
        for (std::int64_t b = t; b < replicates; b += nthreads) {
            std::mt19937_64 rng(splitmix64(seed ^ splitmix64(static_cast<std::uint64_t>(b))));
            f.clear();
            w.clear();
            y.clear();
            auto add = [&](double fi, std::uint8_t yi, double wi) {
                if (wi > 0.0) {
                    f.push_back(fi);
                    y.push_back(yi);
                    w.push_back(wi);
                }
            };
            const std::size_t groups = hist.count.size();
            if (kind == ResampleKind::Bootstrap) {
                // Multinomial(n; count_g / n) as a chain of binomials, each
                // conditional on the rows not yet drawn.
                std::int64_t left_draws = hist.rows, left_rows = hist.rows;
                for (std::size_t g = 0; g < groups && left_draws > 0; ++g) {
                    const std::int64_t k =
                        g + 1 == groups ? left_draws
                                        : std::binomial_distribution<std::int64_t>(
                                              left_draws, static_cast<double>(hist.count[g]) / static_cast<double>(left_rows))(rng);
                    left_draws -= k;
                    left_rows -= hist.count[g];
                    add(hist.f_mean[g], hist.label[g], static_cast<double>(k) * hist.w_mean[g]);
                }
            } else {
                // Per cell, the number of positives ~ Binomial(rows, f̄).
                for (std::size_t g = 0; g < groups;) {
                    const std::size_t end = g + 1 < groups && hist.cell[g + 1] == hist.cell[g] ? g + 2 : g + 1;
                    std::int64_t rows = 0;
                    double wsum = 0.0, wf = 0.0;
                    for (std::size_t h = g; h < end; ++h) {
                        const double wh = hist.w_mean[h] * static_cast<double>(hist.count[h]);
                        rows += hist.count[h];
                        wsum += wh;
                        wf += wh * hist.f_mean[h];
                    }
                    const double fbar = wsum > 0.0 ? wf / wsum : hist.f_mean[g];
                    const double wbar = wsum / static_cast<double>(rows);
                    const std::int64_t k = std::binomial_distribution<std::int64_t>(rows, std::min(1.0, std::max(0.0, fbar)))(rng);
                    add(fbar, 1, static_cast<double>(k) * wbar);
                    add(fbar, 0, static_cast<double>(rows - k) * wbar);
                    g = end;
                }
            }
            Inputs in;
            const auto size = static_cast<std::int64_t>(f.size());
            in.f = {reinterpret_cast<const char*>(f.data()), size, sizeof(double), DType::Float64, "f"};
            in.y = {reinterpret_cast<const char*>(y.data()), size, sizeof(std::uint8_t), DType::UInt8, "y"};
            in.w = {reinterpret_cast<const char*>(w.data()), size, sizeof(double), DType::Float64, "weights"};
            RowsFixpoint fix = fixpoint_of_rows(in, first_intervals, /*full=*/true, 1, band_sigma);
            out.sigma_star[static_cast<std::size_t>(b)] = fix.sigma;
            const DiagramCurves curves = diagram_at(fix.sums, band_sigma, mesh_intervals);
            out.smece_at_band[static_cast<std::size_t>(b)] = curves.smece_sigma;
            std::copy(curves.mu.begin(), curves.mu.end(), out.mu.begin() + b * mesh_points);
        }
    });
    return out;
}

}  // namespace smoothece
