#include "pybind11.hpp"

#include "random.hpp"
#include "rows.hpp"

namespace smoothece::bind {

// What the Python layer and the tests read about the core itself.
void register_support(py::module_& m) {
    m.def("available_cpus", &available_cpus, "CPUs this process may use (affinity and cgroup quota).");
    m.def("passes_over_rows", &passes_over_rows, "Passes over caller rows since the process started (a test hook).");
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
