// The bytes of the three sketches (products/envelope.hpp has the envelope;
// docs/design.md, "Sketch bytes", the tables). What a reader accepts is what
// a real sketch can hold: every count, sum and position is checked against
// the invariants of the code that makes them (the passes, merges and
// rescaling), so that nothing read answers a number that no rows could give.
//
// CalibrationSketch, version 4: header fields after the envelope's 24 bytes
//   24 u8 metric (0 l1, 1 logit)    25 u8 form (0 atoms, 1 grid)
//   26 u8 weighted (atoms: 1 when the atoms carry their Σw and Σw²)
//   27 u8 weight traits (bit 0: every weight whole; bit 1: one above 1)
//   28 i32 weight exponent          32 i64 resolution
//   40 u64 rows                     48 u64 rows of positive weight
//   56 f64 Σw · 2^exponent
// then the payload: atoms (a count, then per label its entries: the key's
// delta, the rows and, if weighted, Σw and Σw²; varints and doubles) or the
// grid (w0, w1, f0, f1 on resolution + 1 nodes and the cells' rows, Σw, Σw²
// and Σw·f per cell and label, each as runs of zeros and literals).
// Versions 2 and 3 held the same fields and payload in a 64-byte header of
// their own with an FNV-1a checksum; they are read with the same checks.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "products/groups.hpp"
#include "products/paired_sketch.hpp"
#include "products/sketch.hpp"
#include "smoothing/spectrum.hpp"

