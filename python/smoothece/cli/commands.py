"""The commands: ``score``, ``plot`` and ``demo``.

A file is streamed into a :class:`~smoothece.CalibrationSketch` in either
metric, so memory does not grow with the file; ``--by`` keeps the rows by
group (about 17 bytes a row, answered at the end as :func:`smece_by_group`
answers arrays), ``plot --binned`` keeps the columns, and ``--compare`` the
rows where every model has a prediction (:func:`smoothece.compare_models`
answers them at the end).
Several ``--pred`` columns are read in the same pass, each into a sketch (and
rows by group) of its own: every model's numbers are those of a run with its
column alone.
When a value is refused, the error names the file's line (and group), and the
rest of the file is read, checks only, to say how many values are bad.
"""

from __future__ import annotations

import csv
import json
import math
import os
import queue
import stat
import sys
import tempfile
import threading
import warnings
from contextlib import contextmanager
from typing import Iterator, List, Optional

import numpy as np

from .. import _validate
from .._errors import InputError, ResolutionWarning, WeightKindWarning
from .._util import format_p, format_paired_p
from .errors import EXIT_OK, CLIError, usage_error
from .progress import Status, dash, encodable, one_line
from .tables import DEFAULT_CHUNKSIZE, Chunk, Table, base_role, open_table, pred_role

PLOT_SUFFIXES = (".png", ".svg", ".pdf")
_MAX_SIDE = (1 << 16) - 1  # Agg draws images of less than 2^16 pixels a side

_RULES = {"y": "labels must be 0 or 1", "weights": "weights must be finite and non-negative"}


# ---------------------------------------------------------------------------------------------------------------
# Reading a table into sketches
# ---------------------------------------------------------------------------------------------------------------

class Model:
    """One prediction column's share of a reading: its sketch, its rows by
    group (with ``--by``), the rows it skipped and, when collected, its
    columns ``f``, ``y``, ``w``."""

    def __init__(self, role: str, column: str, sketch, grouped):
        self.role, self.column, self.sketch, self.grouped = role, column, sketch, grouped
        self.parts: list = []
        self.dropped = 0
        self.f = self.y = self.w = None

    def collected(self) -> None:
        parts, self.parts = [p for p in self.parts if p[0].shape[0]], []
        if parts:
            self.f = np.concatenate([p[0] for p in parts])
            self.y = np.concatenate([p[1] for p in parts])
            self.w = None if parts[0][2] is None else np.concatenate([p[2] for p in parts])


class SharedRows:
    """The rows where every prediction column has a value (``--compare`` scores the models on the
    same rows): a column per model, the labels, the weights, and how many rows were skipped because
    some (not every) model misses them (with ``--dropna``)."""

    def __init__(self):
        self.parts: list = []
        self.skipped = 0
        self.f: list = []
        self.y = self.w = None

    def add(self, chunk: Chunk, roles: List[str]) -> None:
        masks = [chunk.skip[role] for role in roles if role in chunk.skip]
        keep = None
        if masks:
            keep = np.flatnonzero(~np.logical_or.reduce(masks))
            self.skipped += len(chunk) - keep.shape[0]
        take = (lambda a: a) if keep is None else (lambda a: None if a is None else a[keep])  # noqa: E731
        self.parts.append(([take(chunk.column(role)) for role in roles], take(chunk.y), take(chunk.w)))

    def collected(self) -> None:
        parts, self.parts = self.parts, []
        if parts:
            self.f = [np.concatenate([p[0][k] for p in parts]) for k in range(len(parts[0][0]))]
            self.y = np.concatenate([p[1] for p in parts])
            self.w = None if parts[0][2] is None else np.concatenate([p[2] for p in parts])

    @property
    def n(self) -> int:
        return 0 if self.y is None else int(self.y.shape[0])


class Reading:
    """What :func:`read_table` read: the table (its name, dropped rows), a
    :class:`Model` per prediction column and, when asked for, the
    :class:`SharedRows`; ``sketch``, ``grouped``, ``f``, ``y``, ``w`` are the
    first model's."""

    def __init__(self, table: Table, models: List[Model], shared: Optional[SharedRows] = None):
        self.table, self.models, self.shared = table, models, shared
        first = models[0]
        self.sketch, self.grouped, self.f, self.y, self.w = first.sketch, first.grouped, first.f, first.y, first.w


