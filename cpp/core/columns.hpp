// The rows a caller hands over: strided, typed, read-only views of caller
// memory. Pure C++17; knows nothing of Python.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

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

// Tag for "no weights column" in with_input_types.
struct NoWeights {};

// Calls fn(F{}, Y{}, W{}) with the C++ types of the prediction (float or
// double), label (any DType) and weight (float, double or NoWeights)
// columns: one template instantiated per combination, not a copy per dtype.
template <class Fn>
decltype(auto) with_input_types(const Inputs& in, Fn&& fn) {
    auto with_w = [&](auto w_tag) -> decltype(auto) {
        auto with_f = [&](auto f_tag) -> decltype(auto) {
            return dispatch_dtype(in.y.dtype, [&](auto y_tag) -> decltype(auto) { return fn(f_tag, y_tag, w_tag); });
        };
        if (in.f.dtype == DType::Float32) return with_f(float{});
        if (in.f.dtype == DType::Float64) return with_f(double{});
        throw std::invalid_argument(std::string(in.f.name) + ": predictions must be float32 or float64 in the core");
    };
    if (!in.has_weights()) return with_w(NoWeights{});
    if (in.w.dtype == DType::Float32) return with_w(float{});
    if (in.w.dtype == DType::Float64) return with_w(double{});
    throw std::invalid_argument(std::string(in.w.name) + ": weights must be float32 or float64 in the core");
}

}  // namespace smoothece
