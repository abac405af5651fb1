#include "grid.hpp"

#include "bin_kernel.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <type_traits>

namespace smoothece {
namespace {

inline bool is_weight(double w) { return w >= 0.0 && w <= std::numeric_limits<double>::max(); }

// Shortest decimal that reads back as the same value in the column's own
// precision (like Python's repr), so -0.2 in float32 prints as -0.2.
std::string format_value(double v, bool single_precision = false) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[40];
    for (int precision = 1; precision <= 17; ++precision) {
        std::snprintf(buf, sizeof buf, "%.*g", precision, v);
        const double back = std::strtod(buf, nullptr);
        if (single_precision ? static_cast<float>(back) == static_cast<float>(v) : back == v) break;
    }
    return buf;
}

template <class T>
double value_at(const Column& c, std::int64_t i) {
    return static_cast<double>(c.at<T>(i));
}

double read_double(const Column& c, std::int64_t i) {
    return dispatch_dtype(c.dtype, [&](auto tag) { return value_at<decltype(tag)>(c, i); });
}

[[noreturn]] void report_bad(const Column& c, std::int64_t first, std::int64_t bad, const std::string& rule) {
    std::ostringstream msg;
    msg << c.name << "[" << first << "] = " << format_value(read_double(c, first), c.dtype == DType::Float32) << ": " << rule << " ("
        << bad << " of " << c.size << " value" << (c.size == 1 ? "" : "s") << " in " << c.name << " bad, first at index "
        << first << ")";
    throw std::invalid_argument(msg.str());
}

// Scans `c` for values failing `ok`; throws the report for the first.
template <class Ok>
void scan_column(const Column& c, Ok ok, const std::string& rule) {
    std::int64_t first = -1, bad = 0;
    for (std::int64_t i = 0; i < c.size; ++i) {
        if (!ok(read_double(c, i))) {
            if (first < 0) first = i;
            ++bad;
        }
    }
    if (bad) report_bad(c, first, bad, rule);
}

}  // namespace

void check_rows(const Inputs& in) {
    const double lo = in.clip_lo, hi = in.clip_hi;
    std::string f_rule = (lo == 0.0 && hi == 1.0)
                             ? "predictions must be finite and in [0, 1] (clip=True clamps values slightly outside)"
                             : "predictions must be finite and in [" + format_value(lo) + ", " + format_value(hi) +
                                   "] (the clip tolerance)";
    scan_column(in.f, [&](double f) { return f >= lo && f <= hi; }, f_rule);
    scan_column(in.y, [](double y) { return y == 0.0 || y == 1.0; }, "labels must be 0 or 1");
    if (in.has_weights()) {
        scan_column(in.w, is_weight, "weights must be finite and non-negative");
    }
}

namespace {

// Adds the node masses of one cell's power sums: the adjoint of cubic
// Lagrange interpolation through nodes j−1..j+2 (weights are cubics in λ).
// It reproduces the moments of each row up to order 3, so the smoothed sums
// are off by O((h/σ)⁴) instead of the O((h/σ)²) of linear binning. Nodes −1
// and G+1 lie outside [0, 1]; as K̃σ(t, −x) = K̃σ(t, x) and
// K̃σ(t, 2 − x) = K̃σ(t, x), their mass goes to their mirror images 1 and G−1.
void spread_cubic(std::vector<double>& node, std::int64_t cell, const Moments& m) {
    const double w_before = -(m.p3 - 3.0 * m.p2 + 2.0 * m.p1) / 6.0;
    const double w_left = (m.p3 - 2.0 * m.p2 - m.p1 + 2.0 * m.p0) / 2.0;
    const double w_right = -(m.p3 - m.p2 - 2.0 * m.p1) / 2.0;
    const double w_after = (m.p3 - m.p1) / 6.0;
    const std::int64_t last = static_cast<std::int64_t>(node.size()) - 1;
    if (cell >= 1 && cell + 2 <= last) {  // interior: no reflection needed
        double* n = node.data() + cell;
        n[-1] += w_before;
        n[0] += w_left;
        n[1] += w_right;
        n[2] += w_after;
        return;
    }
    auto at = [&](std::int64_t j) -> double& {
        return node[static_cast<std::size_t>(j < 0 ? -j : (j > last ? 2 * last - j : j))];
    };
    at(cell - 1) += w_before;
    at(cell) += w_left;
    at(cell + 1) += w_right;
    at(cell + 2) += w_after;
}

// The AVX2 copy of the kernel where the CPU has it (decided once).
template <class Cell>
bool bin_range(const Inputs& in, std::int64_t begin, std::int64_t end, std::int64_t intervals, Cell* cells,
               double& total_weight) {
#if defined(SMOOTHECE_HAVE_AVX2_KERNEL)
    static const bool has_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (has_avx2) return avx2::bin_range(in, begin, end, intervals, cells, total_weight);
#endif
    return baseline::bin_range(in, begin, end, intervals, cells, total_weight);
}

}  // namespace

