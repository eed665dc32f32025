"""Readers and the run writer: formats, strictness (errors name file and line), and the two parsing
paths (pyarrow and line-by-line Python) giving identical results."""
from __future__ import annotations

import gzip
import io
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recording import pandas_stand_in

from bm25lab.engine.records import Hit
from bm25lab.evaluation import InputError, Qrels, Run, evaluate, read_qrels, read_run, write_run
from bm25lab.evaluation import readers
from bm25lab.evaluation.readers import RUN_WRITERS

RUN = """\
q1 Q0 d1 1 3.5 tag
q1 Q0 d2 2 2.25 tag
q1 Q0 d3 3 2.25 tag
q2 Q0 d9 1 -1e-3 tag
"""
QRELS = """\
q1 0 d1 1
q1 0 d3 2
q2 0 d9 0
q2 0 d8 -1
"""


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def run_rows(run: Run) -> list[tuple[str, str, float]]:
    return [(qid, doc, score) for qid, ranked in run.to_dict().items() for doc, score in ranked.items()]


# ---------------------------------------------------------------------------------------------
# Formats


def test_trec_run_is_read_in_tie_rule_order(tmp_path):
    run = read_run(write(tmp_path, "run.trec", RUN))
    assert run.name == "tag" and run.qids == ("q1", "q2") and len(run) == 4
    # d2 and d3 tie at 2.25: document id descending puts d3 first; the rank column is ignored
    assert run.ranked("q1") == [("d1", 3.5), ("d3", 2.25), ("d2", 2.25)]
    assert run.ranked("q2") == [("d9", -0.001)]


def test_trec_qrels_and_beir_tsv_read_the_same(tmp_path):
    trec = read_qrels(write(tmp_path, "qrels.trec", QRELS))
    beir_text = "query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{g}\n" for q, _, d, g in (line.split() for line in QRELS.splitlines())
    )
    beir = read_qrels(write(tmp_path, "qrels.tsv", beir_text))
    assert trec.to_dict() == beir.to_dict() == {"q1": {"d1": 1, "d3": 2}, "q2": {"d9": 0, "d8": -1}}
    assert read_qrels(write(tmp_path, "forced.tsv", beir_text), format="beir").to_dict() == beir.to_dict()


def test_gzip_files_are_read_by_content(tmp_path):
    run = read_run(write(tmp_path, "run.trec.gz", gzip.compress(RUN.encode())))
    qrels = read_qrels(write(tmp_path, "qrels.gz", gzip.compress(QRELS.encode())))
    assert run_rows(run) == run_rows(read_run(write(tmp_path, "plain", RUN)))
    assert qrels.to_dict() == read_qrels(write(tmp_path, "plain.qrels", QRELS)).to_dict()


@pytest.mark.parametrize(
    "variant",
    [
        RUN.replace(" ", "\t"),  # tabs (fast path with a tab delimiter)
        RUN.replace(" ", "  \t "),  # runs of mixed whitespace (Python path)
        RUN.replace("\n", "\r\n"),  # CRLF
        "\n# a comment\n\n" + RUN.replace("\n", "  \n"),  # blank and comment lines, trailing spaces
        "\ufeff" + RUN,  # UTF-8 byte order mark
    ],
)
def test_whitespace_variants_read_identically(tmp_path, variant):
    expected = run_rows(read_run(write(tmp_path, "plain", RUN)))
    assert run_rows(read_run(write(tmp_path, "variant", variant))) == expected


def test_only_ascii_whitespace_separates_fields(tmp_path):
    # an ideographic space (U+3000) inside an id is part of the id, as with C's isspace
    run = read_run(write(tmp_path, "run", "q1 Q0 文档\u3000一 1 1.0 t\n"))
    assert run.ranked("q1") == [("文档\u3000一", 1.0)]


def test_empty_files(tmp_path):
    assert len(read_run(write(tmp_path, "run", ""))) == 0
    assert read_qrels(write(tmp_path, "qrels", "\n\n")).num_queries == 0


def test_scores_and_labels_accept_numeric_forms(tmp_path):
    run = read_run(write(tmp_path, "run", "q Q0 a 1 1e3 t\nq Q0 b 2 -inf t\nq Q0 c 3 .5 t\nq Q0 d 4 -0 t\n"))
    assert run.ranked("q") == [("a", 1000.0), ("c", 0.5), ("d", 0.0), ("b", -math.inf)]
    qrels = read_qrels(write(tmp_path, "qrels", "q 0 a 2.0\nq 0 b 0\n"))
    assert qrels.to_dict() == {"q": {"a": 2, "b": 0}}


