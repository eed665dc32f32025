"""The Glasgow collections that do not use SMART's layout (TIME, NPL, LISA), indexed, run and evaluated
from their original files (real excerpts in tests/data/glasgow) with no conversion; each file's format
detected from its content and never mistaken for another one's."""
from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bm25lab.cli import app
from bm25lab.engine.errors import InputError
from bm25lab.engine.sources import detect_document_format, detect_query_format, read_documents, read_queries
from bm25lab.evaluation.readers import detect_qrels_format, read_qrels

runner = CliRunner()
DATA = Path(__file__).resolve().parents[1] / "data" / "glasgow"
SMART = DATA.parent / "smart"

TIME_QRELS = {"1": {"268", "288", "304", "308", "323", "326", "334"},
              "46": {"1", "20", "23", "32", "39", "47", "53", "54", "80", "93", "151", "157", "174", "202", "272",
                     "291", "294", "348"},
              "47": {"23", "47", "48", "53", "54", "56"}, "48": {"306"}}
NPL_QRELS = {"3": {"141", "148", "813", "1610", "2429", "3059", "3272", "3398", "3614", "3688", "3708", "4437",
                   "4710", "4725", "4833", "5476", "5662", "5856", "5976", "6351", "6885", "6974", "7086", "7177",
                   "7304", "7571", "8007", "8232", "8957", "9289", "10174", "10484", "10486"}}
LISA_QRELS = {"1": {"3392", "3396"}, "5": {"3401"}, "24": {"2410", "2949", "3398", "3452", "3972", "4391"}}
LISARJ_QRELS = {"1": {"3392", "3396"}, "2": {"2623", "4291"}, "3": {"1407", "1431", "3794", "3795", "3796"},
                "4": {"604", "3527", "4644", "5087", "5112", "5113", "5295"}, "5": {"3401"}}

# (collection, documents, queries, qrels, qrels format, the judgments written out by hand)
COLLECTIONS = [
    ("time", DATA / "time" / "TIME.ALL", DATA / "time" / "TIME.QUE", DATA / "time" / "TIME.REL", "time", TIME_QRELS),
    ("npl", DATA / "npl" / "doc-text", DATA / "npl" / "query-text", DATA / "npl" / "rlv-ass", "npl", NPL_QRELS),
    ("lisa", DATA / "lisa" / "LISA", DATA / "lisa" / "LISA.QUE", DATA / "lisa" / "LISA.REL", "lisa", LISA_QRELS),
]


def invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def ok(*args: object):
    result = invoke(*args)
    assert result.exit_code == 0, (args, result.output, result.stderr)
    assert "Traceback" not in result.stderr
    return result


def judgments(qrels) -> dict[str, set[str]]:
    return {qid: {doc for doc, label in docs.items() if label == 1} for qid, docs in qrels.to_dict().items()}


@pytest.mark.parametrize(("name", "docs", "queries", "qrels", "fmt", "expected"), COLLECTIONS,
                         ids=[c[0] for c in COLLECTIONS])
def test_index_run_evaluate_from_the_original_files(tmp_path: Path, name, docs, queries, qrels, fmt, expected):
    ok("index", docs, "--out", tmp_path / "idx", "--language", "en")
    ok("run", tmp_path / "idx", queries, "--out", tmp_path / "bm25.run", "-k", "10")
    run_qids = {line.split()[0] for line in (tmp_path / "bm25.run").read_text().splitlines()}
    with pytest.warns(Warning, match=f"read as {fmt.upper() if fmt != 'npl' else 'NPL'}"):
        read = read_qrels(qrels)
    assert judgments(read) == expected  # every pair in its place: a column mix-up cannot pass
    assert run_qids == set(read_queries(queries)) and run_qids & set(expected)  # ids line up (no leading zeros)
    result = ok("evaluate", qrels, tmp_path / "bm25.run", "-m", "P.5", "-m", "recall.10", "--format", "trec", "-q")
    assert "read as" in result.stderr
    per_query = {line.split()[1] for line in result.stdout.splitlines() if line.split()[1] != "all"}
    assert per_query == run_qids & set(expected)


def test_relevant_documents_come_first_where_the_excerpt_holds_them(tmp_path: Path) -> None:
    """The judged documents that the excerpts hold are found: TIME document 1 (the first, *TEXT 017) for
    query 46, NPL 141 for query 3, LISA 3398 for query 24 (so the ids of documents and qrels agree)."""
    for name, docs, queries, qrels, qid, doc in [("time", *COLLECTIONS[0][1:4], "46", "1"),
                                                 ("npl", *COLLECTIONS[1][1:4], "3", "141"),
                                                 ("lisa", *COLLECTIONS[2][1:4], "24", "3398")]:
        ok("index", docs, "--out", tmp_path / name, "--language", "en")
        ok("run", tmp_path / name, queries, "--out", tmp_path / f"{name}.run", "-k", "10")
        top = [line.split()[2] for line in (tmp_path / f"{name}.run").read_text().splitlines()
               if line.split()[0] == qid]
        assert top[0] == doc, (name, top)


def test_time_documents_are_numbered_by_position_as_time_rel_numbers_them() -> None:
    docs = list(read_documents(DATA / "time" / "TIME.ALL"))
    assert [d.id for d in docs] == ["1", "2"]
    assert [d.metadata["text_number"] for d in docs] == ["017", "018"]
    assert docs[0].text.startswith("THE ALLIES AFTER NASSAU") and docs[1].text.endswith("FOOD PRODUCTION .")


