"""Issue 18 through the command line: the articles' examples, trec_eval 10.0's own test suite and
generated runs, each value as `bm25lab evaluate` (or `link-prediction`) prints it."""
from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bm25lab.cli import app

runner = CliRunner()
GOLDEN = Path(__file__).parents[1] / "evaluation" / "golden" / "trec_eval_10"
RENAMED = {"rbp": "RBP_graded"}


def invoke(*args: str):
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.stdout


def write(folder: Path, name: str, lines: list[str]) -> Path:
    path = folder / name
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def ranking(folder: Path, name: str, qid: str, scores: dict[str, float]) -> Path:
    return write(folder, name, [f"{qid} Q0 {d} {i} {s!r} t" for i, (d, s) in enumerate(scores.items(), 1)])


def per_query_json(*args: str) -> dict:
    return json.loads(invoke("evaluate", *args, "--format", "json"))["per_query"]


# ---------------------------------------------------------------------------------------------
# The articles' examples


def test_articles_examples_through_the_cli(tmp_path):
    # 000: tied scores -> AUC 0.78 (scikit-learn), not 0.80
    labels = [0, 1, 1, 0, 1, 0, 0, 1, 1, 0]
    scores = [0.9, 0.8, 0.5, 0.4, 0.8, 0.2, 0.1, 0.9, 0.3, 0.0]
    qrels = write(tmp_path, "ties.qrels", [f"q 0 d{i} {y}" for i, y in enumerate(labels)])
    run = ranking(tmp_path, "ties.run", "q", {f"d{i}": s for i, s in enumerate(scores)})
    assert per_query_json(qrels, run, "-m", "AUC")["q"]["AUC"] == pytest.approx(0.78, abs=1e-12)

    # 002: a rating of 4.5, predicted 1.2 and 4.3: MAE 1.75, RMSE 2.3377
    qrels = write(tmp_path, "ratings.qrels", ["u 0 i1 4.5", "u 0 i2 4.5"])
    run = ranking(tmp_path, "ratings.run", "u", {"i1": 1.2, "i2": 4.3})
    got = per_query_json(qrels, run, "-m", "MAE", "-m", "RMSE")["u"]
    assert got["MAE"] == pytest.approx(1.75, abs=1e-12) and round(got["RMSE"], 4) == 2.3377
    run = ranking(tmp_path, "ratings.run", "u", {"i1": 1.2, "i2": 4.3, "i3": 3.5})  # i3 unrated
    got = per_query_json(qrels, run, "-m", "MAE", "--missing-ratings", "mean")["u"]
    assert got["MAE"] == pytest.approx((3.3 + 0.2 + 1.0) / 3, abs=1e-12)

    # 001: DCG example, IDCG 3.7619 (the article prints 7.170); AP over retrieved relevant 0.65
    qrels = write(tmp_path, "dcg.qrels", ["q 0 d1 0", "q 0 d2 1", "q 0 d3 2", "q 0 d4 2"])
    run = ranking(tmp_path, "dcg.run", "q", {"d3": 4.0, "d2": 3.0, "d4": 2.0, "d1": 1.0})
    got = per_query_json(qrels, run, "-m", "IDCG", "-m", "nDCG", "-m", "IDCG_exp")["q"]
    assert (round(got["IDCG"], 4), round(got["nDCG"], 4), round(got["IDCG_exp"], 4)) == (3.7619, 0.9652, 5.3928)
    relevant = (1, 2, 5, 10, 20)
    qrels = write(tmp_path, "ap.qrels", [f"q 0 d{i} {int(i in relevant)}" for i in range(1, 21)] + ["q 0 gone 1"])
    run = ranking(tmp_path, "ap.run", "q", {f"d{i}": 100.0 - i for i in range(1, 21)})
    got = per_query_json(qrels, run, "-m", "AP", "-m", "AP_relret")["q"]
    assert got == {"AP": pytest.approx(3.25 / 6, abs=1e-12), "AP_relret": pytest.approx(0.65, abs=1e-12)}

    # 003: the most relevant document (grade 3) at rank 3
    qrels = write(tmp_path, "best.qrels", ["q 0 a 1", "q 0 b 0", "q 0 c 3", "q 0 d 2"])
    run = ranking(tmp_path, "best.run", "q", {"a": 4.0, "b": 3.0, "c": 2.0, "d": 1.0})
    assert per_query_json(qrels, run, "-m", "RR_max")["q"]["RR_max"] == pytest.approx(1 / 3, abs=1e-12)


