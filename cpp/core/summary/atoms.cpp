#include "summary/atoms.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>

namespace smoothece {
namespace {

// Multiplies the weight sums by 2^delta.
void scale_stats(AtomStats& s, int delta) {
    s.weight = std::ldexp(s.weight, delta);
    s.weight_sq = std::ldexp(s.weight_sq, 2 * delta);
    s.weight_f = std::ldexp(s.weight_f, delta);
}

}  // namespace

double Atoms::total_weight_scaled() const {
    double total = 0.0;
    for (int y = 0; y < 2; ++y)
        for (const AtomStats& s : by_label[y]) total += s.weight;
    return total;
}

void Atoms::rescale(int new_exp) {
    if (new_exp == weight_exp) return;
    for (int y = 0; y < 2; ++y)
        for (AtomStats& s : by_label[y]) scale_stats(s, new_exp - weight_exp);
    weight_exp = new_exp;
}

Atoms merged(const Atoms& a, const Atoms& b) {
    if (a.mapping != b.mapping) throw std::logic_error("merging atoms of different metrics");
    // The common exponent: the larger weights set the scale (a set without
    // weight takes the other's). Only a set whose exponent changes is copied.
    int e = a.weight_exp;
    if (a.weight_exp != b.weight_exp) {
        if (a.total_weight_scaled() == 0.0) e = b.weight_exp;
        else if (b.total_weight_scaled() > 0.0) e = std::min(a.weight_exp, b.weight_exp);
    }
    std::optional<Atoms> a_scaled, b_scaled;
    if (a.weight_exp != e) (a_scaled = a)->rescale(e);
    if (b.weight_exp != e) (b_scaled = b)->rescale(e);
    const Atoms& p = a_scaled ? *a_scaled : a;
    const Atoms& q = b_scaled ? *b_scaled : b;
    Atoms out;
    out.mapping = a.mapping;
    out.weight_exp = e;
    out.rows = a.rows + b.rows;
    // Written by index into room for both, then cut to what the union holds.
    const std::size_t np = p.size(), nq = q.size();
    out.x.resize(np + nq);
    for (auto& v : out.by_label) v.resize(np + nq);
    std::size_t i = 0, j = 0, k = 0;
    auto copy = [&out, &k](const Atoms& from, std::size_t at) {
        out.x[k] = from.x[at];
        out.by_label[0][k] = from.by_label[0][at];
        out.by_label[1][k] = from.by_label[1][at];
        ++k;
    };
    while (i < np && j < nq) {
        if (p.x[i] < q.x[j]) {
            copy(p, i++);
        } else if (q.x[j] < p.x[i]) {
            copy(q, j++);
        } else {
            copy(p, i++);
            add_stats(out.by_label[0][k - 1], q.by_label[0][j]);
            add_stats(out.by_label[1][k - 1], q.by_label[1][j]);
            ++j;
        }
    }
    while (i < np) copy(p, i++);
    while (j < nq) copy(q, j++);
    out.x.resize(k);
    for (auto& v : out.by_label) v.resize(k);
    return out;
}

}  // namespace smoothece
