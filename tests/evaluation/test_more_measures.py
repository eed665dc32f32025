"""The measures and options issue 18 added, beyond the trec_eval golden files: ROC curves, -M (depth) against
truncating the run, measure names with trec_eval's parameter lists, geometric and text measures in
reports, and what compare and tune refuse."""
from __future__ import annotations

import math

import numpy as np
import pytest

from bm25lab.evaluation import MeasureError, Run, evaluate as strict_evaluate, parse_measure
from bm25lab.evaluation.compare import compare
from bm25lab.evaluation.evaluator import ROC_POINTS, roc_curve, roc_points
from bm25lab.evaluation.report import notes, to_trec
from bm25lab.evaluation.tuning import search_depth

from test_against_trec_eval import adversarial_case


def evaluate(*args, **kwargs):
    """These tests measure edge cases (no shared query, nothing relevant) on purpose: not strict."""
    return strict_evaluate(*args, strict=False, **kwargs)

EVERY = ["P@3", "R@5", "AP", "AP@3", "RR", "nDCG", "nDCG@3", "bpref", "infAP", "11pt-AP", "iprec@0.3", "Rprec",
         "Rprec_mult@1.5", "utility", "relstring", "G", "binG", "ndcg_rel", "Rndcg", "relative_P@3", "set_P",
         "set_relative_P", "set_map", "num_ret", "num_rel_ret", "num_nonrel_judged_ret", "unj@3", "RBP@0.8",
         "RBP_graded", "RBP_resid", "AUC", "Judged@3", "DCG", "IDCG@3", "AP_relret", "AP_hits@3", "RR_max",
         "MAE", "RMSE", "TP", "FP", "FN", "TN", "accuracy", "FPR", "specificity", "gm_map", "ERR@10"]


def test_every_new_measure_runs_on_adversarial_data():
    for seed in range(20):
        qrels, run = adversarial_case(seed)
        for rules in (9, 10):
            result = evaluate(qrels, run, EVERY, complete=bool(seed % 2), trec_eval=rules, collection_size=1000)
            assert set(result.measures) == set(EVERY)


@pytest.mark.parametrize("seed", range(25))
def test_depth_equals_evaluating_the_truncated_run(seed):
    qrels, run = adversarial_case(seed)
    measures = [m for m in EVERY if m != "gm_map"]
    for depth in (1, 3, 7):
        truncated = {q: dict(Run.from_dict({q: r}).ranked(q)[:depth]) for q, r in run.items()}
        for judged_only in (False, True):
            options = dict(collection_size=1000, judged_only=judged_only, missing_ratings="mean")
            assert evaluate(qrels, run, measures, depth=depth, **options).per_query == \
                evaluate(qrels, truncated, measures, **options).per_query


def test_roc_points_are_scikit_learns_and_the_mean_curve_averages_them():
    from sklearn.metrics import roc_auc_score
    from sklearn.metrics import roc_curve as sk_roc_curve

    labels = np.array([0, 1, 1, 0, 1, 0, 0, 1, 1, 0], dtype=bool)
    scores = np.array([0.9, 0.8, 0.5, 0.4, 0.8, 0.2, 0.1, 0.9, 0.3, 0.0])
    fpr, tpr = roc_points(labels, scores)
    sk_fpr, sk_tpr, _ = sk_roc_curve(labels, scores, drop_intermediate=False)
    assert fpr.tolist() == pytest.approx(sk_fpr.tolist()) and tpr.tolist() == pytest.approx(sk_tpr.tolist())
    # one query with 5 judged non-relevant documents: every corner of its curve is on the grid, so the
    # trapezoids under the grid curve are its AUC up to the vertical steps' width (0.01 each)
    qrels = {"q": {f"d{i}": int(y) for i, y in enumerate(labels)}}
    run = {"q": {f"d{i}": float(s) for i, s in enumerate(scores)}}
    curve = roc_curve(qrels, run)
    assert list(curve) == list(ROC_POINTS) and curve[0.0] == 0.0 and curve[1.0] == 1.0
    # half-way along the diagonal of the tie d0 (0) / d7 (1) at 0.9; at FPR 0.2 the top of the rise that follows
    assert curve[0.1] == pytest.approx(0.1) and curve[0.2] == pytest.approx(0.8)
    area = float(np.trapezoid(list(curve.values()), list(curve)))
    assert area == pytest.approx(roc_auc_score(labels, scores), abs=0.01)
    # two queries: the mean of their curves, point by point
    both = roc_curve({**qrels, "p": {"a": 1, "b": 0}}, {**run, "p": {"a": 1.0, "b": 2.0}})
    alone = roc_curve({"p": {"a": 1, "b": 0}}, {"p": {"a": 1.0, "b": 2.0}})
    assert all(both[x] == pytest.approx((curve[x] + alone[x]) / 2) for x in ROC_POINTS)