def test_confusion_measures_take_the_collection_size_from_an_index(tmp_path):
    # 001: 10 documents, d1-d4 relevant, d3-d7 retrieved: TP 2, FP 3, FN 2, TN 3, accuracy 0.5, FPR 0.5
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": f"d{i}", "text": f"word{i} common"}) + "\n" for i in range(1, 11)))
    invoke("index", docs, "--out", tmp_path / "idx")
    qrels = write(tmp_path, "q.qrels", [f"q 0 d{i} {int(i <= 4)}" for i in range(1, 11)])
    run = ranking(tmp_path, "r.run", "q", {f"d{i}": 10.0 - i for i in range(3, 8)})
    names = ["TP", "FP", "FN", "TN", "accuracy", "FPR", "specificity"]
    args = [qrels, run, *[a for n in names for a in ("-m", n)]]
    from_index = per_query_json(*args, "--index", tmp_path / "idx")["q"]
    assert [from_index[n] for n in names] == [2, 3, 2, 3, 0.5, 0.5, 0.5]
    assert per_query_json(*args, "-N", "10")["q"] == from_index
    failed = runner.invoke(app, ["evaluate", str(qrels), str(run), "-m", "TN"])
    assert failed.exit_code == 2 and "needs the number of documents in the collection" in failed.stderr
    plot = tmp_path / "roc.png"
    assert runner.invoke(app, ["evaluate", str(qrels), str(run), "--plot-roc", str(plot)]).exit_code == 0
    assert plot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_link_prediction_command(tmp_path):
    ranks = write(tmp_path, "ranks.txt", ["# head relation tail rank", "Jack born_in Italy 2", "John born_in Ireland 1"])
    got = json.loads(invoke("link-prediction", ranks, "--format", "json"))
    assert got == {"positives": 2, "MR": 1.5, "MRR": 0.75, "Hits@1": 0.5, "Hits@3": 1.0, "Hits@10": 1.0}
    assert "Hits@3" in invoke("link-prediction", ranks, "-k", "3")
    bad = runner.invoke(app, ["link-prediction", str(write(tmp_path, "bad.txt", ["x 0"]))])
    assert bad.exit_code == 1 and bad.stderr.strip() == f"bm25lab: error: {tmp_path / 'bad.txt'}:1: rank '0' is not a number >= 1"


def test_eleven_point_average_under_both_rule_sets(tmp_path):
    # relevant, non-relevant, relevant, non-relevant, relevant; R = 3
    qrels = write(tmp_path, "q.qrels", [f"q 0 d{i} {y}" for i, y in enumerate([1, 0, 1, 0, 1])])
    run = ranking(tmp_path, "r.run", "q", {f"d{i}": 5.0 - i for i in range(5)})
    nine = invoke("evaluate", qrels, run, "-m", "11pt_avg", "--format", "trec")
    ten = invoke("evaluate", qrels, run, "-m", "11pt_avg", "--format", "trec", "--trec-eval", "10")
    assert f"{'11pt_avg':<22}\tall\t0.7697" in nine.splitlines() and f"{'11pt_avg':<22}\tall\t0.8061" in ten.splitlines()


# ---------------------------------------------------------------------------------------------
# trec_eval 10.0's own test suite and generated runs, through `evaluate --trec-eval 10`


def parse(text: str) -> dict[tuple[str, str], str]:
    return {(n.strip(), q): v for n, q, v in (line.split("\t") for line in text.splitlines())}


QUICKTEST = {
    "out.test.aq": ("qrels.test", "results.test", ["-q"]),
    "out.test.aqc": ("qrels.test", "results.trunc", ["-q", "-c"]),
    "out.test.aqcM": ("qrels.test", "results.trunc", ["-q", "-c", "-M", "100"]),
    "out.test.aql": ("qrels.rel_level", "results.test", ["-q", "-l", "2"]),
    "out.test.meas_params": ("qrels.test", "results.test", ["-q"]),
}


@pytest.mark.parametrize("case", list(QUICKTEST))
def test_trec_eval_quicktest_through_the_cli(case):
    qrels, run, flags = QUICKTEST[case]
    expected = parse((GOLDEN / "quicktest" / case).read_text())
    names = list(dict.fromkeys(n for n, _ in expected if n not in ("runid", "num_q")))
    measures = [a for n in names for a in ("-m", RENAMED.get(n, n))]
    out = invoke("evaluate", GOLDEN / "quicktest" / qrels, GOLDEN / "quicktest" / run, *flags, *measures,
                 "--trec-eval", "10", "--format", "trec")
    got = {("rbp" if n == "RBP_graded" else n, q): v for (n, q), v in parse(out).items()}
    if ("runid", "all") not in expected:  # trec_eval prints runid and num_q only with its measure sets
        del got[("runid", "all")], got[("num_q", "all")]
    assert got == expected


