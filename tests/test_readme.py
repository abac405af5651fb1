"""Every Python snippet of the README runs, and the values its comments quote are today's."""

import importlib.util
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


def _skip_without_frameworks(block: str) -> None:
    """A snippet of an integration runs where its framework is installed (the test extras install them
    on the Python that CI's main run uses; torch only where its pinned CPU build exists)."""
    for module in IMPORTED.findall(block):
        for name in NEEDS.get(module, ()):
            if importlib.util.find_spec(name) is None:
                pytest.skip(f"{name} is not installed")


def test_the_readme_has_snippets():
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("block", BLOCKS, ids=[f"snippet{i}" for i in range(len(BLOCKS))])
def test_snippet_runs(block, tmp_path):
    _skip_without_frameworks(block)
    run = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "MPLBACKEND": "Agg"})
    assert run.returncode == 0, run.stderr[-3000:]


# PySpark 4.3 warns on every Arrow call under pandas 3 (its own notice; the numbers are unaffected).
@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")
def test_quoted_values_are_what_the_code_gives(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    checked = 0
    for block in BLOCKS:
        quoted = [QUOTED.match(line) for line in block.splitlines()]
        if not any(quoted):
            continue
        if any(importlib.util.find_spec(name) is None for m in IMPORTED.findall(block) for name in NEEDS.get(m, ())):
            continue  # test_snippet_runs says which framework is missing
        namespace: dict = {}
        exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102 - the README's own code
        for match in filter(None, quoted):
            shown = match["value"]
            value = eval(match["code"], namespace)  # noqa: S307
            decimals = len(shown.split(".")[1])
            assert f"{value:.{decimals}f}" == shown, f"{match['code'].strip()} gives {value}, the README says {shown}"
            checked += 1
    assert checked >= 3
