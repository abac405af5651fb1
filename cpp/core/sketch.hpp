// CalibrationSketch: the discretized sufficient statistic as an object that
// batches are added to, that merges exactly, and that serializes.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "diagram.hpp"
#include "grid.hpp"
#include "smece.hpp"

namespace smoothece {

class Sketch {
public:
    // `intervals`: grid resolution (a power of two, 256 .. 2^22). smECEσ is
    // exact to the contract for σ ≥ kNodesPerSigma / intervals. The cell
    // counts used for resampling have intervals / 2 cells.
    explicit Sketch(std::int64_t intervals = kDefaultFineIntervals);
    Sketch(const Sketch& other);
    Sketch& operator=(const Sketch& other);

    // Adds a batch of rows (validated in the same pass as binning; on a bad
    // row nothing is added and std::invalid_argument is thrown).
    void update(const Inputs& in, int threads);
    // Adds another sketch of the same resolution.
    void merge(const Sketch& other);

    std::int64_t intervals() const { return sums_.intervals; }
    std::int64_t cells() const { return counts_.cells; }
    std::int64_t count() const;
    double total_weight() const;
    std::size_t memory_bytes() const;
    double min_sigma() const { return min_sigma_for(sums_.intervals); }

    FixpointResult smece() const;
    double smece_sigma(double sigma) const;
    DiagramCurves diagram(double sigma, std::int64_t mesh_intervals) const;
    Replicates resample(ResampleKind kind, std::int64_t replicates, std::uint64_t seed, double band_sigma,
                        std::int64_t mesh_intervals, int threads) const;
    // `size` rows drawn (with replacement, seeded) from the cell counts, each
    // at its group's mean prediction: for tick marks.
    void sample(std::int64_t size, std::uint64_t seed, std::vector<double>& f, std::vector<double>& y) const;

    // Versioned, checksummed little-endian bytes. from_bytes throws
    // std::invalid_argument on truncated, corrupted or foreign input.
    std::string to_bytes() const;
    static Sketch from_bytes(const std::string& bytes);

private:
    void require_data() const;
    ResidualLevels residual_levels() const;
    GridSums sums_;
    CellCounts counts_;
    mutable std::mutex mutex_;  // updates and reads of one sketch from several threads do not interleave
};

}  // namespace smoothece
