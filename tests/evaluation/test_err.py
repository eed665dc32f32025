"""ERR@k (Expected Reciprocal Rank, Chapelle et al. 2009) against its reference, gdeval.pl of the TREC Web
track, which ir_measures runs for ``ERR@k``: per query through ir_measures itself (gdeval prints 5 decimals,
so the values agree within half a unit of the fifth: 5e-6), and through gdeval's own code printing all 17
digits (the same bits: bm25lab adds gdeval's terms in gdeval's order); hand-computed exact values; the
rules gdeval follows (ties, labels <= 0, labels above 4, queries without a relevant document, the cutoff).

perl is part of the test environment (ir_measures' gdeval provider needs it): without it these tests
fail, saying so, rather than skip.
"""
from __future__ import annotations

import pkgutil
import random
import shutil
import subprocess
from pathlib import Path

import ir_measures
import pytest

from bm25lab.evaluation import MEASURES, MeasureError, Run, evaluate as strict_evaluate, parse_measure
from bm25lab.evaluation.measures import known_measures

PRINTED = 5e-6 + 1e-12
"""gdeval prints ``%.5f``: a correctly rounded print is within half a unit of the fifth decimal."""
CUTOFFS = (1, 3, 5, 10, 20, 100)


def evaluate(*args, **kwargs):
    """Some cases have nothing relevant on purpose: not strict."""
    return strict_evaluate(*args, strict=False, **kwargs)


def require_perl() -> str:
    perl = shutil.which("perl")
    if perl is None:
        pytest.fail("perl is not installed: ir_measures computes ERR@k with gdeval.pl, a Perl script, and these "
                    "tests need it as the oracle (Debian: apt-get install perl)")
    return perl


def ir_measures_err(qrels: dict, run: dict, k: int) -> dict[str, float]:
    """ir_measures' ERR@k per query (its gdeval provider; a query gdeval does not print gets ir_measures' 0)."""
    require_perl()
    measure = ir_measures.parse_measure(f"ERR@{k}")
    assert [p.NAME for p in ir_measures.providers.registry.values()
            if p.supports(measure) and p.is_available()][:1] == ["gdeval"]
    return {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run)}


def gdeval_full_precision(qrels: dict, run: dict, k: int, tmp_path: Path) -> dict[str, float]:
    """gdeval.pl as ir_measures ships it, with its print format widened from %.5f to %.17g (nothing else
    changed), on the qrels and run written as ir_measures writes them."""
    script = pkgutil.get_data("ir_measures", "bin/gdeval.pl").decode()
    printed = 'printf  "$runid,$topicCurrent,%.5f,%.5f\\n",$ndcg,$err;'
    assert script.count(printed) == 1
    (tmp_path / "gdeval17.pl").write_text(script.replace(printed, printed.replace("%.5f", "%.17g")))
    (tmp_path / "qrels").write_text("".join(f"{q} 0 {d} {label}\n" for q, docs in qrels.items()
                                            for d, label in docs.items()))
    (tmp_path / "run").write_text("".join(f"{q} Q0 {d} {i} {score!r} run\n" for q, docs in run.items()
                                          for i, (d, score) in enumerate(docs.items())))
    out = subprocess.run([require_perl(), str(tmp_path / "gdeval17.pl"), str(tmp_path / "qrels"),
                          str(tmp_path / "run"), str(k)], capture_output=True, text=True, check=True).stdout
    return {line.split(",")[1]: float(line.split(",")[3]) for line in out.splitlines()[1:] if line}


