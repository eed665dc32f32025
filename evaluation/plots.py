"""PNG plots for ``compare``, ``evaluate`` and ``tune``; matplotlib is an optional extra.

matplotlib is imported only when a plot is drawn, through its object-oriented API: a
``matplotlib.figure.Figure`` attached to an Agg canvas. pyplot is never imported, so no global
backend, figure registry or rcParams is touched and nothing happens at import time. Without
matplotlib every function raises :class:`BM25LabError` with the install hint.

Every public function writes one PNG (whatever the file suffix) and returns its path:

- :func:`plot_differences`: per-query differences run - baseline as bars sorted descending, one
  panel per run.
- :func:`plot_pr_curves`: interpolated precision at recall levels ({run: {recall: precision}},
  normally the 11 levels 0.0, 0.1, ..., 1.0 of :data:`RECALL_LEVELS`), one line per run.
- :func:`plot_comparison`: both of the above in one figure (``compare --plot``).
- :func:`plot_heatmap`: a k1 x b grid of a measure (``tune --plot``), best cell outlined.
- :func:`plot_roc_curves`: mean ROC curves ({run: {false-positive rate: true-positive rate}}, from
  :func:`bm25lab.evaluation.evaluator.roc_curve`), one line per run, the chance diagonal dashed.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike

from ..engine.errors import BM25LabError
from .compare import Comparison

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "MISSING_MATPLOTLIB",
    "RECALL_LEVELS",
    "plot_differences",
    "plot_pr_curves",
    "plot_comparison",
    "plot_heatmap",
    "plot_roc_curves",
]

MISSING_MATPLOTLIB = "plotting needs matplotlib: pip install 'bm25lab[plot]'"
RECALL_LEVELS: tuple[float, ...] = tuple(i / 10 for i in range(11))
_DPI = 120
_MAX_ANNOTATED_CELLS = 400
_MAX_LABELLED_QUERIES = 40

Deltas = Mapping[str, Mapping[str, float]]  # {run: {qid: run - baseline}}
Curves = Mapping[str, Mapping[float, float]]  # {run: {recall level: interpolated precision}}


# --------------------------------------------------------------------------- figure plumbing


def _new_figure(width: float, height: float) -> Figure:
    """A pyplot-free figure on an Agg canvas, or :class:`BM25LabError` when matplotlib is missing."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise BM25LabError(MISSING_MATPLOTLIB) from None
    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _save(figure: Figure, path: str | Path) -> Path:
    """Write ``figure`` as PNG to ``path``; an unwritable path is a one-line :class:`BM25LabError`."""
    target = Path(path)
    try:
        figure.savefig(target, format="png", dpi=_DPI)
    except OSError as exc:
        raise BM25LabError(f"{target}: cannot write the plot: {exc.strerror or exc}") from None
    return target


# --------------------------------------------------------------------------- input shaping


def _deltas_of(source: Comparison | Deltas, measure: str | None) -> tuple[dict[str, dict[str, float]], str]:
    """Per-query differences and the measure's label, from a Comparison or a {run: {qid: delta}} dict."""
    if isinstance(source, Comparison):
        chosen = measure if measure is not None else source.measures[0]
        return source.deltas(chosen), chosen
    deltas = {str(run): {str(q): float(v) for q, v in values.items()} for run, values in source.items()}
    return deltas, measure or "measure"


def _check_deltas(deltas: Mapping[str, Mapping[str, float]]) -> None:
    if not deltas or not all(deltas.values()):
        raise BM25LabError("nothing to plot: no per-query differences")


def _curve_points(curve: Mapping[float, float], run: str) -> tuple[list[float], list[float]]:
    """(recall, precision) points sorted by recall; both must lie in [0, 1]."""
    points = sorted((float(r), float(p)) for r, p in curve.items())
    if not points:
        raise BM25LabError(f"nothing to plot: the precision-recall curve of {run} is empty")
    for recall, precision in points:
        if not (0.0 <= recall <= 1.0 and 0.0 <= precision <= 1.0):
            raise BM25LabError(f"{run}: recall and precision must lie in [0, 1], got ({recall}, {precision})")
    return [r for r, _ in points], [p for _, p in points]


