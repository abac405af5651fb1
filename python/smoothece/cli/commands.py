"""The commands: ``score``, ``plot`` and ``demo``.

A file is streamed into a :class:`~smoothece.CalibrationSketch` in either
metric, so memory does not grow with the file; ``--by`` keeps the rows by
group (about 17 bytes a row, answered at the end as :func:`smece_by_group`
answers arrays), and ``plot --binned`` keeps the columns.
When a value is refused, the error names the file's line (and group), and the
rest of the file is read, checks only, to say how many values are bad.
"""

from __future__ import annotations

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
from .._errors import InputError, ResolutionWarning
from .errors import EXIT_OK, CLIError, usage_error
from .progress import Status, dash, one_line
from .tables import DEFAULT_CHUNKSIZE, ROLES, Chunk, Table, open_table

PLOT_SUFFIXES = (".png", ".svg", ".pdf")
_MAX_SIDE = (1 << 16) - 1  # Agg draws images of less than 2^16 pixels a side

_RULES = {"y": "labels must be 0 or 1", "weights": "weights must be finite and non-negative"}


# ---------------------------------------------------------------------------------------------------------------
# Reading a table into sketches
# ---------------------------------------------------------------------------------------------------------------

class Reading:
    """What :func:`read_table` read: the sketch of all rows, the rows by group
    (with ``--by``), the table (its name, dropped rows) and, when collected,
    the columns ``f``, ``y``, ``w``."""

    def __init__(self, table: Table, sketch, grouped, parts: list):
        self.table, self.sketch, self.grouped = table, sketch, grouped
        self.f = self.y = self.w = None
        if parts:
            self.f = np.concatenate([p[0] for p in parts])
            self.y = np.concatenate([p[1] for p in parts])
            self.w = None if parts[0][2] is None else np.concatenate([p[2] for p in parts])


def open_args_table(args) -> Table:
    columns = {"f": args.pred, "y": args.label}
    if args.weight is not None:
        columns["weights"] = args.weight
    if args.by is not None:
        columns["groups"] = args.by
    chunksize = args.chunksize or DEFAULT_CHUNKSIZE
    return open_table(args.file, columns, fmt=args.format, chunksize=chunksize, dropna=args.dropna)


def read_table(table: Table, *, metric: str = "l1", clip=False, resolution: Optional[int] = None,
               grouped: bool = False, collect: bool = False) -> Reading:
    """Streams the table into a sketch, which checks every value (and with ``grouped`` keeps the rows by
    group: answering them once at the end costs less, in time and memory, than a sketch per group)."""
    from ..groups import GroupedRows
    from ..sketch import DEFAULT_RESOLUTION, CalibrationSketch

    resolution = resolution or DEFAULT_RESOLUTION
    sketch = CalibrationSketch(resolution, metric)
    groups = GroupedRows(metric, clip) if grouped else None
    parts = []
    chunks = read_ahead(table.chunks())
    for chunk in chunks:
        if chunk.missing:
            raise _missing_error(table, chunk, chunks)
        try:
            sketch.update(chunk.f, chunk.y, chunk.w, clip=clip)
            if groups is not None:
                groups.update(chunk.f, chunk.y, chunk.groups, chunk.w)
        except InputError as err:
            raise _value_error(table, chunk, err, chunks, clip, sketch.n) from None
        if collect:
            parts.append((chunk.f, chunk.y, chunk.w))
    if sketch.n == 0:
        extra = f" ({_rows(table.dropped)} with missing values skipped)" if table.dropped else ""
        raise CLIError(f"{table.name} has no data rows{extra}")
    if not sketch.total_weight > 0:
        raise CLIError(f"{table.name}: the weights in column {table.columns['weights']!r} sum to zero; at least one "
                       f"must be positive")
    return Reading(table, sketch, groups, parts)


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
    """The column's values in the rows without missing values (those are reported as missing)."""
    values = chunk.column(role)
    if chunk.missing:
        values = values[~np.logical_or.reduce(list(chunk.missing.values()))]
    return values