def pred_columns(args) -> List[str]:
    """The ``--pred`` columns, in the order given (a column given twice is a usage error)."""
    preds = args.pred if isinstance(args.pred, list) else [args.pred]
    seen = set()
    for col in preds:
        if col in seen:
            raise usage_error(f"column {col!r} is given twice as --pred; give each prediction column once")
        seen.add(col)
    return preds


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def refuse_writing_over_input(args) -> None:
    """Usage error when an output of the command is its input file: the image (-o; the same
    path, or another name of the same file), or standard output redirected into the file
    (``> in.csv`` has emptied it already; ``>> in.csv`` would append to what is being read)."""
    try:
        source = os.fstat(sys.stdin.fileno()) if args.file == "-" else os.stat(args.file)
    except (OSError, ValueError, AttributeError):  # no such file (said later), or no real standard input
        return
    shown = "the file on standard input" if args.file == "-" else f"the input file {args.file}"
    out = getattr(args, "output", None)
    if out is not None:
        same = os.path.realpath(out) == os.path.realpath(args.file) if args.file != "-" else False
        try:
            same = same or _same_file(os.stat(out), source)
        except OSError:  # no such file yet
            pass
        if same:
            raise usage_error(f"-o {out} is {shown}: writing the image would replace the data; "
                              f"give the image another name")
    try:
        stdout = os.fstat(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # captured or closed: not a file
        return
    if stat.S_ISREG(stdout.st_mode) and _same_file(stdout, source):
        raise usage_error(f"standard output is {shown}: the output would be written into the data "
                          f"being read; redirect it to another file")


def open_args_table(args) -> Table:
    refuse_writing_over_input(args)
    columns = {pred_role(k): col for k, col in enumerate(pred_columns(args))}
    columns["y"] = args.label
    if args.weight is not None:
        columns["weights"] = args.weight
    if args.by is not None:
        columns["groups"] = args.by
    chunksize = args.chunksize or DEFAULT_CHUNKSIZE
    table = open_table(args.file, columns, fmt=args.format, chunksize=chunksize, dropna=args.dropna)
    if getattr(args, "reread", None):  # read a second time, at a finer resolution (cli._run_resolved)
        table.warnings.append(args.reread)
    return table


def read_table(table: Table, *, metric: str = "l1", clip=False, resolution: Optional[int] = None,
               grouped: bool = False, collect: bool = False, shared: bool = False) -> Reading:
    """Streams the table into a sketch per prediction column, which checks every value (and with
    ``grouped`` keeps the rows by group: answering them once at the end costs less, in time and
    memory, than a sketch per group). A model whose column misses a row (with ``--dropna``) skips it.
    ``collect`` keeps each model's columns, ``shared`` the rows where every model has a value."""
    from ..groups import GroupedRows
    from ..sketch import CalibrationSketch, default_resolution

    resolution = resolution or default_resolution(metric)
    models = [Model(role, table.columns[role], CalibrationSketch(resolution, metric),
                    GroupedRows(metric, clip) if grouped else None) for role in table.pred_roles]
    rows = SharedRows() if shared else None
    chunks = read_ahead(table.chunks())
    for chunk in chunks:
        if chunk.missing:
            raise _missing_error(table, chunk, chunks)
        for model in models:
            f, y, w, groups, index = chunk.rows_of(model.role)
            try:
                model.sketch.update(f, y, w, clip=clip)
                if model.grouped is not None:
                    model.grouped.update(f, y, groups, w)
            except InputError as err:
                raise _value_error(table, chunk, err, chunks, clip, model, index) from None
            if collect:
                model.parts.append((f, y, w))
        if rows is not None:  # after every model checked the chunk's values
            rows.add(chunk, table.pred_roles)
    several = len(models) > 1
    for model in models:
        model.dropped = table.dropped_for(model.role)
        model.collected()
        if model.sketch.n == 0:
            extra = f" ({_rows(table.dropped)} with missing values skipped)" if table.dropped else ""
            if not several or table.rows == table.dropped:
                raise CLIError(f"{table.name} has no data rows{extra}")
            raise CLIError(f"{table.name}: column {model.column!r} (given as --pred) has no value in the "
                           f"{_rows(table.rows - table.dropped)} read{extra}: every one is missing")
        if not model.sketch.total_weight > 0:
            rows = f" over the rows where column {model.column!r} (given as --pred) has a value" if several else ""
            raise CLIError(f"{table.name}: the weights in column {table.columns['weights']!r} sum to zero{rows}; "
                           f"at least one must be positive")
    if rows is not None:
        rows.collected()
    return Reading(table, models, rows)


def read_ahead(chunks: Iterator[Chunk]) -> Iterator[Chunk]:
    """The chunks, the next one read in a thread while the caller works on this one.

    pyarrow parses without the GIL and the sketches update without it, so on
    two cores reading and updating overlap. Errors of the reader are raised
    here, in order; closing this generator stops the reader."""
    ready: queue.Queue = queue.Queue(maxsize=1)
    stop = threading.Event()
    end = object()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        try:
            for chunk in chunks:
                if not put(chunk):
                    return
            put(end)
        except BaseException as err:  # handed to the caller, which raises it
            put(err)
        finally:
            chunks.close()

    reader = threading.Thread(target=read, name="smoothece-reader", daemon=True)
    reader.start()
    try:
        while True:
            item = ready.get()
            if item is end:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        reader.join()


# -- errors placed in the file ----------------------------------------------------------------------------------

def _count_rest(chunks, count) -> tuple:
    """The sum of ``count(chunk)`` (arrays) over the chunks left, and the error
    that stopped the reading early (None when the file was read to its end)."""
    total = 0
    try:
        for chunk in chunks:
            total = total + count(chunk)
    except CLIError as err:
        return total, err
    return total, None


def _counted(count: int, of: int, what: str, where: str, stopped: Optional[CLIError]) -> str:
    """"3 of 10,000,000 values bad, first at line 700002" (the whole file's count)."""
    what = what.format(s="" if of == 1 else "s")
    if stopped is None:
        return f"{count:,} of {of:,} {what}, first at {where}"
    return (f"at least {count:,} of the first {of:,} {what}, first at {where}; the file could not be read "
            f"further: {one_line(stopped)}")


def _present(chunk: Chunk, role: str) -> np.ndarray:
    """The column's values in the rows without missing values (those are reported as missing; a
    prediction column's own missing values, skipped with --dropna, are left out too)."""
    values = chunk.column(role)
    absent = list(chunk.missing.values()) + ([chunk.skip[role]] if role in chunk.skip else [])
    if absent:
        values = values[~np.logical_or.reduce(absent)]
    return values


def _bad_count(role: str, values: np.ndarray, clip) -> int:
    """How many of a column's values the library refuses (its own check, on that column alone)."""
    from ..sketch import CalibrationSketch

    n = values.shape[0]
    role = base_role(role)
    f = values if role == "f" else np.broadcast_to(0.5, (n,))
    y = values if role == "y" else np.broadcast_to(np.int8(0), (n,))
    w = values if role == "weights" else None
    try:
        CalibrationSketch(256).update(f, y, w, clip=clip)
    except InputError as err:
        return err.count
    return 0


def _rule(role: str, clip) -> str:
    if base_role(role) != "f":
        return _RULES[role]
    lo, hi = _validate.clip_range(clip)
    if (lo, hi) == (0.0, 1.0):
        return "predictions must be finite and in [0, 1]"
    return f"predictions must be finite and within {-lo:g} of [0, 1] (--clip)"


def _value_text(value) -> str:
    """The column's own value as a file would write it: 0.2 in a float32 column, 2 rather than 2.0,
    2**63 - 1 to the last digit (the error's float value would round it, or overflow int64)."""
    text = str(value)
    return text[:-2] if text.endswith(".0") else text


def _key_text(key) -> str:
    """One key, quoted as Python writes it; a date as the library writes dates (ISO 8601)."""
    if isinstance(key, np.datetime64):
        return repr(_key_texts(np.array([key]))[0])
    return repr(key.item() if isinstance(key, np.generic) else str(key))


def _group_of(chunk: Chunk, i: int) -> str:
    if chunk.groups is None or ("groups" in chunk.missing and chunk.missing["groups"][i]):
        return ""
    return f" (group {_key_text(chunk.groups[i])})"


def _value_error(table: Table, chunk: Chunk, err: InputError, chunks, clip, model: Model,
                 index: Optional[np.ndarray]) -> CLIError:
    """The library's refusal of a value of ``model``'s rows (``index``: those rows in the chunk), placed
    in the file: line, group, column, how many values of the whole file are bad, and the library's
    hints ("--clip" only when it would accept them all)."""
    role = model.role if err.argument == "f" else err.argument
    if role not in (model.role, "y", "weights") or err.index is None:
        return CLIError(f"{table.name}: {one_line(err)}")
    checked_before = model.sketch.n  # the chunks before passed the checks
    i = err.index if index is None else int(index[err.index])
    clipping_helps = role == model.role and _validate.clip_range(clip) == (0.0, 1.0)

    def count(c: Chunk) -> np.ndarray:
        values = _present(c, role)
        bad = _bad_count(role, values, clip)
        beyond_clip = _bad_count(role, values, True) if clipping_helps and bad else 0
        return np.array([bad, beyond_clip, values.shape[0]])

    first = count(chunk)
    rest, stopped = _count_rest(chunks, count)
    bad, beyond_clip, checked = (int(v) for v in first + rest)
    checked += checked_before
    where = table.where(chunk.record(i))
    text = (f"{table.name} {where}{_group_of(chunk, i)}, column {table.columns[role]!r}: "
            f"{base_role(role)} = {_value_text(chunk.column(role)[i])}: {_rule(role, clip)} "
            f"({_counted(bad, checked, 'value{s} bad', where, stopped)})")
    if clipping_helps and beyond_clip == 0 and stopped is None:
        text += (f"; pass --clip to clamp {'it' if bad == 1 else f'these {bad:,}'} (all within "
                 f"{_validate.CLIP_TOLERANCE} of [0, 1])")
    else:
        hint = _validate.value_hint(base_role(role), chunk.column(model.role), chunk.y)
        if hint is not None:
            text += f"; {hint}"
    return CLIError(text)


def _missing_error(table: Table, chunk: Chunk, chunks) -> CLIError:
    first = {role: int(np.argmax(mask)) for role, mask in chunk.missing.items()}
    order = list(table.columns)  # the roles in the order given: predictions, labels, weights, groups
    role = min(first, key=lambda r: (first[r], order.index(r)))
    i = first[role]

    def count(c: Chunk) -> np.ndarray:
        mask = c.missing.get(role)
        return np.array([0 if mask is None else int(np.count_nonzero(mask))])

    rest, stopped = _count_rest(chunks, count)
    missing = int((count(chunk) + rest)[0])
    rows = table.rows  # every row read (none were dropped: --dropna is off)
    where = table.where(chunk.record(i))
    return CLIError(f"{table.name} {where}{_group_of(chunk, i)}, column {table.columns[role]!r}: missing value "
                    f"(empty, NA or NaN; {_counted(missing, rows, 'row{s} miss a value there', where, stopped)}); "
                    f"pass --dropna to skip rows with missing values")


# ---------------------------------------------------------------------------------------------------------------
# Answers and how they are shown
# ---------------------------------------------------------------------------------------------------------------

@contextmanager
def collected_warnings(notes: List[str]):
    """The library's warnings, as one-line notes (``--json`` puts them in its output)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for w in caught:
        note = one_line(w.message)
        if issubclass(w.category, ResolutionWarning):
            note += " (here: a larger --resolution, up to 4194304)"
        elif issubclass(w.category, WeightKindWarning):
            note += " (here: --weight-kind frequency or --weight-kind importance)"
        if note not in notes:  # once, though the interval and the test both raise it
            notes.append(note)


def print_warnings(notes: List[str]) -> None:
    for note in notes:
        sys.stderr.write(f"smoothece: warning: {note}\n")


def _rows(n: int) -> str:
    return f"{n:,} row" + ("" if n == 1 else "s")


def _number(x) -> Optional[float]:
    return None if x is None or not math.isfinite(x) else float(x)


def _decimals(value: float) -> int:
    """Decimals that show ``value`` to three significant digits (3 to 8)."""
    if not (math.isfinite(value) and value > 0):
        return 4
    return int(min(8, max(3, 2 - math.floor(math.log10(value)))))


def _with_interval(name: str, value: float, low, high, level, stream, d: Optional[int] = None) -> str:
    d = _decimals(value) if d is None else d
    text = f"{name} = {value:.{d}f}"
    if low is not None and math.isfinite(low):
        text += f" ({level:.0%} CI {low:.{d}f}{dash(stream)}{high:.{d}f})"
    return text


def _seed(args, resampling: bool) -> Optional[int]:
    """The seed of every resampling of a run (bootstrap, test; group i uses seed + i), drawn when not
    given, so that the one seed reported reproduces them all; None without resampling."""
    if not resampling:
        return None
    return _validate.seed(args.seed)


def _metric_name(args) -> str:
    return "smECE" if args.metric == "l1" else f"smECE[{args.metric}]"


def _p_cell(p, n_sim: int) -> str:
    """A p-value in a table cell: ``0.0123``; ``< 0.001`` at the floor of ``n_sim`` simulations
    (:func:`smoothece._util.format_p`); ``-`` when there is none."""
    if p is None or not math.isfinite(p):
        return "-"
    text = format_p(p, n_sim)
    return text[len("p = "):] if text.startswith("p = ") else text[len("p "):]


class Overall:
    """The answers about all rows: smECE (σ*), its interval, the calibration test."""

    def __init__(self, sketch, *, ci: bool, n_boot: int, level: float, test: bool, n_sim: int, seed,
                 label: str = "", weight_kind: Optional[str] = None):
        self.n, self.total_weight = sketch.n, sketch.total_weight
        self.low = self.high = self.p_value = None
        self.n_boot = self.n_sim = 0
        self.level = level if ci else None
        if ci:
            with Status(f"{label}bootstrapping ({n_boot} replicates)"):
                boot = sketch.bootstrap_smece(n_boot=n_boot, seed=seed, level=level, weight_kind=weight_kind)
            self.value, self.sigma = boot.value, boot.sigma
            self.low, self.high, self.n_boot = boot.low, boot.high, boot.n_boot
        else:
            self.value = self.sigma = sketch.smece()
        if test:
            with Status(f"{label}testing calibration ({n_sim} simulations)"):
                result = sketch.calibration_test(n_sim=n_sim, seed=seed, weight_kind=weight_kind)
            self.p_value, self.n_sim = result.p_value, result.n_sim

    def json(self) -> dict:
        return dict(n=self.n, total_weight=float(self.total_weight), smece=float(self.value), sigma=float(self.sigma),
                    ci_low=_number(self.low), ci_high=_number(self.high), level=self.level, n_boot=self.n_boot,
                    p_value=_number(self.p_value), n_sim=self.n_sim)

    def line(self, args, dropped: int, stream) -> str:
        text = _with_interval(_metric_name(args), self.value, self.low, self.high, self.level, stream)
        text += f", n = {self.n:,}"
        if args.weight is not None:
            text += f", total weight = {self.total_weight:.6g}"
        if self.p_value is not None:
            text += f", calibration test {format_p(self.p_value, self.n_sim)} ({self.n_sim} simulations)"
        if dropped:
            text += f" ({_rows(dropped)} with missing values skipped)"
        return f"{text}, {args.file}"


# -- group keys and their order ---------------------------------------------------------------------------------

def _key_texts(keys) -> List[str]:
    """The group keys as text (tables, CSV, dates in JSON): the library's :func:`smoothece.groups.format_keys`
    (dates ISO 8601 at the precision the whole set needs)."""
    from ..groups import format_keys

    return format_keys(keys)


def _json_keys(keys) -> list:
    """Group keys for JSON: integers, booleans, strings and finite numbers as themselves, anything else
    (dates, inf) as :func:`_key_texts` writes it."""
    keys = np.asarray(keys)
    if keys.dtype.kind in "biuU" or (keys.dtype.kind == "f" and np.isfinite(keys).all()):
        return keys.tolist()
    return _key_texts(keys)


def _group_order(result, args) -> np.ndarray:
    """The groups in the library's order (key order: in time for dates), or worst first with --sort smece."""
    return result.order("smece" if getattr(args, "sort", "key") == "smece" else "key")


def _groups_json(result, order) -> list:
    keys = _json_keys(result.keys)
    out = []
    for i in order:
        out.append(dict(key=keys[i], n=int(result.n[i]), total_weight=float(result.total_weight[i]),
                        smece=_number(result.smece[i]), ci_low=_number(result.low[i]), ci_high=_number(result.high[i]),
                        p_value=_number(result.p_value[i]), p_adjusted=_number(result.p_adjusted[i])))
    return out


def _aligned(rows: List[List[str]], left: int = 1) -> str:
    """Rows of cells in columns two spaces apart: the first ``left`` columns flush left, the others right."""
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) if k < left else cell.rjust(w)
                               for k, (cell, w) in enumerate(zip(r, widths))).rstrip() for r in rows)


