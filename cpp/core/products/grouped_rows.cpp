#include "products/grouped_rows.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "pass/rows.hpp"
#include "runtime/errors.hpp"
#include "runtime/pool.hpp"

namespace smoothece {

Inputs GroupedRows::rows_of(std::int64_t g, GroupBuffer& buffer) const {
    const std::int64_t begin = offset[static_cast<std::size_t>(g)], n = offset[static_cast<std::size_t>(g + 1)] - begin;
    buffer.f.resize(static_cast<std::size_t>(n));
    buffer.y.resize(static_cast<std::size_t>(n));
    const double* rows = packed.data() + begin;
    double* f = buffer.f.data();
    std::uint8_t* y = buffer.y.data();
    for (std::int64_t k = 0; k < n; ++k) {  // two loops, each vectorized
        std::uint64_t bits;
        std::memcpy(&bits, rows + k, sizeof bits);
        y[k] = static_cast<std::uint8_t>(bits >> 63);
    }
    for (std::int64_t k = 0; k < n; ++k) f[k] = std::fabs(rows[k]);
    Inputs in;
    in.f = {reinterpret_cast<const char*>(buffer.f.data()), n, sizeof(double), DType::Float64, "f"};
    in.y = {reinterpret_cast<const char*>(buffer.y.data()), n, sizeof(std::uint8_t), DType::UInt8, "y"};
    if (!w.empty()) in.w = {reinterpret_cast<const char*>(w.data() + begin), n, sizeof(double), DType::Float64, "weights"};
    return in;
}

namespace {

constexpr std::int64_t kChunk = std::int64_t{1} << 16;  // rows between interruption checks
constexpr std::int64_t kScatterAhead = 32;  // rows: about the misses a core keeps in flight

// The gathering pass's inner loop: rows [first, last) of a part to their
// groups' places (next[code]++), packed, checked. The rows are read in their
// own types for the common ones (no copy into blocks of doubles first: that
// costs a third of the pass), other types block by block through doubles.
struct Scatter {
    double* packed;
    double* weights;

    // Whether any of the rows is bad.
    bool rows(const Inputs& in, std::int64_t first, std::int64_t last, const std::int64_t* codes,
              std::int64_t* next) const {
        const bool direct = (in.f.dtype == DType::Float64 || in.f.dtype == DType::Float32) &&
                            (in.y.dtype == DType::Bool || in.y.dtype == DType::UInt8 || in.y.dtype == DType::Int8) &&
                            (!in.has_weights() || in.w.dtype == DType::Float64 || in.w.dtype == DType::Float32);
        if (direct) {
            return with_float(in.f.dtype, [&](auto f) {
                return with_byte(in.y.dtype, [&](auto y) {
                    using F = decltype(f);
                    using Y = decltype(y);
                    if (!in.has_weights()) return typed<F, Y, void>(in.f, in.y, in.w, first, last, codes, next, in);
                    return with_float(in.w.dtype, [&](auto w) {
                        return typed<F, Y, decltype(w)>(in.f, in.y, in.w, first, last, codes, next, in);
                    });
                });
            });
        }
        bool bad = false;
        for_each_block(in, first, last,
                       [&](std::int64_t begin, std::int64_t count, const double* f, const double* y, const double* w) {
                           const Column fb{reinterpret_cast<const char*>(f), count, sizeof(double), DType::Float64, "f"};
                           const Column yb{reinterpret_cast<const char*>(y), count, sizeof(double), DType::Float64, "y"};
                           const Column wb{reinterpret_cast<const char*>(w), count, sizeof(double), DType::Float64, "weights"};
                           bad |= w ? typed<double, double, double>(fb, yb, wb, 0, count, codes + begin, next, in)
                                    : typed<double, double, void>(fb, yb, wb, 0, count, codes + begin, next, in);
                       });
        return bad;
    }

private:
    // fn(T{}) with T the C++ type of a float column, of a one-byte label column.
    template <class Fn>
    static bool with_float(DType dtype, Fn&& fn) {
        return dtype == DType::Float64 ? fn(double{}) : fn(float{});
    }
    template <class Fn>
    static bool with_byte(DType dtype, Fn&& fn) {
        return dtype == DType::Int8 ? fn(std::int8_t{}) : fn(std::uint8_t{});
    }

