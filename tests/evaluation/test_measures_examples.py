"""The worked examples of docs/measures.md ("Worked examples from the articles"), each exact to 1e-9.

Every ranking is written as a run of scores (rank i gets score 10 - i unless said otherwise) and
a qrels dict; the relevance at each rank is spelled out in a comment.
"""
from __future__ import annotations

import math

import pytest

from bm25lab.evaluation import MeasureError, evaluate as strict_evaluate, parse_measure


def evaluate(*args, **kwargs):
    """These tests measure edge cases (no shared query, nothing relevant) on purpose: not strict."""
    return strict_evaluate(*args, strict=False, **kwargs)

EXACT = 1e-9


def ranked(qid: str, labels: list[int], total_relevant: int | None = None) -> tuple[dict, dict]:
    """A query whose documents d1..dn are ranked 1..n with these labels; extra unretrieved relevant
    documents are added to the qrels until R = total_relevant."""
    run = {qid: {f"d{i}": float(100 - i) for i in range(1, len(labels) + 1)}}
    qrels = {qid: {f"d{i}": label for i, label in enumerate(labels, 1)}}
    missing = (total_relevant or 0) - sum(1 for label in labels if label >= 1)
    for j in range(missing):
        qrels[qid][f"unretrieved{j}"] = 1
    return qrels, run


def values(qrels: dict, run: dict, measures: list[str]) -> dict[str, float]:
    result = evaluate(qrels, run, measures)
    assert result.num_queries == 1
    return next(iter(result.per_query.values()))


def test_seed000_binary_example_precision_recall_f1_rr_ap():
    # ranks 1..5: relevant, non-relevant, relevant, non-relevant, relevant; R = 3
    qrels, run = ranked("q", [1, 0, 1, 0, 1])
    names = [f"{m}@{k}" for m in ("P", "R", "F1") for k in range(1, 6)] + ["RR", "AP"]
    got = values(qrels, run, names)
    expected = {
        "P": [1, 0.5, 2 / 3, 0.5, 0.6],
        "R": [1 / 3, 1 / 3, 2 / 3, 2 / 3, 1.0],
        "F1": [0.5, 0.4, 2 / 3, 4 / 7, 0.75],
    }
    for measure, figures in expected.items():
        for k, figure in enumerate(figures, 1):
            assert got[f"{measure}@{k}"] == pytest.approx(figure, abs=EXACT)
    assert got["RR"] == 1.0
    assert got["AP"] == pytest.approx((1 + 2 / 3 + 3 / 5) / 3, abs=EXACT)
    assert round(got["AP"], 4) == 0.7556
    assert round(got["F1@4"], 4) == 0.5714


def test_seed000_reciprocal_rank_at_rank_five_and_none():
    # ranks 1..5: non-relevant x4, then relevant -> RR = 1/5
    qrels, run = ranked("q", [0, 0, 0, 0, 1])
    assert values(qrels, run, ["RR"])["RR"] == pytest.approx(0.2, abs=EXACT)
    # ranks 1..5: all non-relevant -> RR = 0
    qrels, run = ranked("q", [0, 0, 0, 0, 0])
    assert values(qrels, run, ["RR"])["RR"] == 0.0


def test_seed004_map_over_two_topics():
    # topic 1: relevant at ranks 1, 2, 4, 7 of 7 (R = 4)
    qrels1, run1 = ranked("t1", [1, 1, 0, 1, 0, 0, 1])
    # topic 2: R = 5, relevant retrieved at ranks 1, 3, 5 of 5; two relevant never retrieved
    qrels2, run2 = ranked("t2", [1, 0, 1, 0, 1], total_relevant=5)
    result = evaluate({**qrels1, **qrels2}, {**run1, **run2}, ["AP", "MAP"])
    ap1 = (1 + 2 / 2 + 3 / 4 + 4 / 7) / 4
    ap2 = (1 + 2 / 3 + 3 / 5) / 5
    assert result.per_query["t1"]["AP"] == pytest.approx(ap1, abs=EXACT)
    assert result.per_query["t2"]["AP"] == pytest.approx(ap2, abs=EXACT)
    assert (round(ap1, 4), round(ap2, 4)) == (0.8304, 0.4533)
    assert result.mean["MAP"] == pytest.approx((ap1 + ap2) / 2, abs=EXACT)
    assert round(result.mean["MAP"], 4) == 0.6418


