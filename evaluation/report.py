"""Render evaluation results: rich tables, trec_eval-style text, JSON and CSV. Pure functions.

Every renderer takes one :class:`~bm25lab.evaluation.evaluator.EvaluationResult` (named by its run's tag, or
``"run"``), a mapping ``{run name: result}`` or a sequence of ``(run name, result)`` pairs, and
returns a string or rich objects; nothing is printed.

- :func:`to_trec`: trec_eval's layout, ``measure<TAB>qid<TAB>value`` with the measure name padded to
  22 characters, values to 4 decimals (counts as integers, ``relstring`` quoted), one ``all`` line per
  measure holding trec_eval's summary (the mean; the sum for the counts; the geometric mean for
  ``gm_map``, ``gm_bpref``, which have no per-query lines; none for ``relstring``). Each run's block
  starts with a ``runid`` line naming the run by its tag (trec_eval's runid), else by the name given.
  Per-query lines with ``per_query=True`` (trec_eval ``-q``); under trec_eval 9 rules a query missing
  from the run gets none even with ``complete`` (as 9.0.8 prints), under 10 rules it does (as 10.0).
- :func:`to_json`: ``{"run", "queries", "mean", "per_query"}`` for one run (``per_query`` when asked,
  ``undefined`` when a measure is undefined for some queries), a list for several; NaN becomes null.
- :func:`to_csv`: ``run,query,measure,value`` rows, the mean under query ``all``.
- :func:`to_table` / :func:`to_tables`: rich tables of means (and per-query values). The ``queries``
  column reads ``averaged of judged`` (``308 of 323``) and the caption says which rule chose them
  and how to count the rest (``--complete``).
- :func:`notes`: what a reader must know about a result (queries left out, undefined values,
  trec_eval measures not computed).

NaN is never printed as a figure: a mean no query could give (a measure undefined for every
averaged query) is shown as ``-`` in tables, left out of the trec_eval text, null in JSON and empty
in CSV, and :func:`notes` says why.
"""
from __future__ import annotations

import csv
import io
import json
import math
from typing import TYPE_CHECKING, Any, Mapping, Sequence, Union

from .evaluator import EvaluationResult
from .ranking import natural_key

if TYPE_CHECKING:
    from rich.table import Table

__all__ = ["TREC_EVAL_ORDER", "UNDEFINED", "averaging", "caption", "means_rows", "notes", "per_query_rows", "rules",
           "to_csv", "to_json", "to_table", "to_tables", "to_trec", "trec_eval_label"]

Results = Union[EvaluationResult, Mapping[str, EvaluationResult], Sequence[tuple[str, EvaluationResult]]]

_LISTED = 10  # query ids named in a note before "..."


def _named(results: Results) -> list[tuple[str, EvaluationResult]]:
    """The results as (run name, result) pairs."""
    if isinstance(results, EvaluationResult):
        return [(results.run_name or "run", results)]
    if isinstance(results, Mapping):
        return list(results.items())
    return [(str(name), result) for name, result in results]


UNDEFINED = "-"  # what a table shows for a mean no query could give


def _number(value: float | str, count: bool) -> str:
    if isinstance(value, str):
        return f"'{value}'"
    if math.isnan(value):
        return UNDEFINED
    return str(int(round(value))) if count else f"{value:.4f}"


# ---------------------------------------------------------------------------------------------
# trec_eval text


TREC_EVAL_ORDER = ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                   "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "infAP", "gm_bpref", "Rprec_mult",
                   "utility", "11pt_avg", "binG", "G", "dcg", "ideal_dcg", "ndcg", "ndcg_rel", "Rndcg", "ndcg_cut",
                   "map_cut", "relative_P", "success", "set_P", "set_relative_P", "set_recall", "set_map", "set_F",
                   "num_nonrel_judged_ret", "rbp", "rbp_resid", "unj")
"""The order in which trec_eval 10.0 prints its measures (``te_trec_measures`` in its ``measures.c``)."""


def trec_eval_label(measure: str) -> str:
    """The name trec_eval's layout prints for a measure: as written, except the measures bm25lab computes
    under another name (:data:`~bm25lab.evaluation.measures.TREC_RENAMED`: ``RBP_graded`` is ``rbp``)."""
    from .measures import TREC_RENAMED

    return {ours: theirs for theirs, ours in TREC_RENAMED.items()}.get(measure, measure)


def _trec_eval_position(measure: str) -> tuple[int, float]:
    """Where trec_eval prints ``measure``: its family's place in :data:`TREC_EVAL_ORDER`, then its parameter
    (trec_eval prints a family's cutoffs in ascending order). Other measures come after, as given."""
    from .errors import MeasureError
    from .measures import parse_measure

    try:
        name = parse_measure(measure).trec_eval_name
    except MeasureError:
        name = None
    if name is None:
        return len(TREC_EVAL_ORDER), 0.0
    family = max((f for f in TREC_EVAL_ORDER if name == f or name.startswith(f + "_")), key=len, default=None)
    if family is None:
        return len(TREC_EVAL_ORDER), 0.0
    rest = name[len(family) + 1:]
    try:
        param = float(rest) if rest else -1.0
    except ValueError:
        param = -1.0
    return TREC_EVAL_ORDER.index(family), param