def test_lisa_folder_is_one_corpus_in_name_order_and_titles_split_at_the_blank_line() -> None:
    docs = list(read_documents(DATA / "lisa" / "LISA"))
    assert [d.id for d in docs] == ["1", "2", "3391", "3392", "3396", "3397", "3398", "3401"]
    assert docs[1].title == "THE LINGERING FRAGRANCE: PROCEEDINGS OF THE XXIV ALL INDIA LIBRARY CONFERENCE, BANGALORE."
    assert docs[5].title == "PROBLEMS IN THE SIMULATION OF BIBLIOGRAPHIC RETRIEVAL SYSTEMS."  # a line of spaces
    assert docs[5].text.startswith("PRESENTS A FORMAL PROBABILISTIC")


DOCUMENT_FILES = {DATA / "time" / "TIME.ALL": "time", DATA / "npl" / "doc-text": "npl", DATA / "lisa" / "LISA": "lisa",
                  DATA / "lisa" / "LISA" / "LISA3.001": "lisa", SMART / "CISI.ALL": "smart",
                  SMART / "cran.all.1400": "smart"}
QUERY_FILES = {DATA / "time" / "TIME.QUE": "time", DATA / "npl" / "query-text": "npl", DATA / "lisa" / "LISA.QUE": "lisa",
               SMART / "CISI.QRY": "smart"}
QRELS_FILES = {DATA / "time" / "TIME.REL": "time", DATA / "npl" / "rlv-ass": "npl", DATA / "lisa" / "LISA.REL": "lisa",
               DATA / "lisa" / "lisarj.num": "lisarj", SMART / "CISI.REL": "smart", SMART / "cranqrel": "cranfield"}


@pytest.mark.parametrize(("path", "fmt"), DOCUMENT_FILES.items(), ids=lambda v: getattr(v, "name", v))
def test_document_formats_are_detected(path: Path, fmt: str) -> None:
    assert detect_document_format(path) == fmt


@pytest.mark.parametrize(("path", "fmt"), QUERY_FILES.items(), ids=lambda v: getattr(v, "name", v))
def test_query_formats_are_detected(path: Path, fmt: str) -> None:
    assert detect_query_format(path) == fmt


@pytest.mark.parametrize(("path", "fmt"), QRELS_FILES.items(), ids=lambda v: getattr(v, "name", v))
def test_qrels_formats_are_detected_with_a_note(path: Path, fmt: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert detect_qrels_format(path) == fmt
    assert any("read as" in str(w.message) for w in caught)


def test_med_rel_stays_trec_and_trec_qrels_are_not_taken_for_glasgow_layouts(tmp_path: Path) -> None:
    """MED.REL's ``5 0 1 1`` lines are TREC qrels (document in the third column), and all-number TREC
    qrels never turn into TIME.REL or lisarj.num records."""
    med = tmp_path / "MED.REL"
    med.write_text("5 0 1 1\n5 0 2 1\n5 0 4 1\n5 0 5 1\n6 0 7 1\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert detect_qrels_format(med) == "trec"
    assert judgments(read_qrels(med)) == {"5": {"1", "2", "4", "5"}, "6": {"7"}}


def test_a_forced_format_reads_the_file_its_way_or_fails(tmp_path: Path) -> None:
    assert judgments(read_qrels(DATA / "lisa" / "lisarj.num", format="lisarj")) == LISARJ_QRELS
    with pytest.raises(InputError, match="count"):  # lisarj.num read as TIME.REL would take counts for documents
        read_qrels(DATA / "time" / "TIME.REL", format="lisarj")
    with pytest.raises(InputError):
        read_qrels(DATA / "npl" / "rlv-ass", format="lisa")
    with pytest.raises(InputError):
        read_qrels(DATA / "lisa" / "LISA.REL", format="time")
    assert [d.id for d in read_documents(DATA / "npl" / "doc-text", format="npl")][-1] == "141"
    with pytest.raises(InputError):
        list(read_documents(DATA / "time" / "TIME.ALL", format="lisa"))
    with pytest.raises(InputError):
        read_queries(DATA / "lisa" / "LISA.QUE", format="npl")


def test_damaged_lisa_rel_is_an_error_naming_the_line(tmp_path: Path) -> None:
    """The damage of the public LISA.REL copy (query 21's list cut by another record's count line)."""
    bad = tmp_path / "LISA.REL"
    bad.write_text("Query 21\n21 Relevant Refs:\n434 882 1429 1894 1899 2416 2934 2947 3405 3407 3900 3902 3903 "
                   "3942 3943\n1 Relevant Refs:\n3384 -1\n\nQuery 35\n7 Relevant Refs:\n738 1217 2246 2284 2772 "
                   "3276 3799 -1\n")
    with pytest.raises(InputError, match="announces 21 relevant refs but its list is cut after 15") as error:
        read_qrels(bad)
    assert error.value.line == 4
    result = invoke("evaluate", bad, DATA / "lisa" / "LISA.REL")
    assert result.exit_code == 1 and "LISA.REL:4:" in result.stderr and "Traceback" not in result.stderr


def test_a_folder_of_mixed_files_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    shutil.copy(DATA / "lisa" / "LISA" / "LISA0.001", folder)
    shutil.copy(DATA / "time" / "TIME.ALL", folder)
    with pytest.raises(InputError, match="not all of one format"):
        detect_document_format(folder)
    result = invoke("index", folder, "--out", tmp_path / "idx")
    assert result.exit_code == 1 and "not all of one format" in result.stderr and not (tmp_path / "idx").exists()


@pytest.mark.parametrize("text", ["*TEXT 017 01/04/63 PAGE 020\nA\n*STOP\nMORE\n", "JUNK\n*TEXT 017\nA\n"])
def test_bad_time_files_are_errors(tmp_path: Path, text: str) -> None:
    path = tmp_path / "TIME.ALL"
    path.write_text(text)
    with pytest.raises(InputError):
        list(read_documents(path, format="time"))