@pytest.mark.parametrize("case", ["case03", "case11", "case26"])
def test_generated_runs_through_the_cli_every_digit(case):
    manifest = json.loads((GOLDEN / "adversarial" / "manifest.json").read_text())["cases"]
    entries = [e for e in manifest if e["out"].startswith(f"{case}.") and "dcg" not in e["out"]]
    assert len(entries) >= 2
    for entry in entries:
        expected = parse(gzip.decompress((GOLDEN / "adversarial" / entry["out"]).read_bytes()).decode())
        names = list(dict.fromkeys(n for n, _ in expected if n not in ("runid", "num_q", "gm_map", "gm_bpref")))
        flags = [a for a in entry["args"] if a.startswith(("-c", "-l", "-J", "-M", "-N"))]
        options = {"-c": ["-c"], "-J": ["-J"]}
        cli_flags = [part for f in flags for part in options.get(f, [f[:2], f[2:]])]
        if not any(f.startswith("-N") for f in flags):
            cli_flags += ["-N", "0"]  # trec_eval's default collection size
        measures = [a for n in names for a in ("-m", RENAMED.get(n, n))]
        got = json.loads(invoke("evaluate", GOLDEN / "adversarial" / entry["qrels"], GOLDEN / "adversarial" / entry["run"],
                                *cli_flags, *measures, "--trec-eval", "10", "--fractions", "truncate", "--format", "json"))["per_query"]
        for (name, qid), value in expected.items():
            if qid == "all" or name not in names:
                continue
            mine = got[qid].get(RENAMED.get(name, name))
            if value.startswith("'"):
                assert f"'{mine}'" == value
            elif math.isnan(float(value)):
                assert mine in (None, 0.0)  # see test_trec_eval_quicktest: iprec 0 where trec_eval divides 0 by 0
            else:
                assert mine == pytest.approx(float(value), rel=1e-9, abs=1e-9), (entry["out"], name, qid)


# ---------------------------------------------------------------------------------------------
# k3 on search, run, tune and experiment


def test_k3_on_every_searching_command(tmp_path):
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in
                            [("x", "apple pie"), ("y", "apple apple tart"), ("z", "pear tart"), ("w", "pear")]))
    invoke("index", docs, "--out", tmp_path / "idx")
    once = {r["doc_id"]: r["score"] for r in json.loads(invoke("search", tmp_path / "idx", "apple", "--format", "json"))}
    thrice = {r["doc_id"]: r["score"] for r in
              json.loads(invoke("search", tmp_path / "idx", "apple apple apple", "--k3", "8", "--format", "json"))}
    assert thrice == pytest.approx({d: s * 27 / 11 for d, s in once.items()}, rel=1e-15)

    from bm25lab.engine import Index
    from bm25lab.evaluation import read_run

    queries = write(tmp_path, "q.tsv", ["1\tapple apple tart", "2\tpear pear pear tart"])
    invoke("run", tmp_path / "idx", queries, "--out", tmp_path / "k3.run", "--k3", "1.5")
    expected = Index.load(tmp_path / "idx").search_many({"1": "apple apple tart", "2": "pear pear pear tart"}, k3=1.5)
    assert read_run(tmp_path / "k3.run").to_dict() == {q: {h.doc_id: h.score for h in hits} for q, hits in expected.items()}
    qrels = write(tmp_path, "q.qrels", ["1 0 y 1", "1 0 x 0", "2 0 z 1", "2 0 w 0"])
    tuned = json.loads(invoke("tune", tmp_path / "idx", queries, qrels, "--k3", "0", "--folds", "2", "--k1-grid", "0.5,1.2",
                              "--b-grid", "0.3,0.75", "--format", "json", "-m", "AP"))
    assert set(tuned["best"]) == {"k1", "b"}
    bad = runner.invoke(app, ["search", str(tmp_path / "idx"), "apple", "--k3", "-1"])
    assert bad.exit_code == 2


def test_experiment_with_k3():
    plain = json.loads(invoke("experiment", "cranfield", "-m", "AP", "-k", "100", "--format", "json"))
    saturated = json.loads(invoke("experiment", "cranfield", "-m", "AP", "-k", "100", "--k3", "0", "--format", "json"))
    assert plain["mean"]["AP"] != saturated["mean"]["AP"]  # Cranfield's queries repeat terms


