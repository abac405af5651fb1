// Included first by every binding file: one place for pybind11 headers and
// the conversion of numpy arrays into the core's strided columns.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "common.hpp"
#include "diagram.hpp"

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

// A std::vector handed to numpy without a copy (the capsule owns it).
inline py::array_t<double> to_numpy(std::vector<double>&& v) {
    auto* heap = new std::vector<double>(std::move(v));
    py::capsule owner(heap, [](void* p) { delete static_cast<std::vector<double>*>(p); });
    return py::array_t<double>({static_cast<py::ssize_t>(heap->size())}, {sizeof(double)}, heap->data(), owner);
}

inline py::dict curves_to_dict(DiagramCurves&& c) {
    py::dict d;
    d["sigma"] = c.sigma;
    d["smece_sigma"] = c.smece_sigma;
    d["smece_tilde"] = c.smece_tilde;
    d["total_weight"] = c.total_weight;
    d["positive_weight"] = c.positive_weight;
    d["count"] = c.count;
    d["mesh"] = to_numpy(std::move(c.mesh));
    d["density"] = to_numpy(std::move(c.density));
    d["density_positive"] = to_numpy(std::move(c.density_positive));
    d["density_negative"] = to_numpy(std::move(c.density_negative));
    d["mu"] = to_numpy(std::move(c.mu));
    return d;
}

// (σ* per replicate, smECE at the band σ per replicate, μ̂ replicates × mesh).
inline py::tuple replicates_to_tuple(Replicates&& reps) {
    const auto rows = static_cast<py::ssize_t>(reps.sigma_star.size());
    const auto points = static_cast<py::ssize_t>(reps.mesh_points);
    py::array_t<double> mu = to_numpy(std::move(reps.mu));
    return py::make_tuple(to_numpy(std::move(reps.sigma_star)), to_numpy(std::move(reps.smece_at_band)),
                          mu.reshape({rows, points}));
}

inline ResampleKind resample_kind(const std::string& kind) {
    if (kind == "bootstrap") return ResampleKind::Bootstrap;
    if (kind == "consistency") return ResampleKind::Consistency;
    throw py::value_error("kind must be 'bootstrap' or 'consistency', got '" + kind + "'");
}

}  // namespace smoothece::bind
