"""``evaluate``: qrels + run -> per-query values and means, with trec_eval's rules for missing data.

Which queries count (this module is their one owner):

- A query is *judged* when the qrels hold at least one line for it (any label, even only 0s or
  negatives). Queries without judgments are always ignored; :attr:`EvaluationResult.not_judged`
  lists the run's queries that were ignored for that reason.
- By default the averaged queries are the judged queries that appear in the run (trec_eval's
  default). A query given with an empty ranking (possible in a dict) appears in the run.
- With ``complete`` (trec_eval ``-c``) every judged query is averaged. A query missing from the run
  scores 0 on every measure (where the measure is defined for it), as trec_eval 9.0.8's ``-c`` counts
  it; under ``trec_eval=10`` it is evaluated as trec_eval 10.0 does, as a ranking of one unjudged
  document (so ``num_rel`` counts its relevant documents), with ``num_ret``, ``utility``, ``unj`` and
  ``RBP_resid`` then reported as 0 and ``relstring`` as empty (without parameters only, as trec_eval
  10.0 resets them by name: :func:`~bm25lab.evaluation.conventions.cleared_for_stand_in`).
  :attr:`EvaluationResult.missing_from_run` lists the judged queries absent from the run either way.
- A measure undefined for a query (``AUC`` without both relevant and judged non-relevant documents,
  ``MAE`` without a rated document retrieved) has no value for it: the query is left out of
  ``per_query[qid]`` for that measure and out of its mean, and :attr:`EvaluationResult.undefined`
  names it.

Options as in trec_eval: ``rel`` is the relevance threshold (``-l``; judgments ``>= rel`` are
relevant; nDCG ignores it), ``judged_only`` drops unjudged documents from the ranking before
measuring (``-J``), ``depth`` keeps each query's best ``depth`` documents, after ranking (``-M``),
``collection_size`` is the number of documents in the collection (``-N``: ``utility``'s TN and the
confusion measures TN, accuracy, FPR, specificity need it), ``trec_eval`` the rule set (9 or 10,
:mod:`bm25lab.evaluation.conventions`). ``missing_ratings`` says what MAE and RMSE do with a retrieved
document its query did not rate (:data:`~bm25lab.evaluation.measures.MISSING_RATINGS`), ``fractions`` how a
judgment with a fraction is read (:data:`~bm25lab.evaluation.ranking.FRACTIONS`: kept, 4.5 as 4.5, by default;
``"truncate"`` reads it as trec_eval does, 4). A measure whose
name sets its own threshold or judged-only choice (ir_measures' ``P(rel=2)@5``, ranx's ``map-l2``)
uses it instead of the options.

No silent wrong figures: unless ``strict=False``, :class:`~bm25lab.evaluation.errors.EvaluationError`
is raised when the run shares no query with the qrels (a wrong file, or query ids written
differently: ``001`` against ``1``) and when the qrels hold no relevant judgment at the threshold
(a relevance file read in the wrong format, or a ``rel`` above every label): either would give a
table of zeros or of NaN. A run-level figure (``mean``) is the arithmetic mean over the averaged
queries, the sum for the counts (``num_ret``, ``num_rel``, ``num_rel_ret``, TP, FP, ...: as trec_eval's
summary line) and the geometric mean for ``gm_map`` and ``gm_bpref`` (:func:`_mean`, the one rule every
output follows). Query ids are reported in natural order (``2`` before ``10``).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import numpy as np

from ..engine import exactmath
from ..engine.errors import InputWarning
from .conventions import DEFAULT_TREC_EVAL, cleared_for_stand_in, get_rules
from .errors import EvaluationError, MeasureError
from .imputation import IMPUTED, imputed_qrels
from .measures import (ELEVEN_POINTS, IGNORES_REL, MIN_GEO_MEAN, MISSING_RATINGS, Measure, expand_measures,
                       parse_measures, relevance_threshold)
from .ranking import JudgedRanking, Qrels, Run, judged_ranking, natural_key

__all__ = ["ROC_POINTS", "EvaluationResult", "QuerySelection", "check_meaningful", "evaluate", "precision_recall_curve",
           "precision_recall_curves", "roc_curve", "roc_points", "select_queries"]


@dataclass(frozen=True)
class EvaluationResult:
    """Per-query values and means of one run.

    - ``per_query[qid][measure]`` and ``mean[measure]`` use the measure names exactly as passed to
      :func:`evaluate`; ``per_query`` lists the averaged queries in natural order. ``mean`` holds each
      measure's run-level figure (:func:`_mean`: the sum for counts); NaN for a measure no query could
      be averaged for.
    - ``num_queries``: the number of averaged queries.
    - ``undefined``: measure -> queries where it has no value (left out of ``per_query`` and the mean).
    - ``missing_from_run``: judged queries absent from the run (scored 0 when ``complete``).
    - ``not_judged``: the run's queries without judgments, ignored.
    - ``rel``, ``complete``, ``judged_only``, ``depth``, ``trec_eval``: the options used; ``run_name``: the
      run's tag.
    - ``totals``: the counts, whose run-level figure is their sum (as in trec_eval's summary);
      ``geometric``: those whose mean is geometric; ``summary_only``: those trec_eval prints no
      per-query line for; ``text``: those whose values are strings (no mean).
    - ``reasons``: measure -> why it can be undefined for a query.
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
    rel: float = 1
    complete: bool = False
    judged_only: bool = False
    run_name: str = ""
    totals: tuple[str, ...] = ()
    num_judged: int = 0
    unavailable: tuple[str, ...] = ()
    depth: int | None = None
    trec_eval: int = DEFAULT_TREC_EVAL
    geometric: tuple[str, ...] = ()
    summary_only: tuple[str, ...] = ()
    text: tuple[str, ...] = ()
    reasons: dict[str, str] = field(default_factory=dict)

    @property
    def summary(self) -> dict[str, float]:
        """trec_eval's ``all`` figure per measure: ``mean``, whose figure for counts is their sum."""
        return dict(self.mean)

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
    qrels: Qrels | Mapping[str, Mapping[str, float]],
    run: Run | Mapping[str, Any],
    measures: Iterable[str] | str,
    complete: bool = False,
    rel: float = 1,
    judged_only: bool = False,
    *,
    depth: int | None = None,
    strict: bool = True,
    trec_eval: int = DEFAULT_TREC_EVAL,
    collection_size: int | None = None,
    missing_ratings: str = "skip",
    fractions: str = "keep",
) -> EvaluationResult:
    """Evaluate ``run`` against ``qrels`` with the named measures (``["P@10", "nDCG@10", "AP"]``, or
    trec_eval's ``"P.5,10"``, ``"all_trec"``: :func:`~bm25lab.evaluation.measures.expand_measures`).

    ``qrels`` is a :class:`~bm25lab.evaluation.ranking.Qrels` or ``{qid: {docid: grade}}``; ``run`` a
    :class:`~bm25lab.evaluation.ranking.Run` or ``{qid: {docid: score}}`` (or lists of pairs or hits).
    The options are described in the module's docstring. Raises
    :class:`~bm25lab.evaluation.errors.MeasureError` for an unknown measure or a bad option, and
    (``strict``) :class:`~bm25lab.evaluation.errors.EvaluationError` when the figures could mean
    nothing (see the module's notes).
    """
    expansion = expand_measures(measures)
    parsed = parse_measures(expansion.names)
    rel = _check_options(rel, depth, collection_size, missing_ratings)
    rules = get_rules(trec_eval)
    qrels = Qrels.from_dict(qrels)
    run = _cut(Run.from_dict(run), depth)
    selection = select_queries(qrels, run, complete=complete)
    if strict:
        check_meaningful(qrels, run, parsed, rel=rel, fractions=fractions)
    stand_in = complete and rules.missing_query == "stand-in"
    rankings: dict[tuple[float, bool, bool], JudgedRanking] = {}
    imputed: list[Qrels] = []  # the qrels the graded measures read under missing_ratings mean or median
    values, means = {}, {}
    for m in parsed:  # one judged ranking per relevance threshold, judged-only choice and imputation
        only = judged_only if m.judged_only is None else m.judged_only
        imputes = (missing_ratings in ("mean", "median") and not only and m.definition.name in IMPUTED
                   and not isinstance(m.param, tuple))
        key = (rel if m.rel is None else m.rel, only, imputes)
        if key not in rankings:
            if imputes and not imputed:
                imputed.append(imputed_qrels(qrels, run, selection.averaged, missing_ratings, fractions))
            rankings[key] = judged_ranking(imputed[0] if imputes else qrels, run, selection.averaged, rel=key[0],
                                           judged_only=only, trec_eval=rules, stand_in=stand_in,
                                           collection_size=collection_size, missing_ratings=missing_ratings,
                                           fractions=fractions)
        values[m.name] = _for_missing_queries(m, m(rankings[key]), rankings[key].in_run, stand_in)
        means[m.name] = m.definition.pooled(rankings[key]) if m.definition.pooled else _mean(m, values[m.name])
    per_query, undefined = _per_query(selection.averaged, values)
    return EvaluationResult(
        measures=tuple(m.name for m in parsed),
        per_query=per_query,
        mean=means,
        num_queries=len(selection.averaged),
        undefined=undefined,
        missing_from_run=selection.missing_from_run,
        not_judged=selection.not_judged,
        rel=rel,
        complete=complete,
        judged_only=judged_only,
        run_name=run.name,
        totals=tuple(m.name for m in parsed if m.definition.total),
        num_judged=qrels.num_queries,
        unavailable=expansion.unavailable,
        depth=None if depth is None else int(depth),
        trec_eval=rules.version,
        geometric=tuple(m.name for m in parsed if m.definition.geometric),
        summary_only=tuple(m.name for m in parsed if m.definition.summary_only),
        text=tuple(m.name for m in parsed if m.definition.text),
        reasons={m.name: m.definition.undefined_when for m in parsed if m.name in undefined},
    )


