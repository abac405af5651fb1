#include "answers/analysis.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>

#include "pass/rows.hpp"
#include "resampling/replicate_solve.hpp"
#include "runtime/pool.hpp"
#include "runtime/random.hpp"
#include "smoothing/exact_integral.hpp"

namespace smoothece {
namespace {

// Distinct positions that the hashing pass collects before it gives up.
constexpr std::size_t kMaxFewAtoms = std::size_t{1} << 14;
// Below this σ (grid units) a bandwidth is answered from atoms, not from a grid pass.
constexpr double kDirectMinSigma = kNodesPerSigma / static_cast<double>(std::int64_t{1} << 20);
// σ* to this relative precision: to rounding, so that σ* is a smooth function
// of the data (two summaries equal to rounding give σ* equal to rounding, not
// to a solver's tolerance).
constexpr double kTolerance = 1e-14;
// The exact route resolves every σ down to this.
constexpr double kExactLimit = 1e-300;
// A second look at σ* below the first grid builds grids up to this fine;
// beyond it, and beyond one interval a row, it goes to the rows' atoms: each
// evaluation on a grid of G intervals is O(G log G) whatever the rows (1e6
// predictions in [0, 1e-9] with 3 positives, σ* = 3e-6: 2^22 intervals, 1.0 s
// with the logit metric 3.7 s, against 5 and 80 ms for Beta data), while
// the exact integral works on the lattice windows around the atoms alone.
constexpr std::int64_t kMaxSecondLookIntervals = std::int64_t{1} << 18;
// Up to this many rows, replicates draw from the rows' atoms (exactly) even
// when σ* was resolved on the grid. The grid's resampling groups scale each
// node's mass by the draw of the group the node lies in, so the mass a row
// spreads across a group's edge takes a neighbour's draw: harmless over many
// rows, but from the grid a one-row calibration test's null mean is up to
// 73% off the direct Monte Carlo of y* ~ Bernoulli(f), three rows' 45%, ten
// rows' 20% (40 random data sets each; ±4% at 30 rows, ±3% at 100, within
// the Monte Carlo's noise). The atoms' replicates cost more (a
// 1000-replicate test of 10 rows: 14 ms, against 4 ms from the grid), so
// only below this.
constexpr std::uint64_t kExactResampleRows = 64;
// On the logit axis σ* of up to this many atoms already known is solved from
// them, not searched on the grid first (a transform of 2^16–2^17 intervals).
constexpr std::size_t kExactFirstAtoms = 2048;
// The tick-mark sample checks for Ctrl-C every this many + 1 rows.
constexpr std::int64_t kSampleCheck = (std::int64_t{1} << 16) - 1;
// Streams of the tick-mark sample (the replicates use kinds 0 and 1).
constexpr std::uint64_t kSampleStream = std::uint64_t{3} << 62;

// Calls row(slot) for `size` slots drawn with probability proportional to
// their rows (cumulative: the running sums of the slots' rows) from the
// tick-mark stream of `seed`; nothing when no slot holds a row.
template <class Row>
void draw_slots(const std::vector<double>& cumulative, std::int64_t size, std::uint64_t seed, Row&& row) {
    const double total = cumulative.empty() ? 0.0 : cumulative.back();
    if (!(total > 0.0)) return;
    RandomStream rng(seed, kSampleStream);
    for (std::int64_t k = 0; k < size; ++k) {
        if ((k & kSampleCheck) == 0) interruption_point();
        const double u = rng.uniform() * total;
        const auto slot = static_cast<std::size_t>(std::upper_bound(cumulative.begin(), cumulative.end(), u) -
                                                   cumulative.begin());
        row(std::min(slot, cumulative.size() - 1));
    }
}

// Whether a summary's rows sit in few resampling cells (each atom lies in
// one): where few atoms may lie behind it. Replicates then look for them,
// however cheap the grid: a grid's groups give the part of an atom's mass
// that its weights put on a node of the next cell that cell's draw, which
// biases the replicates of few atoms (three forecasts of 300 rows: a test's
// null 3.3% high on the l1 grid, 7 standard errors). On continuous data the
// look stops at its first row past kMaxFewAtoms distinct predictions.
bool few_cells(const Summary& full) {
    std::size_t occupied = 0;
    for (std::size_t c = 0; c + 1 < full.cells.slots(); c += 2)
        occupied += full.cells.rows[c] + full.cells.rows[c + 1] > 0.0;
    return occupied <= kMaxFewAtoms;
}

std::vector<double> residuals_of(const Atoms& atoms) {
    std::vector<double> r(atoms.size());
    for (std::size_t i = 0; i < atoms.size(); ++i) r[i] = atoms.residual(i);
    return r;
}

class ArrayRows final : public RowsBehind {
public:
    ArrayRows(const Inputs& in, const Mapping& mapping, int weight_exp)
        : in_(in), mapping_(mapping), weight_exp_(weight_exp) {}

