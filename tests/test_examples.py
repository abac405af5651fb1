"""Every script in examples/ runs as a user runs it and writes readable figures."""

import os
import pathlib
import subprocess
import sys

import matplotlib.image as mpimg
import numpy as np
import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
SCRIPTS = sorted(EXAMPLES.glob("*.py"))


def test_there_are_examples():
    assert len(SCRIPTS) >= 2


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_example_runs_and_writes_pngs(script, tmp_path):
    out_dir = tmp_path / "figures"
    env = dict(os.environ, MPLBACKEND="Agg")
    # Run from an unrelated folder: the scripts must not depend on the working directory.
    run = subprocess.run([sys.executable, str(script), "--out-dir", str(out_dir)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    pngs = sorted(out_dir.glob("*.png"))
    assert pngs, f"{script.name} wrote no PNG into {out_dir}: {sorted(out_dir.iterdir())}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["figures"]  # nothing written elsewhere
    for png in pngs:
        assert str(png) in run.stdout  # the script says where its figure went
        assert png.stat().st_size > 20_000
        img = mpimg.imread(png)
        assert img.shape[0] >= 300 and img.shape[1] >= 300
        ink = np.any(img[..., :3] < 0.9, axis=-1)  # pixels that are not (near) white
        assert 0.02 < ink.mean() < 0.6, f"{png.name}: {ink.mean():.1%} of the pixels carry ink"
