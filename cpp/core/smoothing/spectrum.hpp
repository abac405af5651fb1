// Step 2: smoothing node masses with the reflected Gaussian, by FFTW.
//
// Masses m_j at nodes t_j = j/G, j = 0..G, smoothed with the reflected kernel
// K̃σ(t, x) = Σ_k φσ(t − x − 2k) + φσ(t + x − 2k) are a circular convolution
// (period 2) of the mirror-extended sequence s (length 2G: m_0 and m_G, their
// own mirror images, doubled) with the periodized Gaussian, whose Fourier
// coefficients are exp(−π²k²σ²/2) exactly. So with S = DFT(s) (real, as s is
// even), the smoothed function and its antiderivative at the nodes are
//   r(t_j) = ½ Σ_k ĝ_k S_k e^{iπkj/G},   F(t_j) = ∫₀^{t_j} r = ½ (S_0 t_j + Σ_{k≥1} 2 ĝ_k S_k sin(πk t_j)/(πk)),
// both read off ONE complex-to-real transform: r is its even part, the sine
// series its odd part. Exact for the binned masses: no kernel truncation, no
// sampling of the kernel. Needs σG ≥ 8 (the grid policy keeps σG ≥ 16), so
// that the spectrum has decayed to nothing before k = G.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace smoothece {

// A buffer from fftw_malloc, so every array has the alignment plans assume.
class FftwBuffer {
public:
    explicit FftwBuffer(std::int64_t doubles = 0);
    double* data() { return ptr_.get(); }
    const double* data() const { return ptr_.get(); }
    std::int64_t size() const { return size_; }

private:
    struct Free {
        void operator()(double* p) const;
    };
    std::unique_ptr<double, Free> ptr_;
    std::int64_t size_ = 0;
};

// The spectrum of one set of node masses: smoothing at any σ then costs a
// multiply and one inverse transform. Immutable after construction, so one
// instance may be used from several threads.
class Spectrum {
public:
    Spectrum(const double* masses, std::int64_t intervals);

    std::int64_t intervals() const { return intervals_; }
    double total() const { return coeff_[0] / 2.0; }  // Σ masses
    // r(t_j) into values[0..M] and, unless null, F(t_j) into
    // antiderivative[0..M], on the grid of M = out_intervals (0 means G)
    // intervals: the same smooth function read off at other nodes, exactly
    // (on a coarser grid the spectrum beyond M folds onto 0..M).
    void evaluate(double sigma, double* values, double* antiderivative, std::int64_t out_intervals = 0) const;

private:
    std::int64_t intervals_;
    // S_k, k = 0..G (real parts; the imaginary parts vanish). Not a vector:
    // each is written once, and zeroing them first cost 6% of a replicate.
    std::unique_ptr<double[]> coeff_;
};

// Read-off grids have at least this many intervals: at σ ≳ 0.1, 8 nodes per σ
// (16 intervals at σ = 0.5) place the roots of r 1.3e-6 off in smECEσ (two
// rows, against the exact integral), 64 intervals 2e-8; a replicate's 3 per σ
// would give a one-row calibration test null values 5e-5 off. Such grids cost
// nothing.
constexpr std::int64_t kMinReadIntervals = 64;

// The part of a grid of g intervals that masses on nodes first … last reach,
// padded by 10σ on each side for every σ up to sigma_max, as a grid of its
// own whose ends mirror as the grid's do: beyond the pad a Gaussian of σ ≤
// sigma_max carries less than Φ(−10) ≈ 8e-24 of a mass, so ends that are not
// the grid's change nothing beyond rounding. Its ends are nodes of a read-off
// grid of band_out intervals over the axis too (0: none). The whole grid
// where a window would not be much shorter, or no node holds mass.
struct GridWindow {
    std::int64_t first = 0, intervals = 0;  // nodes first … first + intervals of the grid
    double sigma_max = 0.0;
    double scale = 1.0;  // σ on the window's own grid, and densities per the grid's unit: times scale
    std::int64_t band_first = 0, band_intervals = 0;  // its nodes on the band's read-off grid
    bool whole = true;

    static GridWindow whole_grid(std::int64_t g, double sigma_max);
};
GridWindow window_of(std::int64_t g, std::int64_t first, std::int64_t last, double sigma_max,
                     std::int64_t band_out = 0);

// The fewest intervals M ≥ at_least (at least kMinReadIntervals, at most `most`) among the
// read-off grids whose transform (length 2M) FFTW runs fastest per node:
// M = 2^k, 9·2^k/8, 5·2^k/4 or 3·2^k/2, about as cheap per node as powers of
// two (other 5-smooth sizes cost up to twice as much: bench/results/fft_plans.md).
// Spectrum::evaluate reads exact samples at any M, so a σ wanting 267 nodes
// reads 288, not 512.
std::int64_t read_intervals(double at_least, std::int64_t most);

}  // namespace smoothece
