"""The search protocol that every kind of index shares: :class:`~bm25lab.engine.index.Index`,
:class:`~bm25lab.engine.shards.ShardedIndex` and :class:`~bm25lab.distributed.DistributedIndex`.

    index.search("boundary layer", k=10)                       # -> Hits
    index.search_tokens(["boundary", "layer"], k=10)           # an analysed query
    index.search_many({"q1": "...", "q2": "..."}, k=1000)     # -> Results ({qid: Hits})
    index.retrieve_tokens([["boundary", "layer"], ...], 1000)  # the kind's own ranked rows
    index.search_weighted({"q1": {"boundary": 0.7, "layer": 0.3}}, k=1000)  # weighted terms -> Results
    index.term_statistics(["boundary", "layer"])               # df and cf -> TermStatistics

The parameters of a search travel as one :class:`~bm25lab.engine.scoring.Params`: give it as
``params=`` (as the command line, the experiments and tuning do), or give its fields as keywords
(``variant=``, ``k1=``, ``b=``, ``delta=``, ``k3=``, and for BM25F ``field_weights=`` and ``field_b=``),
which :meth:`Searcher.params` checks against the index once, before any query is analysed. A metadata
filter (``where=``, ``where_not=``: :mod:`~bm25lab.engine.filters`) is parsed once into the Params too
(``Params.where``), and each kind of index applies it inside its top-k as a document mask. A kind of
index says how it checks parameters (:meth:`Searcher.params`), how it searches a batch of analysed
queries (:meth:`Searcher.retrieve`), and how its answers become hits and results; the rest is here.

What pseudo-relevance feedback (:mod:`~bm25lab.engine.feedback`) reads of an index goes through four
methods: the terms' document and collection frequencies (:meth:`Searcher.term_statistics`), the weight of
terms in given documents (:meth:`Searcher.term_weights`), the feedback documents' terms
(:meth:`Searcher.document_terms`: their stored text analysed by the index's tokenizer) and a search of
weighted queries, ``{term: weight}`` (:meth:`Searcher.search_weighted`), whose score is defined as a sum
of single-term searches' scores. Each is defined here through single-term searches, which every kind of
index answers (the definition, and what a ``DistributedIndex`` runs); an ``Index`` and a ``ShardedIndex``
answer from their postings in bulk (``_term_statistics``, ``_term_weights``) and search weighted queries
with the compiled kernels (``_retrieve_weighted``), with the very same numbers: the tests compare them
bit for bit.
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Generic, Mapping, Sequence, TypeVar

import numpy as np

from .errors import ParameterError
from .scoring import DEFAULT_B, DEFAULT_K1, DEFAULT_VARIANT, Params, zero_tf_part

if TYPE_CHECKING:
    from .filters import WhereSpec
    from .records import Document, Hits, Results
    from .tokenization import Tokenizer

__all__ = ["FieldValues", "Searcher", "TermStatistics", "WeightedQuery", "as_query_mapping", "check_k",
           "checked_weights"]

FieldValues = str | Mapping[str, float] | None
"""Per-field values: ``{"title": 3, "text": 1}`` or ``"title=3,text=1"``."""

Progress = Callable[[int, int], None]
"""Called with (queries done, queries in all) as a batch goes."""

PROGRESS_STEP = 512
"""A batch searched with a progress callback is searched this many queries at a time (at least)."""

Found = TypeVar("Found")  # a kind of index's answer to a batch of analysed queries

WeightedQuery = Mapping[str, float]
"""An analysed query as its terms' weights, ``{term: weight}``: searched as a query whose terms' counts are the
weights (:meth:`Searcher.search_weighted`)."""


@dataclass(frozen=True, eq=False)
class TermStatistics:
    """Collection statistics of ``terms``: the collection's live documents ``num_docs`` (N) and each term's
    document frequency ``df`` and collection frequency ``cf`` (its occurrences in all documents; None when
    not asked for), int64 arrays in the order of ``terms``, 0 for a term that no live document holds. A
    sharded index's are the whole collection's: the sums over its shards."""

    num_docs: int
    terms: tuple[str, ...]
    df: "np.ndarray"
    cf: "np.ndarray | None" = None


def check_k(k: int) -> int:
    """``k`` as an int; a ParameterError unless it is a positive integer."""
    import numpy as np

    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k <= 0:
        raise ParameterError(f"k must be a positive integer, got {k!r}")
    return int(k)


def as_query_mapping(queries: Mapping[str, str] | Sequence[str]) -> Mapping[str, str]:
    """``{qid: text}`` as it is; a list or tuple of texts numbered by position ("0", "1", ...)."""
    if isinstance(queries, Mapping):
        return queries
    if isinstance(queries, str):
        raise ParameterError("search_many takes many queries: a {qid: text} mapping or a list of texts, not one "
                             "string (search() takes one)")
    if isinstance(queries, (list, tuple)):
        return {str(i): text for i, text in enumerate(queries)}
    raise ParameterError(f"search_many takes a {{qid: text}} mapping or a list of texts, not {type(queries).__name__}")


def checked_weights(queries: Sequence[WeightedQuery]) -> list[dict[str, float]]:
    """Each weighted query as a dict of float weights; a ParameterError unless every term is a string and
    every weight a finite number above 0."""
    out = []
    for query in queries:
        if not isinstance(query, Mapping):
            raise ParameterError(f"a weighted query is a {{term: weight}} mapping, not {type(query).__name__}")
        weights = {}
        for term, weight in query.items():
            if not isinstance(term, str) or isinstance(weight, bool) or not isinstance(weight, (int, float)):
                raise ParameterError(f"a weighted query maps terms (str) to weights (numbers), got {term!r}: "
                                     f"{weight!r}")
            if not (math.isfinite(weight) and weight > 0):
                raise ParameterError(f"a term's weight must be a finite number above 0, got {term!r}: {weight!r}")
            weights[term] = float(weight)
        out.append(weights)
    return out


class Searcher(ABC, Generic[Found]):
    """What every kind of index offers for searching (see the module docstring)."""

    tokenizer: Tokenizer

    @property
    @abstractmethod
    def num_docs(self) -> int:
        """The live documents."""

    @abstractmethod
    def document(self, doc_id: str) -> Document | None:
        """The stored document, or None for an unknown or deleted id."""

    # ------------------------------------------------------------------ what a kind of index provides
    @abstractmethod
    def params(self, variant: str = DEFAULT_VARIANT, k1: float = DEFAULT_K1, b: float = DEFAULT_B,
               delta: float | None = None, k3: float | None = None, field_weights: FieldValues = None,
               field_b: FieldValues = None) -> Params:
        """The checked parameters of a search of this index (a ParameterError names a bad one)."""

    @abstractmethod
    def retrieve(self, queries: Sequence[Sequence[str]], k: int, params: Params, workers: int | None) -> Found:
        """Each analysed query's best ``k`` documents under ``params`` (checked), on up to ``workers`` threads,
        among the documents that pass ``params.where`` (when it is set)."""

    @abstractmethod
    def _hits(self, found: Found) -> Hits:
        """The hits of the one query of ``found``."""

    @abstractmethod
    def _results(self, qids: Sequence[str], found: Sequence[Found]) -> Results:
        """The results of ``qids``, whose answers are the parts ``found`` one after another."""

    # ------------------------------------------------------------------ feedback's reads, in bulk (optional)
    def _term_statistics(self, terms: list[str], collection_frequencies: bool) -> TermStatistics | None:
        """:meth:`term_statistics` from the postings, or None (then single-term searches answer)."""
        return None

    def _term_weights(self, doc_ids: list[str], terms: list[list[str]], params: Params) -> list[np.ndarray] | None:
        """:meth:`term_weights` (``params`` checked, without ``k3`` and filter) from the postings, or None."""
        return None

    def _retrieve_weighted(self, queries: list[dict[str, float]], k: int, params: Params,
                           workers: int | None) -> Found | None:
        """:meth:`search_weighted`'s answer for checked weights and parameters of a variant without an
        absent-term part, by the kernels, or None (then single-term searches answer)."""
        return None

    def _search_one(self, tokens: Sequence[str], k: int, params: Params) -> Hits:
        """One analysed query's hits (a kind of index may search a single query its own way)."""
        return self._hits(self.retrieve([tokens], k, params, 1))

    def _batch_size(self, queries: int, progress: Progress | None) -> int:
        """How many queries :meth:`search_many` hands to :meth:`retrieve` at a time."""
        return queries if progress is None else max(PROGRESS_STEP, -(-queries // 100))

    # ------------------------------------------------------------------ the protocol
    def _checked(self, params: Params | None, keywords: dict[str, Any], where: WhereSpec = None,
                 where_not: WhereSpec = None) -> Params:
        """``params`` (checked by :meth:`params`) or the parameters the keywords give (not both), with
        the filter of ``where`` and ``where_not`` (parsed here, once) or the one ``params`` carries."""
        from .filters import Filter

        given_filter = Filter.of(where, where_not)
        if params is None:
            return replace(self.params(**keywords), where=given_filter)
        given = {name: value for name, value in keywords.items() if value != _DEFAULTS[name]}
        if given:
            raise ParameterError(f"give the search's parameters as params= or as keywords, not both "
                                 f"({', '.join(sorted(given))} given beside params)")
        if not isinstance(params, Params):
            raise ParameterError(f"params must be a Params, not {type(params).__name__}")
        if params.where is not None and not isinstance(params.where, Filter):
            raise ParameterError(f"params.where must be a Filter (Filter.of(...)), not {type(params.where).__name__}")
        if params.where is not None and given_filter is not None:
            raise ParameterError("give the search's filter as params.where or as where=/where_not=, not both")
        fields = params.fields
        checked = self.params(params.variant, params.k1, params.b, params.delta, params.k3,
                              None if fields is None else {name: weight for name, weight, _ in fields},
                              None if fields is None else {name: b for name, _, b in fields})
        return replace(checked, where=params.where if given_filter is None else given_filter)

    def search(self, query: str, k: int = 10, variant: str = DEFAULT_VARIANT, k1: float = DEFAULT_K1,
               b: float = DEFAULT_B, delta: float | None = None, k3: float | None = None,
               field_weights: FieldValues = None, field_b: FieldValues = None, *, params: Params | None = None,
               where: WhereSpec = None, where_not: WhereSpec = None) -> Hits:
        """The best ``k`` documents for ``query``: score descending, ties by document id descending.
        ``k3`` saturates repeated query terms (:func:`~.scoring.query_term_weight`; None: linear count).
        ``field_weights`` (``{"title": 3, "text": 1}`` or ``"title=3,text=1"``; a field not named weighs 1)
        scores by BM25F on an index built with fields (:func:`~.scoring.bm25f_tf_part`), each field's
        length normalised with its ``field_b`` (default ``b``). ``params``: all of them as one value.
        ``where``/``where_not``: only documents whose metadata meet every condition of ``where`` and
        none of ``where_not`` (:mod:`~bm25lab.engine.filters`: ``{"year": {">=": 1990}, "lang": ["en",
        "fr"]}`` or ``["year>=1990", "lang in en,fr"]``), the best ``k`` of them."""
        checked = self._checked(params, dict(variant=variant, k1=k1, b=b, delta=delta, k3=k3,
                                             field_weights=field_weights, field_b=field_b), where, where_not)
        return self._search_one(self.tokenizer.tokenize(query), check_k(k), checked)

    def search_tokens(self, tokens: Sequence[str], k: int = 10, variant: str = DEFAULT_VARIANT,
                      k1: float = DEFAULT_K1, b: float = DEFAULT_B, delta: float | None = None,
                      k3: float | None = None, field_weights: FieldValues = None, field_b: FieldValues = None, *,
                      params: Params | None = None, where: WhereSpec = None, where_not: WhereSpec = None) -> Hits:
        """Like :meth:`search` for an already analysed query."""
        checked = self._checked(params, dict(variant=variant, k1=k1, b=b, delta=delta, k3=k3,
                                             field_weights=field_weights, field_b=field_b), where, where_not)
        return self._search_one(tokens, check_k(k), checked)

    def search_many(self, queries: Mapping[str, str] | Sequence[str], k: int = 1000, variant: str = DEFAULT_VARIANT,
                    k1: float = DEFAULT_K1, b: float = DEFAULT_B, delta: float | None = None,
                    workers: int | None = None, progress: Progress | None = None, k3: float | None = None,
                    field_weights: FieldValues = None, field_b: FieldValues = None, *,
                    params: Params | None = None, where: WhereSpec = None, where_not: WhereSpec = None) -> Results:
        """Search every query of ``{qid: text}``, or of a list of texts (their ids are their positions
        as strings: ``"0"``, ``"1"``, ...); every core is used for large batches. The :class:`Results`
        read as ``{qid: Hits}`` and hand their columns to the evaluation as they are. ``progress``,
        when given, is called with (queries done, queries in all) as the batch goes. ``where`` and
        ``where_not`` filter every query's documents as in :meth:`search`."""
        checked = self._checked(params, dict(variant=variant, k1=k1, b=b, delta=delta, k3=k3,
                                             field_weights=field_weights, field_b=field_b), where, where_not)
        k = check_k(k)
        queries = as_query_mapping(queries)
        qids = list(queries)
        tokens = list(self.tokenizer.tokenize_many((queries[q] for q in qids), workers=workers))
        step = max(1, self._batch_size(len(tokens), progress))
        found = []
        for start in range(0, len(tokens), step):
            found.append(self.retrieve(tokens[start:start + step], k, checked, workers))
            if progress is not None:
                progress(min(start + step, len(tokens)), len(tokens))
        return self._results(qids, found)

    def retrieve_tokens(self, queries: Sequence[Sequence[str]], k: int = 1000, variant: str = DEFAULT_VARIANT,
                        k1: float = DEFAULT_K1, b: float = DEFAULT_B, delta: float | None = None,
                        workers: int | None = None, *, k3: float | None = None, field_weights: FieldValues = None,
                        field_b: FieldValues = None, params: Params | None = None, where: WhereSpec = None,
                        where_not: WhereSpec = None) -> Found:
        """Batch search on analysed queries: each query's best ``k`` documents, in the kind of index's
        own rows (:meth:`retrieve`)."""
        checked = self._checked(params, dict(variant=variant, k1=k1, b=b, delta=delta, k3=k3,
                                             field_weights=field_weights, field_b=field_b), where, where_not)
        return self.retrieve(queries, check_k(k), checked, workers)

    def search_tokens_many(self, queries: Mapping[str, Sequence[str]], k: int = 1000, *, params: Params | None = None,
                           workers: int | None = None, **keywords: Any) -> Results:
        """Like :meth:`search_many` for analysed queries, ``{qid: tokens}``, searched as one batch."""
        checked = self._checked(params, _keywords(keywords))
        qids = list(queries)
        return self._results(qids, [self.retrieve([queries[q] for q in qids], check_k(k), checked, workers)])

    def search_weighted(self, queries: Mapping[str, WeightedQuery] | Sequence[WeightedQuery], k: int = 1000, *,
                        params: Params | None = None, workers: int | None = None, where: WhereSpec = None,
                        where_not: WhereSpec = None, **keywords: Any) -> Results:
        """Search every weighted query of ``{qid: {term: weight}}`` (or of a list of them, numbered by
        position): score(d) = the sum over the query's terms t of weight_t x s_t(d), s_t(d) the score of d
        in the single-term search of t under the parameters (``k3`` plays no part; ``bm25l``/``bm25+``'s
        absent-term part is in s_t(d)), added from 0.0 in the order weight descending, then term
        ascending; the documents that hold at least one of the terms and pass the filter, top ``k`` by the
        tie rule (score descending, document id descending). Terms are not analysed (a term the index
        lacks adds nothing). Feedback's second pass (:func:`bm25lab.engine.feedback.second_pass`)."""
        checked = self._checked(params, _keywords(keywords), where, where_not)
        k = check_k(k)
        if isinstance(queries, Mapping):
            qids = [str(q) for q in queries]
            weighted = checked_weights(list(queries.values()))
        elif isinstance(queries, (list, tuple)):
            qids, weighted = [str(i) for i in range(len(queries))], checked_weights(queries)
        else:
            raise ParameterError("search_weighted takes {qid: {term: weight}} or a list of {term: weight}")
        if not weighted:
            return self._results_of_pairs([], [])
        if not zero_tf_part(checked.of_documents()):
            found = self._retrieve_weighted(weighted, k, checked, workers)
            if found is not None:
                return self._results(qids, [found])
        single: dict[str, tuple[Sequence[str], np.ndarray]] = {}
        ranked = []
        for weights in weighted:
            totals: dict[str, float] = {}
            for term, weight in sorted(weights.items(), key=lambda item: (-item[1], item[0])):
                if term not in single:
                    hits = self._search_one([term], max(int(self.num_docs), 1), replace(checked, k3=None))
                    single[term] = (hits.doc_ids, np.asarray(hits.scores, dtype=np.float64))
                ids, scores = single[term]
                for doc, value in zip(ids, (weight * scores).tolist()):
                    totals[doc] = totals.get(doc, 0.0) + value
            by_id = sorted(totals.items(), key=lambda item: item[0], reverse=True)
            ranked.append(sorted(by_id, key=lambda item: -item[1])[:k])
        return self._results_of_pairs(qids, ranked)

    def _results_of_pairs(self, qids: Sequence[str], ranked: Sequence[Sequence[tuple[str, float]]]) -> Results:
        """:class:`Results` of ``qids`` from each one's (document id, score) pairs, best first."""
        from .records import DocIds, Results

        ids = [doc for rows in ranked for doc, _ in rows]
        offsets = np.zeros(len(qids) + 1, dtype=np.int64)
        np.cumsum([len(rows) for rows in ranked], out=offsets[1:])
        scores = np.array([s for rows in ranked for _, s in rows], dtype=np.float64)
        return Results(list(qids), offsets, np.arange(len(ids), dtype=np.int64), scores, DocIds(ids), self.document)

    def term_statistics(self, terms: Sequence[str], collection_frequencies: bool = True) -> TermStatistics:
        """N and every term's document frequency (and, with ``collection_frequencies``, its collection
        frequency) among the live documents (see :class:`TermStatistics`). Defined by single-term
        searches: a term's df is the number of documents its search returns at k = N, and each one's tf
        is read back exactly from the ``lucene`` weight at k1 = 1, b = 0 (w = idf tf / (tf + 1), so
        tf = r / (1 - r) with r = w / idf, rounded)."""
        from .scoring import get_variant

        terms = list(terms)
        found = self._term_statistics(terms, collection_frequencies)
        if found is not None:
            return found
        n = int(self.num_docs)
        df = np.zeros(len(terms), dtype=np.int64)
        cf = np.zeros(len(terms), dtype=np.int64) if collection_frequencies else None
        for i, term in enumerate(terms):
            hits = self._search_one([term], max(n, 1), Params("lucene", 1.0, 0.0).resolved())
            scores = np.asarray(hits.scores, dtype=np.float64)
            df[i] = len(set(hits.doc_ids))
            if cf is not None and len(scores):
                ratio = scores / float(get_variant("lucene").idf(np.array([len(scores)]), n)[0])
                cf[i] = sum(dict(zip(hits.doc_ids, np.rint(ratio / (1.0 - ratio)).astype(np.int64).tolist())).values())
        return TermStatistics(n, tuple(terms), df, cf)

    def term_weights(self, doc_ids: Sequence[str], terms: Sequence[Sequence[str]], *, params: Params | None = None,
                     **keywords: Any) -> list[dict[str, float]]:
        """For each document of ``doc_ids``, ``{term: weight}`` of its ``terms`` (one sequence a document):
        the document's score in the single-term search of each term under the parameters (``k3`` and the
        filter play no part; ``bm25l``/``bm25+``'s absent-term part included), 0.0 for a term the document
        lacks (or an unknown or deleted document)."""
        checked = replace(self._checked(params, _keywords(keywords)), k3=None, where=None)
        if len(doc_ids) != len(terms):
            raise ParameterError(f"term_weights takes one sequence of terms a document: {len(doc_ids)} documents, "
                                 f"{len(terms)} sequences")
        lists = [list(dict.fromkeys(t)) for t in terms]
        weights = self._term_weights(list(doc_ids), lists, checked)
        if weights is None:
            single: dict[str, dict[str, float]] = {}
            weights = []
            for doc, listed in zip(doc_ids, lists):
                for term in listed:
                    if term not in single:
                        hits = self._search_one([term], max(int(self.num_docs), 1), checked)
                        single[term] = dict(zip(hits.doc_ids, np.asarray(hits.scores, dtype=np.float64).tolist()))
                weights.append(np.array([single[t].get(doc, 0.0) for t in listed], dtype=np.float64))
        return [dict(zip(t, w.tolist())) for t, w in zip(lists, weights)]

    def document_terms(self, doc_ids: Sequence[str]) -> list[Counter[str]]:
        """Each document's terms and their frequencies: its stored text (:attr:`Document.full_text`) analysed
        by the index's tokenizer, the tokens the index holds for it (empty for an unknown or deleted id)."""
        documents = [self.document(d) for d in doc_ids]
        return [Counter(self.tokenizer.tokenize(doc.full_text)) if doc is not None else Counter()
                for doc in documents]


def _keywords(given: Mapping[str, Any]) -> dict[str, Any]:
    """The search's parameters given as keywords, every other one at its default; a ParameterError names
    a keyword that is not a parameter."""
    unknown = sorted(set(given) - set(_DEFAULTS))
    if unknown:
        raise ParameterError(f"unknown search parameter {unknown[0]!r}; the parameters: {', '.join(_DEFAULTS)}")
    return {**_DEFAULTS, **given}


_DEFAULTS: dict[str, Any] = dict(variant=DEFAULT_VARIANT, k1=DEFAULT_K1, b=DEFAULT_B, delta=None, k3=None,
                                 field_weights=None, field_b=None)
"""The keywords of a search and their defaults (:meth:`Searcher._checked`)."""
