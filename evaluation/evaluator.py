"""``evaluate``: qrels + run -> per-query values and means, with trec_eval's rules for missing data.

Which queries count (this module is their one owner):

- A query is *judged* when the qrels hold at least one line for it (any label, even only 0s or
  negatives). Queries without judgments are always ignored; :attr:`EvaluationResult.not_judged`
  lists the run's queries that were ignored for that reason.
- By default the averaged queries are the judged queries that appear in the run (trec_eval's
  default). A query given with an empty ranking (possible in a dict) appears in the run.
- With ``complete`` (trec_eval ``-c``) every judged query is averaged; a query missing from the run
  scores 0 on every measure (where the measure is defined for it), as trec_eval's ``-c`` counts it.
  :attr:`EvaluationResult.missing_from_run` lists the judged queries absent from the run either way.
- A measure undefined for a query (``AUC`` without both relevant and judged non-relevant documents)
  has no value for it: the query is left out of ``per_query[qid]`` for that measure and out of its
  mean, and :attr:`EvaluationResult.undefined` names it.

Options as in trec_eval: ``rel`` is the relevance threshold (``-l``; judgments ``>= rel`` are
relevant; nDCG ignores it), ``judged_only`` drops unjudged documents from the ranking before
measuring (``-J``), ``depth`` keeps each query's best ``depth`` documents (``-M``). A measure whose
name sets its own threshold or judged-only choice (ir_measures' ``P(rel=2)@5``, ranx's ``map-l2``)
uses it instead of the options.

No silent wrong figures: unless ``strict=False``, :class:`~bm25lab.evaluation.errors.EvaluationError`
is raised when the run shares no query with the qrels (a wrong file, or query ids written
differently: ``001`` against ``1``) and when the qrels hold no relevant judgment at the threshold
(a relevance file read in the wrong format, or a ``rel`` above every label): either would give a
table of zeros or of NaN. Means are arithmetic means over the averaged queries (trec_eval's summary line
sums the counts ``num_ret``, ``num_rel``, ``num_rel_ret`` instead: see
:attr:`EvaluationResult.summary`). Query ids are reported in natural order (``2`` before ``10``).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import numpy as np

from ..engine.errors import InputWarning
from .errors import EvaluationError, MeasureError
from .measures import ELEVEN_POINTS, IGNORES_REL, Measure, expand_measures, parse_measures
from .ranking import JudgedRanking, Qrels, Run, judged_ranking, natural_key

__all__ = ["EvaluationResult", "QuerySelection", "check_meaningful", "evaluate", "precision_recall_curve",
           "precision_recall_curves", "select_queries"]


@dataclass(frozen=True)
class EvaluationResult:
    """Per-query values and means of one run.

    - ``per_query[qid][measure]`` and ``mean[measure]`` use the measure names exactly as passed to
      :func:`evaluate`; ``per_query`` lists the averaged queries in natural order. ``mean`` is NaN for
      a measure no query could be averaged for.
    - ``num_queries``: the number of averaged queries.
    - ``undefined``: measure -> queries where it has no value (left out of ``per_query`` and the mean).
    - ``missing_from_run``: judged queries absent from the run (scored 0 when ``complete``).
    - ``not_judged``: the run's queries without judgments, ignored.
    - ``rel``, ``complete``, ``judged_only``, ``depth``: the options used; ``run_name``: the run's tag.
    - ``totals``: the measures trec_eval sums rather than averages in its summary (see ``summary``).
    - ``num_judged``: the queries the qrels judge (the averaged ones are among them).
    - ``unavailable``: measures a trec_eval nickname (``all_trec``) holds that bm25lab does not compute.
    """

    measures: tuple[str, ...]
    per_query: dict[str, dict[str, float]]
    mean: dict[str, float]
    num_queries: int
    undefined: dict[str, tuple[str, ...]] = field(default_factory=dict)
    missing_from_run: tuple[str, ...] = ()
    not_judged: tuple[str, ...] = ()
    rel: int = 1
    complete: bool = False
    judged_only: bool = False
    run_name: str = ""
    totals: tuple[str, ...] = ()
    num_judged: int = 0
    unavailable: tuple[str, ...] = ()
    depth: int | None = None

    @property
    def summary(self) -> dict[str, float]:
        """trec_eval's ``all`` figure per measure: the sum for counts (``num_*``), else the mean."""
        return {
            name: (math.fsum(v[name] for v in self.per_query.values() if name in v) if name in self.totals else value)
            for name, value in self.mean.items()
        }

    def values(self, measure: str) -> dict[str, float]:
        """``{qid: value}`` of one measure, for the queries where it is defined."""
        return {qid: v[measure] for qid, v in self.per_query.items() if measure in v}


