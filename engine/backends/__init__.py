"""Backends: the few operations whose speed matters, behind one interface, chosen per index.

    Index.build(docs, backend="auto")     # or "numpy", "numba", "native"; Index.load(path, backend=...) too

A :class:`Backend` turns query tokens into term ids (:meth:`~Backend.term_batch`), finds the top k
of one query (:meth:`~Backend.top_k`) or of a batch (:meth:`~Backend.top_k_batch`), and, while an
index is built, keeps the growing vocabulary (:meth:`~Backend.vocabulary`) and groups a chunk's
term ids into (term, document, tf) triples (:meth:`~Backend.group_by_term`). Three implement it:

- ``numpy`` (:mod:`.numpy_backend`): the reference, vectorised numpy; nothing to load.
- ``numba`` (:mod:`.numba_backend`): compiled kernels (:mod:`._kernels`), many times faster on
  large batches and builds; loading them costs about 0.4 s and 115 MiB in a new process (numba and
  LLVM), compiling them the first time after installation about 25 s (numba caches them on disk).
- ``native`` (:mod:`.native_backend`): the search kernels as a C extension built at installation,
  numpy for the rest; loading it costs a quarter of a millisecond and 56 KiB.

All give the same documents, float64 scores and order (the tests compare them on every path).
``auto`` (the default) is a fourth backend that chooses for each operation (:class:`Auto`): it
searches with the C extension when it is built (from the first batch; a single search once the
index's weights are prepared). For the rest (and for searching without the extension) it stays on
numpy while the numpy work done so far plus the next operation costs less than loading the numba
kernels, and takes them from then on (or at once when this process has loaded them already). A
one-shot ``bm25lab search`` never loads numba; a process that builds a large index gets the
compiled build from its first large chunk. When the kernels have never been compiled, ``auto``
compiles them in a background process and keeps using numpy until they are ready.
``$BM25LAB_BACKEND`` sets the default for a process (an explicit argument wins).

Every backend object belongs to one index and keeps that index's state (its compiled vocabulary,
work arrays, the work ``auto`` has counted); nothing is kept in module globals.
"""
from __future__ import annotations

import os
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..errors import ParameterError
from ..postings import Vocabulary

if TYPE_CHECKING:
    from ..retrieval import PairCoder, QueryTerms, Scorer, TermBatch
    from ..scoring import Params

__all__ = ["BACKENDS", "Auto", "Backend", "Ranked", "Vocabulary", "create", "default_name"]

