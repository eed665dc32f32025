"""trec_eval's two rule sets, 9.0.8 and 10.0: the one home of what differs between them.

bm25lab computes every trec_eval measure as trec_eval does; the releases differ in three places
(``docs/measures.md``, "trec_eval 9.0.8 and 10.0"), each a field of :class:`TrecEvalRules`:

- how a recall level r becomes a number of relevant documents c for ``iprec_at_recall`` and
  ``11pt_avg``: ``(long)(r * R + 0.9)`` in 9.0.8, ``lround(r * R)`` in 10.0 (``m_iprec_at_recall.c``);
- what a judged query missing from the run scores under ``-c``: 9.0.8 leaves it out of the
  per-query values and counts it 0 in the averages; 10.0 evaluates it as a ranking of one
  unjudged document (``bogus_ranking`` in ``trec_eval.c``), so its ``num_rel`` counts, and then
  reports the measures named exactly ``num_ret``, ``utility``, ``rbp_resid``, or starting ``unj``,
  as 0 and ``relstring`` as empty (by name: ``utility_2,-1,0,0`` and ``relstring_20`` keep the
  stand-in ranking's values, as the program prints them);
- how a qrels label is read from its text: bm25lab's 9 rules take the number (``1e2`` is 100, as
  Python's ``int(float(text))`` and pytrec_eval's dictionaries give it), 10.0 reads it with C's
  ``atol`` (the leading integer: ``1e2`` is 1, ``4.5`` is 4).

:data:`DEFAULT_TREC_EVAL` is 9: pytrec_eval (and so ir_measures, ranx's checks and most published
figures) computes with 9.0.8, and the tests hold bm25lab to it per query.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Literal

import numpy as np

from .errors import MeasureError

__all__ = ["DEFAULT_TREC_EVAL", "RULES", "STAND_IN_CLEARED", "TrecEvalRules", "atol", "cleared_for_stand_in",
           "get_rules", "lround"]

_ATOL = re.compile(rb"[ \t\n\v\f\r]*([+-]?[0-9]*)")


def atol(text: bytes) -> int:
    """C's ``atol``: the optional sign and digits at the start of ``text`` (after white space), 0 if none."""
    digits = _ATOL.match(text)[1]  # type: ignore[index]
    return int(digits) if digits.strip(b"+-") else 0


def lround(x: np.ndarray) -> np.ndarray:
    """C's ``lround`` of non-negative doubles: the nearest integer, halves away from zero, exactly
    (``floor(x + 0.5)`` is one too high for the double just below 0.5)."""
    whole = np.floor(x)
    return (whole + (x - whole >= 0.5)).astype(np.int64)


def recall_count_9(level: float, num_rel: np.ndarray) -> np.ndarray:
    """trec_eval 9.0.8: ``(long)(level * R + 0.9)``, in double arithmetic."""
    return np.floor(level * num_rel.astype(np.float64) + 0.9).astype(np.int64)


def recall_count_10(level: float, num_rel: np.ndarray) -> np.ndarray:
    """trec_eval 10.0: ``lround(level * R)``."""
    return lround(level * num_rel.astype(np.float64))


STAND_IN_CLEARED = ("num_ret", "utility", "relstring", "rbp_resid")
"""trec_eval 10.0's measure names it resets after evaluating a missing query's stand-in ranking (and ``unj*``)."""


def cleared_for_stand_in(trec_eval_name: str | None) -> bool:
    """Whether trec_eval 10.0 reports this measure as 0 (or empty) for a judged query missing from the run."""
    return trec_eval_name is not None and (trec_eval_name in STAND_IN_CLEARED or trec_eval_name.startswith("unj"))


@dataclass(frozen=True)
class TrecEvalRules:
    """One trec_eval release's rules where the releases differ (see the module's docstring)."""

    version: int
    recall_count: Callable[[float, np.ndarray], np.ndarray]  # (level, R per query) -> relevant documents needed
    missing_query: Literal["zero", "stand-in"]
    label_from_text: Literal["number", "atol"]
    description: str


RULES: dict[int, TrecEvalRules] = {
    9: TrecEvalRules(9, recall_count_9, "zero", "number",
                     "trec_eval 9.0.8, as pytrec_eval: (long)(r R + 0.9) for recall levels; under -c a missing "
                     "query scores 0 and is not listed"),
    10: TrecEvalRules(10, recall_count_10, "stand-in", "atol",
                      "trec_eval 10.0: lround(r R) for recall levels; under -c a missing query is evaluated as a "
                      "ranking of one unjudged document (num_rel counts); labels read with atol"),
}
"""The rule sets by trec_eval major version."""
DEFAULT_TREC_EVAL = 9
"""pytrec_eval's 9.0.8 rules: what most published figures and the Python tools give."""


def get_rules(version: int | TrecEvalRules) -> TrecEvalRules:
    """The rules of trec_eval ``version`` (9 or 10); another value is a :class:`MeasureError` listing them."""
    if isinstance(version, TrecEvalRules):
        return version
    try:
        return RULES[int(version)]
    except (KeyError, TypeError, ValueError):
        raise MeasureError(f"unknown trec_eval rule set {version!r}; choose one of: "
                           f"{', '.join(map(str, RULES))}") from None
