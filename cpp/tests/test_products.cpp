// The products: rows gathered by group (in order, clamped, labels intact;
// parts all weighted or none), the sketch's merge and bytes, and its
// refusals (foreign bytes, a total weight that would overflow).
#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core_rows.hpp"
#include "products/envelope.hpp"
#include "products/grouped_rows.hpp"
#include "products/groups.hpp"
#include "products/paired_sketch.hpp"
#include "products/sketch.hpp"
#include "runtime/errors.hpp"

using namespace smoothece;
using namespace smoothece::testing;

namespace {

// Grouping rows that come in parts: every part has weights, or none does.
TEST(gather_refuses_mixed_weights) {
    const Rows weighted = random_rows(100, 14, true), plain = random_rows(100, 15);
    const std::vector<std::int64_t> codes(100, 0);
    bool refused = false;
    try {
        gather_groups({weighted.inputs(), plain.inputs()}, {codes.data(), codes.data()}, 1, 1);
    } catch (const std::invalid_argument&) {
        refused = true;
    }
    check(refused, "gather_groups refuses parts with and without weights");
}

// Gathering by group: each group's rows in their original order, predictions
// clamped as every pass clamps them, labels intact (they ride in the sign bit,
// so 0 and −0 with either label are the cases to get right); weights alongside.
TEST(gather_groups_order) {
    const Rows rows{{-0.0, 0.0, 1.0, 0.25, -0.005, 1.005, 0.5, 0.0, -0.0},
                    {1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0},
                    {1, 0, 1, 0, 1, 0, 1, 1, 0}};
    Inputs in = rows.inputs();
    in.clip_lo = -0.01;
    in.clip_hi = 1.01;
    const std::vector<std::int64_t> codes = {1, 0, 1, 2, 0, 1, 2, 0, 1};
    for (std::int64_t threads : {1, 2}) {
        const GroupedRows grouped = gather_groups(in, codes.data(), 4, threads);
        GroupBuffer buffer;
        for (std::int64_t g = 0; g < 4; ++g) {
            const Inputs got = grouped.rows_of(g, buffer);
            std::size_t k = 0;
            for (std::size_t i = 0; i < codes.size(); ++i) {
                if (codes[i] != g) continue;
                const double f = std::min(std::max(rows.f[i], 0.0), 1.0) + 0.0;
                check(k < static_cast<std::size_t>(got.size()) && buffer.f[k] == f && !std::signbit(buffer.f[k]) &&
                          buffer.y[k] == rows.y[i] && reinterpret_cast<const double*>(got.w.data)[k] == rows.w[i],
                      "gather_groups: row " + std::to_string(i) + " in group " + std::to_string(g));
                ++k;
            }
            check(static_cast<std::int64_t>(k) == got.size(), "gather_groups: group " + std::to_string(g) + "'s size");
        }
    }
}

// One GroupedSketch updated from four threads at once, each batch with
// groups new to the set, while a fifth reads it: it holds every row, each
// group's sketch equals the one the rows of that group make on one thread,
// and what the reader saw was the set between whole batches.
TEST(grouped_sketch_shared_by_threads) {
    const Rows& data = shared_rows();
    constexpr int kThreads = 4, kBatches = 8;
    constexpr std::int64_t kRows = 2000, kKeys = 3;
    GroupedSketch set(Metric::L1, 1024);
    // Batch (t, b): rows from (t·kBatches + b)·kRows on; row i's group (i mod kKeys) + kKeys·(t·kBatches + b).
    auto codes_of = [&](int t, int b) {
        std::vector<std::int64_t> codes(static_cast<std::size_t>(kRows));
        for (std::int64_t i = 0; i < kRows; ++i) codes[static_cast<std::size_t>(i)] = i % kKeys + kKeys * (t * kBatches + b);
        return codes;
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int b = 0; b < kBatches; ++b) {
                const std::int64_t begin = (t * kBatches + b) * kRows;
                const std::vector<std::int64_t> codes = codes_of(t, b);
                set.update(data.inputs(begin, begin + kRows), codes.data(), 2);
            }
        });
    }
    bool whole = true;
    std::thread reader([&] {
        for (int k = 0; k < 50; ++k) whole = whole && set.total().rows() % kRows == 0;
    });
    for (auto& t : threads) t.join();
    reader.join();
    check(whole, "grouped sketch: its total read between whole batches");
    check(set.rows() == static_cast<std::uint64_t>(kThreads * kBatches * kRows), "grouped sketch: every row");
    bool equal = set.groups() == kThreads * kBatches * kKeys;
    for (int t = 0; t < kThreads && equal; ++t) {
        for (int b = 0; b < kBatches && equal; ++b) {
            const std::vector<std::int64_t> codes = codes_of(t, b);
            const std::int64_t begin = (t * kBatches + b) * kRows;
            const std::int64_t groups = kKeys * (t * kBatches + b + 1);
            const GroupedRows grouped = gather_groups(data.inputs(begin, begin + kRows), codes.data(), groups, 1);
            for (std::int64_t g = groups - kKeys; g < groups; ++g) {
                GroupBuffer buffer;
                Sketch alone(Metric::L1, 1024);
                alone.update(grouped.rows_of(g, buffer), 1);
                equal = equal && set.sketch(g).to_bytes() == alone.to_bytes();
            }
        }
    }
    check(equal, "grouped sketch: each group as its rows make it on one thread");
}

