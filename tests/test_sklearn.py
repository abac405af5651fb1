"""smoothece.sklearn: (y_true, y_prob) metrics, scorer, Display and calibrated classifier, with real scikit-learn.

Every value is checked against smoothece's array functions (smece, top_label_smece, classwise_smece,
SmoothCalibrator) called directly on the same arrays, never against the module's own output.
"""

import pickle
import sys

import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn")
matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import matplotlib.image as mpimg  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import to_rgb  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402
from sklearn.frozen import FrozenEstimator  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score, cross_validate  # noqa: E402
from sklearn.naive_bayes import GaussianNB  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402

import smoothece  # noqa: E402
from smoothece import InputError, SmoothCalibrator  # noqa: E402
from smoothece.sklearn import (  # noqa: E402
    SmoothCalibratedClassifier,
    SmoothReliabilityDisplay,
    make_smece_scorer,
    smece_error,
    smooth_calibration_curve,
)


def binary_data(n=4000, seed=0):
    """GaussianNB is overconfident on redundant features: a miscalibrated model, held-out data."""
    X, y = make_classification(n_samples=2 * n, n_features=20, n_informative=4, n_redundant=10,
                               random_state=seed)
    return X[:n], y[:n], X[n:], y[n:]


def multiclass_data(n=3000, seed=1):
    X, y = make_classification(n_samples=2 * n, n_features=20, n_informative=6, n_redundant=10, n_classes=3,
                               random_state=seed)
    return X[:n], y[:n], X[n:], y[n:]


@pytest.fixture(scope="module")
def binary():
    return binary_data()


@pytest.fixture(scope="module")
def probs():
    """(p, y, w): probabilities of a fitted GaussianNB on held-out rows, labels and lognormal weights."""
    X, y, Xt, yt = binary_data(2000, seed=3)
    p = GaussianNB().fit(X, y).predict_proba(Xt)
    return p, yt, np.random.default_rng(3).lognormal(size=yt.size)


# ----------------------------------------------------------------------------
# smece_error
# ----------------------------------------------------------------------------
def test_smece_error_binary_forms(probs):
    p, y, w = probs
    expected = smoothece.smece(p[:, 1], y)
    assert smece_error(y, p[:, 1]) == expected
    assert smece_error(y, p) == expected  # predict_proba's (n, 2): column 1
    assert smece_error(y, p[:, 1:]) == expected  # a one-column matrix
    assert smece_error(list(y), p[:, 1].tolist()) == expected
    assert smece_error(y.astype(bool), p[:, 1]) == expected
    assert smece_error(np.where(y == 1, 1, -1), p[:, 1]) == expected  # {-1, 1}: pos_label 1
    assert smece_error(y, p[:, 1], sample_weight=w) == smoothece.smece(p[:, 1], y, weights=w)
    assert smece_error(y, p[:, 1], metric="logit") == smoothece.smece(p[:, 1], y, metric="logit")
    # The other class as positive: its probability against its indicator.
    assert smece_error(y, p, pos_label=0) == smoothece.smece(p[:, 0], y == 0)
    assert smece_error(y, p[:, 0], pos_label=0) == smoothece.smece(p[:, 0], y == 0)
    # Other numbers: the greater label is positive (brier_score_loss's rule).
    assert smece_error(y + 3, p[:, 1]) == expected


