"""``--complete`` (trec_eval ``-c``) against the trec_eval program itself: golden outputs of trec_eval
10.0, built from NIST's source, committed with the runs they were made from
(tests/evaluation/golden/make_golden.py says how; the tests never need the binary).

The runs leave out every fifth judged query, so with ``-c`` those count as 0 and the means differ from
the default's. Every per-query value and every mean of the measures trec_eval 10.0 and 9.0.8 define
alike (docs/measures.md) must equal trec_eval's printed 4 decimals (to half a unit of the last),
through the library and through ``bm25lab evaluate -c``; num_ret and num_rel_ret exactly.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bm25lab import corpora
from bm25lab.cli import app
from bm25lab.evaluation import evaluate, read_qrels, read_run
from bm25lab.evaluation.measures import parse_measure

GOLDEN = Path(__file__).resolve().parent / "golden"
MEASURES = ["AP", "P@5", "P@10", "P@30", "RR", "nDCG", "nDCG@10", "nDCG@20", "R@10", "R@100", "bpref", "Rprec",
            "Success@1", "Success@10", "AP@10", "AP@100", "num_ret", "num_rel_ret"]
COUNTS = {"num_ret", "num_rel_ret"}  # trec_eval's "all" line holds their sum
CASES = {"cranfield-c": ("cranfield", 1), "cranfield-c-l2": ("cranfield", 2), "cisi-c": ("cisi", 1)}


def golden(stem: str) -> dict[str, dict[str, float]]:
    """{qid or "all": {trec_eval measure: value}} of one golden output."""
    values: dict[str, dict[str, float]] = {}
    for line in gzip.decompress((GOLDEN / f"{stem}.trec_eval.gz").read_bytes()).decode().splitlines():
        name, qid, value = line.split()
        values.setdefault(qid, {})[name] = float(value)
    return values


def assert_equals_trec_eval(per_query: dict, mean: dict, expected: dict, queries: int) -> int:
    names = {m: parse_measure(m).trec_eval_name for m in MEASURES}
    compared = 0
    assert set(per_query) == set(expected) - {"all"}  # -c: every judged query, missing ones too
    for qid, theirs in expected.items():
        for ours_name, trec_name in names.items():
            if qid == "all":
                got = mean[ours_name]  # a count's is its sum, as trec_eval's all line
            else:
                got = per_query[qid][ours_name]
            exact = ours_name in COUNTS
            assert got == pytest.approx(theirs[trec_name], abs=1e-9 if exact else 5e-5 + 1e-12), (qid, ours_name)
            compared += 1
    return compared


@pytest.mark.parametrize("stem", sorted(CASES))
def test_complete_equals_the_trec_eval_program(stem: str) -> None:
    collection, rel = CASES[stem]
    expected = golden(stem)
    qrels = read_qrels(corpora.get(collection).qrels_path)
    run = read_run(GOLDEN / f"{collection}.run.gz")
    result = evaluate(qrels, run, MEASURES, complete=True, rel=rel)
    missing = set(expected) - {"all"} - set(run.qids)
    assert len(missing) >= 15  # the -c case is really exercised: judged queries absent from the run
    assert all(expected[q]["map"] == 0 and expected[q]["num_ret"] == 0 for q in missing)
    assert assert_equals_trec_eval(result.per_query, result.mean, expected, result.num_queries) == \
        len(expected) * len(MEASURES)
    # without -c the missing queries are not averaged: the means differ
    partial = evaluate(qrels, run, MEASURES, rel=rel)
    assert partial.num_queries == result.num_queries - len(missing) and partial.mean["AP"] > result.mean["AP"]


@pytest.mark.parametrize("stem", sorted(CASES))
def test_evaluate_complete_on_the_command_line_equals_the_trec_eval_program(stem: str) -> None:
    collection, rel = CASES[stem]
    args = ["evaluate", str(corpora.get(collection).qrels_path), str(GOLDEN / f"{collection}.run.gz"), "-c",
            "-l", str(rel), "--format", "json", *[a for m in MEASURES for a in ("-m", m)]]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    expected = golden(stem)
    assert assert_equals_trec_eval(printed["per_query"], printed["mean"], expected, printed["queries"]) == \
        len(expected) * len(MEASURES)
