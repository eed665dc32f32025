"""The compiled core: every hot loop of bm25lab in one C extension (``_core``), built by ``pip install``.

The ground floor of the engine: its entry points take arrays and plain numbers and import nothing of
bm25lab. The numpy/Python code that calls each one is also its specification (the tests prove the
two equal bit for bit). When the installation has no core (it was built without a C compiler),
:func:`kernels` is None and every caller takes its numpy path: the same results, more slowly; the
first time a process finds it missing, it says so once (:class:`CoreMissingWarning`).
"""
from __future__ import annotations

import importlib
import warnings
from functools import lru_cache
from types import ModuleType

EXTENSION = f"{__name__}._core"
MISSING = ("bm25lab's compiled core is not built in this installation (no C compiler when it was installed): "
           "computing with numpy instead, with the same results, more slowly; reinstall with a C compiler "
           "(or from a wheel) for full speed")


class CoreMissingWarning(RuntimeWarning):
    """The compiled core is missing: bm25lab computes with numpy (same results, slower)."""


@lru_cache(maxsize=1)
def kernels() -> ModuleType | None:
    """The compiled core, or None when this installation was built without it (said once, as a
    :class:`CoreMissingWarning`)."""
    try:
        return importlib.import_module(EXTENSION)
    except ImportError:
        warnings.warn(MISSING, CoreMissingWarning, stacklevel=2)
        return None


def built() -> bool:
    """Whether the compiled core is built and importable."""
    return kernels() is not None