def test_smece_error_string_and_pandas_labels(probs):
    pd = pytest.importorskip("pandas")
    p, y, w = probs
    words = np.where(y == 1, "spam", "ham")
    expected = smoothece.smece(p[:, 1], y)
    assert smece_error(words, p[:, 1], pos_label="spam") == expected
    assert smece_error(words, p) == expected  # columns in sorted order: ham, spam
    assert smece_error(pd.Series(words).astype("category"), p[:, 1], pos_label="spam") == expected
    assert smece_error(pd.Series(words, index=np.arange(y.size) + 100), pd.Series(p[:, 1]), pos_label="spam",
                       sample_weight=pd.Series(w)) == smoothece.smece(p[:, 1], y, weights=w)
    assert smece_error(words, p[:, 0], pos_label="ham") == smoothece.smece(p[:, 0], y == 0)
    with pytest.raises(InputError, match="pass pos_label=") as info:
        smece_error(words, p[:, 1])
    assert info.value.argument == "pos_label"
    with pytest.raises(InputError, match=r"pos_label='eggs' is not one of y_true's classes \{'ham', 'spam'\}"):
        smece_error(words, p[:, 1], pos_label="eggs")
    with pytest.raises(InputError, match=r"y_true\[2\] is missing \(NA\): 1 of 4"):
        smece_error(pd.Series(["a", "b", None, "a"]), [0.1, 0.2, 0.3, 0.4], pos_label="a")
    with pytest.raises(InputError, match=r"y_true\[1\] is missing \(None or NA\): 1 of 4"):
        smece_error(np.array(["a", None, "b", "a"], dtype=object), [0.1, 0.2, 0.3, 0.4], pos_label="a")


def test_smece_error_multiclass():
    X, y, Xt, yt = multiclass_data(1500)
    p = GaussianNB().fit(X, y).predict_proba(Xt)
    w = np.random.default_rng(4).uniform(0.5, 2.0, size=yt.size)
    assert smece_error(yt, p) == smoothece.top_label_smece(p, yt)
    assert smece_error(yt, p, sample_weight=w) == smoothece.top_label_smece(p, yt, weights=w)
    assert smece_error(yt, p, multiclass="classwise") == smoothece.classwise_smece(p, yt).mean
    assert smece_error(yt, p, multiclass="classwise", sample_weight=w) == \
        smoothece.classwise_smece(p, yt, weights=w).mean
    f, correct = smoothece.confidence_pairs(p, yt)
    assert smece_error(yt, p, metric="logit") == smoothece.smece(f, correct, metric="logit")
    # String labels, columns in their sorted order.
    names = np.array(["bird", "cat", "dog"])[yt]
    assert smece_error(names, p) == smoothece.top_label_smece(p, yt)
    # A fold without class 2: labels= says which column is which.
    keep = yt != 2
    with pytest.raises(InputError, match=r"y_prob has 3 columns but y_true has 2 classes \{0, 1\}: pass labels="):
        smece_error(yt[keep], p[keep])
    assert smece_error(yt[keep], p[keep], labels=[0, 1, 2]) == smoothece.top_label_smece(p[keep], yt[keep])
    with pytest.raises(InputError, match=r"y_true\[\d+\] = 2 is not one of the classes \{0, 1, 5\}"):
        smece_error(yt, p, labels=[0, 1, 5])
    with pytest.raises(InputError, match="pos_label=1 applies to binary problems"):
        smece_error(yt, p, pos_label=1)
    with pytest.raises(ValueError, match="metric='l1' only"):
        smece_error(yt, p, multiclass="classwise", metric="logit")
    with pytest.raises(ValueError, match="multiclass must be 'top_label' or 'classwise'"):
        smece_error(yt, p, multiclass="ovr")


