// The grid pass: rows checked and binned into cells by the kernel, the
// cells summed over threads and spread onto a Summary's nodes; atoms binned
// the same way; and the exact report of a bad row.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <sstream>

#include "pass/bin_kernel.hpp"
#include "pass/rows.hpp"
#include "runtime/errors.hpp"
#include "runtime/kernels.hpp"
#include "runtime/pool.hpp"

namespace smoothece {
namespace {

std::atomic<std::uint64_t> pass_counter{0};
std::atomic<std::uint64_t> rows_counter{0};

// Rows handed to the kernel between two interruption checks.
constexpr std::int64_t kChunk = std::int64_t{1} << 16;
constexpr double kMaxPlainWeight = 0x1p500;  // weights beyond [2^-500, 2^500] are rescaled first

// --- Reporting bad rows --------------------------------------------------------------

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
    // %g writes whole numbers with fewer significant digits than places in
    // exponent form (50 as 5e+01); below 1e16 write them out, as Python does.
    // (The shortest decimal's own value: float32's 1.5e+10 stays 15000000000.)
    if (std::strchr(buf, 'e') && std::fabs(v) >= 1.0 && std::fabs(v) < 1e16)
        std::snprintf(buf, sizeof buf, "%.0f", std::strtod(buf, nullptr));
    return buf;
}

double read_double(const Column& c, std::int64_t i) {
    double v;
    read_doubles(c, i, 1, &v);
    return v;
}

// Scans `c` for values failing `ok`; throws InputError for the first.
template <class Ok>
void scan_column(const Column& c, Ok ok, const std::string& rule) {
    std::int64_t first = -1, bad = 0;
    for (std::int64_t i = 0; i < c.size; ++i) {
        if (!ok(read_double(c, i))) {
            if (first < 0) first = i;
            ++bad;
        }
    }
    if (!bad) return;
    const double value = read_double(c, first);
    std::ostringstream msg;
    msg << c.name << "[" << first << "] = " << format_value(value, c.dtype == DType::Float32) << ": " << rule << " ("
        << bad << " of " << c.size << " value" << (c.size == 1 ? "" : "s") << " in " << c.name << " bad, first at index "
        << first << ")";
    throw InputError(msg.str(), c.name, first, value, bad, c.size);
}

}  // namespace

void report_bad_rows(const Inputs& in) {
    const double lo = in.clip_lo, hi = in.clip_hi;
    const std::string f_rule = (lo == 0.0 && hi == 1.0)
                                   ? "predictions must be finite and in [0, 1]"
                                   : "predictions must be finite and in [" + format_value(lo) + ", " +
                                         format_value(hi) + "] (the clip tolerance)";
    scan_column(in.f, [&](double f) { return f >= lo && f <= hi; }, f_rule);
    scan_column(in.y, [](double y) { return y == 0.0 || y == 1.0; }, "labels must be 0 or 1");
    if (in.has_weights()) {
        scan_column(in.w, [](double w) { return bad_weight(w) == 0; }, "weights must be finite and non-negative");
    }
    // The pass reads the caller's rows with the GIL released: what it refused
    // reads valid again when another thread changed them in between.
    throw InputError("rows: the pass refused a row that reads valid when read again; did another thread write to f, "
                     "y or weights during the call? Pass arrays that nothing changes until the call returns",
                     "rows");
}

void count_pass(std::uint64_t rows) {
    pass_counter.fetch_add(1, std::memory_order_relaxed);
    rows_counter.fetch_add(rows, std::memory_order_relaxed);
}

std::uint64_t passes_over_rows() { return pass_counter.load(std::memory_order_relaxed); }

std::uint64_t rows_read_by_passes() { return rows_counter.load(std::memory_order_relaxed); }