def _in_trec_eval_order(measures: Sequence[str]) -> list[str]:
    """The measures in trec_eval's printing order (a stable sort: measures it does not have keep their order,
    after its own)."""
    return sorted(measures, key=_trec_eval_position)


def to_trec(results: Results, *, per_query: bool = False) -> str:
    """trec_eval's output, as the trec_eval program prints it: per-query lines (``-q``; queries in byte order of
    their ids, each with its measures), then ``runid``, ``num_q`` and the ``all`` lines; measures in trec_eval's
    order (:data:`TREC_EVAL_ORDER`) under trec_eval's names (:func:`trec_eval_label`), bm25lab's own measures
    after them, in the order given. One block per run."""
    lines: list[str] = []
    for name, result in _named(results):
        counts = set(result.totals)
        measures = _in_trec_eval_order(result.measures)
        shown = [m for m in measures if m not in result.summary_only]
        unlisted = set(result.missing_from_run) if result.trec_eval == 9 else set()
        if per_query:
            for qid in sorted(result.per_query, key=lambda q: q.encode("utf-8")):
                if qid in unlisted:
                    continue
                values = result.per_query[qid]
                for measure in shown:
                    if measure in values:
                        label = trec_eval_label(measure)
                        lines.append(f"{label:<22}\t{qid}\t{_number(values[measure], measure in counts)}")
        lines.append(f"{'runid':<22}\tall\t{result.run_name or name}")
        lines.append(f"{'num_q':<22}\tall\t{result.num_queries}")
        summary = result.summary
        for measure in measures:
            value = summary.get(measure, math.nan)
            if not isinstance(value, str) and not math.isnan(value):
                lines.append(f"{trec_eval_label(measure):<22}\tall\t{_number(value, measure in counts)}")
    return "".join(line + "\n" for line in lines)


# ---------------------------------------------------------------------------------------------
# JSON and CSV


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value


def _as_json(name: str, result: EvaluationResult, per_query: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "run": name,
        "queries": result.num_queries,
        "mean": {m: _finite(v) for m, v in result.mean.items()},
    }
    if per_query:
        out["per_query"] = result.per_query
    if result.undefined:
        out["undefined"] = {m: list(qids) for m, qids in result.undefined.items()}
    return out


def to_json(results: Results, *, per_query: bool = True, indent: int | None = 1) -> str:
    """One JSON object per run (a list for several runs), NaN written as null."""
    named = _named(results)
    documents = [_as_json(name, result, per_query) for name, result in named]
    return json.dumps(documents[0] if len(documents) == 1 else documents, indent=indent, ensure_ascii=False)


def to_csv(results: Results, *, per_query: bool = True) -> str:
    """``run,query,measure,value`` rows: each query's values (when asked), then the means as ``all``."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["run", "query", "measure", "value"])
    for name, result in _named(results):
        if per_query:
            for qid, values in result.per_query.items():
                for measure in result.measures:
                    if measure in values:
                        value = values[measure]
                        writer.writerow([name, qid, measure, value if isinstance(value, str) else repr(value)])
        for measure, value in result.mean.items():
            writer.writerow([name, "all", measure, "" if math.isnan(value) else repr(value)])
    return buffer.getvalue()


# ---------------------------------------------------------------------------------------------
# Tables and notes


def _options(result: EvaluationResult, unit: str = " queries") -> str:
    """``225 of 230 queries, relevant >= 2, judged only``: the averaged queries of the judged ones and
    the options used."""
    judged = f" of {result.num_judged:,}" if result.num_judged and result.num_judged != result.num_queries else ""
    parts = [f"{result.num_queries:,}{judged}{unit}"]
    if result.complete:
        parts.append("complete")
    if result.rel != 1:
        parts.append(f"relevant >= {result.rel}")
    if result.judged_only:
        parts.append("judged only")
    if result.depth is not None:
        parts.append(f"top {result.depth:,}")
    if result.trec_eval != 9:
        parts.append(f"trec_eval {result.trec_eval} rules")
    return ", ".join(parts)


def averaging(results: Sequence[EvaluationResult]) -> str:
    """One sentence: which queries the means are over, and how to count the others."""
    judged = max((r.num_judged for r in results), default=0)
    if any(r.complete for r in results):
        return (f"Means over every judged query ({judged:,}), a query missing from a run scoring 0 "
                f"(--complete; ir_measures' and ranx's rule).")
    if all(r.num_queries == r.num_judged for r in results):
        return f"Means over the {judged:,} judged queries, every one of them in the run."
    return (f"Means over the judged queries in each run (trec_eval's rule); --complete averages all {judged:,} "
            f"judged queries, a missing one scoring 0 (ir_measures' and ranx's rule).")


RULES_NAMES = {9: "trec_eval 9.0.8's rules (pytrec_eval's; --trec-eval 10 gives 10.0's)",
               10: "trec_eval 10.0's rules (the program's current release)"}


def rules(results: Sequence[EvaluationResult]) -> str:
    """One line naming the trec_eval rules the figures follow (they differ on iprec/11pt and under -c)."""
    versions = sorted({r.trec_eval for r in results})
    return "Computed by " + " and ".join(RULES_NAMES.get(v, f"trec_eval {v}'s rules") for v in versions) + "."


def caption(results: Sequence[EvaluationResult]) -> str:
    """What goes under a table of means: which queries were averaged, and by which rules."""
    return f"{averaging(results)}\n{rules(results)}"


def means_rows(results: Results) -> tuple[list[str], list[list[str]]]:
    """The table of means as text: headers ``run``, ``queries``, the measures; a row per run."""
    named = _named(results)
    measures = list(dict.fromkeys(m for _, result in named for m in result.measures))
    rows = [[name, _options(result, unit=""),
             *(_number(result.mean[m], False) if m in result.mean and m not in result.text else "" for m in measures)]
            for name, result in named]
    return ["run", "queries", *measures], rows


def per_query_rows(result: EvaluationResult) -> tuple[list[str], list[list[str]]]:
    """One run's per-query values as text: headers ``query`` and the measures; the means as a last ``all`` row."""
    rows = [[qid, *(_number(values[m], False) if m in values else UNDEFINED for m in result.measures)]
            for qid, values in result.per_query.items()]
    rows.append(["all", *("" if m in result.text else _number(result.mean[m], False) for m in result.measures)])
    return ["query", *result.measures], rows


