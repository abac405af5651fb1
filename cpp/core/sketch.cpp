#include "sketch.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>

namespace smoothece {
namespace {

constexpr char kMagic[8] = {'S', 'M', 'E', 'C', 'E', 'S', 'K', '\0'};
constexpr std::uint32_t kVersion = 1;
constexpr std::size_t kHeaderBytes = 64;

bool is_power_of_two(std::int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// FNV-1a, 64 bit: detects the flips and truncations a transport may cause
// (not an authenticity check).
std::uint64_t fnv1a(const char* data, std::size_t size) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (std::size_t i = 0; i < size; ++i) {
        h ^= static_cast<unsigned char>(data[i]);
        h *= 0x100000001b3ULL;
    }
    return h;
}

bool little_endian() {
    const std::uint16_t one = 1;
    unsigned char first;
    std::memcpy(&first, &one, 1);
    return first == 1;
}

class Writer {
public:
    template <class T>
    void put(const T& v) {
        const auto* p = reinterpret_cast<const char*>(&v);
        out.append(p, sizeof(T));
    }
    template <class T>
    void put_array(const std::vector<T>& v) {
        out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
    }
    std::string out;
};

class Reader {
public:
    Reader(const std::string& s, std::size_t end) : s_(s), end_(end) {}
    template <class T>
    T get() {
        T v;
        need(sizeof(T));
        std::memcpy(&v, s_.data() + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }
    template <class T>
    void get_array(std::vector<T>& v, std::size_t n) {
        need(n * sizeof(T));
        v.resize(n);
        std::memcpy(v.data(), s_.data() + pos_, n * sizeof(T));
        pos_ += n * sizeof(T);
    }
    std::size_t pos() const { return pos_; }

private:
    void need(std::size_t n) const {
        if (pos_ + n > end_) throw std::invalid_argument("sketch bytes are truncated");
    }
    const std::string& s_;
    std::size_t end_;
    std::size_t pos_ = 0;
};

[[noreturn]] void corrupt(const std::string& what) {
    throw std::invalid_argument("not a valid smoothece sketch: " + what);
}

}  // namespace

Sketch::Sketch(std::int64_t intervals) : counts_(intervals / 2) {
    if (!is_power_of_two(intervals) || intervals < kMinIntervals || intervals > kMaxIntervals)
        throw std::invalid_argument("resolution must be a power of two between " + std::to_string(kMinIntervals) +
                                    " and " + std::to_string(kMaxIntervals) + ", got " + std::to_string(intervals));
    sums_.intervals = intervals;
    const auto nodes = static_cast<std::size_t>(intervals + 1);
    sums_.residual.assign(nodes, 0.0);
    sums_.weight.assign(nodes, 0.0);
    sums_.label.assign(nodes, 0.0);
}

Sketch::Sketch(const Sketch& other) {
    std::lock_guard<std::mutex> lock(other.mutex_);
    sums_ = other.sums_;
    counts_ = other.counts_;
}

Sketch& Sketch::operator=(const Sketch& other) {
    if (this != &other) {
        Sketch copy(other);
        std::lock_guard<std::mutex> lock(mutex_);
        sums_ = std::move(copy.sums_);
        counts_ = std::move(copy.counts_);
    }
    return *this;
}

void Sketch::update(const Inputs& in, int threads) {
    // Both passes finish before anything is added: a bad row changes nothing.
    GridSums batch = bin_rows(in, sums_.intervals, /*full=*/true, threads, /*allow_zero_weight=*/true);
    CellCounts cells = count_cells(in, counts_.cells, threads);
    std::lock_guard<std::mutex> lock(mutex_);
    sums_.merge(batch);
    counts_.merge(cells);
}

void Sketch::merge(const Sketch& other) {
    if (other.intervals() != intervals())
        throw std::invalid_argument("cannot merge sketches of different resolution (" +
                                    std::to_string(intervals()) + " and " + std::to_string(other.intervals()) + ")");
    const Sketch copy(other);  // also makes s.merge(s) safe
    std::lock_guard<std::mutex> lock(mutex_);
    sums_.merge(copy.sums_);
    counts_.merge(copy.counts_);
}

std::int64_t Sketch::count() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return sums_.count;
}

double Sketch::total_weight() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return sums_.total_weight;
}

std::size_t Sketch::memory_bytes() const {
    return sizeof(Sketch) + 3 * sums_.residual.size() * sizeof(double) +
           counts_.count.size() * (sizeof(std::int64_t) + 2 * sizeof(double));
}

void Sketch::require_data() const {
    if (sums_.count == 0) throw std::invalid_argument("the sketch is empty: update it with some rows first");
    if (!(sums_.total_weight > 0.0))
        throw std::invalid_argument("weights: the sketch's weights sum to zero; at least one must be positive");
}

ResidualLevels Sketch::residual_levels() const {
    std::lock_guard<std::mutex> lock(mutex_);
    require_data();
    GridSums residual_only;  // a copy of the residual sums: the levels own and restrict them
    residual_only.intervals = sums_.intervals;
    residual_only.residual = sums_.residual;
    residual_only.total_weight = sums_.total_weight;
    residual_only.count = sums_.count;
    return ResidualLevels(std::move(residual_only));
}

FixpointResult Sketch::smece() const {
    ResidualLevels levels = residual_levels();
    return solve_fixpoint(levels);
}

double Sketch::smece_sigma(double sigma) const { return residual_levels().smece_sigma(sigma); }