def test_smece_error_bad_input_names_sklearn_arguments(probs):
    p, y, w = probs
    f = p[:, 1].copy()
    f[7] = 1.5
    with pytest.raises(InputError, match=r"^y_prob\[7\] = 1.5: .*values in y_prob bad") as info:
        smece_error(y, f)
    assert (info.value.argument, info.value.index, info.value.count) == ("y_prob", 7, 1)
    bad_w = w.copy()
    bad_w[3] = -1.0
    with pytest.raises(InputError, match=r"^sample_weight\[3\] = -1") as info:
        smece_error(y, p[:, 1], sample_weight=bad_w)
    assert info.value.argument == "sample_weight"
    with pytest.raises(InputError, match=r"y_prob and y_true must have the same length"):
        smece_error(y[:-1], p[:, 1])
    with pytest.raises(InputError, match=r"y_true has length 1999 but y_prob has 2000 rows"):
        smece_error(y[:-1], p)
    unnormalised = p.copy()
    unnormalised[5] = [0.5, 0.6]
    with pytest.raises(InputError, match=r"^y_prob\[5\] sums to 1.1: rows of y_prob must sum to 1 .*normalize the "
                                         r"rows\Z"):
        smece_error(y, unnormalised)
    with pytest.raises(InputError, match=r"y_prob has 2 columns but y_true has 1 class \{0\}: pass labels="):
        smece_error(np.zeros(3, dtype=int), np.full((3, 2), 0.5))
    assert smece_error(np.zeros(3), np.full((3, 2), 0.5), labels=[0, 1]) == smoothece.smece(np.full(3, 0.5), [0, 0, 0])
    with pytest.raises(InputError, match=r"y_true has 3 classes but y_prob is 1-D"):
        smece_error(np.arange(y.size) % 3, p[:, 1])
    # scikit-learn's order swapped for smoothece's: the hint says so.
    with pytest.raises(InputError, match="the arguments look swapped"):
        smece_error(p[:, 1], y)
    labels = y.astype(float)
    labels[11] = np.nan
    with pytest.raises(InputError, match=r"y_true\[11\] is missing \(NaN\): 1 of 2000"):
        smece_error(labels, p[:, 1])
    labels[11] = np.inf
    with pytest.raises(InputError, match=r"y_true\[11\] = inf: class labels must be finite"):
        smece_error(labels, p[:, 1])
    with pytest.raises(InputError, match=r"y_true must be 1-D .*pass y.ravel\(\)"):
        smece_error(y[:, None], p[:, 1])
    with pytest.raises(InputError, match="y_true is empty"):
        smece_error([], [])
    with pytest.raises(TypeError, match="y_true must be an array of class labels, got NoneType"):
        smece_error(None, p[:, 1])
    with pytest.raises(TypeError, match="y_prob must be an array of probabilities, got str"):
        smece_error(y, "0.5")
    with pytest.raises(TypeError, match="cannot be compared"):
        smece_error(np.array([1, "a", 1, "a"], dtype=object), [0.1, 0.2, 0.3, 0.4])


def test_smooth_calibration_curve(probs):
    p, y, w = probs
    d = smoothece.reliability_diagram(p[:, 1], y, weights=w, n_boot=0, seed=0)
    keep = np.isfinite(d.mu)
    prob_true, prob_pred = smooth_calibration_curve(np.where(y == 1, "yes", "no"), p, sample_weight=w)
    np.testing.assert_array_equal(prob_true, d.mu[keep])
    np.testing.assert_array_equal(prob_pred, d.mesh[keep])
    assert prob_true.size > 50 and np.all((prob_true >= 0) & (prob_true <= 1))
    with pytest.raises(InputError, match="for binary problems"):
        smooth_calibration_curve([0, 1, 2], np.full((3, 3), 1 / 3))


# ----------------------------------------------------------------------------
# scorer
# ----------------------------------------------------------------------------
def test_scorer_in_cross_val_score(binary):
    X, y, _, _ = binary
    cv = KFold(3, shuffle=True, random_state=0)
    scores = cross_val_score(GaussianNB(), X, y, scoring=make_smece_scorer(), cv=cv)
    for score, (train, test) in zip(scores, cv.split(X)):
        p = GaussianNB().fit(X[train], y[train]).predict_proba(X[test])[:, 1]
        assert score == pytest.approx(-smoothece.smece(p, y[test]), rel=1e-12, abs=0)
    assert np.all(scores < -0.05)  # GaussianNB is miscalibrated here
    # String labels need pos_label, as for scikit-learn's neg_brier_score; the scorer takes that column.
    words = np.where(y == 1, "spam", "ham")
    for positive in ("spam", "ham"):
        scores = cross_val_score(GaussianNB(), X, words, scoring=make_smece_scorer(pos_label=positive), cv=cv)
        for score, (train, test) in zip(scores, cv.split(X)):
            model = GaussianNB().fit(X[train], words[train])
            p = model.predict_proba(X[test])[:, list(model.classes_).index(positive)]
            assert score == pytest.approx(-smoothece.smece(p, words[test] == positive), rel=1e-12, abs=0)
    assert "response_method='predict_proba'" in repr(make_smece_scorer())
    assert make_smece_scorer() is not make_smece_scorer()  # requests set on one are not shared
    pickle.loads(pickle.dumps(make_smece_scorer(pos_label="spam")))  # for n_jobs


