#include "pybind11.hpp"

#include "diagram.hpp"

namespace smoothece::bind {

void register_diagram(py::module_& m) {
    m.def(
        "diagram",
        [](const py::array& f, const py::array& y, const std::optional<py::array>& w, double clip_lo, double clip_hi,
           int threads, double sigma, std::int64_t mesh_intervals) {
            const Inputs in = as_inputs(f, y, w, clip_lo, clip_hi);
            DiagramCurves curves;
            {
                py::gil_scoped_release release;  // pure C++ on buffers the caller keeps alive
                curves = diagram_of_rows(in, sigma, mesh_intervals, threads);
            }
            return curves_to_dict(std::move(curves));
        },
        py::arg("f"), py::arg("y"), py::arg("weights"), py::arg("clip_lo"), py::arg("clip_hi"), py::arg("threads"),
        py::arg("sigma"), py::arg("mesh_intervals"));

    m.def(
        "resample",
        [](const py::array& f, const py::array& y, const std::optional<py::array>& w, double clip_lo, double clip_hi,
           int threads, const std::string& kind, std::int64_t replicates, std::uint64_t seed, double band_sigma,
           std::int64_t mesh_intervals, std::int64_t cells) {
            const Inputs in = as_inputs(f, y, w, clip_lo, clip_hi);
            const ResampleKind k = resample_kind(kind);
            Replicates reps;
            {
                py::gil_scoped_release release;
                if (cells <= 0) cells = resample_cells_for_sigma(band_sigma);
                reps = resample(groups_of(count_cells(in, cells, threads)), k, replicates, seed, band_sigma, mesh_intervals,
                                threads);
            }
            return replicates_to_tuple(std::move(reps));
        },
        py::arg("f"), py::arg("y"), py::arg("weights"), py::arg("clip_lo"), py::arg("clip_hi"), py::arg("threads"),
        py::arg("kind"), py::arg("replicates"), py::arg("seed"), py::arg("band_sigma"), py::arg("mesh_intervals"),
        py::arg("cells") = 0);
}

}  // namespace smoothece::bind
