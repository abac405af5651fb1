// What a replicate draws for one resampling group (a run of cells of a grid
// summary, or one atom): a bootstrap factor per label, or a consistency
// replicate's positive weight, each from the replicate's own stream.
// Shared by the replicates of grid summaries (grid_replicates.cpp) and of
// atoms (atom_replicates.cpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "resampling/resample.hpp"
#include "runtime/random.hpp"

namespace smoothece {

// The stream replicate b of a kind draws from (with the request's seed):
// kinds in the top two bits, so bootstrap and consistency replicates never
// share one.
inline std::uint64_t stream_of(ResampleKind kind, std::int64_t replicate) {
    return (static_cast<std::uint64_t>(kind) << 62) | static_cast<std::uint64_t>(replicate);
}


// Σ wᵢEᵢ over a group (Eᵢ ~ Exp(1)) as a multiple of Σw: Gamma with mean Σw
// and variance Σw² (importance weights), or Gamma(Σw) for frequency weights
// (the group holds Σw rows; the weights are scaled by 2^weight_exp). The
// gamma's constants are found once per group, as for ConsistencyDraw.
class BootstrapDraw {
public:
    BootstrapDraw(double weight, double weight_sq, int weight_exp, WeightKind kind) {
        if (!(weight > 0.0)) return;
        shape_ = kind == WeightKind::Frequency ? std::ldexp(weight, -weight_exp) : weight * weight / weight_sq;
        // Weights below ~1e-154 of the largest square to nothing: (Σw)²/Σw²,
        // between 1 and the group's rows, is then unknown, and the group (of no
        // influence next to the others) draws as one row, the widest it can
        // (its consistency draw too: ConsistencyDraw::effective_rows).
        if (!(shape_ > 0.0) || !std::isfinite(shape_)) shape_ = 1.0;
        gamma_ = Gamma(shape_);
    }

    double operator()(RandomStream& rng) const { return shape_ > 0.0 ? gamma_(rng) / shape_ : 1.0; }

private:
    double shape_ = 0.0;  // 0: no weight, the factor is 1
    Gamma gamma_{1.0};
};

// A group's positive weight Σ wᵢBᵢ, Bᵢ ~ Bernoulli(f̄), as a multiple of its
// mean f̄Σw: Binomial for equal weights (or frequency weights), by its table
// where that is small, else a Beta with the right mean and variance
// f̄(1 − f̄)Σw². The route and its constants are found once per group; every
// replicate then only draws.
class ConsistencyDraw {
public:
    // Tables where each is drawn this often (one costs about as much as
    // 50 BTRD draws: ~10 ns a value, ~400 values), up to this many values in
    // all (16 MB; calibrated data at 1e7 rows needs ~1e6).
    static constexpr std::int64_t kTableDraws = 64;
    static constexpr std::size_t kTableValues = std::size_t{1} << 21;
    static std::size_t table_budget(std::int64_t draws) { return draws >= kTableDraws ? kTableValues : 0; }

    ConsistencyDraw() = default;
    // table_values: how many values the tables of this resampling may still
    // hold (0: none, when few replicates draw); a table's size is taken from it.
    ConsistencyDraw(double rows, double weight, double weight_sq, double weight_f, int weight_exp, WeightKind kind,
                    std::size_t& table_values) {
        if (!(weight > 0.0) || !(weight_f > 0.0)) return;
        p_ = std::min(1.0, weight_f / weight);
        if (p_ >= 1.0) return;
        n_ = effective_rows(rows, weight, weight_sq, weight_exp, kind);
        if (binomial_rows(n_)) {
            if (table_values > 0) {
                table_ = BinomialTable(static_cast<std::int64_t>(n_), p_);
                if (table_.size() <= table_values) {
                    table_values -= table_.size();
                } else {  // the budget is spent: this group and the rest draw by BTRD
                    table_ = BinomialTable();
                    table_values = 0;
                    over_budget_ = true;
                }
            }
            route_ = table_.tabulated() ? Route::Table : Route::Binomial;
            per_positive_ = 1.0 / (n_ * p_);
            if (route_ == Route::Binomial) binomial_ = Binomial(static_cast<std::int64_t>(n_), p_);
        } else {
            route_ = n_ <= 1.0 + 1e-12 ? Route::Bernoulli : Route::Beta;
        }
    }

    // The tabulated route (BinomialTable) takes exactly one word, so a
    // replicate can draw it first and look it up later (from_word).
    bool tabulated() const { return route_ == Route::Table; }
    std::size_t table_values() const { return table_.size(); }
    bool over_budget() const { return over_budget_; }  // its table did not fit what was left
    // Draws by BTRD instead: what a table beyond the budget does.
    void drop_table() {
        table_ = BinomialTable();
        route_ = Route::Binomial;
        binomial_ = Binomial(static_cast<std::int64_t>(n_), p_);
    }
    // About how many values a table of this group would hold: its binomial's
    // ±9.9 sd, where f(k)/f(mode) falls below 2^−70 (0 for the other routes).
    static double table_estimate(double rows, double weight, double weight_sq, double weight_f, int weight_exp,
                                 WeightKind kind) {
        if (!(weight > 0.0) || !(weight_f > 0.0)) return 0.0;
        const double p = std::min(1.0, weight_f / weight), n = effective_rows(rows, weight, weight_sq, weight_exp, kind);
        return binomial_rows(n) ? 20.0 * std::sqrt(n * p * (1.0 - p)) + 2.0 : 0.0;
    }
    double from_word(std::uint64_t word) const { return static_cast<double>(table_.at(word)) * per_positive_; }
    const BinomialTable& table() const { return table_; }

    double operator()(RandomStream& rng) const {
        double positive;
        switch (route_) {
        case Route::Fixed: return 1.0;
        case Route::Table: return from_word(rng.next_u64());
        case Route::Binomial: positive = static_cast<double>(binomial_(rng)) / n_; break;
        case Route::Bernoulli: positive = rng.uniform() < p_ ? 1.0 : 0.0; break;
        default: positive = rng.beta(p_ * (n_ - 1.0), (1.0 - p_) * (n_ - 1.0));
        }
        return positive / p_;
    }

private:
    // The rows a group's positive weight counts as Binomial or Beta draws of.
    static double effective_rows(double rows, double weight, double weight_sq, int weight_exp, WeightKind kind) {
        if (kind == WeightKind::Frequency) return std::ldexp(weight, -weight_exp);
        const double n = weight * weight / weight_sq;
        if (!(n > 0.0) || !std::isfinite(n)) return 1.0;  // weights too small to square: as one row (BootstrapDraw)
        return std::fabs(n - rows) <= 1e-9 * rows ? rows : n;  // equal weights: rows exactly
    }
    // Whole rows: the Binomial routes (table or BTRD), else Bernoulli or Beta.
    static bool binomial_rows(double n) { return n == std::floor(n) && n < 9.0e15; }

    enum class Route { Fixed, Table, Binomial, Bernoulli, Beta };
    Route route_ = Route::Fixed;
    bool over_budget_ = false;
    double p_ = 1.0, n_ = 0.0;
    double per_positive_ = 0.0;  // 1/(np): the table's value as a multiple of its mean (no division a draw)
    BinomialTable table_;
    Binomial binomial_{0, 0.0};
};

}  // namespace smoothece
