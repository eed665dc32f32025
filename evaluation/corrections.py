"""Multiple-comparison corrections: m p-values of one family -> m adjusted p-values, in the input order.

Each is a named function of one shape ``(p_values) -> list[float]`` in :data:`CORRECTIONS`, equal to
``statsmodels.stats.multitest.multipletests(p, method=...)[1]`` (``bonferroni``, ``holm``, ``fdr_bh``;
the tests compare). Rejecting where an adjusted value is below alpha controls the family-wise error
rate (Bonferroni, Holm) or the false discovery rate (Benjamini-Hochberg) at alpha.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..engine.errors import BM25LabError, InputError

__all__ = ["CORRECTIONS", "CORRECTION_TITLES", "benjamini_hochberg", "bonferroni", "get_correction", "holm", "none"]


def _checked(p_values: Sequence[float]) -> np.ndarray:
    p = np.asarray(list(p_values), dtype=np.float64)
    if p.ndim != 1:
        raise InputError("a correction takes a flat sequence of p-values")
    if p.size and (np.any(np.isnan(p)) or np.any(p < 0.0) or np.any(p > 1.0)):
        raise InputError("p-values must lie in [0, 1]")
    return p


def none(p_values: Sequence[float]) -> list[float]:
    """The p-values as they are."""
    return [float(x) for x in _checked(p_values)]


def bonferroni(p_values: Sequence[float]) -> list[float]:
    """Bonferroni: adj_i = min(1, m p_i)."""
    p = _checked(p_values)
    return [float(x) for x in np.minimum(1.0, p.size * p)]


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni step-down adjusted p-values, in the input order.

    With the m p-values sorted ascending, p_(1) <= ... <= p_(m):
    adj_(i) = min(1, max_{j <= i} (m - j + 1) p_(j)).
    Holm, "A simple sequentially rejective multiple test procedure", Scand. J. Statistics 6, 1979. Ties
    keep their input order (a stable sort) and get equal adjusted values.
    """
    p = _checked(p_values)
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = (m - np.arange(m)) * p[order]
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return [float(x) for x in adjusted]


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg step-up adjusted p-values (false discovery rate):
    adj_(i) = min(1, min_{j >= i} m p_(j) / j) over the p-values sorted ascending (Benjamini and
    Hochberg, J. Royal Statistical Society B 57, 1995; statsmodels' ``fdr_bh``)."""
    p = _checked(p_values)
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = m * p[order] / np.arange(1, m + 1)
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    return [float(x) for x in adjusted]


Correction = Callable[[Sequence[float]], list[float]]
CORRECTIONS: dict[str, Correction] = {
    "none": none,
    "bonferroni": bonferroni,
    "holm": holm,
    "bh": benjamini_hochberg,
}
"""Corrections by the name the command line uses."""
CORRECTION_TITLES = {"none": "no correction", "bonferroni": "Bonferroni correction", "holm": "Holm-Bonferroni correction",
                     "bh": "Benjamini-Hochberg correction (false discovery rate)"}


def get_correction(name: str) -> Correction:
    """The correction registered under ``name``, or a :class:`BM25LabError` listing the names."""
    try:
        return CORRECTIONS[name]
    except KeyError:
        raise BM25LabError(f"unknown correction {name!r}; choose one of: {', '.join(CORRECTIONS)}") from None
