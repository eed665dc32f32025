"""Paired significance tests against scipy on real per-query values, plus closed-form checks.

Real data: per-query AP of BM25 runs on the bundled Cranfield 1400 (``corpora.get("cranfield")``) under three
(k1, b) settings. Documents are scored with rank-bm25's BM25Okapi statistics (its idf with the epsilon
floor, document lengths, average length) over a crude lowercase \\w+ tokenisation, vectorised over the
query terms; AP comes from pytrec_eval ('map') against the bundled graded qrels. scipy and pytrec_eval are test-only oracles.
"""
from __future__ import annotations

import itertools
import math
import re
from pathlib import Path

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from bm25lab.engine.errors import BM25LabError, InputError
from bm25lab.evaluation.compare import compare
from bm25lab.evaluation.significance import (
    TESTS,
    Interval,
    TestResult,
    bootstrap_ci,
    bootstrap_test,
    get_test,
    holm,
    paired_t_test,
    randomization_test,
    student_t_sf,
)

SETTINGS = {"k1=1.2,b=0.75": (1.2, 0.75), "k1=0.5,b=0.3": (0.5, 0.3), "k1=2.0,b=0.9": (2.0, 0.9)}
RELATIVE = 1e-9


# --------------------------------------------------------------------------- Cranfield fixture


