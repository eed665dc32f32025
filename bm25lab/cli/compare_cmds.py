"""`bm25lab compare`: runs against a baseline (or every pair), with significance tests and corrections."""
from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from ..engine.errors import ParameterError
from ..evaluation.compare import DEFAULT_MEASURES as COMPARE_MEASURES
from ..evaluation.conventions import DEFAULT_TREC_EVAL
from ..evaluation.corrections import CORRECTIONS
from ..evaluation.significance import FAMILY_TESTS
from .common import _choices, console, handles_errors, say, settle_memory_for_large_files
from .evaluate_cmds import DPI_OPT, MEASURE_OPT, PLOT_HELP, QRELS_ARG, RUNS_ARG, TREC_EVAL_OPT, TrecEvalRules
from .inputs import QRELS_FORMAT_OPT, RUN_FORMAT_OPT, QrelsFormat, RunFormat

if TYPE_CHECKING:
    from .tables import Grid


class CompareFormat(str, Enum):
    table = "table"
    json = "json"
    markdown = "markdown"
    latex = "latex"


TestName = _choices("TestName", FAMILY_TESTS)
CorrectionName = _choices("CorrectionName", CORRECTIONS)
PairsMode = _choices("PairsMode", ["baseline", "all"])


def comparison_grid(result: Any, rules: int) -> "Grid":
    """The comparison as a table that fits: run and measure repeat when its columns need several tables."""
    from ..evaluation import report
    from ..evaluation.compare import _cells, _headers, notes
    from .tables import Column, Grid

    headers = _headers(result)
    columns = [Column(h, "left" if h in ("run", "measure", "sig") else "right") for h in headers]
    rows = [_cells(result, row, "▲", "▼") for row in result.rows]
    caption = "\n".join([*notes(result), report.RULES_NAMES.get(rules, "").join(("Computed by ", "."))])
    return Grid(f"Runs against {result.baseline}", columns, rows, caption, keys=2)


@handles_errors
def compare_cmd(
    qrels: Annotated[str, QRELS_ARG],
    baseline: Annotated[Path, typer.Argument(help="Baseline run (TREC, MS MARCO or ranx JSON).")],
    runs: Annotated[list[Path], RUNS_ARG],
    measure: Annotated[Optional[list[str]], MEASURE_OPT] = None,
    test: Annotated[TestName, typer.Option("--test", help="Significance test: t (paired t), wilcoxon (signed rank), randomization, bootstrap, tukey (Tukey's HSD over all the runs).")] = TestName("t"),
    correction: Annotated[CorrectionName, typer.Option("--correction", help="Multiple-comparison correction over the runs (or pairs) of each measure: none, bonferroni, holm, bh (Benjamini-Hochberg). Tukey's HSD needs none.")] = CorrectionName("holm"),
    pairs: Annotated[PairsMode, typer.Option("--pairs", help="baseline: every run against the first; all: every pair, as a table of means with superscripts (ranx's report).")] = PairsMode("baseline"),
    trials: Annotated[int, typer.Option("--trials", help="Trials of the randomization/bootstrap tests and of the CI.", min=100)] = 10_000,
    seed: Annotated[int, typer.Option("--seed", help="Random seed.")] = 0,
    alpha: Annotated[float, typer.Option("--alpha", help="Significance level, between 0 and 1.")] = 0.05,
    complete: Annotated[bool, typer.Option("--complete", "-c", help="Count every judged query (trec_eval -c).")] = False,
    trec_eval: Annotated[TrecEvalRules, TREC_EVAL_OPT] = TrecEvalRules(str(DEFAULT_TREC_EVAL)),
    format: Annotated[CompareFormat, typer.Option("--format", help="table, json, markdown or latex.")] = CompareFormat.table,
    qrels_format: Annotated[QrelsFormat, QRELS_FORMAT_OPT] = QrelsFormat("auto"),
    run_format: Annotated[RunFormat, RUN_FORMAT_OPT] = RunFormat("auto"),
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Per-query differences of every measure and the PR curves. " + PLOT_HELP)] = None,
    dpi: Annotated[int, DPI_OPT] = 150,
) -> None:
    """Compare runs with a baseline: deltas, p-values (corrected), bootstrap CIs, wins/ties/losses; or every pair.

    A run's name is its file's stem. Only queries evaluated in every run are compared.

    Example: bm25lab compare qrels.trec bm25.run tuned.run rm3.run --test randomization
    """
    from ..evaluation import evaluate
    from ..evaluation.compare import compare, notes, to_json, to_latex, to_markdown
    from .tables import print_grid
    from ..evaluation.evaluator import precision_recall_curve
    from ..evaluation.measures import expand_measures
    from .inputs import qrels as read_judgments, run as read_a_run

    if plot is not None:
        from ..evaluation.plots import check_plot_path

        check_plot_path(plot)
    measures = list(expand_measures(measure or COMPARE_MEASURES).names)
    rules = int(trec_eval.value)
    settle_memory_for_large_files([qrels, baseline, *runs])
    judgments = read_judgments(qrels, qrels_format, trec_eval=rules)
    names = [baseline.stem] + [p.stem for p in runs]
    if len(set(names)) != len(names):
        raise ParameterError(f"two runs have the same name (file stem): {', '.join(names)}")
    loaded = {p.stem: read_a_run(p, run_format) for p in [baseline, *runs]}
    per_query = {name: evaluate(judgments, run, measures, complete=complete, trec_eval=rules).per_query
                 for name, run in loaded.items()}
    if pairs.value == "all":
        if plot is not None:
            raise ParameterError("--plot draws the differences against the baseline: not with --pairs all")
        _render_all_pairs(per_query, measures, test.value, correction.value, trials, seed, alpha, format)
        return
    result = compare(per_query[baseline.stem], {p.stem: per_query[p.stem] for p in runs}, measures,
                     test=test.value, trials=trials, seed=seed, alpha=alpha, baseline_name=baseline.stem,
                     correction=correction.value)
    if format is CompareFormat.table:
        print_grid(comparison_grid(result, rules))
    else:
        render = {CompareFormat.json: to_json, CompareFormat.markdown: to_markdown, CompareFormat.latex: to_latex}
        typer.echo(render[format](result))
        if format is CompareFormat.json:  # markdown and latex carry the notes in their text
            for line in notes(result):  # e.g. how many queries were compared
                say(line, stderr=True)
    if plot is not None:
        from ..evaluation.plots import plot_comparison

        curves = {name: precision_recall_curve(judgments, run, complete=complete, trec_eval=rules)
                  for name, run in loaded.items()}
        plot_comparison(result, curves, plot, dpi=dpi)
        say(f"plot -> {plot}", stderr=True)


def _render_all_pairs(per_query: dict, measures: list[str], test: str, correction: str, trials: int, seed: int,
                      alpha: float, format: CompareFormat) -> None:
    from ..evaluation.pairwise import TEXT_RENDERERS, all_pairs, notes, to_rich_table

    report = all_pairs(per_query, measures, test=test, correction=correction, trials=trials, seed=seed, alpha=alpha)
    if format is CompareFormat.table:
        console().print(to_rich_table(report))
        return
    typer.echo(TEXT_RENDERERS[format.value](report), nl=False)
    if format is CompareFormat.json:
        for line in notes(report):
            console(stderr=True).print(line)