// A sketch built in two batches and merged equals the arrays, and round-trips its bytes.
TEST(sketch_merge_and_bytes) {
    const Rows& data = shared_rows();
    for (Metric metric : {Metric::L1, Metric::Logit}) {
        const std::string name = metric == Metric::L1 ? "l1" : "logit";
        Sketch a(metric, std::int64_t{1} << 15), b(metric, std::int64_t{1} << 15);
        a.update(data.inputs(0, 100000), 1);
        b.update(data.inputs(100000), 1);
        a.merge(b);
        const Sketch c = Sketch::from_bytes(a.to_bytes());
        check(c.to_bytes() == a.to_bytes(), name + ": sketch bytes round trip");
        const double arrays = smece(data, metric);
        check(std::fabs(c.analysis().smece(1).sigma - arrays) < 1e-7, name + ": merged sketch equals the arrays");
        Sketch small(metric, 1024);
        small.update(data.inputs(0, 300), 1);
        check(small.exact(), name + ": a small sketch keeps its rows exactly");
        const Sketch small_back = Sketch::from_bytes(small.to_bytes());
        check(small_back.to_bytes() == small.to_bytes(), name + ": exact sketch bytes round trip");
    }
}

// A sketch's form depends on its rows, not on their batches: 2000 distinct
// predictions in [0, 1e-9] are 2000 rows but at most 1101 positions at 2^-40,
// and rows of zero weight keep none; one update and ten give the same bytes.
TEST(sketch_form_ignores_batching) {
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> u;
    Rows tiny, zero_weight;
    for (int i = 0; i < 2000; ++i) {
        tiny.f.push_back(1e-9 * u(rng));
        tiny.y.push_back(u(rng) < 0.3 ? 1 : 0);
        const bool kept = i % 2 == 0;
        zero_weight.f.push_back(kept ? 0.25 : u(rng));  // one kept position, 1000 distinct rows of weight 0
        zero_weight.y.push_back(tiny.y.back());
        zero_weight.w.push_back(kept ? 1.0 : 0.0);
    }
    for (const Rows* rows : {&tiny, &zero_weight}) {
        const std::string name = rows == &tiny ? "tiny range" : "zero weights";
        Sketch one(Metric::L1, std::int64_t{1} << 12), batched(Metric::L1, std::int64_t{1} << 12);
        one.update(rows->inputs(), 1);
        for (std::int64_t b = 0; b < 2000; b += 200) batched.update(rows->inputs(b, b + 200), 1);
        check(one.exact() && batched.exact(), name + ": more distinct rows than kept positions stay atoms");
        check(one.to_bytes() == batched.to_bytes(), name + ": one update and ten give the same bytes");
        check(one.analysis().smece(1).sigma == batched.analysis().smece(1).sigma, name + ": and the same σ*");
    }
}

// Bytes with `bytes[at] = value` and their checksum recomputed.
std::string altered(std::string bytes, std::size_t at, const std::string& value) {
    bytes.replace(at, value.size(), value);
    const std::uint64_t h = checksum64(bytes.data(), bytes.size() - 8);
    bytes.replace(bytes.size() - 8, 8, std::string(reinterpret_cast<const char*>(&h), 8));
    return bytes;
}

template <class T>
std::string raw_of(T v) {
    return std::string(reinterpret_cast<const char*>(&v), sizeof v);
}

// Version-4 sketch bytes rewritten in the layout of versions 2 and 3 (the
// same 40 bytes of fields at 16, the payload's length at 56, FNV-1a).
std::string legacy(const std::string& v4, std::uint32_t version, char traits) {
    std::string out = v4.substr(0, 8) + raw_of(version) + raw_of(std::uint32_t{64}) + v4.substr(24, 40);
    out[19] = traits;
    const std::string payload = v4.substr(64, v4.size() - 72);
    out += raw_of(static_cast<std::uint64_t>(payload.size())) + payload;
    return out + raw_of(fnv1a64(out.data(), out.size()));
}