def _common_decimals(values) -> int:
    """Decimals for a column of smECE values: three significant digits of the smallest positive one."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values) & (values > 0)]
    return _decimals(float(values.min())) if values.size else 4


def _group_header(result, args) -> List[str]:
    header = ["n"] + (["weight"] if args.weight is not None else []) + ["smECE"]
    if result.n_boot:
        header.append(f"{result.level:.0%} CI")
    if result.n_sim:
        header += ["p", "p (BH)"]
    return header


def _group_cells(result, i: int, d: int, args, stream) -> List[str]:
    """A group's cells: rows, (weight), smECE, (interval), (p-value, BH-adjusted)."""
    v = result.smece[i]
    row = [f"{int(result.n[i]):,}"]
    if args.weight is not None:
        row.append(f"{result.total_weight[i]:.6g}")
    row.append(f"{v:.{d}f}" if math.isfinite(v) else "-")
    if result.n_boot:
        row.append(f"{result.low[i]:.{d}f}{dash(stream)}{result.high[i]:.{d}f}" if math.isfinite(v) else "-")
    if result.n_sim:
        row += [_p_cell(p, result.n_sim) for p in (result.p_value[i], result.p_adjusted[i])]
    return row


def _groups_table(result, args, stream, order) -> str:
    """One line per group: key, rows, (weight), smECE, (interval), (p-values)."""
    d = _common_decimals(result.smece)
    keys = _key_texts(result.keys)
    rows = [[args.by] + _group_header(result, args)]
    rows += [[keys[i]] + _group_cells(result, i, d, args, stream) for i in order]
    return _aligned(rows)


