#include "products/groups.hpp"

#include <algorithm>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "answers/analysis.hpp"
#include "answers/uncertainty.hpp"
#include "pass/rows.hpp"
#include "runtime/errors.hpp"
#include "runtime/pool.hpp"

namespace smoothece {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Answers group g from its analysis into `out`: exactly what the ungrouped
// calls (bootstrap_smece, calibration_test with seed + g) do; σ* is written
// by the caller first (from the analysis smece itself would make).
void answer_one(Analysis& analysis, std::int64_t g, const GroupOptions& options, GroupAnswers& out) {
    const auto gi = static_cast<std::size_t>(g);
    out.total_weight[gi] = analysis.summary().total_weight();
    out.bound[gi] = analysis.smece(1).resolved ? 0 : 1;
    UncertaintyRequest request;
    request.seed = options.seed + static_cast<std::uint64_t>(g);
    request.level = options.level;
    request.weights = options.weights;
    request.threads = 1;
    if (options.n_boot > 0) {
        request.count = options.n_boot;
        const BootstrapAnswer boot = bootstrap_answer(analysis, 0.0, request);
        // The interval is about this analysis' σ* (bootstrap_smece's); the σ* reported (smece's, from
        // the residual summary) agrees with it to rounding, and the interval holds it too.
        const double shown = out.sigma[gi];
        out.low[gi] = std::min(boot.low, shown);
        out.high[gi] = std::max(boot.high, shown);
    }
    if (options.n_sim > 0) {
        request.count = options.n_sim;
        out.p_value[gi] = test_answer(analysis, request).p_value;
    }
}

GroupAnswers empty_answers(std::int64_t groups) {
    GroupAnswers out;
    out.rows.assign(static_cast<std::size_t>(groups), 0);
    for (auto* v : {&out.total_weight, &out.sigma, &out.low, &out.high, &out.p_value})
        v->assign(static_cast<std::size_t>(groups), kNaN);
    out.bound.assign(static_cast<std::size_t>(groups), 0);
    return out;
}

// Runs answer(g, buffer) for every group on the pool, groups handed out one
// by one, with a buffer for a group's rows per worker.
template <class Answer>
void for_each_group(std::int64_t groups, std::int64_t threads, Answer&& answer) {
    parallel_items<GroupBuffer>(thread_count(threads, groups, 1), groups, answer);
}

}  // namespace

GroupAnswers answer_groups(const GroupedRows& grouped, const GroupOptions& options, std::int64_t threads) {
    const std::int64_t groups = grouped.groups();
    GroupAnswers out = empty_answers(groups);
    const bool full = options.n_boot > 0 || options.n_sim > 0;
    for_each_group(groups, threads, [&](std::int64_t g, GroupBuffer& buffer) {
        const Inputs rows = grouped.rows_of(g, buffer);
        out.rows[static_cast<std::size_t>(g)] = rows.size();
        if (rows.size() == 0) return;
        try {
            // Exactly what the ungrouped calls on these rows do, on one thread:
            // σ* from smece's own pass, resampling from the full summary.
            Analysis residual = Analysis::of_rows(rows, options.metric, Content::Residual, 1);
            out.sigma[static_cast<std::size_t>(g)] = residual.smece(1).sigma;
            out.total_weight[static_cast<std::size_t>(g)] = residual.summary().total_weight();
            if (full) {
                Analysis analysis = Analysis::of_rows(rows, options.metric, Content::Full, 1);
                answer_one(analysis, g, options, out);
            }
        } catch (const InputError& e) {
            if (e.argument != "weights") throw;  // cannot happen: gather_groups checked the rows
            out.total_weight[static_cast<std::size_t>(g)] = 0.0;  // a group of zero weight: no answer (NaN)
        }
    });
    return out;
}

GroupedSketch::GroupedSketch(Metric metric, std::int64_t resolution) : metric_(metric), resolution_(resolution) {
    Sketch check(metric, resolution);  // InputError for a bad resolution, here
}

GroupedSketch::GroupedSketch(const GroupedSketch& other) : metric_(other.metric_), resolution_(other.resolution_) {
    std::shared_lock<std::shared_mutex> lock(other.mutex_);
    sketches_ = other.sketches_;
}

std::int64_t GroupedSketch::groups() const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    return static_cast<std::int64_t>(sketches_.size());
}

std::uint64_t GroupedSketch::rows() const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    std::uint64_t rows = 0;
    for (const Sketch& s : sketches_) rows += s.rows();
    return rows;
}

Sketch GroupedSketch::sketch(std::int64_t g) const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    if (g < 0) throw std::out_of_range("a group code out of range");
    return sketches_.at(static_cast<std::size_t>(g));
}

Sketch GroupedSketch::total() const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    return Sketch::merge_all(sketches_, metric_, resolution_);
}

void GroupedSketch::grow(std::int64_t groups) {
    while (static_cast<std::int64_t>(sketches_.size()) < groups) sketches_.emplace_back(metric_, resolution_);
}

