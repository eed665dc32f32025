"""`bm25lab evaluate`, `measures` and `link-prediction`: runs against qrels, the measures' registry, and ranked
positives (``compare``, runs against a baseline, is :mod:`bm25lab.cli.compare_cmds`: its tests and corrections
are not imported to evaluate)."""
from __future__ import annotations

import math
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Callable, Optional, Sequence

import typer

from ..engine.errors import ParameterError
from ..evaluation.conventions import DEFAULT_TREC_EVAL, RULES
from ..evaluation.measures import DEFAULT_MEASURES, MISSING_RATINGS
from ..evaluation.ranking import FRACTIONS
from .common import TableFormat, _choices, console, handles_errors, note, say, settle_memory_for_large_files
from .inputs import QRELS_FORMAT_OPT, RUN_FORMAT_OPT, QrelsFormat, RunFormat

if TYPE_CHECKING:
    from ..evaluation.evaluator import EvaluationResult
    from .tables import Grid


class EvalFormat(str, Enum):
    table = "table"
    trec = "trec"
    json = "json"
    csv = "csv"


TrecEvalRules = _choices("TrecEvalRules", [str(version) for version in RULES])
MissingRatings = _choices("MissingRatings", MISSING_RATINGS)
Fractions = _choices("Fractions", FRACTIONS)
MEASURE_OPT = typer.Option("--measure", "-m", help="Measure, repeatable: bm25lab's (nDCG@10), trec_eval's (P.5,10, "
                                                    "ndcg_1=3,2=9, all_trec), ir_measures' (P(rel=2)@5) or ranx's "
                                                    "(hits@10) names; `bm25lab measures` lists them.")
TREC_EVAL_OPT = typer.Option("--trec-eval", help="trec_eval's rules where its releases differ: 9 (9.0.8, as "
                                                 "pytrec_eval) or 10 (10.0). See docs/measures.md.")
RUNS_ARG = typer.Argument(help="Run file(s): TREC, MS MARCO (qid docid rank) or ranx JSON.")
QRELS_ARG = typer.Argument(help="Qrels: TREC, BEIR TSV, SMART (qid docid 0 0), Cranfield, ranx JSON, or a bundled "
                                "collection's name.")
DPI_OPT = typer.Option("--dpi", help="Resolution of a PNG plot (PDF and SVG are vector graphics).", min=30, max=1200)
PLOT_HELP = "Write the plot to this file: .png, .pdf or .svg, by its extension."


JUDGED = "Judged@10"
"""What ``evaluate`` also computes, to warn when almost nothing retrieved is judged (qrels of another collection)."""
JUDGED_FLOOR = 0.10


def means_grid(named: Sequence[tuple[str, "EvaluationResult"]], transposed: bool = False) -> "Grid":
    """The table of means: a row per run (or, ``transposed``, a row per measure and a column per run)."""
    from ..evaluation import report
    from .tables import Column, Grid

    headers, rows = report.means_rows(named)
    caption = report.caption([result for _, result in named])
    if not transposed:
        columns = [Column("run"), Column("queries", "right", wrap=True), *(Column(h, "right") for h in headers[2:])]
        return Grid("Evaluation", columns, rows, caption)
    columns = [Column("measure"), *(Column(row[0], "right") for row in rows)]
    grid = Grid("Evaluation", columns, [], caption)
    for i, header in enumerate(headers[1:], 1):
        grid.add_row(header, *(row[i] for row in rows))
    return grid


def per_query_grid(name: str, result: "EvaluationResult") -> "Grid":
    from ..evaluation import report
    from .tables import Column, Grid

    headers, rows = report.per_query_rows(result)
    return Grid(report.per_query_title(name, result), [Column(headers[0]), *(Column(h, "right") for h in headers[1:])],
                rows, report.rules([result]))


def print_evaluation_tables(named: Sequence[tuple[str, "EvaluationResult"]], per_query: bool) -> None:
    """The per-query tables (when asked) and the table of means, laid out to fit the terminal: a row per run,
    or a row per measure when that needs fewer tables (many measures, as with all_trec)."""
    from .tables import parts, print_grid, screen_width

    width = screen_width()
    if per_query:
        for name, result in named:
            print_grid(per_query_grid(name, result))
    wide, tall = means_grid(named), means_grid(named, transposed=True)
    print_grid(tall if parts(tall, width) < parts(wide, width) else wide)


