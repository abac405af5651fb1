// The curves of replicates of atoms (few distinct predictions). A
// replicate's μ̂ on the mesh is the ratio of two linear maps of its masses
// per atom (weight and label): each atom binned onto a grid, smoothed with
// the reflected Gaussian and read off the nodes of another. So each atom's
// unit mass is smoothed once, read off the nodes within reach of it (its
// column), and a replicate only sums columns: O(atoms × reach) where binning
// and two transforms of the whole grid cost O(G log G) a replicate (the
// logit grid spans 75 logit units whatever the data, so a σ of 0.01 logit
// units asks for ~10^5 nodes).
#pragma once

#include <cstdint>
#include <vector>

#include "summary/metric.hpp"

namespace smoothece {

class AtomColumns {
public:
    // Atoms at grid positions x, each binned with the cubic weights a pass
    // gives a row (spread_cubic) onto a grid of `bin` intervals, smoothed at
    // σ (grid units) and read off the nodes of a grid of `read` intervals.
    AtomColumns(const std::vector<double>& x, std::int64_t bin, double sigma, std::int64_t read);

    // How many values the columns of atoms at x would hold (their memory,
    // and a replicate's work).
    static double size(const std::vector<double>& x, std::int64_t bin, double sigma, std::int64_t read);

    // μ̂ on the mesh of `mapping` (mu_on_mesh, curves.hpp) of masses weight[i]
    // and label[i] at atom i, point m into out[m·stride]: the curves that
    // binning the masses onto the grid, smoothing and reading them off give,
    // to rounding.
    void mu(const double* weight, const double* label, const Mapping& mapping, std::int64_t mesh_intervals,
            double* out, std::int64_t stride) const;

    // The smoothed sums of masses[i] at atom i at every read node (zero
    // where no column reaches): what mu() divides.
    std::vector<double> sums(const double* masses) const;

    std::int64_t read_intervals() const { return read_; }

private:
    std::int64_t read_;
    std::vector<std::int64_t> first_;   // per atom: the read node its column starts at
    std::vector<std::size_t> offset_;   // per atom: where its values start (one past the last atom: the end)
    std::vector<double> values_;
};

}  // namespace smoothece