@dataclass(frozen=True)
class QuerySelection:
    """The averaged queries and the queries set aside, each in natural order."""

    averaged: tuple[str, ...]
    missing_from_run: tuple[str, ...]
    not_judged: tuple[str, ...]


def select_queries(qrels: Qrels, run: Run, *, complete: bool) -> QuerySelection:
    """Which queries are averaged: judged and in the run, or (``complete``) every judged query."""
    judged = set(qrels.qids)
    in_run = set(run.qids)
    averaged = [q for q in qrels.qids if complete or q in in_run]
    missing = [q for q in qrels.qids if q not in in_run]
    ignored = [q for q in run.qids if q not in judged]
    return QuerySelection(*(tuple(sorted(qs, key=natural_key)) for qs in (averaged, missing, ignored)))


def evaluate(
    qrels: Qrels | Mapping[str, Mapping[str, int]],
    run: Run | Mapping[str, Any],
    measures: Iterable[str] | str,
    complete: bool = False,
    rel: int = 1,
    judged_only: bool = False,
    *,
    depth: int | None = None,
    strict: bool = True,
) -> EvaluationResult:
    """Evaluate ``run`` against ``qrels`` with the named measures (``["P@10", "nDCG@10", "AP"]``, or
    trec_eval's ``"P.5,10"``, ``"all_trec"``: :func:`~bm25lab.evaluation.measures.expand_measures`).

    ``qrels`` is a :class:`~bm25lab.evaluation.ranking.Qrels` or ``{qid: {docid: grade}}``; ``run`` a
    :class:`~bm25lab.evaluation.ranking.Run` or ``{qid: {docid: score}}`` (or lists of pairs or hits).
    Raises :class:`~bm25lab.evaluation.errors.MeasureError` for an unknown measure or a bad option,
    and (``strict``) :class:`~bm25lab.evaluation.errors.EvaluationError` when the figures could mean
    nothing (see the module's notes).
    """
    expansion = expand_measures(measures)
    parsed = parse_measures(expansion.names)
    if isinstance(rel, bool) or not isinstance(rel, (int, np.integer)) or rel < 1:
        raise MeasureError(f"the relevance threshold rel must be an integer >= 1, not {rel!r}")
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 1):
        raise MeasureError(f"the depth (trec_eval -M) must be a positive integer, not {depth!r}")
    qrels = Qrels.from_dict(qrels)
    run = Run.from_dict(run)
    if depth is not None:
        run = run.truncated(int(depth))
    selection = select_queries(qrels, run, complete=complete)
    if strict:
        check_meaningful(qrels, run, parsed, rel=int(rel))
    rankings: dict[tuple[int, bool], JudgedRanking] = {}
    values = {}
    for m in parsed:
        key = (int(rel) if m.rel is None else m.rel, judged_only if m.judged_only is None else m.judged_only)
        if key not in rankings:
            rankings[key] = judged_ranking(qrels, run, selection.averaged, rel=key[0], judged_only=key[1])
        values[m.name] = _score_missing_as_zero(m(rankings[key]), rankings[key].in_run)
    per_query, undefined = _per_query(selection.averaged, values)
    return EvaluationResult(
        measures=tuple(m.name for m in parsed),
        per_query=per_query,
        mean={name: _mean(v) for name, v in values.items()},
        num_queries=len(selection.averaged),
        undefined=undefined,
        missing_from_run=selection.missing_from_run,
        not_judged=selection.not_judged,
        rel=int(rel),
        complete=complete,
        judged_only=judged_only,
        run_name=run.name,
        totals=tuple(m.name for m in parsed if m.definition.total),
        num_judged=qrels.num_queries,
        unavailable=expansion.unavailable,
        depth=None if depth is None else int(depth),
    )


