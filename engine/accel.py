"""The compiled path: numba kernels when numba is installed, else None (callers use numpy).

numba is imported the first time a search needs it, never at ``import engine``. Compiled kernels
are cached on disk by numba (``cache=True``), so later processes load them instead of compiling.
Results are identical to the numpy path (:mod:`engine.retrieval`): same float64 sums in the same
order, same tie rule; the tests compare the two. The kernels prune (:func:`engine._kernels.query_top_k`)
but re-score exactly what they keep.
"""
from __future__ import annotations

import os
import sys
import threading
import weakref
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain
from types import ModuleType
from typing import Callable, Sequence

import numpy as np

from .postings import CompiledVocabulary, Postings
from .retrieval import QueryTerms, Scorer, TermBatch
from .scoring import Params, zero_tf_part


# Loading numba and the cached kernels costs about 1-3 s per process (compiling them the first time
# after installation, 10-30 s); the numpy path scores about 10^8 postings in that time. Smaller
# batches stay on numpy unless the kernels are loaded already. BM25LAB_NUMBA=1 / 0 forces the choice.
COMPILED_MIN_POSTINGS = 100_000_000


def worth_compiling(total_postings: int | Callable[[], int]) -> bool:
    """Whether a batch touching ``total_postings`` postings (a number, or a function counting them,
    called only if needed) should take the compiled path."""
    forced = os.environ.get("BM25LAB_NUMBA")
    if forced in ("0", "1"):
        return forced == "1"
    if f"{__package__}._kernels" in sys.modules:
        return True
    return (total_postings() if callable(total_postings) else total_postings) >= COMPILED_MIN_POSTINGS


def compiled_allowed() -> bool:
    """Whether the compiled path may be used at all (not switched off with BM25LAB_NUMBA=0)."""
    return os.environ.get("BM25LAB_NUMBA", "") != "0"


@lru_cache(maxsize=1)
def kernels() -> ModuleType | None:
    """The kernel module, or None when numba is missing."""
    try:
        from . import _kernels
    except ImportError:
        return None
    return _kernels


# a compiled copy of each searched index's vocabulary, made by the first batch that needs it
_VOCABULARIES: "weakref.WeakKeyDictionary[Postings, CompiledVocabulary]" = weakref.WeakKeyDictionary()


def query_batch(scorer: Scorer, queries: Sequence[Sequence[str]]) -> TermBatch:
    """:meth:`Scorer.query_batch` (the same arrays), in compiled code when the kernels are loaded
    already: the tokens, joined, are looked up from their UTF-8 in a compiled copy of the vocabulary
    (no Python dict look-up per token) and grouped per query by the kernels."""
    module = kernels() if worth_compiling(0) else None
    if module is None:
        return scorer.query_batch(queries)
    postings = scorer.postings
    vocabulary = _VOCABULARIES.get(postings)
    if vocabulary is None:  # look-ups never change it: threads may share it
        vocabulary = _VOCABULARIES.setdefault(postings, CompiledVocabulary.of_terms(module, postings.terms))
    lengths = np.fromiter(map(len, queries), dtype=np.int64, count=len(queries))
    tokens = list(chain.from_iterable(queries))
    ids = vocabulary.look_up([" ".join(tokens)], tokens, len(tokens))
    return TermBatch(*module.group_query_terms(ids, lengths))


def _constants(scorer: Scorer, batch: TermBatch, params: Params) -> np.ndarray:
    """The per-query constant of ``bm25l``/``bm25+`` (zeros for the other variants), computed as
    :meth:`Scorer.score` computes it, query by query."""
    if zero_tf_part(params):
        return np.array([scorer.constant(q, params) for q in map(batch.query, range(len(batch)))])
    return np.zeros(len(batch))


def _prepared(scorer: Scorer, params: Params) -> tuple[ModuleType, np.ndarray, np.ndarray, bool] | None:
    """The kernels, the prepared weights, the terms' largest weights and whether pruning is safe;
    None when numba is missing."""
    module = kernels()
    if module is None:
        return None
    weights = scorer.prepare(params)
    upper, prunable = scorer.bounds(params)
    return module, weights, upper, prunable


