"""smoothece: the SmoothECE calibration error and smoothed reliability diagrams.

Błasiok & Nakkiran, "Smooth ECE: Principled Reliability Diagrams via Kernel
Smoothing", ICLR 2024 (arXiv:2309.12236). The numerical work happens in a
C++17 core with FFTW; this package validates arguments and draws figures.
"""

from __future__ import annotations

from . import _fftw

_fftw.load()

try:
    from . import _core  # noqa: F401
except ImportError as err:  # pragma: no cover - only on a broken install
    raise ImportError(
        f"smoothece's compiled core could not be imported ({err}). Was the extension built? "
        "Install with `pip install .` from the source tree, not by adding python/ to sys.path."
    ) from err

from ._api import smece, smece_sigma
from ._diagram import (
    BootstrapResult,
    CalibrationTest,
    ReliabilityDiagram,
    bootstrap_smece,
    calibration_test,
    reliability_diagram,
)
from . import multiclass
from .multiclass import ClasswiseResult, classwise_smece, confidence_pairs, top_label_diagram, top_label_smece
from .plotting import plot_binned_diagram, plot_reliability_diagram
from .sketch import CalibrationSketch, ResolutionWarning

try:
    from importlib.metadata import version as _version

    __version__ = _version("smoothece")
except Exception:  # pragma: no cover - running from a source tree without metadata
    __version__ = "0+unknown"

__all__ = [
    "smece",
    "smece_sigma",
    "reliability_diagram",
    "bootstrap_smece",
    "calibration_test",
    "ReliabilityDiagram",
    "BootstrapResult",
    "CalibrationTest",
    "CalibrationSketch",
    "ResolutionWarning",
    "multiclass",
    "confidence_pairs",
    "top_label_smece",
    "top_label_diagram",
    "classwise_smece",
    "ClasswiseResult",
    "plot_reliability_diagram",
    "plot_binned_diagram",
    "__version__",
]
