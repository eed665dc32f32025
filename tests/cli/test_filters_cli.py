"""``--where`` and ``--where-not`` on ``search``, ``run`` and ``experiment``: the library's filter, and a
bad condition in one line with exit code 2."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bm25lab.cli import app
from bm25lab.engine import Index

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("filters-cli")
    with (root / "docs.jsonl").open("w", encoding="utf-8") as out:
        for i in range(60):
            out.write(json.dumps({"id": f"d{i}", "title": f"paper {i}", "text": f"boundary layer flow {'wing ' * (i % 5)}",
                                  "year": 1960 + i, "lang": ["en", "fr", "de"][i % 3]}) + "\n")
    (root / "queries.tsv").write_text("q1\tboundary wing\nq2\tflow\n", encoding="utf-8")
    assert invoke("index", str(root / "docs.jsonl"), "--out", str(root / "idx")).exit_code == 0
    return root


def test_search_with_where_prints_the_filtered_hits(workdir: Path) -> None:
    args = ["search", str(workdir / "idx"), "boundary wing", "-k", "4", "--format", "json"]
    result = invoke(*args, "--where", "year>=1990", "--where", "lang in en,fr", "--where-not", "year=2000")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    expected = Index.load(workdir / "idx").search("boundary wing", k=4, where=["year>=1990", "lang in en,fr"],
                                                  where_not="year=2000")
    assert [(r["doc_id"], r["score"]) for r in rows] == list(zip(expected.doc_ids, expected.scores))
    assert len(rows) == 4 and all(int(r["doc_id"][1:]) + 1960 >= 1990 and int(r["doc_id"][1:]) % 3 != 2 for r in rows)


def test_run_with_where_writes_only_documents_that_pass(workdir: Path) -> None:
    out = workdir / "filtered.run"
    result = invoke("run", str(workdir / "idx"), str(workdir / "queries.tsv"), "--out", str(out), "-k", "100",
                    "--where", "lang=de")
    assert result.exit_code == 0, result.output
    docs = [line.split()[2] for line in out.read_text().splitlines()]
    assert docs and all(int(d[1:]) % 3 == 2 for d in docs)
    assert len(docs) == 2 * 20  # every German document matches both queries


@pytest.mark.parametrize("bad", ["year", "year>>3", "lang!=en", "lang in a,,b", "year>="])
@pytest.mark.parametrize("command", ["search", "run", "experiment"])
def test_a_bad_condition_is_one_line_and_exit_2(workdir: Path, command: str, bad: str) -> None:
    args = {"search": ["search", str(workdir / "idx"), "flow"],
            "run": ["run", str(workdir / "idx"), str(workdir / "queries.tsv"), "--out", str(workdir / "x.run")],
            "experiment": ["experiment", "cranfield"]}[command]
    result = invoke(*args, "--where", bad)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bm25lab: error: bad filter"), result.stderr
    assert not (workdir / "x.run").exists()


def test_experiment_with_where(tmp_path: Path) -> None:
    run = tmp_path / "filtered.run"
    result = invoke("experiment", "cranfield", "--where", 'author=""', "-k", "50", "--run-out", str(run),
                    "--format", "json")  # 53 documents without an author's name
    assert result.exit_code == 0, result.output
    from bm25lab import corpora

    no_author = {d.id for d in corpora.get("cranfield").documents() if d.metadata["author"] == ""}
    retrieved = {line.split()[2] for line in run.read_text().splitlines()}
    assert retrieved and retrieved <= no_author