def test_scorer_routes_sample_weight(binary):
    X, y, _, _ = binary
    w = np.random.default_rng(5).lognormal(size=y.size)
    with sklearn.config_context(enable_metadata_routing=True):
        scorer = make_smece_scorer().set_score_request(sample_weight=True)
        model = LogisticRegression(max_iter=500).set_fit_request(sample_weight=True)
        out = cross_validate(model, X, y, scoring=scorer, cv=KFold(3), params={"sample_weight": w},
                             return_estimator=True, return_indices=True)
    weighted = []
    for score, fitted, test in zip(out["test_score"], out["estimator"], out["indices"]["test"]):
        p = fitted.predict_proba(X[test])[:, 1]
        assert score == pytest.approx(-smoothece.smece(p, y[test], weights=w[test]), rel=1e-12, abs=0)
        weighted.append(score)
    # The weights made a difference (the same folds scored without them differ).
    plain = [-smoothece.smece(e.predict_proba(X[t])[:, 1], y[t]) for e, t in zip(out["estimator"],
                                                                                  out["indices"]["test"])]
    assert np.max(np.abs(np.subtract(weighted, plain))) > 1e-4


def test_scorer_multiclass_and_grid_search():
    X, y, _, _ = multiclass_data(1500)
    cv = KFold(3, shuffle=True, random_state=1)
    scores = cross_val_score(GaussianNB(), X, y, scoring=make_smece_scorer(multiclass="classwise"), cv=cv)
    for score, (train, test) in zip(scores, cv.split(X)):
        p = GaussianNB().fit(X[train], y[train]).predict_proba(X[test])
        assert score == pytest.approx(-smoothece.classwise_smece(p, y[test]).mean, rel=1e-12, abs=0)
    search = GridSearchCV(GaussianNB(), {"var_smoothing": [1e-9, 1e-2]}, scoring=make_smece_scorer(),
                          cv=cv).fit(X, y)
    for i, params in enumerate(search.cv_results_["params"]):  # each cell re-computed by hand
        train, test = next(iter(cv.split(X)))
        p = GaussianNB(**params).fit(X[train], y[train]).predict_proba(X[test])
        assert search.cv_results_["split0_test_score"][i] == pytest.approx(-smoothece.top_label_smece(p, y[test]),
                                                                            rel=1e-12, abs=0)