namespace smoothece {
namespace {

constexpr SketchKind kOne = SketchKind::Calibration, kGrouped = SketchKind::Grouped,
                     kComparison = SketchKind::Comparison;
constexpr std::int64_t kMinResolution = 256;
constexpr std::uint64_t kMaxKey = std::uint64_t{1} << 40;
// Relative tolerance of the checks of sums against sums.
constexpr double kSumTolerance = 1e-9;
// Absolute slack for sums of squares near the subnormal range.
constexpr double kTiny = 4.0 * DBL_MIN;
// A scaled weight is at most 2^500 (weights in [2^-500, 2^500] keep their
// scale) or below 2 (others are brought near 1): a mean weight above this
// no pass or merge makes.
constexpr double kMaxScaledWeight = 0x1p501;
// Cubic moment binning spreads a mass m onto four nodes whose absolute
// values add to at most (1 + λ(1 − λ))·m ≤ 1.25·m (reflection only cancels).
constexpr double kMaxSpread = 1.25;
// Smoothed at the finest σ a grid resolves, real node masses give a density
// that is non-negative, and label and prediction sums within it, to the
// binning error: what lies outside, integrated, was at most 7e-15 of the
// total weight on rows crowded into one interval at the ends and the middle,
// of one label or both, both metrics, and on weighted continuous rows.
constexpr double kSmoothTolerance = 1e-9;

bool is_power_of_two(std::int64_t v) { return v > 0 && (v & (v - 1)) == 0; }
bool close(double a, double b, double scale) { return std::fabs(a - b) <= kSumTolerance * scale; }
bool whole(double v) { return v == std::floor(v); }

// The exponents a pass gives (weight_exponent_for: 0 for weights within
// [2^-500, 2^500], else −ilogb of the largest) and merges keep (the smaller).
bool possible_weight_exp(std::int32_t e) { return e == 0 || (e >= -1023 && e <= -500) || (e >= 501 && e <= 1074); }

bool valid_resolution(std::int64_t r) { return is_power_of_two(r) && r >= kMinResolution && r <= kMaxIntervals; }

// The memory reading a grid takes for a while: its nodes and cells read in
// full, then either the check's spectrum and FFTW's scratch or the blocks
// they become (summary/blocked.hpp; at most the nodes and cells again).
std::uint64_t grid_read_memory(std::int64_t g) {
    const auto nodes = static_cast<std::uint64_t>(g + 1), slots = static_cast<std::uint64_t>(2 * (g / 8));
    return sizeof(double) * (4 * nodes + 4 * slots) +
           std::max(sizeof(double) * (nodes + 2 * (2 * nodes + 2)), sizeof(double) * (4 * nodes + 4 * slots));
}

bool unit_weights(const Atoms& a) {
    const double unit = std::ldexp(1.0, a.weight_exp);
    for (int y = 0; y < 2; ++y)
        for (const AtomStats& s : a.by_label[y])
            if (s.weight != s.rows * unit || s.weight_sq != s.rows * unit * unit) return false;
    return true;
}

// A group of `rows` (or at most `rows`) rows' Σw > 0 and Σw²: (Σw)²/n ≤ Σw² ≤ (Σw)².
// Σw² = 0 where the weights square to nothing (below ~1e-154 of the largest,
// as scaled): resampling then draws the group as one row (resampling/draws.hpp).
bool possible_squares(double w, double w2, double rows) {
    return w2 >= 0.0 && w2 <= w * w * (1.0 + kSumTolerance) + kTiny && w2 >= w * w / rows * (1.0 - kSumTolerance) - kTiny;
}

struct Header {
    std::uint32_t version = 0;
    std::uint8_t metric = 0, form = 0, weighted = 0, traits = 0;
    std::int32_t weight_exp = 0;
    std::int64_t resolution = 0;
    std::uint64_t rows = 0, positive = 0;
    double weight = 0.0;
    std::size_t payload = 0, payload_end = 0;
};

template <class Get>
void read_fields(Header& h, Get&& get) {
    h.metric = get.template get<std::uint8_t>();
    h.form = get.template get<std::uint8_t>();
    h.weighted = get.template get<std::uint8_t>();
    h.traits = get.template get<std::uint8_t>();
    h.weight_exp = get.template get<std::int32_t>();
    h.resolution = get.template get<std::int64_t>();
    h.rows = get.template get<std::uint64_t>();
    h.positive = get.template get<std::uint64_t>();
    h.weight = get.template get<double>();
}

// Where the fields and payload lie, by version: 4 in the envelope; 2 and 3
// in their own 64-byte header (payload length at 56) with FNV-1a.
Header open_sketch(const std::string& bytes) {
    Header h;
    h.version = read_version(bytes, kOne);
    if (h.version == format_of(kOne).version) {
        const Envelope e = open_envelope(bytes, kOne);
        ByteReader r(bytes, e.fields, e.payload, kOne);
        read_fields(h, r);
        h.payload = e.payload;
        h.payload_end = e.payload_end;
        return h;
    }
    if (h.version == 1)
        throw std::invalid_argument(
            "sketch bytes of format version 1 (smoothece 0.1) cannot be read by this version, whose sketches keep "
            "per-label sums the old format lacks: rebuild the sketch from the rows");
    if (h.version != 2 && h.version != 3)
        corrupt(kOne, "unknown format version " + std::to_string(h.version) + " (this smoothece reads 2 to " +
                          std::to_string(format_of(kOne).version) + ")");
    constexpr std::size_t kOldHeader = 64;
    if (bytes.size() < kOldHeader + kChecksumBytes) corrupt(kOne, "too short (" + std::to_string(bytes.size()) + " bytes)");
    const std::size_t body_end = bytes.size() - kChecksumBytes;
    std::uint64_t stored;
    std::memcpy(&stored, bytes.data() + body_end, sizeof stored);
    if (stored != fnv1a64(bytes.data(), body_end)) corrupt(kOne, "checksum mismatch (the bytes were altered or truncated)");
    ByteReader r(bytes, 12, kOldHeader, kOne);
    if (r.get<std::uint32_t>() != kOldHeader) corrupt(kOne, "bad header length");
    read_fields(h, r);
    if (r.get<std::uint64_t>() != body_end - kOldHeader) corrupt(kOne, "the payload length does not match the bytes' size");
    h.payload = kOldHeader;
    h.payload_end = body_end;
    return h;
}

void check_header(const Header& h) {
    if (h.metric > 1 || h.form > 1 || h.weighted > 1 || (h.form == 1 && h.weighted != 0)) corrupt(kOne, "bad header flags");
    // Traits: bit 1 (one above 1) only with bit 0 (all whole); version 2 had none.
    if (h.traits > 3 || h.traits == 2 || (h.version == 2 && h.traits != 0)) corrupt(kOne, "bad header flags");
    if (!valid_resolution(h.resolution)) corrupt(kOne, "bad resolution " + std::to_string(h.resolution));
    if (!possible_weight_exp(h.weight_exp)) corrupt(kOne, "bad weight exponent " + std::to_string(h.weight_exp));
    if (h.rows > kMaxSketchRows) corrupt(kOne, "more rows than a sketch counts (2^53)");
    if (h.positive > h.rows || !std::isfinite(h.weight) || h.weight < 0.0 || (h.weight > 0.0) != (h.positive > 0))
        corrupt(kOne, "inconsistent totals");
    if (h.positive > 0) {
        // The largest weight scaled is at least 2^-500 at exponent 0 (else the
        // exponent brings it into [1, 2)), and merges keep the larger weights' scale.
        const double total = std::ldexp(h.weight, -h.weight_exp);
        if (!std::isfinite(total) || !(total > 0.0) || h.weight > static_cast<double>(h.positive) * kMaxScaledWeight ||
            h.weight < (h.weight_exp == 0 ? 0x1p-500 : 1.0))
            corrupt(kOne, "inconsistent totals");
    }
    // A sketch holds its grid only past resolution/2 distinct positions of
    // positive weight (from version 3 on: version 2 also counted rows of zero weight).
    if (h.form == 1 && h.version >= 3 && h.positive <= static_cast<std::uint64_t>(h.resolution / 2))
        corrupt(kOne, "a grid with fewer rows than positions the exact form keeps");
}

// Keys (positions × 2^40) that rows of the metric reach: all of [0, 1] on the
// probability axis; on the logit grid those of the clamped predictions.
std::pair<std::uint64_t, std::uint64_t> key_range(const Mapping& m) {
    if (!m.is_logit()) return {0, kMaxKey};
    return {sketch_key(m.position(0.0)) - 1, sketch_key(m.position(1.0)) + 1};
}

Atoms read_atoms(ByteReader& r, const Header& h, const Mapping& mapping, std::size_t max_atoms, MemoryBudget& budget) {
    const std::uint64_t n = r.varint();
    if (n > max_atoms) corrupt(kOne, "more atoms than the resolution allows");
    if (n > r.left()) corrupt(kOne, "the payload is shorter than its contents");
    if ((n > 0) != (h.positive > 0)) corrupt(kOne, "the atoms do not add up to the totals");
    budget.take(n * (sizeof(double) + 2 * sizeof(AtomStats)), kOne);
    const double unit = std::ldexp(1.0, h.weight_exp);
    if (!h.weighted && !(std::isfinite(unit * unit) && unit * unit > 0.0)) corrupt(kOne, "bad weight exponent");
    const auto [lowest, highest] = key_range(mapping);
    std::vector<std::pair<std::uint64_t, AtomStats>> lists[2];
    double rows_sum = 0.0, weight_sum = 0.0;
    for (int y = 0; y < 2; ++y) {
        const std::uint64_t entries = r.varint();
        if (entries > n || entries > r.left() / 2) corrupt(kOne, "more entries than atoms");
        budget.take(entries * sizeof(lists[y][0]), kOne);
        lists[y].reserve(static_cast<std::size_t>(entries));
        std::uint64_t key = 0;
        for (std::uint64_t k = 0; k < entries; ++k) {
            const std::uint64_t delta = r.varint();
            if ((k > 0 && delta == 0) || delta > kMaxKey - key) corrupt(kOne, "atom positions out of order or range");
            key += delta;
            if (key < lowest || key > highest) corrupt(kOne, "an atom where no prediction of the metric lies");
            AtomStats a;
            const std::uint64_t count = r.varint();
            if (count == 0 || count > h.positive) corrupt(kOne, "an atom without rows");
            a.rows = static_cast<double>(count);
            if (h.weighted) {
                a.weight = r.finite();
                a.weight_sq = r.finite();
                if (!(a.weight > 0.0) || a.weight > a.rows * kMaxScaledWeight ||
                    !possible_squares(a.weight, a.weight_sq, a.rows))
                    corrupt(kOne, "an atom's weights are inconsistent");
            } else {
                a.weight = a.rows * unit;
                a.weight_sq = a.rows * unit * unit;
            }
            rows_sum += a.rows;
            weight_sum += a.weight;
            lists[y].push_back({key, a});
        }
    }
    if (!r.done()) corrupt(kOne, "trailing bytes after the atoms");
    if (rows_sum != static_cast<double>(h.positive) || !close(weight_sum, h.weight, h.weight))
        corrupt(kOne, "the atoms do not add up to the totals");
    Atoms atoms;
    atoms.mapping = mapping;
    atoms.rows = h.rows;
    atoms.weight_exp = h.weight_exp;
    atoms.x.reserve(static_cast<std::size_t>(n));
    for (auto& v : atoms.by_label) v.reserve(static_cast<std::size_t>(n));
    std::size_t i[2] = {0, 0};
    while (i[0] < lists[0].size() || i[1] < lists[1].size()) {
        if (atoms.size() == n) corrupt(kOne, "the number of atoms does not match");
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
    if (atoms.size() != n) corrupt(kOne, "the number of atoms does not match");
    return atoms;
}

// The cells' sums: each what rows of positive weight in the cell give (their
// mean prediction inside the cell's range), adding up to the totals.
void check_cells(const Summary& g, const Header& h, double (&cell_weight)[2], double (&cell_f)[2]) {
    const ResampleCells& c = g.cells;
    const double per_cell = static_cast<double>(kIntervalsPerResampleCell) / static_cast<double>(g.intervals);
    double rows_sum = 0.0;
    for (std::size_t k = 0; k < c.slots(); ++k) {
        const double n = c.rows[k], w = c.weight[k], w2 = c.weight_sq[k], wf = c.weight_f[k];
        bool ok = n >= 0.0 && whole(n) && n <= static_cast<double>(kMaxSketchRows) && w >= 0.0 && wf >= 0.0 &&
                  (n > 0.0) == (w > 0.0);
        if (ok && w > 0.0) {
            const auto cell = static_cast<double>(k / 2);
            // Predictions are clamped into [0, 1] before the logit's ε clamp: 1e-12 of slack.
            const double lo = g.mapping.prediction(cell * per_cell), hi = g.mapping.prediction((cell + 1.0) * per_cell);
            const double slack = kSumTolerance * w + 2.0 * kLogitEpsilon * w;
            ok = w <= n * kMaxScaledWeight && possible_squares(w, w2, n) && wf >= lo * w - slack && wf <= hi * w + slack;
        } else if (ok) {
            ok = w2 == 0.0 && wf == 0.0;
        }
        if (!ok) corrupt(kOne, "a resampling cell is inconsistent");
        rows_sum += n;
        cell_weight[k % 2] += w;
        cell_f[k % 2] += wf;
    }
    if (rows_sum != static_cast<double>(h.positive) || !close(cell_weight[0] + cell_weight[1], h.weight, h.weight))
        corrupt(kOne, "the grid's sums do not add up to its totals");
}

// The node masses: only where rows of their label lie (a row of interval q
// reaches nodes q−1 … q+2, reflected at the ends), no larger in absolute sum
// than binning can make them, adding up to the cells' sums, and smoothed at
// the finest σ the grid resolves, a density with label and prediction sums
// inside it (so no answer leaves what rows can give: smECEσ ≤ 1, μ̂ in [0, 1]).
void check_nodes(const Summary& g, const double (&cell_weight)[2], const double (&cell_f)[2]) {
    const std::int64_t G = g.intervals, per = kIntervalsPerResampleCell;
    const std::vector<double>* masses[2] = {&g.w0, &g.w1};
    const std::vector<double>* sums_f[2] = {&g.f0, &g.f1};
    for (int y = 0; y < 2; ++y) {
        const std::vector<double>& w = *masses[y];
        const std::vector<double>& f = *sums_f[y];
        double abs_w = 0.0, abs_f = 0.0, sum_w = 0.0, sum_f = 0.0;
        for (std::int64_t j = 0; j <= G; ++j) {
            const double a = w[static_cast<std::size_t>(j)], b = f[static_cast<std::size_t>(j)];
            if (a == 0.0 && b == 0.0) continue;
            bool reached = false;
            const std::int64_t first = std::max<std::int64_t>(0, j - 2) / per, last = std::min(G - 1, j + 1) / per;
            for (std::int64_t c = first; c <= last && !reached; ++c)
                reached = g.cells.weight[static_cast<std::size_t>(2 * c + y)] > 0.0;
            if (!reached) corrupt(kOne, "node masses where no rows lie");
            abs_w += std::fabs(a);
            abs_f += std::fabs(b);
            sum_w += a;
            sum_f += b;
        }
        if (abs_w > kMaxSpread * cell_weight[y] * (1.0 + kSumTolerance) + kTiny ||
            abs_f > kMaxSpread * cell_f[y] * (1.0 + kSumTolerance) + kTiny)
            corrupt(kOne, "node masses larger than binning makes them");
        if (!close(sum_w, cell_weight[y], g.weight) || !close(sum_f, cell_f[y], g.weight))
            corrupt(kOne, "the grid's sums do not add up to its totals");
    }
    if (!(g.weight > 0.0)) return;
    const double sigma = min_sigma_for(G);
    const std::int64_t mesh = std::max<std::int64_t>(kMinReadIntervals, G / 4);
    std::vector<double> ws(static_cast<std::size_t>(mesh + 1)), fs(ws.size());
    double excess = 0.0;
    for (int y = 0; y < 2; ++y) {
        Spectrum(masses[y]->data(), G).evaluate(sigma, ws.data(), nullptr, mesh);
        Spectrum(sums_f[y]->data(), G).evaluate(sigma, fs.data(), nullptr, mesh);
        for (std::int64_t k = 0; k <= mesh; ++k) {
            const double a = ws[static_cast<std::size_t>(k)], b = fs[static_cast<std::size_t>(k)];
            const double off = std::max(0.0, -a) + std::max(0.0, -b) + std::max(0.0, b - a);
            excess += (k == 0 || k == mesh ? 0.5 : 1.0) * off;
        }
    }
    if (!(excess / static_cast<double>(mesh) <= kSmoothTolerance * g.weight))
        corrupt(kOne, "node masses that no rows give (a negative density or labels outside it)");
}

Summary read_grid(ByteReader& r, const Header& h, const Mapping& mapping, MemoryBudget& budget) {
    const std::int64_t G = h.resolution;
    const auto nodes = static_cast<std::uint64_t>(G + 1), slots = static_cast<std::uint64_t>(2 * (G / 8));
    // The runs' shape first, without allocating: then the memory, then the values.
    const std::size_t start = r.pos();
    {
        ByteReader scan = r;
        for (int a = 0; a < 4; ++a) scan.scan_runs(nodes);
        for (int a = 0; a < 4; ++a) scan.scan_runs(slots);
        if (!scan.done()) corrupt(kOne, "trailing bytes after the grid");
    }
    if (r.pos() != start) throw std::logic_error("the scan moved the reader");
    budget.lend(grid_read_memory(G), kOne);
    Summary g;
    g.mapping = mapping;
    g.content = Content::Full;
    g.intervals = G;
    g.w0 = r.runs(nodes);
    g.w1 = r.runs(nodes);
    g.f0 = r.runs(nodes);
    g.f1 = r.runs(nodes);
    g.cells.cells = G / 8;
    g.cells.rows = r.runs(slots);
    g.cells.weight = r.runs(slots);
    g.cells.weight_sq = r.runs(slots);
    g.cells.weight_f = r.runs(slots);
    g.rows = h.rows;
    g.positive_rows = h.positive;
    g.weight = h.weight;
    g.weight_exp = h.weight_exp;
    double cell_weight[2] = {0, 0}, cell_f[2] = {0, 0};
    check_cells(g, h, cell_weight, cell_f);
    check_nodes(g, cell_weight, cell_f);
    return g;  // without its residual: the blocks it becomes derive none
}

// A length-prefixed part: a u64 size, then that many bytes (their offset).
std::pair<std::size_t, std::size_t> part(ByteReader& r) {
    const auto size = r.get<std::uint64_t>();
    if (size > r.left()) corrupt(r.kind(), "a part overruns the payload");
    return {r.skip(size), static_cast<std::size_t>(size)};
}

void put_part(ByteWriter& w, const std::string& bytes) {
    w.put(static_cast<std::uint64_t>(bytes.size()));
    w.out += bytes;
}

// A part that is one sketch's bytes, read within the budget, of the given
// metric and resolution (`kind` names the whole in messages).
Sketch read_part(const std::string& bytes, std::pair<std::size_t, std::size_t> at, Metric metric,
                 std::int64_t resolution, MemoryBudget& budget, SketchKind kind, const char* what) {
    const std::string raw = bytes.substr(at.first, at.second);
    try {
        Sketch s = Sketch::from_bytes(raw, budget);
        if (s.metric() != metric || s.resolution() != resolution)
            corrupt(kind, std::string(what) + "'s resolution or metric differs from the header's");
        return s;
    } catch (const CorruptSketch& e) {
        if (std::string(e.what()).rfind("corrupt sketch: ", 0) != 0) throw;
        corrupt(kind, std::string(what) + ": " + (e.what() + 16));
    }
}

}  // namespace

std::string Sketch::to_bytes() const {
    const State s = snapshot();
    ByteWriter body;
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
        const Summary g = s.grid->dense();
        for (const auto* v : {&g.w0, &g.w1, &g.f0, &g.f1, &g.cells.rows, &g.cells.weight, &g.cells.weight_sq,
                              &g.cells.weight_f})
            body.runs(*v);
    }
    ByteWriter fields;
    fields.put(static_cast<std::uint8_t>(mapping_.metric));
    fields.put(static_cast<std::uint8_t>(s.atoms ? 0 : 1));
    fields.put(static_cast<std::uint8_t>(weighted ? 1 : 0));
    fields.put(static_cast<std::uint8_t>((s.traits.whole ? 1 : 0) | (s.traits.whole && s.traits.over_one ? 2 : 0)));
    fields.put(static_cast<std::int32_t>(s.weight_exp()));
    fields.put(resolution_);
    fields.put(s.rows);
    fields.put(static_cast<std::uint64_t>(s.positive_rows()));
    fields.put(s.total_scaled());
    return seal(kOne, fields.out, body.out);
}

Sketch Sketch::from_bytes(const std::string& bytes) {
    MemoryBudget budget(default_read_memory(bytes.size()));
    return from_bytes(bytes, budget);
}

Sketch Sketch::from_bytes(const std::string& bytes, MemoryBudget& budget) {
    const Header h = open_sketch(bytes);
    check_header(h);
    budget.take(sizeof(Sketch), kOne);
    Sketch s(h.metric == 1 ? Metric::Logit : Metric::L1, h.resolution);
    s.state_.rows = h.rows;
    // Version 2 kept no traits: known only for atoms of unit weights (whole,
    // none above 1); otherwise taken as not whole, so no warning about counts.
    if (h.version == 2) s.state_.traits = WeightTraits{h.form == 0 && h.weighted == 0 && h.weight_exp == 0, false};
    else s.state_.traits = WeightTraits{(h.traits & 1) != 0, (h.traits & 2) != 0};
    ByteReader r(bytes, h.payload, h.payload_end, kOne);
    if (h.form == 0) {
        s.state_.atoms = std::make_shared<const Atoms>(read_atoms(r, h, s.mapping_, s.max_atoms(), budget));
    } else {
        s.state_.atoms = nullptr;
        s.state_.grid = BlockedSummary(read_grid(r, h, s.mapping_, budget));
        budget.take(s.state_.grid->memory_bytes(), kOne);
    }
    return s;
}

// --- GroupedSketch, version 5 --------------------------------------------------------------
//   24 u8 metric   25–31 zero   32 i64 resolution   40 u64 groups   48 u64 length of the keys
// payload: the keys (the caller's encoding), then per group a u64 length and its sketch's bytes.

std::string GroupedSketch::to_bytes(const std::string& keys, std::int64_t groups) const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    if (groups < 0 || groups > static_cast<std::int64_t>(sketches_.size()))
        throw std::logic_error("keys for groups the set does not hold");
    ByteWriter fields, body;
    fields.put(static_cast<std::uint8_t>(metric_));
    fields.out.append(7, '\0');
    fields.put(resolution_);
    fields.put(static_cast<std::uint64_t>(groups));
    fields.put(static_cast<std::uint64_t>(keys.size()));
    body.out = keys;
    for (std::int64_t g = 0; g < groups; ++g) put_part(body, sketches_[static_cast<std::size_t>(g)].to_bytes());
    return seal(kGrouped, fields.out, body.out);
}