DiagramCurves Sketch::diagram(double sigma, std::int64_t mesh_intervals) const {
    double s = sigma;
    if (!(s > 0.0)) s = std::max(smece().sigma, min_sigma());
    std::lock_guard<std::mutex> lock(mutex_);
    require_data();
    DiagramCurves out = diagram_at(sums_, s, mesh_intervals);
    return out;
}

Replicates Sketch::resample(ResampleKind kind, std::int64_t replicates, std::uint64_t seed, double band_sigma,
                            std::int64_t mesh_intervals, int threads) const {
    CellHistogram groups;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        require_data();
        const std::int64_t cells = std::min(counts_.cells, resample_cells_for_sigma(band_sigma));
        groups = groups_of(cells == counts_.cells ? counts_ : counts_.coarsen(cells));
    }
    return smoothece::resample(groups, kind, replicates, seed, band_sigma, mesh_intervals, threads);
}

void Sketch::sample(std::int64_t size, std::uint64_t seed, std::vector<double>& f, std::vector<double>& y) const {
    CellHistogram groups;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        groups = groups_of(counts_);
    }
    f.clear();
    y.clear();
    if (groups.count.empty() || size <= 0) return;
    std::mt19937_64 rng(seed);
    std::discrete_distribution<std::size_t> pick(groups.count.begin(), groups.count.end());
    for (std::int64_t i = 0; i < size; ++i) {
        const std::size_t g = pick(rng);
        f.push_back(groups.f_mean[g]);
        y.push_back(groups.label[g]);
    }
}

std::string Sketch::to_bytes() const {
    if (!little_endian()) throw std::runtime_error("sketch serialization needs a little-endian machine");
    std::lock_guard<std::mutex> lock(mutex_);
    Writer w;
    w.out.append(kMagic, sizeof kMagic);
    w.put(kVersion);
    w.put(static_cast<std::uint32_t>(kHeaderBytes));
    w.put(sums_.intervals);
    w.put(counts_.cells);
    w.put(sums_.count);
    w.put(sums_.total_weight);
    const std::uint64_t payload = 3 * sums_.residual.size() * sizeof(double) +
                                  counts_.count.size() * (sizeof(std::int64_t) + 2 * sizeof(double));
    w.put(payload);
    w.put(std::uint64_t{0});  // reserved
    w.put_array(sums_.residual);
    w.put_array(sums_.weight);
    w.put_array(sums_.label);
    w.put_array(counts_.count);
    w.put_array(counts_.weight);
    w.put_array(counts_.weighted_f);
    w.put(fnv1a(w.out.data(), w.out.size()));
    return w.out;
}

Sketch Sketch::from_bytes(const std::string& bytes) {
    if (!little_endian()) throw std::runtime_error("sketch serialization needs a little-endian machine");
    if (bytes.size() < kHeaderBytes + sizeof(std::uint64_t)) corrupt("too short (" + std::to_string(bytes.size()) + " bytes)");
    if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) corrupt("wrong magic bytes");
    const std::size_t body = bytes.size() - sizeof(std::uint64_t);
    Reader r(bytes, body);
    r.get<std::uint64_t>();  // magic, checked above
    const auto version = r.get<std::uint32_t>();
    if (version != kVersion) corrupt("unsupported format version " + std::to_string(version));
    if (r.get<std::uint32_t>() != kHeaderBytes) corrupt("bad header size");
    const auto intervals = r.get<std::int64_t>();
    const auto cells = r.get<std::int64_t>();
    const auto count = r.get<std::int64_t>();
    const auto total_weight = r.get<double>();
    const auto payload = r.get<std::uint64_t>();
    r.get<std::uint64_t>();
    if (!is_power_of_two(intervals) || intervals < kMinIntervals || intervals > kMaxIntervals || cells != intervals / 2)
        corrupt("bad resolution");
    const auto nodes = static_cast<std::size_t>(intervals + 1), groups = static_cast<std::size_t>(2 * cells);
    if (payload != 3 * nodes * sizeof(double) + groups * (sizeof(std::int64_t) + 2 * sizeof(double)) ||
        kHeaderBytes + payload != body)
        corrupt("size does not match the header (truncated or extended)");
    std::uint64_t stored;
    std::memcpy(&stored, bytes.data() + body, sizeof stored);
    if (stored != fnv1a(bytes.data(), body)) corrupt("checksum mismatch (corrupted bytes)");
    if (count < 0 || !std::isfinite(total_weight) || total_weight < 0.0) corrupt("bad totals");

    Sketch s(intervals);
    s.sums_.count = count;
    s.sums_.total_weight = total_weight;
    r.get_array(s.sums_.residual, nodes);
    r.get_array(s.sums_.weight, nodes);
    r.get_array(s.sums_.label, nodes);
    r.get_array(s.counts_.count, groups);
    r.get_array(s.counts_.weight, groups);
    r.get_array(s.counts_.weighted_f, groups);
    auto finite = [](const std::vector<double>& v) {
        return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
    };
    if (!finite(s.sums_.residual) || !finite(s.sums_.weight) || !finite(s.sums_.label) || !finite(s.counts_.weight) ||
        !finite(s.counts_.weighted_f))
        corrupt("non-finite sums");
    if (std::any_of(s.counts_.count.begin(), s.counts_.count.end(), [](std::int64_t c) { return c < 0; }) ||
        s.counts_.rows() != count)
        corrupt("cell counts do not add up to the row count");
    return s;
}

}  // namespace smoothece