def test_text_after_a_run_lines_tag_is_ignored_and_the_last_tag_names_the_run(tmp_path):
    # trec_eval's own test run (results.trunc) has "STANDARD more junk at end of lines"; its runid is
    # the tag of the run's last line
    path = write(tmp_path, "junk.run", "q Q0 d 1 2.0 first more junk at\n\nq Q0 e 2 1.0 last end of lines.\n# c\n")
    run = read_run(path)
    assert run.name == "last" and run.ranked("q") == [("d", 2.0), ("e", 1.0)]
    with pytest.raises(InputError, match=r"junk\.run:2: expected 6 fields .*found 5"):
        read_run(write(tmp_path, "junk.run", "q Q0 d 1 2.0 t more\nq Q0 e 2 1.0\n"))


def test_grades_may_be_ratings_and_the_integer_label_follows_the_rule_set(tmp_path):
    # a rating of 4.5 is kept for MAE/RMSE; integer measures read 4 (trec_eval's atol); "1e2" is 100
    # under the 9 rules (its value) and 1 under the 10 rules (atol of the text), as trec_eval 10.0 reads it
    text = "q 0 a 4.5\nq 0 b 1e2\nq 0 c -0.5\nq 0 d 2\n"
    nine, ten = read_qrels(write(tmp_path, "qrels", text)), read_qrels(write(tmp_path, "qrels", text), trec_eval=10)
    assert nine.to_dict() == ten.to_dict() == {"q": {"a": 4.5, "b": 100, "c": -0.5, "d": 2}}
    labels = {q: dict(zip(r.doc_ids.to_pylist(), r.label.tolist())) for q, r in (("9", nine), ("10", ten))}
    assert labels["9"] == {"a": 4, "b": 100, "c": 0, "d": 2}
    assert labels["10"] == {"a": 4, "b": 1, "c": 0, "d": 2}
    # plain integers take the fast path under either rule set and read the same
    plain = "q 0 a 3\nq 0 b -1\n"
    assert read_qrels(write(tmp_path, "p", plain), trec_eval=10).label.tolist() == read_qrels(
        write(tmp_path, "p", plain)).label.tolist()


# ---------------------------------------------------------------------------------------------
# Strictness: every error names the file and the line


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("q Q0 d 1 1.0 t\nq Q0 e 2 1.0\n", 2, "expected 6 fields"),
        ("q Q0 d 1 abc t\n", 1, "score 'abc' is not a number"),
        ("q Q0 d 1 1.0 t\nq Q0 e 2 nan t\n", 2, "NaN"),
        ("q Q0 d 1 1_0 t\n", 1, "not a number"),
        ("q Q0 d 1 1.0 t\nq Q0 e 2 0.5 t\n\nq Q0 d 3 0.2 t\n", 4, "duplicate document 'd' for query 'q'"),
        ("q Q0 d 1 1.0 t\nq Q0 d 1 1.0 t\n", 2, "duplicate document"),
        ("# header\nq\tQ0\td\t1\t1.0\tt\nr\tQ0\td\t1\t1.0\tt\nq\tQ0\td\t1\t2.0\tt\n", 4, "duplicate document"),
        # one delimiter character per field would see 6 fields with an empty one in each of these
        ("q Q0 d 1 1.0 t\nq  e 2 1.0 t\n", 2, "expected 6 fields .*found 5"),
        ("q Q0 d 1 1.0 t\nq Q0 e 2 1.0  \n", 2, "found 5"),
        ("q\tQ0\td\t1\t1.0\tt\nq\tQ0\t\t2\t1.0\tt\n", 2, "found 5"),
        ("q Q0 d 1 1.0 t\nq Q0 e 2  t\n", 2, "found 5"),
    ],
)
def test_malformed_runs_name_file_and_line(tmp_path, text, line, message):
    path = write(tmp_path, "bad.run", text)
    with pytest.raises(InputError, match=message) as caught:
        read_run(path)
    assert str(caught.value).startswith(f"{path}:{line}: ")
    assert (caught.value.path, caught.value.line) == (str(path), line)


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("q 0 d 1\nq 0 e x\n", 2, "relevance 'x' is not a number"),
        ("q 0 d 1\nq 0 e 1 extra\n", 2, "expected 4 fields"),
        ("q 0 d 1\nq 0 e 0\n\nq 0 d 2\n", 4, "conflicting judgments for query 'q', document 'd': 1 and 2"),
        ("q 0 d 1 2 3\n", 1, "6 fields: this looks like a TREC run"),
        ("q 0 d 1 2\n", 1, r"expected 4 fields .*, 3 fields .* or JSON, found 5"),
    ],
)
def test_malformed_qrels_name_file_and_line(tmp_path, text, line, message):
    path = write(tmp_path, "bad.qrels", text)
    with pytest.raises(InputError, match=message) as caught:
        read_qrels(path)
    assert str(caught.value).startswith(f"{path}:{line}: ")