def test_names_with_trec_evals_parameter_lists():
    utility = parse_measure("utility_2,-1,0,0")
    assert utility.definition.name == "utility" and utility.param == (2.0, -1.0, 0.0, 0.0)
    assert utility.trec_eval_name == "utility_2,-1,0,0" and parse_measure("utility").param == (1.0, -1.0, 0.0, 0.0)
    gains = parse_measure("ndcg_1=3,2=9,4=4.5")
    assert gains.definition.name == "nDCG" and gains.param == ((1, 3.0), (2, 9.0), (4, 4.5))
    assert gains.trec_eval_name == "ndcg_1=3,2=9,4=4.5" and parse_measure("ndcg_cut_10").param == 10
    assert parse_measure("11pt_avg_.25,.5,.75").param == (0.25, 0.5, 0.75)
    assert parse_measure("Rprec_mult_0.20").trec_eval_name == "Rprec_mult_0.20"
    assert parse_measure("relstring_20").param == 20 and parse_measure("relstring").param is None
    assert parse_measure("RBP_graded").trec_eval_name == "rbp"
    # issue 17: rbp alone is ir_measures' RBP with its default persistence 0.8 (it used to need a parameter)
    assert parse_measure("rbp").definition.name == "RBP" and parse_measure("rbp").param == 0.8
    for bad, message in [("ndcg_1=2=3", "gain map"), ("ndcg_1=2,1=3", "twice"), ("utility_1,2", "four finite weights"),
                         ("Rprec_mult@0", "positive"), ("11pt_avg_.5,.25", "ascending"), ("ndcg_cut_23.4", "positive integer")]:
        with pytest.raises(MeasureError, match=message):
            parse_measure(bad)


def test_geometric_means_and_text_values_in_results_and_reports():
    qrels = {"1": {"a": 1, "b": 0}, "2": {"c": 1, "d": 0}, "3": {"e": 1}}
    run = {"1": {"a": 2.0, "b": 1.0}, "2": {"d": 2.0, "c": 1.0}}
    for rules in (9, 10):
        result = evaluate(qrels, run, ["AP", "gm_map", "relstring"], complete=True, trec_eval=rules)
        assert result.per_query["1"]["gm_map"] == 1.0 and result.per_query["2"]["gm_map"] == 0.5
        expected = math.exp((math.log(1.0) + math.log(0.5) + math.log(0.00001)) / 3)  # query 3 scores 0: floored
        assert result.mean["gm_map"] == pytest.approx(expected, rel=1e-12) and math.isnan(result.mean["relstring"])
        text = to_trec(result, per_query=True).splitlines()
        assert f"{'relstring':<22}\t2\t'01'" in text and not any(line.startswith("gm_map ") and "\tall\t" not in line
                                                                 for line in text)
        assert f"{'gm_map':<22}\tall\t{expected:.4f}" in text and not any("relstring" in line and "\tall\t" in line
                                                                         for line in text)
        # 9.0.8 prints no line for a query missing from the run; 10.0 prints its stand-in's
        assert any(line.startswith("AP ") and "\t3\t" in line for line in text) == (rules == 10)
        assert any("geometric mean" in line for line in notes(result))


def test_text_measures_are_refused_by_compare_and_tune():
    with pytest.raises(MeasureError, match="gives text"):
        compare({"q": {"relstring": "10"}}, {"r": {"q": {"relstring": "01"}}}, ["relstring"])
    with pytest.raises(MeasureError, match="gives text"):
        search_depth("relstring@5", 100)


def test_options_are_checked():
    for options, message in [({"depth": 0}, "depth"), ({"collection_size": -1}, "collection_size"),
                             ({"depth": 2.5}, "depth"), ({"trec_eval": "x"}, "rule set")]:
        with pytest.raises(MeasureError, match=message):
            evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["AP"], **options)
