"""Loads the FFTW shared library before the compiled core is imported.

When the build found no system FFTW, ``_core`` was compiled against FFTW's
header only and resolves its FFTW symbols from the ``libfftw3`` that the
``pyfftw`` wheel ships. Loading that library with ``RTLD_GLOBAL`` makes its
symbols visible to ``_core``; any pyfftw release with an FFTW 3.3 library works.

Wheels put the library in different places (``pyfftw.libs/`` or
``pyFFTW.libs/`` on Linux, depending on the release; ``pyfftw/.dylibs/`` on
macOS; beside the extension on Windows), so it is found from the list of
files that pip recorded for the distribution, whatever their folder is called.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import re
from typing import Iterable, Optional

# The double-precision library alone: libfftw3-<hash>.so.3.x, libfftw3.3.dylib,
# libfftw3-3.dll; not libfftw3f/l (single, long double) nor the _omp/_threads variants.
_DOUBLE_FFTW = re.compile(r"^libfftw3(?:[-.][^_]*)?\.(?:so(?:\.\d+)*|dylib|dll)$", re.IGNORECASE)


def _pick(paths: Iterable[str]) -> Optional[str]:
    found = sorted(p for p in paths if _DOUBLE_FFTW.match(os.path.basename(p)))
    return found[0] if found else None


def _recorded_library() -> Optional[str]:
    """The library among the files pip installed for the pyfftw distribution."""
    from importlib import metadata

    try:
        dist = metadata.distribution("pyfftw")
    except metadata.PackageNotFoundError:
        return None
    files = dist.files or []
    found = _pick(str(dist.locate_file(f)) for f in files if "fftw3" in f.name.lower())
    return found if found and os.path.exists(found) else None


def _library_beside(package_dir: str) -> Optional[str]:
    """Without a file record (an unusual install): the folders where wheels put it."""
    site = os.path.dirname(package_dir)
    candidates = []
    for folder in os.listdir(site):
        if folder.lower() == "pyfftw.libs":
            candidates.append(os.path.join(site, folder))
    candidates += [os.path.join(package_dir, ".dylibs"), package_dir]
    for folder in candidates:
        if os.path.isdir(folder):
            found = _pick(os.path.join(folder, name) for name in os.listdir(folder))
            if found:
                return found
    return None


def _pyfftw_library() -> str:
    spec = importlib.util.find_spec("pyfftw")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            "smoothece was built without a system FFTW and needs the FFTW library of the "
            "'pyfftw' package: pip install pyfftw"
        )
    package_dir = list(spec.submodule_search_locations)[0]
    found = _recorded_library() or _library_beside(package_dir)
    if found is None:
        raise ImportError(f"pyfftw is installed in {os.path.dirname(package_dir)} but its double-precision FFTW "
                          "library (libfftw3) was not found among its files")
    return found


def load() -> None:
    from . import _build_config

    if _build_config.FFTW_SOURCE == "pyfftw":
        ctypes.CDLL(_pyfftw_library(), mode=ctypes.RTLD_GLOBAL)
