"""Loads the FFTW shared library before the compiled core is imported.

When the build found no system FFTW, ``_core`` was compiled against FFTW's
header only and resolves its FFTW symbols from the ``libfftw3`` that the
``pyfftw`` wheel ships. Loading that library with ``RTLD_GLOBAL`` makes its
symbols visible to ``_core``; any pyfftw release with an FFTW 3.3 library works.
"""

from __future__ import annotations

import ctypes
import glob
import importlib.util
import os


def _pyfftw_library() -> str:
    spec = importlib.util.find_spec("pyfftw")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            "smoothece was built without a system FFTW and needs the FFTW library of the "
            "'pyfftw' package: pip install pyfftw"
        )
    site = os.path.dirname(list(spec.submodule_search_locations)[0])
    patterns = ("pyfftw.libs/libfftw3-*.so*", "pyfftw/.dylibs/libfftw3.*dylib", "pyfftw/libfftw3-3.dll")
    for pattern in patterns:
        # The double-precision library only: not libfftw3f/l or the _omp variants.
        found = sorted(p for p in glob.glob(os.path.join(site, pattern)) if "_omp" not in p and "_threads" not in p)
        if found:
            return found[0]
    raise ImportError(f"pyfftw is installed in {site} but its FFTW library was not found there")


def load() -> None:
    from . import _build_config

    if _build_config.FFTW_SOURCE == "pyfftw":
        ctypes.CDLL(_pyfftw_library(), mode=ctypes.RTLD_GLOBAL)
