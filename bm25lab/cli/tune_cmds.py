"""`bm25lab tune`: grid search of k1 and b with cross-validation over the queries."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from ..engine.errors import ParameterError
from ..evaluation.tuning import DEFAULT_B_SPEC, DEFAULT_K1_SPEC
from .feedback_opts import BO1_OPT, OQW_OPT, RM3_OPT, ROCCHIO_OPT, chosen_feedback
from .common import (BACKEND_OPT, DEFAULT_VARIANT_NAME, K3_OPT, QUIET_OPT, VARIANT_OPT, BackendName, TableFormat,
                     VariantName, backend_name, console, handles_errors, note, progress_bars, say)
from .inputs import (QRELS_FORMAT_OPT, QUERY_FORMAT_OPT, QUERY_ID_FIELD_OPT, QUERY_IDS_OPT, QUERY_TEXT_FIELDS_OPT,
                     TOPIC_FIELD_OPT, QrelsFormat, QueryFormat, QueryIds)

if TYPE_CHECKING:
    from ..evaluation.tuning import TuneResult

K1_GRID_HELP = f"k1 values: start:stop:step (stop included) or a comma list. Default {DEFAULT_K1_SPEC}."
B_GRID_HELP = f"b values: start:stop:step (stop included) or a comma list. Default {DEFAULT_B_SPEC}."


def _tune_with_progress(index_dir: Path, topics: dict[str, str], judgments: object, measure: str, variant: str,
                        k1_text: Optional[str], b_text: Optional[str], folds: int, k: int,
                        seed: int, backend: Optional[str], k3: Optional[float] = None,
                        quiet: bool = False) -> "TuneResult":
    """Load everything, then run :func:`bm25lab.evaluation.tuning.tune`, its progress on stderr (``quiet``: none)."""
    from ..engine import Index
    from ..evaluation.tuning import DEFAULT_B_GRID, DEFAULT_K1_GRID, parse_grid, tune

    k1_grid = parse_grid(k1_text, "--k1-grid") if k1_text else DEFAULT_K1_GRID
    b_grid = parse_grid(b_text, "--b-grid") if b_text else DEFAULT_B_GRID
    idx = Index.load(index_dir, backend=backend)
    started = time.perf_counter()
    with progress_bars(quiet) as bars:
        advance = bars.points("tuning k1 x b", len(k1_grid) * len(b_grid))
        result = tune(idx, topics, judgments, measure=measure, variant=variant, k1_grid=k1_grid, b_grid=b_grid,
                      folds=folds, k=k, seed=seed, progress=advance, k3=k3)
    elapsed = time.perf_counter() - started
    points = len(k1_grid) * len(b_grid)
    say(f"{points} grid points x {result.num_queries} queries in {elapsed:.1f} s ({result.depth} results per query)",
        stderr=True)
    return result


def _print_tables(result: "TuneResult") -> None:
    """A summary table and a table of the folds' choices, for people."""
    from ..engine.scoring import DEFAULT_B, DEFAULT_K1
    from .tables import Column, Grid, print_grid

    m = result.measure
    k3 = "" if result.k3 is None else f", k3 {result.k3:g}"
    summary = Grid(f"tune {m} ({result.variant}{k3}, {result.num_queries} queries, {len(result.k1_grid)} x "
                   f"{len(result.b_grid)} grid)", [Column(""), Column("k1", "right"), Column("b", "right"),
                                                   Column(m, "right")])
    cv = f"{len(result.folds)}-fold CV"
    summary.add_row("best on all queries", f"{result.best['k1']:g}", f"{result.best['b']:g}", f"{result.best_mean:.4f}")
    summary.add_row("default", f"{DEFAULT_K1:g}", f"{DEFAULT_B:g}", f"{result.default_mean:.4f}")
    summary.add_row(f"{cv}, train mean", "per fold", "per fold", f"{result.train_mean:.4f}")
    summary.add_row(f"{cv}, held-out mean", "per fold", "per fold", f"{result.test_mean:.4f}")
    print_grid(summary)
    folds = Grid("parameters chosen in each fold", [Column(name, "right", wrap=True) for name in (
        "fold", "held-out queries", "k1", "b", f"train {m}", f"held-out {m}")])
    for f in result.folds:
        folds.add_row(str(f.index), str(f.num_test_queries), f"{f.k1:g}", f"{f.b:g}", f"{f.train_mean:.4f}",
                      f"{f.test_mean:.4f}")
    print_grid(folds)