def _groups_line(args, count: int, what: str = "") -> str:
    order = ", worst first" if getattr(args, "sort", "key") == "smece" else ""
    return f"by {args.by}: {count:,} group{'s' if count != 1 else ''}{what}{order}"


def _grouped_answers(grouped, args, seed, label: str = ""):
    with Status(f"{label}scoring {len(grouped):,} groups"):
        return grouped.smece_by_group(n_boot=args.n_boot if args.ci else 0, test=args.test, n_sim=args.n_sim,
                                      seed=seed, level=args.level, weight_kind=args.weight_kind)


# -- comparing models (--compare) -------------------------------------------------------------------------------

def check_compare(args, models: int) -> None:
    """``--compare`` needs several --pred columns and replicates; it compares all rows (not per group),
    and its pairs are a second table, which --csv (one table) does not hold."""
    if not getattr(args, "compare", False):
        return
    if models < 2:
        raise usage_error("--compare compares the SmoothECEs of several models: give at least two --pred "
                          "columns (got one)")
    if args.by is not None:
        raise usage_error("--compare does not go with --by: comparing models per group is not supported; drop "
                          "--by, or compare the rows of one group (a file of its own)")
    if getattr(args, "csv", False):
        raise usage_error("--csv writes one table and --compare adds a second (the pairs): use --json, which "
                          "holds the models and the comparison, or drop --compare")
    if args.n_boot == 0:
        raise usage_error("--compare needs bootstrap replicates for its interval and test: --n-boot 1 or more")