def batch_top_k(scorer: Scorer, queries: Sequence[QueryTerms] | TermBatch, k: int, params: Params,
                threads: int) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """Top-k of every query with the prepared weights, in ``threads`` threads; None when numba is
    missing or the batch is too small to pay for loading it (:func:`worth_compiling`)."""
    batch = queries if isinstance(queries, TermBatch) else TermBatch.of(queries)
    offsets = np.asarray(scorer.postings.offsets)
    if not worth_compiling(lambda: int((offsets[batch.term_ids + 1] - offsets[batch.term_ids]).sum())):
        return None
    prepared = _prepared(scorer, params)
    if prepared is None:
        return None
    module, weights, upper, prunable = prepared
    k_eff = max(1, min(k, scorer.n_docs))
    out_docs = np.full((len(batch), k_eff), -1, dtype=np.int64)
    out_scores = np.zeros((len(batch), k_eff), dtype=np.float64)
    out_len = np.zeros(len(batch), dtype=np.int64)
    module.batch_top_k(batch.q_ptr, batch.term_ids, batch.counts, offsets, upper, _constants(scorer, batch, params),
                       scorer.postings.doc_nums, weights, scorer.id_rank, scorer.n_docs, k_eff, prunable,
                       max(1, min(threads, len(batch))), out_docs, out_scores, out_len)
    return _rows(out_docs, out_scores, out_len)


def _rows(docs: np.ndarray, scores: np.ndarray, lengths: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Row ``i`` of ``docs`` and ``scores``, cut to ``lengths[i]``: the rows as views (made in C), the
    few short ones cut again."""
    doc_rows, score_rows = list(docs), list(scores)
    for i in np.flatnonzero(lengths < docs.shape[1]).tolist():
        n = int(lengths[i])
        doc_rows[i], score_rows[i] = doc_rows[i][:n], score_rows[i][:n]
    return list(zip(doc_rows, score_rows))


@dataclass
class _Scratch:
    """Per-document work arrays of single searches, kept between searches (as the kernels leave them:
    ``acc`` all -0.0, ``marks`` all zero)."""

    n_docs: int
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.acc = np.full(self.n_docs, -0.0)
        self.marks = np.zeros(self.n_docs, np.uint8)
        self.cand = np.empty(self.n_docs, np.int64)
        self.keep = np.empty(self.n_docs, np.int64)
        self.buf = np.empty(self.n_docs, np.float64)


_SCRATCH: "weakref.WeakKeyDictionary[Scorer, _Scratch]" = weakref.WeakKeyDictionary()


def query_top_k(scorer: Scorer, query: QueryTerms, k: int, params: Params) -> tuple[np.ndarray, np.ndarray] | None:
    """Top-k of one query with the prepared weights in the calling thread, reusing work arrays kept
    for the scorer; None when numba is missing or switched off."""
    prepared = _prepared(scorer, params) if compiled_allowed() else None
    if prepared is None:
        return None
    module, weights, upper, prunable = prepared
    offsets = scorer.postings.offsets
    terms = query.term_ids
    const = scorer.constant(query, params)
    scratch = _SCRATCH.get(scorer)
    if scratch is None:
        scratch = _SCRATCH.setdefault(scorer, _Scratch(scorer.n_docs))
    if not scratch.lock.acquire(blocking=False):  # another thread is searching: use fresh arrays
        scratch = _Scratch(scorer.n_docs)
        scratch.lock.acquire()
    try:
        k_eff = max(1, min(k, scorer.n_docs))
        docs = np.empty(k_eff, dtype=np.int64)
        scores = np.empty(k_eff, dtype=np.float64)
        n = module.query_top_k(offsets[terms], offsets[terms + 1], query.counts, upper[terms] * query.counts, const,
                               scorer.postings.doc_nums,
                               weights, scorer.id_rank, k_eff, prunable, scratch.acc, scratch.marks, scratch.cand,
                               scratch.keep, scratch.buf, np.empty(k_eff, np.float64), np.empty(k_eff, np.int64),
                               np.empty(k_eff, np.int64), docs, scores)
    finally:
        scratch.lock.release()
    return docs[:n], scores[:n]
