"""Paired significance tests for per-query scores, in pure numpy (no scipy at run time).

Every test compares two paired samples ``a`` and ``b`` (one value per query, same order) through
their differences ``d_i = a_i - b_i`` and is two-sided: the null hypothesis is that neither system
is better. A positive statistic means ``a`` scored higher on average.

- :func:`paired_t_test`: Student's paired t-test, equal to ``scipy.stats.ttest_rel(a, b)``.
- :func:`randomization_test`: Fisher's paired randomization (sign-flip permutation) test.
- :func:`bootstrap_test`: paired bootstrap test of the mean difference on data shifted to the null.
- :func:`bootstrap_ci`: percentile bootstrap confidence interval of the mean difference.
- :func:`wilcoxon_test`: Wilcoxon's paired signed-rank test, equal to ``scipy.stats.wilcoxon(a, b)``.
- :func:`tukey_hsd`: Tukey's honestly significant difference over several systems at once, equal to
  ``scipy.stats.tukey_hsd`` (which ranx's ``compare(..., stat_test="tukey")`` calls).
- :func:`holm` (from :mod:`bm25lab.evaluation.corrections`): Holm-Bonferroni adjustment.

``TESTS`` maps the names of the paired tests (``t``, ``wilcoxon``, ``randomization``, ``bootstrap``) to
functions of one shape ``(a, b, trials, seed) -> TestResult``; :func:`get_test` looks a name up.
``FAMILY_TESTS`` holds every test the command line offers in the shape ``(samples, pairs, trials, seed)
-> [TestResult per pair]``: each paired test applied pair by pair, and ``tukey``, whose p-values are
adjusted for the whole family already (``ADJUSTED``).

Resampling tests draw from ``numpy.random.default_rng(seed)`` in fixed-size chunks, so a result
depends only on (data, trials, seed), never on the machine or on memory limits.
Source on their use in IR: Smucker, Allan and Carterette, "A comparison of statistical significance
tests for information retrieval evaluation", CIKM 2007.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Callable, NamedTuple, Sequence

import numpy as np
from numpy.typing import ArrayLike

from ..engine.errors import BM25LabError, InputError
from .corrections import holm
from .distributions import normal_two_sided, signed_rank_counts, studentized_range_sf

__all__ = [
    "TestResult",
    "Interval",
    "paired_t_test",
    "randomization_test",
    "bootstrap_test",
    "bootstrap_ci",
    "holm",
    "student_t_sf",
    "wilcoxon_test",
    "tukey_hsd",
    "TukeyResult",
    "TESTS",
    "FAMILY_TESTS",
    "ADJUSTED",
    "get_test",
    "get_family_test",
]

DEFAULT_TRIALS = 10_000
# Resampling works on blocks of at most this many float64 cells (8 MiB) at a time.
_CHUNK_CELLS = 1 << 20
# Two resampled sums closer than this share of sum(|d|) count as equal (absorbs rounding).
_TIE_TOLERANCE = 1e-10


@dataclass(frozen=True, slots=True)
class TestResult:
    """Outcome of one paired two-sided test.

    ``statistic`` is t for the t-test and the observed mean difference mean(a - b) for the
    resampling tests; ``trials`` is ``None`` for the t-test.
    """

    __test__ = False  # not a pytest test class, despite its name

    test: str
    statistic: float
    p_value: float
    mean_difference: float
    n: int
    trials: int | None = None


class Interval(NamedTuple):
    """A confidence interval; unpacks as ``low, high``."""

    low: float
    high: float


# --------------------------------------------------------------------------- input checks


def _paired_differences(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """``a - b`` as a float64 vector, after checking shape, length >= 2 and finiteness."""
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.ndim != 1 or y.ndim != 1:
        raise InputError(f"paired tests need two 1-D samples, got shapes {x.shape} and {y.shape}")
    if x.shape != y.shape:
        raise InputError(f"paired samples differ in length: {x.size} and {y.size}")
    return _checked_sample(x - y)


def _checked_sample(d: ArrayLike) -> np.ndarray:
    """A finite float64 vector of at least two values, or an :class:`InputError`."""
    d = np.asarray(d, dtype=np.float64)
    if d.ndim != 1:
        raise InputError(f"expected a 1-D sample, got shape {d.shape}")
    if d.size < 2:
        raise InputError(f"a paired test needs at least 2 paired values, got {d.size}")
    if not np.all(np.isfinite(d)):
        raise InputError("paired values must be finite (found NaN or infinity)")
    return d


def _checked_trials(trials: int) -> int:
    if isinstance(trials, bool) or int(trials) != trials or trials < 1:
        raise InputError(f"trials must be a positive integer, got {trials!r}")
    return int(trials)


def _chunks(trials: int, n: int) -> list[int]:
    """Split ``trials`` into blocks of at most ``_CHUNK_CELLS / n`` rows (at least one row)."""
    size = max(1, _CHUNK_CELLS // n)
    return [min(size, trials - start) for start in range(0, trials, size)]


# --------------------------------------------------------------------------- Student's t


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function, by the modified Lentz method.

    I_x(a, b) = x^a (1-x)^b / (a B(a, b)) * 1 / (1 + d_1 / (1 + d_2 / (1 + ...))) with
    d_{2m+1} = -(a+m)(a+b+m) x / ((a+2m)(a+2m+1)),  d_{2m} = m(b-m) x / ((a+2m-1)(a+2m)).
    Numerical Recipes in C, 2nd ed., section 6.4 (``betacf``); converges fast for
    x < (a+1)/(a+b+2), in O(sqrt(max(a, b))) steps.
    """
    tiny = 1e-300
    eps = 1e-16
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    max_iter = 1000 + 20 * int(math.sqrt(max(a, b)))
    for m in range(1, max_iter + 1):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            delta = c * d
            h *= delta
        if abs(delta - 1.0) < eps:
            return h
    raise ArithmeticError(f"incomplete beta continued fraction did not converge (a={a}, b={b}, x={x})")


