"""Real data in, the field's conventions out, from the command line: SMART collections in their original
files (samples in tests/data/smart), formats detected from content and always choosable, bundled
collections' queries and qrels by name, no silent table, and one line with exit 1 for every missing file."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bm25lab.cli import app

runner = CliRunner()
SMART = Path(__file__).resolve().parents[1] / "data" / "smart"


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def ok(*args: str):
    result = invoke(*args)
    assert result.exit_code == 0, (args, result.output, result.stderr)
    assert "Traceback" not in result.stderr
    return result


def error_line(result, code: int = 1) -> str:
    assert result.exit_code == code, (result.output, result.stderr)
    if code == 2 and "Usage:" in result.stderr:  # typer's own check of a choice: its usage line and the error
        assert "Invalid value" in result.stderr and "Traceback" not in result.stderr
        return result.stderr.strip().splitlines()[-1]
    lines = [line for line in result.stderr.strip().splitlines() if not line.startswith("bm25lab: note:")]
    assert len(lines) == 1 and lines[0].startswith("bm25lab: error: "), result.stderr
    assert "Usage" not in result.output + result.stderr
    return lines[0]


@pytest.fixture(scope="module")
def cran(tmp_path_factory) -> Path:
    """The Cranfield sample indexed from its SMART file, as it comes."""
    root = tmp_path_factory.mktemp("smart")
    result = ok("index", SMART / "cran.all.1400", "--out", root / "idx", "--language", "en")
    assert "indexed 60 documents" in result.stdout
    return root


def test_smart_documents_queries_and_qrels_need_no_conversion(cran: Path) -> None:
    ok("run", cran / "idx", SMART / "cran.qry", "--query-ids", "position", "--out", cran / "bm25.run", "-k", "50")
    assert {line.split()[0] for line in (cran / "bm25.run").read_text().splitlines()} == set(map(str, range(1, 9)))
    result = ok("evaluate", SMART / "cranqrel", cran / "bm25.run", "-m", "P.5,10", "-m", "ndcg_cut.10", "--format",
                "trec")
    assert "read as Cranfield qrels" in result.stderr  # the guess is said, with the way to choose otherwise
    names = [line.split("\t")[0].strip() for line in result.stdout.splitlines()]
    assert names == ["runid", "num_q", "P_5", "P_10", "ndcg_cut_10"]  # trec_eval's names, as it prints them


def test_ids_as_given_against_qrels_numbering_by_position_is_noted(cran: Path) -> None:
    ok("run", cran / "idx", SMART / "cran.qry", "--out", cran / "given.run", "-k", "50")
    result = invoke("evaluate", SMART / "cranqrel", cran / "given.run")
    assert "--query-ids position" in result.stderr  # a plausible table, but the user is told why it is wrong


def test_cisi_rel_read_as_trec_is_an_error_not_a_table_of_zeros(tmp_path: Path) -> None:
    ok("index", SMART / "CISI.ALL", "--out", tmp_path / "idx", "--language", "en")
    ok("run", tmp_path / "idx", SMART / "CISI.QRY", "--out", tmp_path / "cisi.run")
    line = error_line(invoke("evaluate", SMART / "CISI.REL", tmp_path / "cisi.run", "--qrels-format", "trec"))
    assert "no relevant judgment" in line and "--qrels-format smart" in line
    result = ok("evaluate", SMART / "CISI.REL", tmp_path / "cisi.run", "-m", "P@10")
    assert "read as SMART qrels" in result.stderr and "0.0000" not in result.stdout


def test_a_tsv_named_docs_is_detected_and_formats_are_choosable(tmp_path: Path) -> None:
    (tmp_path / "corpus.docs").write_text("a\tboundary layer\nb\theat transfer\n", encoding="utf-8")
    assert "indexed 2 documents" in ok("index", tmp_path / "corpus.docs", "--out", tmp_path / "i1").stdout
    (tmp_path / "x.data").write_text(json.dumps({"pid": "p1", "head": "boundary", "body": "layer flow",
                                                 "text": "ignored"}) + "\n", encoding="utf-8")
    ok("index", tmp_path / "x.data", "--out", tmp_path / "i2", "--format", "jsonl", "--id-field", "pid",
       "--text-fields", "head,body")
    hits = json.loads(ok("search", tmp_path / "i2", "layer", "--format", "json").stdout)
    assert hits[0]["doc_id"] == "p1" and not ok("search", tmp_path / "i2", "ignored", "--format", "json").stdout.strip(
        "[]\n")
    assert "no field 'nope'" in error_line(invoke("index", tmp_path / "x.data", "--out", tmp_path / "i3", "--format",
                                                  "jsonl", "--id-field", "pid", "--text-fields", "nope"))
    error_line(invoke("index", tmp_path / "x.data", "--out", tmp_path / "i4", "--format", "xml"), code=2)


def test_duplicates_policy(tmp_path: Path) -> None:
    rows = [{"id": "a", "text": "first alpha"}, {"id": "b", "text": "beta"}, {"id": "a", "text": "second gamma"}]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert "duplicate document id 'a'" in error_line(invoke("index", tmp_path / "d.jsonl", "--out", tmp_path / "e"))
    assert not (tmp_path / "e").exists()
    for policy, present, absent in (("first", "alpha", "gamma"), ("last", "gamma", "alpha")):
        result = ok("index", tmp_path / "d.jsonl", "--out", tmp_path / policy, "--duplicates", policy)
        assert "indexed 2 documents" in result.stdout and "1 documents repeated an id" in result.stderr
        assert json.loads(ok("search", tmp_path / policy, present, "--format", "json").stdout)[0]["doc_id"] == "a"
        assert json.loads(ok("search", tmp_path / policy, absent, "--format", "json").stdout) == []
    ok("add", tmp_path / "first", tmp_path / "d.jsonl", "--duplicates", "last")


def test_bundled_queries_and_qrels_by_name(tmp_path: Path) -> None:
    ok("index", "cisi", "--out", tmp_path / "idx")
    ok("run", tmp_path / "idx", "cisi", "--out", tmp_path / "cisi.run", "-k", "100")
    result = ok("evaluate", "cisi", tmp_path / "cisi.run", "-m", "AP", "--format", "json")
    assert json.loads(result.stdout)["queries"] == 76
    for fmt in ("msmarco", "ranx"):
        ok("run", tmp_path / "idx", "cisi", "--out", tmp_path / f"cisi.{fmt}", "-k", "100", "--run-format", fmt)
        again = ok("evaluate", "cisi", tmp_path / f"cisi.{fmt}", "-m", "AP", "--format", "json")
        assert json.loads(again.stdout)["mean"] == json.loads(result.stdout)["mean"]


def test_no_silent_table_when_run_and_qrels_share_no_query(tmp_path: Path) -> None:
    (tmp_path / "q.trec").write_text("1 0 a 1\n", encoding="utf-8")
    (tmp_path / "r.run").write_text("x Q0 a 1 1.0 t\n", encoding="utf-8")
    assert "share no query" in error_line(invoke("evaluate", tmp_path / "q.trec", tmp_path / "r.run"))
    assert "share no query" in error_line(invoke("evaluate", tmp_path / "q.trec", tmp_path / "r.run", "--complete"))
    assert "qrels come first" in error_line(invoke("evaluate", tmp_path / "r.run", tmp_path / "q.trec"))


@pytest.mark.parametrize(
    "args",
    [
        ["run", "IDX", "missing.tsv", "--out", "x.run"],
        ["evaluate", "missing.qrels", "RUN"],
        ["evaluate", "QRELS", "missing.run"],
        ["compare", "QRELS", "RUN", "missing.run"],
        ["tune", "IDX", "missing.tsv", "QRELS"],
        ["tune", "IDX", "QUERIES", "missing.qrels"],
        ["index", "missing.jsonl", "--out", "new-idx"],
        ["index", "QUERIES", "--out", "new-idx", "--stopwords", "missing.txt"],
        ["add", "IDX", "missing.jsonl"],
    ],
)
def test_a_missing_file_is_one_line_and_exit_1(cran: Path, tmp_path: Path, args: list[str]) -> None:
    shutil.copy(SMART / "cran.qry", tmp_path / "q.qry")
    (tmp_path / "q.trec").write_text("1 0 1 1\n", encoding="utf-8")
    (tmp_path / "r.run").write_text("1 Q0 1 1 1.0 t\n", encoding="utf-8")
    shutil.copytree(cran / "idx", tmp_path / "idx")
    names = {"IDX": tmp_path / "idx", "QUERIES": tmp_path / "q.qry", "QRELS": tmp_path / "q.trec",
             "RUN": tmp_path / "r.run"}
    line = error_line(invoke(*[str(names.get(a, tmp_path / a if "missing" in a or a.endswith(".run") else a))
                               for a in args]))
    assert "missing" in line


def test_choices_are_checked(cran: Path) -> None:
    error_line(invoke("info", cran / "idx", "--format", "xml"), code=2)
    error_line(invoke("evaluate", SMART / "cranqrel", cran / "bm25.run", "--qrels-format", "nope"), code=2)
    error_line(invoke("evaluate", SMART / "cranqrel", cran / "bm25.run", "--plot", cran / "pr.jpg"), code=2)
    error_line(invoke("run", cran / "idx", SMART / "cran.qry", "--out", cran / "x", "--topic-field", "body"), code=2)


def test_trec_eval_options_and_nicknames(cran: Path) -> None:
    ok("run", cran / "idx", SMART / "cran.qry", "--query-ids", "position", "--out", cran / "all.run")
    every = ok("evaluate", SMART / "cranqrel", cran / "all.run", "-m", "all_trec", "--format", "trec", "-q")
    assert "not computed by bm25lab" not in every.stderr  # issue 18 computes gm_map and every other one
    lines = [line.split("\t") for line in every.stdout.splitlines()]
    assert {q for _, q, _ in lines} == {"all", *map(str, range(1, 9))}  # -q: per query too
    assert {m.strip() for m, _, _ in lines} >= {"map", "P_5", "P_1000", "ndcg_cut_20", "success_1", "set_F", "gm_map",
                                                "infAP", "rbp", "Rprec_mult_0.20", "unj_20"}  # rbp: trec_eval's name
    deep = json.loads(ok("evaluate", SMART / "cranqrel", cran / "all.run", "-M", "5", "-m", "num_ret", "--format",
                         "json").stdout)
    assert all(v["num_ret"] == 5.0 for v in deep["per_query"].values())
    for spelled in ("--depth", "--max-docs"):  # one option, trec_eval's -M, under both names the branches documented
        same = ok("evaluate", SMART / "cranqrel", cran / "all.run", spelled, "5", "-m", "num_ret", "--format", "json")
        assert json.loads(same.stdout) == deep


def test_measures_lists_the_registry() -> None:
    result = ok("measures")
    for name in ("Hits@k", "Success@k", "Judged@k", "nDCG", "all_trec", "P(rel=2)@5"):
        assert name in result.stdout
    rows = json.loads(ok("measures", "--format", "json").stdout)["measures"]
    assert {"name": "Hits", "kind": "count"}.items() <= next(r for r in rows if r["name"] == "Hits").items()


def test_tune_warns_when_the_best_point_is_on_the_grid_edge(cran: Path) -> None:
    result = ok("tune", cran / "idx", SMART / "cran.qry", SMART / "cranqrel", "--query-ids", "position",
                "--k1-grid", "0.1,0.2", "--b-grid", "0.3,0.4", "--folds", "2")
    assert "extend --k1-grid" in result.stderr or "extend --b-grid" in result.stderr
