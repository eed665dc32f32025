"""Renderers: trec_eval text, JSON, CSV and rich tables of evaluation results."""
from __future__ import annotations

import csv
import io
import json
import math

import pytest
from rich.console import Console
from rich.table import Table

from bm25lab.evaluation import evaluate
from bm25lab.evaluation.report import notes, to_csv, to_json, to_table, to_tables, to_trec

QRELS = {"1": {"a": 1, "b": 0}, "2": {"c": 2, "d": 0}, "3": {"e": 1}}
RUN = {"1": {"a": 2.0, "b": 1.0}, "2": {"d": 2.0, "c": 1.0, "x": 0.5}}  # query 3 missing
MEASURES = ["AP", "nDCG@10", "num_ret", "AUC"]


@pytest.fixture(scope="module")
def result():
    return evaluate(QRELS, RUN, MEASURES)


def rendered(table: Table) -> str:
    console = Console(record=True, width=200, file=io.StringIO())
    console.print(table)
    return console.export_text()


def test_trec_text_follows_trec_evals_layout(result):
    text = to_trec({"bm25": result}, per_query=True)
    lines = text.splitlines()
    runid = lines.index(f"{'runid':<22}\tall\tbm25")  # after the queries' lines, before num_q: trec_eval's place
    assert lines[runid + 1] == f"{'num_q':<22}\tall\t2" and all("\tall\t" in line for line in lines[runid:])
    assert all("\tall\t" not in line for line in lines[:runid])
    # trec_eval's order (num_ret, map, ..., ndcg_cut), then bm25lab's own measures as given
    assert [line.split()[0] for line in lines[:runid] if "\t1\t" in line] == ["num_ret", "AP", "nDCG@10", "AUC"]
    assert f"{'AP':<22}\t1\t1.0000" in lines and f"{'AP':<22}\t2\t0.5000" in lines
    assert f"{'num_ret':<22}\t2\t3" in lines  # counts print as integers
    assert f"{'num_q':<22}\tall\t2" in lines
    assert f"{'AP':<22}\tall\t0.7500" in lines
    assert f"{'num_ret':<22}\tall\t5" in lines  # trec_eval sums the counts
    assert all(len(line.split("\t")) == 3 for line in lines)
    summary = to_trec(result).splitlines()
    assert not any("\t1\t" in line for line in summary) and f"{'AUC':<22}\tall\t0.5000" in summary


def test_json_has_the_documented_shape(result):
    one = json.loads(to_json({"bm25": result}))
    assert one["run"] == "bm25" and one["queries"] == 2
    assert one["mean"] == pytest.approx({"AP": 0.75, "nDCG@10": result.mean["nDCG@10"], "num_ret": 5, "AUC": 0.5})
    assert one["per_query"]["2"]["AP"] == 0.5
    two = json.loads(to_json([("a", result), ("b", result)], per_query=False))
    assert [d["run"] for d in two] == ["a", "b"] and "per_query" not in two[0]
    empty = evaluate(QRELS, {}, ["AP"], strict=False)
    assert json.loads(to_json(empty))["mean"] == {"AP": None}  # NaN becomes null, the JSON stays valid


def test_nan_is_never_printed_as_a_mean():
    undefined = evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["AUC", "AP"])  # AUC needs a judged non-relevant
    assert math.isnan(undefined.mean["AUC"])
    for text in (rendered(to_table(undefined)), to_trec(undefined), to_csv(undefined)):
        assert "nan" not in text.lower()
    assert "AUC is undefined for every averaged query" in " ".join(notes(undefined))


def test_csv_rows_parse_back(result):
    rows = list(csv.DictReader(io.StringIO(to_csv({"bm25": result}))))
    assert rows[0].keys() == {"run", "query", "measure", "value"}
    per_query = {(r["query"], r["measure"]): float(r["value"]) for r in rows if r["query"] != "all"}
    assert per_query[("2", "AP")] == 0.5 and ("1", "AUC") in per_query
    means = {r["measure"]: float(r["value"]) for r in rows if r["query"] == "all"}
    assert means == pytest.approx(result.mean)