    template <class F, class Y, class W>
    bool typed(const Column& f, const Column& y, const Column& w, std::int64_t first, std::int64_t last,
               const std::int64_t* codes, std::int64_t* next, const Inputs& in) const {
        constexpr bool kWeighted = !std::is_void_v<W>;
        const double lo = in.clip_lo, hi = in.clip_hi;  // locals: the stores below could alias them
        bool bad = false;
        for (std::int64_t chunk = first; chunk < last; chunk += kChunk) {
            interruption_point();
            for (std::int64_t i = chunk, chunk_end = std::min(last, chunk + kChunk); i < chunk_end; ++i) {
                // Each row's store misses the cache (its group's line was evicted
                // since that group's last row) and stores leave in order: asking
                // for the line of the row kScatterAhead on overlaps the misses.
                if (i + kScatterAhead < last) {
                    const std::int64_t ahead = next[codes[i + kScatterAhead]];
                    __builtin_prefetch(packed + ahead, 1);
                    if constexpr (kWeighted) __builtin_prefetch(weights + ahead, 1);
                }
                const auto fi = static_cast<double>(f.at<F>(i));
                const auto yi = static_cast<double>(y.at<Y>(i));
                const std::int64_t to = next[codes[i]]++;
                const double clamped = std::fabs(std::min(std::max(fi, 0.0), 1.0));
                packed[to] = yi == 1.0 ? -clamped : clamped;
                bad |= bad_row(fi, yi, lo, hi) != 0;
                if constexpr (kWeighted) {
                    const auto wi = static_cast<double>(w.at<W>(i));
                    weights[to] = wi;
                    bad |= bad_weight(wi) != 0;
                }
            }
        }
        return bad;
    }
};

}  // namespace

GroupedRows gather_groups(const std::vector<Inputs>& parts, const std::vector<const std::int64_t*>& codes,
                          std::int64_t groups, std::int64_t threads) {
    if (parts.empty() || codes.size() != parts.size()) throw std::logic_error("one array of codes per part");
    // The parts are one sequence of rows: part p holds rows [start[p], start[p + 1]).
    std::vector<std::int64_t> start(parts.size() + 1, 0);
    for (std::size_t p = 0; p < parts.size(); ++p) {
        check_shapes(parts[p], /*allow_empty=*/parts.size() > 1);
        start[p + 1] = start[p] + parts[p].size();
    }
    const std::int64_t n = start.back();
    GroupedRows out;
    const bool weighted = parts[0].has_weights();
    for (const Inputs& part : parts)
        if (part.has_weights() != weighted) throw std::invalid_argument("every part has weights, or none does");
    // fn(part, first, last) for the pieces of the parts that rows [b, e) cover.
    auto for_pieces = [&](std::int64_t b, std::int64_t e, auto&& fn) {
        for (std::size_t p = 0; p < parts.size(); ++p) {
            const std::int64_t lo = std::max(b, start[p]), hi = std::min(e, start[p + 1]);
            if (lo < hi) fn(p, lo - start[p], hi - start[p]);
        }
    };
    // A counting sort, each thread over its own contiguous share of the rows:
    // counts per (share, group), then every share scatters from its own
    // cursors, so the rows of a group keep their original order.
    const int shares = thread_count(threads, n, std::int64_t{1} << 18);
    std::vector<std::vector<std::int64_t>> cursor(static_cast<std::size_t>(shares));
    std::atomic<bool> out_of_range{false};
    parallel_for(shares, [&](int t) {
        std::vector<std::int64_t>& counts = cursor[static_cast<std::size_t>(t)];
        counts.assign(static_cast<std::size_t>(groups), 0);
        std::int64_t* count = counts.data();
        const auto range = static_cast<std::uint64_t>(groups);  // a local: the counts' stores could alias `groups`
        const Share share = share_of(n, t, shares);
        for_pieces(share.begin, share.end, [&](std::size_t p, std::int64_t first, std::int64_t last) {
            const std::int64_t* c = codes[p];
            for (std::int64_t i = first; i < last; ++i) {
                if (static_cast<std::uint64_t>(c[i]) >= range) {  // negative codes too
                    out_of_range = true;
                    return;
                }
                ++count[c[i]];
            }
        });
    });
    // Codes are the core's own, but for keys that are their own codes: those
    // are a copy of the caller's keys, which another thread may have changed
    // after they were checked. This pass reads every code the scatter reads.
    if (out_of_range)
        throw InputError("groups changed while they were read (another thread wrote to the array during the call): "
                         "a group code is outside [0, " + std::to_string(groups) + "); pass keys that nothing changes "
                         "until the call returns, e.g. a copy",
                         "groups");
    out.offset.assign(static_cast<std::size_t>(groups + 1), 0);
    std::int64_t at = 0;
    for (std::size_t g = 0; g < static_cast<std::size_t>(groups); ++g) {
        out.offset[g] = at;
        for (auto& c : cursor) {
            const std::int64_t rows = c[g];
            c[g] = at;
            at += rows;
        }
    }
    out.offset.back() = at;
    out.packed.resize(static_cast<std::size_t>(n));
    if (weighted) out.w.resize(static_cast<std::size_t>(n));
    // Checked in the same pass, as smece checks them (the groups' own passes
    // then find nothing): a bad row is reported in its part's coordinates.
    std::vector<std::atomic<bool>> bad(parts.size());
    const Scatter scatter{out.packed.data(), out.w.data()};
    parallel_for(shares, [&](int t) {
        std::int64_t* next = cursor[static_cast<std::size_t>(t)].data();
        const Share share = share_of(n, t, shares);
        for_pieces(share.begin, share.end, [&](std::size_t p, std::int64_t first, std::int64_t last) {
            if (scatter.rows(parts[p], first, last, codes[p], next)) bad[p] = true;
        });
    });
    for (std::size_t p = 0; p < parts.size(); ++p)
        if (bad[p]) report_bad_rows(parts[p]);
    return out;
}

GroupedRows gather_groups(const Inputs& in, const std::int64_t* codes, std::int64_t groups, std::int64_t threads) {
    return gather_groups(std::vector<Inputs>{in}, std::vector<const std::int64_t*>{codes}, groups, threads);
}

}  // namespace smoothece
