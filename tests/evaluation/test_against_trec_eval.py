"""Agreement with trec_eval (through pytrec_eval-terrier) per query, to 1e-9, for every shared measure;
and ROC AUC against scikit-learn.

Real runs are BM25 runs the engine makes on the bundled Cranfield (graded judgments, so ``rel=2``
matters) and CISI collections; adversarial runs are generated: heavy score ties, ids that differ only
in case or length, negative and zero labels, queries missing on either side, empty rankings, single
documents. pytrec_eval never sees a query whose judgments are all negative: trec_eval itself fails
on one (it sizes an array by the largest label).
"""
from __future__ import annotations

import math
import random

import numpy as np
import pytest
import pytrec_eval

import bm25lab.evaluation.ranking
from bm25lab.evaluation import Qrels, Run, evaluate as strict_evaluate, parse_measure, read_qrels, read_run, write_run


def evaluate(*args, **kwargs):
    """These tests measure edge cases (no shared query, nothing relevant) on purpose: not strict."""
    return strict_evaluate(*args, strict=False, **kwargs)

CUTOFFS = (1, 5, 10, 20, 100, 1000)
SHARED = (
    [f"P@{k}" for k in CUTOFFS]
    + [f"R@{k}" for k in CUTOFFS]
    + [f"AP@{k}" for k in CUTOFFS]
    + [f"nDCG@{k}" for k in CUTOFFS]
    + [f"Success@{k}" for k in (1, 5, 10)]
    + [f"iprec@{r / 10:.1f}" for r in range(11)]
    + ["RR", "AP", "Rprec", "bpref", "11pt-AP", "nDCG", "num_ret", "num_rel", "num_rel_ret", "set_P", "set_R", "set_F1"]
)
TOLERANCE = 1e-9


def trec_eval_values(qrels: dict, run: dict, measures, rel: int = 1, judged_only: bool = False) -> dict:
    names = {parse_measure(m).trec_eval_name for m in measures}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, names, relevance_level=rel, judged_docs_only_flag=judged_only)
    return evaluator.evaluate(run)


def assert_agrees(qrels: dict, run: dict, measures=SHARED, rel: int = 1, judged_only: bool = False) -> int:
    """Every per-query value equals trec_eval's; returns the number of values compared."""
    ours = evaluate(qrels, run, list(measures), rel=rel, judged_only=judged_only)
    theirs = trec_eval_values(qrels, run, measures, rel=rel, judged_only=judged_only)
    assert set(ours.per_query) == set(theirs)
    compared = 0
    for qid, values in theirs.items():
        for m in measures:
            expected, got = values[parse_measure(m).trec_eval_name], ours.per_query[qid][m]
            if math.isnan(expected):
                # trec_eval divides 0 by 0 for interpolated precision when nothing was retrieved; we say 0
                assert m.startswith(("iprec", "11pt")) and values.get("num_ret", 0.0) == 0.0, (qid, m)
                assert got == 0.0, (qid, m)
            else:
                assert abs(got - expected) <= TOLERANCE, (qid, m, got, expected)
            compared += 1
    return compared


# ---------------------------------------------------------------------------------------------
# Real runs


@pytest.fixture(scope="module")
def cranfield_run(cranfield, cranfield_index) -> dict:
    hits = cranfield_index.search_many(cranfield.queries(), k=1000)
    return {qid: {h.doc_id: h.score for h in ranked} for qid, ranked in hits.items()}


@pytest.fixture(scope="module")
def cranfield_qrels(cranfield) -> dict:
    with open(cranfield.qrels_path) as stream:
        return pytrec_eval.parse_qrel(stream)


@pytest.fixture(scope="module")
def cisi():
    from bm25lab import corpora
    from bm25lab.engine import Index, Tokenizer

    collection = corpora.get("cisi")
    index = Index.build(collection.documents(), tokenizer=Tokenizer("en"))
    hits = index.search_many(collection.queries(), k=1000)
    with open(collection.qrels_path) as stream:
        qrels = pytrec_eval.parse_qrel(stream)
    return qrels, {qid: {h.doc_id: h.score for h in ranked} for qid, ranked in hits.items()}


@pytest.mark.parametrize(("rel", "judged_only"), [(1, False), (2, False), (3, False), (1, True), (2, True)])
def test_cranfield_bm25_run_graded_qrels(cranfield_qrels, cranfield_run, rel, judged_only):
    assert len(cranfield_run) == 225 and max(len(r) for r in cranfield_run.values()) == 1000
    compared = assert_agrees(cranfield_qrels, cranfield_run, rel=rel, judged_only=judged_only)
    assert compared == 225 * len(SHARED)


