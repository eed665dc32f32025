"""Searching with compiled kernels, whoever compiled them: numba (:mod:`._kernels`) or the C extension
(:mod:`bm25lab.engine.core`, see :mod:`.native_backend`). Both expose the same two functions with the same
arguments, so a backend hands its kernel module to :func:`top_k` and :func:`top_k_batch`:

- ``query_top_k(starts, ends, mult, upper, scale, const, doc_nums, codes, table, id_rank, k, prune,
  acc, marks, cand, keep, buf, hs, hr, hd, out_docs, out_scores) -> count``: one query, with
  per-document work arrays the caller keeps (:class:`Scratch`);
- ``batch_top_k(q_ptr, term_ids, counts, offsets, term_upper, term_scale, q_const, doc_nums, codes,
  table, id_rank, n_docs, k, prune, parallel, out_docs, out_scores, out_len)``: a whole
  :class:`~bm25lab.engine.retrieval.TermBatch` in ``parallel`` chunks;
- optionally ``term_extremes(offsets, codes, table, high, low)`` (the C extension's): each term's extreme
  table entries, for :meth:`~bm25lab.engine.retrieval.Scorer.bounds` (numpy's pass otherwise).

Nothing here imports numba.
"""
from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Generic, Sequence, TypeVar

import numpy as np

from ..records import RankedRows
from ..scoring import zero_tf_part

if TYPE_CHECKING:
    from ..retrieval import PairCoder, QueryTerms, Scorer, TermBatch
    from ..scoring import Params
    from . import Ranked


@dataclass
class Scratch:
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


State = TypeVar("State")


class PerScorer(Generic[State]):
    """What a backend keeps for the scorer (index view) it last served: a new ``factory()`` state when
    the index shows another scorer (after an add, a delete, a reload)."""

    def __init__(self, factory: Callable[[], State]) -> None:
        self._factory = factory
        self._kept: tuple[weakref.ref, State] | None = None
        self._lock = threading.Lock()

    def of(self, scorer: Scorer) -> State:
        kept = self._kept
        if kept is None or kept[0]() is not scorer:
            with self._lock:
                kept = self._kept
                if kept is None or kept[0]() is not scorer:
                    kept = self._kept = (weakref.ref(scorer), self._factory())
        return kept[1]


@dataclass
class SearchState:
    """A backend's state for one scorer: the single searches' :class:`Scratch`, and (numba) the
    compiled vocabulary of its terms."""

    scratch: Scratch | None = None
    vocabulary: Any = None


def top_k(kernels: ModuleType, scorer: Scorer, query: QueryTerms, k: int, params: Params, coder: PairCoder,
          state: SearchState) -> Ranked:
    """``kernels.query_top_k`` of one query in the calling thread, with the per-document work arrays
    kept in ``state`` (fresh ones when another thread is using them)."""
    weights = scorer.prepare(params, coder)
    upper, prunable = scorer.bounds(params, getattr(kernels, "term_extremes", None))
    offsets = scorer.postings.offsets
    terms = query.term_ids
    scratch = state.scratch
    if scratch is None:
        scratch = state.scratch = Scratch(scorer.n_docs)
    if not scratch.lock.acquire(blocking=False):
        scratch = Scratch(scorer.n_docs)
        scratch.lock.acquire()
    try:
        k_eff = max(1, min(k, scorer.n_docs))
        docs = np.empty(k_eff, dtype=np.int64)
        scores = np.empty(k_eff, dtype=np.float64)
        term_upper = upper[terms] if query.upper is None else query.upper
        n = kernels.query_top_k(
            offsets[terms], offsets[terms + 1], query.counts, term_upper * query.counts, weights.scale[terms],
            scorer.constant(query, params), scorer.postings.doc_nums, weights.codes, weights.table, scorer.id_rank,
            k_eff, prunable,
            scratch.acc, scratch.marks, scratch.cand, scratch.keep, scratch.buf, np.empty(k_eff, np.float64),
            np.empty(k_eff, np.int64), np.empty(k_eff, np.int64), docs, scores)
    finally:
        scratch.lock.release()
    return docs[:n], scores[:n]


def top_k_batch(kernels: ModuleType, scorer: Scorer, batch: TermBatch, k: int, params: Params, workers: int,
                coder: PairCoder) -> Sequence[Ranked]:
    """``kernels.batch_top_k`` of every query of ``batch``, in up to ``workers`` parallel chunks."""
    weights = scorer.prepare(params, coder)
    upper, prunable = scorer.bounds(params, getattr(kernels, "term_extremes", None))
    offsets = np.asarray(scorer.postings.offsets)
    k_eff = max(1, min(k, scorer.n_docs))
    out_docs = np.empty((len(batch), k_eff), dtype=np.int64)  # each row is read up to its length only
    out_scores = np.empty((len(batch), k_eff), dtype=np.float64)
    out_len = np.zeros(len(batch), dtype=np.int64)
    kernels.batch_top_k(batch.q_ptr, batch.term_ids, batch.counts, offsets, batch.term_upper(upper), weights.scale,
                        constants(scorer, batch, params), scorer.postings.doc_nums, weights.codes, weights.table,
                        scorer.id_rank, scorer.n_docs, k_eff, prunable, max(1, min(workers, len(batch))), out_docs,
                        out_scores, out_len)
    return RankedRows.of_padded(out_docs, out_scores, out_len)


def constants(scorer: Scorer, batch: TermBatch, params: Params) -> np.ndarray:
    """The per-query constant of ``bm25l``/``bm25+`` (zeros for the other variants), computed as
    :meth:`Scorer.score` computes it, query by query; the batch's own when it has them."""
    if batch.constants is not None:
        return batch.constants
    if zero_tf_part(params):
        return np.array([scorer.constant(q, params) for q in map(batch.query, range(len(batch)))])
    return np.zeros(len(batch))
