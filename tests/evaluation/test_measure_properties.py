"""Properties every run must satisfy (hypothesis): bounds, integrality, the ideal ranking, AP's tail."""
from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from bm25lab.evaluation import MEASURES, evaluate as strict_evaluate


def evaluate(*args, **kwargs):
    """These tests measure edge cases (no shared query, nothing relevant) on purpose: not strict."""
    return strict_evaluate(*args, strict=False, **kwargs)

BOUNDED = [
    "P@1", "P@3", "P@10", "R@3", "R@10", "F1@3", "RR", "RR@3", "AP", "AP@3", "Rprec", "bpref", "Success@3",
    "iprec@0.0", "iprec@0.3", "iprec@1.0", "11pt-AP", "nDCG", "nDCG@3", "nDCG@10", "nDCG_exp", "nDCG_exp@3", "AUC",
    "set_P", "set_R", "set_F1", "Judged@3", "RBP@0.8",
    "relative_P@3", "set_relative_P", "set_map", "binG", "unj@3", "Rprec_mult@1.5", "AP_relret", "AP_hits@3",
    "RR_max", "RBP_graded@0.8", "ERR", "ERR@3",
]

doc_ids = st.text(alphabet="abcAB01é", min_size=1, max_size=3)
labels = st.integers(min_value=-2, max_value=4)
scores = st.one_of(st.sampled_from([0.0, 0.5, 1.0]), st.floats(-1e6, 1e6, allow_nan=False))


@st.composite
def collections(draw) -> tuple[dict, dict]:
    """Qrels and a run over a few queries, with ties, unjudged and negatively judged documents."""
    qrels, run = {}, {}
    for q in range(draw(st.integers(1, 4))):
        qid = f"q{q}"
        judged = draw(st.dictionaries(doc_ids, labels, min_size=1, max_size=8))
        qrels[qid] = judged
        pool = sorted(set(judged) | set(draw(st.lists(doc_ids, max_size=6))))
        chosen = draw(st.lists(st.sampled_from(pool), unique=True, max_size=len(pool)))
        run[qid] = {doc: draw(scores) for doc in chosen}
    return qrels, run


@settings(max_examples=100, deadline=None)
@given(collections(), st.integers(1, 3), st.booleans(), st.booleans())
def test_bounded_measures_stay_in_unit_interval(data, rel, complete, judged_only):
    qrels, run = data
    result = evaluate(qrels, run, BOUNDED, rel=rel, complete=complete, judged_only=judged_only)
    for values in result.per_query.values():
        for name, value in values.items():
            assert 0.0 <= value <= 1.0, (name, value)
    assert set(result.undefined) <= {"AUC"}
    for name in BOUNDED:
        assert MEASURES[name.split("@")[0]].bounded


@settings(max_examples=80, deadline=None)
@given(collections(), st.integers(1, 3))
def test_precision_times_k_is_a_whole_number_of_documents(data, rel):
    qrels, run = data
    cutoffs = (1, 2, 3, 5, 10)
    result = evaluate(qrels, run, [f"P@{k}" for k in cutoffs] + ["num_rel_ret"], rel=rel)
    for values in result.per_query.values():
        for k in cutoffs:
            found = values[f"P@{k}"] * k
            assert abs(found - round(found)) < 1e-12
            assert round(found) <= min(k, values["num_rel_ret"])


@settings(max_examples=80, deadline=None)
@given(st.dictionaries(doc_ids, labels, min_size=1, max_size=12), st.integers(1, 20))
def test_the_ideal_ranking_has_ndcg_one(judged, k):
    # rank every judged document by its label: the ideal ranking
    run = {"q": {doc: float(label) for doc, label in judged.items()}}
    result = evaluate({"q": judged}, run, ["nDCG", f"nDCG@{k}", f"nDCG_exp@{k}"])
    expected = 1.0 if max(judged.values()) > 0 else 0.0
    assert result.per_query["q"] == {"nDCG": expected, f"nDCG@{k}": expected, f"nDCG_exp@{k}": expected}


@settings(max_examples=80, deadline=None)
@given(collections(), st.integers(1, 3), st.lists(st.sampled_from([None, -1, 0]), min_size=1, max_size=6))
def test_non_relevant_documents_after_the_last_relevant_leave_ap_unchanged(data, rel, tail):
    qrels, run = data
    before = evaluate(qrels, run, ["AP", "RR"], rel=rel)
    longer = {qid: dict(ranked) for qid, ranked in run.items()}
    for qid, ranked in longer.items():
        floor = min(ranked.values(), default=0.0)
        for i, label in enumerate(tail):  # unjudged, unjudged-in-pool or judged non-relevant, ranked last
            doc = f"tail{i}"
            ranked[doc] = floor - 1.0 - i
            if label is not None:
                qrels[qid][doc] = label
    after = evaluate(qrels, longer, ["AP", "RR"], rel=rel)
    for qid, values in before.per_query.items():
        assert after.per_query[qid]["AP"] == values["AP"]
        assert after.per_query[qid]["RR"] == values["RR"]


@settings(max_examples=40, deadline=None)
@given(collections())
def test_means_are_means_of_the_per_query_values(data):
    qrels, run = data
    result = evaluate(qrels, run, ["AP", "AUC", "num_ret"], complete=True)
    for name in ("AP", "AUC", "num_ret"):
        values = [v[name] for v in result.per_query.values() if name in v]
        if values and name == "num_ret":  # a count's run-level figure is its sum (trec_eval's all line)
            assert result.mean[name] == math.fsum(values)
        elif values:
            assert math.isclose(result.mean[name], sum(values) / len(values), abs_tol=1e-12)
        else:
            assert math.isnan(result.mean[name])
    assert result.summary["num_ret"] == sum(v["num_ret"] for v in result.per_query.values())
