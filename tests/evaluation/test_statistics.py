"""The tests papers report, against their oracles: Wilcoxon's signed-rank test (scipy.stats.wilcoxon with
its defaults), Tukey's HSD (scipy.stats.tukey_hsd, which ranx calls; the studentized range also against
the closed form of k = 2), the corrections (statsmodels' multipletests), and the all-pairs report
(ranx's compare on the same per-query values, and the command line)."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
import scipy.stats
from typer.testing import CliRunner

from bm25lab.cli import app
from bm25lab.evaluation.compare import compare
from bm25lab.evaluation.corrections import CORRECTIONS
from bm25lab.evaluation.distributions import signed_rank_counts, studentized_range_sf
from bm25lab.evaluation.pairwise import all_pairs, p_matrix, to_latex, to_markdown
from bm25lab.evaluation.significance import student_t_sf, tukey_hsd, wilcoxon_test

multitest = pytest.importorskip("statsmodels.stats.multitest")


def _pairs(n: int, seed: int, rounding: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a, b = rng.random(n), rng.random(n) * 0.9 + 0.05
    if rounding is not None:  # ties among |d| and zero differences
        a, b = np.round(a, rounding), np.round(b, rounding)
    return a, b


@pytest.mark.parametrize("n", [5, 9, 13, 14, 30, 50, 51, 225])
@pytest.mark.parametrize("rounding", [None, 1])
def test_wilcoxon_equals_scipy_defaults(n, rounding):
    # n <= 50 untied: exact; n <= 13 with ties or zeros: all 2^n sign patterns; else the normal approximation
    for seed in range(1 if n == 13 else 4):  # scipy's permutation test at n = 13 takes seconds
        a, b = _pairs(n, seed, rounding)
        if np.all(a == b):
            continue
        ours, theirs = wilcoxon_test(a, b), scipy.stats.wilcoxon(a, b)
        assert ours.statistic == theirs.statistic
        assert ours.p_value == pytest.approx(theirs.pvalue, rel=1e-12, abs=1e-300)


def test_wilcoxon_by_hand():
    # d = 1, -2, 3, 4, 5: ranks 1..5, W+ = 13, W- = 2; 2^5 = 32 patterns, P(W+ >= 13) = P(W+ <= 2) = 3/32
    result = wilcoxon_test([2, 0, 3, 4, 5], [1, 2, 0, 0, 0])
    assert result.statistic == 2 and result.p_value == pytest.approx(6 / 32, abs=1e-15)
    assert signed_rank_counts(3) == (1, 1, 1, 2, 1, 1, 1)  # subsets of {1, 2, 3} by their sum
    assert wilcoxon_test([1, 2, 3], [1, 2, 3]).p_value == 1.0


@pytest.mark.parametrize("df", [2, 5, 30, 672, 5000])
@pytest.mark.parametrize("q", [0.5, 2.0, 4.0, 8.0])
def test_studentized_range_of_two_means_is_a_t_test(q, df):
    # Q of k = 2 means is sqrt(2) |T_df|: the closed form holds to 1e-11, a check independent of scipy
    assert studentized_range_sf(q, 2, df) == pytest.approx(student_t_sf(q / math.sqrt(2), df), rel=1e-11)


@pytest.mark.parametrize("k", [3, 5, 10])
@pytest.mark.parametrize("df", [3, 30, 672])
def test_studentized_range_equals_scipy(k, df):
    for q in (0.5, 2.0, 3.5, 5.0):
        ours, theirs = studentized_range_sf(q, k, df), scipy.stats.studentized_range.sf(q, k, df)
        # scipy integrates to about 1e-9 relative here (farther in the tail, p < 1e-8, it is the less exact)
        assert ours == pytest.approx(theirs, rel=1e-8, abs=1e-13)


def test_tukey_hsd_equals_scipy():
    rng = np.random.default_rng(3)
    for k, n in ((2, 10), (3, 50), (4, 225)):
        samples = [rng.random(n) + 0.05 * i for i in range(k)]
        ours, theirs = tukey_hsd(samples), scipy.stats.tukey_hsd(*samples)
        assert np.array_equal(ours.differences, theirs.statistic)
        assert np.allclose(ours.p_values, theirs.pvalue, rtol=1e-8, atol=1e-12)
        assert ours.df == k * n - k


@pytest.mark.parametrize("name, method", [("bonferroni", "bonferroni"), ("holm", "holm"), ("bh", "fdr_bh")])
def test_corrections_equal_statsmodels(name, method):
    rng = np.random.default_rng(5)
    for p in ([0.01, 0.04, 0.03, 0.005], rng.random(12) ** 3, [0.02, 0.02, 0.5, 0.01], [0.2]):
        expected = multitest.multipletests(p, method=method)[1]
        assert CORRECTIONS[name](p) == pytest.approx(list(expected), rel=1e-15, abs=1e-15)
    assert CORRECTIONS["none"]([0.2, 0.01]) == [0.2, 0.01]


def _systems() -> dict[str, dict[str, dict[str, float]]]:
    rng = np.random.default_rng(11)
    base = rng.random(40)
    shifts = {"bm25": 0.0, "rm3": 0.08, "fused": 0.12}
    return {name: {f"q{i}": {"AP": float(min(1.0, v + s * rng.random())), "P@5": float(round(v + s, 1) % 1)}
                   for i, v in enumerate(base)} for name, s in shifts.items()}


def test_compare_with_wilcoxon_tukey_and_corrections():
    systems = _systems()
    runs = {n: systems[n] for n in ("rm3", "fused")}
    for correction in CORRECTIONS:
        result = compare(systems["bm25"], runs, ["AP"], test="wilcoxon", correction=correction,
                         baseline_name="bm25")
        raw = [scipy.stats.wilcoxon([systems[n][q]["AP"] for q in sorted(systems[n])],
                                    [systems["bm25"][q]["AP"] for q in sorted(systems[n])]).pvalue for n in runs]
        assert [r.p_value for r in result.rows] == pytest.approx(raw, rel=1e-12)
        adjusted = [r.p_adjusted for r in result.rows]
        assert adjusted == ([None, None] if correction == "none" else pytest.approx(CORRECTIONS[correction](raw)))
    tukey = compare(systems["bm25"], runs, ["AP"], test="tukey", baseline_name="bm25")
    qids = sorted(systems["bm25"])
    hsd = scipy.stats.tukey_hsd(*[[systems[n][q]["AP"] for q in qids] for n in ("bm25", "rm3", "fused")])
    assert [r.p_value for r in tukey.rows] == pytest.approx([hsd.pvalue[1, 0], hsd.pvalue[2, 0]], rel=1e-8)
    assert all(r.p_adjusted is None for r in tukey.rows) and not tukey.corrected


def test_all_pairs_equals_ranx_tukey_and_marks_the_better_system():
    pytest.importorskip("ranx")
    systems = _systems()
    report = all_pairs(systems, ["AP", "P@5"], test="tukey")
    qids = sorted(systems["bm25"])
    scores = {n: {m: np.array([systems[n][q][m] for q in qids]) for m in ("AP", "P@5")} for n in systems}
    from ranx.statistical_tests import compute_statistical_significance

    theirs = compute_statistical_significance(list(systems), scores, stat_test="tukey", max_p=0.05)
    for measure in ("AP", "P@5"):
        matrix = p_matrix(report, measure)
        for i, a in enumerate(systems):
            for j, b in enumerate(systems):
                if i < j:
                    assert matrix[i, j] == pytest.approx(theirs[frozenset([a, b])][measure]["p_value"], rel=1e-8)
    for pair in report.pairs:
        better = pair.first if pair.first_mean > pair.second_mean else pair.second
        worse = pair.second if better == pair.first else pair.first
        assert (worse in report.beaten(better, pair.measure)) == pair.significant
        assert better not in report.beaten(worse, pair.measure)
    markdown = to_markdown(report)
    assert markdown.splitlines()[0] == "| # | system | AP | P@5 |"
    fused_row = next(line for line in markdown.splitlines() if "| fused |" in line)
    letters = "".join(report.letters[s] for s in report.beaten("fused", "AP"))
    assert (f"<sup>{letters}</sup>" in fused_row) == bool(letters)
    assert "$^{" in to_latex(report) or not any(p.significant for p in report.pairs)


def test_compare_command_all_pairs_and_corrections(tmp_path):
    rng = np.random.default_rng(2)
    qrels = {f"q{i}": {f"d{j}": int(rng.integers(0, 3)) for j in range(12)} | {"d0": 2} for i in range(30)}
    (tmp_path / "qrels.json").write_text(json.dumps(qrels))
    paths = []
    for name, noise in (("bm25", 1.0), ("rm3", 0.6), ("fused", 0.3)):
        run = {q: {d: float(g + noise * rng.normal()) for d, g in docs.items()} for q, docs in qrels.items()}
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(run))
        paths.append(str(path))
    runner = CliRunner()
    out = runner.invoke(app, ["compare", str(tmp_path / "qrels.json"), *paths, "-m", "AP", "--pairs", "all",
                              "--test", "tukey", "--format", "json"])
    assert out.exit_code == 0, out.output
    report = json.loads(out.stdout)
    assert report["systems"] == ["bm25", "rm3", "fused"] and report["test"] == "tukey"
    assert len(report["pairs"]) == 3 and all(p["p_adjusted"] is None for p in report["pairs"])
    out = runner.invoke(app, ["compare", str(tmp_path / "qrels.json"), *paths, "-m", "AP", "--test", "wilcoxon",
                              "--correction", "bh", "--format", "json"])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)
    assert [r["p_adjusted"] for r in rows] == pytest.approx(CORRECTIONS["bh"]([r["p_value"] for r in rows]))
    out = runner.invoke(app, ["compare", str(tmp_path / "qrels.json"), *paths, "-m", "AP", "--pairs", "all",
                              "--format", "latex"])
    assert out.exit_code == 0 and out.stdout.startswith("\\begin{tabular}{llr}")
