"""CalibrationSketch: a mergeable, serializable summary of predictions and outcomes.

The sketch is the summary every answer comes from (the README's Architecture), with a
public face: batches are added to it, sketches merge exactly (across
threads, workers, machines and time windows), and it serializes to
versioned, checksummed bytes. Its memory grows with what it holds: while the
rows take few distinct predictions it keeps them exactly; beyond that, its
grid. It answers every question the array functions answer.
"""

from __future__ import annotations

import warnings
from typing import Optional, Union

from . import _bytes, _core, _validate
from ._errors import InputError, ResolutionError, ResolutionWarning
from ._typing import ArrayLike
from ._util import sigma_star
from .diagram import ReliabilityDiagram, make_diagram
from .resampling import BootstrapResult, CalibrationTest, make_bootstrap, make_test

__all__ = ["CalibrationSketch", "ResolutionWarning", "DEFAULT_RESOLUTION", "DEFAULT_LOGIT_RESOLUTION"]

#: Default resolution on the probability axis (metric="l1"): 2^15 grid intervals,
#: which resolve σ* of calibrated predictions up to ~1e8 rows.
DEFAULT_RESOLUTION = 1 << 15
#: Default resolution on the logit axis: 2^20 intervals (the axis spans 75 logit units),
#: which resolve σ* of calibrated predictions up to ~1e8 rows; the grid holds only
#: the blocks of 1024 intervals its rows reach.
DEFAULT_LOGIT_RESOLUTION = 1 << 20
#: The finest resolution.
MAX_RESOLUTION = 1 << 22


def default_resolution(metric: str) -> int:
    """A sketch's resolution when none is given: :data:`DEFAULT_LOGIT_RESOLUTION` for
    ``metric="logit"``, else :data:`DEFAULT_RESOLUTION`."""
    return DEFAULT_LOGIT_RESOLUTION if metric == "logit" else DEFAULT_RESOLUTION


