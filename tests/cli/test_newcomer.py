"""The held-out collections as a newcomer meets them (issue 30), in small copies of their layouts: NFCorpus's
folder of several query and qrels files, Vaswani's documents in a subfolder, LeCaRD's JSON queries and
title field, CACM's empty query record; and the messages that help: swapped arguments, misspelt commands,
options and measures, qrels of another collection, the trec_eval rules in use."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bm25lab.cli import app

DOCS = {"MED-1": ("Statins", "statin therapy lowers cholesterol in adults"),
        "MED-2": ("Vitamin D", "vitamin d deficiency and bone health"),
        "MED-3": ("Green tea", "green tea polyphenols and cancer risk"),
        "MED-4": ("Fiber", "dietary fiber and heart disease")}


def invoke(*args: object, code: int = 0):
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == code, result.output
    return result


def nfcorpus(folder: Path) -> Path:
    """NFCorpus's test/ folder: one documents file, several query files, two qrels files."""
    test = folder / "test"
    test.mkdir()
    (test / "test.docs").write_text("".join(f"{d}\t{t}\t{x}\n" for d, (t, x) in DOCS.items()))
    (test / "test.all.queries").write_text("PLAIN-1\tdo statins lower cholesterol\nPLAIN-2\tgreen tea and cancer\n")
    (test / "test.titles.queries").write_text("PLAIN-1\tstatins\nPLAIN-2\tgreen tea\n")
    (test / "test.vid-desc.queries").write_text("PLAIN-1\tcholesterol video\nPLAIN-2\ttea video\n")
    (test / "test.2-1-0.qrel").write_text("PLAIN-1 0 MED-1 2\nPLAIN-2 0 MED-3 2\nPLAIN-2 0 MED-4 1\n")
    (test / "test.3-2-1.qrel").write_text("PLAIN-1 0 MED-1 3\nPLAIN-2 0 MED-3 3\n")
    return test


def test_an_ambiguous_folder_is_refused_in_one_line_naming_the_candidates(tmp_path: Path) -> None:
    test = nfcorpus(tmp_path)
    refused = invoke("experiment", test, code=1)
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bm25lab: error: ")
    assert "test.3-2-1.qrel" in lines[0] and "test.2-1-0.qrel" in lines[0] and "--qrels FILE" in lines[0]
    refused = invoke("experiment", test, "--qrels", "test.3-2-1.qrel", code=1)
    assert "3 files could be the queries" in refused.stderr and "--queries FILE" in refused.stderr
    chosen = invoke("experiment", test, "--qrels", "test.3-2-1.qrel", "--queries", "test.titles.queries",
                    "-m", "P@1", "--format", "json")
    document = json.loads(chosen.stdout)
    assert document["files"] == {"documents": str(test / "test.docs"), "queries": str(test / "test.titles.queries"),
                                 "qrels": str(test / "test.3-2-1.qrel")}
    assert document["mean"]["P@1"] == 1.0
    assert "documents test.docs, queries test.titles.queries, qrels test.3-2-1.qrel" in chosen.stderr  # said


def test_documents_in_a_subfolder_and_json_queries(tmp_path: Path) -> None:
    folder = tmp_path / "vaswani"
    (folder / "corpus").mkdir(parents=True)
    (folder / "corpus" / "doc-text.trec").write_text("".join(
        f"<DOC>\n<DOCNO>{d}</DOCNO>\n{t} {x}\n</DOC>\n" for d, (t, x) in DOCS.items()))
    (folder / "query.json").write_text('{"ridx": 1, "q": "statin cholesterol"}\n{"ridx": 2, "q": "bone health"}\n')
    (folder / "qrels").write_text("1 0 MED-1 1\n2 0 MED-2 1\n")
    done = invoke("experiment", folder, "-m", "P@1", "--format", "json")
    assert json.loads(done.stdout)["files"]["documents"] == str(folder / "corpus" / "doc-text.trec")
    assert json.loads(done.stdout)["mean"]["P@1"] == 1.0


def test_the_index_options_of_a_folder(tmp_path: Path) -> None:
    folder = tmp_path / "lecard"
    folder.mkdir()
    rows = [{"id": d, "ajName": t, "ajjbqk": x} for d, (t, x) in DOCS.items()] + [{"id": "MED-1", "ajName": "again",
                                                                                    "ajjbqk": "repeated"}]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "queries.jsonl").write_text('{"id": "1", "text": "the cholesterol"}\n')
    (folder / "qrels.trec").write_text("1 0 MED-1 1\n")
    (folder / "stop.txt").write_text("the\n")
    assert "name it with text_fields (--text-fields)" in invoke("experiment", folder, code=1).stderr
    assert "MED-1" in invoke("experiment", folder, "--text-fields", "ajjbqk", code=1).stderr  # a repeated id
    done = invoke("experiment", folder, "--text-fields", "ajjbqk", "--title-field", "ajName", "--duplicates", "first",
                  "--stopwords", folder / "stop.txt", "--language", "en", "-m", "P@1", "--format", "json")
    assert json.loads(done.stdout)["mean"]["P@1"] == 1.0