def _tokens(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        qid, _, docid, grade = line.split()
        qrels.setdefault(qid, {})[docid] = int(grade)
    return qrels


@pytest.fixture(scope="module")
def cranfield_ap() -> dict[str, dict[str, float]]:
    """{setting: {qid: AP}} for the three BM25 settings, all 225 judged queries."""
    import pytrec_eval
    from rank_bm25 import BM25Okapi

    from bm25lab import corpora

    cranfield = corpora.get("cranfield")
    docs = list(cranfield.documents())
    judged = cranfield.judged_queries()
    queries = [_tokens(text) for text in judged.values()]
    doc_ids = [d.id for d in docs]
    bm25 = BM25Okapi([_tokens(d.title + " " + d.text) for d in docs])
    vocabulary = sorted({t for q in queries for t in q})
    tf = {t: np.array([freqs.get(t, 0) for freqs in bm25.doc_freqs], dtype=np.float64) for t in vocabulary}
    length_ratio = np.asarray(bm25.doc_len, dtype=np.float64) / bm25.avgdl

    def scores(query: list[str], k1: float, b: float) -> np.ndarray:
        # BM25Okapi.get_scores: sum over query terms of idf * tf (k1 + 1) / (tf + k1 (1 - b + b dl/avgdl))
        total = np.zeros(len(doc_ids))
        for term in query:
            total += (bm25.idf.get(term) or 0) * tf[term] * (k1 + 1) / (tf[term] + k1 * (1 - b + b * length_ratio))
        return total

    # the vectorised scoring is BM25Okapi's own, checked on one query per setting
    for k1, b in SETTINGS.values():
        bm25.k1, bm25.b = k1, b
        np.testing.assert_allclose(scores(queries[0], k1, b), bm25.get_scores(queries[0]), rtol=1e-12)

    evaluator = pytrec_eval.RelevanceEvaluator(_qrels(cranfield.qrels_path), {"map"})
    result = {}
    for name, (k1, b) in SETTINGS.items():
        run = {}
        for qid, query in zip(judged, queries):
            s = scores(query, k1, b)
            top = np.argsort(-s, kind="stable")[:100]
            run[qid] = {doc_ids[j]: float(s[j]) for j in top}
        result[name] = {qid: values["map"] for qid, values in evaluator.evaluate(run).items()}
    return result


def _paired(cranfield_ap: dict[str, dict[str, float]], a: str, b: str) -> tuple[np.ndarray, np.ndarray]:
    qids = sorted(cranfield_ap[a])
    return np.array([cranfield_ap[a][q] for q in qids]), np.array([cranfield_ap[b][q] for q in qids])


def test_cranfield_fixture_is_real(cranfield_ap: dict[str, dict[str, float]]) -> None:
    assert all(len(per_query) == 225 for per_query in cranfield_ap.values())
    means = {name: np.mean(list(v.values())) for name, v in cranfield_ap.items()}
    assert all(0.15 < m < 0.45 for m in means.values()), means  # BM25 MAP on Cranfield is about 0.25


# --------------------------------------------------------------------------- t-test vs scipy


@pytest.mark.parametrize("a_name, b_name", list(itertools.permutations(SETTINGS, 2)))
def test_t_test_equals_scipy_ttest_rel_on_cranfield_ap(cranfield_ap, a_name: str, b_name: str) -> None:
    a, b = _paired(cranfield_ap, a_name, b_name)
    ours = paired_t_test(a, b)
    theirs = scipy.stats.ttest_rel(a, b)
    assert ours.statistic == pytest.approx(float(theirs.statistic), rel=RELATIVE)
    assert ours.p_value == pytest.approx(float(theirs.pvalue), rel=RELATIVE)
    assert ours.n == 225 and ours.trials is None and ours.test == "t"
    assert ours.mean_difference == pytest.approx(float(np.mean(a - b)), rel=1e-12)


def test_t_test_equals_scipy_on_query_subsets(cranfield_ap) -> None:
    """Small n (2, 3, 5, 10, 40 queries) exercises small degrees of freedom on real values."""
    a, b = _paired(cranfield_ap, "k1=1.2,b=0.75", "k1=0.5,b=0.3")
    nonzero = np.flatnonzero(a != b)
    for n in (2, 3, 5, 10, 40):
        idx = nonzero[:n]
        ours = paired_t_test(a[idx], b[idx])
        theirs = scipy.stats.ttest_rel(a[idx], b[idx])
        assert ours.statistic == pytest.approx(float(theirs.statistic), rel=RELATIVE)
        assert ours.p_value == pytest.approx(float(theirs.pvalue), rel=RELATIVE)


def test_t_test_keeps_precision_on_tiny_p_values() -> None:
    rng = np.random.default_rng(7)
    for n, shift in [(12, 4.0), (225, 0.8), (2000, 0.3), (5000, 0.2)]:
        b = rng.random(n)
        a = b + shift + rng.normal(scale=1.0, size=n)
        theirs = scipy.stats.ttest_rel(a, b)
        assert 0 < theirs.pvalue < 1e-6, (n, theirs.pvalue)
        assert paired_t_test(a, b).p_value == pytest.approx(float(theirs.pvalue), rel=RELATIVE)


@pytest.mark.parametrize("df", [1, 2, 5, 30, 224, 1999, 10_000])
def test_student_t_tail_equals_scipy(df: int) -> None:
    for t in (0.05, 0.5, 1.0, 1.96, 2.5, 4.0, 8.0, 20.0):
        expected = 2 * scipy.stats.t.sf(t, df)
        assert student_t_sf(t, df) == pytest.approx(expected, rel=RELATIVE)
        assert student_t_sf(-t, df) == student_t_sf(t, df)
    assert student_t_sf(0.0, df) == 1.0
    assert student_t_sf(math.inf, df) == 0.0


def test_t_test_degenerate_inputs() -> None:
    values = [0.125, 0.5, 0.75, 1.0]
    # identical runs: scipy returns nan; we say t = 0, p = 1
    assert (paired_t_test(values, values).statistic, paired_t_test(values, values).p_value) == (0.0, 1.0)
    # a constant, exactly representable nonzero difference: t = +-inf, p = 0 (scipy agrees)
    shifted = [v - 0.125 for v in values]
    better = paired_t_test(values, shifted)
    assert (better.statistic, better.p_value) == (math.inf, 0.0)
    assert paired_t_test(shifted, values).statistic == -math.inf


@pytest.mark.parametrize(
    "a, b",
    [
        ([0.5], [0.4]),
        ([], []),
        ([0.1, 0.2, 0.3], [0.1, 0.2]),
        ([0.1, math.nan], [0.2, 0.3]),
        ([[0.1, 0.2]], [[0.1, 0.2]]),
    ],
)
def test_bad_inputs_raise_a_clear_value_error(a, b) -> None:
    for test in TESTS.values():
        with pytest.raises(InputError) as error:
            test(a, b, 100, 0)
        assert isinstance(error.value, ValueError) and isinstance(error.value, BM25LabError)
        assert "\n" not in str(error.value)


def test_trials_must_be_a_positive_integer() -> None:
    with pytest.raises(InputError, match="trials"):
        randomization_test([0.1, 0.2], [0.2, 0.1], trials=0)
    with pytest.raises(InputError, match="trials"):
        bootstrap_ci([0.1, 0.2], trials=2.5)


# --------------------------------------------------------------------------- randomization test


def _synthetic_pair(seed: int, n: int, mean: float) -> tuple[np.ndarray, np.ndarray]:
    """Scores b in [0, 1) and a = b + d, d normal with unit sd recentred to exactly ``mean``,
    so that t = mean * sqrt(n) / sd(d) is fixed by the arguments rather than by the draw."""
    rng = np.random.default_rng(seed)
    b = rng.random(n)
    noise = rng.normal(size=n)
    return b + (noise - noise.mean()) / noise.std(ddof=1) + mean, b


def test_randomization_is_reproducible_with_a_seed(cranfield_ap) -> None:
    a, c = _paired(cranfield_ap, "k1=1.2,b=0.75", "k1=2.0,b=0.9")
    first = randomization_test(a, c, trials=5000, seed=11)
    assert first == randomization_test(a, c, trials=5000, seed=11)
    other = randomization_test(a, c, trials=5000, seed=12)
    assert other.p_value != first.p_value
    # both near the t-test's p (0.0066 on this pair); Monte Carlo standard error is about 0.001
    t_p = float(scipy.stats.ttest_rel(a, c).pvalue)
    assert 0.001 < t_p < 0.05
    assert abs(first.p_value - t_p) < 0.005 and abs(other.p_value - t_p) < 0.005
    assert first.statistic == pytest.approx(float(np.mean(a - c)), rel=1e-12)
    assert first.trials == 5000 and first.test == "randomization"


def test_randomization_approaches_the_t_test_on_a_large_sample() -> None:
    a, b = _synthetic_pair(seed=2024, n=2000, mean=0.045)
    t_p = float(scipy.stats.ttest_rel(a, b).pvalue)
    assert 0.03 < t_p < 0.06
    p = randomization_test(a, b, trials=20_000, seed=1).p_value
    assert abs(p - t_p) < 0.01


def test_randomization_matches_full_enumeration_on_ten_queries() -> None:
    """With n = 10 all 2^10 sign patterns can be listed: the exact two-sided permutation p."""
    d = np.array([0.31, -0.05, 0.12, 0.2, -0.11, 0.07, 0.15, 0.02, -0.03, 0.09])
    observed = abs(d.sum())
    flips = [abs(np.dot(signs, d)) >= observed - 1e-12 for signs in itertools.product((-1, 1), repeat=10)]
    exact = sum(flips) / len(flips)
    assert 0.02 < exact < 0.2
    p = randomization_test(d, np.zeros(10), trials=20_000, seed=3).p_value
    assert abs(p - exact) < 0.01  # Monte Carlo standard error ~ 0.002


def test_randomization_p_value_convention() -> None:
    # identical runs: every draw ties the observed |mean| 0, p = (trials + 1)/(trials + 1) = 1
    assert randomization_test([0.2, 0.4, 0.6], [0.2, 0.4, 0.6], trials=999).p_value == 1.0
    # 30 queries all better by 1: a draw reaches |sum| 30 only when no sign flips (chance 2^-29)
    worst = randomization_test(np.ones(30), np.zeros(30), trials=999, seed=5)
    assert worst.p_value == 1 / 1000  # never 0: the observed labelling counts as one draw


# --------------------------------------------------------------------------- bootstrap


def test_bootstrap_test_is_reproducible_and_approaches_the_t_test() -> None:
    a, b = _synthetic_pair(seed=99, n=2000, mean=-0.05)
    t_p = float(scipy.stats.ttest_rel(a, b).pvalue)
    assert 0.01 < t_p < 0.04
    result = bootstrap_test(a, b, trials=10_000, seed=4)
    assert result == bootstrap_test(a, b, trials=10_000, seed=4)
    assert result.p_value != bootstrap_test(a, b, trials=5_000, seed=5).p_value
    assert abs(result.p_value - t_p) < 0.01
    assert result.statistic == pytest.approx(float(np.mean(a - b)), rel=1e-12) and result.statistic < 0
    assert bootstrap_test([0.3, 0.1, 0.2], [0.3, 0.1, 0.2], trials=500).p_value == 1.0


def test_bootstrap_ci_contains_the_true_mean() -> None:
    rng = np.random.default_rng(5)
    d = rng.normal(loc=0.3, scale=1.0, size=400)
    low, high = bootstrap_ci(d, trials=10_000, seed=0, level=0.95)
    assert low < 0.3 < high
    assert low < d.mean() < high
    # width close to the normal theory 2 * 1.96 * s / sqrt(n)
    assert high - low == pytest.approx(2 * 1.959964 * d.std(ddof=1) / math.sqrt(d.size), rel=0.1)
    assert isinstance(bootstrap_ci(d, trials=100), Interval)
    assert bootstrap_ci(d, trials=2000, seed=8) == bootstrap_ci(d, trials=2000, seed=8)
    narrower = bootstrap_ci(d, trials=10_000, seed=0, level=0.5)
    assert low < narrower.low < narrower.high < high


def test_bootstrap_ci_coverage_is_near_its_level() -> None:
    rng = np.random.default_rng(12)
    hits = 0
    for _ in range(200):
        low, high = bootstrap_ci(rng.normal(loc=-0.1, scale=0.5, size=60), trials=1000, seed=1)
        hits += low < -0.1 < high
    assert 0.88 <= hits / 200 <= 0.99  # percentile intervals under-cover slightly at n = 60


def test_bootstrap_ci_of_a_constant_difference_is_a_point() -> None:
    assert bootstrap_ci([0.25, 0.25, 0.25], trials=100) == (0.25, 0.25)
    with pytest.raises(InputError, match="level"):
        bootstrap_ci([0.1, 0.2], level=95)


# --------------------------------------------------------------------------- Holm


def test_holm_textbook_example() -> None:
    # m = 4, sorted: 0.005, 0.01, 0.03, 0.04, multiplied by 4, 3, 2, 1:
    #   0.005 * 4 = 0.02; 0.01 * 3 = 0.03; 0.03 * 2 = 0.06; 0.04 * 1 = 0.04 -> max(0.06, 0.04) = 0.06
    # back in input order (0.01, 0.04, 0.03, 0.005): 0.03, 0.06, 0.06, 0.02
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02], abs=1e-15)


