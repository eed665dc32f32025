"""BM25 scores against independent implementations, on the engine's own tokens of real collections.

- ``okapi`` = rank_bm25 ``BM25Okapi`` to 1e-9 relative (Cranfield, English; CMRC 2018, Chinese).
- ``bm25+`` = rank_bm25 ``BM25Plus`` to 1e-9 relative: same definition.
- ``bm25l`` differs from rank_bm25 ``BM25L`` by design: rank_bm25 multiplies Lv and Zhai's BM25L term
  weight by tf once more (``idf * tf * (k1+1)(c+delta)/(k1+c+delta)``), so absent terms add 0 and
  tf > 1 is counted twice. bm25lab follows the paper and bm25s. The two agree exactly where tf = 1 and
  the query has one term; elsewhere rank_bm25's score is tf times ours (single-term queries).
- ``lucene``, ``robertson``, ``atire``, ``bm25l``, ``bm25+`` = bm25s with the same method to float32
  precision (bm25s scores in float32).
"""
from __future__ import annotations

import numpy as np
import pytest

N_QUERIES = 60


def engine_tokens(index, corpus):
    return list(index.tokenizer.tokenize_many(doc.full_text for doc in corpus.documents()))


def query_tokens(index, corpus):
    qs = list(corpus.judged_queries().items())[:N_QUERIES]
    return [(qid, index.tokenizer.tokenize(text)) for qid, text in qs]


def all_scores(index, tokens, **params):
    hits = index.search_tokens(tokens, k=index.num_docs, **params)
    return {h.doc_id: h.score for h in hits}


def assert_same_scores(index, ours: dict, reference: np.ndarray, rel: float) -> None:
    """Every returned document's score equals the reference's score of that document."""
    position = {doc_id: i for i, doc_id in enumerate(index.doc_ids)}
    got = np.array(list(ours.values()), dtype=np.float64)
    expected = np.asarray(reference, dtype=np.float64)[[position[d] for d in ours]]
    np.testing.assert_allclose(got, expected, rtol=rel, atol=1e-12)


@pytest.fixture(scope="module")
def cranfield_tokens(cranfield_index, cranfield):
    return engine_tokens(cranfield_index, cranfield)


@pytest.fixture(scope="module")
def cmrc_tokens(cmrc_index, cmrc):
    return engine_tokens(cmrc_index, cmrc)


@pytest.mark.parametrize("which", ["cranfield", "cmrc"])
def test_okapi_equals_rank_bm25(which, request) -> None:
    from rank_bm25 import BM25Okapi

    index = request.getfixturevalue(f"{which}_index")
    corpus = request.getfixturevalue("cranfield" if which == "cranfield" else "cmrc")
    tokens = request.getfixturevalue(f"{which}_tokens")
    reference = BM25Okapi(tokens, k1=1.5, b=0.75, epsilon=0.25)
    matched = 0
    doc_terms = [set(doc) for doc in tokens]
    for qid, q in query_tokens(index, corpus):
        ours = all_scores(index, q, variant="okapi", k1=1.5, b=0.75)
        ref = reference.get_scores(q)
        assert_same_scores(index, ours, ref, rel=1e-9)
        # every document with a query term is returned (rank_bm25 scores it, possibly 0)
        present = {index.doc_ids[i] for i, terms in enumerate(doc_terms) if terms.intersection(q)}
        assert set(ours) == present, qid
        matched += len(ours)
    assert matched > 0


def test_bm25plus_equals_rank_bm25(cranfield_index, cranfield, cranfield_tokens) -> None:
    from rank_bm25 import BM25Plus

    reference = BM25Plus(cranfield_tokens, k1=1.2, b=0.75, delta=1.0)
    for _, q in query_tokens(cranfield_index, cranfield)[:20]:
        ours = all_scores(cranfield_index, q, variant="bm25+", k1=1.2, b=0.75, delta=1.0)
        assert_same_scores(cranfield_index, ours, reference.get_scores(q), rel=1e-9)


def test_bm25l_differs_from_rank_bm25_only_by_its_extra_tf_factor(cranfield_index, cranfield_tokens) -> None:
    from rank_bm25 import BM25L

    reference = BM25L(cranfield_tokens, k1=1.2, b=0.75, delta=0.5)
    ids = list(cranfield_index.doc_ids)
    for term in ["boundary", "layer", "shock", "heat", "flutter"]:
        (stem,) = cranfield_index.tokenizer.tokenize(term)
        ours = all_scores(cranfield_index, [stem], variant="bm25l", k1=1.2, b=0.75, delta=0.5)
        ref = reference.get_scores([stem])
        assert ours
        for i, doc_id in enumerate(ids):
            if doc_id in ours:
                tf = cranfield_tokens[i].count(stem)
                assert ref[i] == pytest.approx(tf * ours[doc_id], rel=1e-9)


@pytest.mark.parametrize("method", ["lucene", "robertson", "atire", "bm25l", "bm25+"])
def test_equals_bm25s(method, cranfield_index, cranfield, cranfield_tokens) -> None:
    import bm25s

    model = bm25s.BM25(method=method, k1=0.9, b=0.4, delta=0.5)
    model.index(cranfield_tokens, show_progress=False)
    for _, q in query_tokens(cranfield_index, cranfield)[:25]:
        q = [t for t in q if t in model.vocab_dict]
        ours = all_scores(cranfield_index, q, variant=method, k1=0.9, b=0.4, delta=0.5)
        ref = model.get_scores(q)
        for i, doc_id in enumerate(cranfield_index.doc_ids):
            if doc_id in ours:
                assert ours[doc_id] == pytest.approx(float(ref[i]), rel=2e-6, abs=1e-5), doc_id
            elif method in ("lucene", "robertson", "atire"):
                assert float(ref[i]) == 0.0


def test_lucene_equals_bm25s_on_chinese(cmrc_index, cmrc, cmrc_tokens) -> None:
    import bm25s

    model = bm25s.BM25(method="lucene", k1=0.9, b=0.4)
    model.index(cmrc_tokens, show_progress=False)
    for _, q in query_tokens(cmrc_index, cmrc)[:25]:
        q = [t for t in q if t in model.vocab_dict]
        ours = all_scores(cmrc_index, q)
        ref = model.get_scores(q)
        for i, doc_id in enumerate(cmrc_index.doc_ids):
            assert ours.get(doc_id, 0.0) == pytest.approx(float(ref[i]), rel=2e-6, abs=1e-5)