# --------------------------------------------------------------------------- drawing on axes


def _draw_differences(ax: Axes, run: str, deltas: Mapping[str, float], measure: str, baseline: str) -> None:
    """Bars of ``deltas`` sorted descending (ties by query id): green above 0, red below, grey at 0."""
    ordered = sorted(deltas.items(), key=lambda item: (-item[1], item[0]))
    values = [v for _, v in ordered]
    colours = ["tab:green" if v > 0 else "tab:red" if v < 0 else "tab:gray" for v in values]
    positions = np.arange(len(values))
    ax.bar(positions, values, width=1.0 if len(values) > 60 else 0.8, color=colours)
    ax.axhline(0.0, color="black", linewidth=0.8)
    wins = sum(v > 0 for v in values)
    losses = sum(v < 0 for v in values)
    ax.set_title(f"{run} - {baseline}: {wins} better, {len(values) - wins - losses} tied, {losses} worse")
    ax.set_ylabel(f"delta {measure}")
    if len(values) <= _MAX_LABELLED_QUERIES:
        ax.set_xticks(positions, [q for q, _ in ordered], rotation=90, fontsize=7)
    else:
        ax.set_xticks([])
        ax.set_xlabel(f"{len(values)} queries, sorted by difference")
    ax.set_xlim(-0.6, len(values) - 0.4)


def _draw_pr_curves(ax: Axes, curves: Curves) -> None:
    """One line per run of interpolated precision against recall."""
    if not curves:
        raise BM25LabError("nothing to plot: no precision-recall curves")
    for run, curve in curves.items():
        recall, precision = _curve_points(curve, run)
        ax.plot(recall, precision, marker="o", markersize=3, label=str(run))
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(0.0, 1.02)
    ax.set_xticks(RECALL_LEVELS)
    ax.set_xlabel("recall")
    ax.set_ylabel("interpolated precision")
    ax.set_title("Precision-recall (interpolated)")
    ax.grid(True, linewidth=0.4, alpha=0.5)
    ax.legend(loc="upper right", fontsize=8)


# --------------------------------------------------------------------------- public plots


def plot_differences(
    source: Comparison | Deltas, path: str | Path, measure: str | None = None, baseline: str | None = None
) -> Path:
    """Per-query differences as sorted bars, one panel per run; returns ``path``.

    ``source`` is a :class:`Comparison` (``measure`` picks one of its measures, default the first)
    or ``{run: {qid: run - baseline}}``.
    """
    deltas, label = _deltas_of(source, measure)
    _check_deltas(deltas)
    base = baseline or (source.baseline if isinstance(source, Comparison) else "baseline")
    figure = _new_figure(8.0, 2.8 * len(deltas) + 0.4)
    axes = figure.subplots(len(deltas), 1, squeeze=False, sharey=True)[:, 0]
    for ax, (run, values) in zip(axes, deltas.items()):
        _draw_differences(ax, run, values, label, base)
    return _save(figure, path)


def plot_pr_curves(curves: Curves, path: str | Path) -> Path:
    """Interpolated precision-recall curves ``{run: {recall level: precision}}``; returns ``path``."""
    figure = _new_figure(6.0, 5.0)
    _draw_pr_curves(figure.add_subplot(), curves)
    return _save(figure, path)


def plot_roc_curves(curves: Curves, path: str | Path) -> Path:
    """ROC curves ``{run: {false-positive rate: mean true-positive rate}}`` (``evaluate --plot-roc``); returns
    ``path``. The legend gives each curve's area (trapezoids over its points)."""
    if not curves:
        raise BM25LabError("nothing to plot: no ROC curves")
    figure = _new_figure(6.0, 5.0)
    ax = figure.add_subplot()
    for run, curve in curves.items():
        if any(math.isnan(v) for v in curve.values()):
            raise BM25LabError(f"nothing to plot for {run}: no query has both relevant and judged non-relevant documents")
        fpr, tpr = _curve_points(curve, run)
        area = float(np.sum(np.diff(fpr) * (np.array(tpr[1:]) + np.array(tpr[:-1])) / 2))
        ax.plot(fpr, tpr, label=f"{run} (area {area:.4f})")
    ax.plot([0.0, 1.0], [0.0, 1.0], linestyle="--", color="gray", linewidth=0.8)
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(0.0, 1.02)
    ax.set_xlabel("false-positive rate")
    ax.set_ylabel("true-positive rate (recall)")
    ax.set_title("ROC over the judged documents (mean of the queries)")
    ax.grid(True, linewidth=0.4, alpha=0.5)
    ax.legend(loc="lower right", fontsize=8)
    return _save(figure, path)