class Compared:
    """The comparison of the models on the rows where every one has a prediction: the library's
    :class:`~smoothece.ModelComparison` and the first model against each other one."""

    def __init__(self, reading: Reading, args, seed):
        from ..compare import compare_models

        table, rows = reading.table, reading.shared
        self.names = [m.column for m in reading.models]
        self.n, self.skipped = rows.n, rows.skipped
        if self.n == 0:
            raise CLIError(f"{table.name}: no row has a value in every --pred column ({_rows(rows.skipped)} miss "
                           f"one): there are no rows to compare the models on")
        self.total_weight = float(self.n if rows.w is None else rows.w.sum())
        own: List[str] = []
        with collected_warnings(own), Status(f"comparing {len(self.names)} models ({args.n_boot} paired "
                                             f"bootstrap replicates)"):
            try:
                self.result = compare_models(dict(zip(self.names, rows.f)), rows.y, weights=rows.w,
                                             metric=args.metric, n_boot=args.n_boot, level=args.level, seed=seed,
                                             weight_kind=args.weight_kind, clip=args.clip)
            except InputError as err:  # the rows passed every check: only their weights can sum to zero
                where = (f" (the {_rows(self.n)} where every --pred column has a value)" if self.skipped
                         else "")
                raise CLIError(f"{table.name}: cannot compare the models on the rows{where}: {one_line(err)}") \
                    from None
        self.notes = [f"comparison: {note}" for note in own]
        self.pairs = [self.result.pair(0, k) for k in range(1, len(self.names))]

    def json(self, args) -> dict:
        def pair(c) -> dict:
            out = c.to_dict()
            del out["replicates"]  # n_boot x 2 numbers: the seed reproduces them
            return out

        return dict(method="paired bootstrap", reference=self.names[0], n=self.n, total_weight=self.total_weight,
                    skipped=self.skipped, metric=args.metric, n_boot=self.result.n_boot, level=self.result.level,
                    seed=self.result.seed, pairs=[pair(c) for c in self.pairs],
                    warnings=self.notes)

    def lines(self, args, stream, values) -> List[str]:
        """A line saying what was compared, then one per pair: ``a − b: Δ smECE = v (95% CI lo to hi), p``
        (decimals as the models' table picks them, from ``values`` and the intervals' widths)."""
        fancy = encodable("\u2212\u0394", stream)
        minus, delta = ("\u2212", "\u0394 ") if fancy else ("-", "delta ")
        k = len(self.names)
        head = f"paired comparison on {_rows(self.n)}"
        if self.skipped:
            head += f" ({_rows(self.skipped)} missing a prediction skipped)"
        head += f", {self.result.n_boot} bootstrap replicates, seed {self.result.seed}"
        if k > 2:
            head += f"; p not adjusted for the {k - 1} pairs"
        d = _common_decimals(list(values) + [c.high - c.low for c in self.pairs])
        out = [head]
        for c in self.pairs:
            a, b = c.names
            out.append(f"{a} {minus} {b}: {delta}{_metric_name(args)} = {c.difference:.{d}f} ({c.level:.0%} CI "
                       f"{c.low:.{d}f} to {c.high:.{d}f}), {format_paired_p(c.p_value, c.n_boot)} "
                       f"(equal calibration)")
        return out


# ---------------------------------------------------------------------------------------------------------------
# score
# ---------------------------------------------------------------------------------------------------------------

class Answer:
    """One model's answers: the overall, the groups (with --by), the library's warnings about it."""

    def __init__(self, model: Model, overall: Overall, groups, notes: List[str]):
        self.model, self.overall, self.groups, self.notes = model, overall, groups, notes


def _answers(reading: Reading, args, seed) -> List[Answer]:
    several = len(reading.models) > 1
    out = []
    for model in reading.models:
        notes: List[str] = []
        label = f"{model.column}: " if several else ""
        with collected_warnings(notes):
            overall = Overall(model.sketch, ci=args.ci, n_boot=args.n_boot, level=args.level, test=args.test,
                              n_sim=args.n_sim, seed=seed, label=label, weight_kind=args.weight_kind)
            groups = _grouped_answers(model.grouped, args, seed, label) if args.by is not None else None
        out.append(Answer(model, overall, groups, notes))
    return out


def _record(answer: Answer, args, seed, table_notes: List[str]) -> dict:
    """One model's JSON object (the whole output for one --pred column)."""
    out = dict(file=args.file, **answer.overall.json(), seed=seed, metric=args.metric, dropped=answer.model.dropped,
               warnings=table_notes + answer.notes)
    if answer.groups is not None:
        out.update(by=args.by, ordered=bool(answer.groups.ordered),
                   groups=_groups_json(answer.groups, _group_order(answer.groups, args)))
    return out


def _model_order(answers: List[Answer], args) -> List[Answer]:
    if getattr(args, "sort", "key") != "smece":
        return answers
    return sorted(answers, key=lambda a: -a.overall.value if math.isfinite(a.overall.value) else math.inf)


CSV_COLUMNS = ("model", "n", "total_weight", "smece", "sigma", "ci_low", "ci_high", "level", "n_boot", "p_value",
               "n_sim", "seed", "dropped")
CSV_GROUP_COLUMNS = ("model", "group", "n", "total_weight", "smece", "ci_low", "ci_high", "level", "n_boot",
                     "p_value", "p_adjusted", "n_sim", "seed")


def _write_csv(answers: List[Answer], args, seed) -> None:
    """One row per model, or with --by one row per (model, group); numbers as JSON writes them (shortest
    round-trip form), nothing for a missing one. ``seed`` is the run's (group i resamples with seed + i)."""
    writer = csv.writer(sys.stdout, lineterminator="\n")
    if args.by is None:
        writer.writerow(CSV_COLUMNS)
        for a in _model_order(answers, args):
            j = a.overall.json()
            writer.writerow([a.model.column] + [j[c] for c in CSV_COLUMNS[1:-2]] + [seed, a.model.dropped])
        return
    writer.writerow(CSV_GROUP_COLUMNS)
    rows = []
    for a in answers:
        g = a.groups
        keys = _key_texts(g.keys)
        level = g.level if g.n_boot else None
        for i in range(len(g)):
            rows.append((float(g.smece[i]), [
                a.model.column, keys[i], int(g.n[i]), float(g.total_weight[i]), _number(g.smece[i]),
                _number(g.low[i]), _number(g.high[i]), level, g.n_boot, _number(g.p_value[i]),
                _number(g.p_adjusted[i]), g.n_sim, seed]))
    for _, row in _sorted_rows(rows, args):
        writer.writerow(row)


def _sorted_rows(rows: list, args) -> list:
    """(smECE, row) pairs in the order made (models as given, groups in the library's order), or worst first
    with --sort smece (groups without a value last)."""
    if getattr(args, "sort", "key") != "smece":
        return rows
    return sorted(rows, key=lambda r: -r[0] if math.isfinite(r[0]) else math.inf)


def _skip_notes(answers: List[Answer], table: Table) -> List[str]:
    """Per model, the rows it skipped (--dropna), and how many of them only its own column missed."""
    notes = []
    for a in answers:
        if a.model.dropped:
            own = table.skipped.get(a.model.role, 0)
            notes.append(f"--pred {a.model.column!r}: {_rows(a.model.dropped)} with missing values skipped"
                         + (f" ({own:,} missing a value in this column alone)" if own else ""))
    return notes


