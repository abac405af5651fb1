"""Forward (r2c) against inverse (c2r) real transforms in FFTW's estimated plans.

The core's Spectrum computes the cosine coefficients of a grid's masses
either way (cpp/core/smoothing/spectrum.cpp); it takes the inverse transform at
lengths 3·2^k and the forward one at powers of two, as this table says.
A second table times the inverse transform that reads smECEσ off a grid of
M intervals (length 2M) per node, for every 5-smooth M over two octaves:
read_intervals picks M among 2^k·{1, 9/8, 5/4, 3/2}: about as cheap per node
as powers of two, where the other 5-smooth sizes cost up to twice as much.
pyfftw drives the same FFTW library the core links when it uses the
pyfftw wheel's (FFTW_ESTIMATE, as the core plans).

    python bench/fft_plans.py [--quick] [--out DIR]

Needs pyfftw (the wheel the core's FFTW comes from when there is no system
FFTW); without it the files say so and hold no timings.
"""
import argparse
import time

import numpy as np

import _record

try:
    import pyfftw
except ImportError:  # reported in the output
    pyfftw = None

LENGTHS = (2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 65536)
BATCH = 64  # read-off transforms timed 64 at a time (one plan), so Python's call costs nothing


def five_smooth(m: int) -> bool:
    for p in (2, 3, 5):
        while m % p == 0:
            m //= p
    return m == 1


READ_GRIDS = tuple(m for m in range(256, 1025) if five_smooth(m)) + (2048, 2304, 2560, 3072, 4096)


def best_time(plan, reps: int, rounds: int = 15) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            plan.execute()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


def transforms(lengths, rounds):
    rows = []
    for n in lengths:
        real = pyfftw.empty_aligned(n, "float64")
        half = pyfftw.empty_aligned(n // 2 + 1, "complex128")
        forward = pyfftw.FFTW(real, half, flags=("FFTW_ESTIMATE",), direction="FFTW_FORWARD")
        inverse = pyfftw.FFTW(half, real, flags=("FFTW_ESTIMATE", "FFTW_DESTROY_INPUT"), direction="FFTW_BACKWARD")
        real[:] = np.arange(n) % 7
        reps = max(20, 2_000_000 // n) if rounds > 3 else 5
        t_forward = t_inverse = float("inf")
        for _ in range(3):  # alternate, so that load hits both alike
            t_forward = min(t_forward, best_time(forward, reps, rounds // 3))
            half[:] = np.arange(n // 2 + 1) % 5
            t_inverse = min(t_inverse, best_time(inverse, reps, rounds // 3))
        rows.append({"length": n, "r2c_us": 1e6 * t_forward, "c2r_us": 1e6 * t_inverse})
        print(f"{n:6d}  r2c {1e6 * t_forward:8.2f} us  c2r {1e6 * t_inverse:8.2f} us", flush=True)
    return rows


def read_offs(grids, rounds):
    rows = []
    for m in grids:
        half = pyfftw.empty_aligned((BATCH, m + 1), "complex128")
        real = pyfftw.empty_aligned((BATCH, 2 * m), "float64")
        plan = pyfftw.FFTW(half, real, flags=("FFTW_ESTIMATE", "FFTW_DESTROY_INPUT"), direction="FFTW_BACKWARD")
        t = float("inf")
        for _ in range(rounds):
            half[:] = 1.0 / (1.0 + np.arange(m + 1))
            t0 = time.perf_counter()
            plan.execute()
            t = min(t, (time.perf_counter() - t0) / BATCH)
        power = 1 << (m.bit_length() - 1)
        used = m in (power, power // 8 * 9, power // 4 * 5, power // 2 * 3)
        rows.append({"M": m, "c2r_us": 1e6 * t, "ns_per_node": 1e9 * t / m, "used": used})
        print(f"{m:6d}  c2r {1e6 * t:8.2f} us  {1e9 * t / m:6.2f} ns/node {'used' if used else ''}", flush=True)
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _record.add_options(parser, "smoke run: four lengths and four read-off grids, 3 rounds")
    args = parser.parse_args(argv)
    rec = _record.Record(__file__, args, argv, packages=("numpy", "pyfftw"))
    title = "FFTW estimated plans: forward (r2c) against inverse (c2r) real transforms"
    if pyfftw is None:
        print("pyfftw not installed: nothing measured", flush=True)
        rec.write(title, ["**pyfftw not installed**: nothing measured (`pip install pyfftw`)."],
                  {"pyfftw_installed": False})
        return
    rounds = 3 if args.quick else 15
    lengths = LENGTHS[:4] if args.quick else LENGTHS
    grids = (256, 288, 320, 384) if args.quick else READ_GRIDS
    rows, reads = transforms(lengths, rounds), read_offs(grids, rounds)
    lines = [f"Best of {rounds} rounds, alternating the two; one transform of the given length.", "",
             "| length | r2c | c2r | c2r / r2c |", "|---|---|---|---|"]
    lines += [f"| {r['length']} | {r['r2c_us']:.2f} µs | {r['c2r_us']:.2f} µs | {r['c2r_us'] / r['r2c_us']:.2f} |"
              for r in rows]
    lines += ["", "## Read-off grids: c2r of length 2M, per node", "",
              f"Best of {rounds} rounds of {BATCH} transforms in one plan. ✓: a grid read_intervals uses "
              "(2^k·{1, 9/8, 5/4, 3/2}).", "",
              "| M | c2r | per node | used |", "|---|---|---|---|"]
    lines += [f"| {r['M']} | {r['c2r_us']:.2f} µs | {r['ns_per_node']:.2f} ns | {'✓' if r['used'] else ''} |"
              for r in reads]
    rec.write(title, lines, {"pyfftw_installed": True, "rounds": rounds, "batch": BATCH, "transforms": rows,
                             "read_offs": reads})


if __name__ == "__main__":
    main()
