"""`bm25lab evaluate` and `bm25lab compare`: runs against qrels, and runs against a baseline."""
from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional, Sequence

import typer

from ..evaluation.compare import DEFAULT_MEASURES as COMPARE_MEASURES
from ..evaluation.conventions import DEFAULT_TREC_EVAL, RULES
from ..evaluation.measures import DEFAULT_MEASURES, MISSING_RATINGS
from ..evaluation.significance import TESTS
from .common import TableFormat, _choices, console, handles_errors

if TYPE_CHECKING:
    from ..evaluation.evaluator import EvaluationResult


class EvalFormat(str, Enum):
    table = "table"
    trec = "trec"
    json = "json"
    csv = "csv"


class CompareFormat(str, Enum):
    table = "table"
    json = "json"
    markdown = "markdown"
    latex = "latex"


TestName = _choices("TestName", TESTS)
TrecEvalRules = _choices("TrecEvalRules", [str(version) for version in RULES])
MissingRatings = _choices("MissingRatings", MISSING_RATINGS)
MEASURE_OPT = typer.Option("--measure", "-m", help="Measure name, repeatable (e.g. -m nDCG@10 -m AP).")
RUNS_ARG = typer.Argument(help="TREC run file(s).", exists=True, dir_okay=False)
QRELS_ARG = typer.Argument(help="TREC qrels (qid iter docid rel) or BEIR qrels TSV.", exists=True, dir_okay=False)


def render_results(named: Sequence[tuple[str, "EvaluationResult"]], format: str, per_query: bool) -> None:
    """Print evaluation results (one per run) in the chosen format."""
    from ..evaluation import report

    if format == "table":
        for table in report.to_tables(named, per_query=per_query):
            console().print(table)
        for name, result in named:
            for line in report.notes(result):
                console(stderr=True).print(f"{name}: {line}")
    elif format == "trec":
        typer.echo(report.to_trec(named, per_query=per_query), nl=False)
    elif format == "json":  # the documented shape always carries per_query
        typer.echo(report.to_json(named, per_query=True))
    else:
        typer.echo(report.to_csv(named, per_query=per_query), nl=False)


@handles_errors
def evaluate_cmd(
    qrels: Annotated[Path, QRELS_ARG],
    runs: Annotated[list[Path], RUNS_ARG],
    measure: Annotated[Optional[list[str]], MEASURE_OPT] = None,
    per_query: Annotated[bool, typer.Option("--per-query", "-q", help="Also show every query's values (trec_eval -q).")] = False,
    complete: Annotated[bool, typer.Option("--complete", "-c", help="Average over every judged query; one missing from the run scores 0 (trec_eval -c).")] = False,
    rel: Annotated[int, typer.Option("--rel", "-l", help="Lowest judgment that counts as relevant (trec_eval -l).")] = 1,
    judged_only: Annotated[bool, typer.Option("--judged-only", "-J", help="Drop unjudged documents from the ranking first (trec_eval -J).")] = False,
    max_docs: Annotated[Optional[int], typer.Option("--max-docs", "-M", min=1, help="Only the first N documents of each ranking count (trec_eval -M).")] = None,
    collection_size: Annotated[Optional[int], typer.Option("--collection-size", "-N", min=0, help="Documents in the collection: TN, accuracy, FPR, specificity and utility's TN weight need it (trec_eval -N).")] = None,
    index: Annotated[Optional[Path], typer.Option("--index", help="Take the collection size from this index.", exists=True, file_okay=False)] = None,
    trec_eval: Annotated[TrecEvalRules, typer.Option("--trec-eval", help="trec_eval's rules where its releases differ: 9 (9.0.8, as pytrec_eval) or 10 (10.0). See evaluation/MEASURES.md.")] = TrecEvalRules(str(DEFAULT_TREC_EVAL)),
    missing_ratings: Annotated[MissingRatings, typer.Option("--missing-ratings", help="MAE/RMSE: a retrieved document its query did not rate is skipped, or rated with the query's mean, median, or zero.")] = MissingRatings("skip"),
    format: Annotated[EvalFormat, typer.Option("--format", help="table, trec (trec_eval layout), json or csv.")] = EvalFormat.table,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Write the precision-recall curve(s) to this PNG.")] = None,
    plot_roc: Annotated[Optional[Path], typer.Option("--plot-roc", help="Write the ROC curve(s) over the judged documents to this PNG.")] = None,
) -> None:
    """Evaluate TREC run(s) against qrels with trec_eval's conventions.

    Default measures: {defaults}.

    Example: bm25lab evaluate qrels.trec bm25.run -m nDCG@10 -m P@5 --per-query
    """
    from ..evaluation import evaluate, read_qrels, read_run
    from ..evaluation.evaluator import precision_recall_curve, roc_curve

    measures = measure or DEFAULT_MEASURES
    rules = int(trec_eval.value)
    size = _collection_size(collection_size, index)
    judgments = read_qrels(qrels, trec_eval=rules)
    named, curves, rocs = [], {}, {}
    for path in runs:
        run = read_run(path)
        named.append((path.stem, evaluate(judgments, run, measures, rel=rel, complete=complete, judged_only=judged_only,
                                          trec_eval=rules, max_docs=max_docs, collection_size=size,
                                          missing_ratings=missing_ratings.value)))
        if plot is not None:
            curves[path.stem] = precision_recall_curve(judgments, run, rel=rel, complete=complete,
                                                       judged_only=judged_only, trec_eval=rules)
        if plot_roc is not None:
            rocs[path.stem] = roc_curve(judgments, run, rel=rel, complete=complete, judged_only=judged_only,
                                        max_docs=max_docs)
    render_results(named, format.value, per_query)
    if plot is not None:
        from ..evaluation.plots import plot_pr_curves

        plot_pr_curves(curves, plot)
        console(stderr=True).print(f"precision-recall curve -> {plot}")
    if plot_roc is not None:
        from ..evaluation.plots import plot_roc_curves

        plot_roc_curves(rocs, plot_roc)
        console(stderr=True).print(f"ROC curve -> {plot_roc}")


