"""compare(): which queries count, rows and their keys, win/tie/loss, Holm per measure, renderers.

The p-values are checked against scipy.stats.ttest_rel on the hand-written values; agreement on real
per-query values (Cranfield) is in test_significance.py.
"""
from __future__ import annotations

import json
import math

import pytest
import scipy.stats
from rich.console import Console

from bm25lab.engine.errors import BM25LabError
from bm25lab.evaluation.compare import (
    JSON_KEYS,
    TEXT_RENDERERS,
    CompareRow,
    Comparison,
    compare,
    notes,
    rows_as_dicts,
    to_json,
    to_latex,
    to_markdown,
    to_rich_table,
)
from bm25lab.evaluation.significance import holm

# Per-query values {qid: {measure: value}}. q5 is missing from run "a"; q9 is only in run "a".
BASELINE = {
    "q1": {"AP": 0.50, "P@5": 0.4},
    "q2": {"AP": 0.20, "P@5": 0.2},
    "q3": {"AP": 0.75, "P@5": 0.6},
    "q4": {"AP": 0.10, "P@5": 0.0},
    "q5": {"AP": 0.90, "P@5": 1.0},
}
RUN_A = {
    "q1": {"AP": 0.60, "P@5": 0.4},  # AP win,  P@5 tie
    "q2": {"AP": 0.20, "P@5": 0.4},  # AP tie,  P@5 win
    "q3": {"AP": 0.70, "P@5": 0.8},  # AP loss, P@5 win
    "q4": {"AP": 0.40, "P@5": 0.2},  # AP win,  P@5 win
    "q9": {"AP": 1.00, "P@5": 1.0},  # not in the baseline: ignored
}
RUN_B = {
    "q1": {"AP": 0.45, "P@5": 0.2},  # AP loss, P@5 loss
    "q2": {"AP": 0.10, "P@5": 0.2},  # AP loss, P@5 tie
    "q3": {"AP": 0.80, "P@5": 0.6},  # AP win,  P@5 tie
    "q4": {"AP": 0.05, "P@5": 0.0},  # AP loss, P@5 tie
    "q5": {"AP": 0.85, "P@5": 0.8},  # not in run a: ignored
}
COMMON = ["q1", "q2", "q3", "q4"]


def _values(per_query, measure):
    return [per_query[q][measure] for q in COMMON]


@pytest.fixture(scope="module")
def two_runs() -> Comparison:
    return compare(BASELINE, {"run_a": RUN_A, "b": RUN_B}, ["AP", "P@5"], trials=2000, baseline_name="base")


def test_only_queries_in_every_run_are_compared(two_runs: Comparison) -> None:
    assert two_runs.num_queries == 4
    assert two_runs.queries_per_measure == {"AP": 4, "P@5": 4}
    assert set(two_runs.deltas("AP")["run_a"]) == set(COMMON)
    assert notes(two_runs)[0].startswith("4 queries evaluated in the baseline and every run")


def test_rows_are_measure_major_with_exact_keys(two_runs: Comparison) -> None:
    assert [(r.measure, r.run) for r in two_runs.rows] == [("AP", "run_a"), ("AP", "b"), ("P@5", "run_a"), ("P@5", "b")]
    for row in rows_as_dicts(two_runs):
        assert tuple(row) == JSON_KEYS
    assert set(JSON_KEYS) == {
        "run", "measure", "mean", "baseline_mean", "delta", "p_value", "p_adjusted",
        "ci_low", "ci_high", "wins", "ties", "losses",
    }  # fmt: skip
    assert [f for f in CompareRow.__dataclass_fields__] == [*JSON_KEYS, "significant"]


def test_means_deltas_and_win_tie_loss(two_runs: Comparison) -> None:
    rows = {(r.run, r.measure): r for r in two_runs.rows}
    ap_a = rows["run_a", "AP"]
    # mean over q1..q4 only: (0.6 + 0.2 + 0.7 + 0.4) / 4 and (0.5 + 0.2 + 0.75 + 0.1) / 4
    assert ap_a.mean == pytest.approx(0.475, abs=1e-15)
    assert ap_a.baseline_mean == pytest.approx(0.3875, abs=1e-15)
    assert ap_a.delta == pytest.approx(0.0875, abs=1e-15)
    assert (ap_a.wins, ap_a.ties, ap_a.losses) == (2, 1, 1)
    assert (rows["run_a", "P@5"].wins, rows["run_a", "P@5"].ties, rows["run_a", "P@5"].losses) == (3, 1, 0)
    assert (rows["b", "AP"].wins, rows["b", "AP"].ties, rows["b", "AP"].losses) == (1, 0, 3)
    assert (rows["b", "P@5"].wins, rows["b", "P@5"].ties, rows["b", "P@5"].losses) == (0, 3, 1)
    for row in two_runs.rows:
        assert row.delta == pytest.approx(row.mean - row.baseline_mean, abs=1e-15)
        assert row.ci_low <= row.delta <= row.ci_high


