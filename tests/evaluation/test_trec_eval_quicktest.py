"""Agreement with NIST's trec_eval 10.0 program, per query, through golden files (the program is never run here).

``golden/trec_eval_10/quicktest/`` holds trec_eval's own ``test/`` folder (inputs and the outputs its
``make quicktest`` compares against, printed to 4 decimals): every line of every case bm25lab supports
must come out the same text. ``golden/trec_eval_10/adversarial/`` holds generated qrels and runs
(ties, negative and non-integer labels, missing queries, junk after a run line's sixth field) with the
outputs of trec_eval 10.0 built with its number format widened to ``%.17g``: every value must agree
to 1e-9. ``make_golden.py`` there regenerates both (and says how); ``LICENSE.md`` is NIST's notice.
"""
from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

from bm25lab.evaluation import evaluate, read_qrels, read_run

GOLDEN = Path(__file__).parent / "golden" / "trec_eval_10"
QUICKTEST = GOLDEN / "quicktest"
ADVERSARIAL = GOLDEN / "adversarial"
TOLERANCE = 1e-9

# trec_eval's rbp (graded gains) is RBP_graded here; plain rbp names bm25lab's binary RBP@p
RENAMED = {"rbp": "RBP_graded"}
META = ("runid", "num_q")


def parse_output(text: str) -> dict[tuple[str, str], str]:
    """{(measure, query): value text} of trec_eval's output (``-q`` lines and ``all`` lines)."""
    rows = {}
    for line in text.splitlines():
        name, qid, value = line.split("\t")
        rows[(name.strip(), qid)] = value
    return rows


def options(args: list[str]) -> dict:
    """evaluate()'s options for trec_eval's command-line flags (-N defaults to 0, as trec_eval's); not
    strict, since trec_eval evaluates what it is given (cases whose run shares no query with the qrels)."""
    out: dict = {"trec_eval": 10, "collection_size": 0, "strict": False, "fractions": "truncate"}
    for arg in args:
        if arg == "-c":
            out["complete"] = True
        elif arg == "-J":
            out["judged_only"] = True
        elif arg.startswith("-l"):
            out["rel"] = int(arg[2:])
        elif arg.startswith("-M"):
            out["depth"] = int(arg[2:])
        elif arg.startswith("-N"):
            out["collection_size"] = int(arg[2:])
    return out


def evaluated(expected: dict, qrels: Path, run: Path, args: list[str]):
    names = list(dict.fromkeys(name for name, _ in expected if name not in META))
    ours = [RENAMED.get(name, name) for name in names]
    run_read = read_run(run)
    result = evaluate(read_qrels(qrels, trec_eval=10), run_read, ours, **options(args))
    return result, run_read, dict(zip(names, ours))


def ours_for(result, run, names: dict, name: str, qid: str):
    """bm25lab's value for one line of trec_eval's output (None when it has none)."""
    if name == "runid":
        return run.name
    if name == "num_q":
        return result.num_queries
    measure = names[name]
    if qid == "all":
        return result.summary.get(measure)
    return result.per_query.get(qid, {}).get(measure)


def printed(result, measure: str, value) -> str:
    """trec_eval's text for a value: ``%6.4f``, a count as an integer, a string quoted."""
    if isinstance(value, str):
        return value if measure == "runid" else f"'{value}'"
    if measure in result.totals or isinstance(value, int):
        return str(int(round(value)))
    return f"{value:6.4f}"


# ---------------------------------------------------------------------------------------------
# trec_eval's own test suite (make quicktest), as printed

QUICKTEST_CASES = {
    "out.test": ("qrels.test", "results.test", []),
    "out.test (qrels with comments)": ("qrels.test.with-comments", "results.test", []),
    "out.test.a": ("qrels.test", "results.test", []),
    "out.test.aq": ("qrels.test", "results.test", ["-q"]),
    "out.test.aqc": ("qrels.test", "results.trunc", ["-q", "-c"]),
    "out.test.aqcM": ("qrels.test", "results.trunc", ["-q", "-c", "-M100"]),
    "out.test.aql": ("qrels.rel_level", "results.test", ["-q", "-l2"]),
    "out.test.meas_params": ("qrels.test", "results.test", ["-q"]),
    "out.comment.test": ("qrels.comment.test", "results.comment.test.gz", []),
}