def tune_json(result: "TuneResult") -> dict:
    """The JSON of ``tune``: the library's (best point, means, folds) with the measure, the best point's value
    and the whole grid (each k1 a row of means over the b values)."""
    import math

    return {"measure": result.measure, "variant": result.variant, "queries": result.num_queries,
            **result.to_dict(), "best_mean": result.best_mean,
            "grid": {"k1": list(result.k1_grid), "b": list(result.b_grid),
                     "mean": [[None if math.isnan(v) else float(v) for v in row] for row in result.grid.tolist()]}}


@handles_errors
def tune(
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="Index directory.")],
    queries: Annotated[str, typer.Argument(help="Queries: TSV, JSONL, TREC topics or SMART, or a bundled collection's name.")],
    qrels: Annotated[str, typer.Argument(help="Qrels: TREC, BEIR TSV, SMART, Cranfield, ranx JSON, or a bundled collection's name.")],
    measure: Annotated[str, typer.Option("--measure", "-m", help="Measure to maximise (e.g. nDCG@10, AP, P@10).")] = "nDCG@10",
    variant: Annotated[VariantName, VARIANT_OPT] = DEFAULT_VARIANT_NAME,
    k1_grid: Annotated[Optional[str], typer.Option("--k1-grid", help=K1_GRID_HELP)] = None,
    b_grid: Annotated[Optional[str], typer.Option("--b-grid", help=B_GRID_HELP)] = None,
    k3: Annotated[Optional[float], K3_OPT] = None,
    folds: Annotated[int, typer.Option("--folds", help="Cross-validation folds over the queries.", min=2)] = 5,
    k: Annotated[int, typer.Option("-k", help="Results per query for measures of the whole ranking (a measure NAME@n needs only n).", min=1)] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the random assignment of queries to folds.")] = 0,
    format: Annotated[TableFormat, typer.Option("--format", help="table or json.")] = TableFormat.table,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Write a k1 x b heat map of the measure to this .png, .pdf or .svg.")] = None,
    dpi: Annotated[int, typer.Option("--dpi", help="Resolution of a PNG plot.", min=30, max=1200)] = 150,
    query_format: Annotated[QueryFormat, QUERY_FORMAT_OPT] = QueryFormat("auto"),
    topic_field: Annotated[str, TOPIC_FIELD_OPT] = "title",
    query_ids: Annotated[QueryIds, QUERY_IDS_OPT] = QueryIds("given"),
    query_id_field: Annotated[Optional[str], QUERY_ID_FIELD_OPT] = None,
    query_text_fields: Annotated[Optional[str], QUERY_TEXT_FIELDS_OPT] = None,
    qrels_format: Annotated[QrelsFormat, QRELS_FORMAT_OPT] = QrelsFormat("auto"),
    backend: Annotated[Optional[BackendName], BACKEND_OPT] = None,
    rm3: Annotated[bool, RM3_OPT] = False,
    bo1: Annotated[bool, BO1_OPT] = False,
    rocchio: Annotated[bool, ROCCHIO_OPT] = False,
    fb_docs_grid: Annotated[str, typer.Option("--fb-docs-grid", help="With a feedback method: feedback documents to try, a comma list.")] = "5,10,20",
    fb_terms_grid: Annotated[str, typer.Option("--fb-terms-grid", help="With a feedback method: feedback terms to try, a comma list.")] = "5,10,20",
    original_query_weight: Annotated[Optional[float], OQW_OPT] = None,
    quiet: Annotated[bool, QUIET_OPT] = False,
) -> None:
    """Grid-search BM25's k1 and b with k-fold cross-validation over the judged queries; with --rm3, --bo1 or
    --rocchio, the feedback's documents x terms instead (at one k1 and b: the defaults, or one-value grids).

    Reports the best point on all queries, each fold's choice with its train and held-out means,
    and the default parameters' score. Every grid point reuses the index's postings.

    Example: bm25lab tune my-index topics.tsv qrels.trec -m nDCG@10 --k1-grid 0.5:2.0:0.1 --plot grid.png
    """
    from .inputs import qrels as read_judgments, queries as read_topics

    if plot is not None:
        from ..evaluation.plots import check_plot_path

        check_plot_path(plot)
    from .search_cmds import check_order

    check_order(directory, queries, "bm25lab tune DIR QUERIES QRELS")
    judgments = read_judgments(qrels, qrels_format)
    topics = read_topics(queries, query_format, topic_field, query_ids, query_id_field, query_text_fields)
    feedback = chosen_feedback(rm3, bo1, rocchio, None, None, original_query_weight)
    if feedback is not None:
        _tune_feedback(directory, topics, judgments, measure, variant.value, k1_grid, b_grid, k3, feedback,
                       fb_docs_grid, fb_terms_grid, folds, k, seed, backend_name(backend), format)
        return
    result = _tune_with_progress(directory, topics, judgments, measure, variant.value, k1_grid, b_grid, folds, k, seed,
                                 backend_name(backend), k3, quiet)
    if format is TableFormat.json:
        typer.echo(json.dumps(tune_json(result), indent=1))
    else:
        _print_tables(result)
    for warning in result.on_edge:
        note(warning)
    if plot is not None:
        from ..evaluation.plots import plot_heatmap

        plot_heatmap(result.k1_grid, result.b_grid, result.grid, plot, result.measure, dpi=dpi)
        say(f"heat map -> {plot}", stderr=True)


