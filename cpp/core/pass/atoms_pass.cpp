// The few-atoms pass: the rows grouped by distinct position, for data with
// few distinct predictions (base rates, discrete forecasts), by hashing
// (atoms_of_rows) or, for any number of them, by sorting (all_atoms_of_rows).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <utility>

#include "pass/bin_kernel.hpp"
#include "pass/rows.hpp"
#include "runtime/kernels.hpp"
#include "runtime/pool.hpp"

namespace smoothece {
namespace {

// Applies fn(x, label, w, f) to every row, with the checks of the pass (the
// rows were checked by the first pass, but another thread may have changed
// them since: a bad value is reported, never used).
template <class Fn>
void for_each_row(const Inputs& in, std::int64_t first, std::int64_t last, const Mapping& mapping, int weight_exp,
                  Fn&& fn) {
    for_each_block(in, first, last, [&](std::int64_t, std::int64_t count, const double* f, const double* y, const double* w) {
        for (std::int64_t k = 0; k < count; ++k) {
            const double fk = f[k], yk = y[k], wk = w ? w[k] : 1.0;
            if (bad_row(fk, yk, in.clip_lo, in.clip_hi) | bad_weight(wk)) report_bad_rows(in);
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

// The distinct positions of rows [first, last) (as `keys` tells them apart)
// with their sums, sorted, or nullopt beyond max_atoms of them. Open
// addressing on the bits of the position; for unit weights a block of one
// prediction (a base rate) is counted at once, and other rows find their
// slot through a small cache of recent predictions. The table holds indices
// into a dense list, so a small range (one group's rows) zeroes 4 bytes a
// slot, not a whole atom.
std::optional<Atoms> atoms_of_range(const Inputs& in, std::int64_t first, std::int64_t last, const Mapping& mapping,
                                    int weight_exp, std::size_t max_atoms, AtomKeys keys, std::int64_t& rows_read) {
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
    // A sketch's positions: rounded as it keeps them (the rows' own f stays
    // in the sums), and rows of zero weight, which it drops, make no atom.
    const bool sketch = keys == AtomKeys::Sketch;
    // Rows' atoms are keyed by prediction, also on the logit axis, whose
    // position (two logarithms) is then taken once an atom (predictions that
    // the clamp gives one position are merged at the end); a sketch's logit
    // atoms by their rounded position (logit_keys).
    const bool logit_keys = mapping.is_logit() && sketch;
    const bool plain = unit && !logit_keys && weight_exp == 0;
    constexpr int kRecentBits = 6;
    std::uint64_t recent_key[std::size_t{1} << kRecentBits] = {};
    std::int32_t recent_slot[std::size_t{1} << kRecentBits];
    std::fill(std::begin(recent_slot), std::end(recent_slot), -1);
    std::vector<double> positions, weights;
    std::vector<double> clamped, labels;
    bool overflow = false;
    // Stops at the first row past max_atoms (continuous data: after about max_atoms rows).
    rows_read = for_each_block(in, first, last, [&](std::int64_t, std::int64_t count, const double* f, const double* y, const double* w) {
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
                if (bad) report_bad_rows(in);
                double f0 = std::min(std::max(f[0], 0.0), 1.0) + 0.0;
                if (sketch) f0 = sketch_rounded(f0);
                const std::int32_t at = slot_of(bits_of(f0), f0);
                if (at < 0) {
                    overflow = true;
                    return false;
                }
                Slot& slot = slots[static_cast<std::size_t>(at)];
                slot.rows += count;
                slot.positives += static_cast<std::int64_t>((ones_of[0] + ones_of[1]) + (ones_of[2] + ones_of[3]));
                return true;
            }
            // Checked and clamped first, in a loop that vectorizes (checked
            // in the row loop, the flag would be kept on the stack: one
            // store-to-load chain through every row). Rows are used as
            // checked: from the copies, not from f and y again.
            clamped.resize(static_cast<std::size_t>(count));
            labels.resize(static_cast<std::size_t>(count));
            if (SMOOTHECE_KERNEL_CALL(check_block, f, y, count, lo, hi, clamped.data(), labels.data())) report_bad_rows(in);
            if (sketch)  // one slot per position the sketch keeps (it sets Σw·f there itself)
                for (double& c : clamped) c = sketch_rounded(c);
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
                        return false;
                    }
                    recent_key[c] = key;
                    recent_slot[c] = at;
                    slot_at = slots.data();  // a new slot may have moved them
                }
                slot_at[at].positives += labels[static_cast<std::size_t>(k)] == 1.0 ? 1 : 0;
                ++slot_at[at].rows;
            }
            return true;
        }
        for (std::int64_t k = 0; k < count; ++k) bad |= bad_row(f[k], y[k], lo, hi);
        if (w)
            for (std::int64_t k = 0; k < count; ++k) bad |= bad_weight(w[k]);
        if (bad) report_bad_rows(in);
        positions.resize(static_cast<std::size_t>(count));
        weights.resize(static_cast<std::size_t>(count));
        for (std::int64_t k = 0; k < count; ++k) {
            const double fc = std::min(std::max(f[k], 0.0), 1.0);
            positions[k] = logit_keys ? mapping.position(fc) : fc + 0.0;  // −0 → +0
            if (sketch) positions[k] = sketch_rounded(positions[k]);
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
            if (sketch && !(w0 + w1 > 0.0)) {  // rows of zero weight: not kept
                k = j;
                continue;
            }
            const std::int32_t at = slot_of(key, fk);
            if (at < 0) {
                overflow = true;
                return false;
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
        return true;
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
        if (mapping.is_logit() && !logit_keys) position = mapping.position(position);  // a prediction's
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
        // Predictions keyed apart that share a logit position (clamped
        // below 1e-12 or above 1 − 1e-12): one atom. (Also a position that
        // a logarithm's rounding put a step below its neighbour's, so that
        // positions strictly increase whatever the libm.)
        const std::size_t newest = atoms.x.size() - 1;
        if (newest > 0 && !(atoms.x[newest] > atoms.x[newest - 1])) {
            atoms.x.pop_back();
            for (auto& stats : atoms.by_label) {
                add_stats(stats[newest - 1], stats[newest]);
                stats.pop_back();
            }
        }
    }
    return atoms;
}

}  // namespace

std::optional<Atoms> atoms_of_rows(const Inputs& in, const Mapping& mapping, int weight_exp, std::size_t max_atoms,
                                   std::int64_t threads, AtomKeys keys) {
    if (max_atoms > std::size_t{1} << 30) throw std::logic_error("atoms_of_rows: the cap is for few atoms");
    // Each thread its own share and table; the shares' atoms are then merged
    // in share order (so the sums depend only on the thread count).
    const std::int64_t n = in.size();
    const int shares = thread_count(threads, n, std::int64_t{1} << 18);
    std::vector<std::optional<Atoms>> parts(static_cast<std::size_t>(shares));
    std::vector<std::int64_t> read(parts.size(), 0);
    parallel_for(shares, [&](int t) {
        const Share share = share_of(n, t, shares);
        const auto i = static_cast<std::size_t>(t);
        parts[i] = atoms_of_range(in, share.begin, share.end, mapping, weight_exp, max_atoms, keys, read[i]);
    });
    std::int64_t rows_read = 0;
    for (const std::int64_t r : read) rows_read += r;
    count_pass(rows_read);
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
    count_pass(static_cast<std::uint64_t>(in.size()));
    sort_interruptibly(rows, [](const Row& a, const Row& b) { return a.x < b.x; });
    Atoms atoms;
    atoms.mapping = mapping;
    atoms.rows = static_cast<std::uint64_t>(in.size());
    atoms.weight_exp = weight_exp;
    // Counted first: growing three arrays by push_back would cost an eighth
    // of the call at 1e6 distinct predictions.
    std::size_t distinct = rows.empty() ? 0 : 1;
    for (std::size_t i = 1; i < rows.size(); ++i) distinct += rows[i].x != rows[i - 1].x ? 1 : 0;
    interruption_point();
    atoms.x.reserve(distinct);
    for (auto& stats : atoms.by_label) stats.reserve(distinct);
    for (std::size_t i = 0, checked = 0; i < rows.size();) {
        if (i >= checked) {  // every 2^16 rows
            interruption_point();
            checked = i + (std::size_t{1} << 16);
        }
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

}  // namespace smoothece