// Whether weights may count rows: whole weights with one above 1, kept through
// merges and bytes; unit and {0, 1} weights are not counts, nor is a fraction.
TEST(weight_traits) {
    auto traits = [](std::vector<double> w) {
        return weight_traits_of(Column{reinterpret_cast<const char*>(w.data()), static_cast<std::int64_t>(w.size()),
                                       sizeof(double), DType::Float64, "weights"});
    };
    check(traits({0, 1, 1, 0}).whole && !traits({0, 1, 1, 0}).counts(), "{0, 1} weights are whole, not counts");
    check(traits({1, 3, 0, 2}).counts(), "whole weights above 1 may be counts");
    check(!traits({1, 3, 0.5}).whole && !traits({1, 3, 0.5}).counts(), "a fraction anywhere: not counts");
    check(traits({0x1p60, 1}).counts() && !traits({0x1p51 + 0.5, 2}).whole, "whole and not, near 2^52");
    std::vector<double> many(10000, 2.0);
    many[9999] = 2.25;  // in the third block of 4096
    check(!traits(many).whole, "a fraction in the last block");
    const std::vector<std::int64_t> ints = {1, 0, 7};
    check(weight_traits_of(Column{reinterpret_cast<const char*>(ints.data()), 3, sizeof(std::int64_t), DType::Int64,
                                  "weights"})
              .counts(),
          "integer dtypes are whole");
    const Rows counted{{0.2, 0.4}, {1.0, 3.0}, {0, 1}}, unit{{0.2, 0.6}, {}, {1, 0}}, fraction{{0.3}, {0.5}, {1}};
    Sketch a(Metric::L1, 256), b(Metric::L1, 256);
    a.update(counted.inputs(), 1);
    b.update(unit.inputs(), 1);
    check(a.weight_traits().counts() && !b.weight_traits().counts(), "a sketch keeps its weights' traits");
    Sketch both = a;
    both.merge(b);
    check(both.weight_traits().counts(), "unit weights added to counts: still counts");
    const std::string bytes = both.to_bytes();
    check(Sketch::from_bytes(bytes).weight_traits().counts(), "the traits go through the bytes");
    check(Sketch::from_bytes(legacy(bytes, 3, '\x03')).weight_traits().counts(), "and through version 3 bytes");
    // Version 2 bytes (no traits): read, with traits unknown, taken as not counts.
    const Sketch read = Sketch::from_bytes(legacy(bytes, 2, '\0'));
    check(!read.weight_traits().counts() && read.rows() == both.rows(), "version 2 bytes read, traits unknown");
    both.update(fraction.inputs(), 1);
    check(!both.weight_traits().counts() && !both.weight_traits().whole, "a fractional weight ends it");
    bool refused = false;
    try {
        Sketch::from_bytes(altered(bytes, 27, std::string(1, '\x02')));
    } catch (const CorruptSketch&) {
        refused = true;
    }
    check(refused, "traits that cannot be (above 1, not whole) are refused");
}

TEST(corrupt_sketch_refused) {
    bool corrupt = false;
    try {
        Sketch::from_bytes("not a sketch, and too short to be one: forty or more bytes long, sixty-four even");
    } catch (const CorruptSketch&) {
        corrupt = true;
    }
    check(corrupt, "foreign bytes refused as a corrupt sketch");
}

TEST(overflowing_weight_refused) {
    Sketch s(Metric::L1, 256);
    const Rows huge{{0.5, 0.5}, {1.5e308, 1.5e308}, {1, 0}};
    bool overflow = false;
    try {
        s.update(huge.inputs(0, 1), 1);
        s.update(huge.inputs(1, 2), 1);
    } catch (const InputError& e) {
        overflow = e.argument == "weights" && s.rows() == 1;
    }
    check(overflow, "a total weight that would overflow is refused and changes nothing");
}

// The envelope's checksum is XXH64 (seed 0): the specification's values.
TEST(checksum_is_xxh64) {
    const std::string spam = "Nobody inspects the spammish repetition";
    check(checksum64("", 0) == 0xEF46DB3751D8E999ULL, "XXH64 of no bytes");
    check(checksum64("abc", 3) == 0x44BC2CF5AD770999ULL, "XXH64 of 'abc'");
    check(checksum64(spam.data(), spam.size()) == 0xFBCEA83C8A378BF1ULL, "XXH64 past one 32-byte stripe");
}

bool refused_as_corrupt(const std::string& bytes) {
    try {
        Sketch::from_bytes(bytes);
    } catch (const CorruptSketch&) {
        return true;
    }
    return false;
}