def _collection_size(given: Optional[int], index: Optional[Path]) -> Optional[int]:
    """The collection size: given, or the number of documents of ``index``."""
    if index is None:
        return given
    if given is not None:
        from ..engine.errors import ParameterError

        raise ParameterError("give the collection size either as --collection-size or by --index, not both")
    from ..engine import Index

    return Index.load(index, verify=False).num_docs


evaluate_cmd.__doc__ = evaluate_cmd.__doc__.format(defaults=" ".join(DEFAULT_MEASURES))


@handles_errors
def compare_cmd(
    qrels: Annotated[Path, QRELS_ARG],
    baseline: Annotated[Path, typer.Argument(help="Baseline TREC run.", exists=True, dir_okay=False)],
    runs: Annotated[list[Path], RUNS_ARG],
    measure: Annotated[Optional[list[str]], MEASURE_OPT] = None,
    test: Annotated[TestName, typer.Option("--test", help="Significance test: t (paired t), randomization, bootstrap.")] = TestName("t"),
    trials: Annotated[int, typer.Option("--trials", help="Trials of the randomization/bootstrap tests and of the CI.", min=100)] = 10_000,
    seed: Annotated[int, typer.Option("--seed", help="Random seed.")] = 0,
    alpha: Annotated[float, typer.Option("--alpha", help="Significance level, between 0 and 1.")] = 0.05,
    complete: Annotated[bool, typer.Option("--complete", "-c", help="Count every judged query (trec_eval -c).")] = False,
    trec_eval: Annotated[TrecEvalRules, typer.Option("--trec-eval", help="trec_eval's rules where its releases differ: 9 (9.0.8) or 10 (10.0).")] = TrecEvalRules(str(DEFAULT_TREC_EVAL)),
    format: Annotated[CompareFormat, typer.Option("--format", help="table, json, markdown or latex.")] = CompareFormat.table,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Write per-query differences and PR curves to this PNG.")] = None,
) -> None:
    """Compare runs with a baseline: deltas, p-values (Holm-corrected), bootstrap CIs, wins/ties/losses.

    A run's name is its file's stem. Only queries evaluated in every run are compared.

    Example: bm25lab compare qrels.trec bm25.run tuned.run rm3.run --test randomization
    """
    from ..engine.errors import ParameterError
    from ..evaluation import evaluate, read_qrels, read_run
    from ..evaluation.compare import compare, notes, to_json, to_latex, to_markdown, to_rich_table
    from ..evaluation.evaluator import precision_recall_curve

    measures = measure or list(COMPARE_MEASURES)
    rules = int(trec_eval.value)
    judgments = read_qrels(qrels, trec_eval=rules)
    names = [baseline.stem] + [p.stem for p in runs]
    if len(set(names)) != len(names):
        raise ParameterError(f"two runs have the same name (file stem): {', '.join(names)}")
    loaded = {p.stem: read_run(p) for p in [baseline, *runs]}
    per_query = {name: evaluate(judgments, run, measures, complete=complete, trec_eval=rules).per_query
                 for name, run in loaded.items()}
    result = compare(per_query[baseline.stem], {p.stem: per_query[p.stem] for p in runs}, measures,
                     test=test.value, trials=trials, seed=seed, alpha=alpha, baseline_name=baseline.stem)
    if format is CompareFormat.table:
        console().print(to_rich_table(result))  # its caption holds the notes
    else:
        render = {CompareFormat.json: to_json, CompareFormat.markdown: to_markdown, CompareFormat.latex: to_latex}
        typer.echo(render[format](result))
        for line in notes(result):  # e.g. how many queries were compared
            console(stderr=True).print(line)
    if plot is not None:
        from ..evaluation.plots import plot_comparison

        curves = {name: precision_recall_curve(judgments, run, complete=complete) for name, run in loaded.items()}
        plot_comparison(result, curves, plot)
        console(stderr=True).print(f"plot -> {plot}")


@handles_errors
def link_prediction_cmd(
    ranks: Annotated[Path, typer.Argument(help="One test positive per line, its rank among its candidates (1 = best) as the line's last field.", exists=True, dir_okay=False)],
    hits: Annotated[Optional[list[int]], typer.Option("--hits", "-k", min=1, help="Hits@k cutoff, repeatable (default: 1, 3, 10).")] = None,
    format: Annotated[TableFormat, typer.Option("--format", help="table or json.")] = TableFormat.table,
) -> None:
    """Link-prediction measures of ranked positives (knowledge-graph completion): MR, MRR and Hits@k.

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