def assert_agrees(qrels: dict, run: dict, cutoffs=CUTOFFS, tmp_path: Path | None = None) -> int:
    """Per query, bm25lab's ERR@k equals ir_measures' (printed precision) and, with ``tmp_path``, gdeval's
    full-precision value exactly. ir_measures gives every judged query a value (0 when gdeval prints none),
    bm25lab's ``complete`` averages every judged query: the same queries. Returns the values compared."""
    names = [f"ERR@{k}" for k in cutoffs]
    ours = evaluate(qrels, run, names, complete=True)
    compared = 0
    for k, name in zip(cutoffs, names):
        theirs = ir_measures_err(qrels, run, k)
        assert set(theirs) == set(ours.per_query), name
        for qid, value in theirs.items():
            assert abs(ours.per_query[qid][name] - value) <= PRINTED, (name, qid, ours.per_query[qid][name], value)
            compared += 1
        if tmp_path is not None:
            exact = gdeval_full_precision(qrels, run, k, tmp_path)
            for qid, value in exact.items():  # gdeval prints the queries with a relevant document
                assert ours.per_query[qid][name] == value, (name, qid, ours.per_query[qid][name], value)
    return compared


# ---------------------------------------------------------------------------------------------
# Hand-computed values (independent of any program)


def test_hand_computed_values():
    # R(g) = (2^g - 1) / 16: a label 2 satisfies with 3/16, a label 4 with 15/16
    qrels = {"1": {"a": 2, "c": 4, "z": 0}}
    run = {"1": {"a": 3.0, "c": 2.0, "z": 1.0}}
    values = evaluate(qrels, run, ["ERR@1", "ERR@2", "ERR@10", "ERR"]).per_query["1"]
    assert values["ERR@1"] == 3 / 16
    assert values["ERR@2"] == values["ERR@10"] == values["ERR"] == 3 / 16 + (1 - 3 / 16) * (15 / 16) / 2 == 0.568359375
    # three documents of label 1: 1/16, then (15/16)(1/16)/2, then (15/16)^2 (1/16)/3
    three = evaluate({"q": {"a": 1, "b": 1, "c": 1}}, {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}, ["ERR"]).per_query["q"]
    assert three["ERR"] == pytest.approx(1 / 16 + (15 / 16) * (1 / 16) / 2 + (15 / 16) ** 2 * (1 / 16) / 3, abs=1e-15)
    # an unjudged document, a zero and a negative label satisfy no one but take their ranks
    gaps = evaluate({"q": {"b": 0, "c": -1, "d": 3}}, {"q": {"a": 4.0, "b": 3.0, "c": 2.0, "d": 1.0}},
                    ["ERR", "ERR@3"]).per_query["q"]
    assert gaps == {"ERR": (7 / 16) / 4, "ERR@3": 0.0}


def test_the_example_ir_measures_gives():
    # the check: q1 ranking a (label 2), c (label 4), z (label 0): ir_measures prints 0.56836
    qrels = {"1": {"a": 2, "c": 4, "z": 0}}
    run = {"1": {"a": 3.0, "c": 2.0, "z": 1.0}}
    assert ir_measures_err(qrels, run, 10) == {"1": 0.56836}
    assert round(evaluate(qrels, run, ["ERR@10"]).per_query["1"]["ERR@10"], 5) == 0.56836


# ---------------------------------------------------------------------------------------------
# gdeval's rules


def test_ties_in_score_go_by_document_id_descending_as_gdeval_sorts():
    # gdeval's runOrder: score descending, then docno descending (trec_eval's order too): c, b, a
    qrels = {"1": {"a": 2, "b": 1, "c": 4}}
    run = {"1": {"a": 1.0, "b": 1.0, "c": 1.0}}
    assert evaluate(qrels, run, ["ERR@1"]).per_query["1"]["ERR@1"] == 15 / 16  # c first
    assert ir_measures_err(qrels, run, 1) == {"1": 0.9375}
    assert assert_agrees(qrels, run) == len(CUTOFFS)
    # ties partly broken by score, ids that differ in case, length and beyond ASCII
    qrels = {"7": {"d": 1, "D": 3, "dd": 2, "é": 4, "中": 3, "d1": 0}}
    run = {"7": {"d": 2.0, "D": 2.0, "dd": 2.0, "é": 1.0, "中": 1.0, "d1": 3.0, "x": 2.0}}
    assert_agrees(qrels, run)


