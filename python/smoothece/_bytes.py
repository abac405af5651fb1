"""The Python parts of the sketches' bytes: group keys and model names.

The core writes and checks every sketch's bytes (the envelope, the checksum,
every number: cpp/core/products/envelope.hpp and sketch_bytes.cpp). Group
keys and model names are Python objects, so they travel as a section of
bytes the core keeps as it is, encoded and checked here: a key read back is
one that :meth:`GroupedSketch.update` would accept (no NaN or NaT, strings
of valid UTF-8, periods pandas can make, one kind per set, no key twice).
Bytes from elsewhere are data, never code: no pickle.

Key encoding (one key): a tag, then the value, little-endian —
``b`` bool (1 byte, 0 or 1), ``i`` int64, ``f`` float64, ``s`` u32 length and
UTF-8, ``M`` u8 unit length, the numpy unit (ASCII) and an int64 count,
``P`` u8 frequency length, the pandas frequency (ASCII) and the int64
ordinal, ``t`` u32 count (at least 2) and that many keys of the other tags.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any, List, Optional, Tuple

import numpy as np

from . import _core
from ._util import imported

_GROUPED = "grouped sketch"
_DATETIME_UNITS = frozenset(("Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as"))
_NAT = -(2 ** 63)  # numpy's and pandas' NaT as an int64
#: The most memory ``from_bytes(..., max_memory=None)`` of a pickle's bytes may take: none (pickles are trusted).
UNBOUNDED = 2 ** 64 - 1


class Pickled:
    """Pickling through ``to_bytes``/``from_bytes`` for the sketches. Pickles are trusted
    data (unpickling runs code), so their bytes are read without a memory bound."""

    __slots__ = ()

    def __reduce__(self):
        return (unpickle, (type(self), self.to_bytes()))


def unpickle(cls, data: bytes):
    return cls.from_bytes(data, max_memory=UNBOUNDED)


def corrupt(what: str, kind: str = _GROUPED) -> ValueError:
    return ValueError(f"corrupt {kind}: {what}")


def as_bytes(data: Any) -> bytes:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    return bytes(data)


def memory_limit(max_memory: Optional[int]) -> Optional[int]:
    """``max_memory`` checked: None (the default rule) or a whole number of bytes ≥ 0."""
    if max_memory is None:
        return None
    if isinstance(max_memory, bool) or not isinstance(max_memory, (int, np.integer)):
        raise TypeError(f"max_memory must be an int (bytes) or None, got {max_memory!r}")
    if max_memory < 0:
        raise ValueError(f"max_memory must be at least 0 bytes, got {max_memory}")
    return min(int(max_memory), UNBOUNDED)


def _is_period(value: Any) -> bool:
    pd = imported("pandas")
    return pd is not None and isinstance(value, pd.Period)


def key_kind(key: Any) -> str:
    """Numbers (booleans too: numpy pools True with 1), strings, dates, periods of one
    frequency, or tuples of those, column by column: one kind per set of groups."""
    if isinstance(key, (bool, int, float, np.bool_, np.number)):
        return "number"
    if isinstance(key, (str, np.str_)):
        return "string"
    if isinstance(key, np.datetime64):
        return "date"
    if _is_period(key):
        return f"period[{key.freqstr}]"
    if isinstance(key, tuple):
        return "(" + ", ".join(key_kind(k) for k in key) + ")"
    return type(key).__name__


def encode_key(key: Any, inner: bool = False) -> bytes:
    """A group key as bytes: a type tag and the value."""
    if isinstance(key, (bool, np.bool_)):
        return b"b" + struct.pack("<?", bool(key))
    if isinstance(key, (int, np.integer)):
        return b"i" + struct.pack("<q", int(key))
    if isinstance(key, (float, np.floating)):
        if float(key) != key:  # a long double that no double holds: two such keys could come back as one
            raise TypeError(f"the group key {key!r} (a long double) cannot be serialized: no double holds it exactly")
        return b"f" + struct.pack("<d", float(key))
    if isinstance(key, (str, np.str_)):
        raw = str(key).encode("utf-8")
        return b"s" + struct.pack("<I", len(raw)) + raw
    if isinstance(key, np.datetime64):
        unit = np.datetime_data(key.dtype)[0].encode("ascii")
        return b"M" + struct.pack("<B", len(unit)) + unit + struct.pack("<q", int(key.astype(np.int64)))
    if _is_period(key):  # the frequency as pandas names it, and the period's ordinal in it
        freq = key.freqstr.encode("ascii")
        return b"P" + struct.pack("<B", len(freq)) + freq + struct.pack("<q", int(key.ordinal))
    if isinstance(key, tuple) and not inner:
        return b"t" + struct.pack("<I", len(key)) + b"".join(encode_key(k, inner=True) for k in key)
    raise TypeError(f"group keys of type {type(key).__name__} cannot be serialized (numbers, strings, booleans, "
                    f"numpy dates, pandas periods and tuples of them can)")


def encode_keys(keys: list) -> bytes:
    return b"".join(encode_key(k) for k in keys)


def _period(freq: str, ordinal: int):
    pd = imported("pandas")
    if pd is None:
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("Reading a grouped sketch with period keys needs pandas, which is not installed: "
                              "pip install pandas") from None
    if ordinal == _NAT:
        raise corrupt("a missing period (NaT) as a key, which update refuses")
    try:
        return pd.Period(ordinal=ordinal, freq=freq)
    except Exception:  # pandas raises several kinds for a bad frequency or ordinal
        raise corrupt(f"bad period frequency {freq!r} or ordinal {ordinal}") from None


class _KeyReader:
    """Keys from bytes, each checked as update checks keys."""

    def __init__(self, data: bytes, pos: int, end: int, tuples: bool):
        self.data, self.pos, self.end, self.tuples = data, pos, end, tuples

    def take(self, size: int) -> bytes:
        if size > self.end - self.pos:
            raise corrupt("truncated or malformed keys")
        out = self.data[self.pos:self.pos + size]
        self.pos += size
        return out

    def unpack(self, fmt: str):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def key(self, inner: bool = False):
        tag = self.take(1)
        if tag == b"b":
            byte = self.take(1)[0]
            if byte > 1:
                raise corrupt(f"a boolean key stored as {byte}")
            key = bool(byte)
        elif tag == b"i":
            key = self.unpack("<q")
        elif tag == b"f":
            key = self.unpack("<d")
            if key != key:
                raise corrupt("a NaN key, which update refuses")
        elif tag == b"s":
            try:
                key = self.take(self.unpack("<I")).decode("utf-8")
            except UnicodeDecodeError:
                raise corrupt("a string key that is not valid UTF-8") from None
        elif tag == b"M":
            unit = self.take(self.unpack("<B")).decode("ascii", "replace")
            value = self.unpack("<q")
            if unit not in _DATETIME_UNITS:
                raise corrupt(f"a date key of unknown unit {unit!r}")
            if value == _NAT:
                raise corrupt("a missing date (NaT) as a key, which update refuses")
            key = np.datetime64(value, unit)
        elif tag == b"P" and self.tuples:
            freq = self.take(self.unpack("<B")).decode("ascii", "replace")
            key = _period(freq, self.unpack("<q"))
        elif tag == b"t" and self.tuples and not inner:
            count = self.unpack("<I")
            if count < 2 or count > (self.end - self.pos) // 2:  # several key columns, each key 2 bytes or more
                raise corrupt(f"a tuple key of {count} columns")
            key = tuple(self.key(inner=True) for _ in range(count))
        else:
            raise corrupt(f"unknown key tag {tag!r}")
        return key


def check_keys(keys: list) -> None:
    """One kind per set, no key twice (1, 1.0 and True are one key, as in update)."""
    if not keys:
        return
    kind = key_kind(keys[0])
    seen = set()
    for key in keys:
        if key_kind(key) != kind:
            raise corrupt(f"keys of two kinds ({kind} and {key_kind(key)}), which update refuses")
        if key in seen:
            raise corrupt(f"the key {key!r} appears twice")
        seen.add(key)


def decode_keys(section: bytes, count: int) -> list:
    """The keys of version-5 bytes: exactly ``count`` keys filling ``section``."""
    reader = _KeyReader(section, 0, len(section), tuples=True)
    keys = [reader.key() for _ in range(count)]
    if reader.pos != len(section):
        raise corrupt("trailing bytes after the keys")
    check_keys(keys)
    return keys


def read_legacy_grouped(data: bytes, version: int, max_memory: Optional[int]):
    """(metric, resolution, keys, core sketches) of grouped-sketch bytes of versions 1 to 4,
    which interleave keys and sketches: 1 (no header fields, the set takes its first
    group's resolution and metric), 2 (the set's resolution and metric), 3 (and a CRC-32
    at the end), 4 (as 3, with tuple and period keys). Versions 1 and 2 had no checksum
    of their own: every group's sketch bytes carry theirs, and every key is checked as
    update checks keys, but a key changed in transit reads as another key."""
    if version >= 3:
        if len(data) < 20 or zlib.crc32(data[:-4]) != struct.unpack_from("<I", data, len(data) - 4)[0]:
            raise corrupt("checksum mismatch (the bytes were altered or truncated)")
        data = data[:-4]
    limit = _core.default_read_memory(len(data)) if max_memory is None else max_memory
    (count,) = struct.unpack_from("<I", data, 12)
    metric = resolution = None
    reader = _KeyReader(data, 16, len(data), tuples=version >= 4)
    if version >= 2:
        resolution, code = struct.unpack(("<IB"), reader.take(5))
        if code > 1:
            raise corrupt(f"unknown metric code {code}")
        metric = ("l1", "logit")[code]
    if count > len(data) // 80:  # a group takes a key, a length and a sketch's 72 bytes or more
        raise corrupt(f"{count} groups in {len(data)} bytes")
    keys, sketches, used = [], [], 0
    for _ in range(count):
        keys.append(reader.key())
        size = reader.unpack("<Q")
        raw = reader.take(size)
        try:
            sketch = _core.Sketch.from_bytes(raw, max(limit - used, 0))
        except ValueError as err:
            message = str(err)
            if message.startswith("corrupt sketch: "):
                raise corrupt("a group: " + message[len("corrupt sketch: "):]) from None
            raise
        used += sketch.memory_bytes
        if metric is None:
            metric, resolution = sketch.metric, sketch.resolution
        if (sketch.metric, sketch.resolution) != (metric, resolution):
            raise corrupt("a group's resolution or metric differs from the set's")
        if sketch.rows == 0:
            raise corrupt("a group without rows")
        sketches.append(sketch)
    if reader.pos != len(data):
        raise corrupt("trailing bytes")
    check_keys(keys)
    return metric, resolution, keys, sketches


def encode_names(names: Tuple[str, ...]) -> bytes:
    parts = []
    for name in names:
        raw = name.encode("utf-8")
        parts.append(struct.pack("<I", len(raw)) + raw)
    return b"".join(parts)


def decode_names(section: bytes, count: int) -> Tuple[str, ...]:
    """The models' names: ``count`` distinct strings of valid UTF-8 filling ``section``."""
    reader = _KeyReader(section, 0, len(section), tuples=False)
    names: List[str] = []
    for _ in range(count):
        try:
            names.append(reader.take(reader.unpack("<I")).decode("utf-8"))
        except UnicodeDecodeError:
            raise corrupt("a model's name that is not valid UTF-8", "comparison sketch") from None
        except ValueError:
            raise corrupt("truncated or malformed names", "comparison sketch") from None
    if reader.pos != len(section):
        raise corrupt("trailing bytes after the names", "comparison sketch")
    if len(set(names)) != len(names):
        raise corrupt(f"a model's name appears twice in {names}", "comparison sketch")
    return tuple(names)
