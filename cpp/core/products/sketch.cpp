#include "products/sketch.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <unordered_set>

#include "pass/rows.hpp"
#include "runtime/errors.hpp"

namespace smoothece {

std::string merge_mismatch(const std::string& what, Metric metric, std::int64_t resolution, Metric other_metric,
                           std::int64_t other_resolution) {
    return "cannot merge " + what + " of different metric or resolution (" + metric_name(metric) + " at " +
           std::to_string(resolution) + " and " + metric_name(other_metric) + " at " + std::to_string(other_resolution) +
           ")";
}
namespace {

constexpr char kMagic[8] = {'S', 'M', 'E', 'C', 'E', 'S', 'K', '\0'};
// Version 3 added the weights' traits (header byte 19); version 2 is read
// with unknown traits (taken as not counts), version 1 is refused.
constexpr std::uint32_t kVersion = 3;
constexpr std::uint32_t kHeaderBytes = 64;
constexpr std::int64_t kMinResolution = 256;
constexpr std::uint64_t kMaxKey = std::uint64_t{1} << 40;
// Relative tolerance of the consistency checks of sums against totals.
constexpr double kSumTolerance = 1e-9;

bool is_power_of_two(std::int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// FNV-1a, 64 bit: detects the flips and truncations a transport may cause
// (not an authenticity check: the contents are checked for consistency too).
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

// Σw·f of each atom as f·Σw at its rounded prediction: what the bytes
// restore, and the same whatever order the rows' sums were added in.
void own_weight_f(Atoms& atoms) {
    for (std::size_t i = 0; i < atoms.size(); ++i) {
        const double f = atoms.mapping.prediction(atoms.x[i]);
        for (int y = 0; y < 2; ++y) atoms.by_label[y][i].weight_f = atoms.by_label[y][i].weight * f;
    }
}

// The sketch's atoms: positions rounded to 2^-40 (equal keys combined), rows
// of zero weight dropped (they carry nothing; the row total keeps them), and
// Σw·f its own (own_weight_f).
Atoms canonical(const Atoms& in) {
    Atoms out;
    out.mapping = in.mapping;
    out.rows = in.rows;
    out.weight_exp = in.weight_exp;
    out.x.reserve(in.size());
    for (auto& v : out.by_label) v.reserve(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
        const double x = sketch_rounded(in.x[i]);
        if (!(in.by_label[0][i].weight > 0.0) && !(in.by_label[1][i].weight > 0.0)) continue;
        if (out.x.empty() || out.x.back() != x) {
            out.x.push_back(x);
            out.by_label[0].emplace_back();
            out.by_label[1].emplace_back();
        }
        for (int y = 0; y < 2; ++y) {
            const AtomStats& s = in.by_label[y][i];
            if (!(s.weight > 0.0)) continue;
            AtomStats& d = out.by_label[y].back();
            d.rows += s.rows;
            d.weight += s.weight;
            d.weight_sq += s.weight_sq;
        }
    }
    own_weight_f(out);
    return out;
}

[[noreturn]] void corrupt(const std::string& what) { throw CorruptSketch(what); }

// --- Bytes ------------------------------------------------------------------------------

class Writer {
public:
    template <class T>
    void put(const T& v) {
        out.append(reinterpret_cast<const char*>(&v), sizeof(T));
    }
    void varint(std::uint64_t v) {
        while (v >= 0x80) {
            out.push_back(static_cast<char>((v & 0x7f) | 0x80));
            v >>= 7;
        }
        out.push_back(static_cast<char>(v));
    }
    // An array as runs: (zeros, literals, the literals) until it is covered.
    void runs(const std::vector<double>& v) {
        std::size_t i = 0;
        while (i < v.size()) {
            std::size_t zeros = 0, literals = 0;
            while (i + zeros < v.size() && v[i + zeros] == 0.0 && !std::signbit(v[i + zeros])) ++zeros;
            while (i + zeros + literals < v.size() &&
                   !(v[i + zeros + literals] == 0.0 && !std::signbit(v[i + zeros + literals])))
                ++literals;
            varint(zeros);
            varint(literals);
            for (std::size_t k = 0; k < literals; ++k) put(v[i + zeros + k]);
            i += zeros + literals;
        }
    }
    std::string out;
};

class Reader {
public:
    Reader(const std::string& s, std::size_t begin, std::size_t end) : s_(s), pos_(begin), end_(end) {}
    template <class T>
    T get() {
        need(sizeof(T));
        T v;
        std::memcpy(&v, s_.data() + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }
    std::uint64_t varint() {
        std::uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            need(1);
            const auto byte = static_cast<unsigned char>(s_[pos_++]);
            v |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
            if (!(byte & 0x80)) return v;
        }
        corrupt("a variable-length integer is too long");
    }
    double finite() {
        const double v = get<double>();
        if (!std::isfinite(v)) corrupt("a non-finite number in the payload");
        return v;
    }
    std::vector<double> runs(std::size_t size) {
        std::vector<double> v;
        v.reserve(size);
        while (v.size() < size) {
            const std::uint64_t zeros = varint(), literals = varint();
            if (zeros > size - v.size() || literals > size - v.size() - zeros) corrupt("an array overruns its length");
            if (zeros + literals == 0) corrupt("an empty run in an array");
            v.insert(v.end(), zeros, 0.0);
            for (std::uint64_t k = 0; k < literals; ++k) v.push_back(finite());
        }
        return v;
    }
    bool done() const { return pos_ == end_; }

private:
    void need(std::size_t n) const {
        if (n > end_ - pos_) corrupt("the payload is shorter than its contents");
    }
    const std::string& s_;
    std::size_t pos_, end_;
};

bool unit_weights(const Atoms& a) {
    const double unit = std::ldexp(1.0, a.weight_exp);
    for (int y = 0; y < 2; ++y)
        for (const AtomStats& s : a.by_label[y])
            if (s.weight != s.rows * unit || s.weight_sq != s.rows * unit * unit) return false;
    return true;
}

bool close(double a, double b, double scale) { return std::fabs(a - b) <= kSumTolerance * scale; }

double sum_of(const std::vector<double>& v) {
    double s = 0.0;
    for (double x : v) s += x;
    return s;
}

}  // namespace

Sketch::Sketch(Metric metric, std::int64_t resolution)
    : mapping_(metric == Metric::Logit ? Mapping::logit() : Mapping::l1()), resolution_(resolution) {
    if (!is_power_of_two(resolution) || resolution < kMinResolution || resolution > kMaxIntervals)
        throw InputError("resolution must be a power of two between " + std::to_string(kMinResolution) + " and " +
                             std::to_string(kMaxIntervals) + ", got " + std::to_string(resolution),
                         "resolution", -1, static_cast<double>(resolution), 1, 1);
    Atoms empty;
    empty.mapping = mapping_;
    state_.atoms = std::make_shared<const Atoms>(std::move(empty));
}

Sketch::Sketch(const Sketch& other)
    : mapping_(other.mapping_), resolution_(other.resolution_), state_(other.snapshot()) {}

Sketch& Sketch::operator=(const Sketch& other) {
    if (this != &other) {
        Sketch copy(other);
        std::lock_guard<std::mutex> lock(mutex_);
        mapping_ = copy.mapping_;
        resolution_ = copy.resolution_;
        state_ = std::move(copy.state_);
    }
    return *this;
}

Sketch::State Sketch::snapshot() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return state_;
}

double Sketch::State::total_scaled() const { return atoms ? atoms->total_weight_scaled() : grid->weight; }

int Sketch::State::weight_exp() const { return atoms ? atoms->weight_exp : grid->weight_exp; }

double Sketch::State::positive_rows() const {
    if (!atoms) return static_cast<double>(grid->positive_rows);
    double n = 0.0;
    for (int y = 0; y < 2; ++y)
        for (const AtomStats& a : atoms->by_label[y]) n += a.rows;
    return n;
}

Sketch::State Sketch::add(const State& a, const State& b) const {
    State out;
    out.rows = a.rows + b.rows;
    if (out.rows < a.rows)
        throw InputError("the sketch's row count would overflow (more than 2^64 - 1 rows)", "rows", -1,
                         static_cast<double>(a.rows), 1, 1);
    out.traits = a.traits + b.traits;
    // Atoms stay atoms while their union is few: that depends on the rows
    // alone (a batch's atoms count positions as the sketch keeps them).
    if (a.atoms && b.atoms) {
        Atoms both = merged(*a.atoms, *b.atoms);
        both.rows = out.rows;
        own_weight_f(both);
        if (both.size() <= max_atoms()) {
            out.atoms = std::make_shared<const Atoms>(std::move(both));
            check_totals(out);
            return out;
        }
        out.grid = summarise_atoms(both, Content::Full, resolution_);
    } else {
        auto grid_of = [this](const State& s) {
            return s.grid ? *s.grid : summarise_atoms(*s.atoms, Content::Full, resolution_);
        };
        out.grid = grid_of(a);
        out.grid->merge(grid_of(b));
    }
    out.grid->rows = out.rows;
    check_totals(out);
    return out;
}

void Sketch::check_totals(const State& s) const {
    const double total = std::ldexp(s.total_scaled(), -s.weight_exp());
    if (!std::isfinite(total))
        throw InputError("weights: the sketch's total weight would overflow (above 1.8e308); rescale the weights",
                         "weights", -1, total, 1, 1);
}

void Sketch::update(const Inputs& in, std::int64_t threads) {
    check_shapes(in, /*allow_empty=*/true);
    if (in.size() == 0) return;
    // The batch's own state first (the slow part, outside the lock): its atoms
    // if they are few, else its summary on the grid.
    State batch;
    batch.rows = static_cast<std::uint64_t>(in.size());
    if (exact()) {  // still the atoms form (exact() locks for that read alone)
        if (auto atoms = atoms_of_rows(in, mapping_, weight_exponent_of(in), max_atoms(), 1, AtomKeys::Sketch)) {
            batch.atoms = std::make_shared<const Atoms>(canonical(*atoms));
        }
    }
    if (!batch.atoms) batch.grid = summarise_rows(in, PassOptions{mapping_, Content::Full, resolution_, threads, true});
    // After the pass (the rows are valid); once a weight had a fraction the
    // sketch's traits stay so, and its batches need no look.
    batch.traits = weight_traits().whole ? weight_traits_of(in.w) : WeightTraits{false, false};
    std::lock_guard<std::mutex> lock(mutex_);
    state_ = add(state_, batch);
}

Sketch Sketch::merge_all(const std::vector<Sketch>& parts, Metric metric, std::int64_t resolution) {
    Sketch out(metric, resolution);
    std::vector<std::shared_ptr<const Atoms>> atoms;
    std::optional<Summary> grid;
    std::uint64_t rows = 0;
    WeightTraits traits;
    for (const Sketch& part : parts) {
        if (part.mapping_.metric != metric || part.resolution_ != resolution)
            throw InputError(merge_mismatch("sketches", metric, resolution, part.mapping_.metric, part.resolution_), "other");
        std::lock_guard<std::mutex> lock(part.mutex_);
        const State& s = part.state_;
        if (rows + s.rows < rows)
            throw InputError("the sketch's row count would overflow (more than 2^64 - 1 rows)", "rows", -1,
                             static_cast<double>(rows), 1, 1);
        rows += s.rows;
        traits = traits + s.traits;
        if (s.atoms) {
            if (s.atoms->size() > 0) atoms.push_back(s.atoms);
        } else if (grid) {
            grid->merge(*s.grid);
        } else {
            grid = *s.grid;
        }
    }
    // Do the parts' positions stay few together? Counted in one hash set that
    // stops at the first position too many (continuous data stop early).
    bool few = !grid;
    if (few) {
        std::unordered_set<std::uint64_t> positions;
        positions.reserve(2 * out.max_atoms() + 2);
        for (const auto& a : atoms) {
            for (double x : a->x) positions.insert(sketch_key(x));
            if (positions.size() > out.max_atoms()) break;
        }
        few = positions.size() <= out.max_atoms();
    }
    // Then pairwise merges, in a balanced tree, every union within the atoms form.
    while (few && atoms.size() > 1) {
        std::vector<std::shared_ptr<const Atoms>> next;
        for (std::size_t i = 0; i < atoms.size(); i += 2)
            next.push_back(i + 1 == atoms.size() ? atoms[i]
                                                 : std::make_shared<const Atoms>(merged(*atoms[i], *atoms[i + 1])));
        atoms = std::move(next);
    }
    if (few) {
        Atoms all = atoms.empty() ? Atoms{} : *atoms.front();
        all.mapping = out.mapping_;
        all.rows = rows;
        own_weight_f(all);
        out.state_.atoms = std::make_shared<const Atoms>(std::move(all));
    } else {
        if (!grid) grid = Summary::empty(out.mapping_, Content::Full, resolution);
        for (const auto& a : atoms) add_atoms(*grid, *a);
        grid->derive_residual();
        grid->rows = rows;
        out.state_.atoms = nullptr;
        out.state_.grid = std::move(grid);
    }
    out.state_.rows = rows;
    out.state_.traits = traits;
    out.check_totals(out.state_);
    return out;
}

void Sketch::merge(const Sketch& other) {
    if (other.mapping_.metric != mapping_.metric || other.resolution_ != resolution_)
        throw InputError(merge_mismatch("sketches", mapping_.metric, resolution_, other.mapping_.metric, other.resolution_),
                         "other");
    const State theirs = other.snapshot();  // taken before this sketch's lock: s.merge(s) is safe
    std::lock_guard<std::mutex> lock(mutex_);
    state_ = add(state_, theirs);
}

Analysis Sketch::analysis() const {
    const State s = snapshot();
    if (s.rows == 0) throw InputError("the sketch is empty: update it with some rows first", "sketch");
    if (!(s.total_scaled() > 0.0))
        throw InputError("weights: the sketch's weights sum to zero; at least one must be positive", "weights");
    if (s.atoms) {
        const auto positive = static_cast<std::int64_t>(s.positive_rows());
        Summary summary = summarise_atoms(*s.atoms, Content::Full, first_intervals(positive, mapping_, Content::Full));
        return Analysis(std::move(summary), rows_of_atoms(s.atoms));
    }
    return Analysis(*s.grid, nullptr);
}

std::uint64_t Sketch::rows() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return state_.rows;
}

