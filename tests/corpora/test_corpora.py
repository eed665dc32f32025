"""The bundled corpora: every collection loads, counts match its meta.json and the documented
figures, qrels are well formed and name only known queries and documents; the converter on small
inline SMART fixtures (Cranfield's quirks) and its byte-for-byte determinism."""
from __future__ import annotations

import gzip
import json
import re
from functools import lru_cache

import pytest

from bm25lab import corpora
from bm25lab.corpora import convert
from bm25lab.engine.errors import InputError
from bm25lab.engine.records import Document

# name -> (language, docs, queries, judged queries, judgment lines), as documented in ../shared/corpora
EXPECTED = {
    "cisi": ("en", 1460, 112, 76, 3114),
    "cmrc2018": ("zh", 1104, 4221, 4221, 4221),
    "cranfield": ("en", 1400, 225, 225, 1837),
    "lecard-10q": ("zh", 984, 10, 10, 303),
}
QREL_LINE = re.compile(r"^(\S+) 0 (\S+) (-?\d+)$")


@lru_cache(maxsize=None)
def loaded(name: str) -> tuple[corpora.Corpus, tuple[Document, ...], dict[str, str]]:
    corpus = corpora.get(name)
    return corpus, tuple(corpus.documents()), corpus.queries()


@lru_cache(maxsize=None)
def qrels(name: str) -> tuple[tuple[str, str, int], ...]:
    rows = []
    path = corpora.get(name).qrels_path
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        match = QREL_LINE.match(line)
        assert match, f"{path}:{number}: not 'qid 0 docid grade': {line!r}"
        rows.append((match.group(1), match.group(2), int(match.group(3))))
    return tuple(rows)


def test_names_are_the_four_bundled_collections():
    assert corpora.names() == sorted(EXPECTED)


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(InputError) as info:
        corpora.get("trec-covid")
    assert str(info.value) == "unknown corpus 'trec-covid'; bundled: cisi, cmrc2018, cranfield, lecard-10q"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_counts_match_meta_and_documentation(name):
    corpus, documents, queries = loaded(name)
    language, num_docs, num_queries, num_judged, num_judgments = EXPECTED[name]
    assert (corpus.name, corpus.language) == (name, language)
    assert (corpus.num_docs, corpus.num_queries, corpus.num_judged_queries, corpus.num_judgments) == (
        num_docs, num_queries, num_judged, num_judgments)
    assert len(documents) == num_docs
    assert len({d.id for d in documents}) == num_docs
    assert len(queries) == num_queries
    assert len(corpus.judged_queries()) == num_judged
    assert len(qrels(name)) == num_judgments
    assert corpus.description and corpus.licence and corpus.source and corpus.grades
    assert corpus.path == corpora.ROOT / name and corpus.docs_path.name == "docs.jsonl.gz"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_qrels_name_only_known_documents_and_queries(name):
    _, documents, queries = loaded(name)
    doc_ids = {d.id for d in documents}
    rows = qrels(name)
    missing_docs = sorted({d for _, d, _ in rows} - doc_ids)
    missing_queries = sorted({q for q, _, _ in rows} - set(queries))
    assert missing_docs == [], f"{name}: judged documents not in the corpus: {missing_docs[:20]}"
    assert missing_queries == [], f"{name}: judged queries not in queries.jsonl: {missing_queries[:20]}"
    assert len({(q, d) for q, d, _ in rows}) == len(rows), "duplicate (query, document) judgment"


@pytest.mark.parametrize(
    "name, grades",
    [("cranfield", {0, 1, 2, 3, 4}), ("cisi", {1}), ("cmrc2018", {1}), ("lecard-10q", {0, 1, 2, 3})],
)
def test_grades_are_gains(name, grades):
    assert {g for _, _, g in qrels(name)} == grades


def test_cranfield_grades_mapped_and_queries_numbered_like_the_qrels():
    rows = qrels("cranfield")
    # gain = 5 - Cleverdon grade; each query's single -1 ("no interest") line became 0
    counts = {g: sum(1 for *_, x in rows if x == g) for g in range(5)}
    assert counts == {4: 128, 3: 387, 2: 734, 1: 363, 0: 225}
    zero_per_query = {}
    for q, _, g in rows:
        zero_per_query[q] = zero_per_query.get(q, 0) + (g == 0)
    assert set(zero_per_query.values()) == {1}
    assert rows[0] == ("1", "184", 3)  # cranqrel "1 184 2": grade 2 (high relevance) -> gain 3
    corpus, documents, queries = loaded("cranfield")
    assert list(queries) == [str(i) for i in range(1, 226)]
    raw = [json.loads(line) for line in corpus.queries_path.read_text(encoding="utf-8").splitlines()]
    assert [(q["id"], q["cran_qry_id"]) for q in raw[:4]] == [("1", "001"), ("2", "002"), ("3", "004"), ("4", "008")]
    assert raw[-1]["cran_qry_id"] == "365"
    assert queries["3"].startswith("what problems of heat conduction in composite slabs")