def test_holm_small_cases() -> None:
    assert holm([]) == []
    assert holm([0.2]) == [0.2]
    assert holm([0.5, 0.6]) == [1.0, 1.0]  # 0.5 * 2 = 1.0; 0.6 * 1 -> max(1.0, 0.6), capped at 1
    assert holm((0.01, 0.01, 0.5)) == pytest.approx([0.03, 0.03, 0.5])
    with pytest.raises(InputError):
        holm([0.1, 1.5])
    with pytest.raises(InputError):
        holm([math.nan])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=12), st.sampled_from([0.01, 0.05, 0.1]))
def test_holm_rejects_exactly_what_the_step_down_procedure_rejects(p_values: list[float], alpha: float) -> None:
    adjusted = holm(p_values)
    assert all(p <= adj <= 1.0 for p, adj in zip(p_values, adjusted))
    for i, j in itertools.product(range(len(p_values)), repeat=2):
        if p_values[i] <= p_values[j]:
            assert adjusted[i] <= adjusted[j]
    # Holm (1979): walk up the sorted p-values, reject while (m - k + 1) p_(k) <= alpha, then stop
    m = len(p_values)
    rejected = set()
    for k, i in enumerate(sorted(range(m), key=lambda i: p_values[i]), start=1):
        if (m - k + 1) * p_values[i] > alpha:
            break
        rejected.add(i)
    assert {i for i in range(m) if adjusted[i] <= alpha} == rejected


