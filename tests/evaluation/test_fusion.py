"""Run fusion (evaluation/fusion.py) against ranx's ``fuse`` as the oracle: every method and normalization,
scores per query and document to 1e-12 and the rankings; the conventions ranx leaves open (ties, queries
missing from a run) by hand; the weights' cross-validation; the command line."""
from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from bm25lab import fuse
from bm25lab.cli import app
from bm25lab.evaluation import evaluate, read_run
from bm25lab.evaluation.fusion import METHODS, NORMALIZATIONS, RANX_METHODS, RANX_NORMS, tune_weights, weight_grid
from bm25lab.evaluation.tuning import fold_assignment

ranx = pytest.importorskip("ranx")


def _run(seed: int) -> dict[str, dict[str, float]]:
    """Three queries; each run retrieves 5-24 of 40 documents with distinct normal scores, so documents
    are missing from some runs and ranks are unambiguous."""
    rng = np.random.default_rng(seed)
    out = {}
    for q in ("q1", "q2", "q3"):
        docs = rng.choice(40, size=int(rng.integers(5, 25)), replace=False)
        out[q] = {f"d{d}": float(s) for d, s in zip(docs, rng.normal(5, 2, docs.size))}
    return out


RUNS = [_run(seed) for seed in (1, 2, 3)]
PARAMS = {"wsum": {"weights": [0.5, 0.3, 0.2]}, "wmnz": {"weights": [0.5, 0.3, 0.2]}, "combgmnz": {"gamma": 1.5},
          "logn_isr": {"sigma": 0.05}, "rrf": {"k": 10}}


def _score_groups(ranking: dict[str, float]) -> list[frozenset[str]]:
    """The ranking as a list of sets of documents with equal scores, best first (the order within a set is
    the tie rule's here and argsort's in ranx)."""
    groups: dict[float, set[str]] = {}
    for doc, score in ranking.items():
        groups.setdefault(score, set()).add(doc)
    return [frozenset(groups[s]) for s in sorted(groups, reverse=True)]


@pytest.fixture(scope="module")
def ranx_runs():
    return [ranx.Run(run) for run in RUNS]


@pytest.mark.parametrize("method", list(METHODS))
def test_every_method_and_normalization_equals_ranx(method, ranx_runs):
    params = PARAMS.get(method, {})
    for norm in NORMALIZATIONS:
        ours = fuse(RUNS, method, norm, params.get("weights"), gamma=params.get("gamma", 1.0),
                    sigma=params.get("sigma", 0.01), k=params.get("k", 60)).to_dict()
        theirs = ranx.fuse(ranx_runs, norm=RANX_NORMS[norm], method=RANX_METHODS[method], params=params).to_dict()
        assert list(ours) == list(theirs)
        for q in theirs:
            assert set(ours[q]) == set(theirs[q]), (method, norm, q)  # every document of any run, no more
            for doc, score in theirs[q].items():
                assert ours[q][doc] == pytest.approx(score, abs=1e-12, rel=1e-12), (method, norm, q, doc)
            assert _score_groups(ours[q]) == _score_groups(theirs[q])


def test_rrf_and_combsum_by_hand():
    # q: run A ranks a, b, c (scores 3, 2, 1); run B ranks c, a (scores 10, 0)
    a = {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}
    b = {"q": {"c": 10.0, "a": 0.0}}
    rrf = fuse([a, b], "rrf").to_dict()["q"]
    assert rrf == pytest.approx({"a": 1 / 61 + 1 / 62, "c": 1 / 63 + 1 / 61, "b": 1 / 62})
    assert list(rrf) == ["a", "c", "b"]
    combsum = fuse([a, b], "combsum", "minmax").to_dict()["q"]  # minmax: A -> 1, .5, 0; B -> c 1, a 0
    assert combsum == {"c": 1.0, "a": 1.0, "b": 0.5}
    assert list(combsum) == ["c", "a", "b"]  # a tie in the fused scores: document id descending
    mnz = fuse([a, b], "combmnz", "none").to_dict()["q"]
    assert mnz == {"c": 22.0, "a": 6.0, "b": 2.0}


def test_ties_in_an_input_run_rank_by_the_tie_rule():
    # b and c tie in run A: the tie rule ranks c (the larger id) before b, so rrf gives c 1/62 and b 1/63
    a = {"q": {"a": 3.0, "b": 2.0, "c": 2.0}}
    b = {"q": {"a": 1.0}}
    assert fuse([a, b], "rrf").to_dict()["q"] == pytest.approx({"a": 2 / 61, "c": 1 / 62, "b": 1 / 63})


