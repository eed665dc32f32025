"""Pseudo-relevance feedback: RM3 (Anserini's), Bo1 (Terrier's) and Rocchio (Anserini's), as a layer over any
index's public search protocol (:class:`~bm25lab.engine.searching.Searcher`: an ``Index``, a ``ShardedIndex``
with its global statistics, a ``DistributedIndex``).

Data flows one way: query tokens -> first pass (``search_tokens``, the run's parameters) -> the feedback
documents' terms (their stored text analysed by the index's tokenizer: the very tokens the index holds) and the
terms' collection statistics -> an expanded query, ``{term: weight}`` (:data:`METHODS`, each a named function
with its formula) -> the second pass: score(d) = sum over the expanded terms t of weight_t x w_t(d), w_t(d)
the BM25 weight of t in d under the run's parameters (one single-term search per distinct term, shared by
every query of a batch), added in the expanded query's order (weight descending, then term); top k by the tie
rule (score descending, document id descending).

Statistics are defined by searches, so every kind of index gives the same figures: N is ``num_docs``; a
term's document frequency is the number of documents a single-term search returns at k = N, and each
document's tf is read back exactly from the ``lucene`` weight at k1 = 1, b = 0 (w = idf tf / (tf + 1), so tf =
r / (1 - r) with r = w / idf, rounded); the collection frequency (Bo1's F) and the collection's tokens are their
sums. :func:`search_many_reference` (with :class:`FeedbackStatistics`, :func:`expand`, :func:`second_pass`)
computes everything so, query by query: the specification. :func:`search_many` runs a batch in bulk through
the index's protocol (:mod:`~bm25lab.engine.searching`): one first-pass batch, the statistics and Rocchio's
weights of all the feedback documents' terms at once (an ``Index`` and a ``ShardedIndex`` read them from their
postings), and the second pass as one batch of weighted queries searched by the compiled kernels, in the
same order of terms; its results are the specification's, bit for bit (tests/engine/test_feedback_bulk.py).

Deliberate differences from the references: float64 everywhere (Anserini and Terrier use float32 in places);
ties where the references sort an unordered map (which terms survive a cut of equal weights) are broken by
the term, ascending; Anserini's term filter (2 to 20 characters of ``[a-z0-9]``) keeps terms without an ASCII
character too, so that Chinese terms can be fed back; ``bm25l``/``bm25+``'s credit for absent query terms
and ``k3`` are not applied to the expanded query (its weights replace the counts).
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

import numpy as np

from .errors import ParameterError
from .scoring import Params, get_variant

if TYPE_CHECKING:
    from .records import Results
    from .searching import Searcher

__all__ = ["DEFAULTS", "METHODS", "BulkStatistics", "Feedback", "FeedbackStatistics", "expand", "search_many",
           "search_many_reference", "second_pass"]

_ASCII_TERM = re.compile(r"^[a-z0-9]+$")
_STAT_PARAMS = Params("lucene", 1.0, 0.0)


@dataclass(frozen=True)
class Feedback:
    """A feedback method and its parameters; ``None`` takes the method's default (:data:`DEFAULTS`)."""

    method: str = "rm3"
    fb_docs: int | None = None
    fb_terms: int | None = None
    original_query_weight: float | None = None

    def resolved(self) -> "Feedback":
        """The parameters with the method's defaults filled in, checked."""
        if self.method not in METHODS:
            raise ParameterError(f"unknown feedback method {self.method!r}; choose one of: {', '.join(METHODS)}")
        docs, terms, weight = DEFAULTS[self.method]
        out = Feedback(self.method, docs if self.fb_docs is None else int(self.fb_docs),
                       terms if self.fb_terms is None else int(self.fb_terms),
                       weight if self.original_query_weight is None else float(self.original_query_weight))
        if out.fb_docs < 1 or out.fb_terms < 1:
            raise ParameterError(f"fb_docs and fb_terms must be >= 1, got {out.fb_docs} and {out.fb_terms}")
        if not 0.0 <= out.original_query_weight <= 1.0:
            raise ParameterError(f"original_query_weight must lie in [0, 1], got {out.original_query_weight}")
        return out


