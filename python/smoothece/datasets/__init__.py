"""Public real data shipped with smoothece (sources and licences in README.md here).

- :func:`solar_flares`: daily probability forecasts of C1.0+ solar flares by 18
  methods, 2016–2017 (Leka & Park 2019; CC0). The paper's Figure 4 uses DAFFS.
- :func:`imagenet_resnet34`: top-label confidences of a ResNet-34 on the ImageNet
  validation set (Hollemans, MIT). The paper's Figure 3.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict

import numpy as np

_HERE = os.path.dirname(__file__)

SOLAR_FLARE_METHODS = (
    "AMOS", "ASAP", "ASSA", "BOM", "CLIM120", "DAFFS", "GDAFFS", "MAG4VW", "MAG4VWF",
    "MAG4W", "MAG4WF", "MCEVOL", "MCSTAT", "MOSWOC", "NICT", "NJIT", "NOAA", "SIDC",
)


def path(name: str) -> str:
    """Absolute path of a shipped data file (``solar_flares_c1.csv``, ``imagenet_resnet34.csv``)."""
    full = os.path.join(_HERE, name)
    if not os.path.exists(full):
        raise FileNotFoundError(f"no shipped data file {name!r} in {_HERE}")
    return full


@dataclass(frozen=True)
class Forecasts:
    """Predictions and outcomes of one forecaster, rows with a missing forecast dropped."""

    name: str
    f: np.ndarray
    y: np.ndarray

    def __repr__(self) -> str:
        return f"Forecasts(name={self.name!r}, n={self.f.size}, base_rate={self.y.mean():.3f})"


def solar_flares() -> Dict[str, Forecasts]:
    """The forecasts of every method with at least one forecast, keyed by method.

    Values are as published: MCEVOL and MCSTAT contain -0.01, which the
    scoring functions refuse unless ``clip=`` is given; the methods ASAP, BOM,
    MAG4VW, MAG4VWF, MAG4W, MAG4WF and MOSWOC issued no forecast in the file
    and are left out.
    """
    # Every column but the date is numeric; an explicit float dtype keeps the
    # all-NA columns NaN (type guessing would read them as booleans).
    with open(path("solar_flares_c1.csv"), encoding="utf-8") as fh:
        header = [name.strip('"') for name in fh.readline().strip().split(",")]
    table = np.genfromtxt(path("solar_flares_c1.csv"), delimiter=",", skip_header=1, dtype=np.float64,
                          usecols=range(1, len(header)), missing_values="NA", filling_values=np.nan,
                          encoding="utf-8")
    columns = dict(zip(header[1:], table.T))
    outcome = columns["rlz.C1"]
    out = {}
    for method in SOLAR_FLARE_METHODS:
        column = columns[method]
        keep = ~np.isnan(column)
        if keep.any():
            out[method] = Forecasts(method, column[keep], outcome[keep].astype(np.int8))
    return out


def imagenet_resnet34() -> Forecasts:
    """Top-label confidence calibration of ResNet-34 on ImageNet validation (n = 50,000):
    ``f`` = confidence, ``y`` = 1 where the predicted label is the true one."""
    table = np.loadtxt(path("imagenet_resnet34.csv"), delimiter=",", skiprows=1)
    true_label, pred_label, confidence = table.T
    return Forecasts("ResNet-34", confidence, (true_label == pred_label).astype(np.int8))
