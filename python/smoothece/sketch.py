"""CalibrationSketch: a mergeable, serializable summary of predictions and outcomes.

The sketch is the sufficient statistic of the SmoothECE (DESIGN.md §2): per
node of a uniform grid on [0, 1], the sums of w·(y − f), w and w·y, binned
with cubic moments, plus counts of rows per (cell, label) for resampling. It
has a fixed size whatever the number of rows, adds up exactly across
batches, threads and machines, and answers every question the array
functions answer.
"""

from __future__ import annotations

import warnings
from typing import Optional, Union

from . import _core, _validate
from ._diagram import (
    BootstrapResult,
    CalibrationTest,
    ReliabilityDiagram,
    _make_bootstrap,
    _make_diagram,
    _make_test,
    _SketchSource,
)

#: Default resolution: 2^15 grid cells.
DEFAULT_RESOLUTION = 1 << 15


class ResolutionWarning(UserWarning):
    """A bandwidth below what the sketch's grid resolves was asked for or found."""


class CalibrationSketch:
    """A fixed-size, mergeable summary of (prediction, outcome, weight) rows.

    Parameters
    ----------
    resolution : int, default 2**15
        Grid cells on [0, 1] (a power of two from 256 to 2**22). smECEσ from
        the sketch is exact to the accuracy contract (1e-6; in practice ~1e-8)
        for σ ≥ 16 / resolution, i.e. σ ≥ 0.0005 at the default, which covers
        the contract's σ ≥ 0.002. Below that the result carries a
        :class:`ResolutionWarning` and an error of order (16 / (resolution·σ))⁴
        relative. Resampling uses at most resolution / 2 cells (fewer when σ is
        large, as for the arrays: rows move by at most σ/32): each row moves by at
        most 1 / resolution. Memory: about 48·resolution bytes (1.5 MB at the
        default), whatever the number of rows.

    Notes
    -----
    Thread safety: a sketch guards its state with a lock, so concurrent calls
    never corrupt it, but updates from several threads serialize on that lock.
    For parallel ingestion give each thread (or process, or Dask partition) its
    own sketch and ``merge`` them at the end; merging is exact, associative and
    commutative (up to floating-point rounding of the sums).

    Examples
    --------
    >>> sketch = CalibrationSketch()
    >>> for f_batch, y_batch in batches:            # doctest: +SKIP
    ...     sketch.update(f_batch, y_batch)
    >>> sketch.smece()                              # doctest: +SKIP
    """

    __slots__ = ("_sketch",)

    def __init__(self, resolution: int = DEFAULT_RESOLUTION):
        if isinstance(resolution, bool) or not isinstance(resolution, int):
            raise TypeError(f"resolution must be an int (a power of two), got {resolution!r}")
        self._sketch = _core.Sketch(resolution)

    # -- building -------------------------------------------------------------
    def update(self, f, y, weights=None, *, clip: Union[bool, float] = False, threads: Optional[int] = None):
        """Adds a batch of rows, with the input contract of :func:`smoothece.smece`.

        O(batch); a batch with a bad row raises ``ValueError`` and adds nothing.
        Returns the sketch, so updates can be chained.
        """
        f, y, w = _validate.rows(f, y, weights)
        lo, hi = _validate.clip_range(clip)
        self._sketch.update(f, y, w, lo, hi, _validate.threads(threads))
        return self

    def merge(self, other: "CalibrationSketch") -> "CalibrationSketch":
        """Adds another sketch (of the same resolution) into this one; returns self."""
        if not isinstance(other, CalibrationSketch):
            raise TypeError(f"can only merge a CalibrationSketch, got {type(other).__name__}")
        self._sketch.merge(other._sketch)
        return self

    def __add__(self, other: "CalibrationSketch") -> "CalibrationSketch":
        if not isinstance(other, CalibrationSketch):
            return NotImplemented
        return self.copy().merge(other)

    def __iadd__(self, other: "CalibrationSketch") -> "CalibrationSketch":
        if not isinstance(other, CalibrationSketch):
            return NotImplemented
        return self.merge(other)

    def copy(self) -> "CalibrationSketch":
        out = CalibrationSketch.__new__(CalibrationSketch)
        out._sketch = self._sketch.copy()
        return out

    # -- serialization --------------------------------------------------------
    def to_bytes(self) -> bytes:
        """Versioned, checksummed bytes (little-endian) that :meth:`from_bytes` reads back."""
        return self._sketch.to_bytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> "CalibrationSketch":
        """Reads :meth:`to_bytes` output. Truncated, corrupted or foreign bytes raise ``ValueError``."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"data must be bytes, got {type(data).__name__}")
        out = cls.__new__(cls)
        out._sketch = _core.Sketch.from_bytes(bytes(data))
        return out

    def __reduce__(self):
        return (CalibrationSketch.from_bytes, (self.to_bytes(),))

    def __eq__(self, other) -> bool:
        return isinstance(other, CalibrationSketch) and self.to_bytes() == other.to_bytes()

    __hash__ = None

    # -- properties -----------------------------------------------------------
    @property
    def n(self) -> int:
        """Rows added."""
        return self._sketch.count

    @property
    def total_weight(self) -> float:
        return self._sketch.total_weight

    @property
    def resolution(self) -> int:
        return self._sketch.intervals

    @property
    def nbytes(self) -> int:
        """Memory held by the sketch, in bytes."""
        return self._sketch.memory_bytes

    @property
    def min_sigma(self) -> float:
        """The smallest σ evaluated to the accuracy contract: 16 / resolution."""
        return self._sketch.min_sigma

    def __repr__(self) -> str:
        return (f"CalibrationSketch(n={self.n}, total_weight={self.total_weight:.6g}, resolution={self.resolution}, "
                f"nbytes={self.nbytes})")

    # -- answers --------------------------------------------------------------
    def smece(self) -> float:
        """The SmoothECE σ* of all rows added."""
        sigma, resolved = self._sketch.smece()
        if not resolved:
            warnings.warn(
                f"the SmoothECE is below {self.min_sigma:.3g}, the smallest bandwidth this sketch's resolution "
                f"({self.resolution}) resolves; the value {sigma:.3g} is a rough estimate. Use a larger resolution.",
                ResolutionWarning, stacklevel=2,
            )
        return sigma

    def smece_sigma(self, sigma: float) -> float:
        """smECEσ of all rows added."""
        s = _validate.sigma(sigma)
        if s < self.min_sigma:
            warnings.warn(f"sigma={s:.3g} is below {self.min_sigma:.3g}, the smallest bandwidth this sketch "
                          f"resolves to the accuracy contract", ResolutionWarning, stacklevel=2)
        return self._sketch.smece_sigma(s)

    def reliability_diagram(self, *, sigma=None, n_boot=1000, level=0.95, seed=None, consistency=False,
                            n_sim=1000, sample_size=1000, threads=None) -> ReliabilityDiagram:
        """As :func:`smoothece.reliability_diagram`, from the sketch alone (tick marks are drawn
        from the cell counts, at each cell's mean prediction)."""
        return _make_diagram(_SketchSource(self._sketch, threads), sigma, n_boot, level, seed, consistency, n_sim,
                             sample_size)

    def bootstrap_smece(self, *, n_boot=1000, level=0.95, seed=None, sigma=None, threads=None) -> BootstrapResult:
        """As :func:`smoothece.bootstrap_smece` (cell method), from the sketch alone."""
        return _make_bootstrap(_SketchSource(self._sketch, threads), n_boot, level, seed, sigma)

    def calibration_test(self, *, n_sim=1000, seed=None, level=0.95, threads=None) -> CalibrationTest:
        """As :func:`smoothece.calibration_test`, from the sketch alone."""
        return _make_test(_SketchSource(self._sketch, threads), n_sim, seed, level)
