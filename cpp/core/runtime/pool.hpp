// Threads: how many this process may use, a persistent fork-safe pool that
// runs parallel loops (work split in shares, or handed out item by item),
// and cooperative cancellation of long calls.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "runtime/buffer.hpp"

namespace smoothece {

// CPUs this process may run on: its affinity mask, capped by a cgroup CPU
// quota (containers), at least 1. Read once per process.
int available_cpus();

// Threads for a call that asked for `requested` (0 = all available; more
// than available is capped) with `work` items, where a thread needs at least
// `min_items` items to repay its start-up and the merge of its results.
int thread_count(std::int64_t requested, std::int64_t work, std::int64_t min_items);

// Runs body(t) for t in [0, nthreads): t = 0 on the calling thread, the rest
// on a persistent pool of worker threads (created on first use, recreated in
// a forked child, never destroyed, so the process can exit at any time). The
// first exception thrown by any body is rethrown here once all have finished.
// While it waits, the calling thread runs queued tasks, so nested calls from
// worker threads cannot deadlock.
void parallel_for(int nthreads, const std::function<void(int)>& body);

// Thread t's share [begin, end) of n items split among nthreads: contiguous
// shares in thread order, their sizes within one of each other.
struct Share {
    std::int64_t begin, end;
};
inline Share share_of(std::int64_t n, int t, int nthreads) { return {n * t / nthreads, n * (t + 1) / nthreads}; }

// Runs item(i, local) for every i in [0, count) on nthreads threads, items
// handed out one by one rather than in shares, so that a thread that loses
// its core for a while leaves its items to the others. Each thread makes
// one Local (scratch space) that its items share. Which thread runs an item
// is not fixed: an item's result must not depend on it.
template <class Local, class Item>
void parallel_items(int nthreads, std::int64_t count, Item&& item) {
    std::atomic<std::int64_t> next{0};
    parallel_for(nthreads, [&](int) {
        Local local;
        for (std::int64_t i = next++; i < count; i = next++) item(i, local);
    });
}

// Cooperative cancellation. The bindings install a check (Ctrl-C) for the
// duration of one call; long loops call interruption_point() at safe points,
// which throws Cancelled once the check fired, on every thread of the call.
// The check itself runs only on the calling thread, at most every ~20 ms: at
// its interruption points, and while it waits for the pool's workers to
// finish their tasks of the call.
using InterruptCheck = bool (*)(void* context);  // true: cancel the call

class InterruptScope {
public:
    InterruptScope(InterruptCheck check, void* context);
    ~InterruptScope();
    InterruptScope(const InterruptScope&) = delete;
    InterruptScope& operator=(const InterruptScope&) = delete;

private:
    void* previous_;
};

void interruption_point();

// Sorts v by `less`: blocks of 2^16 by std::sort, then merged pairwise,
// with an interruption point between blocks and between merges (std::sort
// of 10^7 rows takes a second without one). Ties keep no particular order,
// as with std::sort. The merges take a buffer of v's size.
template <class T, class Less>
void sort_interruptibly(std::vector<T>& v, Less less) {
    constexpr std::size_t kBlock = std::size_t{1} << 16;
    const std::size_t n = v.size();
    auto at = [&v](std::vector<T>& w, std::size_t i) { return w.begin() + static_cast<std::ptrdiff_t>(i); };
    for (std::size_t b = 0; b < n; b += kBlock) {
        interruption_point();
        std::sort(at(v, b), at(v, std::min(n, b + kBlock)), less);
    }
    if (n <= kBlock) return;
    std::vector<T> merged(n);
    for (std::size_t width = kBlock; width < n; width *= 2) {
        for (std::size_t lo = 0; lo < n; lo += 2 * width) {
            interruption_point();
            const std::size_t mid = std::min(n, lo + width), hi = std::min(n, lo + 2 * width);
            std::merge(at(v, lo), at(v, mid), at(v, mid), at(v, hi), at(merged, lo), less);
        }
        v.swap(merged);
    }
}

// v.assign(n, value) in chunks of 2^22 values (32 MB), with an interruption
// point between them: filling the gigabytes of a band's curves (mesh
// points × replicates) takes seconds.
void assign_interruptibly(RowVector<double>& v, std::size_t n, double value);

}  // namespace smoothece
