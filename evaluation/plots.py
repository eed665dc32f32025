"""Plots for ``compare``, ``evaluate`` and ``tune``, as PNG, PDF or SVG; matplotlib is an optional extra.

matplotlib is imported only when a plot is drawn, through its object-oriented API: a
``matplotlib.figure.Figure`` attached to an Agg canvas. pyplot is never imported, so no global
backend, figure registry or rcParams is touched and nothing happens at import time. Without
matplotlib every function raises :class:`BM25LabError` with the install hint.

Every public function writes one file in the format its extension names (:data:`PLOT_FORMATS`:
``.png``, ``.pdf``, ``.svg``; any other is a :class:`ParameterError`), a PNG at ``dpi`` dots per
inch, and returns its path. Runs are told apart by colour, marker and line style together (ten
distinct combinations before any repeats), so up to ten runs stay legible in colour and in grey:

- :func:`plot_differences`: per-query differences run - baseline as bars sorted descending, one
  panel per run.
- :func:`plot_pr_curves`: interpolated precision at recall levels ({run: {recall: precision}},
  normally the 11 levels 0.0, 0.1, ..., 1.0 of :data:`RECALL_LEVELS`), one line per run.
- :func:`plot_query_pr_curves`: the same per query, one small panel each, after the mean's.
- :func:`plot_comparison`: per-query differences for every measure (a column each, a row per run)
  beside the precision-recall curves (``compare --plot``).
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

from ..engine.errors import BM25LabError, ParameterError
from .compare import Comparison

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "DEFAULT_DPI",
    "MISSING_MATPLOTLIB",
    "PLOT_FORMATS",
    "RECALL_LEVELS",
    "check_plot_path",
    "plot_query_pr_curves",
    "plot_differences",
    "plot_pr_curves",
    "plot_comparison",
    "plot_heatmap",
    "plot_roc_curves",
]

MISSING_MATPLOTLIB = "plotting needs matplotlib: pip install 'bm25lab[plot]'"
RECALL_LEVELS: tuple[float, ...] = tuple(i / 10 for i in range(11))
DEFAULT_DPI = 150
PLOT_FORMATS = {".png": "png", ".pdf": "pdf", ".svg": "svg"}
"""File extension -> the format written."""
_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:gray",
            "tab:olive", "tab:cyan")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
_LINES = ("-", "--", "-.", ":")
_MAX_QUERY_PANELS = 400
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


def check_plot_path(path: str | Path) -> str:
    """The format a plot file's extension names; :class:`ParameterError` for another extension."""
    suffix = Path(path).suffix.lower()
    if suffix not in PLOT_FORMATS:
        raise ParameterError(f"{path}: a plot is written as {', '.join(PLOT_FORMATS)}, by the file's extension; "
                             f"got {suffix or 'none'!r}")
    return PLOT_FORMATS[suffix]


def _save(figure: Figure, path: str | Path, dpi: int = DEFAULT_DPI) -> Path:
    """Write ``figure`` to ``path`` in its extension's format; an unwritable path is a one-line
    :class:`BM25LabError`."""
    target = Path(path)
    fmt = check_plot_path(target)
    if isinstance(dpi, bool) or not isinstance(dpi, int) or not 30 <= dpi <= 1200:
        raise ParameterError(f"dpi must be an integer between 30 and 1200, not {dpi!r}")
    try:
        figure.savefig(target, format=fmt, dpi=dpi, metadata={"Date": None} if fmt == "svg" else None)
    except OSError as exc:
        raise BM25LabError(f"{target}: cannot write the plot: {exc.strerror or exc}") from None
    return target


def _style(i: int) -> dict[str, object]:
    """Colour, marker and line style of the i-th run: no two of the first ten alike in any of them
    but the line style, which cycles over four."""
    return {"color": _COLOURS[i % len(_COLOURS)], "marker": _MARKERS[i % len(_MARKERS)],
            "linestyle": _LINES[i % len(_LINES)]}


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


def _draw_pr_curves(ax: Axes, curves: Curves, *, title: str = "Precision-recall (interpolated)",
                    legend: bool = True, small: bool = False) -> None:
    """One line per run of interpolated precision against recall."""
    if not curves:
        raise BM25LabError("nothing to plot: no precision-recall curves")
    highest = 0.0
    for i, (run, curve) in enumerate(curves.items()):
        recall, precision = _curve_points(curve, run)
        highest = max(highest, *precision)
        ax.plot(recall, precision, markersize=2.5 if small else 4, linewidth=0.9 if small else 1.4, label=str(run),
                **_style(i))
    ax.set_xlim(0.0, 1.0)
    # the whole unit square for small panels; else up to the data, so close curves spread over the height
    ax.set_ylim(0.0, 1.02 if small else min(1.02, math.ceil((highest + 0.05) * 10) / 10 + 0.02))
    ax.set_xticks(RECALL_LEVELS[::2] if small else RECALL_LEVELS)
    ax.set_title(title, fontsize=8 if small else None)
    ax.grid(True, linewidth=0.4, alpha=0.5)
    if small:
        ax.tick_params(labelsize=6)
        return
    ax.set_xlabel("recall")
    ax.set_ylabel("interpolated precision")
    if legend:
        ax.legend(loc="upper right", fontsize=8, ncols=2 if len(curves) > 5 else 1)


# --------------------------------------------------------------------------- public plots


