// smoothece._core: assembles the binding files, with the few small functions
// that report on the core itself; no logic of its own.
#include "pybind11.hpp"

#include "pass/rows.hpp"
#include "resampling/resample.hpp"
#include "runtime/errors.hpp"
#include "runtime/random.hpp"
#include "smoothing/fixpoint.hpp"

namespace smoothece::bind {
void register_analysis(py::module_& m);
void register_sketch(py::module_& m);
void register_groups(py::module_& m);

// What the Python layer and the tests read about the core itself (here, not
// in a file of its own: every binding file costs seconds of pybind11 headers).
void register_support(py::module_& m) {
    m.def("available_cpus", &available_cpus, "CPUs this process may use (affinity and cgroup quota).");
    m.def("passes_over_rows", &passes_over_rows, "Passes over caller rows since the process started (a test hook).");
    m.def("rows_read_by_passes", &rows_read_by_passes, "Rows those passes read (a test hook).");
    m.def("set_replicate_windows", &set_replicate_windows, py::arg("enabled"),
          "Whether grid replicates smooth only the window their residual reaches; returns the previous setting (a test hook).");
    m.def("fixpoint_counts", &fixpoint_counts,
          "(searches, evaluations): σ* searches and their smECEσ evaluations since the process started (a bench hook).");
    m.def(
        "weight_traits",
        [](const py::array& w) {
            const Column column = as_column(w, "weights");
            const WeightTraits t = without_gil([&] { return weight_traits_of(column); });
            return py::make_tuple(t.whole, t.over_one);
        },
        py::arg("weights"),
        "(whole, over_one): whether every weight is a whole number and, if so, whether one exceeds 1.");
    m.def(
        "philox_raw",
        [](std::uint64_t seed, std::uint64_t stream, std::int64_t n) {
            RandomStream rng(seed, stream);
            std::vector<std::uint64_t> out(static_cast<std::size_t>(std::max<std::int64_t>(n, 0)));
            for (auto& v : out) v = rng.next_u64();
            return to_numpy(std::move(out));
        },
        py::arg("seed"), py::arg("stream"), py::arg("n"),
        "The first n raw 64-bit words of the stream (seed, stream): for checking against numpy's Philox.");
}

}  // namespace smoothece::bind

PYBIND11_MODULE(_core, m) {
    using namespace smoothece;
    m.doc() = "smoothece C++ core (private; use the smoothece package)";
    // One structured input error becomes smoothece.InputError (a ValueError)
    // with the same fields; a cancelled call becomes the KeyboardInterrupt
    // that cancelled it.
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const InputError& e) {
            py::object cls = py::module_::import("smoothece._errors").attr("InputError");
            py::object err = cls(e.what(), e.argument, e.index, e.value, e.count, e.size);
            PyErr_SetObject(cls.ptr(), err.ptr());
        } catch (const Cancelled&) {
            if (!PyErr_Occurred()) PyErr_SetNone(PyExc_KeyboardInterrupt);
        }
    });
    bind::main_thread_ident() = py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
    bind::register_analysis(m);
    bind::register_sketch(m);
    bind::register_support(m);
    bind::register_groups(m);
}
