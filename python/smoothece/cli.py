"""The ``smoothece`` command line: score a file of predictions, draw its diagram.

::

    smoothece demo                                   # a synthetic miscalibrated model
    smoothece score preds.csv --pred p --label y --ci
    smoothece plot preds.parquet --pred p --label y -o diagram.png --binned

Files are CSV (``.csv``, ``.tsv``, optionally gzipped) or Parquet (through
the optional ``pyarrow`` dependency: ``pip install smoothece[parquet]``).
They are streamed in chunks into a :class:`smoothece.CalibrationSketch`, so
a file larger than memory can be scored. CSV is parsed with pyarrow when it
is installed and with NumPy otherwise (pandas is not used); both give the
same numbers.

Exit status: 0 on success, 1 when the data cannot be scored (bad or missing
values, an empty or unreadable file, a missing optional dependency), 2 when
the command line is wrong (options, file name or format, column names).
Errors are one line on stderr, ``smoothece: error: ...``.
"""

from __future__ import annotations

import argparse
import csv
import difflib
import gzip
import inspect
import io
import itertools
import json
import math
import os
import re
import sys
import textwrap
import time
import warnings
from typing import Callable, Iterator, List, Optional, Sequence

import numpy as np

EXIT_OK = 0
EXIT_DATA = 1
EXIT_USAGE = 2

#: Field values read as missing (the common spellings of pandas and R).
NA_TOKENS = ("", "NA", "N/A", "n/a", "na", "NaN", "nan", "NAN", "-nan", "-NaN", "null", "NULL", "Null", "None",
             "#N/A", "<NA>")

_CSV_SUFFIXES = {".csv": ",", ".tsv": "\t", ".txt": ","}
_PARQUET_SUFFIXES = (".parquet", ".pq")
_PLOT_SUFFIXES = (".png", ".svg", ".pdf")
_ROLES = ("f", "y", "weights")  # the names the library's messages use
DEFAULT_CHUNKSIZE = 200_000


class CLIError(Exception):
    """An error reported as one line on stderr, with an exit status."""

    def __init__(self, message: str, code: int = EXIT_DATA):
        super().__init__(message)
        self.code = code


def _usage_error(message: str) -> CLIError:
    return CLIError(message, EXIT_USAGE)


# ---------------------------------------------------------------------------
# Terminal output helpers
# ---------------------------------------------------------------------------

def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _encodable(text: str, stream) -> bool:
    try:
        text.encode(getattr(stream, "encoding", None) or "ascii")
        return True
    except (UnicodeEncodeError, LookupError):
        return False


def _dash(stream=None) -> str:
    """An en dash where the stream can print one, else a hyphen."""
    return "\u2013" if _encodable("\u2013", stream or sys.stdout) else "-"


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


class Progress:
    """A carriage-return progress line on a terminal's stderr.

    Silent unless ``stream`` is a terminal, and silent for the first
    ``delay`` seconds (so quick reads print nothing). ``update(done, rows)``
    takes the amount read so far (bytes or rows, out of ``total``, which may
    be None when unknown) and the rows read; ``close()`` erases the line.
    """

    def __init__(self, label: str, total: Optional[float], unit: str = "bytes", stream=None,
                 clock: Callable[[], float] = time.monotonic, delay: float = 1.0, interval: float = 0.1):
        self.stream = sys.stderr if stream is None else stream
        self.enabled = _isatty(self.stream)
        self.label, self.total, self.unit = label, total, unit
        self.clock, self.delay, self.interval = clock, delay, interval
        self.start = clock()
        self.last = -math.inf
        self.width = 0

    def _amount(self, value: float) -> str:
        if self.unit == "bytes":
            return f"{value / 1e6:,.1f} MB"
        return f"{value:,.0f} rows"

    def update(self, done: float, rows: int) -> None:
        if not self.enabled:
            return
        now = self.clock()
        if now - self.start < self.delay or now - self.last < self.interval:
            return
        self.last = now
        parts = [f"smoothece: reading {self.label}"]
        if self.total:
            frac = min(max(done / self.total, 0.0), 1.0)
            filled = int(round(24 * frac))
            parts.append(f"[{'#' * filled}{'.' * (24 - filled)}] {100 * frac:3.0f}%")
            if self.unit == "bytes":
                parts.append(f"{self._amount(done)} of {self._amount(self.total)}")
        parts.append(f"{rows:,} rows")
        parts.append(f"{now - self.start:.0f} s")
        text = "  ".join(parts)
        pad = max(0, self.width - len(text))
        self.width = len(text)
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0


class _Status:
    """``with _Status("bootstrapping ...")``: a transient note on a terminal's stderr."""

    def __init__(self, text: str, stream=None):
        self.stream = sys.stderr if stream is None else stream
        self.text = f"smoothece: {text}"
        self.enabled = _isatty(self.stream) and _encodable(self.text, self.stream)

    def __enter__(self):
        if self.enabled:
            self.stream.write(self.text + "\r")
            self.stream.flush()
        return self

    def __exit__(self, *exc):
        if self.enabled:
            self.stream.write(" " * len(self.text) + "\r")
            self.stream.flush()
        return False


# ---------------------------------------------------------------------------
# Reading tables in chunks
# ---------------------------------------------------------------------------

class Chunk:
    """One batch of rows: 1-D arrays ``f``, ``y``, ``w`` (or None), and where
    each row came from in the file (``where(i)``, a phrase such as
    ``"line 1235"``)."""

    __slots__ = ("f", "y", "w", "_where")

    def __init__(self, f, y, w, where: Callable[[int], str]):
        self.f, self.y, self.w, self._where = f, y, w, where

    def __len__(self) -> int:
        return self.f.shape[0]

    def where(self, i: int) -> str:
        return self._where(i)


def _line_locator(line0: int, offsets: Optional[np.ndarray]) -> Callable[[int], str]:
    if offsets is None:
        return lambda i: f"line {line0 + i}"
    return lambda i: f"line {line0 + int(offsets[i])}"


def _row_locator(row0: int, offsets: Optional[np.ndarray], fmt: str) -> Callable[[int], str]:
    if offsets is None:
        return lambda i: fmt.format(row0 + i)
    return lambda i: fmt.format(row0 + int(offsets[i]))