def test_queries_without_a_relevant_document_score_0_as_ir_measures_counts_them(tmp_path):
    # gdeval prints no line for a query without a positive label (only 0 or negative ones) nor for a judged
    # query missing from the run; ir_measures gives both 0, and so does ERR here (complete averages both)
    qrels = {"1": {"a": 2}, "2": {"a": 0, "b": -1}, "3": {"x": 3}, "4": {"a": 1}}
    run = {"1": {"a": 1.0}, "2": {"a": 2.0, "b": 1.0}, "4": {"q": 1.0}, "9": {"a": 1.0}}
    assert gdeval_full_precision(qrels, run, 10, tmp_path) == {"1": 3 / 16, "4": 0.0}
    assert ir_measures_err(qrels, run, 10) == {"1": 0.1875, "2": 0.0, "3": 0.0, "4": 0.0}
    result = evaluate(qrels, run, ["ERR@10"], complete=True)
    assert result.values("ERR@10") == {"1": 3 / 16, "2": 0.0, "3": 0.0, "4": 0.0}
    assert result.mean["ERR@10"] == ir_measures.calc_aggregate([ir_measures.ERR @ 10], qrels, run)[ir_measures.ERR @ 10]
    assert not result.undefined
    # without complete, the judged queries of the run are averaged (2 with its 0 among them), as for every measure
    assert evaluate(qrels, run, ["ERR@10"]).values("ERR@10") == {"1": 3 / 16, "2": 0.0, "4": 0.0}


def test_labels_above_4_are_refused_as_gdeval_refuses_them():
    qrels = {"1": {"a": 5, "b": 1}}
    run = {"1": {"a": 1.0, "b": 0.5}}
    with pytest.raises(subprocess.CalledProcessError):  # gdeval: "format error on line 1"
        ir_measures_err(qrels, run, 10)
    with pytest.raises(MeasureError, match=r"ERR takes labels up to 4 .* query '1' has a judgment of 5"):
        evaluate(qrels, run, ["ERR@10"])
    # the other measures of the same qrels are unaffected
    assert evaluate(qrels, run, ["nDCG@10"]).per_query["1"]["nDCG@10"] == 1.0


def test_negative_labels_count_as_zero_and_rel_is_not_taken():
    qrels = {"1": {"a": -2, "b": -1, "c": 3, "d": 0}}
    run = {"1": {"a": 4.0, "b": 3.0, "c": 2.0, "d": 1.0}}
    assert evaluate(qrels, run, ["ERR@10"]).per_query["1"]["ERR@10"] == (7 / 16) / 3
    assert_agrees(qrels, run)
    with pytest.raises(MeasureError, match="does not use a relevance threshold"):
        parse_measure("ERR(rel=2)@10")
    # the evaluation's --rel leaves it unchanged (graded, like nDCG)
    assert evaluate(qrels, run, ["ERR@10"], rel=3).per_query["1"] == evaluate(qrels, run, ["ERR@10"]).per_query["1"]


def test_names():
    for name in ("ERR@10", "ERR@20", "err@10", "ERR_10", "ERR.10", "ERR", "ERR(judged_only=True)@10"):
        measure = parse_measure(name)
        assert measure.definition is MEASURES["ERR"]
    assert parse_measure("ERR@20").param == 20 and parse_measure("ERR").param is None
    assert parse_measure("ERR@10").trec_eval_name is None  # trec_eval has no ERR
    assert "ERR, ERR@k" in known_measures()
    with pytest.raises(MeasureError, match="cutoff must be a positive integer"):
        parse_measure("ERR@0")


# ---------------------------------------------------------------------------------------------
# Against ir_measures (gdeval) per query: generated runs and a real BM25 run