BACKENDS = ("auto", "numpy", "numba", "native")
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
    def vocabulary(self, terms: Sequence[str] = ()) -> Vocabulary:
        """A new building vocabulary holding ``terms`` (term ``i`` with id ``i``)."""

    @abstractmethod
    def group_by_term(self, term_ids: np.ndarray, lengths: np.ndarray, first_doc: int,
                      num_terms: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(term, document, tf) of the token ids of consecutive documents of ``lengths`` tokens, the
        first numbered ``first_doc``: each term's triples together, documents ascending (int32)."""

    def for_build(self, num_tokens: int) -> Backend:
        """The backend that builds a chunk of ``num_tokens`` tokens (:class:`Auto` chooses)."""
        return self

    def pair_coder(self) -> PairCoder:
        """What numbers the postings' (tf, length) pairs when weights are prepared (numpy here)."""
        from ..retrieval import NumpyPairCoder

        return NumpyPairCoder()

    def __repr__(self) -> str:
        return f"<{self.name} backend>"


# ---------------------------------------------------------------------- the cost model of ``auto``
# Seconds of numpy work, measured on the project's machine (2-core EPYC): a batch costs about
# 50 us a query plus 11 ns a posting read (Zipf 150k: 1,000 queries, 169 M postings, 1.9 s; Cranfield
# 225 queries 0.02-0.04 s), a build about 0.3 us a token. Only their size relative to
# the kernels' loading time matters, so factors of two are harmless.
NUMPY_SECONDS_PER_QUERY = 50e-6
NUMPY_SECONDS_PER_POSTING = 11e-9
NUMPY_SECONDS_PER_TOKEN = 0.3e-6
# numbering the postings' (tf, length) pairs (Zipf 150k, 14.6 M postings: 0.18-0.43 s)
NUMPY_SECONDS_PER_CODED_POSTING = 15e-9


def search_seconds(num_queries: int, num_postings: int) -> float:
    """Estimated seconds the numpy backend takes to search ``num_queries`` queries reading ``num_postings``."""
    return num_queries * NUMPY_SECONDS_PER_QUERY + num_postings * NUMPY_SECONDS_PER_POSTING


class Auto(Backend):
    """Searches with the C extension when it is built; otherwise, and for building, chooses numpy or
    numba for each operation by the work it costs (see the module docstring).

    The choice of numba is the ski-rental rule: rent (numpy) until the rent paid equals the price (loading the
    kernels), then buy; no choice costs more than twice the better one in hindsight.
    """

    name = "auto"

    def __init__(self) -> None:
        from .numpy_backend import NumpyBackend

        self._numpy = NumpyBackend()
        self._numba: Backend | None = None
        self._native: Backend | None = None
        self.spent = 0.0  # estimated seconds of numpy work this index has done so far

    def choose(self, numpy_seconds: float) -> Backend:
        """The backend for an operation that would take ``numpy_seconds`` on numpy."""
        current = self.current()
        if current is self._numpy:
            from . import numba_backend

            if not numba_backend.worth_loading(self.spent + numpy_seconds):
                self.spent += numpy_seconds
                return self._numpy
            current = self._numba = numba_backend.NumbaBackend()
        return current

    def current(self) -> Backend:
        """numba once chosen, or when this process has loaded its kernels already (for free); else numpy."""
        if self._numba is None:
            from . import numba_backend

            if numba_backend.loaded():
                self._numba = numba_backend.NumbaBackend()
        return self._numba or self._numpy

    def term_batch(self, scorer: Scorer, queries: Sequence[Sequence[str]]) -> TermBatch:
        return self.current().term_batch(scorer, queries)

    def native(self) -> Backend | None:
        """The C extension's search (:mod:`.native_backend`), its pairs numbered by this backend's
        choice (:meth:`pair_coder`); None when the extension is not built."""
        if self._native is None:
            from . import native_backend

            if native_backend.available():
                self._native = native_backend.NativeBackend(coder=self.pair_coder)
        return self._native

    def top_k(self, scorer: Scorer, query: QueryTerms, k: int, params: Params) -> Ranked:
        native = self.native()
        if native is not None and scorer.prepared_for(params):
            return native.top_k(scorer, query, k, params)
        work = search_seconds(1, scorer.postings_of(query))
        if not scorer.prepared_for(params):
            work *= 3  # a cold search computes its postings' weights too
        return self.choose(work).top_k(scorer, query, k, params)

    def top_k_batch(self, scorer: Scorer, batch: TermBatch, k: int, params: Params, workers: int) -> Sequence[Ranked]:
        native = self.native()
        if native is not None:
            if scorer.pairs is None and params.fields is None and not scorer.prepared_for(params):
                # the pairs are numbered over every posting first: by numba when that work pays for it
                self._take(scorer, scorer.postings.num_postings * NUMPY_SECONDS_PER_CODED_POSTING)
            return native.top_k_batch(scorer, batch, k, params, workers)
        return self._take(scorer, search_seconds(len(batch), scorer.postings_of(batch))).top_k_batch(
            scorer, batch, k, params, workers)

    def _take(self, scorer: Scorer, numpy_seconds: float) -> Backend:
        """:meth:`choose` for a batch of ``scorer``: when the kernels take over, the numpy look-up table
        of its terms is let go (batches look their terms up in the compiled vocabulary from then on; a
        single search builds the table again)."""
        numpy_before = self.current() is self._numpy
        chosen = self.choose(numpy_seconds)
        if numpy_before and chosen is not self._numpy:
            scorer.postings.forget_lookup()
        return chosen

    def for_build(self, num_tokens: int) -> Backend:
        return self.choose(num_tokens * NUMPY_SECONDS_PER_TOKEN)

    def pair_coder(self) -> PairCoder:
        return self.current().pair_coder()

    def vocabulary(self, terms: Sequence[str] = ()) -> Vocabulary:
        return self.current().vocabulary(terms)

    def group_by_term(self, term_ids: np.ndarray, lengths: np.ndarray, first_doc: int,
                      num_terms: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.current().group_by_term(term_ids, lengths, first_doc, num_terms)

    def __repr__(self) -> str:
        return f"<auto backend: {self.current().name} now, {self.spent:.3f} s of numpy work counted>"


def default_name() -> str:
    """``$BM25LAB_BACKEND`` when set (and valid), else ``"auto"``."""
    name = os.environ.get(ENV_VARIABLE, "").strip() or "auto"
    if name not in BACKENDS:
        raise ParameterError(f"{ENV_VARIABLE}={name!r} is not a backend; choose one of: {', '.join(BACKENDS)}")
    return name


def create(name: str | None = None) -> Backend:
    """A new backend object for one index: ``name`` one of :data:`BACKENDS`, None for :func:`default_name`."""
    name = default_name() if name is None else name
    if name == "auto":
        return Auto()
    if name == "numpy":
        from .numpy_backend import NumpyBackend

        return NumpyBackend()
    if name == "numba":
        from .numba_backend import NumbaBackend

        return NumbaBackend()
    if name == "native":
        from .native_backend import NativeBackend

        return NativeBackend()
    raise ParameterError(f"unknown backend {name!r}; choose one of: {', '.join(BACKENDS)}")
