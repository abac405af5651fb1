// The scan for dips of r̂σ between two nodes (integrate_abs.cpp): where r
// dips to the other side of zero inside a cell whose nodes lie on one side.
// any_dip is a kernel source (runtime/kernels.hpp): compiled once per
// instruction set, the build for this CPU chosen at run time.
#pragma once

#include <cmath>
#include <cstdint>

#include "runtime/kernels.hpp"

namespace smoothece {

// The derivative q(s) = r0 + qb·s + qa·s² on cell [j, j+1] of the cubic
// Hermite interpolant of F (values F, slopes r), with inv_h = 1/h.
inline void dip_quadratic(const double* r, const double* F, std::int64_t j, double inv_h, double& qa, double& qb) {
    const double r0 = r[j], r1 = r[j + 1], d = (F[j + 1] - F[j]) * inv_h;
    qa = 3.0 * (r0 + r1) - 6.0 * d;
    qb = 6.0 * d - 4.0 * r0 - 2.0 * r1;
}

// Whether q dips to the other side of zero inside the cell while r0 and r1
// lie beyond `noise` on one side: it curves back (qa·r0 > 0) to a vertex in
// (0, 1) (qa·qb < 0, |qb| < 2|qa|) beyond zero (qb² > 4qa·r0). Products
// only, no division: any_dip's AVX2 loop does the same operations.
inline bool cell_holds_dip(const double* r, const double* F, std::int64_t j, double inv_h, double noise) {
    const double r0 = r[j], r1 = r[j + 1];
    double qa, qb;
    dip_quadratic(r, F, j, inv_h, qa, qb);
    return (r0 * r1 > 0.0) & (std::fabs(r0) > noise) & (std::fabs(r1) > noise) & (qa * r0 > 0.0) &
           (qa * qb < 0.0) & (std::fabs(qb) < 2.0 * std::fabs(qa)) & (qb * qb > (4.0 * qa) * r0);
}

// any_dip: whether a cell [j, j+1], begin ≤ j < end, holds a dip of r to the
// other side of zero (cell_holds_dip, operation for operation).
#define SMOOTHECE_DECLARE_DIP_KERNEL(ns)                                                                   \
    namespace ns {                                                                                     \
    bool any_dip(const double* r, const double* F, std::int64_t begin, std::int64_t end, double inv_h,  \
                 double noise);                                                                        \
    }
SMOOTHECE_EACH_KERNEL_BUILD(SMOOTHECE_DECLARE_DIP_KERNEL)

}  // namespace smoothece
