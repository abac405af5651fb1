// Threads: how many this process may use, a persistent fork-safe pool that
// runs a parallel loop, and cooperative cancellation of long calls.
#pragma once

#include <cstdint>
#include <functional>

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

// Cooperative cancellation. The bindings install a check (Ctrl-C) for the
// duration of one call; long loops call interruption_point() at safe points,
// which throws Cancelled once the check fired, on every thread of the call.
// The check itself runs only on the calling thread, at most every ~50 ms.
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

}  // namespace smoothece
