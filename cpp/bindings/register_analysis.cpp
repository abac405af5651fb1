#include "pybind11.hpp"

#include "answers/analysis.hpp"
#include "answers/comparison.hpp"

namespace smoothece::bind {

namespace {

py::dict curves_to_dict(DiagramCurves&& c) {
    py::dict d;
    d["sigma"] = c.sigma;
    d["smece_sigma"] = c.smece_sigma;
    d["smece_tilde"] = c.smece_tilde;
    d["total_weight"] = c.total_weight;
    d["rows"] = c.rows;
    d["mesh"] = to_numpy(std::move(c.mesh));
    d["density"] = to_numpy(std::move(c.density));
    d["density_positive"] = to_numpy(std::move(c.density_positive));
    d["density_negative"] = to_numpy(std::move(c.density_negative));
    d["mu"] = to_numpy(std::move(c.mu));
    return d;
}

ResampleKind as_kind(const std::string& kind) {
    if (kind == "bootstrap") return ResampleKind::Bootstrap;
    if (kind == "consistency") return ResampleKind::Consistency;
    throw py::value_error("kind must be 'bootstrap' or 'consistency', got '" + kind + "'");
}

}  // namespace

void register_analysis(py::module_& m) {
    // Analysis methods release the GIL; an Analysis is used by one Python call at a time.
    py::class_<Analysis>(m, "Analysis")
        .def("smece",
             [](Analysis& a, std::int64_t threads) {
                 const SigmaStar s = without_gil([&] { return a.smece(threads); });
                 return py::make_tuple(s.sigma, s.resolved, s.lower, s.upper);
             })
        .def("smece_sigma",
             [](Analysis& a, double sigma, std::int64_t threads) {
                 const SmeceValue v = without_gil([&] { return a.smece_sigma(sigma, threads); });
                 return py::make_tuple(v.value, v.resolved);
             })
        .def("curves",
             [](Analysis& a, double sigma, std::int64_t mesh_intervals, std::int64_t threads) {
                 return curves_to_dict(without_gil([&] { return a.curves(sigma, mesh_intervals, threads); }));
             })
        .def("replicates",
             // (σ* of each replicate, smECE at band_sigma of each, the band's lower and upper
             // curves (None without curves), replicates unresolved)
             [](Analysis& a, const std::string& kind, std::int64_t count, std::uint64_t seed, double band_sigma,
                std::int64_t mesh_intervals, const std::string& weights, bool at_band, std::int64_t threads,
                double band_level) {
                 const ResampleKind k = as_kind(kind);
                 const WeightKind w = as_weight_kind(weights);
                 Replicates reps = without_gil([&] {
                     return a.replicates(k, count, seed, band_sigma, mesh_intervals, w, at_band, threads, band_level);
                 });
                 const bool band = !reps.band_lower.empty();
                 return py::make_tuple(to_numpy(std::move(reps.sigma_star)), to_numpy(std::move(reps.smece_at_band)),
                                       band ? py::object(to_numpy(std::move(reps.band_lower))) : py::none(),
                                       band ? py::object(to_numpy(std::move(reps.band_upper))) : py::none(),
                                       reps.unresolved);
             })
        .def("sample",
             [](Analysis& a, std::int64_t size, std::uint64_t seed) {
                 std::vector<double> f, y;
                 without_gil([&] { a.sample(size, seed, f, y); });
                 return py::make_tuple(to_numpy(std::move(f)), to_numpy(std::move(y)));
             })
        .def_property_readonly("rows", [](const Analysis& a) { return a.summary().rows; })
        .def_property_readonly("total_weight", [](const Analysis& a) { return a.summary().total_weight(); })
        .def_property_readonly("min_sigma",
                               [](const Analysis& a) { return a.summary().min_sigma() * a.summary().mapping.span; });

    m.def(
        "pointwise_band",
        [](const py::array_t<double, py::array::c_style | py::array::forcecast>& values, double level,
           std::int64_t threads) {
            if (values.ndim() != 2 || values.shape(1) < 1)
                throw py::value_error("values must be 2-D (points × curves) with at least one curve");
            const std::vector<double> v(values.data(), values.data() + values.size());
            std::vector<double> lower, upper;
            without_gil([&] { pointwise_band(v, values.shape(1), level, threads, lower, upper); });
            return py::make_tuple(to_numpy(std::move(lower)), to_numpy(std::move(upper)));
        },
        "The equal-tailed pointwise band of curves at each point (row): its (1 - level)/2 and (1 + level)/2 "
        "quantiles, NaN left out.",
        py::arg("values"), py::arg("level"), py::arg("threads") = 0);

    m.def(
        "paired_bootstrap",
        [](const std::vector<py::array>& fs, const py::array& y, const std::optional<py::array>& w, double clip_lo,
           double clip_hi, const std::string& metric, const std::vector<double>& sigma_star, std::int64_t count,
           std::uint64_t seed, const std::string& weights, std::int64_t threads) {
            std::vector<Inputs> models;
            for (const py::array& f : fs) models.push_back(as_inputs(f, y, w, clip_lo, clip_hi));
            const Metric mt = as_metric(metric);
            const WeightKind kind = as_weight_kind(weights);
            PairedReplicates reps = without_gil(
                [&] { return paired_bootstrap_of_rows(models, mt, sigma_star, count, seed, kind, threads); });
            py::array_t<double> stars = to_numpy(std::move(reps.sigma_star));
            return py::make_tuple(stars.reshape({count, reps.models}), reps.unresolved, reps.units, reps.widest_unit);
        },
        "Paired bootstrap replicates of several models' SmoothECE on the same (checked) rows: (replicates × "
        "models, how many replicate values lie below a grid, units, the widest unit cell over its model's sigma*).",
        py::arg("fs"), py::arg("y"), py::arg("weights"), py::arg("clip_lo"), py::arg("clip_hi"), py::arg("metric"),
        py::arg("sigma_star"), py::arg("count"), py::arg("seed"), py::arg("weight_kind"), py::arg("threads"));

    m.def(
        "summarise",
        [](const py::array& f, const py::array& y, const std::optional<py::array>& w, double clip_lo, double clip_hi,
           const std::string& metric, bool full, std::int64_t threads, double sigma) {
            const Inputs in = as_inputs(f, y, w, clip_lo, clip_hi);
            const Metric mt = as_metric(metric);
            return without_gil(
                [&] { return Analysis::of_rows(in, mt, full ? Content::Full : Content::Residual, threads, sigma); });
        },
        // The analysis reads the arrays again for a second look: they live as long as it does.
        py::keep_alive<0, 1>(), py::keep_alive<0, 2>(), py::keep_alive<0, 3>(), py::arg("f"), py::arg("y"),
        py::arg("weights"), py::arg("clip_lo"), py::arg("clip_hi"), py::arg("metric"), py::arg("full"),
        py::arg("threads"), py::arg("sigma") = 0.0);
}

}  // namespace smoothece::bind