def test_identical_duplicate_qrels_lines_are_allowed(tmp_path):
    qrels = read_qrels(write(tmp_path, "qrels", "q 0 d 1\nq 0 e 0\nq 0 d 1\n"))
    assert qrels.to_dict() == {"q": {"d": 1, "e": 0}} and len(qrels) == 2


def test_invalid_utf8_and_missing_file(tmp_path):
    path = write(tmp_path, "bad", b"q Q0 d 1 1.0 t\nq Q0 \xff\xfe 2 1.0 t\n")
    with pytest.raises(InputError, match=r":2: document id is not valid UTF-8"):
        read_run(path)
    with pytest.raises(InputError, match="cannot read"):
        read_run(tmp_path / "absent.run")


def test_in_memory_data_is_checked_too():
    with pytest.raises(InputError, match="relevance 'high' is not a"):
        Qrels.from_dict({"q": {"d": "high"}})
    with pytest.raises(InputError, match="score is NaN"):
        Run.from_dict({"q": {"d": float("nan")}})
    with pytest.raises(InputError, match="duplicate document 'd'"):
        Run.from_dict({"q": [("d", 1.0), ("d", 2.0)]})


# ---------------------------------------------------------------------------------------------
# The fast path and the Python path agree


def _slow_columns(text: str, layout):
    return readers._parse_slow(text.encode(), layout, "mem", False)


ids = st.text(alphabet="abAB01é中_-.", min_size=1, max_size=6)
scores = st.one_of(st.floats(allow_nan=False, width=64), st.sampled_from([0.0, 1.0, 0.5]))


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(st.tuples(st.sampled_from(["1", "2", "10", "q"]), ids, scores), min_size=1, max_size=25),
    separator=st.sampled_from([" ", "\t"]),
)
def test_fast_and_python_paths_give_the_same_run(rows, separator):
    seen, lines = set(), []
    for qid, doc, score in rows:
        if (qid, doc) not in seen:
            seen.add((qid, doc))
            lines.append(separator.join([qid, "Q0", doc, "0", repr(score), "t"]))
    text = "\n".join(lines) + "\n"
    fast = readers._parse_fast(text.encode(), readers.TREC_RUN, False)
    slow = _slow_columns(text, readers.TREC_RUN)
    assert fast is not None
    assert fast.qid.to_pylist() == slow.qid and fast.doc.to_pylist() == slow.doc
    assert np.array_equal(fast.value, slow.value)
    from_fast = Run.from_columns(fast.qid, fast.doc, fast.value)
    from_slow = Run.from_columns(slow.qid, slow.doc, slow.value)
    assert run_rows(from_fast) == run_rows(from_slow)


@pytest.mark.parametrize("text", [
    "q Q0 d 1 2.0 t\nq  e 1 2.0 t\n",  # an empty Q0 (5 fields for the Python path: an error)
    "q Q0 d 1 2.0 t\nq Q0 e  2.0 t\n",  # an empty rank
    "q Q0 d 1 2.0 t\nq Q0 e 1 2.0 \n",  # an empty tag
    "q Q0 d 1 2.0 t\n Q0 e 1 2.0 t\n",  # an empty query id
    "q Q0 d 1 2.0 t\nq Q0 e 1 2.0 \r\n",  # an empty tag before CRLF
])
def test_an_empty_field_in_a_column_the_measures_do_not_read_sends_the_file_to_the_python_path(tmp_path, text):
    # the fast path converts Q0, rank and tag dictionary-encoded and checks their dictionaries for ""
    assert readers._parse_fast(text.encode(), readers.TREC_RUN, False) is None
    with pytest.raises(InputError, match="run:2: expected 6 fields"):
        read_run(write(tmp_path, "run", text))


def _naive_has_empty_field(text: str, delimiter: str) -> bool:
    lines = [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]
    return any(line and "" in line.split(delimiter) for line in lines)


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(st.sampled_from(["a", "b\x01", " ", "\t", "\n", "\r\n", "\n\n"]), min_size=1, max_size=40),
       delimiter=st.sampled_from([" ", "\t"]), block=st.sampled_from([1, 2, 3, 1 << 16]))
def test_the_empty_field_check_on_bytes_is_the_split_on_the_delimiter(pieces, delimiter, block):
    text = "a" + "".join(pieces)  # the fast path starts at a line's first field
    expected = _naive_has_empty_field(text, delimiter)
    assert readers._has_empty_field(text.encode(), 0, delimiter, block_size=block) == expected
    assert readers._has_empty_field(("\n\n" + text).encode(), 2, delimiter, block_size=block) == expected


