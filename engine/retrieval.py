"""Query-time scoring: BM25 weights over postings, vectorised accumulation, top-k.

Per search, each posting of a query term gets the weight ``idf(t) * (tf_part(tf, dl) - tf_part(0))``
and the weights of a document's postings are summed from 0.0 in the query's canonical term order
(:func:`term_order`: the term with the largest weight first, the order in which dynamic pruning
visits them, so that every path adds the same numbers in the same order); ``sum_t idf(t) *
tf_part(0)`` (non-zero only for ``bm25l`` and ``bm25+``) is then added to every matching document.
All arithmetic is float64.

Single queries compute the weights of their own postings only. Batches prepare the weights of all
postings once per parameter set (:meth:`Scorer.prepare`) and then only gather and add: a weight is
its term's idf times the tf part of its (tf, document length) pair, and a collection has few such
pairs (1,593 for 14.5 M postings of the Zipf benchmark), so each posting keeps a 16-bit (or 32-bit)
code of its pair, computed once per index, and a parameter set costs a table of the pairs' tf parts
(:class:`PreparedWeights`): a quarter of the memory of a float64 weight per posting, and the very
same float64 products.

A shard of a larger collection (:mod:`bm25lab.engine.shards`) is scored with the collection's
statistics (:class:`CollectionStatistics`: N, the sum of lengths, every term's df) instead of its
own, and each query then brings what only the whole collection knows: every term's largest weight
(``upper``, which fixes the canonical order) and the per-query constant. With both, every document
gets the float64 score, summed in the order, that an index of the whole collection gives it.

A query term given ``qf`` times weighs ``qf`` (``counts``), or with ``k3``
:func:`~.scoring.query_term_weight` of it (:meth:`QueryTerms.weighted`): every path multiplies a
term's weights by its entry of ``counts``. An index built with fields scores by BM25F when the
parameters carry field weights (:func:`~.scoring.bm25f_tf_part`, from the index's
:class:`~bm25lab.engine.postings.Fields`); a shard (``statistics``) has no fields.
"""
from __future__ import annotations

from collections import Counter
from itertools import chain
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Iterator, Protocol, Sequence

import numpy as np

from .postings import Postings, concat_ranges, release_pages
from .scoring import Params, absent_terms_constant, bm25f_tf_part, get_variant, query_term_weight, zero_tf_part
from .selection import top_k

if TYPE_CHECKING:
    from .postings import Fields

# A query whose postings are fewer than N / _SPARSE_RATIO accumulates sparsely (unique + bincount);
# denser queries use one dense array of N scores. Both add in the same order: same float results.
_SPARSE_RATIO = 8
_PREPARE_BLOCK = 1 << 20  # postings whose weights are computed together (work arrays of ~8 MB each)
# (tf, length) pairs are numbered through a dense array over tf * distinct lengths up to this size;
# past it (frequencies in the thousands in documents of thousands of distinct lengths) by sorting
_DENSE_PAIR_KEYS = 1 << 24
# a search over blocks finds the entries of frequencies up to this (a power of two) in a grid by
# length and frequency, the others by a search of the pairs' keys
_GRID_TFS = 64

# Single searches with the same parameters that run before all postings' weights are prepared.
WARM_AFTER = 8


def term_order(upper: np.ndarray) -> np.ndarray:
    """The canonical order of a query's terms: by ``upper`` (the term's largest weight, at least 0,
    times its multiplicity) descending, ties in term-id order. Scores are sums in this order.

    The specification of the order: the compiled core's search (``term_order`` in
    ``engine/core/search.c``) sorts the same way, and :class:`QueryBatch` applies it to many queries."""
    return np.argsort(-upper, kind="stable")


def _upper(weights: np.ndarray, mult: float) -> float:
    """A term's entry of ``upper`` (see :func:`term_order`) from the weights of all its postings."""
    return max(float(weights.max()), 0.0) * mult if weights.shape[0] else 0.0


@dataclass(frozen=True)
class QueryTerms:
    """A query's distinct known terms (ascending term ids) and how often each occurs in the query.

    ``upper`` and ``constant``, when given, are the terms' largest weights (at least 0, before the
    multiplicity) and the query's constant in the whole collection, for a scorer of one shard of it
    (see the module docstring); None: the scorer's own."""

    term_ids: np.ndarray
    counts: np.ndarray
    upper: np.ndarray | None = None
    constant: float | None = None

    @property
    def empty(self) -> bool:
        return self.term_ids.shape[0] == 0

    def weighted(self, k3: float | None) -> "QueryTerms":
        """The same terms with ``counts`` replaced by their weights (:func:`~.scoring.query_term_weight`):
        every scoring path multiplies a term's weight by its entry of ``counts`` (a shard's ``upper`` is
        before the multiplicity, its ``constant`` already weighted: both kept)."""
        return self if k3 is None else replace(self, counts=query_term_weight(self.counts, k3))


