#!/usr/bin/env python
"""Catalogue of hard inputs: time and accuracy of smoothece on the data people bring.

Usage::

    python bench/catalogue.py                            # every case: writes bench/results/catalogue.{md,json}
    python bench/catalogue.py --quick                    # smoke run: three small cases, writes bench/_scratch/
    python bench/catalogue.py --cases base_rate discrete # only cases whose name contains one of these words
    python bench/catalogue.py --max-n 1e6 --timeout 60   # smaller and quicker
    python bench/catalogue.py --report-only              # rewrite catalogue.md from catalogue.json (in --out)

`bench/speed.py` measures one friendly data set. Here every case is a kind of
input on which an implementation of the SmoothECE can be slow or wrong:
predictions that all sit on one value (a base-rate model), on a few values
(discrete forecasts), piled at 0 and 1, calibrated data (σ* at its noise
floor), a residual that changes sign, weights (many of them zero). For each
case, in one fresh process, `smoothece.smece` is timed next to `smece` on the
benchmark's typical data of the same n (`make_data` of speed.py), and the
ratio of the two is reported. For calibrated data at n = 1e6 and 1e7 the
resampling functions are timed too, each in a fresh process of its own next
to `smece` on the same data, and reported as multiples of it. Every call has
a timeout: a process whose call exceeds it is killed and the call reported
as "> timeout", never retried. Where an exact σ* can be had independently of
smoothece (closed form for point-mass data; tests/exact.py where affordable)
the error is reported. See bench/README.md for the targets.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings
import zlib
from fractions import Fraction

import _record
import speed  # bench/speed.py: data, timing policy, formatting

HERE = speed.HERE
TESTS = os.path.join(speed.REPO, "tests")

TIMEOUT_S = 300.0  # per call
EXACT_TIMEOUT_S = 600.0  # for tests/exact.py on one case
EXACT_MAX_N = 10**5  # tests/exact.py took 13–22 s at n = 1e5, 1–10 min at 1e6 on a shared 2-core VM
# tests/exact.py values of continuous cases, a property of the data alone (not of smoothece): kept here, keyed by
# case and checked against a fingerprint of the data, so that the slow ones are computed once.
EXACT_CACHE = os.path.join(HERE, "catalogue_exact.json")
MAX_ATOMS = 1000  # data with at most this many distinct predictions get the closed form
N_BOOT = speed.N_BOOT
N_SIM = 1000
RESAMPLING = ["reliability_diagram", "bootstrap_smece", "calibration_test"]

# family -> (description, sizes, sizes at which the resampling functions are timed too)
FAMILIES = {
    "calibrated": ("f ~ Beta(2,2), y ~ Bernoulli(f): perfectly calibrated, σ* at its noise floor ≈ 0.3·n^(−1/3)",
                   [10**5, 10**6, 10**7], [10**6, 10**7]),
    "base_rate": ("y ~ Bernoulli(0.3), f = y.mean() on every row: a base-rate model, σ* = 0 up to rounding",
                  [10**3, 10**5, 10**7], []),
    "base_rate_imagenet": ("ImageNet ResNet-34 top-label outcomes, every prediction replaced by the accuracy",
                           [None], []),
    "base_rate_solar_DAFFS": ("solar flares, rows of method DAFFS, every forecast replaced by the base rate",
                              [None], []),
    "base_rate_solar_NJIT": ("solar flares, rows of method NJIT, every forecast replaced by the base rate",
                             [None], []),
    "all_equal": ("f = 0.3 on every row, y ~ Bernoulli(0.5): one atom off the base rate, σ* ≈ 0.2",
                  [10**5], []),
    "tiny": ("f = np.full(10, 1e-300), y = zeros: σ* = 1e-300", [10], []),
    "discrete": ("f uniform on {0.0, 0.1, …, 1.0}, y ~ Bernoulli(f): 11 atoms, exactly calibrated",
                 [10**5, 10**6, 10**7], []),
    "piled": ("30% f = 0, 30% f = 1, 40% f ~ Beta(2,2); y ~ Bernoulli(f)", [10**6], []),
    "crossing": ("f ~ Beta(2,2), y ~ Bernoulli(expit(1.3·logit f)): under-confident (E[y|f] < f below 1/2, "
                 "> f above), the residual changes sign at 1/2", [10**6, 10**7], []),
    "weighted_lognormal": ("calibrated, weights ~ lognormal(0, 1)", [10**6], []),
    "weighted_zero75": ("calibrated, 75% of the weights exactly 0, the rest lognormal(0, 1)", [10**6], []),
}


# ----------------------------------------------------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------------------------------------------------


def _rows(family, n, draw):
    """Arrays of n rows drawn chunk by chunk by ``draw(rng, m)`` (a tuple of arrays of length m) from
    SeedSequence([speed.SEED, crc32(family), n]): the same data in every run, small temporaries at 1e7."""
    import numpy as np

    rng = np.random.default_rng(np.random.SeedSequence([speed.SEED, zlib.crc32(family.encode()), n]))
    out = None
    for lo in range(0, n, speed.CHUNK):
        part = draw(rng, min(n, lo + speed.CHUNK) - lo)
        if out is None:
            out = [np.empty(n, p.dtype) for p in part]
        for o, p in zip(out, part):
            o[lo:lo + p.size] = p
    return out


def make_case(family, n):
    """(f, y, weights or None) of a case; n is ignored for the real data sets."""
    import numpy as np

    def calibrated(rng, m):
        f = rng.beta(2.0, 2.0, m)
        return f, rng.random(m) < f

    if family == "calibrated":
        f, y = _rows(family, n, calibrated)
        return f, y, None
    if family == "weighted_lognormal":
        f, y, w = _rows(family, n, lambda rng, m: (*calibrated(rng, m), rng.lognormal(0.0, 1.0, m)))
        return f, y, w
    if family == "weighted_zero75":
        def draw(rng, m):
            f, y = calibrated(rng, m)
            return f, y, np.where(rng.random(m) < 0.75, 0.0, rng.lognormal(0.0, 1.0, m))
        return tuple(_rows(family, n, draw))
    if family == "base_rate":
        (y,) = _rows(family, n, lambda rng, m: (rng.random(m) < 0.3,))
        return np.full(n, y.mean()), y, None
    if family.startswith("base_rate_"):
        import smoothece.datasets as ds

        if family == "base_rate_imagenet":
            y = ds.imagenet_resnet34().y
        else:
            y = ds.solar_flares()[family.rsplit("_", 1)[1]].y
        return np.full(y.size, y.mean()), y, None
    if family == "all_equal":
        (y,) = _rows(family, n, lambda rng, m: (rng.random(m) < 0.5,))
        return np.full(n, 0.3), y, None
    if family == "tiny":
        return np.full(10, 1e-300), np.zeros(10), None
    if family == "discrete":
        def draw(rng, m):
            f = rng.integers(0, 11, m) / 10.0
            return f, rng.random(m) < f
        f, y = _rows(family, n, draw)
        return f, y, None
    if family == "piled":
        def draw(rng, m):
            u = rng.random(m)
            f = np.where(u < 0.3, 0.0, np.where(u < 0.6, 1.0, rng.beta(2.0, 2.0, m)))
            return f, rng.random(m) < f
        f, y = _rows(family, n, draw)
        return f, y, None
    if family == "crossing":
        def draw(rng, m):
            f = rng.beta(2.0, 2.0, m)
            a, b = f**1.3, (1.0 - f) ** 1.3
            return f, rng.random(m) < a / (a + b)  # expit(1.3 logit f)
        f, y = _rows(family, n, draw)
        return f, y, None
    raise ValueError(f"unknown case family {family!r}")


# ----------------------------------------------------------------------------------------------------------------------
# Exact values, independent of smoothece
# ----------------------------------------------------------------------------------------------------------------------


def point_mass_exact(f, y, w):
    """σ* in closed form for data on at most MAX_ATOMS distinct predictions, or (None, why).

    With atoms u_j carrying residual sums R_j = Σ_{f_i = u_j} w_i (y_i − u_j), the smoothed residual
    is r̂σ(t) = Σ_j (R_j / W) K̃σ(t, u_j). Each K̃σ(·, u) is positive with integral 1 on [0, 1]. With one
    atom smECEσ = |R|/W for every σ, hence σ* = |R|/W. With several atoms whose folded distances
    (|u − v|, u + v, 2 − u − v) all exceed 16σ, the bumps overlap by less than 2Φ(−8) ≈ 1e-15 of their
    mass, so smECEσ = Σ_j |R_j|/W =: S to that relative precision; if S itself is ≤ gap/16, then
    σ* = S. Unweighted sums are formed exactly (rational arithmetic).
    """
    import numpy as np

    u, inv = np.unique(f, return_inverse=True)
    if u.size > MAX_ATOMS:
        return None, f"{u.size} distinct predictions"
    if w is None:
        count = np.bincount(inv, minlength=u.size)
        ones = np.bincount(inv, weights=np.asarray(y, dtype=np.float64), minlength=u.size)
        R = [Fraction(int(k)) - int(c) * Fraction(float(x)) for k, c, x in zip(ones, count, u)]
        W = Fraction(int(f.size))
    else:
        sw = np.bincount(inv, weights=w, minlength=u.size)
        swy = np.bincount(inv, weights=w * np.asarray(y, dtype=np.float64), minlength=u.size)
        R = [Fraction(float(a)) - Fraction(float(b)) * Fraction(float(x)) for a, b, x in zip(swy, sw, u)]
        W = Fraction(float(np.sum(w)))
    S = float(sum(abs(r) for r in R) / W)
    live = [float(x) for x, r in zip(u, R) if r != 0]
    gap = min((min(abs(a - b), a + b, 2.0 - a - b) for i, a in enumerate(live) for b in live[i + 1:]),
              default=math.inf)
    if S > gap / 16:
        return None, f"{len(live)} atoms with gap {gap:.3g} < 16·Σ|R|/W = {16 * S:.3g}"
    return S, f"closed form, {len(live)} atom{'s' if len(live) != 1 else ''} with nonzero residual"


def fingerprint(f, y, w):
    """SHA-256 of the data as float64, to tell whether a cached exact value belongs to them."""
    import hashlib

    import numpy as np

    h = hashlib.sha256()
    for a in (f, y, w):
        if a is not None:
            h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
    return h.hexdigest()


def exact_py(f, y, w):
    """tests/exact.py (independent of smoothece): σ* to ~1e-12."""
    sys.path.insert(0, TESTS)
    from exact import exact_smece

    return float(exact_smece(f, y, w))


# ----------------------------------------------------------------------------------------------------------------------
# Worker: one process, one case, a list of tasks; it reports every call so that the parent can time it out.
# ----------------------------------------------------------------------------------------------------------------------


def worker(spec, events_path):
    import numpy as np

    warnings.filterwarnings("ignore")
    log = open(events_path, "a", buffering=1)

    def emit(**ev):
        log.write(json.dumps(ev) + "\n")

    t0 = time.perf_counter()
    import smoothece

    f, y, w = make_case(spec["family"], spec["n"])
    n = f.size
    ft, yt = speed.make_data(n, speed.MAIN_VARIANT) if spec["tasks"] else (None, None)
    gen_s = time.perf_counter() - t0

    calls = {
        "typical": lambda: smoothece.smece(ft, yt),
        "smece": lambda: smoothece.smece(f, y, weights=w),
        "reliability_diagram": lambda: smoothece.reliability_diagram(f, y, weights=w, n_boot=N_BOOT, seed=0),
        "bootstrap_smece": lambda: smoothece.bootstrap_smece(f, y, weights=w, n_boot=N_BOOT, seed=0),
        "calibration_test": lambda: smoothece.calibration_test(f, y, weights=w, n_sim=N_SIM, seed=0),
    }

    def value_of(name, out):
        if name == "reliability_diagram":
            return float(out.smece)
        if name == "bootstrap_smece":
            return [float(out.value), float(out.low), float(out.high)]
        if name == "calibration_test":
            return [float(out.statistic), float(out.p_value)]
        return float(out)

    def on_call(name, seconds):
        if seconds is None:
            emit(ev="start", task=name, t=time.time())
        else:
            emit(ev="end", task=name, s=seconds)

    if spec["tasks"]:
        state, rounds, _ = speed.time_tasks(calls, spec["tasks"], spec["repeat"], value_of, on_call)
        emit(ev="timings", n=n, data_gen_s=gen_s, rounds=rounds, loadavg_after=os.getloadavg(),
             smoothece_file=smoothece.__file__, smoothece_version=getattr(smoothece, "__version__", None),
             tasks={k: {"status": "ok", "best_s": min(v["times"]), "median_s": float(np.median(v["times"])),
                        "first_s": v["first_s"], "reps": len(v["times"]), "times_s": v["times"], "value": v["value"]}
                    for k, v in state.items()})

    if spec.get("exact"):
        t = time.perf_counter()
        closed, why = point_mass_exact(f, y, w)
        rec = {"n": n, "closed_form": closed, "closed_form_note": why, "exact_py": None, "exact_py_note": None}
        emit(ev="exact", **rec)  # kept should exact.py below time out
        if closed is not None and closed < 1e-4:
            rec["exact_py_note"] = ("not run: σ* < 1e-4, where exact.py's scan (40/σ nodes) grows large; "
                                  "it reports fixpoints below 1e-6 as 0")
        elif closed is None and spec.get("exact_cache") and spec["exact_cache"]["fingerprint"] == fingerprint(f, y, w):
            c = spec["exact_cache"]
            rec["exact_py"] = c["exact_py"]
            rec["exact_py_note"] = (f"tests/exact.py, from bench/catalogue_exact.json (computed {c['date']} "
                                    f"in {c['exact_s']:.0f} s)")
        elif closed is None and n > spec["exact_max_n"]:
            rec["exact_py_note"] = (f"not affordable: n = {n:.0e} > {spec['exact_max_n']:.0e} (tests/exact.py "
                                    "costs O(n/σ*) per σ evaluation: 13–22 s at n = 1e5, 1–10 min at 1e6, "
                                    "hours at 1e7)")
        else:
            emit(ev="start", task="exact", t=time.time())
            rec["exact_py"] = exact_py(f, y, w)
            rec["exact_py_note"] = "tests/exact.py" + (" (cross-check of the closed form)"
                                                       if closed is not None else "")
            if closed is None:
                rec["fingerprint"] = fingerprint(f, y, w)  # the parent adds it to the cache
        rec["exact_s"] = time.perf_counter() - t
        emit(ev="exact", **rec)
    emit(ev="done")
    log.close()


def run_worker(spec, timeouts):
    """Runs one worker process; kills it when a call outlives its timeout.

    Returns (events, the task that timed out or None, the tail of the worker's output if it failed or None)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "events.jsonl")
        open(path, "w").close()
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", json.dumps(spec), "--worker-out", path]
        env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
        with open(os.path.join(tmp, "log"), "w") as errlog:
            proc = subprocess.Popen(cmd, stdout=errlog, stderr=subprocess.STDOUT, env=env, cwd=speed.REPO)
            events, current, timed_out, pending = [], None, None, ""
            with open(path) as fh:
                while True:
                    alive = proc.poll() is None
                    pending += fh.read()
                    *lines, pending = pending.split("\n")  # a line still being written stays pending
                    for line in lines:
                        ev = json.loads(line)
                        events.append(ev)
                        current = (ev["task"], ev["t"]) if ev["ev"] == "start" else None
                    if not alive:
                        break
                    if current and time.time() - current[1] > timeouts.get(current[0], TIMEOUT_S):
                        timed_out = current[0]
                        proc.kill()
                        proc.wait()
                        break
                    time.sleep(0.2)
        error = None
        if not timed_out and proc.returncode != 0:
            with open(os.path.join(tmp, "log")) as fh:
                error = f"worker exited with {proc.returncode}: " + fh.read()[-2000:]
            sys.stderr.write(f"{spec['family']} n={spec['n']} {spec['tasks']}: {error}\n")
    return events, timed_out, error


def load_exact():
    if not os.path.exists(EXACT_CACHE):
        return {}
    with open(EXACT_CACHE) as fh:
        return json.load(fh)


def save_exact(key, proc):
    cache = load_exact()
    cache[key] = {"fingerprint": proc["fingerprint"], "exact_py": proc["exact_py"], "exact_s": proc["exact_s"],
                  "date": datetime.date.today().isoformat(), "by": "tests/exact.py exact_smece(f, y, weights)"}
    with open(EXACT_CACHE, "w") as fh:
        json.dump(dict(sorted(cache.items())), fh, indent=1)
    return cache


def measure_case(family, n, resample, cfg, cache, save=True):
    """All measurements of one case, each in a fresh process: the exact value (no smoothece call), smece
    with smece on the typical data, and each resampling function with smece again (for the ratio)."""
    rec = {"family": family, "n": n, "n_rows": None, "what": FAMILIES[family][0], "resampling": {}}
    groups = [("exact", [])] + [("main", ["typical", "smece"])] + [(t, ["smece", t]) for t in RESAMPLING if resample]
    for role, tasks in groups:
        spec = {"family": family, "n": n, "tasks": tasks, "repeat": cfg["repeat"], "exact": role == "exact",
                "exact_max_n": cfg["exact_max_n"], "exact_cache": cache.get(f"{family}/{n}")}
        timeouts = {"exact": cfg["exact_timeout_s"], **{k: cfg["timeout_s"] for k in tasks}}
        t = time.perf_counter()
        events, timed_out, error = run_worker(spec, timeouts)
        proc = {"tasks_asked": tasks, "timed_out": timed_out, "error": error, "wall_s": time.perf_counter() - t,
                "tasks": {}}
        for ev in events:
            if ev["ev"] in ("timings", "exact"):
                proc.update({k: v for k, v in ev.items() if k != "ev"})
        if proc.get("fingerprint") and save:
            cache.update(save_exact(f"{family}/{n}", proc))
        if timed_out == "exact":
            proc.update(exact_py=None, exact_py_note=f"tests/exact.py timed out (> {cfg['exact_timeout_s']:.0f} s)")
        elif (timed_out or error) and tasks:
            for name in tasks:  # calls that finished before the kill or the failure: their times
                times = [ev["s"] for ev in events if ev["ev"] == "end" and ev["task"] == name]
                started = any(ev["ev"] == "start" and ev["task"] == name for ev in events)
                if name == timed_out:
                    proc["tasks"][name] = {"status": "timeout", "timeout_s": cfg["timeout_s"]}
                elif times:
                    proc["tasks"][name] = {"status": "partial", "best_s": min(times), "times_s": times,
                                           "note": "calls made before the process was killed or failed"}
                elif error and started:
                    proc["tasks"][name] = {"status": "error", "error": error}
        rec["n_rows"] = rec["n_rows"] or proc.get("n")
        if role in RESAMPLING:
            rec["resampling"][role] = proc
        else:
            rec[role] = proc
    return rec


# ----------------------------------------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------------------------------------


def exact_value(rec):
    e = rec.get("exact") or {}
    if e.get("closed_form") is not None:
        return e["closed_form"], "closed form"
    if e.get("exact_py") is not None:
        return e["exact_py"], "exact.py"
    return None, None


def timing(t, base):
    """{status, s, x} of one task record: x = s / base; for a timeout s is the timeout (a lower bound)."""
    if t is None:
        return {"status": "missing", "s": None, "x": None}
    sec = t.get("best_s", t.get("timeout_s"))
    return {"status": t["status"], "s": sec, "x": sec / base if sec and base else None}


def summarize(rec):
    """The numbers of the table for one case."""
    tasks = rec["main"]["tasks"]
    ty = tasks.get("typical")
    typical_s = ty["best_s"] if ty and ty["status"] in ("ok", "partial") else None
    sm = timing(tasks.get("smece"), typical_s)
    value = tasks["smece"].get("value") if sm["status"] == "ok" else None
    ex, src = exact_value(rec)
    out = {"value": value, "smece": sm, "typical_s": typical_s, "exact": ex, "exact_source": src,
           "error": (value - ex) if (ex is not None and value is not None) else None, "resampling": {}}
    for name, proc in rec["resampling"].items():
        own = proc["tasks"].get("smece")
        base = own["best_s"] if own and own["status"] in ("ok", "partial") else (sm["s"] if sm["status"] == "ok"
                                                                                else None)
        out["resampling"][name] = timing(proc["tasks"].get(name), base)
    return out


def fmt_t(t, timeout_s):
    """Table cell of a timing: '1.2 s (3.4×)', '> 300 s (> 9×)', 'error' or '–'."""
    if t["status"] in ("ok", "partial"):
        return speed.fmt_s(t["s"]) + (f" ({speed.fmt_x(t['x'])})" if t["x"] is not None else "")
    if t["status"] == "timeout":
        return f"> {timeout_s:.0f} s" + (f" (> {speed.fmt_x(t['x'])})" if t["x"] is not None else "")
    return t["status"] if t["status"] == "error" else "–"


def fmt_v(v):
    return "–" if v is None else f"{v:.7g}"


def title(cfg):
    return f"smoothece on hard inputs (catalogue){': ' + cfg['label'] if cfg.get('label') else ''}"


def markdown_body(results):
    """The body of catalogue.md (the header comes from bench/_record.py)."""
    cfg = results["config"]
    L = [f"- smoothece imported from `{results.get('smoothece_file')}`. The machine may be shared: ratios are "
         "measured within one process, absolute times are noisy."]
    L.append(f"- Timing: bench/speed.py's policy (warm-up call, then best of round-robin repeats; a call ≥ "
             f"{speed.fmt_s(cfg['repeat']['slow_s'])} is measured once). Timeout {cfg['timeout_s']:.0f} s per call: "
             "the process is killed and the call reported as \"> timeout\", not retried.")
    L.append(f"- `ratio` = `smece(case)` / `smece(typical data of the same n)` (bench/speed.py's `make_data`: "
             "f ~ Beta(2,2), y ~ Bernoulli(f^1.2)), both in the same process. Resampling columns: "
             f"`reliability_diagram(f, y, n_boot={N_BOOT}, seed=0)`, `bootstrap_smece(f, y, n_boot={N_BOOT}, "
             f"seed=0)`, `calibration_test(f, y, n_sim={N_SIM}, seed=0)`, each in a fresh process with `smece` "
             "on the same data: time (multiple of that `smece`).")
    L.append("- `exact`: closed form for point-mass data (see `point_mass_exact`), otherwise `tests/exact.py` "
             f"on the full data where n ≤ {cfg['exact_max_n']:.0e} or its value is kept in catalogue_exact.json "
             "(it costs O(n/σ*) per σ evaluation: 13–22 s at n = 1e5, 1–10 min at 1e6, hours at 1e7); "
             "blank where neither is available.\n")
    L.append("## Targets\n")
    rows = [(r, summarize(r)) for r in results["cases"]]
    to = cfg["timeout_s"]

    def over(t, limit):  # a timing that misses its target (a timeout or failure always does)
        return t["status"] != "ok" or t["x"] is None or t["x"] > limit

    def worst(ts):
        done = [t["x"] for t in ts if t["status"] == "ok" and t["x"] is not None]
        return speed.fmt_x(max(done)) if done else "–"

    def n_status(ts, status):
        k = sum(t["status"] == status for t in ts)
        return f", {k} {'timed out' if status == 'timeout' else 'failed'}" if k else ""

    L.append("| target | measured | verdict |")
    L.append("|---|---|---|")
    sm = [s["smece"] for _, s in rows]
    L.append(f"| `smece(case)` ≤ 3× `smece(typical)` in every case | {sum(over(t, 3) for t in sm)} of {len(sm)} "
             f"cases over 3×{n_status(sm, 'timeout')}{n_status(sm, 'error')}; worst finished: {worst(sm)} | "
             f"**{'missed' if any(over(t, 3) for t in sm) else 'met'}** |")
    rs = [t for _, s in rows for t in s["resampling"].values()]
    if rs:
        L.append(f"| resampling ≤ 20× `smece` on the same data | {sum(over(t, 20) for t in rs)} of {len(rs)} "
                 f"over 20×{n_status(rs, 'timeout')}{n_status(rs, 'error')}; worst finished: {worst(rs)} | "
                 f"**{'missed' if any(over(t, 20) for t in rs) else 'met'}** |")
    errs = [abs(s["error"]) for _, s in rows if s["error"] is not None]
    if errs:
        L.append(f"| \\|σ* − exact\\| ≤ 1e-6 (README accuracy contract) | worst {max(errs):.2g}; "
                 f"{sum(e > 1e-6 for e in errs)} of {len(errs)} cases with an exact value over | "
                 f"**{'met' if max(errs) <= 1e-6 else 'missed'}** |")
    L.append("")
    L.append("## Cases\n")
    L.append("Resampling columns: time (multiple of `smece` on the same data, in the same process).\n")
    L.append("| case | n | σ* (`smece`) | exact | \\|error\\| | `smece` | `smece` typical | ratio | "
             "`reliability_diagram` | `bootstrap_smece` | `calibration_test` | load |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r, s in rows:
        t = s["smece"]
        ratio = {"ok": speed.fmt_x(t["x"]), "timeout": "> " + speed.fmt_x(t["x"])}.get(t["status"], "–")
        res = [fmt_t(s["resampling"][k], to) if k in s["resampling"] else "" for k in RESAMPLING]
        load = r["main"].get("loadavg_after")
        err = "–" if s["error"] is None else f"{abs(s['error']):.2g}"
        L.append(f"| {r['family']} | {r['n_rows'] or r['n']:,} | {fmt_v(s['value'])} | {fmt_v(s['exact'])} | {err} | "
                 f"{fmt_t(dict(t, x=None), to)} | {speed.fmt_s(s['typical_s'])} | {ratio} | " + " | ".join(res)
                 + f" | {'–' if not load else f'{load[0]:.2f}'} |")
    L.append("")
    L.append("## What the cases are, and where the exact value comes from\n")
    L.append("| case | n | data | exact value |")
    L.append("|---|---|---|---|")
    for r, s in rows:
        e = r.get("exact") or {}
        notes = [x for x in (e.get("closed_form_note"), e.get("exact_py_note")) if x]
        if e.get("closed_form") is not None and e.get("exact_py") is not None:
            notes.append(f"exact.py − closed form = {e['exact_py'] - e['closed_form']:.2g}")
        L.append(f"| {r['family']} | {r['n_rows'] or r['n']:,} | {r['what']} | {'; '.join(notes) or '–'} |")
    L.append("")
    return L


QUICK_CASES = [("calibrated", 10**4, True), ("base_rate", 10**3, False), ("tiny", 10, False)]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawTextHelpFormatter)
    _record.add_options(p, "smoke run: calibrated n = 1e4 (with the resampling calls), base rate n = 1e3, tiny; "
                           "fewest repeats; exact values only in closed form, the cache left alone")
    p.add_argument("--cases", nargs="+", help="only cases whose family name contains one of these words")
    p.add_argument("--max-n", type=float, help="skip synthetic cases larger than this")
    p.add_argument("--timeout", type=float, default=TIMEOUT_S, help="seconds per call (default 300)")
    p.add_argument("--exact-timeout", type=float, default=EXACT_TIMEOUT_S, help="seconds for tests/exact.py")
    p.add_argument("--exact-max-n", type=float, default=EXACT_MAX_N,
                   help="largest n given to tests/exact.py (default 1e5)")
    p.add_argument("--label", default="", help='what is measured, e.g. "before: commit 9cbe3e1"')
    p.add_argument("--report-only", action="store_true", help="rewrite catalogue.md from catalogue.json (in --out)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--worker-out", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.worker:
        worker(json.loads(a.worker), a.worker_out)
        return 0

    if a.report_only:
        out = os.path.abspath(a.out or (_record.SCRATCH if a.quick else _record.RESULTS))
        saved = _record.read_json(os.path.join(out, "catalogue.json"))
        _record.write_markdown(os.path.join(out, "catalogue.md"), title(saved["results"]["config"]),
                               saved["header"], markdown_body(saved["results"]))
        return 0

    rec = _record.Record(__file__, a, argv)
    if a.quick:
        cases = QUICK_CASES
    else:
        cases = [(fam, n, n in resample) for fam, (_, sizes, resample) in FAMILIES.items() for n in sizes]
    cases = [(fam, n, res) for fam, n, res in cases
             if (not a.cases or any(w in fam for w in a.cases)) and (a.max_n is None or n is None or n <= a.max_n)]
    cfg = {"label": a.label, "timeout_s": a.timeout, "exact_timeout_s": a.exact_timeout,
           "exact_max_n": int(min(a.exact_max_n, 10**3) if a.quick else a.exact_max_n),
           "repeat": speed.QUICK_REPEAT if a.quick else speed.REPEAT,
           "n_boot": N_BOOT, "n_sim": N_SIM, "seed": speed.SEED, "quick": a.quick}
    cache = load_exact()
    results = {"config": cfg, "cases": []}
    t0 = time.perf_counter()
    for fam, n, resample in cases:
        rec_case = measure_case(fam, n, resample, cfg, cache, save=not a.quick)
        results["cases"].append(rec_case)
        results["smoothece_file"] = rec_case["main"].get("smoothece_file", results.get("smoothece_file"))
        s = summarize(rec_case)
        print(f"[{time.perf_counter() - t0:6.0f} s] {fam} n={rec_case['n_rows'] or n}: value {fmt_v(s['value'])}, "
              f"exact {fmt_v(s['exact'])}, smece (× typical) {fmt_t(s['smece'], a.timeout)}"
              + "".join(f", {k} {fmt_t(v, a.timeout)}" for k, v in s["resampling"].items()), flush=True)
        rec.save_json(results)
    rec.write(title(cfg), markdown_body(results), results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
