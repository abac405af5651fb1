// smoothece._core: assembles the binding files; no logic of its own.
#include "pybind11.hpp"

namespace smoothece::bind {
void register_smece(py::module_& m);
void register_diagram(py::module_& m);
void register_sketch(py::module_& m);
}

PYBIND11_MODULE(_core, m) {
    m.doc() = "smoothece C++ core (private; use the smoothece package)";
    smoothece::bind::register_smece(m);
    smoothece::bind::register_diagram(m);
    smoothece::bind::register_sketch(m);
}