@pytest.mark.parametrize("judged_only", [False, True])
def test_cisi_bm25_run(cisi, judged_only):
    qrels, run = cisi
    compared = assert_agrees(qrels, run, judged_only=judged_only)
    assert compared == 76 * len(SHARED)  # 112 queries ran, 76 have judgments


def test_cranfield_through_files_equals_in_memory(tmp_path, cranfield, cranfield_run):
    write_run(cranfield_run, tmp_path / "bm25.run")
    from_files = evaluate(read_qrels(cranfield.qrels_path), read_run(tmp_path / "bm25.run"), SHARED)
    in_memory = evaluate(Qrels.from_dict(read_qrels(cranfield.qrels_path).to_dict()), cranfield_run, SHARED)
    assert from_files.per_query == in_memory.per_query
    assert from_files.mean == in_memory.mean


# ---------------------------------------------------------------------------------------------
# Generated adversarial runs

STEMS = ["d", "D", "dd", "d1", "d10", "d2", "é", "中", "a", "A", "b", "B", "ab", "aB", "Ab", "AB", ""]


def adversarial_case(seed: int) -> tuple[dict, dict]:
    rng = random.Random(seed)
    docs = list(dict.fromkeys(rng.choice(STEMS) + str(rng.randint(0, 5)) for _ in range(40)))
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(rng.randint(1, 7)):
        qid = f"q{q}"
        if rng.random() < 0.85:  # some queries have no judgments
            judged = rng.sample(docs, rng.randint(1, min(15, len(docs))))
            qrels[qid] = {d: rng.choice([-2, -1, 0, 0, 0, 1, 1, 2, 3, 4]) for d in judged}
            if max(qrels[qid].values()) < 0:
                qrels[qid][judged[0]] = 0
        if rng.random() < 0.85:  # some judged queries are missing from the run
            depth = rng.choice([0, 1, 1, 2, 5, 12, 20, len(docs)])  # empty and single-document rankings
            ties = rng.choice([None, [0.0, 1.0], [0.0, 0.5, 1.0, 1.5], [-1.0, 0.0]])
            run[qid] = {d: (rng.choice(ties) if ties else rng.random()) for d in rng.sample(docs, depth)}
    return qrels, run


@pytest.mark.parametrize("seed", range(60))
def test_adversarial_runs(seed):
    qrels, run = adversarial_case(seed)
    for rel in (1, 2):
        for judged_only in (False, True):
            assert_agrees(qrels, run, rel=rel, judged_only=judged_only)


def test_hand_made_edge_cases():
    # a single document; a run holding only unjudged documents; ids that differ only in case
    assert_agrees({"q": {"d": 1}}, {"q": {"d": 0.0}})
    assert_agrees({"q": {"d": 1, "e": 0}}, {"q": {"x": 1.0, "y": 1.0}})
    assert_agrees({"q": {"D": 1, "d": 0}}, {"q": {"d": 1.0, "D": 1.0, "dD": 1.0, "Dd": 1.0}})
    # only zero judgments; every document tied
    assert_agrees({"q": {"a": 0, "b": 0}}, {"q": {c: 0.0 for c in "abcdefg"}})
    # an empty run evaluates nothing, as trec_eval
    assert evaluate({"q": {"a": 1}}, {}, ["AP"]).per_query == trec_eval_values({"q": {"a": 1}}, {}, ["AP"]) == {}


def test_forced_hash_collisions_change_nothing(monkeypatch):
    """With a hash that collides constantly, every key match is a cluster resolved by string comparison."""
    cases = [adversarial_case(seed) for seed in range(15)]
    expected = [evaluate(q, r, SHARED).per_query for q, r in cases]

    def weak_hashes(values):
        return np.asarray([len(s) % 3 for s in values.to_pylist()], dtype=np.uint64)

    monkeypatch.setattr(bm25lab.evaluation.ranking, "string_hashes", weak_hashes)
    for (qrels, run), before in zip(cases, expected):
        assert evaluate(qrels, run, SHARED).per_query == before
        assert_agrees(qrels, run)
    with pytest.raises(bm25lab.evaluation.InputError, match="duplicate document 'ab'"):
        Run.from_dict({"q": [("ab", 1.0), ("cd", 2.0), ("ab", 3.0)]})
    assert len(Run.from_dict({"q": [("ab", 1.0), ("cd", 2.0), ("ef", 3.0)]})) == 3
    assert Qrels.from_dict({"q": {"ab": 1, "cd": 0, "ef": 2}}).to_dict()["q"] == {"ab": 1, "cd": 0, "ef": 2}


