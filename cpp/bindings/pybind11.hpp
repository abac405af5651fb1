// Included first by every binding file: pybind11, the conversion of numpy
// arrays into the core's strided columns, and running core work without the
// GIL. The bindings do nothing else.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#if defined(__GLIBCXX__)
#include <cxxabi.h>
#endif
#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

#include <optional>
#include <string>
#include <type_traits>

#include "pass/columns.hpp"
#include "resampling/resample.hpp"
#include "runtime/pool.hpp"
#include "summary/metric.hpp"

namespace py = pybind11;

namespace smoothece::bind {

// A 1-D numpy array as a Column, without copying. Runs with the GIL held.
inline Column as_column(const py::array& a, const char* name) {
    if (a.ndim() != 1) throw py::value_error(std::string(name) + " must be 1-D");
    const py::dtype dt = a.dtype();
    const char kind = dt.kind();
    const auto size = dt.itemsize();
    Column c;
    if (kind == 'b') c.dtype = DType::Bool;
    else if (kind == 'i' && size == 1) c.dtype = DType::Int8;
    else if (kind == 'u' && size == 1) c.dtype = DType::UInt8;
    else if (kind == 'i' && size == 4) c.dtype = DType::Int32;
    else if (kind == 'i' && size == 8) c.dtype = DType::Int64;
    else if (kind == 'f' && size == 4) c.dtype = DType::Float32;
    else if (kind == 'f' && size == 8) c.dtype = DType::Float64;
    else throw py::type_error(std::string(name) + ": unsupported dtype " + std::string(py::str(dt)));
    c.data = static_cast<const char*>(a.data());
    c.size = a.shape(0);
    c.stride = a.strides(0);
    c.name = name;
    return c;
}

inline Inputs as_inputs(const py::array& f, const py::array& y, const std::optional<py::array>& w, double clip_lo,
                        double clip_hi) {
    Inputs in;
    in.f = as_column(f, "f");
    in.y = as_column(y, "y");
    if (w) in.w = as_column(*w, "weights");
    in.clip_lo = clip_lo;
    in.clip_hi = clip_hi;
    return in;
}

inline Metric as_metric(const std::string& name) {
    if (name == "l1") return Metric::L1;
    if (name == "logit") return Metric::Logit;
    throw py::value_error("metric must be 'l1' or 'logit', got '" + name + "'");
}

inline WeightKind as_weight_kind(const std::string& kind) {
    if (kind == "importance") return WeightKind::Importance;
    if (kind == "frequency") return WeightKind::Frequency;
    throw py::value_error("weights must be 'importance' or 'frequency', got '" + kind + "'");
}

// A std::vector handed to numpy without a copy (the capsule owns it).
template <class T, class A>
py::array_t<T> to_numpy(std::vector<T, A>&& v) {
    if (v.empty()) return py::array_t<T>(0);
    auto* heap = new std::vector<T, A>(std::move(v));
    py::capsule owner(heap, [](void* p) { delete static_cast<std::vector<T, A>*>(p); });
    return py::array_t<T>({static_cast<py::ssize_t>(heap->size())}, {sizeof(T)}, heap->data(), owner);
}

inline bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsFinalizing() != 0;
#else
    return _Py_IsFinalizing() != 0;
#endif
}

// Takes the GIL back after core work. While the interpreter shuts down,
// taking it would end this (daemon) thread with pthread_exit from inside
// C++ frames that cannot unwind, and abort the process; the thread parks
// instead and the process exits around it.
inline void take_gil(PyThreadState* state) {
    if (interpreter_finalizing()) {
        for (;;) {
#if defined(__unix__) || defined(__APPLE__)
            pause();
#endif
        }
    }
    PyEval_RestoreThread(state);
}

// Python's main thread (set when the module loads): the only thread on which
// Python runs signal handlers, so the only one a Ctrl-C can interrupt.
inline unsigned long& main_thread_ident() {
    static unsigned long ident = 0;
    return ident;
}

// The GIL-released state of one call, and its Ctrl-C check (run by the core
// on this thread, every ~50 ms of work): on the main thread the GIL is taken
// for a moment and Python's signal handlers run; KeyboardInterrupt cancels
// the call. Elsewhere there are no handlers to run, and not taking the GIL
// leaves a daemon thread no moment inside the core at which interpreter
// shutdown could end it (taking the GIL then exits the thread by unwinding
// frames that cannot unwind: the process aborts).
struct Released {
    PyThreadState* state = nullptr;
    bool main_thread = false;
};

inline bool signals_raised(void* context) {
    auto* released = static_cast<Released*>(context);
    if (interpreter_finalizing()) return true;
    if (!released->main_thread) return false;
    PyEval_RestoreThread(released->state);
    const bool raised = PyErr_CheckSignals() != 0;
    released->state = PyEval_SaveThread();
    return raised;
}

// Runs `work` (pure C++ on buffers the caller keeps alive, touching no Python
// object) with the GIL released, so other Python threads run meanwhile.
template <class Work>
auto without_gil(Work&& work) -> decltype(work()) {
    const bool main_thread = PyThread_get_thread_ident() == main_thread_ident();
    Released released{PyEval_SaveThread(), main_thread};
    try {
        InterruptScope scope(&signals_raised, &released);
        if constexpr (std::is_void_v<decltype(work())>) {
            work();
            take_gil(released.state);
        } else {
            auto result = work();
            take_gil(released.state);
            return result;
        }
#if defined(__GLIBCXX__)
    } catch (abi::__forced_unwind&) {
        throw;  // thread cancellation: must not be swallowed
#endif
    } catch (...) {
        take_gil(released.state);
        throw;
    }
}

}  // namespace smoothece::bind
