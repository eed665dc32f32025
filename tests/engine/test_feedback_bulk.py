"""Feedback in bulk (engine/feedback.py's search_many over the protocol of engine/searching.py, answered from
the postings by engine/lookups.py, Index and ShardedIndex) equals feedback as it is defined
(search_many_reference: expand and second_pass query by query, every statistic a single-term search): the
same documents in the same order with the same float64 scores, bit for bit, on Cranfield for RM3, Bo1 and
Rocchio with default and other parameters, on a plain, a segmented (several segments, deletions) and a
sharded index. Each protocol method also equals its definition by single-term searches, and a DistributedIndex
(which runs the definitions) gives the sharded index's results."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from bm25lab.engine import Index, Tokenizer
from bm25lab.engine.feedback import Feedback, FeedbackStatistics, search_many, search_many_reference
from bm25lab.engine.scoring import Params
from bm25lab.engine.shards import ShardedIndex

QUERIES = 40  # of Cranfield's 225 for every combination; all of them for the default run of the plain index
OTHER = Params("bm25l", 1.1, 0.6, 0.4, k3=8.0)  # an absent-term part (the definition's own second pass) and k3
RUNS = [
    (Feedback("rm3"), None),
    (Feedback("bo1"), None),
    (Feedback("rocchio"), None),
    (Feedback("rm3", 5, 20, 0.3), OTHER),
    (Feedback("bo1", 7, 4), Params("robertson", 0.8, 0.3)),
    (Feedback("rocchio", 4, 15, 0.7), Params("atire", 1.5, 0.9, k3=2.0)),
    (Feedback("rocchio", 3, 6, 0.2), OTHER),
]


def bits(results) -> dict:
    """Every query's document ids and the bits of its float64 scores."""
    return {q: (list(h.doc_ids), np.asarray(h.scores, dtype=np.float64).view(np.int64).tolist())
            for q, h in results.items()}


class Case:
    """An index, its queries and the definition's statistics, shared by its runs."""

    def __init__(self, index, queries) -> None:
        self.index = index
        self.queries = queries
        self.stats = FeedbackStatistics(index)


@pytest.fixture(scope="module")
def docs(cranfield):
    return list(cranfield.documents())


@pytest.fixture(scope="module")
def queries(cranfield):
    return dict(cranfield.queries())


@pytest.fixture(scope="module")
def cases(docs, queries, cranfield_index, tmp_path_factory) -> dict[str, Case]:
    first = dict(list(queries.items())[:QUERIES])
    segmented = Index.build(docs[:500], tokenizer=Tokenizer("en"))
    segmented.add(docs[500:950])
    segmented.add(docs[950:])
    segmented.delete([doc.id for doc in docs[3::37]])
    assert segmented.num_segments == 3 and segmented.num_docs < len(docs)
    sharded = ShardedIndex.build(docs, tmp_path_factory.mktemp("fb") / "sharded", shards=3,
                                 tokenizer=Tokenizer("en"))
    return {"plain": Case(cranfield_index, first), "segmented": Case(segmented, first),
            "sharded": Case(sharded, first)}


@pytest.mark.parametrize("kind", ["plain", "segmented", "sharded"])
@pytest.mark.parametrize("feedback,params", RUNS, ids=lambda v: getattr(v, "method", getattr(v, "variant", "")))
def test_bulk_equals_definition(cases, kind, feedback, params):
    case = cases[kind]
    expected = search_many_reference(case.index, case.queries, 1000, params, feedback, case.stats)
    assert bits(search_many(case.index, case.queries, 1000, params, feedback)) == bits(expected)


def test_all_queries_plain_rm3(cranfield_index, queries):
    stats = FeedbackStatistics(cranfield_index)
    expected = search_many_reference(cranfield_index, queries, 1000, None, Feedback("rm3"), stats)
    assert len(expected) == 225
    assert bits(search_many(cranfield_index, queries, 1000, None, Feedback("rm3"))) == bits(expected)