# ---------------------------------------------------------------------------------------------
# ROC AUC against scikit-learn


def _sklearn_auc(judged: dict, ranking: dict, rel: int):
    """scikit-learn's roc_auc_score over a query's judged documents on the run's raw scores, unretrieved
    judged documents all scoring below every retrieved one (None when undefined)."""
    from sklearn.metrics import roc_auc_score

    floor = min(ranking.values(), default=0.0) - 1.0
    docs = [d for d, label in judged.items() if label >= 0]
    truth = [judged[d] >= rel for d in docs]
    if all(truth) or not any(truth):
        return None
    return roc_auc_score(truth, [ranking.get(d, floor) for d in docs])


def test_auc_equals_scikit_learn_on_raw_scores_over_the_judged_documents(cranfield_qrels, cranfield_run):
    ties = sum(len(r) - len(set(r.values())) for r in cranfield_run.values())
    assert ties > 0  # the real run has tied scores: they count 1/2, as scikit-learn counts them
    for rel in (1, 3):
        result = evaluate(cranfield_qrels, cranfield_run, ["AUC"], rel=rel)
        checked = 0
        for qid, judged in cranfield_qrels.items():
            expected = _sklearn_auc(judged, cranfield_run[qid], rel)
            if expected is None:
                assert "AUC" not in result.per_query[qid] and qid in result.undefined["AUC"]
                continue
            assert result.per_query[qid]["AUC"] == pytest.approx(expected, abs=1e-12)
            checked += 1
        assert checked > 150
        defined = [v["AUC"] for v in result.per_query.values() if "AUC" in v]
        assert result.mean["AUC"] == pytest.approx(sum(defined) / len(defined), abs=1e-12)


@pytest.mark.parametrize("seed", range(30))
def test_auc_with_heavy_ties_equals_scikit_learn(seed):
    qrels, run = adversarial_case(seed)
    for judged_only in (False, True):
        result = evaluate(qrels, run, ["AUC"], judged_only=judged_only)
        for qid, values in result.per_query.items():
            ranking = run.get(qid, {})
            if judged_only:
                ranking = {d: s for d, s in ranking.items() if qrels[qid].get(d, -1) >= 0}
            expected = _sklearn_auc(qrels[qid], ranking, 1)
            assert values.get("AUC") == (None if expected is None else pytest.approx(expected, abs=1e-12))


# ---------------------------------------------------------------------------------------------
# trec_eval's further measures (issue 18) under the 9.0.8 rules, through pytrec_eval

FURTHER = ["infAP", "gm_map", "gm_bpref", "Rprec_mult@0.2", "Rprec_mult@1.0", "Rprec_mult@2.0", "Rprec_mult@0.35",
           "utility", "G", "binG", "ndcg_rel", "Rndcg", "relative_P@5", "relative_P@100", "set_relative_P", "set_map",
           "num_nonrel_judged_ret"]


def assert_further_agree(qrels: dict, run: dict, rel: int = 1, judged_only: bool = False) -> int:
    """Per query equal to pytrec_eval; gm_* per query are AP / bpref here, log(max(value, 1e-5)) there."""
    names = {m: parse_measure(m).trec_eval_name for m in FURTHER}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, set(names.values()), relevance_level=rel,
                                            judged_docs_only_flag=judged_only).evaluate(run)
    ours = evaluate(qrels, run, FURTHER, rel=rel, judged_only=judged_only, collection_size=0)
    compared = 0
    for qid, values in theirs.items():
        for measure, name in names.items():
            expected, got = values[name], ours.per_query[qid][measure]
            if measure.startswith("gm_"):
                expected, got = math.exp(expected), max(got, 0.00001)
            assert abs(got - expected) <= TOLERANCE * max(1.0, abs(expected)), (qid, measure, got, expected)
            compared += 1
    return compared


@pytest.mark.parametrize("seed", range(40))
def test_further_trec_eval_measures_on_adversarial_runs(seed):
    qrels, run = adversarial_case(seed)
    for rel in (1, 2):
        for judged_only in (False, True):
            assert_further_agree(qrels, run, rel=rel, judged_only=judged_only)


@pytest.mark.parametrize("rel", [1, 3])
def test_further_trec_eval_measures_on_cranfield(cranfield_qrels, cranfield_run, rel):
    assert assert_further_agree(cranfield_qrels, cranfield_run, rel=rel) == 225 * len(FURTHER)
