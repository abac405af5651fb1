#!/usr/bin/env python
"""Speed and memory of smoothece against the floor, its pure-numpy baseline and relplot 1.0.3.

Usage::

    python bench/speed.py                  # full run: n = 1e3 ... 1e8, writes bench/results/speed.{md,json,png}
    python bench/speed.py --quick          # smoke run: n = 1e3, 1e4, few repeats; writes bench/_scratch/
    python bench/speed.py --sizes 1e5 1e6  # chosen sizes (main series only unless --variant-sizes is given)
    python bench/speed.py --report-only    # redraw speed.md and speed.png from an existing speed.json

Every (size, input-dtype variant) runs in its own fresh Python subprocess
(this file with ``--worker``), so that the memory high-water mark of one size
does not leak into the next and every ratio compares calls made in the same
process, on the same arrays, interleaved round-robin (one call of each task
per round) so that load from other processes on a shared machine hits all
of them alike. See bench/README.md for what every number means.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings

import _record

HERE = _record.BENCH
REPO = _record.REPO

SIGMA = 0.05  # the fixed bandwidth of the *_sigma measures
N_BOOT = 1000  # bootstrap replicates, ours and relplot's alike
SEED = 20240507  # data and resampling seed
CHUNK = 1 << 22  # rows generated per chunk (keeps generation memory small at n = 1e8)

# The tasks, in the order they run in every round. (group, what it computes)
TASKS = {
    "floor": ("floor", "f.sum(); y.sum() -- one numpy pass reading the same inputs"),
    "smece": ("ours", "smoothece.smece(f, y)"),
    "smece_1thread": ("ours", "smoothece.smece(f, y, threads=1)"),
    "smece_sigma": ("ours", f"smoothece.smece_sigma(f, y, {SIGMA})"),
    "reliability_diagram": (
        "ours",
        f"smoothece.reliability_diagram(f, y, n_boot={N_BOOT}, seed=SEED)",
    ),
    "reliability_diagram_noboot": (
        "ours",
        "smoothece.reliability_diagram(f, y, n_boot=0)",
    ),
    "bootstrap_smece": (
        "ours",
        f"smoothece.bootstrap_smece(f, y, n_boot={N_BOOT}, seed=SEED)",
    ),
    "reference.smece": ("reference", "smoothece.reference.smece(f, y)"),
    "reference.smece_sigma": (
        "reference",
        f"smoothece.reference.smece_sigma(f, y, {SIGMA})",
    ),
    "relplot.smECE": ("relplot", "relplot.smECE(f, y)"),
    "relplot.smECE_sigma": ("relplot", f"relplot.smECE_sigma(f, y, {SIGMA})"),
    "relplot.prepare_rel_diagram": (
        "relplot",
        f"relplot.prepare_rel_diagram(f, y, num_bootstrap={N_BOOT})",
    ),
}
OURS = [k for k, v in TASKS.items() if v[0] == "ours"]
PEERS = [k for k, v in TASKS.items() if v[0] in ("reference", "relplot")]
# peer -> the function of ours it is compared with
PEER_OF = {
    "reference.smece": "smece",
    "reference.smece_sigma": "smece_sigma",
    "relplot.smECE": "smece",
    "relplot.smECE_sigma": "smece_sigma",
    "relplot.prepare_rel_diagram": "reliability_diagram",
}

# Repeat policy of the timed calls (see time_tasks and bench/README.md, "Timing")
REPEAT = {"budget_s": 5.0, "min_reps": 3, "max_reps": 40, "slow_s": 5.0, "cheap_s": 0.5, "trace_max_s": 5.0}
QUICK_REPEAT = {"budget_s": 0.05, "min_reps": 1, "max_reps": 3, "slow_s": 0.05, "cheap_s": 0.01, "trace_max_s": 0.05}

# Input layouts: (prediction dtype, label dtype, strided)
VARIANTS = {
    "f64+bool": ("float64", "bool", False),
    "f64+f64": ("float64", "float64", False),
    "f32+bool": ("float32", "bool", False),
    "f64[::2]+bool[::2]": ("float64", "bool", True),
}
MAIN_VARIANT = "f64+bool"
BIG_VARIANT = "f32+bool"  # used for n >= BIG_N, where only our functions run
BIG_N = 10**8
VARIANT_TASKS = ["floor", "smece", "smece_1thread", "smece_sigma"]


# ----------------------------------------------------------------------------------------------------------------------
# Worker: one process, one (n, variant), a list of tasks.
# ----------------------------------------------------------------------------------------------------------------------


def make_data(n: int, variant: str, seed: int = SEED):
    """Reproducible synthetic data: f ~ Beta(2, 2), y ~ Bernoulli(f**1.2).

    The labels are drawn from the stored predictions (after any cast to
    float32), so the model is mildly over-confident in the middle: E[y | f] =
    f^1.2 < f, a true calibration error of about 0.05. Rows are generated in
    chunks from one SeedSequence([seed, n, strided]) so that n = 1e8 never
    needs more than a few chunk-sized temporaries.
    """
    import numpy as np

    fdt, ydt, strided = VARIANTS[variant]
    m = 2 * n if strided else n
    rng = np.random.default_rng(np.random.SeedSequence([seed, n, int(strided)]))
    f = np.empty(m, dtype=fdt)
    y = np.empty(m, dtype=ydt)
    for lo in range(0, m, CHUNK):
        hi = min(m, lo + CHUNK)
        fc = rng.beta(2.0, 2.0, hi - lo).astype(fdt)
        f[lo:hi] = fc
        y[lo:hi] = rng.random(hi - lo) < fc.astype(np.float64) ** 1.2
    if strided:
        f, y = f[::2], y[::2]
    return f, y


def _status():
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(("VmRSS:", "VmHWM:")):
                key, val = line.split(":")
                out[key] = int(val.split()[0]) * 1024
    return out


def _can_reset_hwm() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _reset_hwm():
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


def time_tasks(calls, tasks, rep, value_of, on_call=None):
    """Times ``calls[name]()`` for every name in ``tasks`` in this process, by the policy of
    bench/README.md: a warm-up call of each, then round-robin repeats (``rep`` as in ``worker``).

    Returns ``(state, rounds, hwm_ok)``: per task its times, first-call time, ``value_of(name, out)``
    and RSS growths. ``on_call(name, seconds)``, if given, is told before every call (seconds None)
    and after it, so that a parent process can enforce a per-call timeout (bench/catalogue.py).
    """
    import gc

    hwm_ok = _can_reset_hwm()
    state = {
        t: {
            "times": [],
            "rss_growth": [],
            "first_s": None,
            "first_rss_growth": None,
            "value": None,
        }
        for t in tasks
    }
    # Everything imported so far (numpy, pandas, sklearn for relplot) goes to the permanent generation,
    # so that the collector, left on as users have it, does not rescan it during the calls.
    gc.collect()
    gc.freeze()

    def timed(name):
        before = 0
        if hwm_ok:
            _reset_hwm()
            before = _status()["VmRSS"]
        if on_call:
            on_call(name, None)
        t = time.perf_counter()
        out = calls[name]()
        dt = time.perf_counter() - t
        if on_call:
            on_call(name, dt)
        growth = (_status()["VmHWM"] - before) if hwm_ok else None
        return out, dt, growth

    # Round 0: every task's first call, a warm-up (FFTW planning, thread start, page faults), kept apart.
    # A call slower than slow_s is not repeated: that one call is the measurement.
    for name in tasks:
        out, dt, growth = timed(name)
        st = state[name]
        st["first_s"], st["first_rss_growth"], st["value"] = (
            dt,
            growth,
            value_of(name, out),
        )
        del out
        if dt >= rep["slow_s"]:
            st["times"].append(dt)
            st["rss_growth"].append(growth)
    repeat = [t for t in tasks if state[t]["first_s"] < rep["slow_s"]]
    cheap = [t for t in repeat if state[t]["first_s"] < rep["cheap_s"]]
    # Then rounds, one call of every repeated task per round, so that load from other processes hits
    # all of them alike. Every repeated task gets min_reps calls; the cheap ones (among them the floor
    # and smece) go on together, the same number of calls each, until they have spent budget_s.
    rounds = 0
    while True:
        if rounds >= rep["min_reps"]:
            spent = sum(sum(state[t]["times"]) for t in cheap)
            if not cheap or rounds >= rep["max_reps"] or spent >= rep["budget_s"]:
                break
        for name in repeat if rounds < rep["min_reps"] else cheap:
            out, dt, growth = timed(name)
            state[name]["times"].append(dt)
            state[name]["rss_growth"].append(growth)
            del out
        rounds += 1

    return state, rounds, hwm_ok


def worker(spec: dict) -> dict:
    import gc
    import tracemalloc

    import numpy as np

    warnings.filterwarnings("ignore")
    n, variant = spec["n"], spec["variant"]
    tasks = spec["tasks"]
    rep = spec["repeat"]  # dict: budget_s, min_reps, max_reps, slow_s, trace_max_s

    t0 = time.perf_counter()
    f, y = make_data(n, variant)
    gen_s = time.perf_counter() - t0
    input_bytes = f.size * f.itemsize + y.size * y.itemsize

    t0 = time.perf_counter()
    import smoothece
    from smoothece import reference

    need_peer = any(TASKS[t][0] != "ours" and t != "floor" for t in tasks)
    fp = yp = None
    if need_peer:
        # The peers get float64 arrays, made here, outside the timed calls (relplot wants floats;
        # reference would convert bool labels itself on every call). This only helps them.
        fp = np.ascontiguousarray(f, dtype=np.float64)
        yp = np.ascontiguousarray(y, dtype=np.float64)
    relplot = None
    if any(t.startswith("relplot.") for t in tasks):
        import relplot
    import_s = time.perf_counter() - t0

    def prepare_rel_diagram():
        np.random.seed(
            SEED
        )  # its BaggingRegressor and scipy.stats.bootstrap draw from the global RNG
        return relplot.prepare_rel_diagram(fp, yp, num_bootstrap=N_BOOT)

    calls = {
        "floor": lambda: (f.sum(), y.sum()),
        "smece": lambda: smoothece.smece(f, y),
        "smece_1thread": lambda: smoothece.smece(f, y, threads=1),
        "reliability_diagram_noboot": lambda: smoothece.reliability_diagram(
            f, y, n_boot=0
        ),
        "smece_sigma": lambda: smoothece.smece_sigma(f, y, SIGMA),
        "reliability_diagram": lambda: smoothece.reliability_diagram(
            f, y, n_boot=N_BOOT, seed=SEED
        ),
        "bootstrap_smece": lambda: smoothece.bootstrap_smece(
            f, y, n_boot=N_BOOT, seed=SEED
        ),
        "reference.smece": lambda: reference.smece(fp, yp),
        "reference.smece_sigma": lambda: reference.smece_sigma(fp, yp, SIGMA),
        "relplot.smECE": lambda: relplot.smECE(fp, yp),
        "relplot.smECE_sigma": lambda: relplot.smECE_sigma(fp, yp, SIGMA),
        "relplot.prepare_rel_diagram": prepare_rel_diagram,
    }

    def value_of(name, out):
        if name == "floor":
            return None
        if name.startswith("reliability_diagram"):
            return float(out.smece)
        if name == "bootstrap_smece":
            return float(out.value)
        if name == "relplot.prepare_rel_diagram":
            return float(out["ce"])
        return float(out)

    t_measure = time.perf_counter()
    state, rounds, hwm_ok = time_tasks(calls, tasks, rep, value_of)
    measure_s = time.perf_counter() - t_measure
    t_trace = time.perf_counter()
    # tracemalloc peak: one more call per task with tracing on (tracing slows Python-level
    # allocation, so these calls are not timed). numpy reports its data buffers to tracemalloc.
    for name in tasks:
        st = state[name]
        st["tracemalloc_peak"] = None
        if min(st["times"]) > rep["trace_max_s"]:
            continue
        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        out = calls[name]()
        st["tracemalloc_peak"] = tracemalloc.get_traced_memory()[1] - base
        del out
        tracemalloc.stop()

    trace_s = time.perf_counter() - t_trace
    res = {}
    for name in tasks:
        st = state[name]
        times = st["times"]
        growth = [g for g in st["rss_growth"] if g is not None]
        res[name] = {
            "status": "ok",
            "best_s": min(times),
            "median_s": float(np.median(times)),
            "reps": len(times),
            "times_s": times,
            "first_s": st["first_s"],
            "value": st["value"],
            "rss_growth_bytes": max(growth) if growth else None,
            "rss_growth_first_call_bytes": st["first_rss_growth"],
            "tracemalloc_peak_bytes": st["tracemalloc_peak"],
            "rss_frac": (max(growth) / input_bytes) if growth else None,
            "tracemalloc_frac": (st["tracemalloc_peak"] / input_bytes)
            if st["tracemalloc_peak"] is not None
            else None,
        }
    return {
        "n": n,
        "variant": variant,
        "f_dtype": str(f.dtype),
        "y_dtype": str(y.dtype),
        "contiguous": bool(f.flags.c_contiguous and y.flags.c_contiguous),
        "input_bytes": int(input_bytes),
        "data_gen_s": gen_s,
        "import_s": import_s,
        "measure_s": measure_s,
        "trace_s": trace_s,
        "rounds": rounds,
        "rss_method": "VmHWM after /proc/self/clear_refs=5" if hwm_ok else None,
        "rss_after_bytes": _status()["VmRSS"],
        "loadavg_after": os.getloadavg(),
        "tasks": res,
    }


# ----------------------------------------------------------------------------------------------------------------------
# Parent: plans sizes, spawns workers, writes the outputs.
# ----------------------------------------------------------------------------------------------------------------------


def slices_worker(spec: dict) -> dict:
    """Many small calls back to back, as when scoring slices of a large table: ``count``
    consecutive slices of ``n`` rows of one array (views), each scored by ``smece``; the
    floor is ``f.sum(); y.sum()`` on the same views. The loops alternate for ``rounds``
    rounds; the best of each is kept. (A lone small call after unrelated work, as in the
    main series, mostly measures cache misses of the interpreter and of both codes.)"""
    import smoothece

    n, count, rounds = spec["n"], spec["count"], spec["rounds"]
    f, y = make_data(n * count, MAIN_VARIANT)
    views = [(f[i * n:(i + 1) * n], y[i * n:(i + 1) * n]) for i in range(count)]
    loops = {
        "floor": lambda: [(a.sum(), b.sum()) for a, b in views],
        "smece": lambda: [smoothece.smece(a, b) for a, b in views],
        "smece_1thread": lambda: [smoothece.smece(a, b, threads=1) for a, b in views],
    }
    for loop in loops.values():
        loop()  # warm-up (FFTW plans, first imports)
    times = {k: [] for k in loops}
    for _ in range(rounds):
        for name, loop in loops.items():
            t = time.perf_counter()
            loop()
            times[name].append((time.perf_counter() - t) / count)
    return {"kind": "slices", "n": n, "count": count, "rounds": rounds,
            "per_call_s": {k: min(v) for k, v in times.items()}, "times_s": times}


def run_worker(spec: dict, timeout: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        cmd = [
            sys.executable,
            os.path.abspath(__file__),
            "--worker",
            json.dumps(spec),
            "--worker-out",
            out,
        ]
        env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
        t = time.perf_counter()
        proc = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            cwd=REPO,
            check=False,
        )
        wall = time.perf_counter() - t
        if proc.returncode != 0 or not os.path.exists(out):
            sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
            raise RuntimeError(
                f"worker failed for {spec['n']} {spec.get('variant', spec.get('kind'))} (rc={proc.returncode})"
            )
        with open(out) as fh:
            res = json.load(fh)
    res["worker_wall_s"] = wall
    return res


def plan_peers(n, last, cfg):
    """Which peers run at n, and a 'skipped' record for the others."""
    run, skipped = [], {}
    for name in PEERS:
        cap = cfg["peer_max_n"].get(name)
        est = None
        if name in last:
            n0, t0 = last[name]
            est = t0 * n / n0  # linear scaling: a lower bound for every peer here
        if name.startswith("relplot.") and not cfg.get("relplot"):
            skipped[name] = {"status": "skipped", "est_s": None, "reason": "relplot not installed"}
        elif n >= BIG_N:
            skipped[name] = {
                "status": "skipped",
                "est_s": est,
                "reason": "not run at n >= 1e8 (peers need float64 copies of the inputs)",
            }
        elif cap is not None and n > cap:
            skipped[name] = {
                "status": "skipped",
                "est_s": est,
                "reason": f"--quick runs it only for n <= {cap:.0e}" if cap else "not run by --quick",
            }
        elif est is not None and est > cfg["skip_s"]:
            skipped[name] = {
                "status": "skipped",
                "est_s": est,
                "reason": f"estimated {est:.0f} s > {cfg['skip_s']:.0f} s (linear from n={last[name][0]:.0e})",
            }
        else:
            run.append(name)
    return run, skipped


def fmt_s(t):
    if t is None:
        return "–"
    if t >= 100:
        return f"{t:.0f} s"
    if t >= 1:
        return f"{t:.2f} s"
    if t >= 1e-3:
        return f"{t * 1e3:.3g} ms"
    return f"{t * 1e6:.3g} µs"


def fmt_x(r, digits=3):
    if r is None or (isinstance(r, float) and not math.isfinite(r)):
        return "–"
    if r >= 100:
        return f"{r:,.0f}×"
    return f"{r:.{digits}g}×"


def fmt_pct(x):
    if x is None:
        return "–"
    return f"{100 * x:.3g} %"


def fmt_bytes(b):
    if b is None:
        return "–"
    for unit, k in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(b) >= k:
            return f"{b / k:.3g} {unit}"
    return f"{b:.0f} B"


def fmt_mem(t):
    """'RSS frac (abs) / tm frac (abs)' of one task record."""
    if not t or t.get("status") != "ok":
        return ""
    rss = (
        "–"
        if t["rss_frac"] is None
        else f"{fmt_pct(t['rss_frac'])} ({fmt_bytes(t['rss_growth_bytes'])})"
    )
    tm = (
        "–"
        if t["tracemalloc_frac"] is None
        else f"{fmt_pct(t['tracemalloc_frac'])} ({fmt_bytes(t['tracemalloc_peak_bytes'])})"
    )
    return f"{rss} / {tm}"


def fmt_n(n):
    e = round(math.log10(n))
    return f"10^{e}" if 10**e == n else f"{n:,}"


def best(run, name):
    t = run["tasks"].get(name)
    return t["best_s"] if t and t.get("status") == "ok" else None


def slope(points):
    """Least-squares slope of log t against log n."""
    import numpy as np

    pts = [(n, t) for n, t in points if t]
    if len(pts) < 2:
        return None
    x = np.log10([p[0] for p in pts])
    y = np.log10([p[1] for p in pts])
    return float(np.polyfit(x, y, 1)[0])


def summarize(results) -> dict:
    runs = results["runs"]
    main = {r["n"]: r for r in runs if r["series"] == "main"}
    var = {(r["n"], r["variant"]): r for r in runs}
    s = {"targets": []}

    def target(name, measured, goal, ok, detail=""):
        s["targets"].append(
            {
                "target": name,
                "measured": measured,
                "goal": goal,
                "met": (None if ok is None else bool(ok)),
                "detail": detail,
            }
        )

    r7 = main.get(10**7)
    if r7 and r7["variant"] == MAIN_VARIANT:
        sm, fl = best(r7, "smece"), best(r7, "floor")
        ratio = sm / fl if sm and fl else None
        s1 = best(r7, "smece_1thread")
        target(
            "smece at n=1e7 (f64 f, bool y) vs the floor",
            fmt_x(ratio),
            "≤ 1.5×",
            ratio is not None and ratio <= 1.5,
            f"smece {fmt_s(sm)}, floor {fmt_s(fl)}",
        )
        r1 = s1 / fl if s1 and fl else None
        target(
            "smece at n=1e7 with threads=1 vs the floor",
            fmt_x(r1),
            "≤ 2.5×",
            r1 is not None and r1 <= 2.5,
            f"smece(threads=1) {fmt_s(s1)}, floor {fmt_s(fl)}",
        )
        for peer, goal in (("relplot.smECE", 300), ("reference.smece", 30)):
            tp = best(r7, peer)
            sp = tp / sm if tp and sm else None
            target(
                f"smece at n=1e7: speed-up over {peer}",
                fmt_x(sp),
                f"≥ {goal}×",
                None if sp is None else sp >= goal,
                f"{peer} {fmt_s(tp)}"
                if tp
                else str(r7["tasks"].get(peer, {}).get("reason", "not run")),
            )
        rd = best(r7, "reliability_diagram")
        q = rd / sm if rd and sm else None
        target(
            f"reliability_diagram (n_boot={N_BOOT}) at n=1e7 vs smece",
            fmt_x(q),
            "≤ 20×",
            None if q is None else q <= 20,
            f"reliability_diagram {fmt_s(rd)}",
        )
    v7 = var.get((10**7, "f32+bool"))
    if v7:
        t = v7["tasks"]["smece"]
        fr = [
            x for x in (t.get("rss_frac"), t.get("tracemalloc_frac")) if x is not None
        ]
        target(
            "smece extra memory at n=1e7, f32+bool read in place",
            f"RSS {fmt_pct(t.get('rss_frac'))}, "
            f"tracemalloc {fmt_pct(t.get('tracemalloc_frac'))} of {v7['input_bytes'] / 1e6:.0f} MB",
            "≤ 1 % of input bytes",
            (max(fr) <= 0.01) if fr else None,
            f"RSS growth {t.get('rss_growth_bytes')} B, tracemalloc peak {t.get('tracemalloc_peak_bytes')} B",
        )
    sl = results.get("slices")
    if sl:
        per = sl["per_call_s"]
        q = per["smece"] / per["floor"]
        target(
            f"smece on {sl['n']}-row slices called back to back ({sl['count']} slices) vs the floor on them",
            fmt_x(q),
            "≤ 5×",
            q <= 5,
            f"per slice: smece {fmt_s(per['smece'])} (threads=1 {fmt_s(per['smece_1thread'])}), "
            f"floor {fmt_s(per['floor'])};"
            " a lone 1000-row call after unrelated work is in the tables below (cold caches)",
        )
    r5 = main.get(10**5)
    if r5:
        rd, pr = (
            best(r5, "reliability_diagram"),
            best(r5, "relplot.prepare_rel_diagram"),
        )
        sp = pr / rd if rd and pr else None
        target(
            f"reliability_diagram at n=1e5 vs relplot.prepare_rel_diagram ({N_BOOT} replicates)",
            fmt_x(sp),
            "≥ 50×",
            None if sp is None else sp >= 50,
            f"ours {fmt_s(rd)}, relplot {fmt_s(pr)}"
            if pr
            else str(
                r5["tasks"]
                .get("relplot.prepare_rel_diagram", {})
                .get("reason", "not run")
            ),
        )
    ns = sorted(n for n in main if n >= 10**5 and main[n]["variant"] == MAIN_VARIANT)
    s["slopes"] = {}
    for name in ["floor"] + OURS + PEERS:
        pts = [(n, best(main[n], name)) for n in ns]
        s["slopes"][name] = slope(pts)
    sl = s["slopes"].get("smece")
    target(
        f"log-log slope of smece time vs n, n in [{', '.join(fmt_n(n) for n in ns)}]",
        "–"
        if sl is None
        else f"{sl:.3f} (threads=1: {s['slopes'].get('smece_1thread') or float('nan'):.3f})",
        "0.9 – 1.1",
        None if sl is None else 0.9 <= sl <= 1.1,
        "slopes of the other functions are in the Scaling section",
    )
    # bootstrap cost beyond the first pass
    extra = []
    for n in sorted(main):
        r = main[n]
        sm, rd, bs = (
            best(r, "smece"),
            best(r, "reliability_diagram"),
            best(r, "bootstrap_smece"),
        )
        r0 = best(r, "reliability_diagram_noboot")
        extra.append(
            {
                "n": n,
                "variant": r["variant"],
                "smece_s": sm,
                "reliability_diagram_s": rd,
                "reliability_diagram_noboot_s": r0,
                "bootstrap_smece_s": bs,
                "rd_minus_smece_s": (rd - sm) if rd and sm else None,
                "rd_minus_noboot_s": (rd - r0) if rd and r0 else None,
                "boot_minus_smece_s": (bs - sm) if bs and sm else None,
            }
        )
    s["bootstrap_beyond_first_pass"] = extra
    sel = [
        e
        for e in extra
        if e["n"] >= 10**5 and e["variant"] == MAIN_VARIANT and e["rd_minus_smece_s"]
    ]
    bsl = slope([(e["n"], e["rd_minus_smece_s"]) for e in sel])
    bsl0 = slope([(e["n"], e["rd_minus_noboot_s"]) for e in sel])
    target(
        f"reliability_diagram − smece does not grow with n (n in [{', '.join(fmt_n(e['n']) for e in sel)}])",
        "–"
        if bsl is None
        else f"log-log slope {bsl:.2f}; "
        + ", ".join(f"{fmt_n(e['n'])}: {fmt_s(e['rd_minus_smece_s'])}" for e in sel),
        "slope ≈ 0 (< 0.1)",
        None if bsl is None else bsl < 0.1,
        "without the diagram's own pass over the rows (reliability_diagram(n_boot=1000) − "
        "reliability_diagram(n_boot=0)) the slope is "
        + ("–" if bsl0 is None else f"{bsl0:.2f}")
        + ": "
        + ", ".join(f"{fmt_n(e['n'])}: {fmt_s(e['rd_minus_noboot_s'])}" for e in sel),
    )
    return s


TITLE = "Speed and memory: smoothece against the floor, reference and relplot"


def markdown_body(results, png_name):
    """The body of speed.md (the header comes from bench/_record.py)."""
    runs = results["runs"]
    cfg = results["config"]
    main = sorted((r for r in runs if r["series"] == "main"), key=lambda r: r["n"])
    L = []
    if results.get("commit_end"):
        L.append(
            f"- **The source tree moved during the run** (commit at the end: {results['commit_end']}): "
            "sizes may have run against different builds."
        )
    L.append(
        "- The machine may be shared: absolute times are noisy, ratios are measured within one process."
    )
    L.append(
        f"- Data: f ~ Beta(2,2), y ~ Bernoulli(f^1.2) (seed {SEED}); σ = {SIGMA} for the *_sigma measures; "
        f"{N_BOOT} bootstrap replicates for both diagrams. Ours use all cores (threads=None); "
        "reference and relplot are single-threaded numpy. Peers get float64 copies of f and y made outside the timing."
    )
    L.append(
        f"- Times: best of the repeats (repeats interleaved round-robin in one fresh process per size; "
        f"first call excluded as warm-up unless it took ≥ {cfg['repeat']['slow_s']} s).\n"
    )

    L.append("## Summary: targets\n")
    L.append("| target | measured | goal | verdict |")
    L.append("|---|---|---|---|")
    for t in results["summary"]["targets"]:
        v = "n/a" if t["met"] is None else ("**met**" if t["met"] else "**missed**")
        L.append(f"| {t['target']} | {t['measured']} | {t['goal']} | {v} |")
    L.append("")
    L.append("Details:\n")
    for t in results["summary"]["targets"]:
        if t["detail"]:
            L.append(f"- {t['target']}: {t['detail']}.")
    L.append("")

    cols = ["floor"] + OURS + PEERS

    def cell(r, name, how):
        t = r["tasks"].get(name)
        if not t:
            return ""
        if t["status"] != "ok":
            return (
                f"skipped (est. {fmt_s(t['est_s'])})" if t.get("est_s") else "skipped"
            )
        if how == "time":
            return fmt_s(t["best_s"])
        if how == "floor":
            fl = best(r, "floor")
            return fmt_x(t["best_s"] / fl) if fl else ""
        return ""

    L.append("## Times (best of repeats)\n")
    L.append("| n | inputs | " + " | ".join(f"`{c}`" for c in cols) + " |")
    L.append("|---|---|" + "---|" * len(cols))
    for r in main:
        L.append(
            f"| {fmt_n(r['n'])} | {r['variant']} | "
            + " | ".join(cell(r, c, "time") for c in cols)
            + " |"
        )
    L.append("")
    L.append(
        "## Ratio to the floor (time / time of `f.sum(); y.sum()` in the same process)\n"
    )
    L.append("| n | " + " | ".join(f"`{c}`" for c in cols[1:]) + " |")
    L.append("|---|" + "---|" * (len(cols) - 1))
    for r in main:
        L.append(
            f"| {fmt_n(r['n'])} | "
            + " | ".join(cell(r, c, "floor") for c in cols[1:])
            + " |"
        )
    L.append("")
    L.append(
        "## Speed-up of ours over each peer (peer time / our time, same process, same data)\n"
    )
    L.append("| n | " + " | ".join(f"`{p}` / `{PEER_OF[p]}`" for p in PEERS) + " |")
    L.append("|---|" + "---|" * len(PEERS))
    for r in main:
        cells = []
        for p in PEERS:
            t = r["tasks"].get(p)
            o = best(r, PEER_OF[p])
            if not t:
                cells.append("")
            elif t["status"] != "ok":
                cells.append(
                    f"skipped (est. {fmt_x(t['est_s'] / o)})"
                    if t.get("est_s") and o
                    else "skipped"
                )
            else:
                cells.append(fmt_x(t["best_s"] / o) if o else "")
        L.append(f"| {fmt_n(r['n'])} | " + " | ".join(cells) + " |")
    L.append("")
    skips = [
        (k, r["n"], t)
        for r in main
        for k, t in r["tasks"].items()
        if t["status"] != "ok"
    ]
    if skips:
        L.append("Skipped:\n")
        for k, n, t in sorted(
            skips, key=lambda x: (PEERS.index(x[0]) if x[0] in PEERS else -1, x[1])
        ):
            L.append(f"- `{k}` at n = {fmt_n(n)}: {t['reason']}")
        L.append("")
    L.append("## Bootstrap cost beyond the first pass\n")
    L.append(
        "`reliability_diagram` makes two passes over the rows (curves at σ*, then the cell histogram the "
        "replicates draw from); `bootstrap_smece` likewise. Their time minus the time of `smece` "
        "(one pass + σ* search) is the replicate work, which should not depend on n.\n"
    )
    L.append(
        "rd0 = `reliability_diagram(n_boot=0)` (the curves alone: one pass over the rows at σ*); "
        "rd − rd0 is then the cell-histogram pass plus the 1000 replicates.\n"
    )
    L.append(
        "| n | inputs | `smece` | `reliability_diagram` (rd) | rd − smece | rd0 | rd − rd0 | `bootstrap_smece` | "
        "boot − smece | rd / smece |"
    )
    L.append("|---|---|---|---|---|---|---|---|---|---|")
    for e in results["summary"]["bootstrap_beyond_first_pass"]:
        q = (
            e["reliability_diagram_s"] / e["smece_s"]
            if e["reliability_diagram_s"] and e["smece_s"]
            else None
        )
        L.append(
            f"| {fmt_n(e['n'])} | {e['variant']} | {fmt_s(e['smece_s'])} | {fmt_s(e['reliability_diagram_s'])} | "
            f"{fmt_s(e['rd_minus_smece_s'])} | {fmt_s(e.get('reliability_diagram_noboot_s'))} | "
            f"{fmt_s(e.get('rd_minus_noboot_s'))} | {fmt_s(e['bootstrap_smece_s'])} | "
            f"{fmt_s(e['boot_minus_smece_s'])} | {fmt_x(q)} |"
        )
    L.append("")

    L.append(
        "## Scaling (log-log slope of best time vs n, main series n ≥ 10^5, f64+bool)\n"
    )
    sl = results["summary"]["slopes"]
    L.append("| function | slope |")
    L.append("|---|---|")
    for k, v in sl.items():
        L.append(f"| `{k}` | {'–' if v is None else f'{v:.2f}'} |")
    L.append("")
    L.append(
        "Slopes between consecutive sizes for `smece`: "
        + ", ".join(
            f"{fmt_n(a['n'])}→{fmt_n(b['n'])}: {slope([(a['n'], best(a, 'smece')), (b['n'], best(b, 'smece'))]):.2f}"
            + (" (f32+bool)" if b["variant"] != a["variant"] else "")
            for a, b in zip(main, main[1:])
            if best(a, "smece") and best(b, "smece")
        )
        + ".\n"
    )

    L.append("## Extra memory beyond the inputs (fraction of input bytes)\n")
    L.append(
        "Two measures per call: **RSS** = growth of the process high-water mark (VmHWM, reset through "
        "/proc/self/clear_refs just before the call) over the resident size before it, worst over the timed "
        "calls; catches C++ allocations and thread stacks. **tm** = tracemalloc peak during one extra call "
        "(Python objects and numpy buffers; not C++ allocations). Input bytes = f.nbytes + y.nbytes. "
        "Each cell: fraction of the input bytes (absolute bytes). RSS moves in 4 kB pages and by whole "
        "malloc arenas, so at n ≤ 10^4 its fractions are noise; '–' = not traced (call slower than "
        f"{cfg['repeat']['trace_max_s']} s).\n"
    )
    L.append(
        "| n | input MB | " + " | ".join(f"`{c}` RSS / tm" for c in cols[1:]) + " |"
    )
    L.append("|---|---|" + "---|" * (len(cols) - 1))
    for r in main:
        cells = [fmt_mem(r["tasks"].get(c)) for c in cols[1:]]
        L.append(
            f"| {fmt_n(r['n'])} | {r['input_bytes'] / 1e6:.3g} | "
            + " | ".join(cells)
            + " |"
        )
    L.append("")

    vr = sorted(
        (
            r
            for r in runs
            if r["series"] in ("variant", "main") and r["n"] in cfg["variant_sizes"]
        ),
        key=lambda r: (r["n"], list(VARIANTS).index(r["variant"])),
    )
    if vr:
        L.append("## Input dtype variants\n")
        L.append(
            "`f64[::2]+bool[::2]` are every-other-element views of arrays of length 2n (strided, read in place). "
            "Input bytes count the n viewed elements. The floor (`f.sum(); y.sum()`) is measured on the same "
            "views.\n"
        )
        L.append(
            "| n | inputs | input MB | floor | `smece` | smece / floor | `smece` threads=1 | 1 thread / floor | "
            "`smece_sigma` | smece_sigma / floor | smece extra RSS | smece extra tm |"
        )
        L.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in vr:
            fl, sm, ss = best(r, "floor"), best(r, "smece"), best(r, "smece_sigma")
            s1 = best(r, "smece_1thread")
            t = r["tasks"]["smece"]
            L.append(
                f"| {fmt_n(r['n'])} | {r['variant']} | {r['input_bytes'] / 1e6:.3g} | {fmt_s(fl)} | {fmt_s(sm)} | "
                f"{fmt_x(sm / fl)} | {fmt_s(s1)} | {fmt_x(s1 / fl if s1 else None)} | {fmt_s(ss)} | {fmt_x(ss / fl)} | "
                f"{fmt_pct(t['rss_frac'])} "
                f"({fmt_bytes(t['rss_growth_bytes'])}) | {fmt_pct(t['tracemalloc_frac'])} "
                f"({fmt_bytes(t['tracemalloc_peak_bytes'])}) |"
            )
        L.append("")

    L.append("## Values (sanity check: the implementations agree)\n")
    vcols = [
        "smece",
        "reference.smece",
        "relplot.smECE",
        "reliability_diagram",
        "bootstrap_smece",
        "smece_sigma",
        "reference.smece_sigma",
        "relplot.smECE_sigma",
        "relplot.prepare_rel_diagram",
    ]
    L.append("| n | " + " | ".join(f"`{c}`" for c in vcols) + " |")
    L.append("|---|" + "---|" * len(vcols))
    for r in main:
        cells = []
        for c in vcols:
            t = r["tasks"].get(c)
            cells.append(
                f"{t['value']:.6f}"
                if t and t["status"] == "ok" and t["value"] is not None
                else ""
            )
        L.append(f"| {fmt_n(r['n'])} | " + " | ".join(cells) + " |")
    L.append("")
    L.append(
        "relplot's σ* comes from 10 bisection steps (resolution ~1e-3), so it differs from ours and from the "
        "reference (bisected to 1e-7) in the third or fourth digit. From n = 10^4 on, `smece` and "
        f"`smece_sigma({SIGMA})` print the same value: the smoothed residual r̂σ no longer changes sign "
        "(E[y|f] = f^1.2 < f everywhere), and the reflected kernel conserves mass, so smECEσ = |Σ(y − f)|/n "
        "for every σ in that range; this is a property of the data, not a bug (the reference agrees).\n"
    )

    L.append("## First call (warm-up) times\n")
    L.append("| n | " + " | ".join(f"`{c}`" for c in OURS) + " |")
    L.append("|---|" + "---|" * len(OURS))
    for r in main:
        L.append(
            f"| {fmt_n(r['n'])} | "
            + " | ".join(
                fmt_s(r["tasks"][c]["first_s"])
                if r["tasks"].get(c, {}).get("status") == "ok"
                else ""
                for c in OURS
            )
            + " |"
        )
    L.append("")
    L.append(f"![scaling]({png_name})\n")
    return L


def write_plot(results, header, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    main = sorted(
        (r for r in results["runs"] if r["series"] == "main"), key=lambda r: r["n"]
    )
    style = {
        "floor": {
            "color": "0.45",
            "ls": ":",
            "marker": "s",
            "label": "floor: f.sum(); y.sum()",
        },
        "smece": {"color": "C0", "marker": "o", "lw": 2.2, "label": "smoothece.smece"},
        "smece_1thread": {
            "color": "C9",
            "ls": ":",
            "marker": "o",
            "ms": 4,
            "label": "smoothece.smece(threads=1)",
        },
        "smece_sigma": {
            "color": "C0",
            "ls": "--",
            "marker": "o",
            "mfc": "white",
            "label": f"smoothece.smece_sigma({SIGMA})",
        },
        "reference.smece": {
            "color": "C2",
            "marker": "^",
            "label": "reference.smece (numpy)",
        },
        "reference.smece_sigma": {
            "color": "C2",
            "ls": "--",
            "marker": "^",
            "mfc": "white",
            "label": f"reference.smece_sigma({SIGMA})",
        },
        "relplot.smECE": {"color": "C3", "marker": "D", "label": "relplot.smECE"},
        "relplot.smECE_sigma": {
            "color": "C3",
            "ls": "--",
            "marker": "D",
            "mfc": "white",
            "label": f"relplot.smECE_sigma({SIGMA})",
        },
        "reliability_diagram": {
            "color": "C0",
            "marker": "o",
            "lw": 2.2,
            "label": f"smoothece.reliability_diagram (B={N_BOOT})",
        },
        "bootstrap_smece": {
            "color": "C1",
            "marker": "v",
            "label": f"smoothece.bootstrap_smece (B={N_BOOT})",
        },
        "relplot.prepare_rel_diagram": {
            "color": "C3",
            "marker": "D",
            "label": f"relplot.prepare_rel_diagram (B={N_BOOT})",
        },
    }
    panels = [
        (
            f"SmoothECE σ* and smECE at σ = {SIGMA:.2g}",
            [
                "floor",
                "smece",
                "smece_1thread",
                "smece_sigma",
                "reference.smece",
                "reference.smece_sigma",
                "relplot.smECE",
                "relplot.smECE_sigma",
            ],
        ),
        (
            f"Diagram / interval with {N_BOOT} bootstrap replicates",
            [
                "floor",
                "smece",
                "reliability_diagram",
                "bootstrap_smece",
                "relplot.prepare_rel_diagram",
            ],
        ),
    ]
    fig, axes = plt.subplots(
        1, 2, figsize=(13, 5.6), sharey=True, constrained_layout=True
    )
    for ax, (title, names) in zip(axes, panels):
        for name in names:
            pts = [(r["n"], best(r, name)) for r in main if best(r, name)]
            if not pts:
                continue
            st = dict(style[name])
            if ax is axes[1] and name == "smece":
                st.update(
                    color="C0",
                    ls="-.",
                    lw=1.2,
                    marker=".",
                    label="smoothece.smece (for reference)",
                )
            st.setdefault("ms", 6)
            ax.plot(*zip(*pts), **st)
            # the 1e8 point is float32 + bool: ring it
            big = [(n, t) for n, t in pts if n >= BIG_N]
            if big:
                ax.plot(
                    *zip(*big),
                    ls="none",
                    marker="o",
                    ms=13,
                    mfc="none",
                    mec="k",
                    mew=0.8,
                )
        ns = [r["n"] for r in main]
        fl = [(r["n"], best(r, "floor")) for r in main if best(r, "floor")]
        if fl:
            # guide lines: slope 1 through the floor's largest point
            n1, t1 = fl[-1]
            xs = [min(ns), max(ns)]
            ax.plot(xs, [t1 * x / n1 for x in xs], color="0.8", lw=0.8, zorder=0)
            ax.text(
                xs[0] * 1.3, t1 * xs[0] / n1 * 1.6, "slope 1", color="0.55", fontsize=8
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("n (rows)")
        ax.set_title(title, fontsize=11)
        ax.grid(True, which="major", color="0.88")
        ax.legend(
            fontsize=8.5,
            loc="upper center",
            bbox_to_anchor=(0.5, -0.12),
            ncol=2,
            frameon=False,
        )
    axes[0].set_ylabel("time, best of repeats (s)")
    m, v = header["machine"], header.get("versions") or {}
    big_note = (
        " Ringed points: n = 1e8 with float32 f + bool y."
        if any(r["n"] >= BIG_N for r in main)
        else ""
    )
    fig.suptitle(
        f"smoothece {v.get('smoothece')} vs reference (numpy) and relplot {v.get('relplot')}: f float64, y bool; "
        f"{m['cpu_model']}, {m.get('usable_cores', m.get('cores'))} cores (shared).{big_note}",
        fontsize=9,
    )
    fig.savefig(path, dpi=110)
    plt.close(fig)


def report(rec_header, results, out):
    """speed.md and speed.png from the results (and the header) of a run."""
    results["summary"] = summarize(results)
    png = os.path.join(out, "speed.png")
    write_plot(results, rec_header, png)
    _record.write_markdown(os.path.join(out, "speed.md"), TITLE, rec_header, markdown_body(results, "speed.png"))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawTextHelpFormatter,
    )
    _record.add_options(p, "smoke run: n = 1e3 and 1e4, fewest repeats, the reference at n = 1e3, no relplot")
    p.add_argument(
        "--sizes",
        nargs="+",
        type=float,
        help="sizes of the main series (e.g. 1e3 1e5 1e7)",
    )
    p.add_argument(
        "--variant-sizes",
        nargs="*",
        type=float,
        help="sizes for the dtype variants (default 1e6 1e7)",
    )
    p.add_argument(
        "--skip-s",
        type=float,
        default=120.0,
        help="skip a peer whose estimated time exceeds this",
    )
    p.add_argument(
        "--no-peers", action="store_true", help="only our functions and the floor"
    )
    p.add_argument(
        "--report-only",
        action="store_true",
        help="rewrite speed.md and speed.png from speed.json (in --out)",
    )
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--worker-out", help=argparse.SUPPRESS)
    a = p.parse_args(argv)

    if a.worker:
        spec = json.loads(a.worker)
        res = slices_worker(spec) if spec.get("kind") == "slices" else worker(spec)
        with open(a.worker_out, "w") as fh:
            json.dump(res, fh)
        return 0

    if a.report_only:
        out = os.path.abspath(a.out or (_record.SCRATCH if a.quick else _record.RESULTS))
        saved = _record.read_json(os.path.join(out, "speed.json"))
        report(saved["header"], saved["results"], out)
        return 0

    rec = _record.Record(__file__, a, argv, packages=("numpy", "smoothece", "relplot", "scipy", "scikit-learn"))
    has_relplot = rec.header["versions"]["relplot"] is not None
    if not has_relplot:
        print("relplot not installed: its tasks are skipped (pip install relplot==1.0.3)", flush=True)
    if a.quick:
        sizes = [10**3, 10**4]
        vsizes = [10**4]
        repeat = QUICK_REPEAT
        # relplot's import alone takes seconds (scikit-learn, scipy): the smoke run leaves it to peers.py
        peer_max_n = {k: 0 if k.startswith("relplot.") else 10**3 for k in PEERS}
        skip_s = min(a.skip_s, 10.0)
        slices = {"kind": "slices", "n": 1000, "count": 50, "rounds": 3}
    else:
        sizes = [10**k for k in range(3, 9)]
        vsizes = [10**6, 10**7]
        repeat = REPEAT
        peer_max_n = {}
        skip_s = a.skip_s
        slices = {"kind": "slices", "n": 1000, "count": 1000, "rounds": 15}
    if a.sizes:
        sizes = sorted({int(x) for x in a.sizes})
        if a.variant_sizes is None:
            vsizes = [n for n in vsizes if n in sizes]
    if a.variant_sizes is not None:
        vsizes = sorted({int(x) for x in a.variant_sizes})
    cfg = {
        "quick": a.quick,
        "sizes": sizes,
        "variant_sizes": vsizes,
        "repeat": repeat,
        "skip_s": skip_s,
        "peer_max_n": peer_max_n,
        "relplot": has_relplot,
        "sigma": SIGMA,
        "n_boot": N_BOOT,
        "seed": SEED,
        "data": "f ~ Beta(2,2), y ~ Bernoulli(f^1.2), SeedSequence([seed, n, strided]), generated in chunks",
    }
    results = {"config": cfg, "runs": []}

    t_start = time.perf_counter()
    last = {}  # peer -> (n, best time) of the main series, for the skip estimates
    for n in sizes:
        variant = BIG_VARIANT if n >= BIG_N else MAIN_VARIANT
        peers, skipped = ([], {}) if a.no_peers else plan_peers(n, last, cfg)
        tasks = ["floor"] + OURS + peers
        spec = {"n": n, "variant": variant, "tasks": tasks, "repeat": repeat}
        r = run_worker(spec, timeout=3600)
        r["series"] = "main"
        r["tasks"].update(skipped)
        for name in peers:
            last[name] = (n, r["tasks"][name]["best_s"])
        for name, t in skipped.items():
            if t.get("est_s"):
                last[name] = (n, t["est_s"])
        results["runs"].append(r)
        rec.save_json(results)
        print(
            f"[{time.perf_counter() - t_start:6.1f} s] n={fmt_n(n)} {variant}: "
            + ", ".join(
                f"{k} {fmt_s(v['best_s'])}"
                for k, v in r["tasks"].items()
                if v["status"] == "ok"
            )
            + f"  (worker {r['worker_wall_s']:.1f} s, load {r['loadavg_after'][0]:.2f})",
            flush=True,
        )
    for n in vsizes:
        for v in VARIANTS:
            if v == MAIN_VARIANT and n in sizes and n < BIG_N:
                continue  # the main series already measured it
            if v == BIG_VARIANT and n >= BIG_N and n in sizes:
                continue
            r = run_worker(
                {"n": n, "variant": v, "tasks": VARIANT_TASKS, "repeat": repeat},
                timeout=3600,
            )
            r["series"] = "variant"
            results["runs"].append(r)
            rec.save_json(results)
            print(
                f"[{time.perf_counter() - t_start:6.1f} s] n={fmt_n(n)} {v}: "
                + ", ".join(f"{k} {fmt_s(t['best_s'])}" for k, t in r["tasks"].items()),
                flush=True,
            )
    if 1000 in sizes:
        results["slices"] = run_worker(slices, timeout=600)
        per = results["slices"]["per_call_s"]
        print(f"[{time.perf_counter() - t_start:6.1f} s] {slices['count']} slices of 1000 rows: "
              + ", ".join(f"{k} {fmt_s(v)}" for k, v in per.items()), flush=True)
    end = _record.git_commit()
    if end != rec.header["commit"]:
        results["commit_end"] = end
    results["summary"] = summarize(results)
    rec.write(TITLE, markdown_body(results, "speed.png"), results)
    write_plot(results, rec.header, rec.path("png"))
    for t in results["summary"]["targets"]:
        v = "n/a" if t["met"] is None else ("met" if t["met"] else "MISSED")
        print(f"  {v:6s} {t['target']}: {t['measured']} (goal {t['goal']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