# --------------------------------------------------------------------------- registry and compare()


def test_registry_runs_every_test_by_name() -> None:
    assert set(TESTS) == {"t", "wilcoxon", "randomization", "bootstrap"}
    a, b = [0.5, 0.7, 0.2, 0.9, 0.4], [0.4, 0.6, 0.3, 0.5, 0.1]
    for name in TESTS:
        result = get_test(name)(a, b, 500, 0)
        assert isinstance(result, TestResult) and result.test == name and 0 < result.p_value <= 1
    with pytest.raises(BM25LabError, match="t, wilcoxon, randomization, bootstrap"):
        get_test("sign")


def test_compare_reproduces_scipy_and_holm_on_cranfield(cranfield_ap) -> None:
    per_query = {name: {q: {"AP": v} for q, v in values.items()} for name, values in cranfield_ap.items()}
    baseline_name, *run_names = SETTINGS
    result = compare(
        per_query[baseline_name], {name: per_query[name] for name in run_names}, ["AP"],
        trials=2000, baseline_name=baseline_name,
    )  # fmt: skip
    assert result.num_queries == 225
    p = {}
    for row in result.rows:
        run, base = _paired(cranfield_ap, row.run, baseline_name)
        p[row.run] = float(scipy.stats.ttest_rel(run, base).pvalue)
        assert row.p_value == pytest.approx(p[row.run], rel=RELATIVE)
        assert row.delta == pytest.approx(float(np.mean(run - base)), abs=1e-15)
        counts = (int(np.sum(run > base)), int(np.sum(run == base)), int(np.sum(run < base)))
        assert (row.wins, row.ties, row.losses) == counts
        assert row.ci_low < row.delta < row.ci_high
    # Holm over two runs: the smaller p doubles, the larger stays unless below the doubled smaller one
    small, large = sorted(p.values())
    expected = {run: min(1.0, 2 * small) if p[run] == small else max(large, 2 * small) for run in p}
    assert {row.run: row.p_adjusted for row in result.rows} == pytest.approx(expected, rel=RELATIVE)