double Sketch::total_weight() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::ldexp(state_.total_scaled(), -state_.weight_exp());
}

bool Sketch::exact() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return state_.atoms != nullptr;
}

WeightTraits Sketch::weight_traits() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return state_.traits;
}

std::size_t Sketch::memory_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::size_t bytes = sizeof(Sketch);
    if (state_.atoms) bytes += state_.atoms->size() * (sizeof(double) + 2 * sizeof(AtomStats));
    else
        bytes += sizeof(double) * (6 * state_.grid->residual.size() + 4 * state_.grid->cells.slots());
    return bytes;
}

std::string Sketch::to_bytes() const {
    if (!little_endian()) throw std::runtime_error("sketch serialization needs a little-endian machine");
    const State s = snapshot();
    Writer body;
    bool weighted = false;
    if (s.atoms) {
        weighted = !unit_weights(*s.atoms);
        body.varint(s.atoms->size());
        for (int y = 0; y < 2; ++y) {
            std::uint64_t entries = 0;
            for (const AtomStats& a : s.atoms->by_label[y]) entries += a.weight > 0.0 ? 1 : 0;
            body.varint(entries);
            std::uint64_t previous = 0;
            for (std::size_t i = 0; i < s.atoms->size(); ++i) {
                const AtomStats& a = s.atoms->by_label[y][i];
                if (!(a.weight > 0.0)) continue;
                const std::uint64_t key = sketch_key(s.atoms->x[i]);
                body.varint(key - previous);
                previous = key;
                body.varint(static_cast<std::uint64_t>(a.rows));
                if (weighted) {
                    body.put(a.weight);
                    body.put(a.weight_sq);
                }
            }
        }
    } else {
        const Summary& g = *s.grid;
        for (const auto* v : {&g.w0, &g.w1, &g.f0, &g.f1, &g.cells.rows, &g.cells.weight, &g.cells.weight_sq,
                              &g.cells.weight_f})
            body.runs(*v);
    }
    const double positive = s.positive_rows(), weight = s.total_scaled();
    Writer w;
    w.out.append(kMagic, sizeof kMagic);
    w.put(kVersion);
    w.put(kHeaderBytes);
    w.put(static_cast<std::uint8_t>(mapping_.metric));
    w.put(static_cast<std::uint8_t>(s.atoms ? 0 : 1));
    w.put(static_cast<std::uint8_t>(weighted ? 1 : 0));
    w.put(static_cast<std::uint8_t>((s.traits.whole ? 1 : 0) | (s.traits.over_one ? 2 : 0)));
    w.put(static_cast<std::int32_t>(s.weight_exp()));
    w.put(resolution_);
    w.put(s.rows);
    w.put(static_cast<std::uint64_t>(positive));
    w.put(weight);
    w.put(static_cast<std::uint64_t>(body.out.size()));
    w.out += body.out;
    w.put(fnv1a(w.out.data(), w.out.size()));
    return w.out;
}

