"""Null distributions of the significance tests, in numpy and ``math`` (no scipy at run time).

- :func:`normal_two_sided`: P(|Z| >= |z|) of a standard normal.
- :func:`signed_rank_counts`: the exact null distribution of Wilcoxon's signed-rank statistic W+ (no ties).
- :func:`studentized_range_sf`: P(Q > q) of the studentized range of k means with df degrees of freedom,
  which Tukey's HSD test reads; equal to ``scipy.stats.studentized_range.sf`` (tests: relative 1e-9
  where the value is above 1e-12, absolute 1e-15 below).
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

__all__ = ["normal_two_sided", "signed_rank_counts", "studentized_range_sf"]

_SQRT2 = math.sqrt(2.0)
_erfc = np.frompyfunc(math.erfc, 1, 1)


def normal_two_sided(z: float) -> float:
    """P(|Z| >= |z|) = erfc(|z| / sqrt 2)."""
    return math.erfc(abs(z) / _SQRT2)


@lru_cache(maxsize=64)
def signed_rank_counts(n: int) -> tuple[int, ...]:
    """For W+ = the sum of the ranks 1..n of the positive differences under the null (each sign +/- with
    probability 1/2, no ties, no zeros): the number of the 2^n sign patterns giving W+ = w, for w = 0 ..
    n(n+1)/2. Counted exactly with Python integers: the subsets of {1..n} by their sum."""
    counts = [1] + [0] * (n * (n + 1) // 2)
    for rank in range(1, n + 1):
        for total in range(rank * (rank + 1) // 2, rank - 1, -1):
            counts[total] += counts[total - rank]
    return tuple(counts)


def _phi(x: np.ndarray) -> np.ndarray:
    """The standard normal's lower tail Phi(x) = erfc(-x / sqrt 2) / 2, to full relative precision."""
    return 0.5 * _erfc(-x / _SQRT2).astype(np.float64)


_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(16)


def _panels(low: float, high: float, width: float) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights of composite 16-point Gauss-Legendre on [low, high], panels at most ``width`` wide."""
    count = max(1, math.ceil((high - low) / width))
    edges = np.linspace(low, high, count + 1)
    half = np.diff(edges) / 2.0
    centre = edges[:-1] + half
    nodes = (centre[:, None] + half[:, None] * _GL_NODES[None, :]).ravel()
    weights = (half[:, None] * _GL_WEIGHTS[None, :]).ravel()
    return nodes, weights


def _range_sf_known_sigma(w: np.ndarray, k: int) -> np.ndarray:
    """P(range of k standard normals > w), for each w of ``w`` (> 0):
    k * integral of phi(z) [Phi(z)^(k-1) - (Phi(z) - Phi(z-w))^(k-1)] dz.

    The bracket is formed as -Phi(z)^(k-1) expm1((k-1) ln(1 - Phi(z-w)/Phi(z))), with the ratio's
    logarithm by ``log1p`` while Phi(z-w) is small against Phi(z) (the far tail keeps its digits) and
    from the difference of upper tails otherwise. Composite Gauss-Legendre over z in [-9, max w + 9]."""
    z, weights = _panels(-9.0, float(w.max()) + 9.0, 1.25)
    a = _phi(z)[None, :]
    shifted = z[None, :] - w[:, None]
    tail = 0.5 * _erfc(np.abs(shifted) / _SQRT2).astype(np.float64)  # the smaller tail of Phi at z - w
    below = shifted <= 0.0
    b = np.where(below, tail, 1.0 - tail)  # Phi(z - w), to full precision where it is small
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = b / a
        c = np.where(below, a - b, tail - _phi(-z)[None, :])  # Phi(z) - Phi(z - w), by upper tails above 0
        log_share = np.where(ratio < 0.5, np.log1p(-ratio), np.log(np.maximum(c, 0.0) / a))
        bracket = -(a ** (k - 1)) * np.expm1((k - 1) * log_share)
    bracket = np.where(a > 0.0, bracket, 0.0)
    density = np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    return k * (bracket @ (weights * density))


def _chi_over_root_df_log_density(s: np.ndarray, df: float) -> np.ndarray:
    """ln of the density of s = chi_df / sqrt(df): df^(df/2) s^(df-1) e^(-df s^2/2) / (Gamma(df/2) 2^(df/2-1))."""
    return (0.5 * df * math.log(df) - math.lgamma(0.5 * df) - (0.5 * df - 1.0) * math.log(2.0)
            + (df - 1.0) * np.log(s) - 0.5 * df * s * s)


def studentized_range_sf(q: float, k: int, df: float) -> float:
    """P(Q > q) for the studentized range Q of k means with ``df`` degrees of freedom for the variance:

    P(Q > q) = integral over s > 0 of f(s) P(range of k standard normals > q s) ds, with f the density of
    chi_df / sqrt(df) (Lund and Lund, Applied Statistics 32, 1983; scipy's ``studentized_range``). The
    outer integral runs over ln s (composite Gauss-Legendre over the range where f holds all but 1e-30
    of its mass), the inner over z (:func:`_range_sf_known_sigma`)."""
    if not (k >= 2 and df > 0):
        raise ValueError(f"the studentized range needs k >= 2 and df > 0, got k={k}, df={df}")
    if math.isnan(q):
        return math.nan
    if q <= 0.0:
        return 1.0
    if math.isinf(q):
        return 0.0
    # ln s = ln(chi^2 / df) / 2; chi^2_df lies within its mean -+ 14 sd with all but ~1e-30 of its mass
    # (and above 1e-30 * df at its low end when df is small), so take u = ln s over that range
    spread = 14.0 * math.sqrt(2.0 * df)
    low = max(df - spread, df * 1e-30 ** (2.0 / df) if df < 60 else 1e-300, 1e-300)
    high = df + spread + 60.0
    u_low, u_high = 0.5 * math.log(low / df), 0.5 * math.log(high / df)
    u, weights = _panels(u_low, u_high, min(0.25, 1.5 / math.sqrt(2.0 * df)))
    s = np.exp(u)
    density = np.exp(_chi_over_root_df_log_density(s, df)) * s  # ds = s du
    alive = density > 0.0
    total = np.sum(weights[alive] * density[alive] * _range_sf_known_sigma(q * s[alive], k))
    return float(min(1.0, max(0.0, total)))