_STIRLING = (1.0 / 12.0, -1.0 / 360.0, 1.0 / 1260.0, -1.0 / 1680.0, 1.0 / 1188.0)


def _stirling_correction(x: float) -> float:
    """ln Gamma(x) - [(x - 1/2) ln x - x + ln(2 pi)/2], by its asymptotic series (x >= 20: error < 1e-17).

    The series is 1/(12x) - 1/(360x^3) + 1/(1260x^5) - 1/(1680x^7) + 1/(1188x^9) (A&S 6.1.41).
    """
    inv, inv2 = 1.0 / x, 1.0 / (x * x)
    return inv * sum(c * inv2**k for k, c in enumerate(_STIRLING))


def _log_beta(a: float, b: float) -> float:
    """ln B(a, b) = ln Gamma(a) + ln Gamma(b) - ln Gamma(a + b), without cancellation for large a.

    For a >= 20, ln Gamma(a + b) - ln Gamma(a) is taken from Stirling's series as
    (a - 1/2) ln(1 + b/a) + b ln(a + b) - b + correction(a + b) - correction(a), which keeps its
    absolute error near 1e-16 where subtracting two ``lgamma`` values (each ~ a ln a) does not.
    """
    big, small = max(a, b), min(a, b)
    if big < 20.0:
        return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    ratio = (
        (big - 0.5) * math.log1p(small / big)
        + small * math.log(big + small)
        - small
        + _stirling_correction(big + small)
        - _stirling_correction(big)
    )
    return math.lgamma(small) - ratio


def _regularized_beta(a: float, b: float, x: float, y: float, log_x: float, log_y: float) -> float:
    """Regularized incomplete beta I_x(a, b), given ``y = 1 - x`` and both logarithms exactly.

    Passing ``y``, ``ln x`` and ``ln y`` separately keeps full relative precision when x is close
    to 0 or 1 (NR 6.4 ``betai``, with the symmetry I_x(a, b) = 1 - I_{1-x}(b, a) on the side where
    the continued fraction converges).
    """
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    front = math.exp(a * log_x + b * log_y - _log_beta(a, b))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, y) / b


