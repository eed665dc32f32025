"""The four missing-data cases (qrels but no run, run but no qrels, partial run, partial qrels), with and
without ``complete``; trec_eval's default through pytrec_eval where it applies."""
from __future__ import annotations

import math

import pytest
import pytrec_eval

from bm25lab.evaluation import evaluate as strict_evaluate


def evaluate(*args, **kwargs):
    """These tests measure edge cases (no shared query, nothing relevant) on purpose: not strict."""
    return strict_evaluate(*args, strict=False, **kwargs)
from bm25lab.evaluation.report import notes

MEASURES = ["P@2", "AP", "nDCG", "RR", "num_ret", "num_rel", "AUC"]
QRELS = {
    "1": {"a": 1, "b": 0, "c": 2},
    "2": {"a": 0, "d": 1},
    "10": {"e": 1},
}
RUN = {
    "1": {"a": 3.0, "b": 2.0, "c": 1.0},  # labels by rank: 1, 0, 2
    "2": {"d": 1.0, "a": 0.5},  # labels by rank: 1, 0
    "10": {"x": 1.0, "e": 0.5},  # labels by rank: unjudged, 1
}


def pytrec_ap(qrels: dict, run: dict) -> dict[str, float]:
    return {q: v["map"] for q, v in pytrec_eval.RelevanceEvaluator(qrels, {"map"}).evaluate(run).items()}


def test_complete_collection_for_reference():
    result = evaluate(QRELS, RUN, MEASURES)
    assert list(result.per_query) == ["1", "2", "10"]  # natural order of query ids
    assert result.num_queries == 3 and not result.missing_from_run and not result.not_judged
    assert {q: v["AP"] for q, v in result.per_query.items()} == pytest.approx(pytrec_ap(QRELS, RUN), abs=1e-12)
    assert notes(result) == ["AUC undefined for 1 queries (no relevant or no judged non-relevant document), "
                             "left out of its mean: 10"]


@pytest.mark.parametrize("complete", [False, True])
def test_qrels_but_no_run(complete):
    result = evaluate(QRELS, {}, MEASURES, complete=complete)
    assert result.missing_from_run == ("1", "2", "10")
    if complete:  # every judged query scores 0 (AUC stays undefined where it is)
        assert result.num_queries == 3
        assert all(v[m] == 0.0 for v in result.per_query.values() for m in v)
        assert result.mean["AP"] == 0.0 and result.mean["num_rel"] == 0.0
        assert result.undefined == {"AUC": ("10",)}
    else:  # nothing to average, as trec_eval ("no queries with both results and relevance info")
        assert result.num_queries == 0 and result.per_query == {}
        assert all(math.isnan(v) for v in result.mean.values())
        assert notes(result)[0].startswith("no query has both judgments and a ranking")
    assert pytrec_ap(QRELS, {}) == {}


@pytest.mark.parametrize("complete", [False, True])
def test_run_but_no_qrels(complete):
    result = evaluate({}, RUN, MEASURES, complete=complete)
    assert result.num_queries == 0 and result.per_query == {}
    assert result.not_judged == ("1", "2", "10")
    assert pytrec_ap({}, RUN) == {}


@pytest.mark.parametrize("complete", [False, True])
def test_partial_run(complete):
    run = {q: RUN[q] for q in ("1", "10")}  # query 2 is judged but missing from the run
    result = evaluate(QRELS, run, MEASURES, complete=complete)
    full = evaluate(QRELS, RUN, MEASURES)
    assert result.missing_from_run == ("2",)
    assert result.per_query["1"] == full.per_query["1"] and result.per_query["10"] == full.per_query["10"]
    ap1, ap10 = full.per_query["1"]["AP"], full.per_query["10"]["AP"]
    if complete:  # trec_eval -c: the missing query counts, with 0
        assert result.num_queries == 3
        assert result.per_query["2"] == {m: 0.0 for m in MEASURES}
        assert result.mean["AP"] == pytest.approx((ap1 + 0.0 + ap10) / 3, abs=1e-12)
        assert "scored 0 (complete)" in notes(result)[0]
    else:  # trec_eval's default: only queries in both
        assert result.num_queries == 2 and "2" not in result.per_query
        assert result.mean["AP"] == pytest.approx((ap1 + ap10) / 2, abs=1e-12)
        assert {q: v["AP"] for q, v in result.per_query.items()} == pytest.approx(pytrec_ap(QRELS, run), abs=1e-12)
        assert "not averaged" in notes(result)[0]