def _bad_count(role: str, values: np.ndarray, clip) -> int:
    """How many of a column's values the library refuses (its own check, on that column alone)."""
    from ..sketch import CalibrationSketch

    n = values.shape[0]
    f = values if role == "f" else np.broadcast_to(0.5, (n,))
    y = values if role == "y" else np.broadcast_to(np.int8(0), (n,))
    w = values if role == "weights" else None
    try:
        CalibrationSketch(256).update(f, y, w, clip=clip)
    except InputError as err:
        return err.count
    return 0


def _rule(role: str, clip) -> str:
    if role != "f":
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
    return repr(key.item() if isinstance(key, np.generic) and not isinstance(key, np.datetime64) else str(key))


def _group_of(chunk: Chunk, i: int) -> str:
    if chunk.groups is None or ("groups" in chunk.missing and chunk.missing["groups"][i]):
        return ""
    return f" (group {_key_text(chunk.groups[i])})"


def _value_error(table: Table, chunk: Chunk, err: InputError, chunks, clip, checked_before: int) -> CLIError:
    """The library's refusal of a value, placed in the file: line, group, column, how many values of
    the whole file are bad, and the library's hints ("--clip" only when it would accept them all)."""
    role = err.argument
    if role not in ("f", "y", "weights") or err.index is None:
        return CLIError(f"{table.name}: {one_line(err)}")
    clipping_helps = role == "f" and _validate.clip_range(clip) == (0.0, 1.0)

    def count(c: Chunk) -> np.ndarray:
        values = _present(c, role)
        bad = _bad_count(role, values, clip)
        beyond_clip = _bad_count(role, values, True) if clipping_helps and bad else 0
        return np.array([bad, beyond_clip, values.shape[0]])

    first = count(chunk)
    rest, stopped = _count_rest(chunks, count)
    bad, beyond_clip, checked = (int(v) for v in first + rest)
    checked += checked_before  # the chunks before passed the checks
    where = table.where(chunk.record(err.index))
    text = (f"{table.name} {where}{_group_of(chunk, err.index)}, column {table.columns[role]!r}: "
            f"{role} = {_value_text(chunk.column(role)[err.index])}: {_rule(role, clip)} "
            f"({_counted(bad, checked, 'value{s} bad', where, stopped)})")
    if clipping_helps and beyond_clip == 0 and stopped is None:
        text += (f"; pass --clip to clamp {'it' if bad == 1 else f'these {bad:,}'} (all within "
                 f"{_validate.CLIP_TOLERANCE} of [0, 1])")
    else:
        hint = _validate.value_hint(role, chunk.f, chunk.y)
        if hint is not None:
            text += f"; {hint}"
    return CLIError(text)


def _missing_error(table: Table, chunk: Chunk, chunks) -> CLIError:
    first = {role: int(np.argmax(mask)) for role, mask in chunk.missing.items()}
    role = min(first, key=lambda r: (first[r], ROLES.index(r)))
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


class Overall:
    """The answers about all rows: smECE (σ*), its interval, the calibration test."""

    def __init__(self, sketch, *, ci: bool, n_boot: int, level: float, test: bool, n_sim: int, seed):
        self.n, self.total_weight = sketch.n, sketch.total_weight
        self.low = self.high = self.p_value = None
        self.n_boot = self.n_sim = 0
        self.level = level if ci else None
        if ci:
            with Status(f"bootstrapping ({n_boot} replicates)"):
                boot = sketch.bootstrap_smece(n_boot=n_boot, seed=seed, level=level)
            self.value, self.sigma = boot.value, boot.sigma
            self.low, self.high, self.n_boot = boot.low, boot.high, boot.n_boot
        else:
            self.value = self.sigma = sketch.smece()
        if test:
            with Status(f"testing calibration ({n_sim} simulations)"):
                result = sketch.calibration_test(n_sim=n_sim, seed=seed)
            self.p_value, self.n_sim = result.p_value, result.n_sim

    def json(self) -> dict:
        return dict(n=self.n, total_weight=float(self.total_weight), smece=float(self.value), sigma=float(self.sigma),
                    ci_low=_number(self.low), ci_high=_number(self.high), level=self.level, n_boot=self.n_boot,
                    p_value=_number(self.p_value), n_sim=self.n_sim)

    def line(self, args, dropped: int, stream) -> str:
        name = "smECE" if args.metric == "l1" else f"smECE[{args.metric}]"
        text = _with_interval(name, self.value, self.low, self.high, self.level, stream) + f", n = {self.n:,}"
        if args.weight is not None:
            text += f", total weight = {self.total_weight:.6g}"
        if self.p_value is not None:
            text += f", calibration test p = {self.p_value:.3g} ({self.n_sim} simulations)"
        if dropped:
            text += f" ({_rows(dropped)} with missing values skipped)"
        return f"{text}, {args.file}"