class FeedbackStatistics:
    """Collection statistics of terms, read through single-term searches and cached: N, df, tf per document,
    collection frequency, the collection's tokens."""

    def __init__(self, index: Searcher) -> None:
        self.index = index
        self.n_docs = int(index.num_docs)  # type: ignore[attr-defined]
        self._tfs: dict[str, dict[str, int]] = {}
        self._weights: dict[tuple[str, Params], tuple[list[str], np.ndarray]] = {}

    def tfs(self, term: str) -> dict[str, int]:
        """``{doc_id: tf}`` of every document holding ``term``."""
        if term not in self._tfs:
            hits = self.index.search_tokens([term], k=max(self.n_docs, 1), params=_STAT_PARAMS)
            scores = np.asarray(hits.scores, dtype=np.float64)
            idf = float(get_variant("lucene").idf(np.array([len(scores)]), self.n_docs)[0]) if len(scores) else 1.0
            ratio = scores / idf
            tf = np.rint(ratio / (1.0 - ratio)).astype(np.int64)
            self._tfs[term] = dict(zip(hits.doc_ids, tf.tolist()))
        return self._tfs[term]

    def df(self, term: str) -> int:
        return len(self.tfs(term))

    def cf(self, term: str) -> int:
        return sum(self.tfs(term).values())

    def weights(self, term: str, params: Params) -> tuple[list[str], np.ndarray]:
        """The documents holding ``term`` and its BM25 weight in each under ``params``."""
        key = (term, params)
        if key not in self._weights:
            hits = self.index.search_tokens([term], k=max(self.n_docs, 1), params=replace(params, k3=None))
            self._weights[key] = (hits.doc_ids, np.asarray(hits.scores, dtype=np.float64))
        return self._weights[key]

    def weight(self, doc_id: str, term: str, params: Params) -> float:
        """The BM25 weight of ``term`` in the document ``doc_id`` under ``params`` (0.0 if it lacks it)."""
        ids, scores = self.weights(term, params)
        return float(scores[ids.index(doc_id)]) if doc_id in ids else 0.0


class BulkStatistics:
    """The statistics a batch of feedback reads, fetched at once through the index's protocol
    (:meth:`~bm25lab.engine.searching.Searcher.term_statistics`, :meth:`~.Searcher.term_weights`): the same
    numbers as :class:`FeedbackStatistics`, which finds them one single-term search at a time."""

    def __init__(self, n_docs: int, df: Mapping[str, int], cf: Mapping[str, int],
                 weights: Mapping[tuple[str, str], float]) -> None:
        self.n_docs = n_docs
        self._df, self._cf, self._weights = df, cf, weights

    def df(self, term: str) -> int:
        return self._df[term]

    def cf(self, term: str) -> int:
        return self._cf[term]

    def weight(self, doc_id: str, term: str, params: Params) -> float:
        return self._weights[doc_id, term]


@dataclass(frozen=True)
class FeedbackInput:
    """What a method reads: the query's tokens, the feedback documents (ids, first-pass scores, analysed
    terms), the statistics, and the parameters."""

    tokens: Sequence[str]
    doc_ids: Sequence[str]
    scores: Sequence[float]
    doc_terms: Sequence[Counter]
    stats: FeedbackStatistics | BulkStatistics
    feedback: Feedback
    params: Params


def _top(weights: Mapping[str, float], size: int) -> dict[str, float]:
    """The ``size`` largest weights (ties by term, ascending): Anserini's ``FeatureVector.pruneToSize``."""
    return dict(sorted(weights.items(), key=lambda item: (-item[1], item[0]))[:size])


def _unit(weights: Mapping[str, float]) -> dict[str, float]:
    """Divided by their sum: ``scaleToUnitL1Norm``."""
    total = math.fsum(weights.values())
    return {t: w / total for t, w in weights.items()} if total > 0 else dict(weights)


def _interpolate(query: Mapping[str, float], model: Mapping[str, float], alpha: float) -> dict[str, float]:
    """alpha q(t) + (1 - alpha) m(t) over the union of the terms: ``FeatureVector.interpolate``."""
    return {t: alpha * query.get(t, 0.0) + (1.0 - alpha) * model.get(t, 0.0) for t in {*query, *model}}


