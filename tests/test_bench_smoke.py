"""bench/ as a toolbox: every script runs in its quick mode through the one entry point and writes
<script>.md and <script>.json headed by the command, commit, date, machine and load average; the
committed results in bench/results/ carry the same header fields."""

import datetime
import importlib
import json
import os
import re
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(REPO, "bench")
SCRIPTS = ["population", "coverage", "size", "compare", "weight_kind", "groups", "speed", "catalogue", "peers",
           "cli_bench", "fft_plans", "measures", "discrete_speed", "interrupts", "logit_sketch", "fixpoint"]
HEADER_KEYS = ["command", "commit", "date", "machine", "loadavg_start", "loadavg_end"]
MD_FIELDS = ["- Command: ", "- Commit: ", "- Date: ", "- Machine: ", "- Load average (1, 5, 15 min): "]


def bench_module(name):
    if BENCH not in sys.path:
        sys.path.insert(0, BENCH)
    return importlib.import_module(name)


def git(*args):
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout


def md_header(path):
    """The '- Field: value' lines between the title and the first blank line after them."""
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    assert lines[0].startswith("# ") and lines[1] == "", f"{path} does not start with a title"
    end = lines.index("", 2)
    return lines[2:end]


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    pytest.importorskip("scipy")  # bench/population.py's quadrature, which coverage, size and groups import
    out = tmp_path_factory.mktemp("bench")
    head = git("rev-parse", "--short", "HEAD").strip()
    before = datetime.datetime.now().astimezone().replace(microsecond=0)
    proc = subprocess.run([sys.executable, os.path.join(BENCH, "run_all.py"), "--quick", "--jobs", "2",
                           "--out", str(out)], cwd=REPO, capture_output=True, text=True, timeout=900)
    after = datetime.datetime.now().astimezone()
    return {"out": out, "proc": proc, "head": head, "before": before, "after": after}


def test_quick_run_of_every_script(quick_run):
    proc = quick_run["proc"]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert f"{len(SCRIPTS)} of {len(SCRIPTS)} scripts ok" in proc.stdout
    for name in SCRIPTS:
        assert re.search(rf"^  ok   {name} ", proc.stdout, re.M), proc.stdout


@pytest.mark.parametrize("name", SCRIPTS)
def test_quick_outputs_carry_the_header(quick_run, name):
    out = quick_run["out"]
    with open(out / f"{name}.json", encoding="utf-8") as fh:
        saved = json.load(fh)
    h = saved["header"]
    assert set(HEADER_KEYS) <= set(h) and saved["results"]
    # the exact command run_all issued, from the repository root
    assert h["command"] == f"python bench/{name}.py --quick --out {out}"
    assert h["quick"] is True and h["script"] == name
    # the commit, checked against git itself: HEAD, '+dirty' exactly when the tree (results aside) differs
    dirty = bool(git("status", "--porcelain", "--", ".", ":(exclude)bench/results").strip())
    assert h["commit"] == quick_run["head"] + ("+dirty" if dirty else "")
    when = datetime.datetime.fromisoformat(h["date"])
    assert quick_run["before"] <= when <= quick_run["after"]
    m = h["machine"]
    assert m["cores"] == os.cpu_count() and m["cpu_model"] and m["cpu_model"] != "not recorded"
    for key in ("loadavg_start", "loadavg_end"):
        assert len(h[key]) == 3 and all(x >= 0 for x in h[key])
    lines = md_header(out / f"{name}.md")
    for field in MD_FIELDS:
        assert sum(line.startswith(field) for line in lines) == 1, (field, lines)
    assert f"- Command: `{h['command']}`" in lines and f"- Commit: {h['commit']}" in lines
    assert any("Quick run" in line for line in lines)
    if name == "speed":
        with open(out / "speed.png", "rb") as fh:
            assert fh.read(8) == b"\x89PNG\r\n\x1a\n"