# ----------------------------------------------------------------------------
# Display
# ----------------------------------------------------------------------------
def test_display_from_estimator_and_png(binary, tmp_path):
    X, y, Xt, yt = binary
    words = np.where(y == 1, "spam", "ham")
    words_t = np.where(yt == 1, "spam", "ham")
    nb = GaussianNB().fit(X, words)
    rc = dict(matplotlib.rcParams)
    fig, ax = plt.subplots(figsize=(5, 5))
    figures = plt.get_fignums()
    first = SmoothReliabilityDisplay.from_estimator(nb, Xt, words_t, ax=ax, n_boot=200, seed=0)
    calibrated = SmoothCalibratedClassifier(GaussianNB(), cv=3).fit(X, words)
    second = SmoothReliabilityDisplay.from_estimator(calibrated, Xt, words_t, ax=ax, n_boot=200, seed=0,
                                                     name="calibrated")
    assert plt.get_fignums() == figures and dict(matplotlib.rcParams) == rc  # nothing global changed
    p = nb.predict_proba(Xt)[:, 1]
    assert first.diagram.smece == pytest.approx(smoothece.smece(p, yt), rel=1e-12)
    assert second.diagram.smece == pytest.approx(smoothece.smece(calibrated.predict_proba(Xt)[:, 1], yt), rel=1e-12)
    np.testing.assert_array_equal(first.y_prob, p)
    assert first.estimator_name == "GaussianNB" and first.pos_label == "spam"
    assert first.ax_ is ax and second.ax_ is ax and first.figure_ is fig
    assert first.line_ in ax.collections and first.band_ in ax.collections and first.band_ is not second.band_
    assert first.consistency_band_ is None and first.density_ax_ is None
    assert first.ref_line_ is second.ref_line_ and first.ref_line_ in ax.lines  # one diagonal
    assert first.annotation_.get_text().startswith("GaussianNB: smECE = 0.")
    assert second.annotation_.get_text().startswith("calibrated: smECE = 0.")
    assert first.line_.get_label() == "GaussianNB" and second.line_.get_label() == "calibrated"
    # Each display on an Axes takes the next colour of the cycle.
    assert np.allclose(first.line_.get_colors()[0][:3], to_rgb("C0"))
    assert np.allclose(second.line_.get_colors()[0][:3], to_rgb("C1"))
    assert ax.get_xlabel() == "Predicted probability (Positive class: spam)"
    assert ax.get_ylabel() == "Observed frequency (Positive class: spam)"
    np.testing.assert_array_equal(first.prob_true, first.diagram.mu)
    np.testing.assert_array_equal(first.prob_pred, first.diagram.mesh)
    path = tmp_path / "display.png"
    fig.savefig(path, dpi=50)
    image = mpimg.imread(path)[:, :, :3]
    assert image.shape == (250, 250, 3)
    for color in ("C0", "C1"):  # both curves are on the picture
        assert np.sum(np.all(np.abs(image - to_rgb(color)) < 0.05, axis=2)) > 50


def test_display_from_predictions():
    rng = np.random.default_rng(6)
    f = rng.beta(2, 2, 3000)
    y = rng.random(f.size) < f**1.4
    w = rng.uniform(0.5, 2.0, f.size)
    display = SmoothReliabilityDisplay.from_predictions(y, f, sample_weight=w, n_boot=100, seed=1, consistency=True,
                                                        n_sim=100, density_panel=True)
    assert display.diagram.smece == pytest.approx(smoothece.smece(f, y, weights=w), rel=1e-12)
    direct = smoothece.reliability_diagram(f, y, weights=w, n_boot=100, seed=1, consistency=True, n_sim=100)
    np.testing.assert_array_equal(display.diagram.lower, direct.lower)
    assert display.pos_label == 1 and display.estimator_name is None
    assert display.consistency_band_ in display.ax_.collections and display.density_ax_ is not None
    assert display.line_.get_label() == "smoothed reliability"
    assert display.figure_ is display.ax_.figure  # a new figure when ax is None
    # plot() again on another Axes: the artists are those of the new drawing.
    _, other = plt.subplots()
    again = display.plot(ax=other, name="again", ref_line=False, band=False, color="C3")
    assert again is display and display.ax_ is other and display.band_ is None and display.ref_line_ is None
    assert np.allclose(display.line_.get_colors()[0][:3], to_rgb("C3"))
    assert not any(line.get_gid() == "smoothece-diagonal" for line in other.lines)
    with pytest.raises(TypeError, match="use name= instead"):
        display.plot(label="x")
    with pytest.raises(TypeError, match="unexpected keyword argument 'linestyle'"):
        display.plot(linestyle="--")
    with pytest.raises(TypeError, match="diagram must be a smoothece.ReliabilityDiagram"):
        SmoothReliabilityDisplay([0.1, 0.2])
    with pytest.raises(InputError, match=r"^y_prob\[0\] = 2"):
        SmoothReliabilityDisplay.from_predictions([0, 1], [2.0, 0.5])