def test_tables_are_rich_tables(result):
    table = to_table({"bm25": result})
    assert isinstance(table, Table)
    text = rendered(table)
    assert "bm25" in text and "0.7500" in text and "2 of 3 │" in text  # averaged of judged
    assert "--complete averages all 3" in " ".join(text.split())
    tables = to_tables([("bm25", result)], per_query=True)
    assert len(tables) == 2 and all(isinstance(t, Table) for t in tables)
    per_query = rendered(tables[0])
    assert "0.5000" in per_query and "all" in per_query and "2 of 3 queries" in per_query
    complete = rendered(to_table(evaluate(QRELS, RUN, MEASURES, complete=True, rel=2)))
    assert "3, complete, relevant >= 2" in complete and "over every judged query (3)" in " ".join(complete.split())


def test_notes_say_what_was_left_out(result):
    assert notes(result) == ["1 judged queries missing from the run, not averaged (complete would score them 0): 3"]
    complete = evaluate(QRELS, RUN, MEASURES, complete=True)
    lines = notes(complete)
    assert lines[0].startswith("1 judged queries missing from the run, scored 0 (complete): 3")
    assert lines[1].startswith("AUC undefined for 1 queries") and lines[1].endswith(": 3")


def test_a_single_result_is_named_by_its_run(tmp_path, result):
    from bm25lab.evaluation import read_qrels, read_run, write_run

    write_run(RUN, tmp_path / "r.trec", tag="tagged")
    (tmp_path / "q.trec").write_text("".join(f"{q} 0 {d} {g}\n" for q, j in QRELS.items() for d, g in j.items()))
    named = evaluate(read_qrels(tmp_path / "q.trec"), read_run(tmp_path / "r.trec"), ["AP"])
    assert json.loads(to_json(named))["run"] == "tagged"
    assert to_trec(named).splitlines()[0] == f"{'runid':<22}\tall\ttagged"


def test_notes_of_text_measures_and_of_trec_eval_10s_missing_queries():
    # relstring has no mean by nature (text): no "undefined for every averaged query" note for it
    assert not any("relstring" in line for line in notes(evaluate(QRELS, RUN, ["relstring", "AP"])))
    # under trec_eval 10's rules -c evaluates a missing query as a ranking of one unjudged document
    ten = notes(evaluate(QRELS, RUN, ["AP"], complete=True, trec_eval=10))
    assert ten[0] == ("1 judged queries missing from the run, evaluated as a ranking of one unjudged document "
                      "(complete, trec_eval 10 rules): 3")


def test_counts_are_summed_in_every_output() -> None:
    # issue 28: the counts were averaged in the table, JSON and CSV, summed in the trec layout and in
    # EvaluationResult.summary; MEASURES.md says summed (as trec_eval's all line): one rule, everywhere
    counts = ["num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret", "TP", "FP", "FN"]
    result = evaluate(QRELS, RUN, ["AP", *counts])
    sums = {m: math.fsum(values[m] for values in result.per_query.values()) for m in counts}
    assert sums == {"num_ret": 5, "num_rel": 2, "num_rel_ret": 2, "num_nonrel_judged_ret": 2, "TP": 2, "FP": 3, "FN": 0}
    assert {m: result.mean[m] for m in counts} == sums == {m: result.summary[m] for m in counts}
    assert json.loads(to_json(result))["mean"] == {**{m: float(v) for m, v in sums.items()}, "AP": 0.75}
    rows = {row["measure"]: row["value"] for row in csv.DictReader(io.StringIO(to_csv(result))) if row["query"] == "all"}
    assert {m: float(rows[m]) for m in counts} == sums
    trec = {line.split("\t")[0].strip(): line.split("\t")[2] for line in to_trec(result).splitlines()}
    assert {m: float(trec[m]) for m in counts} == sums
    table = rendered(to_table(result))
    assert "│  5.0000 │" in table and "2.5000" not in table  # num_ret: 5 = 2 + 3, not their mean