def plot_differences(
    source: Comparison | Deltas, path: str | Path, measure: str | None = None, baseline: str | None = None,
    *, dpi: int = DEFAULT_DPI
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
    return _save(figure, path, dpi)


def plot_pr_curves(curves: Curves, path: str | Path, *, dpi: int = DEFAULT_DPI) -> Path:
    """Interpolated precision-recall curves ``{run: {recall level: precision}}``; returns ``path``."""
    figure = _new_figure(6.5 if len(curves) > 5 else 6.0, 5.0)
    _draw_pr_curves(figure.add_subplot(), curves)
    return _save(figure, path, dpi)


def plot_query_pr_curves(mean: Curves, per_query: Mapping[str, Mapping[str, Mapping[float, float]]],
                         queries: Sequence[str] | None, path: str | Path, *, dpi: int = DEFAULT_DPI) -> Path:
    """The runs' mean precision-recall curves, then one small panel per query (``queries``, or every
    query any run has when None) with every run's curve; ``per_query`` is ``{run: {qid: curve}}``."""
    from .ranking import natural_key

    known = sorted({q for curves in per_query.values() for q in curves}, key=natural_key)
    chosen = known if queries is None else list(dict.fromkeys(queries))
    missing = [q for q in chosen if q not in known]
    if missing:
        raise ParameterError(f"no curve for query {missing[0]!r}: not among the averaged queries")
    if not chosen:
        raise BM25LabError("nothing to plot: no query")
    if len(chosen) > _MAX_QUERY_PANELS:
        raise ParameterError(f"{len(chosen)} queries: at most {_MAX_QUERY_PANELS} panels fit a figure; name the "
                             f"queries to draw")
    panels = len(chosen) + 1
    columns = min(panels, 6 if panels > 12 else 4)
    rows = -(-panels // columns)
    figure = _new_figure(2.3 * columns + 0.5, 2.1 * rows + 0.8)
    grid = figure.add_gridspec(rows, columns)
    first = figure.add_subplot(grid[0, 0])
    _draw_pr_curves(first, mean, title="mean", legend=False, small=True)
    for i, qid in enumerate(chosen, 1):
        ax = figure.add_subplot(grid[i // columns, i % columns], sharex=first, sharey=first)
        curves = {run: by_query[qid] for run, by_query in per_query.items() if qid in by_query}
        _draw_pr_curves(ax, curves, title=f"query {qid}", legend=False, small=True)
    handles, labels = first.get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside upper center", ncols=min(len(labels), 5), fontsize=8)
    figure.supxlabel("recall", fontsize=9)
    figure.supylabel("interpolated precision", fontsize=9)
    return _save(figure, path, dpi)


def plot_roc_curves(curves: Curves, path: str | Path, *, aucs: Mapping[str, float], dpi: int = DEFAULT_DPI) -> Path:
    """ROC curves ``{run: {false-positive rate: mean true-positive rate}}`` (``evaluate --plot-roc``); returns
    ``path``. The legend gives each run's ``AUC`` measure, ``aucs[run]`` (the mean of the queries' AUC, which
    is the exact area under the mean curve; trapezoids over the drawn 101 points would differ from it in the
    third decimal)."""
    if not curves:
        raise BM25LabError("nothing to plot: no ROC curves")
    if set(aucs) != set(curves):
        raise BM25LabError("give the AUC of every run plotted, and only theirs")
    figure = _new_figure(6.0, 5.0)
    ax = figure.add_subplot()
    for i, (run, curve) in enumerate(curves.items()):
        if any(math.isnan(v) for v in curve.values()):
            raise BM25LabError(f"nothing to plot for {run}: no query has both relevant and judged non-relevant documents")
        fpr, tpr = _curve_points(curve, run)
        ax.plot(fpr, tpr, label=f"{run} (AUC {aucs[run]:.4f})", markersize=3.5, linewidth=1.4, markevery=10, **_style(i))
    ax.plot([0.0, 1.0], [0.0, 1.0], linestyle="--", color="gray", linewidth=0.8)
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(0.0, 1.02)
    ax.set_xlabel("false-positive rate")
    ax.set_ylabel("true-positive rate (recall)")
    ax.set_title("ROC over the judged documents (mean of the queries)")
    ax.grid(True, linewidth=0.4, alpha=0.5)
    ax.legend(loc="lower right", fontsize=8)
    return _save(figure, path, dpi)


def plot_comparison(comparison: Comparison, curves: Curves, path: str | Path, measure: str | None = None,
                    *, dpi: int = DEFAULT_DPI) -> Path:
    """``compare --plot``: sorted per-query differences, a column per measure (``measure`` alone when
    given, else every measure of the comparison) and a row per run, beside the runs' and the
    baseline's precision-recall curves; returns ``path``."""
    measures = [measure] if measure is not None else list(comparison.measures)
    columns = [_deltas_of(comparison, m) for m in measures]
    for deltas, _ in columns:
        _check_deltas(deltas)
    runs = list(columns[0][0])
    rows = len(runs)
    figure = _new_figure(5.5 * len(measures) + 5.5, max(4.5, 2.4 * rows + 0.6))
    grid = figure.add_gridspec(rows, len(measures) + 1, width_ratios=(3,) * len(measures) + (2.6,))
    for j, (deltas, label) in enumerate(columns):
        first = None
        for i, run in enumerate(runs):
            ax = figure.add_subplot(grid[i, j], sharey=first)
            first = first or ax
            _draw_differences(ax, run, deltas[run], label, comparison.baseline)
    _draw_pr_curves(figure.add_subplot(grid[:, -1]), curves)
    return _save(figure, path, dpi)


def plot_heatmap(
    k1_values: Sequence[float], b_values: Sequence[float], matrix: ArrayLike, path: str | Path, measure_name: str,
    *, dpi: int = DEFAULT_DPI
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
    return _save(figure, path, dpi)


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
