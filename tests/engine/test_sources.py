"""bm25lab.engine.sources: every document and query format on small inline fixtures, bad input, fuzzing."""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzzing import mutated

from bm25lab.engine.errors import InputError
from bm25lab.engine.records import Document
from bm25lab.engine.sources import DOCUMENT_FORMATS, QUERY_FORMATS, read_documents, read_queries


def write(folder: Path, name: str, content: str | bytes, *, gz: bool = False) -> Path:
    data = content.encode("utf-8") if isinstance(content, str) else content
    path = folder / (name + (".gz" if gz else ""))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data, mtime=0) if gz else data)
    return path


def docs(path: Path, **kwargs) -> list[Document]:
    return list(read_documents(path, **kwargs))


def raises_at(path: Path, line: int | None, fragment: str, reader=docs, **kwargs) -> InputError:
    with pytest.raises(InputError) as info:
        reader(path, **kwargs)
    err = info.value
    assert str(path) in str(err), str(err)
    assert err.line == line, str(err)
    if line is not None:
        assert f"{path}:{line}: " in str(err)
    assert fragment in err.reason, str(err)
    return err


# --------------------------------------------------------------------------- happy paths

JSONL = (
    '{"_id": "d1", "title": "BEIR title", "text": "beir text", "url": "http://x"}\n'
    "\n"
    '{"id": 2, "text": "plain id"}\r\n'
    '{"id": "d3", "contents": "pyserini style", "title": null}\n'
)
JSONL_EXPECTED = [
    Document("d1", "beir text", "BEIR title", {"url": "http://x"}),
    Document("2", "plain id", ""),
    Document("d3", "pyserini style", ""),
]
TSV2 = "a\tfirst text\nb\t\n"
TSV3 = "a\tTitle A\tfirst text\nb\t\tsecond\n"
CSV = 'ID,Title,Body,lang\na,"Title, with comma","line one\nline two",en\nb,,"say ""hi""",zh\n'
TREC = (
    "<DOC>\n<DOCNO> FT911-1 </DOCNO>\n<HEADLINE>Markets &amp; money</HEADLINE>\n"
    "<TEXT>\nShares <B>rose</B>\n  today.\n</TEXT>\n</DOC>\n"
    "<DOC><DOCNO>FT911-2</DOCNO><TEXT>one line</TEXT></DOC>\n"
)
TREC_EXPECTED = [Document("FT911-1", "Shares rose today.", "Markets & money"), Document("FT911-2", "one line", "")]


@pytest.mark.parametrize("gz", [False, True])
def test_jsonl_documents_id_variants_and_metadata(tmp_path, gz):
    path = write(tmp_path, "c.jsonl", JSONL, gz=gz)
    assert docs(path) == JSONL_EXPECTED


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize(
    "content, expected",
    [
        (TSV2, [Document("a", "first text"), Document("b", "")]),
        (TSV3, [Document("a", "first text", "Title A"), Document("b", "second", "")]),
        ("docid\ttext\ttitle\r\n7\tbody\thead\r\n", [Document("7", "body", "head")]),
    ],
    ids=["id-text", "id-title-text", "header-crlf"],
)
def test_tsv_documents(tmp_path, gz, content, expected):
    assert docs(write(tmp_path, "c.tsv", content, gz=gz)) == expected


@pytest.mark.parametrize("gz", [False, True])
def test_csv_documents_columns_any_case_quotes_and_metadata(tmp_path, gz):
    path = write(tmp_path, "c.csv", "\ufeff" + CSV, gz=gz)
    assert docs(path) == [
        Document("a", "line one\nline two", "Title, with comma", {"lang": "en"}),
        Document("b", 'say "hi"', "", {"lang": "zh"}),
    ]


def test_csv_field_longer_than_the_csv_module_default(tmp_path):
    text = "word " * 40000  # 200 kB > csv's 128 KiB default field limit
    assert docs(write(tmp_path, "c.csv", f"id,text\nbig,{text}\n"))[0].text == text


def test_folder_of_txt_files_ids_are_relative_paths_sorted(tmp_path):
    root = tmp_path / "corpus"
    write(root, "b.txt", "bee\n")
    write(root, "a/z.txt", "zed")
    write(root, "a/y.txt", "why", gz=True)
    write(root, "notes.md", "ignored")
    write(root, ".hidden.txt", "ignored")
    write(root, ".git/x.txt", "ignored")
    assert docs(root) == [Document("a/y.txt.gz", "why"), Document("a/z.txt", "zed"), Document("b.txt", "bee\n")]


