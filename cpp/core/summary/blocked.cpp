#include "summary/blocked.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "runtime/errors.hpp"

namespace smoothece {
namespace {

using Array = std::vector<double> SummaryBlock::*;
constexpr Array kNodeArrays[4] = {&SummaryBlock::w0, &SummaryBlock::w1, &SummaryBlock::f0, &SummaryBlock::f1};
constexpr Array kCellArrays[4] = {&SummaryBlock::rows, &SummaryBlock::weight, &SummaryBlock::weight_sq,
                                  &SummaryBlock::weight_f};

void scale_by(std::vector<double>& a, int delta) {
    for (double& v : a) v = std::ldexp(v, delta);
}

bool any_nonzero(const double* v, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i)
        if (v[i] != 0.0) return true;
    return false;
}

}  // namespace

BlockedSummary::BlockedSummary(const Mapping& mapping, std::int64_t intervals)
    : mapping_(mapping), intervals_(intervals) {
    if (intervals < kIntervalsPerResampleCell) throw std::logic_error("a blocked summary needs whole resampling cells");
    blocks_.resize(static_cast<std::size_t>(intervals / kBlockNodes + 1));
}

std::int64_t BlockedSummary::nodes_in(std::int64_t b) const {
    return std::min(kBlockNodes, intervals_ + 1 - b * kBlockNodes);
}

std::int64_t BlockedSummary::cells_in(std::int64_t b) const {
    return std::max<std::int64_t>(0, std::min(kBlockCells, intervals_ / kIntervalsPerResampleCell - b * kBlockCells));
}

BlockedSummary::BlockedSummary(const Summary& full) : BlockedSummary(full.mapping, full.intervals) {
    if (!full.full()) throw std::logic_error("a blocked summary holds full summaries");
    for (std::int64_t b = 0; b < blocks(); ++b) {
        const std::int64_t node0 = b * kBlockNodes, nodes = nodes_in(b), slot0 = 2 * b * kBlockCells,
                           slots = 2 * cells_in(b);
        const std::vector<double>* node_arrays[4] = {&full.w0, &full.w1, &full.f0, &full.f1};
        const std::vector<double>* cell_arrays[4] = {&full.cells.rows, &full.cells.weight, &full.cells.weight_sq,
                                                     &full.cells.weight_f};
        bool held = false;
        for (const auto* a : node_arrays) held = held || any_nonzero(a->data() + node0, nodes);
        for (const auto* a : cell_arrays) held = held || any_nonzero(a->data() + slot0, slots);
        if (!held) continue;
        SummaryBlock& block = writable(b);
        for (int a = 0; a < 4; ++a) {
            std::copy_n(node_arrays[a]->begin() + node0, nodes, (block.*kNodeArrays[a]).begin());
            std::copy_n(cell_arrays[a]->begin() + slot0, slots, (block.*kCellArrays[a]).begin());
        }
    }
    rows = full.rows;
    positive_rows = full.positive_rows;
    weight = full.weight;
    weight_exp = full.weight_exp;
}

Summary BlockedSummary::dense() const {
    Summary s = Summary::empty(mapping_, Content::Full, intervals_);
    std::vector<double>* node_arrays[4] = {&s.w0, &s.w1, &s.f0, &s.f1};
    std::vector<double>* cell_arrays[4] = {&s.cells.rows, &s.cells.weight, &s.cells.weight_sq, &s.cells.weight_f};
    for (std::int64_t b = 0; b < blocks(); ++b) {
        const SummaryBlock* block = this->block(b);
        if (!block) continue;
        for (int a = 0; a < 4; ++a) {
            std::copy((block->*kNodeArrays[a]).begin(), (block->*kNodeArrays[a]).end(),
                      node_arrays[a]->begin() + b * kBlockNodes);
            std::copy((block->*kCellArrays[a]).begin(), (block->*kCellArrays[a]).end(),
                      cell_arrays[a]->begin() + 2 * b * kBlockCells);
        }
    }
    s.derive_residual();
    s.rows = rows;
    s.positive_rows = positive_rows;
    s.weight = weight;
    s.weight_exp = weight_exp;
    return s;
}

SummaryBlock& BlockedSummary::writable(std::int64_t b) {
    auto& p = blocks_[static_cast<std::size_t>(b)];
    if (!p) {
        p = std::make_shared<SummaryBlock>();
        for (Array a : kNodeArrays) ((*p).*a).assign(static_cast<std::size_t>(nodes_in(b)), 0.0);
        for (Array a : kCellArrays) ((*p).*a).assign(static_cast<std::size_t>(2 * cells_in(b)), 0.0);
    } else if (p.use_count() > 1) {
        p = std::make_shared<SummaryBlock>(*p);  // shared with a copy: written only here
    }
    return *p;
}

double& BlockedSummary::node(Array array, std::int64_t j) {
    const std::int64_t k = reflected_node(j, intervals_);
    return (writable(k / kBlockNodes).*array)[static_cast<std::size_t>(k % kBlockNodes)];
}