def test_a_query_missing_from_a_run_is_fused_from_the_others():
    a = {"q1": {"x": 1.0, "y": 0.5}, "q2": {"z": 2.0}}
    b = {"q1": {"x": 0.3}}
    fused = fuse([a, b], "combsum", "none")
    assert fused.qids == ("q1", "q2")
    assert fused.to_dict() == {"q1": {"x": 1.3, "y": 0.5}, "q2": {"z": 2.0}}


def test_depth_and_errors():
    assert len(fuse(RUNS, "rrf", depth=3).to_dict()["q1"]) == 3
    with pytest.raises(Exception, match="choose one of"):
        fuse(RUNS, "nope")
    with pytest.raises(Exception, match="at least 2 runs"):
        fuse(RUNS[:1])
    with pytest.raises(Exception, match="one weight per run"):
        fuse(RUNS, "wsum", weights=[1.0])
    with pytest.raises(Exception, match="takes no weights"):
        fuse(RUNS, "rrf", weights=[1.0, 1.0, 1.0])


def test_weight_grid_is_the_simplex():
    grid = weight_grid(3, 0.5)
    assert grid == [(0.0, 0.0, 1.0), (0.0, 0.5, 0.5), (0.0, 1.0, 0.0), (0.5, 0.0, 0.5), (0.5, 0.5, 0.0),
                    (1.0, 0.0, 0.0)]
    assert len(weight_grid(2, 0.1)) == 11
    with pytest.raises(Exception, match="divide 1"):
        weight_grid(2, 0.3)


def _qrels() -> dict[str, dict[str, int]]:
    rng = np.random.default_rng(7)
    return {q: {f"d{d}": int(rng.integers(0, 3)) for d in range(0, 40, 3)} | {"d1": 1} for q in ("q1", "q2", "q3")}


def test_tuned_weights_are_the_cross_validated_grid_search():
    qrels = _qrels()
    result = tune_weights(RUNS[:2], qrels, "nDCG@10", "wsum", step=0.25, folds=3, seed=4)
    points = weight_grid(2, 0.25)
    qids = ["q1", "q2", "q3"]
    values = np.array([[evaluate(qrels, fuse(RUNS[:2], "wsum", weights=w), ["nDCG@10"], complete=True)
                        .per_query[q]["nDCG@10"] for q in qids] for w in points])
    assert result.best == points[int(np.argmax(values.mean(axis=1)))]
    held = np.empty(3)
    for fold, test in zip(result.folds, fold_assignment(3, 3, 4)):
        train = np.setdiff1d(np.arange(3), test)
        best = int(np.argmax(values[:, train].mean(axis=1)))
        assert fold[1] == points[best]
        held[test] = values[best, test]
    assert result.test_mean == pytest.approx(held.mean(), abs=1e-15)


def _same_ranking(got: dict, expected: dict) -> None:
    """The same documents in the same order per query, scores as written (the shortest decimal that reads
    back to the same float64)."""
    assert {q: list(v) for q, v in got.items()} == {q: list(v) for q, v in expected.items()}
    assert got == expected


def test_fuse_command(tmp_path):
    runner = CliRunner()
    paths = []
    for i, run in enumerate(RUNS):
        path = tmp_path / f"r{i}.json"
        path.write_text(json.dumps(run))
        paths.append(str(path))
    out = tmp_path / "fused.run"
    result = runner.invoke(app, ["fuse", *paths, "--method", "wsum", "--norm", "zscore", "--weights", "0.5,0.3,0.2",
                                 "--out", str(out)])
    assert result.exit_code == 0, result.output
    expected = fuse(RUNS, "wsum", "zscore", [0.5, 0.3, 0.2]).to_dict()
    _same_ranking(read_run(out).to_dict(), expected)
    qrels = tmp_path / "qrels.json"
    qrels.write_text(json.dumps(_qrels()))
    result = runner.invoke(app, ["fuse", *paths[:2], "--method", "wsum", "--tune", "nDCG@10", "--qrels", str(qrels),
                                 "--folds", "3", "--weight-step", "0.25", "--format", "json", "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    tuned = tune_weights(RUNS[:2], _qrels(), "nDCG@10", "wsum", step=0.25, folds=3)
    assert report["best"] == list(tuned.best)
    _same_ranking(read_run(out).to_dict(), fuse(RUNS[:2], "wsum", weights=tuned.best).to_dict())
    bad = runner.invoke(app, ["fuse", *paths, "--tune", "AP", "--out", str(out)])
    assert bad.exit_code == 2 and "go together" in bad.stderr