def _json_key(key):
    if isinstance(key, np.datetime64):
        return str(key)
    return key.item() if isinstance(key, np.generic) else key


def _worst_first(result) -> np.ndarray:
    return np.argsort(-np.nan_to_num(np.asarray(result.smece, dtype=float), nan=-1.0), kind="stable")


def _groups_json(result) -> list:
    out = []
    for i in _worst_first(result):
        out.append(dict(key=_json_key(result.keys[i]), n=int(result.n[i]), total_weight=float(result.total_weight[i]),
                        smece=_number(result.smece[i]), ci_low=_number(result.low[i]), ci_high=_number(result.high[i]),
                        p_value=_number(result.p_value[i]), p_adjusted=_number(result.p_adjusted[i])))
    return out


def _groups_table(result, args, stream) -> str:
    """One line per group, worst first: key, rows, (weight), smECE, (interval), (p-values)."""
    order = _worst_first(result)
    finite = np.asarray(result.smece, dtype=float)
    finite = finite[np.isfinite(finite) & (finite > 0)]
    d = _decimals(float(finite.min())) if finite.size else 4
    header = [args.by, "n"] + (["weight"] if args.weight is not None else []) + ["smECE"]
    if result.n_boot:
        header.append(f"{result.level:.0%} CI")
    if result.n_sim:
        header += ["p", "p (BH)"]
    rows = [header]
    for i in order:
        v = result.smece[i]
        row = [str(_json_key(result.keys[i])), f"{int(result.n[i]):,}"]
        if args.weight is not None:
            row.append(f"{result.total_weight[i]:.6g}")
        row.append(f"{v:.{d}f}" if math.isfinite(v) else "-")
        if result.n_boot:
            row.append(f"{result.low[i]:.{d}f}{dash(stream)}{result.high[i]:.{d}f}" if math.isfinite(v) else "-")
        if result.n_sim:
            row += [f"{p:.3g}" if math.isfinite(p) else "-" for p in (result.p_value[i], result.p_adjusted[i])]
        rows.append(row)
    widths = [max(len(r[k]) for r in rows) for k in range(len(header))]
    lines = ["  ".join(cell.ljust(w) if k == 0 else cell.rjust(w) for k, (cell, w) in enumerate(zip(r, widths)))
             .rstrip() for r in rows]
    return "\n".join(lines)


def _grouped_answers(reading: Reading, args, seed):
    with Status(f"scoring {len(reading.grouped):,} groups"):
        return reading.grouped.smece_by_group(n_boot=args.n_boot if args.ci else 0, test=args.test,
                                              n_sim=args.n_sim, seed=seed, level=args.level)


# ---------------------------------------------------------------------------------------------------------------
# score
# ---------------------------------------------------------------------------------------------------------------

def cmd_score(args) -> int:
    table = open_args_table(args)
    reading = read_table(table, metric=args.metric, clip=args.clip, resolution=args.resolution,
                         grouped=args.by is not None)
    seed = _seed(args, args.ci or args.test)
    notes = list(table.warnings)
    with collected_warnings(notes):
        overall = Overall(reading.sketch, ci=args.ci, n_boot=args.n_boot, level=args.level, test=args.test,
                          n_sim=args.n_sim, seed=seed)
        groups = _grouped_answers(reading, args, seed) if args.by is not None else None
    if args.json:
        out = dict(file=args.file, **overall.json(), seed=seed, metric=args.metric, dropped=table.dropped,
                   warnings=notes)
        if groups is not None:
            out.update(by=args.by, ordered=bool(groups.ordered), groups=_groups_json(groups))
        print(json.dumps(out))
        return EXIT_OK
    print_warnings(notes)
    print(overall.line(args, table.dropped, sys.stdout))
    if groups is not None:
        print(f"by {args.by}: {len(groups):,} group{'s' if len(groups) != 1 else ''}, worst first")
        print(_groups_table(groups, args, sys.stdout))
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


