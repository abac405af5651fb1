// The full summary a sketch keeps on its grid, stored in blocks of nodes:
// only the blocks that rows reach are held. Calibrated predictions fill a
// fifth to a third of the logit axis, a segment's rows often a few blocks, so
// a grid fine enough to resolve σ* at 1e8 rows (2^20 intervals on the logit
// axis) costs memory in proportion to where the rows lie. Blocks are shared
// between copies until one is written (copy on write): copying a sketch, as
// every update and snapshot does, costs its block pointers.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "summary/atoms.hpp"
#include "summary/summary.hpp"

namespace smoothece {

// Nodes per block (a multiple of kIntervalsPerResampleCell, so that a block
// holds whole resampling cells).
constexpr std::int64_t kBlockNodes = 1024;
constexpr std::int64_t kBlockCells = kBlockNodes / kIntervalsPerResampleCell;

// Block b: nodes [b·kBlockNodes, (b + 1)·kBlockNodes) and resampling cells
// [b·kBlockCells, (b + 1)·kBlockCells), those the grid has.
struct SummaryBlock {
    std::vector<double> w0, w1, f0, f1;                     // per node
    std::vector<double> rows, weight, weight_sq, weight_f;  // per cell and label (2c + y)
};

class BlockedSummary {
public:
    BlockedSummary() = default;
    BlockedSummary(const Mapping& mapping, std::int64_t intervals);
    // The blocks of a full summary that hold anything.
    explicit BlockedSummary(const Summary& full);

    // The full summary (O(intervals)): what every answer reads.
    Summary dense() const;

    // Adds another summary of the same grid (weights on the smaller
    // exponent, as Summary::merge does).
    void merge(const BlockedSummary& other);
    // Adds atoms, one spread per atom (O(atoms)).
    void add(const Atoms& atoms);
    // Multiplies every weight sum by 2^(new_exp − weight_exp).
    void rescale(int new_exp);

    // One row's or atom's sums at grid position x ∈ [0, 1] with label y:
    // Σw, Σw·f, rows and Σw² (scaled by 2^weight_exp).
    void spread(double x, int y, double rows, double w, double wf, double w2);

    std::int64_t intervals() const { return intervals_; }
    const Mapping& mapping() const { return mapping_; }
    std::int64_t blocks() const { return static_cast<std::int64_t>(blocks_.size()); }
    // Block b, or null where no rows reach it.
    const SummaryBlock* block(std::int64_t b) const { return blocks_[static_cast<std::size_t>(b)].get(); }
    std::int64_t held_blocks() const;
    std::size_t memory_bytes() const;
    // The nodes and cells block b holds (fewer in the last blocks).
    std::int64_t nodes_in(std::int64_t b) const;
    std::int64_t cells_in(std::int64_t b) const;

    std::uint64_t rows = 0;           // all rows, zero weights included
    std::uint64_t positive_rows = 0;  // rows of positive weight
    double weight = 0.0;              // Σ w · 2^weight_exp
    int weight_exp = 0;

private:
    SummaryBlock& writable(std::int64_t b);  // allocated or unshared first
    double& node(std::vector<double> SummaryBlock::*array, std::int64_t j);

    Mapping mapping_;
    std::int64_t intervals_ = 0;
    std::vector<std::shared_ptr<SummaryBlock>> blocks_;
};

}  // namespace smoothece
