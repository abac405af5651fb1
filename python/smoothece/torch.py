"""SmoothECE as torchmetrics metrics, with a bounded, mergeable state.

- :class:`BinarySmoothECE` — predictions of the positive class (probabilities,
  or logits with ``from_logits=True``: sigmoid) against 0/1 targets.
- :class:`MulticlassSmoothECE` — an (N, K) matrix of probabilities (or logits:
  softmax) against class indices; ``average="top_label"`` (confidence
  calibration, :func:`smoothece.top_label_smece`) or the class-wise
  (one-vs-rest) SmoothECE per class with ``"none"``, their mean with
  ``"macro"`` or their frequency-weighted mean with ``"weighted"``
  (:func:`smoothece.classwise_smece`).
- :class:`SmoothECE` — ``SmoothECE(task="binary" | "multiclass", ...)``, as
  torchmetrics' ``CalibrationError(task=...)``.

The state of a metric is not the rows but their :class:`smoothece.CalibrationSketch`
(one, or one per class): its size does not grow with the rows seen (at most about
40·resolution bytes a sketch, 1.3 MB at the default resolution; less while the
predictions take few distinct values). ``update`` adds a batch to it (one pass,
on the CPU: a CUDA tensor is copied to the CPU once, 16-bit floats converted
there), and ``compute`` answers from it the number that
:func:`smoothece.smece` (or the multiclass functions) gives on all the rows
(to the accuracy contract, 1e-6; usually to the last digit). Across processes
the states are gathered as bytes (``torchmetrics``' ``gather_all_tensors``,
which takes tensors of different sizes) and merged exactly, in rank order, so
every rank computes the same value; ``merge_state``, ``forward`` (the batch's
value, the batch added), ``reset``, ``state_dict`` (after ``persistent(True)``),
pickling and ``clone`` work as for any torchmetrics metric. :meth:`sketch`
returns the (synced) sketch for intervals and diagrams
(``metric.sketch().bootstrap_smece(seed=0)``, ``.reliability_diagram(seed=0)``).

Importing this module imports torch and torchmetrics; ``import smoothece`` does not.
"""

from __future__ import annotations

import re
import struct
from contextlib import contextmanager
from typing import Any, Iterator, Optional, Sequence, Tuple, Union

import numpy as np

try:
    import torch
    from torchmetrics import Metric
    from torchmetrics.utilities.distributed import gather_all_tensors
except ImportError as _err:  # pragma: no cover - depends on the environment
    raise ImportError('smoothece.torch needs PyTorch and torchmetrics: pip install "smoothece[torch]" '
                      '(or "torch>=2.0" "torchmetrics>=1.3")') from _err

from . import _validate
from . import multiclass as _multiclass
from ._errors import InputError
from .sketch import CalibrationSketch

__all__ = ["BinarySmoothECE", "MulticlassSmoothECE", "SmoothECE"]

_STATE = "sketch_state"  #: the name of the one metric state (a 1-D uint8 tensor: the sketches' bytes)
_AVERAGES = ("top_label", "macro", "weighted", "none")

# ----------------------------------------------------------------------------
# the state: sketches, and their bytes
# ----------------------------------------------------------------------------
_MAGIC = b"smeceTM1"  # format 1 of the metric state
_HEADER = struct.Struct("<8sII")  # magic, kind, number of sketches
_KIND_CODES = {"binary": 0, "top_label": 1, "classwise": 2}
_KIND_NAMES = {v: k for k, v in _KIND_CODES.items()}