std::unique_ptr<GroupedSketch> GroupedSketch::from_bytes(const std::string& bytes, MemoryBudget& budget,
                                                         std::string& keys) {
    const std::uint32_t version = read_version(bytes, kGrouped);
    if (version != format_of(kGrouped).version)
        corrupt(kGrouped, "unknown format version " + std::to_string(version));
    const Envelope e = open_envelope(bytes, kGrouped);
    ByteReader header(bytes, e.fields, e.payload, kGrouped);
    const auto metric = header.get<std::uint8_t>();
    for (int k = 0; k < 7; ++k)
        if (header.get<std::uint8_t>() != 0) corrupt(kGrouped, "bad header flags");
    const auto resolution = header.get<std::int64_t>();
    const auto groups = header.get<std::uint64_t>(), key_bytes = header.get<std::uint64_t>();
    if (metric > 1) corrupt(kGrouped, "bad header flags");
    if (!valid_resolution(resolution)) corrupt(kGrouped, "bad resolution " + std::to_string(resolution));
    ByteReader r(bytes, e.payload, e.payload_end, kGrouped);
    // A group takes at least its length and a sketch's header and checksum.
    if (groups > r.left() / (8 + format_of(kOne).header_bytes + kChecksumBytes) + 1 || key_bytes > r.left() ||
        (groups == 0) != (key_bytes == 0))
        corrupt(kGrouped, "more groups or keys than the payload holds");
    keys = r.bytes(key_bytes);
    budget.take(sizeof(GroupedSketch) + groups * (sizeof(Sketch) + 2 * sizeof(std::size_t)), kGrouped);
    std::vector<std::pair<std::size_t, std::size_t>> parts;
    parts.reserve(static_cast<std::size_t>(groups));
    for (std::uint64_t g = 0; g < groups; ++g) parts.push_back(part(r));
    if (!r.done()) corrupt(kGrouped, "trailing bytes after the groups");
    const Metric m = metric == 1 ? Metric::Logit : Metric::L1;
    auto out = std::make_unique<GroupedSketch>(m, resolution);
    out->sketches_.reserve(parts.size());
    for (const auto& at : parts) {
        Sketch s = read_part(bytes, at, m, resolution, budget, kGrouped, "a group");
        if (s.rows() == 0) corrupt(kGrouped, "a group without rows");
        out->sketches_.push_back(std::move(s));
    }
    return out;
}

