#include "runtime/pool.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <exception>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/errors.hpp"

#if defined(__linux__)
#include <sched.h>
#endif
#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#include <unistd.h>
#define SMOOTHECE_HAVE_FORK 1
#endif

namespace smoothece {
namespace {

// --- How many CPUs -----------------------------------------------------------------

#if defined(__linux__)
// ceil(quota / period) of a cgroup v2 "cpu.max" ("max 100000" = no quota) or
// of cgroup v1's cfs files; 0 when there is no quota.
int cgroup_v2_limit(const std::string& dir) {
    std::ifstream in(dir + "/cpu.max");
    std::string quota;
    double period = 0.0;
    if (!(in >> quota >> period) || quota == "max" || !(period > 0.0)) return 0;
    return static_cast<int>(std::ceil(std::stod(quota) / period));
}

int cgroup_v1_limit(const std::string& dir) {
    std::ifstream q(dir + "/cpu.cfs_quota_us"), p(dir + "/cpu.cfs_period_us");
    double quota = -1.0, period = 0.0;
    if (!(q >> quota) || !(p >> period) || quota <= 0.0 || period <= 0.0) return 0;
    return static_cast<int>(std::ceil(quota / period));
}

// The tightest quota on this process's cgroup (v2, then v1), 0 for none.
int cgroup_cpu_limit() {
    std::ifstream self("/proc/self/cgroup");
    std::string line, v2_path, v1_path;
    while (std::getline(self, line)) {
        if (line.rfind("0::", 0) == 0) v2_path = line.substr(3);
        const auto cpu = line.find(":cpu");
        if (cpu != std::string::npos && line.find(",cpu") == std::string::npos) v1_path = line.substr(line.rfind(':') + 1);
    }
    int best = 0;
    auto take = [&best](int limit) {
        if (limit > 0 && (best == 0 || limit < best)) best = limit;
    };
    take(cgroup_v2_limit("/sys/fs/cgroup"));  // a container usually sees its own cgroup as the root
    if (!v2_path.empty()) take(cgroup_v2_limit("/sys/fs/cgroup" + v2_path));
    take(cgroup_v1_limit("/sys/fs/cgroup/cpu"));
    if (!v1_path.empty()) take(cgroup_v1_limit("/sys/fs/cgroup/cpu" + v1_path));
    return best;
}
#endif

int count_cpus() {
    int cpus = static_cast<int>(std::thread::hardware_concurrency());
#if defined(__linux__)
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) cpus = CPU_COUNT(&set);
    const int quota = cgroup_cpu_limit();
    if (quota > 0) cpus = std::min(cpus, quota);
#endif
    return std::max(cpus, 1);
}

// --- Cancellation ------------------------------------------------------------------

struct CallState {
    InterruptCheck check = nullptr;
    void* context = nullptr;
    std::atomic<bool> cancelled{false};
    std::chrono::steady_clock::time_point last_check = std::chrono::steady_clock::now();
};

thread_local CallState* tl_call = nullptr;  // the call this thread works for
thread_local bool tl_is_caller = false;     // whether it is the call's own (Python) thread

// The check runs at most this often (it takes the GIL for a moment), and
// this often while the call's thread waits for workers.
constexpr std::chrono::milliseconds kCheckInterval{20};
constexpr std::chrono::milliseconds kWaitingCheck{20};

// On the call's own thread: runs the check if it is due, and marks the call
// cancelled if it fires. Returns whether the call is cancelled.
bool poll_interrupt(CallState& call) {
    if (call.cancelled.load(std::memory_order_relaxed)) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now - call.last_check < kCheckInterval) return false;
    call.last_check = now;
    if (!call.check(call.context)) return false;
    call.cancelled.store(true, std::memory_order_relaxed);
    return true;
}

// --- The pool ------------------------------------------------------------------------

struct Job {
    const std::function<void(int)>* body = nullptr;
    CallState* call = nullptr;
    int remaining = 0;  // tasks not yet finished, under Pool::mutex
    std::exception_ptr error;
};

struct Task {
    Job* job;
    int index;
};

class Pool {
public:
    explicit Pool(int workers) {
        for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { serve(); });
        for (auto& t : threads_) t.detach();  // never joined: the process may exit while they wait
    }

    void run(int nthreads, const std::function<void(int)>& body) {
        Job job;
        job.body = &body;
        job.call = tl_call;
        job.remaining = nthreads - 1;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            for (int t = 1; t < nthreads; ++t) queue_.push_back({&job, t});
        }
        work_ready_.notify_all();
        execute(job, 0);
        std::unique_lock<std::mutex> lock(mutex_);
        // The call's own thread keeps checking for Ctrl-C while the workers
        // finish their tasks (the check runs only on that thread); the
        // workers see the cancellation at their next interruption point.
        const bool checks = tl_is_caller && job.call != nullptr && job.call->check != nullptr;
        while (job.remaining > 0) {
            if (!queue_.empty()) {
                run_queued(lock);  // help: run any queued task instead of idling
            } else if (checks) {
                job_done_.wait_for(lock, kWaitingCheck);
                if (job.remaining == 0) break;
                lock.unlock();
                poll_interrupt(*job.call);
                lock.lock();
            } else {
                job_done_.wait(lock);
            }
        }
        lock.unlock();
        if (job.error) std::rethrow_exception(job.error);
        if (job.call && job.call->cancelled.load(std::memory_order_relaxed)) throw Cancelled();
    }