class _State:
    """The sketches of a metric: one (binary, top-label) or one per class (class-wise, with
    each class's total label weight). Its bytes: a header, the sketches' byte lengths,
    the label weights (class-wise only), then each sketch's :meth:`CalibrationSketch.to_bytes`."""

    __slots__ = ("kind", "sketches", "label_weight")

    def __init__(self, kind: str, sketches: list, label_weight: Optional[np.ndarray]):
        self.kind = kind
        self.sketches = sketches
        self.label_weight = label_weight

    @classmethod
    def empty(cls, kind: str, count: int, resolution: int, metric: str) -> "_State":
        weights = np.zeros(count) if kind == "classwise" else None
        return cls(kind, [CalibrationSketch(resolution, metric) for _ in range(count)], weights)

    def copy(self) -> "_State":
        weights = None if self.label_weight is None else self.label_weight.copy()
        return _State(self.kind, [s.copy() for s in self.sketches], weights)

    def merge(self, other: "_State") -> "_State":
        """Adds ``other`` into this state (exact; the sketches check resolution and metric)."""
        if other.kind != self.kind or len(other.sketches) != len(self.sketches):
            raise ValueError(f"cannot merge a metric state of {other.describe()} into one of {self.describe()}")
        for mine, theirs in zip(self.sketches, other.sketches):
            mine.merge(theirs)
        if self.label_weight is not None:
            self.label_weight += other.label_weight
        return self

    def describe(self) -> str:
        s = self.sketches[0]
        what = f"{len(self.sketches)} classes, class-wise" if self.kind == "classwise" else self.kind.replace("_", "-")
        return f"{what} (resolution {s.resolution}, metric {s.metric!r})"

    @property
    def empty_rows(self) -> bool:
        """Whether there is no row with positive weight (no SmoothECE to answer)."""
        return not self.sketches[0].total_weight > 0

    def to_bytes(self) -> bytearray:
        blobs = [s.to_bytes() for s in self.sketches]
        out = bytearray(_HEADER.pack(_MAGIC, _KIND_CODES[self.kind], len(blobs)))
        out += np.array([len(b) for b in blobs], dtype="<u8").tobytes()
        if self.label_weight is not None:
            out += self.label_weight.astype("<f8").tobytes()
        for b in blobs:
            out += b
        return out

    @classmethod
    def from_bytes(cls, data: bytes) -> "_State":
        bad = "corrupt SmoothECE metric state: "
        if len(data) < _HEADER.size:
            raise ValueError(bad + f"{len(data)} bytes, fewer than its header's {_HEADER.size}")
        magic, code, count = _HEADER.unpack_from(data)
        if magic != _MAGIC or code not in _KIND_NAMES or count < 1:
            raise ValueError(bad + "not the bytes of a smoothece.torch metric's state")
        kind = _KIND_NAMES[code]
        at = _HEADER.size
        extra = count if kind == "classwise" else 0
        if len(data) < at + 8 * (count + extra):
            raise ValueError(bad + "truncated header")
        lengths = np.frombuffer(data, dtype="<u8", count=count, offset=at).astype(np.int64)
        at += 8 * count
        weights = np.frombuffer(data, dtype="<f8", count=extra, offset=at).astype(np.float64) if extra else None
        at += 8 * extra
        if at + int(lengths.sum()) != len(data) or (lengths <= 0).any():
            raise ValueError(bad + f"the sketches' lengths do not add up to its {len(data)} bytes")
        sketches = []
        for length in lengths.tolist():
            sketches.append(CalibrationSketch.from_bytes(data[at:at + length]))
            at += length
        return cls(kind, sketches, weights)


def _as_tensor(data: bytearray) -> "torch.Tensor":
    return torch.frombuffer(data, dtype=torch.uint8)  # shares the (writable) bytearray: no copy


def _state_bytes(value: Any) -> bytes:
    if not isinstance(value, torch.Tensor) or value.dtype != torch.uint8 or value.ndim != 1:
        what = f"a tensor of dtype {value.dtype} and shape {tuple(value.shape)}" if isinstance(value, torch.Tensor) \
            else type(value).__name__
        raise TypeError(f"a SmoothECE metric state is a 1-D uint8 tensor (its sketches' bytes), got {what}")
    return value.detach().to("cpu").contiguous().numpy().tobytes()


def _merge_states(states: Union["torch.Tensor", Sequence["torch.Tensor"]]) -> "torch.Tensor":
    """The ``dist_reduce_fx`` of the state: the merged bytes of several states (a list of 1-D
    tensors, or equal-length ones stacked in rows). The metrics sync through their own
    ``_sync_dist``, which gathers states of different lengths; this serves other callers."""
    rows = list(states) if not isinstance(states, torch.Tensor) or states.ndim == 2 else [states]
    merged = None
    for row in rows:
        state = _State.from_bytes(_state_bytes(row))
        merged = state if merged is None else merged.merge(state)
    if merged is None:
        raise ValueError("no SmoothECE metric state to merge")
    return _as_tensor(merged.to_bytes())