def test_p_values_equal_scipy_and_holm_is_per_measure(two_runs: Comparison) -> None:
    for measure in ("AP", "P@5"):
        rows = [r for r in two_runs.rows if r.measure == measure]
        expected = [
            float(scipy.stats.ttest_rel(_values(run, measure), _values(BASELINE, measure)).pvalue)
            for run in (RUN_A, RUN_B)
        ]
        assert [r.p_value for r in rows] == pytest.approx(expected, rel=1e-9)
        # two runs: the smaller p is doubled, the larger is max(itself, doubled smaller), capped at 1
        small, large = sorted(expected)
        by_hand = [min(1.0, 2 * small) if p == small else min(1.0, max(large, 2 * small)) for p in expected]
        assert [r.p_adjusted for r in rows] == pytest.approx(by_hand, rel=1e-9)
        assert [r.p_adjusted for r in rows] == pytest.approx(holm(expected), rel=1e-12)


def test_single_run_has_no_holm_and_significance_uses_the_raw_p() -> None:
    baseline = {f"q{i}": {"AP": i / 20} for i in range(1, 11)}
    better = {f"q{i}": {"AP": i / 20 + 0.1 + (i % 3) / 100} for i in range(1, 11)}
    result = compare(baseline, {"better": better}, ["AP"], trials=500)
    (row,) = result.rows
    assert row.p_adjusted is None and not result.corrected
    assert row.p_value < 1e-6 and row.significant and row.marker == "▲"
    assert json.loads(to_json(result))[0]["p_adjusted"] is None
    worse = compare(better, {"worse": baseline}, ["AP"], trials=500).rows[0]
    assert worse.significant and worse.marker == "▼" and worse.delta < 0


def test_significance_after_holm_with_alpha() -> None:
    baseline = {f"q{i}": {"AP": 0.5} for i in range(8)}
    # p about 0.03 alone: significant at 0.05 without correction, not after Holm with a second run
    borderline = {f"q{i}": {"AP": 0.5 + d} for i, d in enumerate([0.1, 0.05, -0.02, 0.08, 0.03, 0.06, -0.01, 0.04])}
    same = {f"q{i}": {"AP": 0.5} for i in range(8)}
    alone = compare(baseline, {"x": borderline}, ["AP"], trials=500).rows[0]
    assert alone.p_value < 0.05 and alone.significant
    with_null_run = compare(baseline, {"x": borderline, "same": same, "same2": same}, ["AP"], trials=500)
    row = with_null_run.rows[0]
    assert row.p_value == alone.p_value and row.p_adjusted == pytest.approx(3 * alone.p_value)
    assert row.p_adjusted > 0.05 and not row.significant
    assert with_null_run.rows[1].p_value == 1.0 and with_null_run.rows[1].ties == 8
    assert compare(baseline, {"x": borderline}, ["AP"], trials=500, alpha=0.01).rows[0].significant is False


def test_undefined_values_are_left_out_of_that_measure_only() -> None:
    baseline = {
        "q1": {"AP": 0.1, "AUC": 0.5},
        "q2": {"AP": 0.2},
        "q3": {"AP": 0.3, "AUC": 0.7},
        "q4": {"AP": 0.4, "AUC": 0.2},
    }
    run = {
        "q1": {"AP": 0.2, "AUC": 0.6},
        "q2": {"AP": 0.2, "AUC": 0.9},
        "q3": {"AP": 0.1, "AUC": math.nan},
        "q4": {"AP": 0.5, "AUC": 0.4},
    }
    result = compare(baseline, {"run": run}, ["AP", "AUC"], trials=200)
    assert result.num_queries == 4
    assert result.queries_per_measure == {"AP": 4, "AUC": 2}  # q2 (missing) and q3 (NaN) drop out of AUC
    auc = result.rows[1]
    assert auc.mean == pytest.approx(0.5) and auc.baseline_mean == pytest.approx(0.35)
    assert (auc.wins, auc.ties, auc.losses) == (2, 0, 0)
    assert any(line.startswith("AUC: 2 of them") for line in notes(result))


