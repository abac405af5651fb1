#include "pybind11.hpp"

#include "diagram.hpp"

namespace smoothece::bind {
namespace {

py::array_t<double> to_numpy(std::vector<double>&& v) {
    auto* heap = new std::vector<double>(std::move(v));
    py::capsule owner(heap, [](void* p) { delete static_cast<std::vector<double>*>(p); });
    return py::array_t<double>({static_cast<py::ssize_t>(heap->size())}, {sizeof(double)}, heap->data(), owner);
}

py::dict curves_to_dict(DiagramCurves&& c) {
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

}  // namespace

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
            ResampleKind k;
            if (kind == "bootstrap") k = ResampleKind::Bootstrap;
            else if (kind == "consistency") k = ResampleKind::Consistency;
            else throw py::value_error("kind must be 'bootstrap' or 'consistency', got '" + kind + "'");
            Replicates reps;
            {
                py::gil_scoped_release release;
                if (cells <= 0) cells = resample_cells_for_sigma(band_sigma);
                reps = resample(cell_histogram(in, cells, threads), k, replicates, seed, band_sigma, mesh_intervals,
                                threads);
            }
            const auto points = static_cast<py::ssize_t>(reps.mesh_points);
            py::array_t<double> mu = to_numpy(std::move(reps.mu));
            return py::make_tuple(to_numpy(std::move(reps.sigma_star)), to_numpy(std::move(reps.smece_at_band)),
                                  mu.reshape({static_cast<py::ssize_t>(replicates), points}));
        },
        py::arg("f"), py::arg("y"), py::arg("weights"), py::arg("clip_lo"), py::arg("clip_hi"), py::arg("threads"),
        py::arg("kind"), py::arg("replicates"), py::arg("seed"), py::arg("band_sigma"), py::arg("mesh_intervals"),
        py::arg("cells") = 0);
}

}  // namespace smoothece::bind
