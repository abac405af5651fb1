#include "pybind11.hpp"

#include "sketch.hpp"

namespace smoothece::bind {

void register_sketch(py::module_& m) {
    // Every method that does numerical work releases the GIL: Sketch guards
    // its own state with a mutex and the row arrays are kept alive by the caller.
    py::class_<Sketch>(m, "Sketch")
        .def(py::init<std::int64_t>(), py::arg("intervals") = kDefaultFineIntervals)
        .def("update",
             [](Sketch& s, const py::array& f, const py::array& y, const std::optional<py::array>& w, double clip_lo,
                double clip_hi, int threads) {
                 const Inputs in = as_inputs(f, y, w, clip_lo, clip_hi);
                 py::gil_scoped_release release;
                 s.update(in, threads);
             })
        .def("merge",
             [](Sketch& s, const Sketch& other) {
                 py::gil_scoped_release release;
                 s.merge(other);
             })
        .def("copy", [](const Sketch& s) { return Sketch(s); })
        .def_property_readonly("intervals", &Sketch::intervals)
        .def_property_readonly("cells", &Sketch::cells)
        .def_property_readonly("count", &Sketch::count)
        .def_property_readonly("total_weight", &Sketch::total_weight)
        .def_property_readonly("memory_bytes", &Sketch::memory_bytes)
        .def_property_readonly("min_sigma", &Sketch::min_sigma)
        .def("smece",
             [](const Sketch& s) {
                 FixpointResult r;
                 {
                     py::gil_scoped_release release;
                     r = s.smece();
                 }
                 return py::make_tuple(r.sigma, r.resolved);
             })
        .def("smece_sigma",
             [](const Sketch& s, double sigma) {
                 py::gil_scoped_release release;
                 return s.smece_sigma(sigma);
             })
        .def("diagram",
             [](const Sketch& s, double sigma, std::int64_t mesh_intervals) {
                 DiagramCurves c;
                 {
                     py::gil_scoped_release release;
                     c = s.diagram(sigma, mesh_intervals);
                 }
                 return curves_to_dict(std::move(c));
             })
        .def("resample",
             [](const Sketch& s, const std::string& kind, std::int64_t replicates, std::uint64_t seed,
                double band_sigma, std::int64_t mesh_intervals, int threads) {
                 const ResampleKind k = resample_kind(kind);
                 Replicates reps;
                 {
                     py::gil_scoped_release release;
                     reps = s.resample(k, replicates, seed, band_sigma, mesh_intervals, threads);
                 }
                 return replicates_to_tuple(std::move(reps));
             })
        .def("sample",
             [](const Sketch& s, std::int64_t size, std::uint64_t seed) {
                 std::vector<double> f, y;
                 s.sample(size, seed, f, y);
                 return py::make_tuple(to_numpy(std::move(f)), to_numpy(std::move(y)));
             })
        .def("to_bytes", [](const Sketch& s) { return py::bytes(s.to_bytes()); })
        .def_static("from_bytes", [](const py::bytes& b) {
            std::string raw = b;
            py::gil_scoped_release release;
            return Sketch::from_bytes(raw);
        });
}

}  // namespace smoothece::bind