def test_resampling_tests_are_reproducible_and_independent_of_other_runs() -> None:
    one = compare(BASELINE, {"run_a": RUN_A}, ["AP"], test="randomization", trials=3000, seed=7, baseline_name="base")
    two = compare(BASELINE, {"run_a": RUN_A, "b": RUN_B}, ["AP"], test="randomization", trials=3000, seed=7)
    assert one.rows[0].p_value == two.rows[0].p_value
    assert (one.rows[0].ci_low, one.rows[0].ci_high) == (two.rows[0].ci_low, two.rows[0].ci_high)
    boot = [compare(BASELINE, {"run_a": RUN_A}, ["AP"], test="bootstrap", trials=3000, seed=7) for _ in range(2)]
    assert boot[0].rows[0].p_value == boot[1].rows[0].p_value
    assert "randomization test (3000 trials, seed 7" in notes(one)[1]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"runs": {"a": RUN_A}, "measures": ["nDCG"]}, "measure 'nDCG' has no values in base; available: AP, P@5"),
        ({"runs": {"a": RUN_A}, "measures": ["AP"], "test": "sign"}, "choose one of: t, wilcoxon, randomization, bootstrap, tukey"),
        ({"runs": {}, "measures": ["AP"]}, "at least one run"),
        ({"runs": {"a": RUN_A}, "measures": []}, "at least one measure"),
        ({"runs": {"a": RUN_A}, "measures": ["AP"], "alpha": 5}, "alpha"),
        ({"runs": {"a": {"q1": {"AP": 0.2}, "q7": {"AP": 0.1}}}, "measures": ["AP"]}, "found 1"),
    ],
)
def test_errors_are_one_clear_line(kwargs, message: str) -> None:
    with pytest.raises(BM25LabError) as error:
        compare(BASELINE, baseline_name="base", **kwargs)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_deltas_of_an_uncompared_measure_is_an_error(two_runs: Comparison) -> None:
    assert two_runs.deltas("AP")["b"]["q1"] == pytest.approx(-0.05)
    with pytest.raises(BM25LabError, match="compared: AP, P@5"):
        two_runs.deltas("RR")


def test_json_rendering(two_runs: Comparison) -> None:
    parsed = json.loads(to_json(two_runs))
    assert [tuple(row) for row in parsed] == [JSON_KEYS] * 4
    assert parsed[0]["run"] == "run_a" and parsed[0]["wins"] == 2
    assert parsed[0]["p_adjusted"] == two_runs.rows[0].p_adjusted
    assert TEXT_RENDERERS["json"] is to_json


def test_markdown_rendering(two_runs: Comparison) -> None:
    text = to_markdown(two_runs)
    lines = text.splitlines()
    assert lines[0] == "| run | measure | mean | baseline | delta | p | p (holm) | 95% CI | W/T/L | sig |"
    assert lines[1].count("|") == lines[0].count("|")
    assert lines[2].startswith("| run_a | AP | 0.4750 | 0.3875 | +0.0875 |") and "| 2/1/1 |" in lines[2]
    assert "4 queries evaluated" in text and "Holm-Bonferroni correction over the 2 runs" in text
    single = to_markdown(compare(BASELINE, {"a|b": RUN_A}, ["AP"], trials=100))
    assert "p (holm)" not in single and "| a\\|b |" in single


def test_latex_rendering(two_runs: Comparison) -> None:
    text = to_latex(two_runs)
    assert text.startswith("\\begin{tabular}{llrrrrrrrc}\n\\toprule\n")
    assert "\\midrule" in text and "\\bottomrule" in text and text.rstrip().endswith("\\end{tabular}")
    assert "run\\_a & AP & 0.4750 & 0.3875 & +0.0875" in text and "95\\% CI" in text and "$\\Delta$" in text
    body = text.split("\\midrule\n")[1].split("\\bottomrule")[0].splitlines()
    assert len(body) == 4 and all(line.count(" & ") == 9 and line.endswith("\\\\") for line in body)
    assert "$\\uparrow$/$\\downarrow$: significantly better/worse than base" in text


def test_rich_table_marks_significant_rows() -> None:
    baseline = {f"q{i}": {"AP": i / 20} for i in range(1, 11)}
    better = {f"q{i}": {"AP": i / 20 + 0.1 + (i % 3) / 100} for i in range(1, 11)}
    noisy = {f"q{i}": {"AP": i / 20 + (0.05 if i % 2 else -0.05)} for i in range(1, 11)}
    result = compare(baseline, {"better": better, "noisy": noisy}, ["AP"], trials=500, baseline_name="bm25")
    console = Console(record=True, width=200)
    console.print(to_rich_table(result))
    text = console.export_text()
    better_line = next(line for line in text.splitlines() if "better" in line and "AP" in line)
    noisy_line = next(line for line in text.splitlines() if "noisy" in line)
    assert "▲" in better_line and "10/0/0" in better_line
    assert "▲" not in noisy_line and "▼" not in noisy_line and "5/0/5" in noisy_line
    assert "Runs against bm25" in text and "10 queries evaluated" in text
