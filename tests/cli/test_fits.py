"""Every command's table fits the terminal: at 80 and at 250 columns (``COLUMNS``, which rich reads) no line
is wider than the terminal, no column is dropped, and every number and name the command's JSON holds is
printed whole: never cut (``0.29…``), never folded over two lines, two long run names never cut to the
same string."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from rich.cells import cell_len
from typer.testing import CliRunner

from bm25lab.cli import app

WIDTHS = (80, 250)
LONG = ("nf-q-video-title-long", "nf-q-video-desc-long")  # cut at 10 columns, both would read nf-q-vide…


def invoke(width: int, *args: object) -> str:
    result = CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("fits")
    invoke(250, "index", "cranfield", "--out", folder / "idx")
    invoke(250, "run", folder / "idx", "cranfield", "--out", folder / "bm25.run", "-k", "100")
    invoke(250, "run", folder / "idx", "cranfield", "--out", folder / "okapi.run", "-k", "100", "--variant", "okapi")
    for name in LONG:
        shutil.copy(folder / "okapi.run", folder / f"{name}.run")
    return folder


def whole(token: str, text: str) -> bool:
    """``token`` appears in ``text`` on one line, not as a piece of a longer word."""
    return re.search(rf"(?<![\w.@-]){re.escape(token)}(?![\w@]|\.\d)", text) is not None


def check(text: str, width: int, tokens: list[str]) -> None:
    assert text.strip()
    assert max(cell_len(line) for line in text.splitlines()) <= width
    assert "…" not in text
    missing = [token for token in tokens if not whole(token, text)]
    assert not missing, missing


def evaluation_tokens(document: dict | list) -> list[str]:
    documents = document if isinstance(document, list) else [document]
    return [token for d in documents for token in
            [d["run"], str(d["queries"]), *(f"{v:.4f}" for v in d["mean"].values() if v is not None), *d["mean"]]]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("measures", [[], ["-m", "all_trec"], ["-m", "P@5", "-m", "P@10", "-m", "AP", "-m", "nDCG@10",
                                                                "-m", "nDCG@20", "-m", "R@100", "-m", "bpref",
                                                                "-m", "RR", "-m", "Rprec"]], ids=["default", "all_trec",
                                                                                                  "nine"])
def test_evaluate(runs: Path, width: int, measures: list[str]) -> None:
    files = [runs / "bm25.run", *(runs / f"{name}.run" for name in LONG)]
    shown = invoke(width, "evaluate", "cranfield", *files, *measures)
    document = json.loads(invoke(width, "evaluate", "cranfield", *files, *measures, "--format", "json"))
    check(shown, width, [t for t in evaluation_tokens(document) if t not in ("num_ret", "num_rel", "num_rel_ret")])


@pytest.mark.parametrize("width", WIDTHS)
def test_evaluate_per_query(runs: Path, width: int) -> None:
    shown = invoke(width, "evaluate", "cranfield", runs / "bm25.run", "-q", "-m", "P@10", "-m", "AP")
    per_query = json.loads(invoke(width, "evaluate", "cranfield", runs / "bm25.run", "-m", "P@10", "-m", "AP",
                                  "--format", "json"))["per_query"]
    check(shown, width, [*per_query, *(f"{v:.4f}" for values in per_query.values() for v in values.values())])


@pytest.mark.parametrize("width", WIDTHS)
def test_compare(runs: Path, width: int) -> None:
    args = ["compare", "cranfield", runs / "bm25.run", runs / "okapi.run", *(runs / f"{n}.run" for n in LONG),
            "-m", "nDCG@10", "-m", "AP", "--trials", "1000"]
    shown = invoke(width, *args)
    cells = [cell.strip() for line in invoke(width, *args, "--format", "markdown").splitlines()[2:]
             if line.startswith("|") for cell in line.strip("|").split("|")]
    check(shown, width, [cell for cell in cells if cell])


@pytest.mark.parametrize("width", WIDTHS)
def test_tune(runs: Path, width: int) -> None:
    args = ["tune", runs / "idx", "cranfield", "cranfield", "--k1-grid", "0.6,1.2", "--b-grid", "0.3,0.75",
            "--folds", "3"]
    shown = invoke(width, *args)
    tuned = json.loads(invoke(width, *args, "--format", "json"))
    tokens = [f"{tuned['best']['k1']:g}", f"{tuned['best']['b']:g}", f"{tuned['test_mean']:.4f}",
              f"{tuned['train_mean']:.4f}", f"{tuned['default_mean']:.4f}", tuned["measure"]]
    tokens += [f"{fold[key]:.4f}" for fold in tuned["folds"] for key in ("train_mean", "test_mean")]
    check(shown, width, tokens)
    # the JSON holds the best point's value and the whole grid
    assert tuned["grid"]["k1"] == [0.6, 1.2] and tuned["grid"]["b"] == [0.3, 0.75]
    assert tuned["best_mean"] == max(max(row) for row in tuned["grid"]["mean"])


def test_compare_markdown_says_its_notes_once(runs: Path) -> None:
    result = CliRunner().invoke(app, ["compare", "cranfield", str(runs / "bm25.run"), str(runs / "okapi.run"),
                                      "--format", "markdown", "--trials", "1000"])
    assert result.exit_code == 0
    assert result.output.count("queries evaluated in the baseline and every run were compared") == 1


@pytest.mark.parametrize("width", WIDTHS)
def test_corpora(width: int) -> None:
    rows = json.loads(invoke(width, "corpora", "--format", "json"))
    tokens = [t for r in rows for t in [r["name"], r["language"], f"{r['documents']:,}", f"{r['judgments']:,}",
                                        *r["licence"].split(), *r["grades"].split()]]
    check(invoke(width, "corpora"), width, tokens)


@pytest.mark.parametrize("width", WIDTHS)
def test_info(runs: Path, width: int) -> None:
    facts = json.loads(invoke(width, "info", runs / "idx", "--format", "json"))
    tokens = [f"{facts[key]:,}" for key in ("documents", "terms", "postings")]
    tokens += [str(v) for v in facts["tokenizer"].values() if isinstance(v, str)]
    check(invoke(width, "info", runs / "idx"), width, tokens)


@pytest.mark.parametrize("width", WIDTHS)
def test_measures(width: int) -> None:
    rows = json.loads(invoke(width, "measures", "--format", "json"))["measures"]
    tokens = [word.strip(",") for r in rows for word in [*r["forms"].split(), *r["aliases"], r["kind"]]]
    check(invoke(width, "measures"), width, tokens)


@pytest.mark.parametrize("width", WIDTHS)
def test_experiment(width: int) -> None:
    document = json.loads(invoke(width, "experiment", "cisi", "--format", "json"))
    check(invoke(width, "experiment", "cisi"), width, evaluation_tokens(document))


@pytest.mark.parametrize("width", WIDTHS)
def test_run_summary_is_one_line(runs: Path, width: int) -> None:
    out = runs / ("a-rather-long-folder-name-for-the-run-" * 3) / "bm25.run"
    out.parent.mkdir(exist_ok=True)
    shown = invoke(width, "run", runs / "idx", "cranfield", "--out", out, "-k", "10")
    assert shown.splitlines()[-1].endswith(f"-> {out}") and "225 queries" in shown.splitlines()[-1]