def warn_if_unjudged(named: Sequence[tuple[str, "EvaluationResult"]]) -> None:
    """A note for a run whose top 10 is almost all unjudged: its measures say little, and most likely the qrels
    are another collection's (their ids overlapping by chance)."""
    for name, result in named:
        judged = result.mean.get(JUDGED)
        if judged is not None and not math.isnan(judged) and judged < JUDGED_FLOOR:
            note(f"{name}: only {judged:.1%} of the top 10 documents are judged (Judged@10 = {judged:.4f}): "
                 f"the measures say little; are the qrels this run's collection's?")


def without_judged(result: "EvaluationResult") -> "EvaluationResult":
    """The result without the Judged@10 that ``evaluate`` added for :func:`warn_if_unjudged`."""
    from dataclasses import replace

    return replace(result, measures=tuple(m for m in result.measures if m != JUDGED),
                   mean={m: v for m, v in result.mean.items() if m != JUDGED},
                   per_query={q: {m: v for m, v in values.items() if m != JUDGED} for q, values in result.per_query.items()},
                   undefined={m: q for m, q in result.undefined.items() if m != JUDGED})


def render_results(named: Sequence[tuple[str, "EvaluationResult"]], format: str, per_query: bool) -> None:
    """Print evaluation results (one per run) in the chosen format."""
    from ..evaluation import report

    if format == "table":
        print_evaluation_tables(named, per_query)
        for name, result in named:
            for line in report.notes(result):
                say(f"{name}: {line}", stderr=True)
        return
    if format == "trec":
        typer.echo(report.to_trec(named, per_query=per_query), nl=False)
    elif format == "json":  # the documented shape always carries per_query
        typer.echo(report.to_json(named, per_query=True))
    else:
        typer.echo(report.to_csv(named, per_query=per_query), nl=False)
    for name, result in named:  # machine-readable formats still hear of measures a nickname left out
        if result.unavailable:
            say(f"{name}: {len(result.unavailable)} trec_eval measures are not computed by bm25lab: "
                f"{', '.join(result.unavailable)}", stderr=True)
    if format == "trec":  # the trec layout has no room for it: said on stderr
        say(report.rules([result for _, result in named]), stderr=True)