@pytest.mark.parametrize("text", ["q Q0 d 1 2.0 t\r\nq Q0 e 1 1.0 t\r\n", "q Q0 d 1 2.0 t\n\n\nq Q0 e 1 1.0 t\n\n"])
def test_crlf_and_blank_lines_stay_on_the_fast_path(text):
    fast = readers._parse_fast(text.encode(), readers.TREC_RUN, False)
    slow = _slow_columns(text, readers.TREC_RUN)
    assert fast is not None and fast.doc.to_pylist() == slow.doc == ["d", "e"]


def test_a_run_in_rank_order_with_ties_equals_the_same_run_shuffled():
    # in rank order, only the tied rows' documents move (in place); shuffled, every column is permuted
    rng = np.random.default_rng(3)
    qids, docs, scores = [], [], []
    for q in range(30):
        values = -np.sort(-rng.integers(0, 8, 40)).astype(np.float64)  # many ties, in rank order
        names = rng.permutation([f"d{i}" for i in range(200)])[:40]
        qids += [f"q{q}"] * 40
        docs += list(names)
        scores += list(values)
    ordered = Run.from_columns(qids, docs, scores)
    shuffle = rng.permutation(len(qids))
    shuffled = Run.from_columns([qids[i] for i in shuffle], [docs[i] for i in shuffle], np.array(scores)[shuffle],
                                qids=list(ordered.qids))
    assert ordered.qids == shuffled.qids
    assert ordered.doc_ids.to_pylist() == shuffled.doc_ids.to_pylist()
    for name in ("offsets", "doc_hash", "score"):
        assert np.array_equal(getattr(ordered, name), getattr(shuffled, name)), name
    for qid in ordered.qids[:3]:  # the tie rule itself: score descending, then document id descending
        ranked = ordered.ranked(qid)
        assert ranked == sorted(ranked, key=lambda pair: (pair[1], pair[0]), reverse=True)


def test_dictionary_encoded_query_ids_give_the_run_and_qrels_of_plain_strings():
    # the readers give the query ids dictionary-encoded; any dictionary (out of order, unused or
    # repeated values across chunks) gives the codes of the plain strings
    import pyarrow as pa

    qids = ["b", "a", "b", "c", "a", "c"]
    docs = ["1", "2", "3", "4", "5", "6"]
    scores = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    plain = Run.from_columns(qids, docs, scores)
    out_of_order = pa.DictionaryArray.from_arrays(pa.array([1, 0, 1, 3, 0, 3], pa.int32()), pa.array(["a", "b", "x", "c"]))
    chunked = pa.chunked_array([pa.array(qids[:3]).dictionary_encode(), pa.array(qids[3:]).dictionary_encode()])
    for encoded in (out_of_order, chunked, pa.array(qids).dictionary_encode()):
        run = Run.from_columns(encoded, docs, scores)
        assert run.qids == plain.qids == ("b", "a", "c")
        assert run_rows(run) == run_rows(plain)
        assert np.array_equal(run.offsets, plain.offsets)
        qrels = Qrels.from_columns(encoded, docs, [1, 0, 2, 1, 0, 3])
        assert qrels.to_dict() == Qrels.from_columns(qids, docs, [1, 0, 2, 1, 0, 3]).to_dict()
    listed = Run.from_columns(out_of_order, docs, scores, qids=["c", "z", "a", "b"])
    assert listed.qids == ("c", "z", "a", "b") and run_rows(listed) == run_rows(Run.from_dict(listed.to_dict()))


def test_reading_a_run_does_not_import_pandas(tmp_path):
    # pyarrow's own conversions import pandas (0.15-0.3 s of a command's start); the readers avoid them
    import subprocess
    import sys

    path = write(tmp_path, "run", "".join(f"q{i % 3} Q0 d{i} {i} {i % 5}.5 t\n" for i in range(50)))
    qrels = write(tmp_path, "qrels", "q0 0 d3 1\nq1 0 d4 2\n")
    code = (f"from bm25lab.evaluation import evaluate, read_qrels, read_run; "
            f"evaluate(read_qrels({str(qrels)!r}), read_run({str(path)!r}), ['AP', 'nDCG@10', 'P@10'])")
    env, marker = pandas_stand_in(tmp_path)  # records an attempt whether pandas is installed or not
    subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, check=True)
    assert not marker.exists()


