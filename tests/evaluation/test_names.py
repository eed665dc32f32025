"""Measure names in the field's syntaxes, with the field's meanings: ir_measures' names checked against
ir_measures itself per query, ranx's and trec_eval's against their definitions (``docs/measures.md``,
"Names")."""
from __future__ import annotations

import random

import ir_measures
import pytest

from bm25lab.evaluation import EvaluationError, MeasureError, evaluate
from bm25lab.evaluation.measures import TREC_CUTOFFS, expand_measures, parse_measure


def collection(seed: int) -> tuple[dict, dict]:
    """Graded qrels and a run with distinct scores (pytrec_eval keeps float32: no ties there either),
    short and long rankings, unjudged documents and queries missing from either side."""
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(12):
        docs = [f"d{i}" for i in range(40)]
        qrels[f"q{q}"] = {d: rng.choice([0, 0, 1, 2, 3]) for d in rng.sample(docs, rng.randint(1, 15))}
        ranked = rng.sample(docs, rng.choice([3, 8, 25, 40]))
        run[f"q{q}"] = {d: 100.0 - i * 1.5 for i, d in enumerate(ranked)}
    qrels["q0"] = {"d1": 0}  # nothing relevant
    run["unjudged"] = {"d1": 1.0}
    del run["q11"]
    return qrels, run


IR_MEASURES_NAMES = ["P(rel=2)@5", "P@5", "AP(rel=2)", "AP", "AP@10", "nDCG@10", "nDCG(dcg='log2')@5", "Judged@10", "Judged@30", "SetP", "SetR", "SetF", "NumRet", "NumRet(rel=1)",
                     "NumRel", "NumRelRet", "IPrec@0.5", "RR", "RR(rel=2)", "RR(judged_only=True)", "RR@3",
                     "Success@1", "Success@5", "R@10", "R(rel=3)@10", "Bpref", "Rprec", "P(judged_only=True)@10"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ir_measures_names_mean_what_ir_measures_computes(seed: int) -> None:
    qrels, run = collection(seed)
    ours = evaluate(qrels, run, IR_MEASURES_NAMES, complete=True)  # ir_measures counts every judged query
    for name in IR_MEASURES_NAMES:
        theirs = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.parse_measure(name)], qrels, run)}
        assert theirs, name
        for qid, value in theirs.items():
            assert ours.per_query[qid][name] == pytest.approx(value, abs=1e-9), (name, qid)


def test_exponential_gain_in_ir_measures_syntax() -> None:
    # ir_measures computes dcg=exp-log2 with gdeval (a Perl script): checked here as nDCG_exp, whose
    # values test_measures_examples checks against the articles' worked example
    qrels, run = collection(4)
    result = evaluate(qrels, run, ["nDCG(dcg='exp-log2')@10", 'nDCG(dcg="exp-log2")@10', "nDCG_exp@10"])
    for values in result.per_query.values():
        assert values["nDCG(dcg='exp-log2')@10"] == values['nDCG(dcg="exp-log2")@10'] == values["nDCG_exp@10"]


def test_judged_divides_by_the_ranking_cut_at_k_as_ir_measures() -> None:
    qrels = {"q": {"a": 1, "b": 0, "c": -1}}
    run = {"q": {"a": 3.0, "x": 2.0, "b": 1.0}}  # judged, unjudged, judged: 3 documents
    assert evaluate(qrels, run, ["Judged@2", "Judged@10"]).per_query["q"] == {"Judged@2": 0.5, "Judged@10": 2 / 3}


def test_ranx_names_mean_what_ranx_defines() -> None:
    # ranx's hits@k: the number of relevant documents in the top k (ranx/metrics/hits.py); hit_rate@k: any
    qrels = {"q": {"a": 1, "b": 2, "c": 1, "z": 0}}
    run = {"q": {"a": 5.0, "x": 4.0, "b": 3.0, "c": 2.0, "z": 1.0}}
    values = evaluate(qrels, run, ["hits@3", "hits@10", "hits", "hit_rate@1", "Success@2", "hits@3-l2",
                                   "map@100-l2", "AP(rel=2)", "ndcg_burges@5", "nDCG_exp@5", "mrr@1",
                                   "r-precision", "precision", "set_P"]).per_query["q"]
    assert values["hits@3"] == 2.0 and values["hits@10"] == values["hits"] == 3.0 and values["hits@3-l2"] == 1.0
    assert values["hit_rate@1"] == values["Success@2"] == 1.0 and values["mrr@1"] == 1.0
    assert values["map@100-l2"] == values["AP(rel=2)"] == pytest.approx(1 / 3)
    assert values["ndcg_burges@5"] == values["nDCG_exp@5"] and values["precision"] == values["set_P"] == 0.6
    assert values["r-precision"] == pytest.approx(2 / 3)
    assert parse_measure("rbp.95").param == 0.95 and parse_measure("RBP").param == 0.8  # ranx; ir_measures' default


def test_hits_and_success_differ_where_a_query_has_several_relevant() -> None:
    qrels = {"q1": {"a": 1, "b": 1}, "q2": {"c": 1}}
    run = {"q1": {"a": 2.0, "b": 1.0}, "q2": {"x": 2.0, "c": 1.0}}
    result = evaluate(qrels, run, ["Hits@2", "Success@2"])
    assert result.mean == {"Hits@2": 1.5, "Success@2": 1.0}


