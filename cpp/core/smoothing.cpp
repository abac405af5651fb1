#include "smoothing.hpp"

#include <fftw3.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <mutex>
#include <stdexcept>

namespace smoothece {
namespace {

// FFTW planning is not thread-safe; execution of an existing plan on new
// arrays is. Plans are made once per size under this lock and kept for the
// life of the process (never destroyed: no static-destruction ordering).
fftw_plan r2r_plan(std::int64_t n, fftw_r2r_kind kind) {
    static std::mutex mutex;
    static std::map<std::pair<std::int64_t, int>, fftw_plan> plans;
    std::lock_guard<std::mutex> lock(mutex);
    const auto key = std::make_pair(n, static_cast<int>(kind));
    auto it = plans.find(key);
    if (it != plans.end()) return it->second;
    FftwBuffer in(n), out(n);
    fftw_plan p = fftw_plan_r2r_1d(static_cast<int>(n), in.data(), out.data(), kind, FFTW_ESTIMATE);
    if (!p) throw std::runtime_error("FFTW could not plan a real transform of size " + std::to_string(n));
    plans.emplace(key, p);
    return p;
}

// fftw_execute_r2r takes non-const input; these out-of-place r2r transforms
// leave it intact.
void dct1(const double* in, double* out, std::int64_t n) {
    fftw_execute_r2r(r2r_plan(n, FFTW_REDFT00), const_cast<double*>(in), out);
}
void dst1(const double* in, double* out, std::int64_t n) {
    fftw_execute_r2r(r2r_plan(n, FFTW_RODFT00), const_cast<double*>(in), out);
}

}  // namespace

FftwBuffer::FftwBuffer(std::int64_t size)
    : ptr_(static_cast<double*>(fftw_malloc(sizeof(double) * static_cast<std::size_t>(size)))), size_(size) {
    if (!ptr_) throw std::bad_alloc();
}

void FftwBuffer::Free::operator()(double* p) const { fftw_free(p); }

SmoothedMasses::SmoothedMasses(const double* masses, std::int64_t intervals)
    : intervals_(intervals), spectrum_(intervals + 1) {
    if (intervals < 1) throw std::invalid_argument("smoothing needs at least one grid interval");
    FftwBuffer doubled(intervals + 1);
    for (std::int64_t j = 0; j <= intervals; ++j) doubled.data()[j] = masses[j];
    doubled.data()[0] *= 2.0;
    doubled.data()[intervals] *= 2.0;
    dct1(doubled.data(), spectrum_.data(), intervals + 1);
}

void SmoothedMasses::evaluate(double sigma, double* values, double* antiderivative) const {
    const std::int64_t g = intervals_;
    FftwBuffer coeff(g + 1), out(g + 1);
    const double* s = spectrum_.data();
    double* z = coeff.data();
    // z_k: the cosine coefficients of the smoothed function, r(t) = z_0 + 2 Σ_{k≥1} z_k cos(πkt).
    const double c = -0.5 * M_PI * M_PI * sigma * sigma;
    for (std::int64_t k = 0; k <= g; ++k) {
        const double e = c * static_cast<double>(k) * static_cast<double>(k);
        z[k] = e > -700.0 ? 0.5 * s[k] * std::exp(e) : 0.0;  // below e^-700 the term is 0 to double precision
    }
    dct1(z, out.data(), g + 1);
    std::copy(out.data(), out.data() + g + 1, values);
    if (!antiderivative) return;
    // F(t) = z_0 t + 2 Σ_{k=1}^{G-1} z_k sin(πkt)/(πk); at the nodes the sum
    // is a DST-I of the G − 1 interior coefficients (z_G is below e^-700).
    FftwBuffer sine(g - 1), sums(g - 1);
    for (std::int64_t k = 1; k < g; ++k) sine.data()[k - 1] = z[k] / (M_PI * static_cast<double>(k));
    dst1(sine.data(), sums.data(), g - 1);
    antiderivative[0] = 0.0;
    for (std::int64_t j = 1; j < g; ++j)
        antiderivative[j] = z[0] * static_cast<double>(j) / static_cast<double>(g) + sums.data()[j - 1];
    antiderivative[g] = z[0];
}

std::vector<double> smooth_masses(const std::vector<double>& masses, double sigma) {
    const auto intervals = static_cast<std::int64_t>(masses.size()) - 1;
    std::vector<double> out(masses.size());
    SmoothedMasses(masses.data(), intervals).evaluate(sigma, out.data(), nullptr);
    return out;
}

}  // namespace smoothece
