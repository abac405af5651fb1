#include "pybind11.hpp"

#include "smece.hpp"

namespace smoothece::bind {

void register_smece(py::module_& m) {
    m.def(
        "smece",
        [](const py::array& f, const py::array& y, const std::optional<py::array>& w, double clip_lo,
           double clip_hi, int threads, std::int64_t fine_intervals, const std::string& metric) {
            Inputs in = as_inputs(f, y, w, clip_lo, clip_hi);
            if (metric == "logit") {
                in.logit = logit_mapping(kLogitPad);
                if (fine_intervals <= 0) fine_intervals = kDefaultLogitIntervals;
            } else if (metric != "l1") {
                throw py::value_error("metric must be 'l1' or 'logit', got '" + metric + "'");
            }
            // The core reads the arrays (kept alive by the caller's references)
            // and touches no Python object, so other threads may run meanwhile.
            py::gil_scoped_release release;
            return smece_of_rows(in, threads, fine_intervals);
        },
        py::arg("f"), py::arg("y"), py::arg("weights"), py::arg("clip_lo"), py::arg("clip_hi"), py::arg("threads"),
        py::arg("fine_intervals") = 0, py::arg("metric") = "l1");

    m.def(
        "smece_sigma",
        [](const py::array& f, const py::array& y, const std::optional<py::array>& w, double sigma,
           double clip_lo, double clip_hi, int threads, const std::string& metric) {
            Inputs in = as_inputs(f, y, w, clip_lo, clip_hi);
            if (metric == "logit") {
                in.logit = logit_mapping(std::max(kLogitPad, 10.0 * sigma));
            } else if (metric != "l1") {
                throw py::value_error("metric must be 'l1' or 'logit', got '" + metric + "'");
            }
            py::gil_scoped_release release;
            return smece_sigma_of_rows(in, sigma, threads);
        },
        py::arg("f"), py::arg("y"), py::arg("weights"), py::arg("sigma"), py::arg("clip_lo"), py::arg("clip_hi"),
        py::arg("threads"), py::arg("metric") = "l1");

    m.def(
        "check_rows",
        [](const py::array& f, const py::array& y, const std::optional<py::array>& w, double clip_lo,
           double clip_hi, int threads) {
            const Inputs in = as_inputs(f, y, w, clip_lo, clip_hi);
            py::gil_scoped_release release;
            // The checks are fused into binning; binning onto a 4-cell grid
            // costs little more than reading the rows. Returns the total weight.
            return bin_rows(in, 4, /*full=*/false, threads).total_weight;
        },
        py::arg("f"), py::arg("y"), py::arg("weights"), py::arg("clip_lo"), py::arg("clip_hi"), py::arg("threads"));
}

}  // namespace smoothece::bind
