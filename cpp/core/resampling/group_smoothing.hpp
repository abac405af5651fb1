// Resampling's bootstrap curves: masses smoothed group by group, so that a
// replicate's curves are sums of the groups' smoothed masses scaled by its
// draws, not a transform per replicate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace smoothece {

// Masses in groups (runs of grid nodes), each group's masses smoothed at one
// σ and read off the nodes of an output grid, where they are not negligible.
// Smoothing is linear, so Σ_g factor_g·(group g's smoothed masses) is the
// smoothing of the masses scaled by their group's factor: what a Spectrum of
// the scaled masses gives (to rounding), for groups × window multiply-adds
// instead of a transform. (Resampling's curves: one factor per group and
// replicate.)
class GroupSmoothing {
public:
    GroupSmoothing() = default;
    // group[j]: the group of node j = 0..G; arrays: masses on the nodes.
    GroupSmoothing(std::int64_t intervals, const std::vector<std::int32_t>& group, std::int64_t groups,
                   const std::vector<const std::vector<double>*>& arrays, double sigma, std::int64_t out_intervals);

    // out[m·kLanes + l] = Σ_g factor[g·kLanes + l]·(the array's smoothed masses
    // of group g)(m/M), m = 0..M, for kLanes sets of factors at once (one per
    // replicate of a run): a window's values are read once for every lane,
    // and the lanes vectorize (one set at a time, the short windows cost more
    // in loop setup than in arithmetic).
    static constexpr std::size_t kLanes = 8;
    void sum_lanes(std::size_t array, const double* factor, std::vector<double>& out) const;
    std::int64_t nodes() const { return nodes_; }

private:
    std::int64_t nodes_ = 0;
    std::vector<std::int64_t> first_, end_, offset_;  // per group: its output nodes [first, end), where its values start
    std::vector<std::vector<double>> values_;         // per array, the groups' windows one after another
};

}  // namespace smoothece
