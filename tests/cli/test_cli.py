"""The `bm25lab` command line through typer's CliRunner, plus the installed entry point once."""
from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bm25lab.cli import app
from bm25lab.engine import storage

runner = CliRunner()

DOCS = [
    {"id": "d1", "title": "Boundary layers", "text": "The boundary layer on a flat plate in supersonic flow."},
    {"id": "d2", "title": "Heat transfer", "text": "Heat transfer in laminar boundary layers with suction."},
    {"id": "d3", "title": "清华大学", "text": "清华大学位于北京，是一所著名的大学。"},
    {"id": "d4", "title": "Flutter", "text": "Panel flutter of thin plates at high speed."},
]


def invoke(*args: str):
    return runner.invoke(app, list(args))


def one_error_line(result) -> str:
    """The single stderr line of a failed command (no traceback)."""
    err = result.stderr.strip().splitlines()
    assert len(err) == 1, result.stderr
    assert "Traceback" not in result.output + result.stderr
    assert err[0].startswith("bm25lab: error: ")
    return err[0]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cli")
    (root / "docs.jsonl").write_text("\n".join(json.dumps(d, ensure_ascii=False) for d in DOCS) + "\n", encoding="utf-8")
    (root / "queries.tsv").write_text("q1\tboundary layer\nq2\t清华大学\nq3\tflutter panels\n", encoding="utf-8")
    (root / "qrels.trec").write_text("q1 0 d1 2\nq1 0 d2 1\nq2 0 d3 1\nq3 0 d4 1\nq3 0 d1 0\n", encoding="utf-8")
    result = invoke("index", str(root / "docs.jsonl"), "--out", str(root / "idx"))
    assert result.exit_code == 0, result.output
    return root


def test_help_lists_every_command() -> None:
    result = invoke("--help")
    assert result.exit_code == 0
    for command in ("index", "search", "run", "evaluate", "compare", "link-prediction", "tune", "corpora", "experiment",
                    "info"):
        assert command in result.output


@pytest.mark.parametrize("command", ["index", "search", "run", "evaluate", "compare", "link-prediction", "tune", "corpora",
                                     "experiment", "info"])
def test_each_command_has_help_with_an_example(command: str) -> None:
    result = invoke(command, "--help")
    assert result.exit_code == 0, result.output
    assert "Example:" in result.output
    assert "Exit codes" in result.output


def test_index_summary_and_overwrite(workdir: Path) -> None:
    out = workdir / "idx2"
    result = invoke("index", str(workdir / "docs.jsonl"), "--out", str(out), "--language", "auto", "--no-stem")
    assert result.exit_code == 0, result.output
    assert "indexed 4 documents" in result.stdout and "postings" in result.stdout and "on disk" in result.stdout
    again = invoke("index", str(workdir / "docs.jsonl"), "--out", str(out))
    assert again.exit_code == 1
    assert "--overwrite" in one_error_line(again)
    assert invoke("index", str(workdir / "docs.jsonl"), "--out", str(out), "--overwrite").exit_code == 0


def test_index_gz_and_bundled_corpus_name(tmp_path: Path, workdir: Path) -> None:
    gz = tmp_path / "docs.jsonl.gz"
    gz.write_bytes(gzip.compress((workdir / "docs.jsonl").read_bytes()))
    assert invoke("index", str(gz), "--out", str(tmp_path / "a")).exit_code == 0
    result = invoke("index", "cisi", "--out", str(tmp_path / "b"), "--language", "en")
    assert result.exit_code == 0, result.output
    assert "indexed 1,460 documents" in result.stdout