@pytest.mark.parametrize("gz", [False, True])
def test_trec_documents(tmp_path, gz):
    assert docs(write(tmp_path, "c.trec", TREC, gz=gz)) == TREC_EXPECTED


def test_trec_folder_reads_every_file(tmp_path):
    root = tmp_path / "disk"
    write(root, "fr94/01", TREC)
    write(root, "fr94/02.gz", "<DOC>\n<DOCNO>X</DOCNO>\n<TITLE>t</TITLE>\nbody\n</DOC>\n", gz=False)
    write(root, "fr94/03", "<doc>\n<docno>Y</docno>\n<head>h</head>\nlower-case tags\n</doc>\n", gz=True)
    assert [d.id for d in docs(root, format="trec")] == ["FT911-1", "FT911-2", "X", "Y"]
    assert docs(root, format="trec")[3] == Document("Y", "lower-case tags", "h")


@pytest.mark.parametrize(
    "name, content, fmt, gz, ids",
    [
        ("data.txt", JSONL, None, False, ["d1", "2", "d3"]),  # unknown extension: sniffed from "{"
        ("data", TREC, None, True, ["FT911-1", "FT911-2"]),  # no extension: "<DOC" inside the gzip stream
        ("data.txt", TSV2, "tsv", False, ["a", "b"]),  # explicit override
        ("data.tsv", TSV2, None, True, ["a", "b"]),  # data.tsv.gz: .gz stripped before reading the extension
    ],
)
def test_format_sniffing_and_override(tmp_path, name, content, fmt, gz, ids):
    assert [d.id for d in docs(write(tmp_path, name, content, gz=gz), format=fmt)] == ids


def test_gzip_is_recognised_by_magic_not_name(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_bytes(gzip.compress(JSONL.encode()))
    assert docs(path) == JSONL_EXPECTED


def test_read_documents_streams(tmp_path):
    path = write(tmp_path, "c.jsonl", JSONL + "not json\n")
    stream = read_documents(path)
    assert next(stream).id == "d1"  # reading starts before the bad line is reached


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "name, content, line, fragment",
    [
        ("c.jsonl", '{"id": "a", "text": "x"}\n{"id": "b", "text": \n', 2, "invalid JSON"),
        ("c.jsonl", '{"id": "a", "text": "x"}\n\n[1, 2]\n', 3, "expected a JSON object, found an array"),
        ("c.json", '[{"id": "a", "text": "x"}]\n', 1, "not a JSON array"),
        ("c.jsonl", '{"text": "no id"}\n', 1, "missing document id"),
        ("c.jsonl", '{"id": "a", "text": "x"}\n{"id": "b"}\n', 2, "missing text"),
        ("c.jsonl", '{"id": "a", "text": 5}\n', 1, "must be a string"),
        ("c.jsonl", '{"id": true, "text": "x"}\n', 1, "must be a string or an integer"),
        ("c.jsonl", '{"id": "  ", "text": "x"}\n', 1, "empty document id"),
        ("c.jsonl", '{"id": "a", "text": "x", "title": 3}\n', 1, "'title' must be a string or null"),
        ("c.jsonl", '{"id": "a", "text": "\\ud800"}\n', 1, "surrogate"),
        ("c.jsonl", '{"id": "a", "text": ' + "[" * 100000 + "\n", 1, "invalid JSON"),
        ("c.tsv", "a\tx\nb\ty\tz\n", 2, "expected 2 tab-separated fields"),
        ("c.tsv", "a\tt\tx\nb\ty\n", 2, "expected 3 tab-separated fields"),
        ("c.tsv", "\n\nno tab here\n", 3, "found 1"),
        ("c.tsv", "a\tx\n\tno id\n", 2, "empty document id"),
        ("c.csv", "name,value\na,b\n", 1, "needs an id column"),
        ("c.csv", "id,text,TEXT\na,b,c\n", 1, "duplicate column"),
        ("c.csv", "id,text\na,b\n\nc,d,e\n", 4, "expected 2 fields"),
        ("c.csv", 'id,text\na,b\nc,"d"x\n', 3, "malformed CSV"),
        ("c.csv", 'id,text\na,b\nc,"never closed\nmore\n', 3, "malformed CSV"),
        ("c.trec", "<DOC>\n<TEXT>no docno</TEXT>\n</DOC>\n", 1, "without <DOCNO>"),
        ("c.trec", "<DOC>\n<DOCNO>a</DOCNO><DOCNO>b</DOCNO>\n</DOC>\n", 1, "2 <DOCNO>"),
        ("c.trec", TREC + "stray text\n", 10, "outside <DOC>"),
        ("c.trec", TREC + "<DOC>\n<DOCNO>z</DOCNO>\n", 10, "never closed"),
        ("c.trec", "<DOC>\n<DOCNO>a</DOCNO>\n<DOC>\n", 3, "<DOC> inside"),
        ("c.trec", "</DOC>\n", 1, "without an open"),
        ("c.trec", "<DOC><DOCNO> </DOCNO></DOC>\n", 1, "empty DOCNO"),
    ],
)
def test_malformed_documents_name_file_and_line(tmp_path, name, content, line, fragment):
    raises_at(write(tmp_path, name, content), line, fragment)