def test_display_multiclass_is_top_label():
    X, y, Xt, yt = multiclass_data(1500)
    model = make_pipeline(StandardScaler(), GaussianNB()).fit(X, y)
    display = SmoothReliabilityDisplay.from_estimator(model, Xt, yt, n_boot=50, seed=0)
    assert display.diagram.smece == pytest.approx(smoothece.top_label_smece(model.predict_proba(Xt), yt), rel=1e-12)
    assert display.ax_.get_xlabel() == "Confidence" and display.ax_.get_ylabel() == "Accuracy"
    assert display.pos_label is None and display.estimator_name == "Pipeline"
    with pytest.raises(TypeError, match="LinearSVC has no predict_proba"):
        SmoothReliabilityDisplay.from_estimator(LinearSVC().fit(X, y), Xt, yt)
    with pytest.raises(TypeError, match="must be a fitted classifier"):
        SmoothReliabilityDisplay.from_estimator(StandardScaler().fit(X), Xt, yt)


# ----------------------------------------------------------------------------
# SmoothCalibratedClassifier
# ----------------------------------------------------------------------------
def test_calibrated_classifier_reduces_smece(binary):
    X, y, Xt, yt = binary
    raw = smoothece.smece(GaussianNB().fit(X, y).predict_proba(Xt)[:, 1], yt)
    for ensemble in (True, False):
        model = SmoothCalibratedClassifier(GaussianNB(), cv=3, ensemble=ensemble).fit(X, y)
        proba = model.predict_proba(Xt)
        assert proba.shape == (yt.size, 2) and np.allclose(proba.sum(axis=1), 1.0)
        calibrated = smoothece.smece(proba[:, 1], yt)
        assert raw > 0.1 and calibrated < raw / 2.5, (raw, calibrated)
        np.testing.assert_array_equal(model.predict(Xt), model.classes_[proba.argmax(axis=1)])
    assert len(SmoothCalibratedClassifier(GaussianNB(), cv=3).fit(X, y).calibrated_classifiers_) == 3


def test_calibrated_classifier_multiclass_reduces_top_label_smece():
    X, y, Xt, yt = multiclass_data()
    raw = smoothece.top_label_smece(GaussianNB().fit(X, y).predict_proba(Xt), yt)
    model = SmoothCalibratedClassifier(GaussianNB(), cv=3).fit(X, y)
    proba = model.predict_proba(Xt)
    assert proba.shape == (yt.size, 3) and np.allclose(proba.sum(axis=1), 1.0)
    calibrated = smoothece.top_label_smece(proba, yt)
    assert raw > 0.08 and calibrated < raw / 2, (raw, calibrated)
    classwise = smoothece.classwise_smece(proba, yt).mean
    assert classwise < smoothece.classwise_smece(GaussianNB().fit(X, y).predict_proba(Xt), yt).mean / 2


def test_frozen_estimator_is_calibrated_on_all_rows(binary):
    X, y, Xt, yt = binary
    nb = GaussianNB().fit(X[:2000], y[:2000])
    w = np.random.default_rng(7).lognormal(size=2000)
    model = SmoothCalibratedClassifier(FrozenEstimator(nb), calibrator=SmoothCalibrator(monotone=True))
    model.fit(X[2000:], y[2000:], sample_weight=w)
    by_hand = SmoothCalibrator(monotone=True).fit(nb.predict_proba(X[2000:])[:, 1], y[2000:], sample_weight=w)
    q = by_hand.predict(nb.predict_proba(Xt)[:, 1])
    np.testing.assert_allclose(model.predict_proba(Xt), np.column_stack([1 - q, q]), rtol=0, atol=1e-15)
    assert len(model.calibrated_classifiers_) == 1 and model.calibrated_classifiers_[0].estimator.estimator is nb
    # Any 1-D calibrator with fit(p, y, sample_weight=) and predict(p), e.g. scikit-learn's isotonic regression.
    from sklearn.isotonic import IsotonicRegression

    iso = IsotonicRegression(out_of_bounds="clip")
    model = SmoothCalibratedClassifier(FrozenEstimator(nb), calibrator=iso).fit(X[2000:], y[2000:], sample_weight=w)
    q = clone(iso).fit(nb.predict_proba(X[2000:])[:, 1], y[2000:], sample_weight=w).predict(nb.predict_proba(Xt)[:, 1])
    np.testing.assert_allclose(model.predict_proba(Xt)[:, 1], q, rtol=0, atol=1e-15)
    assert not hasattr(iso, "X_min_")  # cloned, not fitted in place