namespace {

// --- Cells to nodes --------------------------------------------------------------------

bool empty(const Moments& m) { return m.p[0] == 0.0 && m.p[1] == 0.0 && m.p[2] == 0.0 && m.p[3] == 0.0; }

// Interior cells (1 … G−3) reach nodes without reflection, in the kernel's
// loop without branches (with fewer rows than cells, an "empty cell?" branch
// goes either way at random; scratch arrays for the four weights would cost
// a fifth of `smece` on 1000 rows). The three boundary cells are then spread
// with their reflections.
void to_nodes(const std::vector<ResidualCell>& cells, Summary& s) {
    const auto g = static_cast<std::int64_t>(cells.size());
    if (g < 8) {
        for (std::int64_t j = 0; j < g; ++j) spread_cubic(s.residual, j, cells[static_cast<std::size_t>(j)].a.p);
        return;
    }
    SMOOTHECE_KERNEL_CALL(add_interior_nodes, cells.data(), g, s.residual.data());
    for (const std::int64_t j : {std::int64_t{0}, g - 2, g - 1})
        spread_cubic(s.residual, j, cells[static_cast<std::size_t>(j)].a.p);
}

void to_nodes(const std::vector<FullCell>& cells, Summary& s) {
    const auto n = static_cast<std::int64_t>(cells.size() / 2);
    for (std::int64_t j = 0; j < n; ++j) {
        const FullCell& zero = cells[static_cast<std::size_t>(2 * j)];
        const FullCell& one = cells[static_cast<std::size_t>(2 * j + 1)];
        if (zero.rows == 0.0 && one.rows == 0.0 && empty(zero.w) && empty(one.w)) continue;  // no rows, or all weightless
        spread_cubic(s.w0, j, zero.w.p);
        spread_cubic(s.w1, j, one.w.p);
        spread_cubic(s.f0, j, zero.wf.p);
        spread_cubic(s.f1, j, one.wf.p);
        const std::int64_t c = j / kIntervalsPerResampleCell;
        for (int y = 0; y < 2; ++y) {
            const FullCell& fc = y ? one : zero;
            const auto slot = static_cast<std::size_t>(2 * c + y);
            s.cells.rows[slot] += fc.rows;
            s.cells.weight[slot] += fc.w.p[0];
            s.cells.weight_sq[slot] += fc.w2;
            s.cells.weight_f[slot] += fc.wf.p[0];
        }
    }
    s.derive_residual();
}

// The same for linear cells (l1): the moments of w·f from those of w, and
// for unit weights the rows and Σw² from the count.
void to_nodes(const std::vector<LinearCell>& cells, Summary& s, bool unit_weights) {
    const auto n = static_cast<std::int64_t>(cells.size() / 2);
    const double per_cell = 1.0 / static_cast<double>(n);
    for (std::int64_t j = 0; j < n; ++j) {
        const LinearCell& zero = cells[static_cast<std::size_t>(2 * j)];
        const LinearCell& one = cells[static_cast<std::size_t>(2 * j + 1)];
        if (zero.rows == 0.0 && one.rows == 0.0 && empty(zero.w) && empty(one.w)) continue;  // no rows, or all weightless
        const auto jd = static_cast<double>(j);
        const std::int64_t c = j / kIntervalsPerResampleCell;
        for (int y = 0; y < 2; ++y) {
            const LinearCell& lc = y ? one : zero;
            const double* w = lc.w.p;
            const double wf[4] = {(jd * w[0] + w[1]) * per_cell, (jd * w[1] + w[2]) * per_cell,
                                  (jd * w[2] + w[3]) * per_cell, (jd * w[3] + lc.w4) * per_cell};
            spread_cubic(y ? s.w1 : s.w0, j, lc.w.p);
            spread_cubic(y ? s.f1 : s.f0, j, wf);
            const auto slot = static_cast<std::size_t>(2 * c + y);
            s.cells.rows[slot] += unit_weights ? w[0] : lc.rows;
            s.cells.weight[slot] += w[0];
            s.cells.weight_sq[slot] += unit_weights ? w[0] : lc.w2;
            s.cells.weight_f[slot] += wf[0];
        }
    }
    s.derive_residual();
}

template <class Cell>
void add_cells(std::vector<Cell>& into, const std::vector<Cell>& from) {
    auto* a = reinterpret_cast<double*>(into.data());
    const auto* b = reinterpret_cast<const double*>(from.data());
    const std::size_t n = into.size() * (sizeof(Cell) / sizeof(double));
    for (std::size_t i = 0; i < n; ++i) a[i] += b[i];
}

// One pass with a given weight scale: the per-thread cells, summed.
template <class Cell>
PassTotals bin_all(const Inputs& in, const PassSpec& spec, std::int64_t threads, std::vector<Cell>& out) {
    const std::int64_t n = in.size();
    const std::int64_t slots = spec.cells * (std::is_same_v<Cell, ResidualCell> ? 1 : 2);
    // A thread must have enough rows to repay zeroing and merging its cells:
    // a row costs several times what zeroing and adding a double does (the
    // full pass of 1e6 rows into 2·16384 cells of 8 doubles: 6.7 ms on one
    // thread, 4.0 ms on two).
    const auto cell_doubles = static_cast<std::int64_t>(sizeof(Cell) / sizeof(double));
    const int nthreads = thread_count(threads, n, std::max<std::int64_t>(kChunk, slots * cell_doubles / 2));
    std::vector<std::vector<Cell>> cells(static_cast<std::size_t>(nthreads));
    std::vector<PassTotals> totals(static_cast<std::size_t>(nthreads));
    std::vector<char> ok(static_cast<std::size_t>(nthreads), 1);
    parallel_for(nthreads, [&](int t) {
        const auto ti = static_cast<std::size_t>(t);
        cells[ti].assign(static_cast<std::size_t>(slots), Cell{});
        const auto [begin, end] = share_of(n, t, nthreads);
        for (std::int64_t b = begin; b < end && ok[ti]; b += kChunk) {
            interruption_point();
            ok[ti] = SMOOTHECE_KERNEL_CALL(bin_range, in, spec, b, std::min(end, b + kChunk), cells[ti].data(), totals[ti]);
        }
    });
    count_pass(static_cast<std::uint64_t>(n));
    if (std::find(ok.begin(), ok.end(), 0) != ok.end()) report_bad_rows(in);
    // Summed in thread order, so the result depends only on the thread count.
    PassTotals sum;
    for (std::size_t t = 0; t < cells.size(); ++t) {
        if (t > 0) add_cells(cells[0], cells[t]);
        sum.weight += totals[t].weight;
        sum.max_weight = std::max(sum.max_weight, totals[t].max_weight);
        sum.positive_rows += totals[t].positive_rows;
    }
    out = std::move(cells[0]);
    return sum;
}

}  // namespace

