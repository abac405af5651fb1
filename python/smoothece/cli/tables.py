"""Reading the columns a command needs, in chunks, with where each row came from.

One reader per format, both pyarrow: CSV through ``pyarrow.csv.open_csv``
(streaming, from a file, a gzip file or standard input), Parquet through
``ParquetFile.iter_batches``. A reader yields :class:`Chunk` objects (NumPy
arrays of the columns used) and turns any row of any chunk back into its place
in the file (``where``): the file's line for CSV, its row index for Parquet.

CSV is read strictly: a row with more or fewer fields than the header, a
field that is not a number (``0.2_5``, ``1,5``, a NUL byte) and a duplicated
name among the columns used are errors naming the line. The columns used are
read as bytes and converted here, so that a bad field can be found and named
(pyarrow's own conversion error says neither the row nor the line).
"""

from __future__ import annotations

import csv
import difflib
import gzip
import os
import sys
import zlib
from typing import Dict, Iterator, List, Optional

import numpy as np

from .errors import CLIError, usage_error
from .progress import Progress, one_line

#: Field values read as missing (the common spellings of pandas and R).
NA_TOKENS = ("", "NA", "N/A", "n/a", "na", "NaN", "nan", "NAN", "-nan", "-NaN", "null", "NULL", "Null", "None",
             "#N/A", "<NA>")

#: Rows per chunk, unless --chunksize says otherwise. A sketch update has a
#: fixed cost (about 2 ms), so chunks are not small; memory grows with them,
#: so they are not large either.
DEFAULT_CHUNKSIZE = 200_000

#: The library's names of the columns (its error messages and InputError.argument use them).
ROLES = ("f", "y", "weights", "groups")
OPTIONS = {"f": "--pred", "y": "--label", "weights": "--weight", "groups": "--by"}


def pred_role(k: int) -> str:
    """The role of the k-th ``--pred`` column (from 0): "f", then "f2", "f3", ... (the library calls each "f")."""
    return "f" if k == 0 else f"f{k + 1}"


def base_role(role: str) -> str:
    """The library's name of a role: "f" for every prediction column."""
    return "f" if role.startswith("f") else role


def option_of(role: str) -> str:
    return OPTIONS[base_role(role)]

STDIN = "-"
_CSV_SUFFIXES = {".csv": "csv", ".tsv": "tsv", ".txt": "csv"}
_PARQUET_SUFFIXES = (".parquet", ".pq")
_MAX_HEADER = 16 << 20  # a first line longer than this is not a CSV header
_READ_ERRORS = (OSError, EOFError, zlib.error)  # a damaged gzip file raises any of them


def import_pyarrow():
    """pyarrow with its CSV, Parquet and compute modules, or a one-line error."""
    try:
        import pyarrow
        import pyarrow.compute  # noqa: F401
        import pyarrow.csv  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError as err:
        raise CLIError(f"reading files needs pyarrow, which could not be imported ({one_line(err)}): "
                       f"pip install pyarrow") from None
    return pyarrow


class Chunk:
    """One batch of rows: 1-D arrays ``f``, ``y``, ``w`` and ``groups`` (None
    when not asked for), ``missing`` (role -> boolean mask of the rows whose
    value is missing in that column; empty unless some are and ``--dropna`` is
    off), and the record (row of the file, counted from 0) of row ``i``.

    With several ``--pred`` columns, ``cols`` has each one by its role ("f",
    "f2", ...), and ``skip`` (with ``--dropna``) the rows each prediction
    column misses: those are left out of that model only (:meth:`rows_of`)."""

    __slots__ = ("f", "y", "w", "groups", "missing", "start", "kept", "cols", "skip")

    def __init__(self, cols: Dict[str, np.ndarray], missing: Dict[str, np.ndarray], start: int,
                 kept: Optional[np.ndarray], skip: Optional[Dict[str, np.ndarray]] = None):
        self.cols = cols
        self.f, self.y = cols["f"], cols["y"]
        self.w, self.groups = cols.get("weights"), cols.get("groups")
        self.missing = missing
        self.skip = skip or {}
        self.start, self.kept = start, kept

    def __len__(self) -> int:
        return self.f.shape[0]

    def column(self, role: str) -> np.ndarray:
        return self.cols.get(role)

    def record(self, i: int) -> int:
        return self.start + (i if self.kept is None else int(self.kept[i]))

    def rows_of(self, role: str):
        """(f, y, w, groups, index) of the model whose predictions have ``role``:
        its rows (``index`` maps them to this chunk's rows; None when all are its)."""
        f = self.cols[role]
        mask = self.skip.get(role)
        if mask is None:
            return f, self.y, self.w, self.groups, None
        index = np.flatnonzero(~mask)
        take = lambda a: None if a is None else a[index]  # noqa: E731
        return f[index], self.y[index], take(self.w), take(self.groups), index


