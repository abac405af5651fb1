"""smoothece: the SmoothECE calibration error and smoothed reliability diagrams.

Błasiok & Nakkiran, "Smooth ECE: Principled Reliability Diagrams via Kernel
Smoothing", ICLR 2024 (arXiv:2309.12236). The numerical work happens in a
C++17 core with FFTW; this package validates arguments and draws figures.
"""

from typing import TYPE_CHECKING, Any

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
from ._errors import InputError, ResolutionError, ResolutionWarning, WeightKindWarning
from .compare import Comparison, ComparisonSketch, ModelComparison, compare, compare_models
from .diagram import ReliabilityDiagram, reliability_diagram
from .groups import GroupedCalibration, GroupedSketch, smece_by_group
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
from .multiclass import ClasswiseResult, classwise_smece, confidence_pairs, top_label_diagram, top_label_smece
from .plotting import plot_binned_diagram, plot_comparison, plot_groups, plot_reliability_diagram
from .resampling import BootstrapResult, CalibrationTest, bootstrap_smece, calibration_test
from .sketch import CalibrationSketch

if TYPE_CHECKING:  # imported on first use (below); type checkers see it here
    from .recalibration import SmoothCalibrator

# Names defined in private modules say where users find them (reprs, help(), pickle).
for _public in (smece, smece_sigma, InputError, ResolutionError, ResolutionWarning, WeightKindWarning):
    _public.__module__ = __name__
del _public

try:
    from importlib.metadata import version as _version

    __version__ = _version("smoothece")
except Exception:  # pragma: no cover - running from a source tree without metadata
    __version__ = "0+unknown"

# Submodules imported on first use (``smoothece.datasets``, ``smoothece.reference``,
# ...) so that ``import smoothece`` stays light and they still resolve as attributes.
# SmoothCalibrator too: its module imports scikit-learn (about 1.5 s) when installed.
_LAZY_SUBMODULES = ("cli", "dask", "datasets", "recalibration", "reference", "sklearn", "spark", "torch")
_LAZY_NAMES = {"SmoothCalibrator": "recalibration"}


def __getattr__(name: str) -> Any:
    import importlib

    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _LAZY_NAMES:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY_NAMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(__all__) | set(_LAZY_SUBMODULES))


__all__ = [
    "smece",
    "smece_sigma",
    "reliability_diagram",
    "bootstrap_smece",
    "calibration_test",
    "compare",
    "compare_models",
    "smece_by_group",
    "ReliabilityDiagram",
    "BootstrapResult",
    "CalibrationTest",
    "Comparison",
    "ModelComparison",
    "CalibrationSketch",
    "ComparisonSketch",
    "GroupedCalibration",
    "GroupedSketch",
    "InputError",
    "ResolutionError",
    "ResolutionWarning",
    "WeightKindWarning",
    "confidence_pairs",
    "top_label_smece",
    "top_label_diagram",
    "classwise_smece",
    "ClasswiseResult",
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
    "plot_groups",
    "plot_comparison",
    "__version__",
]