def _default_title(args, n: int) -> str:
    title = f"{os.path.basename(args.file) if args.file != '-' else '<stdin>'}: {args.pred}"
    if args.by is not None:
        title += f" by {args.by}"
    return (title + f", n = {n:,}").replace("$", r"\$")  # a file name is not mathtext


def cmd_plot(args) -> int:
    from ..plotting import plot_binned_diagram

    check_output(args.output)
    if args.by is not None and (args.binned or args.consistency):
        raise usage_error("--binned and --consistency draw the diagram of all rows; they do not go with --by")
    table = open_args_table(args)
    reading = read_table(table, metric=args.metric, clip=args.clip, resolution=args.resolution,
                         grouped=args.by is not None, collect=args.binned)
    seed = _seed(args, args.n_boot > 0 or args.test or args.consistency)
    notes = list(table.warnings)
    title = args.title if args.title is not None else _default_title(args, reading.sketch.n)
    if args.by is not None:
        with collected_warnings(notes):
            overall = Overall(reading.sketch, ci=False, n_boot=0, level=args.level, test=False, n_sim=0, seed=seed)
            with Status(f"scoring {len(reading.grouped):,} groups"):
                result = reading.grouped.smece_by_group(n_boot=args.n_boot, test=args.test, n_sim=args.n_sim,
                                                        seed=seed, level=args.level)
        rows = min(len(result), 40)
        fig = new_figure((7.5, 4.2) if result.ordered else (6.4, 1.6 + 0.26 * rows), args.output, args.dpi)
        ax = result.plot(ax=fig.subplots())
        (ax.set_xlabel if result.ordered else ax.set_ylabel)(args.by)
        if title:
            fig.suptitle(title)
        save_figure(fig, args.output, args.dpi)
        print_warnings(notes)
        worst = _worst_first(result)[0]
        print(f"{overall.line(args, table.dropped, sys.stdout)}; {len(result):,} groups by {args.by}, worst "
              f"{_key_text(result.keys[worst])} (smECE {result.smece[worst]:.{_decimals(result.smece[worst])}f}) "
              f"-> {args.output}")
        return EXIT_OK
    panels = 2 if args.binned else 1
    fig = new_figure((5.2 * panels, 5.4), args.output, args.dpi)
    with collected_warnings(notes), Status(f"computing the diagram ({args.n_boot} bootstrap replicates)"):
        diagram = reading.sketch.reliability_diagram(n_boot=args.n_boot, seed=seed, consistency=args.consistency,
                                                     n_sim=args.n_sim, level=args.level)
        test = reading.sketch.calibration_test(n_sim=args.n_sim, seed=seed) if args.test else None
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
    name = "smECE" if args.metric == "l1" else f"smECE[{args.metric}]"
    low = diagram.smece_low if args.n_boot else None
    text = _with_interval(name, diagram.smece, low, diagram.smece_high, diagram.level, sys.stdout)
    text += f", n = {diagram.n:,}"
    if args.weight is not None:
        text += f", total weight = {diagram.total_weight:.6g}"
    if table.dropped:
        text += f" ({_rows(table.dropped)} with missing values skipped)"
    if test is not None:
        text += f", calibration test p = {test.p_value:.3g} ({test.n_sim} simulations)"
    print(f"{text}, {args.file} -> {args.output}")
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
    print(f"calibration test: p = {test.p_value:.3g} ({test.n_sim} simulations under perfect calibration; "
          f"null median smECE {test.null_quantiles[0.5]:.3g}): {verdict}")
    print(f"wrote {args.output}")
    return EXIT_OK
