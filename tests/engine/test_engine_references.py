"""BM25 scores against independent implementations, on the engine's own tokens of every bundled
collection (Cranfield, CISI, CMRC 2018, LeCaRD), every query of each (judged or not), top 1000.

- ``okapi`` = rank_bm25 ``BM25Okapi`` to 1e-9 relative.
- ``bm25+`` = rank_bm25 ``BM25Plus`` to 1e-9 relative: same definition.
- ``bm25l`` differs from rank_bm25 ``BM25L`` by design: rank_bm25 multiplies Lv and Zhai's BM25L term
  weight by tf once more (``idf * tf * (k1+1)(c+delta)/(k1+c+delta)``), so absent terms add 0 and
  tf > 1 is counted twice. bm25lab follows the paper and bm25s. The two agree exactly where tf = 1 and
  the query has one term; elsewhere rank_bm25's score is tf times ours (single-term queries).
- ``lucene``, ``robertson``, ``atire``, ``bm25l``, ``bm25+`` = bm25s with the same method to float32
  precision (bm25s scores in float32).

Each query's top 1000 must be the reference's: every returned document's score equal to the
reference's score of it, the documents returned exactly the documents holding a query term (a
document without one is never returned, even where bm25l and bm25+ give it a score), as many as
there are up to 1000, and no document left out scoring above the last one returned.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

K = 1000
COLLECTIONS = ["cranfield", "cisi", "cmrc2018", "lecard-10q"]


@dataclass
class Collection:
    index: object
    tokens: list[list[str]]  # every document's tokens, in index order
    queries: list[list[str]]  # every query's tokens
    postings: dict[str, set[int]]  # term -> documents holding it (from the tokens, not the index)

    def matching(self, query: list[str]) -> set[int]:
        return set().union(*(self.postings.get(t, set()) for t in query))


@pytest.fixture(scope="module")
def collection() -> Callable[[str], Collection]:
    from bm25lab import corpora
    from bm25lab.engine import Tokenizer
    from bm25lab.experiments import cached_index, open_collection

    made: dict[str, Collection] = {}

    def get(name: str) -> Collection:
        if name not in made:  # the index experiments cache for this run: built once, with the README's table
            corpus = corpora.get(name)
            index, _ = cached_index(open_collection(name), Tokenizer(corpus.language))
            assert index.tokenizer == Tokenizer(corpus.language)
            tokens = list(index.tokenizer.tokenize_many((doc.full_text for doc in corpus.documents()), workers=2))
            assert [doc.id for doc in corpus.documents()] == list(index.doc_ids)
            postings: dict[str, set[int]] = {}
            for i, doc in enumerate(tokens):
                for term in doc:
                    postings.setdefault(term, set()).add(i)
            queries = [index.tokenizer.tokenize(text) for text in corpus.queries().values()]
            made[name] = Collection(index, tokens, queries, postings)
        return made[name]

    return get


def assert_top_k_is_the_references(c: Collection, scores_of: Callable[[list[str]], np.ndarray], rel: float,
                                   atol: float, **params) -> int:
    """Every query's top K from the engine against the reference's score vectors; returns the number
    of (query, document) scores compared."""
    compared = 0
    ranked = c.index.retrieve_tokens(c.queries, k=K, workers=1, **params)
    for query, (docs, scores) in zip(c.queries, ranked):
        matching = c.matching(query)
        assert len(docs) == min(K, len(matching)) and set(docs.tolist()) <= matching, query
        if not len(docs):
            continue
        reference = np.asarray(scores_of(query), dtype=np.float64)
        np.testing.assert_allclose(scores, reference[docs], rtol=rel, atol=atol)
        left_out = np.array(sorted(matching - set(docs.tolist())), dtype=np.int64)
        if left_out.size:
            assert reference[left_out].max() <= scores[-1] + atol + rel * abs(scores[-1]), query
        compared += len(docs)
    return compared


def _summed(scores_of_term: Callable[[str], np.ndarray]) -> Callable[[list[str]], np.ndarray]:
    """rank_bm25's get_scores(query) is the sum of its get_scores([term]) over the query's terms, in
    order (its own loop); each term's vector is computed once (thousands of queries)."""
    cache: dict[str, np.ndarray] = {}

    def scores_of(query: list[str]) -> np.ndarray:
        total = np.zeros_like(scores_of_term(query[0]) if query else np.zeros(0))
        for term in query:
            if term not in cache:
                cache[term] = scores_of_term(term)
            total = total + cache[term]
        return total

    return scores_of


@pytest.mark.parametrize("name", COLLECTIONS)
def test_okapi_equals_rank_bm25(name, collection) -> None:
    from rank_bm25 import BM25Okapi

    c = collection(name)
    reference = BM25Okapi(c.tokens, k1=1.5, b=0.75, epsilon=0.25)
    compared = assert_top_k_is_the_references(c, _summed(lambda t: reference.get_scores([t])), 1e-9, 1e-12,
                                              variant="okapi", k1=1.5, b=0.75)
    assert compared > 1000


@pytest.mark.parametrize("name", COLLECTIONS)
def test_bm25plus_equals_rank_bm25(name, collection) -> None:
    from rank_bm25 import BM25Plus

    c = collection(name)
    reference = BM25Plus(c.tokens, k1=1.2, b=0.75, delta=1.0)
    compared = assert_top_k_is_the_references(c, _summed(lambda t: reference.get_scores([t])), 1e-9, 1e-12,
                                              variant="bm25+", k1=1.2, b=0.75, delta=1.0)
    assert compared > 1000


@pytest.mark.parametrize("name", COLLECTIONS)
@pytest.mark.parametrize("method", ["lucene", "robertson", "atire", "bm25l", "bm25+"])
def test_equals_bm25s(method, name, collection) -> None:
    import bm25s

    c = collection(name)
    model = bm25s.BM25(method=method, k1=0.9, b=0.4, delta=0.5)
    model.index(c.tokens, show_progress=False)
    empty = np.zeros(len(c.tokens))

    def scores_of(query: list[str]) -> np.ndarray:
        known = [t for t in query if t in model.vocab_dict]
        return model.get_scores(known) if known else empty

    compared = assert_top_k_is_the_references(c, scores_of, 2e-6, 1e-5, variant=method, k1=0.9, b=0.4, delta=0.5)
    assert compared > 1000


@pytest.mark.parametrize("name", COLLECTIONS)
def test_bm25l_differs_from_rank_bm25_only_by_its_extra_tf_factor(name, collection) -> None:
    from rank_bm25 import BM25L

    c = collection(name)
    reference = BM25L(c.tokens, k1=1.2, b=0.75, delta=0.5)
    terms = sorted({t for q in c.queries for t in q}, key=lambda t: (-len(c.postings.get(t, ())), t))[:20]
    for term in terms:  # single-term queries: rank_bm25's score is tf times ours
        docs, scores = c.index.retrieve_tokens([[term]], k=K, variant="bm25l", k1=1.2, b=0.75, delta=0.5)[0]
        assert len(docs) == min(K, len(c.postings[term]))
        ref = reference.get_scores([term])
        tf = np.array([c.tokens[d].count(term) for d in docs.tolist()])
        np.testing.assert_allclose(ref[docs], tf * scores, rtol=1e-9)