@pytest.mark.parametrize("field", ["1e2", "+1", "007", "-0", "1.0", "-3", "4.5", "-0.5", "12"])
def test_label_forms_read_the_same_on_both_paths(tmp_path, field):
    text = f"q 0 d {field}\n"
    slow = _slow_columns(text, readers.TREC_QRELS)
    fast = readers._parse_fast(text.encode(), readers.TREC_QRELS, False)
    if fast is not None:
        assert fast.value.tolist() == slow.value.tolist()
    assert read_qrels(write(tmp_path, "q", text)).grade.tolist() == slow.value.tolist() == [float(field)]
    # trec_eval 10 rules: atol of the text, on the fast path when the text is a plain integer
    slow10 = readers._parse_slow(text.encode(), readers.TREC_QRELS, "mem", False, True)
    fast10 = readers._parse_fast(text.encode(), readers.TREC_QRELS, False, True)
    if fast10 is not None:
        assert fast10.integer.tolist() == slow10.integer.tolist()
    expected = {"1e2": 1, "+1": 1, "007": 7, "-0": 0, "1.0": 1, "-3": -3, "4.5": 4, "-0.5": 0, "12": 12}[field]
    assert read_qrels(write(tmp_path, "q", text), trec_eval=10).label.tolist() == slow10.integer.tolist() == [expected]


def test_hex_is_not_a_relevance_on_either_path(tmp_path):
    with pytest.raises(InputError, match="relevance '0x10' is not a number"):
        read_qrels(write(tmp_path, "q", "q 0 d 0x10\n"))


# ---------------------------------------------------------------------------------------------
# Writer


def test_write_run_ranks_in_tie_rule_order_and_round_trips_scores(tmp_path):
    scores = [0.1 + 0.2, 1e-300, 2.0, 123456789.123456789, -5e-324, 2.0]
    run = {"q1": [(f"d{i}", s) for i, s in enumerate(scores)], "q2": {"x": 1.0}}
    path = tmp_path / "out.trec"
    write_run(run, path, tag="mine")
    lines = path.read_text().splitlines()
    assert lines[0].split() == ["q1", "Q0", "d3", "1", repr(123456789.123456789), "mine"]
    # d2 and d5 tie at 2.0: d5 first; ranks are 1..n
    assert [line.split()[2] for line in lines[:6]] == ["d3", "d5", "d2", "d0", "d1", "d4"]
    assert [line.split()[3] for line in lines[:6]] == ["1", "2", "3", "4", "5", "6"]
    back = read_run(path)
    assert back.to_dict() == Run.from_dict(run).to_dict()
    assert back.name == "mine"


def test_write_run_accepts_hits_text_files_and_gzip(tmp_path):
    hits = {"q": [Hit("b", 1.5), Hit("a", 2.5)]}
    buffer = io.StringIO()
    write_run(hits, buffer)
    assert buffer.getvalue() == "q Q0 a 1 2.5 bm25lab\nq Q0 b 2 1.5 bm25lab\n"
    binary = io.BytesIO()
    write_run(Run.from_dict(hits), binary)
    assert binary.getvalue().decode() == buffer.getvalue()
    write_run(hits, tmp_path / "run.gz")
    assert gzip.decompress((tmp_path / "run.gz").read_bytes()).decode() == buffer.getvalue()


def test_write_run_refuses_ids_a_trec_file_cannot_hold(tmp_path):
    with pytest.raises(InputError, match="document id 'two words'"):
        write_run({"q": {"two words": 1.0}}, tmp_path / "x")
    with pytest.raises(InputError, match="query id"):
        write_run({"q 1": {"d": 1.0}}, tmp_path / "x")
    with pytest.raises(InputError, match="run tag"):
        write_run({"q": {"d": 1.0}}, tmp_path / "x", tag="")


def test_read_then_evaluate_equals_dicts(tmp_path):
    result_files = evaluate(read_qrels(write(tmp_path, "q", QRELS)), read_run(write(tmp_path, "r", RUN)), ["AP", "nDCG"])
    qrels = {"q1": {"d1": 1, "d3": 2}, "q2": {"d9": 0, "d8": -1}}
    run = {"q1": {"d1": 3.5, "d2": 2.25, "d3": 2.25}, "q2": {"d9": -1e-3}}
    assert result_files.per_query == evaluate(qrels, run, ["AP", "nDCG"]).per_query


def test_ties_are_broken_by_document_id_descending_in_code_point_order():
    ids = ["a", "B", "é", "中", "Z", "aa", "a1", "A", "", "😀", "ab"]
    run = Run.from_dict({"q": {doc: 1.0 for doc in ids} | {"top": 2.0, "bottom": 0.0}})
    ranked = [doc for doc, _ in run.ranked("q")]
    assert ranked == ["top", *sorted(ids, reverse=True), "bottom"]
    # UTF-8 byte order is code point order: "😀" (U+1F600) > "中" (U+4E2D) > "é" (U+00E9) > "a"
    assert ranked[1:5] == ["😀", "中", "é", "ab"]


