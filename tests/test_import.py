"""What ``import smoothece`` loads and offers: a light import (no framework, no pyplot), submodules that
resolve on first use, public names where help() and pickle look for them, and an import under -OO."""

import importlib
import importlib.util
import pickle
import pkgutil
import subprocess
import sys

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


#: The integrations' frameworks: their modules import where the framework is installed.
FRAMEWORKS = {"torch": ("torch", "torchmetrics"), "spark": ("pyspark",), "sklearn": ("sklearn",)}


def _importable(module: str) -> bool:
    return all(importlib.util.find_spec(name) is not None for name in FRAMEWORKS.get(module, ()))


@pytest.mark.parametrize("module, framework", [("torch", "torch"), ("torch", "torchmetrics"),
                                               ("sklearn", "sklearn")])
def test_an_integration_without_its_framework_says_what_to_install(module, framework):
    # The framework made unimportable (None in sys.modules), whether or not it is installed here.
    code = (f"import sys; sys.modules[{framework!r}] = None\n"
            f"try:\n    import smoothece.{module}\nexcept ImportError as err:\n    print(err)\n")
    assert f'pip install "smoothece[{module}]"' in run_python(code)


# Under -OO the import system reads bytecode compiled without docstrings (.opt-2.pyc), which an install
# does not ship: every module imported would be compiled from source (torch and sklearn's stacks: ~15 s).
# The frameworks' modules are read from their ordinary bytecode; smoothece's own are compiled under -OO
# (-B: nothing compiled is written back).
OWN_MODULES_ONLY_UNDER_OO = """
import importlib._bootstrap_external as bootstrap, importlib.util, os
own = os.path.dirname(importlib.util.find_spec("smoothece").origin) + os.sep
cache_from_source = bootstrap.cache_from_source
def ordinary_unless_own(path, debug_override=None, *, optimization=None):
    return cache_from_source(path, debug_override, optimization=optimization if path.startswith(own) else "")
bootstrap.cache_from_source = ordinary_unless_own
"""


def test_imports_under_python_OO():
    # -OO strips docstrings (they are None): nothing may build on them at import time.
    modules = [m for m in PUBLIC_SUBMODULES if _importable(m)]
    imports = "import sys, smoothece\n" + "".join(f"import smoothece.{m}\n" for m in modules)
    code = OWN_MODULES_ONLY_UNDER_OO + imports + (
        "assert smoothece.smece.__doc__ is None\n"
        f"assert [m for m in {modules!r} if sys.modules['smoothece.' + m].__doc__ is not None] == []\n"
        "print(smoothece.smece([0.2, 0.7], [0, 1]))")
    assert float(run_python(code, "-OO", "-B")) > 0


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


def test_import_loads_no_framework():
    code = ("import sys, smoothece\n"
            "heavy = [m for m in ('torch', 'torchmetrics', 'sklearn', 'pyspark', 'polars', 'pandas')"
            " if m in sys.modules]\n"
            "print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


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


def test_a_module_still_being_imported_counts_as_not_imported(monkeypatch):
    # The CLI's reader thread may be importing pandas (through pyarrow) while the main thread asks
    # whether the caller's keys are pandas objects: a half-initialized pandas has no DataFrame yet.
    import importlib.machinery
    import types

    from smoothece._util import imported

    module = types.ModuleType("half_imported")
    module.__spec__ = importlib.machinery.ModuleSpec("half_imported", None)
    module.__spec__._initializing = True  # what importlib sets while the module's code runs
    monkeypatch.setitem(sys.modules, "half_imported", module)
    assert imported("half_imported") is None
    module.__spec__._initializing = False
    assert imported("half_imported") is module
    assert imported("numpy") is sys.modules["numpy"] and imported("no_such_module_here") is None
