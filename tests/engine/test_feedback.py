"""Pseudo-relevance feedback (engine/feedback.py): RM3 as Anserini's Rm3Reranker and Bo1 as Terrier's
QueryExpansion worked by hand on a small index (the weights restated step by step from the references'
definitions, with this index's own first-pass scores and counts), Rocchio's interpolation, the second pass as
a weighted sum of single-term weights, a sharded index (global statistics) equal to one index, and the
command line."""
from __future__ import annotations

import json
import math
from collections import Counter

import pytest
from typer.testing import CliRunner

from bm25lab.cli import app
from bm25lab.engine import Index, Tokenizer
from bm25lab.engine.feedback import Feedback, FeedbackStatistics, expand, search_many
from bm25lab.engine.scoring import Params
from bm25lab.engine.shards import ShardedIndex

# 30 documents: five about fruit, 25 fillers of one rare word each, so that every fruit word is in at most
# 10% of the documents (Anserini's feedback filter) but "apple" (in 4 of 30, 13%) is not fed back
FRUIT = {
    "d1": "apple banana apple cherry kiwi",
    "d2": "apple date banana",
    "d3": "banana cherry cherry egg",
    "d4": "apple fig",
    "d5": "apple grape x",
}
DOCS = [*FRUIT.items(), *((f"f{i}", f"filler{i} word{i}") for i in range(25))]
PARAMS = Params("lucene", 0.9, 0.4)


@pytest.fixture(scope="module")
def index() -> Index:
    return Index.build(DOCS, tokenizer=Tokenizer("whitespace"))


def test_statistics_are_the_collections(index):
    stats = FeedbackStatistics(index)
    assert stats.n_docs == 30
    assert stats.tfs("apple") == {"d1": 2, "d2": 1, "d4": 1, "d5": 1} and stats.df("apple") == 4
    assert stats.cf("cherry") == 3 and stats.cf("banana") == 3


def test_rm3_by_hand(index):
    # query "apple", 3 feedback documents, 2 terms per vector, original query weight 0.6
    first = index.search_tokens(["apple"], k=3, params=PARAMS)
    docs, scores = first.doc_ids, first.scores
    counts = {d: Counter(FRUIT[d].split()) for d in docs}
    # filter: 2..20 characters of [a-z0-9] ("x" goes), df/N <= 0.1 ("apple", 4/30, goes)
    keep = {d: {t: n for t, n in c.items() if len(t) >= 2 and t != "apple"} for d, c in counts.items()}
    # each vector cut to its 2 most frequent terms, ties by term ascending
    cut = {d: dict(sorted(v.items(), key=lambda i: (-i[1], i[0]))[:2]) for d, v in keep.items()}
    norms = {d: sum(v.values()) for d, v in cut.items()}
    model = Counter()
    for d, s in zip(docs, scores):
        for t, n in cut[d].items():
            model[t] += n / norms[d] * s
    top = dict(sorted(model.items(), key=lambda i: (-i[1], i[0]))[:2])
    total = sum(top.values())
    expected = {t: 0.4 * w / total for t, w in top.items()}
    expected["apple"] = expected.get("apple", 0.0) + 0.6
    got = expand(index, ["apple"], PARAMS, Feedback("rm3", 3, 2, 0.6))
    assert got.keys() == expected.keys()
    assert all(got[t] == pytest.approx(expected[t], rel=1e-12) for t in expected)
    assert math.fsum(got.values()) == pytest.approx(1.0, abs=1e-12)


def test_bo1_by_hand(index):
    # query "apple", Terrier's defaults: 3 documents, 10 terms; parameter-free normaliser
    first = index.search_tokens(["apple"], k=3, params=PARAMS)
    within, in_docs = Counter(), Counter()
    for d in first.doc_ids:
        terms = Counter(FRUIT[d].split())
        within.update(terms)
        in_docs.update(terms.keys())
    cf = Counter(t for _, text in DOCS for t in text.split())

    def bo1(tfx, f):
        p = f / 30
        return tfx * math.log2((1 + p) / p) + math.log2(1 + p)

    weights = {t: (0.0 if in_docs[t] < 2 and t != "apple" else bo1(tf, cf[t])) for t, tf in within.items()}
    best = max(weights, key=lambda t: (weights[t], t))
    norm = bo1(within[best], within[best])
    top = dict(sorted(((t, w / norm) for t, w in weights.items()), key=lambda i: (-i[1], i[0]))[:10])
    expected = {t: w + (1.0 if t == "apple" else 0.0) for t, w in top.items() if w > 0}
    got = expand(index, ["apple"], PARAMS, Feedback("bo1"))
    assert got.keys() == expected.keys() and all(got[t] == pytest.approx(expected[t], rel=1e-12) for t in got)


def test_rocchio_interpolates_the_mean_bm25_vector(index):
    got = expand(index, ["cherry"], PARAMS, Feedback("rocchio", 2, 3, 0.5))
    assert math.fsum(got.values()) == pytest.approx(1.0, abs=1e-12) and got["cherry"] >= 0.5


