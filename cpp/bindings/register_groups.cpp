#include "pybind11.hpp"

#include "products/group_codes.hpp"
#include "products/groups.hpp"

namespace smoothece::bind {

namespace {

py::dict answers_to_dict(GroupAnswers&& a) {
    py::dict d;
    d["rows"] = to_numpy(std::move(a.rows));
    d["total_weight"] = to_numpy(std::move(a.total_weight));
    d["sigma"] = to_numpy(std::move(a.sigma));
    d["low"] = to_numpy(std::move(a.low));
    d["high"] = to_numpy(std::move(a.high));
    d["p_value"] = to_numpy(std::move(a.p_value));
    d["bound"] = to_numpy(std::move(a.bound)).attr("astype")("bool");
    return d;
}

GroupOptions as_options(const std::string& metric, std::int64_t n_boot, std::int64_t n_sim, double level,
                        std::uint64_t seed, const std::string& weights) {
    GroupOptions o;
    o.metric = as_metric(metric);
    o.n_boot = n_boot;
    o.n_sim = n_sim;
    o.level = level;
    o.seed = seed;
    o.weights = as_weight_kind(weights);
    return o;
}

// Group codes: a 1-D contiguous int64 array (the Python layer makes it).
const std::int64_t* codes_of(const py::array_t<std::int64_t, py::array::c_style>& codes, std::int64_t n) {
    if (codes.ndim() != 1 || codes.shape(0) != n) throw py::value_error("group codes must have one entry per row");
    return codes.data();
}

}  // namespace

void register_groups(py::module_& m) {
    m.def(
        "factorize",
        [](const py::array& keys, std::int64_t threads) -> py::tuple {
            if (keys.ndim() != 1) throw py::value_error("keys must be 1-D");
            const char kind = keys.dtype().kind();
            // Floats compare as their bytes: no wider than 8 (long double's padding holds anything).
            if (std::string("biufMmUS").find(kind) == std::string::npos || (kind == 'f' && keys.itemsize() > 8))
                throw py::type_error("keys of dtype " + std::string(py::str(keys.dtype())) + " cannot be factorized");
            const auto* data = static_cast<const char*>(keys.data());
            const std::int64_t size = keys.shape(0), stride = keys.strides(0), itemsize = keys.itemsize();
            Factorized out = without_gil([&] { return factorize(data, size, stride, itemsize, kind == 'f', threads); });
            if (out.identity > 0) return py::make_tuple(py::none(), py::none(), out.identity);
            const auto groups = static_cast<std::int64_t>(out.first.size());
            return py::make_tuple(to_numpy(std::move(out.codes)), to_numpy(std::move(out.first)), groups);
        },
        py::arg("keys"), py::arg("threads") = 0, "(codes, first, K): codes of the distinct keys (ascending for integers in a narrow range, else in order of first appearance) and the row where each code's key first appears; (None, None, K) when the keys are the int64 words 0..K-1, each present (their own codes).");

    m.def(
        "smece_by_group",
        // The rows in parts (lists of arrays, one sequence): a reader's batches need no joining.
        [](const std::vector<py::array>& f, const std::vector<py::array>& y,
           const std::optional<std::vector<py::array>>& w, double clip_lo, double clip_hi,
           const std::vector<py::array_t<std::int64_t, py::array::c_style>>& codes, std::int64_t groups,
           const std::string& metric, std::int64_t n_boot, std::int64_t n_sim, double level, std::uint64_t seed,
           const std::string& weights, std::int64_t threads) {
            if (f.empty() || y.size() != f.size() || codes.size() != f.size() || (w && w->size() != f.size()))
                throw py::value_error("f, y, weights and codes must come in the same number of parts");
            std::vector<Inputs> parts;
            std::vector<const std::int64_t*> part_codes;
            for (std::size_t p = 0; p < f.size(); ++p) {
                parts.push_back(as_inputs(f[p], y[p], w ? std::optional<py::array>((*w)[p]) : std::nullopt, clip_lo, clip_hi));
                part_codes.push_back(codes_of(codes[p], parts.back().size()));
            }
            const GroupOptions options = as_options(metric, n_boot, n_sim, level, seed, weights);
            return answers_to_dict(without_gil([&] {
                const GroupedRows grouped = gather_groups(parts, part_codes, groups, threads);
                return answer_groups(grouped, options, threads);
            }));
        },
        py::arg("f"), py::arg("y"), py::arg("weights"), py::arg("clip_lo"), py::arg("clip_hi"), py::arg("codes"),
        py::arg("groups"), py::arg("metric"), py::arg("n_boot"), py::arg("n_sim"), py::arg("level"), py::arg("seed"),
        py::arg("weight_kind"), py::arg("threads"));

    // Numerical work releases the GIL: a GroupedSketch guards its own state
    // with a lock (the Python layer's key table has a lock of its own).
    py::class_<GroupedSketch>(m, "GroupedSketch")
        .def(py::init([](const std::string& metric, std::int64_t resolution) {
                 return GroupedSketch(as_metric(metric), resolution);
             }),
             py::arg("metric"), py::arg("resolution"))
        .def("update",
             [](GroupedSketch& s, const py::array& f, const py::array& y, const std::optional<py::array>& w,
                double clip_lo, double clip_hi, const py::array_t<std::int64_t, py::array::c_style>& codes,
                std::int64_t threads) {
                 const Inputs in = as_inputs(f, y, w, clip_lo, clip_hi);
                 const std::int64_t* c = codes_of(codes, in.size());
                 without_gil([&] { s.update(in, c, threads); });
             })
        .def("merge",
             [](GroupedSketch& s, const GroupedSketch& other, const std::vector<std::int64_t>& mapping) {
                 without_gil([&] { s.merge(other, mapping); });
             })
        .def_property_readonly("groups", &GroupedSketch::groups)
        .def_property_readonly("resolution", &GroupedSketch::resolution)
        .def_property_readonly("metric", [](const GroupedSketch& s) { return metric_name(s.metric()); })
        .def_property_readonly("weights_look_like_counts",
                               [](const GroupedSketch& s) { return s.weight_traits().counts(); })
        .def_property_readonly("rows", &GroupedSketch::rows)
        .def("sketch", [](const GroupedSketch& s, std::int64_t g) { return without_gil([&] { return s.sketch(g); }); })
        .def("set", [](GroupedSketch& s, std::int64_t g, const Sketch& sketch) { without_gil([&] { s.set(g, sketch); }); })
        .def("total", [](const GroupedSketch& s) { return without_gil([&] { return s.total(); }); })
        .def("to_bytes",
             [](const GroupedSketch& s, const py::bytes& keys, std::int64_t groups) {
                 std::string raw = keys;
                 std::string out = without_gil([&] { return s.to_bytes(raw, groups); });
                 return py::bytes(out);
             })
        .def_static(
            "from_bytes",
            [](const py::bytes& b, const std::optional<std::uint64_t>& max_memory) {
                std::string raw = b, keys;
                std::unique_ptr<GroupedSketch> s = without_gil([&] {
                    MemoryBudget budget(max_memory ? *max_memory : default_read_memory(raw.size()));
                    return GroupedSketch::from_bytes(raw, budget, keys);
                });
                return py::make_tuple(py::cast(std::move(s)), py::bytes(keys));
            },
            py::arg("data"), py::arg("max_memory") = py::none())
        .def("answer",
             [](const GroupedSketch& s, const std::vector<std::int64_t>& order, std::int64_t n_boot, std::int64_t n_sim,
                double level, std::uint64_t seed, const std::string& weights, std::int64_t threads) {
                 const GroupOptions options = as_options(s.metric() == Metric::Logit ? "logit" : "l1", n_boot, n_sim,
                                                         level, seed, weights);
                 return answers_to_dict(without_gil([&] { return s.answer(order, options, threads); }));
             });
}

}  // namespace smoothece::bind