private:
    void serve() {
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            work_ready_.wait(lock, [this] { return !queue_.empty(); });
            run_queued(lock);
        }
    }

    // Takes the first queued task, runs it with the lock released, and
    // counts it finished. Called (and returns) with mutex_ held, the queue
    // not empty.
    void run_queued(std::unique_lock<std::mutex>& lock) {
        const Task task = queue_.front();
        queue_.pop_front();
        lock.unlock();
        execute(*task.job, task.index);
        lock.lock();
        finish(*task.job);
    }

    // Runs one index of a job on this thread, recording its exception. The
    // thread checks for Ctrl-C in it when it is the thread of the job's call
    // (its index 0, or a task of its own call that it helps with), never for
    // another call's.
    void execute(Job& job, int index) {
        CallState* const saved_call = tl_call;
        const bool saved_caller = tl_is_caller;
        tl_call = job.call;
        tl_is_caller = saved_caller && job.call == saved_call;
        try {
            (*job.body)(index);
        } catch (...) {
            std::lock_guard<std::mutex> lock(error_mutex_);
            if (!job.error) job.error = std::current_exception();
            if (job.call) job.call->cancelled.store(true, std::memory_order_relaxed);  // the others stop early
        }
        tl_call = saved_call;
        tl_is_caller = saved_caller;
    }

    // Called with mutex_ held.
    void finish(Job& job) {
        if (--job.remaining == 0) job_done_.notify_all();
    }

    std::mutex mutex_, error_mutex_;
    std::condition_variable work_ready_, job_done_;
    std::deque<Task> queue_;
    std::vector<std::thread> threads_;
};

// The process's pool, made on first use. After fork() the child has only the
// forking thread: the parent's pool (whose lock a worker may have held) is
// abandoned, not touched, and the child makes its own.
std::mutex* pool_mutex = new std::mutex;  // leaked on purpose: usable until the process ends
Pool* the_pool = nullptr;
bool pool_stale = false;

#if defined(SMOOTHECE_HAVE_FORK)
void before_fork() { pool_mutex->lock(); }
void after_fork_parent() { pool_mutex->unlock(); }
void after_fork_child() {
    pool_mutex->unlock();
    pool_stale = true;
}
#endif

Pool& pool() {
#if defined(SMOOTHECE_HAVE_FORK)
    static const int registered = pthread_atfork(before_fork, after_fork_parent, after_fork_child);
    (void)registered;
#endif
    std::lock_guard<std::mutex> lock(*pool_mutex);
    if (the_pool == nullptr || pool_stale) {
        the_pool = new Pool(available_cpus() - 1);  // the caller is the other thread
        pool_stale = false;
    }
    return *the_pool;
}

}  // namespace

int available_cpus() {
    static const int cpus = count_cpus();
    return cpus;
}

int thread_count(std::int64_t requested, std::int64_t work, std::int64_t min_items) {
    const std::int64_t cpus = available_cpus();
    const std::int64_t wanted = requested > 0 ? std::min(requested, cpus) : cpus;
    const std::int64_t by_work = std::max<std::int64_t>(1, work / std::max<std::int64_t>(1, min_items));
    return static_cast<int>(std::min(wanted, by_work));
}

void parallel_for(int nthreads, const std::function<void(int)>& body) {
    if (nthreads <= 1) {
        body(0);
        return;
    }
    pool().run(nthreads, body);
}

InterruptScope::InterruptScope(InterruptCheck check, void* context) : previous_(tl_call) {
    auto* call = new CallState;
    call->check = check;
    call->context = context;
    tl_call = call;
    tl_is_caller = true;
}

InterruptScope::~InterruptScope() {
    delete tl_call;
    tl_call = static_cast<CallState*>(previous_);
    tl_is_caller = previous_ != nullptr;
}

void interruption_point() {
    CallState* call = tl_call;
    if (call == nullptr) return;
    if (call->cancelled.load(std::memory_order_relaxed)) throw Cancelled();
    // The clock at every point of the call's own thread (~20 ns; points lie
    // microseconds to milliseconds of work apart), the check when it is due.
    if (tl_is_caller && call->check != nullptr && poll_interrupt(*call)) throw Cancelled();
}

void assign_interruptibly(RowVector<double>& v, std::size_t n, double value) {
    constexpr std::size_t kChunk = std::size_t{1} << 22;
    v.clear();
    v.reserve(n);
    while (v.size() < n) {
        interruption_point();
        v.insert(v.end(), std::min(kChunk, n - v.size()), value);
    }
}

}  // namespace smoothece
