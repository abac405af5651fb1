#include "resampling/group_smoothing.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "resampling/lanes_kernel.hpp"
#include "runtime/kernels.hpp"

namespace smoothece {
namespace {

constexpr double kPi = 3.14159265358979323846;

}  // namespace

GroupSmoothing::GroupSmoothing(std::int64_t intervals, const std::vector<std::int32_t>& group, std::int64_t groups,
                               const std::vector<const std::vector<double>*>& arrays, double sigma, std::int64_t out_intervals)
    : nodes_(out_intervals + 1), first_(static_cast<std::size_t>(groups), 0), end_(first_), offset_(first_) {
    // Positions in units of 1/L, L = lcm(G, M): input node j at j·L/G,
    // output node m at m·L/M, mirror images at −j·L/G + 2nL and j·L/G + 2nL.
    // The mirrored Gaussian of the smoothing is then a table of integer
    // offsets, cut where it is below e^-40 of its peak.
    const std::int64_t L = std::lcm(intervals, out_intervals);
    const std::int64_t in_step = L / intervals, out_step = L / out_intervals;
    const double sigma_l = sigma * static_cast<double>(L);
    const auto half = static_cast<std::int64_t>(9.0 * sigma_l);
    std::vector<double> kernel(static_cast<std::size_t>(2 * half + 1));
    const double norm = static_cast<double>(L) / (sigma_l * std::sqrt(2.0 * kPi));
    for (std::int64_t k = -half; k <= half; ++k) {
        const double d = static_cast<double>(k) / sigma_l;
        kernel[static_cast<std::size_t>(k + half)] = norm * std::exp(-0.5 * d * d);
    }
    const std::int64_t images = half / (2 * L) + 1;
    auto floor_div = [](std::int64_t a, std::int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); };
    std::vector<std::int64_t> lo(first_.size(), intervals + 1), hi(first_.size(), -1);  // each group's nodes
    for (std::int64_t j = 0; j <= intervals; ++j) {
        const auto g = static_cast<std::size_t>(group[static_cast<std::size_t>(j)]);
        lo[g] = std::min(lo[g], j);
        hi[g] = std::max(hi[g], j);
    }
    std::size_t size = 0;
    for (std::size_t g = 0; g < first_.size(); ++g) {
        if (hi[g] < lo[g]) continue;
        first_[g] = std::max<std::int64_t>(0, floor_div(lo[g] * in_step - half + out_step - 1, out_step));
        end_[g] = std::min(nodes_, floor_div(hi[g] * in_step + half, out_step) + 1);
        offset_[g] = static_cast<std::int64_t>(size);
        size += static_cast<std::size_t>(std::max<std::int64_t>(0, end_[g] - first_[g]));
    }
    values_.assign(arrays.size(), std::vector<double>(size, 0.0));
    for (std::size_t a = 0; a < arrays.size(); ++a) {
        const std::vector<double>& mass = *arrays[a];
        for (std::size_t g = 0; g < first_.size(); ++g) {
            double* out = values_[a].data();
            const std::int64_t shift = offset_[g] - first_[g];  // output node m is out[shift + m]
            for (std::int64_t j = lo[g]; j <= hi[g]; ++j) {
                const double m_j = mass[static_cast<std::size_t>(j)];
                if (m_j == 0.0) continue;
                // A mass at 0 or 1 is its own mirror image and counts twice, as in the transform.
                for (std::int64_t n = -images; n <= images; ++n) {
                    for (const std::int64_t at : {j * in_step + 2 * n * L, -j * in_step + 2 * n * L}) {
                        const std::int64_t m0 = std::max(first_[g], floor_div(at - half + out_step - 1, out_step));
                        const std::int64_t m1 = std::min(end_[g] - 1, floor_div(at + half, out_step));
                        for (std::int64_t m = m0; m <= m1; ++m)
                            out[shift + m] += m_j * kernel[static_cast<std::size_t>(m * out_step - at + half)];
                    }
                }
            }
        }
    }
}

void GroupSmoothing::sum_lanes(std::size_t array, const double* factor, std::vector<double>& out) const {
    out.assign(static_cast<std::size_t>(nodes_) * kLanes, 0.0);
    const double* v = values_[array].data();
    for (std::size_t g = 0; g < first_.size(); ++g) {
        const double* c = factor + g * kLanes;
        const double* src = v + offset_[g];
        double* dst = out.data() + static_cast<std::size_t>(first_[g]) * kLanes;
        const std::int64_t count = end_[g] - first_[g];
        static_assert(kLanes == 8, "add_lanes sums eight lanes");
        SMOOTHECE_KERNEL_CALL(add_lanes, src, count, c, dst);
    }
}

}  // namespace smoothece