def test_quick_run_leaves_the_committed_results_alone(quick_run):
    results = os.path.join(BENCH, "results")
    touched = [f for f in os.listdir(results)
               if os.path.getmtime(os.path.join(results, f)) >= quick_run["before"].timestamp()]
    assert touched == []


@pytest.mark.parametrize("name", SCRIPTS)
def test_committed_results_carry_the_header(name):
    """bench/results/<script>.{md,json} exist for every script run_all knows, with every header field (a field
    an old run did not record says 'not recorded')."""
    assert list(bench_module("run_all").SCRIPTS) == SCRIPTS
    with open(os.path.join(BENCH, "results", f"{name}.json"), encoding="utf-8") as fh:
        h = json.load(fh)["header"]
    assert set(HEADER_KEYS) <= set(h) and all(h[k] not in (None, "", {}) for k in HEADER_KEYS)
    assert h["script"] == name and h["quick"] is False
    lines = md_header(os.path.join(BENCH, "results", f"{name}.md"))
    for field in MD_FIELDS:
        assert sum(line.startswith(field) for line in lines) == 1, (field, lines)


def test_quick_default_output_is_the_scratch_folder(tmp_path):
    record = bench_module("_record")
    args = type("Args", (), {"quick": True, "out": None})()
    assert record.Record(os.path.join(BENCH, "size.py"), args, []).out == os.path.join(BENCH, "_scratch")
    args.quick = False
    assert record.Record(os.path.join(BENCH, "size.py"), args, []).out == os.path.join(BENCH, "results")
    args.out = str(tmp_path)
    assert record.Record(os.path.join(BENCH, "size.py"), args, []).out == str(tmp_path)
    assert "bench/_scratch/" in git("check-ignore", "-v", "bench/_scratch/x.md")


def test_run_all_rejects_bad_options(capsys):
    run_all = bench_module("run_all")
    with pytest.raises(SystemExit) as err:
        run_all.main(["--jobs", "2"])
    assert err.value.code == 2 and "--jobs needs --quick" in capsys.readouterr().err
    with pytest.raises(SystemExit) as err:
        run_all.main(["--quick", "--only", "nosuchscript"])
    assert err.value.code == 2 and "invalid choice: 'nosuchscript'" in capsys.readouterr().err


def blocked_run(tmp_path, script, blocked):
    """``python bench/<script>.py --quick --out tmp_path`` with the named modules made unimportable."""
    code = ("import runpy, sys\n"
            f"sys.path.insert(0, {BENCH!r})  # as when the script is run by path\n"
            f"for name in {blocked!r}:\n"
            "    sys.modules[name] = None  # import raises ImportError, as when not installed\n"
            f"sys.argv = ['bench/{script}.py', '--quick', '--out', {str(tmp_path)!r}]\n"
            f"runpy.run_path({os.path.join(BENCH, script + '.py')!r}, run_name='__main__')\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    with open(tmp_path / f"{script}.md", encoding="utf-8") as fh:
        text = fh.read()
    with open(tmp_path / f"{script}.json", encoding="utf-8") as fh:
        return text, json.load(fh)["results"]


def test_peers_without_relplot_measures_our_side(tmp_path):
    text, results = blocked_run(tmp_path, "peers", ["relplot"])
    assert results["relplot_installed"] is False
    assert "**relplot not installed**" in text
    solar = {r["data"]: r for r in results["accuracy"]}
    assert solar["solar NJIT"]["relplot"] is None and solar["solar NJIT"]["smoothece"] > 0
    assert "| solar NJIT | 471 |" in text and "| relplot not installed | – |" in text
    assert results["diagram_timing"]["relplot_s"] is None and results["diagram_timing"]["smoothece_best_s"] > 0


def test_fft_plans_without_pyfftw_says_so(tmp_path):
    text, results = blocked_run(tmp_path, "fft_plans", ["pyfftw"])
    assert results == {"pyfftw_installed": False}
    assert "**pyfftw not installed**" in text