def test_seed001_average_precision_divides_by_all_relevant():
    # relevant at ranks 1, 2, 5, 10, 20 of 20; R = 6 (one relevant document never retrieved)
    labels = [0] * 20
    for rank in (1, 2, 5, 10, 20):
        labels[rank - 1] = 1
    qrels, run = ranked("q", labels, total_relevant=6)
    got = values(qrels, run, ["AP", "AP@20", "AP@5"])
    assert got["AP"] == pytest.approx(3.25 / 6, abs=EXACT)
    assert round(got["AP"], 4) == 0.5417
    assert got["AP@20"] == pytest.approx(3.25 / 6, abs=EXACT)
    # AP@5 keeps dividing by R = 6: (1 + 1 + 3/5) / 6
    assert got["AP@5"] == pytest.approx(2.6 / 6, abs=EXACT)
    # the article's "interpolated AP" (dividing by the 5 retrieved relevant, 0.65) is not trec_eval's
    assert got["AP"] != pytest.approx(0.65, abs=1e-3)


def test_seed001_dcg_ndcg_correct_figures_not_the_article_slips():
    # judgments d1=0, d2=1, d3=2, d4=2; ranking d3, d2, d4, d1 -> labels by rank: 2, 1, 2, 0
    qrels = {"q": {"d1": 0, "d2": 1, "d3": 2, "d4": 2}}
    run = {"q": {"d3": 4.0, "d2": 3.0, "d4": 2.0, "d1": 1.0}}
    got = values(qrels, run, ["DCG@4", "nDCG@4", "nDCG", "DCG_exp@4", "nDCG_exp@4", "CG@4"])
    dcg = 2 / 1 + 1 / 1.584962500721156 + 2 / 2 + 0
    idcg = 2 / 1 + 2 / 1.584962500721156 + 1 / 2
    assert got["DCG@4"] == pytest.approx(dcg, abs=EXACT)
    assert round(got["DCG@4"], 4) == 3.6309
    assert got["nDCG@4"] == pytest.approx(dcg / idcg, abs=EXACT)
    assert round(idcg, 4) == 3.7619 and round(got["nDCG@4"], 4) == 0.9652
    assert got["nDCG"] == pytest.approx(got["nDCG@4"], abs=EXACT)
    # exponential gain 2^rel - 1: gains 3, 1, 3, 0; ideal 3, 3, 1, 0
    assert round(got["DCG_exp@4"], 4) == 5.1309
    assert round(got["nDCG_exp@4"], 4) == round(5.1309 / 5.3928, 4) == 0.9514
    assert got["CG@4"] == 5.0
    # the article's slips
    assert round(got["DCG@4"], 3) != 4.584 and round(got["nDCG@4"], 3) != 0.639


def test_seed003_hits_at_k_over_two_positives():
    # test positive 1 ranks 2nd among its candidates: ranks 1..5 = non-relevant, relevant, non x3
    qrels1, run1 = ranked("t1", [0, 1, 0, 0, 0])
    # test positive 2 ranks 1st: ranks 1..5 = relevant, non-relevant x4
    qrels2, run2 = ranked("t2", [1, 0, 0, 0, 0])
    result = evaluate({**qrels1, **qrels2}, {**run1, **run2}, ["Hits@1", "Hits@3", "Success@1"])
    assert result.mean["Hits@1"] == 0.5
    assert result.mean["Hits@3"] == 1.0
    assert result.mean["Success@1"] == 0.5


def test_seed000_code_example_ap_and_roc_auc():
    # labels by rank 1..10 (scores 0.9 .. 0.0 descending): 1, 0, 1, 1, 0, 0, 1, 1, 0, 0
    labels = [1, 0, 1, 1, 0, 0, 1, 1, 0, 0]
    scores = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.0]
    qrels = {"q": {f"d{i}": y for i, y in enumerate(labels)}}
    run = {"q": {f"d{i}": s for i, s in enumerate(scores)}}
    got = values(qrels, run, ["AP", "AUC"])
    assert got["AP"] == pytest.approx((1 + 2 / 3 + 3 / 4 + 4 / 7 + 5 / 8) / 5, abs=EXACT)
    assert round(got["AP"], 4) == 0.7226
    assert got["AUC"] == pytest.approx(0.68, abs=EXACT)


