"""The core backend: every operation of :class:`~bm25lab.engine.backends.Backend` in the compiled core
(:mod:`bm25lab.engine.core`), over the same arrays as the numpy backend, with its results bit for bit.

Searching: the exact top-k kernels (``query_top_k``, ``batch_top_k``, float64 sums in the canonical
term order of :func:`~bm25lab.engine.retrieval.term_order`, the tie rule of
:mod:`~bm25lab.engine.selection`, a filter's document mask leaving out the documents it does not pass)
over the postings' blocks (:mod:`~bm25lab.engine.codec`) and the
prepared weights (:meth:`~bm25lab.engine.retrieval.Scorer.prepare`: a table of the pairs' weights,
and :meth:`~bm25lab.engine.retrieval.Scorer.block_weights`: its grid and the blocks' bounds). Two
searches give the same results: term-at-a-time MaxScore over a per-document accumulator, and block-max
MaxScore over windows of documents, which skips the blocks that cannot reach the k-th score;
:func:`search_method` chooses from k and the number of documents alone. A batch runs on threads without the GIL. A single search whose index has
no bounds yet takes its own terms' largest weights from their postings only, so a one-shot search
never reads every posting.

Building: a vocabulary in a C hash table (:class:`CoreVocabulary`), term ids grouped into triples,
raw ASCII texts split into triples on threads (:meth:`CoreBackend.split_texts`), the triples laid out
by term, the pairs numbered: each an entry point of the core, each tested against the numpy
backend's.
"""
from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field
from itertools import chain
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Generic, Iterable, NamedTuple, Sequence, TypeVar

import numpy as np

from ..columns import utf8_pieces
from .. import core as compiled_core
from ..errors import BM25LabError
from ..postings import Postings, TermList, TextChunk, Triples
from ..records import RankedRows
from ..retrieval import TermBatch
from ..scoring import zero_tf_part
from .base import Backend, Ranked

if TYPE_CHECKING:
    from ..retrieval import PreparedWeights, QueryTerms, Scorer
    from ..scoring import Params

# the document id ranks the search kernels read (other dtypes: numpy's search)
_RANKS = (np.dtype(np.int32), np.dtype(np.int64))
# the searches of the core (its `method` argument)
TERM_AT_A_TIME, BLOCK_MAX = 1, 2
# Block-max MaxScore over windows from this many documents, for k up to n_docs >> _WINDOWED_K_SHIFT;
# term at a time otherwise (its accumulator is in the caches, or many documents make the top k).
# Measured (CPU seconds of 1,000 queries of the benchmarks' Zipf collection, one thread, windows
# against term at a time): 150,000 documents, top-10 0.12 against 0.10, top-1000 0.92 against 0.32;
# 10^6: top-10 0.37 against 0.59, top-300 0.60 against 0.70, top-1000 2.3 against 1.8; 2 x 10^6:
# top-10 0.63 against 1.55, top-1000 3.6 against 5.0.
_WINDOWED_DOCS = 1 << 19
_WINDOWED_K_SHIFT = 10
_EMPTY_I64 = np.zeros(0, np.int64)
_EMPTY_U16 = np.zeros(0, np.uint16)
_THREADED_LAY_OUT = 1 << 20  # postings from which a build lays out documents and tfs on two threads


def _core() -> ModuleType:
    core = compiled_core.kernels()
    if core is None:
        raise BM25LabError("the core backend needs bm25lab's compiled core, which this installation lacks "
                           "(reinstall with a C compiler, or use backend='numpy')")
    return core


class CorePairCoder:
    """:class:`~bm25lab.engine.retrieval.PairCoder` by the core (one pass over the postings each)."""

    def __init__(self, core: ModuleType) -> None:
        self._core = core

    def mark_pairs(self, doc_nums: np.ndarray, tfs: np.ndarray, length_rank: np.ndarray, n_lengths: int,
                   used: np.ndarray) -> None:
        self._core.mark_pairs(doc_nums, tfs, length_rank, n_lengths, used)


class BatchReading(NamedTuple):
    """What a batch read: the blocks of its queries' terms (each term counted for each query), the blocks
    it read (the others it passed over) and their postings."""

    blocks: int
    blocks_read: int
    postings_read: int


