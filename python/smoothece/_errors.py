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
