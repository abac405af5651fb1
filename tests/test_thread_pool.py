"""The persistent thread pool: the threads argument, CPUs as the affinity mask allows, fork()
(the child makes its own pool), daemon threads still computing at interpreter exit, and Ctrl-C
stopping a long call."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from conftest import synthetic

import smoothece


def run_python(code, timeout=120, **kw):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, **kw)


def test_threads_argument():
    f, y = synthetic("uniform", 1000)
    base = smoothece.smece(f, y)
    assert smoothece.smece(f, y, threads=10**6) == base  # capped at the CPUs this process may use
    assert smoothece.smece(f, y, threads=2**31) == base
    for bad, exc in [(0, ValueError), (-1, ValueError), (1.5, TypeError), (True, TypeError), ("2", TypeError)]:
        with pytest.raises(exc, match="threads"):
            smoothece.smece(f, y, threads=bad)


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs sched_setaffinity (Linux)")
def test_cpus_follow_the_affinity_mask():
    out = run_python("""
        import os
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
        import smoothece
        print(smoothece._core.available_cpus())
    """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1"


# A fresh interpreter, so that nothing but numpy and the pool holds threads when it forks (threads that
# earlier tests left in this process, Spark's or torch's, could deadlock a child for their own reasons).
# It makes threaded calls (the pool's workers are then alive) and forks two children while another
# thread keeps the pool at work; the second child, once its own pool is alive, forks a grandchild. Each
# child repeats the calls under signal.alarm (a deadlock kills it instead of hanging) and writes what it
# found to its pipe; the parent answers again, then waits for them against a deadline and prints one
# JSON line.
FORK_SCRIPT = r"""
import json, os, signal, threading, time, warnings
warnings.simplefilter("error")
# Python 3.12+ warns when a process with threads forks; such a fork is what is tested here.
warnings.filterwarnings("ignore", message=r"This process \(pid=\d+\) is multi-threaded, use of fork\(\)",
                        category=DeprecationWarning)
import numpy as np
import smoothece

rng = np.random.default_rng(0)
f = rng.uniform(size=1_000_000)
y = rng.uniform(size=f.size) < f**1.2

def os_threads():
    return len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else None

def answers():
    # the row pass, the bootstrap, the test's simulations and a sketch, each on two threads
    return {"smece": np.array([smoothece.smece(f, y, threads=2)]),
            "bootstrap": smoothece.bootstrap_smece(f, y, n_boot=50, seed=3, threads=2).replicates,
            "null": smoothece.calibration_test(f[:300_000], y[:300_000], n_sim=40, seed=5, threads=2).null,
            "sketch": np.frombuffer(smoothece.CalibrationSketch().update(f, y, threads=2).to_bytes(), np.uint8)}

def differing(got):
    return sorted(k for k in want if not np.array_equal(got[k], want[k]))

def spawn(label):
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        child(label, write_end)
    os.close(write_end)
    return label, pid, read_end

def child(label, write_end):
    signal.alarm(60)
    code, report = 1, {}
    try:
        report["threads_at_start"] = os_threads()
        report["differing"] = differing(answers())
        report["threads_after"] = os_threads()
        if label == "child 2":
            report["grandchild"] = collect([spawn("grandchild")])["grandchild"]
        code = int(bool(report["differing"]) or report.get("grandchild", {"exit": 0})["exit"] != 0)
    except BaseException as exc:
        report["raised"] = repr(exc)
    os.write(write_end, json.dumps(report).encode())
    os._exit(code)

def collect(children, deadline_s=120):
    deadline = time.monotonic() + deadline_s
    results, pending = {}, list(children)
    while pending:
        for label, pid, read_end in list(pending):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                chunks = []
                while chunk := os.read(read_end, 65536):
                    chunks.append(chunk)
                os.close(read_end)
                report = json.loads(b"".join(chunks) or b"{}")
                results[label] = {"exit": os.waitstatus_to_exitcode(status), **report}
                pending.remove((label, pid, read_end))
        if pending and time.monotonic() > deadline:
            for label, pid, read_end in pending:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                results[label] = {"exit": None, "raised": "still running at the deadline"}
            break
        time.sleep(0.01)
    return results

def busy(stop):  # keeps the pool at work while the parent forks: a worker may hold a lock at fork()
    while not stop.is_set():
        smoothece.smece(f, y, threads=2)

before = os_threads()
want = answers()
at_fork = os_threads()
stop = threading.Event()
worker = threading.Thread(target=busy, args=(stop,))
worker.start()
time.sleep(0.05)
children = [spawn("child 1"), spawn("child 2")]
stop.set()
worker.join()
parent_again = differing(answers())
results = collect(children)
print(json.dumps({"cpus": smoothece._core.available_cpus(), "threads_before": before, "threads_at_fork": at_fork,
                  "parent_again_differing": parent_again, **results}))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_forked_children_and_grandchildren_get_the_parents_answers():
    import json

    run = run_python(FORK_SCRIPT, timeout=300)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["parent_again_differing"] == [], out
    grandchild = out["child 2"].get("grandchild", {})
    for report in (out["child 1"], out["child 2"], grandchild):  # exit -14: SIGALRM, a deadlock
        assert report.get("exit") == 0 and report.get("differing") == [], out
    if out["cpus"] >= 2 and out["threads_before"] is not None:  # Linux: /proc/self/task counts the threads
        assert out["threads_at_fork"] > out["threads_before"], out  # the pool's workers were alive at fork()
        for report in (out["child 1"], out["child 2"], grandchild):
            assert report["threads_at_start"] == 1, out  # a child has only the forking thread ...
            assert report["threads_after"] > 1, out  # ... and made its own pool for the calls


@pytest.mark.parametrize("call", [
    "smoothece.smece(f, y)",
    "smoothece.smece(f, y, threads=1)",
    "smoothece.CalibrationSketch().update(f, y)",
    "smoothece.bootstrap_smece(f[:20000], y[:20000], n_boot=200, seed=1)",
])
def test_daemon_threads_at_interpreter_exit(call):
    code = f"""
        import threading, time
        import numpy as np, smoothece
        f = np.random.default_rng(0).uniform(size=2_000_000)
        y = f > 0.5
        def work():
            while True:
                {call}
        for _ in range(2):
            threading.Thread(target=work, daemon=True).start()
        time.sleep(0.4)
    """
    for _ in range(3):
        out = run_python(code)
        assert out.returncode == 0, out.stderr
        assert "terminate" not in out.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT delivery")
def test_ctrl_c_stops_a_long_call_within_seconds():
    # The child turns Ctrl-C into KeyboardInterrupt itself: a parent started in the background (a CI
    # script's `cmd &`) passes SIGINT on ignored, and Python then leaves it ignored.
    code = """
        import signal, time, numpy as np, smoothece
        signal.signal(signal.SIGINT, signal.default_int_handler)
        f = np.random.default_rng(0).uniform(size=3_000_000)
        y = f > 0.5
        print("ready", flush=True)
        start = time.monotonic()
        try:
            smoothece.smece_sigma(f, y, 1e-8)  # dense data far below every grid: minutes of work
        except KeyboardInterrupt:
            print("interrupted", round(time.monotonic() - start, 1), flush=True)
    """
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(2.0)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert "interrupted" in out, err
    assert time.monotonic() - sent < 10  # a hang guard, not a benchmark: without the check it runs for minutes