void GroupedSketch::set(std::int64_t g, const Sketch& sketch) {
    if (g < 0) throw std::out_of_range("a group code out of range");
    std::unique_lock<std::shared_mutex> lock(mutex_);
    grow(g + 1);
    sketches_[static_cast<std::size_t>(g)] = sketch;
}

void GroupedSketch::update(const Inputs& in, const std::int64_t* codes, std::int64_t threads) {
    check_shapes(in, /*allow_empty=*/true);
    if (in.size() == 0) return;
    const std::int64_t groups = *std::max_element(codes, codes + in.size()) + 1;
    // Gathered outside the lock (the batch alone; it checks every row and code).
    const GroupedRows grouped = gather_groups(in, codes, groups, threads);
    std::vector<std::int64_t> touched;
    for (std::int64_t g = 0; g < groups; ++g)
        if (grouped.offset[static_cast<std::size_t>(g + 1)] > grouped.offset[static_cast<std::size_t>(g)]) touched.push_back(g);
    // Each group's batch into a copy, so that an overflow anywhere changes
    // nothing; copied, updated and put back under one lock, so that no other
    // update's rows are lost in between.
    std::unique_lock<std::shared_mutex> lock(mutex_);
    const auto held = static_cast<std::int64_t>(sketches_.size());
    std::vector<Sketch> updated;
    for (std::int64_t g : touched)
        updated.push_back(g < held ? sketches_[static_cast<std::size_t>(g)] : Sketch(metric_, resolution_));
    for_each_group(static_cast<std::int64_t>(touched.size()), threads, [&](std::int64_t k, GroupBuffer& buffer) {
        updated[static_cast<std::size_t>(k)].update(grouped.rows_of(touched[static_cast<std::size_t>(k)], buffer), 1);
    });
    grow(groups);  // only now: a failed update leaves the set as it was, its size too
    for (std::size_t k = 0; k < touched.size(); ++k) sketches_[static_cast<std::size_t>(touched[k])] = updated[k];
}

WeightTraits GroupedSketch::weight_traits() const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    WeightTraits traits;
    for (const Sketch& s : sketches_) traits = traits + s.weight_traits();
    return traits;
}

void GroupedSketch::merge(const GroupedSketch& other, const std::vector<std::int64_t>& mapping) {
    if (other.metric_ != metric_ || other.resolution_ != resolution_)
        throw InputError(merge_mismatch("grouped sketches", metric_, resolution_, other.metric_, other.resolution_), "other");
    for (std::int64_t g : mapping)
        if (g < 0) throw std::out_of_range("a group code out of range");
    // This set alone, and the other shared (one lock when they are the same
    // set), taken together so that a.merge(b) beside b.merge(a) cannot deadlock.
    std::unique_lock<std::shared_mutex> mine(mutex_, std::defer_lock);
    std::shared_lock<std::shared_mutex> theirs(other.mutex_, std::defer_lock);
    if (&other == this) {
        mine.lock();
    } else {
        std::lock(mine, theirs);
    }
    if (mapping.size() > other.sketches_.size()) throw std::logic_error("a mapping for more groups than the other set has");
    const auto held = static_cast<std::int64_t>(sketches_.size());
    std::int64_t groups = held;
    for (std::int64_t g : mapping) groups = std::max(groups, g + 1);
    std::vector<Sketch> merged;
    for (std::int64_t g : mapping) {
        merged.push_back(g < held ? sketches_[static_cast<std::size_t>(g)] : Sketch(metric_, resolution_));
        merged.back().merge(other.sketches_[merged.size() - 1]);
    }
    grow(groups);
    for (std::size_t k = 0; k < mapping.size(); ++k) sketches_[static_cast<std::size_t>(mapping[k])] = merged[k];
}

GroupAnswers GroupedSketch::answer(const std::vector<std::int64_t>& order, const GroupOptions& options,
                                   std::int64_t threads) const {
    std::shared_lock<std::shared_mutex> lock(mutex_);  // the answers of one state of the set
    for (std::int64_t code : order)
        if (code < 0 || code >= static_cast<std::int64_t>(sketches_.size()))
            throw std::logic_error("a group code out of range");
    const auto answered = static_cast<std::int64_t>(order.size());
    GroupAnswers out = empty_answers(answered);
    for_each_group(answered, threads, [&](std::int64_t g, GroupBuffer&) {
        const Sketch& sketch = sketches_[static_cast<std::size_t>(order[static_cast<std::size_t>(g)])];
        out.rows[static_cast<std::size_t>(g)] = static_cast<std::int64_t>(sketch.rows());
        if (sketch.rows() == 0) return;
        try {
            Analysis analysis = sketch.analysis();
            out.sigma[static_cast<std::size_t>(g)] = analysis.smece(1).sigma;
            answer_one(analysis, g, options, out);
        } catch (const InputError& e) {
            if (e.argument != "weights") throw;
            out.total_weight[static_cast<std::size_t>(g)] = 0.0;
        }
    });
    return out;
}

}  // namespace smoothece