int weight_exponent_for(double max_weight) {
    if (!(max_weight > 0.0) || (max_weight <= kMaxPlainWeight && max_weight >= 1.0 / kMaxPlainWeight)) return 0;
    return -std::ilogb(max_weight);
}

int weight_exponent_of(const Inputs& in) {
    if (!in.has_weights()) return 0;
    double max_weight = 0.0;
    const std::int64_t block = std::max<std::int64_t>(1, std::min<std::int64_t>(4096, in.size()));
    std::vector<double> w(static_cast<std::size_t>(block));
    for (std::int64_t b = 0; b < in.size(); b += block) {
        const std::int64_t count = std::min(block, in.size() - b);
        read_doubles(in.w, b, count, w.data());
        for (std::int64_t k = 0; k < count; ++k) max_weight = std::max(max_weight, w[static_cast<std::size_t>(k)]);
    }
    return weight_exponent_for(max_weight);
}

WeightTraits weight_traits_of(const Column& w) {
    WeightTraits traits;
    if (w.data == nullptr) return traits;
    const std::int64_t block = std::max<std::int64_t>(1, std::min<std::int64_t>(4096, w.size));
    const bool in_place = w.dtype == DType::Float64 && w.stride == static_cast<std::int64_t>(sizeof(double));
    std::vector<double> buffer(in_place ? 0 : static_cast<std::size_t>(block));
    for (std::int64_t b = 0; b < w.size; b += block) {
        const std::int64_t count = std::min(block, w.size - b);
        const double* v = in_place ? reinterpret_cast<const double*>(w.data) + b : buffer.data();
        if (!in_place) read_doubles(w, b, count, buffer.data());
        // t = min(x, 2^52): below 2^52, (t + 2^52) − 2^52 is t rounded to a
        // whole number (round to nearest), so d is ±0 exactly when t is
        // whole; from 2^52 up every double is whole. The flags are OR-ed bit
        // patterns (d's without its sign bit; 1.0 for x > 1): integer
        // reductions that vectorize, where a sum of doubles or a bool would
        // not (8 instructions a weight instead of 20).
        std::uint64_t fraction = 0, over = 0;
        for (std::int64_t k = 0; k < count; ++k) {
            const double x = v[k];
            const double t = x < 0x1p52 ? x : 0x1p52;
            const double d = ((t + 0x1p52) - 0x1p52) - t;
            const double above = x > 1.0 ? 1.0 : 0.0;
            std::uint64_t d_bits, above_bits;
            std::memcpy(&d_bits, &d, sizeof d);
            std::memcpy(&above_bits, &above, sizeof above);
            fraction |= d_bits << 1;
            over |= above_bits;
        }
        if (fraction) return WeightTraits{false, false};
        traits.over_one = traits.over_one || over != 0;
    }
    return traits;
}