def detect_format(source: str, fmt: Optional[str]) -> str:
    if fmt is not None:
        return fmt
    if source == STDIN:
        return "csv"
    low = source.lower()
    if low.endswith(_PARQUET_SUFFIXES):
        return "parquet"
    base = low[:-3] if low.endswith(".gz") else low
    for suffix, kind in _CSV_SUFFIXES.items():
        if base.endswith(suffix):
            return kind
    ext = os.path.splitext(source)[1] or "(none)"
    raise usage_error(f"cannot tell the format of {os.path.basename(source)!r} from its extension {ext}: "
                      f"use a .csv, .tsv, .csv.gz, .tsv.gz or .parquet file, or pass --format csv|tsv|parquet")


def open_table(source: str, columns: Dict[str, str], *, fmt: Optional[str] = None, chunksize: int,
               dropna: bool = False, progress: bool = True) -> "Table":
    """The reader for ``source`` (a path, or ``-`` for standard input).

    ``columns`` maps the roles used ("f", "y", and optionally "weights",
    "groups") to column names."""
    kind = detect_format(source, fmt)
    if source != STDIN:
        if os.path.isdir(source):
            raise usage_error(f"{source} is a directory, not a file")
        if not os.path.exists(source):
            raise usage_error(f"{source}: no such file")
    elif kind == "parquet":
        raise usage_error("Parquet cannot be read from standard input (the format needs to seek): give the "
                          "file's name")
    pa = import_pyarrow()
    cls = ParquetTable if kind == "parquet" else CSVTable
    return cls(pa, source, columns, kind=kind, chunksize=chunksize, dropna=dropna, progress=progress)


