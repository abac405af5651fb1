#include "resampling/resample_groups.hpp"

#include <algorithm>
#include <cstddef>

#include "runtime/pool.hpp"

namespace smoothece {
namespace {

// Resampling groups are at most half the hint wide: the drawn mass keeps the
// group's profile, so a group never blurs the kernel, and the variance lost
// to within-group positions is below (width/σ)²/24 ≈ 1% (SD 0.5%).
constexpr double kGroupsPerSigma = 2.0;

}  // namespace

ResampleGroups::ResampleGroups(const ResampleCells& c, double hint, ResampleKind kind, WeightKind weights,
                               int weight_exp, std::int64_t draws, std::int64_t threads)
    : cells(c.cells) {
    per = std::max<std::int64_t>(1, static_cast<std::int64_t>(hint / kGroupsPerSigma * static_cast<double>(c.cells)));
    count = (c.cells + per - 1) / per;
    for (int y = 0; y < 2; ++y) {
        rows[y].assign(static_cast<std::size_t>(count), 0.0);
        weight[y].assign(static_cast<std::size_t>(count), 0.0);
        weight_sq[y].assign(static_cast<std::size_t>(count), 0.0);
        weight_f[y].assign(static_cast<std::size_t>(count), 0.0);
    }
    for (std::int64_t cell = 0; cell < c.cells; ++cell) {
        const auto g = static_cast<std::size_t>(cell / per);
        for (int y = 0; y < 2; ++y) {
            const auto slot = static_cast<std::size_t>(2 * cell + y);
            rows[y][g] += c.rows[slot];
            weight[y][g] += c.weight[slot];
            weight_sq[y][g] += c.weight_sq[slot];
            weight_f[y][g] += c.weight_f[slot];
        }
    }
    for (std::size_t g = 0; g < static_cast<std::size_t>(count); ++g) {
        total_weight += weight[0][g] + weight[1][g];
        if (weight[0][g] > 0.0 || weight[1][g] > 0.0) weighted.push_back(static_cast<std::int64_t>(g));
    }
    if (kind == ResampleKind::Bootstrap) {
        for (int y = 0; y < 2; ++y) {
            bootstrap[y].reserve(static_cast<std::size_t>(count));
            for (std::size_t g = 0; g < static_cast<std::size_t>(count); ++g)
                bootstrap[y].emplace_back(weight[y][g], weight_sq[y][g], weight_exp, weights);
        }
    } else {
        consistency_draws(weights, weight_exp, draws, threads);
    }
}

void ResampleGroups::consistency_draws(WeightKind weights, int weight_exp, std::int64_t draws, std::int64_t threads) {
    const std::size_t budget = ConsistencyDraw::table_budget(draws);
    const auto n = static_cast<std::size_t>(count);
    auto both = [](const std::vector<double> (&by_label)[2], std::size_t g) { return by_label[0][g] + by_label[1][g]; };
    double estimate = 0.0;
    for (std::size_t g = 0; g < n; ++g)
        estimate += ConsistencyDraw::table_estimate(both(rows, g), both(weight, g), both(weight_sq, g), both(weight_f, g),
                                                    weight_exp, weights);
    const int nthreads = budget > 0 && estimate <= 0.5 * static_cast<double>(budget) ? thread_count(threads, count, 64) : 1;
    consistency.resize(n);
    parallel_for(nthreads, [&](int t) {
        std::size_t local = budget;  // a run's own budget: no thread holds more than one budget's tables
        const Share share = share_of(count, t, nthreads);
        for (auto g = static_cast<std::size_t>(share.begin); g < static_cast<std::size_t>(share.end); ++g)
            consistency[g] = ConsistencyDraw(both(rows, g), both(weight, g), both(weight_sq, g), both(weight_f, g),
                                             weight_exp, weights, local);
    });
    if (nthreads > 1) {  // (one thread took the budget in group order already)
        std::size_t left = budget;
        for (ConsistencyDraw& draw : consistency) {
            if (draw.over_budget()) left = 0;  // over its run's budget, so over what is left of the whole
            if (!draw.tabulated()) continue;
            if (left > 0 && draw.table_values() <= left) {
                left -= draw.table_values();
            } else {
                left = 0;
                draw.drop_table();
            }
        }
    }
    tabulated.resize(n);
    for (std::size_t g = 0; g < n; ++g) tabulated[g] = consistency[g].tabulated();
}

std::vector<std::int32_t> ResampleGroups::of_nodes(std::int64_t g) const {
    std::vector<std::int32_t> out(static_cast<std::size_t>(g + 1));
    for (std::int64_t j = 0; j <= g; ++j)
        out[static_cast<std::size_t>(j)] = static_cast<std::int32_t>(std::min(j * cells / g, cells - 1) / per);
    return out;
}

namespace {

// The draws of groups group_of(0 … count − 1), in that order, from `rng`.
template <class GroupOf>
void draw_these(const ResampleGroups& groups, ResampleKind kind, RandomStream& rng, ReplicateDraw& d,
                std::size_t count, GroupOf group_of) {
    const auto n = static_cast<std::size_t>(groups.count);
    d.s1.resize(n);
    double* s1 = d.s1.data();
    if (kind == ResampleKind::Bootstrap) {
        d.s0.resize(n);
        double* s0 = d.s0.data();
        const double *w0 = groups.weight[0].data(), *w1 = groups.weight[1].data();
        double total = 0.0;
        for (std::size_t i = 0; i < count; ++i) {
            const std::size_t g = group_of(i);
            s0[g] = groups.bootstrap[0][g](rng);
            s1[g] = groups.bootstrap[1][g](rng);
            total += s0[g] * w0[g] + s1[g] * w1[g];
        }
        d.total_weight = total;
        return;
    }
    // Two passes, the words taken in the same order as in one: the
    // tabulated groups' lookups come after all draws, each entry asked for
    // as its word is drawn, so that their cache misses overlap instead of
    // waiting on the generator one by one. (A consistency replicate keeps
    // every group's weight: its total is the groups'.)
    d.total_weight = groups.total_weight;
    thread_local std::vector<std::uint64_t> table_words;
    table_words.resize(count);
    std::uint64_t* word = table_words.data();
    const ConsistencyDraw* draws = groups.consistency.data();
    const std::uint8_t* tabulated = groups.tabulated.data();
    for (std::size_t i = 0; i < count; ++i) {
        const std::size_t g = group_of(i);
        if (tabulated[g]) {
            word[i] = rng.next_u64();
            draws[g].table().prefetch(word[i]);
        } else {
            s1[g] = draws[g](rng);
        }
    }
    for (std::size_t i = 0; i < count; ++i) {
        const std::size_t g = group_of(i);
        if (tabulated[g]) s1[g] = draws[g].from_word(word[i]);
    }
}

}  // namespace

void draw_groups(const ResampleGroups& groups, ResampleKind kind, RandomStream& rng, ReplicateDraw& d) {
    draw_these(groups, kind, rng, d, static_cast<std::size_t>(groups.count), [](std::size_t g) { return g; });
}

void draw_weighted_groups(const ResampleGroups& groups, ResampleKind kind, RandomStream& rng, ReplicateDraw& d) {
    // The groups left out draw nothing from the stream (BootstrapDraw and
    // ConsistencyDraw of no weight) and add exactly +0 to the bootstrap's
    // total: the same stream and sums as draw_groups.
    const std::int64_t* weighted = groups.weighted.data();
    draw_these(groups, kind, rng, d, groups.weighted.size(),
               [weighted](std::size_t i) { return static_cast<std::size_t>(weighted[i]); });
}

}  // namespace smoothece
