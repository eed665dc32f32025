"""Backends: the few operations whose speed matters, behind one interface, chosen once per index.

    Index.build(docs, backend="auto")     # or "numpy", "core"; Index.load(path, backend=...) too

A :class:`Backend` turns query tokens into term ids (:meth:`~Backend.term_batch`), finds the top k
of one query (:meth:`~Backend.top_k`) or of a batch (:meth:`~Backend.top_k_batch`), and, while an
index is built, keeps the growing vocabulary (:meth:`~Backend.vocabulary`), groups a chunk's term
ids into (term, document, tf) triples (:meth:`~Backend.group_by_term`) and lays them out by term
(:meth:`~Backend.lay_out`). Two implement it:

- ``numpy`` (:mod:`.numpy_backend`): the specification, vectorised numpy and Python.
- ``core`` (:mod:`.core_backend`): the compiled core (:mod:`bm25lab.engine.core`, C built by
  ``pip install``): the same operations over the same arrays, bit for bit (the tests compare them
  on every path), many times faster; loading it costs a quarter of a millisecond.

``auto`` (the default) is ``core`` when the installation has the compiled core, else ``numpy``:
the same choice in every process, whatever it did before. ``$BM25LAB_BACKEND`` sets the default for
a process (an explicit argument wins).

Every backend object belongs to one index and keeps that index's state (its compiled vocabulary,
work arrays); nothing is kept in module globals.
"""
from __future__ import annotations

import os

from ..errors import ParameterError
from .base import Backend, Ranked

__all__ = ["BACKENDS", "Backend", "Ranked", "create", "default_name"]

BACKENDS = {
    "auto": "the compiled core when this installation has it, else numpy (default)",
    "core": "the compiled core (C, built by pip install)",
    "numpy": "numpy and Python: the specification the core is tested against",
}
"""Registry of backend names (``backend=``, ``--backend``, ``$BM25LAB_BACKEND``)."""
ENV_VARIABLE = "BM25LAB_BACKEND"

def default_name() -> str:
    """``$BM25LAB_BACKEND`` when set (and valid), else ``"auto"``."""
    name = os.environ.get(ENV_VARIABLE, "").strip() or "auto"
    if name not in BACKENDS:
        raise ParameterError(f"{ENV_VARIABLE}={name!r} is not a backend; choose one of: {', '.join(BACKENDS)}")
    return name


def create(name: str | None = None) -> Backend:
    """A new backend object for one index: ``name`` one of :data:`BACKENDS`, None for :func:`default_name`."""
    from ..core import kernels

    name = default_name() if name is None else name
    if name not in BACKENDS:
        raise ParameterError(f"unknown backend {name!r}; choose one of: {', '.join(BACKENDS)}")
    if name == "core" or (name == "auto" and kernels() is not None):
        from .core_backend import CoreBackend

        return CoreBackend()
    from .numpy_backend import NumpyBackend

    return NumpyBackend()
