"""Plots: each function writes a valid PNG, PDF or SVG by the file's extension, matplotlib stays optional
and pyplot is never used."""
from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bm25lab.engine.errors import BM25LabError, ParameterError
from bm25lab.evaluation.compare import compare
from bm25lab.evaluation.plots import (
    MISSING_MATPLOTLIB,
    RECALL_LEVELS,
    _style,
    plot_comparison,
    plot_differences,
    plot_heatmap,
    plot_pr_curves,
    plot_query_pr_curves,
    plot_roc_curves,
)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _png_size(path: Path) -> tuple[int, int]:
    """Width and height from the IHDR chunk, after checking the signature."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE and len(data) > 1000
    assert data[12:16] == b"IHDR" and data[-8:-4] == b"IEND"
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def comparison():
    rng = np.random.default_rng(3)
    baseline = {f"q{i:03d}": {"AP": float(v)} for i, v in enumerate(rng.random(60))}
    runs = {
        name: {q: {"AP": min(1.0, max(0.0, v["AP"] + shift + 0.1 * rng.normal()))} for q, v in baseline.items()}
        for name, shift in (("k1=1.2", 0.05), ("k1=0.5", -0.02))
    }
    for values in [baseline, *runs.values()]:
        for v in values.values():
            v["P@10"] = round(v["AP"] * 10) / 10
    return compare(baseline, runs, ["AP", "P@10"], trials=500, baseline_name="bm25")


CURVES = {
    "bm25": dict(zip(RECALL_LEVELS, [1.0, 0.8, 0.7, 0.6, 0.5, 0.45, 0.4, 0.3, 0.2, 0.1, 0.05])),
    "k1=1.2": dict(zip(RECALL_LEVELS, [1.0, 0.85, 0.75, 0.62, 0.55, 0.5, 0.42, 0.35, 0.25, 0.12, 0.06])),
}


def test_plot_differences_from_a_comparison_and_from_a_dict(tmp_path: Path, comparison) -> None:
    out = plot_differences(comparison, tmp_path / "diff.png")
    assert out == tmp_path / "diff.png"
    width, height = _png_size(out)
    assert width > 500 and height > 500  # two stacked panels, one per run
    small = plot_differences({"run": {"q1": 0.2, "q2": -0.1, "q3": 0.0}}, tmp_path / "small.png", measure="nDCG@10")
    assert _png_size(small)[0] > 0


def test_plot_pr_curves(tmp_path: Path) -> None:
    out = plot_pr_curves(CURVES, str(tmp_path / "pr.png"))
    assert isinstance(out, Path) and _png_size(out)[0] > 0
    with pytest.raises(BM25LabError, match="must lie in"):
        plot_pr_curves({"bad": {0.0: 1.5}}, tmp_path / "bad.png")
    with pytest.raises(BM25LabError, match="empty"):
        plot_pr_curves({"empty": {}}, tmp_path / "empty.png")


def test_plot_comparison_draws_every_measure(tmp_path: Path, comparison) -> None:
    both = _png_size(plot_comparison(comparison, CURVES, tmp_path / "compare.png", dpi=100))
    one = _png_size(plot_comparison(comparison, CURVES, tmp_path / "one.png", measure="AP", dpi=100))
    assert both[0] > one[0] > 1000 and both[1] == one[1] > 450  # a column of panels per measure


def test_plot_heatmap(tmp_path: Path) -> None:
    k1 = [0.6, 0.9, 1.2, 1.5]
    b = [0.3, 0.4, 0.6, 0.75, 1.0]
    matrix = np.add.outer(np.array(k1) * 0.1, np.array(b) * 0.05)
    matrix[0, 0] = np.nan  # a failed cell stays blank
    out = plot_heatmap(k1, b, matrix, tmp_path / "grid.png", "nDCG@10")
    assert _png_size(out)[0] > 0
    with pytest.raises(BM25LabError, match=r"expected \(len\(k1\), len\(b\)\) = \(4, 5\)"):
        plot_heatmap(k1, b, matrix.T, tmp_path / "wrong.png", "nDCG@10")


def test_the_extension_chooses_the_format_and_dpi_the_resolution(tmp_path: Path) -> None:
    assert plot_pr_curves(CURVES, tmp_path / "curves.pdf").read_bytes()[:5] == b"%PDF-"
    assert b"<svg" in plot_pr_curves(CURVES, tmp_path / "curves.svg").read_bytes()[:400]
    low = _png_size(plot_pr_curves(CURVES, tmp_path / "low.png", dpi=100))
    high = _png_size(plot_pr_curves(CURVES, tmp_path / "high.PNG", dpi=300))
    assert high[0] == 3 * low[0]
    with pytest.raises(ParameterError, match=r"\.png, \.pdf, \.svg"):
        plot_pr_curves(CURVES, tmp_path / "curves.jpg")
    assert not (tmp_path / "curves.jpg").exists()


def test_ten_runs_are_told_apart(tmp_path: Path) -> None:
    styles = [_style(i) for i in range(10)]
    assert len({s["color"] for s in styles}) == 10 and len({s["marker"] for s in styles}) == 10
    curves = {f"run{i}": {r: max(0.0, 1.0 - r * (0.5 + i / 20)) for r in RECALL_LEVELS} for i in range(10)}
    assert _png_size(plot_pr_curves(curves, tmp_path / "ten.png"))[0] > 0


def test_per_query_curves(tmp_path: Path) -> None:
    per_query = {run: {"1": curve, "2": {r: p / 2 for r, p in curve.items()}} for run, curve in CURVES.items()}
    width, height = _png_size(plot_query_pr_curves(CURVES, per_query, None, tmp_path / "q.png", dpi=100))
    assert width > 600 and height > 200
    with pytest.raises(ParameterError, match="no curve for query '9'"):
        plot_query_pr_curves(CURVES, per_query, ["9"], tmp_path / "q.png")


def test_unwritable_path_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(BM25LabError) as error:
        plot_pr_curves(CURVES, tmp_path / "no" / "such" / "dir" / "pr.png")
    assert str(tmp_path / "no") in str(error.value) and "\n" not in str(error.value)


def test_missing_matplotlib_gives_the_install_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes every "import matplotlib..." fail
    with pytest.raises(BM25LabError, match=r"pip install 'bm25lab\[plot\]'") as error:
        plot_pr_curves(CURVES, tmp_path / "pr.png")
    assert str(error.value) == MISSING_MATPLOTLIB
    assert not (tmp_path / "pr.png").exists()


def test_no_matplotlib_on_import_and_no_pyplot_when_plotting(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "import bm25lab.evaluation.plots as p\n"
        "assert 'matplotlib' not in sys.modules\n"
        f"p.plot_pr_curves({{'r': {{0.0: 1.0, 1.0: 0.5}}}}, {str(tmp_path / 'x.png')!r})\n"
        "assert 'matplotlib' in sys.modules and 'matplotlib.pyplot' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, cwd=tmp_path)
    assert (tmp_path / "x.png").read_bytes()[:8] == PNG_SIGNATURE


def test_roc_curves_plot(tmp_path):
    from bm25lab.evaluation.evaluator import roc_curve

    curves = {"bm25": roc_curve({"q": {"a": 1, "b": 0, "c": 1}}, {"q": {"a": 2.0, "b": 1.0, "c": 0.5}})}
    assert _png_size(plot_roc_curves(curves, tmp_path / "roc.png", aucs={"bm25": 0.5}))[0] > 300
    undefined = {"bm25": roc_curve({"q": {"a": 1}}, {"q": {"a": 2.0}})}
    with pytest.raises(BM25LabError, match="no query has both relevant and judged non-relevant"):
        plot_roc_curves(undefined, tmp_path / "none.png", aucs={"bm25": 0.5})


def test_roc_legend_gives_the_auc_measure(tmp_path, monkeypatch):
    # three queries of 3-7 judged documents: the mean curve at 101 points has a trapezoid area that differs
    # from the mean AUC in the third decimal; the legend must give the measure's value
    from bm25lab.evaluation import evaluate, plots
    from bm25lab.evaluation.evaluator import roc_curve

    qrels = {"q1": {"a": 1, "b": 0, "c": 1}, "q2": {"a": 0, "b": 1, "c": 0, "d": 1, "e": 0, "f": 0, "g": 1},
             "q3": {"x": 1, "y": 0, "z": 0, "w": 0}}
    run = {"q1": {"a": 2.0, "b": 1.0, "c": 0.5}, "q2": {"a": 7, "b": 6, "c": 5, "d": 4, "e": 3, "f": 2, "g": 1},
           "q3": {"y": 3.0, "x": 2.0, "z": 1.0}}
    auc = evaluate(qrels, run, ["AUC"]).mean["AUC"]
    curve = roc_curve(qrels, run)
    fpr, tpr = np.array(list(curve)), np.array(list(curve.values()))
    trapezoids = float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2))
    assert f"{trapezoids:.4f}" != f"{auc:.4f}"
    seen = {}
    monkeypatch.setattr(plots, "_save", lambda figure, path, dpi: seen.setdefault("figure", figure) and path)
    plots.plot_roc_curves({"bm25": curve}, tmp_path / "roc.png", aucs={"bm25": auc})
    labels = [t.get_text() for t in seen["figure"].axes[0].get_legend().get_texts()]
    assert labels == [f"bm25 (AUC {auc:.4f})"]
    import json

    from typer.testing import CliRunner

    from bm25lab.cli import app

    (tmp_path / "q.json").write_text(json.dumps(qrels))
    (tmp_path / "r.json").write_text(json.dumps(run))
    seen.clear()
    result = CliRunner().invoke(app, ["evaluate", str(tmp_path / "q.json"), str(tmp_path / "r.json"), "--plot-roc",
                                      str(tmp_path / "r.png")])
    assert result.exit_code == 0, result.output
    assert [t.get_text() for t in seen["figure"].axes[0].get_legend().get_texts()] == [f"r (AUC {auc:.4f})"]
