"""Objects and calls shared by threads: a GroupedSketch updated, merged, serialized and
answered from several threads at once gives what one thread gives (never a crash), and
arrays another thread changes during a call (the GIL released) never crash the process.

Each case runs in a fresh interpreter: a crash (a segfault, glibc's "double free") then
fails the test instead of ending the test run."""

import json
import subprocess
import sys
import textwrap

import numpy as np

import smoothece


def run_python(code, timeout=240):
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                         timeout=timeout)
    assert out.returncode == 0, f"exit status {out.returncode}\n{out.stderr[-3000:]}"
    return json.loads(out.stdout.strip().splitlines()[-1])


# Batches made from (thread, batch) alone, so that the test rebuilds every row the threads added.
# Predictions on a 2^-10 grid: the sketches keep them exactly, so their answers are the rows'.
BATCHES = """
import numpy as np
THREADS, BATCHES, ROWS = 8, 6, 2_000
def batch(t, b, new_keys):
    rng = np.random.default_rng([t, b])
    f = np.round(rng.beta(2, 2, ROWS) * 1024) / 1024
    y = rng.random(ROWS) < f ** 1.2
    keys = rng.integers(0, 5, ROWS)
    return f, y, keys + 10 * (t * BATCHES + b) if new_keys else keys
"""


def all_rows(new_keys):
    namespace = {}
    exec(BATCHES, namespace)
    parts = [namespace["batch"](t, b, new_keys) for t in range(namespace["THREADS"])
             for b in range(namespace["BATCHES"])]
    return [np.concatenate(column) for column in zip(*parts)]


def test_grouped_sketch_updated_from_eight_threads_holds_every_row():
    # New keys in every batch (each update grows the set while others update it) and the same
    # five keys in every batch (each update adds to groups others are adding to).
    got = run_python(BATCHES + """
import json, threading
import smoothece
out = {}
for new_keys in (True, False):
    sketch = smoothece.GroupedSketch()
    def work(t):
        for b in range(BATCHES):
            sketch.update(*batch(t, b, new_keys))
    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    r = sketch.smece_by_group()
    out[str(new_keys)] = {"n": sketch.n, "groups": len(sketch), "keys": r.keys.tolist(), "rows": r.n.tolist(),
                          "smece": r.smece.tolist()}
print(json.dumps(out))
""")
    for new_keys in (True, False):
        f, y, keys = all_rows(new_keys)
        want = smoothece.smece_by_group(f, y, keys)
        mine = got[str(new_keys)]
        assert mine["n"] == f.size == 96_000
        assert mine["groups"] == len(want) == (240 if new_keys else 5)
        assert mine["keys"] == want.keys.tolist()
        assert mine["rows"] == want.n.tolist()
        np.testing.assert_allclose(mine["smece"], want.smece, rtol=0, atol=1e-12)


