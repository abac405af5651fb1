#include "pybind11.hpp"

#include "answers/analysis.hpp"
#include "answers/comparison.hpp"
#include "answers/uncertainty.hpp"

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

UncertaintyRequest as_request(std::int64_t count, std::uint64_t seed, double level, const std::string& weights,
                              std::int64_t threads, std::int64_t mesh_intervals) {
    UncertaintyRequest r;
    r.count = count;
    r.seed = seed;
    r.level = level;
    r.weights = as_weight_kind(weights);
    r.threads = threads;
    r.mesh_intervals = mesh_intervals;
    return r;
}

py::object band_or_none(std::vector<double>&& band) {
    return band.empty() ? py::object(py::none()) : py::object(to_numpy(std::move(band)));
}

const char* standing_name(Standing s) { return s == Standing::Bound ? "bound" : "resolved"; }

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
        .def("bootstrap",
             // The bootstrap answer (answers/uncertainty.hpp) as a dict; sigma ≤ 0: at σ*.
             [](Analysis& a, double sigma, std::int64_t count, std::uint64_t seed, double level,
                const std::string& weights, std::int64_t threads, std::int64_t mesh_intervals) {
                 const UncertaintyRequest r = as_request(count, seed, level, weights, threads, mesh_intervals);
                 BootstrapAnswer b = without_gil([&] { return bootstrap_answer(a, sigma, r); });
                 py::dict d;
                 d["standing"] = standing_name(b.standing);
                 d["value"] = b.value;
                 d["sigma"] = b.sigma;
                 d["low"] = b.low;
                 d["high"] = b.high;
                 d["replicates"] = to_numpy(std::move(b.replicates));
                 d["below_grid"] = b.below_grid;
                 d["band_lower"] = band_or_none(std::move(b.band_lower));
                 d["band_upper"] = band_or_none(std::move(b.band_upper));
                 return d;
             })
        .def("test",
             // The calibration test (answers/uncertainty.hpp) as a dict; band_sigma ≤ 0: at the statistic.
             [](Analysis& a, std::int64_t count, std::uint64_t seed, double level, const std::string& weights,
                std::int64_t threads, std::int64_t mesh_intervals, double band_sigma) {
                 const UncertaintyRequest r = as_request(count, seed, level, weights, threads, mesh_intervals);
                 TestAnswer t = without_gil([&] { return test_answer(a, r, band_sigma); });
                 py::dict d;
                 d["standing"] = standing_name(t.standing);
                 d["statistic"] = t.statistic;
                 d["p_value"] = t.p_value;
                 d["null"] = to_numpy(std::move(t.null));
                 d["below_grid"] = t.below_grid;
                 d["band_lower"] = band_or_none(std::move(t.band_lower));
                 d["band_upper"] = band_or_none(std::move(t.band_upper));
                 return d;
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
        "bootstrap_interval",
        [](double value, const py::array_t<double, py::array::c_style | py::array::forcecast>& replicates, double level,
           bool nonnegative) {
            if (replicates.ndim() != 1) throw py::value_error("replicates must be 1-D");
            std::vector<double> reps(replicates.data(), replicates.data() + replicates.size());
            return bootstrap_interval(value, std::move(reps), level, nonnegative);
        },
        "The level bootstrap interval (low, high) of a statistic estimated as value (resampling/resample.hpp).",
        py::arg("value"), py::arg("replicates"), py::arg("level"), py::arg("nonnegative"));

    m.def(
        "finest_fixed_sigma", [](const std::string& metric) { return Analysis::finest_fixed_sigma(as_metric(metric)); },
        "The smallest fixed sigma whose bootstrap replicates arrays resolve (from their cells).", py::arg("metric"));

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
