// Tests of the C++ core without Python: built with -DSMOOTHECE_BUILD_TESTS=ON
// and run by ctest (.ci/run does). The Python suite checks accuracy in depth;
// this checks that the core stands alone: hand-derived values, the fixpoint,
// threads, and the error contract.
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "diagram.hpp"
#include "sketch.hpp"
#include "smece.hpp"

using namespace smoothece;

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
    if (!ok) ++failures;
}

Inputs rows(const std::vector<double>& f, const std::vector<std::uint8_t>& y) {
    Inputs in;
    const auto n = static_cast<std::int64_t>(f.size());
    in.f = {reinterpret_cast<const char*>(f.data()), n, sizeof(double), DType::Float64, "f"};
    in.y = {reinterpret_cast<const char*>(y.data()), n, sizeof(std::uint8_t), DType::Bool, "y"};
    return in;
}

}  // namespace

int main() {
    // One row at 0.3 with y = 1: r = 0.7·K̃σ(·, 0.3), which integrates to 0.7 for every σ.
    {
        const std::vector<double> f{0.3};
        const std::vector<std::uint8_t> y{1};
        for (double sigma : {0.002, 0.05, 1.0})
            check(std::fabs(smece_sigma_of_rows(rows(f, y), sigma, 1) - 0.7) < 1e-12,
                  "single row: smECE_sigma = 0.7 at sigma " + std::to_string(sigma));
        check(std::fabs(smece_of_rows(rows(f, y), 1) - 0.7) < 1e-9, "single row: sigma* = 0.7");
    }
    // A mass at an end point is its own mirror image: f = 0, y = 1 gives 1.
    {
        const std::vector<double> f{0.0};
        const std::vector<std::uint8_t> y{1};
        check(std::fabs(smece_sigma_of_rows(rows(f, y), 0.1, 1) - 1.0) < 1e-12, "mass at 0 counts twice");
    }
    // Random data: the fixpoint property, monotonicity, thread agreement, sketch = arrays.
    {
        std::mt19937_64 rng(7);
        std::uniform_real_distribution<double> u;
        std::vector<double> f(300000);
        std::vector<std::uint8_t> y(f.size());
        for (std::size_t i = 0; i < f.size(); ++i) {
            f[i] = u(rng);
            y[i] = u(rng) < f[i] * f[i];
        }
        const Inputs in = rows(f, y);
        const double s1 = smece_of_rows(in, 1), s2 = smece_of_rows(in, 2);
        check(std::fabs(s1 - s2) < 1e-12, "1 and 2 threads agree");
        check(std::fabs(smece_sigma_of_rows(in, s1, 1) - s1) < 1e-8, "smECE at sigma* equals sigma*");
        double previous = 2.0;
        bool monotone = true;
        for (double sigma = 0.002; sigma < 1.0; sigma *= 1.5) {
            const double v = smece_sigma_of_rows(in, sigma, 1);
            monotone = monotone && v <= previous + 1e-12;
            previous = v;
        }
        check(monotone, "smECE_sigma non-increasing in sigma");
        Sketch a, b;
        Inputs first = in, second = in;
        first.f.size = first.y.size = 100000;
        second.f.data += 100000 * sizeof(double);
        second.y.data += 100000;
        second.f.size = second.y.size = 200000;
        a.update(first, 1);
        b.update(second, 1);
        a.merge(b);
        const Sketch c = Sketch::from_bytes(a.to_bytes());
        check(std::fabs(c.smece().sigma - a.smece().sigma) == 0.0, "sketch bytes round trip");
        check(std::fabs(a.smece().sigma - s1) < 1e-8, "merged sketch equals the arrays");
    }
    // The error contract: a bad value is named with its index.
    {
        const std::vector<double> f{0.1, 1.5, 0.2};
        const std::vector<std::uint8_t> y{0, 1, 1};
        std::string message;
        try {
            smece_of_rows(rows(f, y), 1);
        } catch (const std::invalid_argument& e) {
            message = e.what();
        }
        check(message.rfind("f[1] = 1.5:", 0) == 0, "bad prediction reported as: " + message);
        std::string corrupt;
        try {
            Sketch::from_bytes("not a sketch");
        } catch (const std::invalid_argument& e) {
            corrupt = e.what();
        }
        check(!corrupt.empty(), "foreign bytes refused: " + corrupt);
    }
    std::printf("%d failure(s)\n", failures);
    return failures == 0 ? 0 : 1;
}