void BlockedSummary::spread(double x, int y, double row_count, double w, double wf, double w2) {
    const double scaled = x * static_cast<double>(intervals_);
    const std::int64_t j = std::min(static_cast<std::int64_t>(scaled), intervals_ - 1);
    const double lam = scaled - static_cast<double>(j);
    const double pw[4] = {1.0, lam, lam * lam, lam * lam * lam};
    const double mw[4] = {w * pw[0], w * pw[1], w * pw[2], w * pw[3]};
    const double mf[4] = {wf * pw[0], wf * pw[1], wf * pw[2], wf * pw[3]};
    const CubicWeights cw = cubic_weights(mw), cf = cubic_weights(mf);
    const Array weights = y ? &SummaryBlock::w1 : &SummaryBlock::w0, sums_f = y ? &SummaryBlock::f1 : &SummaryBlock::f0;
    const std::int64_t b = (j - 1) / kBlockNodes;
    if (j >= 1 && j + 2 <= intervals_ && (j + 2) / kBlockNodes == b) {  // one block, no reflection: most rows
        SummaryBlock& block = writable(b);
        double* nw = (block.*weights).data() + (j - 1 - b * kBlockNodes);
        double* nf = (block.*sums_f).data() + (j - 1 - b * kBlockNodes);
        nw[0] += cw.before, nw[1] += cw.left, nw[2] += cw.right, nw[3] += cw.after;
        nf[0] += cf.before, nf[1] += cf.left, nf[2] += cf.right, nf[3] += cf.after;
    } else {
        const double pw_w[4] = {cw.before, cw.left, cw.right, cw.after}, pw_f[4] = {cf.before, cf.left, cf.right, cf.after};
        for (int d = 0; d < 4; ++d) {
            node(weights, j - 1 + d) += pw_w[d];
            node(sums_f, j - 1 + d) += pw_f[d];
        }
    }
    const std::int64_t c = j / kIntervalsPerResampleCell;
    SummaryBlock& block = writable(c / kBlockCells);
    const auto slot = static_cast<std::size_t>(2 * (c % kBlockCells) + y);
    block.rows[slot] += row_count;
    block.weight[slot] += w;
    block.weight_sq[slot] += w2;
    block.weight_f[slot] += wf;
}

void BlockedSummary::rescale(int new_exp) {
    if (new_exp == weight_exp) return;
    const int delta = new_exp - weight_exp;
    for (std::int64_t b = 0; b < blocks(); ++b) {
        if (!block(b)) continue;
        SummaryBlock& block = writable(b);
        for (Array a : {&SummaryBlock::w0, &SummaryBlock::w1, &SummaryBlock::f0, &SummaryBlock::f1,
                        &SummaryBlock::weight, &SummaryBlock::weight_f})
            scale_by(block.*a, delta);
        scale_by(block.weight_sq, 2 * delta);
    }
    weight = std::ldexp(weight, delta);
    weight_exp = new_exp;
}

void BlockedSummary::merge(const BlockedSummary& other) {
    if (other.intervals_ != intervals_ || other.mapping_ != mapping_)
        throw std::logic_error("merging summaries of different shape");
    if (other.weight > 0.0 && (weight == 0.0 || other.weight_exp < weight_exp)) {
        // Align on the smaller exponent (the larger weights), scaling the other way.
        if (weight == 0.0) weight_exp = other.weight_exp;
        else rescale(other.weight_exp);
    }
    const int delta = weight_exp - other.weight_exp;
    for (std::int64_t b = 0; b < blocks(); ++b) {
        const SummaryBlock* theirs = other.block(b);
        if (!theirs) continue;
        if (!block(b) && delta == 0) {
            blocks_[static_cast<std::size_t>(b)] = other.blocks_[static_cast<std::size_t>(b)];  // shared until written
            continue;
        }
        SummaryBlock& mine = writable(b);
        for (Array a : kNodeArrays) {
            const std::vector<double>& from = theirs->*a;
            std::vector<double>& to = mine.*a;
            for (std::size_t i = 0; i < to.size(); ++i) to[i] += std::ldexp(from[i], delta);
        }
        for (Array a : kCellArrays) {
            const int d = a == &SummaryBlock::rows ? 0 : (a == &SummaryBlock::weight_sq ? 2 * delta : delta);
            const std::vector<double>& from = theirs->*a;
            std::vector<double>& to = mine.*a;
            for (std::size_t i = 0; i < to.size(); ++i) to[i] += std::ldexp(from[i], d);
        }
    }
    if (rows + other.rows < rows)
        throw InputError("the row count would overflow (more than 2^64 - 1 rows)", "rows", -1, static_cast<double>(rows), 1, 1);
    rows += other.rows;
    positive_rows += other.positive_rows;
    weight += std::ldexp(other.weight, delta);
}

void BlockedSummary::add(const Atoms& atoms) {
    const double atoms_weight = atoms.total_weight_scaled();
    // The common exponent, as merge chooses it (the larger weights set it).
    int e = weight_exp;
    if (weight == 0.0) e = atoms.weight_exp;
    else if (atoms_weight > 0.0) e = std::min(weight_exp, atoms.weight_exp);
    rescale(e);
    const int delta = e - atoms.weight_exp;
    double positive = 0.0;
    for (std::size_t i = 0; i < atoms.size(); ++i) {
        for (int y = 0; y < 2; ++y) {
            const AtomStats& a = atoms.by_label[y][i];
            if (a.rows == 0.0 && a.weight == 0.0) continue;
            spread(atoms.x[i], y, a.rows, std::ldexp(a.weight, delta), std::ldexp(a.weight_f, delta),
                   std::ldexp(a.weight_sq, 2 * delta));
            positive += a.rows;
        }
    }
    rows += atoms.rows;
    positive_rows += static_cast<std::uint64_t>(positive);
    weight += std::ldexp(atoms_weight, delta);
}

std::int64_t BlockedSummary::held_blocks() const {
    return std::count_if(blocks_.begin(), blocks_.end(), [](const auto& p) { return p != nullptr; });
}

std::size_t BlockedSummary::memory_bytes() const {
    std::size_t bytes = sizeof(*this) + blocks_.size() * sizeof(blocks_[0]);
    for (std::int64_t b = 0; b < blocks(); ++b)
        if (block(b)) bytes += sizeof(SummaryBlock) + sizeof(double) * static_cast<std::size_t>(4 * nodes_in(b) + 8 * cells_in(b));
    return bytes;
}

}  // namespace smoothece