GridSums bin_rows(const Inputs& in, std::int64_t intervals, bool full, int threads, bool allow_zero_weight) {
    if (intervals < 1) throw std::invalid_argument("grid must have at least one interval");
    if (in.y.size != in.f.size || (in.has_weights() && in.w.size != in.f.size))
        throw std::invalid_argument("predictions, labels and weights must have the same length");
    if (in.f.size == 0) throw std::invalid_argument(std::string(in.f.name) + " is empty");

    const std::int64_t nodes = intervals + 1;
    const std::int64_t n = in.f.size;
    // A thread must have enough rows to repay zeroing and merging its grid.
    const int nthreads = effective_threads(threads, n, std::max<std::int64_t>(1 << 16, 4 * nodes));
    const auto ncells = static_cast<std::size_t>(intervals);

    std::vector<std::vector<ResidualCell>> residual_cells(full ? 0 : static_cast<std::size_t>(nthreads));
    std::vector<std::vector<FullCell>> full_cells(full ? static_cast<std::size_t>(nthreads) : 0);
    std::vector<double> weights(static_cast<std::size_t>(nthreads), 0.0);
    std::vector<char> ok(static_cast<std::size_t>(nthreads), 1);
    parallel_for(nthreads, [&](int t) {
        const auto ti = static_cast<std::size_t>(t);
        const std::int64_t begin = n * t / nthreads, end = n * (t + 1) / nthreads;
        if (full) {
            full_cells[ti].assign(ncells, FullCell{});
            ok[ti] = bin_range(in, begin, end, intervals, full_cells[ti].data(), weights[ti]);
        } else {
            residual_cells[ti].assign(ncells, ResidualCell{});
            ok[ti] = bin_range(in, begin, end, intervals, residual_cells[ti].data(), weights[ti]);
        }
    });
    if (std::find(ok.begin(), ok.end(), 0) != ok.end()) {
        check_rows(in);  // the slow path finds and reports the first bad row
        throw std::logic_error("binning refused a row that the check accepts");
    }

    GridSums out;
    out.intervals = intervals;
    out.count = n;
    out.residual.assign(static_cast<std::size_t>(nodes), 0.0);
    if (full) {
        out.weight.assign(static_cast<std::size_t>(nodes), 0.0);
        out.label.assign(static_cast<std::size_t>(nodes), 0.0);
    }
    // Cells to nodes, in thread order so the result depends only on the
    // thread count.
    for (int t = 0; t < nthreads; ++t) {
        const auto ti = static_cast<std::size_t>(t);
        for (std::size_t j = 0; j < ncells; ++j) {
            const auto cell = static_cast<std::int64_t>(j);
            if (full) {
                const FullCell& c = full_cells[ti][j];
                spread_cubic(out.residual, cell, c.r);
                spread_cubic(out.weight, cell, c.w);
                spread_cubic(out.label, cell, c.wy);
            } else {
                spread_cubic(out.residual, cell, residual_cells[ti][j].r);
            }
        }
        out.total_weight += weights[ti];
    }
    if (!(out.total_weight > 0.0) && !allow_zero_weight) {
        throw std::invalid_argument(std::string(in.has_weights() ? in.w.name : "weights") +
                                    ": the weights sum to zero; at least one must be positive");
    }
    if (!std::isfinite(out.total_weight)) {
        throw std::invalid_argument(std::string(in.w.name) + ": the weights sum to inf (overflow); rescale them");
    }
    return out;
}

GridSums GridSums::restrict_to(std::int64_t coarse, bool residual_only) const {
    if (coarse < 1 || intervals % coarse != 0)
        throw std::invalid_argument("coarse grid must divide the fine grid");
    const std::int64_t factor = intervals / coarse;
    GridSums out;
    out.intervals = coarse;
    out.total_weight = total_weight;
    out.count = count;
    // Each fine node is a point mass at coarse cell q, fraction λ: binned
    // onto the coarse grid exactly as a row would be.
    auto restrict_one = [&](const std::vector<double>& fine, std::vector<double>& dst) {
        dst.assign(static_cast<std::size_t>(coarse + 1), 0.0);
        for (std::int64_t j = 0; j <= intervals; ++j) {
            const std::int64_t q = std::min(j / factor, coarse - 1);
            const double lam = static_cast<double>(j - q * factor) / static_cast<double>(factor);
            const double v = fine[static_cast<std::size_t>(j)];
            spread_cubic(dst, q, Moments{v, v * lam, v * lam * lam, v * lam * lam * lam});
        }
    };
    restrict_one(residual, out.residual);
    if (full() && !residual_only) {
        restrict_one(weight, out.weight);
        restrict_one(label, out.label);
    }
    return out;
}

void GridSums::merge(const GridSums& other) {
    if (other.intervals != intervals || other.full() != full())
        throw std::invalid_argument("cannot merge grid sums of different resolution");
    auto add = [](std::vector<double>& a, const std::vector<double>& b) {
        for (std::size_t j = 0; j < a.size(); ++j) a[j] += b[j];
    };
    add(residual, other.residual);
    add(weight, other.weight);
    add(label, other.label);
    total_weight += other.total_weight;
    count += other.count;
}

}  // namespace smoothece
