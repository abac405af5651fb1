// The rows a caller hands over: strided, typed, read-only views of caller
// memory. Pure C++17; knows nothing of Python.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/pool.hpp"

namespace smoothece {

enum class DType { Bool, Int8, UInt8, Int32, Int64, Float32, Float64 };

// A read-only 1-D view of caller memory: pointer, length, stride in bytes.
struct Column {
    const char* data = nullptr;
    std::int64_t size = 0;
    std::int64_t stride = 0;  // bytes; may be negative or zero
    DType dtype = DType::Float64;
    const char* name = "";

    template <class T>
    T at(std::int64_t i) const {
        return *reinterpret_cast<const T*>(data + i * stride);
    }
};

// Predictions f, labels y, optional weights w, and the range of predictions
// accepted: [0, 1] unless the caller opted in to clamping [clip_lo, clip_hi].
struct Inputs {
    Column f;
    Column y;
    Column w;  // w.data == nullptr means unit weights
    double clip_lo = 0.0;
    double clip_hi = 1.0;

    bool has_weights() const { return w.data != nullptr; }
    std::int64_t size() const { return f.size; }
};

// Nonzero when a row breaks the input contract: its prediction outside
// [lo, hi] (NaN fails every comparison) or its label other than 0 and 1.
// Bitwise, not short-circuit (no branch on the values), and 64 bits wide
// like the comparisons themselves: loops of it vectorize (with AVX2; GCC
// does not for SSE2).
inline std::uint64_t bad_row(double f, double y, double lo, double hi) {
    return static_cast<std::uint64_t>(!(f >= lo)) | static_cast<std::uint64_t>(!(f <= hi)) |
           static_cast<std::uint64_t>(!((y == 0.0) | (y == 1.0)));
}

// Nonzero for a weight that is negative, infinite or NaN.
inline std::uint64_t bad_weight(double w) {
    return static_cast<std::uint64_t>(!(w >= 0.0)) |
           static_cast<std::uint64_t>(!(w <= std::numeric_limits<double>::max()));
}

// Calls fn(T{}) with T the C++ type of `dtype`.
template <class Fn>
decltype(auto) dispatch_dtype(DType dtype, Fn&& fn) {
    switch (dtype) {
        case DType::Bool: return fn(std::uint8_t{});
        case DType::Int8: return fn(std::int8_t{});
        case DType::UInt8: return fn(std::uint8_t{});
        case DType::Int32: return fn(std::int32_t{});
        case DType::Int64: return fn(std::int64_t{});
        case DType::Float32: return fn(float{});
        case DType::Float64: return fn(double{});
    }
    throw std::logic_error("unknown dtype");
}

// Fibonacci hashing: the top `bits` bits of key·2^64/φ, which depend on every
// bit of the key (the low bits of the product do not depend on the high bits
// of the key: doubles such as 0.5 and 1.0, whose low bits are zero, would
// share a slot).
inline std::size_t fibonacci_slot(std::uint64_t key, int bits) {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ULL) >> (64 - bits));
}

// Rows [begin, begin + count) of a column as doubles (exact for every dtype here).
void read_doubles(const Column& c, std::int64_t begin, std::int64_t count, double* out);

// Calls fn(begin, count, f, y, w) for consecutive blocks of rows [first,
// last) read as doubles (w is null for unit weights), checking for
// interrupts between blocks: for the passes that are not the hot binning loop.
// An fn that returns bool stops the walk by returning false; the number of
// rows handed to fn is returned.
template <class Fn>
std::int64_t for_each_block(const Inputs& in, std::int64_t first, std::int64_t last, Fn&& fn);
template <class Fn>
std::int64_t for_each_block(const Inputs& in, Fn&& fn) {
    return for_each_block(in, 0, in.size(), fn);
}

template <class Fn>
std::int64_t for_each_block(const Inputs& in, std::int64_t first, std::int64_t last, Fn&& fn) {
    // Blocks no longer than the range: small batches (one group's rows, say)
    // do not pay for zeroing large buffers.
    const std::int64_t block = std::max<std::int64_t>(1, std::min<std::int64_t>(4096, last - first));
    const auto size = static_cast<std::size_t>(block);
    std::vector<double> f(size), y(size), w(in.has_weights() ? size : 0);
    // A contiguous float64 column is handed over in place, not copied.
    auto doubles = [](const Column& c, std::int64_t b, std::int64_t count, std::vector<double>& buffer) -> const double* {
        if (c.dtype == DType::Float64 && c.stride == static_cast<std::int64_t>(sizeof(double)))
            return reinterpret_cast<const double*>(c.data) + b;
        read_doubles(c, b, count, buffer.data());
        return buffer.data();
    };
    for (std::int64_t b = first; b < last; b += block) {
        interruption_point();
        const std::int64_t count = std::min(block, last - b);
        const double* fb = doubles(in.f, b, count, f);
        const double* yb = doubles(in.y, b, count, y);
        const double* wb = in.has_weights() ? doubles(in.w, b, count, w) : nullptr;
        if constexpr (std::is_same_v<decltype(fn(b, count, fb, yb, wb)), bool>) {
            if (!fn(b, count, fb, yb, wb)) return b + count - first;
        } else {
            fn(b, count, fb, yb, wb);
        }
    }
    return last - first;
}

}  // namespace smoothece
