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
from . import measures
from .measures import (
    BinnedCalibration,
    BrierDecomposition,
    binned_calibration,
    binned_ece,
    binned_ece_upper,
    brier_decomposition,
    debiased_ece,
    interval_ce_random,
    laplace_kernel_ce,
)
from .plotting import plot_binned_diagram, plot_reliability_diagram
from .recalibration import SmoothCalibrator
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
    "measures",
    "binned_ece",
    "binned_calibration",
    "binned_ece_upper",
    "debiased_ece",
    "brier_decomposition",
    "laplace_kernel_ce",
    "interval_ce_random",
    "BinnedCalibration",
    "BrierDecomposition",
    "SmoothCalibrator",
    "plot_reliability_diagram",
    "plot_binned_diagram",
    "__version__",
]