def check_meaningful(qrels: Qrels, run: Run, measures: Iterable[Measure] = (), *, rel: float = 1,
                     fractions: str = "keep") -> None:
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
    labels = qrels.relevance if fractions == "keep" else qrels.label
    # graded measures need a positive label, the others one at their threshold
    thresholds = {1} | {rel if m.rel is None else m.rel for m in measures if m.definition.name not in IGNORES_REL}
    highest = float(labels.max()) if labels.size else 0.0
    for threshold in sorted(thresholds):
        if highest < threshold:
            found = ", ".join(f"{v:g}" for v in np.unique(labels)[:10].tolist())
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


def _cut(run: Run, depth: int | None) -> Run:
    """The run evaluated at ``depth`` (trec_eval ``-M``): each query's best ``depth`` documents."""
    return run if depth is None else run.truncated(int(depth))


def _check_options(rel: Any, depth: Any, collection_size: Any, missing_ratings: Any) -> float:
    """The options checked; returns the relevance threshold (an ``int`` when whole)."""
    def whole(value: Any) -> bool:
        return not isinstance(value, bool) and isinstance(value, (int, np.integer))

    threshold = relevance_threshold(rel)
    if depth is not None and (not whole(depth) or depth < 1):
        raise MeasureError(f"the depth (trec_eval -M) must be a positive integer (or None for every document), "
                           f"not {depth!r}")
    if collection_size is not None and (not whole(collection_size) or collection_size < 0):
        raise MeasureError(f"collection_size must be an integer >= 0 (or None), not {collection_size!r}")
    if missing_ratings not in MISSING_RATINGS:
        raise MeasureError(f"unknown missing_ratings {missing_ratings!r}; choose one of: {', '.join(MISSING_RATINGS)}")
    return threshold