@handles_errors
def evaluate_cmd(
    qrels: Annotated[str, QRELS_ARG],
    runs: Annotated[list[Path], RUNS_ARG],
    measure: Annotated[Optional[list[str]], MEASURE_OPT] = None,
    per_query: Annotated[bool, typer.Option("--per-query", "-q", help="Also show every query's values (trec_eval -q).")] = False,
    complete: Annotated[bool, typer.Option("--complete", "-c", help="Average over every judged query; one missing from the run scores 0 (trec_eval -c; under --trec-eval 10, as 10.0 scores it).")] = False,
    rel: Annotated[float, typer.Option("--rel", "-l", help="Lowest judgment that counts as relevant (trec_eval -l); a fraction such as 4.5 counts ratings of 4.5 and more.")] = 1,
    judged_only: Annotated[bool, typer.Option("--judged-only", "-J", help="Drop unjudged documents from the ranking first (trec_eval -J).")] = False,
    depth: Annotated[Optional[int], typer.Option("--depth", "-M", "--max-docs", help="Evaluate each query's best N documents only, after ranking (trec_eval -M).", min=1)] = None,
    collection_size: Annotated[Optional[int], typer.Option("--collection-size", "-N", min=0, help="Documents in the collection: TN, accuracy, FPR, specificity and utility's TN weight need it (trec_eval -N).")] = None,
    index: Annotated[Optional[Path], typer.Option("--index", help="Take the collection size from this index.")] = None,
    trec_eval: Annotated[TrecEvalRules, TREC_EVAL_OPT] = TrecEvalRules(str(DEFAULT_TREC_EVAL)),
    missing_ratings: Annotated[MissingRatings, typer.Option("--missing-ratings", help="A retrieved document its query did not rate: skipped (MAE/RMSE; gain 0 for the graded measures), or rated with the query's mean, median, or zero, for MAE/RMSE and the graded measures (CG, DCG, IDCG, nDCG and their _exp forms).")] = MissingRatings("skip"),
    fractions: Annotated[Fractions, typer.Option("--fractions", help="A judgment with a fraction (4.5): keep it as written, or truncate it as trec_eval does (4).")] = Fractions("keep"),
    format: Annotated[EvalFormat, typer.Option("--format", help="table, trec (trec_eval layout), json or csv.")] = EvalFormat.table,
    qrels_format: Annotated[QrelsFormat, QRELS_FORMAT_OPT] = QrelsFormat("auto"),
    run_format: Annotated[RunFormat, RUN_FORMAT_OPT] = RunFormat("auto"),
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Precision-recall curves of the runs. " + PLOT_HELP)] = None,
    plot_queries: Annotated[Optional[str], typer.Option("--plot-queries", help="Also each of these queries' curves, in small panels: comma-separated ids, or 'all'.")] = None,
    plot_roc: Annotated[Optional[Path], typer.Option("--plot-roc", help="ROC curves of the runs over the judged documents. " + PLOT_HELP)] = None,
    dpi: Annotated[int, DPI_OPT] = 150,
) -> None:
    """Evaluate run(s) against qrels with trec_eval's conventions.

    Default measures: {defaults}.

    Example: bm25lab evaluate qrels.trec bm25.run -m nDCG@10 -m P@5 --per-query
    """
    from ..evaluation import evaluate
    from ..evaluation.evaluator import EvaluationResult, precision_recall_curve, precision_recall_curves, roc_curve
    from ..evaluation.measures import expand_measures
    from .inputs import qrels as read_judgments, run as read_a_run

    if plot is None and plot_queries is not None:
        raise ParameterError("--plot-queries draws into the --plot file: give --plot FILE too")
    for path in (plot, plot_roc):
        if path is not None:
            from ..evaluation.plots import check_plot_path

            check_plot_path(path)
    measures = measure or DEFAULT_MEASURES
    rules = int(trec_eval.value)
    size = _collection_size(collection_size, index)
    settle_memory_for_large_files([qrels, *runs])
    judgments, first_run = _qrels_and_first_run(lambda: read_judgments(qrels, qrels_format, trec_eval=rules),
                                                lambda: read_a_run(runs[0], run_format))
    options = {"rel": rel, "complete": complete, "judged_only": judged_only, "depth": depth, "fractions": fractions.value}
    named, curves, per_query_curves, rocs, aucs = [], {}, {}, {}, {}
    judged_fraction: list[tuple[str, EvaluationResult]] = []
    asked_judged = JUDGED in expand_measures(measures).names
    for i, path in enumerate(runs):
        run = first_run if i == 0 else read_a_run(path, run_format)
        first_run = None  # each run's memory goes once it is evaluated
        result = evaluate(judgments, run, [*measures, JUDGED], **options, trec_eval=rules, collection_size=size,
                          missing_ratings=missing_ratings.value)
        named.append((path.stem, result if asked_judged else without_judged(result)))
        judged_fraction.append((path.stem, result))
        if plot is not None:
            curves[path.stem] = precision_recall_curve(judgments, run, **options, trec_eval=rules)
            if plot_queries is not None:
                per_query_curves[path.stem] = precision_recall_curves(judgments, run, **options, trec_eval=rules)
        if plot_roc is not None:
            rocs[path.stem] = roc_curve(judgments, run, **options)
            aucs[path.stem] = evaluate(judgments, run, ["AUC"], **options, trec_eval=rules).mean["AUC"]
    render_results(named, format.value, per_query)
    warn_if_unjudged(judged_fraction)
    if plot is not None:
        from ..evaluation.plots import plot_pr_curves, plot_query_pr_curves

        if plot_queries is None:
            plot_pr_curves(curves, plot, dpi=dpi)
        else:
            plot_query_pr_curves(curves, per_query_curves, _query_list(plot_queries), plot, dpi=dpi)
        say(f"precision-recall curves -> {plot}", stderr=True)
    if plot_roc is not None:
        from ..evaluation.plots import plot_roc_curves

        plot_roc_curves(rocs, plot_roc, aucs=aucs, dpi=dpi)
        say(f"ROC curves -> {plot_roc}", stderr=True)