def test_seed000_tied_scores_follow_trec_evals_tie_rule():
    # labels 0,1,1,0,1,0,0,1,1,0 with scores 0.9,0.8,0.5,0.4,0.8,0.2,0.1,0.9,0.3,0.0 (d0..d9):
    # 0.9 ties d0 (0) and d7 (1) -> docid descending puts d7 first; 0.8 ties d1 (1), d4 (1) -> d4, d1.
    # labels by rank: 1 (d7), 0 (d0), 1 (d4), 1 (d1), 1 (d2), 0 (d3), 1 (d8), 0, 0, 0
    labels = [0, 1, 1, 0, 1, 0, 0, 1, 1, 0]
    scores = [0.9, 0.8, 0.5, 0.4, 0.8, 0.2, 0.1, 0.9, 0.3, 0.0]
    qrels = {"q": {f"d{i}": y for i, y in enumerate(labels)}}
    run = {"q": {f"d{i}": s for i, s in enumerate(scores)}}
    ap = values(qrels, run, ["AP"])["AP"]
    assert ap == pytest.approx((1 + 2 / 3 + 3 / 4 + 4 / 5 + 5 / 7) / 5, abs=EXACT)
    # the article's own code (Python's stable sort keeps input order: d0 before d7) gives 0.6862;
    # scikit-learn (tied scores as one block) 0.7029: neither is trec_eval's rule
    assert round(ap, 4) not in (0.6862, 0.7029)
    # AUC is not a rank measure: a tie in score counts 1/2, as scikit-learn's roc_auc_score on the raw
    # scores (0.78); breaking the ties by the ranking's document-id rule would give 0.80
    from sklearn.metrics import roc_auc_score

    auc = values(qrels, run, ["AUC"])["AUC"]
    assert auc == pytest.approx(roc_auc_score(labels, scores), abs=EXACT) and round(auc, 4) == 0.78


def test_seed002_ndcg_is_zero_without_relevant_and_short_lists_pad():
    # ranks 1..3 all judged non-relevant: ideal DCG is 0, so nDCG is 0 (not NaN)
    qrels, run = ranked("q", [0, 0, 0])
    got = values(qrels, run, ["nDCG@10", "nDCG", "P@10"])
    assert got == {"nDCG@10": 0.0, "nDCG": 0.0, "P@10": 0.0}
    # ranks 1..2: relevant (2), relevant (1); list shorter than k = 10 is padded with non-relevant
    qrels, run = ranked("q", [2, 1])
    got = values(qrels, run, ["nDCG@10", "P@10", "P@2"])
    assert got["nDCG@10"] == 1.0
    assert got["P@10"] == pytest.approx(0.2, abs=EXACT)
    assert got["P@2"] == 1.0


def test_measure_names_aliases_and_errors():
    # the names in results are kept as written, aliases included; trec_eval's ndcg_cut.3 is named as trec_eval
    # prints it (ndcg_cut_3), as its lists are (P.5,10: P_5, P_10)
    qrels, run = ranked("q", [1, 0, 1])
    result = evaluate(qrels, run, ["MAP", "AP", "MRR", "NDCG@3", "nDCG@3", "precision@2", "recall@2", "P_2", "ndcg_cut.3"])
    row = result.per_query["q"]
    assert list(row) == ["MAP", "AP", "MRR", "NDCG@3", "nDCG@3", "precision@2", "recall@2", "P_2", "ndcg_cut_3"]
    assert row["MAP"] == row["AP"] and row["NDCG@3"] == row["nDCG@3"] == row["ndcg_cut_3"]
    assert row["precision@2"] == row["P_2"] == 0.5
    with pytest.raises(MeasureError, match="unknown measure 'XYZ@3' .*P@10.*nDCG"):
        parse_measure("XYZ@3")
    with pytest.raises(MeasureError, match="needs a parameter"):
        parse_measure("P")
    with pytest.raises(MeasureError, match="positive integer"):
        parse_measure("P@0")
    with pytest.raises(MeasureError, match="takes no parameter"):
        parse_measure("bpref@5")
    with pytest.raises(MeasureError, match="r must be between 0 and 1"):
        parse_measure("iprec@1.5")
    assert parse_measure("iprec_at_recall_0.50").param == 0.5
    assert parse_measure("11pt_avg").definition.name == "11pt-AP"
    names = {m: parse_measure(m).trec_eval_name for m in ("RR", "RR@10", "AP@5", "bpref", "nDCG", "F1@3")}
    assert names == {"RR": "recip_rank", "RR@10": None, "AP@5": "map_cut_5", "bpref": "bpref", "nDCG": "ndcg", "F1@3": None}


