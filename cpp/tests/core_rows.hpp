// Rows for the tests of the C++ core (test_*.cpp but test_random.cpp), which
// check that the core stands alone the way the bindings drive it:
// hand-derived values, the fixpoint, the logit metric, threads, exact atoms,
// resampling, the sketch's merge and bytes, and the error contract. The
// Python suite checks accuracy in depth against an independent exact
// evaluator.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "answers/analysis.hpp"
#include "harness.hpp"
#include "runtime/kernels.hpp"

namespace smoothece::testing {

struct Rows {
    std::vector<double> f, w;
    std::vector<std::uint8_t> y;

    Inputs inputs(std::int64_t begin = 0, std::int64_t end = -1) const {
        if (end < 0) end = static_cast<std::int64_t>(f.size());
        Inputs in;
        const std::int64_t n = end - begin;
        in.f = {reinterpret_cast<const char*>(f.data() + begin), n, sizeof(double), DType::Float64, "f"};
        in.y = {reinterpret_cast<const char*>(y.data() + begin), n, sizeof(std::uint8_t), DType::Bool, "y"};
        if (!w.empty()) in.w = {reinterpret_cast<const char*>(w.data() + begin), n, sizeof(double), DType::Float64, "weights"};
        return in;
    }
};

inline double smece(const Rows& r, Metric metric = Metric::L1, std::int64_t threads = 1) {
    return Analysis::of_rows(r.inputs(), metric, Content::Residual, threads).smece(threads).sigma;
}

inline double smece_sigma(const Rows& r, double sigma, Metric metric = Metric::L1) {
    return Analysis::of_rows(r.inputs(), metric, Content::Residual, 1, sigma).smece_sigma(sigma, 1).value;
}

// n rows with f ~ U(0, 1), P(y = 1) = f² (miscalibrated), lognormal weights if asked.
inline Rows random_rows(std::size_t n, std::uint64_t seed, bool weighted = false) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u;
    std::lognormal_distribution<double> lognormal;
    Rows r;
    for (std::size_t i = 0; i < n; ++i) {
        r.f.push_back(u(rng));
        r.y.push_back(u(rng) < r.f.back() * r.f.back() ? 1 : 0);
        if (weighted) r.w.push_back(lognormal(rng));
    }
    return r;
}

// Whether both builds of the kernels run here, to compare them (else the
// case says why not and skips).
inline bool both_kernel_builds() {
#if defined(SMOOTHECE_HAVE_AVX2_KERNEL)
    if (avx2_kernel()) return true;
    skip("this CPU lacks AVX2 + FMA: the baseline kernels alone run here");
#else
    skip("built without the AVX2 kernels");
#endif
    return false;
}

// The rows that several cases share: 300,000 of random_rows(seed 7).
inline const Rows& shared_rows() {
    static const Rows rows = random_rows(300000, 7);
    return rows;
}

}  // namespace smoothece::testing
