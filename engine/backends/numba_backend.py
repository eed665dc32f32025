"""numba's kernels of jieba's cut and of the TREC run reader, until they move to the compiled core.

TRANSITIONAL: only :mod:`bm25lab.engine.segmentation` and :mod:`bm25lab.evaluation.readers` load
kernels here; searching and building are in the compiled core (:mod:`bm25lab.engine.core`).

numba is imported only when one of them is first used, never at ``import bm25lab``.
"""
from __future__ import annotations

import importlib.util
import sys
from functools import lru_cache
from types import ModuleType

from ..errors import BM25LabError

KERNELS = f"{__package__}._segment_kernels"
SEGMENT_KERNELS = f"{__package__}._segment_kernels"  # jieba's cut (bm25lab.engine.segmentation)
READER_KERNELS = "bm25lab.evaluation._reader_kernels"  # the compiled TREC run reader
# What ``auto`` counts loading the cached kernels as (measured 0.3-0.4 s: importing numba ~0.26 s,
# reading the kernels' cache), and compiling them (about 25 s on the project's 2-core machine).
LOAD_SECONDS = 0.5
# What loading one kernel module costs once the other is loaded (numba imported, its registries read:
# most of LOAD_SECONDS): the build kernels after jieba's compiled cut, measured 0.12 s.
LOAD_SECONDS_AFTER_OTHER = 0.15


@lru_cache(maxsize=1)
def available() -> bool:
    """Whether numba is installed."""
    return importlib.util.find_spec("numba") is not None


def loaded() -> bool:
    """Whether this process has imported the kernels already (using them then costs nothing more)."""
    return KERNELS in sys.modules


def segment_kernels() -> ModuleType:
    """The kernels of jieba's segmentation (imports numba; compiles nothing yet)."""
    return _import(SEGMENT_KERNELS)


def reader_kernels() -> ModuleType:
    """The kernels of the compiled TREC run reader (:mod:`bm25lab.evaluation._reader_kernels`; imports
    numba, without scipy's BLAS as for the other kernels; compiles nothing yet)."""
    return _import(READER_KERNELS)


def _import(name: str) -> ModuleType:
    if not available():
        raise BM25LabError("the numba backend needs numba: pip install numba (or use backend='numpy')")
    if name not in sys.modules:
        _import_arraymath_without_scipy()
    return importlib.import_module(name)


_BLAS_MODULE = "scipy.linalg.cython_blas"


def _import_arraymath_without_scipy() -> None:
    """Import numba's ``numba.np.arraymath`` (which numba loads with the first compiled function of a
    process) without importing ``scipy.linalg``: 0.15-0.3 s of a new process indexing Chinese, for
    BLAS, which bm25lab's kernels never call.

    numba's module asks once, on import, whether scipy's BLAS can be imported (``_HAVE_BLAS``, read
    only when it types ``np.correlate``/``np.convolve``; ``np.dot`` and ``np.linalg`` import scipy
    themselves when compiled). The import is made to fail for that moment, and ``_HAVE_BLAS`` then set
    to whether scipy is installed (found, not imported): numba behaves as it would have, for any other
    numba code of the process too, with scipy imported when such code first needs it. Nothing is done
    if numba's module or scipy's BLAS is imported already, or numba's module has no such flag."""
    if "numba.np.arraymath" in sys.modules or _BLAS_MODULE in sys.modules:
        return
    blocked = True
    sys.modules[_BLAS_MODULE] = None  # type: ignore[assignment]  # makes ``import scipy.linalg.cython_blas`` raise
    try:
        arraymath = importlib.import_module("numba.np.arraymath")
    finally:
        if blocked and sys.modules.get(_BLAS_MODULE, 0) is None:
            del sys.modules[_BLAS_MODULE]
    if hasattr(arraymath, "_HAVE_BLAS"):
        arraymath._HAVE_BLAS = importlib.util.find_spec("scipy") is not None


def numba_loaded() -> bool:
    """Whether this process has loaded one of bm25lab's kernel modules (so numba is imported and set up)."""
    return KERNELS in sys.modules or SEGMENT_KERNELS in sys.modules


def load_seconds() -> float:
    """What loading a kernel module costs this process now: :data:`LOAD_SECONDS`, or
    :data:`LOAD_SECONDS_AFTER_OTHER` once the other module has set numba up (:func:`numba_loaded`)."""
    return LOAD_SECONDS_AFTER_OTHER if numba_loaded() else LOAD_SECONDS


def worth_loading(numpy_seconds: float) -> bool:
    """Whether to take the kernels: whenever numba is installed (the same path in every process)."""
    return available()
