"""``--query-id-field`` and ``--query-text-fields`` on every command that reads a queries file (run, tune,
experiment), on LeCaRD's raw queries (``tests/data/lecard``) against a small index of LeCaRD's own
documents: the raw file gives the same run as the converted one; an undecidable file is one error line."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bm25lab import corpora
from bm25lab.cli import app

runner = CliRunner()
LECARD_RAW = Path(__file__).parents[1] / "data" / "lecard" / "query.json"
RAW_IDS = ["5156", "4891", "5187"]


def invoke(*args) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, (args, result.output, result.stderr)
    return result.stdout


def error_line(code: int, *args) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == code, (args, result.output, result.stderr)
    assert "Traceback" not in result.output + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bm25lab: error: "), result.stderr
    return lines[0].removeprefix("bm25lab: error: ")


@pytest.fixture(scope="module")
def lecard(tmp_path_factory) -> Path:
    """A folder holding 30 of LeCaRD's documents (the best-judged of the raw sample's queries first), their
    index, the bundled qrels, and the raw sample's queries converted to ``{"id", "text"}``."""
    root = tmp_path_factory.mktemp("lecard")
    collection = corpora.get("lecard-10q")
    qrels = [line.split() for line in collection.qrels_path.read_text().splitlines()]
    best = sorted(qrels, key=lambda q: -int(q[3]))
    judged = [doc for raw_id in RAW_IDS for doc in [d for qid, _, d, _ in best if qid == raw_id][:6]]
    docs = {d.id: d for d in collection.documents()}
    chosen = list(dict.fromkeys(judged + list(docs)))[:30]
    with gzip.open(root / "docs.jsonl.gz", "wt", encoding="utf-8") as out:
        for doc_id in chosen:
            out.write(json.dumps({"id": doc_id, "title": docs[doc_id].title, "text": docs[doc_id].text},
                                 ensure_ascii=False) + "\n")
    invoke("index", root / "docs.jsonl.gz", "--out", root / "idx", "--language", "zh", "--workers", "1")
    (root / "qrels.trec").write_text("".join(" ".join(q) + "\n" for q in qrels if q[0] in RAW_IDS))
    bundled = collection.queries()
    (root / "converted.jsonl").write_text("".join(json.dumps({"id": q, "text": bundled[q]}, ensure_ascii=False) + "\n"
                                                  for q in RAW_IDS), encoding="utf-8")
    return root


def test_run_reads_lecard_raw_queries_as_they_come(lecard, tmp_path):
    invoke("run", lecard / "idx", LECARD_RAW, "--out", tmp_path / "raw.run", "-k", "10")
    invoke("run", lecard / "idx", lecard / "converted.jsonl", "--out", tmp_path / "converted.run", "-k", "10")
    invoke("run", lecard / "idx", LECARD_RAW, "--out", tmp_path / "named.run", "-k", "10",
           "--query-id-field", "ridx", "--query-text-fields", "q")
    raw = (tmp_path / "raw.run").read_text()
    assert raw == (tmp_path / "converted.run").read_text() == (tmp_path / "named.run").read_text()
    assert [line.split()[0] for line in raw.splitlines()[::10]] == RAW_IDS and len(raw.splitlines()) == 30
    # each query was searched with its own text: three different rankings, judged documents found
    rankings = {q: [line.split()[2] for line in raw.splitlines() if line.startswith(q + " ")] for q in RAW_IDS}
    assert len({tuple(r) for r in rankings.values()}) == 3
    judged = {(q, d) for q, _, d, g in (line.split() for line in (lecard / "qrels.trec").read_text().splitlines())
              if int(g) > 0}
    assert all(any((q, d) in judged for d in ranked[:3]) for q, ranked in rankings.items()), rankings


