"""Throughput of CalibrationSketch.update, as rows per second and as a ratio to the
numpy floor (one pass reading the same batch: f.sum(); y.sum()), measured in one
process. Usage: python bench/sketch_throughput.py [--n 10000000] [--batch 100000]"""

import argparse
import time

import numpy as np

import smoothece


def best(fn, repeats=5):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--batch", type=int, default=100_000)
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    f = rng.beta(2, 2, size=args.n)
    y = rng.uniform(size=args.n) < f**1.2
    starts = range(0, args.n, args.batch)

    def stream():
        s = smoothece.CalibrationSketch()
        for i in starts:
            s.update(f[i:i + args.batch], y[i:i + args.batch])
        return s

    def floor():
        for i in starts:
            f[i:i + args.batch].sum()
            y[i:i + args.batch].sum()

    stream()  # warm-up
    t_sketch, t_floor = best(stream), best(floor)
    t_whole = best(lambda: smoothece.CalibrationSketch().update(f, y))
    t_smece = best(lambda: smoothece.smece(f, y))
    s = stream()
    print(f"n = {args.n:,} in batches of {args.batch:,}: update {t_sketch * 1e3:.1f} ms = {args.n / t_sketch / 1e6:.1f} M rows/s, "
          f"{t_sketch / t_floor:.1f}x the floor over the same batches ({t_floor * 1e3:.1f} ms); "
          f"one update of all rows {t_whole * 1e3:.1f} ms; smece on the arrays {t_smece * 1e3:.1f} ms; "
          f"sketch {len(s.to_bytes()):,} bytes serialized, nbytes {s.nbytes:,}")


if __name__ == "__main__":
    main()
