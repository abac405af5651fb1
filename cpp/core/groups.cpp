#include "groups.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <type_traits>
#include <unordered_map>

#include "analysis.hpp"
#include "errors.hpp"
#include "pool.hpp"
#include "rows.hpp"

namespace smoothece {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr std::int64_t kChunk = std::int64_t{1} << 16;
constexpr std::int64_t kScatterAhead = 32;  // rows: about the misses a core keeps in flight
constexpr std::uint64_t kDenseKeyRange = std::uint64_t{1} << 24;  // a table of at most 128 MB (8 bytes a value)
constexpr std::uint64_t kByteKeys = std::uint64_t{1} << 16;  // keys seen marked a byte each: 64 KB a thread

// A key of at most 8 bytes as one word (−0.0 as 0.0). Size is a constant
// for the common widths, so the copy compiles to one load.
template <int Size, bool Floating>
std::uint64_t load_word(const char* p) {
    std::uint64_t word = 0;
    std::memcpy(&word, p, Size);
    if constexpr (Floating && Size == 8) {
        double v;
        std::memcpy(&v, p, 8);
        if (v == 0.0) word = 0;
    } else if constexpr (Floating && Size == 4) {
        float v;
        std::memcpy(&v, p, 4);
        if (v == 0.0f) word = 0;
    } else if constexpr (Floating && Size == 2) {
        if ((word & 0x7FFF) == 0) word = 0;  // float16 ±0
    }
    return word;
}

// Integer keys within a narrow range (ids 0..K−1, say) index a table
// directly: no hashing. Codes in ascending order of the key's word (numeric
// order for non-negative integers, so the caller's sort of the keys is the
// identity). Empty when the range is too wide for that.
template <int Size, class Load>
Factorized factorize_dense(const char* data, std::int64_t size, std::int64_t stride, Load load, std::int64_t threads) {
    const int shares = thread_count(threads, size, std::int64_t{1} << 18);
    auto share_begin = [&](int t) { return size * t / shares; };
    const std::uint64_t limit = std::min<std::uint64_t>(kDenseKeyRange, 4 * static_cast<std::uint64_t>(size) + 65536);
    // The range, and, where the keys could be their own codes (contiguous
    // 8-byte words), which words below `limit` occur, per share: enough to
    // see that without a second pass. A word below kByteKeys marks a byte (a
    // plain store); only larger words set a bit. And the range grows on a
    // branch taken a handful of times. (Bits for every word, read-modify-
    // written on a few hot words, and min/max on every row chained the rows
    // into one dependency: 2.5x this pass's time at 10^4 groups.)
    const bool may_be_codes = Size == 8 && stride == 8;
    std::vector<std::uint64_t> share_lo(static_cast<std::size_t>(shares)), share_hi(share_lo.size());
    std::vector<std::vector<std::uint8_t>> share_small(share_lo.size());
    std::vector<std::vector<std::uint64_t>> share_large(share_lo.size());
    parallel_for(shares, [&](int t) {
        const auto s = static_cast<std::size_t>(t);
        if (may_be_codes) {
            share_small[s].assign(static_cast<std::size_t>(std::min(kByteKeys, limit)), 0);
            if (limit > kByteKeys) share_large[s].assign(static_cast<std::size_t>(limit / 64 + 1), 0);
        }
        // Locals: the stores could alias anything captured by reference.
        std::uint8_t* bytes = share_small[s].data();
        std::uint64_t* bits = share_large[s].data();
        const std::uint64_t below = may_be_codes ? limit : 0;  // 0: nothing marked
        const std::uint64_t small = std::min(kByteKeys, below);
        const char* const keys = data;
        const std::int64_t step = stride;
        const std::int64_t begin = share_begin(t), end = share_begin(t + 1);
        std::uint64_t lo = std::numeric_limits<std::uint64_t>::max(), hi = 0;
        if (begin < end) lo = hi = load(keys + begin * step);
        for (std::int64_t i = begin; i < end; ++i) {
            if ((i & (kChunk - 1)) == 0) interruption_point();
            const std::uint64_t key = load(keys + i * step);
            if (key - lo > hi - lo) {  // outside [lo, hi]
                lo = std::min(lo, key);
                hi = std::max(hi, key);
            }
            if (key < small) {
                bytes[key] = 1;
            } else if (key < below) {
                bits[key / 64] |= std::uint64_t{1} << (key % 64);
            }
        }
        share_lo[s] = lo;
        share_hi[s] = hi;
    });
    const std::uint64_t lo = *std::min_element(share_lo.begin(), share_lo.end());
    const std::uint64_t hi = *std::max_element(share_hi.begin(), share_hi.end());
    if (size == 0 || hi - lo >= limit) return {};
    if (may_be_codes && lo == 0 && hi < limit) {
        bool every = true;  // every word 0..hi present: a byte at a time below kByteKeys, 64 at a time above
        for (std::uint64_t word = 0; every && word <= hi && word < kByteKeys; ++word) {
            bool seen = false;
            for (const auto& bytes : share_small) seen = seen || bytes[static_cast<std::size_t>(word)] != 0;
            every = seen;
        }
        for (std::uint64_t word = kByteKeys; every && word <= hi; word += 64) {
            std::uint64_t seen = 0;
            for (const auto& bits : share_large) seen |= bits[static_cast<std::size_t>(word / 64)];
            const std::uint64_t wanted = hi - word >= 63 ? ~std::uint64_t{0} : (std::uint64_t{1} << (hi - word + 1)) - 1;
            every = (seen & wanted) == wanted;
        }
        if (every) {
            Factorized out;
            out.identity = static_cast<std::int64_t>(hi) + 1;
            return out;
        }
    }
    share_small.clear();
    share_large.clear();
    // One pass writes each row's offset from lo and, per offset, the first
    // row holding it: a share's rows ascend, so a share lowers an entry at
    // most once and otherwise only reads it.
    constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();
    const auto range = static_cast<std::size_t>(hi - lo + 1);
    std::unique_ptr<std::atomic<std::int64_t>[]> table(new std::atomic<std::int64_t>[range]);
    for (std::size_t s = 0; s < range; ++s) table[s].store(kNone, std::memory_order_relaxed);
    Factorized out;
    out.codes.resize(static_cast<std::size_t>(size));
    parallel_for(shares, [&](int t) {
        for (std::int64_t i = share_begin(t), end = share_begin(t + 1); i < end; ++i) {
            if ((i & (kChunk - 1)) == 0) interruption_point();
            const auto offset = static_cast<std::int64_t>(load(data + i * stride) - lo);
            out.codes[static_cast<std::size_t>(i)] = offset;
            std::atomic<std::int64_t>& first = table[static_cast<std::size_t>(offset)];
            std::int64_t seen = first.load(std::memory_order_relaxed);
            while (i < seen && !first.compare_exchange_weak(seen, i, std::memory_order_relaxed)) {
            }
        }
    });
    for (std::size_t s = 0; s < range; ++s) {  // the table now maps an offset to its code
        const std::int64_t first = table[s].load(std::memory_order_relaxed);
        if (first == kNone) continue;
        table[s].store(static_cast<std::int64_t>(out.first.size()), std::memory_order_relaxed);
        out.first.push_back(first);
    }
    if (out.first.size() < range) {  // some offsets unused: codes are not the offsets
        parallel_for(shares, [&](int t) {
            for (std::int64_t i = share_begin(t), end = share_begin(t + 1); i < end; ++i) {
                std::int64_t& code = out.codes[static_cast<std::size_t>(i)];
                code = table[static_cast<std::size_t>(code)].load(std::memory_order_relaxed);
            }
        });
    }
    return out;
}

template <class Load>
Factorized factorize_hashed(const char* data, std::int64_t size, std::int64_t stride, Load load) {
    Factorized out;
    out.codes.resize(static_cast<std::size_t>(size));
    int bits = 10;
    std::size_t capacity = std::size_t{1} << bits;
    std::vector<std::uint64_t> keys(capacity);
    std::vector<std::int64_t> slots(capacity, -1);
    for (std::int64_t i = 0; i < size; ++i) {
        if ((i & (kChunk - 1)) == 0) interruption_point();
        const std::uint64_t key = load(data + i * stride);
        if (2 * out.first.size() >= capacity) {  // grow: rehash at half load
            capacity *= 2;
            ++bits;
            std::vector<std::uint64_t> new_keys(capacity);
            std::vector<std::int64_t> new_slots(capacity, -1);
            for (std::size_t s = 0; s < slots.size(); ++s) {
                if (slots[s] < 0) continue;
                std::size_t h = fibonacci_slot(keys[s], bits);
                while (new_slots[h] >= 0) h = (h + 1) & (capacity - 1);
                new_keys[h] = keys[s];
                new_slots[h] = slots[s];
            }
            keys.swap(new_keys);
            slots.swap(new_slots);
        }
        std::size_t h = fibonacci_slot(key, bits);
        while (slots[h] >= 0 && keys[h] != key) h = (h + 1) & (capacity - 1);
        if (slots[h] < 0) {
            keys[h] = key;
            slots[h] = static_cast<std::int64_t>(out.first.size());
            out.first.push_back(i);
        }
        out.codes[static_cast<std::size_t>(i)] = slots[h];
    }
    return out;
}

template <int Size, bool Floating>
Factorized factorize_words(const char* data, std::int64_t size, std::int64_t stride, std::int64_t threads) {
    const auto load = [](const char* p) { return load_word<Size, Floating>(p); };
    if constexpr (!Floating) {
        Factorized dense = factorize_dense<Size>(data, size, stride, load, threads);
        if (!dense.codes.empty() || dense.identity > 0) return dense;
    }
    return factorize_hashed(data, size, stride, load);
}

Factorized factorize_bytes(const char* data, std::int64_t size, std::int64_t stride, std::int64_t itemsize) {
    Factorized out;
    out.codes.resize(static_cast<std::size_t>(size));
    std::unordered_map<std::string_view, std::int64_t> seen;
    for (std::int64_t i = 0; i < size; ++i) {
        if ((i & (kChunk - 1)) == 0) interruption_point();
        const std::string_view key(data + i * stride, static_cast<std::size_t>(itemsize));
        const auto [it, added] = seen.emplace(key, static_cast<std::int64_t>(out.first.size()));
        if (added) out.first.push_back(i);
        out.codes[static_cast<std::size_t>(i)] = it->second;
    }
    return out;
}

}  // namespace