def test_a_run_from_search_results_equals_one_from_their_dict() -> None:
    # Run.from_results takes the engine's order and hashes as they are; from_dict sorts and hashes
    # anew: equal columns, ties (identical documents under ids that differ in case, length and
    # script) included, and an empty query
    import numpy as np

    from bm25lab.engine import Index, Tokenizer
    from bm25lab.evaluation.ranking import Run

    texts = ["wind tunnel flow", "wind tunnel flow", "flow", "tunnel", "flow flow wind", "wind tunnel flow"]
    ids = ["b", "B", "ä", "a10", "a9", "流"]
    index = Index.build(list(zip(ids, texts)), Tokenizer("en", stem=False), backend="numpy")
    results = index.search_many({"q1": "wind flow", "q2": "nothing here", "q3": "tunnel"}, k=10)
    fast, plain = Run.from_results(results), Run.from_dict(results.to_dict())
    assert fast.qids == plain.qids == ("q1", "q2", "q3")
    assert fast.doc_ids.to_pylist() == plain.doc_ids.to_pylist()
    for name in ("offsets", "doc_hash", "score"):
        assert np.array_equal(getattr(fast, name), getattr(plain, name)), name
    assert Run.from_dict(results).doc_ids.to_pylist() == fast.doc_ids.to_pylist()  # from_dict hands over
    ranked = fast.ranked("q1")
    tied = [doc for doc, score in ranked if score == dict(ranked)["b"]]
    assert tied == ["流", "b", "B"]  # identical documents: id descending, code point order


# ---------------------------------------------------------------------- blank lines, comments, huge files
def _naive_content_lines(data: bytes) -> list[tuple[int, list[bytes]]]:
    """The definition: every line whose first field exists and does not start with '#'."""
    found = []
    for number, raw in enumerate(data.split(b"\n"), 1):
        fields = raw.split()
        if fields and not fields[0].startswith(b"#"):
            found.append((number, fields))
    return found


@settings(max_examples=300, deadline=None)
@given(data=st.lists(st.sampled_from([b"\n", b" ", b"\t", b"\r", b"\x0b", b"#", b"a", b"b1", b"\x00", b"\xff", b"# c\n"]),
                     max_size=60).map(b"".join),
       block=st.sampled_from([1, 2, 3, 5, 8, 1 << 22]))
def test_content_lines_skip_blank_and_comment_lines_at_any_block_size(data: bytes, block: int) -> None:
    got = [(number, data[start:end].split()) for number, start, end in readers._content_lines(data, block)]
    assert got == _naive_content_lines(data)


def _blank_gzip(path: Path, megabytes: int, tail: bytes) -> Path:
    """A gzip file of ``megabytes`` MB of blank lines then ``tail``: gzip members concatenated
    (each a MB of newlines), so that it is written in milliseconds."""
    member = gzip.compress(b"\n" * (1 << 20), mtime=0)
    path.write_bytes(member * megabytes + gzip.compress(tail, mtime=0))
    return path


def test_blank_lines_cost_no_python_step(tmp_path: Path) -> None:
    # the audit's file: a small gzip of nothing but blank lines spun in a Python loop (~25 s for
    # these 64 MB before, ~45 minutes for its 2 GB); now numpy and pyarrow skip them
    from recording import at_most_python_steps

    run = _blank_gzip(tmp_path / "blank.run.gz", 64, b"q1 Q0 d1 1 2.5 t\n#\n\n  \nq1 Q0 d2 2 1.5 t\n")
    qrels = _blank_gzip(tmp_path / "blank.qrels.gz", 64, b"q1 0 d1 1\nq1 0 d2 x\n")  # the line-by-line path
    small = tmp_path / "small.run"
    small.write_bytes(b"q1 Q0 d1 1 2.5 t\n")
    read_run(small), read_qrels(_blank_gzip(tmp_path / "small.qrels.gz", 1, b"q1 0 d1 1\n"))  # imports done first
    with at_most_python_steps(200_000):  # 64 M blank lines: a Python step for each would be 300 times more
        assert read_run(run).to_dict() == {"q1": {"d1": 2.5, "d2": 1.5}}
        with pytest.raises(InputError, match=rf"blank.qrels.gz:{64 * (1 << 20) + 2}: relevance 'x'"):
            read_qrels(qrels)