def _models_text(answers: List[Answer], args, table: Table, stream) -> List[str]:
    """Several models: a line naming them, a table with a row per model, and with --by a table with a
    row per (model, group)."""
    k = len(answers)
    head = f"{table.name if args.file != '-' else '<stdin>'}: {k} models (--pred), labels {args.label!r}"
    if args.weight is not None:
        head += f", weights {args.weight!r}"
    if args.test:
        head += f", calibration test with {args.n_sim} simulations"
    lines = [head]
    ordered = _model_order(answers, args)
    d = _common_decimals([a.overall.value for a in answers])
    skipped = any(a.model.dropped for a in answers)
    header = ["model", "n"] + (["weight"] if args.weight is not None else []) + [_metric_name(args)]
    if args.ci:
        header.append(f"{args.level:.0%} CI")
    if args.test:
        header.append("p")
    if skipped:
        header.append("skipped")
    rows = [header]
    for a in ordered:
        o = a.overall
        row = [a.model.column, f"{o.n:,}"]
        if args.weight is not None:
            row.append(f"{o.total_weight:.6g}")
        row.append(f"{o.value:.{d}f}")
        if args.ci:
            row.append(f"{o.low:.{d}f}{dash(stream)}{o.high:.{d}f}" if o.low is not None and math.isfinite(o.low)
                       else "-")
        if args.test:
            row.append(_p_cell(o.p_value, o.n_sim))
        if skipped:
            row.append(f"{a.model.dropped:,}")
        rows.append(row)
    lines.append(_aligned(rows))
    if skipped:
        if any(table.skipped.values()):
            lines.append("skipped: rows with a missing value (--dropna), each model its own: the models are "
                         "scored on different rows")
        else:
            lines.append("skipped: rows with a missing value (--dropna), the same for every model")
    if args.by is None:
        return lines
    counts = {len(a.groups) for a in answers}
    what = " per model" if len(counts) == 1 else " in all, per model " + ", ".join(
        f"{a.model.column} {len(a.groups):,}" for a in answers)
    total = counts.pop() if len(counts) == 1 else sum(len(a.groups) for a in answers)
    line = _groups_line(args, total, what)
    if args.test:
        line += "; p (BH): adjusted across each model's groups"
    lines.append(line)
    d = _common_decimals(np.concatenate([np.asarray(a.groups.smece, dtype=float) for a in answers]))
    first = answers[0].groups
    rows = []
    for a in answers:
        keys = _key_texts(a.groups.keys)
        for i in range(len(a.groups)):
            rows.append((float(a.groups.smece[i]),
                         [a.model.column, keys[i]] + _group_cells(a.groups, i, d, args, stream)))
    lines.append(_aligned([["model", args.by] + _group_header(first, args)]
                          + [row for _, row in _sorted_rows(rows, args)], left=2))
    return lines


def cmd_score(args) -> int:
    compare = getattr(args, "compare", False)
    check_compare(args, len(pred_columns(args)))
    table = open_args_table(args)
    reading = read_table(table, metric=args.metric, clip=args.clip, resolution=args.resolution,
                         grouped=args.by is not None, shared=compare)
    seed = _seed(args, args.ci or args.test or compare)
    answers = _answers(reading, args, seed)
    table_notes = list(table.warnings)
    compared = Compared(reading, args, seed) if compare else None
    several = len(answers) > 1
    if getattr(args, "json", False):
        if several:  # a list: per --pred column the object that column alone gives, with "pred" first
            records = [dict(pred=a.model.column, **_record(a, args, seed, table_notes))
                       for a in _model_order(answers, args)]
            print(json.dumps(records if compared is None else dict(models=records, comparison=compared.json(args))))
        else:
            print(json.dumps(_record(answers[0], args, seed, table_notes)))
        return EXIT_OK
    notes = table_notes + [f"{a.model.column}: {n}" if several else n for a in answers for n in a.notes]
    if getattr(args, "csv", False):
        print_warnings(notes + (_skip_notes(answers, table) if args.by is not None else []))
        _write_csv(answers, args, seed)
        return EXIT_OK
    print_warnings(notes + (compared.notes if compared is not None else []))
    if several:
        lines = _models_text(answers, args, table, sys.stdout)
        if compared is not None:
            lines += compared.lines(args, sys.stdout, [a.overall.value for a in answers])
        print("\n".join(lines))
        return EXIT_OK
    a = answers[0]
    print(a.overall.line(args, a.model.dropped, sys.stdout))
    if a.groups is not None:
        print(_groups_line(args, len(a.groups)))
        print(_groups_table(a.groups, args, sys.stdout, _group_order(a.groups, args)))
    return EXIT_OK


# ---------------------------------------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------------------------------------

def check_output(out: str) -> str:
    ext = os.path.splitext(out)[1].lower()
    if ext not in PLOT_SUFFIXES:
        raise usage_error(f"cannot tell the image format of {out!r}: the output file must end in "
                          + ", ".join(PLOT_SUFFIXES))
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        raise usage_error(f"cannot write {out}: the directory {parent} does not exist")
    return ext


def _figure_class():
    """Agg, set in this process only (the library itself never picks a backend)."""
    import matplotlib

    if "matplotlib.pyplot" not in sys.modules:  # a caller's pyplot session keeps its backend
        matplotlib.use("Agg")
    from matplotlib.figure import Figure

    return Figure


def _pixels(size, dpi: int) -> tuple:
    return int(round(size[0] * dpi)), int(round(size[1] * dpi))


def new_figure(size, out: str, dpi: int):
    """A figure of ``size`` inches; a PNG too large to draw is refused before any work."""
    if out.lower().endswith(".png"):
        width, height = _pixels(size, dpi)
        if max(width, height) > _MAX_SIDE:
            most = int(_MAX_SIDE / max(size))
            raise usage_error(f"--dpi {dpi} makes a {width:,} x {height:,} pixel image; a PNG can be drawn at most "
                              f"{_MAX_SIDE:,} pixels a side: use --dpi {most} or less")
    return _figure_class()(figsize=size, layout="constrained")