def student_t_sf(t: float, df: float) -> float:
    """Two-sided tail P(|T| >= |t|) of Student's t with ``df`` degrees of freedom.

    P(|T| >= |t|) = I_{df/(df+t^2)}(df/2, 1/2)  (Abramowitz and Stegun 26.7.1 with 26.5.27).
    ``x = df/(df+t^2)``, ``1 - x = t^2/(df+t^2)`` and their logarithms (ln x = -log1p(t^2/df)) are
    formed directly, so tiny p-values keep their relative precision (checked with mpmath: about 1e-13
    relative error up to df = 10^4, 1e-11 at 10^6, 1e-10 at 10^7).
    """
    if df <= 0:
        raise InputError(f"degrees of freedom must be positive, got {df}")
    if math.isnan(t):
        return math.nan
    if math.isinf(t):
        return 0.0
    if t == 0.0:
        return 1.0
    t2 = t * t
    log_x = -math.log1p(t2 / df)
    log_y = math.log(t2) - math.log(df) + log_x
    return _regularized_beta(df / 2.0, 0.5, df / (df + t2), t2 / (df + t2), log_x, log_y)


def paired_t_test(a: ArrayLike, b: ArrayLike) -> TestResult:
    """Student's paired two-sided t-test of mean(a - b) = 0.

    t = mean(d) / (s_d / sqrt(n)), s_d the sample standard deviation (ddof = 1), df = n - 1,
    p = P(|T_{n-1}| >= |t|). Equals ``scipy.stats.ttest_rel(a, b)`` (statistic and p-value).

    Degenerate cases, where scipy returns NaN or infinity: when every difference is 0 the runs are
    identical on these queries and the result is t = 0, p = 1; when the differences are all equal
    and nonzero, t = +-inf and p = 0.
    """
    d = _paired_differences(a, b)
    n = d.size
    mean = float(d.mean())
    sd = float(d.std(ddof=1))
    if sd == 0.0:
        t = 0.0 if mean == 0.0 else math.copysign(math.inf, mean)
    else:
        t = mean / (sd / math.sqrt(n))
    p = student_t_sf(t, n - 1)
    return TestResult("t", t, p, mean, n)


# --------------------------------------------------------------------------- resampling tests


def _tail_p_value(resampled_sums: list[np.ndarray], observed: float, scale: float, trials: int) -> float:
    """(count of |resampled| >= |observed| + 1) / (trials + 1): the observed data counts as one draw.

    This is the add-one convention of Phipson and Smyth (2010), "Permutation p-values should never
    be zero"; ``scale`` (sum |d|) sets the rounding tolerance of the comparison.
    """
    threshold = abs(observed) - _TIE_TOLERANCE * scale
    count = sum(int(np.count_nonzero(np.abs(s) >= threshold)) for s in resampled_sums)
    return (count + 1) / (trials + 1)


