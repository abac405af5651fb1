"""Sketch bytes from anywhere: one format family and one checksum for CalibrationSketch,
GroupedSketch and ComparisonSketch; every field checked against what a real sketch can
hold; what reading allocates bounded by the bytes' size; older versions read (checked)
or refused by version. The layout is docs/design.md's "Sketch bytes"; these tests build
and parse bytes from that table, with an XXH64 written here from its specification."""

import json
import math
import pathlib
import pickle
import struct
import warnings
import zlib

import numpy as np
import pytest

import smoothece
from smoothece import (CalibrationSketch, ComparisonSketch, GroupedSketch, InputError, ResolutionError,
                       ResolutionWarning, WeightKindWarning)

DATA = pathlib.Path(__file__).parent / "data" / "sketch_bytes"
G22 = 1 << 22

# --- XXH64, from the xxHash specification ----------------------------------------------------

_M = (1 << 64) - 1
_P1, _P2, _P3, _P4, _P5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0x85EBCA77C2B2AE63,
                           0x27D4EB2F165667C5)


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & _M


def _round(acc, lane):
    return (_rotl((acc + lane * _P2) & _M, 31) * _P1) & _M


def xxh64(data: bytes) -> int:
    n, p = len(data), 0
    word = lambda at, size: int.from_bytes(data[at:at + size], "little")
    if n >= 32:
        v = [(_P1 + _P2) & _M, _P2, 0, (-_P1) & _M]
        while p <= n - 32:
            v = [_round(v[i], word(p + 8 * i, 8)) for i in range(4)]
            p += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M
        for lane in v:
            h = ((h ^ _round(0, lane)) * _P1 + _P4) & _M
    else:
        h = _P5
    h = (h + n) & _M
    while p + 8 <= n:
        h = (_rotl(h ^ _round(0, word(p, 8)), 27) * _P1 + _P4) & _M
        p += 8
    if p + 4 <= n:
        h = (_rotl(h ^ (word(p, 4) * _P1 & _M), 23) * _P2 + _P3) & _M
        p += 4
    while p < n:
        h = (_rotl(h ^ (data[p] * _P5 & _M), 11) * _P1) & _M
        p += 1
    h = ((h ^ (h >> 33)) * _P2) & _M
    h = ((h ^ (h >> 29)) * _P3) & _M
    return h ^ (h >> 32)


def test_checksum_is_xxh64():
    # The specification's values, then the core's checksum against this one on every tail length.
    assert xxh64(b"") == 0xEF46DB3751D8E999
    assert xxh64(b"abc") == 0x44BC2CF5AD770999
    assert xxh64(b"Nobody inspects the spammish repetition") == 0xFBCEA83C8A378BF1
    rng = np.random.default_rng(0)
    for n in list(range(70)) + [1000, 4099]:
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        assert smoothece._core.bytes_checksum(data) == xxh64(data)


# --- the layout --------------------------------------------------------------------------------

MAGIC = {"sketch": b"SMECESK\0", "grouped": b"SMECEGK\0", "comparison": b"SMECECS\0"}
VERSION = {"sketch": 4, "grouped": 5, "comparison": 1}
HEADER = {"sketch": 64, "grouped": 56, "comparison": 72}
# The kinds' header fields after the envelope's 24 bytes: (offset, struct format, name).
FIELDS = {
    "sketch": [(24, "B", "metric"), (25, "B", "form"), (26, "B", "weighted"), (27, "B", "traits"),
               (28, "i", "weight_exp"), (32, "q", "resolution"), (40, "Q", "rows"), (48, "Q", "positive"),
               (56, "d", "weight")],
    "grouped": [(24, "B", "metric"), (32, "q", "resolution"), (40, "Q", "groups"), (48, "Q", "key_bytes")],
    "comparison": [(24, "B", "metric"), (28, "I", "models"), (32, "q", "resolution"), (40, "q", "unit_cells"),
                   (48, "i", "weight_exp"), (56, "Q", "units"), (64, "Q", "name_bytes")],
}


def parse(kind: str, blob: bytes, verify: bool = True) -> dict:
    """The envelope and header fields of bytes of the current version, checked against the table."""
    assert blob[:8] == MAGIC[kind]
    version, header, payload = struct.unpack_from("<IIQ", blob, 8)
    assert (version, header) == (VERSION[kind], HEADER[kind])
    assert len(blob) == header + payload + 8
    assert not verify or int.from_bytes(blob[-8:], "little") == xxh64(blob[:-8])
    out = {name: struct.unpack_from("<" + fmt, blob, at)[0] for at, fmt, name in FIELDS[kind]}
    out["payload"] = blob[header:-8]
    return out


def seal(body: bytes, fast: bool = False) -> bytes:
    """Bytes of the current version with `body` (all but the checksum), checksum recomputed
    (fast: by the core's checksum, which test_checksum_is_xxh64 checks against this one)."""
    checksum = smoothece._core.bytes_checksum(body) if fast else xxh64(body)
    return body + checksum.to_bytes(8, "little")


def with_payload(blob: bytes, payload: bytes, fast: bool = False) -> bytes:
    header = struct.unpack_from("<I", blob, 12)[0]
    head = bytearray(blob[:header])
    struct.pack_into("<Q", head, 16, len(payload))
    return seal(bytes(head) + payload, fast)


def varint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def read_varint(data: bytes, pos: int):
    v = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        v |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return v, pos


def decode_runs(data: bytes, pos: int, size: int):
    out = []
    while len(out) < size:
        zeros, pos = read_varint(data, pos)
        literals, pos = read_varint(data, pos)
        out += [0.0] * zeros + list(struct.unpack_from(f"<{literals}d", data, pos))
        pos += 8 * literals
    return np.array(out), pos


def encode_runs(values) -> bytes:
    out, i, v = bytearray(), 0, list(values)
    zero = lambda x: x == 0.0 and math.copysign(1.0, x) > 0
    while i < len(v):
        z = 0
        while i + z < len(v) and zero(v[i + z]):
            z += 1
        n = 0
        while i + z + n < len(v) and not zero(v[i + z + n]):
            n += 1
        out += varint(z) + varint(n) + struct.pack(f"<{n}d", *v[i + z:i + z + n])
        i += z + n
    return bytes(out)


