// Shared vocabulary of the core: strided input columns, thread fan-out.
// Pure C++17; knows nothing of Python.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace smoothece {

enum class DType { Bool, Int8, UInt8, Int32, Int64, Float32, Float64 };

// A read-only 1-D view of caller memory: pointer, length, stride in bytes.
struct Column {
    const char* data = nullptr;
    std::int64_t size = 0;
    std::int64_t stride = 0;  // bytes; may be negative or zero-free strides
    DType dtype = DType::Float64;
    const char* name = "";

    template <class T>
    T at(std::int64_t i) const {
        return *reinterpret_cast<const T*>(data + i * stride);
    }
};

// Predictions are clamped into [ε, 1 − ε] before the logit, so rows at
// exactly 0 or 1 sit at logit ∓27.63.
constexpr double kLogitEpsilon = 1e-12;

// Where the logit metric's grid lies: positions (logit(f) − lo)·inv_span.
struct LogitMapping {
    bool enabled = false;
    double lo = 0.0;
    double inv_span = 1.0;
};

// The arguments of one scoring call: predictions, labels, optional weights,
// and the range accepted for predictions ([0, 1] unless the caller opted in
// to clipping, in which case values in [clip_lo, clip_hi] are clamped).
struct Inputs {
    Column f;
    Column y;
    Column w;  // w.data == nullptr means unit weights
    bool has_weights() const { return w.data != nullptr; }
    double clip_lo = 0.0;
    double clip_hi = 1.0;
    LogitMapping logit;  // disabled: the default metric, positions are f
};

// Number of worker threads for `requested` (0 = all cores) and `work` items,
// so that small inputs do not pay for thread start-up.
inline int effective_threads(int requested, std::int64_t work, std::int64_t min_work_per_thread) {
    int hw = static_cast<int>(std::thread::hardware_concurrency());
    int t = requested > 0 ? requested : (hw > 0 ? hw : 1);
    std::int64_t by_work = std::max<std::int64_t>(1, work / std::max<std::int64_t>(1, min_work_per_thread));
    return static_cast<int>(std::min<std::int64_t>(t, by_work));
}

// Runs body(t) for t in [0, nthreads) on nthreads threads (t = 0 on the
// caller). Threads are started per call, not pooled, so the process stays
// fork-safe. The first exception thrown by any worker is rethrown here.
inline void parallel_for(int nthreads, const std::function<void(int)>& body) {
    if (nthreads <= 1) {
        body(0);
        return;
    }
    std::exception_ptr first_error;
    std::mutex error_mutex;
    auto guarded = [&](int t) {
        try {
            body(t);
        } catch (...) {
            std::lock_guard<std::mutex> lock(error_mutex);
            if (!first_error) first_error = std::current_exception();
        }
    };
    std::vector<std::thread> workers;
    workers.reserve(static_cast<std::size_t>(nthreads - 1));
    for (int t = 1; t < nthreads; ++t) workers.emplace_back(guarded, t);
    guarded(0);
    for (auto& w : workers) w.join();
    if (first_error) std::rethrow_exception(first_error);
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

// Tag for "no weights column" in with_input_types.
struct NoWeights {};

// Calls fn(F{}, Y{}, W{}) with the C++ types of the prediction (float or
// double), label (any DType) and weight (float, double or NoWeights) columns:
// one template instantiated per combination, not a copy per dtype.
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