    Summary summarise(Content content, std::int64_t intervals, std::int64_t threads) override {
        return summarise_rows(in_, PassOptions{mapping_, content, intervals, threads, false});
    }

    const Atoms* few_atoms(std::size_t max_atoms, std::int64_t threads) override {
        if (!few_looked_) {
            few_ = atoms_of_rows(in_, mapping_, weight_exp_, max_atoms, threads);
            few_looked_ = true;
        }
        return few_ ? &*few_ : nullptr;
    }

    const Atoms& all_atoms() override {
        if (!all_) all_ = all_atoms_of_rows(in_, mapping_, weight_exp_);
        return *all_;
    }

    const Atoms* known_atoms() const override { return few_ ? &*few_ : nullptr; }

    void sample(std::int64_t size, std::uint64_t seed, std::vector<double>& f, std::vector<double>& y) override {
        f.clear();
        y.clear();
        const auto n = static_cast<std::uint64_t>(in_.size());
        RandomStream rng(seed, kSampleStream);
        std::vector<std::int64_t> rows;
        for (std::int64_t k = 0; k < size && n > 0; ++k) {
            if ((k & kSampleCheck) == 0) interruption_point();
            rows.push_back(static_cast<std::int64_t>(rng.next_u64() % n));
        }
        sort_interruptibly(rows, std::less<std::int64_t>());
        for (std::size_t k = 0; k < rows.size(); ++k) {
            if ((k & static_cast<std::size_t>(kSampleCheck)) == 0) interruption_point();
            const std::int64_t i = rows[k];
            double fi, yi;
            read_doubles(in_.f, i, 1, &fi);
            read_doubles(in_.y, i, 1, &yi);
            f.push_back(std::min(std::max(fi, 0.0), 1.0));
            y.push_back(yi);
        }
    }

private:
    Inputs in_;
    Mapping mapping_;
    int weight_exp_;
    bool few_looked_ = false;
    std::optional<Atoms> few_;
    std::optional<Atoms> all_;
};

class AtomRows final : public RowsBehind {
public:
    explicit AtomRows(std::shared_ptr<const Atoms> atoms) : atoms_(std::move(atoms)) {}

    Summary summarise(Content content, std::int64_t intervals, std::int64_t) override {
        return summarise_atoms(*atoms_, content, intervals);
    }
    const Atoms* few_atoms(std::size_t, std::int64_t) override { return atoms_.get(); }  // a sketch keeps few atoms
    const Atoms& all_atoms() override { return *atoms_; }
    const Atoms* known_atoms() const override { return atoms_.get(); }