def test_trec_eval_lists_families_and_nicknames() -> None:
    assert expand_measures("P.5,10").names == ("P_5", "P_10")
    assert expand_measures(["ndcg_cut.10,20", "P@5,10"]).names == ("ndcg_cut_10", "ndcg_cut_20", "P@5", "P@10")
    assert expand_measures("P").names == tuple(f"P_{k}" for k in TREC_CUTOFFS)
    assert expand_measures("success").names == ("success_1", "success_5", "success_10")
    assert len(expand_measures("iprec_at_recall").names) == 11
    official = expand_measures("official")
    assert "map" in official.names and "P_30" in official.names and official.unavailable == ()  # gm_map: issue 18
    every = expand_measures("all_trec")
    assert {"ndcg_cut_1000", "set_F", "11pt_avg", "success_10", "recall_5"} <= set(every.names)
    # issue 18 computes every measure of all_trec; trec_eval's rbp (graded, p = 0.9) as RBP_graded, since
    # rbp alone is ir_measures' and ranx's binary RBP
    assert every.unavailable == () and "RBP_graded" in every.names and "rbp" not in every.names
    qrels, run = collection(3)
    result = evaluate(qrels, run, ["P.5,10", "P@5"])
    assert result.measures == ("P_5", "P_10", "P@5")
    assert all(v["P_5"] == v["P@5"] for v in result.per_query.values())
    assert evaluate(qrels, run, "all_trec").unavailable == every.unavailable


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("nDCG(rel=2)@10", "does not use a relevance threshold"),
        ("P(foo=1)@5", "unknown parameter 'foo'"),
        ("nDCG(dcg=exp)@10", "dcg= is log2 or exp-log2"),
        ("RBP(p=0.8)@10", "a cutoff cannot be given"),
        ("P(rel=x)@5", "rel must be a number > 0"),
        ("recall", "ambiguous"),
        ("SetF(beta=2)", "only beta=1"),
        ("nope@3", "unknown measure"),
    ],
)
def test_bad_names_say_what_is_wrong(name: str, fragment: str) -> None:
    with pytest.raises(MeasureError, match=fragment):
        parse_measure(name)


def test_depth_keeps_the_best_documents_after_the_tie_rule() -> None:
    qrels = {"q": {"a": 1, "b": 1, "c": 1}}
    run = {"q": {"c": 1.0, "b": 1.0, "a": 2.0, "x": 0.5}}  # ranked a, c, b (ties by id descending), x
    assert evaluate(qrels, run, ["num_ret", "num_rel_ret"], depth=2).per_query["q"] == {"num_ret": 2.0,
                                                                                        "num_rel_ret": 2.0}
    assert evaluate(qrels, run, ["AP"], depth=2).per_query["q"]["AP"] == pytest.approx(2 / 3)
    with pytest.raises(MeasureError, match="depth"):
        evaluate(qrels, run, ["AP"], depth=0)


def test_no_silent_table_of_zeros() -> None:
    qrels = {"1": {"a": 1}, "2": {"b": 1}}
    with pytest.raises(EvaluationError, match="share no query"):
        evaluate(qrels, {"001": {"a": 1.0}}, ["AP"])
    with pytest.raises(EvaluationError, match="share no query"):
        evaluate(qrels, {"x": {"a": 1.0}}, ["AP"], complete=True)
    with pytest.raises(EvaluationError, match="the run holds no query"):
        evaluate(qrels, {}, ["AP"], complete=True)
    with pytest.raises(EvaluationError, match="no relevant judgment .*none >= 1; labels found: 0.*smart"):
        evaluate({"1": {"0": 0}}, {"1": {"a": 1.0}}, ["AP"])
    with pytest.raises(EvaluationError, match="none >= 3"):
        evaluate(qrels, {"1": {"a": 1.0}}, ["AP"], rel=3)
    with pytest.raises(EvaluationError, match="none >= 2"):
        evaluate(qrels, {"1": {"a": 1.0}}, ["P(rel=2)@5"])
    with pytest.raises(EvaluationError, match="none >= 1"):
        evaluate({"1": {"a": 0}}, {"1": {"a": 1.0}}, ["nDCG"])  # graded: a positive label is needed all the same
    assert evaluate(qrels, {"1": {"a": 1.0}}, ["nDCG"], rel=3).mean == {"nDCG": 1.0}  # nDCG has no threshold


def test_numbering_hint_when_qrels_number_queries_by_position() -> None:
    qrels = {str(i): {"a": 1} for i in range(1, 4)}
    run = {"9": {"a": 1.0}, "12": {"a": 1.0}, "30": {"a": 1.0}, "41": {"a": 1.0}}
    with pytest.raises(EvaluationError, match="--query-ids position"):
        evaluate(qrels, run, ["AP"])


def test_trec_eval_lists_beside_measures_that_take_a_list() -> None:
    # a list of cutoffs is several measures; the list parameter of utility, 11pt_avg or a gain map is one
    assert expand_measures(["Rprec_mult.0.2,0.4", "unj"]).names == ("Rprec_mult_0.2", "Rprec_mult_0.4", "unj_5",
                                                                     "unj_10", "unj_20")
    one = ["11pt_avg_.25,.5,.75", "utility_2,-1,-0.5,0", "ndcg.1=3,2=9", "ndcg_cut.5,10"]
    assert expand_measures(one).names == ("11pt_avg_.25,.5,.75", "utility_2,-1,-0.5,0", "ndcg.1=3,2=9",
                                          "ndcg_cut_5", "ndcg_cut_10")
    assert [parse_measure(n).param for n in expand_measures(one).names[:3]] == [
        (0.25, 0.5, 0.75), (2.0, -1.0, -0.5, 0.0), ((1, 3.0), (2, 9.0))]
    # every family of all_trec spelled out with trec_eval 10.0's default parameters, as it prints them
    every = expand_measures("all_trec").names
    assert {"Rprec_mult_0.20", "Rprec_mult_2.00", "unj_20", "relative_P_1000", "rbp_resid", "relstring"} <= set(every)
