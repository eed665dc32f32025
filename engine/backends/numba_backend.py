"""numba's kernel of the TREC run reader, until it moves to the compiled core.

TRANSITIONAL: only :mod:`bm25lab.evaluation.readers` loads a kernel here; searching, building and
jieba's cut are in the compiled core (:mod:`bm25lab.engine.core`).
numba is imported only when the kernel is first used, never at ``import bm25lab``.
"""
from __future__ import annotations

import importlib.util
import sys
from functools import lru_cache
from types import ModuleType

from ..errors import BM25LabError

READER_KERNELS = "bm25lab.evaluation._reader_kernels"  # the compiled TREC run reader


@lru_cache(maxsize=1)
def available() -> bool:
    """Whether numba is installed."""
    return importlib.util.find_spec("numba") is not None


def reader_kernels() -> ModuleType:
    """The kernels of the compiled TREC run reader (:mod:`bm25lab.evaluation._reader_kernels`; imports
    numba, without scipy's BLAS; compiles nothing yet)."""
    if not available():
        raise BM25LabError("the compiled run reader needs numba: pip install numba")
    if READER_KERNELS not in sys.modules:
        _import_arraymath_without_scipy()
    return importlib.import_module(READER_KERNELS)


_BLAS_MODULE = "scipy.linalg.cython_blas"


def _import_arraymath_without_scipy() -> None:
    """Import numba's ``numba.np.arraymath`` without importing ``scipy.linalg`` (numba asks once, on
    import, whether scipy's BLAS can be imported; the kernels never call BLAS)."""
    if "numba.np.arraymath" in sys.modules or _BLAS_MODULE in sys.modules:
        return
    sys.modules[_BLAS_MODULE] = None  # type: ignore[assignment]  # makes ``import scipy.linalg.cython_blas`` raise
    try:
        arraymath = importlib.import_module("numba.np.arraymath")
    finally:
        if sys.modules.get(_BLAS_MODULE, 0) is None:
            del sys.modules[_BLAS_MODULE]
    if hasattr(arraymath, "_HAVE_BLAS"):
        arraymath._HAVE_BLAS = importlib.util.find_spec("scipy") is not None