def test_index_takes_a_title_field(tmp_path: Path) -> None:
    source = tmp_path / "cases.jsonl"
    source.write_text("".join(json.dumps({"id": d, "ajName": t, "ajjbqk": x}) + "\n" for d, (t, x) in DOCS.items()))
    invoke("index", source, "--out", tmp_path / "idx", "--text-fields", "ajjbqk", "--title-field", "ajName")
    hits = json.loads(invoke("search", tmp_path / "idx", "green tea", "--format", "json").stdout)
    assert hits[0]["doc_id"] == "MED-3" and hits[0]["title"] == "Green tea"


def test_run_says_which_queries_returned_nothing_and_why(tmp_path: Path) -> None:
    source = tmp_path / "docs.jsonl"
    source.write_text("".join(json.dumps({"id": d, "text": x}) + "\n" for d, (_, x) in DOCS.items()))
    invoke("index", source, "--out", tmp_path / "idx", "--language", "en")
    queries = tmp_path / "query.text"  # CACM's queries start with an empty record, .I 0
    queries.write_text(".I 0\n.W\n\n.I 1\n.W\nstatin therapy\n.I 2\n.W\nthe of and\n.I 3\n.W\nzzzqqq\n")
    done = invoke("run", tmp_path / "idx", queries, "--out", tmp_path / "r.run")
    assert done.stdout.startswith("3 queries, ")  # .I 0 is not a query
    assert f"{queries}: 1 query has no text and is left out: 0" in done.stderr
    assert "1 of 3 queries returned nothing: no term is left after analysis" in done.stderr and ": 2\n" in done.stderr
    assert "1 of 3 queries returned nothing: none of their terms is in the index: 3" in done.stderr


def test_swapped_arguments_get_a_hint(tmp_path: Path) -> None:
    invoke("index", "cisi", "--out", tmp_path / "idx", "--quiet")
    refused = invoke("run", "cisi", tmp_path / "idx", "--out", tmp_path / "r.run", code=1)
    assert refused.stderr == (f"bm25lab: error: cisi: not an index, but {tmp_path / 'idx'} is: the index comes first "
                              f"(bm25lab run DIR QUERIES --out RUN)\n")
    refused = invoke("search", "library", tmp_path / "idx", code=1)
    assert "the index comes first" in refused.stderr
    refused = invoke("tune", "cisi", tmp_path / "idx", "cisi", code=1)
    assert "the index comes first (bm25lab tune DIR QUERIES QRELS)" in refused.stderr


@pytest.mark.parametrize("args, suggestion", [(["serach", "x", "y"], "Did you mean 'search'?"),
                                              (["index", "cisi", "--out", "x", "--text-field", "a"], "--text-fields"),
                                              (["evaluate", "cisi", "r.run", "-m", "nDGC@10"], "did you mean nDCG@10?"),
                                              (["evaluate", "cisi", "r.run", "-m", "all-trec"], "did you mean all_trec?")])
def test_did_you_mean(args: list[str], suggestion: str, tmp_path: Path) -> None:
    (tmp_path / "r.run").write_text("1 Q0 1 1 1.0 t\n")
    result = CliRunner().invoke(app, [str(tmp_path / a) if a == "r.run" else a for a in args])
    assert result.exit_code == 2 and suggestion in result.output
    assert len(result.output) < 600  # the syntaxes in a line, not the 2,000-character list


def test_qrels_of_another_collection_and_the_rules_in_use(tmp_path: Path) -> None:
    invoke("index", "cranfield", "--out", tmp_path / "idx", "--quiet")
    invoke("run", tmp_path / "idx", "cranfield", "--out", tmp_path / "cran.run", "-k", "100", "--quiet")
    wrong = invoke("evaluate", "cisi", tmp_path / "cran.run")  # numeric ids overlap by chance
    assert "of the top 10 documents are judged" in wrong.stderr and "are the qrels" in wrong.stderr
    assert "Computed by trec_eval 9.0.8's rules" in " ".join(wrong.stdout.split())
    right = invoke("evaluate", "cranfield", tmp_path / "cran.run", "--trec-eval", "10")
    assert "top 10 documents are judged" not in right.stderr
    assert "Computed by trec_eval 10.0's rules" in " ".join(right.stdout.split())
    trec = invoke("evaluate", "cranfield", tmp_path / "cran.run", "--format", "trec")
    assert "Computed by trec_eval 9.0.8's rules" in trec.stderr and "rules" not in trec.stdout
