#include "products/group_codes.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <memory>
#include <string_view>
#include <unordered_map>

#include "pass/columns.hpp"
#include "runtime/errors.hpp"
#include "runtime/pool.hpp"

namespace smoothece {
namespace {

constexpr std::int64_t kChunk = std::int64_t{1} << 16;  // rows between interruption checks
constexpr std::uint64_t kDenseKeyRange = std::uint64_t{1} << 24;  // a table of at most 128 MB (8 bytes a value)
constexpr std::uint64_t kByteKeys = std::uint64_t{1} << 16;  // keys seen marked a byte each: 64 KB a thread

// The keys are the caller's memory, read with the GIL released: another
// thread may write to them during the call. A pass that finds a key outside
// the range an earlier pass saw says so (rather than index past a table).
InputError keys_changed() {
    return InputError("groups changed while they were read (another thread wrote to the array during the call): "
                      "pass keys that nothing changes until the call returns, e.g. a copy",
                      "groups");
}

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
    const std::uint64_t limit = std::min<std::uint64_t>(kDenseKeyRange, 4 * static_cast<std::uint64_t>(size) + 65536);
    // The range, and, where the keys could be their own codes (contiguous
    // 8-byte words), which words below `limit` occur, per share: enough to
    // see that without a second pass. A word below kByteKeys marks a byte (a
    // plain store); only larger words set a bit. And the range grows on a
    // branch taken a handful of times. (Bits for every word, read-modify-
    // written on a few hot words, and min/max on every row would chain the
    // rows into one dependency: 2.5x this pass's time at 10^4 groups.)
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
        const auto [begin, end] = share_of(size, t, shares);
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
    std::atomic<bool> changed{false};
    parallel_for(shares, [&](int t) {
        const Share share = share_of(size, t, shares);
        const std::uint64_t top = hi - lo;
        for (std::int64_t i = share.begin; i < share.end; ++i) {
            if ((i & (kChunk - 1)) == 0) interruption_point();
            const std::uint64_t word = load(data + i * stride) - lo;
            if (word > top) {  // not what the first pass read there
                changed.store(true, std::memory_order_relaxed);
                return;
            }
            const auto offset = static_cast<std::int64_t>(word);
            out.codes[static_cast<std::size_t>(i)] = offset;
            std::atomic<std::int64_t>& first = table[static_cast<std::size_t>(offset)];
            std::int64_t seen = first.load(std::memory_order_relaxed);
            while (i < seen && !first.compare_exchange_weak(seen, i, std::memory_order_relaxed)) {
            }
        }
    });
    if (changed) throw keys_changed();
    for (std::size_t s = 0; s < range; ++s) {  // the table now maps an offset to its code
        const std::int64_t first = table[s].load(std::memory_order_relaxed);
        if (first == kNone) continue;
        table[s].store(static_cast<std::int64_t>(out.first.size()), std::memory_order_relaxed);
        out.first.push_back(first);
    }
    if (out.first.size() < range) {  // some offsets unused: codes are not the offsets
        parallel_for(shares, [&](int t) {
            const Share share = share_of(size, t, shares);
            for (std::int64_t i = share.begin; i < share.end; ++i) {
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

}  // namespace smoothece