@pytest.mark.parametrize("name", ["c.jsonl", "c.tsv", "c.csv", "c.trec"])
def test_invalid_utf8_names_the_line(tmp_path, name):
    good = {"c.jsonl": JSONL, "c.tsv": TSV2, "c.csv": "id,text\na,b\n", "c.trec": TREC}[name]
    lines = good.encode().splitlines(keepends=True)
    bad = b"".join(lines[:2]) + b"caf\xe9 latin-1\n" + b"".join(lines[2:])
    for gz in (False, True):
        path = write(tmp_path, name, bad, gz=gz)
        raises_at(path, 3, "invalid UTF-8: byte 0xe9")


def test_invalid_utf8_in_folder_file_names_its_line(tmp_path):
    write(tmp_path / "f", "a.txt", b"ok\nstill ok\nbad \xff byte\n")
    with pytest.raises(InputError) as info:
        docs(tmp_path / "f")
    assert str(info.value).startswith(f"{tmp_path / 'f' / 'a.txt'}:3: invalid UTF-8: byte 0xff at byte 5")


@pytest.mark.parametrize(
    "name, content",
    [("c.jsonl", ""), ("c.jsonl", "\n \n"), ("c.tsv", "id\ttext\n"), ("c.csv", "id,text\n"), ("c.trec", "\n")],
)
def test_empty_corpus_is_an_error(tmp_path, name, content):
    raises_at(write(tmp_path, name, content), None, "no documents found")


def test_folder_without_txt_files_is_empty(tmp_path):
    write(tmp_path / "f", "a.md", "x")
    raises_at(tmp_path / "f", None, "no documents (.txt files) found")


def test_missing_source_raises_immediately(tmp_path):
    with pytest.raises(InputError, match="no such file or folder"):
        read_documents(tmp_path / "nope.jsonl")
    with pytest.raises(InputError, match="no such file or folder"):
        read_queries(tmp_path / "nope.tsv")


@pytest.mark.parametrize(
    "setup, fmt, fragment",
    [
        (lambda p: write(p, "c.jsonl", JSONL), "xml", "unknown document format 'xml'; known: jsonl, tsv, csv"),
        (lambda p: write(p, "c.jsonl", JSONL), "folder", "needs a folder"),
        (lambda p: write(p, "d/a.txt", "x").parent, "jsonl", "needs a file, found a folder"),
        (lambda p: write(p, "c.dat", "plain words"), None, "cannot tell the format"),
    ],
)
def test_format_errors(tmp_path, setup, fmt, fragment):
    with pytest.raises(InputError, match=fragment):
        read_documents(setup(tmp_path), format=fmt)


