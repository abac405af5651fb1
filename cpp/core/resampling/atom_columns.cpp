#include "resampling/atom_columns.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "smoothing/curves.hpp"
#include "summary/summary.hpp"

namespace smoothece {
namespace {

// A column holds the read nodes within this many σ of its atom (plus the
// binning's reach): beyond, the kernel is below e^-72 ≈ 5e-32 of its peak,
// far below the density's floor for μ̂ (1e-12 of the largest weight).
constexpr double kColumnReach = 12.0;
// Images of the reflected kernel summed: those within this many σ (beyond,
// e^-800 underflows to 0).
constexpr double kImageReach = 40.0;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

// K̃σ(t, y) = Σ_n φσ(t − y − 2n) + φσ(t + y − 2n): the reflected Gaussian,
// which Spectrum applies through the Fourier series of its period 2.
double reflected_kernel(double t, double y, double sigma) {
    const double reach = kImageReach * sigma, half_inv_var = 0.5 / (sigma * sigma);
    double sum = 0.0;
    for (const double base : {t - y, t + y}) {
        const double n0 = std::ceil((base - reach) / 2.0), n1 = std::floor((base + reach) / 2.0);
        for (double n = n0; n <= n1; n += 1.0) {
            const double d = base - 2.0 * n;
            sum += std::exp(-d * d * half_inv_var);
        }
    }
    return sum * kInvSqrt2Pi / sigma;
}

// A unit mass at grid position x binned onto a grid of g intervals as a
// pass bins a row: the cubic weights of its cell's power sums on nodes
// j − 1 … j + 2, reflected into [0, g] (spread_cubic, summarise_atoms).
void binned_unit(double x, std::int64_t g, std::int64_t (&node)[4], double (&mass)[4]) {
    const double u = x * static_cast<double>(g);
    const std::int64_t j = std::min(static_cast<std::int64_t>(u), g - 1);
    const double lam = u - static_cast<double>(j);
    const double m[4] = {1.0, lam, lam * lam, lam * lam * lam};
    const CubicWeights w = cubic_weights(m);
    const double weights[4] = {w.before, w.left, w.right, w.after};
    for (int k = 0; k < 4; ++k) {
        node[k] = reflected_node(j - 1 + k, g);
        mass[k] = weights[k];
    }
}

// The read nodes [first, last] a column at x covers.
void column_range(double x, std::int64_t bin, double sigma, std::int64_t read, std::int64_t& first,
                  std::int64_t& last) {
    const double reach = kColumnReach * sigma + 2.0 / static_cast<double>(bin);
    const auto r = static_cast<double>(read);
    first = static_cast<std::int64_t>(std::max(0.0, std::floor((x - reach) * r)));
    last = static_cast<std::int64_t>(std::min(r, std::ceil((x + reach) * r)));
}

// out[start[i] + k] += factor[i] · values[offset[i] + k], k < offset[i + 1] −
// offset[i]: each atom's column (or its values at some nodes) scaled by its
// factor and summed in atom order; atoms of factor 0 add nothing.
template <class Start>
void add_columns(const double* factor, const std::vector<Start>& start, const std::vector<std::size_t>& offset,
                 const std::vector<double>& values, double* out) {
    for (std::size_t i = 0; i + 1 < offset.size(); ++i) {
        const double fi = factor[i];
        if (fi == 0.0) continue;
        const double* column = values.data() + offset[i];
        double* sums = out + start[i];
        const std::size_t count = offset[i + 1] - offset[i];
        for (std::size_t k = 0; k < count; ++k) sums[k] += fi * column[k];
    }
}

}  // namespace

double AtomColumns::size(const std::vector<double>& x, std::int64_t bin, double sigma, std::int64_t read) {
    double total = 0.0;
    for (const double xi : x) {
        std::int64_t first, last;
        column_range(xi, bin, sigma, read, first, last);
        total += static_cast<double>(last - first + 1);
    }
    return total;
}

AtomColumns::AtomColumns(const std::vector<double>& x, std::int64_t bin, double sigma, std::int64_t read,
                         const Mapping& mapping, std::int64_t mesh_intervals)
    : read_(read), mapping_(mapping), mesh_intervals_(mesh_intervals), first_(x.size()), offset_(x.size() + 1, 0),
      needed_first_(x.size() + 1, 0), label_offset_(x.size() + 1, 0) {
    if (bin < 2 || read < 1 || !(sigma > 0.0)) throw std::logic_error("atom columns need a grid and sigma > 0");
    for (std::size_t i = 0; i < x.size(); ++i) {
        std::int64_t last;
        column_range(x[i], bin, sigma, read, first_[i], last);
        offset_[i + 1] = offset_[i] + static_cast<std::size_t>(last - first_[i] + 1);
    }
    for (std::size_t i = 0; i < x.size(); ++i) {
        const std::int64_t begin = first_[i], end = begin + static_cast<std::int64_t>(offset_[i + 1] - offset_[i]);
        if (!runs_.empty() && begin <= runs_.back().second) runs_.back().second = std::max(runs_.back().second, end);
        else runs_.emplace_back(begin, end);
    }
    values_.resize(offset_.back());
    for (std::size_t i = 0; i < x.size(); ++i) {
        std::int64_t node[4];
        double mass[4];
        binned_unit(x[i], bin, node, mass);
        double* column = values_.data() + offset_[i];
        const std::size_t count = offset_[i + 1] - offset_[i];
        for (std::size_t k = 0; k < count; ++k) {
            const double t = static_cast<double>(first_[i] + static_cast<std::int64_t>(k)) / static_cast<double>(read);
            double v = 0.0;
            for (int m = 0; m < 4; ++m)
                v += mass[m] * reflected_kernel(t, static_cast<double>(node[m]) / static_cast<double>(bin), sigma);
            column[k] = v;
        }
    }
    // Each column's values at the nodes the mesh reads.
    needed_ = mesh_nodes(mapping, read, mesh_intervals);
    for (std::size_t i = 0; i < x.size(); ++i) {
        const std::int64_t begin = first_[i], end = begin + static_cast<std::int64_t>(offset_[i + 1] - offset_[i]);
        const auto q = static_cast<std::size_t>(std::lower_bound(needed_.begin(), needed_.end(), begin) - needed_.begin());
        needed_first_[i] = q;
        std::size_t k = q;
        for (; k < needed_.size() && needed_[k] < end; ++k)
            label_values_.push_back(values_[offset_[i] + static_cast<std::size_t>(needed_[k] - begin)]);
        label_offset_[i + 1] = label_values_.size();
        if (k == q) continue;
        if (!needed_runs_.empty() && q <= needed_runs_.back().second) needed_runs_.back().second = std::max(needed_runs_.back().second, k);
        else needed_runs_.emplace_back(q, k);
    }
    // The mesh points some column reaches: a replicate reads only those.
    std::vector<double> reached(static_cast<std::size_t>(read + 1), 0.0);
    for (const auto& [begin, end] : runs_)
        std::fill(reached.begin() + begin, reached.begin() + end, 1.0);
    live_ = mesh_points_reached(reached, mapping, mesh_intervals);
}

std::vector<double> AtomColumns::sums(const double* masses) const {
    std::vector<double> out(static_cast<std::size_t>(read_ + 1), 0.0);
    add_columns(masses, first_, offset_, values_, out.data());
    return out;
}

double AtomColumns::add_weight(const double* weight, std::vector<double>& w) const {
    add_columns(weight, first_, offset_, values_, w.data());
    double most = 0.0;
    for (const auto& [begin, end] : runs_)
        for (std::int64_t k = begin; k < end; ++k) most = std::max(most, w[static_cast<std::size_t>(k)]);
    return most;
}

AtomColumns::Weight AtomColumns::smoothed_weight(const double* weight) const {
    Weight out;
    out.sums.assign(static_cast<std::size_t>(read_ + 1), 0.0);
    out.most = add_weight(weight, out.sums);
    return out;
}

void AtomColumns::mu_from(const std::vector<double>& w, double most, const double* label, std::vector<double>& l,
                          double* out, std::int64_t stride) const {
    // The label's sums at the needed nodes, atom by atom as at every node
    // (the same additions in the same order), then where mu_on_mesh reads
    // them; both zeroed again after, also when it throws (at_needed is zero
    // between calls, whichever columns used it last).
    thread_local std::vector<double> at_needed;
    if (at_needed.size() < needed_.size()) at_needed.resize(needed_.size(), 0.0);
    add_columns(label, needed_first_, label_offset_, label_values_, at_needed.data());
    struct Rezero {
        std::vector<double>& l;
        std::vector<double>& at_needed;
        const AtomColumns& columns;
        ~Rezero() {
            for (const auto& [begin, end] : columns.needed_runs_) {
                for (std::size_t q = begin; q < end; ++q) l[static_cast<std::size_t>(columns.needed_[q])] = 0.0;
                std::fill(at_needed.begin() + static_cast<std::ptrdiff_t>(begin),
                          at_needed.begin() + static_cast<std::ptrdiff_t>(end), 0.0);
            }
        }
    } rezero{l, at_needed, *this};
    for (const auto& [begin, end] : needed_runs_)
        for (std::size_t q = begin; q < end; ++q) l[static_cast<std::size_t>(needed_[q])] = at_needed[q];
    mu_on_mesh(w, l, mapping_, mesh_intervals_, out, stride, most, &live_);
}

void AtomColumns::mu(const double* weight, const double* label, double* out, std::int64_t stride) const {
    // Sums at every read node, zero but where a column reaches (kept zero
    // between replicates: each one zeroes what it wrote, also when it throws).
    thread_local std::vector<double> w, l;
    const auto nodes = static_cast<std::size_t>(read_ + 1);
    if (w.size() != nodes) {
        w.assign(nodes, 0.0);
        l.assign(nodes, 0.0);
    }
    struct Rezero {
        std::vector<double>& w;
        const std::vector<std::pair<std::int64_t, std::int64_t>>& runs;
        ~Rezero() {
            for (const auto& [begin, end] : runs) std::fill(w.begin() + begin, w.begin() + end, 0.0);
        }
    } rezero{w, runs_};
    const double most = add_weight(weight, w);
    mu_from(w, most, label, l, out, stride);
}

void AtomColumns::mu(const Weight& weight, const double* label, double* out, std::int64_t stride) const {
    thread_local std::vector<double> l;
    const auto nodes = static_cast<std::size_t>(read_ + 1);
    if (l.size() != nodes) l.assign(nodes, 0.0);
    mu_from(weight.sums, weight.most, label, l, out, stride);
}

}  // namespace smoothece