def per_query_title(name: str, result: EvaluationResult) -> str:
    return f"{name}: per query ({_options(result)})"


def to_table(results: Results) -> Table:
    """A rich table of means: one row per run, one column per measure, plus the query count; the caption
    says which queries were averaged and by which trec_eval rules."""
    from rich.table import Table

    named = _named(results)
    headers, rows = means_rows(named)
    table = Table(title="Evaluation", caption=caption([result for _, result in named]))
    for i, header in enumerate(headers):
        table.add_column(header, justify="left" if i == 0 else "right", no_wrap=i == 1)
    for row in rows:
        table.add_row(*row)
    return table


def to_per_query_table(name: str, result: EvaluationResult) -> Table:
    """A rich table of one run's per-query values, with the means as a last ``all`` row."""
    from rich.table import Table

    headers, rows = per_query_rows(result)
    table = Table(title=per_query_title(name, result), caption=rules([result]))
    for i, header in enumerate(headers):
        table.add_column(header, justify="left" if i == 0 else "right")
    for row in rows:
        table.add_row(*row, style="bold" if row is rows[-1] else None)
    return table


def to_tables(results: Results, *, per_query: bool = False) -> list[Table]:
    """The table of means, preceded by one per-query table per run when ``per_query``."""
    named = _named(results)
    tables = [to_per_query_table(name, result) for name, result in named] if per_query else []
    return [*tables, to_table(named)]


def _listed(qids: Sequence[str]) -> str:
    shown = ", ".join(sorted(qids, key=natural_key)[:_LISTED])
    return shown + (", ..." if len(qids) > _LISTED else "")


def notes(result: EvaluationResult) -> list[str]:
    """Plain sentences on what was left out or undefined; empty when nothing was."""
    lines: list[str] = []
    if result.num_queries == 0:
        lines.append("no query has both judgments and a ranking: do the qrels and the run belong together?")
    if result.unavailable:
        lines.append(f"{len(result.unavailable)} trec_eval measures are not computed by bm25lab: "
                     f"{', '.join(result.unavailable)}")
    for measure, value in result.mean.items():
        if math.isnan(value) and result.num_queries and measure not in result.text:
            lines.append(f"{measure} is undefined for every averaged query: no mean ({UNDEFINED})")
    if result.missing_from_run:
        fate = ("not averaged (complete would score them 0)" if not result.complete else "scored 0 (complete)"
                if result.trec_eval == 9 else "evaluated as a ranking of one unjudged document (complete, trec_eval "
                f"{result.trec_eval} rules)")
        lines.append(
            f"{len(result.missing_from_run)} judged queries missing from the run, {fate}: "
            f"{_listed(result.missing_from_run)}"
        )
    if result.not_judged:
        lines.append(f"{len(result.not_judged)} run queries without judgments ignored: {_listed(result.not_judged)}")
    for measure, qids in result.undefined.items():
        reason = result.reasons.get(measure)
        lines.append(
            f"{measure} undefined for {len(qids)} queries" + (f" ({reason})" if reason else "") +
            f", left out of its mean: {_listed(qids)}"
        )
    if result.geometric:
        lines.append(f"{', '.join(result.geometric)}: geometric mean over the queries (values floored at 0.00001)")
    return lines
