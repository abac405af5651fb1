"""σ*'s search: evaluations of smECEσ per σ*, for the value and per replicate, and resampling times.

Every σ* (a data set's value, each bootstrap, null and paired replicate) is
one search of ``solve_fixpoint`` (cpp/core/smoothing/fixpoint.hpp), and its
evaluations of smECEσ are its cost. ``_core.fixpoint_counts()`` counts both
since the process started; a call's count less that of ``smece`` on the
same rows (the value each resampling call solves first) is its replicates'.
Data: calibrated (y ~ Bernoulli(f), f ~ U(0, 1)), miscalibrated
(y ~ Bernoulli(f²)), crossing (E[y | f] = f + 0.05 sin 2πf) and discrete
(calibrated, f in {0.1, …, 0.9}), both metrics; the paired replicates of
``compare`` against the model 0.8 f + 0.1.

Times: ``bootstrap_smece`` (n_boot=1000) and ``calibration_test``
(n_sim=1000) at 10^5 rows, each call once per process after a warm-up.
``--baseline DIR`` runs the same in the smoothece package found in DIR (an
older build; its evaluations are counted where it has the hook), the two
builds' processes alternating ``--rounds`` times; the best time of each
build is reported, and their ratio. It also reports how far the two builds'
numbers lie apart at the same seed: the value, every replicate, the
interval's ends and the p-value; and σ* of the catalogue's hard inputs
(bench/catalogue.py) from both builds.

    python bench/fixpoint.py [--quick] [--baseline DIR [--baseline-note TEXT]] [--rounds 3] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

import _record

KINDS = ("calibrated", "miscalibrated", "crossing", "discrete")
METRICS = ("l1", "logit")
SEED = 11


def data(kind: str, n: int):
    rng = np.random.default_rng([20250611, KINDS.index(kind), n])
    f = rng.integers(1, 10, n) / 10 if kind == "discrete" else rng.random(n)
    p = {"miscalibrated": f * f, "crossing": f + 0.05 * np.sin(2 * np.pi * f)}.get(kind, f)
    return f, rng.random(n) < p


def counted(call):
    """What call() returns, and the (searches, evaluations) it made (None without the hook)."""
    from smoothece import _core

    hook = getattr(_core, "fixpoint_counts", None)
    before = hook() if hook else None
    out = call()
    return out, (None if hook is None else [a - b for a, b in zip(hook(), before)])


def less(total, part):
    return None if total is None else [t - p for t, p in zip(total, part)]


def counts(n: int, replicates: int) -> dict:
    """Searches and evaluations of the value and of each call's replicates, with the numbers to compare."""
    import smoothece

    out = {}
    for kind in KINDS:
        f, y = data(kind, n)
        f_b = 0.8 * f + 0.1
        for metric in METRICS:
            value, v = counted(lambda: smoothece.smece(f, y, metric=metric))
            _, v_b = counted(lambda: smoothece.smece(f_b, y, metric=metric))
            boot, b = counted(lambda: smoothece.bootstrap_smece(f, y, metric=metric, n_boot=replicates, seed=SEED))
            test, t = counted(lambda: smoothece.calibration_test(f, y, metric=metric, n_sim=replicates, seed=SEED))
            pair, c = counted(lambda: smoothece.compare(f, f_b, y, metric=metric, n_boot=replicates, seed=SEED))
            out[f"{kind} {metric}"] = {
                "value": v, "bootstrap": less(b, v), "test": less(t, v),
                "paired": None if c is None else less(less(c, v), v_b),
                "numbers": {"value": value, "bootstrap": boot.replicates.tolist(), "low": boot.low,
                            "high": boot.high, "null": test.null.tolist(), "p_value": test.p_value,
                            "paired": pair.replicates.tolist(),
                            "difference low": pair.low, "difference high": pair.high}}
    return out


def times(n: int, replicates: int) -> dict:
    import smoothece

    warm_f = np.random.default_rng(0).random(2000)
    smoothece.calibration_test(warm_f, warm_f > 0.5, n_sim=20, seed=0)  # threads and FFTW plans made
    out = {}
    for kind in KINDS:
        f, y = data(kind, n)
        for metric in METRICS:
            for name, call in (("bootstrap_smece", lambda: smoothece.bootstrap_smece(
                    f, y, metric=metric, n_boot=replicates, seed=SEED)),
                    ("calibration_test", lambda: smoothece.calibration_test(
                        f, y, metric=metric, n_sim=replicates, seed=SEED))):
                t0 = time.perf_counter()
                call()
                out[f"{kind} {metric} {name}"] = time.perf_counter() - t0
    return out