def test_ensemble_and_out_of_fold_match_a_hand_computation():
    X, y, Xt, _ = multiclass_data(900)
    labels = np.array(["a", "b", "c"])[y]
    w = np.random.default_rng(8).uniform(0.5, 2.0, size=y.size)
    cv = KFold(3, shuffle=True, random_state=2)

    def one_vs_rest(calibrators, p):
        q = np.column_stack([c.predict(p[:, k]) for k, c in enumerate(calibrators)])
        return q / q.sum(axis=1, keepdims=True)

    # ensemble=True: a (classifier, calibrators) pair per split, averaged.
    model = SmoothCalibratedClassifier(GaussianNB(), cv=cv).fit(X, labels, sample_weight=w)
    expected = np.zeros((Xt.shape[0], 3))
    for train, test in cv.split(X):
        nb = GaussianNB().fit(X[train], labels[train], sample_weight=w[train])
        p = nb.predict_proba(X[test])
        cals = [SmoothCalibrator().fit(p[:, k], labels[test] == c, sample_weight=w[test])
                for k, c in enumerate("abc")]
        expected += one_vs_rest(cals, nb.predict_proba(Xt)) / 3
    np.testing.assert_allclose(model.predict_proba(Xt), expected, rtol=1e-12, atol=1e-15)
    assert list(model.classes_) == ["a", "b", "c"] and set(model.predict(Xt)) <= {"a", "b", "c"}
    # ensemble=False: calibrators on out-of-fold probabilities, the classifier on all rows.
    model = SmoothCalibratedClassifier(GaussianNB(), cv=cv, ensemble=False).fit(X, labels, sample_weight=w)
    oof = np.zeros((X.shape[0], 3))
    for train, test in cv.split(X):
        oof[test] = GaussianNB().fit(X[train], labels[train], sample_weight=w[train]).predict_proba(X[test])
    cals = [SmoothCalibrator().fit(oof[:, k], labels == c, sample_weight=w) for k, c in enumerate("abc")]
    full = GaussianNB().fit(X, labels, sample_weight=w)
    np.testing.assert_allclose(model.predict_proba(Xt), one_vs_rest(cals, full.predict_proba(Xt)), rtol=1e-12,
                               atol=1e-15)