def generated_case(seed: int) -> tuple[dict, dict]:
    """Numeric query ids (gdeval takes no other); labels -2..4; heavy score ties; unjudged documents;
    queries without a relevant document, missing from the run, or only in the run; empty rankings."""
    rng = random.Random(seed)
    stems = ["d", "D", "dd", "d1", "d10", "é", "中", "a", "A", "ab", "aB"]
    docs = list(dict.fromkeys(rng.choice(stems) + str(rng.randint(0, 5)) for _ in range(40)))
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(1, rng.randint(2, 8)):
        qid = str(q)
        if rng.random() < 0.9:
            judged = rng.sample(docs, rng.randint(1, min(15, len(docs))))
            qrels[qid] = {d: rng.choice([-2, -1, 0, 0, 1, 1, 2, 3, 4]) for d in judged}
        if rng.random() < 0.85:
            depth = rng.choice([0, 1, 2, 5, 12, 20, len(docs)])
            ties = rng.choice([None, [0.0, 1.0], [0.0, 0.5, 1.0, 1.5], [-1.0, 0.0]])
            run[qid] = {d: (rng.choice(ties) if ties else rng.random()) for d in rng.sample(docs, depth)}
    return qrels, run


@pytest.mark.parametrize("seed", range(12))
def test_generated_runs_equal_ir_measures_and_gdeval(seed, tmp_path):
    qrels, run = generated_case(seed)
    assert_agrees(qrels, run, cutoffs=(1, 5, 10, 1000), tmp_path=tmp_path)
    # ERR without a cutoff is the whole ranking: gdeval's ERR@k for a k beyond every ranking
    whole = evaluate(qrels, run, ["ERR", "ERR@1000"], complete=True)
    assert whole.values("ERR") == whole.values("ERR@1000")


@pytest.fixture(scope="module")
def cranfield_run(cranfield, cranfield_index) -> dict:
    # the top 100: gdeval sorts its run in Perl, line by line; ERR@k for k <= 100 needs no more
    hits = cranfield_index.search_many(cranfield.queries(), k=100)
    return {qid: {h.doc_id: h.score for h in ranked} for qid, ranked in hits.items()}


@pytest.fixture(scope="module")
def cranfield_qrels(cranfield) -> dict:
    qrels: dict[str, dict[str, int]] = {}
    for line in Path(cranfield.qrels_path).read_text().splitlines():
        qid, _, doc, label = line.split()
        qrels.setdefault(qid, {})[doc] = int(label)
    return qrels


def test_cranfield_bm25_run_equals_ir_measures_per_query(cranfield_qrels, cranfield_run, tmp_path):
    assert len(cranfield_run) == 225 and {max(d.values()) for d in cranfield_qrels.values()} <= {1, 2, 3, 4}
    compared = assert_agrees(cranfield_qrels, cranfield_run, tmp_path=tmp_path)
    assert compared == len(cranfield_qrels) * len(CUTOFFS)
    mean = evaluate(cranfield_qrels, cranfield_run, ["ERR@10"]).mean["ERR@10"]
    assert 0.05 < mean < 0.5  # a real run: neither nothing found nor everything


def test_err_at_k_needs_only_the_top_k(cranfield_qrels, cranfield_run):
    # tune searches only k deep for ERR@k (evaluation/tuning.py's top-n families): the top k, cut after the
    # tie rule, give the values of the whole ranking
    full = evaluate(cranfield_qrels, cranfield_run, [f"ERR@{k}" for k in CUTOFFS])
    for k in CUTOFFS:
        cut = evaluate(cranfield_qrels, Run.from_dict(cranfield_run).truncated(k), [f"ERR@{k}"])
        assert cut.values(f"ERR@{k}") == full.values(f"ERR@{k}")
    tied = {"1": {"a": 2, "b": 4, "c": 3}}
    run = {"1": {"a": 1.0, "b": 1.0, "c": 1.0, "d": 2.0}}
    assert (evaluate(tied, Run.from_dict(run).truncated(2), ["ERR@2"]).values("ERR@2")
            == evaluate(tied, run, ["ERR@2"]).values("ERR@2") == {"1": (7 / 16) / 2})  # d, then c (label 3)
