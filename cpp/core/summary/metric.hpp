// Where a prediction sits on the grid [0, 1], for each metric.
//
// "l1" (the paper's Definition 3): the grid is [0, 1] itself and the kernel
// is the Gaussian reflected at 0 and 1. "logit" (Section 5.3): the grid is
// logit space, [−L, L] with L = logit(1 − ε) + pad, mapped onto [0, 1]; with
// pad ≥ 10σ the reflections at its ends change the integral by less than
// Φ(−10) ≈ 1e-23, so the reflected kernel there is the plain Gaussian on ℝ.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace smoothece {

enum class Metric : std::uint8_t { L1 = 0, Logit = 1 };

inline const char* metric_name(Metric metric) { return metric == Metric::Logit ? "logit" : "l1"; }

// Predictions are clamped into [ε, 1 − ε] before the logit, so rows at
// exactly 0 or 1 sit at logit ∓27.63.
constexpr double kLogitEpsilon = 1e-12;
// Margin of the logit grid beyond ±logit(1 − ε): ≥ 10σ for every σ ≤ 1 logit
// unit, which covers every SmoothECE (σ* ≤ 1 since smECEσ ≤ 1).
constexpr double kLogitPad = 10.0;

struct Mapping {
    Metric metric = Metric::L1;
    double lo = 0.0;    // left end of the grid, in the metric's units
    double span = 1.0;  // length of the grid: σ in metric units = span · σ on the grid

    static Mapping l1() { return {}; }
    static Mapping logit(double pad = kLogitPad) {
        const double edge = std::log((1.0 - kLogitEpsilon) / kLogitEpsilon) + pad;
        return {Metric::Logit, -edge, 2.0 * edge};
    }
    bool is_logit() const { return metric == Metric::Logit; }

    // Grid position of a prediction f already clamped into [0, 1].
    double position(double f) const {
        if (!is_logit()) return f;
        const double p = std::min(std::max(f, kLogitEpsilon), 1.0 - kLogitEpsilon);
        return (std::log(p) - std::log1p(-p) - lo) / span;
    }
    // The prediction at a grid position (inverse of position, up to the clamp).
    double prediction(double x) const {
        if (!is_logit()) return x;
        return 1.0 / (1.0 + std::exp(-(lo + x * span)));
    }
    bool operator==(const Mapping& o) const { return metric == o.metric && lo == o.lo && span == o.span; }
    bool operator!=(const Mapping& o) const { return !(*this == o); }
};

}  // namespace smoothece