def weight_bits(weights: dict) -> dict:
    return {t: np.float64(w).view(np.int64) for t, w in weights.items()}


def _by_search(index, monkeypatch):
    """``index`` answering the protocol by its definitions (single-term searches) only."""
    for hook in ("_term_statistics", "_term_weights", "_retrieve_weighted"):
        monkeypatch.setattr(index, hook, lambda *args: None)
    return index


@pytest.mark.parametrize("kind", ["plain", "segmented", "sharded"])
def test_protocol_equals_definitions(cases, kind, monkeypatch):
    index = cases[kind].index
    docs = [h for h in index.search("boundary layer flow", k=4).doc_ids] + ["no-such-document"]
    terms = index.document_terms(docs)
    vocabulary = sorted({t for c in terms for t in c} | {"zzz-unknown"})
    lists = [list(c) + ["zzz-unknown"] for c in terms]
    weighted = {"a": {"boundary": 0.7, "layer": 0.3, "flow": 0.3, "zzz-unknown": 2.0},
                "b": {"heat": 1.0, "transfer": 1.0}, "c": {"zzz-unknown": 1.0}}
    params = [Params("lucene", 0.9, 0.4), Params("bm25+", 1.2, 0.75, 1.0), Params("robertson", 2.0, 1.0, k3=5.0)]
    stats = index.term_statistics(vocabulary)
    assert index._retrieve_weighted([{"boundary": 1.0}], 10, params[0].resolved(), 1) is not None  # the kernels
    found = {p: (index.term_weights(docs, lists, params=p), bits(index.search_weighted(weighted, 50, params=p)))
             for p in params}
    _by_search(index, monkeypatch)
    defined = index.term_statistics(vocabulary)
    assert stats.num_docs == defined.num_docs == index.num_docs
    assert stats.df.tolist() == defined.df.tolist() and stats.cf.tolist() == defined.cf.tolist()
    assert stats.df[vocabulary.index("zzz-unknown")] == 0
    for p in params:
        weights, searched = found[p]
        defined_weights = index.term_weights(docs, lists, params=p)
        assert [weight_bits(d) for d in weights] == [weight_bits(d) for d in defined_weights]
        assert searched == bits(index.search_weighted(weighted, 50, params=p))
    assert weights[-1] == {t: 0.0 for t in lists[-1]}


def test_document_terms_are_the_indexed_tokens(cranfield_index):
    doc = cranfield_index.search("boundary layer", k=1).doc_ids[0]
    text = cranfield_index.document(doc).full_text
    assert cranfield_index.document_terms([doc, "missing"]) == [Counter(cranfield_index.tokenizer.tokenize(text)),
                                                                 Counter()]


def test_distributed_index_runs_the_definitions(docs, queries, cases):
    """A DistributedIndex answers the protocol by its definitions (single-term searches on the workers): the
    same results as the sharded index's bulk path."""
    distributed = pytest.importorskip("distributed")
    import bm25lab.distributed as bd

    sharded = cases["sharded"].index
    few = dict(list(queries.items())[:1])  # every statistic a search through the scheduler: one query only
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        index = bd.DistributedIndex(sharded.path, client)
        feedback = Feedback("rocchio", 2, 5)  # statistics, weights and the weighted search: all the protocol
        expected = bits(search_many(sharded, few, 100, None, feedback))
        assert bits(search_many(index, few, 100, None, feedback)) == expected


def test_numpy_backend(docs, queries):
    """The numpy backend's weighted search (the specification of the kernels) orders the terms the same way."""
    index = Index.build(docs, tokenizer=Tokenizer("en"), backend="numpy")
    first, stats = dict(list(queries.items())[:QUERIES]), FeedbackStatistics(index)
    for feedback, params in [(Feedback("rm3"), None), (Feedback("rocchio", 4, 15, 0.7), Params("robertson", 0.8, 0.3))]:
        expected = search_many_reference(index, first, 1000, params, feedback, stats)
        assert bits(search_many(index, first, 1000, params, feedback)) == bits(expected)
