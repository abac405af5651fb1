"""Ctrl-C stops every public long-running call: each case of bench/interrupts.py (calls sized to run 20 s
or more alone) starts in a process of its own, all at once; each gets SIGINT 1 s after its call began and
must end with KeyboardInterrupt. The bound on the time from the signal to the KeyboardInterrupt is a hang
guard (the calls run for tens of seconds without the checks), not a benchmark: bench/interrupts.py
measures the latencies (target 0.5 s) and bench/results/interrupts.md reports them. Each latency is
recorded as a property of its test (``--junitxml``) and printed (``-s``)."""

import os
import sys
import threading

import pytest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")
sys.path.insert(0, BENCH)
import interrupts  # noqa: E402  (bench/interrupts.py: the cases and the child process they run in)

sys.path.remove(BENCH)

GUARD_S = 5.0  # seconds from SIGINT to KeyboardInterrupt, with every case running at once on two cores


@pytest.fixture(scope="module")
def outcomes():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    runs = {name: interrupts.Run(name, env=env) for name in interrupts.CASES}
    senders = [threading.Thread(target=run.interrupt, args=(1.0,)) for run in runs.values()]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join()
    return {name: run.result(timeout=60.0) for name, run in runs.items()}


@pytest.mark.parametrize("name", list(interrupts.CASES))
def test_ctrl_c_stops_a_long_call(outcomes, name, record_property):
    result = outcomes[name]
    record_property("latency_s", result["latency"])
    print(f"{name}: {result['outcome']} {result['latency']}")
    assert result["outcome"] == "interrupted", result  # "finished": the call was over before the signal
    assert result["latency"] < GUARD_S, result


def test_tick_sample_is_at_most_the_rows():
    # A sample of 10^9 ticks from 2000 rows (arrays, a sketch that keeps the rows' predictions, a sketch on
    # its grid, drawn at a σ the grid resolves) is the 2000 rows' worth: more draws with replacement would
    # add nothing to the plot.
    import numpy as np

    import smoothece

    rng = np.random.default_rng(1)
    f = rng.random(2000)
    y = rng.random(f.size) < f
    exact = smoothece.CalibrationSketch()
    exact.update(f, y)
    grid = smoothece.CalibrationSketch(resolution=256)
    grid.update(f, y)
    assert exact.exact and not grid.exact
    for d in (smoothece.reliability_diagram(f, y, sample_size=10**9, n_boot=0, seed=0),
              exact.reliability_diagram(sample_size=10**9, n_boot=0, seed=0),
              grid.reliability_diagram(sigma=grid.min_sigma, sample_size=10**9, n_boot=0, seed=0)):
        assert d.sample_f.size == d.sample_y.size == 2000