def test_additions_beyond_trec_eval_judged_rbp():
    # ranks 1..4: relevant, unjudged, judged non-relevant, relevant; one more relevant never retrieved
    qrels = {"q": {"d1": 1, "d3": 0, "d4": 2, "gone": 1}}
    run = {"q": {"d1": 4.0, "d2": 3.0, "d3": 2.0, "d4": 1.0}}
    got = values(qrels, run, ["Judged@2", "Judged@4", "Judged@10", "RBP@0.5", "RBP@0.8", "set_P", "set_R", "set_F1"])
    # ir_measures' Judged@k: a ranking of 4 documents divides by 4, not by the cutoff 10
    assert got["Judged@2"] == 0.5 and got["Judged@4"] == 0.75 and got["Judged@10"] == 0.75
    assert got["RBP@0.5"] == pytest.approx(0.5 * (1 + 0.5**3), abs=EXACT)
    assert got["RBP@0.8"] == pytest.approx(0.2 * (1 + 0.8**3), abs=EXACT)
    assert (got["set_P"], got["set_R"]) == (0.5, pytest.approx(2 / 3))
    assert got["set_F1"] == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3), abs=EXACT)


# ---------------------------------------------------------------------------------------------
# The articles' further definitions (issue 18)


def test_seed002_mae_and_rmse_of_a_rating_of_four_and_a_half():
    # one user rated two items 4.5; the predicted ratings (run scores) are 1.2 and 4.3: errors 3.3, 0.2
    qrels = {"u": {"i1": 4.5, "i2": 4.5}}
    run = {"u": {"i1": 1.2, "i2": 4.3}}
    got = values(qrels, run, ["MAE", "RMSE"])
    assert got["MAE"] == pytest.approx((3.3 + 0.2) / 2, abs=EXACT) and round(got["MAE"], 4) == 1.75
    assert got["RMSE"] == pytest.approx(((3.3**2 + 0.2**2) / 2) ** 0.5, abs=EXACT) and round(got["RMSE"], 4) == 2.3377
    # each item on its own: the distances the article names
    assert values({"u": {"i1": 4.5}}, {"u": {"i1": 1.2}}, ["MAE"])["MAE"] == pytest.approx(3.3, abs=EXACT)
    assert values({"u": {"i2": 4.5}}, {"u": {"i2": 4.3}}, ["MAE"])["MAE"] == pytest.approx(0.2, abs=EXACT)


def test_seed002_missing_ratings_skip_mean_median_zero():
    # the user rated i1 = 5, i2 = 1, i4 = 1.5 (mean 2.5, median 1.5); the run predicts i1 4, i2 1 and
    # i3 3, which the user did not rate
    qrels = {"u": {"i1": 5, "i2": 1, "i4": 1.5}}
    run = {"u": {"i1": 4.0, "i2": 1.0, "i3": 3.0}}
    errors = {"skip": [1, 0], "mean": [1, 0, 0.5], "median": [1, 0, 1.5], "zero": [1, 0, 3]}
    for choice, expected in errors.items():
        result = evaluate(qrels, run, ["MAE", "RMSE"], missing_ratings=choice).per_query["u"]
        assert result["MAE"] == pytest.approx(sum(expected) / len(expected), abs=EXACT), choice
        assert result["RMSE"] == pytest.approx((sum(e * e for e in expected) / len(expected)) ** 0.5, abs=EXACT)
    with pytest.raises(MeasureError, match="missing_ratings.*skip, mean, median, zero"):
        evaluate(qrels, run, ["MAE"], missing_ratings="guess")
    # a user without a rated item retrieved has no MAE: left out of the mean, and said so
    result = evaluate({"u": {"i1": 5}, "v": {"x": 2}}, {"u": {"i1": 4.0}, "v": {"y": 1.0}}, ["MAE"])
    assert result.undefined == {"MAE": ("v",)} and result.mean["MAE"] == 1.0