def split(blob: bytes):
    """(the 40 bytes of fields, the payload) of sketch bytes of version 3 (fields at 16,
    the payload's length at 56) or 4 (fields at 24, in the envelope)."""
    if struct.unpack_from("<I", blob, 8)[0] == 4:
        parse("sketch", blob)
        return blob[24:64], blob[64:-8]
    assert struct.unpack_from("<II", blob, 8) == (3, 64) and struct.unpack_from("<Q", blob, 56)[0] == len(blob) - 72
    return blob[16:56], blob[64:-8]


def grid_arrays(blob: bytes):
    """The grid's eight arrays (w0, w1, f0, f1 on the nodes; the cells' rows, Σw, Σw², Σw·f)."""
    fields, payload = split(blob)
    g = struct.unpack_from("<q", fields, 8)[0]
    arrays, pos = [], 0
    for size in [g + 1] * 4 + [2 * (g // 8)] * 4:
        a, pos = decode_runs(payload, pos, size)
        arrays.append(a)
    assert pos == len(payload)
    return arrays


def both_versions(fields: bytes, payload: bytes):
    """The same sketch as bytes of version 3 (still read) and of version 4."""
    return [legacy_sketch(fields, payload), make_sketch(fields, payload)]


def with_grid(blob: bytes, arrays):
    return both_versions(split(blob)[0], b"".join(encode_runs(a) for a in arrays))


def with_sketch_field(blob: bytes, name: str, value):
    at, fmt = next((a, f) for a, f, n in FIELDS["sketch"] if n == name)
    fields, payload = split(blob)
    fields = bytearray(fields)
    struct.pack_into("<" + fmt, fields, at - 24, value)
    return both_versions(bytes(fields), payload)


def sketch_fields(metric=0, form=0, weighted=0, traits=1, weight_exp=0, resolution=1024, rows=0, positive=0,
                  weight=0.0) -> bytes:
    return struct.pack("<BBBBiqQQd", metric, form, weighted, traits, weight_exp, resolution, rows, positive, weight)


def make_sketch(fields: bytes, payload: bytes) -> bytes:
    return seal(MAGIC["sketch"] + struct.pack("<IIQ", 4, 64, len(payload)) + fields + payload)


def legacy_sketch(fields: bytes, payload: bytes, version: int = 3) -> bytes:
    """Versions 2 and 3: the same 40 bytes of fields at 16, the payload's length at 56, FNV-1a at the end."""
    body = MAGIC["sketch"] + struct.pack("<II", version, 64) + fields + struct.pack("<Q", len(payload)) + payload
    h = 0xCBF29CE484222325
    for b in body:
        h = ((h ^ b) * 0x100000001B3) & _M
    return body + h.to_bytes(8, "little")


def grouped_v3(records, resolution, metric=0, version=3, checksum=True) -> bytes:
    """Grouped bytes of versions 1 to 4: (encoded key, sketch bytes) records after the header."""
    parts = [MAGIC["grouped"], struct.pack("<II", version, len(records))]
    if version >= 2:
        parts.append(struct.pack("<IB", resolution, metric))
    for key, raw in records:
        parts += [key, struct.pack("<Q", len(raw)), raw]
    body = b"".join(parts)
    return body + struct.pack("<I", zlib.crc32(body)) if checksum else body


def string_key(text: str) -> bytes:
    raw = text.encode()
    return b"s" + struct.pack("<I", len(raw)) + raw


def rows(n, seed, discrete=False):
    rng = np.random.default_rng(seed)
    f = np.round(rng.beta(2, 2, n), 1) if discrete else rng.beta(2, 2, n)
    return f, rng.random(n) < f ** 1.2


# --- one format family ---------------------------------------------------------------------------

def test_every_kind_writes_the_documented_envelope():
    f, y = rows(3000, 1)
    w = np.random.default_rng(1).lognormal(size=f.size)
    s = CalibrationSketch(256, metric="logit").update(f, y, w)
    h = parse("sketch", s.to_bytes())
    assert (h["metric"], h["form"], h["resolution"], h["rows"], h["positive"]) == (1, 1, 256, 3000, 3000)
    assert h["weight_exp"] == 0 and h["weight"] == pytest.approx(w.sum(), rel=1e-12)
    assert h["traits"] == 0  # lognormal weights are not whole
    exact = CalibrationSketch(1024).update(*rows(200, 2, discrete=True))
    h = parse("sketch", exact.to_bytes())
    assert (h["form"], h["weighted"], h["traits"], h["rows"]) == (0, 0, 1, 200)

    g = GroupedSketch(512, metric="logit").update(f[:90], y[:90], np.arange(90) % 3)
    raw = g.to_bytes()
    h = parse("grouped", raw)
    assert (h["metric"], h["resolution"], h["groups"]) == (1, 512, 3)
    keys = b"".join(b"i" + struct.pack("<q", k) for k in (0, 1, 2))  # in order of first appearance
    assert h["key_bytes"] == len(keys) and h["payload"].startswith(keys)
    pos = len(keys)
    for key in (0, 1, 2):  # then each group's sketch bytes, length first
        (size,) = struct.unpack_from("<Q", h["payload"], pos)
        inner = h["payload"][pos + 8:pos + 8 + size]
        assert CalibrationSketch.from_bytes(inner) == g[key] and parse("sketch", inner)["rows"] == 30
        pos += 8 + size
    assert pos == len(h["payload"])

    c = ComparisonSketch(["a", "β"], resolution=1024, unit_cells=64).update([f[:500], f[:500] ** 2], y[:500])
    h = parse("comparison", c.to_bytes())
    assert (h["models"], h["resolution"], h["unit_cells"], h["units"]) == (2, 1024, 64, c.units)
    assert h["payload"].startswith(struct.pack("<I", 1) + b"a" + struct.pack("<I", 2) + "β".encode())


# --- round trips -----------------------------------------------------------------------------------

def _sketches():
    f, y = rows(3000, 3)
    fd, yd = rows(400, 4, discrete=True)
    w = np.random.default_rng(5).lognormal(size=f.size)
    huge = CalibrationSketch(1024).update(fd, yd, np.full(fd.size, 1e200))  # weights rescaled by a power of two
    return {
        "empty": CalibrationSketch(512, metric="logit"),
        "zero weights only": CalibrationSketch(256).update([0.2, 0.7], [0, 1], [0.0, 0.0]),
        "atoms": CalibrationSketch(1024).update(fd, yd),
        "atoms, weighted, logit": CalibrationSketch(1024, metric="logit").update(fd, yd, w[:fd.size]),
        "atoms, counts": CalibrationSketch(1024).update(fd, yd, np.arange(fd.size) % 3 + 1.0),
        "atoms, exponents merged": huge.merge(CalibrationSketch(1024).update(fd, yd)),
        "grid": CalibrationSketch(256).update(f, y),
        "grid, weighted, logit": CalibrationSketch(256, metric="logit").update(f, y, w),
        "grid, tiny weights": CalibrationSketch(256).update(f, y, w * 1e-300),
    }


@pytest.mark.parametrize("name", list(_sketches()))
def test_every_sketch_form_round_trips(name):
    s = _sketches()[name]
    raw = s.to_bytes()
    back = CalibrationSketch.from_bytes(raw)
    assert back == s and back.to_bytes() == raw
    assert (back.n, back.total_weight, back.exact, back.metric, back.resolution) == \
        (s.n, s.total_weight, s.exact, s.metric, s.resolution)
    assert back._counts() == s._counts()
    assert pickle.loads(pickle.dumps(s)) == s
    if s.total_weight > 0:
        sigma = 0.3 if s.metric == "l1" else 5.0  # resolved by a logit grid of 256
        assert back.smece_sigma(sigma) == s.smece_sigma(sigma)


def test_grouped_sketch_round_trips_every_key_kind():
    pd = pytest.importorskip("pandas")
    f, y = rows(240, 6, discrete=True)
    i = np.arange(f.size)
    kinds = {
        "strings": np.array(["a", "b\0", "b", "ünï"], dtype=object)[i % 4],
        "integers": i % 3 - 1,
        "floats": np.array([-np.inf, -0.5, 2.0, np.inf])[i % 4],
        "booleans": i % 2 == 0,
        "days": np.datetime64("2024-01-01") + (i % 5).astype("timedelta64[D]"),
        "nanoseconds": np.datetime64("2024-01-01T00:00:00.000000001") + (i % 3).astype("timedelta64[ns]"),
        "periods": pd.PeriodIndex(["2024Q1", "2024Q2", "2024Q3"], freq="Q")[i % 3],
        "tuples": (np.array(["x", "y"])[i % 2], i % 3),
    }
    for name, keys in kinds.items():
        g = GroupedSketch(1024).update(f, y, keys)
        raw = g.to_bytes()
        back = GroupedSketch.from_bytes(raw)
        assert back.keys() == g.keys() and back.to_bytes() == raw, name
        assert [back[k].n for k in back.keys()] == [g[k].n for k in g.keys()], name
        again = pickle.loads(pickle.dumps(g))
        assert again.keys() == g.keys() and again.to_bytes() == raw, name
        back.update(f[:10], y[:10], keys[:10] if name != "tuples" else (keys[0][:10], keys[1][:10]))  # still grows
    empty = GroupedSketch(1024, metric="logit")
    back = GroupedSketch.from_bytes(empty.to_bytes())
    assert (len(back), back._core.resolution, back._metric) == (0, 1024, "logit")


def test_comparison_sketch_round_trips_and_answers_alike():
    f, y = rows(2000, 7)
    g = np.clip(f + np.random.default_rng(7).normal(0, 0.05, f.size), 0, 1)
    c = ComparisonSketch(["base", "tuned"], resolution=2048).update([f[:1200], g[:1200]], y[:1200])
    c.update({"base": f[1200:], "tuned": g[1200:]}, y[1200:])
    raw = c.to_bytes()
    back = ComparisonSketch.from_bytes(raw)
    assert back == c and back.to_bytes() == raw and back.names == ("base", "tuned")
    assert (back.n, back.units, back.unit_cells) == (c.n, c.units, c.unit_cells)
    a, b = c.compare(n_boot=50, seed=3), back.compare(n_boot=50, seed=3)
    np.testing.assert_array_equal(a.replicates, b.replicates)
    np.testing.assert_array_equal(a.smece, b.smece)
    # Merging after a round trip equals merging before it.
    assert back.copy().merge(back).to_bytes() == c.copy().merge(c).to_bytes()
    assert pickle.loads(pickle.dumps(c)) == c
    assert c != ComparisonSketch(["base", "tuned"], resolution=2048)
    empty = ComparisonSketch(3, metric="logit")
    assert ComparisonSketch.from_bytes(empty.to_bytes()) == empty and empty.names == ("model 0", "model 1", "model 2")


def test_comparison_bytes_that_no_rows_give_are_refused():
    f, y = rows(600, 12)
    c = ComparisonSketch(["a", "b"], resolution=1024, unit_cells=64).update([f, f ** 2], y)
    raw = c.to_bytes()
    h = parse("comparison", raw)
    payload, units, k = h["payload"], h["units"], h["models"]
    keys_at = len(payload) - units * ((k + 1) * 4 + (2 + 2 * k) * 8)
    x_at = keys_at + units * ((k + 1) * 4 + (2 + k) * 8)  # Σw·x, unit by unit, model by model

    def changed(at, value, fmt="<d"):
        p = bytearray(payload)
        struct.pack_into(fmt, p, at, value)
        return with_payload(raw, bytes(p))

    def copied_unit():  # unit 0 written again over unit 1, every column
        p, at = bytearray(payload), keys_at
        for width in ((k + 1) * 4, 8, 8, 8 * k, 8 * k):
            p[at + width:at + 2 * width] = p[at:at + width]
            at += units * width
        return with_payload(raw, bytes(p))

    assert units > 1 and ComparisonSketch.from_bytes(with_payload(raw, payload)) == c
    weight = struct.unpack_from("<d", payload, keys_at + units * (k + 1) * 4)[0]
    cases = {"a unit is inconsistent": [changed(x_at, weight * 2.0),  # a mean position past 1
                                        changed(keys_at + k * 4, 2, "<I"),  # a label of 2
                                        changed(keys_at, 64, "<I")],  # a cell past the 64
             "a unit appears twice": [copied_unit()]}
    names = struct.pack("<I", 1) + b"a" + struct.pack("<I", 1) + b"a"
    cases["a model's name appears twice"] = [with_payload(raw, names + payload[h["name_bytes"]:])]
    bad = struct.pack("<I", 1) + b"\xff" + struct.pack("<I", 1) + b"b"
    cases["not valid UTF-8"] = [with_payload(raw, bad + payload[h["name_bytes"]:])]
    for message, blobs in cases.items():
        for blob in blobs:
            with pytest.raises(ValueError, match=f"^corrupt comparison sketch: .*{message}"):
                ComparisonSketch.from_bytes(blob)
    # Two models' sketches of different rows.
    other = ComparisonSketch(["a", "b"], resolution=1024, unit_cells=64).update([f[:500], f[:500] ** 2], y[:500])
    o = parse("comparison", other.to_bytes())["payload"]
    first = lambda p: (h["name_bytes"], h["name_bytes"] + 8 + struct.unpack_from("<Q", p, h["name_bytes"])[0])
    a, b = first(payload)
    oa, ob = first(o)
    with pytest.raises(ValueError, match="^corrupt comparison sketch: the models' sketches hold different rows"):
        ComparisonSketch.from_bytes(with_payload(raw, payload[:a] + o[oa:ob] + payload[b:]))


# --- the issue's reproducers: bytes that no rows give ---------------------------------------------

def _empty_grid_payload(g):
    return (varint(g + 1) + varint(0)) * 4 + (varint(g // 4) + varint(0)) * 4


def test_a_108_byte_grid_at_the_largest_resolution_is_refused_before_allocating():
    old = legacy_sketch(sketch_fields(form=1, resolution=G22), _empty_grid_payload(G22))
    assert len(old) == 108  # bytes that describe a grid of 2^22 intervals: 383 MB in memory
    for raw in (old, make_sketch(sketch_fields(form=1, resolution=G22), _empty_grid_payload(G22))):
        with pytest.raises(ValueError, match="^corrupt sketch: a grid with fewer rows than positions"):
            CalibrationSketch.from_bytes(raw)
    # Claiming the rows a grid needs: the memory such a grid takes is refused before it is allocated.
    claims = sketch_fields(form=1, resolution=G22, rows=G22, positive=G22, weight=float(G22))
    for raw in (legacy_sketch(claims, _empty_grid_payload(G22)), make_sketch(claims, _empty_grid_payload(G22))):
        with pytest.raises(ValueError, match=r"^sketch bytes need more memory .* pass a larger max_memory"):
            CalibrationSketch.from_bytes(raw)
        with pytest.raises(ValueError, match="^corrupt sketch: the grid's sums"):  # allowed: read, then refused
            CalibrationSketch.from_bytes(raw, max_memory=2 ** 30)


def test_2kb_of_grouped_grids_is_refused_in_total():
    issue = grouped_v3([(string_key(f"g{i:02d}"), legacy_sketch(sketch_fields(form=1, resolution=G22),
                                                                _empty_grid_payload(G22))) for i in range(16)], G22)
    assert len(issue) < 2100  # sixteen such grids: 3.7 GB in memory
    with pytest.raises(ValueError, match="^corrupt grouped sketch: a group: a grid with fewer rows than positions"):
        GroupedSketch.from_bytes(issue)
    claims = sketch_fields(form=1, resolution=G22, rows=G22, positive=G22, weight=float(G22))
    one = legacy_sketch(claims, _empty_grid_payload(G22))
    old = grouped_v3([(string_key(f"g{i:02d}"), one) for i in range(16)], G22)
    with pytest.raises(ValueError, match="^sketch bytes need more memory"):
        GroupedSketch.from_bytes(old)
    # The same groups in version 5: the budget is the set's, not each group's.
    new_one = make_sketch(claims, _empty_grid_payload(G22))
    keys = b"".join(string_key(f"g{i:02d}") for i in range(16))
    payload = keys + b"".join(struct.pack("<Q", len(new_one)) + new_one for _ in range(16))
    fields = struct.pack("<B7xqQQ", 0, G22, 16, len(keys))
    new = seal(MAGIC["grouped"] + struct.pack("<IIQ", 5, 56, len(payload)) + fields + payload)
    with pytest.raises(ValueError, match="^sketch bytes need more memory"):
        GroupedSketch.from_bytes(new)


@pytest.fixture(scope="module")
def crowded():
    """Rows crowded into one interval of a 2^21 grid: a real sketch whose bytes are small
    and whose reading is not (~185 MB for a while: the grid in full and what checks it)."""
    f = 0.5 + np.arange(1_200_000) * 1e-12
    s = CalibrationSketch(1 << 21).update(f, np.arange(f.size) % 2)
    assert not s.exact and len(s.to_bytes()) < 10_000
    return s


def smallest_budget(read):
    """The least max_memory with which `read(max_memory)` succeeds (bisection)."""
    low, high = 0, 1 << 31
    while high - low > 1024:
        mid = (low + high) // 2
        try:
            read(mid)
            high = mid
        except ValueError:
            low = mid
    return high


def test_the_memory_bound_is_the_whole_sets(crowded):
    # What each group holds adds up over the set, in both formats.
    f, y = rows(20_000, 5)
    exact = CalibrationSketch(1 << 20).update(f, y)  # 20k atoms, held as read
    assert exact.exact
    one = exact.to_bytes()
    need = smallest_budget(lambda m: CalibrationSketch.from_bytes(one, max_memory=m))
    keys = b"".join(string_key(k) for k in "abc")
    payload = keys + b"".join(struct.pack("<Q", len(one)) + one for _ in range(3))
    fields = struct.pack("<B7xqQQ", 0, 1 << 20, 3, len(keys))
    raw = seal(MAGIC["grouped"] + struct.pack("<IIQ", 5, 56, len(payload)) + fields + payload)
    old = grouped_v3([(string_key(k), legacy_sketch(one[24:64], one[64:-8])) for k in "abc"], 1 << 20)
    for data in (raw, old):
        back = GroupedSketch.from_bytes(data, max_memory=3 * need + (1 << 16))
        assert back.keys() == ["a", "b", "c"] and back["c"] == exact
        with pytest.raises(ValueError, match="^sketch bytes need more memory"):
            GroupedSketch.from_bytes(data, max_memory=2 * need)
    # What reading one grid takes for a while (its arrays in full, the check's spectrum) is freed
    # before the next group is read: three crowded grids read in little more than one does.
    grid = crowded.to_bytes()
    need = smallest_budget(lambda m: CalibrationSketch.from_bytes(grid, max_memory=m))
    assert 150e6 < need < 200e6  # ~88 bytes an interval
    payload = keys + b"".join(struct.pack("<Q", len(grid)) + grid for _ in range(3))
    fields = struct.pack("<B7xqQQ", 0, 1 << 21, 3, len(keys))
    raw = seal(MAGIC["grouped"] + struct.pack("<IIQ", 5, 56, len(payload)) + fields + payload)
    assert GroupedSketch.from_bytes(raw, max_memory=need + (1 << 20))["b"] == crowded


@pytest.fixture(scope="module")
def grid_bytes():
    f, y = rows(4000, 8)
    f = f * 0.8  # no rows above 0.8
    return CalibrationSketch(256).update(f, y).to_bytes()


def test_node_masses_that_keep_their_sums_but_no_rows_give_are_refused(grid_bytes):
    arrays = grid_arrays(grid_bytes)
    same = with_grid(grid_bytes, arrays)  # the grid re-encoded as it was: read as it was
    assert CalibrationSketch.from_bytes(same[0]) == CalibrationSketch.from_bytes(grid_bytes)
    w0 = arrays[0]
    cases = {}
    spike = w0.copy()  # read, smECEσ far above 1
    spike[100] += 1e4
    spike[101] -= 1e4
    cases["opposite masses"] = spike
    dip = w0.copy()  # read, a negative density
    dip[60] -= 30 * abs(w0[60])
    dip[59] += 15 * abs(w0[60])
    dip[61] += 15 * abs(w0[60])
    cases["a negative density"] = dip
    moved = w0.copy()
    moved[240] += moved[40]  # nodes above 0.8: no rows reach them
    moved[40] = 0.0
    cases["mass where no rows lie"] = moved
    for name, nodes in cases.items():
        assert nodes.sum() == pytest.approx(w0.sum(), rel=1e-12), name
        for raw in with_grid(grid_bytes, [nodes] + arrays[1:]):
            with pytest.raises(ValueError, match="^corrupt sketch: node masses"):
                CalibrationSketch.from_bytes(raw)
    # A cell's mean prediction outside the cell.
    cells = [a.copy() for a in arrays[4:]]
    k = int(np.flatnonzero(cells[1])[5])
    cells[3][k] = cells[1][k] * 0.999  # Σw·f of a cell low on the grid: a mean prediction near 1
    for raw in with_grid(grid_bytes, arrays[:4] + cells):
        with pytest.raises(ValueError, match="^corrupt sketch: a resampling cell"):
            CalibrationSketch.from_bytes(raw)
    assert CalibrationSketch.from_bytes(same[1]) == CalibrationSketch.from_bytes(grid_bytes)


def test_header_totals_and_counts_that_no_rows_give_are_refused(grid_bytes):
    for name, value, message in [("weight_exp", 1100, "bad weight exponent"),    # read, a total weight of 0
                                 ("weight_exp", -1100, "bad weight exponent"),   # read, an infinite one
                                 ("weight_exp", 300, "bad weight exponent"),     # no pass gives 300
                                 ("rows", 2 ** 63, "more rows than a sketch counts"),
                                 ("weight", 1e308, "inconsistent totals|do not add up|sums"),
                                 ("weight", -1.0, "inconsistent totals"),
                                 ("weight", float("nan"), "inconsistent totals"),
                                 ("positive", 3, "a grid with fewer rows than positions"),
                                 ("resolution", 1000, "bad resolution"),
                                 ("resolution", 2 ** 23, "bad resolution"),
                                 ("metric", 2, "bad header flags"),
                                 ("traits", 2, "bad header flags")]:
        for raw in with_sketch_field(grid_bytes, name, value):
            with pytest.raises(ValueError, match=f"^corrupt sketch: ({message})"):
                CalibrationSketch.from_bytes(raw)


def test_an_atom_whose_weights_no_rows_give_is_refused():
    # One weighted atom of Σw = 1e-170 and Σw² = 0 at exponent 0: read, its bootstrap would
    # fail inside ("gamma: the shape must be positive"). A pass scales such
    # weights by 2^565, and a merge keeps the larger weights' scale: no sketch holds it.
    payload = varint(1) + varint(0) + varint(1) + varint(1 << 39) + varint(1) + struct.pack("<dd", 1e-170, 0.0)
    fields = sketch_fields(weighted=1, traits=0, rows=1, positive=1, weight=1e-170)
    for raw in both_versions(fields, payload):
        with pytest.raises(ValueError, match="^corrupt sketch: inconsistent totals"):
            CalibrationSketch.from_bytes(raw)
    # The same atom at the exponent a pass gives is a real sketch's: read, and it answers.
    real = CalibrationSketch(1024).update([0.5], [1], [1e-170])
    fields = sketch_fields(weighted=1, traits=0, weight_exp=565, rows=1, positive=1, weight=1e-170 * 2.0 ** 565)
    payload = varint(1) + varint(0) + varint(1) + varint(1 << 39) + varint(1) + struct.pack(
        "<dd", 1e-170 * 2.0 ** 565, (1e-170 * 2.0 ** 565) ** 2)
    for raw in both_versions(fields, payload):
        assert CalibrationSketch.from_bytes(raw) == real
    real.bootstrap_smece(n_boot=5, seed=0)


def test_atoms_out_of_order_or_range_are_refused():
    def atoms(keys, metric=0):
        body = varint(len(keys)) + varint(0) + varint(len(keys))
        previous = 0
        for k in keys:
            body += varint(k - previous) + varint(1)
            previous = k
        return both_versions(sketch_fields(metric=metric, rows=len(keys), positive=len(keys), weight=len(keys)), body)

    for raw in atoms([1, 5, 1 << 40]):
        assert CalibrationSketch.from_bytes(raw).n == 3
    for keys, metric, message in [([1, 1, 5], 0, "atom positions out of order or range"),
                                  ([1, (1 << 40) + 1], 0, "atom positions out of order or range"),
                                  ([1], 1, "an atom where no prediction of the metric lies"),  # the logit grid's edge
                                  (list(range(1, 600)), 0, "more atoms than the resolution allows")]:
        for raw in atoms(keys, metric):
            with pytest.raises(ValueError, match=f"^corrupt sketch: {message}"):
                CalibrationSketch.from_bytes(raw)


def test_row_counts_stop_at_2_to_the_53():
    s = CalibrationSketch(256).update([0.2, 0.8], [0, 1])
    with pytest.raises(InputError, match=r"row count would pass 2\^53") as err:
        for _ in range(60):
            s.merge(s)
    assert err.value.argument == "rows" and s.n == 2 ** 53
    back = CalibrationSketch.from_bytes(s.to_bytes())
    assert back.n == 2 ** 53 and back == s


# --- grouped keys --------------------------------------------------------------------------------

def _group(text="a"):
    return CalibrationSketch(1024).update([0.2, 0.6, 0.6], [0, 1, 0]).to_bytes()


def test_grouped_keys_are_checked_as_update_checks_them():
    one = _group()
    nan = b"f" + struct.pack("<d", float("nan"))
    nat = b"M\x01D" + struct.pack("<q", -2 ** 63)
    bad = {
        "a NaN key": [nan],
        "a missing date": [nat],
        "not valid UTF-8": [b"s\x02\x00\x00\x00\xff\xfe"],
        "unknown unit": [b"M\x02xx" + struct.pack("<q", 5)],
        "stored as 7": [b"b\x07"],
        "keys of two kinds": [string_key("a"), b"i" + struct.pack("<q", 1)],
        "appears twice": [b"i" + struct.pack("<q", 1), b"f" + struct.pack("<d", 1.0)],  # 1 and 1.0: one group
        "unknown key tag": [b"P\x01M" + struct.pack("<q", 5)],  # periods came with version 4
    }
    for what, keys in bad.items():
        for version in (3, 2):  # version 2 has no checksum of its own: the checks alone refuse them
            raw = grouped_v3([(k, one) for k in keys], 1024, version=version, checksum=version >= 3)
            with pytest.raises(ValueError, match=f"^corrupt grouped sketch: .*{what}"):
                GroupedSketch.from_bytes(raw)
        if what == "unknown key tag":
            continue
        section = b"".join(keys)
        payload = section + b"".join(struct.pack("<Q", len(one)) + one for _ in keys)
        fields = struct.pack("<B7xqQQ", 0, 1024, len(keys), len(section))
        raw = seal(MAGIC["grouped"] + struct.pack("<IIQ", 5, 56, len(payload)) + fields + payload)
        with pytest.raises(ValueError, match=f"^corrupt grouped sketch: .*{what}"):
            GroupedSketch.from_bytes(raw)
    good = grouped_v3([(string_key("a"), one), (string_key("b"), one)], 1024, version=2, checksum=False)
    back = GroupedSketch.from_bytes(good)  # version 2, checked: read
    assert back.keys() == ["a", "b"] and back.n == 6 and parse("grouped", back.to_bytes())["groups"] == 2


def test_old_grouped_bytes_of_mixed_kinds_no_longer_load():
    # Sets of version 1 could mix kinds; such a set could not be written and read back.
    one = _group()
    raw = grouped_v3([(string_key("a"), one), (b"i" + struct.pack("<q", 1), one)], 1024, version=1, checksum=False)
    with pytest.raises(ValueError, match=r"^corrupt grouped sketch: keys of two kinds \(string and number\)"):
        GroupedSketch.from_bytes(raw)


def test_a_group_of_another_resolution_or_without_rows_is_refused():
    other = CalibrationSketch(2048).update([0.5], [1]).to_bytes()
    with pytest.raises(ValueError, match="^corrupt grouped sketch: a group's resolution or metric differs"):
        GroupedSketch.from_bytes(grouped_v3([(string_key("a"), other)], 1024))
    empty = CalibrationSketch(1024).to_bytes()
    with pytest.raises(ValueError, match="^corrupt grouped sketch: a group without rows"):
        GroupedSketch.from_bytes(grouped_v3([(string_key("a"), empty)], 1024))


# --- older versions --------------------------------------------------------------------------------

def test_bytes_written_by_earlier_versions_still_read():
    expected = json.loads((DATA / "expected.json").read_text())
    for name, e in expected.items():
        raw = (DATA / f"{name}.bin").read_bytes()
        assert struct.unpack_from("<I", raw, 8)[0] == e["version"]
        if "grouped" in name:
            g = GroupedSketch.from_bytes(raw)
            keys = [list(k) if isinstance(k, tuple) else k for k in g.keys()]
            assert [[k[0], str(k[1])] if isinstance(k, list) else k for k in keys] == e["keys"], name
            assert [g[k].n for k in g.keys()] == e["n"]
            np.testing.assert_allclose([g[k].smece() for k in g.keys()], e["smece"], rtol=1e-12)
            assert parse("grouped", g.to_bytes())["groups"] == len(e["keys"])  # written as version 5
            continue
        s = CalibrationSketch.from_bytes(raw)
        assert (s.n, s.total_weight, s.exact, s.metric, s.resolution) == \
            (e["n"], e["total_weight"], e["exact"], e["metric"], e["resolution"]), name
        if "smece_sigma_0.1" in e:
            assert s.smece_sigma(0.1) == pytest.approx(e["smece_sigma_0.1"], rel=1e-12), name
        if "smece" in e:
            assert s.smece() == pytest.approx(e["smece"], rel=1e-12), name
        if e.get("counts"):
            with pytest.warns(WeightKindWarning):
                s.bootstrap_smece(n_boot=5, seed=0)
        assert CalibrationSketch.from_bytes(s.to_bytes()) == s


def test_the_logit_fixtures_sigma_star_is_the_exact_one():
    # expected.json holds what earlier versions answered, but for this fixture: its σ* was searched on the
    # sketch's grid (0.0828087125), and is now solved from its 400 atoms (0.0828087148). Its rows, as
    # make_fixtures.py drew them: the arrays give the same σ*, and the exact evaluator agrees to its own accuracy.
    from exact_logit import exact_smece_logit

    rng = np.random.default_rng(2)
    f = rng.beta(2, 2, 400)
    y = rng.random(400) < f ** 1.2
    w = np.random.default_rng(3).integers(1, 4, f.size).astype(float)
    s = CalibrationSketch.from_bytes((DATA / "v3_exact_logit_counts.bin").read_bytes())
    assert s.smece() == pytest.approx(smoothece.smece(f, y, weights=w, metric="logit"), rel=1e-12)
    assert s.smece() == pytest.approx(exact_smece_logit(f, y, w), abs=1e-8)


def test_retired_and_unknown_versions_are_named():
    raw = bytearray(CalibrationSketch(256).update([0.5], [1]).to_bytes())
    raw[8:12] = (1).to_bytes(4, "little")
    with pytest.raises(ValueError, match="format version 1 .*rebuild"):
        CalibrationSketch.from_bytes(bytes(raw))
    for kind, cls in [("sketch", CalibrationSketch), ("grouped sketch", GroupedSketch),
                      ("comparison sketch", ComparisonSketch)]:
        future = bytearray(cls().to_bytes())
        future[8:12] = (9).to_bytes(4, "little")
        with pytest.raises(ValueError, match=f"^corrupt {kind}: unknown format version 9"):
            cls.from_bytes(seal(bytes(future[:-8])))
    with pytest.raises(ValueError, match="^corrupt grouped sketch: these are the bytes of a sketch, not of a grouped"):
        GroupedSketch.from_bytes(CalibrationSketch(256).to_bytes())


def test_max_memory(crowded):
    # A real sketch that needs more memory than its bytes' size allows by default: read when allowed.
    raw = crowded.to_bytes()
    with pytest.raises(ValueError, match="^sketch bytes need more memory"):
        CalibrationSketch.from_bytes(raw)
    assert CalibrationSketch.from_bytes(raw, max_memory=1 << 28) == crowded
    assert pickle.loads(pickle.dumps(crowded)) == crowded  # pickles are trusted: no bound
    small = CalibrationSketch(1024).update([0.5], [1]).to_bytes()
    with pytest.raises(ValueError, match="^sketch bytes need more memory"):
        CalibrationSketch.from_bytes(small, max_memory=100)
    with pytest.raises(TypeError, match="max_memory must be an int"):
        CalibrationSketch.from_bytes(small, max_memory=1e9)
    with pytest.raises(ValueError, match="max_memory must be at least 0"):
        GroupedSketch.from_bytes(GroupedSketch().to_bytes(), max_memory=-1)
    with pytest.raises(TypeError, match="data must be bytes"):
        ComparisonSketch.from_bytes("bytes")


# --- fuzzing -------------------------------------------------------------------------------------

_EXTREMES = {
    "B": [0, 1, 2, 255], "I": [0, 1, 2 ** 31, 2 ** 32 - 1], "i": [0, -1, 1100, -1100, 2 ** 31 - 1, -2 ** 31],
    "q": [0, -1, 1, 255, 2 ** 22, 2 ** 23, 2 ** 63 - 1, -2 ** 63], "Q": [0, 1, 2 ** 53, 2 ** 53 + 1, 2 ** 64 - 1],
    "d": [0.0, -0.0, -1.0, 1e-320, 1e308, float("inf"), float("nan")],
}
_DOUBLES = [struct.pack("<d", v)
            for v in (0.0, -0.0, -3.5, 1e-320, 1e308, -1e308, float("inf"), float("nan"), 2.0 ** 53)]


def _mutate(rng, blob: bytes, kind: str, donor: bytes) -> bytes:
    body = bytearray(blob[:-8])
    op = rng.integers(7)
    if op == 0:  # bit flips
        for _ in range(rng.integers(1, 4)):
            body[rng.integers(len(body))] ^= 1 << int(rng.integers(8))
    elif op == 1:  # a byte changed
        body[rng.integers(len(body))] = int(rng.integers(256))
    elif op == 2:  # truncated
        body = body[:rng.integers(len(body))]
    elif op == 3:  # a splice: a piece cut out, or a piece of other bytes put in
        at, size = int(rng.integers(len(body))), int(rng.integers(1, 24))
        if rng.random() < 0.5:
            del body[at:at + size]
        else:
            start = int(rng.integers(len(donor)))
            body[at:at] = donor[start:start + size]
    elif op == 4:  # a header field to an extreme value
        at, fmt, _ = FIELDS[kind][rng.integers(len(FIELDS[kind]))]
        values = _EXTREMES[fmt]
        struct.pack_into("<" + fmt, body, at, values[rng.integers(len(values))])
    elif op == 5:  # a double in the payload
        at = int(rng.integers(HEADER[kind], max(HEADER[kind] + 1, len(body) - 8)))
        body[at:at + 8] = _DOUBLES[rng.integers(len(_DOUBLES))]
    else:  # a variable-length integer made long or large
        at = int(rng.integers(HEADER[kind], len(body)))
        body[at:at + 3] = bytes([0xFF, 0xFF, int(rng.integers(128))])
    return seal(bytes(body), fast=True)


def _refused(err: ValueError) -> bool:
    message = str(err)
    return message.startswith(("corrupt ", "sketch bytes need more memory")) or "format version" in message


def _in_range(value: float) -> bool:
    return 0.0 <= value <= 1.0 + 1e-9


def _sane_sketch(s: CalibrationSketch, deep: bool) -> None:
    assert isinstance(s.n, int) and 0 <= s.n <= 2 ** 53
    assert math.isfinite(s.total_weight) and s.total_weight >= 0
    assert CalibrationSketch.from_bytes(s.to_bytes()) == s
    fresh = CalibrationSketch(s.resolution, metric=s.metric).update([0.3, 0.6], [0, 1])
    try:
        fresh.merge(s)
    except InputError as err:  # a sketch of 2^53 rows takes no more
        assert "2^53" in str(err)
    if s.total_weight == 0:
        return
    sigmas = (0.02, 0.2) if s.metric == "l1" else (0.1, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResolutionWarning)
        assert _in_range(s.smece())
        for sigma in sigmas:
            assert _in_range(s.smece_sigma(sigma))
        if deep:
            # At σ* where the grid resolves it, else at the grid's finest σ (σ* is then a bound,
            # from which no diagram or interval is drawn: ResolutionError).
            try:
                d = s.reliability_diagram(n_boot=0)
            except ResolutionError as err:
                assert 0.0 <= err.lower <= err.upper <= s.min_sigma
                d = s.reliability_diagram(sigma=s.min_sigma, n_boot=0)
            assert (d.density >= -1e-9 * d.density.max()).all()
            mu = d.mu[np.isfinite(d.mu)]
            assert ((mu >= -1e-9) & (mu <= 1 + 1e-9)).all()
            try:
                s.bootstrap_smece(n_boot=4, seed=0, weight_kind="importance")
            except ResolutionError:
                s.bootstrap_smece(n_boot=4, seed=0, weight_kind="importance", sigma=s.min_sigma)


def _sane_grouped(g: GroupedSketch, deep: bool) -> None:
    assert GroupedSketch.from_bytes(g.to_bytes()).to_bytes() == g.to_bytes()
    for key in g.keys():
        _sane_sketch(g[key], deep)
    GroupedSketch(g._core.resolution, g._metric).merge(g)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResolutionWarning)
        result = g.smece_by_group()
    assert all(_in_range(v) for v in result.smece if not math.isnan(v))


def _sane_comparison(c: ComparisonSketch, deep: bool) -> None:
    assert ComparisonSketch.from_bytes(c.to_bytes()) == c
    for name in c.names:
        _sane_sketch(c.model(name), deep)
    c.copy().merge(c)
    if c.total_weight > 0 and deep:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResolutionWarning)
            result = c.compare(n_boot=4, seed=0, weight_kind="importance")
        assert all(_in_range(v) for v in result.smece)
        assert np.isfinite(result.replicates).all()


def _nested(kind: str, blob: bytes, rng) -> bytes:
    """A grouped or comparison sketch's bytes with one of its sketches mutated (its own checksum recomputed)."""
    h = parse(kind, blob, verify=False)
    payload = h["payload"]
    pos = h["key_bytes"] if kind == "grouped" else h["name_bytes"]
    spans = []
    for _ in range(h["groups"] if kind == "grouped" else h["models"]):
        (size,) = struct.unpack_from("<Q", payload, pos)
        spans.append((pos, size))
        pos += 8 + size
    at, size = spans[rng.integers(len(spans))]
    inner = payload[at + 8:at + 8 + size]
    changed = _mutate(rng, inner, "sketch", inner)
    return with_payload(blob, payload[:at] + struct.pack("<Q", len(changed)) + changed + payload[at + 8 + size:],
                        fast=True)


def test_fuzzed_bytes_are_refused_or_read_as_sane_sketches():
    """Real bytes of every kind and form, mutated with their checksums recomputed (bit
    flips, bytes, truncations, splices, header fields at extreme values, payload doubles,
    long varints, a group's or a model's own bytes): each is refused with a ValueError
    that says why, or reads as a sketch whose answers are those some rows could give."""
    rng = np.random.default_rng(2024)
    f, y = rows(1500, 10)
    fd, yd = rows(300, 11, discrete=True)
    w = rng.lognormal(size=f.size)
    bases = {
        "sketch": [CalibrationSketch(1024).update(fd, yd).to_bytes(),
                   CalibrationSketch(1024, metric="logit").update(fd, yd, w[:fd.size]).to_bytes(),
                   CalibrationSketch(256).update(f, y, w).to_bytes(),
                   CalibrationSketch(4096, metric="logit").update(f, y).to_bytes()],
        "grouped": [GroupedSketch(256).update(f[:600], y[:600], np.arange(600) % 3).to_bytes(),
                    GroupedSketch(1024).update(fd, yd, (np.array(["a", "b"])[np.arange(fd.size) % 2],
                                                        np.datetime64("2024-01-01")
                                                        + (np.arange(fd.size) % 2).astype("timedelta64[D]")))
                    .to_bytes()],
        "comparison": [ComparisonSketch(["a", "b"], resolution=256, unit_cells=32)
                       .update([f[:800], np.sqrt(f[:800])], y[:800], w[:800]).to_bytes()],
    }
    readers = {"sketch": (CalibrationSketch, _sane_sketch), "grouped": (GroupedSketch, _sane_grouped),
               "comparison": (ComparisonSketch, _sane_comparison)}
    trials = {"sketch": 2400, "grouped": 500, "comparison": 300}
    counts = {}
    for kind, blobs in bases.items():
        cls, sane = readers[kind]
        accepted = refused = 0
        for trial in range(trials[kind]):
            blob = blobs[trial % len(blobs)]
            if kind != "sketch" and trial % 2:
                mutated = _nested(kind, blob, rng)
            else:
                mutated = _mutate(rng, blob, kind, blobs[(trial + 1) % len(blobs)])
            try:
                obj = cls.from_bytes(mutated)
            except ValueError as err:
                assert _refused(err), f"{kind} trial {trial}: {err}"
                refused += 1
                continue
            accepted += 1
            sane(obj, deep=accepted % 8 == 1)
        counts[kind] = (accepted, refused)
        assert refused > trials[kind] // 2, counts
    print("accepted, refused:", counts)
