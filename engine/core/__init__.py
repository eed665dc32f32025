"""The compiled core: every hot loop of bm25lab in one C extension (``_core``), built by ``pip install``.

The ground floor of the engine: its entry points take arrays and plain numbers and import nothing of
bm25lab. The numpy/Python code that calls each one is also its specification (the tests prove the
two equal bit for bit). When the installation has no core (it was built without a C compiler),
:func:`kernels` is None and every caller takes its numpy path: the same results, more slowly.
"""
from __future__ import annotations

import importlib
from functools import lru_cache
from types import ModuleType

EXTENSION = f"{__name__}._core"


@lru_cache(maxsize=1)
def kernels() -> ModuleType | None:
    """The compiled core, or None when this installation was built without it."""
    try:
        return importlib.import_module(EXTENSION)
    except ImportError:
        return None


def built() -> bool:
    """Whether the compiled core is built and importable."""
    return kernels() is not None