class Table:
    """What both readers share: the columns asked for, where rows are, missing values."""

    def __init__(self, pa, source: str, columns: Dict[str, str], *, kind: str, chunksize: int, dropna: bool,
                 progress: bool):
        self.pa = pa
        self.source = source
        self.name = "<stdin>" if source == STDIN else os.path.basename(source)
        self.columns = dict(columns)
        self.kind = kind
        self.chunksize = chunksize
        self.dropna = dropna
        self.show_progress = progress
        self.dropped = 0  # rows skipped for missing values (with dropna) in a column every model uses
        # With several prediction columns: rows each one misses (with dropna), skipped for that model only.
        self.skipped: Dict[str, int] = {role: 0 for role in self.columns if len(self.pred_roles) > 1
                                        and role in self.pred_roles}
        self.rows = 0  # records read so far (kept or dropped)
        self.warnings: List[str] = []  # what the reader noticed but did not refuse

    @property
    def pred_roles(self) -> List[str]:
        """The roles of the prediction columns, in the order given."""
        return [role for role in self.columns if base_role(role) == "f"]

    def dropped_for(self, role: str) -> int:
        """Rows with missing values skipped for the model whose predictions have ``role``."""
        return self.dropped + self.skipped.get(role, 0)

    def chunks(self) -> Iterator[Chunk]:  # pragma: no cover - each reader has its own
        raise NotImplementedError

    def where(self, record: int) -> str:  # pragma: no cover
        raise NotImplementedError

    def _positions(self, names: List[str]) -> Dict[str, int]:
        """The field of each role's column; usage errors for absent or duplicated names."""
        out = {}
        for role, col in self.columns.items():
            hits = [i for i, n in enumerate(names) if n == col]
            if len(hits) > 1:
                fields = " and ".join(str(i + 1) for i in hits[:3]) + (" and more" if len(hits) > 3 else "")
                raise usage_error(f"{self.name}: column {col!r} (given as {option_of(role)}) appears {len(hits)} "
                                  f"times in the header (fields {fields}); rename the copies")
            if hits:
                out[role] = hits[0]
                continue
            shown = ", ".join(repr(n) for n in names[:40]) + (f", ... ({len(names)} in all)" if len(names) > 40 else "")
            close = difflib.get_close_matches(col, names, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise usage_error(f"{self.name} has no column {col!r} (given as {option_of(role)}); its columns are "
                              f"{shown}{hint}")
        return out

    def _chunk(self, cols: Dict[str, np.ndarray], nulls: Dict[str, np.ndarray], start: int) -> Optional[Chunk]:
        """The chunk of a batch: rows with missing values dropped (dropna) or
        flagged for the caller to report. With several prediction columns, a
        row that misses only predictions is kept, and skipped by the models
        that miss it (``Chunk.skip``)."""
        kept, skip = None, {}
        if nulls and self.dropna:
            per_model = self.skipped  # empty with one prediction column: its rows are dropped like any
            shared = [mask for role, mask in nulls.items() if role not in per_model]
            if shared:
                missing = np.logical_or.reduce(shared)
                self.dropped += int(np.count_nonzero(missing))
                kept = np.flatnonzero(~missing)
                cols = {role: a[kept] for role, a in cols.items()}
            for role, mask in nulls.items():
                if role in per_model:
                    mask = mask if kept is None else mask[kept]
                    if mask.any():
                        skip[role] = mask
                        self.skipped[role] += int(np.count_nonzero(mask))
            nulls = {}
        if cols["f"].shape[0] == 0:
            return None
        return Chunk(cols, nulls, start, kept, skip)

    # -- converting columns (shared: Parquet string columns are read like CSV fields) --------------
    def _bad_field(self, arr, parse, record0: int, role: str, what: str) -> CLIError:
        """The error for the first field of ``arr`` that ``parse`` refuses (found by halving)."""
        lo, hi = 0, len(arr)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            try:
                parse(arr.slice(lo, mid - lo))
            except self.pa.ArrowException:
                hi = mid
            else:
                lo = mid
        raw = arr[lo].as_py()
        text = raw.decode("utf-8", "backslashreplace") if isinstance(raw, bytes) else str(raw)
        shown = repr(text if len(text) <= 40 else text[:40] + "...")
        extra = "; it holds a NUL byte (a damaged file, or not UTF-8 text?)" if "\x00" in text else ""
        return CLIError(f"{self.name} {self.where(record0 + lo)}, column {self.columns[role]!r}: {shown} is not "
                        f"{what}{extra}")

    def _convert(self, role: str, arr, record0: int):
        """A column of text converted for its role (an Arrow array; refused fields named)."""
        pa = self.pa
        parse = {"f": _numbers, "y": _labels, "weights": _numbers, "groups": self._keys}[base_role(role)]
        try:
            out = parse(arr)
        except pa.ArrowException:
            what = {"f": "a number", "weights": "a number", "y": "a label (0 or 1, true or false)"}.get(base_role(role))
            if what is None:
                what = _KEY_KINDS.get(str(self._key_type), "UTF-8 text")
            raise self._bad_field(arr, parse, record0, role, what) from None
        return out

    _key_type = None  # the type of the group keys, fixed by the first rows that have any

    def _keys(self, arr):
        """Group keys from text: integers, numbers, dates, date-times or else strings,
        whichever reads all the first rows with keys; later rows must read the same way."""
        pa, pc = self.pa, self.pa.compute
        if self._key_type is None:
            if arr.null_count == len(arr):
                return arr.cast(pa.string())
            valid = arr.drop_null()
            for t in (pa.int64(), pa.float64(), pa.date32(), pa.timestamp("us"), pa.string()):
                try:
                    _cast_text(pa, valid, t)
                except pa.ArrowException:
                    continue
                self._key_type = t
                break
            else:
                self._key_type = pa.string()  # not UTF-8: the conversion below names the row
        if self._key_type == pa.string():
            return pc.utf8_trim_whitespace(arr.cast(pa.string()))
        return _cast_text(pa, arr, self._key_type)


_KEY_KINDS = {"int64": "an integer like the keys before it", "double": "a number like the keys before it",
              "date32[day]": "a date like the keys before it", "timestamp[us]": "a date-time like the keys before it"}


def _cast_text(pa, arr, t):
    """Text to type ``t``; pyarrow's own parsers (strict: no ``0.2_5``, no ``1,5``)."""
    pc = pa.compute
    try:
        return pc.cast(arr, t)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # (bytes cast to numbers, but not to dates)
        if not (pa.types.is_binary(arr.type) or pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
            raise
    # Fields padded with spaces (", " as separator), and missing-value tokens among them.
    text = pc.utf8_trim_whitespace(arr.cast(pa.string()))
    text = pc.if_else(pc.is_in(text, value_set=pa.array(NA_TOKENS)), pa.scalar(None, pa.string()), text)
    return pc.cast(text, t)


def _numbers(arr):
    import pyarrow as pa

    return _cast_text(pa, arr, pa.float64())


def _labels(arr):
    """Labels as float64: numbers, or true/false in any case."""
    import pyarrow as pa

    pc = pa.compute
    try:
        return _cast_text(pa, arr, pa.float64())
    except pa.ArrowInvalid:
        pass
    text = pc.utf8_trim_whitespace(arr.cast(pa.string()))
    low = pc.utf8_lower(text)
    text = pc.if_else(pc.equal(low, "true"), "1", pc.if_else(pc.equal(low, "false"), "0", text))
    return _cast_text(pa, text, pa.float64())


_NUMPY_OF_ARROW = {
    "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
    "float": np.float32, "double": np.float64,
}


def _to_numpy(pa, arr) -> np.ndarray:
    """An Arrow array as NumPy, from its buffers (``Array.to_numpy`` imports
    pandas when it is installed: a third of a second at every start). Values
    under nulls are arbitrary: the caller masks them."""
    n, off = len(arr), arr.offset
    t = arr.type
    if pa.types.is_dictionary(t):  # text keys: each chunk's distinct keys, indexed
        keys = np.asarray(arr.dictionary.to_pylist()) if len(arr.dictionary) else np.empty(0, dtype=str)
        return keys[_to_numpy(pa, arr.indices.fill_null(0))] if len(keys) else np.full(n, "")
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return _to_numpy(pa, pa.compute.dictionary_encode(arr))
    if n == 0:
        return np.empty(0, dtype=np.float64)
    data = arr.buffers()[1]
    if pa.types.is_boolean(t):
        return np.unpackbits(np.frombuffer(data, dtype=np.uint8), count=n + off, bitorder="little")[off:].view(bool)
    if pa.types.is_date32(t):
        return np.frombuffer(data, dtype=np.int32, count=n + off)[off:].astype("datetime64[D]")
    if pa.types.is_timestamp(t) or pa.types.is_date64(t):
        unit = "ms" if pa.types.is_date64(t) else t.unit
        return np.frombuffer(data, dtype=np.int64, count=n + off)[off:].view(f"datetime64[{unit}]")
    return np.frombuffer(data, dtype=_NUMPY_OF_ARROW[str(t)], count=n + off)[off:]


def _null_mask(arr) -> Optional[np.ndarray]:
    if arr.null_count == 0:
        return None
    n, off = len(arr), arr.offset
    valid = np.unpackbits(np.frombuffer(arr.buffers()[0], dtype=np.uint8), count=n + off, bitorder="little")[off:]
    return valid == 0


# ---------------------------------------------------------------------------------------------------------------
# CSV
# ---------------------------------------------------------------------------------------------------------------

class _AfterHeader:
    """The bytes after the header line, as a file object for pyarrow.

    pyarrow reads an empty line as a row of empty fields, the same as a line
    of delimiters. Here each empty line gets one space, which pyarrow hands to
    the invalid-row handler with its line number, like any whitespace-only
    line: so blank lines are skipped and the line numbers stay exact.
    """

    closed = False

    @property
    def lines(self) -> int:
        """Lines after the header so far (the last one may lack its line break)."""
        return self.newlines + (0 if self._after_newline else 1)

    def __init__(self, raw, head: bytes):
        self._raw = raw
        self._unmarked = head  # bytes read but not yet scanned (the rest of the header's block; a trailing \r)
        self._ready = b""  # scanned bytes not yet returned
        self._after_newline = True  # the header line ended with a newline
        self.newlines = 0  # line breaks after the header

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True

    def read(self, size: int = -1) -> bytes:
        if self._ready:
            out = self._ready if size < 0 else self._ready[:size]
            self._ready = self._ready[len(out):]
            return out
        while True:
            raw = self._raw.read(size)
            data = self._unmarked + raw if self._unmarked else raw
            self._unmarked = b""
            if raw and data.endswith(b"\r"):  # might start "\r\n" of an empty line: decide with the next block
                data, self._unmarked = data[:-1], b"\r"
            if data or not raw:
                break
        data = self._mark_empty_lines(data)
        if 0 <= size < len(data):
            data, self._ready = data[:size], data[size:]
        return data

    def _mark_empty_lines(self, data: bytes) -> bytes:
        if not data:
            return data
        a = np.frombuffer(data, dtype=np.uint8)
        newline = a == 10
        self.newlines += int(np.count_nonzero(newline))
        after_newline = self._after_newline
        self._after_newline = bool(newline[-1])
        # Quick test: a newline followed by \n or \r (rare in data), or an empty first line.
        if not ((after_newline and a[0] in (10, 13)) or (newline[:-1] & (a[1:] <= 13)).any()):
            return data
        follows_newline = np.concatenate(([after_newline], newline[:-1]))
        ends_line = newline | ((a == 13) & np.concatenate((newline[1:], [False])))
        empty = np.flatnonzero(follows_newline & ends_line)
        return data if empty.size == 0 else np.insert(a, empty, 32).tobytes()


class CSVTable(Table):
    """A CSV (or TSV) file, plain or gzipped, or standard input."""

    def __init__(self, pa, source, columns, **kw):
        super().__init__(pa, source, columns, **kw)
        self.header_line = 0  # line number of the header (blank lines may come before it)
        self._skipped: List[int] = []  # lines after the header skipped as blank, counted from the header
        self._bad_row = None  # the row pyarrow's parser refused: (line after the header, expected, actual, text)

    def where(self, record: int) -> str:
        return f"line {self._line(record)}"

    def _line(self, record: int) -> int:
        if not self._skipped:
            return self.header_line + 1 + record
        skipped = np.asarray(self._skipped)
        records_before = skipped - 1 - np.arange(skipped.size)
        return self.header_line + 1 + record + int(np.searchsorted(records_before, record, side="right"))

    def _open(self):
        """(raw binary stream, the compressed stream for progress, total bytes or None)."""
        if self.source == STDIN:
            raw = sys.stdin.buffer
            counted, total = None, None
        else:
            try:
                raw = open(self.source, "rb")
            except OSError as err:
                raise CLIError(f"cannot read {self.name}: {one_line(err.strerror or err)}") from None
            counted, total = raw, os.fstat(raw.fileno()).st_size
        try:
            magic = raw.peek(2)[:2]
        except OSError as err:
            raise CLIError(f"cannot read {self.name}: {one_line(err)}") from None
        if magic == b"\x1f\x8b":
            raw = gzip.GzipFile(fileobj=raw, mode="rb")
        return raw, counted, total

    def _read_header(self, raw) -> tuple:
        """(field names, delimiter, bytes read after the header line)."""
        buf, eof = b"", False
        while True:
            end = buf.find(b"\n")
            if end < 0 and not eof:
                if len(buf) >= _MAX_HEADER:
                    raise CLIError(f"{self.name}: the first line is longer than {_MAX_HEADER >> 20} MB: is this a "
                                   f"CSV file?")
                more = self._read(raw, 1 << 16)
                eof = not more
                buf += more
                continue
            if end < 0:
                if not buf:
                    raise CLIError(f"{self.name} is empty: it has no header line with column names")
                end = len(buf)  # the last line, without a newline
            line, buf = buf[:end], buf[end + 1:]
            self.header_line += 1
            if self.header_line == 1 and line.startswith(b"\xef\xbb\xbf"):
                line = line[3:]  # a byte-order mark
            if line.strip():
                break
        if b"\x00" in line:
            raise CLIError(f"{self.name} line {self.header_line}: the header holds NUL bytes; is the file UTF-16 or "
                           f"binary? smoothece reads UTF-8 text")
        try:
            text = line.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError:
            raise CLIError(f"{self.name} line {self.header_line}: the header is not UTF-8 text") from None
        delim = "\t" if self.kind == "tsv" else ","
        fields = next(csv.reader([text], delimiter=delim))
        if len(fields) == 1 and delim == ",":
            for other in (";", "\t", "|"):
                alt = next(csv.reader([text], delimiter=other))
                if len(alt) > 1:
                    fields, delim = alt, other
                    break
        return [f.strip() for f in fields], delim, buf

    def _read(self, raw, size: int) -> bytes:
        try:
            return raw.read(size)
        except _READ_ERRORS as err:
            raise CLIError(f"cannot read {self.name}: {one_line(err)}") from None

    def _invalid_row(self, row) -> str:
        """pyarrow's handler of rows with the wrong number of fields: blank ones are skipped, others refused."""
        if not row.text.strip():
            self._skipped.append(row.number)
            return "skip"
        self._bad_row = (row.number, row.expected_columns, row.actual_columns, row.text)
        return "error"

    def _parse_error(self, err) -> CLIError:
        if self._bad_row is None:
            return CLIError(f"cannot read {self.name} after {self.where(self.rows)}: {one_line(err)}")
        number, expected, actual, text = self._bad_row
        fields = f"{actual} field" + ("" if actual == 1 else "s")
        detail = ("; it holds NUL bytes (a damaged file, or not UTF-8 text?)" if "\x00" in text else
                  "; a value with the delimiter in it must be quoted" if actual > expected else "")
        return CLIError(f"{self.name} line {self.header_line + number}: {fields}, but the header has {expected}"
                        f"{detail}")

    def _gathered(self, batches: list, columns: List[int]) -> Optional[Chunk]:
        """One chunk of consecutive batches (``columns``: each role's column in them)."""
        pa = self.pa
        start = self.rows
        self.rows += sum(b.num_rows for b in batches)
        cols, nulls = {}, {}
        for role, k in zip(self.columns, columns):
            parts = [b.column(k) for b in batches]
            arr = self._convert(role, parts[0] if len(parts) == 1 else pa.concat_arrays(parts), start)
            cols[role] = _to_numpy(pa, arr)
            mask = _null_mask(arr)
            if mask is not None:
                nulls[role] = mask
        return self._chunk(cols, nulls, start)

    def chunks(self) -> Iterator[Chunk]:
        progress = Progress(self.name, None, "bytes") if self.show_progress else None
        block = None  # pyarrow's block of bytes: chosen from the first rows, unless a row needs more
        try:
            while True:
                try:
                    yield from self._chunks(block, progress)
                    return
                except _RowTooLong as err:
                    block = self._block_for_long_rows(err.block)
                    # Read again from the start, the rows already counted skipped (_chunks resumes after them).
                    self.header_line, self._skipped, self._bad_row = 0, [], None
        finally:
            if progress is not None:
                progress.close()

    def _block_for_long_rows(self, block: int) -> int:
        """A block that holds the file's longest line twice over (a row longer than a block is
        refused by pyarrow), or one twice as large if it already did (quoted line breaks)."""
        if self.source == STDIN:
            raise CLIError(f"{self.name}: a row at or after {self.where(self.rows)} is longer than {block >> 10:,} kB, "
                           f"more than the reader takes in one piece from standard input; save the data to a file "
                           f"and pass its name (a file is read again in pieces as large as its longest row)")
        longest = _longest_line(self.source, self.name)
        wanted = max(2 * block, 1 << max(2 * longest - 1, 1).bit_length())
        if wanted > _MAX_BLOCK:
            raise CLIError(f"{self.name}: a row at or after {self.where(self.rows)} is longer than "
                           f"{_MAX_BLOCK >> 21} MB (the longest line holds {longest:,} bytes): smoothece reads rows of "
                           f"up to {_MAX_BLOCK >> 21} MB; drop the long fields (e.g. the columns not used) first")
        return wanted

    def _chunks(self, block: Optional[int], progress) -> Iterator[Chunk]:
        """The chunks from the rows after the first ``self.rows`` (those read already), with
        pyarrow's blocks of ``block`` bytes (None: chosen from the first rows)."""
        pa = self.pa
        pacsv = pa.csv
        raw, counted, total = self._open()
        if progress is not None:
            progress.total = total
        skip = self.rows
        try:
            names, delim, head = self._read_header(raw)
            positions = self._positions(names)
            head = head or self._read(raw, 1 << 16)
            if not head:
                return  # a header and nothing else (pyarrow refuses an empty stream)
            # pyarrow gets names of its own: the header's may repeat among the columns not used.
            fields = [f"f{i}" for i in range(len(names))]
            used = sorted(set(positions.values()))
            # pyarrow's reader holds tens of times its block of bytes in memory, so the blocks stay small
            # (1 MB at most; 64 kB at least, so that a longer row later on still fits) and the batches
            # are gathered into chunks of chunksize rows (each sketch update has a cost of its own).
            # A row longer than a block (a long field, even in a column not used) makes the file read
            # again with blocks that hold its longest line.
            if block is None:
                per_row = len(head) / max(1, head.count(b"\n"))
                block = int(min(1 << 20, max(1 << 16, per_row * self.chunksize)))
            stream = _AfterHeader(raw, head)
            try:
                reader = pacsv.open_csv(
                    stream,
                    # One thread: then pyarrow numbers the rows it refuses (the handler's row.number).
                    read_options=pacsv.ReadOptions(column_names=fields, block_size=block, use_threads=False),
                    parse_options=pacsv.ParseOptions(delimiter=delim, ignore_empty_lines=False,
                                                     invalid_row_handler=self._invalid_row),
                    convert_options=pacsv.ConvertOptions(
                        include_columns=[fields[i] for i in used],
                        column_types={fields[i]: pa.binary() for i in used},
                        null_values=list(NA_TOKENS), strings_can_be_null=True, quoted_strings_can_be_null=True))
                batches, rows, passed = [], 0, 0
                while True:
                    try:
                        batch = reader.read_next_batch()
                    except StopIteration:
                        batch = None
                    if batch is not None and passed < skip:  # read before the block grew: counted already
                        take = min(batch.num_rows, skip - passed)
                        passed += take
                        batch = batch.slice(take) if take < batch.num_rows else None
                        if batch is None:
                            continue
                    if batch is not None:
                        batches.append(batch)
                        rows += batch.num_rows
                    if rows and (rows >= self.chunksize or batch is None):
                        chunk = self._gathered(batches, [used.index(positions[r]) for r in positions])
                        batches, rows = [], 0
                        if progress is not None:
                            progress.update(counted.tell() if counted is not None else 0, self.rows)
                        if chunk is not None:
                            yield chunk
                    if batch is None:
                        break
                extra = stream.lines - self.rows - len(self._skipped)
                if extra > 0:
                    # pyarrow lets a quoted field run over line breaks: legal CSV, but then lines are not rows
                    # (and a quote left open swallows the lines after it).
                    self.warnings.append(
                        f"{self.name}: {extra:,} line break{'s are' if extra > 1 else ' is'} inside quoted fields, "
                        f"so its {stream.lines + self.header_line:,} lines hold {self.rows:,} "
                        f"row{'s' if self.rows != 1 else ''} (a quote left open swallows the lines after it); line "
                        f"numbers given count a row as one line")
            except pa.ArrowInvalid as err:
                if "straddl" in str(err):  # pyarrow's "straddling object straddles two block boundaries"
                    raise _RowTooLong(block) from None
                raise self._parse_error(err) from None
            except (*_READ_ERRORS, pa.ArrowException) as err:
                raise CLIError(f"cannot read {self.name}: {one_line(err)}") from None
        finally:
            if raw is not sys.stdin.buffer:
                raw.close()
            if counted is not None:
                counted.close()


class _RowTooLong(Exception):
    """A row longer than pyarrow's block of ``block`` bytes."""

    def __init__(self, block: int):
        super().__init__(block)
        self.block = block


#: The largest block of bytes the CSV reader takes (so the longest row): 1 GiB.
_MAX_BLOCK = 1 << 30


def _longest_line(path: str, name: str) -> int:
    """Bytes in the longest line of a file (gzipped or not), in one pass of 16 MB pieces."""
    try:
        with open(path, "rb") as raw:
            fh = gzip.GzipFile(fileobj=raw, mode="rb") if raw.peek(2)[:2] == b"\x1f\x8b" else raw
            longest, run = 0, 0  # run: bytes since the last line break
            while True:
                piece = fh.read(16 << 20)
                if not piece:
                    return max(longest, run)
                breaks = np.flatnonzero(np.frombuffer(piece, dtype=np.uint8) == 10)
                if breaks.size == 0:
                    run += len(piece)
                    continue
                longest = max(longest, run + int(breaks[0]) + 1, int(np.diff(breaks).max(initial=0)))
                run = len(piece) - int(breaks[-1]) - 1
    except _READ_ERRORS as err:
        raise CLIError(f"cannot read {name}: {one_line(err)}") from None


# ---------------------------------------------------------------------------------------------------------------
# Parquet
# ---------------------------------------------------------------------------------------------------------------

class ParquetTable(Table):
    """A Parquet file, read a row group's batches at a time."""

    def where(self, record: int) -> str:
        return f"row index {record}"

    def _check_type(self, role: str, t) -> None:
        pa = self.pa
        if pa.types.is_dictionary(t):
            t = t.value_type
        text = pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
        if role == "groups":
            ok = text or pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t) \
                or pa.types.is_date(t) or pa.types.is_timestamp(t)
        else:
            ok = text or pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t) \
                or pa.types.is_decimal(t) or pa.types.is_null(t)
        if not ok:
            raise CLIError(f"{self.name}: column {self.columns[role]!r} (given as {option_of(role)}) has type {t}, "
                           f"not " + ("group keys" if role == "groups" else "numbers"))

    def _column(self, role: str, arr, start: int):
        """(NumPy values, missing mask or None) of one column of a batch. Typed
        columns are taken as they are; text is read as in CSV, except that
        group keys stay text."""
        pa = self.pa
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        t = arr.type
        if pa.types.is_binary(t):
            arr = self._utf8(arr, role, start)
        elif pa.types.is_decimal(t) or pa.types.is_null(t) or pa.types.is_float16(t):
            arr = arr.cast(pa.float64())
        if role != "groups" and (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
            arr = self._convert(role, arr, start)
        values = _to_numpy(pa, arr)
        mask = _null_mask(arr)
        if values.dtype.kind == "f":  # NaN is how many writers (pandas among them) store a missing value
            nan = np.isnan(values)
            if nan.any():
                mask = nan if mask is None else (mask | nan)
        return values, mask

    def _utf8(self, arr, role: str, start: int):
        parse = lambda a: a.cast(self.pa.string())  # noqa: E731
        try:
            return parse(arr)
        except self.pa.ArrowException:
            raise self._bad_field(arr, parse, start, role, "UTF-8 text") from None

    def chunks(self) -> Iterator[Chunk]:
        pa = self.pa
        pq = pa.parquet
        try:
            # pyarrow (15 and later) checks each data page against the CRC-32 in its header where
            # the writer stored one (pq.write_table(..., write_page_checksum=True); Spark and other
            # writers may); pages without one, and files of pyarrow 14, are read unchecked:
            # Parquet has no checksum of its own over the data, so damage there reads as values.
            try:
                pfile = pq.ParquetFile(self.source, page_checksum_verification=True)
            except TypeError:  # pyarrow 14
                pfile = pq.ParquetFile(self.source)
        except (OSError, pa.ArrowException) as err:
            raise CLIError(f"cannot read {self.name} as Parquet: {one_line(err)}") from None
        schema = pfile.schema_arrow
        positions = self._positions(list(schema.names))
        for role, pos in positions.items():
            self._check_type(role, schema.field(pos).type)
        names = list(dict.fromkeys(schema.names[p] for p in positions.values()))
        progress = Progress(self.name, pfile.metadata.num_rows, "rows") if self.show_progress else None
        try:
            for batch in pfile.iter_batches(batch_size=self.chunksize, columns=names):
                start = self.rows
                self.rows += batch.num_rows
                cols, nulls = {}, {}
                for role, pos in positions.items():
                    values, mask = self._column(role, batch.column(names.index(schema.names[pos])), start)
                    cols[role] = values
                    if mask is not None:
                        nulls[role] = mask
                if progress is not None:
                    progress.update(self.rows, self.rows)
                chunk = self._chunk(cols, nulls, start)
                if chunk is not None:
                    yield chunk
        except (OSError, pa.ArrowException) as err:
            damaged = "; the file is damaged: a page differs from the checksum its writer stored" \
                if "checksum" in str(err).lower() else ""
            raise CLIError(f"cannot read {self.name}: {one_line(err)}{damaged}") from None
        finally:
            if progress is not None:
                progress.close()