namespace {

template <class Cell>
Summary summarise_with(const Inputs& in, const PassOptions& opts) {
    // Few rows for the grid (at most two a cell, and at most a chunk: one
    // thread, so the sums do not depend on the thread count) are spread
    // straight onto the nodes with the cubic weights their cells would
    // spread: no cells to zero, fill and spread. A 1000-row `smece` on 1024
    // intervals: 131k instructions and 12.2 µs this way, 141k and 14.5 µs
    // through the cells (C++ loop).
    // Also rows far fewer than the intervals (a σ* near 1e-6 asks for 2^22):
    // per-thread cells would be 128 MB each to zero and fault in (1e6 rows
    // on 2^22 intervals: 0.2 s of page faults), the nodes are 32 MB, and one
    // thread places 1e6 rows in a few ms.
    const bool onto_nodes = std::is_same_v<Cell, ResidualCell> &&
                            (in.size() <= std::min(2 * opts.intervals, kChunk) || 2 * in.size() <= opts.intervals);
    PassSpec spec{opts.mapping, opts.intervals, 0};
    Summary s = Summary::empty(opts.mapping, opts.content, opts.intervals);
    std::vector<Cell> cells;
    auto pass = [&] {
        if (!onto_nodes) return bin_all(in, spec, opts.threads, cells);
        PassTotals totals;
        const bool ok = SMOOTHECE_KERNEL_CALL(bin_range, in, spec, 0, in.size(),
                                              reinterpret_cast<ResidualNode*>(s.residual.data()), totals);
        count_pass(static_cast<std::uint64_t>(in.size()));
        if (!ok) report_bad_rows(in);
        return totals;
    };
    PassTotals totals = pass();
    const int exp = in.has_weights() ? weight_exponent_for(totals.max_weight) : 0;
    if (exp != 0) {  // extreme weights: once more, scaled (exact: a power of two)
        spec.weight_exp = exp;
        std::fill(s.residual.begin(), s.residual.end(), 0.0);  // (the nodes' sums, if the pass made them)
        totals = pass();
    }
    if (!onto_nodes) {
        if constexpr (std::is_same_v<Cell, LinearCell>) to_nodes(cells, s, !in.has_weights());
        else to_nodes(cells, s);
    }
    s.rows = static_cast<std::uint64_t>(in.size());
    s.positive_rows = static_cast<std::uint64_t>(totals.positive_rows);
    s.weight = totals.weight;
    s.weight_exp = exp;
    return s;
}

}  // namespace

void check_shapes(const Inputs& in, bool allow_empty) {
    const std::int64_t n = in.f.size;
    if (in.y.size != n)
        throw InputError(std::string(in.f.name) + " and " + in.y.name + " must have the same length, got " +
                             std::to_string(n) + " and " + std::to_string(in.y.size),
                         in.y.name);
    if (in.has_weights() && in.w.size != n)
        throw InputError(std::string(in.f.name) + " and " + in.w.name + " must have the same length, got " +
                             std::to_string(n) + " and " + std::to_string(in.w.size),
                         in.w.name);
    if (n == 0 && !allow_empty)
        throw InputError(std::string(in.f.name) + " is empty: at least one prediction is needed", in.f.name);
}

Summary summarise_rows(const Inputs& in, const PassOptions& opts) {
    check_shapes(in, opts.allow_zero_weight);
    if (opts.intervals < 1) throw std::logic_error("a pass needs at least one interval");
    Summary s = opts.content == Content::Residual ? summarise_with<ResidualCell>(in, opts)
                : opts.mapping.is_logit()            ? summarise_with<FullCell>(in, opts)
                                                     : summarise_with<LinearCell>(in, opts);
    if (!(s.weight > 0.0) && !opts.allow_zero_weight) {
        throw InputError(std::string(in.has_weights() ? in.w.name : "weights") +
                             ": the weights sum to zero; at least one must be positive",
                         in.has_weights() ? in.w.name : "weights", -1, 0.0, in.size(), in.size());
    }
    return s;
}

