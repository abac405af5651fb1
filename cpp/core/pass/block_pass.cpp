// The pass of a sketch's small batches onto its blocked grid: each row
// spread onto the blocks it reaches, O(rows) whatever the grid's size (the
// grid pass zeroes and spreads every cell of the grid, O(intervals), which on
// a fine grid costs more than a small batch's rows).
#include <algorithm>
#include <cmath>
#include <vector>

#include "pass/rows.hpp"
#include "runtime/pool.hpp"

namespace smoothece {

BlockedSummary summarise_rows_blocked(const Inputs& in, const Mapping& mapping, std::int64_t intervals) {
    check_shapes(in, /*allow_empty=*/true);
    BlockedSummary out(mapping, intervals);
    const bool weighted = in.has_weights();
    const int exp = weight_exponent_of(in);
    // 2^exp as two finite factors (it may lie beyond 2^1023 for subnormal weights), as the grid pass scales.
    const int first_exp = std::min(std::max(exp, -600), 600);
    const double scale_1 = std::ldexp(1.0, first_exp), scale_2 = std::ldexp(1.0, exp - first_exp);
    const double lo = in.clip_lo, hi = in.clip_hi;
    constexpr std::int64_t kRowsPerRead = 4096;
    std::vector<double> f(kRowsPerRead), y(kRowsPerRead), w(weighted ? kRowsPerRead : 0);
    double weight = 0.0;
    std::uint64_t positive = 0;
    for (std::int64_t begin = 0; begin < in.size(); begin += kRowsPerRead) {
        interruption_point();
        const std::int64_t count = std::min(kRowsPerRead, in.size() - begin);
        read_doubles(in.f, begin, count, f.data());
        read_doubles(in.y, begin, count, y.data());
        if (weighted) read_doubles(in.w, begin, count, w.data());
        std::uint64_t bad = 0;
        for (std::int64_t k = 0; k < count; ++k) {
            bad |= bad_row(f[static_cast<std::size_t>(k)], y[static_cast<std::size_t>(k)], lo, hi);
            if (weighted) bad |= bad_weight(w[static_cast<std::size_t>(k)]);
        }
        if (bad) report_bad_rows(in);  // nothing of the caller's was changed
        for (std::int64_t k = 0; k < count; ++k) {
            const auto i = static_cast<std::size_t>(k);
            const double m = weighted ? w[i] * scale_1 * scale_2 : 1.0;
            if (!(m > 0.0)) continue;  // a row of zero weight carries nothing (the row count keeps it)
            const double fc = std::min(std::max(f[i], 0.0), 1.0);
            out.spread(mapping.position(fc), static_cast<int>(y[i]), 1.0, m, m * fc, m * m);
            weight += m;
            ++positive;
        }
    }
    count_pass(static_cast<std::uint64_t>(in.size()));
    out.rows = static_cast<std::uint64_t>(in.size());
    out.positive_rows = positive;
    out.weight = weight;
    out.weight_exp = exp;
    return out;
}

}  // namespace smoothece
