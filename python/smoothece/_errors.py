"""The structured error of the input contract (the README's Input contract)."""

from __future__ import annotations

from typing import Optional


class InputError(ValueError):
    """Bad input: a value breaks the input contract, or an argument as a whole is wrong.

    A ``ValueError`` whose message says everything; its fields let callers
    place the error in their own coordinates (a file's line, a Dask chunk)
    without reading the message.

    Attributes
    ----------
    argument : str
        The argument at fault: ``"f"``, ``"y"``, ``"weights"``, ...
    index : int or None
        The first offending row, or None when the argument as a whole is bad
        (all weights zero, lengths that differ).
    value : float or None
        The value at ``index``.
    count : int
        How many values of ``argument`` are bad.
    size : int
        How many values ``argument`` has.
    """

    def __init__(self, message: str, argument: str, index: Optional[int] = None, value: Optional[float] = None,
                 count: int = 0, size: int = 0):
        super().__init__(message)
        self.argument = argument
        self.index = None if index is None or index < 0 else int(index)
        self.value = None if self.index is None else value
        self.count = int(count)
        self.size = int(size)

    def __reduce__(self):
        return (type(self), (str(self), self.argument, -1 if self.index is None else self.index, self.value,
                             self.count, self.size))


class WeightKindWarning(UserWarning):
    """Weights that look like counts (whole numbers, some above 1) were
    resampled as importance weights because ``weight_kind`` was not given.

    Counts read as importance weights make a row of weight 3 one sampled unit,
    not three: the calibration test almost never rejects a calibrated model
    (size near 0 instead of 5%) and bootstrap intervals are too wide. Pass
    ``weight_kind="frequency"`` when a weight counts rows, or
    ``weight_kind="importance"`` when each row is one sampled unit; either
    silences the warning.
    """


class ResolutionWarning(UserWarning):
    """A bandwidth below what a sketch's grid resolves was asked for or found:
    the answer is a bound, and the message says which."""


class ResolutionError(InputError):
    """A test, interval or diagram was asked of a sketch whose grid does not
    resolve its SmoothECE σ*: σ* is known only to lie in [``lower``, ``upper``),
    and nothing is computed from such a bound. A ``ValueError`` (and an
    :class:`InputError` of the argument ``"resolution"``) whose message says
    which resolution would resolve it.

    Attributes
    ----------
    lower, upper : float
        Where σ* lies (below ``upper``).
    needed : int or None
        The smallest sketch resolution that resolves every σ* from ``lower`` on
        (None when no resolution up to 2**22 does).
    """

    def __init__(self, message: str, lower: float = float("nan"), upper: float = float("nan"),
                 needed: Optional[int] = None):
        super().__init__(message, "resolution")
        self.lower = float(lower)
        self.upper = float(upper)
        self.needed = None if needed is None else int(needed)

    def __reduce__(self):
        return (type(self), (str(self), self.lower, self.upper, self.needed))
