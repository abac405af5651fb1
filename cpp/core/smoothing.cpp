#include "smoothing.hpp"

#include <fftw3.h>

#include <cmath>
#include <map>
#include <mutex>
#include <stdexcept>

namespace smoothece {
namespace {

// FFTW planning is not thread-safe; execution of an existing plan on new
// arrays is. Plans are made once per size under this lock and kept for the
// life of the process (never destroyed: no static-destruction ordering).
fftw_plan dct1_plan(std::int64_t n) {
    static std::mutex mutex;
    static std::map<std::int64_t, fftw_plan> plans;
    std::lock_guard<std::mutex> lock(mutex);
    auto it = plans.find(n);
    if (it != plans.end()) return it->second;
    FftwBuffer in(n), out(n);
    fftw_plan p = fftw_plan_r2r_1d(static_cast<int>(n), in.data(), out.data(), FFTW_REDFT00, FFTW_ESTIMATE);
    if (!p) throw std::runtime_error("FFTW could not plan a DCT-I of size " + std::to_string(n));
    plans.emplace(n, p);
    return p;
}

void dct1(const double* in, double* out, std::int64_t n) {
    // fftw_execute_r2r takes non-const input; REDFT00 out of place leaves it intact.
    fftw_execute_r2r(dct1_plan(n), const_cast<double*>(in), out);
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

void SmoothedMasses::evaluate(double sigma, double* out) const {
    const std::int64_t n = intervals_ + 1;
    FftwBuffer product(n), result(n);
    const double* s = spectrum_.data();
    double* z = product.data();
    const double c = -0.5 * M_PI * M_PI * sigma * sigma;
    for (std::int64_t k = 0; k < n; ++k) {
        const double e = c * static_cast<double>(k) * static_cast<double>(k);
        z[k] = e > -700.0 ? 0.5 * s[k] * std::exp(e) : 0.0;  // below e^-700 the term is 0 to double precision
    }
    dct1(z, result.data(), n);
    for (std::int64_t k = 0; k < n; ++k) out[k] = result.data()[k];
}

std::vector<double> smooth_masses(const std::vector<double>& masses, double sigma) {
    const auto intervals = static_cast<std::int64_t>(masses.size()) - 1;
    std::vector<double> out(masses.size());
    SmoothedMasses(masses.data(), intervals).evaluate(sigma, out.data());
    return out;
}

}  // namespace smoothece