def randomization_test(a: ArrayLike, b: ArrayLike, trials: int = DEFAULT_TRIALS, seed: int = 0) -> TestResult:
    """Paired randomization (sign-flip permutation) test, two-sided on |mean(a - b)|.

    Under the null the labels a/b of each query are exchangeable, so each difference d_i keeps or
    flips its sign with probability 1/2. Each of ``trials`` draws flips signs at random;
    p = (#{draws with |sum s_i d_i| >= |sum d_i|} + 1) / (trials + 1)  (Monte Carlo, add-one:
    never 0, and exact in expectation as a test). Fisher (1935); Smucker et al. (CIKM 2007).
    The statistic is the observed mean difference.
    """
    d = _paired_differences(a, b)
    trials = _checked_trials(trials)
    rng = np.random.default_rng(seed)
    total = float(d.sum())
    sums = []
    for rows in _chunks(trials, d.size):
        # one random bit per query (unpacked from random bytes): 1 keeps the sign, 0 flips it, and
        # sum_i s_i d_i = 2 * sum_{bit_i = 1} d_i - sum_i d_i
        random_bytes = rng.integers(0, 256, size=(rows, (d.size + 7) // 8), dtype=np.uint8)
        keep = np.unpackbits(random_bytes, axis=1, count=d.size).astype(bool)
        sums.append(2.0 * np.where(keep, d, 0.0).sum(axis=1) - total)  # numpy's pairwise sum, not BLAS's: one
        # order of additions on every CPU (a matrix product's order follows the BLAS kernel the CPU picks)
    p = _tail_p_value(sums, total, float(np.abs(d).sum()), trials)
    return TestResult("randomization", float(d.mean()), p, float(d.mean()), d.size, trials)


def _bootstrap_means(d: np.ndarray, trials: int, seed: int) -> np.ndarray:
    """Means of ``trials`` resamples of ``d`` with replacement (same size as ``d``)."""
    rng = np.random.default_rng(seed)
    means = [d[rng.integers(0, d.size, size=(rows, d.size))].mean(axis=1) for rows in _chunks(trials, d.size)]
    return np.concatenate(means)


def bootstrap_test(a: ArrayLike, b: ArrayLike, trials: int = DEFAULT_TRIALS, seed: int = 0) -> TestResult:
    """Paired bootstrap test of mean(a - b) = 0, two-sided.

    The differences are shifted to the null, d0_i = d_i - mean(d), and resampled with replacement
    ``trials`` times; p = (#{resamples with |mean(d0*)| >= |mean(d)|} + 1) / (trials + 1).
    Efron and Tibshirani, "An Introduction to the Bootstrap" (1993), section 16.4, with the plain
    mean as the statistic (not the studentized one). The statistic is the observed mean difference.
    """
    d = _paired_differences(a, b)
    trials = _checked_trials(trials)
    mean = float(d.mean())
    centred = d - mean
    sums = [_bootstrap_means(centred, trials, seed) * d.size]
    p = _tail_p_value(sums, float(d.sum()), float(np.abs(d).sum()), trials)
    return TestResult("bootstrap", mean, p, mean, d.size, trials)


def bootstrap_ci(
    differences: ArrayLike, trials: int = DEFAULT_TRIALS, seed: int = 0, level: float = 0.95
) -> Interval:
    """Percentile bootstrap confidence interval of the mean of ``differences``.

    Resample the differences with replacement ``trials`` times and take the (1 - level)/2 and
    (1 + level)/2 quantiles of the resampled means (numpy's default linear interpolation).
    Efron and Tibshirani (1993), chapter 13.3.
    """
    d = _checked_sample(differences)
    trials = _checked_trials(trials)
    if not 0.0 < level < 1.0:
        raise InputError(f"confidence level must lie strictly between 0 and 1, got {level}")
    means = _bootstrap_means(d, trials, seed)
    low, high = np.quantile(means, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    return Interval(float(low), float(high))


# --------------------------------------------------------------------------- Wilcoxon's signed-rank test


def _average_ranks(x: np.ndarray) -> tuple[np.ndarray, bool]:
    """Ranks 1..n of ``x`` ascending, tied values sharing their mean rank; and whether any tie occurred."""
    order = np.argsort(x, kind="stable")
    sorted_x = x[order]
    starts = np.flatnonzero(np.r_[True, sorted_x[1:] != sorted_x[:-1]])
    ends = np.r_[starts[1:], x.size]
    mean_rank = (starts + ends + 1) / 2.0  # ranks starts+1 .. ends, averaged
    ranks = np.empty(x.size)
    ranks[order] = np.repeat(mean_rank, ends - starts)
    return ranks, bool((ends - starts > 1).any())


def _exact_signed_rank_p(r_plus: float, n: int) -> float:
    """Two-sided exact p of W+ = ``r_plus`` among n untied nonzero differences: 2 min(P(W+ >= floor r),
    P(W+ <= ceil r)), at most 1 (scipy's ``method="exact"``)."""
    counts = signed_rank_counts(n)
    total = 2 ** n
    upper = sum(counts[int(math.floor(r_plus)):])
    lower = sum(counts[: int(math.ceil(r_plus)) + 1])
    return min(1.0, 2 * min(upper, lower) / total)


def _permutation_signed_rank_p(ranks: np.ndarray, positive: np.ndarray, r_plus: float) -> float:
    """Two-sided p of W+ over all 2^n sign patterns of the n differences (zeros among them keep W+):
    2 min(#{W+ <= r}, #{W+ >= r}) / 2^n with a relative tolerance of 100 eps (scipy's exact
    ``permutation_test``, which ``wilcoxon`` runs for n <= 13 with ties or zeros)."""
    n = positive.size
    patterns = (np.arange(2 ** n)[:, None] >> np.arange(n)[None, :]) & 1
    null = patterns @ ranks
    gamma = abs(np.finfo(np.float64).eps * 100 * r_plus)
    less = np.count_nonzero(null <= r_plus + gamma) / null.size
    greater = np.count_nonzero(null >= r_plus - gamma) / null.size
    return float(min(1.0, 2.0 * min(less, greater)))


def wilcoxon_test(a: ArrayLike, b: ArrayLike, trials: int = DEFAULT_TRIALS, seed: int = 0) -> TestResult:
    """Wilcoxon's paired signed-rank test, two-sided, with scipy's defaults: equals ``scipy.stats.wilcoxon(a,
    b)`` (``zero_method="wilcox"``, ``correction=False``, ``method="auto"``) in statistic and p-value.

    Zero differences are dropped; the others are ranked by |d|, ties sharing their mean rank; W+ sums
    the ranks of the positive ones, the statistic is min(W+, W-). The p-value, as ``method="auto"``
    chooses it from the number of pairs n (zeros included) and the nonzero count m:

    - n <= 50, no tie and no zero: exact, from the null distribution of W+ (:func:`signed_rank_counts`);
    - n <= 13 with ties or zeros: exact over the 2^n sign patterns of the ranks;
    - otherwise the normal approximation z = (W+ - m(m+1)/4) / se, se^2 = (m(m+1)(2m+1) - sum(t^3 - t)/2) / 24
      over the tie groups t, without continuity correction; p = P(|Z| >= |z|).

    ``trials`` and ``seed`` do not apply. Every difference 0 gives p = 1 (scipy: NaN).
    """
    d = _paired_differences(a, b)
    n = d.size
    nonzero = d[d != 0.0]
    m = nonzero.size
    if m == 0:
        return TestResult("wilcoxon", 0.0, 1.0, 0.0, n)
    ranks, tied = _average_ranks(np.abs(nonzero))
    r_plus = float(np.sum(ranks[nonzero > 0]))
    r_minus = float(np.sum(ranks[nonzero < 0]))
    if n <= 50 and not tied and m == n:
        p = _exact_signed_rank_p(r_plus, m)
    elif n <= 13:
        p = _permutation_signed_rank_p(ranks, nonzero > 0, r_plus)
    else:
        _, counts = np.unique(np.abs(nonzero), return_counts=True)
        variance = (m * (m + 1.0) * (2.0 * m + 1.0) - float(np.sum(counts ** 3 - counts)) / 2.0) / 24.0
        p = normal_two_sided((r_plus - m * (m + 1.0) * 0.25) / math.sqrt(variance))
    return TestResult("wilcoxon", min(r_plus, r_minus), p, float(d.mean()), n)


# --------------------------------------------------------------------------- Tukey's HSD


@dataclass(frozen=True, eq=False)
class TukeyResult:
    """Tukey's HSD over k systems: ``differences[i, j]`` = mean_i - mean_j, ``p_values[i, j]`` its p-value
    (1 on the diagonal), ``df`` the error degrees of freedom N - k."""

    differences: np.ndarray
    p_values: np.ndarray
    df: int
    standard_error: float


def tukey_hsd(samples: Sequence[ArrayLike]) -> TukeyResult:
    """Tukey's honestly significant difference test of every pair of k >= 2 samples, equal to
    ``scipy.stats.tukey_hsd(*samples)`` (the oracle of the tests, and what ranx calls).

    The design is scipy's (and ranx's): a one-way layout of independent samples with equal variances, not
    a repeated-measures (two-way, queries as blocks) one. MSE = sum over the samples of their squared
    deviations / (N - k); for samples i, j: q = |mean_i - mean_j| / sqrt(MSE / 2 (1/n_i + 1/n_j)), p =
    P(Q_{k, N-k} > q) of the studentized range (:func:`~bm25lab.evaluation.distributions.studentized_range_sf`).
    The p-values hold for the whole family (no further correction is needed).
    """
    groups = [_checked_sample(x) for x in samples]
    if len(groups) < 2:
        raise InputError(f"Tukey's HSD needs at least 2 samples, got {len(groups)}")
    k = len(groups)
    sizes = np.array([g.size for g in groups], dtype=np.float64)
    means = np.array([g.mean() for g in groups])
    df = int(sizes.sum()) - k
    mse = float(sum(float(np.var(g, ddof=1)) * (g.size - 1) for g in groups)) / df
    differences = means[:, None] - means[None, :]
    error = np.sqrt(mse / 2.0 * (1.0 / sizes[:, None] + 1.0 / sizes[None, :]))
    p = np.ones((k, k))
    for i, j in itertools.combinations(range(k), 2):
        q = abs(differences[i, j]) / error[i, j] if error[i, j] > 0 else (math.inf if differences[i, j] else 0.0)
        p[i, j] = p[j, i] = studentized_range_sf(q, k, df)
    return TukeyResult(differences, p, df, float(error[0, 1]))


# --------------------------------------------------------------------------- registry

PairedTest = Callable[[ArrayLike, ArrayLike, int, int], TestResult]


def _t_entry(a: ArrayLike, b: ArrayLike, trials: int, seed: int) -> TestResult:
    """The t-test in the registry's shape: ``trials`` and ``seed`` do not apply."""
    return paired_t_test(a, b)


TESTS: dict[str, PairedTest] = {
    "t": _t_entry,
    "wilcoxon": wilcoxon_test,
    "randomization": randomization_test,
    "bootstrap": bootstrap_test,
}

FamilyTest = Callable[[Sequence[np.ndarray], Sequence[tuple[int, int]], int, int], list[TestResult]]
"""``(samples, pairs, trials, seed) -> [TestResult of each pair (i, j), sample i against sample j]``."""


def _pairwise(test: PairedTest) -> FamilyTest:
    """A paired test applied to each pair of the family on its own."""

    def family(samples: Sequence[np.ndarray], pairs: Sequence[tuple[int, int]], trials: int, seed: int) -> list[TestResult]:
        return [test(samples[i], samples[j], trials, seed) for i, j in pairs]

    return family


def _tukey_family(samples: Sequence[np.ndarray], pairs: Sequence[tuple[int, int]], trials: int, seed: int) -> list[TestResult]:
    """Tukey's HSD over all the samples, read for the pairs asked (``trials`` and ``seed`` do not apply)."""
    result = tukey_hsd(samples)
    return [TestResult("tukey", float(result.differences[i, j]), float(result.p_values[i, j]),
                       float(result.differences[i, j]), int(np.asarray(samples[i]).size)) for i, j in pairs]


FAMILY_TESTS: dict[str, FamilyTest] = {**{name: _pairwise(test) for name, test in TESTS.items()}, "tukey": _tukey_family}
"""Every test by the name ``compare --test`` takes."""
ADJUSTED = frozenset({"tukey"})
"""Tests whose p-values hold for the whole family already: no correction applies to them."""

TEST_TITLES: dict[str, str] = {
    "t": "paired t-test",
    "wilcoxon": "Wilcoxon signed-rank test (scipy's defaults: zeros dropped, no continuity correction, exact for "
                "n <= 50 without ties)",
    "randomization": "paired randomization test",
    "bootstrap": "paired bootstrap test",
    "tukey": "Tukey's HSD over all the systems (one-way, as scipy.stats.tukey_hsd and ranx)",
}
RESAMPLED = frozenset({"randomization", "bootstrap"})


def get_test(name: str) -> PairedTest:
    """The paired test registered under ``name``, or a :class:`BM25LabError` listing the names."""
    try:
        return TESTS[name]
    except KeyError:
        raise BM25LabError(f"unknown significance test {name!r}; choose one of: {', '.join(TESTS)}") from None


def get_family_test(name: str) -> FamilyTest:
    """The test registered in :data:`FAMILY_TESTS` under ``name``, or a :class:`BM25LabError` listing the names."""
    try:
        return FAMILY_TESTS[name]
    except KeyError:
        raise BM25LabError(f"unknown significance test {name!r}; choose one of: {', '.join(FAMILY_TESTS)}") from None
