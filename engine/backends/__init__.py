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
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..errors import ParameterError

if TYPE_CHECKING:
    from ..postings import Triples, Vocabulary
    from ..retrieval import PairCoder, QueryTerms, Scorer, TermBatch
    from ..scoring import Params

__all__ = ["BACKENDS", "Backend", "Ranked", "create", "default_name"]

BACKENDS = {
    "auto": "the compiled core when this installation has it, else numpy (default)",
    "core": "the compiled core (C, built by pip install)",
    "numpy": "numpy and Python: the specification the core is tested against",
}
"""Registry of backend names (``backend=``, ``--backend``, ``$BM25LAB_BACKEND``)."""
ENV_VARIABLE = "BM25LAB_BACKEND"

Ranked = tuple[np.ndarray, np.ndarray]  # (document numbers, float64 scores), best first


class Backend(ABC):
    """What the index asks of a backend (see the module docstring)."""

    name: str

    @abstractmethod
    def term_batch(self, scorer: Scorer, queries: Sequence[Sequence[str]]) -> TermBatch:
        """Each query's distinct known terms and their multiplicities (:meth:`Scorer.query_batch`'s arrays)."""

    @abstractmethod
    def top_k(self, scorer: Scorer, query: QueryTerms, k: int, params: Params) -> Ranked:
        """The best ``k`` documents of one query: score descending, ties by document id descending."""

    @abstractmethod
    def top_k_batch(self, scorer: Scorer, batch: TermBatch, k: int, params: Params, workers: int) -> Sequence[Ranked]:
        """:meth:`top_k` of every query of ``batch``, with up to ``workers`` threads or processes."""

    @abstractmethod
    def pair_coder(self) -> PairCoder:
        """What numbers the postings' (tf, length) pairs when weights are prepared."""

    @abstractmethod
    def vocabulary(self, terms: Sequence[str] = ()) -> Vocabulary:
        """A new building vocabulary holding ``terms`` (term ``i`` with id ``i``)."""

    @abstractmethod
    def group_by_term(self, term_ids: np.ndarray, lengths: np.ndarray, first_doc: int,
                      num_terms: int) -> Triples:
        """(term, document, tf) of the token ids of consecutive documents of ``lengths`` tokens, the
        first numbered ``first_doc``: each term's triples together, documents ascending (int32)."""

    @abstractmethod
    def lay_out(self, chunks: Sequence[Triples], new_id: np.ndarray,
                threads: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(offsets, documents, tfs) of the postings of ``chunks`` (in document order), term ``t`` of a
        chunk becoming term ``new_id[t]`` (on up to ``threads`` threads)."""

    @abstractmethod
    def code_point_order(self, strings: Sequence[str]) -> np.ndarray:
        """:func:`bm25lab.engine.selection.code_point_order`."""

    def __repr__(self) -> str:
        return f"<{self.name} backend>"


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
