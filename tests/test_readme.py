"""Every Python snippet of the README runs, and the values its comments quote are today's (the Spark
snippet in test_spark.py, on the session its tests use)."""

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
# `expression   # words: 0.0369 (more words)`: the value the expression gives, as shown.
QUOTED = re.compile(r"^(?P<code>[^#]+?)\s+#[^#]*?:\s*(?P<value>\d+\.\d+)\b")


# Frameworks a snippet needs, from what it imports: smoothece's integrations import theirs.
NEEDS = {"torch": ("torch", "torchmetrics"), "smoothece.torch": ("torch", "torchmetrics"),
         "pyspark": ("pyspark",), "smoothece.spark": ("pyspark",),
         "sklearn": ("sklearn",), "smoothece.sklearn": ("sklearn",), "polars": ("polars",), "pandas": ("pandas",)}
IMPORTED = re.compile(r"^\s*(?:from|import)\s+([\w.]+)", flags=re.M)

# A fresh interpreter runs the snippet as its main script, then writes what each quoted expression gives
# (argv: the snippet's file, the output file, the expressions). Warnings are errors, as in pytest
# (pyproject.toml's filters).
RUNNER = r"""
import json, sys, warnings
warnings.simplefilter("error")
warnings.filterwarnings("ignore", r"'\w+' deprecated - use '\w+'", DeprecationWarning, r"matplotlib\..*")
with open(sys.argv[1], encoding="utf-8") as fh:
    namespace = {"__name__": "__main__"}
    exec(compile(fh.read(), "README.md", "exec"), namespace)
with open(sys.argv[2], "w", encoding="utf-8") as fh:
    json.dump([float(eval(code, namespace)) for code in sys.argv[3:]], fh)
"""


def _missing_frameworks(block: str) -> list:
    return [name for module in IMPORTED.findall(block) for name in NEEDS.get(module, ())
            if importlib.util.find_spec(name) is None]


def quoted(block: str) -> list:
    """The (expression, value as shown) pairs the snippet's comments quote."""
    return [(m["code"].strip(), m["value"]) for m in map(QUOTED.match, block.splitlines()) if m]


def assert_as_quoted(pairs: list, values: list) -> None:
    """Each value, rounded as the README shows it, is what the README shows."""
    assert len(values) == len(pairs)
    for (code, shown), value in zip(pairs, values):
        decimals = len(shown.split(".")[1])
        assert f"{value:.{decimals}f}" == shown, f"{code} gives {value}, the README says {shown}"


def run_here(block: str) -> list:
    """The snippet run in this process as a main script, in a namespace of its own: what each quoted
    expression gives. (Its SparkSession.builder...getOrCreate() returns a session already running.)"""
    namespace = {"__name__": "__main__"}
    exec(compile(block, "README.md", "exec"), namespace)
    return [float(eval(code, namespace)) for code, _ in quoted(block)]


def _starts_spark(block: str) -> bool:
    return any(module.split(".")[0] == "pyspark" for module in IMPORTED.findall(block))


# A Spark snippet started a JVM of its own, which took longer than every other snippet together.
SPARK_BLOCKS = [block for block in BLOCKS if _starts_spark(block)]


def test_the_readme_has_snippets():
    assert len(BLOCKS) >= 5


def test_the_snippets_that_run_here_quote_values():
    # test_snippet_runs checks every quoted value of every snippet whose frameworks are installed (the
    # test extras install them on the Python that CI's main run uses; torch only where its pinned CPU
    # build exists).
    assert sum(len(quoted(block)) for block in BLOCKS if not _missing_frameworks(block)) >= 3


@pytest.mark.parametrize("block", [pytest.param(block, id=f"snippet{i}") for i, block in enumerate(BLOCKS)
                                   if not _starts_spark(block)])
def test_snippet_runs(block, tmp_path):
    """The snippet runs on its own, and each value its comments quote is what the code gives."""
    missing = _missing_frameworks(block)
    if missing:
        pytest.skip(f"{missing[0]} is not installed")
    pairs = quoted(block)
    (tmp_path / "snippet.py").write_text(block, encoding="utf-8")
    run = subprocess.run([sys.executable, "-c", RUNNER, "snippet.py", "quoted.json", *(code for code, _ in pairs)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "MPLBACKEND": "Agg"})
    assert run.returncode == 0, run.stderr[-3000:]
    assert_as_quoted(pairs, json.loads((tmp_path / "quoted.json").read_text(encoding="utf-8")))