@lru_cache(maxsize=1 << 16)
def _anserini_term(term: str, df: int, n_docs: int) -> bool:
    """Anserini's feedback term filter: 2 to 20 characters, ``[a-z0-9]+`` (or no ASCII character at all:
    bm25lab's addition for Chinese), in at most 10% of the documents (float32, as Anserini compares)."""
    if not 2 <= len(term) <= 20:
        return False
    if not _ASCII_TERM.match(term) and any(ch.isascii() for ch in term):
        return False
    return not np.float32(df) / np.float32(n_docs) > np.float32(0.1)


def rm3(x: FeedbackInput) -> dict[str, float]:
    """RM3 (Abdul-Jaleel et al., TREC 2004) as Anserini's ``Rm3Reranker``: each feedback document's vector of
    term frequencies (filtered: :func:`_anserini_term`) is cut to its ``fb_terms`` most frequent terms; a
    term's weight is sum over the documents of tf_d(t) / |d| x score_d (|d| the cut vector's sum, documents
    with |d| <= 0.001 skipped, score_d the first-pass score); the ``fb_terms`` heaviest, divided by their sum,
    are interpolated with the query's own term distribution (counts over their sum):
    w(t) = original_query_weight q(t) + (1 - original_query_weight) rm(t)."""
    f = x.feedback
    vectors = []
    for terms in x.doc_terms:
        kept = {t: float(n) for t, n in terms.items() if _anserini_term(t, x.stats.df(t), x.stats.n_docs)}
        vectors.append(_top(kept, f.fb_terms))
    norms = [math.fsum(v.values()) for v in vectors]
    model: dict[str, float] = {}
    for term in sorted({t for v in vectors for t in v}):
        model[term] = sum(v.get(term, 0.0) / norm * score for v, norm, score in zip(vectors, norms, x.scores)
                          if norm > 0.001)
    query = _unit(Counter(x.tokens))
    return _interpolate(query, _unit(_top(model, f.fb_terms)), f.original_query_weight)


def bo1(x: FeedbackInput) -> dict[str, float]:
    """Bo1 (Amati, 2003) as Terrier's ``QueryExpansion`` with ``DFRBagExpansionTerms`` (its defaults: 3
    documents, 10 terms, parameter-free). Over the feedback documents, tf_x(t) = the term's frequency in them;
    with F = its collection frequency and N the documents, P_n = F / N and
    w(t) = tf_x log2((1 + P_n) / P_n) + log2(1 + P_n); a term in fewer than 2 feedback documents (when there
    are at least 2) that is not a query term weighs 0. The weights are divided by the parameter-free
    normaliser, the same formula for the heaviest term's tf_x with F = tf_x; the max(fb_terms, query terms)
    heaviest terms are added to the query, whose terms weigh their counts: w'(t) = qtf(t) + w(t) / norm."""
    f = x.feedback
    within: Counter = Counter()
    in_docs: Counter = Counter()
    for terms in x.doc_terms:
        within.update(terms)
        in_docs.update(terms.keys())
    query = Counter(x.tokens)
    min_docs = 2 if len(x.doc_terms) >= 2 else 0
    n = float(x.stats.n_docs)

    def score(tfx: float, frequency: float) -> float:
        p = frequency / n
        return tfx * math.log2((1.0 + p) / p) + math.log2(1.0 + p)

    weights = {t: (0.0 if min_docs and in_docs[t] < min_docs and t not in query else score(tf, x.stats.cf(t)))
               for t, tf in within.items()}
    if not weights:
        return {t: float(c) for t, c in query.items()}
    heaviest = min(weights, key=lambda t: (-weights[t], t))
    normaliser = score(within[heaviest], within[heaviest])
    chosen = _top({t: w / normaliser for t, w in weights.items()}, max(f.fb_terms, len(query)))
    return {t: query.get(t, 0.0) + chosen.get(t, 0.0) for t in {*query, *chosen}}


