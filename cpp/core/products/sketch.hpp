// CalibrationSketch: the summary as an object that batches are added to,
// that merges exactly, and that serializes, in memory that grows with what
// it holds.
//
// Two forms. While the rows (of positive weight) take few distinct
// predictions rounded to 2^-40 (at most resolution/2), the sketch keeps them
// as atoms: each such position with its rows, Σw, Σw² and Σw·f per label;
// answers are then those of the rows themselves, at any σ. Beyond that it
// keeps the full summary on its grid of `resolution` intervals (exact for
// σ ≥ 16/resolution; below that it states a bound), in the blocks its rows
// reach (summary/blocked.hpp). The form depends only on
// the rows, never on how they were batched or merged; in the atoms form the
// state is the same, bit for bit, for any batching when the weights' sums
// are exact (unit or whole weights), and to rounding of those sums otherwise.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "answers/analysis.hpp"
#include "pass/columns.hpp"
#include "pass/rows.hpp"
#include "products/envelope.hpp"
#include "summary/atoms.hpp"
#include "summary/blocked.hpp"
#include "summary/summary.hpp"

namespace smoothece {

// "cannot merge <what> of different metric or resolution (l1 at 256 and logit at 512)"
std::string merge_mismatch(const std::string& what, Metric metric, std::int64_t resolution, Metric other_metric,
                           std::int64_t other_resolution);

// A sketch counts at most 2^53 rows: its counts are doubles, exact to there.
constexpr std::uint64_t kMaxSketchRows = std::uint64_t{1} << 53;

class Sketch {
public:
    // `resolution`: grid intervals, a power of two in [256, 2^22].
    Sketch(Metric metric, std::int64_t resolution);
    Sketch(const Sketch& other);
    Sketch(Sketch&& other) noexcept;
    Sketch& operator=(const Sketch& other);

    // Adds a batch of rows, checked in the same pass; on a bad row (or an
    // overflowing row count or total weight) nothing is added and
    // InputError is thrown.
    void update(const Inputs& in, std::int64_t threads);
    // Adds another sketch of the same metric and resolution.
    void merge(const Sketch& other);

    // All of `parts` (of this metric and resolution) as one sketch: their atoms
    // merged in a balanced tree while they stay few, else every part added
    // once into one grid (O(atoms) per atoms-form part, not O(grid)).
    static Sketch merge_all(const std::vector<Sketch>& parts, Metric metric, std::int64_t resolution);

    // The answers of the rows added so far (a snapshot).
    Analysis analysis() const;

    Metric metric() const { return mapping_.metric; }
    std::int64_t resolution() const { return resolution_; }
    std::uint64_t rows() const;
    double total_weight() const;
    bool exact() const;  // still in the atoms form
    WeightTraits weight_traits() const;  // of every weight added
    std::size_t memory_bytes() const;
    std::size_t max_atoms() const { return static_cast<std::size_t>(resolution_ / 2); }

    // Bytes of format version 4 (products/envelope.hpp; sketch_bytes.cpp
    // holds the layout). from_bytes reads versions 2 to 4 and throws
    // CorruptSketch on anything a real sketch cannot hold (truncated,
    // altered or inconsistent bytes), SketchTooLarge before allocating past
    // the budget; an accepted sketch answers as some rows would.
    std::string to_bytes() const;
    static Sketch from_bytes(const std::string& bytes, MemoryBudget& budget);
    static Sketch from_bytes(const std::string& bytes);  // with the default budget for its size

private:
    struct State {
        std::shared_ptr<const Atoms> atoms;  // the atoms form, or null
        std::optional<BlockedSummary> grid;  // the grid form, or none
        std::uint64_t rows = 0;
        WeightTraits traits;  // of the weights added (unit weights: whole, none above 1)

        double total_scaled() const;  // Σw · 2^weight_exp
        int weight_exp() const;
        double positive_rows() const;
    };
    State snapshot() const;  // a copy of the state, taken under the lock
    State add(const State& a, const State& b) const;
    void check_totals(const State& s) const;

    Mapping mapping_;
    std::int64_t resolution_;
    State state_;
    mutable std::mutex mutex_;
};

}  // namespace smoothece