def test_fractional_grades_are_kept_for_every_measure():
    # grades 0.5 and 2.7 stay 0.5 and 2.7 (issue 32; trec_eval's atol would read 0 and 2): at rel 1 d1 is
    # not relevant and d2 is; the gains are the grades, d1 at rank 1 and d2 at rank 2
    qrels = {"q": {"d1": 0.5, "d2": 2.7}}
    run = {"q": {"d1": 2.0, "d2": 1.0}}
    got = values(qrels, run, ["P@1", "RR", "DCG", "MAE", "P(rel=0.5)@1", "RR(rel=2.7)", "RR(rel=2.71)"])
    assert got["P@1"] == 0.0 and got["RR"] == 0.5
    assert got["DCG"] == pytest.approx(0.5 + 2.7 / math.log2(3), abs=EXACT)
    assert got["MAE"] == pytest.approx((1.5 + 1.7) / 2, abs=EXACT)
    assert got["P(rel=0.5)@1"] == 1.0 and got["RR(rel=2.7)"] == 0.5 and got["RR(rel=2.71)"] == 0.0


def test_seed001_confusion_counts_accuracy_and_false_positive_rate():
    # 10 documents d1..d10; d1-d4 relevant; the system retrieved d3-d7:
    # TP = {d3, d4}, FP = {d5, d6, d7}, FN = {d1, d2}, TN = {d8, d9, d10}
    qrels = {"q": {f"d{i}": int(i <= 4) for i in range(1, 11)}}
    run = {"q": {f"d{i}": 10.0 - i for i in range(3, 8)}}
    names = ["TP", "FP", "FN", "TN", "accuracy", "FPR", "specificity", "set_P", "set_R", "TPR"]
    got = evaluate(qrels, run, names, collection_size=10).per_query["q"]
    assert [got[n] for n in names] == [2, 3, 2, 3, 0.5, 0.5, 0.5, 0.4, 0.5, 0.5]
    # the article's accuracy formula (TP + FN) / all would give 0.4: a slip for (TP + TN) / all
    assert (got["TP"] + got["FN"]) / 10 == 0.4 != got["accuracy"]
    with pytest.raises(MeasureError, match="TN needs the number of documents in the collection"):
        evaluate(qrels, run, ["TN"])
    with pytest.raises(MeasureError, match="collection size 6 is smaller"):
        evaluate(qrels, run, ["accuracy"], collection_size=6)


def test_seed001_ideal_dcg_as_a_measure():
    # judgments d1 = 0, d2 = 1, d3 = 2, d4 = 2; ideal order 2, 2, 1, 0 -> 2/1 + 2/log2(3) + 1/2 = 3.7619
    qrels = {"q": {"d1": 0, "d2": 1, "d3": 2, "d4": 2}}
    run = {"q": {"d3": 4.0, "d2": 3.0, "d4": 2.0, "d1": 1.0}}
    got = values(qrels, run, ["IDCG", "IDCG@2", "IDCG_exp", "DCG", "nDCG"])
    assert got["IDCG"] == pytest.approx(2 + 2 / math.log2(3) + 1 / 2, abs=EXACT) and round(got["IDCG"], 4) == 3.7619
    assert got["IDCG@2"] == pytest.approx(2 + 2 / math.log2(3), abs=EXACT)
    assert round(got["IDCG_exp"], 4) == 5.3928  # the article prints IDCG 7.170: a slip
    assert got["nDCG"] == pytest.approx(got["DCG"] / got["IDCG"], abs=EXACT)
    assert parse_measure("IDCG").trec_eval_name == "ideal_dcg" and parse_measure("DCG").trec_eval_name == "dcg"