def check_meaningful(qrels: Qrels, run: Run, measures: Iterable[Measure] = (), *, rel: int = 1) -> None:
    """Raise :class:`EvaluationError` when evaluating ``run`` against ``qrels`` could only give
    zeros or NaN: no query in common, no positive label at all, or none at the relevance threshold
    of a measure that uses one (``rel``, or the measure's own)."""
    if not qrels.num_queries:
        raise EvaluationError("the qrels hold no judgment")
    if not run.num_queries:
        raise EvaluationError("the run holds no query")
    judged = set(qrels.qids)
    if judged.isdisjoint(run.qids):
        raise EvaluationError(
            f"the run and the qrels share no query (run: {_some(run.qids)}; qrels: {_some(qrels.qids)}): are they "
            f"of the same collection, with query ids written the same way?{_numbering_hint(run.qids, qrels.qids)}")
    if _numbering_hint(run.qids, qrels.qids) and set(run.qids) != judged:
        warnings.warn(InputWarning(
            f"the qrels number their {len(judged):,} queries 1, 2, ... and the run has {run.num_queries:,} queries "
            f"with other numbers: if the qrels number the queries by their position in the queries file "
            f"(Cranfield's cranqrel does), the run matches the wrong queries; make it with --query-ids position"),
            stacklevel=3)
    labels = np.asarray(qrels.label)
    # graded measures need a positive label, the others one at their threshold
    thresholds = {1} | {rel if m.rel is None else m.rel for m in measures if m.definition.name not in IGNORES_REL}
    highest = int(labels.max()) if labels.size else 0
    for threshold in sorted(thresholds):
        if highest < threshold:
            found = ", ".join(map(str, np.unique(labels)[:10].tolist()))
            hint = (" A SMART relevance file (query document 0 0) lists relevant pairs: read it with --qrels-format "
                    "smart." if highest <= 0 else "")
            raise EvaluationError(f"the qrels hold no relevant judgment (none >= {threshold}; labels found: {found}), "
                                  f"so every measure would be 0.{hint}")


def _some(qids: Iterable[str], shown: int = 4) -> str:
    listed = list(qids)
    return ", ".join(listed[:shown]) + (", ..." if len(listed) > shown else "")


def _numbering_hint(run_qids: Iterable[str], qrels_qids: Iterable[str]) -> str:
    """When the qrels number queries 1..n and the run's (or queries file's) ids are other numbers,
    beyond n: Cranfield's case."""
    judged = list(qrels_qids)
    ran = list(run_qids)
    if ran and judged and all(q.isdigit() for q in judged) and all(q.isdigit() for q in ran) and \
            {int(q) for q in judged} <= set(range(1, len(ran) + 1)) and max(map(int, ran)) > len(ran):
        return (" The qrels number the queries 1, 2, ... in file order (as Cranfield's cranqrel does): read the "
                "queries with ids by position (--query-ids position).")
    return ""


def precision_recall_curve(
    qrels: Qrels | Mapping[str, Mapping[str, int]],
    run: Run | Mapping[str, Any],
    *,
    rel: int = 1,
    complete: bool = False,
    judged_only: bool = False,
    depth: int | None = None,
) -> dict[float, float]:
    """``{recall level: mean interpolated precision}`` at the eleven standard levels 0.0, 0.1, ..., 1.0
    (the means of ``iprec@r``, as trec_eval's ``iprec_at_recall``), for a precision-recall plot."""
    result = _eleven_points(qrels, run, rel=rel, complete=complete, judged_only=judged_only, depth=depth)
    return {level: result.mean[_level_name(level)] for level in ELEVEN_POINTS}


def precision_recall_curves(
    qrels: Qrels | Mapping[str, Mapping[str, int]],
    run: Run | Mapping[str, Any],
    *,
    rel: int = 1,
    complete: bool = False,
    judged_only: bool = False,
    depth: int | None = None,
) -> dict[str, dict[float, float]]:
    """Per query, ``{qid: {recall level: interpolated precision}}`` at the eleven standard levels (each
    query's ``iprec@r``), for the averaged queries in natural order."""
    result = _eleven_points(qrels, run, rel=rel, complete=complete, judged_only=judged_only, depth=depth)
    return {qid: {level: values[_level_name(level)] for level in ELEVEN_POINTS}
            for qid, values in result.per_query.items()}


def _level_name(level: float) -> str:
    return f"iprec@{level:.1f}"


def _eleven_points(qrels: Any, run: Any, **options: Any) -> EvaluationResult:
    return evaluate(qrels, run, [_level_name(level) for level in ELEVEN_POINTS], **options)


def _score_missing_as_zero(values: np.ndarray, in_run: np.ndarray) -> np.ndarray:
    """A query missing from the run scores 0 where the measure is defined (only under ``complete``)."""
    if in_run.all():
        return values
    return np.where(~in_run & ~np.isnan(values), 0.0, values)


def _per_query(
    qids: tuple[str, ...], values: Mapping[str, np.ndarray]
) -> tuple[dict[str, dict[str, float]], dict[str, tuple[str, ...]]]:
    columns = {name: v.tolist() for name, v in values.items()}
    per_query: dict[str, dict[str, float]] = {}
    for i, qid in enumerate(qids):
        per_query[qid] = {name: column[i] for name, column in columns.items() if column[i] == column[i]}
    undefined = {
        name: tuple(qids[i] for i in np.flatnonzero(np.isnan(v))) for name, v in values.items() if np.isnan(v).any()
    }
    return per_query, undefined


def _mean(values: np.ndarray) -> float:
    defined = values[~np.isnan(values)]
    return math.fsum(defined.tolist()) / defined.size if defined.size else math.nan
