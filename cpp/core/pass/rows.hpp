// The passes over the caller's rows (README, Architecture): every row is
// checked against the input contract and binned in the same O(n) pass, on a
// thread pool: onto a grid (grid_pass.cpp) or, for few distinct predictions,
// into atoms (atoms_pass.cpp). On a bad row nothing is returned and
// InputError names the argument, the first bad index, its value and how
// many values are bad.
#pragma once

#include <cstdint>
#include <optional>

#include "pass/columns.hpp"
#include "summary/atoms.hpp"
#include "summary/blocked.hpp"
#include "summary/summary.hpp"

namespace smoothece {

struct PassOptions {
    Mapping mapping;
    Content content = Content::Residual;
    std::int64_t intervals = 0;
    std::int64_t threads = 0;         // 0: all available CPUs
    bool allow_zero_weight = false;   // a batch of a stream may weigh nothing
};

// Finds the first row breaking the input contract and throws its InputError
// (the exact, slow report of a check that only knows a row is bad).
[[noreturn]] void report_bad_rows(const Inputs& in);

// Checks the shapes of the columns (lengths, non-empty); InputError if not.
void check_shapes(const Inputs& in, bool allow_empty = false);

// The summary of `in` on `opts.intervals` intervals. Weights are scaled by a
// power of two chosen from the largest one, so that neither tiny (subnormal)
// nor huge weights lose precision or overflow: the answers are invariant to
// scaling the weights by any positive factor.
Summary summarise_rows(const Inputs& in, const PassOptions& opts);

// The same summary on a blocked grid (a sketch's), one spread per row:
// O(rows) whatever the grid's size, for batches much smaller than the grid.
// Rows of zero weight are allowed (a batch of a stream may weigh nothing).
BlockedSummary summarise_rows_blocked(const Inputs& in, const Mapping& mapping, std::int64_t intervals);

// The power of two that brings the largest weight near 1, when the weights
// would otherwise underflow (subnormal products) or overflow (their sum); 0
// for weights in [2^-500, 2^500].
int weight_exponent_for(double max_weight);
int weight_exponent_of(const Inputs& in);

// What weights say about their meaning: whether every one is a whole number
// and, while they are, whether one exceeds 1. Whole weights above 1 may count
// rows (frequency weights), which resampled as importance weights give a
// test of size near 0 and intervals twice too wide; {0, 1} and unit weights mean
// the same either way. Adds across batches (and sketches) exactly.
struct WeightTraits {
    bool whole = true;
    bool over_one = false;  // meaningful while `whole`; false otherwise
    bool counts() const { return whole && over_one; }
    WeightTraits operator+(const WeightTraits& o) const {
        const bool w = whole && o.whole;
        return {w, w && (over_one || o.over_one)};
    }
};
// One read of a weight column, in blocks that vectorize, stopping at the
// first block with a fraction (continuous weights stop at once).
WeightTraits weight_traits_of(const Column& w);

// Which positions atoms_of_rows tells apart: every distinct one (the rows'
// own answers), or those a sketch keeps (rounded to 2^-40, rows of zero
// weight left out), so that its cap counts what the sketch would hold and a
// sketch's form depends only on its rows, never on how they were batched.
enum class AtomKeys : std::uint8_t { Exact, Sketch };

// The rows of `in` grouped by distinct position, if there are at most
// `max_atoms` positions (nullopt otherwise): one O(n) hashing pass, for data
// with few distinct predictions (base rates, discrete forecasts), on up to
// `threads` threads. Weights are scaled by 2^weight_exp, as in the summary of
// the same rows.
std::optional<Atoms> atoms_of_rows(const Inputs& in, const Mapping& mapping, int weight_exp, std::size_t max_atoms,
                                   std::int64_t threads = 1, AtomKeys keys = AtomKeys::Exact);
// Every distinct position, by sorting: O(n log n), any number of them.
Atoms all_atoms_of_rows(const Inputs& in, const Mapping& mapping, int weight_exp);

// The summary of atoms on `intervals` intervals: the same sums a pass over
// their rows would give (up to rounding).
Summary summarise_atoms(const Atoms& atoms, Content content, std::int64_t intervals);
// Adds atoms into a full summary on its grid, one spread per atom (O(atoms),
// not O(grid)); the caller derives the residual nodes once at the end.
void add_atoms(Summary& s, const Atoms& atoms);

// Passes made over caller rows since the process started, and the rows they
// read (test hooks: the tests count passes instead of timing them). Every
// pass calls count_pass once with the rows it read (a look for few atoms
// stops early on data with many).
std::uint64_t passes_over_rows();
std::uint64_t rows_read_by_passes();
void count_pass(std::uint64_t rows);

}  // namespace smoothece