    void sample(std::int64_t size, std::uint64_t seed, std::vector<double>& f, std::vector<double>& y) override {
        f.clear();
        y.clear();
        std::vector<double> cumulative;  // rows of (position, label) slots 2i + y
        double total = 0.0;
        for (std::size_t i = 0; i < atoms_->size(); ++i)
            for (int label = 0; label < 2; ++label) cumulative.push_back(total += atoms_->by_label[label][i].rows);
        draw_slots(cumulative, size, seed, [&](std::size_t slot) {
            f.push_back(atoms_->mapping.prediction(atoms_->x[slot / 2]));
            y.push_back(static_cast<double>(slot % 2));
        });
    }

private:
    std::shared_ptr<const Atoms> atoms_;
};

}  // namespace

std::shared_ptr<RowsBehind> rows_of_arrays(const Inputs& in, const Mapping& mapping, int weight_exp) {
    return std::make_shared<ArrayRows>(in, mapping, weight_exp);
}

std::shared_ptr<RowsBehind> rows_of_atoms(std::shared_ptr<const Atoms> atoms) {
    return std::make_shared<AtomRows>(std::move(atoms));
}

Analysis::Analysis(Summary summary, std::shared_ptr<RowsBehind> rows)
    : summary_(std::move(summary)), rows_(std::move(rows)) {}

Analysis Analysis::of_rows(const Inputs& in, Metric metric, Content content, std::int64_t threads, double sigma) {
    const Mapping mapping = metric == Metric::Logit ? Mapping::logit(std::max(kLogitPad, 10.0 * sigma)) : Mapping::l1();
    const double grid_sigma = sigma / mapping.span;
    const bool fixed = sigma > 0.0 && grid_sigma >= kDirectMinSigma;
    const std::int64_t intervals = fixed ? intervals_for_sigma(grid_sigma) : first_intervals(in.size(), mapping, content);
    if (mapping.is_logit() && !fixed) {
        // The logit axis spans 75 logit units: a first grid of 2^16–2^17
        // intervals for 1e3–1e5 rows, whose pass and σ* search cost more than
        // a look for few distinct predictions (it stops at its first row past
        // kMaxFewAtoms of them). Found, they are summarised (and σ* solved)
        // from their atoms.
        const int weight_exp = weight_exponent_of(in);
        auto rows = std::make_shared<ArrayRows>(in, mapping, weight_exp);
        // (Weights that sum to zero go on to the pass, which refuses them.)
        if (const Atoms* atoms = rows->few_atoms(kMaxFewAtoms, threads); atoms && atoms->total_weight_scaled() > 0.0)
            return Analysis(summarise_atoms(*atoms, content, intervals), std::move(rows));
        Summary summary = summarise_rows(in, PassOptions{mapping, content, intervals, threads, false});
        if (summary.weight_exp != weight_exp) throw std::logic_error("the pass and the look scaled the weights apart");
        return Analysis(std::move(summary), std::move(rows));
    }
    Summary summary = summarise_rows(in, PassOptions{mapping, content, intervals, threads, false});
    const int weight_exp = summary.weight_exp;
    return Analysis(std::move(summary), rows_of_arrays(in, mapping, weight_exp));
}

double Analysis::finest_fixed_sigma(Metric metric) {
    return kDirectMinSigma * (metric == Metric::Logit ? Mapping::logit() : Mapping::l1()).span;
}

ResidualLevels& Analysis::levels() {
    if (!levels_) levels_ = std::make_unique<ResidualLevels>(summary_.residual, summary_.intervals);
    return *levels_;
}

double Analysis::atoms_smece(const Atoms& atoms, double sigma) const {
    return exact_abs_integral(atoms.x, residuals_of(atoms), sigma) / atoms.total_weight_scaled();
}

Summary Analysis::residual_on(std::int64_t intervals, std::int64_t threads) {
    if (rows_) return rows_->summarise(Content::Residual, intervals, threads);
    return summary_.restricted(std::min(intervals, summary_.intervals), true);
}

SigmaStar Analysis::smece(std::int64_t threads) {
    if (sigma_star_) return *sigma_star_;
    const double s = scale(), tol = kTolerance;
    // The first guess: σ* ≥ smECE_∞ = |mean residual| (smECEσ ≥ |∫ r̂σ|), and for
    // calibrated data σ* sits near its noise floor 0.3·n^(−1/3).
    const double floor = 0.3 / std::cbrt(std::max(1.0, static_cast<double>(summary_.positive_rows))) / s;
    Fixpoint fix;
    // σ* from exact atoms, the search started at `start`.
    auto exactly = [&](const Atoms& atoms, double start) {
        const std::vector<double> residual = residuals_of(atoms);
        const double total = atoms.total_weight_scaled();
        auto smece_at = [&](double sigma) { return exact_abs_integral(atoms.x, residual, sigma) / total; };
        exact_ = &atoms;
        // Residuals of one sign (a base rate, one atom): a positive kernel
        // keeps the sign, so smECEσ = |Σ r|/W at every σ and σ* is that.
        double net = 0.0;
        bool positive = false, negative = false;
        for (const double r : residual) {
            net += r;
            positive = positive || r > 0.0;
            negative = negative || r < 0.0;
        }
        if (!(positive && negative)) {
            const double star = std::abs(net) / total / s;
            fix = Fixpoint{star, true, star, star, 0};
            return;
        }
        fix = solve_fixpoint(smece_at, s, kExactLimit, start, {tol});
        if (!fix.resolved) fix = Fixpoint{0.0, true, 0.0, kExactLimit, fix.evaluations};  // σ* < 1e-300: zero
    };
    const Atoms* known = rows_ && summary_.mapping.is_logit() ? rows_->known_atoms() : nullptr;
    if (known && known->size() <= kExactFirstAtoms) {
        double net = 0.0;
        for (const double r : residuals_of(*known)) net += r;
        exactly(*known, std::max(floor, std::abs(net) / known->total_weight_scaled() / s));
        // Replicates draw from the atoms alone where σ* lies below the grid,
        // as where the grid's search sends it to them.
        if (fix.sigma >= summary_.min_sigma()) exact_ = nullptr;
        sigma_star_ = SigmaStar{fix.sigma * s, fix.resolved, fix.lower * s, fix.upper * s};
        return *sigma_star_;
    }
    const double guess = std::max(floor, levels().net() / summary_.weight / s);
    auto on_grid = [this](double sigma) { return levels().integral(sigma) / summary_.weight; };
    fix = solve_fixpoint(on_grid, s, levels().min_sigma(), guess, {tol});
    if (!fix.resolved && rows_) {
        // σ* lies below the grid: a second look at the rows, from within the bracket.
        auto inside = [&fix] { return fix.lower > 0.0 ? std::sqrt(fix.lower * fix.upper) : 0.5 * fix.upper; };
        if (const Atoms* atoms = rows_->few_atoms(kMaxFewAtoms, threads)) {
            exactly(*atoms, inside());
        } else {
            while (!fix.resolved && summary_.intervals < kMaxIntervals) {
                const std::int64_t g = std::min(
                    kMaxIntervals, std::max(2 * summary_.intervals, intervals_for_sigma(std::max(fix.lower, 1e-300))));
                if (g > kMaxSecondLookIntervals && static_cast<std::uint64_t>(g) > summary_.rows) break;  // the atoms cost less
                summary_ = rows_->summarise(summary_.content, g, threads);
                levels_.reset();
                fix = solve_fixpoint(on_grid, s, levels().min_sigma(), fix.upper, {tol});
            }
            if (!fix.resolved) exactly(rows_->all_atoms(), inside());
        }
    }
    if (!fix.resolved) {
        // σ* ≤ smECEσ* ≤ smECE₀ = E|y − f| (≤ 1): a bound the totals give, below
        // a coarse grid's smallest σ (a logit grid of 256 intervals resolves only σ ≥ 4.7).
        double mean_abs = 1.0;
        if (summary_.full()) {
            double sum = 0.0;
            for (std::size_t j = 0; j < summary_.w1.size(); ++j) sum += summary_.w1[j] - summary_.f1[j] + summary_.f0[j];
            mean_abs = std::min(1.0, std::max(0.0, sum / summary_.weight));
        }
        fix.upper = fix.sigma = std::min(fix.upper, mean_abs / s);
        fix.lower = std::min(fix.lower, fix.upper);
    }
    sigma_star_ = SigmaStar{fix.sigma * s, fix.resolved, fix.lower * s, fix.upper * s};
    return *sigma_star_;
}

SmeceValue Analysis::smece_sigma(double sigma, std::int64_t threads) {
    const double s = sigma / scale();
    if (s >= summary_.min_sigma()) return {levels().integral(s) / summary_.weight, true};
    if (!rows_) {
        // Below a sketch's grid with no rows kept: smECEσ is at least its value
        // at the smallest σ resolved (it is non-increasing in σ).
        return {levels().integral(summary_.min_sigma()) / summary_.weight, false};
    }
    if (const Atoms* atoms = rows_->few_atoms(kMaxFewAtoms, threads)) return {atoms_smece(*atoms, s), true};
    if (s >= kDirectMinSigma) {
        const Summary fine = rows_->summarise(Content::Residual, intervals_for_sigma(s), threads);
        ResidualLevels finer(fine.residual, fine.intervals);
        return {finer.integral(s) / fine.weight, true};
    }
    return {atoms_smece(rows_->all_atoms(), s), true};
}

DiagramCurves Analysis::curves(double sigma, std::int64_t mesh_intervals, std::int64_t threads) {
    if (!summary_.full()) throw std::logic_error("the diagram needs a full summary");
    double reported = sigma;
    if (!(sigma > 0.0)) reported = smece(threads).sigma;
    const double draw = std::max(reported / scale(), summary_.min_sigma());
    DiagramCurves out = curves_at(summary_, draw, mesh_intervals);
    out.sigma = reported;
    // smECEσ by the code of smece_sigma itself, so the two agree to the bit.
    out.smece_sigma = sigma > 0.0 ? smece_sigma(sigma, threads).value : std::numeric_limits<double>::quiet_NaN();
    return out;
}

Replicates Analysis::replicates(ResampleKind kind, std::int64_t count, std::uint64_t seed, double band_sigma,
                                std::int64_t mesh_intervals, WeightKind weights, bool at_band,
                                std::int64_t threads, double band_level) {
    if (!summary_.full()) throw std::logic_error("resampling needs a full summary");
    const SigmaStar star = smece(threads);
    const Atoms* atoms = exact_;
    if (!atoms && rows_ && summary_.rows <= kExactResampleRows) atoms = rows_->few_atoms(kMaxFewAtoms, threads);
    ResampleRequest req;
    req.kind = kind;
    req.count = count;
    req.seed = seed;
    req.band_sigma = std::max(band_sigma / scale(), atoms ? kExactLimit : summary_.min_sigma());
    req.mesh_intervals = mesh_intervals;
    req.at_band = at_band;
    req.band_level = band_level;
    req.weights = weights;
    req.threads = threads;
    if (kind == ResampleKind::Bootstrap) req.hint = std::max(star.sigma / scale(), atoms ? kExactLimit : summary_.min_sigma());
    // The band σ is what the caller asked for only where the replicates resolve it.
    const bool band_resolved = band_sigma / scale() >= (atoms ? kExactLimit : summary_.min_sigma()) * (1.0 - 1e-12);
    Replicates out;
    if (atoms) {
        const std::int64_t band = std::min(summary_.intervals, intervals_for_sigma(std::max(req.band_sigma, summary_.min_sigma())));
        out = resample(*atoms, req, band);
    } else if (const Atoms* few = rows_ && few_cells(summary_) ? rows_->few_atoms(kMaxFewAtoms, threads) : nullptr;
               few && resample_from_atoms(*few, summary_, req)) {
        // Few atoms (discrete forecasts): the same draws, each replicate
        // solved from the atoms (resample_from_atoms says where), every atom
        // with its own draw.
        out = resample(*few, summary_, req);
    } else {
        out = resample(summary_, req);
    }
    out.band_resolved = band_resolved;
    return out;
}

double Analysis::min_resampled_sigma() {
    const bool atoms = exact_ || (rows_ && summary_.rows <= kExactResampleRows &&
                                  rows_->few_atoms(kMaxFewAtoms, 1) != nullptr);
    return atoms ? 0.0 : summary_.min_sigma() * scale();
}

void Analysis::sample(std::int64_t size, std::uint64_t seed, std::vector<double>& f, std::vector<double>& y) {
    if (rows_) return rows_->sample(size, seed, f, y);
    // A grid-form sketch: rows drawn per resampling cell, each at its cell's mean prediction.
    f.clear();
    y.clear();
    const ResampleCells& cells = summary_.cells;
    std::vector<double> cumulative(cells.slots());
    double total = 0.0;
    for (std::size_t k = 0; k < cells.slots(); ++k) cumulative[k] = total += cells.rows[k];
    draw_slots(cumulative, size, seed, [&](std::size_t slot) {
        f.push_back(cells.weight[slot] > 0.0 ? cells.weight_f[slot] / cells.weight[slot] : 0.5);
        y.push_back(static_cast<double>(slot % 2));
    });
}

}  // namespace smoothece
