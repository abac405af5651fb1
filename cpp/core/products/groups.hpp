// Calibration per group (segment, user, day): the rows gathered by group in
// one pass (grouped_rows.hpp), then every group answered by exactly the code
// that answers an ungrouped call on its rows, groups spread over the thread
// pool; and, for streams, one sketch per group.
#pragma once

#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "pass/columns.hpp"
#include "products/grouped_rows.hpp"
#include "products/sketch.hpp"
#include "resampling/resample.hpp"
#include "summary/metric.hpp"

namespace smoothece {

struct GroupOptions {
    Metric metric = Metric::L1;
    std::int64_t n_boot = 0;  // bootstrap replicates per group (0: none)
    std::int64_t n_sim = 0;   // consistency replicates per group for the calibration test (0: no test)
    double level = 0.95;
    std::uint64_t seed = 0;   // group i draws with seed + i
    WeightKind weights = WeightKind::Importance;
};

// Per group: rows, total weight, σ*, the bootstrap interval and the test's
// p-value (NaN where not asked for, or where the group weighs nothing).
struct GroupAnswers {
    std::vector<std::int64_t> rows;
    std::vector<double> total_weight, sigma, low, high, p_value;
    // 1 where sigma is only an upper bound (a sketch's grid does not resolve
    // σ*): low, high and p_value are then NaN, nothing being computed from it.
    std::vector<std::uint8_t> bound;
};
GroupAnswers answer_groups(const GroupedRows& grouped, const GroupOptions& options, std::int64_t threads);

// One sketch per group, for streams: a batch is gathered by group in one
// pass and each group's rows go to its own sketch (in parallel over groups).
// Groups are numbered by the caller; the set grows to the largest code seen.
// Thread safety as a Sketch's: a lock guards the set, so calls from several
// threads never corrupt it (updates and merges take it alone, once a batch is
// gathered; answers, copies and bytes share it).
class GroupedSketch {
public:
    GroupedSketch(Metric metric, std::int64_t resolution);
    GroupedSketch(const GroupedSketch& other);
    GroupedSketch& operator=(const GroupedSketch&) = delete;

    std::int64_t groups() const;
    Metric metric() const { return metric_; }
    std::int64_t resolution() const { return resolution_; }
    std::uint64_t rows() const;  // of all groups
    // Adds rows whose groups are `codes` (≥ 0); on a bad row nothing is added.
    void update(const Inputs& in, const std::int64_t* codes, std::int64_t threads);
    // Adds another set's groups 0..mapping.size()−1 (of its groups(), at
    // most): its group g goes to this set's group mapping[g].
    void merge(const GroupedSketch& other, const std::vector<std::int64_t>& mapping);
    Sketch sketch(std::int64_t g) const;  // a copy; out_of_range for a group the set lacks
    void set(std::int64_t g, const Sketch& sketch);
    // Answers the groups order[0], order[1], ... (result i for group order[i], drawing with seed + i).
    GroupAnswers answer(const std::vector<std::int64_t>& order, const GroupOptions& options,
                        std::int64_t threads) const;
    Sketch total() const;  // all groups as one
    WeightTraits weight_traits() const;  // of every weight added, in any group

    // Bytes of format version 5 (sketch_bytes.cpp): the set's header, `keys`
    // (the caller's encoding of the keys of groups 0..groups−1, which the
    // core keeps as they are) and each of those groups' sketch bytes.
    std::string to_bytes(const std::string& keys, std::int64_t groups) const;
    // Reads version 5 bytes: the set, and its keys' bytes into `keys` (the
    // caller checks them). Every group's sketch is checked as
    // Sketch::from_bytes checks it, all within one budget.
    static std::unique_ptr<GroupedSketch> from_bytes(const std::string& bytes, MemoryBudget& budget, std::string& keys);

private:
    void grow(std::int64_t groups);  // with the lock held
    Metric metric_;
    std::int64_t resolution_;
    std::vector<Sketch> sketches_;
    mutable std::shared_mutex mutex_;
};

}  // namespace smoothece