def test_search_table_json_trec(workdir: Path) -> None:
    table = invoke("search", str(workdir / "idx"), "boundary layer", "-k", "2")
    assert table.exit_code == 0, table.output
    assert "d1" in table.stdout and "Boundary layers" in table.stdout
    rows = json.loads(invoke("search", str(workdir / "idx"), "清华大学", "--format", "json").stdout)
    assert rows[0]["doc_id"] == "d3" and rows[0]["rank"] == 1 and set(rows[0]) == {"rank", "doc_id", "score", "title"}
    trec = invoke("search", str(workdir / "idx"), "flutter", "--format", "trec").stdout.split()
    assert trec[:4] == ["1", "Q0", "d4", "1"]  # --qid defaults to 1: a TREC line never holds the literal 'query'
    trec = invoke("search", str(workdir / "idx"), "flutter", "--format", "trec", "--qid", "q7", "--tag", "t").stdout
    assert trec.split()[0] == "q7" and trec.split()[5] == "t"


def test_search_variants_and_parameters(workdir: Path) -> None:
    a = json.loads(invoke("search", str(workdir / "idx"), "boundary", "--format", "json").stdout)
    b = json.loads(invoke("search", str(workdir / "idx"), "boundary", "--format", "json", "--variant", "okapi",
                          "--k1", "1.5", "--b", "0.75").stdout)
    assert {r["doc_id"] for r in a} == {r["doc_id"] for r in b}
    assert {r["doc_id"]: r["score"] for r in a} != {r["doc_id"]: r["score"] for r in b}


def test_run_writes_trec_run(workdir: Path) -> None:
    out = workdir / "bm25.run"
    result = invoke("run", str(workdir / "idx"), str(workdir / "queries.tsv"), "--out", str(out), "-k", "3", "--tag", "mine")
    assert result.exit_code == 0, result.output
    lines = [line.split() for line in out.read_text().splitlines()]
    assert {line[0] for line in lines} == {"q1", "q2", "q3"}
    assert all(len(line) == 6 and line[1] == "Q0" and line[5] == "mine" for line in lines)
    assert [line[2] for line in lines if line[0] == "q2"][0] == "d3"


def test_info(workdir: Path) -> None:
    result = invoke("info", str(workdir / "idx"), "--format", "json")
    facts = json.loads(result.stdout)
    assert facts["documents"] == 4 and facts["format_version"] == storage.FORMAT_VERSION and facts["tokenizer"]["language"] == "auto"
    assert invoke("info", str(workdir / "idx")).exit_code == 0


def test_corpora_lists_bundled_collections() -> None:
    rows = json.loads(invoke("corpora", "--format", "json").stdout)
    assert {r["name"] for r in rows} == {"cranfield", "cisi", "cmrc2018", "lecard-10q"}
    assert all(r["licence"] and r["language"] in ("en", "zh") for r in rows)
    table = invoke("corpora")
    assert table.exit_code == 0 and "cranfield" in table.stdout


# ---------------------------------------------------------------------- error paths
def test_missing_source_file(tmp_path: Path) -> None:
    result = invoke("index", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "i"))
    assert result.exit_code == 1
    assert "nope.jsonl" in one_error_line(result)
    assert not (tmp_path / "i").exists()


