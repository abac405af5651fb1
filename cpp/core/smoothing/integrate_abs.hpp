// ∫ |r| of a smoothed function from its values and antiderivative at the
// nodes of a grid (Spectrum::evaluate reads off both): exact for the cubic
// Hermite interpolant of the antiderivative.
#pragma once

#include <cstdint>

namespace smoothece {

// ∫ |r| over [t_begin, t_end] (node indices) from r and its antiderivative
// F at the nodes j/G: the sum over sign-constant pieces of |F(end) − F(start)|,
// with the roots inside sign-change cells located on the cubic Hermite
// interpolant of F; where r dips to the other side of zero between two nodes,
// that dip on the same interpolant. No quadrature error and no error from the
// kinks of |r|.
double integrate_abs(const double* r, const double* F, std::int64_t begin, std::int64_t end, std::int64_t intervals);

}  // namespace smoothece
