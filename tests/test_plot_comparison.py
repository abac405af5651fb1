"""plot_comparison: several models' diagrams on one Axes, the legend naming each with its SmoothECE, and
the paired differences (compare_models with the same seed) written in a corner the data leave free."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.image as mpimg  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from conftest import by_gid  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402

import smoothece  # noqa: E402

N_BOOT = 200
DPI = 80


@pytest.fixture(scope="module")
def models():
    rng = np.random.default_rng(5)
    n = 2_000
    p = rng.beta(2, 2, n)
    y = (rng.random(n) < p).astype(np.int8)
    return dict(
        y=y,
        calibrated=np.clip(p + rng.normal(0, 0.03, n), 0.0, 1.0),
        overconfident=np.clip(0.5 + 1.5 * (p - 0.5), 0.0, 1.0),
        shrunk=0.1 + 0.8 * p,
        w=rng.uniform(0.5, 2.0, n),
    )


def comparison_text(ax):
    (text,) = by_gid(ax.texts, "smoothece-annotation-comparison")
    return text.get_text()


def parse_pair(lines):
    """``a − b: Δ smECE = v, p ...`` and ``95% CI lo to hi`` as (a, b, v, p text, level, lo, hi)."""
    head, interval = lines
    names, rest = head.split(": Δ smECE = ")
    a, b = names.split(" − ")
    value, p_text = rest.split(", ")
    level, bounds = interval.split("% CI ")
    lo, hi = bounds.split(" to ")
    number = lambda t: float(t.replace("−", "-"))  # noqa: E731
    return a, b, number(value), p_text, int(level), number(lo), number(hi), value


def assert_shown(text, value):
    decimals = len(text.split(".")[1])
    assert abs(float(text.replace("−", "-")) - value) <= 0.5 * 10.0**-decimals * (1 + 1e-9), (text, value)


def test_two_models_legend_band_and_difference(models, tmp_path):
    f = {k: models[k] for k in ("calibrated", "overconfident")}
    ax = smoothece.plot_comparison(f, models["y"], n_boot=N_BOOT, seed=4)
    expected = smoothece.compare(f["calibrated"], f["overconfident"], models["y"], names=tuple(f), n_boot=N_BOOT,
                                 seed=4)
    # one curve and one band per model, in the first two colours of the cycle
    curves, bands = by_gid(ax.collections, "smoothece-curve"), by_gid(ax.collections, "smoothece-band")
    assert len(curves) == 2 and len(bands) == 2
    for k, (curve, band) in enumerate(zip(curves, bands)):
        assert curve.get_label() == list(f)[k]
        assert tuple(curve.get_colors()[0]) == to_rgba(f"C{k}")
        assert tuple(band.get_facecolor()[0][:3]) == to_rgba(f"C{k}")[:3]
    # the legend: each model with its SmoothECE (the array function's value), in the model's colour
    legend = ax.get_legend()
    labels = [t.get_text() for t in legend.get_texts()]
    assert labels == [f"{name}: smECE = {smoothece.smece(v, models['y']):.3f}" for name, v in f.items()]
    assert [tuple(h.get_color()) if not isinstance(h.get_color(), str) else to_rgba(h.get_color())
            for h in legend.legend_handles] == [to_rgba("C0"), to_rgba("C1")]
    # the difference: compare()'s numbers with the same seed, to the decimals shown
    a, b, value, p_text, level, lo, hi, shown = parse_pair(comparison_text(ax).split("\n"))
    assert (a, b, level) == ("calibrated", "overconfident", 95)
    assert_shown(shown, expected.difference)
    assert abs(lo - expected.low) <= 5e-4 and abs(hi - expected.high) <= 5e-4
    assert expected.p_value == pytest.approx(2 / (N_BOOT + 1)) and p_text == "p < 0.01"
    # a real PNG, where the annotation and the legend do not overlap
    path = tmp_path / "two.png"
    ax.figure.savefig(path, dpi=DPI)
    img = mpimg.imread(path)
    assert path.stat().st_size > 5_000 and img.ndim == 3 and img.std() > 0
    renderer = ax.figure.canvas.get_renderer()
    box, frame = by_gid(ax.texts, "smoothece-annotation-comparison")[0].get_window_extent(renderer), \
        legend.get_window_extent(renderer)
    assert not box.overlaps(frame)
    assert ax.get_window_extent(renderer).contains(box.x0, box.y0) and ax.get_window_extent(renderer).contains(
        box.x1, box.y1)


def test_three_models_each_against_the_first_with_weights(models):
    names = ("calibrated", "overconfident", "shrunk")
    f = {k: models[k] for k in names}
    ax = smoothece.plot_comparison(f, models["y"], weights=models["w"], n_boot=N_BOOT, seed=8, level=0.9)
    expected = smoothece.compare_models(f, models["y"], weights=models["w"], n_boot=N_BOOT, seed=8, level=0.9)
    assert len(by_gid(ax.collections, "smoothece-curve")) == 3 and len(by_gid(ax.collections, "smoothece-band")) == 3
    assert [t.get_text().split(":")[0] for t in ax.get_legend().get_texts()] == list(names)
    for k, label in enumerate(t.get_text() for t in ax.get_legend().get_texts()):
        assert label.endswith(f"smECE = {smoothece.smece(f[names[k]], models['y'], weights=models['w']):.3f}")
    lines = comparison_text(ax).split("\n")
    assert len(lines) == 4
    for j, other in enumerate(names[1:]):
        a, b, value, p_text, level, lo, hi, shown = parse_pair(lines[2 * j:2 * j + 2])
        c = expected.pair(0, j + 1)
        assert (a, b, level) == ("calibrated", other, 90)
        assert_shown(shown, c.difference)
        assert abs(lo - c.low) <= 5e-4 and abs(hi - c.high) <= 5e-4
        assert p_text == ("p < 0.01" if c.p_value <= 2 / (N_BOOT + 1) * (1 + 1e-9) else f"p = {c.p_value:.3g}")


def test_a_sequence_is_named_by_position_and_ax_is_honoured(models):
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 4.5), layout="constrained")
    out = smoothece.plot_comparison([models["calibrated"], models["shrunk"]], models["y"], ax=right, n_boot=50,
                                    seed=1, ticks=False)
    assert out is right and not left.collections and not left.texts
    assert [t.get_text().split(":")[0] for t in out.get_legend().get_texts()] == ["model 0", "model 1"]
    assert comparison_text(out).startswith("model 0 − model 1: Δ smECE = ")
    assert not by_gid(out.collections, "smoothece-ticks-positive")


def test_names_are_not_mathtext_and_may_start_with_an_underscore(models, tmp_path):
    f = {"$cost$": models["calibrated"], "_hidden": models["shrunk"]}
    ax = smoothece.plot_comparison(f, models["y"], n_boot=50, seed=1)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    # (a zero-width space keeps matplotlib < 3.10 from dropping the "_" entry)
    assert labels[0].startswith(r"\$cost\$: ") and labels[1].lstrip("\u200b").startswith("_hidden: ")
    assert comparison_text(ax).startswith(r"\$cost\$ − _hidden: ")
    ax.figure.savefig(tmp_path / "names.png", dpi=DPI)  # draws (mathtext would fail on an unbalanced $)


@pytest.mark.parametrize("predictions, match, argument", [
    (lambda m: {"only": m["calibrated"]}, "at least two models, got 1", "predictions"),
    (lambda m: {f"m{k}": m["calibrated"] for k in range(11)}, "at most 10 models", "predictions"),
    (lambda m: {"a": m["calibrated"], "b": m["shrunk"][:-1]}, "model 'b': f and y must have the same length", "y"),
    (lambda m: {"a": m["calibrated"], "b": np.r_[m["shrunk"][:-1], 1.5]}, "model 'b'.*1.5", "f"),
])
def test_bad_input_draws_nothing(models, predictions, match, argument):
    fig, ax = plt.subplots()
    with pytest.raises(smoothece.InputError, match=match) as info:
        smoothece.plot_comparison(predictions(models), models["y"], ax=ax, n_boot=20, seed=0)
    assert info.value.argument == argument
    assert not ax.collections and not ax.texts and not ax.lines and ax.get_legend() is None


def test_bad_arguments_are_named(models):
    f = {"a": models["calibrated"], "b": models["shrunk"]}
    with pytest.raises(TypeError, match="predictions must be a mapping"):
        smoothece.plot_comparison(models["calibrated"], models["y"])
    with pytest.raises(ValueError, match="n_boot"):
        smoothece.plot_comparison(f, models["y"], n_boot=0)
    with pytest.raises(ValueError, match="level"):
        smoothece.plot_comparison(f, models["y"], level=1.5)
