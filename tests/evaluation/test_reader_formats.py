"""Qrels and runs in the field's formats: detection from content with a warning where a guess is made,
explicit formats, and the writers."""
from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from bm25lab.engine.errors import InputError, InputWarning, ParameterError
from bm25lab.evaluation import read_qrels, read_run, write_run
from bm25lab.evaluation.readers import detect_qrels_format, detect_run_format

SMART = Path(__file__).resolve().parents[1] / "data" / "smart"


def detected(path: Path) -> tuple[str, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fmt = detect_qrels_format(path)
    return fmt, [str(w.message) for w in caught if issubclass(w.category, InputWarning)]


def test_smart_and_cranfield_qrels_are_recognised_and_said(tmp_path: Path) -> None:
    fmt, said = detected(SMART / "CISI.REL")
    assert fmt == "smart" and "--qrels-format trec" in said[0]
    assert set(read_qrels(SMART / "CISI.REL").to_dict()["1"].values()) == {1}
    fmt, said = detected(SMART / "cranqrel")
    assert fmt == "cranfield" and "label = 5 - grade" in said[0]
    cran = read_qrels(SMART / "cranqrel").to_dict()["1"]
    assert cran["184"] == 3 and cran["29"] == 3 and 0 in cran.values()  # grade 2 -> 3, -1 -> 0
    assert set(read_qrels(SMART / "cranqrel", format="beir").to_dict()["1"].values()) <= {-1, 1, 2, 3, 4}
    (tmp_path / "c.qrels").write_text("01 1410 0 0\n01 1572 0 0\n")  # CACM's qrels.text: ids lose their zeros
    assert read_qrels(tmp_path / "c.qrels").to_dict() == {"1": {"1410": 1, "1572": 1}}


def test_no_warning_for_unambiguous_files(tmp_path: Path) -> None:
    (tmp_path / "t.qrels").write_text("q1 0 d1 1\nq1 0 d2 0\n")
    (tmp_path / "b.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\n")
    (tmp_path / "r.json").write_text('{"q1": {"d1": 2, "d2": 0}}')
    assert detected(tmp_path / "t.qrels") == ("trec", [])
    assert detected(tmp_path / "b.tsv") == ("beir", [])
    assert detected(tmp_path / "r.json") == ("ranx", []) and read_qrels(tmp_path / "r.json").to_dict() == {
        "q1": {"d1": 2, "d2": 0}}


def test_runs_in_three_formats_round_trip(tmp_path: Path) -> None:
    run = {"q1": {"a": 3.0, "b": 2.5, "c": 2.5}, "q2": {"d": 1.0}}
    trec = read_run(_written(run, tmp_path / "r.trec", "trec")).to_dict()
    assert read_run(_written(run, tmp_path / "r.json", "ranx")).to_dict() == trec
    msmarco = read_run(_written(run, tmp_path / "r.tsv", "msmarco"))
    assert detect_run_format(tmp_path / "r.tsv") == "msmarco"
    assert [[d for d, _ in msmarco.ranked(q)] for q in ("q1", "q2")] == [list(trec["q1"]), list(trec["q2"])]
    with pytest.raises(ParameterError, match="unknown run format 'xml'"):
        write_run(run, tmp_path / "x", format="xml")


def _written(run: dict, path: Path, fmt: str) -> Path:
    write_run(run, path, format=fmt)
    return path


def test_wrong_files_are_named(tmp_path: Path) -> None:
    (tmp_path / "qrels.tsv").write_text("q1\td1\t1\nq1\td2\t1\n")
    with pytest.raises(InputError, match="rank 1 2 times.*is this a qrels file"):
        read_run(tmp_path / "qrels.tsv")
    (tmp_path / "q.trec").write_text("q1 0 d1 1\n")
    with pytest.raises(InputError, match="looks like TREC qrels"):
        read_run(tmp_path / "q.trec")
    (tmp_path / "bad.json").write_text('{"q1": [1, 2]}')
    with pytest.raises(InputError, match="bad.json: expected a JSON qrels object"):
        read_qrels(tmp_path / "bad.json")
    (tmp_path / "g.qrels").write_text("1 2 5\n1 3 -1\n")
    with pytest.raises(InputError, match="Cranfield grade 5"):
        read_qrels(tmp_path / "g.qrels", format="cranfield")


def test_every_qrels_format_gives_grades_and_integer_labels(tmp_path: Path) -> None:
    # issue 18's Qrels keep the grade as written (MAE, RMSE) beside the integer label the other measures read
    files = {
        "t.qrels": ("q1 0 d1 4.5\nq1 0 d2 0\nq1 0 d3 1e2\n", "trec"),
        "b.tsv": ("query-id\tcorpus-id\tscore\nq1\td1\t4.5\nq1\td2\t0\nq1\td3\t1e2\n", "beir"),
        "r.json": ('{"q1": {"d1": 4.5, "d2": 0, "d3": 100}}', "ranx"),
    }
    for name, (text, fmt) in files.items():
        (tmp_path / name).write_text(text)
        for rules, label_of_1e2 in ((9, 100), (10, 1 if fmt != "ranx" else 100)):  # 10.0 reads text with atol
            qrels = read_qrels(tmp_path / name, trec_eval=rules)
            assert detect_qrels_format(tmp_path / name) == fmt
            grades = dict(zip(qrels.doc_ids.to_pylist(), zip(qrels.grade.tolist(), qrels.label.tolist())))
            assert grades == {"d1": (4.5, 4), "d2": (0.0, 0), "d3": (100.0, label_of_1e2)}, (name, rules)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputWarning)
        smart = read_qrels(SMART / "CISI.REL", trec_eval=10)
        cran = read_qrels(SMART / "cranqrel", trec_eval=10)
    assert set(smart.grade.tolist()) == {1.0} and set(smart.label.tolist()) == {1}
    assert (cran.grade == cran.label).all() and set(cran.label.tolist()) == {0, 1, 2, 3, 4}
    (tmp_path / "g.qrels").write_text("1 2 1\n1 3 -1\n1 4 1.5\n")  # a Cranfield grade is one of its scale
    with pytest.raises(InputError, match="g.qrels:3: Cranfield grade 1.5"):
        read_qrels(tmp_path / "g.qrels", format="cranfield")


def test_run_lines_with_fields_after_the_tag_and_ranks_that_must_be_integers(tmp_path: Path) -> None:
    # trec_eval ignores what follows the tag (its own test run does) and names the run by the last tag
    (tmp_path / "r.run").write_text("q1 Q0 d1 1 2.5 first more junk\nq1 Q0 d2 2 1.5 last\n")
    assert detect_run_format(tmp_path / "r.run") == "trec"
    run = read_run(tmp_path / "r.run")
    assert run.name == "last" and run.to_dict() == {"q1": {"d1": 2.5, "d2": 1.5}}
    with pytest.raises(InputError, match="looks like a TREC run"):
        read_qrels(tmp_path / "r.run")
    (tmp_path / "m.tsv").write_text("q1\td1\t1\nq1\td2\t2.5\n")
    with pytest.raises(InputError, match="m.tsv:2: rank 2.5 is not an integer"):
        read_run(tmp_path / "m.tsv")
