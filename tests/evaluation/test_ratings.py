"""Article 002's last items: nDCG with imputed ratings (missing_ratings applies to the graded measures),
fractional relevance thresholds with fractional grades kept, and pooled MAE/RMSE beside the per-user mean
(scikit-learn as the oracle)."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from sklearn.metrics import mean_absolute_error, mean_squared_error
from typer.testing import CliRunner

from bm25lab.cli import app
from bm25lab.evaluation import evaluate

EXACT = 1e-12
# user u rated a 5, b 3, c 1 (mean 3, median 3); user v rated a 2, x 4.5 (mean 3.25, median 3.25)
QRELS = {"u": {"a": 5, "b": 3, "c": 1}, "v": {"a": 2, "x": 4.5}}
# u's list: a, b, then d (unrated); v's list: y (unrated), x, a
RUN = {"u": {"a": 4.5, "b": 3.5, "d": 2.0}, "v": {"y": 3.0, "x": 2.5, "a": 1.0}}


def _dcg(gains):
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


@pytest.mark.parametrize("how, fill_u, fill_v", [("mean", 3.0, 3.25), ("median", 3.0, 3.25)])
def test_imputed_ratings_enter_dcg_and_the_ideal_ranking(how, fill_u, fill_v):
    got = evaluate(QRELS, RUN, ["nDCG", "DCG", "IDCG", "CG", "nDCG@2", "P@3"], missing_ratings=how).per_query
    # u: a 5, b 3, d imputed 3; ideal over 5, 3, 3 (d), 1
    assert got["u"]["DCG"] == pytest.approx(_dcg([5, 3, fill_u]), abs=EXACT)
    assert got["u"]["IDCG"] == pytest.approx(_dcg(sorted([5, 3, 1, fill_u], reverse=True)), abs=EXACT)
    assert got["u"]["nDCG"] == pytest.approx(_dcg([5, 3, fill_u]) / _dcg([5, 3, fill_u, 1]), abs=EXACT)
    # v: y imputed 3.25 at rank 1, x 4.5, a 2 (a fractional grade kept as 4.5)
    assert got["v"]["DCG"] == pytest.approx(_dcg([fill_v, 4.5, 2]), abs=EXACT)
    assert got["v"]["nDCG@2"] == pytest.approx(_dcg([fill_v, 4.5]) / _dcg([4.5, fill_v]), abs=EXACT)
    assert got["v"]["CG"] == pytest.approx(fill_v + 4.5 + 2, abs=EXACT)
    assert all(0 <= v["nDCG"] <= 1 for v in got.values())
    # the binary measures never impute: P@3 counts the rated relevant documents only
    assert got["u"]["P@3"] == pytest.approx(3 / 3 - 1 / 3, abs=EXACT) and got["v"]["P@3"] == pytest.approx(2 / 3)


def test_skip_and_zero_leave_the_graded_measures_as_trec_eval_has_them():
    plain = evaluate(QRELS, RUN, ["nDCG", "DCG"]).per_query
    assert plain["u"]["DCG"] == pytest.approx(_dcg([5, 3, 0]), abs=EXACT)
    for how in ("skip", "zero"):
        assert evaluate(QRELS, RUN, ["nDCG", "DCG"], missing_ratings=how).per_query == plain
    # judged_only removes the unrated documents before ranking: nothing is left to impute
    assert evaluate(QRELS, RUN, ["nDCG"], judged_only=True, missing_ratings="mean").per_query == \
        evaluate(QRELS, RUN, ["nDCG"], judged_only=True).per_query


@pytest.mark.parametrize("how", ["skip", "zero", "mean", "median"])
def test_pooled_mae_and_rmse_equal_scikit_learn(how):
    rng = np.random.default_rng(3)
    qrels = {f"u{i}": {f"i{j}": float(rng.integers(1, 11)) / 2 for j in rng.choice(30, 8, replace=False)}
             for i in range(12)}
    run = {u: {f"i{j}": float(rng.random() * 5) for j in rng.choice(30, int(rng.integers(3, 15)), replace=False)}
           for u in qrels}
    result = evaluate(qrels, run, ["MAE", "RMSE", "MAE_pooled", "RMSE_pooled"], missing_ratings=how)
    truth, predicted = [], []
    for user, items in run.items():
        rated = qrels[user]
        fill = {"zero": 0.0, "mean": np.mean(list(rated.values())), "median": np.median(list(rated.values()))}.get(how)
        for item, score in items.items():
            if item in rated or fill is not None:
                truth.append(rated.get(item, fill))
                predicted.append(score)
    assert result.mean["MAE_pooled"] == pytest.approx(mean_absolute_error(truth, predicted), rel=1e-12)
    assert result.mean["RMSE_pooled"] == pytest.approx(math.sqrt(mean_squared_error(truth, predicted)), rel=1e-12)
    # per user they are MAE and RMSE; the plain names average the users
    assert all(v.get("MAE_pooled") == v.get("MAE") and v.get("RMSE_pooled") == v.get("RMSE")
               for v in result.per_query.values())  # a user without a compared item has neither
    rmse = [v["RMSE"] for v in result.per_query.values() if "RMSE" in v]
    assert result.mean["RMSE"] == pytest.approx(np.mean(rmse), rel=1e-12)
    assert result.mean["RMSE"] != pytest.approx(result.mean["RMSE_pooled"], rel=1e-6)


def test_fractional_thresholds_through_the_api_and_the_command_line(tmp_path):
    # article 002's "> 4": with --rel 4.5 only the ratings 4.5 and 5 are relevant
    qrels = {"u": {"a": 5, "b": 4.5, "c": 4, "d": 3.5}}
    run = {"u": {"c": 4.0, "b": 3.0, "a": 2.0, "d": 1.0}}  # ranks: c, b, a, d
    ap = (1 / 2 + 2 / 3) / 2  # b at rank 2, a at rank 3
    assert evaluate(qrels, run, ["AP"], rel=4.5).mean["AP"] == pytest.approx(ap, abs=EXACT)
    assert evaluate(qrels, run, ["AP(rel=4.5)"]).mean["AP(rel=4.5)"] == pytest.approx(ap, abs=EXACT)
    assert evaluate(qrels, run, ["AP"], rel=5).mean["AP"] == pytest.approx(1 / 3, abs=EXACT)
    # read as trec_eval reads them, 4.5 is 4: relevant at rel 4 like c, and nothing reaches 4.5 but a
    assert evaluate(qrels, run, ["AP"], rel=4.5, fractions="truncate").mean["AP"] == pytest.approx(1 / 3, abs=EXACT)
    (tmp_path / "q.json").write_text(json.dumps(qrels))
    (tmp_path / "r.json").write_text(json.dumps(run))
    out = CliRunner().invoke(app, ["evaluate", str(tmp_path / "q.json"), str(tmp_path / "r.json"), "-m", "AP",
                                   "-m", "nDCG", "--rel", "4.5", "--format", "json"])
    assert out.exit_code == 0, out.output
    result = json.loads(out.stdout)
    assert result["mean"]["AP"] == pytest.approx(ap, abs=EXACT)
    gains = [4, 4.5, 5, 3.5]
    assert result["mean"]["nDCG"] == pytest.approx(_dcg(gains) / _dcg(sorted(gains, reverse=True)), abs=EXACT)
    bad = CliRunner().invoke(app, ["evaluate", str(tmp_path / "q.json"), str(tmp_path / "r.json"), "--rel", "0"])
    assert bad.exit_code == 2 and "must be a number > 0" in bad.stderr
