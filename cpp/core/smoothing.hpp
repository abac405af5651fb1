// Step 2: reflected-Gaussian smoothing of node masses by FFTW's DCT-I.
//
// Masses m_j at nodes t_j = j/G, j = 0..G, smoothed with the reflected kernel
// K̃σ(t, x) = Σ_k φσ(t − x − 2k) + φσ(t + x − 2k) are a circular convolution of
// the mirror-extended masses (period 2) with the periodized Gaussian. The DFT
// of an even sequence of period 2G is the DCT-I (REDFT00) of its first G + 1
// entries, and the periodized Gaussian has the closed-form spectrum
// G·exp(−π²k²σ²/2) (its aliases at k ± 2G are below 1e-130 of it once σG ≥ 8). So
//   Σ_j m_j K̃σ(t_k, t_j) = ½ · DCT-I( DCT-I(m̃) · exp(−π²k²σ²/2) )_k,
// with m̃ the masses with the two end nodes doubled (a mass at 0 or 1 is its
// own mirror image). This is exact for the binned masses: no kernel
// truncation, no sampling of the kernel. Requires σG ≥ 8 (smece.hpp keeps
// σG ≥ 64), so that the spectrum has decayed to 0 before k = G.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace smoothece {

// A buffer from fftw_malloc, so every array has the alignment plans assume.
class FftwBuffer {
public:
    explicit FftwBuffer(std::int64_t size);
    double* data() { return ptr_.get(); }
    const double* data() const { return ptr_.get(); }
    std::int64_t size() const { return size_; }

private:
    struct Free { void operator()(double* p) const; };
    std::unique_ptr<double, Free> ptr_;
    std::int64_t size_;
};

// The spectrum of one set of node masses; smoothing at any σ then costs one
// multiply and one inverse transform. Immutable after construction, so one
// instance may be used from several threads.
class SmoothedMasses {
public:
    SmoothedMasses(const double* masses, std::int64_t intervals);

    std::int64_t intervals() const { return intervals_; }
    // Writes r(t_k) = Σ_j m_j K̃σ(t_k, t_j) for k = 0..G into values[0..G]
    // and, unless antiderivative is null, F(t_k) = ∫₀^{t_k} r into
    // antiderivative[0..G] (from the same spectrum: a DST-I). Needs G ≥ 2.
    void evaluate(double sigma, double* values, double* antiderivative) const;

private:
    std::int64_t intervals_;
    FftwBuffer spectrum_;
};

// Σ_j m_j K̃σ(t_k, t_j) for one σ without keeping the spectrum.
std::vector<double> smooth_masses(const std::vector<double>& masses, double sigma);

}  // namespace smoothece
