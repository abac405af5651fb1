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
#include <utility>
#include <vector>

#include "summary/metric.hpp"

namespace smoothece {

class AtomColumns {
public:
    // Atoms at grid positions x, each binned with the cubic weights a pass
    // gives a row (spread_cubic) onto a grid of `bin` intervals, smoothed at
    // σ (grid units) and read off the nodes of a grid of `read` intervals,
    // for μ̂ on the mesh of `mapping` with `mesh_intervals` (mu_on_mesh,
    // curves.hpp).
    AtomColumns(const std::vector<double>& x, std::int64_t bin, double sigma, std::int64_t read, const Mapping& mapping,
                std::int64_t mesh_intervals);

    // How many values the columns of atoms at x would hold (their memory,
    // and a replicate's work).
    static double size(const std::vector<double>& x, std::int64_t bin, double sigma, std::int64_t read);

    // The smoothed weight of masses weight[i] at atom i at every read node
    // (zero where no column reaches) and its largest value: what μ̂ divides
    // by, and its floor. The same for every replicate with these weights (a
    // consistency replicate's: it redraws labels only).
    struct Weight {
        std::vector<double> sums;
        double most = 0.0;
    };
    Weight smoothed_weight(const double* weight) const;

    // μ̂ on the mesh of masses weight[i] and label[i] at atom i, point m into
    // out[m·stride]: the curves that binning the masses onto the grid,
    // smoothing and reading them off give, to rounding. The label's sums
    // only at the nodes the mesh reads (mesh_nodes), to the bit what all of
    // them would give there.
    void mu(const double* weight, const double* label, double* out, std::int64_t stride) const;
    void mu(const Weight& weight, const double* label, double* out, std::int64_t stride) const;

    // The smoothed sums of masses[i] at atom i at every read node (zero
    // where no column reaches).
    std::vector<double> sums(const double* masses) const;

    std::int64_t read_intervals() const { return read_; }

private:
    // Sums the weight into w (zero at the nodes beyond the runs) and returns its largest value.
    double add_weight(const double* weight, std::vector<double>& w) const;
    // μ̂ from the weight's sums, the label's summed at the mesh's nodes into l (zero elsewhere).
    void mu_from(const std::vector<double>& w, double most, const double* label, std::vector<double>& l, double* out,
                 std::int64_t stride) const;

    std::int64_t read_;
    Mapping mapping_;
    std::int64_t mesh_intervals_;
    std::vector<std::int64_t> first_;   // per atom: the read node its column starts at
    std::vector<std::size_t> offset_;   // per atom: where its values start (one past the last atom: the end)
    std::vector<double> values_;
    // The read nodes some column reaches, as disjoint runs [begin, end) in
    // order: what a replicate's weight covers (columns of close atoms
    // overlap most of their lengths).
    std::vector<std::pair<std::int64_t, std::int64_t>> runs_;
    // The nodes the mesh reads (mesh_nodes), and per atom the run of them
    // its column reaches, from needed_first_[i] (its values at those nodes
    // from label_offset_[i] in label_values_).
    std::vector<std::int64_t> needed_;
    std::vector<char> live_;  // per mesh point: whether it reads a node some column reaches
    std::vector<std::size_t> needed_first_, label_offset_;
    std::vector<double> label_values_;
    // The runs [begin, end) of needed_ that some column reaches (the label's
    // sums are zero elsewhere: a base rate's one column reaches a few).
    std::vector<std::pair<std::size_t, std::size_t>> needed_runs_;
};

}  // namespace smoothece
