"""k3, query-term saturation (Robertson et al., Okapi at TREC-3): a query term given qf times weighs
qf (k3 + 1) / (qf + k3) of its single weight. Checked against a straightforward reference scorer
built from the variants' formulas, for every variant, both backends and every search path."""
from __future__ import annotations

import random

import numpy as np
import pytest

from bm25lab.engine import Index, Tokenizer
from bm25lab.engine.errors import ParameterError
from bm25lab.engine.scoring import VARIANTS, Params, get_variant, query_term_weight

WORDS = ["a", "b", "c", "d", "e", "f", "g"]


def corpus(seed: int = 0) -> list[tuple[str, list[str]]]:
    rng = random.Random(seed)
    return [(f"d{i:02d}", [rng.choice(WORDS[: rng.randint(2, 7)]) for _ in range(rng.randint(1, 9))])
            for i in range(30)]


QUERIES = {"q1": "a a a b", "q2": "c", "q3": "d d e e e e f", "q4": "g g b", "q5": "z a a"}


def reference(docs: list[tuple[str, list[str]]], query: list[str], params: Params) -> dict[str, float]:
    """Every matching document's score, from the formulas: sum over the query's distinct known terms of
    query_term_weight(qf, k3) * idf(t) * tf_part(tf, dl) (tf_part(0) for an absent term)."""
    variant = get_variant(params.variant)
    vocabulary = sorted({t for _, tokens in docs for t in tokens})
    df = np.array([sum(t in tokens for _, tokens in docs) for t in vocabulary])
    idf = dict(zip(vocabulary, variant.idf(df, len(docs))))
    avgdl = sum(len(tokens) for _, tokens in docs) / len(docs)
    known = [t for t in dict.fromkeys(query) if t in idf]
    out = {}
    for doc_id, tokens in docs:
        if not any(t in tokens for t in known):
            continue
        total = 0.0
        for term in known:
            part = variant.tf_part(np.array([tokens.count(term)]), np.array([len(tokens)]), avgdl, params.k1,
                                   params.b, params.delta)[0]
            total += float(query_term_weight(np.array([query.count(term)]), params.k3)[0]) * idf[term] * part
        out[doc_id] = total
    return out


@pytest.fixture(scope="module", params=["numpy", "core"])
def index(request) -> Index:
    return Index.build_tokens(corpus(), backend=request.param)


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("k3", [None, 0.0, 1.2, 8.0, 1000.0])
def test_every_variant_and_path_equals_the_reference(index, variant, k3):
    params = Params(variant, 1.2, 0.75, None, k3).resolved()
    docs = corpus()
    batch = index.search_many(QUERIES, k=100, variant=variant, k1=1.2, b=0.75, k3=k3)
    prepared = index.batch(QUERIES).search(k=100, variant=variant, k1=1.2, b=0.75, k3=k3)
    for qid, text in QUERIES.items():
        expected = reference(docs, text.split(), params)
        single = index.search(text, k=100, variant=variant, k1=1.2, b=0.75, k3=k3)
        got = {h.doc_id: h.score for h in single}
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-12)
        # the batch and the prepared batch (tuning) give the very same ranking and floats
        assert [(h.doc_id, h.score) for h in batch[qid]] == [(h.doc_id, h.score) for h in single]
        assert [(h.doc_id, h.score) for h in prepared[qid]] == [(h.doc_id, h.score) for h in single]


def test_both_backends_give_identical_floats_with_k3():
    numpy_index = Index.build_tokens(corpus(1), backend="numpy")
    core_index = Index.build_tokens(corpus(1), backend="core")
    for variant in VARIANTS:
        a = numpy_index.search_many(QUERIES, k=50, variant=variant, k3=2.5)
        b = core_index.search_many(QUERIES, k=50, variant=variant, k3=2.5)
        for qid in QUERIES:
            assert [(h.doc_id, h.score) for h in a[qid]] == [(h.doc_id, h.score) for h in b[qid]]
            single = core_index.search(QUERIES[qid], k=50, variant=variant, k3=2.5)
            assert [(h.doc_id, h.score) for h in single] == [(h.doc_id, h.score) for h in b[qid]]


def test_a_term_three_times_weighs_27_11_of_once_with_k3_8():
    index = Index.build([("x", "apple pie"), ("y", "apple apple tart"), ("z", "pear")],
                        tokenizer=Tokenizer("whitespace", stopwords=None))
    once = {h.doc_id: h.score for h in index.search("apple", k3=8)}
    thrice = {h.doc_id: h.score for h in index.search("apple apple apple", k3=8)}
    linear = {h.doc_id: h.score for h in index.search("apple apple apple")}
    assert thrice == pytest.approx({d: s * 27 / 11 for d, s in once.items()}, rel=1e-15)
    assert linear == pytest.approx({d: s * 3 for d, s in once.items()}, rel=1e-15)  # default: Lucene's count
    assert {h.doc_id: h.score for h in index.search("apple apple apple", k3=0)} == once  # k3 = 0: once
    assert query_term_weight(np.array([1.0, 3.0]), 8.0).tolist() == [1.0, 27 / 11]


def test_k3_is_checked():
    for bad in (-1.0, float("inf"), float("nan"), "8"):
        with pytest.raises(ParameterError, match="k3 must be a number from 0 to 1e"):
            Params(k3=bad).resolved()  # type: ignore[arg-type]
    assert Params(k3=1).resolved().k3 == 1.0 and Params().resolved().k3 is None
