#include "pybind11.hpp"

#include "products/paired_sketch.hpp"
#include "products/sketch.hpp"

namespace smoothece::bind {

void register_sketch(py::module_& m) {
    // Numerical work releases the GIL: a Sketch guards its own state with a
    // mutex, and the row arrays are kept alive by the caller.
    py::class_<Sketch>(m, "Sketch")
        .def(py::init([](const std::string& metric, std::int64_t resolution) { return Sketch(as_metric(metric), resolution); }),
             py::arg("metric"), py::arg("resolution"))
        .def("update",
             [](Sketch& s, const py::array& f, const py::array& y, const std::optional<py::array>& w, double clip_lo,
                double clip_hi, std::int64_t threads) {
                 const Inputs in = as_inputs(f, y, w, clip_lo, clip_hi);
                 without_gil([&] { s.update(in, threads); });
             })
        .def("merge", [](Sketch& s, const Sketch& other) { without_gil([&] { s.merge(other); }); })
        .def("copy", [](const Sketch& s) { return Sketch(s); })
        .def("analysis", [](const Sketch& s) { return without_gil([&] { return s.analysis(); }); })
        .def_property_readonly("metric", [](const Sketch& s) { return s.metric() == Metric::Logit ? "logit" : "l1"; })
        .def_property_readonly("resolution", &Sketch::resolution)
        .def_property_readonly("rows", &Sketch::rows)
        .def_property_readonly("total_weight", &Sketch::total_weight)
        .def_property_readonly("exact", &Sketch::exact)
        .def_property_readonly("weights_look_like_counts", [](const Sketch& s) { return s.weight_traits().counts(); })
        .def_property_readonly("memory_bytes", &Sketch::memory_bytes)
        .def("to_bytes",
             [](const Sketch& s) {
                 std::string raw = without_gil([&] { return s.to_bytes(); });
                 return py::bytes(raw);
             })
        .def_static(
            "from_bytes",
            [](const py::bytes& b, const std::optional<std::uint64_t>& max_memory) {
                std::string raw = b;
                return without_gil([&] {
                    MemoryBudget budget(max_memory ? *max_memory : default_read_memory(raw.size()));
                    return Sketch::from_bytes(raw, budget);
                });
            },
            py::arg("data"), py::arg("max_memory") = py::none());

    m.def(
        "bytes_checksum", [](const py::bytes& b) { return checksum64(PyBytes_AS_STRING(b.ptr()), PyBytes_GET_SIZE(b.ptr())); },
        py::arg("data"), "XXH64 (seed 0) of the bytes: the checksum that ends every sketch's bytes.");
    m.def("default_read_memory", &default_read_memory, py::arg("size"),
          "The memory from_bytes allows by default for bytes of this size.");

    py::class_<PairedSketch>(m, "PairedSketch")
        .def(py::init([](const std::string& metric, std::int64_t resolution, std::int64_t models,
                         std::int64_t unit_cells) { return PairedSketch(as_metric(metric), resolution, models, unit_cells); }),
             py::arg("metric"), py::arg("resolution"), py::arg("models"), py::arg("unit_cells"))
        .def("update",
             [](PairedSketch& s, const std::vector<py::array>& fs, const py::array& y, const std::optional<py::array>& w,
                double clip_lo, double clip_hi, std::int64_t threads) {
                 std::vector<Inputs> models;
                 for (const py::array& f : fs) models.push_back(as_inputs(f, y, w, clip_lo, clip_hi));
                 without_gil([&] { s.update(models, threads); });
             })
        .def("merge", [](PairedSketch& s, const PairedSketch& other) { without_gil([&] { s.merge(other); }); })
        .def("copy", [](const PairedSketch& s) { return PairedSketch(s); })
        .def("model", [](const PairedSketch& s, std::int64_t m) { return Sketch(s.model(m)); })
        .def_property_readonly("models", &PairedSketch::models)
        .def_property_readonly("unit_cells", &PairedSketch::unit_cells)
        .def_property_readonly("units", &PairedSketch::units)
        .def_property_readonly("memory_bytes", &PairedSketch::memory_bytes)
        .def("to_bytes",
             [](const PairedSketch& s, const py::bytes& names) {
                 std::string raw = names;
                 std::string out = without_gil([&] { return s.to_bytes(raw); });
                 return py::bytes(out);
             })
        .def_static(
            "from_bytes",
            [](const py::bytes& b, const std::optional<std::uint64_t>& max_memory) {
                std::string raw = b, names;
                std::unique_ptr<PairedSketch> s = without_gil([&] {
                    MemoryBudget budget(max_memory ? *max_memory : default_read_memory(raw.size()));
                    return PairedSketch::from_bytes(raw, budget, names);
                });
                return py::make_tuple(py::cast(std::move(s)), py::bytes(names));
            },
            py::arg("data"), py::arg("max_memory") = py::none())
        .def("replicates",
             // (replicates × models, how many replicate values lie below a grid, units, widest unit / σ*)
             [](const PairedSketch& s, const std::vector<double>& sigma_star, std::int64_t count, std::uint64_t seed,
                const std::string& weights, std::int64_t threads) {
                 const WeightKind kind = as_weight_kind(weights);
                 PairedReplicates reps = without_gil([&] { return s.replicates(sigma_star, count, seed, kind, threads); });
                 py::array_t<double> stars = to_numpy(std::move(reps.sigma_star));
                 return py::make_tuple(stars.reshape({count, reps.models}), reps.unresolved, reps.units,
                                       reps.widest_unit);
             });
}

}  // namespace smoothece::bind