def _one_value(text: Optional[str], name: str, default: float) -> float:
    from ..evaluation.tuning import parse_grid

    if not text:
        return default
    values = parse_grid(text, name)
    if len(values) != 1:
        raise ParameterError(f"feedback is tuned at one k1 and one b: give {name} a single value")
    return values[0]


def _tune_feedback(index_dir: Path, topics: dict, judgments: object, measure: str, variant: str, k1_text: Optional[str],
                   b_text: Optional[str], k3: Optional[float], feedback, docs_text: str, terms_text: str,  # type: ignore[no-untyped-def]
                   folds: int, k: int, seed: int, backend: Optional[str], format: TableFormat) -> None:
    from rich.table import Table

    from ..engine import Index
    from ..engine.scoring import DEFAULT_B, DEFAULT_K1
    from ..evaluation.tuning import tune_feedback

    def ints(text: str, name: str) -> list[int]:
        try:
            return [int(v) for v in text.split(",")]
        except ValueError:
            raise ParameterError(f"{name} {text!r}: a comma list of whole numbers (5,10,20)") from None

    idx = Index.load(index_dir, backend=backend)
    params = idx.params(variant, _one_value(k1_text, "--k1-grid", DEFAULT_K1), _one_value(b_text, "--b-grid", DEFAULT_B),
                        None, k3)
    result = tune_feedback(idx, topics, judgments, measure, feedback.method, ints(docs_text, "--fb-docs-grid"),
                           ints(terms_text, "--fb-terms-grid"), feedback.original_query_weight, params, folds, k, seed)
    if format is TableFormat.json:
        typer.echo(json.dumps(result.to_dict(), indent=1))
        return
    table = Table(title=f"tune {result.method} for {measure} ({result.num_queries} queries, "
                        f"{len(result.docs_grid)} x {len(result.terms_grid)} grid)")
    for name in ("", "fb_docs", "fb_terms", measure):
        table.add_column(name, justify="left" if not name else "right")
    table.add_row("best on all queries", str(result.best["fb_docs"]), str(result.best["fb_terms"]), f"{result.best_mean:.4f}")
    table.add_row("without feedback", "-", "-", f"{result.none_mean:.4f}")
    table.add_row(f"{len(result.folds)}-fold CV, held-out mean", "per fold", "per fold", f"{result.test_mean:.4f}")
    for f in result.folds:
        table.add_row(f"fold {f.index}", f"{int(f.k1)}", f"{int(f.b)}", f"{f.train_mean:.4f} / {f.test_mean:.4f}")
    console().print(table)