def search_method(n_docs: int, k: int) -> int:
    """The core's search for a query of ``k`` results among ``n_docs`` documents: block-max MaxScore over
    windows of documents (``BLOCK_MAX``) for a k small next to a large collection, term at a time
    otherwise. Both give the same documents, scores and order; the choice only changes the speed, and
    depends on nothing else."""
    return BLOCK_MAX if n_docs >= _WINDOWED_DOCS and k <= n_docs >> _WINDOWED_K_SHIFT else TERM_AT_A_TIME


def index_args(scorer: Scorer) -> tuple:
    """The ``index`` tuple of the core's searches: the postings' blocks and the documents' id ranks."""
    blocks = scorer.postings.blocks()
    return (np.asarray(scorer.postings.offsets, dtype=np.int64), blocks.term_starts, blocks.last_docs,
            blocks.positions, blocks.data, scorer.id_rank)


def weight_args(scorer: Scorer, weights: PreparedWeights) -> tuple:
    """The ``weights`` tuple of the core's searches for prepared ``weights`` (see search.h)."""
    blocks = scorer.block_weights(weights.params)
    if weights.per_posting:
        return (weights.table, blocks.grid, 0, 1, _EMPTY_I64, _EMPTY_U16, blocks.bound_codes, blocks.bound_table,
                weights.scale, True)
    lookup = scorer.pair_lookup()
    return (weights.table, blocks.grid, blocks.grid_shift, lookup.n_lengths, lookup.keys, lookup.length_rank,
            blocks.bound_codes, blocks.bound_table, weights.scale, False)


# ---------------------------------------------------------------------- what a backend keeps per scorer
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
    """The backend's state for one scorer: the single searches' :class:`Scratch` and the compiled
    vocabulary of its terms (made by the first look-up)."""

    scratch: Scratch | None = None
    vocabulary: Any = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def vocabulary_of(self, terms: Sequence[str]) -> CoreVocabulary:
        with self.lock:
            if self.vocabulary is None:
                self.vocabulary = CoreVocabulary.of_terms(terms)
            return self.vocabulary


