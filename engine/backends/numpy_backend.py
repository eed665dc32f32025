"""The numpy backend: the specification, vectorised numpy and Python (what the compiled core is tested against).

Searching is :meth:`~bm25lab.engine.retrieval.Scorer.top` query by query (the scoring model's own
numpy path), a large batch split over forked worker processes that share the prepared weights.
Building keeps the vocabulary in a Python dict; pyarrow splits and hashes large chunks of tokens so
that only a chunk's distinct tokens meet the dict; ``np.unique`` groups the chunk into triples.
"""
from __future__ import annotations

from collections import defaultdict
from itertools import count
from operator import itemgetter
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..postings import Triples, lay_out
from ..selection import code_point_order
from .base import Backend, Ranked

if TYPE_CHECKING:
    from ..retrieval import PairCoder, QueryTerms, Scorer, TermBatch
    from ..scoring import Params

# Batches smaller than this are scored in-process: a worker pool costs more than it saves.
_MIN_PARALLEL_QUERIES = 64
_ARROW_MIN_TOKENS = 50_000  # below this a chunk's tokens are looked up one by one (no pyarrow import)


class NumpyBackend(Backend):
    name = "numpy"

    def term_batch(self, scorer: Scorer, queries: Sequence[Sequence[str]]) -> TermBatch:
        return scorer.query_batch(queries)

    def top_k(self, scorer: Scorer, query: QueryTerms, k: int, params: Params,
              mask: np.ndarray | None = None) -> Ranked:
        return scorer.top(query, k, params, use_prepared=scorer.warm_for(params), mask=mask)

    def top_k_batch(self, scorer: Scorer, batch: TermBatch, k: int, params: Params, workers: int,
                    mask: np.ndarray | None = None) -> Sequence[Ranked]:
        scorer.prepare(params)
        queries = [batch.query(i) for i in range(len(batch))]
        if workers <= 1 or len(queries) < _MIN_PARALLEL_QUERIES:
            return [scorer.top(q, k, params, use_prepared=True, mask=mask) for q in queries]
        return _parallel_top(scorer, queries, k, params, workers, mask)

    def pair_coder(self) -> PairCoder:
        from ..retrieval import NumpyPairCoder

        return NumpyPairCoder()

    def vocabulary(self, terms: Sequence[str] = ()) -> DictVocabulary:
        return DictVocabulary(terms)

    def group_by_term(self, term_ids: np.ndarray, lengths: np.ndarray, first_doc: int,
                      num_terms: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        docs = np.repeat(np.arange(first_doc, first_doc + lengths.shape[0], dtype=np.int64), lengths)
        keys, counts = np.unique((term_ids.astype(np.int64) << 32) | docs, return_counts=True)
        return (keys >> 32).astype(np.int32), (keys & 0xFFFFFFFF).astype(np.int32), counts.astype(np.int32)

    def code_point_order(self, strings: Sequence[str]) -> np.ndarray:
        return code_point_order(strings)

    def lay_out(self, chunks: Sequence[Triples], new_id: np.ndarray,
                threads: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return lay_out(chunks, new_id)


class DictVocabulary:
    """A building vocabulary in a Python dict (see :class:`~bm25lab.engine.backends.Vocabulary`)."""

    def __init__(self, terms: Sequence[str] = ()) -> None:
        # a term missing from the dict gets the next id on its first look-up (C calls only)
        self._ids: dict[str, int] = defaultdict(count(len(terms)).__next__)
        self._ids.update(zip(terms, range(len(terms))))

    def __len__(self) -> int:
        return len(self._ids)

    def term_ids(self, joined: list[str], tokens: Sequence[str], num_tokens: int) -> np.ndarray:
        split = _split_and_encode(joined, num_tokens) if num_tokens >= _ARROW_MIN_TOKENS else None
        if split is None:
            return np.fromiter(_look_up(self._ids, list(tokens)), dtype=np.int64, count=num_tokens)
        distinct, positions = split
        return np.fromiter(_look_up(self._ids, distinct), dtype=np.int64, count=len(distinct))[positions]

    def terms_by_id(self) -> list[str]:
        return list(self._ids)

    def sorted_terms(self) -> tuple[list[str], np.ndarray]:
        first_seen = list(self._ids)
        order = code_point_order(first_seen)
        return list(map(first_seen.__getitem__, order.tolist())), order


def _look_up(table: dict[str, int], keys: list[str]) -> tuple[int, ...]:
    """``table[key]`` of every key, in one C loop (itemgetter: ~15% faster than map over a bound method)."""
    if not keys:
        return ()
    return itemgetter(*keys)(table) if len(keys) != 1 else (table[keys[0]],)


def _split_and_encode(texts: list[str], num_tokens: int) -> tuple[list[str], np.ndarray] | None:
    """The distinct tokens of ``texts`` (documents' tokens joined by single spaces, none empty) and
    every token's index into them, split and hashed by pyarrow in C (several times faster than one
    Python dict look-up per token). None when that would not give the tokens back: a token holds a
    space (more pieces than ``num_tokens``) or a lone surrogate (no UTF-8)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        pieces = pc.split_pattern(pa.array(texts, type=pa.large_string()), " ").flatten()
    except (UnicodeEncodeError, pa.ArrowException):
        return None
    if len(pieces) != num_tokens:
        return None
    encoded = pc.dictionary_encode(pieces)
    return encoded.dictionary.to_pylist(), encoded.indices.to_numpy()


# ---------------------------------------------------------------------- a batch on worker processes
# The batch's scorer and queries, handed to the forked workers (fork copies this module's state).
_FORKED: tuple[Scorer, list[QueryTerms], int, Params, np.ndarray | None] | None = None


def _score_range(bounds: tuple[int, int]) -> list[Ranked]:
    assert _FORKED is not None
    scorer, terms, k, params, mask = _FORKED
    return [scorer.top(q, k, params, use_prepared=True, mask=mask) for q in terms[bounds[0]:bounds[1]]]


def _parallel_top(scorer: Scorer, terms: list[QueryTerms], k: int, params: Params, workers: int,
                  mask: np.ndarray | None = None) -> Sequence[Ranked]:
    """Score contiguous slices of the batch in forked workers that share the prepared weights."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    global _FORKED
    chunk = max(16, -(-len(terms) // (workers * 4)))
    bounds = [(i, min(i + chunk, len(terms))) for i in range(0, len(terms), chunk)]
    _FORKED = (scorer, terms, k, params, mask)
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            parts = list(pool.map(_score_range, bounds))
    finally:
        _FORKED = None
    return [result for part in parts for result in part]