// Sums that keep their totals but that no rows give are refused: node masses
// moved far from every row, two large opposite masses at neighbouring nodes
// (an smECE far above 1), a negative density where rows lie.
TEST(sketch_bytes_refuse_what_no_rows_give) {
    Rows data = random_rows(2000, 21);
    for (double& v : data.f) v *= 0.4;  // no rows above 0.4: node 140 of 256 lies beyond every row's reach
    Sketch s(Metric::L1, 256);
    s.update(data.inputs(), 1);
    check(!s.exact(), "2000 distinct predictions: the grid");
    const std::string bytes = s.to_bytes();
    check(!refused_as_corrupt(bytes), "the sketch's own bytes read");
    // The payload starts with w0 as runs; the first literal run holds node 0.
    // Rewrite the grid through its own fields: decode w0, change it, encode again.
    ByteReader r(bytes, 64, bytes.size() - 8, SketchKind::Calibration);
    std::vector<double> w0 = r.runs(257);
    const std::string rest = bytes.substr(r.pos(), bytes.size() - 8 - r.pos());
    auto with_w0 = [&](const std::vector<double>& nodes) {
        ByteWriter w;
        w.runs(nodes);
        std::string out = bytes.substr(0, 64) + w.out + rest;
        const std::uint64_t payload = out.size() - 64;
        out.replace(16, 8, raw_of(payload));
        return out + raw_of(checksum64(out.data(), out.size()));
    };
    check(!refused_as_corrupt(with_w0(w0)), "re-encoding w0 unchanged reads");
    std::vector<double> spike = w0;
    spike[100] += 1e6;
    spike[101] -= 1e6;
    check(refused_as_corrupt(with_w0(spike)), "opposite masses of 1e6 at neighbouring nodes refused");
    std::vector<double> moved = w0;
    moved[50] -= 0.5 * w0[50];
    moved[140] += 0.5 * w0[50];
    check(w0[50] > 1.0 && refused_as_corrupt(with_w0(moved)), "mass moved where no rows lie refused");
    std::vector<double> dip = w0;
    const double m = std::fabs(w0[60]) + 1.0;
    dip[60] -= 40 * m;
    dip[61] += 20 * m;
    dip[59] += 20 * m;
    check(refused_as_corrupt(with_w0(dip)), "a negative density where rows lie refused");
}

// A grid the bytes cannot describe: refused by its rows, or by the reader's
// memory budget before it is allocated.
TEST(sketch_bytes_read_within_budget) {
    Sketch s(Metric::L1, std::int64_t{1} << 22);
    std::vector<double> f(3000);
    for (std::size_t i = 0; i < f.size(); ++i) f[i] = 0.5 + 1e-9 * static_cast<double>(i);
    const Rows crowded{f, {}, std::vector<std::uint8_t>(f.size(), 1)};
    s.update(crowded.inputs(), 1);
    check(s.exact(), "3000 positions at 2^22: atoms");
    const std::string bytes = s.to_bytes();
    MemoryBudget tight(4096);
    bool too_large = false;
    try {
        Sketch::from_bytes(bytes, tight);
    } catch (const SketchTooLarge&) {
        too_large = true;
    }
    check(too_large, "a budget below what the atoms take is refused before allocating");
    MemoryBudget enough(default_read_memory(bytes.size()));
    check(Sketch::from_bytes(bytes, enough).to_bytes() == bytes, "the default budget reads them");
    check(enough.used() > 3000 * 72 && enough.used() < default_read_memory(bytes.size()), "the budget counts them");
}

// A grouped set and a paired sketch round-trip their bytes, keys and names kept as given.
TEST(grouped_and_paired_bytes_round_trip) {
    const Rows& data = shared_rows();
    GroupedSketch set(Metric::Logit, 1024);
    std::vector<std::int64_t> codes(5000);
    for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<std::int64_t>(i % 3);
    set.update(data.inputs(0, 5000), codes.data(), 1);
    const std::string keys = "three keys, as the caller encodes them";
    const std::string bytes = set.to_bytes(keys, 3);
    MemoryBudget budget(default_read_memory(bytes.size()));
    std::string keys_back;
    const auto back = GroupedSketch::from_bytes(bytes, budget, keys_back);
    check(keys_back == keys && back->groups() == 3 && back->rows() == 5000, "a grouped set round-trips");
    check(back->to_bytes(keys, 3) == bytes, "and writes the same bytes again");
    PairedSketch paired(Metric::L1, 1024, 2, 64);
    const Rows other = random_rows(3000, 9, true);
    Rows second = other;
    for (double& v : second.f) v = v * 0.9;
    paired.update({other.inputs(), second.inputs()}, 1);
    const std::string pbytes = paired.to_bytes("ab");
    MemoryBudget pbudget(default_read_memory(pbytes.size()));
    std::string names;
    const auto pback = PairedSketch::from_bytes(pbytes, pbudget, names);
    check(names == "ab" && pback->units() == paired.units() && pback->to_bytes("ab") == pbytes,
          "a paired sketch round-trips");
}

}  // namespace