def test_cranfield_documents_fields_and_documented_quirks():
    _, documents, _ = loaded("cranfield")
    by_id = {d.id: d for d in documents}
    first = by_id["1"]
    assert first.title == "experimental investigation of the aerodynamics of a wing in a slipstream ."
    assert first.text.startswith(first.title + " an experimental study")
    assert first.metadata == {"author": "brenckman,m.", "bib": "j. ae. scs. 25, 1958, 324."}
    assert by_id["471"].text == by_id["995"].text == ""  # empty in the source
    assert ("125", "995", 2) in qrels("cranfield")
    stray = by_id["240"]  # ".A"/".B" marker lines inside the abstract: content kept in the text
    assert "application to turbulent separations is made" in stray.text
    assert stray.metadata["author"] == "dean r. chapman"
    assert all("\n" not in d.text and "  " not in d.text for d in documents)


def test_cisi_unjudged_queries_are_kept_but_not_judged():
    corpus, documents, queries = loaded("cisi")
    judged = corpus.judged_queries()
    assert list(judged) == [q for q in queries if q in judged]
    assert {"36", "38", "112"} <= set(queries) - set(judged)
    assert queries["1"].startswith("What problems and concerns are there in making up descriptive titles?")
    assert queries["60"].startswith("The Combined Use of Bibliographic Coupling")  # .T then .W
    assert documents[0].metadata == {"author": "Comaromi, J.P."}
    assert any("; " in d.metadata["author"] for d in documents)  # several .A blocks: one per author


def test_chinese_collections_keep_their_text():
    _, cmrc_docs, cmrc_queries = loaded("cmrc2018")
    assert cmrc_docs[0].id == "DEV_0" and cmrc_docs[0].title == "战国无双3"
    assert cmrc_queries["DEV_0_QUERY_0"] == "《战国无双3》是由哪两个公司合作开发的？"
    assert cmrc_queries["TRIAL_20_QUERY_0"] == ""  # empty in the source, documented
    corpus, lecard_docs, lecard_queries = loaded("lecard-10q")
    assert lecard_docs[0] == Document("8", lecard_docs[0].text, "应国平交通肇事一案", {})
    assert lecard_docs[0].text.startswith("经审理查明")
    assert list(lecard_queries)[0] == "5156" and lecard_queries["5156"].startswith("2018年1月15日")
    pools = (corpus.path / "candidates.tsv").read_text(encoding="utf-8").split("\n")
    assert {line.split("\t")[1] for line in pools if line} == {d.id for d in lecard_docs}


def test_layout_files_one_level_deep_with_licences_and_readmes():
    root = corpora.ROOT
    for name in corpora.names():
        folder = root / name
        assert {p.name for p in folder.iterdir()} >= {"docs.jsonl.gz", "queries.jsonl", "qrels.trec", "meta.json", "README.md"}
        assert all(p.is_file() for p in folder.iterdir()), "package-data ships */* only: no sub-folders"
        assert gzip.open(folder / "docs.jsonl.gz").read(1) == b"{"
        header = (folder / "docs.jsonl.gz").read_bytes()[:10]
        assert header[4:8] == b"\0\0\0\0" and header[3] & 0x08 == 0  # mtime 0, no file name: reproducible
    assert "Attribution-ShareAlike 4.0" in (root / "cmrc2018" / "LICENCE").read_text(encoding="utf-8")
    assert "MIT License" in (root / "lecard-10q" / "LICENCE").read_text(encoding="utf-8")
    total = sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    assert total < 8_000_000, f"corpora/ is {total:,} bytes"


