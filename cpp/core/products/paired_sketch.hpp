// PairedSketch: several models' sketches of the same rows, with what their
// paired bootstrap needs (resampling/paired.hpp): the rows' units, at a
// fixed number of unit cells per model, merged by key. Mergeable like a
// Sketch; its memory grows with the units that occur (at most 2·cells^models,
// in practice the cells the models' joint predictions fill), not with rows,
// and is bounded: beyond kMaxSketchUnits units the cells halve (units of
// neighbouring cells merge), to the coarsest level the rows need. Which
// level that is depends on the rows alone (a part of them never needs a
// coarser one than all of them), so batching and merge order do not change it.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "pass/columns.hpp"
#include "products/sketch.hpp"
#include "resampling/paired.hpp"

namespace smoothece {

constexpr std::int64_t kMaxSketchUnits = std::int64_t{1} << 18;
constexpr std::int64_t kMinUnitCells = 16;

// A unit's key (its cells and label) as bytes: what the sketch indexes its units by.
std::string key_bytes_of(const PairedUnits& units, std::size_t unit);

class PairedSketch {
public:
    // `models` ≥ 2 sketches of `resolution`, units of `unit_cells` per model (a power of two in [16, 2^16]).
    PairedSketch(Metric metric, std::int64_t resolution, std::int64_t models, std::int64_t unit_cells);
    PairedSketch(const PairedSketch& other);

    // Adds a batch: one Inputs per model, sharing y and w. Every model's rows
    // are checked before anything is added; on a bad row nothing is added
    // and InputError is thrown.
    void update(const std::vector<Inputs>& models, std::int64_t threads);
    // Adds another paired sketch of the same shape.
    void merge(const PairedSketch& other);

    const Sketch& model(std::int64_t m) const { return sketches_.at(static_cast<std::size_t>(m)); }
    std::int64_t models() const { return static_cast<std::int64_t>(sketches_.size()); }
    std::int64_t unit_cells() const;
    std::int64_t units() const;
    std::size_t memory_bytes() const;

    // Bytes of format version 1 (sketch_bytes.cpp): the header, `names` (the
    // caller's encoding of the models' names, kept as they are), every
    // model's sketch bytes and the units. from_bytes checks everything as
    // Sketch::from_bytes does, and the units against the models' rows.
    std::string to_bytes(const std::string& names) const;
    static std::unique_ptr<PairedSketch> from_bytes(const std::string& bytes, MemoryBudget& budget, std::string& names);

    // Paired replicates of the models' SmoothECE, given each one's σ* (metric units).
    PairedReplicates replicates(const std::vector<double>& sigma_star, std::int64_t count, std::uint64_t seed,
                                WeightKind weights, std::int64_t threads) const;

private:
    void add_units(const PairedUnits& batch);  // under the lock
    void coarsen_to(std::int64_t cells);        // under the lock

    Mapping mapping_;
    std::int64_t unit_cells_;
    std::vector<Sketch> sketches_;
    PairedUnits units_;
    std::unordered_map<std::string, std::size_t> index_;  // a unit's key bytes → its place in units_
    mutable std::mutex mutex_;
};

}  // namespace smoothece
