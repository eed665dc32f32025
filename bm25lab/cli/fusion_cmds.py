"""`bm25lab fuse`: several runs of the same queries into one (evaluation/fusion.py), with weights given or
tuned by cross-validation against a measure."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..engine.errors import ParameterError
from ..evaluation.fusion import METHODS, NORMALIZATIONS
from .common import TableFormat, _choices, console, handles_errors
from .inputs import QRELS_FORMAT_OPT, RUN_FORMAT_OPT, QrelsFormat, RunFormat, RunWriter

FusionMethod = _choices("FusionMethod", METHODS)
FusionNorm = _choices("FusionNorm", NORMALIZATIONS)


def _weights(text: Optional[str]) -> Optional[list[float]]:
    if text is None:
        return None
    try:
        return [float(part) for part in text.split(",")]
    except ValueError:
        raise ParameterError(f"--weights {text!r}: give one number per run, comma-separated (0.7,0.3)") from None


@handles_errors
def fuse_cmd(
    runs: Annotated[list[Path], typer.Argument(help="Two or more runs (TREC, MS MARCO or ranx JSON).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Write the fused run here (TREC by default).")],
    method: Annotated[FusionMethod, typer.Option("--method", help="Fusion method.")] = FusionMethod("rrf"),
    norm: Annotated[FusionNorm, typer.Option("--norm", help="Score normalization per run and query, before fusing.")] = FusionNorm("minmax"),
    weights: Annotated[Optional[str], typer.Option("--weights", help="wsum/wmnz: one weight per run, e.g. 0.7,0.3 (default 1 each).")] = None,
    rrf_k: Annotated[float, typer.Option("--rrf-k", help="rrf's constant k.", min=0.0)] = 60.0,
    depth: Annotated[Optional[int], typer.Option("--depth", "-k", help="Keep each query's best N documents.", min=1)] = None,
    tune: Annotated[Optional[str], typer.Option("--tune", help="Choose the weights (wsum/wmnz) for this measure by cross-validation (needs --qrels).")] = None,
    qrels: Annotated[Optional[str], typer.Option("--qrels", help="Qrels for --tune (a file or a bundled collection's name).")] = None,
    step: Annotated[float, typer.Option("--weight-step", help="--tune: weights are multiples of this step summing to 1.")] = 0.1,
    folds: Annotated[int, typer.Option("--folds", help="--tune: cross-validation folds.", min=2)] = 5,
    seed: Annotated[int, typer.Option("--seed", help="--tune: seed of the folds.")] = 0,
    tag: Annotated[str, typer.Option("--tag", help="Run tag of the fused run.")] = "fused",
    run_format: Annotated[RunFormat, RUN_FORMAT_OPT] = RunFormat("auto"),
    qrels_format: Annotated[QrelsFormat, QRELS_FORMAT_OPT] = QrelsFormat("auto"),
    out_format: Annotated[RunWriter, typer.Option("--out-format", help="Format of the fused run.")] = RunWriter("trec"),
    format: Annotated[TableFormat, typer.Option("--format", help="--tune's report: table or json.")] = TableFormat.table,
) -> None:
    """Fuse runs: rrf, combsum, combmnz, combmax, combmin, combmed, combanz, combgmnz, wsum, wmnz, isr, log_isr,
    logn_isr, after a per-query normalization (minmax, zscore, sum, max, rank, none); equal to ranx's fuse.

    Example: bm25lab fuse bm25.run rm3.run --method wsum --tune nDCG@10 --qrels cranfield --out fused.run
    """
    from ..evaluation.fusion import fuse, tune_weights
    from ..evaluation.readers import write_run
    from .inputs import qrels as read_judgments, run as read_a_run

    if (tune is None) != (qrels is None):
        raise ParameterError("--tune MEASURE and --qrels QRELS go together")
    if tune is not None and weights is not None:
        raise ParameterError("give --weights or --tune, not both")
    loaded = [read_a_run(path, run_format) for path in runs]
    chosen = _weights(weights)
    if tune is not None:
        result = tune_weights(loaded, read_judgments(qrels, qrels_format), tune, method.value, norm.value,
                              step=step, folds=folds, seed=seed)
        _report(result, [p.stem for p in runs], format)
        chosen = list(result.best)
    fused = fuse(loaded, method.value, norm.value, chosen, k=rrf_k, depth=depth, name=tag)
    write_run(fused, out, tag=tag, format=out_format.value)
    console(stderr=True).print(f"{len(runs)} runs fused ({method.value}, {norm.value}): {fused.num_queries} queries, "
                               f"{len(fused):,} results -> {out}")


def _report(result, names: list[str], format: TableFormat) -> None:  # type: ignore[no-untyped-def]
    if format is TableFormat.json:
        typer.echo(json.dumps({**result.to_dict(), "runs": names}, indent=1))
        return
    from rich.table import Table

    weights = ", ".join(f"{n}={w:g}" for n, w in zip(names, result.best))
    table = Table(title=f"{result.method} weights for {result.measure} ({result.num_queries} queries, "
                        f"{len(result.points)} points)")
    for column in ("", "weights", result.measure):
        table.add_column(column)
    table.add_row("best on all queries", weights, f"{result.best_mean:.4f}")
    table.add_row("equal weights", ", ".join(f"{n}=1" for n in names), f"{result.equal_mean:.4f}")
    table.add_row(f"{len(result.folds)}-fold CV, train mean", "per fold", f"{result.train_mean:.4f}")
    table.add_row(f"{len(result.folds)}-fold CV, held-out mean", "per fold", f"{result.test_mean:.4f}")
    for fold, w, train, test, n in result.folds:
        table.add_row(f"fold {fold} ({n} held out)", ", ".join(f"{x:g}" for x in w), f"{train:.4f} / {test:.4f}")
    console().print(table)