def plot_comparison(comparison: Comparison, curves: Curves, path: str | Path, measure: str | None = None) -> Path:
    """``compare --plot``: sorted per-query differences per run (left) and the runs' and the
    baseline's precision-recall curves (right) in one PNG; returns ``path``."""
    deltas, label = _deltas_of(comparison, measure)
    _check_deltas(deltas)
    rows = len(deltas)
    figure = _new_figure(13.0, max(4.5, 2.8 * rows + 0.4))
    grid = figure.add_gridspec(rows, 2, width_ratios=(3, 2))
    first = None
    for i, (run, values) in enumerate(deltas.items()):
        ax = figure.add_subplot(grid[i, 0], sharey=first)
        first = first or ax
        _draw_differences(ax, run, values, label, comparison.baseline)
    _draw_pr_curves(figure.add_subplot(grid[:, 1]), curves)
    return _save(figure, path)


def plot_heatmap(
    k1_values: Sequence[float], b_values: Sequence[float], matrix: ArrayLike, path: str | Path, measure_name: str
) -> Path:
    """Heat map of ``measure_name`` over k1 (rows of ``matrix``) x b (columns); returns ``path``.

    ``matrix[i][j]`` is the value at ``k1_values[i]``, ``b_values[j]``; NaN cells stay blank.
    Cells are annotated with their value when the grid has at most 400 cells; the best (largest,
    first in row-major order on ties) cell is outlined.
    """
    values = np.asarray(matrix, dtype=np.float64)
    expected = (len(k1_values), len(b_values))
    if values.shape != expected:
        raise BM25LabError(f"heat map matrix has shape {values.shape}; expected (len(k1), len(b)) = {expected}")
    if values.size == 0 or np.all(np.isnan(values)):
        raise BM25LabError("nothing to plot: the k1 x b grid has no values")
    figure = _new_figure(1.2 + 0.7 * len(b_values) + 1.5, 1.2 + 0.5 * len(k1_values))
    ax = figure.add_subplot()
    image = ax.imshow(np.ma.masked_invalid(values), origin="lower", aspect="auto", cmap="viridis")
    figure.colorbar(image, ax=ax, label=measure_name)
    ax.set_xticks(range(len(b_values)), [f"{b:g}" for b in b_values])
    ax.set_yticks(range(len(k1_values)), [f"{k:g}" for k in k1_values])
    ax.set_xlabel("b")
    ax.set_ylabel("k1")
    best_i, best_j = np.unravel_index(int(np.nanargmax(values)), values.shape)
    best = values[best_i, best_j]
    ax.set_title(f"{measure_name}: best {best:.4f} at k1={k1_values[best_i]:g}, b={b_values[best_j]:g}")
    if values.size <= _MAX_ANNOTATED_CELLS:
        _annotate_cells(ax, values)
    from matplotlib.patches import Rectangle

    ax.add_patch(Rectangle((best_j - 0.5, best_i - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=2))
    return _save(figure, path)


def _annotate_cells(ax: Axes, values: np.ndarray) -> None:
    """Write each cell's value in it, dark on light cells and light on dark ones."""
    finite = values[np.isfinite(values)]
    low, high = float(finite.min()), float(finite.max())
    middle = (low + high) / 2.0
    for (i, j), value in np.ndenumerate(values):
        if math.isnan(value):
            continue
        ax.text(j, i, f"{value:.3f}", ha="center", va="center", fontsize=7,
                color="black" if value > middle else "white")  # fmt: skip
