"""Multiclass reductions: top-label pairs, class-wise SmoothECE, input contract."""

import re
import warnings

import numpy as np
import pytest

import smoothece
from smoothece.multiclass import (
    ClasswiseResult,
    classwise_smece,
    confidence_pairs,
    top_label_diagram,
    top_label_smece,
)

# 3 rows x 3 classes, by hand:
#   row 0: max 0.7 at class 0, label 0 -> (0.7, 1)
#   row 1: max 0.4 at class 2, label 0 -> (0.4, 0)
#   row 2: tie 0.45/0.45 -> first max, class 0; label 1 -> (0.45, 0)
PROBS = np.array([[0.7, 0.2, 0.1],
                  [0.3, 0.3, 0.4],
                  [0.45, 0.45, 0.1]])
LABELS = np.array([0, 0, 1])


def softmax(z):
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def calibrated(n, k, seed, alpha=1.0):
    """p ~ Dirichlet(alpha), label ~ Categorical(p): a perfectly calibrated model."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(k, alpha), size=n)
    u = rng.uniform(size=(n, 1))
    labels = np.minimum((u > np.cumsum(p, axis=1)).sum(axis=1), k - 1)
    return p, labels


# -- top-label pairs -----------------------------------------------------------
def test_confidence_pairs_by_hand():
    f, y = confidence_pairs(PROBS, LABELS)
    np.testing.assert_array_equal(f, [0.7, 0.4, 0.45])
    np.testing.assert_array_equal(y, [True, False, False])
    assert f.dtype == np.float64 and y.dtype == np.bool_
    # label 0 on the tied row: the first maximum (class 0) is the prediction -> correct
    _, y = confidence_pairs(PROBS, [0, 2, 0])
    np.testing.assert_array_equal(y, [True, True, True])


def test_confidence_pairs_binary_and_dtypes():
    probs = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.5, 0.5]], dtype=np.float32)
    f, y = confidence_pairs(probs, np.array([1, 1, 0, 1], dtype=np.int8))
    np.testing.assert_array_equal(f, np.float32([0.9, 0.8, 0.6, 0.5]).astype(np.float64))
    np.testing.assert_array_equal(y, [False, True, True, False])
    # bool and integer-valued float labels, Fortran-ordered and integer (one-hot) matrices
    for labels in ([True, True, False, True], np.array([1.0, 1.0, 0.0, 1.0])):
        np.testing.assert_array_equal(confidence_pairs(probs, labels)[1], y)
    np.testing.assert_array_equal(confidence_pairs(np.asfortranarray(probs), [1, 1, 0, 1])[0], f)
    f1, y1 = confidence_pairs(np.eye(3, dtype=int), [0, 2, 2])
    np.testing.assert_array_equal(f1, [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(y1, [True, False, True])


def test_logits_give_the_pairs_of_their_softmax():
    rng = np.random.default_rng(1)
    z = rng.normal(scale=3.0, size=(5000, 7))
    labels = rng.integers(0, 7, size=5000)
    f_z, y_z = confidence_pairs(labels=labels, logits=z)
    f_p, y_p = confidence_pairs(softmax(z), labels)
    np.testing.assert_allclose(f_z, f_p, rtol=1e-14, atol=0)
    np.testing.assert_array_equal(y_z, y_p)
    # the hand cases, as log-probabilities shifted by arbitrary row constants
    z = np.log(PROBS) + np.array([[3.0], [-50.0], [1e3]])
    f, y = confidence_pairs(labels=LABELS, logits=z)
    np.testing.assert_allclose(f, [0.7, 0.4, 0.45], rtol=1e-12)
    np.testing.assert_array_equal(y, [True, False, False])
    # float32 logits
    f32, y32 = confidence_pairs(labels=labels[:100], logits=rng.normal(size=(100, 7)).astype(np.float32))
    assert np.all((f32 >= 1 / 7) & (f32 <= 1)) and y32.dtype == np.bool_


def test_extreme_logits_are_finite_without_warnings():
    z = np.array([[1e4, -1e4, 0.0],
                  [-1e4, -1e4, 1e4],
                  [1e4, 1e4, -1e4],      # tie at the top: class 0
                  [-1e4, -1e4, -1e4],    # uniform
                  [1e308, -1e308, 0.0]])  # the difference overflows to -inf: probability 0
    labels = np.array([0, 1, 1, 2, 0])
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        f, y = confidence_pairs(labels=labels, logits=z)
        np.testing.assert_allclose(f, [1.0, 1.0, 0.5, 1 / 3, 1.0], rtol=1e-15)
        np.testing.assert_array_equal(y, [True, False, False, False, True])
        rng = np.random.default_rng(2)
        big = rng.choice([-1e4, 1e4], size=(2000, 4)) + rng.normal(size=(2000, 4))
        lab = rng.integers(0, 4, size=2000)
        value = top_label_smece(labels=lab, logits=big)
        result = classwise_smece(labels=lab, logits=big)
    assert np.isfinite(value) and 0 <= value <= 1
    assert np.all(np.isfinite(result.per_class)) and np.isfinite(result.mean)


def test_top_label_smece_and_diagram_are_those_of_the_pairs():
    p, labels = calibrated(20_000, 5, seed=3, alpha=0.5)
    w = np.random.default_rng(3).uniform(0.5, 2.0, size=p.shape[0])
    f, y = confidence_pairs(p, labels)
    assert top_label_smece(p, labels) == smoothece.smece(f, y)
    assert top_label_smece(p, labels, weights=w) == smoothece.smece(f, y, weights=w)
    assert top_label_smece(labels=labels, logits=np.log(p)) == pytest.approx(smoothece.smece(f, y), abs=1e-12)
    a = top_label_diagram(p, labels, weights=w, n_boot=0, seed=4)
    b = smoothece.reliability_diagram(f, y, weights=w, n_boot=0, seed=4)
    assert isinstance(a, smoothece.ReliabilityDiagram)
    np.testing.assert_array_equal(a.mu, b.mu)
    np.testing.assert_array_equal(a.density, b.density)
    assert a.smece == b.smece and a.n == b.n


def test_top_label_diagram_plots_confidence_against_accuracy(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.image as mpimg
    import matplotlib.pyplot as plt

    p, labels = calibrated(5000, 4, seed=6)
    diagram = top_label_diagram(p, labels, n_boot=50, seed=1)
    assert (diagram.xlabel, diagram.ylabel) == ("Confidence", "Accuracy")
    ax = diagram.plot(density_panel=True)
    assert ax.get_ylabel() == "Accuracy" and ax.child_axes[0].get_xlabel() == "Confidence"
    ax.figure.savefig(tmp_path / "top_label.png", dpi=50)
    assert mpimg.imread(tmp_path / "top_label.png").std() > 0
    fig, axes = plt.subplots(1, 2, layout="constrained")
    diagram.plot(ax=axes[0])
    assert (axes[0].get_xlabel(), axes[0].get_ylabel()) == ("Confidence", "Accuracy")
    # The binary diagram keeps its own words.
    f, y = confidence_pairs(p, labels)
    smoothece.reliability_diagram(f, y, n_boot=0, seed=1).plot(ax=axes[1])
    assert (axes[1].get_xlabel(), axes[1].get_ylabel()) == ("Predicted probability", "Observed frequency")
    plt.close("all")


# -- class-wise ------------------------------------------------------------------
def test_classwise_equals_one_vs_rest_by_hand():
    p, labels = calibrated(30_000, 4, seed=5, alpha=0.7)
    res = classwise_smece(p, labels)
    assert isinstance(res, ClasswiseResult)
    by_hand = np.array([smoothece.smece(p[:, c].copy(), (labels == c).astype(np.float64)) for c in range(4)])
    np.testing.assert_allclose(res.per_class, by_hand, rtol=0, atol=1e-14)
    np.testing.assert_array_equal(res.classes, np.arange(4))
    assert res.mean == pytest.approx(by_hand.mean(), abs=1e-15)
    freq = np.bincount(labels, minlength=4) / labels.size
    np.testing.assert_allclose(res.frequency, freq)
    assert res.weighted_mean == pytest.approx(np.dot(by_hand, freq), abs=1e-15)
    # the 3x3 hand case, class 1: f = (0.2, 0.3, 0.45), y = (0, 0, 1)
    small = classwise_smece(PROBS, LABELS, classes=[1])
    assert small.per_class[0] == smoothece.smece([0.2, 0.3, 0.45], [0, 0, 1])
    assert small.mean == small.weighted_mean == small.per_class[0]


def test_classwise_weights_classes_and_logits():
    p, labels = calibrated(20_000, 6, seed=6)
    w = np.random.default_rng(6).uniform(0.1, 3.0, size=labels.size)
    res = classwise_smece(p, labels, weights=w, classes=[4, 1])
    by_hand = [smoothece.smece(p[:, c].copy(), labels == c, weights=w) for c in (4, 1)]
    np.testing.assert_allclose(res.per_class, by_hand, rtol=0, atol=1e-14)
    np.testing.assert_array_equal(res.classes, [4, 1])
    wfreq = np.array([w[labels == c].sum() for c in (4, 1)]) / w.sum()
    np.testing.assert_allclose(res.frequency, wfreq, rtol=1e-12)
    assert res.weighted_mean == pytest.approx(np.dot(by_hand, wfreq) / wfreq.sum(), rel=1e-12)
    # logits: the same columns up to rounding of exp(z - logsumexp)
    from_logits = classwise_smece(labels=labels, logits=np.log(p) + 7.0, weights=w, classes=[4, 1])
    np.testing.assert_allclose(from_logits.per_class, res.per_class, atol=1e-12)
    # a class no row has: weighted_mean ignores it, mean does not
    labels3 = np.where(labels == 5, 0, labels)
    r3 = classwise_smece(p, labels3, atol=1.0)
    assert r3.frequency[5] == 0
    assert r3.weighted_mean == pytest.approx(np.dot(r3.per_class, r3.frequency), abs=1e-15)
    assert np.isnan(classwise_smece(p, labels3, classes=[5]).weighted_mean)


def test_classwise_of_a_calibrated_model_shrinks_with_n():
    k, seeds = 5, (0, 1, 2)
    means, top = [], []
    for n in (1_000, 10_000, 100_000):
        results = [calibrated(n, k, seed=100 + s) for s in seeds]
        means.append(np.mean([classwise_smece(p, lab).mean for p, lab in results]))
        top.append(np.mean([top_label_smece(p, lab) for p, lab in results]))
    assert means[0] > means[1] > means[2]
    assert means[2] < 0.4 * means[0]
    assert top[0] > top[1] > top[2] and top[2] < 0.4 * top[0]
    # a miscalibrated (overconfident) model does not shrink toward 0
    p, lab = calibrated(100_000, k, seed=7)
    sharp = softmax(2.0 * np.log(p))
    assert classwise_smece(sharp, lab).mean > 5 * means[2]


def test_result_is_frozen_and_readable():
    p, labels = calibrated(2_000, 3, seed=8)
    res = classwise_smece(p, labels)
    text = repr(res)
    assert text.startswith("ClasswiseResult(mean=") and "3 classes" in text and "worst=class" in text
    with pytest.raises(AttributeError):
        res.mean = 0.0
    with pytest.raises(ValueError):
        res.per_class[0] = 1.0


def test_strided_column_is_read_in_place():
    # the core reads probs[:, c] as a strided view; a non-contiguous matrix works too
    p, labels = calibrated(5_000, 4, seed=9)
    wide = np.zeros((5_000, 8))
    wide[:, ::2] = p
    view = wide[:, ::2]
    assert not view.flags.c_contiguous
    np.testing.assert_array_equal(classwise_smece(view, labels).per_class, classwise_smece(p, labels).per_class)


# -- input contract --------------------------------------------------------------
def _unchanged(call, *arrays):
    before = [np.array(a, copy=True) for a in arrays]
    for a in arrays:
        if isinstance(a, np.ndarray):
            a.flags.writeable = False  # any write would raise
    try:
        return call()
    finally:
        for a, b in zip(arrays, before):
            np.testing.assert_array_equal(a, b)


FUNCS = [confidence_pairs, top_label_smece, classwise_smece]


@pytest.mark.parametrize("func", FUNCS)
def test_read_only_inputs_are_accepted(func):
    p, labels = PROBS.copy(), LABELS.copy()
    _unchanged(lambda: func(p, labels), p, labels)
    z = np.log(PROBS)
    _unchanged(lambda: func(labels=labels, logits=z), z, labels)


@pytest.mark.parametrize("func", FUNCS)
def test_exactly_one_of_probs_and_logits(func):
    with pytest.raises(TypeError, match="exactly one of probs or logits, got both"):
        func(PROBS, LABELS, logits=np.log(PROBS))
    with pytest.raises(TypeError, match="exactly one of probs or logits, got neither"):
        func(labels=LABELS)
    with pytest.raises(TypeError, match="labels must be an array of class indices, got None"):
        func(PROBS)


@pytest.mark.parametrize("func", FUNCS)
@pytest.mark.parametrize("bad, match", [
    (np.array([["a", "b"], ["c", "d"]]), "probs must be an array of real numbers"),
    (np.array([[0.5 + 0j, 0.5], [1, 0]]), "probs must be an array of real numbers"),
    # Object arrays of numbers are read (as f and y are); anything else in one is named.
    (np.array([[0.5, "x"], [1, 0]], dtype=object),
     "probs must be an array of real numbers, got str 'x' at index 1"),
    ("probs", "probs must be a 2-D array of numbers"),
])
def test_non_numeric_probs_raise_type_error(func, bad, match):
    with pytest.raises(TypeError, match=match):
        func(bad, [0, 1])


@pytest.mark.parametrize("func", FUNCS)
def test_non_numeric_labels_and_logits_raise_type_error(func):
    with pytest.raises(TypeError, match="labels must be an array of integer class indices, got dtype <U1"):
        func(PROBS, np.array(["a", "b", "c"]))
    with pytest.raises(TypeError, match="logits must be an array of real numbers"):
        func(labels=LABELS, logits=np.array([["x"] * 3] * 3))


@pytest.mark.parametrize("func", FUNCS)
def test_shapes(func):
    with pytest.raises(ValueError, match=r"probs must be 2-D with shape \(n, K\), got shape \(3,\)"):
        func(np.array([0.2, 0.3, 0.5]), LABELS)
    with pytest.raises(ValueError, match=r"K >= 2 classes.*shape \(3, 1\)"):
        func(np.ones((3, 1)), [0, 0, 0])
    with pytest.raises(ValueError, match="probs is empty"):
        func(np.empty((0, 3)), [])
    with pytest.raises(ValueError, match=r"labels has length 2 but probs has 3 rows"):
        func(PROBS, [0, 1])
    with pytest.raises(ValueError, match=r"labels must be 1-D.*one-hot"):
        func(PROBS, np.eye(3))


@pytest.mark.parametrize("func", FUNCS)
def test_rows_must_sum_to_one(func):
    p = np.tile(PROBS, (4, 1))  # 12 rows
    p[4, 0] += 0.05   # row 4 sums to 1.05
    p[9, 0] -= 0.2    # row 9 sums to 0.8
    labels = np.zeros(12, dtype=int)
    with pytest.raises(ValueError,
                       match=r"probs\[4\] sums to 1\.05.*atol=3e-06.*2 of 12 rows in probs bad, first at row 4"):
        _unchanged(lambda: func(p, labels), p, labels)
    # within the default tolerance (1e-6·K) and with an explicit one
    q = PROBS + np.array([[1e-6, 0, 0], [0, 0, -2e-6], [0, 0, 0]])
    func(q, LABELS)
    with pytest.raises(ValueError, match=(r"probs\[0\] sums to 1\.000001: .*atol=1e-07 "
                                          r"\(2 of 3 rows in probs bad, first at row 0\)")):
        func(q, LABELS, atol=1e-7)
    func(p, labels, atol=0.25)
    with pytest.raises(ValueError, match="atol must be a non-negative finite number"):
        func(PROBS, LABELS, atol=-1.0)
    with pytest.raises(TypeError, match="atol must be a non-negative number"):
        func(PROBS, LABELS, atol="1e-3")


@pytest.mark.parametrize("func", FUNCS)
@pytest.mark.parametrize("value, text", [(-0.1, "-0.1"), (1.5, "1.5"), (np.nan, "nan"), (np.inf, "inf")])
def test_entries_must_be_probabilities(func, value, text):
    p = np.tile(PROBS, (3, 1))
    p[5, 2] = value
    p[7, 0] = -1.0
    labels = np.zeros(9, dtype=int)
    with pytest.raises(ValueError, match=rf"probs\[5, 2\] = {text}: probs entries must be finite and in \[0, 1\] "
                                         rf"\(2 of 27 entries in probs bad, first in row 5\)"):
        _unchanged(lambda: func(p, labels), p, labels)


@pytest.mark.parametrize("func", FUNCS)
@pytest.mark.parametrize("value, text", [(np.nan, "nan"), (np.inf, "inf"), (-np.inf, "-inf")])
def test_logits_must_be_finite(func, value, text):
    z = np.log(np.tile(PROBS, (2, 1)))
    z[3, 1] = value
    labels = np.zeros(6, dtype=int)
    with pytest.raises(ValueError, match=rf"logits\[3, 1\] = {text}: logits entries must be finite "
                                         rf"\(1 of 18 entries in logits bad, first in row 3\)"):
        _unchanged(lambda: func(labels=labels, logits=z), z, labels)


@pytest.mark.parametrize("func", FUNCS)
@pytest.mark.parametrize("labels, text, count", [
    ([0, 3, 4], "labels[1] = 3", 2),
    ([0, -1, 2], "labels[1] = -1", 1),
    ([0.0, 1.5, 2.0], "labels[1] = 1.5", 1),
    ([0.0, 1.0, np.nan], "labels[2] = nan", 1),
])
def test_labels_must_be_classes(func, labels, text, count):
    lab = np.array(labels)
    with pytest.raises(ValueError, match=rf"{re.escape(text)}.*integer class indices in \[0, 3\) "
                                         rf"\({count} of 3 values in labels bad"):
        _unchanged(lambda: func(PROBS, lab), lab)


def test_weights_and_classes_errors():
    with pytest.raises(ValueError, match=r"weights has length 2 but probs has 3 rows"):
        top_label_smece(PROBS, LABELS, weights=[1.0, 2.0])
    w = np.array([1.0, -1.0, 1.0])
    for func in (top_label_smece, classwise_smece):
        with pytest.raises(ValueError, match=r"weights\[1\] = -1.*1 of 3 values in weights bad"):
            _unchanged(lambda: func(PROBS, LABELS, weights=w), w)
    with pytest.raises(TypeError, match="weights must be an array of real numbers"):
        classwise_smece(PROBS, LABELS, weights=["a", "b", "c"])
    with pytest.raises(ValueError, match=r"classes\[1\] = 3: classes must be in \[0, 3\) \(2 of 3"):
        classwise_smece(PROBS, LABELS, classes=[0, 3, -1])
    with pytest.raises(ValueError, match="must not repeat a class, got 1 2 times"):
        classwise_smece(PROBS, LABELS, classes=[1, 0, 1])
    with pytest.raises(TypeError, match="classes must be integer class indices"):
        classwise_smece(PROBS, LABELS, classes=[0.5])
    with pytest.raises(ValueError, match="non-empty"):
        classwise_smece(PROBS, LABELS, classes=np.array([], dtype=int))


def test_large_matrix_is_processed_in_blocks():
    # several blocks of rows (2^18 entries each): the errors still name the global row
    p, labels = calibrated(300_000, 3, seed=11)
    f, y = confidence_pairs(p, labels)
    np.testing.assert_array_equal(f, p.max(axis=1))
    np.testing.assert_array_equal(y, p.argmax(axis=1) == labels)
    p[250_001, 1] = 2.0
    with pytest.raises(ValueError, match=r"probs\[250001, 1\] = 2\.0.*1 of 900000 entries"):
        confidence_pairs(p, labels)


def test_value_errors_are_input_errors_with_their_fields():
    # (plain ValueErrors before: the CLI and Dask could not place them without reading the text)
    from smoothece import InputError

    P = np.array([[0.2, 0.8], [0.6, 0.4], [0.9, 0.1]])
    cases = [
        (lambda: top_label_smece(P, [0, 2, 1]), ("labels", 1, 2.0, 1, 3)),
        (lambda: top_label_smece(np.array([[1.5, -0.5], [0.6, 0.4]]), [0, 1]), ("probs", 0, 1.5, 2, 4)),
        (lambda: top_label_smece(np.array([[0.5, 0.6], [0.6, 0.4]]), [0, 1]), ("probs", 0, 1.1, 1, 2)),
        (lambda: top_label_smece(labels=[0, 1], logits=np.array([[1.0, 0.0], [np.inf, 0.0]])),
         ("logits", 1, np.inf, 1, 4)),
        (lambda: top_label_smece(P[:, :1], [0, 0, 0]), ("probs", None, None, 0, 0)),
    ]
    for call, fields in cases:
        with pytest.raises(InputError) as err:
            call()
        e = err.value
        assert (e.argument, e.index, e.value, e.count, e.size) == pytest.approx(fields) if fields[2] is not None \
            else (e.argument, e.index, e.value) == fields[:3]
