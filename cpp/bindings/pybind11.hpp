// Included first by every binding file: one place for pybind11 headers and
// the conversion of numpy arrays into the core's strided columns.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "common.hpp"

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

inline Inputs as_inputs(const py::array& f, const py::array& y, const std::optional<py::array>& w,
                        double clip_lo, double clip_hi) {
    Inputs in;
    in.f = as_column(f, "f");
    in.y = as_column(y, "y");
    if (w) in.w = as_column(*w, "weights");
    in.clip_lo = clip_lo;
    in.clip_hi = clip_hi;
    return in;
}

}  // namespace smoothece::bind