Summary summarise_atoms(const Atoms& atoms, Content content, std::int64_t intervals) {
    const double scale = static_cast<double>(intervals);
    Summary s = Summary::empty(atoms.mapping, content, intervals);
    if (2 * static_cast<std::int64_t>(atoms.size()) <= intervals) {
        // Atoms far fewer than the intervals (a sketch's or a look's, above
        // all on the logit axis' 2^16–2^17): each spread straight onto the
        // nodes with its cell's cubic weights, O(atoms) and no cells to zero
        // and spread, O(G) (2^17 logit intervals: 25 MB of cells).
        if (content == Content::Full) {
            add_atoms(s, atoms);
            s.derive_residual();
            return s;
        }
        double positive = 0.0;
        for (std::size_t i = 0; i < atoms.size(); ++i) {
            const double x = atoms.x[i] * scale;
            const std::int64_t j = std::min(static_cast<std::int64_t>(x), intervals - 1);
            const double lam = x - static_cast<double>(j), r = atoms.residual(i);
            const double m[4] = {r, r * lam, r * lam * lam, r * lam * lam * lam};
            spread_cubic(s.residual, j, m);
            positive += atoms.by_label[0][i].rows + atoms.by_label[1][i].rows;
        }
        s.rows = atoms.rows;
        s.positive_rows = static_cast<std::uint64_t>(positive);
        s.weight = atoms.total_weight_scaled();
        s.weight_exp = atoms.weight_exp;
        return s;
    }
    std::vector<ResidualCell> residual_cells;
    std::vector<FullCell> full_cells;
    if (content == Content::Full) full_cells.assign(static_cast<std::size_t>(2 * intervals), FullCell{});
    else residual_cells.assign(static_cast<std::size_t>(intervals), ResidualCell{});
    double positive = 0.0;
    for (std::size_t i = 0; i < atoms.size(); ++i) {
        const double x = atoms.x[i] * scale;
        const std::int64_t j = std::min(static_cast<std::int64_t>(x), intervals - 1);
        const double lam = x - static_cast<double>(j);
        const double pw[4] = {1.0, lam, lam * lam, lam * lam * lam};
        if (content == Content::Full) {
            for (int y = 0; y < 2; ++y) {
                const AtomStats& a = atoms.by_label[y][i];
                FullCell& c = full_cells[static_cast<std::size_t>(2 * j + y)];
                for (int p = 0; p < 4; ++p) {
                    c.w.p[p] += a.weight * pw[p];
                    c.wf.p[p] += a.weight_f * pw[p];
                }
                c.rows += a.rows;
                c.w2 += a.weight_sq;
            }
        } else {
            const double r = atoms.residual(i);
            for (int p = 0; p < 4; ++p) residual_cells[static_cast<std::size_t>(j)].a.p[p] += r * pw[p];
        }
        positive += atoms.by_label[0][i].rows + atoms.by_label[1][i].rows;
    }
    if (content == Content::Full) to_nodes(full_cells, s);
    else to_nodes(residual_cells, s);
    s.rows = atoms.rows;
    s.positive_rows = static_cast<std::uint64_t>(positive);
    s.weight = atoms.total_weight_scaled();
    s.weight_exp = atoms.weight_exp;
    return s;
}

void add_atoms(Summary& s, const Atoms& atoms) {
    if (!s.full()) throw std::logic_error("add_atoms needs a full summary");
    const double atoms_weight = atoms.total_weight_scaled();
    // The common exponent, as Summary::merge chooses it (the larger weights set it).
    int e = s.weight_exp;
    if (s.weight == 0.0) e = atoms.weight_exp;
    else if (atoms_weight > 0.0) e = std::min(s.weight_exp, atoms.weight_exp);
    s.rescale(e);
    const int delta = e - atoms.weight_exp;
    const double scale = static_cast<double>(s.intervals);
    double positive = 0.0;
    for (std::size_t i = 0; i < atoms.size(); ++i) {
        const double x = atoms.x[i] * scale;
        const std::int64_t j = std::min(static_cast<std::int64_t>(x), s.intervals - 1);
        const double lam = x - static_cast<double>(j);
        const double pw[4] = {1.0, lam, lam * lam, lam * lam * lam};
        const auto slot = static_cast<std::size_t>(2 * (j / kIntervalsPerResampleCell));
        for (int y = 0; y < 2; ++y) {
            const AtomStats& a = atoms.by_label[y][i];
            if (a.rows == 0.0 && a.weight == 0.0) continue;
            const double w = std::ldexp(a.weight, delta), wf = std::ldexp(a.weight_f, delta);
            const double mw[4] = {w * pw[0], w * pw[1], w * pw[2], w * pw[3]};
            const double mf[4] = {wf * pw[0], wf * pw[1], wf * pw[2], wf * pw[3]};
            spread_cubic(y ? s.w1 : s.w0, j, mw);
            spread_cubic(y ? s.f1 : s.f0, j, mf);
            s.cells.rows[slot + y] += a.rows;
            s.cells.weight[slot + y] += w;
            s.cells.weight_sq[slot + y] += std::ldexp(a.weight_sq, 2 * delta);
            s.cells.weight_f[slot + y] += wf;
            positive += a.rows;
        }
    }
    s.rows += atoms.rows;
    s.positive_rows += static_cast<std::uint64_t>(positive);
    s.weight += std::ldexp(atoms_weight, delta);
}

}  // namespace smoothece