Factorized factorize(const char* data, std::int64_t size, std::int64_t stride, std::int64_t itemsize, bool floating,
                     std::int64_t threads) {
    switch (floating ? -itemsize : itemsize) {
        case 1: return factorize_words<1, false>(data, size, stride, threads);
        case 2: return factorize_words<2, false>(data, size, stride, threads);
        case 4: return factorize_words<4, false>(data, size, stride, threads);
        case 8: return factorize_words<8, false>(data, size, stride, threads);
        case -2: return factorize_words<2, true>(data, size, stride, threads);
        case -4: return factorize_words<4, true>(data, size, stride, threads);
        case -8: return factorize_words<8, true>(data, size, stride, threads);
        default: break;
    }
    if (itemsize <= 8) {  // byte strings of 3, 5, 6 or 7 bytes
        return factorize_hashed(data, size, stride, [itemsize](const char* p) {
            std::uint64_t word = 0;
            std::memcpy(&word, p, static_cast<std::size_t>(itemsize));
            return word;
        });
    }
    return factorize_bytes(data, size, stride, itemsize);
}

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
    auto share_begin = [&](int t) { return n * t / shares; };
    std::vector<std::vector<std::int64_t>> cursor(static_cast<std::size_t>(shares));
    std::atomic<bool> out_of_range{false};
    parallel_for(shares, [&](int t) {
        std::vector<std::int64_t>& counts = cursor[static_cast<std::size_t>(t)];
        counts.assign(static_cast<std::size_t>(groups), 0);
        std::int64_t* count = counts.data();
        const auto range = static_cast<std::uint64_t>(groups);  // a local: the counts' stores could alias `groups`
        for_pieces(share_begin(t), share_begin(t + 1), [&](std::size_t p, std::int64_t first, std::int64_t last) {
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
    if (out_of_range) throw std::logic_error("a group code out of range");
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
        for_pieces(share_begin(t), share_begin(t + 1), [&](std::size_t p, std::int64_t first, std::int64_t last) {
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

namespace {

// Answers group g from its analysis into `out`: exactly what the ungrouped
// calls (bootstrap_smece, calibration_test with seed + g) do; σ* is written
// by the caller (from the analysis smece itself would make).
void answer_one(Analysis& analysis, std::int64_t g, const GroupOptions& options, GroupAnswers& out) {
    const auto gi = static_cast<std::size_t>(g);
    const double star = analysis.smece(1).sigma;
    out.total_weight[gi] = analysis.summary().total_weight();
    const std::uint64_t seed = options.seed + static_cast<std::uint64_t>(g);
    if (options.n_boot > 0) {
        Replicates reps =
            analysis.replicates(ResampleKind::Bootstrap, options.n_boot, seed, star, 0, options.weights, false, 1);
        std::sort(reps.sigma_star.begin(), reps.sigma_star.end());
        const double alpha = 1.0 - options.level;
        out.low[gi] = quantile_sorted(reps.sigma_star, alpha / 2.0);
        out.high[gi] = quantile_sorted(reps.sigma_star, 1.0 - alpha / 2.0);
    }
    if (options.n_sim > 0) {
        const Replicates null =
            analysis.replicates(ResampleKind::Consistency, options.n_sim, seed, star, 0, options.weights, false, 1);
        const auto above =
            std::count_if(null.sigma_star.begin(), null.sigma_star.end(), [star](double s) { return s >= star * kNullTie; });
        out.p_value[gi] = static_cast<double>(1 + above) / static_cast<double>(1 + options.n_sim);
    }
}

GroupAnswers empty_answers(std::int64_t groups) {
    GroupAnswers out;
    out.rows.assign(static_cast<std::size_t>(groups), 0);
    for (auto* v : {&out.total_weight, &out.sigma, &out.low, &out.high, &out.p_value})
        v->assign(static_cast<std::size_t>(groups), kNaN);
    return out;
}

// Runs answer(g, buffer) for every group on the pool, groups handed out one
// by one, with a buffer for a group's rows per worker.
template <class Answer>
void for_each_group(std::int64_t groups, std::int64_t threads, Answer&& answer) {
    std::atomic<std::int64_t> next{0};
    parallel_for(thread_count(threads, groups, 1), [&](int) {
        GroupBuffer buffer;
        for (std::int64_t g = next++; g < groups; g = next++) answer(g, buffer);
    });
}

}  // namespace

GroupAnswers answer_groups(const GroupedRows& grouped, const GroupOptions& options, std::int64_t threads) {
    const std::int64_t groups = grouped.groups();
    GroupAnswers out = empty_answers(groups);
    const bool full = options.n_boot > 0 || options.n_sim > 0;
    for_each_group(groups, threads, [&](std::int64_t g, GroupBuffer& buffer) {
        const Inputs rows = grouped.rows_of(g, buffer);
        out.rows[static_cast<std::size_t>(g)] = rows.size();
        if (rows.size() == 0) return;
        try {
            // Exactly what the ungrouped calls on these rows do, on one thread:
            // σ* from smece's own pass, resampling from the full summary.
            Analysis residual = Analysis::of_rows(rows, options.metric, Content::Residual, 1);
            out.sigma[static_cast<std::size_t>(g)] = residual.smece(1).sigma;
            out.total_weight[static_cast<std::size_t>(g)] = residual.summary().total_weight();
            if (full) {
                Analysis analysis = Analysis::of_rows(rows, options.metric, Content::Full, 1);
                answer_one(analysis, g, options, out);
            }
        } catch (const InputError& e) {
            if (e.argument != "weights") throw;  // cannot happen: gather_groups checked the rows
            out.total_weight[static_cast<std::size_t>(g)] = 0.0;  // a group of zero weight: no answer (NaN)
        }
    });
    return out;
}

GroupedSketch::GroupedSketch(Metric metric, std::int64_t resolution) : metric_(metric), resolution_(resolution) {
    Sketch check(metric, resolution);  // InputError for a bad resolution, here
}

void GroupedSketch::grow(std::int64_t groups) {
    while (static_cast<std::int64_t>(sketches_.size()) < groups) sketches_.emplace_back(metric_, resolution_);
}

void GroupedSketch::set(std::int64_t g, const Sketch& sketch) {
    grow(g + 1);
    sketches_[static_cast<std::size_t>(g)] = sketch;
}

void GroupedSketch::update(const Inputs& in, const std::int64_t* codes, std::int64_t threads) {
    check_shapes(in, /*allow_empty=*/true);
    if (in.size() == 0) return;
    const std::int64_t groups = *std::max_element(codes, codes + in.size()) + 1;
    const GroupedRows grouped = gather_groups(in, codes, groups, threads);  // checks every row first
    // Each group's batch into a copy, so that an overflow anywhere changes nothing.
    std::vector<Sketch> updated;
    std::vector<std::int64_t> touched;
    for (std::int64_t g = 0; g < groups; ++g)
        if (grouped.offset[static_cast<std::size_t>(g + 1)] > grouped.offset[static_cast<std::size_t>(g)]) touched.push_back(g);
    for (std::int64_t g : touched)
        updated.push_back(g < this->groups() ? sketches_[static_cast<std::size_t>(g)] : Sketch(metric_, resolution_));
    for_each_group(static_cast<std::int64_t>(touched.size()), threads, [&](std::int64_t k, GroupBuffer& buffer) {
        updated[static_cast<std::size_t>(k)].update(grouped.rows_of(touched[static_cast<std::size_t>(k)], buffer), 1);
    });
    grow(groups);  // only now: a failed update leaves the set as it was, its size too
    for (std::size_t k = 0; k < touched.size(); ++k) sketches_[static_cast<std::size_t>(touched[k])] = updated[k];
}

void GroupedSketch::merge(const GroupedSketch& other, const std::vector<std::int64_t>& mapping) {
    if (other.metric_ != metric_ || other.resolution_ != resolution_)
        throw InputError(merge_mismatch("grouped sketches", metric_, resolution_, other.metric_, other.resolution_), "other");
    if (static_cast<std::int64_t>(mapping.size()) != other.groups()) throw std::logic_error("a mapping for every group");
    std::int64_t groups = this->groups();
    for (std::int64_t g : mapping) groups = std::max(groups, g + 1);
    std::vector<Sketch> merged;
    for (std::int64_t g : mapping) {
        merged.push_back(g < this->groups() ? sketches_[static_cast<std::size_t>(g)] : Sketch(metric_, resolution_));
        merged.back().merge(other.sketches_[merged.size() - 1]);
    }
    grow(groups);
    for (std::size_t k = 0; k < mapping.size(); ++k) sketches_[static_cast<std::size_t>(mapping[k])] = merged[k];
}

GroupAnswers GroupedSketch::answer(const std::vector<std::int64_t>& order, const GroupOptions& options,
                                   std::int64_t threads) const {
    for (std::int64_t code : order)
        if (code < 0 || code >= groups()) throw std::logic_error("a group code out of range");
    const auto answered = static_cast<std::int64_t>(order.size());
    GroupAnswers out = empty_answers(answered);
    for_each_group(answered, threads, [&](std::int64_t g, GroupBuffer&) {
        const Sketch& sketch = sketches_[static_cast<std::size_t>(order[static_cast<std::size_t>(g)])];
        out.rows[static_cast<std::size_t>(g)] = static_cast<std::int64_t>(sketch.rows());
        if (sketch.rows() == 0) return;
        try {
            Analysis analysis = sketch.analysis();
            out.sigma[static_cast<std::size_t>(g)] = analysis.smece(1).sigma;
            answer_one(analysis, g, options, out);
        } catch (const InputError& e) {
            if (e.argument != "weights") throw;
            out.total_weight[static_cast<std::size_t>(g)] = 0.0;
        }
    });
    return out;
}

}  // namespace smoothece