# ---------------------------------------------------------------------- the backend
class CoreBackend(Backend):
    name = "core"

    def built(self, postings: Postings, threads: int = 1) -> None:
        """Encode the blocks the core's searches read now, on ``threads`` threads, as part of the build
        (0.19 s at 150,000 documents on one), not in the first search after it; saving writes these
        blocks."""
        postings.blocks(threads)

    def __init__(self, method: int | None = None) -> None:
        """``method``: one of the core's searches for every query (TERM_AT_A_TIME, BLOCK_MAX), for
        the tests that compare both with numpy; None: :func:`search_method` (the default)."""
        self._core = _core()
        self._forced = method
        self.last_read: BatchReading | None = None  # what the last batch read (benchmarks' figures)
        self._fallback: Backend | None = None
        self._state: PerScorer[SearchState] = PerScorer(SearchState)

    @property
    def _numpy(self) -> Backend:
        """The numpy backend, which searches BM25F weights past 2**32 postings (int64 codes); made, and its
        module imported, when first needed (a search imports only the chosen backend)."""
        if self._fallback is None:
            from .numpy_backend import NumpyBackend

            self._fallback = NumpyBackend()
        return self._fallback

    # ------------------------------------------------------------------ searching
    def term_batch(self, scorer: Scorer, queries: Sequence[Sequence[str]]) -> TermBatch:
        """The tokens, joined, are looked up from their UTF-8 in a compiled copy of the index's
        vocabulary (look-ups never change it) and grouped per query by the core."""
        vocabulary = self._state.of(scorer).vocabulary_of(scorer.postings.terms)
        lengths = np.fromiter(map(len, queries), dtype=np.int64, count=len(queries))
        tokens = list(chain.from_iterable(queries))
        ids = vocabulary.look_up([" ".join(tokens)], tokens, len(tokens))
        q_ptr = np.empty(len(queries) + 1, dtype=np.int64)
        terms = np.empty(len(tokens), dtype=np.int64)
        counts = np.empty(len(tokens), dtype=np.float64)
        n = self._core.group_query_terms(ids, lengths, q_ptr, terms, counts)
        return TermBatch(q_ptr, terms[:n].copy(), counts[:n].copy())

    def top_k(self, scorer: Scorer, query: QueryTerms, k: int, params: Params,
              mask: np.ndarray | None = None) -> Ranked:
        weights = scorer.prepare(params, self.pair_coder())
        if not _fits(scorer):
            return self._numpy.top_k(scorer, query, k, params, mask)
        bound, prunable = self._query_bounds(scorer, weights, query, params)
        k_eff = max(1, min(k, scorer.n_docs))
        method = self._method(scorer.n_docs, k_eff)
        docs = np.empty(k_eff, dtype=np.int64)
        scores = np.empty(k_eff, dtype=np.float64)
        upper = bound if query.upper is None else query.upper
        args = (index_args(scorer), weight_args(scorer, weights), query.term_ids, query.counts, upper * query.counts,
                bound, scorer.constant(query, params), scorer.n_docs, k_eff, prunable, method)
        heap = np.empty(k_eff, np.float64), np.empty(k_eff, np.int64), np.empty(k_eff, np.int64)
        if method != TERM_AT_A_TIME:
            none = np.zeros(0)
            n = self._core.query_top_k(*args, none, np.zeros(0, np.uint8), _EMPTY_I64, _EMPTY_I64, none, *heap, docs,
                                       scores, mask=mask)
            return docs[:n], scores[:n]
        state = self._state.of(scorer)
        scratch = state.scratch
        if scratch is None:
            scratch = state.scratch = Scratch(scorer.n_docs)
        if not scratch.lock.acquire(blocking=False):
            scratch = Scratch(scorer.n_docs)
            scratch.lock.acquire()
        try:
            n = self._core.query_top_k(*args, scratch.acc, scratch.marks, scratch.cand, scratch.keep, scratch.buf,
                                       *heap, docs, scores, mask=mask)
        finally:
            scratch.lock.release()
        return docs[:n], scores[:n]

    def _method(self, n_docs: int, k: int) -> int:
        return search_method(n_docs, k) if self._forced is None else self._forced

    def _entries(self, scorer: Scorer, weights: PreparedWeights, threads: int) -> Callable[[np.ndarray], tuple]:
        """The core's pass over the postings of some terms: their extreme table entries."""
        def entries(term_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            term_ids = np.ascontiguousarray(term_ids, dtype=np.int64)
            high, low = np.empty(term_ids.shape[0]), np.empty(term_ids.shape[0])
            self._core.term_extremes(index_args(scorer), weight_args(scorer, weights), term_ids, scorer.n_docs,
                                     max(1, threads), high, low)
            return high, low

        return entries

    def _query_bounds(self, scorer: Scorer, weights: PreparedWeights, query: QueryTerms,
                      params: Params) -> tuple[np.ndarray, bool]:
        """The largest weight (at least 0) of each of the query's terms and whether none of their weights
        is negative: from the index's bounds when a batch made them, else from the terms' own postings
        (the same values; a one-shot search reads no other posting)."""
        if scorer.bounded_for(params):
            upper, prunable = scorer.bounds(params)
            return upper[query.term_ids], prunable
        offsets = np.asarray(scorer.postings.offsets)
        m = query.term_ids.shape[0]
        high, low = self._entries(scorer, weights, 1)(query.term_ids)
        largest, smallest = weights.scaled_extremes(query.term_ids, np.diff(offsets)[query.term_ids] > 0, high, low)
        return np.maximum(largest, 0.0), bool(m == 0 or smallest.min() >= 0)

    def top_k_batch(self, scorer: Scorer, batch: TermBatch, k: int, params: Params, workers: int,
                    mask: np.ndarray | None = None) -> Sequence[Ranked]:
        weights = scorer.prepare(params, self.pair_coder())
        if not _fits(scorer):
            return self._numpy.top_k_batch(scorer, batch, k, params, workers, mask)
        threads = max(1, min(workers, len(batch)))
        upper, prunable = scorer.bounds(params, self._entries(scorer, weights, max(1, workers)))
        k_eff = max(1, min(k, scorer.n_docs))
        out_docs = np.empty((len(batch), k_eff), dtype=np.int64)  # each row is read up to its length only
        out_scores = np.empty((len(batch), k_eff), dtype=np.float64)
        out_len = np.zeros(len(batch), dtype=np.int64)
        read = np.zeros(3, np.int64)
        self._core.batch_top_k(index_args(scorer), weight_args(scorer, weights), batch.q_ptr, batch.term_ids,
                               batch.counts, batch.term_upper(upper), upper, _constants(scorer, batch, params),
                               scorer.n_docs, k_eff, prunable, threads, self._method(scorer.n_docs, k_eff), out_docs,
                               out_scores, out_len, mask=mask, stats=read)
        self.last_read = BatchReading(*read.tolist())
        return RankedRows.of_padded(out_docs, out_scores, out_len)

    def pair_coder(self) -> CorePairCoder:
        return CorePairCoder(self._core)

    # ------------------------------------------------------------------ building
    def vocabulary(self, terms: Sequence[str] = ()) -> CoreVocabulary:
        return CoreVocabulary.of_terms(terms)

    def group_by_term(self, term_ids: np.ndarray, lengths: np.ndarray, first_doc: int, num_terms: int) -> Triples:
        n = term_ids.shape[0]
        out = np.empty(n, np.int32), np.empty(n, np.int32), np.empty(n, np.int32)
        pairs = self._core.group_by_term(term_ids, np.asarray(lengths, dtype=np.int32), first_doc, num_terms, *out)
        return out[0][:pairs].copy(), out[1][:pairs].copy(), out[2][:pairs].copy()

    def split_texts(self, text: np.ndarray, bounds: np.ndarray, first_doc: int) -> TextChunk:
        """A chunk of raw texts analysed and grouped by the core (without the GIL: the builder runs
        chunks on several threads); see :class:`~bm25lab.engine.postings.SplitsTexts`."""
        size = text.shape[0] // 2 + 2
        triples = np.empty(size, np.int32), np.empty(size, np.int32), np.empty(size, np.int32)
        doc_lengths = np.empty(bounds.shape[0] - 1, np.int32)
        terms = np.empty(size, np.uint64), np.empty(size, np.int64), np.empty(size, np.int64)
        pairs, distinct = self._core.split_texts(text, bounds, first_doc, *triples, doc_lengths, *terms)
        return TextChunk(text, tuple(a[:pairs].copy() for a in triples), doc_lengths,  # type: ignore[arg-type]
                         *(a[:distinct].copy() for a in terms))

    def code_point_order(self, strings: Sequence[str]) -> np.ndarray:
        """:func:`bm25lab.engine.selection.code_point_order` by the core's sort of the strings' UTF-8
        ("surrogatepass": its byte order is the code point order; equal strings keep their order)."""
        data, lengths = utf8_pieces(strings)
        starts = np.cumsum(lengths) - lengths
        order = np.empty(len(strings), dtype=np.int64)
        self._core.sort_terms(starts, lengths, data, order)
        return order

    def lay_out(self, chunks: Sequence[Triples], new_id: np.ndarray,
                threads: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:func:`bm25lab.engine.postings.lay_out` by the core, chunk by chunk (no copy of them all): the
        offsets from every chunk's terms, then the documents and the tfs scattered to their terms' next
        free places, the two on two threads when ``threads`` > 1."""
        new_id = np.asarray(new_id, dtype=np.int64)
        counts = np.zeros(len(new_id) + 1, dtype=np.int64)
        for terms, _, _ in chunks:
            self._core.count_terms(terms, new_id, counts)
        offsets = np.cumsum(counts)  # counts[t + 1]: term t's postings
        total = int(offsets[-1])

        def scatter(column: int) -> np.ndarray:
            out = np.empty(total, dtype=np.int32)
            free = offsets[:-1].copy()
            for chunk in chunks:
                self._core.scatter_by_term(chunk[0], chunk[column], new_id, free, out)
            return out

        if threads < 2 or total < _THREADED_LAY_OUT:
            return offsets, scatter(1), scatter(2)
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(1, thread_name_prefix="bm25lab-lay-out") as pool:
            tfs = pool.submit(scatter, 2)
            return offsets, scatter(1), tfs.result()


def _fits(scorer: Scorer) -> bool:
    """Whether the core reads the scorer's id ranks (int32 or int64: always, from an index)."""
    return scorer.id_rank.dtype in _RANKS


def _constants(scorer: Scorer, batch: TermBatch, params: Params) -> np.ndarray:
    """The per-query constant of ``bm25l``/``bm25+`` (zeros for the other variants), computed as
    :meth:`Scorer.score` computes it, query by query; the batch's own when it has them."""
    if batch.constants is not None:
        return batch.constants
    if zero_tf_part(params):
        return np.array([scorer.constant(q, params) for q in map(batch.query, range(len(batch)))])
    return np.zeros(len(batch))


# ---------------------------------------------------------------------- the compiled vocabulary
class CoreVocabulary:
    """A vocabulary kept by the core (its ``Vocabulary``: a hash table of UTF-8 byte strings): term ids
    come straight from the UTF-8 of many tokens at once. A build's grows as it meets new terms, which
    become Python strings only at the end, sorted (:meth:`sorted_terms`); a search's holds an index's
    terms (:meth:`of_terms`) and only looks tokens up (:meth:`look_up`)."""

    def __init__(self, method: int | None = None) -> None:
        """``method``: one of the core's searches for every query (TERM_AT_A_TIME, BLOCK_MAX), for
        the tests that compare both with numpy; None: :func:`search_method` (the default)."""
        self._core = _core()
        self._forced = method
        self.last_read: BatchReading | None = None  # what the last batch read (benchmarks' figures)
        self._table = self._core.Vocabulary()

    def __len__(self) -> int:
        return len(self._table)

    @classmethod
    def of_terms(cls, terms: Sequence[str]) -> CoreVocabulary:
        """The vocabulary of distinct ``terms``, term ``i`` with id ``i``."""
        vocabulary = cls()
        if len(terms):  # a loaded segment's terms: their text, its line feeds read as spaces
            joined = [terms.text.replace("\n", " ")] if isinstance(terms, TermList) else list(terms)
            vocabulary.term_ids(joined, terms, len(terms))
        return vocabulary

    def term_ids(self, joined: list[str], tokens: Iterable[str], num_tokens: int) -> np.ndarray:
        """The term id of each of ``tokens`` (``num_tokens`` of them; ``joined``: the same tokens joined
        by spaces, in groups such as documents), a new term numbered next. Lone surrogates pass
        through UTF-8 as in "surrogatepass", whose byte order is still the code point order."""
        return self._encode(joined, tokens, num_tokens, True)

    def look_up(self, joined: list[str], tokens: Iterable[str], num_tokens: int) -> np.ndarray:
        """:meth:`term_ids` that adds no term: -1 for a token not in the vocabulary."""
        return self._encode(joined, tokens, num_tokens, False)

    def _encode(self, joined: list[str], tokens: Iterable[str], num_tokens: int, insert: bool) -> np.ndarray:
        text = np.frombuffer(" ".join(joined).encode("utf-8", "surrogatepass"), dtype=np.uint8)
        ends = np.zeros(0, dtype=np.int64)  # the tokens are the pieces between spaces
        if self._core.count_pieces(text) != num_tokens:  # a token holds a space: every token's own end
            pieces = [token.encode("utf-8", "surrogatepass") for token in tokens]
            ends = np.cumsum(np.fromiter(map(len, pieces), dtype=np.int64, count=num_tokens))
            text = np.frombuffer(b"".join(pieces), dtype=np.uint8)
        ids = np.empty(num_tokens, dtype=np.int32)
        self._table.encode(text, ends, ids, insert)
        return ids

    def merged_ids(self, chunk: TextChunk) -> np.ndarray:
        """The id of each of a chunk's terms (:meth:`CoreBackend.split_texts`), a new term numbered next."""
        ids = np.empty(chunk.term_hashes.shape[0], dtype=np.int32)
        self._table.merge(chunk.text, chunk.term_hashes, chunk.term_starts, chunk.term_lengths, ids)
        return ids

    def _spans(self) -> tuple[np.ndarray, np.ndarray, bytes]:
        n = len(self._table)
        starts, lengths = np.empty(n, np.int64), np.empty(n, np.int64)
        self._table.spans(starts, lengths)
        return starts, lengths, self._table.data()

    def terms_by_id(self) -> list[str]:
        """Every term, term ``i`` at position ``i``."""
        starts, lengths, raw = self._spans()
        return [raw[a:a + b].decode("utf-8", "surrogatepass") for a, b in zip(starts.tolist(), lengths.tolist())]

    def sorted_terms(self) -> tuple[list[str], np.ndarray]:
        """The terms in code point order, and the id of each (sorted by the core, then decoded all at
        once and split at a byte no term holds)."""
        n = len(self._table)
        order = np.empty(n, dtype=np.int64)
        self._table.order(order)
        if not n:
            return [], order
        joined = np.empty(self._table.bytes_used + n - 1, dtype=np.uint8)
        separator = self._table.joined(order, joined)
        if separator >= 0:
            return joined.tobytes().decode("utf-8", "surrogatepass").split(chr(separator)), order
        starts, lengths, raw = self._spans()  # every ASCII character is in some term: one at a time
        spans = zip(starts[order].tolist(), lengths[order].tolist())
        return [raw[a:a + b].decode("utf-8", "surrogatepass") for a, b in spans], order