// --- ComparisonSketch (PairedSketch), version 1 ---------------------------------------------
//   24 u8 metric   25–27 zero   28 u32 models   32 i64 resolution   40 i64 unit cells
//   48 i32 the units' weight exponent   52 u32 zero   56 u64 units   64 u64 length of the names
// payload: the names (the caller's encoding), per model a u64 length and its
// sketch's bytes, then the units column by column: keys (u32, models + 1 a
// unit), Σw, Σw², Σw(y − f) per model, Σw·x per model (f64).

std::string PairedSketch::to_bytes(const std::string& names) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::uint64_t units = static_cast<std::uint64_t>(units_.size());
    ByteWriter fields, body;
    fields.put(static_cast<std::uint8_t>(mapping_.metric));
    fields.out.append(3, '\0');
    fields.put(static_cast<std::uint32_t>(sketches_.size()));
    fields.put(sketches_[0].resolution());
    fields.put(unit_cells_);
    fields.put(static_cast<std::int32_t>(units_.weight_exp));
    fields.put(std::uint32_t{0});
    fields.put(units);
    fields.put(static_cast<std::uint64_t>(names.size()));
    body.out = names;
    for (const Sketch& s : sketches_) put_part(body, s.to_bytes());
    auto column = [&body](const auto& v) { body.out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(v[0])); };
    column(units_.key);
    column(units_.weight);
    column(units_.weight_sq);
    column(units_.residual);
    column(units_.weight_x);
    return seal(kComparison, fields.out, body.out);
}