def test_readme_table_matches_meta():
    table = {}
    for line in (corpora.ROOT / "README.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 8 and cells[0].startswith("`"):
            table[cells[0].strip("`")] = cells
    assert sorted(table) == corpora.names()
    for name, cells in table.items():
        corpus = corpora.get(name)
        number = lambda s: int(s.replace(",", ""))  # noqa: E731
        queries, judged = re.fullmatch(r"([\d,]+) \(([\d,]+)\)", cells[3]).groups()
        assert (cells[1], number(cells[2]), number(queries), number(judged), number(cells[4])) == (
            corpus.language, corpus.num_docs, corpus.num_queries, corpus.num_judged_queries, corpus.num_judgments)


# --------------------------------------------------------------------------- the converter

CRAN_ALL = (
    ".I 1\r\n.T\r\nfirst title .\r\n.A\r\nsmith,j.\r\n.B\r\nj. ae. 1958.\r\n.W\r\nfirst title .\r\n"
    "  some   text\r\n.A\r\nstray line\r\n.I 2\r\n.T\r\n.A\r\n.B\r\n.W\r\n\r\n"
)
CRAN_QRY = ".I 001\r\n.W\r\nwhat is\r\nlift .\r\n.I 004\r\n.W\r\nheat ?\r\n"
CRANQREL = "1 1 2 \r\n1 2 -1 \r\n2 1 4 \r\n2 2 -1 \r\n"


def test_convert_cranfield_on_an_inline_fixture(tmp_path):
    (tmp_path / "cran.all.1400").write_bytes(CRAN_ALL.encode())
    (tmp_path / "cran.qry").write_bytes(CRAN_QRY.encode())
    (tmp_path / "cranqrel").write_bytes(CRANQREL.encode())
    result = convert.SPECS["cranfield"].convert(tmp_path)
    assert result.documents == [
        {"id": "1", "title": "first title .", "text": "first title . some text stray line", "author": "smith,j.",
         "bib": "j. ae. 1958."},
        {"id": "2", "title": "", "text": "", "author": "", "bib": ""},
    ]
    assert result.queries == [{"id": "1", "text": "what is lift .", "cran_qry_id": "001"},
                              {"id": "2", "text": "heat ?", "cran_qry_id": "004"}]
    assert result.qrels == [("1", "1", 3), ("1", "2", 0), ("2", "1", 1), ("2", "2", 0)]


def test_convert_cisi_on_an_inline_fixture(tmp_path):
    (tmp_path / "CISI.ALL").write_text(
        ".I 1\n.T \nA Title\n.A \nOne, A.\n.A\nTwo, B.\n.W\n   Body\ntext.\n.X\n1\t5\t1\n", encoding="ascii")
    (tmp_path / "CISI.QRY").write_text(".I 1\n.W\nplain question?\n.I 2\n.T\nPaper\n.A\nX, Y.\n.W\nabstract.\n.B\n(J 1980)\n",
                                       encoding="ascii")
    (tmp_path / "CISI.REL").write_text("     1     1\t0\t0.000000\n", encoding="ascii")
    result = convert.SPECS["cisi"].convert(tmp_path)
    assert result.documents == [{"id": "1", "title": "A Title", "text": "Body text.", "author": "One, A.; Two, B."}]
    assert result.queries == [{"id": "1", "text": "plain question?"}, {"id": "2", "text": "Paper abstract."}]
    assert result.qrels == [("1", "1", 1)]


def test_convert_writes_byte_identical_files_and_rejects_unknown_judged_ids(tmp_path):
    spec = convert.SPECS["cmrc2018"]
    converted = convert.Converted(
        documents=[{"id": "d1", "title": "标题", "text": "正文"}, {"id": "d2", "title": "", "text": ""}],
        queries=[{"id": "q1", "text": "问题"}, {"id": "q2", "text": "unjudged"}],
        qrels=[("q1", "d1", 1)],
    )
    first = convert.write("tiny", spec, converted, tmp_path / "a")
    second = convert.write("tiny", spec, converted, tmp_path / "b")
    for file in ("docs.jsonl.gz", "queries.jsonl", "qrels.trec", "meta.json"):
        assert (first / file).read_bytes() == (second / file).read_bytes()
    meta = json.loads((first / "meta.json").read_text(encoding="utf-8"))
    assert (meta["num_docs"], meta["num_queries"], meta["num_judged_queries"], meta["num_judgments"]) == (2, 2, 1, 1)
    assert (first / "qrels.trec").read_text() == "q1 0 d1 1\n"
    assert gzip.decompress((first / "docs.jsonl.gz").read_bytes()).decode().splitlines()[0] == (
        '{"id":"d1","title":"标题","text":"正文"}')
    bad = convert.Converted(converted.documents, converted.queries, [("q1", "d9", 1)])
    with pytest.raises(ValueError, match="unknown ids"):
        convert.write("tiny", spec, bad, tmp_path / "c")


def test_convert_main_rejects_unknown_names(tmp_path, capsys):
    with pytest.raises(SystemExit):
        convert.main([str(tmp_path), "nope", "--out", str(tmp_path)])
    assert "unknown collection 'nope'" in capsys.readouterr().err


def test_loader_rejects_another_format_version(tmp_path, monkeypatch):
    folder = tmp_path / "old"
    folder.mkdir()
    meta = json.loads((corpora.ROOT / "cisi" / "meta.json").read_text(encoding="utf-8"))
    (folder / "meta.json").write_text(json.dumps({**meta, "name": "old", "format_version": 0}), encoding="utf-8")
    monkeypatch.setattr(corpora, "ROOT", tmp_path)
    with pytest.raises(InputError, match="regenerate"):
        corpora.get("old")
