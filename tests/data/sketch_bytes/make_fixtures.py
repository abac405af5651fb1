"""Writes the byte fixtures of tests/test_bytes.py: sketches in the formats smoothece wrote
before version 4 (CalibrationSketch version 3, GroupedSketch versions 3 and 4), and what
that smoothece answered for them (expected.json).

Made with commit 828216f (the last to write those versions) installed, from the
repository root:

    git worktree add /tmp/old 828216f && pip install /tmp/old
    python tests/data/sketch_bytes/make_fixtures.py

The rows are drawn here, seeded, so the fixtures can be made again.
"""

import json
import pathlib
import struct

import numpy as np
import pandas as pd

import smoothece

HERE = pathlib.Path(__file__).parent


def rows(n, seed, discrete=False):
    rng = np.random.default_rng(seed)
    f = np.round(rng.beta(2, 2, n), 1) if discrete else rng.beta(2, 2, n)
    y = rng.random(n) < f ** 1.2
    return f, y


def main():
    expected = {}

    def save(name, obj, answers):
        raw = obj.to_bytes()
        (HERE / f"{name}.bin").write_bytes(raw)
        expected[name] = {"version": struct.unpack_from("<I", raw, 8)[0], **answers}

    def one(sketch):
        out = {"n": sketch.n, "total_weight": sketch.total_weight, "exact": sketch.exact,
               "metric": sketch.metric, "resolution": sketch.resolution}
        if sketch.n:
            out["smece_sigma_0.1"] = sketch.smece_sigma(0.1)
        if sketch.n and sketch.exact:  # a grid's σ* here lies below what it resolves (a bound)
            out["smece"] = sketch.smece()
        return out

    f, y = rows(300, 1, discrete=True)
    s = smoothece.CalibrationSketch(1024).update(f, y)
    save("v3_exact_l1", s, one(s))
    f, y = rows(400, 2)
    w = np.random.default_rng(3).integers(1, 4, f.size).astype(float)
    s = smoothece.CalibrationSketch(1024, metric="logit").update(f, y, w)
    save("v3_exact_logit_counts", s, {**one(s), "counts": s._counts()})
    f, y = rows(3000, 4)
    w = np.random.default_rng(5).lognormal(size=f.size)
    s = smoothece.CalibrationSketch(256).update(f, y, w)
    save("v3_grid_weighted", s, one(s))
    save("v3_empty", smoothece.CalibrationSketch(512), one(smoothece.CalibrationSketch(512)))

    f, y = rows(600, 6, discrete=True)
    keys = np.array(["a", "b", "c"])[np.arange(f.size) % 3]
    g = smoothece.GroupedSketch(1024).update(f, y, keys)
    save("v3_grouped_strings", g, {"keys": g.keys(), "n": [g[k].n for k in g.keys()],
                                   "smece": [g[k].smece() for k in g.keys()]})
    months = pd.PeriodIndex(["2024-01", "2024-02"], freq="M")[np.arange(f.size) % 2]
    g = smoothece.GroupedSketch(1024).update(f, y, (keys, months))
    save("v4_grouped_tuples", g, {"keys": [[k[0], str(k[1])] for k in g.keys()], "n": [g[k].n for k in g.keys()],
                                  "smece": [g[k].smece() for k in g.keys()]})
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")


if __name__ == "__main__":
    main()
