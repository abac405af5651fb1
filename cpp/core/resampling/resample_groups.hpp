// Resampling groups (not the caller's groups of grouped calibration): the
// runs of adjacent resampling cells of a grid summary that draw together,
// each one factor per replicate (and label), and what one replicate draws.
#pragma once

#include <cstdint>
#include <vector>

#include "resampling/draws.hpp"
#include "resampling/resample.hpp"
#include "runtime/random.hpp"
#include "summary/summary.hpp"

namespace smoothece {

// Runs of adjacent resampling cells of the summary, at most half the hint
// wide, each drawing one factor per replicate (and label).
struct ResampleGroups {
    std::int64_t count = 0, per = 1, cells = 0;
    std::vector<double> rows[2], weight[2], weight_sq[2], weight_f[2];
    std::vector<BootstrapDraw> bootstrap[2];    // for bootstrap replicates: each group's draw per label
    std::vector<ConsistencyDraw> consistency;  // for consistency replicates: each group's draw
    std::vector<std::uint8_t> tabulated;       // … and whether it is a table lookup
    double total_weight = 0.0;                 // Σw of all groups, summed in group order
    // The groups with weight, in order: the only ones that draw from a
    // replicate's stream (a weightless group's factor is 1 without a draw).
    std::vector<std::int64_t> weighted;

    // draws: how many replicates will draw from the groups.
    ResampleGroups(const ResampleCells& c, double hint, ResampleKind kind, WeightKind weights, int weight_exp,
                   std::int64_t draws, std::int64_t threads);

    // The group of each node of a grid with g intervals (by the cell the node lies in).
    std::vector<std::int32_t> of_nodes(std::int64_t g) const;

private:
    // Each group's consistency draw, its binomial tables taking the budget
    // in group order (a table that does not fit, and every later one, draws
    // by BTRD). Tables cost ~1.4 µs each (683 of them for 1e6 calibrated
    // rows): where all of them surely fit (half the budget by their
    // estimated sizes) runs of groups build theirs in parallel, and the
    // budget is then taken in group order as one thread takes it.
    void consistency_draws(WeightKind weights, int weight_exp, std::int64_t draws, std::int64_t threads);
};

// One replicate's draws: a factor per group (and label, for the bootstrap).
struct ReplicateDraw {
    std::vector<double> s0, s1;  // bootstrap: per label; consistency: s1 alone
    double total_weight = 0.0;   // the replicate's Σw (scaled)
};

// Into d, whose arrays a thread reuses from replicate to replicate (every
// factor is written). Sums in locals, through plain pointers: d and the
// table words are thread_local, whose addresses the loops would otherwise
// fetch (__tls_get_addr) and whose sums they would store, at every group.
void draw_groups(const ResampleGroups& groups, ResampleKind kind, RandomStream& rng, ReplicateDraw& d);
// The same draws, and the same total weight to the bit, but only the factors
// of the weighted groups are written (the others' are left as they were):
// for replicates that read no other group (the atoms behind a summary, whose
// rows are all its weight), at a cost of the weighted groups alone where a
// fine grid has thousands of groups and few atoms.
void draw_weighted_groups(const ResampleGroups& groups, ResampleKind kind, RandomStream& rng, ReplicateDraw& d);

}  // namespace smoothece