def test_formats_are_detected_and_runs_named_past_any_number_of_blank_lines(tmp_path: Path) -> None:
    # issue 17's detection and run names read the first and the last content lines; issue 19's blank
    # lines cost no Python step there either: BEIR qrels after 2 MB of blank lines are BEIR (the first
    # MB alone held no row, which read as TREC), JSON after them is JSON, and a run's name is its last
    # tag even with 128 MB of blank lines and a comment after it (a Python step per line took ~30 s)
    from recording import at_most_python_steps

    member = gzip.compress(b"\n" * (1 << 20), mtime=0)
    beir = tmp_path / "beir.qrels.gz"
    beir.write_bytes(member * 2 + gzip.compress(b"q1 d1 2\nq1 d2 0\n", mtime=0))
    assert readers.detect_qrels_format(beir) == "beir"
    assert read_qrels(beir).to_dict() == {"q1": {"d1": 2, "d2": 0}}
    ranx = tmp_path / "ranx.json.gz"
    ranx.write_bytes(member * 2 + gzip.compress(b'  {"q1": {"d1": 3.5}}\n', mtime=0))
    assert readers.detect_run_format(ranx) == "ranx" and read_run(ranx).to_dict() == {"q1": {"d1": 3.5}}
    assert not readers._is_json(b"\n  # {not json}\n{}") and readers._is_json(b" \t\n{}")
    run = tmp_path / "tail.run.gz"
    run.write_bytes(gzip.compress(b"q1 Q0 d1 1 2.5 first\nq1 Q0 d2 2 1.5 last\n", mtime=0) + member * 64
                    + gzip.compress(b"# a comment after the run\n  \n", mtime=0) + member * 64)
    (tmp_path / "small.run").write_bytes(b"q1 Q0 d1 1 2.5 t\n")
    read_run(tmp_path / "small.run")  # imports done first
    with at_most_python_steps(200_000):  # 128 M blank lines, none a Python step
        found = read_run(run)
    assert found.name == "last" and found.to_dict() == {"q1": {"d1": 2.5, "d2": 1.5}}
    assert readers._last_fields(b"a b\n# c\n \n") == [b"a", b"b"] and readers._last_fields(b" \n#\n") is None


def test_a_file_too_large_for_the_memory_is_a_clear_error(tmp_path: Path) -> None:
    # under a limit of the address space, a file whose content does not fit: one line, exit 1
    import resource
    import subprocess
    import sys

    limit = 800 * (1 << 20)
    qrels = tmp_path / "qrels"
    qrels.write_text("q1 0 d1 1\n")
    small = tmp_path / "small.run"
    small.write_text("q1 Q0 d1 1 2.5 t\n")
    huge = _blank_gzip(tmp_path / "huge.run.gz", 900, b"q1 Q0 d1 1 2.5 t\n")
    exe = str(Path(sys.executable).parent / "bm25lab")

    def evaluate_limited(run: Path) -> subprocess.CompletedProcess:
        # no bound on the gzip ratio (BM25LAB_GZIP_RATIO=0): the memory's limit is what this tests
        return subprocess.run([exe, "evaluate", str(qrels), str(run), "-m", "P@1"], capture_output=True, text=True,
                              timeout=300, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)),
                              env=dict(os.environ, BM25LAB_GZIP_RATIO="0"))

    assert evaluate_limited(small).returncode == 0  # the limit leaves room for the command itself
    failed = evaluate_limited(huge)
    assert failed.returncode == 1 and failed.stderr.strip().splitlines() == [
        f"bm25lab: error: {huge}: too large to read in the memory available ({huge.stat().st_size:,} bytes on disk); "
        f"split the file or give the process more memory"]


# ---------------------------------------------------------------------------------------------
# Ids of any characters but whitespace (issue 28: a double quote was an internal error of the writer)

# letters, marks, numbers, punctuation, symbols: every printable character but a space or separator
_ID_CHARACTERS = st.characters(categories=("L", "M", "N", "P", "S"))
IDS = st.text(_ID_CHARACTERS, min_size=1, max_size=6)
QIDS = IDS.filter(lambda qid: not qid.startswith("#"))  # a line starting with # is a comment (see below)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(run=st.dictionaries(QIDS, st.dictionaries(IDS, st.floats(allow_nan=False), min_size=1, max_size=4),
                           min_size=1, max_size=4),
       labels=st.lists(st.integers(-1, 4), min_size=16, max_size=16), tag=IDS)
def test_ids_and_tags_of_any_printable_characters_but_whitespace_round_trip(tmp_path: Path, run, labels, tag) -> None:
    # every run writer and reader, and the qrels readers of the formats that keep ids as they are
    expected = Run.from_dict(run)
    for format in RUN_WRITERS:
        path = tmp_path / f"run.{format}"
        write_run(run, path, tag=tag, format=format)
        back = read_run(path, format=format)
        if format == "msmarco":  # ranks, not scores: the order is what round-trips
            assert {q: list(docs) for q, docs in back.to_dict().items()} == \
                   {q: list(docs) for q, docs in expected.to_dict().items()}
        else:
            assert back.to_dict() == expected.to_dict()
        if format == "trec":
            assert back.name == tag
    judged = [(qid, doc) for qid, docs in run.items() for doc in docs]
    qrels = {qid: {} for qid, _ in judged}
    for (qid, doc), label in zip(judged, labels):
        qrels[qid][doc] = label
    texts = {"trec": "".join(f"{q} 0 {d} {qrels[q][d]}\n" for q, d in judged),
             "beir": "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{qrels[q][d]}\n" for q, d in judged),
             "ranx": json.dumps(qrels)}
    for format, text in texts.items():
        assert read_qrels(write(tmp_path, f"qrels.{format}", text), format=format).to_dict() == qrels