def test_corrupt_gzip_is_an_input_error(tmp_path):
    data = gzip.compress(JSONL.encode() * 50)
    truncated = write(tmp_path, "t.jsonl.gz", data[: len(data) // 2])
    with pytest.raises(InputError, match="corrupt or truncated"):
        docs(truncated)
    garbage = write(tmp_path, "g.jsonl", b"\x1f\x8b" + b"\x00" * 40)
    with pytest.raises(InputError) as info:
        docs(garbage)
    assert str(garbage) in str(info.value)


# --------------------------------------------------------------------------- queries

TOPICS = """<top>
<num> Number: 401
<title> foreign minorities, Germany

<desc> Description:
What language and cultural differences impede integration?

<narr> Narrative:
A relevant document will focus on the causes.
</top>

<top>
<num> Number: 402 <title> Topic: behavioral &amp; genetics
<desc> Description: What is happening?
</top>
"""


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize(
    "name, content, expected",
    [
        ("q.tsv", "1\tfirst query\n2\tsecond\n", {"1": "first query", "2": "second"}),
        ("q.tsv", "qid\ttext\n\n1\tx\n", {"1": "x"}),
        ("q.jsonl", '{"_id": "q1", "text": "beir"}\n{"id": 7, "text": "plain", "extra": 1}\n', {"q1": "beir", "7": "plain"}),
        ("topics.401-402", TOPICS, {"401": "foreign minorities, Germany", "402": "behavioral & genetics"}),
        ("queries.txt", "5\tsniffed as tsv\n", {"5": "sniffed as tsv"}),
        ("queries.txt", '{"id": "5", "query": "sniffed as jsonl"}\n', {"5": "sniffed as jsonl"}),
    ],
)
def test_queries_formats(tmp_path, gz, name, content, expected):
    path = write(tmp_path, name, content, gz=gz)
    assert read_queries(path) == expected


def test_trec_topic_fields(tmp_path):
    path = write(tmp_path, "topics", TOPICS)
    assert read_queries(path, topic_field="desc")["401"] == "What language and cultural differences impede integration?"
    assert read_queries(path, topic_field="title+desc")["402"] == "behavioral & genetics What is happening?"
    raises_at(path, 12, "topic 402 has no <narr>", reader=read_queries, topic_field="narr")
    with pytest.raises(InputError, match="unknown topic field 'body'"):
        read_queries(path, topic_field="body")


@pytest.mark.parametrize(
    "name, content, line, fragment",
    [
        ("q.tsv", "1\ta\n2\tb\n1\tc\n", 3, "duplicate query id '1' (first at line 1)"),
        ("q.jsonl", '{"id": "x", "text": "a"}\n\n{"_id": "x", "text": "b"}\n', 3, "duplicate query id 'x'"),
        ("q.trec", TOPICS + TOPICS, 16, "duplicate query id '401' (first at line 1)"),
        ("q.tsv", "1\ta\n2 b\n", 2, "expected 2 tab-separated fields"),
        ("q.tsv", "1\ta\tb\n", 1, "expected 2 tab-separated fields"),
        ("q.jsonl", '{"id": "x"}\n', 1, "missing text"),
        ("q.jsonl", '{"text": "x"}\n', 1, "missing query id"),
        ("q.jsonl", '"just a string"\n', 1, "expected a JSON object, found a string"),
        ("q.trec", "<top>\n<title> no number\n</top>\n", 1, "empty topic number"),
        ("q.trec", "<top>\n<num> 1\n<title> a\n", 1, "never closed"),
        ("q.trec", "<top>\n<num> 1 <title> a <title> b\n</top>\n", 1, "two <title>"),
        ("q.trec", "junk\n<top>\n<num> 1 <title> a\n</top>\n", 1, "outside <top>"),
        ("q.tsv", b"1\ta\n2\t\xc3\x28\n", 2, "invalid UTF-8: byte 0xc3 at byte 3"),
    ],
)
def test_malformed_queries_name_file_and_line(tmp_path, name, content, line, fragment):
    raises_at(write(tmp_path, name, content), line, fragment, reader=read_queries)


@pytest.mark.parametrize("name, content", [("q.tsv", ""), ("q.jsonl", "\n"), ("q.trec", " \n")])
def test_empty_queries_file_is_an_error(tmp_path, name, content):
    raises_at(write(tmp_path, name, content), None, "no queries found", reader=read_queries)


def test_unknown_query_format(tmp_path):
    with pytest.raises(InputError, match="unknown query format 'csv'; known: tsv, jsonl, trec"):
        read_queries(write(tmp_path, "q.tsv", "1\ta\n"), format="csv")


# --------------------------------------------------------------------------- fuzzing

VALID_DOCUMENT_FILES = {
    "jsonl": JSONL.encode(),
    "tsv": TSV3.encode(),
    "csv": CSV.encode(),
    "trec": TREC.encode(),
}
VALID_QUERY_FILES = {
    "tsv": b"1\tfirst\n2\tsecond\n",
    "jsonl": b'{"_id": "q1", "text": "a"}\n{"id": "q2", "text": "b"}\n',
    "trec": TOPICS.encode(),
}
FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def consume_documents(path: Path, fmt: str) -> None:
    try:
        for doc in read_documents(path, format=fmt):
            assert isinstance(doc, Document) and doc.id and isinstance(doc.text, str)
    except InputError as exc:
        assert str(path) in str(exc)


def consume_queries(path: Path, fmt: str) -> None:
    try:
        queries = read_queries(path, format=fmt)
        assert queries and all(isinstance(k, str) and isinstance(v, str) for k, v in queries.items())
    except InputError as exc:
        assert str(path) in str(exc)


DOCUMENT_BYTES = bytes([0x00, 0x09, 0x0A, 0x0D, 0x22, 0x2C, 0x3C, 0x3E, 0x5B, 0x7B, 0x7D, 0xC3, 0xFF, 0x41])  # bytes the mutations draw from


@FUZZ
@given(fmt=st.sampled_from(sorted(VALID_DOCUMENT_FILES)), blob=st.binary(max_size=300))
def test_fuzz_random_bytes_documents(tmp_path, fmt, blob):
    path = tmp_path / f"fuzz.{fmt}"
    path.write_bytes(blob)
    consume_documents(path, fmt)


@FUZZ
@given(case=mutated(VALID_DOCUMENT_FILES, DOCUMENT_BYTES))
def test_fuzz_mutated_documents(tmp_path, case):
    fmt, blob = case
    path = tmp_path / f"fuzz.{fmt}"
    path.write_bytes(blob)
    consume_documents(path, fmt)


@FUZZ
@given(fmt=st.sampled_from(sorted(VALID_QUERY_FILES)), blob=st.binary(max_size=300))
def test_fuzz_random_bytes_queries(tmp_path, fmt, blob):
    path = tmp_path / f"fuzz.{fmt}"
    path.write_bytes(blob)
    consume_queries(path, fmt)


@FUZZ
@given(case=mutated(VALID_QUERY_FILES, DOCUMENT_BYTES))
def test_fuzz_mutated_queries(tmp_path, case):
    fmt, blob = case
    path = tmp_path / f"fuzz.{fmt}"
    path.write_bytes(blob)
    consume_queries(path, fmt)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=st.dictionaries(st.sampled_from(["a.txt", "b.txt", "s/c.txt", "d.txt.gz", "e.md"]), st.binary(max_size=60), max_size=4))
def test_fuzz_folder(tmp_path_factory, files):
    root = tmp_path_factory.mktemp("fuzzdir")
    for name, blob in files.items():
        write(root, name, blob)
    try:
        for doc in read_documents(root):
            assert doc.id.endswith((".txt", ".txt.gz"))
    except InputError:
        pass


def test_registries_cover_the_documented_formats():
    assert sorted(DOCUMENT_FORMATS) == ["csv", "folder", "jsonl", "lisa", "npl", "parquet", "smart", "time",
                                      "trec", "tsv"]
    assert sorted(QUERY_FORMATS) == ["jsonl", "lisa", "npl", "smart", "time", "trec", "tsv"]
    # every row says what it is, and what tells it: a name, or its first bytes (a folder: what it holds)
    for name, row in [*DOCUMENT_FORMATS.items(), *QUERY_FORMATS.items()]:
        assert row.description and (row.extensions or row.sniff or getattr(row, "folder", False)), name


def test_a_new_format_is_a_reader_and_a_row(tmp_path: Path, monkeypatch) -> None:
    # a format added to the registry is detected by its extension and by its first bytes, read, counted
    from bm25lab.engine import sources
    from bm25lab.engine.records import Document
    from bm25lab.engine.sources import DocumentFormat

    def read(path: Path, mapping) -> Iterator[Document]:
        for line in path.read_text().splitlines()[1:]:
            doc_id, _, text = line.partition("=")
            yield Document(doc_id, text)

    row = DocumentFormat(read, "MAGIC then id=text lines", extensions=(".magic",),
                         sniff=lambda head: head.startswith(b"MAGIC"), count=lambda path, named: 2)
    monkeypatch.setitem(sources.DOCUMENT_FORMATS, "magic", row)
    for name in ("docs.magic", "docs.txt"):
        (tmp_path / name).write_text("MAGIC\nd1=hello\nd2=world\n")
        assert sources.detect_document_format(tmp_path / name) == "magic"
        assert [d.id for d in read_documents(tmp_path / name)] == ["d1", "d2"]
        assert sources.count_documents(tmp_path / name) == 2


# ---------------------------------------------------------------------------------------------
# Blank lines and gzip bombs (issue 28: a 19 KB gzip of 20 MB of newlines took 50 s before "no documents
# found", a 4.3 MB one of 1 GB ran past 300 s: a Python step per line)


def _blank_gzip(path: Path, megabytes: int, head: bytes = b"", tail: bytes = b"") -> Path:
    """``head``, ``megabytes`` MB of newlines, ``tail``, gzipped: members concatenated (each a MB of
    newlines), written in milliseconds."""
    member = gzip.compress(b"\n" * (1 << 20), mtime=0)
    path.write_bytes(gzip.compress(head, mtime=0) + member * megabytes + gzip.compress(tail, mtime=0))
    return path


def test_blank_lines_come_in_pieces_not_a_python_step_each(tmp_path: Path) -> None:
    from bm25lab.engine import sources

    blank = b"  \n\t\n \r\n" * 1000
    path = _blank_gzip(tmp_path / "docs.jsonl.gz", 20, b'{"id": "a", "text": "x"}\n' + blank,
                       blank + b'{"id": "b", "text": "y"}\n{"id": "c", "text": \n')
    pieces = list(sources.base.read_lines(path))
    assert len(pieces) < 1000  # 20 M lines: a piece per 64 KiB read (a line each before: minutes)
    assert "".join(text for _, text in pieces).count("\n") == 20 * (1 << 20) + 6003
    numbers = [number for number, _ in pieces]
    assert numbers == sorted(numbers) and numbers[0] == 1
    last = 1 + 3000 + 20 * (1 << 20) + 3000 + 2
    raises_at(path, last, "", docs)  # the line numbers are the file's
    assert [d.id for d in docs(_blank_gzip(tmp_path / "ok.jsonl.gz", 20, b'{"id": "a", "text": "x"}\n',
                                           b'{"id": "b", "text": "y"}\n'))] == ["a", "b"]
    with pytest.raises(InputError, match="no documents found"):
        docs(_blank_gzip(tmp_path / "none.jsonl.gz", 20))


def test_empty_lines_in_a_csv_field_are_kept_and_lines_counted(tmp_path: Path) -> None:
    text = "id,text\n" + "\n" * 100_000 + 'a,"x\n\n\r\n\ny"\n' + "\r\n" * 7 + 'b,"open\n'
    path = write(tmp_path, "docs.csv", text)
    with pytest.raises(InputError) as info:
        docs(path)
    assert info.value.line == text.count("\n")  # the record that opens on the last line
    ok = write(tmp_path, "ok.csv", text.replace('b,"open\n', "b,z\n"))
    assert [(d.id, d.text) for d in docs(ok)] == [("a", "x\n\n\r\n\ny"), ("b", "z")]


def test_a_gzip_bomb_is_refused_naming_the_file_and_the_variable_that_allows_it(tmp_path: Path, monkeypatch) -> None:
    from bm25lab.engine.compressed import FLOOR, RATIO_VARIABLE
    from bm25lab.engine.errors import ParameterError

    bomb = _blank_gzip(tmp_path / "bomb.jsonl.gz", (FLOOR >> 20) + 16)  # 272 MB of newlines in 270 KB
    monkeypatch.delenv(RATIO_VARIABLE, raising=False)
    with pytest.raises(InputError, match=rf"{bomb}: decompresses to more than {FLOOR:,} bytes .* {RATIO_VARIABLE}=N"):
        docs(bomb)
    with pytest.raises(InputError, match="decompresses to more than"):
        read_queries(bomb, format="jsonl")
    monkeypatch.setenv(RATIO_VARIABLE, "2000")  # allowed: read to its end, where no document is
    with pytest.raises(InputError, match=f"{bomb}: no documents found"):
        docs(bomb)
    monkeypatch.setenv(RATIO_VARIABLE, "a lot")
    with pytest.raises(ParameterError, match=RATIO_VARIABLE):
        docs(bomb)
    monkeypatch.delenv(RATIO_VARIABLE)
    small = _blank_gzip(tmp_path / "small.jsonl.gz", 8, tail=b'{"id": "a", "text": "x"}\n')  # past 100x, under the floor
    assert [d.id for d in docs(small)] == ["a"]