@pytest.mark.parametrize("complete", [False, True])
def test_partial_qrels(complete):
    qrels = {q: QRELS[q] for q in ("1", "2")}  # query 10 ran but has no judgments
    result = evaluate(qrels, RUN, MEASURES, complete=complete)
    assert result.num_queries == 2 and list(result.per_query) == ["1", "2"]
    assert result.not_judged == ("10",) and not result.missing_from_run
    assert {q: v["AP"] for q, v in result.per_query.items()} == pytest.approx(pytrec_ap(qrels, RUN), abs=1e-12)
    assert notes(result) == ["1 run queries without judgments ignored: 10"]


def test_empty_judgments_and_empty_rankings():
    # a query with an empty judgment dict has no judgments; one with an empty ranking is in the run
    result = evaluate({"1": {}, "2": {"a": 1}}, {"1": {"a": 1.0}, "2": {}}, ["AP", "num_ret", "P@1"])
    assert result.per_query == {"2": {"AP": 0.0, "num_ret": 0.0, "P@1": 0.0}}
    assert result.not_judged == ("1",)


def test_queries_judged_only_with_negative_labels_count_and_score_zero():
    # trec_eval itself fails on such a query; here it is judged (in the pool) with nothing relevant
    result = evaluate({"q": {"a": -1, "b": -2}}, {"q": {"a": 1.0, "c": 0.5}}, ["AP", "nDCG", "bpref", "num_rel", "AUC"])
    assert result.per_query == {"q": {"AP": 0.0, "nDCG": 0.0, "bpref": 0.0, "num_rel": 0.0}}
    assert result.undefined == {"AUC": ("q",)}


def test_complete_under_trec_eval_10_evaluates_a_stand_in_ranking():
    # query 2 is missing from the run. 9.0.8 scores it 0 everywhere (num_rel 0 in the sums); 10.0
    # evaluates a ranking of one unjudged document: num_rel counts its R, num_ret is reported 0,
    # AUC (bm25lab's) is that of an empty ranking: both judged documents tie below, 1/2
    run = {q: r for q, r in RUN.items() if q != "2"}
    nine = evaluate(QRELS, run, MEASURES + ["utility", "utility@1,-1,0,0", "relstring"], complete=True)
    ten = evaluate(QRELS, run, MEASURES + ["utility", "utility@1,-1,0,0", "relstring"], complete=True, trec_eval=10)
    assert nine.per_query["2"] == {"P@2": 0.0, "AP": 0.0, "nDCG": 0.0, "RR": 0.0, "num_ret": 0.0, "num_rel": 0.0,
                                   "AUC": 0.0, "utility": 0.0, "utility@1,-1,0,0": 0.0, "relstring": ""}
    assert ten.per_query["2"] == {"P@2": 0.0, "AP": 0.0, "nDCG": 0.0, "RR": 0.0, "num_ret": 0.0, "num_rel": 1.0,
                                  "AUC": 0.5, "utility": 0.0, "utility@1,-1,0,0": -1.0, "relstring": ""}
    assert nine.summary["num_rel"] == 3 and ten.summary["num_rel"] == 4
    # trec_eval 10.0 clears utility and relstring by name only: with parameters written they keep
    # the stand-in's values (utility_1,-1,0,0 = -1 for its one non-relevant document, relstring_3 = '-')
    assert evaluate(QRELS, run, ["relstring@3"], complete=True, trec_eval=10).per_query["2"] == {"relstring@3": "-"}