@dataclass(frozen=True)
class TermBatch:
    """Many queries' :class:`QueryTerms` as flat arrays: query ``i`` owns ``term_ids[q_ptr[i]:q_ptr[i+1]]``
    (ascending) with multiplicities ``counts`` at the same places; ``upper`` (at the same places) and
    ``constants`` (one per query) as in :class:`QueryTerms`."""

    q_ptr: np.ndarray
    term_ids: np.ndarray
    counts: np.ndarray
    upper: np.ndarray | None = None
    constants: np.ndarray | None = None

    def __len__(self) -> int:
        return self.q_ptr.shape[0] - 1

    def query(self, i: int) -> QueryTerms:
        a, z = int(self.q_ptr[i]), int(self.q_ptr[i + 1])
        return QueryTerms(self.term_ids[a:z], self.counts[a:z], None if self.upper is None else self.upper[a:z],
                          None if self.constants is None else float(self.constants[i]))

    def term_upper(self, own: np.ndarray) -> np.ndarray:
        """Every term's largest weight for this batch: the scorer's own ``own`` (:meth:`Scorer.bounds`),
        with the batch's ``upper`` in place of its terms' when it has them."""
        if self.upper is None:
            return own
        upper = own.copy()
        upper[self.term_ids] = self.upper
        return upper

    def weighted(self, k3: float | None) -> "TermBatch":
        """:meth:`QueryTerms.weighted` of every query."""
        return self if k3 is None else replace(self, counts=query_term_weight(self.counts, k3))

    @classmethod
    def of(cls, queries: Sequence[QueryTerms]) -> "TermBatch":
        q_ptr = np.zeros(len(queries) + 1, dtype=np.int64)
        np.cumsum([q.term_ids.shape[0] for q in queries], out=q_ptr[1:])
        if not queries:
            return cls(q_ptr, np.zeros(0, np.int64), np.zeros(0))
        return cls(q_ptr, np.concatenate([q.term_ids for q in queries]).astype(np.int64),
                   np.concatenate([q.counts for q in queries]).astype(np.float64))


@dataclass(frozen=True, eq=False)
class CollectionStatistics:
    """What BM25 needs to know of a whole collection: its live document count ``num_docs`` (N), the
    integer sum of their lengths, and the document frequency of every term that has a live posting,
    terms in code point order (exactly the vocabulary and df of one index of the whole collection).
    """

    num_docs: int
    total_length: int
    terms: Sequence[str]  # or a pyarrow string array
    df: np.ndarray  # int64, one per term
    _idf: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def avgdl(self) -> float:
        """``total_length / num_docs``, the same float an index of the collection computes."""
        return self.total_length / self.num_docs if self.num_docs else 0.0

    def idf(self, variant: str) -> np.ndarray:
        """idf of every term under ``variant``, computed over the whole vocabulary as one index does
        (``okapi``'s floor is the mean over all of it); cached."""
        if variant not in self._idf:
            self._idf[variant] = get_variant(variant).idf(self.df, self.num_docs)
        return self._idf[variant]

    def positions(self, terms: Sequence[str]) -> np.ndarray:
        """The position (int64) of each of ``terms`` among :attr:`terms`; every one must be there."""
        if not len(terms):
            return np.zeros(0, dtype=np.int64)
        found = _positions(terms, self.terms)
        if (found < 0).any():
            raise KeyError("a term is missing from the collection's statistics")
        return found


def _positions(terms: Sequence[str], vocabulary: Sequence[str]) -> np.ndarray:
    """Where each of ``terms`` is in ``vocabulary`` (-1 when absent), hashed by pyarrow in C; a
    Python dict when a string has no UTF-8 (a lone surrogate)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from .columns import string_array

    try:
        found = pc.index_in(string_array(terms).cast(pa.large_string()),
                            value_set=string_array(vocabulary).cast(pa.large_string()))
    except (UnicodeEncodeError, pa.ArrowException):
        vocabulary = vocabulary.to_pylist() if isinstance(vocabulary, pa.Array) else vocabulary
        lookup = dict(zip(vocabulary, range(len(vocabulary))))
        return np.fromiter((lookup.get(t, -1) for t in terms), dtype=np.int64, count=len(terms))
    return found.fill_null(-1).to_numpy().astype(np.int64)


def _term_blocks(offsets: np.ndarray, n: int) -> Iterator[tuple[int, int, int, np.ndarray]]:
    """Postings ``lo:hi``, ``_PREPARE_BLOCK`` at a time, with the first term that has postings there
    and the bounds of those terms' postings within ``lo:hi`` (one more than the terms)."""
    for lo in range(0, n, _PREPARE_BLOCK):
        hi = min(lo + _PREPARE_BLOCK, n)
        first, end = np.searchsorted(offsets, [lo, hi], side="right") - 1  # terms with postings in lo:hi
        yield lo, hi, int(first), np.clip(offsets[first:end + 2], lo, hi)


