"""SMART documents and queries, content detection, field mapping, duplicate policies and document counts."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from bm25lab import Index
from bm25lab.engine.errors import InputError, ParameterError
from bm25lab.engine.sources import count_documents, detect_document_format, read_documents, read_queries

SMART = Path(__file__).resolve().parents[1] / "data" / "smart"

STRAYS = (".I 007\n.T\nA title\n.A\nsomeone\n.W\nthe text\n.A\nstray author line\n.W\nmore text\n"
          ".I 8\n.T\nsecond\n.A\nx\n.A\ny\n.W\nbody\n.X\n1 2 3\n")


def test_smart_fields_strays_and_ids(tmp_path: Path) -> None:
    (tmp_path / "c.all").write_text(STRAYS, encoding="ascii")
    docs = list(read_documents(tmp_path / "c.all"))
    assert [d.id for d in docs] == ["7", "8"]  # .I 007 is query/document 7, as relevance files write it
    assert docs[0].title == "A title" and docs[0].text == "the text stray author line more text"
    assert docs[0].metadata == {"author": "someone"}
    assert docs[1].metadata == {"author": "x; y", "xref": "1 2 3"}
    only_text = list(read_documents(tmp_path / "c.all", text_fields="text"))
    assert only_text[1].title == "" and only_text[1].text == "body"


def test_smart_samples_crlf_and_queries(tmp_path: Path) -> None:
    assert detect_document_format(SMART / "cran.all.1400") == "smart" == detect_document_format(SMART / "CISI.ALL")
    assert count_documents(SMART / "cran.all.1400") == len(list(read_documents(SMART / "cran.all.1400"))) == 60
    queries = read_queries(SMART / "cran.qry")
    assert list(queries)[:3] == ["1", "2", "4"] and "\r" not in "".join(queries.values())
    assert list(read_queries(SMART / "cran.qry", ids="position")) == [str(i) for i in range(1, 9)]
    cisi = read_queries(SMART / "CISI.QRY")
    assert len(cisi) == 6
    with pytest.raises(ParameterError, match="query id mode"):
        read_queries(SMART / "cran.qry", ids="numbers")


@pytest.mark.parametrize(
    ("content", "line", "fragment"),
    [(".T\ntitle first\n", 1, "field .T before the first .I"), ("text\n.I 1\n", 1, "text before the first .I"), (".I 1\nloose text\n", 2, "before the record's first"),
     (".I\n.W\nx\n", 1, ".I without a record id")],
)
def test_malformed_smart(tmp_path: Path, content: str, line: int, fragment: str) -> None:
    (tmp_path / "bad.all").write_text(content, encoding="ascii")
    with pytest.raises(InputError, match=fragment) as info:
        list(read_documents(tmp_path / "bad.all", format="smart"))
    assert info.value.line == line


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("corpus.docs", "a\tone\nb\ttwo\n", "tsv"),
        ("corpus.docs", "a\tt\tone\nb\tt\ttwo\n", "tsv"),
        ("x.data", "ID,Text,Title\na,one,t\n", "csv"),
        ("x.data", '{"id": "a", "text": "x"}\n', "jsonl"),
        ("x.data", "<DOC>\n<DOCNO>a</DOCNO>\n</DOC>\n", "trec"),
        ("x.data", ".I 1\n.W\nx\n", "smart"),
    ],
)
def test_detected_from_content(tmp_path: Path, name: str, content: str, expected: str) -> None:
    path = tmp_path / name
    path.write_bytes(gzip.compress(content.encode()) if expected == "trec" else content.encode())
    assert detect_document_format(path) == expected
    assert list(read_documents(path))[0].id == "a" if expected != "smart" else True


def test_field_mapping_in_jsonl_csv_and_tsv(tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").write_text(json.dumps({"pid": 3, "title": "T", "body": "B", "extra": 1}) + "\n")
    doc = next(read_documents(tmp_path / "d.jsonl", id_field="pid", text_fields="title,body"))
    assert (doc.id, doc.title, doc.text, doc.metadata) == ("3", "T", "B", {"extra": 1})
    (tmp_path / "d.csv").write_text("key,head,body\nk1,H,B\n")
    doc = next(read_documents(tmp_path / "d.csv", id_field="key", text_fields=["head", "body"]))
    assert (doc.id, doc.title, doc.text) == ("k1", "", "H\nB")
    (tmp_path / "d.tsv").write_text("key\ttitle\tbody\nk1\tT\tB\n")
    doc = next(read_documents(tmp_path / "d.tsv", id_field="key"))
    assert (doc.id, doc.title, doc.text) == ("k1", "T", "B")
    with pytest.raises(InputError, match="an id field can be chosen for jsonl, tsv, csv"):
        read_documents(SMART / "CISI.ALL", id_field="x")
    with pytest.raises(InputError, match="no id column 'nope'"):
        list(read_documents(tmp_path / "d.tsv", id_field="nope"))


def test_duplicates_first_last_and_error(tmp_path: Path) -> None:
    rows = [("a", "one"), ("b", "two"), ("a", "three"), ("a", "four")]
    (tmp_path / "d.tsv").write_text("".join(f"{i}\t{t}\n" for i, t in rows))
    first = read_documents(tmp_path / "d.tsv", duplicates="first")
    assert [(d.id, d.text) for d in first] == [("a", "one"), ("b", "two")] and first.duplicates == 2
    last = read_documents(tmp_path / "d.tsv", duplicates="last")
    assert [(d.id, d.text) for d in last] == [("b", "two"), ("a", "four")] and last.duplicates == 2
    with pytest.raises(InputError, match="duplicate document id 'a'"):
        Index.build(read_documents(tmp_path / "d.tsv"))
    with pytest.raises(ParameterError, match="duplicates policy"):
        read_documents(tmp_path / "d.tsv", duplicates="keep")
    assert count_documents(tmp_path / "d.tsv") == 4
