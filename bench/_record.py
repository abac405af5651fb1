"""The header every benchmark result starts with, and the one writer of bench/results/<script>.{md,json}.

Every script of bench/ ends with ``Record.write``: ``<out>/<script>.md`` starts with a title and the
header (command, commit, date, machine, load average at start and end), ``<out>/<script>.json`` holds
the same header under ``"header"`` and the script's numbers under ``"results"``. ``<out>`` is
bench/results/ for a full run and bench/_scratch/ (git-ignored) for ``--quick``, unless ``--out`` says.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
RESULTS = os.path.join(BENCH, "results")
SCRATCH = os.path.join(BENCH, "_scratch")
NOT_RECORDED = "not recorded"
QUICK_NOTE = "quick run: a smoke test of the script at tiny sizes; do not quote its numbers"


def add_options(parser, quick_help: str) -> None:
    """The two options every script has: ``--quick`` and ``--out``."""
    parser.add_argument("--quick", action="store_true", help=quick_help + "; writes to bench/_scratch/")
    parser.add_argument("--out", help="output folder (default bench/results/, or bench/_scratch/ with --quick)")


def git_commit() -> str:
    """``git rev-parse --short HEAD``, with ``+dirty`` when the working tree differs from it (bench/results/
    excluded: the results a run writes are not the code it measured); ``not recorded`` without git."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=30, check=True).stdout
    try:
        commit = git("rev-parse", "--short", "HEAD").strip()
        dirty = git("status", "--porcelain", "--", ".", ":(exclude)bench/results").strip()
    except (OSError, subprocess.SubprocessError):
        return NOT_RECORDED
    return commit + ("+dirty" if dirty else "") if commit else NOT_RECORDED


def machine() -> dict:
    """CPU model, cores (logical, and usable by this process), memory, platform, Python."""
    cpu = platform.processor() or NOT_RECORDED
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), cpu)
    except OSError:
        pass
    memory = None
    try:
        with open("/proc/meminfo") as fh:
            memory = round(int(fh.readline().split()[1]) / 2**20, 1)
    except (OSError, ValueError, IndexError):
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cpu_model": cpu, "cores": os.cpu_count(), "usable_cores": usable, "memory_gib": memory,
            "platform": platform.platform(), "python": platform.python_version()}


def versions(*packages: str) -> dict:
    """Installed versions of the named distributions (None where not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in packages:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def loadavg() -> list:
    return [round(x, 2) for x in os.getloadavg()]


def command(script_file: str, argv=None) -> str:
    """The command as typed from the repository root: ``python bench/<script>.py <args>``."""
    args = sys.argv[1:] if argv is None else list(argv)
    return shlex.join(["python", os.path.relpath(os.path.abspath(script_file), REPO), *args])


def header_lines(h: dict) -> list:
    """The Markdown header block of a header dict (fields missing from it print as 'not recorded')."""
    def fmt_load(x):
        return ", ".join(f"{v:.2f}" for v in x) if isinstance(x, (list, tuple)) else (x or NOT_RECORDED)

    m = h.get("machine") or {}
    if isinstance(m, dict) and m:
        mem = f", {m['memory_gib']:.0f} GiB" if m.get("memory_gib") else ""
        cores = f", {m['cores']} cores" if m.get("cores") else ""
        usable = f" ({m['usable_cores']} usable)" if m.get("usable_cores") not in (None, m.get("cores")) else ""
        where = ", ".join(x for x in (m.get("platform"), m.get("python") and f"Python {m['python']}") if x)
        mach = f"{m.get('cpu_model', NOT_RECORDED)}{cores}{usable}{mem}" + (f"; {where}" if where else "")
    else:
        mach = m or NOT_RECORDED
    cmd = h.get("command") or NOT_RECORDED
    cmd = "; ".join(f"`{c}`" for c in cmd) if isinstance(cmd, list) else (
        cmd if cmd.startswith(NOT_RECORDED) else f"`{cmd}`")
    lines = [f"- Command: {cmd}",
             f"- Commit: {h.get('commit') or NOT_RECORDED}",
             f"- Date: {h.get('date') or NOT_RECORDED}",
             f"- Machine: {mach}",
             f"- Load average (1, 5, 15 min): {fmt_load(h.get('loadavg_start'))} at start; "
             f"{fmt_load(h.get('loadavg_end'))} at end"]
    if h.get("wall_s") is not None:
        lines.append(f"- Wall time: {h['wall_s']:.0f} s")
    vs = {k: v for k, v in (h.get("versions") or {}).items() if v}
    if vs:
        lines.append("- Versions: " + ", ".join(f"{k} {v}" for k, v in vs.items()))
    if h.get("note"):
        lines.append(f"- Note: {h['note']}")
    if h.get("quick"):
        lines.append(f"- **{QUICK_NOTE[0].upper() + QUICK_NOTE[1:]}.**")
    return lines


class Record:
    """What one run of a script records. Made at its start (command, commit, date, machine, load), written
    at its end by ``write`` (load and wall time at the end, then both files)."""

    def __init__(self, script_file: str, args, argv=None, packages=("numpy", "smoothece")):
        self.name = os.path.splitext(os.path.basename(script_file))[0]
        self.quick = bool(getattr(args, "quick", False))
        self.out = os.path.abspath(args.out or (SCRATCH if self.quick else RESULTS))
        self._start = time.perf_counter()
        self.header = {"script": self.name, "command": command(script_file, argv), "commit": git_commit(),
                       "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                       "machine": machine(), "loadavg_start": loadavg(), "loadavg_end": None, "wall_s": None,
                       "quick": self.quick, "versions": versions(*packages)}
        os.makedirs(self.out, exist_ok=True)

    def path(self, ext: str) -> str:
        """``<out>/<script>.<ext>``: the only files a script writes (``png`` too, for a figure)."""
        return os.path.join(self.out, f"{self.name}.{ext}")

    def save_json(self, results) -> str:
        """Write the JSON now (also mid-run, so that a killed run keeps what it measured)."""
        path = self.path("json")
        with open(path, "w", encoding="utf-8") as fh:
            json.dump({"header": self.header, "results": results}, fh, indent=1, default=_jsonable)
            fh.write("\n")
        return path

    def write(self, title: str, body, results) -> tuple:
        """Finish the header and write ``<script>.md`` (title, header, body) and ``<script>.json``."""
        self.header["loadavg_end"] = loadavg()
        self.header["wall_s"] = round(time.perf_counter() - self._start, 1)
        jpath = self.save_json(results)
        mpath = write_markdown(self.path("md"), title, self.header, body)
        print(f"wrote {os.path.relpath(mpath)} and {os.path.relpath(jpath)}", flush=True)
        return mpath, jpath


def write_markdown(path: str, title: str, header: dict, body) -> str:
    """``# title``, the header block, then ``body`` (a string or a list of lines)."""
    text = body if isinstance(body, str) else "\n".join(body)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join([f"# {title}", "", *header_lines(header), "", text.strip("\n"), ""]))
    return path


def read_json(path: str) -> dict:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def _jsonable(x):
    """numpy scalars and arrays, tuples of them: plain JSON."""
    if hasattr(x, "tolist"):
        return x.tolist()
    if hasattr(x, "item"):
        return x.item()
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")