def values(sizes) -> dict:
    """σ* of the catalogue's inputs (bench/catalogue.py: hard cases and real base rates), from ``smece``
    and from a diagram's full summary (its own grid), both metrics."""
    import warnings

    import catalogue
    import smoothece

    out = {}
    for family, (_, family_sizes, _) in catalogue.FAMILIES.items():
        for n in [None] if family_sizes == [None] else [10] if family == "tiny" else sizes:
            f, y, w = catalogue.make_case(family, n)
            for metric in METRICS:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # a bound's ResolutionWarning: the numbers still compare
                    out[f"{family} {n} {metric}"] = [
                        smoothece.smece(f, y, weights=w, metric=metric),
                        smoothece.reliability_diagram(f, y, weights=w, metric=metric, n_boot=0).sigma]
    return out


def child(what: str, n: int, replicates: int) -> dict:
    import smoothece

    if what == "values":
        result = values((1000,) if n <= 1000 else (1000, 30_000, 300_000))
    else:
        result = counts(n, replicates) if what == "counts" else times(n, replicates)
    return {"smoothece": os.path.dirname(smoothece.__file__), "result": result}


def run_child(what: str, n: int, replicates: int, python_dir: str | None) -> dict:
    env = dict(os.environ)
    if python_dir:
        env["PYTHONPATH"] = os.path.abspath(python_dir) + os.pathsep + _record.BENCH
    cmd = [sys.executable, os.path.abspath(__file__), "--child", what, str(n), str(replicates)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=_record.REPO)
    if proc.returncode != 0:
        raise RuntimeError(f"{what} n={n} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def per(count) -> str:
    """Evaluations per search of a (searches, evaluations) pair."""
    if count is None:
        return "–"
    searches, evaluations = count
    return f"{evaluations / searches:.2f}" if searches else "0 searches"


def relative(a, b) -> np.ndarray:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return np.abs(a - b) / np.maximum(np.abs(b), 1e-300)


def agreement(now: dict, base: dict) -> dict:
    """How far this build's numbers lie from the baseline's at the same seed."""
    x, y = now["numbers"], base["numbers"]
    out = {"value": float(relative(x["value"], y["value"]))}
    for key in ("bootstrap", "null", "paired"):
        if x[key] is not None and y[key] is not None:
            r = relative(x[key], y[key])
            out[key] = {"median": float(np.median(r)), "max": float(r.max()),
                        "over 1e-3": int((r > 1e-3).sum())}
    for key in ("low", "high", "p_value", "difference low", "difference high"):
        out[key] = float(abs(x[key] - y[key]))
    return out


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        print(json.dumps(child(argv[1], int(argv[2]), int(argv[3]))))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _record.add_options(parser, "smoke run: n = 10^3, 50 replicates, one round")
    parser.add_argument("--baseline", help="folder with another smoothece package to run beside this one")
    parser.add_argument("--baseline-note", default="", help="what the baseline is, for the output")
    parser.add_argument("--rounds", type=int,
                        help="timed processes of each build, alternating (default 3; 0: evaluations only)")
    args = parser.parse_args(argv)
    rounds = args.rounds if args.rounds is not None else (1 if args.quick else 3)
    sizes = (1000,) if args.quick else (1000, 100_000)
    timed_n, replicates = (1000, 50) if args.quick else (100_000, 1000)
    rec = _record.Record(__file__, args, argv)
    builds = {"this": None, **({"baseline": args.baseline} if args.baseline else {})}
    results = {"counts": {}, "agreement": {}, "times": {}}

    count_rows, agree_rows = [], []
    for n in sizes:
        got = {name: run_child("counts", n, replicates, path)["result"] for name, path in builds.items()}
        results["counts"][n] = {name: {case: {k: v for k, v in entry.items() if k != "numbers"}
                                       for case, entry in cases.items()} for name, cases in got.items()}
        for case, now in got["this"].items():
            cells = []
            for part in ("value", "bootstrap", "test", "paired"):
                cells.append(per(now[part]) + (f" / {per(got['baseline'][case][part])}" if args.baseline else ""))
            count_rows.append(f"| {case} | {n:.0e} | " + " | ".join(cells) + " |")
            print(count_rows[-1], flush=True)
            if args.baseline:
                a = results["agreement"].setdefault(str(n), {})[case] = agreement(now, got["baseline"][case])
                reps = " | ".join(f"{a[k]['median']:.1e} / {a[k]['max']:.1e} ({a[k]['over 1e-3']})"
                                  if k in a else "–" for k in ("bootstrap", "null", "paired"))
                agree_rows.append(f"| {case} | {n:.0e} | {a['value']:.1e} | {reps} | {max(a['low'], a['high']):.1e} | "
                                  f"{a['p_value']:.1e} | {max(a['difference low'], a['difference high']):.1e} |")
        rec.save_json(results)

    value_line = []
    if args.baseline:
        got = {name: run_child("values", sizes[-1], 0, path)["result"] for name, path in builds.items()}
        differ = {k: float(relative(v, got["baseline"][k]).max()) for k, v in got["this"].items()}
        results["values"] = {"this": got["this"], "baseline": got["baseline"], "relative difference": differ}
        worst = max(differ, key=differ.get)
        value_line = ["", f"σ* of the {len(differ)} catalogue inputs (`bench/catalogue.py`'s families at n = "
                      f"{', '.join(f'{n:g}' for n in ((1000,) if args.quick else (1000, 30_000, 300_000)))}, "
                      "both metrics), from `smece` and from a diagram's full summary: the two builds differ by "
                      f"{differ[worst]:.1e} relative at most ({worst}); "
                      f"{sum(d > 0 for d in differ.values())} of {len(differ)} differ at all."]
        print(value_line[-1], flush=True)
        rec.save_json(results)

    timings = {name: [] for name in builds}
    for _ in range(rounds):
        for name, path in builds.items():  # alternating: a noisy stretch of the machine hits both builds
            timings[name].append(run_child("times", timed_n, replicates, path)["result"])
    best = {name: {k: min(t[k] for t in runs) for k in runs[0]} if runs else {} for name, runs in timings.items()}
    results["times"] = {"n": timed_n, "replicates": replicates, "rounds": timings, "best": best}
    time_rows = []
    for key in best["this"]:
        line = f"| {key.rsplit(' ', 1)[0]} | `{key.rsplit(' ', 1)[1]}` | {best['this'][key] * 1e3:.1f} |"
        if args.baseline:
            line += f" {best['baseline'][key] * 1e3:.1f} | {best['this'][key] / best['baseline'][key]:.2f} |"
        time_rows.append(line)
        print(time_rows[-1], flush=True)
    ratios = [best["this"][k] / best["baseline"][k] for k in best["this"]] if args.baseline else []
    ratio_line = (f"Ratios this / baseline: median {np.median(ratios):.2f}, range {min(ratios):.2f}–"
                  f"{max(ratios):.2f}. " if ratios else "")

    vs = " (this / baseline)" if args.baseline else ""
    body = [f"Evaluations of smECEσ per σ*{vs}: the value (`smece`; more than one search where σ* lies below the "
            "first grid), and per replicate of `bootstrap_smece`, `calibration_test` and `compare`'s paired "
            f"bootstrap, {replicates} replicates, seed {SEED}. –: the build has no counting hook.", "",
            "| data | n | value | bootstrap replicate | null replicate | paired replicate |",
            "|---|---|---|---|---|---|", *count_rows, "",
            f"Time of one call at n = {timed_n:g}, {replicates} replicates, best of {rounds} processes"
            + (" per build, the builds alternating" if args.baseline else "") + " (ms):", "",
            "| data | call | this |" + (" baseline | this / baseline |" if args.baseline else ""),
            "|---|---|---|" + ("---|---|" if args.baseline else ""), *time_rows]
    if args.baseline:
        note = f" ({args.baseline_note})" if args.baseline_note else ""
        body += ["", f"{ratio_line}Baseline: the smoothece package in `{args.baseline}`{note}.", "",
                 "How far the two builds' numbers lie apart at the same seed: the value (relative), each "
                 "kind of replicate (relative: median / max, and how many differ by more than 1e-3), the "
                 "bootstrap interval's ends, the test's p-value and the paired interval's ends (absolute).", "",
                 "| data | n | value | bootstrap | null | paired | interval ends | p-value | paired ends |",
                 "|---|---|---|---|---|---|---|---|---|", *agree_rows, *value_line]
    rec.write("σ*'s search: evaluations and resampling times", body, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