@lru_cache(maxsize=1 << 16)
def _rocchio_term(term: str) -> bool:
    """Rocchio's term filter: 2 to 20 characters, ``[a-z0-9]+`` or without an ASCII character."""
    return 2 <= len(term) <= 20 and not (not _ASCII_TERM.match(term) and any(ch.isascii() for ch in term))


def rocchio(x: FeedbackInput) -> dict[str, float]:
    """Rocchio (1971) as Anserini's ``RocchioReranker``: each feedback document's vector of BM25 term weights
    (its terms of 2 to 20 characters, ``[a-z0-9]+`` or without ASCII, weighted under the run's parameters) cut
    to its ``fb_terms`` heaviest; the mean over the documents, cut to ``fb_terms`` and divided by its sum, is
    interpolated with the query's term distribution: w(t) = alpha q(t) + (1 - alpha) mean(t), alpha =
    ``original_query_weight``."""
    f = x.feedback
    vectors = []
    for doc, terms in zip(x.doc_ids, x.doc_terms):
        weights = {}
        for t in terms:
            if not _rocchio_term(t):
                continue
            weights[t] = x.stats.weight(doc, t, x.params)
        vectors.append(_top(weights, f.fb_terms))
    mean = {t: math.fsum(v.get(t, 0.0) for v in vectors) / len(vectors) for t in {t for v in vectors for t in v}}
    return _interpolate(_unit(Counter(x.tokens)), _unit(_top(mean, f.fb_terms)), f.original_query_weight)


Method = Callable[[FeedbackInput], dict[str, float]]
METHODS: dict[str, Method] = {"rm3": rm3, "bo1": bo1, "rocchio": rocchio}
"""Feedback methods by name."""
DEFAULTS: dict[str, tuple[int, int, float]] = {"rm3": (10, 10, 0.5), "bo1": (3, 10, 1.0), "rocchio": (10, 10, 0.5)}
"""Each method's (fb_docs, fb_terms, original_query_weight): Anserini's RM3 defaults 10/10/0.5, Terrier's Bo1
3 documents and 10 terms (the query keeps its weight), Rocchio as RM3."""


# --------------------------------------------------------------------------- searching with feedback


def _analysed(index: Searcher, doc_id: str) -> Counter:
    document = index.document(doc_id)  # type: ignore[attr-defined]
    return Counter(index.tokenizer.tokenize(document.full_text)) if document is not None else Counter()


def expand(index: Searcher, tokens: Sequence[str], params: Params, feedback: Feedback,
           stats: FeedbackStatistics | None = None) -> dict[str, float]:
    """The expanded query ``{term: weight}`` of one analysed query (see the module docstring)."""
    feedback = feedback.resolved()
    stats = stats or FeedbackStatistics(index)
    first = index.search_tokens(tokens, k=feedback.fb_docs, params=params)
    ids = first.doc_ids
    x = FeedbackInput(list(tokens), ids, first.scores, [_analysed(index, d) for d in ids], stats, feedback, params)
    weights = METHODS[feedback.method](x) if ids else dict(Counter(tokens))
    return {t: w for t, w in weights.items() if w > 0.0}


def _ranked(totals: Mapping[str, float], k: int) -> list[tuple[str, float]]:
    """The best ``k`` (document, score) pairs: score descending, document id descending."""
    by_id = sorted(totals.items(), key=lambda item: item[0], reverse=True)
    return sorted(by_id, key=lambda item: -item[1])[:k]


def second_pass(stats: FeedbackStatistics, weights: Mapping[str, float], params: Params, k: int
                ) -> list[tuple[str, float]]:
    """score(d) = sum over the terms (weight descending, then term) of weight x the term's BM25 weight in d."""
    totals: dict[str, float] = {}
    for term, weight in sorted(weights.items(), key=lambda item: (-item[1], item[0])):
        ids, scores = stats.weights(term, params)
        for doc, value in zip(ids, (weight * scores).tolist()):
            totals[doc] = totals.get(doc, 0.0) + value
    return _ranked(totals, k)


