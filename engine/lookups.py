"""What the search protocol's feedback methods read of one searchable view (an ``Index``'s, or a shard's under
the collection's statistics), from its postings: the terms' ids, their document and collection frequencies,
the numbers of documents given by id, the weight of a term in a document, and weighted queries
(``{term: weight}``) as the engine's term batches (:class:`~bm25lab.engine.retrieval.TermBatch`, whose counts
are the weights, every term's largest weight a power of two above all of theirs: :func:`ordering_upper`). An
``Index`` and a ``ShardedIndex`` answer the search protocol's feedback methods with these
(:mod:`bm25lab.engine.searching`); the numbers are those of the single-term searches that define them."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np

from .postings import concat_ranges
from .retrieval import QueryTerms, TermBatch
from .scoring import zero_tf_part

if TYPE_CHECKING:
    from .backends import Backend
    from .retrieval import Scorer
    from .scoring import Params
    from .segments import Part

__all__ = ["document_numbers", "ordering_upper", "posting_positions", "term_counts", "term_ids", "term_weights",
           "weighted_batch"]


def term_ids(backend: Backend, scorer: Scorer, terms: Sequence[str]) -> np.ndarray:
    """The id of each of ``terms`` in ``scorer``'s postings (int64, -1 for a term it lacks), looked up by
    ``backend`` as the tokens of queries are (each term a one-token query)."""
    ids = np.full(len(terms), -1, dtype=np.int64)
    if len(terms):
        batch = backend.term_batch(scorer, [[t] for t in terms])
        ids[np.diff(batch.q_ptr) > 0] = batch.term_ids
    return ids


def term_counts(scorer: Scorer, ids: np.ndarray, collection_frequencies: bool = True
                ) -> tuple[np.ndarray, np.ndarray | None]:
    """The document frequency of each term id (its postings) and, with ``collection_frequencies``, its
    collection frequency (the sum of its postings' tfs, gathered and summed in one pass); 0 for the id -1."""
    offsets = np.asarray(scorer.postings.offsets)
    known = np.flatnonzero(ids >= 0)
    df = np.zeros(ids.shape[0], dtype=np.int64)
    df[known] = offsets[ids[known] + 1] - offsets[ids[known]]
    if not collection_frequencies:
        return df, None
    cf = np.zeros(ids.shape[0], dtype=np.int64)
    held = known[df[known] > 0]
    if held.shape[0]:
        tfs = np.asarray(scorer.postings.tfs[concat_ranges(offsets[ids[held]], df[held])]).astype(np.int64)  # the terms' blocks only
        cf[held] = np.add.reduceat(tfs, np.cumsum(df[held]) - df[held])
    return df, cf


def document_numbers(parts: Sequence[Part], doc_ids: Sequence[str]) -> np.ndarray:
    """Each id's number in the view of ``parts`` (:func:`bm25lab.engine.segments.merge`: the live documents
    numbered in segment order), -1 for an id that is not live in them."""
    out = np.full(len(doc_ids), -1, dtype=np.int64)
    where: dict[str, list[int]] = {}
    for position, doc_id in enumerate(doc_ids):
        where.setdefault(doc_id, []).append(position)
    base = 0
    for part in parts:
        for doc_id, number in part.store.nums(list(where)).items():
            live_before = number - int(np.searchsorted(part.deleted, number))  # deleted numbers are sorted
            out[where[doc_id]] = base + live_before
        base += part.num_live
    return out


def posting_positions(doc_nums: np.ndarray, lo: np.ndarray, hi: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """For each i, the position of document ``wanted[i]`` among the postings ``lo[i]:hi[i]`` (ascending
    documents), -1 where it is not there: every bisection at once, a step of all of them at a time."""
    lo, hi = lo.astype(np.int64), hi.astype(np.int64)
    end = hi.copy()
    while True:
        active = lo < hi
        if not active.any():
            break
        mid = (lo + hi) // 2
        below = active & (np.asarray(doc_nums[np.minimum(mid, end - 1)]) < wanted)
        lo = np.where(below, mid + 1, lo)
        hi = np.where(active & ~below, mid, hi)
    found = lo < end
    found[found] = np.asarray(doc_nums[lo[found]]) == wanted[found]
    return np.where(found, lo, -1)


def term_weights(backend: Backend, scorer: Scorer, parts: Sequence[Part], doc_ids: Sequence[str],
                 terms: Sequence[Sequence[str]], params: Params) -> list[np.ndarray]:
    """For each document, the score it gets from the one-term query of each of its ``terms`` under
    ``params`` (0.0 where it lacks the term): its posting's weight, found by bisecting the term's postings
    (ascending documents), computed as every search computes it (``Scorer``'s weights of postings), plus
    the one-term query's constant for ``bm25l``/``bm25+`` (``Scorer.constant``)."""
    numbers = np.repeat(document_numbers(parts, doc_ids), [len(t) for t in terms])
    flat = [t for listed in terms for t in listed]
    ids = term_ids(backend, scorer, flat)
    offsets = np.asarray(scorer.postings.offsets)
    doc_nums = scorer.postings.doc_nums
    positions = np.full(len(flat), -1, dtype=np.int64)
    asked = np.flatnonzero((ids >= 0) & (numbers >= 0))
    at = posting_positions(doc_nums, offsets[ids[asked]], offsets[ids[asked] + 1], numbers[asked])
    positions[asked] = at
    weights = np.zeros(len(flat), dtype=np.float64)
    found = np.flatnonzero(positions >= 0)
    if found.shape[0]:
        zero = zero_tf_part(params)
        idf = scorer.idf(params.variant)[ids[found]]
        weights[found] = scorer._posting_weights(positions[found], idf, params, zero) + 0.0  # as prepared
        if zero:
            weights[found] += [scorer.constant(QueryTerms(np.array([t]), np.ones(1)), params)
                               for t in ids[found].tolist()]
    bounds = np.cumsum([0, *(len(t) for t in terms)])
    return [weights[a:z] for a, z in zip(bounds[:-1].tolist(), bounds[1:].tolist())]


def ordering_upper(largest: float) -> float:
    """The power of two at least ``largest`` (a weighted query's terms' largest weight, at least 0; 1.0 for
    0): given as every term's largest weight, it orders the terms by their weights (upper x weight is
    exact) and stays an upper bound of each (pruning stays exact)."""
    if not largest > 0.0:
        return 1.0
    bound = 2.0 ** math.ceil(math.log2(largest))
    while bound < largest:
        bound *= 2.0
    return bound


def weighted_batch(backend: Backend, scorer: Scorer, queries: Sequence[Mapping[str, float]]) -> TermBatch:
    """The weighted queries as a batch of ``scorer``'s terms: each query's known terms (ascending ids, which
    is the terms' code point order) with their weights as the counts (a term the postings lack is left out)."""
    lengths = np.fromiter(map(len, queries), dtype=np.int64, count=len(queries))
    ids = term_ids(backend, scorer, [t for q in queries for t in q])
    weights = np.fromiter((w for q in queries for w in q.values()), dtype=np.float64, count=ids.shape[0])
    which = np.repeat(np.arange(len(queries), dtype=np.int64), lengths)
    known = ids >= 0
    ids, weights, which = ids[known], weights[known], which[known]
    order = np.lexsort((ids, which))
    q_ptr = np.zeros(len(queries) + 1, dtype=np.int64)
    np.cumsum(np.bincount(which, minlength=len(queries)), out=q_ptr[1:])
    return TermBatch(q_ptr, ids[order], weights[order])