# ----------------------------------------------------------------------------
# tensors in, numpy arrays out
# ----------------------------------------------------------------------------
def _cpu(x: Any, name: str) -> "torch.Tensor":
    """``x`` detached, on the CPU (no copy when it is there already), strided."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.layout != torch.strided:
        raise TypeError(f"{name} must be a dense tensor, got layout {x.layout} (call .to_dense() first)")
    x = x.detach()
    if x.device.type != "cpu":
        x = x.to("cpu")  # one transfer, in the tensor's own dtype (16-bit floats are widened below, on the CPU)
    return x.resolve_conj().resolve_neg()


def _numpy(x: "torch.Tensor", name: str) -> np.ndarray:
    """A CPU tensor as numpy: in place, except 16-bit floats, widened exactly to float32."""
    if x.is_complex():
        raise TypeError(f"{name} must be a tensor of real numbers, got dtype {x.dtype}")
    if x.dtype in (torch.float16, torch.bfloat16):
        x = x.to(torch.float32)
    return x.numpy()


_RENAMED = {"f": "preds", "probs": "preds", "logits": "preds", "y": "target", "labels": "target"}
_WORD = re.compile(r"\b(" + "|".join(_RENAMED) + r")\b")
_LOGIT_HINTS = (
    "values below 0 and above 1 look like logits (log-odds): apply the logistic function (scipy.special.expit) "
    "first; metric='logit' still takes probabilities",
    "normalize the rows, raise atol, or pass logits= instead",
)


@contextmanager
def _torch_names(flattened: bool) -> Iterator[None]:
    """Re-raises smoothece's InputError with the metric's argument names (preds, target, weights)
    and its options (from_logits=True, clip=True) where the library's message suggests a fix."""
    try:
        yield
    except InputError as err:
        message = str(err)
        for hint in _LOGIT_HINTS:
            message = message.replace(hint, "__LOGITS__")
        message = message.replace("pass clip=True", "__CLIP__")
        message = _WORD.sub(lambda m: _RENAMED[m.group(1)], message)
        message = message.replace("__LOGITS__", "if preds are logits, create the metric with from_logits=True")
        message = message.replace("__CLIP__", "create the metric with clip=True")
        argument = _RENAMED.get(err.argument, err.argument)
        if flattened and err.index is not None:
            message += f" (indices into {argument} flattened)"
        raise InputError(message, argument, -1 if err.index is None else err.index, err.value, err.count,
                         err.size) from None


def _same_shape(x: "torch.Tensor", like: "torch.Tensor", name: str, like_name: str) -> None:
    if x.shape != like.shape:
        raise InputError(f"{name} must have the shape of {like_name}, got {name}.shape={tuple(x.shape)} and "
                         f"{like_name}.shape={tuple(like.shape)}", name, size=x.numel())


# ----------------------------------------------------------------------------
# the metrics
# ----------------------------------------------------------------------------
class _Batch:
    """A validated batch (its own state), handed from ``forward`` to ``update``."""

    __slots__ = ("state",)

    def __init__(self, state: _State):
        self.state = state