def test_calibrated_classifier_in_pipeline_and_grid_search(binary):
    X, y, Xt, yt = binary
    pipe = make_pipeline(StandardScaler(), SmoothCalibratedClassifier(GaussianNB(), cv=3))
    grid = {"smoothcalibratedclassifier__calibrator": [None, SmoothCalibrator(monotone=True)],
            "smoothcalibratedclassifier__ensemble": [True, False]}
    search = GridSearchCV(pipe, grid, scoring=make_smece_scorer(), cv=3).fit(X[:2000], y[:2000])
    assert search.best_score_ > -0.06 and search.cv_results_["mean_test_score"].shape == (4,)
    best = search.best_estimator_
    assert smoothece.smece(best.predict_proba(Xt)[:, 1], yt) < 0.06
    twin = clone(SmoothCalibratedClassifier(GaussianNB(), calibrator=SmoothCalibrator(sigma=0.05), cv=4))
    assert twin.get_params()["calibrator__sigma"] == 0.05 and twin.get_params()["cv"] == 4
    assert not hasattr(twin, "classes_")
    # With metadata routing, sample_weight reaches the wrapper (calibration) and the estimator that asks.
    w = np.random.default_rng(9).lognormal(size=2000)
    with sklearn.config_context(enable_metadata_routing=True):
        wrapped = SmoothCalibratedClassifier(GaussianNB().set_fit_request(sample_weight=True), cv=KFold(2))
        wrapped.set_fit_request(sample_weight=True)
        search = GridSearchCV(wrapped, {"ensemble": [True]}, cv=KFold(2),
                              scoring=make_smece_scorer().set_score_request(sample_weight=True))
        search.fit(X[:2000], y[:2000], sample_weight=w)
    train, test = next(iter(KFold(2).split(X[:2000])))
    inner = SmoothCalibratedClassifier(GaussianNB(), cv=KFold(2)).fit(X[train], y[train], sample_weight=w[train])
    expected = -smoothece.smece(inner.predict_proba(X[test])[:, 1], y[test], weights=w[test])
    assert search.cv_results_["split0_test_score"][0] == pytest.approx(expected, rel=1e-12, abs=0)


def test_calibrated_classifier_bad_input(binary):
    X, y, _, _ = binary
    with pytest.raises(TypeError, match="needs an estimator"):
        SmoothCalibratedClassifier().fit(X, y)
    with pytest.raises(TypeError, match="LinearSVC has no predict_proba"):
        SmoothCalibratedClassifier(LinearSVC()).fit(X, y)
    with pytest.raises(ValueError, match="FrozenEstimator"):
        SmoothCalibratedClassifier(GaussianNB(), cv="prefit").fit(X, y)
    with pytest.raises(ValueError, match="ensemble must be"):
        SmoothCalibratedClassifier(GaussianNB(), ensemble="yes").fit(X, y)
    with pytest.raises(ValueError, match="y has 1 class"):
        SmoothCalibratedClassifier(GaussianNB()).fit(X, np.zeros(y.size))
    with pytest.raises(ValueError, match="Unknown label type"):
        SmoothCalibratedClassifier(GaussianNB()).fit(X, np.linspace(0, 1, y.size))
    with pytest.raises(InputError, match=r"sample_weight must have shape \(4000,\)"):
        SmoothCalibratedClassifier(GaussianNB()).fit(X, y, sample_weight=np.ones(3))
    with pytest.raises(InputError, match=r"^sample_weight\[5\] = -1"):
        w = np.ones(y.size)
        w[5] = -1.0
        SmoothCalibratedClassifier(FrozenEstimator(GaussianNB().fit(X, y))).fit(X, y, sample_weight=w)
    with pytest.warns(UserWarning, match="Pipeline.fit does not take sample_weight"):
        SmoothCalibratedClassifier(make_pipeline(GaussianNB()), cv=2).fit(X, y, sample_weight=np.ones(y.size))
    with pytest.raises(sklearn.exceptions.NotFittedError):
        SmoothCalibratedClassifier(GaussianNB()).predict_proba(X)


def test_module_resolves_as_an_attribute_and_uses_scikit_learn():
    # (import smoothece alone does not import scikit-learn: tests/test_recalibration.py checks that in a fresh
    # interpreter.) Inside smoothece.sklearn, `import sklearn` is scikit-learn itself.
    module = smoothece.sklearn
    assert module is sys.modules["smoothece.sklearn"] and module.sklearn is sys.modules["sklearn"]
    assert module.SmoothCalibratedClassifier.__module__ == "smoothece.sklearn"
    assert set(module.__all__) == {"smece_error", "make_smece_scorer", "smooth_calibration_curve",
                                   "SmoothReliabilityDisplay", "SmoothCalibratedClassifier"}