def test_malformed_jsonl_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "x"}\n{"id": "b", "text": \n', encoding="utf-8")
    result = invoke("index", str(bad), "--out", str(tmp_path / "i"))
    assert result.exit_code == 1
    assert "bad.jsonl:2" in one_error_line(result)
    assert not (tmp_path / "i" / "index.json").exists()


def test_duplicate_document_id(tmp_path: Path) -> None:
    dup = tmp_path / "dup.tsv"
    dup.write_text("a\tx\nb\ty\na\tz\n", encoding="utf-8")
    result = invoke("index", str(dup), "--out", str(tmp_path / "i"))
    assert result.exit_code == 1
    assert "duplicate document id 'a'" in one_error_line(result)


def test_search_errors(tmp_path: Path, workdir: Path) -> None:
    not_index = invoke("search", str(tmp_path), "x")
    assert not_index.exit_code == 1 and "not a bm25lab index" in one_error_line(not_index)
    assert invoke("search", str(workdir / "idx"), "x", "-k", "0").exit_code == 2
    assert invoke("search", str(workdir / "idx"), "x", "--variant", "bm26").exit_code == 2
    assert invoke("search", str(workdir / "idx"), "x", "--b", "2").exit_code == 2


def test_newer_format_version(tmp_path: Path, workdir: Path) -> None:
    copy = tmp_path / "idx"
    shutil.copytree(workdir / "idx", copy)
    manifest = json.loads((copy / "index.json").read_text())
    manifest["format_version"] = 7
    (copy / "index.json").write_text(json.dumps(manifest))
    result = invoke("info", str(copy))
    assert result.exit_code == 1 and "upgrade bm25lab" in one_error_line(result)


def test_unknown_corpus() -> None:
    result = invoke("experiment", "no-such-corpus")
    assert result.exit_code == 1
    assert "no-such-corpus" in one_error_line(result)


def test_installed_entry_point(tmp_path: Path, workdir: Path) -> None:
    exe = str(Path(sys.executable).parent / "bm25lab")  # this installation's, never another one on PATH
    env = dict(os.environ, COLUMNS="200")
    result = subprocess.run([exe, "search", str(workdir / "idx"), "flutter", "--format", "json"],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)[0]["doc_id"] == "d4"
    bad = subprocess.run([exe, "info", str(tmp_path)], capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode == 1
    assert bad.stderr.strip().startswith("bm25lab: error:") and "Traceback" not in bad.stderr


def test_experiment_cranfield_equals_pytrec_eval_on_its_own_run(tmp_path: Path, cranfield) -> None:
    import pytrec_eval

    run_file = tmp_path / "cranfield.run"
    result = invoke("experiment", "cranfield", "--run-out", str(run_file), "--format", "json",
                    "-m", "nDCG@10", "-m", "AP", "-m", "P@10", "-m", "R@100", "-m", "RR", "-m", "bpref")
    assert result.exit_code == 0, result.output
    (printed,) = json.loads(result.stdout) if result.stdout.lstrip().startswith("[") else [json.loads(result.stdout)]
    run: dict[str, dict[str, float]] = {}
    for line in run_file.read_text().splitlines():
        qid, _, doc, _, score, _ = line.split()
        run.setdefault(qid, {})[doc] = float(score)
    qrels: dict[str, dict[str, int]] = {}
    for line in cranfield.qrels_path.read_text().splitlines():
        qid, _, doc, grade = line.split()
        qrels.setdefault(qid, {})[doc] = int(grade)
    names = {"nDCG@10": "ndcg_cut_10", "AP": "map", "P@10": "P_10", "R@100": "recall_100", "RR": "recip_rank",
             "bpref": "bpref"}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map", "P.10", "recall.100", "recip_rank", "bpref"})
    per_query = evaluator.evaluate(run)
    assert printed["queries"] == len(per_query) == 225
    for ours, theirs in names.items():
        expected = sum(values[theirs] for values in per_query.values()) / len(per_query)
        assert abs(printed["mean"][ours] - expected) < 1e-9, ours


@pytest.fixture(scope="module")
def two_runs(workdir: Path) -> tuple[Path, Path, Path]:
    base, other = workdir / "base.run", workdir / "other.run"
    assert invoke("run", str(workdir / "idx"), str(workdir / "queries.tsv"), "--out", str(base)).exit_code == 0
    assert invoke("run", str(workdir / "idx"), str(workdir / "queries.tsv"), "--out", str(other),
                  "--variant", "okapi", "--k1", "1.5", "--b", "0.75").exit_code == 0
    return workdir / "qrels.trec", base, other


def test_evaluate_every_format(two_runs, tmp_path: Path) -> None:
    qrels, base, other = two_runs
    as_json = json.loads(invoke("evaluate", str(qrels), str(base), "-m", "P@1", "-m", "nDCG@10", "--format", "json").stdout)
    assert as_json["run"] == "base" and as_json["queries"] == 3 and set(as_json["mean"]) == {"P@1", "nDCG@10"}
    assert set(as_json["per_query"]) == {"q1", "q2", "q3"}
    several = json.loads(invoke("evaluate", str(qrels), str(base), str(other), "--format", "json").stdout)
    assert [r["run"] for r in several] == ["base", "other"]
    trec = invoke("evaluate", str(qrels), str(base), "-m", "P@1", "--format", "trec", "--per-query").stdout
    assert any(line.split() == ["P@1", "q2", "1.0000"] for line in trec.splitlines())
    csv = invoke("evaluate", str(qrels), str(base), "-m", "AP", "--format", "csv").stdout
    assert csv.splitlines()[:2][0] == "run,query,measure,value"
    assert csv.splitlines()[1].startswith("base,all,AP,")
    table = invoke("evaluate", str(qrels), str(base), "--per-query")
    assert table.exit_code == 0 and "nDCG@10" in table.stdout
    plot = tmp_path / "pr.png"
    assert invoke("evaluate", str(qrels), str(base), "--plot", str(plot)).exit_code == 0
    assert plot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_compare_formats_and_plot(two_runs, tmp_path: Path) -> None:
    qrels, base, other = two_runs
    rows = json.loads(invoke("compare", str(qrels), str(base), str(other), "-m", "AP", "--format", "json").stdout)
    assert len(rows) == 1
    assert set(rows[0]) == {"run", "measure", "mean", "baseline_mean", "delta", "p_value", "p_adjusted", "ci_low",
                            "ci_high", "wins", "ties", "losses"}
    assert rows[0]["run"] == "other" and rows[0]["wins"] + rows[0]["ties"] + rows[0]["losses"] == 3
    markdown = invoke("compare", str(qrels), str(base), str(other), "--format", "markdown").stdout
    assert markdown.lstrip().startswith("|")
    latex = invoke("compare", str(qrels), str(base), str(other), "--format", "latex", "--test", "randomization",
                   "--trials", "500").stdout
    assert "\\begin{tabular}" in latex and "\\toprule" in latex
    plot = tmp_path / "cmp.png"
    result = invoke("compare", str(qrels), str(base), str(other), "--plot", str(plot))
    assert result.exit_code == 0, result.output
    assert plot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_an_internal_error_is_one_line_with_a_hint_and_debug_shows_it(workdir: Path, monkeypatch) -> None:
    from bm25lab.engine import Index

    def broken(*args, **kwargs):
        raise KeyError("boom")

    monkeypatch.setattr(Index, "search", broken)
    monkeypatch.delenv("BM25LAB_DEBUG", raising=False)
    result = invoke("search", str(workdir / "idx"), "flutter")
    assert result.exit_code == 3
    line = one_error_line(result)
    assert "internal error: KeyError: 'boom'" in line and "--debug" in line
    debugged = runner.invoke(app, ["--debug", "search", str(workdir / "idx"), "flutter"])
    assert isinstance(debugged.exception, KeyError)  # raised, with its traceback, not reported in one line
    monkeypatch.delenv("BM25LAB_DEBUG", raising=False)  # --debug set it for this process


def test_version_option() -> None:
    from bm25lab import __version__

    result = invoke("--version")
    assert (result.exit_code, result.stdout.strip()) == (0, f"bm25lab {__version__}")


def test_run_replaces_the_output_whole_and_names_it_on_error(workdir: Path, tmp_path: Path) -> None:
    out = tmp_path / "bm25.run"
    out.write_text("an older run\n")
    assert invoke("run", str(workdir / "idx"), str(workdir / "queries.tsv"), "--out", str(out)).exit_code == 0
    assert out.read_text().startswith("q1 Q0 ") and sorted(p.name for p in tmp_path.iterdir()) == ["bm25.run"]
    failed = invoke("run", str(workdir / "idx"), str(workdir / "queries.tsv"), "--out", str(tmp_path))
    assert failed.exit_code == 1 and one_error_line(failed) == f"bm25lab: error: {tmp_path}: is a directory; give a file name for the run"
    missing = tmp_path / "no" / "such" / "x.run"
    failed = invoke("run", str(workdir / "idx"), str(workdir / "queries.tsv"), "--out", str(missing))
    assert failed.exit_code == 1 and str(missing) in one_error_line(failed) and ".tmp" not in one_error_line(failed)
