#include "summary/summary.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "runtime/errors.hpp"

namespace smoothece {

std::int64_t intervals_for_sigma(double sigma) {
    if (!(sigma > 0.0) || !std::isfinite(sigma))
        throw std::invalid_argument("sigma must be a positive finite number, got " + std::to_string(sigma));
    std::int64_t g = kMinIntervals;
    while (g < kMaxIntervals && static_cast<double>(g) * sigma < kNodesPerSigma) g *= 2;
    return g;
}

double min_sigma_for(std::int64_t intervals) { return kNodesPerSigma / static_cast<double>(intervals); }

std::int64_t first_intervals(std::int64_t n, const Mapping& mapping, Content content) {
    const double floor = 0.3 / std::cbrt(static_cast<double>(std::max<std::int64_t>(n, 1)));
    if (mapping.is_logit()) {
        // Logit residuals spread over more units than the probability axis;
        // the same third of the floor, in grid units.
        // A residual summary of many rows resolves the floor at once: a second
        // pass (two logarithms a row) would cost more than the finer grid.
        std::int64_t cap = kLogitFirstIntervalsCap;
        if (content == Content::Residual)
            while (cap < kLogitResidualFirstIntervalsCap && 2 * cap * kLogitRowsPerInterval <= n) cap *= 2;
        return std::min(cap, intervals_for_sigma(floor / mapping.span));
    }
    const double fraction =
        content == Content::Residual && n >= kResidualFloorRows ? kResidualFloorFraction : kFirstGridFloorFraction;
    return std::min(kFirstIntervalsCap, intervals_for_sigma(fraction * floor));
}

void ResampleCells::resize(std::int64_t cells_) {
    cells = cells_;
    const auto slots_ = static_cast<std::size_t>(2 * cells_);
    rows.assign(slots_, 0.0);
    weight.assign(slots_, 0.0);
    weight_sq.assign(slots_, 0.0);
    weight_f.assign(slots_, 0.0);
}

double Summary::total_weight() const { return std::ldexp(weight, -weight_exp); }

Summary Summary::empty(const Mapping& mapping, Content content, std::int64_t intervals) {
    Summary s;
    s.mapping = mapping;
    s.content = content;
    s.intervals = intervals;
    const auto nodes = static_cast<std::size_t>(intervals + 1);
    s.residual.assign(nodes, 0.0);
    if (content == Content::Full) {
        s.w0.assign(nodes, 0.0);
        s.w1.assign(nodes, 0.0);
        s.f0.assign(nodes, 0.0);
        s.f1.assign(nodes, 0.0);
        s.cells.resize(std::max<std::int64_t>(1, intervals / kIntervalsPerResampleCell));
    }
    return s;
}

std::vector<double> rebin_nodes(const std::vector<double>& fine, std::int64_t coarse) {
    const auto intervals = static_cast<std::int64_t>(fine.size()) - 1;
    std::vector<double> out(static_cast<std::size_t>(coarse + 1), 0.0);
    if (intervals == 2 * coarse && coarse >= 4) {
        // Halving (the nested levels): even nodes sit on coarse nodes (λ = 0),
        // odd ones mid-cell (λ = ½), whose cubic weights are (−1, 9, 9, −1)/16:
        // a fixed stencil, with the two end cells reflected as spread_cubic does.
        // The odd nodes of cells 1..coarse−3 go by the stencil; as a gather
        // (each coarse node reads its four odd neighbours) the loop vectorizes.
        const double* v = fine.data();
        double* c = out.data();
        for (std::int64_t q = 0; q <= coarse; ++q) c[q] = v[2 * q];
        auto odd = [&](std::int64_t q) { return q >= 1 && q + 2 < coarse ? v[2 * q + 1] : 0.0; };
        auto stencil = [&](std::int64_t p) { return (9.0 * (odd(p) + odd(p - 1)) - (odd(p + 1) + odd(p - 2))) / 16.0; };
        const std::int64_t interior_end = std::max<std::int64_t>(3, coarse - 4);  // [3, end): no bounds to check
        for (std::int64_t p = 0; p < 3; ++p) c[p] += stencil(p);
        for (std::int64_t p = 3; p < interior_end; ++p)
            c[p] += (9.0 * (v[2 * p + 1] + v[2 * p - 1]) - (v[2 * p + 3] + v[2 * p - 3])) / 16.0;
        for (std::int64_t p = interior_end; p <= coarse; ++p) c[p] += stencil(p);
        for (std::int64_t q : {std::int64_t{0}, coarse - 2, coarse - 1}) {
            const double m = v[2 * q + 1];
            const double moments[4] = {m, m * 0.5, m * 0.25, m * 0.125};
            spread_cubic(out, q, moments);
        }
        return out;
    }
    for (std::int64_t j = 0; j <= intervals; ++j) {
        const double v = fine[static_cast<std::size_t>(j)];
        if (v == 0.0) continue;
        // Node j sits at j·coarse/G on the coarse grid: cell q, fraction λ.
        const std::int64_t whole = j * coarse;
        const std::int64_t q = std::min(whole / intervals, coarse - 1);
        const double lam = static_cast<double>(whole - q * intervals) / static_cast<double>(intervals);
        const double m[4] = {v, v * lam, v * lam * lam, v * lam * lam * lam};
        spread_cubic(out, q, m);
    }
    return out;
}

namespace {

void add_to(std::vector<double>& a, const std::vector<double>& b) {
    for (std::size_t j = 0; j < a.size(); ++j) a[j] += b[j];
}

// Multiplies by 2^delta (exact, but for underflow of negligible sums).
void scale_by(std::vector<double>& a, int delta) {
    for (double& v : a) v = std::ldexp(v, delta);
}

}  // namespace

void Summary::derive_residual() {
    for (std::size_t j = 0; j < residual.size(); ++j) residual[j] = w1[j] - f0[j] - f1[j];
}

Summary Summary::restricted(std::int64_t coarse, bool residual_only) const {
    if (coarse == intervals) return *this;
    if (coarse < 1 || coarse > intervals) throw std::logic_error("restricting to a finer grid");
    Summary out;
    out.mapping = mapping;
    out.intervals = coarse;
    out.rows = rows;
    out.positive_rows = positive_rows;
    out.weight = weight;
    out.weight_exp = weight_exp;
    if (full() && !residual_only) {
        out.content = Content::Full;
        out.w0 = rebin_nodes(w0, coarse);
        out.w1 = rebin_nodes(w1, coarse);
        out.f0 = rebin_nodes(f0, coarse);
        out.f1 = rebin_nodes(f1, coarse);
        out.cells = cells;
        out.residual.resize(out.w0.size());
        out.derive_residual();
    } else {
        out.content = Content::Residual;
        out.residual = rebin_nodes(residual, coarse);
    }
    return out;
}

void Summary::rescale(int new_exp) {
    if (new_exp == weight_exp) return;
    const int delta = new_exp - weight_exp;
    for (auto* v : {&residual, &w0, &w1, &f0, &f1, &cells.weight, &cells.weight_f}) scale_by(*v, delta);
    scale_by(cells.weight_sq, 2 * delta);
    weight = std::ldexp(weight, delta);
    weight_exp = new_exp;
}

void Summary::merge(const Summary& other) {
    if (other.intervals != intervals || other.content != content || other.mapping != mapping)
        throw std::logic_error("merging summaries of different shape");
    if (other.weight > 0.0 && (weight == 0.0 || other.weight_exp < weight_exp)) {
        // Align on the smaller exponent (the larger weights), scaling the other way.
        if (weight == 0.0) weight_exp = other.weight_exp;
        else rescale(other.weight_exp);
    }
    const Summary* add = &other;
    Summary aligned;
    if (other.weight_exp != weight_exp) {
        aligned = other;
        aligned.rescale(weight_exp);
        add = &aligned;
    }
    if (full()) {
        add_to(w0, add->w0);
        add_to(w1, add->w1);
        add_to(f0, add->f0);
        add_to(f1, add->f1);
        add_to(cells.rows, add->cells.rows);
        add_to(cells.weight, add->cells.weight);
        add_to(cells.weight_sq, add->cells.weight_sq);
        add_to(cells.weight_f, add->cells.weight_f);
        derive_residual();
    } else {
        add_to(residual, add->residual);
    }
    if (rows + add->rows < rows)
        throw InputError("the row count would overflow (more than 2^64 - 1 rows)", "rows", -1, static_cast<double>(rows), 1, 1);
    rows += add->rows;
    positive_rows += add->positive_rows;
    weight += add->weight;
}

}  // namespace smoothece
