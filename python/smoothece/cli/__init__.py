"""The ``smoothece`` command line: score a file of predictions, draw its diagram.

::

    smoothece demo                                   # a synthetic miscalibrated model
    smoothece score preds.csv --pred p --label y --ci
    smoothece score preds.csv --pred p --label y --by region --test
    smoothece score preds.csv --pred old --pred new --label y --ci --csv
    smoothece score preds.csv --pred old --pred new --label y --compare
    cat preds.csv | smoothece score - --pred p --label y --json
    smoothece plot preds.parquet --pred p --label y -o diagram.png --binned

Files are CSV (``.csv``, ``.tsv``, optionally gzipped; ``-`` reads standard
input) or Parquet, read with pyarrow. They are streamed in chunks into
sketches, so a file larger than memory can be scored, in either metric and
by group (``--compare`` keeps the columns: memory grows with the file).

Exit status: 0 on success, 1 when the data cannot be scored (bad or missing
values, an empty or unreadable file), 2 when the command line is wrong
(options, file name or format, column names). Errors are one line on
stderr, ``smoothece: error: ...``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import textwrap
from typing import Optional, Sequence

from .._errors import ResolutionError
from .._validate import MAX_BINS, MAX_COUNT, MAX_SEED
from .commands import cmd_demo, cmd_plot, cmd_score
from .errors import EXIT_DATA, EXIT_OK, EXIT_USAGE, CLIError
from .progress import one_line
from .tables import DEFAULT_CHUNKSIZE

__all__ = ["main", "build_parser", "EXIT_OK", "EXIT_DATA", "EXIT_USAGE"]


class _Parser(argparse.ArgumentParser):
    """argparse, with errors on one line: ``smoothece: error: ...`` (exit 2)."""

    def error(self, message):  # noqa: D102
        sys.stderr.write(f"smoothece: error: {one_line(message)} (see '{self.prog} --help')\n")
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
# Replicate counts and seeds the library takes (beyond them: an internal error, not a usage one).
_replicates = _arg_type(int, lambda v: 1 <= v <= MAX_COUNT, f"an integer from 1 to {MAX_COUNT:,}")
_replicates_or_none = _arg_type(int, lambda v: 0 <= v <= MAX_COUNT, f"an integer from 0 to {MAX_COUNT:,}")
_seed = _arg_type(int, lambda v: 0 <= v <= MAX_SEED, "an integer from 0 to 2**64 - 1")
_demo_rows = _arg_type(int, lambda v: 1 <= v <= 10**9, "an integer from 1 to 1,000,000,000")
_bins = _arg_type(int, lambda v: 1 <= v <= MAX_BINS, f"an integer from 1 to {MAX_BINS:,}")
_level = _arg_type(float, lambda v: 0.0 < v < 1.0, "a number in (0, 1)")
_tolerance = _arg_type(float, lambda v: v >= 0.0 and math.isfinite(v), "a non-negative number")


def _resolution(text: str) -> int:
    v = _positive_int(text)
    if v & (v - 1) or not 256 <= v <= 1 << 22:
        raise argparse.ArgumentTypeError(f"expected a power of two from 256 to 4194304, got {text!r}")
    return v


_EPILOG_EXIT = textwrap.fill(
    "exit status: 0 success; 1 the data cannot be scored (bad or missing values, empty or unreadable file); 2 wrong "
    "command line (options, file name or format, column names). Errors are one line on stderr.", 79)


def _add_input_options(p) -> None:
    p.add_argument("file", metavar="FILE",
                   help="a .csv, .tsv (optionally .gz) or .parquet file with a header; - reads CSV from standard "
                        "input")
    p.add_argument("--pred", required=True, action="append", metavar="COL",
                   help="column of predicted probabilities in [0, 1]; repeat it to compare models (--pred a "
                        "--pred b): the file is read once and each column scored on its own")
    p.add_argument("--label", required=True, metavar="COL", help="column of outcomes, 0 or 1 (true/false accepted)")
    p.add_argument("--weight", metavar="COL", help="column of non-negative row weights (default: all 1)")
    p.add_argument("--by", metavar="COL",
                   help="column of group keys (categories, numbers or dates): score each group, in the "
                        "library's order (that of smece_by_group)")
    p.add_argument("--metric", choices=("l1", "logit"), default="l1",
                   help="l1: the SmoothECE on [0, 1] (default); logit: smoothing in logit space (Section 5.3 of "
                        "the paper), for models trained with cross-entropy")
    p.add_argument("--clip", nargs="?", const=True, default=False, type=_tolerance, metavar="TOL",
                   help="clamp predictions within 0.01 of [0, 1] into it instead of refusing them; with TOL, "
                        "those within TOL")
    p.add_argument("--dropna", action="store_true",
                   help="skip rows with a missing value (NA, empty, NaN, null) in the columns used, instead of "
                        "refusing them; with several --pred columns, a row missing only predictions is skipped "
                        "for the models that miss it")
    p.add_argument("--chunksize", type=_positive_int, default=None, metavar="N",
                   help=f"rows read at a time (default {DEFAULT_CHUNKSIZE:,}); memory use does not grow with the "
                        f"file (with --by it keeps the rows, about 17 bytes each per --pred column)")
    p.add_argument("--format", choices=("csv", "tsv", "parquet"),
                   help="file format, when the extension does not tell (standard input: csv unless given)")
    # Kept so that old command lines still run: pyarrow is the only reader.
    p.add_argument("--engine", choices=("auto", "pyarrow"), default="auto", help=argparse.SUPPRESS)
    p.add_argument("--resolution", type=_resolution, default=None, metavar="N",
                   help="grid cells of the sketch (power of two; default 32768, resolving smECE >= 0.0005)")


def _add_compare_option(p, what: str) -> None:
    p.add_argument("--compare", action="store_true",
                   help=f"{what} the difference SmoothECE(first --pred) - SmoothECE(other) for each other --pred "
                        "column, on the rows where every one has a value, with its paired bootstrap interval "
                        "(--n-boot, --level, --seed) and the p-value of the test of equal calibration (not "
                        "adjusted across pairs). Keeps the columns in memory and resamples their rows: memory "
                        "and time grow with the file and the number of models (2 models, 2 million rows: about "
                        "0.2 GB more)")


def _add_resampling_options(p, n_boot_type, n_boot_help: str) -> None:
    p.add_argument("--n-boot", type=n_boot_type, default=1000, metavar="N", help=n_boot_help)
    p.add_argument("--level", type=_level, default=0.95, help="coverage of the intervals (default 0.95)")
    p.add_argument("--test", action="store_true",
                   help="also test perfect calibration (with --by: per group, with Benjamini-Hochberg adjusted "
                        "p-values)")
    p.add_argument("--n-sim", type=_replicates, default=1000, metavar="N",
                   help="simulations of the calibration test (default 1000)")
    p.add_argument("--seed", type=_seed, default=None, metavar="N",
                   help="seed of the resampling (default: fresh; group i uses seed + i)")
    p.add_argument("--weight-kind", choices=("importance", "frequency"), default=None,
                   help="what --weight means to resampling: importance (a row is one sampled unit, the default) or "
                        "frequency (a weight counts rows); without it, whole weights above 1 get a warning")


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = _Parser(
        prog="smoothece",
        description=textwrap.fill("SmoothECE calibration error and smoothed reliability diagrams "
                                  "(Blasiok & Nakkiran, ICLR 2024) for a file of predictions and outcomes.", 79),
        epilog="examples:\n"
               "  smoothece demo\n"
               "  smoothece score preds.csv --pred prob --label outcome --ci\n"
               "  smoothece score preds.parquet --pred prob --label outcome --by region --test --json\n"
               "  smoothece score preds.csv --pred old --pred new --label outcome --ci --test\n"
               "  smoothece score preds.csv --pred old --pred new --label outcome --compare --seed 0\n"
               "  zcat preds.csv.gz | smoothece score - --pred prob --label outcome\n"
               "  smoothece plot preds.csv --pred prob --label outcome -o diagram.png --binned\n"
               "  smoothece plot preds.csv --pred prob --label outcome --by day -o drift.png\n\n"
               + _EPILOG_EXIT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"smoothece {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    score = sub.add_parser(
        "score", help="print the SmoothECE of a file's predictions",
        description=textwrap.fill(
            "Prints the SmoothECE of the predictions in FILE against its outcomes; with --by, also that of each "
            "group. With several --pred columns, one row per model (with --by, per model and group), each "
            "model's numbers those of its column alone. The file is read once, streamed in chunks into "
            "sketches (in either metric), so files larger than memory work.", 79),
        epilog="examples:\n  smoothece score preds.csv --pred prob --label outcome --ci --seed 0\n"
               "  smECE = 0.0674 (95% CI 0.0372-0.0878), n = 731, preds.csv\n"
               "  smoothece score preds.csv --pred prob --label outcome --by region --ci --test\n"
               "  smoothece score preds.csv --pred old --pred new --label outcome --by region --csv\n\n"
               + _EPILOG_EXIT,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_input_options(score)
    score.add_argument("--ci", action="store_true", help="add bootstrap confidence intervals")
    _add_compare_option(score, "after the models, print")
    _add_resampling_options(score, _replicates, "bootstrap replicates for --ci and --compare (default 1000)")
    output = score.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true",
                        help="print one JSON object (file, n, total_weight, smece, sigma, ci_low, ci_high, level, "
                             "n_boot, p_value, n_sim, seed, metric, dropped, warnings; with --by also by, ordered "
                             "and groups); with several --pred columns a list of them, each with pred (its column); "
                             "with --compare an object: that list as models, and comparison (method, reference, n, "
                             "total_weight, skipped, metric, n_boot, level, seed, pairs, warnings)")
    output.add_argument("--csv", action="store_true",
                        help="print a CSV table: a row per model (model, n, total_weight, smece, sigma, ci_low, "
                             "ci_high, level, n_boot, p_value, n_sim, seed, dropped), or with --by per model and "
                             "group (model, group, n, total_weight, smece, ci_low, ci_high, level, n_boot, p_value, "
                             "p_adjusted, n_sim, seed)")
    score.add_argument("--sort", choices=("key", "smece"), default="key",
                       help="order of the models and groups: key, the order given and the library's order of the "
                            "groups (by time for dates, else by key; default); smece, worst first")
    score.set_defaults(run=cmd_score)

    plot = sub.add_parser(
        "plot", help="draw the smoothed reliability diagram of a file's predictions",
        description=textwrap.fill(
            "Draws the smoothed reliability diagram (with a bootstrap band) of the predictions in FILE, and with "
            "--binned the classic binned diagram beside it. With --by, draws the SmoothECE of each group instead: "
            "a forest plot for categories, a drift over ordered keys (numbers, dates).", 79),
        epilog="examples:\n  smoothece plot preds.csv --pred prob --label outcome -o diagram.png --binned\n"
               "  smoothece plot preds.csv --pred prob --label outcome --by day -o drift.png --test\n\n"
               + _EPILOG_EXIT,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_input_options(plot)
    plot.add_argument("-o", "--output", required=True, metavar="OUT",
                      help="image to write: .png, .svg or .pdf (written whole or not at all)")
    plot.add_argument("--binned", action="store_true",
                      help="add a panel with the binned reliability diagram (reads the columns into memory)")
    plot.add_argument("--n-bins", type=_bins, default=15, metavar="N",
                      help="bins of the binned diagram (default 15)")
    _add_resampling_options(plot, _replicates_or_none,
                            "bootstrap replicates for the band or the groups' intervals (default 1000; 0 draws none)")
    _add_compare_option(plot, "write in the figure (and print)")
    plot.add_argument("--consistency", action="store_true",
                      help="also draw the consistency band: where the curve would lie if the model were calibrated")
    plot.add_argument("--title", default=None, help="figure title (default: file, column and n; '' for none)")
    plot.add_argument("--dpi", type=_positive_int, default=150, help="resolution of .png output (default 150)")
    plot.set_defaults(run=cmd_plot)

    demo = sub.add_parser(
        "demo", help="score and draw a synthetic miscalibrated model",
        description=textwrap.fill(
            "Generates a synthetic underconfident model (f ~ Beta(2, 2), y ~ Bernoulli(expit(1.3 logit f))): its "
            "outcomes are more extreme than its predictions, so it predicts too high below 1/2 and too low above "
            "it. Writes its smoothed and binned reliability diagrams, and prints its SmoothECE, smECE at a few "
            "bandwidths, and the p-value of the test of perfect calibration.", 79),
        epilog=_EPILOG_EXIT, formatter_class=argparse.RawDescriptionHelpFormatter)
    demo.add_argument("-o", "--output", default="smoothece-demo.png", metavar="OUT",
                      help="image to write: .png, .svg or .pdf (default smoothece-demo.png)")
    demo.add_argument("--seed", type=_seed, default=0, metavar="N",
                      help="seed of data and resampling (default 0)")
    demo.add_argument("--n", type=_demo_rows, default=20_000, metavar="N", help="predictions (default 20,000)")
    demo.add_argument("--n-boot", type=_replicates, default=1000, metavar="N",
                      help="bootstrap and test replicates (default 1000)")
    demo.add_argument("--dpi", type=_positive_int, default=150, help="resolution of .png output (default 150)")
    demo.add_argument("--json", action="store_true",
                      help="print one JSON object (n, smece, sigma, ci_low, ci_high, level, n_boot, p_value, "
                           "n_sim, smece_sigma, seed, output, warnings)")
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
        return _run_resolved(args)
    except CLIError as err:
        sys.stderr.write(f"smoothece: error: {one_line(err)}\n")
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
        sys.stderr.write("smoothece: error: out of memory\n")
        return EXIT_DATA
    except Exception as err:  # never a traceback for a user; SMOOTHECE_DEBUG=1 shows it
        if os.environ.get("SMOOTHECE_DEBUG"):
            raise
        sys.stderr.write(f"smoothece: error: internal error, please report it: {type(err).__name__}: "
                         f"{one_line(err)} (set SMOOTHECE_DEBUG=1 for the traceback)\n")
        return EXIT_DATA


def _run_resolved(args) -> int:
    """Runs the command. Where the sketch's grid does not resolve the SmoothECE that a test, an
    interval or a diagram needs, a file left at the default --resolution is read again at one
    that does (standard input cannot be read twice): nothing is computed from a bound."""
    try:
        return args.run(args)
    except ResolutionError as err:
        rereadable = getattr(args, "resolution", "given") is None and getattr(args, "file", "-") != "-"
        if not (rereadable and err.needed is not None):
            here = f"--resolution {err.needed}" if err.needed is not None else "no --resolution resolves it"
            raise CLIError(f"{one_line(err)} (here: {here})") from None
        args.resolution = err.needed
        args.reread = (f"the file was read again with --resolution {err.needed}: the default grid does not resolve "
                       f"the SmoothECE, whose interval, test or diagram needs it")
        return args.run(args)


def run() -> None:
    """The ``smoothece`` script and ``python -m smoothece``: :func:`main`, then
    the process ends without Python's shutdown.

    pyarrow reads a CSV on its I/O threads, through our Python file object, a
    few blocks ahead; a command that stops early (a bad row, say) or just
    after the last block can leave such a read in flight. Python's shutdown
    ends a thread that then asks for the GIL by unwinding C++ frames that
    cannot unwind, and the process aborts ("terminate called without an
    active exception", exit -6; apache/arrow#34314): seen twice in a day of
    test runs. Nothing is left to do once main() returns, so the output is
    flushed and the process exits with main()'s status."""
    code = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more to deliver
            pass
    os._exit(code)