@pytest.mark.parametrize("case", list(QUICKTEST_CASES))
def test_trec_evals_quicktest_line_by_line(case):
    qrels, run, args = QUICKTEST_CASES[case]
    expected = parse_output((QUICKTEST / case.split(" ")[0]).read_text())
    result, run_read, names = evaluated(expected, QUICKTEST / qrels, QUICKTEST / run, args)
    got = {key: printed(result, key[0], ours_for(result, run_read, names, *key)) for key in expected}
    assert got == expected
    if "-q" not in args:
        return
    per_query = {(name, qid) for qid, values in result.per_query.items() for name in names if names[name] in values
                 and names[name] not in result.summary_only}
    assert per_query == {key for key in expected if key[1] != "all" and key[0] not in META}


# ---------------------------------------------------------------------------------------------
# Generated adversarial cases, every digit

MANIFEST = json.loads((ADVERSARIAL / "manifest.json").read_text())["cases"]


def _agrees(name: str, qid: str, mine, theirs: str) -> bool:
    if isinstance(mine, str):
        return f"'{mine}'" == theirs or mine == theirs
    value = float(theirs)
    if math.isnan(value):
        if name.startswith(("iprec_at_recall", "11pt_avg")):
            # trec_eval divides 0 by 0 when nothing is retrieved (-J left no document); bm25lab says 0,
            # so its mean is a number where trec_eval's is NaN (docs/measures.md)
            return qid == "all" or mine == 0.0
        return mine is None  # 0/0 in trec_eval (Rndcg with no level change): no value here
    return mine is not None and abs(mine - value) <= TOLERANCE * max(1.0, abs(value))


@pytest.mark.parametrize("entry", MANIFEST, ids=[e["out"].removesuffix(".out.gz") for e in MANIFEST])
def test_adversarial_runs_every_value(entry):
    expected = parse_output(gzip.decompress((ADVERSARIAL / entry["out"]).read_bytes()).decode())
    result, run_read, names = evaluated(expected, ADVERSARIAL / entry["qrels"], ADVERSARIAL / entry["run"],
                                        entry["args"])
    wrong = {key: (ours_for(result, run_read, names, *key), value) for key, value in expected.items()
             if not _agrees(*key, ours_for(result, run_read, names, *key), value)}
    assert not wrong
    listed = {qid for _, qid in expected if qid != "all"}
    assert set(result.per_query) == listed


def test_the_golden_files_cover_every_trec_eval_option_and_missing_queries():
    flags = {arg for entry in MANIFEST for arg in entry["args"] if arg.startswith("-") and arg not in ("-q", "-m")}
    assert flags >= {"-c", "-l2", "-J", "-M3", "-N500"}
    assert len(MANIFEST) > 250


def test_the_9_and_10_rules_differ_exactly_where_the_two_programs_do():
    """11pt_avg on the real Cranfield run: bm25lab's 9 rules equal pytrec_eval (trec_eval 9.0.8), its 10
    rules the 10.0 program, and the queries where they differ are the same (lround vs (long)(x + 0.9))."""
    import pytrec_eval

    folder = GOLDEN / "cranfield"
    qrels_path, run_path = folder / "qrels.trec", folder / "bm25-top100.run.gz"
    ten = {qid: float(v) for (name, qid), v in parse_output(gzip.decompress((folder / "bm25.l1.out.gz").read_bytes())
                                                               .decode()).items() if name == "11pt_avg" and qid != "all"}
    with open(qrels_path) as stream:
        judgments = pytrec_eval.parse_qrel(stream)
    run = read_run(run_path)
    nine = {q: v["11pt_avg"] for q, v in pytrec_eval.RelevanceEvaluator(judgments, {"11pt_avg"}).evaluate(
        run.to_dict()).items()}
    ours = {rules: evaluate(read_qrels(qrels_path, trec_eval=rules), run, ["11pt-AP"], trec_eval=rules).values("11pt-AP")
            for rules in (9, 10)}
    assert ours[9] == pytest.approx(nine, abs=TOLERANCE) and ours[10] == pytest.approx(ten, abs=TOLERANCE)
    differ = {q for q in ten if abs(ten[q] - nine[q]) > TOLERANCE}
    assert {q for q in ours[9] if ours[9][q] != ours[10][q]} == differ
    assert len(differ) > 100 and len(ten) == 225  # 151 of the 225 queries of this top-100 run