def test_seed001_ap_over_the_retrieved_relevant_is_its_own_measure():
    # 6 relevant; retrieved at ranks 1, 2, 5, 10, 20: AP = 3.25 / 6, the article's variant 3.25 / 5
    qrels, run = ranked("q", [1 if i in (1, 2, 5, 10, 20) else 0 for i in range(1, 21)], total_relevant=6)
    got = values(qrels, run, ["AP", "AP_relret"])
    assert got["AP"] == pytest.approx(3.25 / 6, abs=EXACT) and got["AP_relret"] == pytest.approx(0.65, abs=EXACT)
    assert parse_measure("AP_relret").trec_eval_name is None


def test_seed002_code_ap_at_k_divides_by_the_hits_so_far():
    import numpy as np

    # the article's code: np.cumsum(tp_cumsum * true_positive / val_counter) / tp_cumsum, at every k
    labels = [0, 1, 1, 0, 1, 0, 0, 0, 1, 1]
    true_positive = np.array(labels, dtype=float)
    tp_cumsum = np.cumsum(true_positive)
    val_counter = np.cumsum(np.ones(len(true_positive)))
    with np.errstate(invalid="ignore"):
        article = np.cumsum(tp_cumsum * true_positive / val_counter) / tp_cumsum
    qrels, run = ranked("q", labels)
    got = values(qrels, run, [f"AP_hits@{k}" for k in range(1, 11)] + ["AP@5"])
    for k in range(1, 11):
        expected = 0.0 if np.isnan(article[k - 1]) else article[k - 1]  # 0/0 before the first hit: 0
        assert got[f"AP_hits@{k}"] == pytest.approx(expected, abs=EXACT)
    assert got["AP_hits@5"] != got["AP@5"]  # trec_eval's map_cut_5 divides by R = 5


def test_seed003_rr_of_the_most_relevant_document():
    # ranks 1..4 with grades 1, 0, 3, 2: the most relevant (3) is at rank 3; RR counts the first relevant
    qrels, run = ranked("q", [1, 0, 3, 2])
    got = values(qrels, run, ["RR", "RR_max", "RR_max@2"])
    assert got == {"RR": 1.0, "RR_max": pytest.approx(1 / 3, abs=EXACT), "RR_max@2": 0.0}
    # no relevant document at all: 0
    assert values(*ranked("q", [0, 0]), ["RR_max"])["RR_max"] == 0.0


def test_seed003_link_prediction_from_one_rank_per_positive():
    from bm25lab.evaluation.linkprediction import link_prediction

    # two test positives ranked 2nd and 1st against their corrupted candidates
    result = link_prediction([2, 1])
    assert result.as_dict() == {"MR": 1.5, "MRR": 0.75, "Hits@1": 0.5, "Hits@3": 1.0, "Hits@10": 1.0}
    assert link_prediction([2.5, 1, 11], ks=[1, 10]).hits == {1: pytest.approx(1 / 3), 10: pytest.approx(2 / 3)}


def test_trec_eval_10_rounds_recall_levels_where_9_adds_0_9():
    # relevant, non-relevant, relevant, non-relevant, relevant; R = 3
    qrels, run = ranked("q", [1, 0, 1, 0, 1])
    nine = evaluate(qrels, run, ["11pt-AP", "iprec@0.5"], trec_eval=9).per_query["q"]
    ten = evaluate(qrels, run, ["11pt-AP", "iprec@0.5"], trec_eval=10).per_query["q"]
    assert round(nine["11pt-AP"], 4) == 0.7697 and round(ten["11pt-AP"], 4) == 0.8061
    # recall 0.5 of R = 3: (long)(1.5 + 0.9) = 2 relevant documents in 9.0.8, lround(1.5) = 2 in 10.0
    assert nine["iprec@0.5"] == ten["iprec@0.5"] == pytest.approx(2 / 3, abs=EXACT)
    with pytest.raises(MeasureError, match="trec_eval rule set 8.*9, 10"):
        evaluate(qrels, run, ["AP"], trec_eval=8)