Sketch Sketch::from_bytes(const std::string& bytes) {
    if (!little_endian()) throw std::runtime_error("sketch serialization needs a little-endian machine");
    if (bytes.size() < kHeaderBytes + sizeof(std::uint64_t)) corrupt("too short (" + std::to_string(bytes.size()) + " bytes)");
    if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) corrupt("not smoothece sketch bytes (wrong magic bytes)");
    const std::size_t body_end = bytes.size() - sizeof(std::uint64_t);
    std::uint64_t stored;
    std::memcpy(&stored, bytes.data() + body_end, sizeof stored);
    Reader header(bytes, sizeof kMagic, kHeaderBytes);
    const auto version = header.get<std::uint32_t>();
    if (version == 1)
        throw std::invalid_argument(
            "sketch bytes of format version 1 (smoothece 0.1) cannot be read by this version, whose sketches keep "
            "per-label sums the old format lacks: rebuild the sketch from the rows");
    if (version != 2 && version != kVersion) corrupt("unknown format version " + std::to_string(version));
    if (stored != fnv1a(bytes.data(), body_end)) corrupt("checksum mismatch (the bytes were altered or truncated)");
    if (header.get<std::uint32_t>() != kHeaderBytes) corrupt("bad header size");
    const auto metric = header.get<std::uint8_t>(), form = header.get<std::uint8_t>(), weighted = header.get<std::uint8_t>();
    const auto traits = header.get<std::uint8_t>();  // version 2: 0
    const auto weight_exp = header.get<std::int32_t>();
    const auto resolution = header.get<std::int64_t>();
    const auto rows = header.get<std::uint64_t>(), positive = header.get<std::uint64_t>();
    const auto weight = header.get<double>();
    const auto payload = header.get<std::uint64_t>();
    if (metric > 1 || form > 1 || weighted > 1 || traits > 3 || (version == 2 && traits != 0) || traits == 2)
        corrupt("bad header flags");
    if (!is_power_of_two(resolution) || resolution < kMinResolution || resolution > kMaxIntervals) corrupt("bad resolution");
    if (weight_exp < -1100 || weight_exp > 1100) corrupt("bad weight exponent");
    if (payload != body_end - kHeaderBytes) corrupt("the payload size does not match the header");
    if (positive > rows || !std::isfinite(weight) || weight < 0.0 || (weight > 0.0) != (positive > 0))
        corrupt("inconsistent totals");

    Sketch s(metric == 1 ? Metric::Logit : Metric::L1, resolution);
    s.state_.rows = rows;
    // Version 2 kept no traits: known only for atoms of unit weights (whole,
    // none above 1); otherwise taken as not whole, so no warning about counts.
    if (version == 2) s.state_.traits = WeightTraits{form == 0 && weighted == 0 && weight_exp == 0, false};
    else s.state_.traits = WeightTraits{(traits & 1) != 0, (traits & 2) != 0};
    Reader r(bytes, kHeaderBytes, body_end);
    const double unit = std::ldexp(1.0, weight_exp);
    if (form == 0) {
        const std::uint64_t n = r.varint();
        if (n > s.max_atoms()) corrupt("more atoms than the resolution allows");
        std::vector<std::pair<std::uint64_t, AtomStats>> lists[2];
        double rows_sum = 0.0, weight_sum = 0.0;
        for (int y = 0; y < 2; ++y) {
            const std::uint64_t entries = r.varint();
            if (entries > n) corrupt("more entries than atoms");
            std::uint64_t key = 0;
            for (std::uint64_t k = 0; k < entries; ++k) {
                const std::uint64_t delta = r.varint();
                if ((k > 0 && delta == 0) || delta > kMaxKey - key) corrupt("atom positions out of order or range");
                key += delta;
                AtomStats a;
                const std::uint64_t count = r.varint();
                if (count == 0 || count > positive) corrupt("an atom without rows");
                a.rows = static_cast<double>(count);
                if (weighted) {
                    a.weight = r.finite();
                    a.weight_sq = r.finite();
                    if (!(a.weight > 0.0) || a.weight_sq > a.weight * a.weight * (1.0 + kSumTolerance) ||
                        a.weight_sq < a.weight * a.weight / a.rows * (1.0 - kSumTolerance))
                        corrupt("an atom's weights are inconsistent");
                } else {
                    a.weight = a.rows * unit;
                    a.weight_sq = a.rows * unit * unit;
                }
                rows_sum += a.rows;
                weight_sum += a.weight;
                lists[y].push_back({key, a});
            }
        }
        if (!r.done()) corrupt("trailing bytes after the atoms");
        if (rows_sum != static_cast<double>(positive) || !close(weight_sum, weight, weight))
            corrupt("the atoms do not add up to the totals");
        Atoms atoms;
        atoms.mapping = s.mapping_;
        atoms.rows = rows;
        atoms.weight_exp = weight_exp;
        std::size_t i[2] = {0, 0};
        while (i[0] < lists[0].size() || i[1] < lists[1].size()) {
            std::uint64_t key = std::numeric_limits<std::uint64_t>::max();
            for (int y = 0; y < 2; ++y)
                if (i[y] < lists[y].size()) key = std::min(key, lists[y][i[y]].first);
            atoms.x.push_back(sketch_position(key));
            const double f = atoms.mapping.prediction(atoms.x.back());
            for (int y = 0; y < 2; ++y) {
                AtomStats a;
                if (i[y] < lists[y].size() && lists[y][i[y]].first == key) a = lists[y][i[y]++].second;
                a.weight_f = a.weight * f;
                atoms.by_label[y].push_back(a);
            }
        }
        if (atoms.size() != n) corrupt("the number of atoms does not match");
        s.state_.atoms = std::make_shared<const Atoms>(std::move(atoms));
    } else {
        Summary g = Summary::empty(s.mapping_, Content::Full, resolution);
        const auto nodes = static_cast<std::size_t>(resolution + 1), slots = g.cells.slots();
        g.w0 = r.runs(nodes);
        g.w1 = r.runs(nodes);
        g.f0 = r.runs(nodes);
        g.f1 = r.runs(nodes);
        g.cells.rows = r.runs(slots);
        g.cells.weight = r.runs(slots);
        g.cells.weight_sq = r.runs(slots);
        g.cells.weight_f = r.runs(slots);
        if (!r.done()) corrupt("trailing bytes after the grid");
        const ResampleCells& c = g.cells;
        double cell_weight[2] = {0, 0}, cell_f[2] = {0, 0}, rows_sum = 0.0;
        for (std::size_t k = 0; k < slots; ++k) {
            const double n = c.rows[k], w = c.weight[k], w2 = c.weight_sq[k], wf = c.weight_f[k];
            const bool ok = n >= 0.0 && n == std::floor(n) && w >= 0.0 && w2 >= 0.0 && (n > 0.0) == (w > 0.0) &&
                            wf >= 0.0 && wf <= w * (1.0 + kSumTolerance) && w2 <= w * w * (1.0 + kSumTolerance) &&
                            (n == 0.0 || w2 >= w * w / n * (1.0 - kSumTolerance));
            if (!ok) corrupt("a resampling cell is inconsistent");
            rows_sum += n;
            cell_weight[k % 2] += w;
            cell_f[k % 2] += wf;
        }
        const double node_weight[2] = {sum_of(g.w0), sum_of(g.w1)}, node_f[2] = {sum_of(g.f0), sum_of(g.f1)};
        bool sums_ok = rows_sum == static_cast<double>(positive) && close(cell_weight[0] + cell_weight[1], weight, weight);
        for (int y = 0; y < 2; ++y)
            sums_ok = sums_ok && close(node_weight[y], cell_weight[y], weight) && close(node_f[y], cell_f[y], weight);
        if (!sums_ok) corrupt("the grid's sums do not add up to its totals");
        g.derive_residual();
        g.rows = rows;
        g.positive_rows = positive;
        g.weight = weight;
        g.weight_exp = weight_exp;
        s.state_.atoms = nullptr;
        s.state_.grid = std::move(g);
    }
    return s;
}

}  // namespace smoothece
