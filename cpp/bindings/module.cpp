// smoothece._core: assembles the binding files; no logic of its own.
#include "pybind11.hpp"

#include "errors.hpp"

namespace smoothece::bind {
void register_analysis(py::module_& m);
void register_sketch(py::module_& m);
void register_support(py::module_& m);
void register_groups(py::module_& m);
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
    bind::register_analysis(m);
    bind::register_sketch(m);
    bind::register_support(m);
    bind::register_groups(m);
}