def _new_file_mode(out: str) -> int:
    """The permissions ``out`` has, or those a new file gets (the temporary file is private)."""
    try:
        return stat.S_IMODE(os.stat(out).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def save_figure(fig, out: str, dpi: int) -> None:
    """Writes the figure to a temporary file beside ``out`` and renames it, so
    that a failed write (a full disk, a drawing error) leaves a file already
    there untouched."""
    directory = os.path.dirname(os.path.abspath(out))
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(out)}.", suffix=".part")
    except OSError as err:
        raise CLIError(f"cannot write {out}: {one_line(err.strerror or err)}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fig.savefig(fh, format=os.path.splitext(out)[1][1:].lower(), dpi=dpi)
        os.chmod(tmp, _new_file_mode(out))
        os.replace(tmp, out)
    except BaseException as err:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(err, OSError):
            raise CLIError(f"cannot write {out}: {one_line(err.strerror or err)}") from None
        if isinstance(err, MemoryError):
            width, height = _pixels(fig.get_size_inches(), dpi)
            raise CLIError(f"not enough memory to draw {out} at {width:,} x {height:,} pixels (--dpi {dpi}): use a "
                           f"lower --dpi") from None
        if isinstance(err, ValueError):  # a title matplotlib cannot typeset, ...
            raise CLIError(f"cannot draw {out}: {one_line(err)}") from None
        raise


def _mathtext_safe(text: str) -> str:
    return text.replace("$", r"\$")  # a file or column name is not mathtext


def _default_title(args, models: List[Model]) -> str:
    columns = ", ".join(m.column for m in models)
    if len(models) > 1 and len(columns) > 60:
        columns = f"{len(models)} models"
    title = f"{os.path.basename(args.file) if args.file != '-' else '<stdin>'}: {columns}"
    if args.by is not None:
        title += f" by {args.by}"
    sizes = {m.sketch.n for m in models}
    if len(sizes) == 1:  # models scored on different rows (--dropna) have no one n
        title += f", n = {sizes.pop():,}"
    return _mathtext_safe(title)


#: Models one figure overlays at most: one colour each from matplotlib's default cycle.
MAX_OVERLAID = 10


def _check_plot_models(args) -> int:
    """The number of --pred columns; several are drawn overlaid in one diagram, which the options that
    add a panel or a band per model (--binned, --consistency) or draw groups (--by) do not go with."""
    k = len(pred_columns(args))
    if k == 1:
        return k
    for option, given in (("--by", args.by is not None), ("--binned", args.binned),
                          ("--consistency", args.consistency)):
        if given:
            raise usage_error(f"{option} draws one model; with {k} --pred columns plot overlays their smoothed "
                              f"diagrams in one figure: drop {option}, or plot one --pred column at a time")
    if k > MAX_OVERLAID:
        raise usage_error(f"plot overlays at most {MAX_OVERLAID} --pred columns (one colour each), got {k}; "
                          f"score compares any number")
    return k


def _diagram_line(args, diagram, test, dropped: int) -> str:
    """smECE (interval), n, (total weight), (rows skipped), (calibration test) of a drawn diagram."""
    low = diagram.smece_low if args.n_boot else None
    text = _with_interval(_metric_name(args), diagram.smece, low, diagram.smece_high, diagram.level, sys.stdout)
    text += f", n = {diagram.n:,}"
    if args.weight is not None:
        text += f", total weight = {diagram.total_weight:.6g}"
    if dropped:
        text += f" ({_rows(dropped)} with missing values skipped)"
    if test is not None:
        text += f", calibration test {format_p(test.p_value, test.n_sim)} ({test.n_sim} simulations)"
    return text


def _legend_label(column: str) -> str:
    """A column name as a legend label: not mathtext, and shown even when it starts with "_" (which
    matplotlib's legend would leave out)."""
    return _mathtext_safe(" " + column if column.startswith("_") else column)


def _plot_models(args, table: Table, reading: Reading, seed, notes: List[str], title: str) -> int:
    """Several models' smoothed diagrams (curve, band, annotation) overlaid, one colour each."""
    from ..plotting import _draw_comparison

    fig = new_figure((6.2, 6.2), args.output, args.dpi)
    ax = fig.subplots()
    lines, diagrams = [], []
    for model in reading.models:
        own: List[str] = []
        with collected_warnings(own), Status(f"{model.column}: computing the diagram ({args.n_boot} bootstrap "
                                             f"replicates)"):
            diagram = model.sketch.reliability_diagram(n_boot=args.n_boot, seed=seed, n_sim=args.n_sim,
                                                       level=args.level, weight_kind=args.weight_kind)
            test = (model.sketch.calibration_test(n_sim=args.n_sim, seed=seed, weight_kind=args.weight_kind)
                    if args.test else None)
        notes += [f"{model.column}: {note}" for note in own]
        diagrams.append(diagram)
        lines.append(f"{model.column}: {_diagram_line(args, diagram, test, model.dropped)}")
    if args.compare:
        compared = Compared(reading, args, seed)
        notes += compared.notes
        lines += compared.lines(args, sys.stdout, [d.smece for d in diagrams])
        # The legend names each model with its SmoothECE; the free corner holds the differences.
        _draw_comparison(ax, diagrams, compared.names, compared.pairs)
    else:
        for k, (model, diagram) in enumerate(zip(reading.models, diagrams)):
            diagram.plot(ax=ax, color=f"C{k}", label=_legend_label(model.column))
        ax.legend(loc="lower right", fontsize="small", framealpha=0.85)
    ax.set_title("Smoothed reliability diagrams" + (f" ({args.metric} metric)" if args.metric != "l1" else ""),
                 fontsize="medium")
    if title:
        fig.suptitle(title)
    save_figure(fig, args.output, args.dpi)
    print_warnings(notes)
    print("\n".join(lines))
    if any(table.skipped.values()):
        print("skipped: rows with a missing value (--dropna), each model its own: the models are drawn from "
              "different rows")
    print(f"{args.file} -> {args.output}")
    return EXIT_OK


def cmd_plot(args) -> int:
    from ..plotting import plot_binned_diagram

    check_output(args.output)
    several = _check_plot_models(args) > 1
    check_compare(args, len(pred_columns(args)))
    if args.by is not None and (args.binned or args.consistency):
        raise usage_error("--binned and --consistency draw the diagram of all rows; they do not go with --by")
    table = open_args_table(args)
    reading = read_table(table, metric=args.metric, clip=args.clip, resolution=args.resolution,
                         grouped=args.by is not None, collect=args.binned, shared=args.compare)
    seed = _seed(args, args.n_boot > 0 or args.test or args.consistency)
    notes = list(table.warnings)
    title = args.title if args.title is not None else _default_title(args, reading.models)
    if several:
        return _plot_models(args, table, reading, seed, notes, title)
    if args.by is not None:
        with collected_warnings(notes):
            overall = Overall(reading.sketch, ci=False, n_boot=0, level=args.level, test=False, n_sim=0, seed=seed)
            with Status(f"scoring {len(reading.grouped):,} groups"):
                result = reading.grouped.smece_by_group(n_boot=args.n_boot, test=args.test, n_sim=args.n_sim,
                                                        seed=seed, level=args.level, weight_kind=args.weight_kind)
        rows = min(len(result), 40)
        fig = new_figure((7.5, 4.2) if result.ordered else (6.4, 1.6 + 0.26 * rows), args.output, args.dpi)
        ax = result.plot(ax=fig.subplots())
        (ax.set_xlabel if result.ordered else ax.set_ylabel)(args.by)
        if title:
            fig.suptitle(title)
        save_figure(fig, args.output, args.dpi)
        print_warnings(notes)
        worst = result.order("smece")[0]
        print(f"{overall.line(args, table.dropped, sys.stdout)}; {len(result):,} groups by {args.by}, worst "
              f"{_key_text(result.keys[worst])} (smECE {result.smece[worst]:.{_decimals(result.smece[worst])}f}) "
              f"-> {args.output}")
        return EXIT_OK
    panels = 2 if args.binned else 1
    fig = new_figure((5.2 * panels, 5.4), args.output, args.dpi)
    with collected_warnings(notes), Status(f"computing the diagram ({args.n_boot} bootstrap replicates)"):
        diagram = reading.sketch.reliability_diagram(n_boot=args.n_boot, seed=seed, consistency=args.consistency,
                                                     n_sim=args.n_sim, level=args.level, weight_kind=args.weight_kind)
        test = (reading.sketch.calibration_test(n_sim=args.n_sim, seed=seed, weight_kind=args.weight_kind)
                if args.test else None)
    axes = fig.subplots(1, panels, squeeze=False)[0]
    diagram.plot(ax=axes[0])
    axes[0].set_title("Smoothed reliability diagram", fontsize="medium")
    if args.binned:
        plot_binned_diagram(reading.f, reading.y, ax=axes[1], n_bins=args.n_bins, weights=reading.w, clip=args.clip)
        axes[1].set_title(f"Binned ({args.n_bins} equal-width bins)", fontsize="medium")
    if title:
        fig.suptitle(title)
    save_figure(fig, args.output, args.dpi)
    print_warnings(notes)
    print(f"{_diagram_line(args, diagram, test, table.dropped)}, {args.file} -> {args.output}")
    return EXIT_OK


# ---------------------------------------------------------------------------------------------------------------
# demo
# ---------------------------------------------------------------------------------------------------------------

#: The demo's model, in words (help and output say the same).
DEMO_MODEL = "f ~ Beta(2, 2), y ~ Bernoulli(expit(1.3 logit f))"
DEMO_VERDICT = ("underconfident: the outcomes are more extreme than the predictions, so it predicts too high "
                "below 1/2 and too low above it, and its reliability curve crosses the diagonal")


def demo_data(n: int = 20_000, seed: int = 0):
    """The demo's model: f ~ Beta(2, 2), y ~ Bernoulli(expit(1.3·logit f)).

    Its true frequency pulls away from 1/2 faster than its predictions do
    (underconfident): below the diagonal for f < 1/2, above it for f > 1/2.
    Miscalibration of both signs cancels under a wide kernel, so smECE_σ falls
    visibly with σ, and σ* is where it meets σ."""
    rng = np.random.default_rng(seed)
    f = rng.beta(2.0, 2.0, size=n)
    logit = np.log(f) - np.log1p(-f)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-1.3 * logit))).astype(np.int8)
    return f, y


