"""What a new user meets in the first hour: imports, attribute access, names, and
the inputs real tables hand over (pandas NA, object columns, masked arrays)."""

import importlib
import pickle
import pkgutil
import subprocess
import sys

import numpy as np
import pytest

import smoothece

#: The public submodules, as the package's folder lists them.
PUBLIC_SUBMODULES = sorted(m.name for m in pkgutil.iter_modules(smoothece.__path__) if not m.name.startswith("_"))


def run_python(code, *flags):
    """Runs ``code`` in a fresh interpreter; returns its stdout (stderr on failure)."""
    run = subprocess.run([sys.executable, *flags, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return run.stdout


# --- imports --------------------------------------------------------------------------------------


def test_public_submodules_are_known():
    assert {"cli", "dask", "datasets", "diagram", "measures", "multiclass", "plotting", "recalibration", "reference",
            "resampling", "sketch"} <= set(PUBLIC_SUBMODULES)


def test_imports_under_python_OO():
    # -OO strips docstrings (they are None): nothing may build on them at import time.
    code = "import smoothece\n" + "".join(f"import smoothece.{m}\n" for m in PUBLIC_SUBMODULES) + (
        "assert smoothece.smece.__doc__ is None\n"
        "print(smoothece.smece([0.2, 0.7], [0, 1]))")
    assert float(run_python(code, "-OO")) > 0


def test_lazy_submodules_resolve_as_attributes():
    # A fresh interpreter: no test has imported them yet.
    code = """
import sys, smoothece
lazy = ("cli", "dask", "datasets", "recalibration", "reference")
print(sorted(m for m in lazy if f"smoothece.{m}" in sys.modules))
print(smoothece.reference.smece([0.2, 0.7], [0, 1]) > 0, smoothece.datasets.solar_flares()["DAFFS"].f.size)
print(callable(smoothece.dask.smece_dask), callable(smoothece.cli.main), smoothece.SmoothCalibrator.__name__)
print("sklearn" in sys.modules)
"""
    before, reference, entry_points, sklearn_imported = run_python(code).splitlines()
    assert before == "[]"  # import smoothece stays light ...
    assert reference == "True 731"  # ... and they still resolve on first use
    assert entry_points == "True True SmoothCalibrator"
    with pytest.raises(AttributeError, match="module 'smoothece' has no attribute 'nonexistent'"):
        smoothece.nonexistent  # noqa: B018


def test_import_does_not_load_sklearn_or_pyplot():
    code = ("import sys, smoothece\n"
            "print(sorted(m for m in ('sklearn', 'matplotlib.pyplot', 'scipy') if m in sys.modules))")
    assert run_python(code).strip() == "[]"


def test_dir_shows_the_public_names_only():
    names = dir(smoothece)
    assert set(smoothece.__all__) <= set(names)
    submodules = ("cli", "dask", "datasets", "recalibration", "reference", "sklearn", "spark", "torch")
    leftovers = [n for n in names if n not in smoothece.__all__ and n not in submodules]
    assert leftovers == []
    assert "annotations" not in names and "TYPE_CHECKING" not in names


# --- names ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [n for n in smoothece.__all__ if n != "__version__"])
def test_public_names_report_a_public_module(name):
    obj = getattr(smoothece, name)
    module = obj.__module__
    assert module.startswith("smoothece") and not any(part.startswith("_") for part in module.split(".")), module
    assert getattr(importlib.import_module(module), obj.__qualname__) is obj  # where help() and pickle look


def test_input_error_pickles_under_its_public_name():
    err = smoothece.InputError("f[3] = 2: bad", "f", 3, 2.0, 1, 10)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is smoothece.InputError and (back.argument, back.index, back.count) == ("f", 3, 1)
    assert repr(err).startswith("InputError(")


def test_py_typed_ships():
    import importlib.resources

    assert importlib.resources.files("smoothece").joinpath("py.typed").is_file()


# --- the inputs real tables hand over -------------------------------------------------------------

N = 60
AT = 7  # the row with the missing value
_rng = np.random.default_rng(11)
F = _rng.uniform(0.05, 0.95, size=N)
Y = (_rng.uniform(size=N) < F).astype(np.int64)
W = _rng.uniform(0.5, 2.0, size=N)


def _binary(call):
    """An entry point that takes (f, y, weights) rows, with a comparable summary of its answer."""
    return dict(names=("f", "y", "weights"), matrix=False, call=call)


def _multiclass(call):
    """A multiclass entry point: f becomes the (n, 2) matrix [1 − f, f], y the class labels."""
    return dict(names=("probs", "labels", "weights"), matrix=True, call=call)


def _diagram(f, y, w):
    d = smoothece.reliability_diagram(f, y, weights=w, n_boot=10, seed=0)
    return (d.smece, d.smece_low, *d.mu[::64])


def _bootstrap(f, y, w):
    r = smoothece.bootstrap_smece(f, y, weights=w, n_boot=10, seed=0)
    return (r.value, r.low, r.high)


def _test(f, y, w):
    t = smoothece.calibration_test(f, y, weights=w, n_sim=10, seed=0)
    return (t.statistic, t.p_value)


ENTRY_POINTS = {
    "smece": _binary(lambda f, y, w: smoothece.smece(f, y, weights=w)),
    "smece_sigma": _binary(lambda f, y, w: smoothece.smece_sigma(f, y, 0.05, weights=w)),
    "reliability_diagram": _binary(_diagram),
    "bootstrap_smece": _binary(_bootstrap),
    "calibration_test": _binary(_test),
    "smece_by_group": _binary(lambda f, y, w: tuple(smoothece.smece_by_group(f, y, np.arange(N) % 2,
                                                                             weights=w).smece)),
    "binned_calibration": _binary(lambda f, y, w: smoothece.binned_calibration(f, y, weights=w).ece()),
    "binned_ece": _binary(lambda f, y, w: smoothece.binned_ece(f, y, weights=w)),
    "binned_ece_upper": _binary(lambda f, y, w: smoothece.binned_ece_upper(f, y, weights=w)),
    "debiased_ece": _binary(lambda f, y, w: smoothece.debiased_ece(f, y, weights=w)),
    "brier_decomposition": _binary(lambda f, y, w: smoothece.brier_decomposition(f, y, weights=w).brier),
    "laplace_kernel_ce": _binary(lambda f, y, w: smoothece.laplace_kernel_ce(f, y, weights=w)),
    "interval_ce_random": _binary(lambda f, y, w: smoothece.interval_ce_random(f, y, weights=w, seed=0, trials=5)),
    "SmoothCalibrator.fit": _binary(lambda f, y, w: tuple(
        smoothece.SmoothCalibrator().fit(f, y, weights=w).curve_[::64])),
    "SmoothCalibrator.predict": _binary(lambda f, y, w: tuple(
        smoothece.SmoothCalibrator().fit(F, Y, weights=w).predict(f))),
    "CalibrationSketch.update": _binary(lambda f, y, w: smoothece.CalibrationSketch().update(f, y, w).smece()),
    "top_label_smece": _multiclass(lambda p, lab, w: smoothece.top_label_smece(p, lab, weights=w)),
    "top_label_diagram": _multiclass(lambda p, lab, w: smoothece.top_label_diagram(p, lab, weights=w, n_boot=0,
                                                                                  seed=0).smece),
    "classwise_smece": _multiclass(lambda p, lab, w: smoothece.classwise_smece(p, lab, weights=w).mean),
    "confidence_pairs": _multiclass(lambda p, lab, w: tuple(np.concatenate(smoothece.confidence_pairs(p, lab)))),
}

#: Which arguments each entry point reads (predict reads f only; confidence_pairs has no weights).
READS = {"SmoothCalibrator.predict": (0,), "confidence_pairs": (0, 1)}


def _column(values, argument):
    """The numpy column of ``values`` as the entry point's argument ``argument`` (0, 1, 2) wants it."""
    return np.asarray(values, dtype=bool) if argument == 1 else np.asarray(values, dtype=np.float64)


def _matrix_of(f):
    return np.c_[1.0 - np.asarray(f, dtype=np.float64), f]


def _call(entry, argument, value):
    """Calls ``entry`` with ``value`` as its argument number ``argument`` and numpy arrays elsewhere."""
    spec = ENTRY_POINTS[entry]
    args = [F, Y, W]
    args[argument] = value
    if spec["matrix"] and argument != 0:
        args[0] = _matrix_of(F)
    return spec["call"](*args)


def _missing(kind, argument, matrix):
    """A column (or matrix) with one missing value at row AT, as pandas or numpy hand it over."""
    pd = pytest.importorskip("pandas")
    values = [F, Y, W][argument]
    if matrix:
        frame = pd.DataFrame({"p0": 1.0 - F, "p1": F}, dtype="Float64", index=np.arange(100, 100 + N))
        if kind == "masked":
            mask = np.zeros((N, 2), dtype=bool)
            mask[AT, 1] = True
            return np.ma.masked_array(_matrix_of(F), mask=mask)
        if kind == "object None":
            obj = _matrix_of(F).astype(object)
            obj[AT, 1] = None
            return obj
        frame.iloc[AT, 1] = pd.NA
        return frame if kind == "Series with index" else frame.reset_index(drop=True)
    if kind == "masked":
        return np.ma.masked_array(values, mask=np.arange(N) == AT)
    if kind == "object None":
        obj = _column(values, argument).astype(object)
        obj[AT] = None
        return obj
    dtype = {0: "Float64", 1: "boolean", 2: "Float64"}[argument]
    column = pd.array(_column(values, argument), dtype=dtype)
    column[AT] = pd.NA
    if kind == "object pd.NA":  # what a nullable boolean column's .to_numpy() gives
        return pd.Series(column).to_numpy(dtype=object)
    if kind == "Series with index":
        return pd.Series(column, index=np.arange(100, 100 + N))
    return column


CASES = [(entry, argument) for entry in ENTRY_POINTS for argument in READS.get(entry, (0, 1, 2))]
MISSING_KINDS = ["pandas NA", "Series with index", "object pd.NA", "object None", "masked"]


# A matrix argument has no .to_numpy() of one nullable column: no "object pd.NA" case there.
MISSING_CASES = [(entry, argument, kind) for entry, argument in CASES for kind in MISSING_KINDS
                 if not (ENTRY_POINTS[entry]["matrix"] and argument == 0 and kind == "object pd.NA")]


@pytest.mark.parametrize("entry, argument, kind", MISSING_CASES, ids=[f"{e}-{a}-{k}" for e, a, k in MISSING_CASES])
def test_missing_values_are_refused_naming_where(entry, argument, kind):
    spec = ENTRY_POINTS[entry]
    matrix = spec["matrix"] and argument == 0
    name = spec["names"][argument]
    with pytest.raises(smoothece.InputError) as info:
        _call(entry, argument, _missing(kind, argument, matrix))
    err = info.value
    assert (err.argument, err.index, err.count) == (name, AT, 1), str(err)
    place = f"{name}[{AT}, 1]" if matrix else f"{name}[{AT}]"
    what = "masked" if kind == "masked" else "missing"
    assert str(err).startswith(f"{place} ") and f" is {what}" in str(err), str(err)
    assert f"1 of {2 * N if matrix else N} values in {name} are {what}" in str(err)
    if kind == "Series with index":
        assert f"{place} (index label {100 + AT}) is missing (NA)" in str(err)


@pytest.mark.parametrize("kind", ["masked, nothing masked", "masked, nomask", "pandas nullable, no NA",
                                  "object bools and numbers"])
@pytest.mark.parametrize("entry, argument", CASES, ids=[f"{e}-{a}" for e, a in CASES])
def test_complete_columns_are_read_as_numbers(entry, argument, kind):
    pd = pytest.importorskip("pandas")
    spec = ENTRY_POINTS[entry]
    matrix = spec["matrix"] and argument == 0
    values = _matrix_of(F) if matrix else _column([F, Y, W][argument], argument)
    if kind == "masked, nothing masked":
        given = np.ma.masked_array(values, mask=np.zeros(values.shape, dtype=bool))
    elif kind == "masked, nomask":
        given = np.ma.masked_array(values)
    elif kind == "pandas nullable, no NA":
        given = (pd.DataFrame(values, dtype="Float64") if matrix
                 else pd.Series(values, dtype="boolean" if argument == 1 else "Float64"))
    else:  # True/False labels (or floats) in an object array, as from a mixed table
        given = values.astype(object)
    expected = _call(entry, argument, values)
    np.testing.assert_array_equal(_call(entry, argument, given), expected)


def test_object_labels_of_true_and_false():
    y = np.array([True, False, True, True, False], dtype=object)
    f = np.array([0.9, 0.2, 0.7, 0.6, 0.4])
    assert smoothece.smece(f, y) == smoothece.smece(f, y.astype(bool))
    with pytest.raises(TypeError, match=r"^y must be an array of real numbers, got str 'yes' at index 1"):
        smoothece.smece(f, np.array([True, "yes", False, True, False], dtype=object))


# --- small cuts -----------------------------------------------------------------------------------


def test_clip_numpy_true_is_true_and_int_is_refused():
    f = np.array([-0.005, 0.3, 0.6, 1.004, 0.9])
    y = np.array([0, 0, 1, 1, 1])
    assert smoothece.smece(f, y, clip=np.True_) == smoothece.smece(f, y, clip=True)
    assert smoothece.smece(f, y, clip=np.True_) == smoothece.smece(np.clip(f, 0, 1), y)
    with pytest.raises(smoothece.InputError, match=r"^f\[0\] = -0\.005"):
        smoothece.smece(f, y, clip=np.False_)
    for one in (1, np.int64(1)):
        with pytest.raises(TypeError, match=r"^clip must be a bool or a float tolerance, got the integer .*1.*: "
                                            r"pass clip=True .*or clip=1\.0 for a tolerance of 1\.0"):
            smoothece.smece(f, y, clip=one)
    assert smoothece.smece(f, y, clip=1.0) == smoothece.smece(f, y, clip=True)  # a float is a tolerance


def test_seed_must_fit_64_bits():
    f, y = np.array([0.2, 0.7, 0.4]), np.array([0, 1, 1])
    smoothece.bootstrap_smece(f, y, n_boot=5, seed=2**64 - 1)
    for entry in (lambda s: smoothece.bootstrap_smece(f, y, n_boot=5, seed=s),
                  lambda s: smoothece.calibration_test(f, y, n_sim=5, seed=s),
                  lambda s: smoothece.reliability_diagram(f, y, n_boot=5, seed=s)):
        with pytest.raises(ValueError, match=r"^seed must be in \[0, 2\*\*64\), got 18446744073709551616"):
            entry(2**64)
        with pytest.raises(ValueError, match=r"^seed must be in \[0, 2\*\*64\), got -1"):
            entry(-1)
        with pytest.raises(TypeError, match=r"^seed must be an int"):
            entry(1.0)


@pytest.mark.parametrize("data", ["point mass", "point mass at 0", "beta(0.3, 5)"])
def test_calibration_test_and_bands_without_runtime_warnings(data):
    # pytest turns warnings into errors here: an "All-NaN slice" RuntimeWarning would fail this.
    rng = np.random.default_rng(4)
    f = {"point mass": np.full(500, 0.3), "point mass at 0": np.zeros(200),
         "beta(0.3, 5)": rng.beta(0.3, 5.0, size=3000)}[data]
    y = rng.uniform(size=f.size) < f
    test = smoothece.calibration_test(f, y, n_sim=200, seed=1)
    assert 0 < test.p_value <= 1 and np.isfinite(test.null_mean)
    d = smoothece.reliability_diagram(f, y, n_boot=200, seed=1, consistency=True, n_sim=200)
    assert np.isfinite(d.smece_low) and np.isfinite(d.smece_high)


# --- typing ---------------------------------------------------------------------------------------

ROW_ARGUMENTS = ("f", "y", "weights", "probs", "labels", "logits")


def _public_callables():
    """Public functions and the row-taking methods of the public classes, with their modules."""
    for module_name in ("smoothece._api", "smoothece.diagram", "smoothece.resampling", "smoothece.measures",
                        "smoothece.multiclass", "smoothece.recalibration", "smoothece.plotting", "smoothece.sketch",
                        "smoothece.groups"):
        module = importlib.import_module(module_name)
        names = getattr(module, "__all__", ["smece", "smece_sigma"])
        for name in names:
            obj = getattr(module, name)
            if isinstance(obj, type):
                for method in ("fit", "predict", "transform", "fit_transform", "predict_proba", "predict_interval",
                               "update", "plot"):
                    if method in vars(obj):
                        yield module, f"{name}.{method}", vars(obj)[method]
            elif callable(obj):
                yield module, name, obj


#: Signatures in modules this change does not own (reported, to be annotated there).
NOT_YET_ANNOTATED: dict = {}  # name -> why (an xfail), while one is not annotated yet


@pytest.mark.parametrize("module, name, fn", [
    pytest.param(*c, marks=pytest.mark.xfail(reason=NOT_YET_ANNOTATED[c[1]])) if c[1] in NOT_YET_ANNOTATED else c
    for c in _public_callables()], ids=lambda v: v if isinstance(v, str) else "")
def test_public_signatures_are_annotated_with_numpys_arraylike(module, name, fn):
    import inspect

    import numpy.typing as npt

    sig = inspect.signature(fn)
    assert sig.return_annotation is not inspect.Signature.empty, f"{name} has no return annotation"
    rows = [p for p in sig.parameters.values() if p.name in ROW_ARGUMENTS]
    for p in rows:
        assert p.annotation in ("ArrayLike", "Optional[ArrayLike]"), f"{name}({p.name}: {p.annotation})"
    if rows:
        assert vars(module)["ArrayLike"] is npt.ArrayLike  # not Any


def test_a_type_checker_sees_the_annotations(tmp_path, monkeypatch):
    # py.typed at work: a user's script type-checked against the package.
    mypy_api = pytest.importorskip("mypy.api")
    import os

    user = tmp_path / "user.py"
    user.write_text(
        "import numpy as np\n"
        "import smoothece\n"
        "value: float = smoothece.smece([0.1, 0.9], [0, 1])\n"
        "label: str = smoothece.reliability_diagram(np.array([0.2, 0.4]), [1, 0]).xlabel\n"
        "cal = smoothece.SmoothCalibrator().fit([0.1, 0.2], [0, 1])\n"
        "reveal_type(cal.predict([0.5]))\n"
        "smoothece.smece(None, [1])\n"
    )
    # An installed package is found by mypy in site-packages (which it refuses in MYPYPATH); a source
    # tree or an editable install (an import hook mypy does not follow) is named by its folder.
    import site
    import sysconfig

    folder = os.path.realpath(os.path.dirname(os.path.dirname(smoothece.__file__)))
    installed = {os.path.realpath(p) for p in [*site.getsitepackages(), site.getusersitepackages(),
                                               sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]}
    if folder not in installed:
        monkeypatch.setenv("MYPYPATH", folder)
    out, _, _ = mypy_api.run(["--ignore-missing-imports", "--no-incremental", "--cache-dir", os.devnull, str(user)])
    lines = [line for line in out.splitlines() if os.path.basename(line.split(":")[0]) == user.name]  # any path form
    assert 'user.py:6: note: Revealed type is "numpy.ndarray' in "\n".join(lines), out
    errors = [line for line in lines if ": error:" in line]
    assert len(errors) == 1 and 'user.py:7: error: Argument 1 to "smece" has incompatible type "None"' in errors[0], out