class _SmoothECEMetric(Metric):
    """What the SmoothECE metrics share: the sketch state and its handling by torchmetrics.

    The metric state ``sketch_state`` is a property: torchmetrics reads it as a 1-D
    uint8 tensor (the sketches' bytes, encoded when read and kept until the next
    change) and writes it through its setter (decoded), so that ``reset``,
    ``state_dict``, ``merge_state`` and unsyncing all go through the sketches.
    ``_sync_dist``, ``_reduce_states``, ``_copy_state_dict`` and ``_apply`` are
    overridden: states of different lengths are gathered and merged, forward's
    snapshots are sketch copies rather than bytes, and dtype casts leave the bytes alone.
    """

    is_differentiable = False
    higher_is_better = False
    full_state_update = False
    plot_lower_bound = 0.0

    _kind: str = "binary"

    def __init__(self, count: int, *, from_logits: bool, resolution: int, metric: str, threads: Optional[int],
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.from_logits = _validate.flag(from_logits, "from_logits")
        # TypeError / ValueError for a bad resolution or metric; None: the metric's default
        self.resolution = CalibrationSketch(resolution, metric).resolution
        self.metric = metric
        _validate.threads(threads)
        self.threads = threads
        self._count = count
        self._st = self._empty()
        self._encoded: Optional[torch.Tensor] = None
        self.add_state(_STATE, default=_as_tensor(self._st.to_bytes()), dist_reduce_fx=_merge_states,
                       persistent=False)

    # -- the state ------------------------------------------------------------
    def _empty(self) -> _State:
        return _State.empty(self._kind, self._count, self.resolution, self.metric)

    def _adopt(self, value: Any) -> _State:
        """A state for this metric from a snapshot (taken over) or a state tensor (decoded)."""
        state = value if isinstance(value, _State) else _State.from_bytes(_state_bytes(value))
        first = state.sketches[0]
        if state.kind != self._kind or len(state.sketches) != self._count or first.resolution != self.resolution \
                or first.metric != self.metric:
            raise ValueError(f"the metric state holds {state.describe()} sketches; {type(self).__name__} keeps "
                             f"{self._empty().describe()} ones")
        return state

    @property
    def sketch_state(self) -> "torch.Tensor":
        """The state as torchmetrics sees it: the sketches' bytes (a 1-D uint8 CPU tensor)."""
        if self._encoded is None:
            self._encoded = _as_tensor(self._st.to_bytes())
        return self._encoded

    @sketch_state.setter
    def sketch_state(self, value: Any) -> None:
        self._st = self._adopt(value)
        self._encoded = None

    def _changed(self) -> None:
        self._encoded = None
        self._computed = None

    def _copy_state_dict(self) -> dict:
        return {_STATE: self._st.copy()}  # a copy of the sketches (a memcpy), not their bytes

    def _reduce_states(self, incoming_state: dict) -> None:
        if _STATE not in incoming_state:
            raise ValueError(f"Expected state variable {_STATE} to be present in incoming state")
        incoming = incoming_state[_STATE]
        state = self._adopt(incoming.copy() if isinstance(incoming, _State) else incoming)
        self._st = state.merge(self._st)
        self._changed()

    def _sync_dist(self, dist_sync_fn: Any = gather_all_tensors, process_group: Optional[Any] = None) -> None:
        # Every rank's bytes, of whatever length (gather_all_tensors pads and trims), on the
        # metric's device (NCCL gathers CUDA tensors); merged in rank order, so all ranks agree.
        local = self.sketch_state.to(self.device)
        gathered = (dist_sync_fn or gather_all_tensors)(local, group=process_group or self.process_group)
        merged = None
        for part in gathered:
            state = self._adopt(part)
            merged = state if merged is None else merged.merge(state)
        self._st = merged
        self._changed()

    def _apply(self, fn: Any, exclude_state: Sequence[str] = ()) -> "torch.nn.Module":
        # The bytes stay on the CPU as they are: .to(device) moves the results, set_dtype leaves the bytes.
        return super()._apply(fn, exclude_state=(*tuple(exclude_state), _STATE))

    def reset(self) -> None:
        self._st = self._empty()
        self._encoded = self._defaults[_STATE]  # what super().reset() reads for the device, at no cost
        super().reset()

    # -- update, forward ------------------------------------------------------
    def _add(self, state: _State, preds: Any, target: Any, weights: Any) -> None:
        raise NotImplementedError

    def update(self, preds: "torch.Tensor", target: "torch.Tensor", weights: Optional["torch.Tensor"] = None) -> None:
        """Adds a batch. A batch with a bad value raises ``smoothece.InputError`` (or
        ``TypeError``), naming the argument, and adds nothing."""
        if isinstance(preds, _Batch):
            self._st.merge(preds.state)
        else:
            self._add(self._st, preds, target, weights)
        self._changed()

    def forward(self, preds: "torch.Tensor", target: "torch.Tensor",
                weights: Optional["torch.Tensor"] = None) -> "torch.Tensor":
        """Adds the batch and returns its own SmoothECE (as ``compute`` on the batch alone).

        The batch is checked before the state is touched: a bad batch, or one without
        rows of positive weight (which has no SmoothECE), raises and adds nothing.
        """
        batch = self._empty()
        self._add(batch, preds, target, weights)
        if batch.empty_rows:
            raise InputError(f"{type(self).__name__}.forward: the batch has no rows of positive weight, so it has no "
                             "SmoothECE (update() adds such batches)", "preds", size=batch.sketches[0].n)
        # With dist_sync_on_step torchmetrics adds the batch to the state in place first: keep a copy.
        before = self._st.copy() if self.dist_sync_on_step else self._st
        count, on_cpu = self._update_count, self.compute_on_cpu
        try:
            return super().forward(_Batch(batch), None)
        except BaseException:
            # As if forward had not been called (torchmetrics has reset the state and changed its flags).
            self._st, self._encoded, self._update_count, self.compute_on_cpu = before, None, count, on_cpu
            self._computed = self._forward_cache = None
            self._is_synced, self._should_unsync, self._to_sync = False, True, self.sync_on_compute
            self._enable_grad = False
            raise

    # -- answers --------------------------------------------------------------
    def _value(self, values: Union[float, np.ndarray]) -> "torch.Tensor":
        dtype = torch.float32 if self.device.type == "mps" else torch.float64  # MPS has no float64
        return torch.as_tensor(values, dtype=dtype, device=self.device)

    def _smece_all(self) -> np.ndarray:
        if self._st.empty_rows:
            raise InputError(f"{type(self).__name__} has no rows of positive weight to compute the SmoothECE of: "
                             "call update() or forward() with some first", "preds", size=self._st.sketches[0].n)
        return np.array([s.smece(threads=self.threads) for s in self._st.sketches])

    def sketch(self) -> Union[CalibrationSketch, Tuple[CalibrationSketch, ...]]:
        """A copy of the metric's sketch, synced across processes as ``compute`` is (so call it
        on every rank): ``.bootstrap_smece(seed=...)``, ``.reliability_diagram(seed=...)``,
        ``.calibration_test(seed=...)``, ``.smece_sigma(...)``, ``.to_bytes()``. Class-wise
        (``average`` other than "top_label"): a tuple of one sketch per class, class c's
        (``f = p_c``, ``y = [target == c]``) at index c."""
        with self.sync_context(dist_sync_fn=self.dist_sync_fn, should_sync=self._to_sync,
                               should_unsync=self._should_unsync):
            copies = tuple(s.copy() for s in self._st.sketches)
        return copies if self._kind == "classwise" else copies[0]

    def extra_repr(self) -> str:
        return f"from_logits={self.from_logits}, resolution={self.resolution}, metric={self.metric!r}"


class BinarySmoothECE(_SmoothECEMetric):
    r"""The SmoothECE of binary predictions (:func:`smoothece.smece`), as a torchmetrics metric.

    Parameters
    ----------
    from_logits : bool, default False
        ``preds`` are logits (log-odds; finite): their sigmoid, computed in
        float64, is the prediction. Otherwise ``preds`` are probabilities in [0, 1].
    clip : bool or float, default False
        As in :func:`smoothece.smece`: ``True`` clamps probabilities within
        0.01 of [0, 1] (a float: that tolerance) instead of refusing them.
    resolution : int, optional
        The sketch's resolution (:class:`smoothece.CalibrationSketch`; by
        default 2**15 for l1, 2**20 for logit): the state holds at most about
        56·resolution bytes (1.8 MB at the l1 default; at the logit default
        only the blocks its rows reach), whatever the number of rows.
    metric : {"l1", "logit"}, default "l1"
        The smoothing metric, as in :func:`smoothece.smece` (``"logit"``
        smooths in logit space; the predictions are still probabilities or,
        with ``from_logits``, logits).
    threads : int, optional
        Threads for the sketch's passes and answers (default: all CPUs).
    **kwargs
        torchmetrics' ``Metric`` options (``dist_sync_on_step``, ``process_group``,
        ``sync_on_compute``, ...).

    ``update(preds, target, weights=None)``: ``preds`` and ``target`` tensors of the
    same shape (any; read flattened), on any device; ``preds`` float16, bfloat16,
    float32 or float64 (or int/bool 0/1 predictions); ``target`` 0/1 (bool, int or
    float); ``weights`` non-negative, of their shape. ``compute()``: the SmoothECE
    σ* of every row added (across processes when distributed), a float64 scalar
    tensor on the metric's device.

    Examples
    --------
    >>> metric = BinarySmoothECE(from_logits=True)       # doctest: +SKIP
    >>> for logits, y in loader:                          # doctest: +SKIP
    ...     metric.update(logits, y)
    >>> metric.compute()                                  # doctest: +SKIP
    """

    _kind = "binary"

    def __init__(self, *, from_logits: bool = False, clip: Union[bool, float] = False,
                 resolution: Optional[int] = None, metric: str = "l1", threads: Optional[int] = None,
                 **kwargs: Any) -> None:
        _validate.clip_range(clip)
        self.clip = clip
        super().__init__(1, from_logits=from_logits, resolution=resolution, metric=metric, threads=threads,
                         **kwargs)

    def _add(self, state: _State, preds: Any, target: Any, weights: Any) -> None:
        p, t = _cpu(preds, "preds"), _cpu(target, "target")
        _same_shape(t, p, "target", "preds")
        w = None
        if weights is not None:
            w = _cpu(weights, "weights")
            _same_shape(w, p, "weights", "preds")
            w = _numpy(w.reshape(-1), "weights")
        flattened = p.ndim != 1
        p, t = p.reshape(-1), t.reshape(-1)
        f = self._sigmoid(p) if self.from_logits else _numpy(p, "preds")
        with _torch_names(flattened):
            state.sketches[0].update(f, _numpy(t, "target"), w, clip=self.clip, threads=self.threads)

    @staticmethod
    def _sigmoid(z: "torch.Tensor") -> np.ndarray:
        if z.is_complex() or z.dtype == torch.bool:
            raise TypeError(f"preds must be real logits, got dtype {z.dtype}")
        z64 = z.to(torch.float64)
        bad = ~torch.isfinite(z64)
        if bool(bad.any()):
            i, count = int(bad.to(torch.uint8).argmax()), int(bad.sum())
            raise InputError(f"preds[{i}] = {float(z64[i])!r}: logits must be finite ({count} of {z64.numel()} "
                             f"values in preds bad, first at index {i})", "preds", i, float(z64[i]), count,
                             z64.numel())
        return (z64.sigmoid_() if z64 is not z else torch.sigmoid(z64)).numpy()

    def compute(self) -> "torch.Tensor":
        return self._value(self._smece_all()[0])


class MulticlassSmoothECE(_SmoothECEMetric):
    r"""The SmoothECE of a multiclass model, as a torchmetrics metric.

    Parameters
    ----------
    num_classes : int
        K ≥ 2: ``preds`` has shape (N, K).
    average : {"top_label", "macro", "weighted", "none"}, default "top_label"
        ``"top_label"``: confidence calibration, the SmoothECE of the pairs
        (max_c p_c, [argmax_c p_c == target]) (:func:`smoothece.top_label_smece`;
        ties go to the lowest class). The others are class-wise (one-vs-rest:
        for each class c the SmoothECE of (p_c, [target == c]),
        :func:`smoothece.classwise_smece`, one sketch per class): ``"none"``
        returns the K values, ``"macro"`` their mean, ``"weighted"`` their
        mean weighted by the classes' frequencies among the targets (by weight
        when weighted; NaN if no row has weight).
    from_logits : bool, default False
        ``preds`` are logits (finite): their softmax, computed stably in
        float64, gives the probabilities. Otherwise each row of ``preds`` holds
        probabilities in [0, 1] summing to 1 within ``atol``.
    atol : float, optional
        Tolerance on |Σ_c p_c − 1|; default K · max(1e-6, 2·eps of preds' dtype)
        (so float16 and bfloat16 probabilities are read too).
    resolution, metric, threads, **kwargs
        As in :class:`BinarySmoothECE`. Class-wise, the state is one sketch per
        class: up to K · 40 · resolution bytes (pass a smaller resolution for many classes).

    ``update(preds, target, weights=None)``: ``preds`` (N, K) (float16, bfloat16,
    float32 or float64), ``target`` (N,) class indices in [0, K) (int, bool or
    integer-valued float), ``weights`` (N,) non-negative, on any device.
    """

    def __init__(self, num_classes: int, *, average: str = "top_label", from_logits: bool = False,
                 atol: Optional[float] = None, resolution: Optional[int] = None, metric: str = "l1",
                 threads: Optional[int] = None, **kwargs: Any) -> None:
        k = _validate.count(num_classes, "num_classes", 2)
        self.num_classes = k
        self.average = _validate.choice(average, "average", _AVERAGES)
        self._kind = "top_label" if self.average == "top_label" else "classwise"
        self.atol = None if atol is None else _multiclass._tolerance(atol, k)
        super().__init__(1 if self._kind == "top_label" else k, from_logits=from_logits, resolution=resolution,
                         metric=metric, threads=threads, **kwargs)

    def _tolerance(self, dtype: "torch.dtype") -> float:
        if self.atol is not None:
            return self.atol
        eps = torch.finfo(dtype).eps if dtype.is_floating_point else 0.0
        return self.num_classes * max(1e-6, 2.0 * eps)

    def _add(self, state: _State, preds: Any, target: Any, weights: Any) -> None:
        p, t = _cpu(preds, "preds"), _cpu(target, "target")
        k = self.num_classes
        if p.ndim != 2 or p.shape[1] != k:
            raise InputError(f"preds must have shape (N, num_classes) = (N, {k}), got {tuple(p.shape)}"
                             + (" (flatten the other dimensions into N first)" if p.ndim > 2 else ""), "preds",
                             size=p.numel())
        if p.shape[0] == 0:  # no rows: nothing to add (the library refuses an empty matrix)
            return
        tol = self._tolerance(p.dtype)
        mat, lab = _numpy(p, "preds"), _numpy(t, "target")
        w = None if weights is None else _numpy(_cpu(weights, "weights"), "weights")
        source = {"logits" if self.from_logits else "probs": mat}
        with _torch_names(False):
            if self._kind == "top_label":
                f, y = _multiclass.confidence_pairs(labels=lab, atol=tol, **source)
                state.sketches[0].update(f, y, w, threads=self.threads)
            else:
                self._add_classwise(state, source, lab, w, tol)

    def _add_classwise(self, state: _State, source: dict, labels: np.ndarray, weights: Optional[np.ndarray],
                       tol: float) -> None:
        # As smoothece.classwise_smece: the same checks, the same class columns (exp(z_c − lse) from logits).
        kind, mat, lab, w, _ = _multiclass._prepare(source.get("probs"), labels, source.get("logits"), weights, tol)
        scan = _multiclass._Scan(kind, mat, tol, None, want_lse=(kind == "logits"))
        n = lab.shape[0]
        y = np.empty(n, dtype=np.bool_)
        col = np.empty(n if kind == "logits" else 0, dtype=np.float64)
        for c, sketch in enumerate(state.sketches):  # a loop over classes; the rows are the core's
            np.equal(lab, c, out=y)
            if kind == "probs":
                f = mat[:, c]
            else:
                np.subtract(mat[:, c], scan.lse, out=col)
                with np.errstate(under="ignore"):
                    np.exp(col, out=col)
                np.minimum(col, 1.0, out=col)
                f = col
            sketch.update(f, y, w, threads=self.threads)  # class 0 checks the weights before anything is added
        state.label_weight += np.bincount(lab, weights=w, minlength=self.num_classes)

    def compute(self) -> "torch.Tensor":
        values = self._smece_all()
        if self.average == "top_label":
            return self._value(values[0])
        if self.average == "none":
            return self._value(values)
        if self.average == "macro":
            return self._value(values.mean())
        counts = self._st.label_weight
        total = counts.sum()
        freq = counts / total if total > 0 else np.zeros(counts.size)
        fsum = freq.sum()
        return self._value(float(np.dot(values, freq) / fsum) if fsum > 0 else float("nan"))

    def extra_repr(self) -> str:
        return f"num_classes={self.num_classes}, average={self.average!r}, " + super().extra_repr()


class SmoothECE:
    """``SmoothECE(task="binary", ...)`` is a :class:`BinarySmoothECE`;
    ``SmoothECE(task="multiclass", num_classes=K, average=..., ...)`` a
    :class:`MulticlassSmoothECE` (as torchmetrics' ``CalibrationError(task=...)``)."""

    def __new__(cls, task: str, num_classes: Optional[int] = None, **kwargs: Any) -> _SmoothECEMetric:
        task = _validate.choice(task, "task", ("binary", "multiclass"))
        if task == "binary":
            if num_classes is not None or "average" in kwargs or "atol" in kwargs:
                raise TypeError("task='binary' takes no num_classes, average or atol")
            return BinarySmoothECE(**kwargs)
        if num_classes is None:
            raise TypeError("task='multiclass' needs num_classes")
        return MulticlassSmoothECE(num_classes, **kwargs)