def precision_recall_curve(
    qrels: Qrels | Mapping[str, Mapping[str, int]],
    run: Run | Mapping[str, Any],
    *,
    rel: float = 1,
    complete: bool = False,
    judged_only: bool = False,
    depth: int | None = None,
    trec_eval: int = DEFAULT_TREC_EVAL,
    fractions: str = "keep",
) -> dict[float, float]:
    """``{recall level: mean interpolated precision}`` at the eleven standard levels 0.0, 0.1, ..., 1.0
    (the means of ``iprec@r``, as trec_eval's ``iprec_at_recall``), for a precision-recall plot."""
    result = _eleven_points(qrels, run, rel=rel, complete=complete, judged_only=judged_only, depth=depth,
                            trec_eval=trec_eval, fractions=fractions)
    return {level: result.mean[_level_name(level)] for level in ELEVEN_POINTS}


def precision_recall_curves(
    qrels: Qrels | Mapping[str, Mapping[str, int]],
    run: Run | Mapping[str, Any],
    *,
    rel: float = 1,
    complete: bool = False,
    judged_only: bool = False,
    depth: int | None = None,
    trec_eval: int = DEFAULT_TREC_EVAL,
    fractions: str = "keep",
) -> dict[str, dict[float, float]]:
    """Per query, ``{qid: {recall level: interpolated precision}}`` at the eleven standard levels (each
    query's ``iprec@r``), for the averaged queries in natural order."""
    result = _eleven_points(qrels, run, rel=rel, complete=complete, judged_only=judged_only, depth=depth,
                            trec_eval=trec_eval, fractions=fractions)
    return {qid: {level: values[_level_name(level)] for level in ELEVEN_POINTS}
            for qid, values in result.per_query.items()}


