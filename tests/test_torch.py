"""smoothece.torch: torchmetrics metrics whose state is the sketch.

Every value is checked against the array functions (smoothece.smece,
top_label_smece, classwise_smece) on the concatenated rows, with the
probabilities of logits computed here independently (scipy's expit, numpy's
softmax); the distributed test runs two real processes on gloo over loopback.
"""

import copy
import json
import multiprocessing
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torchmetrics = pytest.importorskip("torchmetrics")
special = pytest.importorskip("scipy.special")

import smoothece  # noqa: E402
from smoothece import InputError  # noqa: E402
from smoothece.torch import BinarySmoothECE, MulticlassSmoothECE, SmoothECE  # noqa: E402

TOL = 1e-6  # the accuracy contract


def binary_data(n, seed=0, weighted=False):
    rng = np.random.default_rng(seed)
    z = rng.normal(0.3, 1.5, n)  # logits
    f = special.expit(z)
    y = rng.random(n) < special.expit(1.4 * z)  # the truth is more extreme: an under-confident model
    w = rng.lognormal(size=n) if weighted else None
    return z, f, y, w


def multiclass_data(n, k, seed=0, weighted=False):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 2.5
    probs = special.softmax(z, axis=1)
    truth = special.softmax(0.7 * z, axis=1).cumsum(axis=1)  # a model that is over-confident
    labels = np.minimum((truth < rng.random((n, 1))).sum(axis=1), k - 1)
    w = rng.lognormal(size=n) if weighted else None
    return z, probs, labels, w


def batches(n, count):
    return np.array_split(np.arange(n), count)


def t(a, dtype=None):
    out = torch.from_numpy(np.ascontiguousarray(a))
    return out if dtype is None else out.to(dtype)