class CalibrationSketch(_bytes.Pickled):
    """A mergeable summary of (prediction, outcome, weight) rows.

    Parameters
    ----------
    resolution : int, optional
        Grid intervals once the sketch holds many distinct predictions (a
        power of two from 256 to 2**22); by default 2**15 for ``metric="l1"``
        and 2**20 for ``metric="logit"`` (whose axis spans 75 logit units):
        either resolves σ* of calibrated predictions up to about 1e8 rows. Until then (up to resolution/2
        distinct predictions rounded to 2^-40, counted over every row of
        positive weight added so far, however they were batched or merged)
        the sketch keeps each such prediction with its rows and weights per
        label: its answers are those of the rows themselves, at every σ, and
        its bytes grow with the rows (about 5 bytes a row without weights). On the grid, smECEσ
        is exact to the accuracy contract (1e-6; in practice ~1e-8) for
        σ ≥ 16 / resolution, i.e. σ ≥ 0.0005 at the default; below that the
        sketch says what it can prove (a bound) with a
        :class:`ResolutionWarning`. Resampling draws per cell of resolution/8
        cells. Memory on the grid: the blocks of 1024 intervals that rows
        reach, at most about 56·resolution bytes whatever the number of rows
        (1.8 MB on the l1 default; on the logit default 10–18 MB for 10^8
        calibrated predictions, at most 59 MB); its :meth:`to_bytes` about half.
    metric : {"l1", "logit"}, default "l1"
        As in :func:`smoothece.smece`; fixed for the sketch's life.

    Notes
    -----
    Thread safety: a sketch guards its state with a lock, so concurrent calls
    never corrupt it, but updates from several threads serialize on that lock.
    For parallel ingestion give each thread (or process, or Dask partition) its
    own sketch and ``merge`` them at the end; merging is exact, associative and
    commutative (up to floating-point rounding of the sums). Any batching,
    merge order or bytes round trip of the same rows gives the same form
    (exact or grid); in the exact form the same state bit for bit when the
    weights' sums are exact (unit or whole weights), else to rounding of
    those sums (answers within ~1e-15); on the grid, answers within ~1e-14.

    Examples
    --------
    >>> sketch = CalibrationSketch()
    >>> for f_batch, y_batch in batches:            # doctest: +SKIP
    ...     sketch.update(f_batch, y_batch)
    >>> sketch.smece()                              # doctest: +SKIP
    """

    __slots__ = ("_sketch",)

    def __init__(self, resolution: Optional[int] = None, metric: str = "l1"):
        metric = _validate.metric(metric)
        if resolution is None:
            resolution = default_resolution(metric)
        if isinstance(resolution, bool) or not isinstance(resolution, int):
            raise TypeError(f"resolution must be an int (a power of two), got {resolution!r}")
        self._sketch = _core.Sketch(metric, resolution)

    # -- building -------------------------------------------------------------
    def update(self, f: ArrayLike, y: ArrayLike, weights: Optional[ArrayLike] = None, *,
               clip: Union[bool, float] = False, threads: Optional[int] = None) -> "CalibrationSketch":
        """Adds a batch of rows, with the input contract of :func:`smoothece.smece`.

        O(batch), one checked pass; a batch with a bad row raises
        :class:`smoothece.InputError` and adds nothing. Refuses (and adds
        nothing) when the row count or the total weight would overflow.
        Returns the sketch, so updates can be chained.
        """
        f, y, w = _validate.rows(f, y, weights, allow_empty=True)
        lo, hi = _validate.clip_range(clip)
        try:
            self._sketch.update(f, y, w, lo, hi, _validate.threads(threads))
        except InputError as err:
            raise _validate.with_hint(err, f, y, clip) from None
        return self

    def merge(self, other: "CalibrationSketch") -> "CalibrationSketch":
        """Adds another sketch (of the same resolution and metric) into this one; returns self."""
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
        """Bytes of format version 4 that :meth:`from_bytes` reads back, on any machine:
        little-endian, ending in an XXH64 checksum, written by the core (the layout:
        docs/design.md, "Sketch bytes")."""
        return self._sketch.to_bytes()

    @classmethod
    def from_bytes(cls, data: bytes, *, max_memory: Optional[int] = None) -> "CalibrationSketch":
        """Reads :meth:`to_bytes` output (format versions 2 to 4).

        Bytes may come from anywhere: what is read back is a sketch that
        some rows could have made, or a ``ValueError``. Truncated, altered,
        inconsistent or foreign bytes raise "corrupt sketch: ..." (an
        unknown or retired format version is named): every count, sum and
        position is checked against what a real sketch can hold (the
        checksum alone does not protect against bytes made to pass it), so
        an accepted sketch's answers lie where rows' answers lie (smECE in
        [0, 1], a non-negative density, finite totals, at most 2^53 rows).

        ``max_memory``: bytes the reader may allocate (a ``ValueError``
        before allocating more); by default 128 MiB or 64 times
        ``len(data)``, whichever is more. Real sketches fit the default,
        but for a grid of more than 2^20 intervals whose rows crowd into a
        few blocks (its bytes are small; reading it takes ~88·resolution
        bytes a while): pass a larger ``max_memory`` for bytes from a source
        you trust.
        Pickles are read without a bound.
        """
        out = cls.__new__(cls)
        out._sketch = _core.Sketch.from_bytes(_bytes.as_bytes(data), _bytes.memory_limit(max_memory))
        return out

    def __eq__(self, other) -> bool:
        return isinstance(other, CalibrationSketch) and self.to_bytes() == other.to_bytes()

    __hash__ = None

    # -- properties -----------------------------------------------------------
    @property
    def n(self) -> int:
        """Rows added (zero-weight rows included)."""
        return self._sketch.rows

    @property
    def total_weight(self) -> float:
        return self._sketch.total_weight

    @property
    def resolution(self) -> int:
        return self._sketch.resolution

    @property
    def metric(self) -> str:
        return self._sketch.metric

    @property
    def exact(self) -> bool:
        """Whether the sketch still keeps every distinct prediction (its answers are the rows')."""
        return self._sketch.exact

    @property
    def nbytes(self) -> int:
        """Memory held by the sketch, in bytes."""
        return self._sketch.memory_bytes

    @property
    def min_sigma(self) -> float:
        """The smallest σ its grid evaluates to the accuracy contract: 16 / resolution
        (times the logit grid's span for metric="logit"); 0 while it is exact."""
        if self.exact:
            return 0.0
        return self._sketch.analysis().min_sigma

    def __repr__(self) -> str:
        form = "exact" if self.exact else f"grid of {self.resolution}"
        return (f"CalibrationSketch(n={self.n}, total_weight={self.total_weight:.6g}, metric={self.metric!r}, "
                f"{form}, nbytes={self.nbytes})")

    # -- answers --------------------------------------------------------------
    def smece(self, *, threads: Optional[int] = None) -> float:
        """The SmoothECE σ* of all rows added (a bound, with a warning, below the grid)."""
        return sigma_star(self._sketch.analysis(), _validate.threads(threads))

    def smece_sigma(self, sigma: float, *, threads: Optional[int] = None) -> float:
        """smECEσ of all rows added. Below the grid's resolution the value is a
        lower bound (smECEσ is non-increasing in σ), with a warning."""
        s = _validate.sigma(sigma, self.metric)
        value, resolved = self._sketch.analysis().smece_sigma(s, _validate.threads(threads))
        if not resolved:
            warnings.warn(f"sigma={s:.3g} is below {self.min_sigma:.3g}, the smallest bandwidth this sketch's grid "
                          f"resolves: smECE_sigma is at least {value:.6g} (its value there)", ResolutionWarning,
                          stacklevel=2)
        return value

    def reliability_diagram(self, *, sigma=None, n_boot=1000, level=0.95, seed=None, consistency=False,
                            n_sim=1000, sample_size=1000, weight_kind=None,
                            threads=None) -> ReliabilityDiagram:
        """As :func:`smoothece.reliability_diagram`, from the sketch alone (tick marks are drawn
        from its distinct predictions, or from its cells at their mean prediction).

        Where the sketch's grid does not resolve σ* (nor a ``sigma`` given),
        raises :class:`~smoothece.ResolutionError` naming a resolution that
        would: a diagram is never drawn from a bound. ``sigma`` at or above
        :attr:`min_sigma` always draws."""
        fixed = None if sigma is None else _validate.sigma(sigma, self.metric)
        return self._answer(make_diagram, metric=self.metric, sigma=fixed, n_boot=n_boot, level=level, seed=seed,
                            consistency=consistency, n_sim=n_sim, sample_size=sample_size, weight_kind=weight_kind,
                            threads=threads, counts=self._counts)

    def bootstrap_smece(self, *, n_boot=1000, level=0.95, seed=None, sigma=None, weight_kind=None,
                        threads=None) -> BootstrapResult:
        """As :func:`smoothece.bootstrap_smece` (cell method), from the sketch alone; where
        its grid does not resolve σ* (or ``sigma``), :class:`~smoothece.ResolutionError`
        (an :class:`~smoothece.InputError` for ``sigma``) names a resolution that would."""
        fixed = None if sigma is None else _validate.sigma(sigma, self.metric)
        return self._answer(make_bootstrap, n_boot=n_boot, level=level, seed=seed, sigma=fixed,
                            weight_kind=weight_kind, threads=threads, counts=self._counts)

    def calibration_test(self, *, n_sim=1000, seed=None, level=0.95, weight_kind=None,
                         threads=None) -> CalibrationTest:
        """As :func:`smoothece.calibration_test`, from the sketch alone; where its grid does
        not resolve σ*, :class:`~smoothece.ResolutionError` names a resolution that would
        (a p-value is never computed from a bound)."""
        return self._answer(make_test, n_sim=n_sim, seed=seed, level=level, weight_kind=weight_kind,
                            threads=threads, counts=self._counts)

    def _answer(self, make, **options):
        """An answer that resamples (make_test, make_bootstrap, make_diagram), saying which
        resolution would answer where the grid does not resolve the bandwidth it needs."""
        try:
            return make(self._sketch.analysis(), **options)
        except ResolutionError as err:
            needed = self._finer(err.lower)
            raise ResolutionError(f"{err}; {self._finer_text(needed)}", err.lower, err.upper, needed) from None
        except InputError as err:
            if err.argument != "sigma":
                raise
            raise InputError(f"{err}; {self._finer_text(self._finer(options['sigma']))}", "sigma") from None

    def _finer(self, sigma: float) -> Optional[int]:
        """The smallest resolution whose grid resolves ``sigma`` (its smallest σ halves as the
        resolution doubles); None beyond the finest."""
        per_interval = self._sketch.analysis().min_sigma * self.resolution  # σ resolved × intervals
        needed = self.resolution
        while needed < MAX_RESOLUTION and per_interval / needed > sigma:
            needed *= 2
        return needed if per_interval / needed <= sigma else None

    def _finer_text(self, needed: Optional[int]) -> str:
        if needed is None:
            return "no sketch resolves it (the finest has resolution=2**22): the array functions on the rows do"
        return f"a sketch of resolution={needed} (or more) resolves it"

    def _counts(self) -> bool:
        # Whether every weight added is whole and some exceed 1: kept by the core
        # at update (the sums cannot tell: 0.5 + 0.5 is whole), through merges and bytes.
        return self._sketch.weights_look_like_counts
