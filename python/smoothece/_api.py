"""The SmoothECE of arrays: validation here, all numerical work in the core."""

from __future__ import annotations

from typing import Optional, Union

from . import _validate
from ._summary import summarise
from ._typing import ArrayLike
from ._util import sigma_star


def smece(
    f: ArrayLike,
    y: ArrayLike,
    *,
    weights: Optional[ArrayLike] = None,
    metric: str = "l1",
    clip: Union[bool, float] = False,
    threads: Optional[int] = None,
) -> float:
    """The SmoothECE: the fixpoint σ* of σ ↦ smECEσ (Błasiok & Nakkiran 2024, Def. 3).

    Parameters
    ----------
    f : array_like, shape (n,)
        Predicted probabilities in [0, 1]. float32 and float64 are read in
        place (any stride); other numeric dtypes are converted once.
    y : array_like, shape (n,)
        Outcomes, 0 or 1 (bool, int8, uint8, int32, int64, float32, float64
        read in place).
    weights : array_like, shape (n,), optional
        Non-negative finite weights (not all zero). The result is invariant
        to scaling them by any positive factor, and integer weights give the
        same result as repeating rows.
    metric : {"l1", "logit"}, default "l1"
        "l1" smooths on [0, 1] with the reflected Gaussian (the paper's
        Definition 3). "logit" smooths in logit space with the plain Gaussian
        on ℝ (paper Section 5.3; suits models trained with cross-entropy):
        smECEσ = ∫ |(1/W) Σ wᵢ φσ(t − logit fᵢ)(fᵢ − yᵢ)| dt, σ in logit units.
        Predictions are clamped into [1e-12, 1 − 1e-12] before the logit, so a
        prediction of exactly 0 or 1 sits at logit ∓27.63, where it only
        interacts with rows within a few σ of it (its residual still counts
        in full). relplot's logit kernel (``config.use_logit_scaling``) is
        another quantity: its σ is a quarter of this one (its smECEσ is this
        smECE at 4σ) and its SmoothECE the fixpoint of σ ↦ smECE at 4σ, so
        the two packages' logit values differ (docs/accuracy.md).
    clip : bool or float, default False
        False refuses predictions outside [0, 1]. True clamps those within
        0.01 of [0, 1] into it (float round-off, forecasters that issue
        -0.01) and refuses the rest; a float ``tol`` clamps values within
        [-tol, 1 + tol]. NaN and ±inf are always refused.
    threads : int, optional
        Worker threads for the pass over the rows (default: all CPUs this
        process may use; more are capped). The result does not depend on it
        beyond rounding (≲ 1e-15).

    Returns
    -------
    float
        σ*, within 1e-6 of the exact fixpoint for every input (see the
        accuracy contract in the README). 0.0 when every residual y − f is zero.

    Raises
    ------
    TypeError
        Non-numeric input.
    smoothece.InputError (a ValueError)
        Empty, non-1-D or mismatched arrays; predictions outside [0, 1] or
        not finite; labels other than 0/1; negative, non-finite or all-zero
        weights. The message names the argument, the first bad index, its
        value and how many values are bad (also as attributes), with a hint
        when the values suggest a cause (percentages, logits, swapped
        arguments). Inputs are never modified.
    """
    t = _validate.threads(threads)
    analysis = summarise(f, y, weights, clip=clip, metric=metric, threads=threads)
    return sigma_star(analysis, t)


def smece_sigma(
    f: ArrayLike,
    y: ArrayLike,
    sigma: float,
    *,
    weights: Optional[ArrayLike] = None,
    metric: str = "l1",
    clip: Union[bool, float] = False,
    threads: Optional[int] = None,
) -> float:
    """smECEσ = ∫₀¹ |r̂σ(t)| dt at a fixed bandwidth σ > 0.

    r̂σ(t) = (1/W) Σ wᵢ K̃σ(t, fᵢ)(yᵢ − fᵢ) with the reflected Gaussian kernel
    K̃σ. Within 1e-6 of the exact integral for σ ≥ 0.01 and 1e-5 below (the
    accuracy contract; in practice ~1e-8): bandwidths a
    grid resolves are smoothed on it (16 nodes per σ); smaller ones are
    integrated exactly from the distinct predictions, where the kernel is
    local (an isolated prediction contributes |its residual sum|, nearby
    ones are smoothed together). As σ → 0 it tends to Σ over distinct
    predictions of |Σ w(y − f)| / W. Non-increasing in σ.

    With ``metric="logit"``, σ is in logit units and the integral runs over ℝ
    (see :func:`smece`).

    Parameters and errors are those of :func:`smece`, plus ``sigma``, which
    must be a positive finite number (for ``metric="logit"`` within
    [1e-300, 1e300]; beyond, smECEσ is its limit at either end).
    """
    s = _validate.sigma(sigma, metric)
    t = _validate.threads(threads)
    analysis = summarise(f, y, weights, clip=clip, metric=metric, threads=threads, sigma=s)
    value, _ = analysis.smece_sigma(s, t)
    return value