# ----------------------------------------------------------------------------
# values: compute() equals the array functions on all the rows
# ----------------------------------------------------------------------------
@pytest.mark.parametrize("n_batches", [1, 7])
@pytest.mark.parametrize("from_logits", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_equals_smece(n_batches, from_logits, weighted):
    z, f, y, w = binary_data(5000, seed=n_batches, weighted=weighted)
    metric = BinarySmoothECE(from_logits=from_logits)
    for rows in batches(f.size, n_batches):
        metric.update(t((z if from_logits else f)[rows]), t(y[rows]), None if w is None else t(w[rows]))
    value = metric.compute()
    assert isinstance(value, torch.Tensor) and value.shape == () and value.dtype == torch.float64
    expected = smoothece.smece(f, y, weights=w)
    assert abs(value.item() - expected) <= TOL
    assert expected > 0.02  # a miscalibrated model: a value far from 0, so the comparison means something


def test_binary_grid_form_equals_smece():
    # 60,000 continuous predictions: more than resolution/2 distinct ones, so the sketch is on its grid.
    z, f, y, w = binary_data(60_000, seed=3, weighted=True)
    metric = BinarySmoothECE(from_logits=True)
    for rows in batches(f.size, 4):
        metric.update(t(z[rows]), t(y[rows]), t(w[rows]))
    assert not metric.sketch().exact
    assert abs(metric.compute().item() - smoothece.smece(f, y, weights=w)) <= TOL


@pytest.mark.parametrize("pred_dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
@pytest.mark.parametrize("target_dtype", [torch.bool, torch.int64, torch.uint8, torch.float32])
def test_binary_dtypes(pred_dtype, target_dtype):
    _, f, y, _ = binary_data(3000, seed=4)
    preds = t(f, pred_dtype)  # rounded to the dtype: the reference takes the rounded values
    target = t(y, target_dtype)
    metric = BinarySmoothECE()
    for rows in batches(f.size, 3):
        metric.update(preds[rows], target[rows])
    rounded = preds.to(torch.float64).numpy()  # 16-bit → float64 is exact
    assert abs(metric.compute().item() - smoothece.smece(rounded, y)) <= TOL


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_binary_logits_in_float16_and_float32(dtype):
    z, _, y, _ = binary_data(4000, seed=5)
    logits = t(z, dtype)
    metric = BinarySmoothECE(from_logits=True)
    for rows in batches(z.size, 5):
        metric.update(logits[rows], t(y[rows]))
    f = special.expit(logits.to(torch.float64).numpy())
    assert abs(metric.compute().item() - smoothece.smece(f, y)) <= TOL


def test_strided_views_are_read():
    _, probs, labels, _ = multiclass_data(3000, 3, seed=25)
    matrix = t(np.asfortranarray(probs))  # column-major: rows are strided
    metric = MulticlassSmoothECE(3)
    metric.update(matrix, t(labels))
    assert abs(metric.compute().item() - smoothece.top_label_smece(probs, labels)) <= TOL
    binary = BinarySmoothECE()
    binary.update(matrix[:, 1], t(labels == 1))  # one class's column: a strided view
    assert abs(binary.compute().item() - smoothece.smece(probs[:, 1], labels == 1)) <= TOL


def test_dist_sync_on_step_forward():
    # Not distributed here: the full-state path of forward (two updates), then the same values.
    z, f, y, _ = binary_data(3000, seed=26)
    metric = BinarySmoothECE(from_logits=True, dist_sync_on_step=True)
    for rows in batches(f.size, 3):
        assert abs(metric(t(z[rows]), t(y[rows])).item() - smoothece.smece(f[rows], y[rows])) <= TOL
    with pytest.raises(InputError):
        metric(torch.tensor([0.0, float("nan")]), torch.tensor([0, 1]))
    assert abs(metric.compute().item() - smoothece.smece(f, y)) <= TOL


def test_binary_any_shape_is_flattened():
    _, f, y, w = binary_data(3000, seed=6, weighted=True)
    metric = BinarySmoothECE()
    metric.update(t(f).reshape(30, 10, 10), t(y).reshape(30, 10, 10), t(w).reshape(30, 10, 10))
    assert abs(metric.compute().item() - smoothece.smece(f, y, weights=w)) <= TOL


@pytest.mark.parametrize("n_batches", [1, 6])
@pytest.mark.parametrize("from_logits", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_top_label_equals_array_function(n_batches, from_logits, weighted):
    z, probs, labels, w = multiclass_data(4000, 6, seed=n_batches, weighted=weighted)
    metric = MulticlassSmoothECE(6, from_logits=from_logits)
    for rows in batches(labels.size, n_batches):
        metric.update(t((z if from_logits else probs)[rows]), t(labels[rows]), None if w is None else t(w[rows]))
    expected = smoothece.top_label_smece(probs, labels, weights=w)
    assert abs(metric.compute().item() - expected) <= TOL
    assert expected > 0.02


@pytest.mark.parametrize("from_logits", [False, True])
def test_top_label_float16(from_logits):
    z, probs, labels, _ = multiclass_data(3000, 4, seed=7)
    preds = t(z if from_logits else probs, torch.float16)
    metric = MulticlassSmoothECE(4, from_logits=from_logits)  # float16 rows sum to 1 only to ~1e-3
    for rows in batches(labels.size, 4):
        metric.update(preds[rows], t(labels[rows]))
    rounded = preds.to(torch.float64).numpy()
    if from_logits:
        expected = smoothece.top_label_smece(special.softmax(rounded, axis=1), labels)
    else:
        expected = smoothece.top_label_smece(rounded, labels, atol=0.05)
    assert abs(metric.compute().item() - expected) <= TOL


@pytest.mark.parametrize("from_logits", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_classwise_equals_array_function(from_logits, weighted):
    z, probs, labels, w = multiclass_data(3000, 5, seed=8, weighted=weighted)
    expected = smoothece.classwise_smece(probs, labels, weights=w)
    for average in ("none", "macro", "weighted"):
        metric = MulticlassSmoothECE(5, average=average, from_logits=from_logits)
        for rows in batches(labels.size, 3):
            metric.update(t((z if from_logits else probs)[rows], torch.float32 if from_logits else None),
                          t(labels[rows]), None if w is None else t(w[rows]))
        value = metric.compute()
        if average == "none":
            assert value.shape == (5,)
            np.testing.assert_allclose(value.numpy(), expected.per_class, rtol=0, atol=TOL)
        else:
            reference = expected.mean if average == "macro" else expected.weighted_mean
            assert abs(value.item() - reference) <= TOL


def test_classwise_weighted_mean_uses_label_frequencies():
    # Skewed labels: the weighted mean differs from the plain mean, and each is matched.
    z, probs, labels, _ = multiclass_data(3000, 3, seed=9)
    labels = np.where(np.random.default_rng(1).random(labels.size) < 0.6, 0, labels)
    expected = smoothece.classwise_smece(probs, labels)
    assert abs(expected.weighted_mean - expected.mean) > 1e-3
    metric = MulticlassSmoothECE(3, average="weighted")
    metric.update(t(probs), t(labels))
    assert abs(metric.compute().item() - expected.weighted_mean) <= TOL


# ----------------------------------------------------------------------------
# forward, reset, merge_state, pickling, state_dict
# ----------------------------------------------------------------------------
def test_forward_returns_the_batch_value_and_accumulates():
    z, f, y, w = binary_data(4000, seed=10, weighted=True)
    metric = BinarySmoothECE(from_logits=True)
    for rows in batches(f.size, 4):
        logits = t(z[rows]).requires_grad_()  # as in a training step
        batch_value = metric(logits, t(y[rows]), t(w[rows]))
        assert abs(batch_value.item() - smoothece.smece(f[rows], y[rows], weights=w[rows])) <= TOL
    assert abs(metric.compute().item() - smoothece.smece(f, y, weights=w)) <= TOL


def test_forward_classwise():
    _, probs, labels, _ = multiclass_data(3000, 3, seed=11)
    metric = MulticlassSmoothECE(3, average="none")
    parts = batches(labels.size, 3)
    for rows in parts:
        value = metric(t(probs[rows]), t(labels[rows]))
        np.testing.assert_allclose(value.numpy(), smoothece.classwise_smece(probs[rows], labels[rows]).per_class,
                                   atol=TOL, rtol=0)
    np.testing.assert_allclose(metric.compute().numpy(), smoothece.classwise_smece(probs, labels).per_class,
                               atol=TOL, rtol=0)


def test_reset_forgets_the_rows():
    _, f, y, _ = binary_data(3000, seed=12)
    metric = BinarySmoothECE()
    metric.update(t(f[:1500]), t(y[:1500]))
    first = metric.compute().item()
    metric.reset()
    metric.update(t(f[1500:]), t(y[1500:]))
    assert abs(metric.compute().item() - smoothece.smece(f[1500:], y[1500:])) <= TOL
    assert abs(first - smoothece.smece(f[:1500], y[:1500])) <= TOL


def test_merge_state_from_metric_and_from_dict():
    _, probs, labels, w = multiclass_data(3000, 4, seed=13, weighted=True)
    halves = batches(labels.size, 2)
    for average in ("top_label", "weighted"):
        a, b = MulticlassSmoothECE(4, average=average), MulticlassSmoothECE(4, average=average)
        a.update(t(probs[halves[0]]), t(labels[halves[0]]), t(w[halves[0]]))
        b.update(t(probs[halves[1]]), t(labels[halves[1]]), t(w[halves[1]]))
        c = a.clone()
        a.merge_state(b)
        c.merge_state(b.metric_state)
        if average == "top_label":
            expected = smoothece.top_label_smece(probs, labels, weights=w)
        else:
            expected = smoothece.classwise_smece(probs, labels, weights=w).weighted_mean
        assert abs(a.compute().item() - expected) <= TOL
        assert abs(c.compute().item() - expected) <= TOL


def test_merge_state_refuses_another_configuration():
    a, b = MulticlassSmoothECE(3), MulticlassSmoothECE(3, average="macro")
    _, probs, labels, _ = multiclass_data(100, 3, seed=14)
    b.update(t(probs), t(labels))
    with pytest.raises(ValueError, match="class-wise"):
        a.merge_state(b.metric_state)
    with pytest.raises(ValueError, match="resolution 1024"):
        BinarySmoothECE().merge_state(BinarySmoothECE(resolution=1024).metric_state)
    with pytest.raises(ValueError, match="corrupt SmoothECE metric state"):
        BinarySmoothECE().merge_state({"sketch_state": torch.zeros(40, dtype=torch.uint8)})
    with pytest.raises(TypeError, match="1-D uint8 tensor"):
        BinarySmoothECE().merge_state({"sketch_state": torch.zeros(40)})
    damaged = BinarySmoothECE()
    damaged.update(torch.tensor([0.2, 0.7]), torch.tensor([0, 1]))
    state = damaged.sketch_state.clone()
    state[-1] ^= 1  # the sketch's own checksum catches it
    with pytest.raises(ValueError, match="corrupt"):
        BinarySmoothECE().merge_state({"sketch_state": state})


def test_pickle_clone_and_state_dict_round_trip():
    _, f, y, _ = binary_data(4000, seed=15)
    metric = BinarySmoothECE()
    metric.update(t(f[:3000]), t(y[:3000]))
    expected = smoothece.smece(f[:3000], y[:3000])
    for other in (pickle.loads(pickle.dumps(metric)), metric.clone(), copy.deepcopy(metric)):
        assert abs(other.compute().item() - expected) <= TOL
    metric.persistent(True)
    state = metric.state_dict()
    assert list(state) == ["sketch_state"] and state["sketch_state"].dtype == torch.uint8
    restored = BinarySmoothECE()
    restored.load_state_dict(state)
    restored.update(t(f[3000:]), t(y[3000:]))  # and it goes on accumulating
    assert abs(restored.compute().item() - smoothece.smece(f, y)) <= TOL
    assert not BinarySmoothECE().state_dict()  # not persistent by default, as torchmetrics' states


def test_dtype_and_device_moves_leave_the_state_alone():
    _, f, y, _ = binary_data(2000, seed=16)
    metric = BinarySmoothECE()
    metric.update(t(f), t(y))
    metric.set_dtype(torch.float16)
    metric.to("cpu")
    metric.half()
    assert metric.sketch_state.dtype == torch.uint8
    assert abs(metric.compute().item() - smoothece.smece(f, y)) <= TOL


def test_sketch_gives_intervals_and_diagrams():
    z, f, y, _ = binary_data(3000, seed=17)
    metric = BinarySmoothECE(from_logits=True)
    for rows in batches(f.size, 3):
        metric.update(t(z[rows]), t(y[rows]))
    sketch = metric.sketch()
    direct = smoothece.CalibrationSketch().update(f, y)
    assert sketch.n == 3000 and abs(sketch.smece() - smoothece.smece(f, y)) <= TOL
    assert sketch.bootstrap_smece(n_boot=50, seed=0).high == pytest.approx(
        direct.bootstrap_smece(n_boot=50, seed=0).high, abs=TOL)
    assert sketch.reliability_diagram(n_boot=20, seed=0).mu.shape[0] > 10
    classwise = MulticlassSmoothECE(3, average="macro")
    _, probs, labels, _ = multiclass_data(500, 3, seed=18)
    classwise.update(t(probs), t(labels))
    per_class = classwise.sketch()
    assert len(per_class) == 3
    for c, s in enumerate(per_class):
        assert abs(s.smece() - smoothece.smece(probs[:, c], labels == c)) <= TOL


def test_metric_collection_compute_groups():
    # macro, weighted and none share one state: torchmetrics updates the first and copies its state.
    z, probs, labels, _ = multiclass_data(2000, 4, seed=19)
    collection = torchmetrics.MetricCollection({
        "macro": MulticlassSmoothECE(4, average="macro", from_logits=True),
        "weighted": MulticlassSmoothECE(4, average="weighted", from_logits=True),
        "top": MulticlassSmoothECE(4, from_logits=True),
    })
    for rows in batches(labels.size, 3):
        collection.update(t(z[rows]), t(labels[rows]))
    assert sorted(map(sorted, collection.compute_groups.values())) == [["macro", "weighted"], ["top"]]
    out = collection.compute()
    expected = smoothece.classwise_smece(probs, labels)
    assert abs(out["macro"].item() - expected.mean) <= TOL
    assert abs(out["weighted"].item() - expected.weighted_mean) <= TOL
    assert abs(out["top"].item() - smoothece.top_label_smece(probs, labels)) <= TOL


def test_task_front():
    assert type(SmoothECE(task="binary", from_logits=True)) is BinarySmoothECE
    m = SmoothECE(task="multiclass", num_classes=3, average="none")
    assert type(m) is MulticlassSmoothECE and m.average == "none"
    with pytest.raises(ValueError, match="task"):
        SmoothECE(task="multilabel")
    with pytest.raises(TypeError, match="num_classes"):
        SmoothECE(task="multiclass")
    with pytest.raises(TypeError, match="num_classes"):
        SmoothECE(task="binary", num_classes=3)


# ----------------------------------------------------------------------------
# the state is bounded
# ----------------------------------------------------------------------------
def test_state_size_does_not_grow_with_rows():
    rng = np.random.default_rng(20)
    resolution = 1 << 12
    sizes = {}
    for n in (10_000, 1_000_000):
        f = rng.random(n)  # continuous predictions: every row distinct
        metric = BinarySmoothECE(resolution=resolution)
        metric.update(t(f), t(rng.random(n) < f))
        sizes[n] = metric.sketch_state.numel()
    bound = 40 * resolution + 1024  # the grid's bytes, whatever n, and a header
    assert sizes[10_000] <= bound and sizes[1_000_000] <= bound
    assert sizes[1_000_000] < 1_000_000 * 9 / 50  # the rows themselves (float64 + bool) are 9 MB


# ----------------------------------------------------------------------------
# bad input
# ----------------------------------------------------------------------------
def test_bad_predictions_name_preds():
    metric = BinarySmoothECE()
    with pytest.raises(InputError, match=r"preds\[2\] = 1\.5") as err:
        metric.update(torch.tensor([0.1, 0.2, 1.5]), torch.tensor([0, 1, 1]))
    assert err.value.argument == "preds" and err.value.index == 2
    logits = torch.tensor([-2.0, 3.0, 1.5, -0.5, 2.0])
    with pytest.raises(InputError, match="from_logits=True") as err:
        metric.update(logits, torch.tensor([0, 1, 1, 0, 1]))
    assert err.value.argument == "preds"
    with pytest.raises(InputError, match=r"preds\[1\] = inf: logits must be finite"):
        BinarySmoothECE(from_logits=True).update(torch.tensor([0.0, float("inf")]), torch.tensor([0, 1]))
    with pytest.raises(InputError, match=r"preds\[1\] = nan"):
        metric.update(torch.tensor([0.5, float("nan")]), torch.tensor([0, 1]))
    with pytest.raises(TypeError, match="preds must be a torch.Tensor"):
        metric.update([0.5, 0.2], torch.tensor([0, 1]))
    with pytest.raises(TypeError, match="preds must be a tensor of real numbers"):
        metric.update(torch.tensor([0.5, 0.2], dtype=torch.complex64), torch.tensor([0, 1]))
    assert metric.sketch().n == 0  # nothing was added


def test_bad_targets_and_weights():
    metric = BinarySmoothECE()
    with pytest.raises(InputError, match=r"target\[1\] = 2") as err:
        metric.update(torch.tensor([0.5, 0.2]), torch.tensor([0, 2]))
    assert err.value.argument == "target"
    with pytest.raises(InputError, match="target must have the shape of preds"):
        metric.update(torch.tensor([0.5, 0.2]), torch.tensor([0, 1, 1]))
    with pytest.raises(InputError, match=r"weights\[0\] = -1") as err:
        metric.update(torch.tensor([0.5, 0.2]), torch.tensor([0, 1]), torch.tensor([-1.0, 1.0]))
    assert err.value.argument == "weights"
    with pytest.raises(InputError, match="weights must have the shape of preds"):
        metric.update(torch.tensor([0.5, 0.2]), torch.tensor([0, 1]), torch.tensor([1.0]))
    with pytest.raises(InputError, match=r"indices into preds flattened"):
        metric.update(torch.tensor([[0.5, 0.2], [0.3, 7.0]]), torch.tensor([[0, 1], [1, 0]]))


def test_bad_multiclass_input():
    metric = MulticlassSmoothECE(3)
    probs = torch.tensor([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
    with pytest.raises(InputError, match=r"shape \(N, num_classes\) = \(N, 3\)"):
        metric.update(torch.rand(4, 2), torch.tensor([0, 1, 1, 0]))
    with pytest.raises(InputError, match=r"target\[1\] = 3") as err:
        metric.update(probs, torch.tensor([0, 3]))
    assert err.value.argument == "target"
    with pytest.raises(InputError, match=r"preds\[0\] sums to 1\.3.*from_logits=True") as err:
        metric.update(torch.tensor([[0.5, 0.3, 0.5], [0.6, 0.3, 0.1]]), torch.tensor([0, 1]))
    assert err.value.argument == "preds"
    with pytest.raises(InputError, match="target has length 3 but preds has 2 rows"):
        metric.update(probs, torch.tensor([0, 1, 2]))
    classwise = MulticlassSmoothECE(3, average="none")
    with pytest.raises(InputError, match=r"weights\[1\] = -2"):
        classwise.update(probs, torch.tensor([0, 1]), torch.tensor([1.0, -2.0]))
    with pytest.raises(InputError, match=r"preds\[1, 0\] = inf"):
        MulticlassSmoothECE(3, average="macro", from_logits=True).update(
            torch.tensor([[0.0, 1.0, 2.0], [float("inf"), 0.0, 0.0]]), torch.tensor([0, 1]))
    assert classwise.sketch()[0].n == 0 and metric.sketch().n == 0


def test_bad_constructor_arguments():
    with pytest.raises(ValueError, match="num_classes must be >= 2"):
        MulticlassSmoothECE(1)
    with pytest.raises(ValueError, match="average must be"):
        MulticlassSmoothECE(3, average="micro")
    with pytest.raises(TypeError, match="from_logits must be a bool"):
        BinarySmoothECE(from_logits="yes")
    with pytest.raises(ValueError, match="metric must be"):
        BinarySmoothECE(metric="l2")
    with pytest.raises(TypeError, match="resolution"):
        BinarySmoothECE(resolution=1000.0)
    with pytest.raises(TypeError, match="clip"):
        BinarySmoothECE(clip=1)


def test_a_bad_forward_batch_keeps_the_state():
    _, f, y, _ = binary_data(2000, seed=21)
    metric = BinarySmoothECE()
    metric(t(f[:1000]), t(y[:1000]))
    with pytest.raises(InputError, match="preds"):
        metric(torch.tensor([0.5, 2.0]), torch.tensor([1, 0]))
    with pytest.raises(InputError, match="no rows of positive weight"):
        metric(torch.tensor([0.5, 0.2]), torch.tensor([1, 0]), torch.zeros(2))
    metric(t(f[1000:]), t(y[1000:]))
    assert abs(metric.compute().item() - smoothece.smece(f, y)) <= TOL


@pytest.mark.parametrize("dist_sync_on_step", [False, True])
def test_forward_failing_midway_keeps_the_state(dist_sync_on_step):
    # A batch whose own value fails inside torchmetrics' forward (a ResolutionWarning made an error:
    # calibrated continuous rows, a coarse grid) leaves the state as it was.
    rng = np.random.default_rng(27)
    f0 = np.round(rng.random(2000), 2)  # 101 distinct predictions: the sketch keeps them exactly
    y0 = rng.random(f0.size) < f0 ** 2
    metric = BinarySmoothECE(resolution=256, dist_sync_on_step=dist_sync_on_step)
    metric(t(f0), t(y0))
    f1 = rng.random(5000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", smoothece.ResolutionWarning)
        with pytest.raises(smoothece.ResolutionWarning):
            metric(t(f1), t(rng.random(f1.size) < f1))
    assert metric.update_count == 1 and metric.sketch().n == f0.size
    assert abs(metric.compute().item() - smoothece.smece(f0, y0)) <= TOL


def test_compute_without_rows_raises():
    metric = BinarySmoothECE()
    with pytest.warns(UserWarning, match="before the ``update``"), pytest.raises(InputError, match="no rows"):
        metric.compute()


def test_import_smoothece_does_not_import_torch():
    code = "import smoothece, sys; smoothece.smece([0.2, 0.7], [0, 1]); assert 'torch' not in sys.modules, 'torch'; " \
           "assert 'torchmetrics' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# ----------------------------------------------------------------------------
# distributed: two real processes on gloo, over loopback
# ----------------------------------------------------------------------------
def _ddp_worker(rank, world, init, path, out_dir):
    """One rank: half the rows (unevenly split), then compute() on every metric; writes its values as JSON."""
    import traceback
    import warnings

    import torch.distributed as dist

    try:
        torch.set_num_threads(1)
        dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
        d = np.load(path)
        rows = d["rank0"] if rank == 0 else d["rank1"]
        out = {}

        binary = BinarySmoothECE(from_logits=True, threads=1)
        for part in np.array_split(rows, 3):
            binary.update(t(d["z"][part]), t(d["y"][part]), t(d["w"][part]))
        out["binary"] = binary.compute().item()
        out["binary_sketch_n"] = binary.sketch().n
        # compute() restored the local state: more rows, then the value of all rows of both ranks
        extra = d["extra0"] if rank == 0 else d["extra1"]
        binary.update(t(d["z"][extra]), t(d["y"][extra]), t(d["w"][extra]))
        out["binary_more"] = binary.compute().item()

        top = MulticlassSmoothECE(4, from_logits=True, threads=1)
        classwise = MulticlassSmoothECE(4, average="none", threads=1)
        top.update(t(d["logits"][rows], torch.float32), t(d["labels"][rows]))
        classwise.update(t(d["probs"][rows]), t(d["labels"][rows]))
        out["top"] = top.compute().item()
        out["classwise"] = classwise.compute().tolist()

        lonely = BinarySmoothECE(threads=1)  # rank 1 adds nothing
        if rank == 0:
            lonely.update(t(d["f"][rows]), t(d["y"][rows]))
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*was called before the ``update``")
            out["lonely"] = lonely.compute().item()
        dist.destroy_process_group()
        (out_dir / f"rank{rank}.json").write_text(json.dumps(out))
    except BaseException:
        (out_dir / f"rank{rank}.err").write_text(traceback.format_exc())
        raise


def test_ddp_two_processes_on_gloo(tmp_path, monkeypatch):
    n = 24_000
    z, f, y, w = binary_data(n, seed=22, weighted=True)
    logits, probs, labels, _ = multiclass_data(n, 4, seed=23)
    order = np.random.default_rng(24).permutation(n)
    # uneven halves (3,000 rows, its sketch exact; 18,000, its sketch on the grid): states of different lengths
    rank0, rank1, extra0, extra1 = order[:3000], order[3000:21000], order[21000:22000], order[22000:]
    path = tmp_path / "data.npz"
    np.savez(path, z=z, f=f, y=y, w=w, logits=logits, probs=probs, labels=labels, rank0=rank0, rank1=rank1,
             extra0=extra0, extra1=extra1)
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "lo")  # loopback only
    init = f"file://{tmp_path / 'rendezvous'}"
    # Forked, so that the workers start with torch and torchmetrics already imported (seconds each otherwise).
    context = multiprocessing.get_context("fork")
    procs = [context.Process(target=_ddp_worker, args=(r, 2, init, str(path), tmp_path)) for r in range(2)]
    for p in procs:
        p.start()
    try:
        for p in procs:
            p.join(timeout=120)
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join()
    for r, p in enumerate(procs):
        err = tmp_path / f"rank{r}.err"
        assert p.exitcode == 0, err.read_text() if err.exists() else f"rank {r} exit code {p.exitcode}"
    results = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    both = np.r_[rank0, rank1]
    everything = np.r_[both, extra0, extra1]
    expected = {
        "binary": smoothece.smece(f[both], y[both], weights=w[both]),
        "binary_more": smoothece.smece(f[everything], y[everything], weights=w[everything]),
        "top": smoothece.top_label_smece(special.softmax(logits[both].astype(np.float32).astype(np.float64), axis=1),
                                         labels[both]),
        "lonely": smoothece.smece(f[rank0], y[rank0]),
    }
    per_class = smoothece.classwise_smece(probs[both], labels[both]).per_class
    for out in results:
        for key, value in expected.items():
            assert abs(out[key] - value) <= TOL, key
        np.testing.assert_allclose(out["classwise"], per_class, atol=TOL, rtol=0)
        assert out["binary_sketch_n"] == both.size
    assert results[0] == results[1]  # merged in rank order: the same bits on every rank