def _level_name(level: float) -> str:
    return f"iprec@{level:.1f}"


def _eleven_points(qrels: Any, run: Any, **options: Any) -> EvaluationResult:
    return evaluate(qrels, run, [_level_name(level) for level in ELEVEN_POINTS], **options)


ROC_POINTS = tuple(i / 100 for i in range(101))
"""The false-positive rates at which :func:`roc_curve` averages the queries' true-positive rates."""


def roc_points(labels: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One query's ROC curve: (FPR, TPR) after each group of equal scores, best first, from (0, 0).

    ``labels`` says which judged documents are relevant; a tie in score moves both rates at once (a
    diagonal segment), so the area under the polyline is the AUC that counts ties 1/2 (scikit-learn's
    ``roc_curve(..., drop_intermediate=False)`` gives the same points).
    """
    order = np.argsort(-scores, kind="stable")
    labels, scores = labels[order], scores[order]
    ends = np.append(np.flatnonzero(scores[1:] != scores[:-1]), scores.size - 1)
    tp, fp = np.cumsum(labels)[ends], np.cumsum(~labels)[ends]
    return (np.concatenate(([0.0], fp / max(int((~labels).sum()), 1))),
            np.concatenate(([0.0], tp / max(int(labels.sum()), 1))))


def _tpr_at(fpr: np.ndarray, tpr: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """The polyline's TPR at each grid FPR (the top of a vertical step, on its right side)."""
    last = np.searchsorted(fpr, grid, side="right") - 1
    following = np.minimum(last + 1, fpr.size - 1)
    span = fpr[following] - fpr[last]
    share = np.divide(grid - fpr[last], span, out=np.zeros_like(grid), where=span > 0)
    return tpr[last] + share * (tpr[following] - tpr[last])


def roc_curve(
    qrels: Qrels | Mapping[str, Mapping[str, float]],
    run: Run | Mapping[str, Any],
    *,
    rel: float = 1,
    complete: bool = False,
    judged_only: bool = False,
    depth: int | None = None,
    fractions: str = "keep",
) -> dict[float, float]:
    """``{false-positive rate: mean true-positive rate}`` at :data:`ROC_POINTS`, over the queries whose
    ``AUC`` is defined (vertical averaging), for a ROC plot. Each query's curve runs over its judged
    documents by run score, the unretrieved ones tied below every retrieved one (as ``AUC``)."""
    rel = _check_options(rel, depth, None, "skip")
    qrels = Qrels.from_dict(qrels)
    run = _cut(Run.from_dict(run), depth)
    selection = select_queries(qrels, run, complete=complete)
    r = judged_ranking(qrels, run, selection.averaged, rel=rel, judged_only=judged_only, fractions=fractions)
    grid = np.array(ROC_POINTS)
    total, counted = np.zeros(grid.size), 0
    floor = float(r.score.min(initial=0.0)) - 1.0
    for q in range(r.num_queries):
        if r.num_rel[q] == 0 or r.num_nonrel[q] == 0:
            continue
        rows = r.seg == q
        unretrieved_rel = int(r.num_rel[q] - (r.is_rel & rows).sum())
        unretrieved_nonrel = int(r.num_nonrel[q] - (r.is_nonrel & rows).sum())
        labels = np.concatenate((r.is_rel[rows], np.ones(unretrieved_rel, bool), np.zeros(unretrieved_nonrel, bool)))
        scores = np.concatenate((r.score[rows], np.full(unretrieved_rel + unretrieved_nonrel, floor)))
        total += _tpr_at(*roc_points(labels, scores), grid)
        counted += 1
    mean = total / counted if counted else np.full(grid.size, np.nan)
    return dict(zip(ROC_POINTS, mean.tolist()))


def _for_missing_queries(measure: Measure, values: np.ndarray, in_run: np.ndarray, stand_in: bool) -> np.ndarray:
    """The values of the queries missing from the run (only under ``complete``): 0 (empty for text) where
    the measure is defined, by 9.0.8's rules; by 10.0's, the stand-in ranking's values, except for the
    measures trec_eval 10.0 then reports as 0."""
    if in_run.all() or (stand_in and not cleared_for_stand_in(measure.trec_eval_name)):
        return values
    if measure.definition.text:
        return np.where(in_run, values, "")
    return np.where(~in_run & ~np.isnan(values), 0.0, values)


def _per_query(
    qids: tuple[str, ...], values: Mapping[str, np.ndarray]
) -> tuple[dict[str, dict[str, float]], dict[str, tuple[str, ...]]]:
    columns = {name: v.tolist() for name, v in values.items()}
    per_query: dict[str, dict[str, float]] = {}
    for i, qid in enumerate(qids):
        per_query[qid] = {name: column[i] for name, column in columns.items() if column[i] == column[i]}
    undefined = {
        name: tuple(qids[i] for i in np.flatnonzero(np.isnan(v)))
        for name, v in values.items() if v.dtype != object and np.isnan(v).any()
    }
    return per_query, undefined


def _mean(measure: Measure, values: np.ndarray) -> float:
    """The run-level figure of a measure, what every output shows (table, JSON, CSV, trec_eval's layout,
    ``summary``): the arithmetic mean of the defined values; their sum for the counts (``total``
    measures: ``num_ret``, ``num_rel``, ``num_rel_ret``, TP, FP, FN, TN, ..., as trec_eval's ``all`` line
    sums them); geometric for ``gm_*`` (values floored at ``MIN_GEO_MEAN``, as trec_eval's
    ``te_calc_avg_meas_s_gm``); NaN for text and when no query has a value."""
    if measure.definition.text:
        return math.nan
    defined = values[~np.isnan(values)]
    if not defined.size:
        return math.nan
    if measure.definition.total:
        return math.fsum(defined.tolist())
    if measure.definition.geometric:
        logs = exactmath.each(exactmath.ln, np.maximum(defined, MIN_GEO_MEAN))  # the same on every CPU
        return exactmath.exp(math.fsum(logs.tolist()) / defined.size)
    return math.fsum(defined.tolist()) / defined.size