def test_compare_takes_the_rule_set(tmp_path):
    # two queries, each relevant, non-relevant, relevant, non-relevant, relevant (R = 3) in the baseline
    qrels = write(tmp_path, "q.qrels", [f"{q} 0 d{i} {y}" for q in "ab" for i, y in enumerate([1, 0, 1, 0, 1])])
    base = write(tmp_path, "base.run", [f"{q} Q0 d{i} {i} {5.0 - i} t" for q in "ab" for i in range(5)])
    other = write(tmp_path, "other.run", [f"{q} Q0 d{i} {i} {float(i)} t" for q in "ab" for i in range(5)])
    rows = {rules: json.loads(invoke("compare", qrels, base, other, "-m", "11pt_avg", "--format", "json",
                                     "--trec-eval", rules))[0] for rules in ("9", "10")}
    assert round(rows["9"]["baseline_mean"], 4) == 0.7697 and round(rows["10"]["baseline_mean"], 4) == 0.8061


# ---------------------------------------------------------------------------------------------
# BM25F: index --fields, search and run --field-weights / --field-b


def test_bm25f_through_the_cli(tmp_path):
    from bm25lab.engine import Index
    from bm25lab.evaluation import read_run

    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps(d) + "\n" for d in [
        {"id": "a", "title": "apple pie", "text": "a recipe with pears"},
        {"id": "b", "title": "pear tart", "text": "apple apple apple tart"},
        {"id": "c", "title": "", "text": "nothing here but apple"}]))
    invoke("index", docs, "--out", tmp_path / "fielded", "--fields", "title,text", "--language", "whitespace")
    invoke("index", docs, "--out", tmp_path / "plain", "--language", "whitespace")
    assert json.loads(invoke("info", tmp_path / "fielded", "--format", "json"))["fields"] == ["title", "text"]
    assert json.loads(invoke("info", tmp_path / "plain", "--format", "json"))["fields"] == []
    options = ["--field-weights", "title=3,text=1", "--field-b", "title=0.5"]
    got = json.loads(invoke("search", tmp_path / "fielded", "apple pear", *options, "--format", "json"))
    expected = Index.load(tmp_path / "fielded").search("apple pear", field_weights={"title": 3, "text": 1},
                                                       field_b={"title": 0.5})
    assert [(r["doc_id"], r["score"]) for r in got] == [(h.doc_id, h.score) for h in expected]
    # without field weights the fielded index ranks as the plain one
    assert invoke("search", tmp_path / "fielded", "apple pear", "--format", "trec") == \
        invoke("search", tmp_path / "plain", "apple pear", "--format", "trec")
    queries = write(tmp_path, "q.tsv", ["1\tapple", "2\tpear tart"])
    invoke("run", tmp_path / "fielded", queries, "--out", tmp_path / "f.run", *options)
    run = read_run(tmp_path / "f.run").to_dict()
    assert run["1"] == {h.doc_id: h.score for h in Index.load(tmp_path / "fielded").search(
        "apple", k=1000, field_weights="title=3,text=1", field_b="title=0.5")}
    refused = runner.invoke(app, ["search", str(tmp_path / "plain"), "apple", *options])
    assert refused.exit_code == 2 and "built without fields" in refused.stderr


def test_err_through_the_cli(tmp_path):
    # issue 17: ERR@k by its ir_measures name; listed by `bm25lab measures`; a label above 4 refused in one line
    qrels = write(tmp_path, "qrels", ["1 0 a 2", "1 0 c 4", "1 0 z 0"])
    run = ranking(tmp_path, "run", "1", {"a": 3.0, "c": 2.0, "z": 1.0})
    assert per_query_json(qrels, run, "-m", "ERR@10", "-m", "ERR@1")["1"] == {"ERR@10": 0.568359375, "ERR@1": 0.1875}
    listed = json.loads(invoke("measures", "--format", "json"))["measures"]
    assert {"name": "ERR", "forms": "ERR, ERR@k"}.items() <= next(m for m in listed if m["name"] == "ERR").items()
    bad = write(tmp_path, "bad", ["1 0 a 5", "1 0 c 1"])
    result = runner.invoke(app, ["evaluate", str(bad), str(run), "-m", "ERR@10"])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "bm25lab: error: ERR takes labels up to 4 (gdeval's MAX_JUDGMENT: R(g) = (2^g - 1) / 2^4 is a probability "
        "only up to there); query '1' has a judgment of 5"]