def test_run_with_other_field_names_and_the_error_without_them(lecard, tmp_path):
    odd = tmp_path / "odd.jsonl"
    raw = [json.loads(line) for line in LECARD_RAW.read_text(encoding="utf-8").splitlines()]
    odd.write_text("".join(json.dumps({"case": r["ridx"], "facts": r["q"], "charges": r["crime"]}, ensure_ascii=False)
                           + "\n" for r in raw), encoding="utf-8")
    assert error_line(1, "run", lecard / "idx", odd, "--out", tmp_path / "odd.run") == (
        f"{odd}:1: missing query id: none of '_id', 'id', 'qid', 'query_id', 'topic_id', 'ridx' (fields: 'case', "
        f"'facts', 'charges'); name it with id_field (--query-id-field)")
    assert not (tmp_path / "odd.run").exists()
    assert error_line(1, "run", lecard / "idx", odd, "--out", tmp_path / "odd.run", "--query-id-field", "case",
                      "--query-text-fields", "facts,charges") == (
        f"{odd}:1: field 'charges' must be a string or null, found an array")
    invoke("run", lecard / "idx", odd, "--out", tmp_path / "odd.run", "-k", "10", "--query-id-field", "case",
           "--query-text-fields", "facts")
    invoke("run", lecard / "idx", LECARD_RAW, "--out", tmp_path / "raw.run", "-k", "10")
    assert (tmp_path / "odd.run").read_text() == (tmp_path / "raw.run").read_text()
    # a bundled collection's queries have their fields
    assert error_line(2, "run", lecard / "idx", "lecard-10q", "--out", tmp_path / "b.run", "--query-id-field",
                      "ridx") == ("lecard-10q is a bundled collection: --query-id-field and --query-text-fields are "
                                  "for queries files")
    # nor do the other query options apply to it: refused, never silently ignored
    assert error_line(2, "run", lecard / "idx", "lecard-10q", "--out", tmp_path / "b.run", "--query-ids",
                      "position") == ("lecard-10q is a bundled collection, whose queries are read as they are: "
                                      "--query-ids is for queries files")
    assert error_line(2, "run", lecard / "idx", "lecard-10q", "--out", tmp_path / "b.run", "--query-format", "tsv",
                      "--topic-field", "desc").endswith("--query-format, --topic-field are for queries files")
    assert error_line(2, "evaluate", "lecard-10q", LECARD_RAW, "--qrels-format", "beir") == (
        "lecard-10q is a bundled collection, whose qrels are TREC qrels: --qrels-format beir is for qrels files")
    assert not (tmp_path / "b.run").exists()
    # TREC topics pick their fields with --topic-field
    topics = tmp_path / "t.trec"
    topics.write_text("<top>\n<num> 1\n<title> 盗窃\n</top>\n", encoding="utf-8")
    assert error_line(1, "run", lecard / "idx", topics, "--out", tmp_path / "t.run", "--query-text-fields",
                      "title").endswith("not trec (--topic-field picks a topic's fields)")


def test_tune_takes_the_query_fields(lecard):
    grid = ["--k1-grid", "0.9,1.5", "--b-grid", "0.4,0.75", "--folds", "2", "-k", "30", "--format", "json"]
    named = json.loads(invoke("tune", lecard / "idx", LECARD_RAW, lecard / "qrels.trec", *grid,
                              "--query-id-field", "ridx", "--query-text-fields", "q"))
    converted = json.loads(invoke("tune", lecard / "idx", lecard / "converted.jsonl", lecard / "qrels.trec", *grid))
    assert sum(f["num_test_queries"] for f in named["folds"]) == 3 and named == converted
    assert error_line(1, "tune", lecard / "idx", LECARD_RAW, lecard / "qrels.trec", *grid, "--query-id-field",
                      "qid").endswith(":1: missing query id: no field 'qid' (fields: 'path', 'ridx', 'q', 'crime')")


def test_experiment_on_a_folder_takes_the_query_fields(lecard, tmp_path):
    folder = tmp_path / "collection"
    folder.mkdir()
    (folder / "docs.jsonl.gz").write_bytes((lecard / "docs.jsonl.gz").read_bytes())
    (folder / "qrels.trec").write_text((lecard / "qrels.trec").read_text())
    raw = [json.loads(line) for line in LECARD_RAW.read_text(encoding="utf-8").splitlines()]
    (folder / "queries.jsonl").write_text("".join(json.dumps({"case": r["ridx"], "facts": r["q"]}, ensure_ascii=False)
                                                  + "\n" for r in raw), encoding="utf-8")
    options = ["-m", "nDCG@10", "-m", "ERR@10", "-k", "30", "--format", "json", "--language", "zh"]
    assert error_line(1, "experiment", folder, *options).startswith(f"{folder / 'queries.jsonl'}:1: missing query id")
    named = json.loads(invoke("experiment", folder, *options, "--query-id-field", "case", "--query-text-fields",
                              "facts"))
    (folder / "queries.jsonl").write_text((lecard / "converted.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    converted = json.loads(invoke("experiment", folder, *options))
    assert named == converted and named["queries"] == 3 and named["mean"]["nDCG@10"] > 0
    assert error_line(2, "experiment", "cranfield", "--query-text-fields", "text").startswith(
        "cranfield is a bundled collection")
    assert error_line(2, "experiment", "cranfield", "--query-ids", "position") == (
        "cranfield is a bundled collection, whose queries keep their ids: query_ids (--query-ids) is for a folder's "
        "queries file")