class Table:
    """Reads the ``pred``/``label``/``weight`` columns of a file in chunks.

    ``chunks()`` yields :class:`Chunk` objects; ``dropped`` counts the rows
    skipped for missing values (with ``dropna``). Missing values (``NA``,
    empty fields, ``NaN``, nulls) are an error unless ``dropna``.
    """

    def __init__(self, path: str, pred: str, label: str, weight: Optional[str] = None, *,
                 fmt: Optional[str] = None, chunksize: int = DEFAULT_CHUNKSIZE, dropna: bool = False,
                 engine: str = "auto", progress: bool = True):
        self.path = path
        self.name = os.path.basename(path)
        self.columns = [pred, label] + ([weight] if weight is not None else [])
        self.chunksize = chunksize
        self.dropna = dropna
        self.progress = progress
        self.dropped = 0
        self.engine_used = None
        self.format = _detect_format(path, fmt)
        if os.path.isdir(path):
            raise _usage_error(f"{path} is a directory, not a file")
        if not os.path.exists(path):
            raise _usage_error(f"{path}: no such file")
        if engine not in ("auto", "numpy", "pyarrow"):
            raise _usage_error(f"engine must be auto, numpy or pyarrow, got {engine!r}")
        if self.format == "parquet":
            self._pa = _import_pyarrow(f"reading {self.name} (Parquet)")
        elif engine == "pyarrow":
            self._pa = _import_pyarrow("--engine pyarrow")
        elif engine == "auto":
            self._pa = _try_import_pyarrow()
        else:
            self._pa = None
        self.engine = "pyarrow" if self._pa is not None else "numpy"

    # -- shared -------------------------------------------------------------
    def _positions(self, available: Sequence[str], stripped: bool = True):
        """Indices of the needed columns in ``available`` (names compared stripped)."""
        names = [a.strip() for a in available] if stripped else list(available)
        out = []
        for role, col in zip(("--pred", "--label", "--weight"), self.columns):
            if col in names:
                out.append(names.index(col))
                continue
            shown = ", ".join(repr(n) for n in names[:40]) + (f", ... ({len(names)} in all)" if len(names) > 40 else "")
            close = difflib.get_close_matches(col, names, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise _usage_error(f"{self.name} has no column {col!r} (given as {role}); its columns are {shown}{hint}")
        return out

    def _missing(self, where: str, column: str, token: Optional[str]) -> CLIError:
        if token is None:
            shown = "NA, empty or NaN"
        elif token == "null":
            shown = "null or NaN"
        else:
            shown = "an empty field" if token.strip() == "" else repr(token.strip())
        return CLIError(f"{self.name} {where}: missing value ({shown}) in column {column!r}; "
                        f"pass --dropna to skip rows with missing values")

    def _columns_of(self, a: np.ndarray, roles_pos: Sequence[int]):
        """(f, y, w) views of the parsed 2-D block."""
        f = a[:, roles_pos[0]]
        y = a[:, roles_pos[1]]
        w = a[:, roles_pos[2]] if len(roles_pos) > 2 else None
        return f, y, w

    def chunks(self) -> Iterator[Chunk]:
        if self.format == "parquet":
            self.engine_used = "pyarrow"
            yield from self._parquet_chunks()
            return
        if self.engine == "pyarrow":
            produced = False
            try:
                for chunk in self._csv_chunks_pyarrow():
                    produced = True
                    yield chunk
                self.engine_used = "pyarrow"
                return
            except _ArrowFallback:
                if produced:
                    # The caller must start again: rows already delivered would count twice.
                    raise
            # pyarrow refused the file before any rows were delivered: NumPy reads it, and
            # explains exactly what is wrong if it is wrong.
        self.engine_used = "numpy"
        yield from self._csv_chunks_numpy()

    # -- CSV with NumPy ------------------------------------------------------
    def _open_text(self):
        try:
            raw = open(self.path, "rb")
        except OSError as err:
            raise CLIError(f"cannot read {self.name}: {_one_line(err.strerror or err)}") from None
        try:
            stream = gzip.GzipFile(fileobj=raw, mode="rb") if self.path.endswith(".gz") else raw
            text = io.TextIOWrapper(stream, encoding="utf-8-sig", errors="replace")
        except Exception:
            raw.close()
            raise
        return raw, text

    def _header(self, text) -> tuple:
        """(header fields, delimiter, number of lines read) of the first non-blank line."""
        line_no = 0
        while True:
            try:
                line = text.readline()
            except (OSError, EOFError) as err:
                raise CLIError(f"cannot read {self.name}: {_one_line(err)}") from None
            line_no += 1
            if line == "":
                raise CLIError(f"{self.name} is empty: it has no header line with column names")
            if line.strip():
                break
        delim = self.delimiter
        fields = next(csv.reader([line], delimiter=delim))
        if len(fields) == 1 and delim == ",":
            for other in (";", "\t", "|"):
                alt = next(csv.reader([line], delimiter=other))
                if len(alt) > 1:
                    fields, delim = alt, other
                    break
        return fields, delim, line_no

    @property
    def delimiter(self) -> str:
        base = self.path[:-3] if self.path.endswith(".gz") else self.path
        return "\t" if self.format == "tsv" or base.lower().endswith(".tsv") else ","

    def _csv_chunks_numpy(self) -> Iterator[Chunk]:
        raw, text = self._open_text()
        size = os.fstat(raw.fileno()).st_size
        progress = Progress(self.name, size, "bytes") if self.progress else None
        try:
            fields, delim, line_no = self._header(text)
            pos = self._positions(fields)
            usecols = sorted(set(pos))
            roles_pos = [usecols.index(p) for p in pos]
            names = [fields[c].strip() for c in usecols]
            label_k = roles_pos[1]
            rows = 0
            while True:
                try:
                    lines = list(itertools.islice(text, self.chunksize))
                except (OSError, EOFError) as err:
                    raise CLIError(f"cannot read {self.name}: {_one_line(err)}") from None
                if not lines:
                    break
                line0 = line_no + 1
                line_no += len(lines)
                a = _parse_fast(lines, usecols, delim)
                offsets = None
                if a is None:
                    a, offsets = self._parse_slow(lines, usecols, names, delim, line0, label_k)
                a, offsets = self._drop_missing(a, offsets, lines, usecols, names, delim, line0)
                rows += a.shape[0]
                if progress is not None:
                    progress.update(raw.tell(), rows)
                if a.shape[0]:
                    f, y, w = self._columns_of(a, roles_pos)
                    yield Chunk(f, y, w, _line_locator(line0, offsets))
        finally:
            if progress is not None:
                progress.close()
            text.close()
            raw.close()

    def _parse_slow(self, lines, usecols, names, delim, line0, label_k):
        """csv-module parse of a chunk that NumPy's fast parser refused: exact
        messages for short rows and non-numbers, missing tokens as NaN."""
        rows, offsets = [], []
        for j, row in enumerate(csv.reader(lines, delimiter=delim)):
            if not row or (len(row) == 1 and not row[0].strip()):
                continue  # blank line
            rows.append(row)
            offsets.append(j)
        out = np.empty((len(rows), len(usecols)), dtype=np.float64)
        for k, (c, name) in enumerate(zip(usecols, names)):
            try:
                values = [r[c] for r in rows]
            except IndexError:
                i = next(i for i, r in enumerate(rows) if len(r) <= c)
                fields = f"{len(rows[i])} field" + ("" if len(rows[i]) == 1 else "s")
                raise CLIError(f"{self.name} line {line0 + offsets[i]}: has {fields}, "
                               f"but column {name!r} is field {c + 1}") from None
            arr = np.char.strip(np.asarray(values, dtype=str)) if values else np.empty(0, dtype=str)
            missing = np.isin(arr, NA_TOKENS)
            if missing.any():
                arr = np.where(missing, "nan", arr)
            try:
                out[:, k] = arr.astype(np.float64)
                continue
            except ValueError:
                pass
            if k == label_k:
                low = np.char.lower(arr)
                mapped = np.where(low == "true", "1", np.where(low == "false", "0", arr))
                try:
                    out[:, k] = mapped.astype(np.float64)
                    continue
                except ValueError:
                    pass
            for i, v in enumerate(arr):
                try:
                    float(v)
                except ValueError:
                    if k == label_k and v.lower() in ("true", "false"):
                        continue
                    raise CLIError(f"{self.name} line {line0 + offsets[i]}: column {name!r} holds {str(v)!r}, "
                                   f"which is not a number") from None
            raise CLIError(f"{self.name}: column {name!r} could not be read as numbers")  # pragma: no cover
        return out, np.asarray(offsets, dtype=np.int64)

    def _drop_missing(self, a, offsets, lines, usecols, names, delim, line0):
        nan = np.isnan(a)
        if not nan.any():
            return a, offsets
        bad = nan.any(axis=1)
        if not self.dropna:
            i = int(np.flatnonzero(bad)[0])
            k = int(np.flatnonzero(nan[i])[0])
            j = i if offsets is None else int(offsets[i])
            try:
                token = next(csv.reader([lines[j]], delimiter=delim))[usecols[k]]
            except (IndexError, StopIteration, csv.Error):
                token = "nan"
            raise self._missing(f"line {line0 + j}", names[k], token)
        keep = ~bad
        self.dropped += int(np.count_nonzero(bad))
        offsets = np.flatnonzero(keep) if offsets is None else offsets[keep]
        return a[keep], offsets

    # -- CSV with pyarrow ----------------------------------------------------
    def _csv_chunks_pyarrow(self) -> Iterator[Chunk]:
        pa = self._pa
        import pyarrow.csv as pacsv

        raw, text = self._open_text()
        try:
            fields, delim, header_lines = self._header(text)
            # Bytes per row, from what the header read pulled in, to size blocks near chunksize rows.
            try:
                sample = text.buffer.peek(1 << 16) if hasattr(text.buffer, "peek") else b""
            except (OSError, EOFError):
                sample = b""  # a damaged file: the reads below report it
        finally:
            text.close()
            raw.close()
        pos = self._positions(fields)
        usecols = sorted(set(pos))
        roles_pos = [usecols.index(p) for p in pos]
        raw_names = [fields[c] for c in usecols]
        names = [n.strip() for n in raw_names]
        if len(set(fields)) != len(fields) or header_lines != 1:
            raise _ArrowFallback()  # duplicate names or leading blank lines: leave it to NumPy
        per_row = max(8.0, len(sample) / max(1, sample.count(b"\n"))) if sample else 64.0
        block = int(min(64 << 20, max(1 << 16, per_row * self.chunksize)))
        try:
            source = pa.OSFile(self.path, "rb")
        except (OSError, pa.ArrowException) as err:
            raise CLIError(f"cannot read {self.name}: {_one_line(err)}") from None
        size = os.path.getsize(self.path)
        progress = Progress(self.name, size, "bytes") if self.progress else None
        try:
            stream = pa.CompressedInputStream(source, "gzip") if self.path.endswith(".gz") else source
            reader = pacsv.open_csv(
                stream,
                read_options=pacsv.ReadOptions(block_size=block, use_threads=True, encoding="utf8"),
                # Every physical line is a row (blank lines and line breaks inside quotes are refused and
                # left to NumPy), so row r of the data is line r + 1.
                parse_options=pacsv.ParseOptions(delimiter=delim, ignore_empty_lines=False,
                                                 newlines_in_values=False),
                convert_options=pacsv.ConvertOptions(
                    include_columns=raw_names, column_types={n: pa.float64() for n in raw_names},
                    null_values=list(NA_TOKENS), strings_can_be_null=True, quoted_strings_can_be_null=True),
            )
            rows = 0  # data rows read (kept or dropped), before this batch
            while True:
                try:
                    batch = reader.read_next_batch()
                except StopIteration:
                    break
                a = np.empty((batch.num_rows, len(usecols)), dtype=np.float64)
                for k, n in enumerate(raw_names):
                    a[:, k] = _arrow_numpy(batch.column(batch.schema.get_field_index(n)))
                offsets = None
                nan = np.isnan(a)
                if nan.any():
                    bad = nan.any(axis=1)
                    if not self.dropna:
                        i = int(np.flatnonzero(bad)[0])
                        k = int(np.flatnonzero(nan[i])[0])
                        raise self._missing(f"line {rows + i + 2}", names[k], None)
                    keep = ~bad
                    self.dropped += int(np.count_nonzero(bad))
                    offsets = np.flatnonzero(keep)
                    a = a[keep]
                line0 = rows + 2
                rows += batch.num_rows
                if progress is not None:
                    progress.update(source.tell(), rows)
                if a.shape[0]:
                    f, y, w = self._columns_of(a, roles_pos)
                    yield Chunk(f, y, w, _line_locator(line0, offsets))
        except pa.ArrowInvalid:
            raise _ArrowFallback() from None
        except (OSError, pa.ArrowException) as err:
            raise CLIError(f"cannot read {self.name}: {_one_line(err)}") from None
        finally:
            if progress is not None:
                progress.close()
            source.close()

    # -- Parquet ---------------------------------------------------------------
    def _parquet_chunks(self) -> Iterator[Chunk]:
        pa = self._pa
        import pyarrow.parquet as pq

        try:
            pfile = pq.ParquetFile(self.path)
        except (OSError, pa.ArrowException) as err:
            raise CLIError(f"cannot read {self.name} as Parquet: {_one_line(err)}") from None
        schema = pfile.schema_arrow
        pos = self._positions(schema.names, stripped=False)
        names = [schema.names[p] for p in pos]
        for role, n in zip(("--pred", "--label", "--weight"), names):
            t = schema.field(n).type
            if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
                    or pa.types.is_decimal(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
                    or pa.types.is_null(t)):
                raise CLIError(f"{self.name}: column {n!r} (given as {role}) has type {t}, not numbers")
        total = pfile.metadata.num_rows
        progress = Progress(self.name, total, "rows") if self.progress else None
        unique = list(dict.fromkeys(names))
        rows = 0
        try:
            for batch in pfile.iter_batches(batch_size=self.chunksize, columns=unique):
                cols = []
                for n in names:
                    cols.append(self._parquet_column(batch.column(batch.schema.get_field_index(n)), n, rows))
                missing = None
                for n, c in zip(names, cols):
                    m = np.isnan(c) if c.dtype.kind == "f" else None
                    if m is not None and m.any():
                        if not self.dropna:
                            i = int(np.flatnonzero(m)[0])
                            raise self._missing(f"row index {rows + i}", n, "null")
                        missing = m if missing is None else (missing | m)
                offsets = None
                if missing is not None:
                    keep = ~missing
                    self.dropped += int(np.count_nonzero(missing))
                    offsets = np.flatnonzero(keep)
                    cols = [c[keep] for c in cols]
                row0 = rows
                rows += batch.num_rows
                if progress is not None:
                    progress.update(rows, rows)
                if cols[0].shape[0]:
                    yield Chunk(cols[0], cols[1], cols[2] if len(cols) > 2 else None,
                                _row_locator(row0, offsets, "row index {}"))
        except pa.ArrowException as err:
            raise CLIError(f"cannot read {self.name}: {_one_line(err)}") from None
        finally:
            if progress is not None:
                progress.close()

    def _parquet_column(self, arr, name: str, rows_before: int) -> np.ndarray:
        """A Parquet column as NumPy: float32/float64/int/bool read as they are when
        they have no nulls; everything else (nulls, strings, decimals) as float64 with NaN."""
        pa = self._pa
        out = _arrow_numpy(arr)
        if out is not None:
            return out
        try:
            return _arrow_numpy(arr.cast(pa.float64()))
        except pa.ArrowInvalid:
            # Strings: find the first that is not a number (nulls are missing values).
            values = arr.to_pylist()
            for i, v in enumerate(values):
                if v is None or v.strip() in NA_TOKENS:
                    continue
                try:
                    float(v)
                except ValueError:
                    raise CLIError(f"{self.name} row index {rows_before + i}: column {name!r} holds {v!r}, "
                                   f"which is not a number") from None
            out = np.array([np.nan if v is None or v.strip() in NA_TOKENS else float(v) for v in values])
            return out


_ARROW_NUMPY = {
    "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
    "float": np.float32, "double": np.float64,
}


def _arrow_numpy(arr) -> Optional[np.ndarray]:
    """A primitive Arrow array (numbers or booleans) as NumPy, straight from its
    buffers; nulls become NaN (in float64). None for other types.

    (``Array.to_numpy`` would import pandas when it is installed: a third of a
    second at every start.)"""
    n, off = len(arr), arr.offset
    kind = str(arr.type)
    if n == 0:
        return np.empty(0, dtype=np.float64)
    bufs = arr.buffers()
    if kind == "bool":
        out = np.unpackbits(np.frombuffer(bufs[1], dtype=np.uint8), count=n + off, bitorder="little")[off:]
        out = out.astype(np.int8)
    elif kind in _ARROW_NUMPY:
        out = np.frombuffer(bufs[1], dtype=_ARROW_NUMPY[kind], count=n + off)[off:]
    else:
        return None
    if arr.null_count:
        valid = np.unpackbits(np.frombuffer(bufs[0], dtype=np.uint8), count=n + off, bitorder="little")[off:]
        out = np.where(valid.astype(bool), out.astype(np.float64), np.nan)
    return out


class _ArrowFallback(Exception):
    """pyarrow's CSV reader refused the file: read it again with NumPy."""


def _parse_fast(lines: List[str], usecols: List[int], delim: str) -> Optional[np.ndarray]:
    """NumPy's C parser on a chunk of lines; None when it refuses them (missing
    tokens, non-numbers, short rows) or skipped blank lines."""
    try:
        a = np.loadtxt(lines, delimiter=delim, usecols=usecols, dtype=np.float64, comments=None, quotechar='"',
                       ndmin=2)
    except ValueError:
        return None
    return a if a.shape[0] == len(lines) else None


def _detect_format(path: str, fmt: Optional[str]) -> str:
    if fmt is not None:
        if fmt not in ("csv", "tsv", "parquet"):
            raise _usage_error(f"--format must be csv, tsv or parquet, got {fmt!r}")
        return fmt
    low = path.lower()
    if low.endswith(".gz"):
        low = low[:-3]
    if low.endswith(_PARQUET_SUFFIXES) and not path.lower().endswith(".gz"):
        return "parquet"
    for suffix in _CSV_SUFFIXES:
        if low.endswith(suffix):
            return "tsv" if suffix == ".tsv" else "csv"
    ext = os.path.splitext(path)[1] or "(none)"
    raise _usage_error(f"cannot tell the format of {os.path.basename(path)!r} from its extension {ext}: "
                       f"use a .csv, .tsv, .csv.gz, .tsv.gz or .parquet file, or pass --format csv|tsv|parquet")


def _try_import_pyarrow():
    try:
        import pyarrow
        import pyarrow.csv  # noqa: F401
    except ImportError:
        return None
    return pyarrow


def _import_pyarrow(purpose: str):
    pa = _try_import_pyarrow()
    if pa is None:
        raise CLIError(f"{purpose} needs pyarrow, which is not installed: pip install smoothece[parquet]")
    try:
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise CLIError(f"{purpose} needs pyarrow with Parquet support: pip install smoothece[parquet]") from None
    return pa


# ---------------------------------------------------------------------------
# Streaming into a sketch
# ---------------------------------------------------------------------------

_INDEX = re.compile(r"^(f|y|weights)\[(\d+)\]")


class Loaded:
    """What :func:`load` read: the sketch, and the raw columns when asked for."""

    def __init__(self, sketch, table: Table, f=None, y=None, w=None, locate=None, zero_weight_rows=0):
        self.sketch, self.table = sketch, table
        self.f, self.y, self.w = f, y, w
        self.locate = locate
        self.zero_weight_rows = zero_weight_rows

    @property
    def n(self) -> int:
        return self.sketch.n + self.zero_weight_rows


def _located(err: ValueError, table: Table, where: Callable[[int], str], chunk_rows: int, whole: bool,
             clip) -> CLIError:
    """The library's message, with where in the file the bad value is."""
    msg = _one_line(err)
    m = _INDEX.match(msg)
    if not m:
        return CLIError(f"{table.name}: {msg}")
    role, i = m.group(1), int(m.group(2))
    column = table.columns[_ROLES.index(role)]
    text = f"{table.name} {where(i)}, column {column!r}: {msg}"
    if not whole:
        text += f" [index and count within a chunk of {_rows(chunk_rows)}]"
    if role == "f" and clip is False:
        text += "; pass --clip to clamp predictions outside [0, 1]"
    return CLIError(text)


def load(table: Table, *, clip=False, collect: bool = False, resolution: Optional[int] = None) -> Loaded:
    """Streams the table into a :class:`~smoothece.CalibrationSketch` (which
    checks every value); with ``collect``, also keeps the columns."""
    for attempt in range(2):
        try:
            return _load_once(table, clip, collect, resolution)
        except _ArrowFallback:
            table.engine, table.dropped = "numpy", 0
    raise AssertionError("unreachable")  # pragma: no cover


def _load_once(table: Table, clip, collect: bool, resolution: Optional[int]) -> Loaded:
    from .sketch import CalibrationSketch

    sketch = CalibrationSketch() if resolution is None else CalibrationSketch(resolution)
    scratch = None
    zero_rows = 0
    parts = []
    starts, locators = [], []
    total = 0
    chunks = table.chunks()

    def whole(k: int) -> bool:
        """Whether chunk k (which failed) is all of the file: then the library's index is the row's."""
        if k:
            return False
        try:
            return next(chunks, None) is None
        except (CLIError, _ArrowFallback):
            return False

    for k, chunk in enumerate(chunks):
        try:
            sketch.update(chunk.f, chunk.y, chunk.w, clip=clip)
        except ValueError as err:
            if chunk.w is None or "sum to zero" not in str(err):
                raise _located(err, table, chunk.where, len(chunk), whole(k), clip) from None
            # A chunk whose weights are all zero: valid rows that add nothing. Check them.
            if scratch is None:
                scratch = CalibrationSketch(256)
            try:
                scratch.update(chunk.f, chunk.y, clip=clip)
            except ValueError as err2:
                raise _located(err2, table, chunk.where, len(chunk), whole(k), clip) from None
            zero_rows += len(chunk)
        except TypeError as err:
            raise CLIError(f"{table.name}: {_one_line(err)}") from None
        if collect:
            parts.append((np.array(chunk.f), np.array(chunk.y), None if chunk.w is None else np.array(chunk.w)))
            starts.append(total)
            locators.append(chunk.where)
        total += len(chunk)
    if total == 0:
        extra = f" ({_rows(table.dropped)} with missing values skipped)" if table.dropped else ""
        raise CLIError(f"{table.name} has no data rows{extra}")
    if sketch.n == 0 or not sketch.total_weight > 0:
        raise CLIError(f"{table.name}: the weights in column {table.columns[2]!r} sum to zero; "
                       f"at least one must be positive")
    out = Loaded(sketch, table, zero_weight_rows=zero_rows)
    if collect:
        out.f = np.concatenate([p[0] for p in parts])
        out.y = np.concatenate([p[1] for p in parts])
        out.w = None if parts[0][2] is None else np.concatenate([p[2] for p in parts])
        starts_arr = np.asarray(starts)

        def locate(i: int) -> str:
            c = int(np.searchsorted(starts_arr, i, side="right")) - 1
            return locators[c](i - starts[c])

        out.locate = locate
    return out


def _call(loaded: Loaded, fn, *args, **kw):
    """Calls a library function on the collected columns; its ValueErrors name the row."""
    try:
        return fn(*args, **kw)
    except ValueError as err:
        raise _located(err, loaded.table, loaded.locate, loaded.f.shape[0], True, kw.get("clip", False)) from None


def _quiet(fn, *args, **kw):
    """Runs ``fn``; the library's warnings become one-line notes on stderr."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(*args, **kw)
    for w in caught:
        sys.stderr.write(f"smoothece: warning: {_one_line(w.message)}\n")
    return out


# ---------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------

def _has_metric(fn) -> bool:
    try:
        return "metric" in inspect.signature(fn).parameters
    except (TypeError, ValueError):  # pragma: no cover
        return False


def _table(args) -> Table:
    return Table(args.file, args.pred, args.label, args.weight, fmt=args.format, chunksize=args.chunksize,
                 dropna=args.dropna, engine=args.engine)


def _rows(n: int) -> str:
    return f"{n:,} row" + ("" if n == 1 else "s")


def _number(x: Optional[float]):
    return None if x is None or not math.isfinite(x) else float(x)


def _decimals(value: float) -> int:
    """Decimals that show ``value`` to three significant digits (3 to 8)."""
    if not (math.isfinite(value) and value > 0):
        return 4
    return int(min(8, max(3, 2 - math.floor(math.log10(value)))))


def _with_interval(name: str, value: float, low, high, level, stream) -> str:
    d = _decimals(value)
    text = f"{name} = {value:.{d}f}"
    if low is not None and math.isfinite(low):
        text += f" ({level:.0%} CI {low:.{d}f}{_dash(stream)}{high:.{d}f})"
    return text


def _describe(value: float, low, high, level, n: int, total_weight: float, weighted: bool, file: str,
              metric: str, dropped: int, stream) -> str:
    name = "smECE" if metric == "l1" else f"smECE[{metric}]"
    text = _with_interval(name, value, low, high, level, stream) + f", n = {n:,}"
    if weighted:
        text += f", total weight = {total_weight:.6g}"
    if dropped:
        text += f" ({_rows(dropped)} with missing values skipped)"
    return f"{text}, {file}"


def cmd_score(args) -> int:
    import smoothece

    if args.metric == "logit":
        if not _has_metric(smoothece.smece):
            raise _usage_error("--metric logit needs smoothece.smece(..., metric='logit'), which this version "
                               "of smoothece does not have")
        if args.ci and not _has_metric(smoothece.bootstrap_smece):
            raise _usage_error("--ci is not available with --metric logit in this version of smoothece "
                               "(bootstrap_smece has no metric argument)")
    table = _table(args)
    loaded = load(table, clip=args.clip, collect=args.metric != "l1", resolution=args.resolution)
    sketch = loaded.sketch
    low = high = None
    seed = None
    n_boot = 0
    level = args.level if args.ci else None
    if args.metric == "l1":
        if args.ci:
            with _Status(f"bootstrapping ({args.n_boot} replicates)"):
                boot = _quiet(sketch.bootstrap_smece, n_boot=args.n_boot, seed=args.seed, level=args.level)
            value, sigma = boot.value, boot.sigma
            low, high, seed, n_boot = boot.low, boot.high, boot.seed, boot.n_boot
        else:
            value = _quiet(sketch.smece)
            sigma = value
    else:
        kw = dict(weights=loaded.w, clip=args.clip, metric=args.metric)
        if args.ci:
            with _Status(f"bootstrapping ({args.n_boot} replicates)"):
                boot = _call(loaded, _quiet, smoothece.bootstrap_smece, loaded.f, loaded.y, n_boot=args.n_boot,
                             seed=args.seed, level=args.level, **kw)
            value, sigma = boot.value, boot.sigma
            low, high, seed, n_boot = boot.low, boot.high, boot.seed, boot.n_boot
        else:
            value = _call(loaded, _quiet, smoothece.smece, loaded.f, loaded.y, **kw)
            sigma = value
    if args.json:
        out = dict(file=args.file, n=loaded.n, total_weight=float(sketch.total_weight), smece=float(value),
                   sigma=float(sigma), ci_low=_number(low), ci_high=_number(high), level=level, n_boot=n_boot,
                   seed=seed, metric=args.metric, dropped=table.dropped)
        print(json.dumps(out))
    else:
        print(_describe(value, low, high, args.level, loaded.n, sketch.total_weight, args.weight is not None,
                        args.file, args.metric, table.dropped, sys.stdout))
    return EXIT_OK


def _check_output(out: str, allowed=_PLOT_SUFFIXES) -> str:
    ext = os.path.splitext(out)[1].lower()
    if ext not in allowed:
        raise _usage_error(f"cannot tell the image format of {out!r}: the output file must end in "
                           + ", ".join(allowed))
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        raise _usage_error(f"cannot write {out}: the directory {parent} does not exist")
    return ext


def _matplotlib():
    """Agg, set in this process only (the library itself never picks a backend)."""
    import matplotlib

    if "matplotlib.pyplot" not in sys.modules:  # a caller's pyplot session keeps its backend
        matplotlib.use("Agg")
    from matplotlib.figure import Figure

    return Figure


def _save(fig, out: str, dpi: int) -> None:
    try:
        fig.savefig(out, dpi=dpi)
    except OSError as err:
        raise CLIError(f"cannot write {out}: {_one_line(err)}") from None


def cmd_plot(args) -> int:
    from .plotting import plot_binned_diagram

    _check_output(args.output)
    Figure = _matplotlib()
    table = _table(args)
    loaded = load(table, clip=args.clip, collect=args.binned, resolution=args.resolution)
    with _Status(f"computing the diagram ({args.n_boot} bootstrap replicates)"):
        diagram = _quiet(loaded.sketch.reliability_diagram, n_boot=args.n_boot, seed=args.seed,
                         consistency=args.consistency, n_sim=max(args.n_boot, 100))
    panels = 2 if args.binned else 1
    fig = Figure(figsize=(5.2 * panels, 5.4), layout="constrained")
    axes = fig.subplots(1, panels, squeeze=False)[0]
    diagram.plot(ax=axes[0])
    axes[0].set_title("Smoothed reliability diagram", fontsize="medium")
    if args.binned:
        _call(loaded, plot_binned_diagram, loaded.f, loaded.y, ax=axes[1], n_bins=args.n_bins, weights=loaded.w,
              clip=args.clip)
        axes[1].set_title(f"Binned ({args.n_bins} equal-width bins)", fontsize="medium")
    title = args.title if args.title is not None else f"{os.path.basename(args.file)}: {args.pred}, n = {loaded.n:,}"
    if title:
        fig.suptitle(title)
    _save(fig, args.output, args.dpi)
    print(_describe(diagram.smece, diagram.smece_low if args.n_boot else None, diagram.smece_high, diagram.level,
                    loaded.n, diagram.total_weight, args.weight is not None, args.file, "l1", table.dropped,
                    sys.stdout) + f" -> {args.output}")
    return EXIT_OK


def demo_data(n: int = 20_000, seed: int = 0):
    """The demo's model: f ~ Beta(2, 2), y ~ Bernoulli(f^1.5) (it predicts too high)."""
    rng = np.random.default_rng(seed)
    f = rng.beta(2.0, 2.0, size=n)
    y = (rng.random(n) < f ** 1.5).astype(np.int8)
    return f, y


def cmd_demo(args) -> int:
    import smoothece
    from .plotting import plot_binned_diagram

    _check_output(args.output)
    Figure = _matplotlib()
    f, y = demo_data(args.n, args.seed)
    with _Status("computing the diagram and the calibration test"):
        diagram = smoothece.reliability_diagram(f, y, n_boot=args.n_boot, seed=args.seed, consistency=True,
                                                n_sim=args.n_boot)
        test = smoothece.calibration_test(f, y, n_sim=args.n_boot, seed=args.seed)
    fig = Figure(figsize=(10.4, 5.4), layout="constrained")
    ax_smooth, ax_binned = fig.subplots(1, 2)
    diagram.plot(ax=ax_smooth)
    ax_smooth.set_title("Smoothed reliability diagram", fontsize="medium")
    plot_binned_diagram(f, y, ax=ax_binned, n_bins=15)
    ax_binned.set_title("Binned (15 equal-width bins)", fontsize="medium")
    fig.suptitle(f"smoothece demo: {args.n:,} predictions f ~ Beta(2, 2), outcomes y ~ Bernoulli(f^1.5)")
    _save(fig, args.output, args.dpi)
    verdict = ("miscalibrated" if test.p_value < 0.05 else "consistent with calibration") + " at the 5% level"
    if args.json:
        print(json.dumps(dict(n=int(f.size), smece=diagram.smece, sigma=diagram.sigma,
                              ci_low=_number(diagram.smece_low), ci_high=_number(diagram.smece_high),
                              level=diagram.level, n_boot=diagram.n_boot, p_value=test.p_value, n_sim=test.n_sim,
                              seed=args.seed, output=args.output)))
    else:
        print(f"synthetic model: {args.n:,} predictions f ~ Beta(2, 2), outcomes y ~ Bernoulli(f^1.5) "
              f"(it predicts too high)")
        print(_with_interval("smECE", diagram.smece, diagram.smece_low, diagram.smece_high, diagram.level,
                             sys.stdout) + f", n = {f.size:,}")
        print(f"calibration test: p = {test.p_value:.3g} ({test.n_sim} simulations under perfect calibration; "
              f"null median smECE {test.null_quantiles[0.5]:.3g}): {verdict}")
        print(f"wrote {args.output}")
    return EXIT_OK


# ---------------------------------------------------------------------------
# Argument parsing
# ---------------------------------------------------------------------------

class _Parser(argparse.ArgumentParser):
    """argparse, with errors on one line: ``smoothece: error: ...`` (exit 2)."""

    def error(self, message):  # noqa: D102
        sys.stderr.write(f"smoothece: error: {_one_line(message)} (see '{self.prog} --help')\n")
        sys.exit(EXIT_USAGE)


def _arg_type(convert, ok, expected: str):
    """An argparse type: the text converted and checked, or one line saying what was expected."""

    def parse(text: str):
        try:
            value = convert(text)
        except ValueError:
            value = None
        if value is None or not ok(value):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    return parse


_positive_int = _arg_type(int, lambda v: v >= 1, "a positive integer")
_nonneg_int = _arg_type(int, lambda v: v >= 0, "a non-negative integer")
_level = _arg_type(float, lambda v: 0.0 < v < 1.0, "a number in (0, 1)")
_tolerance = _arg_type(float, lambda v: v >= 0.0 and math.isfinite(v), "a non-negative number")


def _resolution(text: str) -> int:
    v = _positive_int(text)
    if v & (v - 1) or not 256 <= v <= 1 << 22:
        raise argparse.ArgumentTypeError(f"expected a power of two from 256 to 4194304, got {text!r}")
    return v


_EPILOG_EXIT = textwrap.fill(
    "exit status: 0 success; 1 the data cannot be scored (bad or missing values, empty or unreadable file, missing "
    "optional dependency); 2 wrong command line (options, file name or format, column names). Errors are one line "
    "on stderr.", 79)


def _add_input_options(p) -> None:
    p.add_argument("file", metavar="FILE", help="a .csv, .tsv (optionally .gz) or .parquet file with a header")
    p.add_argument("--pred", required=True, metavar="COL", help="column of predicted probabilities in [0, 1]")
    p.add_argument("--label", required=True, metavar="COL", help="column of outcomes, 0 or 1 (true/false accepted)")
    p.add_argument("--weight", metavar="COL", help="column of non-negative row weights (default: all 1)")
    p.add_argument("--clip", nargs="?", const=True, default=False, type=_tolerance, metavar="TOL",
                   help="clamp predictions outside [0, 1] instead of refusing them; with TOL, only those within "
                        "TOL of [0, 1]")
    p.add_argument("--dropna", action="store_true",
                   help="skip rows with a missing value (NA, empty, NaN, null) in the columns used, instead of "
                        "refusing them")
    p.add_argument("--chunksize", type=_positive_int, default=DEFAULT_CHUNKSIZE, metavar="N",
                   help=f"rows read at a time (default {DEFAULT_CHUNKSIZE:,}); memory use does not grow with the "
                        f"file")
    p.add_argument("--format", choices=("csv", "tsv", "parquet"),
                   help="file format, when the extension does not tell")
    p.add_argument("--engine", choices=("auto", "numpy", "pyarrow"), default="auto",
                   help="CSV parser: pyarrow (faster, when installed) or numpy; auto picks pyarrow when it is "
                        "installed")
    p.add_argument("--resolution", type=_resolution, default=None, metavar="N",
                   help="grid cells of the sketch (power of two; default 32768, resolving smECE >= 0.0005)")


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = _Parser(
        prog="smoothece",
        description=textwrap.fill("SmoothECE calibration error and smoothed reliability diagrams "
                                  "(Blasiok & Nakkiran, ICLR 2024) for a file of predictions and outcomes.", 79),
        epilog="examples:\n"
               "  smoothece demo\n"
               "  smoothece score preds.csv --pred prob --label outcome --ci\n"
               "  smoothece score preds.parquet --pred prob --label outcome --json\n"
               "  smoothece plot preds.csv --pred prob --label outcome -o diagram.png --binned\n\n"
               + _EPILOG_EXIT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"smoothece {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    score = sub.add_parser(
        "score", help="print the SmoothECE of a file's predictions",
        description=textwrap.fill(
            "Prints the SmoothECE of the predictions in FILE against its outcomes. The file is streamed "
            "in chunks into a CalibrationSketch, so files larger than memory work (except with "
            "--metric logit, which reads the columns into memory).", 79),
        epilog="example:\n  smoothece score preds.csv --pred prob --label outcome --ci --seed 0\n"
               "  smECE = 0.0674 (95% CI 0.0489-0.0890), n = 731, preds.csv\n\n" + _EPILOG_EXIT,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_input_options(score)
    score.add_argument("--metric", choices=("l1", "logit"), default="l1",
                       help="l1: the SmoothECE on [0, 1] (default); logit: smoothing in logit space "
                            "(Section 5.3 of the paper), for models trained with cross-entropy")
    score.add_argument("--ci", action="store_true", help="add a bootstrap confidence interval")
    score.add_argument("--n-boot", type=_positive_int, default=1000, metavar="N",
                       help="bootstrap replicates for --ci (default 1000)")
    score.add_argument("--level", type=_level, default=0.95, help="coverage of the interval (default 0.95)")
    score.add_argument("--seed", type=_nonneg_int, default=None, metavar="N",
                       help="seed of the bootstrap (default: fresh; the one used is in --json output)")
    score.add_argument("--json", action="store_true",
                       help="print one JSON object (file, n, total_weight, smece, sigma, ci_low, ci_high, level, "
                            "n_boot, seed, metric, dropped)")
    score.set_defaults(run=cmd_score)

    plot = sub.add_parser(
        "plot", help="draw the smoothed reliability diagram of a file's predictions",
        description=textwrap.fill(
            "Draws the smoothed reliability diagram (with a bootstrap band) of the predictions in FILE, "
            "and with --binned the classic binned diagram beside it.", 79),
        epilog="example:\n  smoothece plot preds.csv --pred prob --label outcome -o diagram.png --binned\n\n"
               + _EPILOG_EXIT,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_input_options(plot)
    plot.add_argument("-o", "--output", required=True, metavar="OUT",
                      help="image to write: .png, .svg or .pdf")
    plot.add_argument("--binned", action="store_true",
                      help="add a panel with the binned reliability diagram (reads the columns into memory)")
    plot.add_argument("--n-bins", type=_positive_int, default=15, metavar="N",
                      help="bins of the binned diagram (default 15)")
    plot.add_argument("--n-boot", type=_nonneg_int, default=1000, metavar="N",
                      help="bootstrap replicates for the band (default 1000; 0 draws no band)")
    plot.add_argument("--consistency", action="store_true",
                      help="also draw the consistency band: where the curve would lie if the model were calibrated")
    plot.add_argument("--seed", type=_nonneg_int, default=None, metavar="N", help="seed of the bootstrap")
    plot.add_argument("--title", default=None, help="figure title (default: file, column and n; '' for none)")
    plot.add_argument("--dpi", type=_positive_int, default=150, help="resolution of .png output (default 150)")
    plot.set_defaults(run=cmd_plot)

    demo = sub.add_parser(
        "demo", help="score and draw a synthetic miscalibrated model",
        description=textwrap.fill(
            "Generates a synthetic overconfident model (f ~ Beta(2, 2), y ~ Bernoulli(f^1.5)), writes "
            "its smoothed and binned reliability diagrams, and prints its SmoothECE and the p-value of "
            "the test of perfect calibration.", 79),
        epilog=_EPILOG_EXIT, formatter_class=argparse.RawDescriptionHelpFormatter)
    demo.add_argument("-o", "--output", default="smoothece-demo.png", metavar="OUT",
                      help="image to write: .png, .svg or .pdf (default smoothece-demo.png)")
    demo.add_argument("--seed", type=_nonneg_int, default=0, metavar="N",
                      help="seed of data and resampling (default 0)")
    demo.add_argument("--n", type=_positive_int, default=20_000, metavar="N", help="predictions (default 20,000)")
    demo.add_argument("--n-boot", type=_positive_int, default=1000, metavar="N",
                      help="bootstrap and test replicates (default 1000)")
    demo.add_argument("--dpi", type=_positive_int, default=150, help="resolution of .png output (default 150)")
    demo.add_argument("--json", action="store_true",
                      help="print one JSON object (n, smece, sigma, ci_low, ci_high, level, n_boot, p_value, "
                           "n_sim, seed, output)")
    demo.set_defaults(run=cmd_demo)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the ``smoothece`` command line; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    if getattr(args, "run", None) is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        return args.run(args)
    except CLIError as err:
        sys.stderr.write(f"smoothece: error: {_one_line(err)}\n")
        return err.code
    except KeyboardInterrupt:
        sys.stderr.write("\nsmoothece: interrupted\n")
        return 130
    except BrokenPipeError:
        # Output closed early (e.g. piped into head): not an error of ours.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:  # pragma: no cover
            pass
        return EXIT_OK
    except MemoryError:
        sys.stderr.write("smoothece: error: out of memory (--metric logit and --binned read the columns into "
                         "memory; try without them)\n")
        return EXIT_DATA
    except Exception as err:  # never a traceback for a user; SMOOTHECE_DEBUG=1 shows it
        if os.environ.get("SMOOTHECE_DEBUG"):
            raise
        sys.stderr.write(f"smoothece: error: internal error, please report it: {type(err).__name__}: "
                         f"{_one_line(err)} (set SMOOTHECE_DEBUG=1 for the traceback)\n")
        return EXIT_DATA


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
