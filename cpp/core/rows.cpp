#include "rows.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <sstream>

#include "bin_kernel.hpp"
#include "errors.hpp"
#include "pool.hpp"

namespace smoothece {
namespace {

std::atomic<std::uint64_t> pass_counter{0};

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

// The slow, exact report of the first bad row (the kernel only knows that a block holds one).
[[noreturn]] void report_first_bad_row(const Inputs& in) {
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
    throw std::logic_error("the pass refused a row that the check accepts");
}

// --- The kernel, the build for this CPU ------------------------------------------------

#if defined(SMOOTHECE_HAVE_AVX2_KERNEL)
bool avx2_kernel() {
    static const bool has_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return has_avx2;
}
#endif

template <class Cell>
bool bin_range(const Inputs& in, const PassSpec& spec, std::int64_t begin, std::int64_t end, Cell* cells,
               PassTotals& totals) {
#if defined(SMOOTHECE_HAVE_AVX2_KERNEL)
    if (avx2_kernel()) return avx2::bin_range(in, spec, begin, end, cells, totals);
#endif
    return baseline::bin_range(in, spec, begin, end, cells, totals);
}

std::uint64_t check_block(const double* f, const double* y, std::int64_t count, double lo, double hi, double* f_out,
                          double* y_out) {
#if defined(SMOOTHECE_HAVE_AVX2_KERNEL)
    if (avx2_kernel()) return avx2::check_block(f, y, count, lo, hi, f_out, y_out);
#endif
    return baseline::check_block(f, y, count, lo, hi, f_out, y_out);
}

void add_interior_nodes(const ResidualCell* cells, std::int64_t intervals, double* nodes) {
#if defined(SMOOTHECE_HAVE_AVX2_KERNEL)
    if (avx2_kernel()) return avx2::add_interior_nodes(cells, intervals, nodes);
#endif
    baseline::add_interior_nodes(cells, intervals, nodes);
}

// --- Cells to nodes --------------------------------------------------------------------

bool empty(const Moments& m) { return m.p[0] == 0.0 && m.p[1] == 0.0 && m.p[2] == 0.0 && m.p[3] == 0.0; }

// Interior cells (1 … G−3) reach nodes without reflection, in the kernel's
// loop without branches (with fewer rows than cells, an "empty cell?" branch
// goes either way at random; scratch arrays for the four weights were a
// fifth of `smece` on 1000 rows). The three boundary cells are then spread
// with their reflections.
void to_nodes(const std::vector<ResidualCell>& cells, Summary& s) {
    const auto g = static_cast<std::int64_t>(cells.size());
    if (g < 8) {
        for (std::int64_t j = 0; j < g; ++j) spread_cubic(s.residual, j, cells[static_cast<std::size_t>(j)].a.p);
        return;
    }
    add_interior_nodes(cells.data(), g, s.residual.data());
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
        const std::int64_t begin = n * t / nthreads, end = n * (t + 1) / nthreads;
        for (std::int64_t b = begin; b < end && ok[ti]; b += kChunk) {
            interruption_point();
            ok[ti] = bin_range(in, spec, b, std::min(end, b + kChunk), cells[ti].data(), totals[ti]);
        }
    });
    pass_counter.fetch_add(1, std::memory_order_relaxed);
    if (std::find(ok.begin(), ok.end(), 0) != ok.end()) report_first_bad_row(in);
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

void add_lanes(const double* src, std::int64_t count, const double* factor, double* dst) {
#if defined(SMOOTHECE_HAVE_AVX2_KERNEL)
    if (avx2_kernel()) return avx2::add_lanes(src, count, factor, dst);
#endif
    baseline::add_lanes(src, count, factor, dst);
}

bool any_dip(const double* r, const double* F, std::int64_t begin, std::int64_t end, double inv_h, double noise) {
#if defined(SMOOTHECE_HAVE_AVX2_KERNEL)
    if (avx2_kernel()) return avx2::any_dip(r, F, begin, end, inv_h, noise);
#endif
    return baseline::any_dip(r, F, begin, end, inv_h, noise);
}

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

namespace {

template <class Cell>
Summary summarize_with(const Inputs& in, const PassOptions& opts) {
    // Few rows for the grid (at most two a cell, and at most a chunk: one
    // thread, so the sums do not depend on the thread count) are spread
    // straight onto the nodes with the cubic weights their cells would
    // spread: no cells to zero, fill and spread. A 1000-row `smece` on 1024
    // intervals: 141k → 131k instructions, 14.5 → 12.2 µs (C++ loop).
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
        const bool ok = bin_range(in, spec, 0, in.size(), reinterpret_cast<ResidualNode*>(s.residual.data()), totals);
        pass_counter.fetch_add(1, std::memory_order_relaxed);
        if (!ok) report_first_bad_row(in);
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

// --- Atoms -------------------------------------------------------------------------------

// Applies fn(x, label, w, f) to every row, with the checks of the pass (the
// rows were checked by the first pass, but another thread may have changed
// them since: a bad value is reported, never used).
template <class Fn>
void for_each_row(const Inputs& in, std::int64_t first, std::int64_t last, const Mapping& mapping, int weight_exp,
                  Fn&& fn) {
    for_each_block(in, first, last, [&](std::int64_t, std::int64_t count, const double* f, const double* y, const double* w) {
        for (std::int64_t k = 0; k < count; ++k) {
            const double fk = f[k], yk = y[k], wk = w ? w[k] : 1.0;
            if (bad_row(fk, yk, in.clip_lo, in.clip_hi) | bad_weight(wk)) report_first_bad_row(in);
            const double fc = std::min(std::max(fk, 0.0), 1.0);
            fn(mapping.position(fc), static_cast<int>(yk), weight_exp == 0 ? wk : std::ldexp(wk, weight_exp), fc);
        }
    });
}

void add_row(AtomStats& s, double w, double f) {
    s.rows += w > 0.0 ? 1.0 : 0.0;
    s.weight += w;
    s.weight_sq += w * w;
    s.weight_f += w * f;
}

std::uint64_t bits_of(double x) {
    std::uint64_t b;
    std::memcpy(&b, &x, sizeof b);
    return b;
}

}  // namespace

void report_bad_rows(const Inputs& in) { report_first_bad_row(in); }

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

Summary summarize_rows(const Inputs& in, const PassOptions& opts) {
    check_shapes(in, opts.allow_zero_weight);
    if (opts.intervals < 1) throw std::logic_error("a pass needs at least one interval");
    Summary s = opts.content == Content::Residual ? summarize_with<ResidualCell>(in, opts)
                : opts.mapping.is_logit()            ? summarize_with<FullCell>(in, opts)
                                                     : summarize_with<LinearCell>(in, opts);
    if (!(s.weight > 0.0) && !opts.allow_zero_weight) {
        throw InputError(std::string(in.has_weights() ? in.w.name : "weights") +
                             ": the weights sum to zero; at least one must be positive",
                         in.has_weights() ? in.w.name : "weights", -1, 0.0, in.size(), in.size());
    }
    return s;
}

namespace {

// The distinct positions of rows [first, last) with their sums, sorted, or
// nullopt beyond max_atoms of them. Open addressing on the bits of the
// position; for unit weights a block of one prediction (a base rate) is
// counted at once, and other rows find their slot through a small cache of
// recent predictions. The table holds indices into a dense list, so a small
// range (one group's rows) zeroes 4 bytes a slot, not a whole atom.
std::optional<Atoms> atoms_of_range(const Inputs& in, std::int64_t first, std::int64_t last, const Mapping& mapping,
                                    int weight_exp, std::size_t max_atoms) {
    const std::size_t most = std::min(max_atoms, static_cast<std::size_t>(last - first));
    int capacity_bits = 4;
    while ((std::size_t{1} << capacity_bits) < 2 * most + 2) ++capacity_bits;
    const std::size_t capacity = std::size_t{1} << capacity_bits;
    struct Slot {
        std::uint64_t key = 0;
        bool one_f = true;  // every row here had the same prediction f
        double f = 0.0;
        AtomStats s[2];
        std::int64_t rows = 0, positives = 0;  // unit weights on the probability axis: counts alone
    };
    std::vector<std::int32_t> index(capacity, -1);
    std::vector<Slot> slots;
    slots.reserve(most);
    // The slot of a position (made on first sight), or −1 past max_atoms.
    auto slot_of = [&](std::uint64_t key, double f) -> std::int32_t {
        std::size_t h = fibonacci_slot(key, capacity_bits);
        while (index[h] >= 0 && slots[static_cast<std::size_t>(index[h])].key != key) h = (h + 1) & (capacity - 1);
        if (index[h] < 0) {
            if (slots.size() >= max_atoms) return -1;
            index[h] = static_cast<std::int32_t>(slots.size());
            slots.push_back(Slot{key, true, f, {}});
        }
        return index[h];
    };
    // A block at a time: checked and mapped in loops that vectorize (and do
    // not branch on the labels), then added to the slots.
    const bool unit = !in.has_weights();
    const bool plain = unit && !mapping.is_logit() && weight_exp == 0;
    constexpr int kRecentBits = 6;
    std::uint64_t recent_key[std::size_t{1} << kRecentBits] = {};
    std::int32_t recent_slot[std::size_t{1} << kRecentBits];
    std::fill(std::begin(recent_slot), std::end(recent_slot), -1);
    std::vector<double> positions, weights;
    std::vector<double> clamped, labels;
    bool overflow = false;
    for_each_block(in, first, last, [&](std::int64_t, std::int64_t count, const double* f, const double* y, const double* w) {
        if (overflow) return;
        // Every row is checked again (another thread may have changed it since
        // the first pass): a bad value is reported, never used.
        const double lo = in.clip_lo, hi = in.clip_hi;
        std::uint64_t bad = 0;
        if (plain) {
            // Unit weights on the probability axis: a position is its
            // prediction, and a slot needs only its counts of rows and of
            // positives (integers: exact, one-cycle additions, in any order).
            // A block of one prediction (a base rate, a point mass) is one
            // run, checked and counted in loops that vectorize: the same bits
            // throughout (so ±0 mixed take the loop below), labels 0/1 exactly
            // when every |y(y − 1)| is 0 (NaN and subnormals included), and
            // then Σy counts the positives exactly, in any order.
            const std::uint64_t first_bits = bits_of(f[0]);
            std::uint64_t other = 0;
            for (std::int64_t k0 = 0; k0 < count && other == 0; k0 += 64)  // stops at the first chunk with two
                for (std::int64_t k = k0, end = std::min(count, k0 + 64); k < end; ++k) other |= bits_of(f[k]) ^ first_bits;
            if (other == 0) {
                double off[4] = {0.0, 0.0, 0.0, 0.0}, ones_of[4] = {0.0, 0.0, 0.0, 0.0};  // independent lanes
                std::int64_t k = 0;
                for (; k + 4 <= count; k += 4)
                    for (int i = 0; i < 4; ++i) {
                        off[i] += std::fabs(y[k + i] * (y[k + i] - 1.0));
                        ones_of[i] += y[k + i];
                    }
                for (; k < count; ++k) {
                    off[0] += std::fabs(y[k] * (y[k] - 1.0));
                    ones_of[0] += y[k];
                }
                bad |= bad_row(f[0], 0.0, lo, hi);  // the prediction (its labels just below)
                if (!((off[0] + off[1]) + (off[2] + off[3]) == 0.0)) bad = 1;
                if (bad) report_first_bad_row(in);
                const double f0 = std::min(std::max(f[0], 0.0), 1.0) + 0.0;
                const std::int32_t at = slot_of(bits_of(f0), f0);
                if (at < 0) {
                    overflow = true;
                    return;
                }
                Slot& slot = slots[static_cast<std::size_t>(at)];
                slot.rows += count;
                slot.positives += static_cast<std::int64_t>((ones_of[0] + ones_of[1]) + (ones_of[2] + ones_of[3]));
                return;
            }
            // Checked and clamped first, in a loop that vectorizes (checked
            // in the row loop, the flag was kept on the stack: one
            // store-to-load chain through every row). Rows are used as
            // checked: from the copies, not from f and y again.
            clamped.resize(static_cast<std::size_t>(count));
            labels.resize(static_cast<std::size_t>(count));
            if (check_block(f, y, count, lo, hi, clamped.data(), labels.data())) report_first_bad_row(in);
            // A row's slot through a direct-mapped cache of recent predictions
            // (a hash and one compare, taken nearly always): a discrete
            // forecast changes prediction on almost every row, and the table's
            // probe, reached through the slot, cost ~5 ns a row. The slots
            // through a local pointer, refreshed when one is added.
            Slot* slot_at = slots.data();
            for (std::int64_t k = 0; k < count; ++k) {
                const double fk = clamped[static_cast<std::size_t>(k)];
                const std::uint64_t key = bits_of(fk);
                const std::size_t c = fibonacci_slot(key, kRecentBits);
                std::int32_t at = recent_slot[c];
                if (at < 0 || recent_key[c] != key) {
                    at = slot_of(key, fk);
                    if (at < 0) {
                        overflow = true;
                        return;
                    }
                    recent_key[c] = key;
                    recent_slot[c] = at;
                    slot_at = slots.data();  // a new slot may have moved them
                }
                slot_at[at].positives += labels[static_cast<std::size_t>(k)] == 1.0 ? 1 : 0;
                ++slot_at[at].rows;
            }
            return;
        }
        for (std::int64_t k = 0; k < count; ++k) bad |= bad_row(f[k], y[k], lo, hi);
        if (w)
            for (std::int64_t k = 0; k < count; ++k) bad |= bad_weight(w[k]);
        if (bad) report_first_bad_row(in);
        positions.resize(static_cast<std::size_t>(count));
        weights.resize(static_cast<std::size_t>(count));
        for (std::int64_t k = 0; k < count; ++k) {
            const double fc = std::min(std::max(f[k], 0.0), 1.0);
            positions[k] = mapping.is_logit() ? mapping.position(fc) : fc + 0.0;  // −0 → +0
            const double wk = unit ? 1.0 : w[k];
            weights[k] = weight_exp == 0 ? wk : std::ldexp(wk, weight_exp);
        }
        for (std::int64_t k = 0; k < count;) {
            const std::uint64_t key = bits_of(positions[k]);
            const double fk = std::min(std::max(f[k], 0.0), 1.0);
            // The run of rows at this position and prediction (a base rate is
            // one run a block), summed per label in registers: the label is a
            // 0/1 factor, not a branch or an index.
            double rows1 = 0.0, rows0 = 0.0, w1 = 0.0, w0 = 0.0, sq1 = 0.0, sq0 = 0.0;
            std::int64_t j = k;
            for (; j < count && bits_of(positions[j]) == key && std::min(std::max(f[j], 0.0), 1.0) == fk; ++j) {
                const double one = y[j], zero = 1.0 - y[j], wj = weights[j], counted = wj > 0.0 ? 1.0 : 0.0;
                rows1 += one * counted;
                rows0 += zero * counted;
                w1 += one * wj;
                w0 += zero * wj;
                sq1 += one * (wj * wj);
                sq0 += zero * (wj * wj);
            }
            const std::int32_t at = slot_of(key, fk);
            if (at < 0) {
                overflow = true;
                return;
            }
            Slot& slot = slots[static_cast<std::size_t>(at)];
            slot.one_f = slot.one_f && fk == slot.f;
            const double sums[2][3] = {{rows0, w0, sq0}, {rows1, w1, sq1}};
            for (int label = 0; label < 2; ++label) {
                slot.s[label].rows += sums[label][0];
                slot.s[label].weight += sums[label][1];
                slot.s[label].weight_sq += sums[label][2];
                slot.s[label].weight_f += sums[label][1] * fk;  // one prediction in a run: Σw·f = f·Σw
            }
            k = j;
        }
    });
    if (overflow) return std::nullopt;
    // Positions are ≥ +0, so their bit patterns sort as the numbers do: a
    // sort of plain integer keys.
    std::vector<std::pair<std::uint64_t, std::uint32_t>> order(slots.size());
    for (std::size_t i = 0; i < slots.size(); ++i) order[i] = {slots[i].key, static_cast<std::uint32_t>(i)};
    std::sort(order.begin(), order.end());
    Atoms atoms;
    atoms.mapping = mapping;
    atoms.rows = static_cast<std::uint64_t>(last - first);
    atoms.weight_exp = weight_exp;
    atoms.x.reserve(slots.size());
    for (auto& v : atoms.by_label) v.reserve(slots.size());
    for (const auto& [key, i] : order) {
        const Slot& s = slots[i];
        double position;
        std::memcpy(&position, &key, sizeof position);
        atoms.x.push_back(position);
        for (int y = 0; y < 2; ++y) {
            AtomStats stats = s.s[y];
            if (plain) {  // a row adds 1 to its label's rows, weight and Σw² alike
                const auto count = static_cast<double>(y == 1 ? s.positives : s.rows - s.positives);
                stats = AtomStats{count, count, count, 0.0};
            }
            // One prediction for all rows (always, but for logits clamped together):
            // Σw·f as f·Σw, one rounding instead of one per row.
            if (s.one_f) stats.weight_f = s.f * stats.weight;
            atoms.by_label[y].push_back(stats);
        }
    }
    return atoms;
}

}  // namespace

std::optional<Atoms> atoms_of_rows(const Inputs& in, const Mapping& mapping, int weight_exp, std::size_t max_atoms,
                                   std::int64_t threads) {
    if (max_atoms > std::size_t{1} << 30) throw std::logic_error("atoms_of_rows: the cap is for few atoms");
    // Each thread its own share and table; the shares' atoms are then merged
    // in share order (so the sums depend only on the thread count).
    const std::int64_t n = in.size();
    const int shares = thread_count(threads, n, std::int64_t{1} << 18);
    std::vector<std::optional<Atoms>> parts(static_cast<std::size_t>(shares));
    parallel_for(shares, [&](int t) {
        parts[static_cast<std::size_t>(t)] = atoms_of_range(in, n * t / shares, n * (t + 1) / shares, mapping, weight_exp, max_atoms);
    });
    pass_counter.fetch_add(1, std::memory_order_relaxed);
    for (const auto& part : parts)
        if (!part) return std::nullopt;
    Atoms atoms = std::move(*parts.front());
    for (std::size_t t = 1; t < parts.size(); ++t) {
        atoms = merged(atoms, *parts[t]);
        if (atoms.size() > max_atoms) return std::nullopt;
    }
    return atoms;
}

Atoms all_atoms_of_rows(const Inputs& in, const Mapping& mapping, int weight_exp) {
    struct Row {
        double x, w, f;
        int y;
    };
    std::vector<Row> rows;
    rows.reserve(static_cast<std::size_t>(in.size()));
    for_each_row(in, 0, in.size(), mapping, weight_exp,
                 [&](double x, int y, double w, double f) { rows.push_back({x, w, f, y}); });
    pass_counter.fetch_add(1, std::memory_order_relaxed);
    std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.x < b.x; });
    Atoms atoms;
    atoms.mapping = mapping;
    atoms.rows = static_cast<std::uint64_t>(in.size());
    atoms.weight_exp = weight_exp;
    // Counted first: growing three arrays by push_back took an eighth of the
    // call at 1e6 distinct predictions.
    std::size_t distinct = rows.empty() ? 0 : 1;
    for (std::size_t i = 1; i < rows.size(); ++i) distinct += rows[i].x != rows[i - 1].x ? 1 : 0;
    atoms.x.reserve(distinct);
    for (auto& stats : atoms.by_label) stats.reserve(distinct);
    for (std::size_t i = 0; i < rows.size();) {
        std::size_t j = i;
        bool one_f = true;
        atoms.x.push_back(rows[i].x);
        atoms.by_label[0].emplace_back();
        atoms.by_label[1].emplace_back();
        for (; j < rows.size() && rows[j].x == rows[i].x; ++j) {
            add_row(atoms.by_label[rows[j].y].back(), rows[j].w, rows[j].f);
            one_f = one_f && rows[j].f == rows[i].f;
        }
        if (one_f)  // Σw·f as f·Σw, one rounding (as in atoms_of_rows)
            for (int y = 0; y < 2; ++y) atoms.by_label[y].back().weight_f = rows[i].f * atoms.by_label[y].back().weight;
        i = j;
    }
    return atoms;
}

Summary summarize_atoms(const Atoms& atoms, Content content, std::int64_t intervals) {
    const double scale = static_cast<double>(intervals);
    Summary s = Summary::empty(atoms.mapping, content, intervals);
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

std::uint64_t passes_over_rows() { return pass_counter.load(std::memory_order_relaxed); }

}  // namespace smoothece
