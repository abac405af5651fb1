// The products: rows gathered by group (in order, clamped, labels intact;
// parts all weighted or none), the sketch's merge and bytes, and its
// refusals (foreign bytes, a total weight that would overflow).
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "core_rows.hpp"
#include "products/grouped_rows.hpp"
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

}  // namespace