def _batch(index: Searcher, queries: Mapping[str, str] | Sequence[str], k: int, params: Params | None,
           feedback: Feedback) -> tuple[int, Params, Feedback, list[str], list[list[str]]]:
    """A feedback batch's arguments checked: k, the parameters (the index's when None), the feedback
    resolved, the query ids and each query's tokens."""
    from .searching import as_query_mapping, check_k

    k = check_k(k)
    params = index.params() if params is None else index._checked(params, {})  # type: ignore[attr-defined]
    feedback = feedback.resolved()
    queries = as_query_mapping(queries)
    qids = list(queries)
    return k, params, feedback, qids, list(index.tokenizer.tokenize_many(queries[q] for q in qids))


def search_many(index: Searcher, queries: Mapping[str, str] | Sequence[str], k: int = 1000,
                params: Params | None = None, feedback: Feedback = Feedback()) -> Results:
    """Search every query of ``{qid: text}`` with feedback, the whole batch at once: the first pass as one
    batch, the feedback documents' terms, their statistics (and Rocchio's weights) in bulk through the
    index's protocol, each query's expansion (:data:`METHODS`), then the second pass as one batch of
    weighted queries (:meth:`~bm25lab.engine.searching.Searcher.search_weighted`, the compiled kernels).
    The same results, bit for bit, as :func:`search_many_reference` (:func:`expand` and :func:`second_pass`
    query by query). Returns :class:`~bm25lab.engine.records.Results` in the queries' order."""
    k, params, feedback, qids, tokens = _batch(index, queries, k, params, feedback)
    if not qids:
        return index.search_weighted({}, k, params=params)
    first = index.search_tokens_many({str(i): t for i, t in enumerate(tokens)}, k=feedback.fb_docs, params=params)
    hits = [first[str(i)] for i in range(len(tokens))]
    docs = list(dict.fromkeys(d for h in hits for d in h.doc_ids))
    terms_of = dict(zip(docs, index.document_terms(docs)))
    vocabulary = sorted({t for d in docs for t in terms_of[d]})
    counted = index.term_statistics(vocabulary, collection_frequencies=feedback.method == "bo1")
    df = dict(zip(vocabulary, counted.df.tolist()))
    cf = dict(zip(vocabulary, counted.cf.tolist())) if counted.cf is not None else {}
    weights: dict[tuple[str, str], float] = {}
    if feedback.method == "rocchio":
        kept = [[t for t in terms_of[d] if _rocchio_term(t)] for d in docs]
        for doc, found in zip(docs, index.term_weights(docs, kept, params=replace(params, where=None))):
            weights.update(((doc, t), w) for t, w in found.items())
    stats = BulkStatistics(int(counted.num_docs), df, cf, weights)
    expanded = {}
    for qid, query, found in zip(qids, tokens, hits):
        ids = found.doc_ids
        x = FeedbackInput(list(query), ids, found.scores, [terms_of[d] for d in ids], stats, feedback, params)
        chosen = METHODS[feedback.method](x) if ids else dict(Counter(query))
        expanded[qid] = {t: w for t, w in chosen.items() if w > 0.0}
    return index.search_weighted(expanded, k, params=params)


def search_many_reference(index: Searcher, queries: Mapping[str, str] | Sequence[str], k: int = 1000,
                          params: Params | None = None, feedback: Feedback = Feedback(),
                          stats: FeedbackStatistics | None = None) -> Results:
    """:func:`search_many` as it is defined: query by query, :func:`expand` then :func:`second_pass`, every
    statistic read through single-term searches (:class:`FeedbackStatistics`; ``stats``: one to share).
    The specification the tests hold :func:`search_many` to; far slower."""
    from .records import DocIds, Results

    k, params, feedback, qids, tokens = _batch(index, queries, k, params, feedback)
    stats = stats or FeedbackStatistics(index)
    ranked = [second_pass(stats, expand(index, t, params, feedback, stats), params, k) for t in tokens]
    ids = [doc for rows in ranked for doc, _ in rows]
    offsets = np.zeros(len(ranked) + 1, dtype=np.int64)
    np.cumsum([len(rows) for rows in ranked], out=offsets[1:])
    scores = np.array([s for rows in ranked for _, s in rows], dtype=np.float64)
    return Results(qids, offsets, np.arange(len(ids), dtype=np.int64), scores, DocIds(ids),
                   index.document)  # type: ignore[attr-defined]