def test_second_pass_is_the_weighted_sum_of_term_weights(index):
    feedback = Feedback("rm3", 3, 3, 0.5)
    weights = expand(index, ["apple", "cherry"], PARAMS, feedback)
    expected = Counter()
    for term, w in weights.items():
        for hit in index.search_tokens([term], k=30, params=PARAMS):
            expected[hit.doc_id] += w * hit.score
    results = search_many(index, {"q": "apple cherry"}, 10, PARAMS, feedback)["q"]
    ranked = sorted(sorted(expected.items(), reverse=True), key=lambda i: -i[1])[:10]
    assert results.doc_ids == [d for d, _ in ranked]
    assert results.scores == pytest.approx([s for _, s in ranked], rel=1e-12)


def test_a_sharded_index_gives_one_index_s_feedback(index, tmp_path):
    sharded = ShardedIndex.build(DOCS, tmp_path / "sharded", 3, tokenizer=Tokenizer("whitespace"), workers=1)
    queries = {"q1": "apple", "q2": "banana cherry", "q3": "fig grape"}
    for method in ("rm3", "bo1", "rocchio"):
        one = search_many(index, queries, 20, PARAMS, Feedback(method, 3, 5))
        many = search_many(sharded, queries, 20, PARAMS, Feedback(method, 3, 5))
        for q in queries:
            assert one[q].doc_ids == many[q].doc_ids
            assert one[q].scores == pytest.approx(many[q].scores, rel=1e-12)


def test_command_line(index, tmp_path):
    index.save(tmp_path / "idx")
    (tmp_path / "q.tsv").write_text("q1\tapple\nq2\tbanana cherry\n")
    runner = CliRunner()
    out = runner.invoke(app, ["run", str(tmp_path / "idx"), str(tmp_path / "q.tsv"), "--out", str(tmp_path / "r.run"),
                              "--rm3", "--fb-docs", "3", "--fb-terms", "5", "--original-query-weight", "0.7"])
    assert out.exit_code == 0, out.output
    expected = search_many(index, {"q1": "apple", "q2": "banana cherry"}, 1000, PARAMS, Feedback("rm3", 3, 5, 0.7))
    lines = (tmp_path / "r.run").read_text().split("\n")
    assert lines[0].split()[2] == expected["q1"].doc_ids[0]
    shown = runner.invoke(app, ["search", str(tmp_path / "idx"), "apple", "--bo1", "--format", "json", "-k", "3"])
    assert shown.exit_code == 0, shown.output
    assert [r["doc_id"] for r in json.loads(shown.stdout)] == \
        search_many(index, {"1": "apple"}, 3, PARAMS, Feedback("bo1"))["1"].doc_ids
    bad = runner.invoke(app, ["search", str(tmp_path / "idx"), "apple", "--rm3", "--bo1"])
    assert bad.exit_code == 2 and "choose one feedback method" in bad.stderr
    lonely = runner.invoke(app, ["search", str(tmp_path / "idx"), "apple", "--fb-docs", "3"])
    assert lonely.exit_code == 2 and "go with --rm3" in lonely.stderr


def test_tune_feedback_grid_is_cross_validated(index, tmp_path):
    import numpy as np

    from bm25lab.evaluation import evaluate
    from bm25lab.evaluation.tuning import fold_assignment, tune_feedback

    queries = {"q1": "apple", "q2": "banana", "q3": "cherry", "q4": "fig", "q5": "grape"}
    qrels = {"q1": {"d4": 1, "d5": 1}, "q2": {"d3": 1}, "q3": {"d1": 1}, "q4": {"d4": 1}, "q5": {"d5": 1, "d1": 1}}
    result = tune_feedback(index, queries, qrels, "AP", "rm3", (1, 3), (2, 5), params=PARAMS, folds=2, seed=1)
    by_hand = np.array([[[evaluate(qrels, search_many(index, queries, 1000, PARAMS, Feedback("rm3", d, t)), ["AP"],
                                   complete=True).per_query[q]["AP"] for q in queries] for t in (2, 5)] for d in (1, 3)])
    assert np.allclose(result.grid, by_hand.mean(axis=2), rtol=0, atol=1e-12)
    i, j = np.unravel_index(int(np.argmax(by_hand.mean(axis=2))), (2, 2))
    assert result.best == {"fb_docs": (1, 3)[i], "fb_terms": (2, 5)[j]}
    held = np.empty(5)
    for fold, test in zip(result.folds, fold_assignment(5, 2, 1)):
        train = np.setdiff1d(np.arange(5), test)
        a, b = np.unravel_index(int(np.argmax(by_hand[:, :, train].mean(axis=2))), (2, 2))
        held[test] = by_hand[a, b, test]
        assert (fold.k1, fold.b) == ((1, 3)[a], (2, 5)[b])
    assert result.test_mean == pytest.approx(held.mean(), abs=1e-12)
    index.save(tmp_path / "idx")
    (tmp_path / "q.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in queries.items()))
    (tmp_path / "qrels.json").write_text(json.dumps(qrels))
    out = CliRunner().invoke(app, ["tune", str(tmp_path / "idx"), str(tmp_path / "q.tsv"), str(tmp_path / "qrels.json"),
                                   "-m", "AP", "--rm3", "--fb-docs-grid", "1,3", "--fb-terms-grid", "2,5", "--folds", "2",
                                   "--seed", "1", "--format", "json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["best"] == result.best
