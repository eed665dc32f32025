"""`tune`: grids, search depth, folds, cross-validation on synthetic objectives, Cranfield, the CLI."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from bm25lab.evaluation import MeasureError, evaluate, read_qrels
from bm25lab.cli import app
from bm25lab.evaluation.tuning import (
    DEFAULT_B_GRID,
    DEFAULT_K1_GRID,
    cross_validate,
    fold_assignment,
    grid_range,
    parse_grid,
    search_depth,
    tune,
)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
K1_COARSE, B_COARSE = (0.5, 0.9, 1.5), (0.3, 0.75)
runner = CliRunner()


# --------------------------------------------------------------------------- grids and depth


def test_default_grids() -> None:
    assert len(DEFAULT_K1_GRID) == 29 and DEFAULT_K1_GRID[0] == 0.2 and DEFAULT_K1_GRID[-1] == 3.0
    assert len(DEFAULT_B_GRID) == 21 and DEFAULT_B_GRID[0] == 0.0 and DEFAULT_B_GRID[-1] == 1.0
    assert 0.3 in DEFAULT_K1_GRID and 0.9 in DEFAULT_K1_GRID and 0.4 in DEFAULT_B_GRID  # no float drift
    assert len(DEFAULT_K1_GRID) * len(DEFAULT_B_GRID) == 609


def test_parse_grid_forms() -> None:
    assert parse_grid("0.2:3.0:0.1") == DEFAULT_K1_GRID
    assert parse_grid("0:1:0.25") == (0.0, 0.25, 0.5, 0.75, 1.0)
    assert parse_grid("0:1:0.3") == (0.0, 0.3, 0.6, 0.9)  # stop included only when on the grid
    assert parse_grid("1.2, 0.5,0.9,0.5") == (0.5, 0.9, 1.2)  # sorted, duplicates dropped
    assert parse_grid("0.7") == (0.7,)
    assert grid_range(0.1, 0.1, 0.05) == (0.1,)


@pytest.mark.parametrize(
    "text", ["1:2", "a,b", "", "1:2:0", "2:1:0.1", "0:1:-0.1", "1,,2", "nan", "0:1e9:1e-3", "1:2:3:4"]
)
def test_parse_grid_rejects_bad_strings_in_one_line(text: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_grid(text, "--k1-grid")
    message = str(caught.value)
    assert message.startswith(f"--k1-grid {text!r}: ") and "\n" not in message


@pytest.mark.parametrize(
    ("measure", "depth"),
    [("nDCG@10", 10), ("ndcg_cut_10", 10), ("P@5", 5), ("R@100", 100), ("MAP@100", 100), ("RR@3", 3),
     ("Hits@20", 20), ("nDCG_exp@5", 5), ("Judged@10", 10), ("ERR@20", 20), ("R@5000", 1000),  # never more than k
     ("AP", 1000), ("RR", 1000), ("nDCG", 1000), ("bpref", 1000), ("Rprec", 1000), ("iprec@0.5", 1000),
     ("RBP@0.8", 1000), ("set_P", 1000), ("AUC", 1000), ("num_ret", 1000), ("ERR", 1000)],
)
def test_search_depth_rule(measure: str, depth: int) -> None:
    assert search_depth(measure, 1000) == depth


def test_search_depth_unknown_measure() -> None:
    with pytest.raises(MeasureError, match="unknown measure"):
        search_depth("nDGC@10", 1000)


# --------------------------------------------------------------------------- folds and cross-validation


def test_fold_assignment_partitions_the_queries() -> None:
    parts = fold_assignment(23, 5, seed=7)
    assert sorted(len(p) for p in parts) == [4, 4, 5, 5, 5]
    assert [len(p) for p in parts] == [5, 5, 5, 4, 4]  # np.array_split: the larger parts first
    assert sorted(np.concatenate(parts).tolist()) == list(range(23))
    again = fold_assignment(23, 5, seed=7)
    assert all(np.array_equal(a, b) for a, b in zip(parts, again))
    other = fold_assignment(23, 5, seed=8)
    assert not all(np.array_equal(a, b) for a, b in zip(parts, other))


@pytest.mark.parametrize(("queries", "folds"), [(10, 1), (3, 4)])
def test_fold_assignment_rejects_bad_counts(queries: int, folds: int) -> None:
    with pytest.raises(ValueError, match="fold"):
        fold_assignment(queries, folds)


def synthetic(num_queries: int, noise: float, seed: int = 1) -> np.ndarray:
    """value[i, j, q] = 1 - (k1 - 1.2)^2 - (b - 0.75)^2 + per-query, per-point noise: best at (1.2, 0.75)."""
    k1 = np.asarray(DEFAULT_K1_GRID)[:, None, None]
    b = np.asarray(DEFAULT_B_GRID)[None, :, None]
    rng = np.random.default_rng(seed)
    return 1 - (k1 - 1.2) ** 2 - (b - 0.75) ** 2 + noise * rng.standard_normal((k1.size, b.size, num_queries))


def test_cross_validate_finds_the_known_best_in_every_fold() -> None:
    values = synthetic(200, noise=0.003)
    cv = cross_validate(values, DEFAULT_K1_GRID, DEFAULT_B_GRID, folds=5, seed=0)
    assert [(f.k1, f.b) for f in cv.folds] == [(1.2, 0.75)] * 5
    assert [f.index for f in cv.folds] == [1, 2, 3, 4, 5]
    assert [f.num_test_queries for f in cv.folds] == [40] * 5
    i, j = DEFAULT_K1_GRID.index(1.2), DEFAULT_B_GRID.index(0.75)
    # every query held out once, at the same point: the held-out mean is that point's mean
    assert cv.test_mean == pytest.approx(values[i, j].mean(), abs=1e-15)
    assert np.array_equal(cv.held_out, values[i, j])
    for f, test in zip(cv.folds, fold_assignment(200, 5, 0)):
        train = np.setdiff1d(np.arange(200), test)
        assert f.train_mean == pytest.approx(values[i, j, train].mean(), abs=1e-15)
        assert f.test_mean == pytest.approx(values[i, j, test].mean(), abs=1e-15)
    assert cv.train_mean == pytest.approx(np.mean([f.train_mean for f in cv.folds]), abs=1e-15)


def test_cross_validate_by_hand() -> None:
    """Two grid points (k1 = 1, 2; b = 0.5), four queries, two folds: every number worked out below."""
    values = np.array([[[0.9, 0.1, 0.5, 0.3]], [[0.2, 0.6, 0.4, 0.4]]])  # (2 k1, 1 b, 4 queries)
    test_a, test_b = fold_assignment(4, 2, seed=3)
    cv = cross_validate(values, (1.0, 2.0), (0.5,), folds=2, seed=3)
    for fold, test in zip(cv.folds, (test_a, test_b)):
        train = np.setdiff1d(np.arange(4), test)
        means = values[:, 0, train].mean(axis=1)
        best = int(np.argmax(means))
        assert (fold.k1, fold.b) == ((1.0, 2.0)[best], 0.5)
        assert fold.train_mean == means[best]
        assert fold.test_mean == values[best, 0, test].mean()
    held = np.concatenate([values[(0 if f.k1 == 1.0 else 1), 0, t] for f, t in zip(cv.folds, (test_a, test_b))])
    assert cv.test_mean == pytest.approx(held.mean(), abs=1e-15)


def test_ties_go_to_the_first_grid_point() -> None:
    flat = np.full((3, 4, 10), 0.5)
    cv = cross_validate(flat, (0.5, 1.0, 1.5), (0.0, 0.25, 0.5, 0.75), folds=2)
    assert [(f.k1, f.b) for f in cv.folds] == [(0.5, 0.0)] * 2
    two_best = np.zeros((3, 4, 10))
    two_best[2, 0] = two_best[1, 3] = 1.0  # (1.0, 0.75) comes before (1.5, 0.0) in k1-major order
    cv = cross_validate(two_best, (0.5, 1.0, 1.5), (0.0, 0.25, 0.5, 0.75), folds=2)
    assert [(f.k1, f.b) for f in cv.folds] == [(1.0, 0.75)] * 2


def test_cross_validate_checks_its_input() -> None:
    with pytest.raises(ValueError, match="shape"):
        cross_validate(np.zeros((2, 3, 5)), (1.0, 2.0), (0.5,), folds=2)
    bad = np.zeros((1, 1, 5))
    bad[0, 0, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        cross_validate(bad, (1.0,), (0.5,), folds=2)


# --------------------------------------------------------------------------- tune on Cranfield


@pytest.fixture(scope="module")
def judged(cranfield) -> dict[str, str]:
    return cranfield.judged_queries()


@pytest.fixture(scope="module")
def qrels(cranfield):
    return read_qrels(cranfield.qrels_path)


@pytest.fixture(scope="module")
def coarse(cranfield_index, judged, qrels):
    calls: list[tuple[int, int]] = []
    result = tune(cranfield_index, judged, qrels, measure="nDCG@10", k1_grid=K1_COARSE, b_grid=B_COARSE, folds=3,
                  progress=lambda done, total: calls.append((done, total)))
    return result, calls


def reference_mean(index, judged, qrels, measure: str, k1: float, b: float, k: int = 1000) -> float:
    """The measure of an ordinary ``search_many`` run (k results), over the judged queries, trec_eval -c."""
    run = index.search_many(judged, k=k, k1=k1, b=b, workers=1)
    values = evaluate(qrels, run, [measure], complete=True).values(measure)
    return float(np.mean([values[q] for q in judged]))


def test_tune_grid_equals_independent_searches(coarse, cranfield_index, judged, qrels) -> None:
    result, calls = coarse
    assert result.grid.shape == (3, 2) and result.num_queries == len(judged) == 225
    assert result.depth == 10
    for i, k1 in enumerate(K1_COARSE):
        for j, b in enumerate(B_COARSE):
            expected = reference_mean(cranfield_index, judged, qrels, "nDCG@10", k1, b, 100)
            assert result.grid[i, j] == pytest.approx(expected, abs=1e-12)
    default = reference_mean(cranfield_index, judged, qrels, "nDCG@10", 0.9, 0.4, 100)  # b = 0.4 is off this grid
    assert result.default_mean == pytest.approx(default, abs=1e-12)
    assert calls == [(n, 6) for n in range(1, 7)]


def test_tune_best_folds_and_json_shape(coarse) -> None:
    result, _ = coarse
    i, j = np.unravel_index(int(np.argmax(result.grid)), result.grid.shape)
    assert result.best == {"k1": K1_COARSE[i], "b": B_COARSE[j]} and result.best_mean == result.grid[i, j]
    assert len(result.folds) == 3 and sum(f.num_test_queries for f in result.folds) == 225
    assert all((f.k1, f.b) in {(k, b) for k in K1_COARSE for b in B_COARSE} for f in result.folds)
    assert result.test_mean <= result.best_mean + 1e-12  # held out can never beat the in-sample best
    doc = result.to_dict()
    assert set(doc) == {"best", "train_mean", "test_mean", "default_mean", "folds", "on_edge"}
    assert set(doc["folds"][0]) == {"fold", "k1", "b", "train_mean", "test_mean", "num_test_queries"}
    json.dumps(doc)


def test_default_mean_off_the_grid_and_full_depth(cranfield_index, judged, qrels) -> None:
    """AP needs the whole ranking; (0.9, 0.4) is off this grid and still scored directly."""
    result = tune(cranfield_index, judged, qrels, measure="AP", k1_grid=(1.2,), b_grid=(0.75,), folds=2)
    assert result.depth == 1000
    expected = reference_mean(cranfield_index, judged, qrels, "AP", 1.2, 0.75)
    assert result.grid[0, 0] == pytest.approx(expected, abs=1e-12)
    assert result.default_mean == pytest.approx(reference_mean(cranfield_index, judged, qrels, "AP", 0.9, 0.4),
                                                abs=1e-12)
    assert result.test_mean == pytest.approx(result.best_mean, abs=1e-12)  # one point: every fold takes it


def test_tune_input_errors(cranfield_index, judged, qrels) -> None:
    few = dict(list(judged.items())[:2])
    with pytest.raises(ValueError, match="3 folds need at least 3 queries"):
        tune(cranfield_index, few, qrels, k1_grid=(1.0,), b_grid=(0.5,), folds=3)
    with pytest.raises(ValueError, match="no query has judgments"):
        tune(cranfield_index, {"nope": "boundary layer"}, qrels, k1_grid=(1.0,), b_grid=(0.5,))
    with pytest.raises(ValueError, match="b must be between 0 and 1"):
        tune(cranfield_index, judged, qrels, k1_grid=(1.0,), b_grid=(0.5, 1.5))
    with pytest.raises(ValueError, match="unknown BM25 variant"):
        tune(cranfield_index, judged, qrels, variant="bm26", k1_grid=(1.0,), b_grid=(0.5,))


def test_queries_without_judgments_are_left_out(cranfield_index, judged, qrels) -> None:
    some = dict(list(judged.items())[:12])
    extra = {**some, "unjudged-1": "supersonic flow", "unjudged-2": "heat transfer"}
    a = tune(cranfield_index, extra, qrels, k1_grid=(0.9,), b_grid=(0.4,), folds=4)
    b = tune(cranfield_index, some, qrels, k1_grid=(0.9,), b_grid=(0.4,), folds=4)
    assert a.num_queries == b.num_queries == 12 and a.to_dict() == b.to_dict()


# --------------------------------------------------------------------------- command line


@pytest.fixture(scope="module")
def cli_files(tmp_path_factory, cranfield_index, judged, cranfield) -> tuple[str, str, str]:
    root = tmp_path_factory.mktemp("tune")
    cranfield_index.save(root / "idx")
    lines = [f"{qid}\t{' '.join(text.split())}" for qid, text in judged.items()]
    (root / "queries.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(root / "idx"), str(root / "queries.tsv"), str(cranfield.qrels_path)


COARSE_ARGS = ["--k1-grid", "0.5,0.9,1.5", "--b-grid", "0.3:0.75:0.45", "--folds", "3"]


def test_cli_json_matches_the_library(cli_files, coarse) -> None:
    result = runner.invoke(app, ["tune", *cli_files, "-m", "nDCG@10", *COARSE_ARGS, "--format", "json"])
    assert result.exit_code == 0, result.output + result.stderr
    doc = json.loads(result.stdout)
    assert set(doc) == {"measure", "variant", "queries", "best", "best_mean", "train_mean", "test_mean",
                        "default_mean", "folds", "on_edge", "grid"}
    expected = coarse[0].to_dict()
    assert doc["best_mean"] == coarse[0].best_mean and doc["grid"]["mean"] == coarse[0].grid.tolist()
    assert doc["best"] == expected["best"] and len(doc["folds"]) == 3
    for key in ("train_mean", "test_mean", "default_mean"):
        assert doc[key] == pytest.approx(expected[key], abs=1e-12)
    assert [(f["k1"], f["b"]) for f in doc["folds"]] == [(f["k1"], f["b"]) for f in expected["folds"]]
    assert "6 grid points x 225 queries" in result.stderr


def test_cli_table_and_plot(cli_files, tmp_path: Path) -> None:
    png = tmp_path / "grid.png"
    result = runner.invoke(app, ["tune", *cli_files, "-m", "P@10", "--variant", "atire", "--k1-grid", "0.8,1.6",
                                 "--b-grid", "0.5,0.8", "--folds", "2", "--plot", str(png)])
    assert result.exit_code == 0, result.output + result.stderr
    for text in ("best on all queries", "default", "held-out mean", "parameters chosen in each fold"):
        assert text in result.stdout
    data = png.read_bytes()
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR" and data[-8:-4] == b"IEND"
    assert f"heat map -> {png}" in result.stderr.replace("\n", "")  # rich folds a long path at 80 columns


@pytest.mark.parametrize(
    ("args", "needle"),
    [(["--k1-grid", "1:2"], "--k1-grid '1:2'"), (["--b-grid", "0.2,x"], "--b-grid '0.2,x'"),
     (["--b-grid", "0:2:0.5"], "b must be between 0 and 1"), (["-m", "nDGC@10"], "unknown measure")],
)
def test_cli_bad_parameters_are_one_line_and_exit_2(cli_files, args: list[str], needle: str) -> None:
    result = runner.invoke(app, ["tune", *cli_files, *args])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bm25lab: error: ") and needle in lines[0], result.stderr
    assert "Traceback" not in result.output


def test_cli_bad_usage_exit_code_2(cli_files) -> None:
    assert runner.invoke(app, ["tune", *cli_files, "--folds", "1"]).exit_code == 2


def test_on_edge_warns_only_where_the_grid_could_be_extended() -> None:
    from bm25lab.evaluation.tuning import TuneResult

    def result(best: dict, k1_grid: tuple, b_grid: tuple) -> TuneResult:
        return TuneResult("AP", "lucene", k1_grid, b_grid, np.zeros((len(k1_grid), len(b_grid))), best, 0.0, 0.0, (),
                          0.0, 0.0, 1, 10)

    assert result({"k1": 2.0, "b": 0.5}, (0.5, 1.0, 2.0), (0.3, 0.5, 0.7)).on_edge[0].startswith("the best k1 (2)")
    assert "lower values" in result({"k1": 1.0, "b": 0.3}, (0.5, 1.0, 2.0), (0.3, 0.5, 0.7)).on_edge[0]
    assert result({"k1": 1.0, "b": 1.0}, (0.5, 1.0, 2.0), (0.0, 0.5, 1.0)).on_edge == []  # b's own bounds
    assert result({"k1": 0.0, "b": 0.5}, (0.0, 1.0), (0.5,)).on_edge == []  # k1 = 0; a single b