std::unique_ptr<PairedSketch> PairedSketch::from_bytes(const std::string& bytes, MemoryBudget& budget,
                                                       std::string& names) {
    const std::uint32_t version = read_version(bytes, kComparison);
    if (version != format_of(kComparison).version)
        corrupt(kComparison, "unknown format version " + std::to_string(version));
    const Envelope e = open_envelope(bytes, kComparison);
    ByteReader header(bytes, e.fields, e.payload, kComparison);
    const auto metric = header.get<std::uint8_t>();
    bool zero = true;
    for (int k = 0; k < 3; ++k) zero = zero && header.get<std::uint8_t>() == 0;
    const auto models = header.get<std::uint32_t>();
    const auto resolution = header.get<std::int64_t>(), cells = header.get<std::int64_t>();
    const auto weight_exp = header.get<std::int32_t>();
    zero = zero && header.get<std::uint32_t>() == 0;
    const auto units = header.get<std::uint64_t>(), name_bytes = header.get<std::uint64_t>();
    if (metric > 1 || !zero) corrupt(kComparison, "bad header flags");
    if (models < 2 || models > 64) corrupt(kComparison, "bad number of models " + std::to_string(models));
    if (!valid_resolution(resolution)) corrupt(kComparison, "bad resolution " + std::to_string(resolution));
    if (!is_power_of_two(cells) || cells < kMinUnitCells || cells > (std::int64_t{1} << 16))
        corrupt(kComparison, "bad number of unit cells " + std::to_string(cells));
    if (!possible_weight_exp(weight_exp)) corrupt(kComparison, "bad weight exponent " + std::to_string(weight_exp));
    const std::uint64_t k = models, per_unit = (k + 1) * sizeof(std::uint32_t) + (2 + 2 * k) * sizeof(double);
    ByteReader r(bytes, e.payload, e.payload_end, kComparison);
    if (name_bytes > r.left() || units > r.left() / per_unit) corrupt(kComparison, "more units or names than the payload holds");
    // Beyond kMaxSketchUnits units a sketch coarsens its cells, down to kMinUnitCells.
    if (units > static_cast<std::uint64_t>(kMaxSketchUnits) && cells > kMinUnitCells)
        corrupt(kComparison, "more units than the sketch keeps at its cells");
    names = r.bytes(name_bytes);
    std::vector<std::pair<std::size_t, std::size_t>> parts;
    for (std::uint64_t m = 0; m < k; ++m) parts.push_back(part(r));
    if (r.left() != units * per_unit) corrupt(kComparison, "the units do not fill the payload");
    // The table and its index (a key's bytes and a node each).
    budget.take(sizeof(PairedSketch) + units * (per_unit + (k + 1) * sizeof(std::uint32_t) + 96), kComparison);

    const Metric mt = metric == 1 ? Metric::Logit : Metric::L1;
    auto out = std::make_unique<PairedSketch>(mt, resolution, static_cast<std::int64_t>(models), cells);
    out->sketches_.clear();
    for (std::uint64_t m = 0; m < k; ++m)
        out->sketches_.push_back(read_part(bytes, parts[m], mt, resolution, budget, kComparison, "a model"));
    const Sketch& first = out->sketches_[0];
    for (const Sketch& s : out->sketches_) {
        const WeightTraits a = s.weight_traits(), b = first.weight_traits();
        if (s.rows() != first.rows() || !close(s.total_weight(), first.total_weight(), first.total_weight()) ||
            a.whole != b.whole || a.over_one != b.over_one)
            corrupt(kComparison, "the models' sketches hold different rows");
    }
    PairedUnits& u = out->units_;
    u.weight_exp = weight_exp;
    auto column = [&](auto& v, std::uint64_t size) {
        v.resize(static_cast<std::size_t>(size));
        std::memcpy(v.data(), bytes.data() + r.skip(size * sizeof(v[0])), static_cast<std::size_t>(size) * sizeof(v[0]));
    };
    column(u.key, units * (k + 1));
    column(u.weight, units);
    column(u.weight_sq, units);
    column(u.residual, units * k);
    column(u.weight_x, units * k);
    // Every unit as rows make it: a key of cells and a label, Σw and Σw² of
    // its rows, and per model the rows' mean position in the unit's cell and
    // mean prediction there (from the residual); together, the models' rows.
    const double per_cell = 1.0 / static_cast<double>(cells);
    const Mapping& mapping = out->mapping_;
    double total = 0.0;
    for (std::uint64_t i = 0; i < units; ++i) {
        const double w = u.weight[i], w2 = u.weight_sq[i];
        const std::uint32_t label = u.key[i * (k + 1) + k];
        bool ok = std::isfinite(w) && w >= 0.0 && label <= 1 && w <= static_cast<double>(first.rows()) * kMaxScaledWeight;
        ok = ok && (w > 0.0 ? possible_squares(w, w2, static_cast<double>(first.rows())) : w2 == 0.0);
        for (std::uint64_t m = 0; ok && m < k; ++m) {
            const std::uint32_t c = u.key[i * (k + 1) + m];
            const double res = u.residual[i * k + m], wx = u.weight_x[i * k + m];
            if (c >= static_cast<std::uint64_t>(cells) || !std::isfinite(res) || !std::isfinite(wx)) {
                ok = false;
                break;
            }
            const double lo = static_cast<double>(c) * per_cell, hi = lo + per_cell;
            const double slack = kSumTolerance * w + 2.0 * kLogitEpsilon * w;
            const double wf = label * w - res;  // Σw·f
            ok = wx >= lo * w - slack && wx <= hi * w + slack && wf >= mapping.prediction(lo) * w - slack &&
                 wf <= mapping.prediction(hi) * w + slack;
        }
        if (!ok) corrupt(kComparison, "a unit is inconsistent");
        total += w;
        const auto [it, added] = out->index_.emplace(key_bytes_of(u, static_cast<std::size_t>(i)), static_cast<std::size_t>(i));
        if (!added) corrupt(kComparison, "a unit appears twice");
    }
    if (!close(std::ldexp(total, -weight_exp), first.total_weight(), first.total_weight()))
        corrupt(kComparison, "the units do not add up to the models' rows");
    return out;
}

}  // namespace smoothece