def _block_firsts(offsets: np.ndarray, term_starts: np.ndarray) -> np.ndarray:
    """The first posting of every block (:mod:`~bm25lab.engine.codec`: BLOCK postings a block, a term's
    last block shorter)."""
    from .codec import BLOCK

    n_blocks = int(term_starts[-1])
    term = np.repeat(np.arange(offsets.shape[0] - 1, dtype=np.int64), np.diff(term_starts))
    return offsets[term] + (np.arange(n_blocks, dtype=np.int64) - term_starts[term]) * BLOCK


class TermEntries(Protocol):
    """A compiled pass over the postings (the compiled core's ``term_extremes``, bound to a scorer and
    its prepared weights): the largest and smallest table entry over the postings of each of ``term_ids``
    (-inf and inf for a term without postings), the values numpy's ``maximum``/``minimum.reduceat`` give."""

    def __call__(self, term_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...


class PairCoder(Protocol):
    """What :func:`posting_pairs` runs over every posting (the compiled core's, or
    :class:`NumpyPairCoder`): a posting's pair key is ``tf * n_lengths + length_rank[doc]``."""

    def mark_pairs(self, doc_nums: np.ndarray, tfs: np.ndarray, length_rank: np.ndarray, n_lengths: int,
                   used: np.ndarray) -> None:
        """Set ``used[key] = 1`` for every posting's key."""


class NumpyPairCoder:
    """:class:`PairCoder` in numpy, ``_PREPARE_BLOCK`` postings at a time."""

    @staticmethod
    def _keys(doc_nums: np.ndarray, tfs: np.ndarray, length_rank: np.ndarray, n_lengths: int, lo: int,
              hi: int) -> np.ndarray:
        return np.asarray(tfs[lo:hi]).astype(np.int64) * n_lengths + length_rank[np.asarray(doc_nums[lo:hi])]

    def mark_pairs(self, doc_nums: np.ndarray, tfs: np.ndarray, length_rank: np.ndarray, n_lengths: int,
                   used: np.ndarray) -> None:
        for lo in range(0, doc_nums.shape[0], _PREPARE_BLOCK):
            used[self._keys(doc_nums, tfs, length_rank, n_lengths, lo, lo + _PREPARE_BLOCK)] = 1


@dataclass(frozen=True)
class PostingPairs:
    """The distinct (tf, document length) pairs of the postings, in (tf, length) order: pair ``c`` is
    ``(tfs[c], lengths[c])``, the posting's *code*. Independent of the parameters; saved with an index
    (``pairs.npy``), else computed by :func:`posting_pairs` once per scorer."""

    tfs: np.ndarray
    lengths: np.ndarray


def code_dtype(n_codes: int) -> type:
    """The narrowest unsigned type that numbers ``n_codes`` codes (uint16 or uint32)."""
    return np.uint16 if n_codes <= 1 << 16 else np.uint32


def length_ranks(doc_lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The documents' distinct lengths, ascending, and each document's rank among them (uint16, or
    uint32 past 2**16 lengths: narrow, so that its random reads stay in the caches); one pass and no
    sort (lengths are small integers), else numpy's unique."""
    lengths = np.asarray(doc_lengths)
    if not lengths.shape[0]:
        return np.zeros(0, np.int64), np.zeros(0, np.uint16)
    top = int(lengths.max())
    if lengths.min() >= 0 and top < max(4 * lengths.shape[0], 1 << 16):
        used = np.zeros(top + 1, dtype=bool)
        used[lengths] = True
        values = np.flatnonzero(used)
        rank_of = np.cumsum(used) - 1
        ranks = rank_of[lengths]
    else:
        values, ranks = np.unique(lengths, return_inverse=True)
    return values.astype(np.int64), ranks.reshape(-1).astype(code_dtype(values.shape[0]))


def posting_pairs(postings: Postings, coder: PairCoder) -> PostingPairs:
    """:class:`PostingPairs` of ``postings``: one pass of ``coder`` over the postings marking their
    keys in a dense array (or, for a huge key space, the keys sorted). The pages of a memory-mapped
    ``tfs`` are then let go (:func:`~.postings.release_pages`)."""
    doc_nums, tfs = postings.doc_nums, postings.tfs
    length_values, length_rank = length_ranks(postings.doc_lengths)
    n_lengths = max(length_values.shape[0], 1)
    max_tf = int(np.asarray(tfs).max()) if tfs.shape[0] else 0
    key_space = (max_tf + 1) * n_lengths
    if key_space > _DENSE_PAIR_KEYS:
        pair_keys = np.unique(NumpyPairCoder._keys(doc_nums, tfs, length_rank, n_lengths, 0, doc_nums.shape[0]))
    else:
        used = np.zeros(key_space, dtype=np.uint8)
        coder.mark_pairs(np.asarray(doc_nums), np.asarray(tfs), length_rank, n_lengths, used)
        pair_keys = np.flatnonzero(used)
    release_pages(tfs)  # search reads the blocks, not the frequencies
    pair_lengths = length_values[pair_keys % n_lengths] if length_values.shape[0] else np.zeros(0, np.int64)
    return PostingPairs(pair_keys // n_lengths, pair_lengths)


@dataclass(frozen=True, eq=False)
class PairLookup:
    """How a posting finds its pair: with the documents' distinct lengths ranked (``length_rank[d]``
    of ``n_lengths``), a pair's key is ``tf * n_lengths + rank`` and its code the position of its key
    among ``keys`` (the pairs' keys, ascending, as the pairs are in (tf, length) order)."""

    keys: np.ndarray         # int64, one per pair
    n_lengths: int
    length_rank: np.ndarray  # per document

    @classmethod
    def of(cls, pairs: PostingPairs, doc_lengths: np.ndarray) -> "PairLookup":
        values, ranks = length_ranks(doc_lengths)
        n_lengths = max(values.shape[0], 1)
        keys = np.asarray(pairs.tfs, dtype=np.int64) * n_lengths + np.searchsorted(values, pairs.lengths)
        return cls(keys.astype(np.int64), n_lengths, ranks)

    def codes(self, tfs: np.ndarray, docs: np.ndarray) -> np.ndarray:
        """The codes of postings of frequencies ``tfs`` in documents ``docs``."""
        keys = np.asarray(tfs).astype(np.int64) * self.n_lengths + self.length_rank[np.asarray(docs)]
        return np.searchsorted(self.keys, keys)


@dataclass(frozen=True)
class PreparedWeights:
    """The weights of all postings for one parameter set: a posting of term ``t`` weighs
    ``scale[t] * table[c] + 0.0`` (the + 0.0 turns a -0.0 product, a negative idf times 0.0, into 0.0:
    the compiled kernels take -0.0 for "no posting added yet"; sums are unchanged).

    Without fields, ``c`` is the posting's pair code (:class:`PostingPairs`, found by
    :class:`PairLookup`), ``table`` the pairs' tf parts (less the tf part of 0) and ``scale`` the idf:
    the same float64 product as ``idf * (tf_part(tf, dl) - zero)`` computed per posting. With fields
    (BM25F, whose tf part reads every field's frequency; ``per_posting``), ``table`` holds every
    posting's weight, ``c`` is the posting's place and ``scale`` is 1.0 (``1.0 * w + 0.0`` is ``w``)."""

    params: Params
    table: np.ndarray
    scale: np.ndarray
    per_posting: bool = False

    def scaled_extremes(self, terms: np.ndarray, held: np.ndarray, high: np.ndarray,
                        low: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The largest and smallest weight of each of ``terms`` from its extreme entries of ``table``
        (``high``, ``low``), 0.0 where it holds no posting (``held`` False: its idf may be infinite)."""
        largest, smallest = np.zeros(terms.shape[0]), np.zeros(terms.shape[0])
        at = np.flatnonzero(held)
        scale = self.scale[terms[at]]
        a, b = scale * high[at] + 0.0, scale * low[at] + 0.0
        largest[at], smallest[at] = np.maximum(a, b), np.minimum(a, b)
        return largest, smallest


@dataclass(frozen=True, eq=False)
class BlockWeights:
    """What a search over blocks (:mod:`~bm25lab.engine.codec`) reads beside the table, for one parameter
    set, made when it is first asked for and kept with the prepared weights:

    - ``grid``: the table by length rank and frequency for frequencies up to ``2**grid_shift``
      (``grid[(rank << grid_shift) + tf - 1]``, 0.0 for a pair no posting has), so that most postings find
      their entry without a search of the keys; with 16-bit length ranks it has 2**16 rows, so that any
      rank is a row of it (the rows past the collection's lengths are never written: never resident);
    - ``bound_table``: for each block bound (:class:`~bm25lab.engine.codec.Blocks`: its largest tf and
      smallest length, ``bound_codes`` numbering them) the tf part of that pair less the tf part of 0: at
      least every entry of the block, as every variant's tf part grows with tf and falls with the length;
      with fields, every block's largest entry (``bound_codes`` numbering the blocks)."""

    grid: np.ndarray
    grid_shift: int
    bound_codes: np.ndarray
    bound_table: np.ndarray


class Scorer:
    """Scores queries against one :class:`Postings` with collection statistics taken from it, or, for
    a shard of a larger collection, from ``statistics`` (see the module docstring); for BM25F, with the
    index's :class:`~bm25lab.engine.postings.Fields` (not with ``statistics``: a shard has no fields)."""

    def __init__(self, postings: Postings, id_rank: np.ndarray, statistics: CollectionStatistics | None = None,
                 fields: Fields | None = None, pairs: PostingPairs | None = None) -> None:
        """``pairs``: the postings' :class:`PostingPairs` when they were saved with them (else they are
        computed by the first :meth:`prepare` that needs them)."""
        assert statistics is None or fields is None, "a shard of a collection has no fields"
        self.postings = postings
        self.id_rank = id_rank
        self.fields = fields
        self.n_docs = postings.num_docs  # this scorer's documents (the collection's: ``statistics``)
        self.statistics = statistics
        self.field_avgdl = ([] if fields is None else
                            [int(np.asarray(row).sum(dtype=np.int64)) / self.n_docs if self.n_docs else 0.0
                             for row in fields.lengths])
        # the position of every term of ``postings`` among the statistics' terms (ascending, as both
        # vocabularies are in code point order)
        self.term_map: np.ndarray | None = None
        if statistics is None:
            total = int(postings.doc_lengths.sum(dtype=np.int64))
            self.avgdl = total / self.n_docs if self.n_docs else 0.0
        else:
            self.avgdl = statistics.avgdl
            self.term_map = statistics.positions(postings.terms)
        self._idf: dict[str, np.ndarray] = {}
        self._pairs: PostingPairs | None = pairs
        self._lookup: PairLookup | None = None
        self._weights: PreparedWeights | None = None
        self._bounds: tuple[Params, np.ndarray, bool] | None = None
        self._block_weights: tuple[Params, BlockWeights] | None = None
        self._single_searches: dict[Params, int] = {}

    @property
    def pairs(self) -> PostingPairs | None:
        """The postings' pairs when they are known (saved with them, or computed by a batch), else None."""
        return self._pairs

    # ------------------------------------------------------------------ statistics
    def idf(self, variant: str) -> np.ndarray:
        """idf of every vocabulary term under ``variant`` (cached: it does not depend on k1, b)."""
        if variant not in self._idf:
            if self.statistics is None:
                df = self.postings.document_frequencies()
                self._idf[variant] = get_variant(variant).idf(df, self.n_docs)
            else:
                self._idf[variant] = self.statistics.idf(variant)[self.term_map]
        return self._idf[variant]

    def query_batch(self, queries: Sequence[Sequence[str]]) -> "TermBatch":
        """:meth:`query_terms` of every query at once (one pass over all tokens, no per-query objects)."""
        lengths = np.fromiter(map(len, queries), dtype=np.int64, count=len(queries))
        ids = self.postings.term_ids(list(chain.from_iterable(queries)))
        which = np.repeat(np.arange(len(queries), dtype=np.int64), lengths)
        known = ids >= 0
        width = max(self.postings.num_terms, 1)
        keys, counts = np.unique(which[known] * width + ids[known], return_counts=True)
        q_ptr = np.searchsorted(keys // width, np.arange(len(queries) + 1), side="left").astype(np.int64)
        return TermBatch(q_ptr, keys % width, counts.astype(np.float64))

    def query_terms(self, tokens: Sequence[str]) -> QueryTerms:
        """Known terms of ``tokens`` with their multiplicity; unknown tokens are dropped."""
        counts = Counter(tokens)
        pairs = sorted((tid, n) for tid, n in ((self.postings.term_id(t), n) for t, n in counts.items())
                       if tid is not None)
        return QueryTerms(np.array([p[0] for p in pairs], dtype=np.int64),
                          np.array([p[1] for p in pairs], dtype=np.float64))

    # ------------------------------------------------------------------ weights
    def _posting_weights(self, sl: slice | np.ndarray, idf: float | np.ndarray, params: Params,
                         zero: float) -> np.ndarray:
        """Weights of the postings ``sl`` (a slice or positions); ``idf``: their term's, or each posting's."""
        p = self.postings
        docs = np.asarray(p.doc_nums[sl])
        if params.fields is not None:
            return idf * self._bm25f_part(sl, docs, params)
        return idf * self._tf_part(np.asarray(p.tfs[sl]), p.doc_lengths[docs], params, zero)

    def _tf_part(self, tfs: np.ndarray, lengths: np.ndarray, params: Params, zero: float) -> np.ndarray:
        """The variant's tf part of each (tf, document length), less ``zero`` (the tf part of 0)."""
        tf_part = get_variant(params.variant).tf_part(tfs, lengths, self.avgdl, params.k1, params.b, params.delta)
        return tf_part - zero if zero else tf_part

    def _bm25f_part(self, sl: slice | np.ndarray, docs: np.ndarray, params: Params) -> np.ndarray:
        """:func:`~.scoring.bm25f_tf_part` of the postings ``sl`` (documents ``docs``)."""
        assert self.fields is not None and params.fields is not None
        at = [self.fields.names.index(name) for name, _, _ in params.fields]
        return bm25f_tf_part([np.asarray(self.fields.tfs[i][sl]) for i in at],
                             [np.asarray(self.fields.lengths[i])[docs] for i in at],
                             [self.field_avgdl[i] for i in at], [w for _, w, _ in params.fields],
                             [b for _, _, b in params.fields], params.k1)

    def posting_pairs(self, coder: PairCoder | None = None) -> PostingPairs:
        """The postings' pairs: saved with them, else computed once (by ``coder``: the compiled core's,
        else numpy's)."""
        if self._pairs is None:
            self._pairs = posting_pairs(self.postings, coder or NumpyPairCoder())
        return self._pairs

    def pair_lookup(self) -> PairLookup:
        """How a posting finds its pair (made once)."""
        if self._lookup is None:
            self._lookup = PairLookup.of(self.posting_pairs(), self.postings.doc_lengths)
        return self._lookup

    def prepare(self, params: Params, coder: PairCoder | None = None) -> PreparedWeights:
        """The weights of all postings for ``params`` (resolved), kept for the next batch: the postings'
        pairs (:meth:`posting_pairs`, by ``coder``) are found once, then each parameter set costs the
        pairs' tf parts. With fields, every posting's weight is computed, ``_PREPARE_BLOCK`` postings at a
        time, so the work arrays beside them stay small."""
        if self._weights is not None and self._weights.params == params:
            return self._weights
        idf = self.idf(params.variant)
        zero = zero_tf_part(params)
        if params.fields is not None:
            n = self.postings.num_postings
            weights = np.empty(n, dtype=np.float64)
            for lo, hi, first, bounds in _term_blocks(np.asarray(self.postings.offsets), n):
                term_idf = np.repeat(idf[first:first + bounds.shape[0] - 1], np.diff(bounds))
                np.add(self._posting_weights(slice(lo, hi), term_idf, params, zero), 0.0, out=weights[lo:hi])
            prepared = PreparedWeights(params, weights, np.ones(self.postings.num_terms), per_posting=True)
        else:
            pairs = self.posting_pairs(coder)
            prepared = PreparedWeights(params, self._tf_part(pairs.tfs, pairs.lengths, params, zero),
                                       np.asarray(idf, dtype=np.float64))
        self._weights = prepared
        return prepared

    def prepared_weights(self, prepared: PreparedWeights, sl: slice, term: int) -> np.ndarray:
        """The prepared weights of postings ``sl`` of ``term``."""
        if prepared.per_posting:
            entries = prepared.table[sl]
        else:
            p = self.postings
            entries = prepared.table[self.pair_lookup().codes(p.tfs[sl], p.doc_nums[sl])]
        return prepared.scale[term] * entries + 0.0

    def extreme_entries(self, prepared: PreparedWeights) -> tuple[np.ndarray, np.ndarray]:
        """Every term's largest and smallest entry of ``prepared.table`` over its postings (-inf and inf for
        a term without postings), by numpy, ``_PREPARE_BLOCK`` postings at a time."""
        offsets = np.asarray(self.postings.offsets)
        n_terms = offsets.shape[0] - 1
        high = np.full(n_terms, -np.inf)
        low = np.full(n_terms, np.inf)
        p = self.postings
        for lo, hi, first, bounds in _term_blocks(offsets, p.num_postings):
            nonempty = np.flatnonzero(np.diff(bounds) > 0)
            entries = (prepared.table[lo:hi] if prepared.per_posting
                       else prepared.table[self.pair_lookup().codes(p.tfs[lo:hi], p.doc_nums[lo:hi])])
            terms = first + nonempty
            starts = bounds[nonempty] - lo
            high[terms] = np.maximum(high[terms], np.maximum.reduceat(entries, starts))
            low[terms] = np.minimum(low[terms], np.minimum.reduceat(entries, starts))
        return high, low

    def bounds(self, params: Params, entries: TermEntries | None = None) -> tuple[np.ndarray, bool]:
        """The largest prepared weight of every term (at least 0: a document without the term gets 0
        from it) and whether no weight is negative (what dynamic pruning needs); kept with the weights.
        ``entries``: a compiled pass for :meth:`extreme_entries` (the same values)."""
        prepared = self.prepare(params)
        if self._bounds is not None and self._bounds[0] == params:
            return self._bounds[1], self._bounds[2]
        offsets = np.asarray(self.postings.offsets)
        n_terms = offsets.shape[0] - 1
        high, low = entries(np.arange(n_terms, dtype=np.int64)) if entries is not None else self.extreme_entries(prepared)
        largest, smallest = prepared.scaled_extremes(np.arange(n_terms), np.diff(offsets) > 0, high, low)
        upper = np.maximum(largest, 0.0)
        prunable = bool(smallest.shape[0] == 0 or smallest.min() >= 0)
        self._bounds = (params, upper, prunable)
        return upper, prunable

    def bounded_for(self, params: Params) -> bool:
        """Whether :meth:`bounds` has been computed for ``params`` (and the weights are prepared)."""
        return self.prepared_for(params) and self._bounds is not None and self._bounds[0] == params

    def term_upper(self, term_ids: np.ndarray, params: Params) -> np.ndarray:
        """The largest weight (at least 0) of each of ``term_ids`` in this scorer's postings: from the
        prepared weights when they exist, else from the terms' own postings (the same numbers)."""
        if self.prepared_for(params):
            return self.bounds(params)[0][term_ids]
        idf = self.idf(params.variant)
        zero = zero_tf_part(params)
        return np.array([_upper(self._posting_weights(self.postings.span(t), float(idf[t]), params, zero), 1.0)
                         for t in term_ids.tolist()], dtype=np.float64)

    def block_weights(self, params: Params) -> BlockWeights:
        """:class:`BlockWeights` for ``params`` (the weights prepared), made once per parameter set."""
        prepared = self.prepare(params)
        if self._block_weights is not None and self._block_weights[0] == params:
            return self._block_weights[1]
        blocks = self.postings.blocks()
        if prepared.per_posting:
            firsts = _block_firsts(np.asarray(self.postings.offsets), blocks.term_starts)
            table = (np.maximum.reduceat(prepared.table, firsts) if firsts.shape[0] else np.zeros(1))
            made = BlockWeights(np.zeros(0), 0, np.arange(firsts.shape[0], dtype=np.uint32), table)
        else:
            lookup = self.pair_lookup()
            pairs = self.posting_pairs()
            largest = min(int(pairs.tfs.max()) if pairs.tfs.shape[0] else 1, _GRID_TFS)
            shift = max(largest - 1, 0).bit_length()  # 2**shift >= largest
            rows = 1 << 16 if lookup.length_rank.dtype == np.uint16 else lookup.n_lengths
            grid = np.zeros(rows << shift)
            small = np.asarray(pairs.tfs) <= 1 << shift
            ranks = lookup.keys[small] % lookup.n_lengths
            grid[(ranks << shift) + np.asarray(pairs.tfs)[small] - 1] = prepared.table[small]
            bound_pairs = np.asarray(blocks.bound_pairs)
            zero = zero_tf_part(params)
            bound_table = (self._tf_part(bound_pairs[0], bound_pairs[1], params, zero) if bound_pairs.shape[1]
                           else np.zeros(1))
            made = BlockWeights(grid, shift, blocks.bound_codes, bound_table)
        self._block_weights = (params, made)
        return made

    def prepared_for(self, params: Params) -> bool:
        """Whether the weights of all postings are prepared for ``params``."""
        return self._weights is not None and self._weights.params == params

    def postings_of(self, queries: QueryTerms | TermBatch) -> int:
        """How many postings the query's (or the batch's) terms have: the work of searching it."""
        df = np.diff(np.asarray(self.postings.offsets))
        return int(df[queries.term_ids].sum())

    def constant(self, query: QueryTerms, params: Params) -> float:
        """``sum_t idf(t) * tf_part(0)`` over the query's terms: what ``bm25l``/``bm25+`` add to every
        matching document (0.0 for the other variants); the query's own ``constant`` when it has one."""
        if query.constant is not None:
            return query.constant
        zero = zero_tf_part(params)
        if not zero or query.empty:
            return 0.0
        return absent_terms_constant(self.idf(params.variant)[query.term_ids], zero, query.counts)

    def warm_for(self, params: Params) -> bool:
        """Whether single searches with ``params`` should use the prepared weights of all postings:
        yes once they exist, or from the ``WARM_AFTER``-th single search with the same parameters (a
        warm process pays the one-off preparation; a one-shot command never does)."""
        if self.prepared_for(params):
            return True
        count = self._single_searches.get(params, 0) + 1
        self._single_searches[params] = count
        return count >= WARM_AFTER

    # ------------------------------------------------------------------ scoring
    def score(self, query: QueryTerms, params: Params, use_prepared: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(document numbers, scores) of every document matching at least one query term."""
        if query.empty:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        p = self.postings
        idf = self.idf(params.variant)
        zero = zero_tf_part(params)
        prepared = self.prepare(params) if use_prepared else None
        spans = [p.span(int(t)) for t in query.term_ids]
        doc_parts, weight_parts, upper = [], [], []
        given = query.upper
        for i, (t, n, sl) in enumerate(zip(query.term_ids, query.counts, spans)):
            w = (self.prepared_weights(prepared, sl, int(t)) if prepared is not None
                 else self._posting_weights(sl, float(idf[t]), params, zero))
            upper.append(_upper(w, n) if given is None else float(given[i]) * n)
            doc_parts.append(np.asarray(p.doc_nums[sl]))
            weight_parts.append(w * n if n != 1 else w)
        order = term_order(np.array(upper)).tolist()
        doc_parts = [doc_parts[i] for i in order]
        weight_parts = [weight_parts[i] for i in order]
        total = sum(len(d) for d in doc_parts)
        if total * _SPARSE_RATIO < self.n_docs:
            docs, inverse = np.unique(np.concatenate(doc_parts), return_inverse=True)
            scores = np.bincount(inverse, weights=np.concatenate(weight_parts), minlength=docs.shape[0])
        else:
            dense = np.zeros(self.n_docs, dtype=np.float64)
            hit = np.zeros(self.n_docs, dtype=bool)
            for d, w in zip(doc_parts, weight_parts):
                dense[d] += w
                hit[d] = True
            docs = np.flatnonzero(hit)
            scores = dense[docs]
        if zero:
            scores = scores + self.constant(query, params)
        return docs, scores

    def top(self, query: QueryTerms, k: int, params: Params, use_prepared: bool = False,
            mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The best ``k`` (document numbers, scores), best first, ties by document id descending; with
        ``mask`` (one entry per document), among the documents whose entry is not 0 only (the
        specification of the compiled kernels' mask: the others are never candidates)."""
        docs, scores = _allowed(*self.score(query, params, use_prepared), mask)
        best = top_k(docs, scores, self.id_rank, k)
        return docs[best], scores[best]


def _allowed(docs: np.ndarray, scores: np.ndarray, mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The (documents, scores) whose entry of ``mask`` is not 0 (all of them without a mask)."""
    if mask is None:
        return docs, scores
    keep = np.asarray(mask)[docs] != 0
    return docs[keep], scores[keep]


class QueryBatch:
    """Many queries' postings gathered once, for scoring the same batch under many parameter sets.

    The (query, document) pairs and the grouping of postings into them are computed once; each
    parameter set then costs one vectorised weight computation and one ``bincount``. Sums run in
    the same order as :meth:`Scorer.score`, so the scores are identical to single searches.
    """

    def __init__(self, scorer: Scorer, queries: Sequence[QueryTerms]) -> None:
        p = scorer.postings
        self.scorer = scorer
        self.num_queries = len(queries)
        starts, lengths, query_of, terms_of, mult = [], [], [], [], []
        for qi, query in enumerate(queries):
            for t, n in zip(query.term_ids.tolist(), query.counts.tolist()):
                s, e = int(p.offsets[t]), int(p.offsets[t + 1])
                starts.append(s)
                lengths.append(e - s)
                query_of.append(qi)
                terms_of.append(t)
                mult.append(n)
        lengths_arr = np.asarray(lengths, dtype=np.int64)
        self._span_query = np.asarray(query_of, dtype=np.int64)
        self._span_mult = np.asarray(mult, dtype=np.float64)
        self._span_begin = np.cumsum(lengths_arr) - lengths_arr  # where each span begins in _postings
        self._span_length = lengths_arr
        self._postings = concat_ranges(starts, lengths_arr)  # posting positions of every (query, term) span
        self._term = np.repeat(np.asarray(terms_of, dtype=np.int64), lengths_arr)
        self._mult = np.repeat(np.asarray(mult, dtype=np.float64), lengths_arr)
        query_rep = np.repeat(np.asarray(query_of, dtype=np.int64), lengths_arr)
        docs = p.doc_nums[self._postings].astype(np.int64)
        keys, self._group = np.unique(query_rep * max(scorer.n_docs, 1) + docs, return_inverse=True)
        self.query_of = keys // max(scorer.n_docs, 1)
        self.doc_of = keys % max(scorer.n_docs, 1)
        self._query_terms = list(queries)

    def scores(self, params: Params) -> np.ndarray:
        """Score of every (query, document) pair in ``query_of`` / ``doc_of`` order (with ``params.k3``,
        query terms weigh :func:`~.scoring.query_term_weight` of their counts, as in single searches)."""
        idf = self.scorer.idf(params.variant)
        zero = zero_tf_part(params)
        w = self.scorer._posting_weights(self._postings, idf[self._term], params, zero)
        mult = query_term_weight(self._mult, params.k3)
        perm = self._canonical_permutation(w, query_term_weight(self._span_mult, params.k3))
        w = np.where(mult != 1, w * mult, w)
        scores = np.bincount(self._group[perm], weights=w[perm], minlength=self.doc_of.shape[0])
        if zero:
            const = np.array([self.scorer.constant(q.weighted(params.k3), params) for q in self._query_terms])
            scores = scores + const[self.query_of]
        return scores

    def _canonical_permutation(self, w: np.ndarray, span_mult: np.ndarray) -> np.ndarray:
        """Positions of the postings with each query's spans in its canonical term order
        (:func:`term_order`), so that ``bincount`` adds every document's weights in that order."""
        n = self._span_length.shape[0]
        nonempty = self._span_length > 0
        upper = np.zeros(n)
        if nonempty.any():
            upper[nonempty] = np.maximum(np.maximum.reduceat(w, self._span_begin[nonempty]), 0.0)
        upper *= span_mult
        spans = term_order(upper)  # each query's spans are in term-id order: ties keep it
        spans = spans[np.argsort(self._span_query[spans], kind="stable")]  # then query by query
        return concat_ranges(self._span_begin[spans], self._span_length[spans])

    def top(self, params: Params, k: int, mask: np.ndarray | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per query, the best ``k`` (document numbers, scores) by the tie rule of :mod:`selection`
        (with ``mask``, among the documents it lets through: :meth:`Scorer.top`)."""
        scores = self.scores(params)
        # pairs are sorted by (query, document): each query owns one contiguous segment
        bounds = np.searchsorted(self.query_of, np.arange(self.num_queries + 1))
        out = []
        for qi in range(self.num_queries):
            docs, seg = _allowed(self.doc_of[bounds[qi]:bounds[qi + 1]], scores[bounds[qi]:bounds[qi + 1]], mask)
            best = top_k(docs, seg, self.scorer.id_rank, k)
            out.append((docs[best], seg[best]))
        return out