def cmd_demo(args) -> int:
    import smoothece
    from ..plotting import plot_binned_diagram

    check_output(args.output)
    fig = new_figure((10.4, 5.4), args.output, args.dpi)
    f, y = demo_data(args.n, args.seed)
    notes: List[str] = []
    with collected_warnings(notes), Status("computing the diagram and the calibration test"):
        diagram = smoothece.reliability_diagram(f, y, n_boot=args.n_boot, seed=args.seed, consistency=True,
                                                n_sim=args.n_boot)
        test = smoothece.calibration_test(f, y, n_sim=args.n_boot, seed=args.seed)
        by_sigma = {s: smoothece.smece_sigma(f, y, s) for s in (0.01, 0.05, 0.2)}
    ax_smooth, ax_binned = fig.subplots(1, 2)
    diagram.plot(ax=ax_smooth)
    ax_smooth.set_title("Smoothed reliability diagram", fontsize="medium")
    plot_binned_diagram(f, y, ax=ax_binned, n_bins=15)
    ax_binned.set_title("Binned (15 equal-width bins)", fontsize="medium")
    fig.suptitle(f"smoothece demo: {args.n:,} predictions, {DEMO_MODEL}")
    save_figure(fig, args.output, args.dpi)
    verdict = ("miscalibrated" if test.p_value < 0.05 else "consistent with calibration") + " at the 5% level"
    if args.json:
        print(json.dumps(dict(n=int(f.size), smece=diagram.smece, sigma=diagram.sigma,
                              ci_low=_number(diagram.smece_low), ci_high=_number(diagram.smece_high),
                              level=diagram.level, n_boot=diagram.n_boot, p_value=test.p_value, n_sim=test.n_sim,
                              smece_sigma={str(s): v for s, v in by_sigma.items()}, seed=args.seed,
                              output=args.output, warnings=notes)))
        return EXIT_OK
    print_warnings(notes)
    print(f"synthetic model: {args.n:,} predictions, {DEMO_MODEL} ({DEMO_VERDICT})")
    print(_with_interval("smECE", diagram.smece, diagram.smece_low, diagram.smece_high, diagram.level,
                         sys.stdout) + f", n = {f.size:,}")
    print("smECE at a fixed bandwidth: " + ", ".join(f"{v:.4f} at sigma = {s:g}" for s, v in by_sigma.items())
          + " (the SmoothECE is the sigma where the two meet)")
    print(f"calibration test: {format_p(test.p_value, test.n_sim)} ({test.n_sim} simulations under perfect "
          f"calibration; null median smECE {test.null_quantiles[0.5]:.3g}): {verdict}")
    print(f"wrote {args.output}")
    return EXIT_OK