def _qrels_and_first_run(read_qrels: Callable[[], Any], read_run: Callable[[], Any]) -> tuple[Any, Any]:
    """The qrels and the first run, read at once: the run in a second thread (pyarrow's parsing and numpy's
    column work let go of the interpreter) while this one reads the qrels. An error of the qrels is
    raised first, as when they are read first; then the run's."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        run = pool.submit(read_run)
        try:
            judgments = read_qrels()
        except BaseException:
            run.cancel()
            raise
        return judgments, run.result()


def _query_list(text: str) -> Optional[list[str]]:
    """``--plot-queries``: None for all, else the ids listed."""
    if text.strip().lower() == "all":
        return None
    listed = [q.strip() for q in text.split(",") if q.strip()]
    if not listed:
        raise ParameterError("--plot-queries: give query ids separated by commas, or 'all'")
    return listed


def _collection_size(given: Optional[int], index: Optional[Path]) -> Optional[int]:
    """The collection size: given, or the number of documents of ``index``."""
    if index is None:
        return given
    if given is not None:
        raise ParameterError("give the collection size either as --collection-size or by --index, not both")
    from ..engine import Index

    return Index.load(index, verify=False).num_docs


evaluate_cmd.__doc__ = evaluate_cmd.__doc__.format(defaults=" ".join(DEFAULT_MEASURES))


@handles_errors
def measures_cmd(
    format: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
) -> None:
    """List every measure: its forms, aliases, trec_eval name and definition (from the registry).

    Names are case-insensitive and may be written in bm25lab's, trec_eval's (P_10, P.5,10, ndcg_1=3,2=9,
    all_trec), ir_measures' (P(rel=2)@5, nDCG(dcg='exp-log2')@10) or ranx's (hits@10, map@100-l2) syntax;
    docs/measures.md defines each and says where the tools' conventions differ.

    Example: bm25lab measures
    """
    import json

    from ..evaluation.measures import MEASURES, TREC_NICKNAMES, TREC_RENAMED, MeasureDef

    if format not in ("table", "json"):
        raise ParameterError(f"--format {format!r}: use table or json")

    def trec_eval_names(d: MeasureDef) -> Optional[str]:
        marks = {"{k}": "k", "{r}": d.symbol, "{text}": d.symbol}
        text = (d.trec_eval or "").strip("|").replace("|", ", ")
        for mark, shown in marks.items():
            text = text.replace(mark, shown)
        return text or None

    rows = [{"name": d.name, "forms": d.forms(), "aliases": list(d.aliases), "trec_eval": trec_eval_names(d),
             "kind": "text" if d.text else "0..1" if d.bounded else "count" if d.total or d.count else "number",
             "definition": d.description}
            for d in MEASURES.values()]
    if format == "json":
        typer.echo(json.dumps({"measures": rows, "trec_eval_nicknames": list(TREC_NICKNAMES)}, indent=1))
        return
    from .tables import Column, Grid, print_grid, print_text

    grid = Grid("measures (bm25lab -m NAME; names are case-insensitive)",
                [Column("name", wrap=True), Column("also written", wrap=True), Column("range"),
                 Column("definition", wrap=True)])
    for row in rows:
        also = [", ".join(row["aliases"]), f"trec_eval: {row['trec_eval']}" if row["trec_eval"] else ""]
        grid.add_row(row["forms"], "\n".join(filter(None, also)), row["kind"], row["definition"])
    print_grid(grid)
    renamed = ", ".join(f"trec_eval's {trec} is {ours}" for trec, ours in TREC_RENAMED.items())
    print_text("Also: trec_eval's lists and families (-m P.5,10; -m P = P_5..P_1000), parameter lists "
               f"(ndcg_1=3,2=9, utility_2,-1,0,0) and nicknames ({', '.join(TREC_NICKNAMES)}; {renamed}); "
               "ir_measures' parameters P(rel=2)@5, RR(judged_only=True), nDCG(dcg='exp-log2')@10; ranx's "
               "relevance level map@100-l2 and rbp.95. Definitions: docs/measures.md.")


@handles_errors
def link_prediction_cmd(
    ranks: Annotated[Path, typer.Argument(help="One test positive per line, its rank among its candidates (1 = best) as the line's last field.")],
    hits: Annotated[Optional[list[int]], typer.Option("--hits", "-k", min=1, help="Hits@k cutoff, repeatable (default: 1, 3, 10).")] = None,
    format: Annotated[TableFormat, typer.Option("--format", help="table or json.")] = TableFormat.table,
) -> None:
    """Link-prediction measures of ranked positives (knowledge-graph completion): MR, MRR and Hits@k
    (the share of positives ranked k or better).

    Example: bm25lab link-prediction ranks.txt -k 1 -k 3 -k 10
    """
    import json

    from ..evaluation.linkprediction import DEFAULT_HITS, link_prediction, read_ranks

    result = link_prediction(read_ranks(ranks), hits or DEFAULT_HITS)
    values = result.as_dict()
    if format is TableFormat.json:
        typer.echo(json.dumps({"positives": result.count, **values}, indent=1))
        return
    from rich.table import Table

    table = Table(title=f"Link prediction over {result.count} positives")
    for name in values:
        table.add_column(name, justify="right")
    table.add_row(*(f"{v:.4f}" for v in values.values()))
    console().print(table)