def test_grouped_sketch_read_merged_and_serialized_while_another_thread_updates():
    # One thread streams batches into the set; others meanwhile serialize it, answer it, merge
    # it into sets of their own and list its keys. Every view is the set between two whole
    # updates (its rows a multiple of a batch, its groups those of the batches so far), and at
    # the end the set holds every row. Two more threads merge two sets into each other.
    got = run_python(BATCHES + """
import json, threading
import smoothece
sketch = smoothece.GroupedSketch()
done = threading.Event()
seen = {"bytes": [], "answers": [], "merged": [], "keys": [], "total": []}
errors = []
start = threading.Barrier(len(seen) + 1)  # the readers read while the writer writes
def writer():
    start.wait()
    for t in range(THREADS):
        for b in range(BATCHES):
            sketch.update(*batch(t, b, True))
    done.set()
def reader(kind):
    start.wait()
    try:
        read(kind)
        while not done.is_set():
            read(kind)
    except BaseException as err:  # a thread's exception would otherwise only be printed
        errors.append(f"{kind}: {err!r}")
def read(kind):
    if kind == "bytes":
        back = smoothece.GroupedSketch.from_bytes(sketch.to_bytes())
        seen[kind].append([back.n, len(back)])
    elif kind == "answers":
        r = sketch.smece_by_group()
        seen[kind].append([int(r.n.sum()), len(r)])
    elif kind == "merged":
        mine = smoothece.GroupedSketch().merge(sketch)
        seen[kind].append([mine.n, len(mine)])
    elif kind == "keys":
        keys = sketch.keys()
        seen[kind].append([len(keys), len(set(keys))])
    else:
        seen[kind].append([sketch.total().n, 0])
a, b = smoothece.GroupedSketch(), smoothece.GroupedSketch()
a.update(*batch(0, 0, True)); b.update(*batch(1, 0, True))
def cross(x, z):
    try:
        for _ in range(12):
            x.merge(z)
    except BaseException as err:
        errors.append(f"cross: {err!r}")
threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader, args=(k,)) for k in seen]
threads += [threading.Thread(target=cross, args=(a, b)), threading.Thread(target=cross, args=(b, a))]
for t in threads:
    t.start()
for t in threads:
    t.join()
r = sketch.smece_by_group()
seen["final"] = [sketch.n, len(sketch), r.keys.tolist(), r.n.tolist(), r.smece.tolist()]
seen["cross"] = [len(a), len(b)]
seen["errors"] = errors
print(json.dumps(seen))
""")
    assert got["errors"] == []
    f, y, keys = all_rows(True)
    want = smoothece.smece_by_group(f, y, keys)
    n, groups, got_keys, rows, values = got["final"]
    assert (n, groups, got_keys, rows) == (f.size, len(want), want.keys.tolist(), want.n.tolist())
    np.testing.assert_allclose(values, want.smece, rtol=0, atol=1e-12)
    batch_rows = 2_000
    for kind in ("bytes", "answers", "merged", "total"):
        assert got[kind], kind
        for rows_seen, groups_seen in got[kind]:
            assert rows_seen % batch_rows == 0, (kind, rows_seen)
            if kind != "total":  # whole batches: 5 keys each, new in every batch
                assert groups_seen == 5 * (rows_seen // batch_rows), (kind, rows_seen, groups_seen)
    for listed, distinct in got["keys"]:
        assert listed == distinct and listed % 5 == 0
    assert got["cross"] == [10, 10]


def test_keys_changed_by_another_thread_during_smece_by_group_never_crash():
    # Integer keys 0..7 are their own codes; keys 1..8 index a table sized by a first pass over
    # them. Another thread rewrites the keys while the calls read them with the GIL released:
    # each call answers (its groups hold every row) or says the keys changed, and the process
    # lives on (a pass that indexed by the caller's keys after an earlier pass checked them
    # would write past its tables).
    got = run_python("""
import json, threading, time
import numpy as np
import smoothece
n = 50_000
rng = np.random.default_rng(0)
f = np.round(rng.random(n) * 16) / 16
y = rng.random(n) < f
out = {}
for mode, shift, other in (("own codes", 0, 7), ("offsets", 1, 1000)):
    base = np.arange(n, dtype=np.int64) % 8 + shift
    keys = base.copy()
    stop = threading.Event()
    def scribble():
        while not stop.is_set():
            keys[: n - 8] = other
            keys[:] = base
    writer = threading.Thread(target=scribble)
    writer.start()
    answered, errors, rows = 0, [], set()
    end = time.monotonic() + 2.0
    try:
        while time.monotonic() < end:
            try:
                rows.add(int(smoothece.smece_by_group(f, y, keys).n.sum()))
                answered += 1
            except smoothece.InputError as err:
                errors.append([err.argument, str(err)])
    finally:
        stop.set()
        writer.join()
    out[mode] = {"answered": answered, "errors": errors, "rows": sorted(rows)}
print(json.dumps(out))
""")
    for mode in ("own codes", "offsets"):
        assert got[mode]["answered"] + len(got[mode]["errors"]) > 0, mode
        assert got[mode]["rows"] in ([], [50_000]), mode
        for argument, message in got[mode]["errors"]:
            assert argument == "groups" and message.startswith("groups changed while they were read"), mode
        print(mode, got[mode]["answered"], "answered,", len(got[mode]["errors"]), "errors")