def test_a_query_id_that_would_read_as_a_comment_is_refused(tmp_path: Path) -> None:
    for format in ("trec", "msmarco"):
        with pytest.raises(InputError, match="query id '#1'"):
            write_run({"#1": {"d": 1.0}}, tmp_path / "x", format=format)
    write_run({"#1": {"d": 1.0}}, tmp_path / "x.json", format="ranx")  # JSON holds it
    assert read_run(tmp_path / "x.json").to_dict() == {"#1": {"d": 1.0}}


# ---------------------------------------------------------------------------------------------
# Nothing of a reader's left to pyarrow's threads (issue 28: SIGABRT at exit, "terminate called without
# an active exception", in 3 of 100 processes that had imported scikit-learn and read qrels and a run)


def test_pyarrow_lets_go_of_the_bytes_before_the_fast_path_returns() -> None:
    # pyarrow's threaded CSV reader may return while a read-ahead task of its I/O threads still holds the
    # buffer it was given; that task lets it go later, from its own thread, taking the interpreter's lock to
    # release a Python object: at the interpreter's exit that thread is ended inside a destructor that may
    # not throw, and the process aborts. The bytes handed to pyarrow here are a bytearray, which cannot be
    # resized while anything holds it: right after each parse it must be free
    text = bytearray(RUN.encode() * 200)
    held = 0
    for _ in range(300):
        assert readers._parse_fast(text, readers.TREC_RUN, skip_header=False) is not None
        try:
            text.append(10)  # BufferError while an export (pyarrow's hold on it) is alive
            text.pop()
        except BufferError:
            held += 1
            import time

            while True:  # wait for pyarrow, so that the next round starts free
                try:
                    text.append(10)
                    text.pop()
                    break
                except BufferError:
                    time.sleep(0.001)
    assert held == 0


_EXITING = """
import sys, time
from bm25lab.evaluation import read_qrels, read_run
objects = [[i] for i in range(300_000)]  # freed as the interpreter exits: an exit of some milliseconds
qrels, run = read_qrels(sys.argv[1]), read_run(sys.argv[2])
until = time.perf_counter() + 0.003  # then 3 ms of Python without a pause: pyarrow's thread waits for the lock
while time.perf_counter() < until:
    pass
"""


def test_processes_that_read_qrels_and_a_run_exit_cleanly(tmp_path: Path) -> None:
    # the process of the issue, its race made likely (9 and 10 of 30 aborted before): 30 of them, 2 at a time
    import subprocess
    import sys
    from concurrent.futures import ThreadPoolExecutor

    qrels = write(tmp_path, "qrels", QRELS * 50)
    run = write(tmp_path, "run", "".join(f"q{q} Q0 d{d} {d + 1} {100 - d}.5 t\n" for q in range(50) for d in range(60)))

    def one(_: int) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", _EXITING, str(qrels), str(run)], capture_output=True, text=True,
                              timeout=300, cwd=tmp_path)  # not the checkout's root: the installed bm25lab

    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(one, range(30)))
    failed = [(p.returncode, p.stderr[-300:]) for p in done if p.returncode != 0 or p.stderr]
    assert not failed, failed


def test_lines_ending_in_a_carriage_return_alone_are_named(tmp_path: Path) -> None:
    # issue 28: CR-only qrels read as one line of 8 fields ("expected 4 fields, found 8")
    for name, text, reader in (("qrels", "q1 0 d1 1\rq1 0 d2 0\r", read_qrels),
                               ("run", "q1 Q0 d1 1 2.5 t\rq1 Q0 d2 2 1.5 t\r", read_run),
                               ("late", "\n\n# a comment\nq1 0 d1 1\rq1 0 d2 0\r", read_qrels)):
        path = write(tmp_path, name, text)
        line = 4 if name == "late" else 1
        with pytest.raises(InputError, match=rf"{path}:{line}: a carriage return \(CR\) inside the line: lines ending "
                                             rf"in CR alone \(classic Mac OS\) are not read; convert the file to LF"):
            reader(path)
    assert read_qrels(write(tmp_path, "crlf", "q1 0 d1 1\r\nq1 0 d2 0\r\n")).to_dict() == {"q1": {"d1": 1, "d2": 0}}
    assert read_run(write(tmp_path, "json", '{"q1":\r{"d1": 2.5}}\r')).to_dict() == {"q1": {"d1": 2.5}}

