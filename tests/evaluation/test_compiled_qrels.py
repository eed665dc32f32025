"""The compiled TREC qrels reader (engine/core/runreader.c's read_trec_qrels, readers._compiled_qrels) against
the usual readers (pyarrow's and Python's, the specification): the same qrels (query ids in first-appearance
order, documents, hashes, grades to the bit, labels under trec_eval 9's and 10's rules) from every spelling the
usual readers accept, every golden qrels file under tests/ included, and the same error (message, file, line)
for everything they refuse; hostile arguments and random bytes give a Python exception or the usual readers'
outcome, never a crash."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from bm25lab.engine.core import kernels
from bm25lab.evaluation import InputError, readers
from bm25lab.evaluation.ranking import Qrels
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

core = kernels()
pytestmark = pytest.mark.skipif(core is None, reason="the compiled core is not built")
TESTS = Path(__file__).resolve().parents[1]
RULES = (9, 10)


def _read(path: Path, monkeypatch, compiled: bool, rules: int) -> Qrels:
    with monkeypatch.context() as patch:
        if not compiled:
            patch.setattr(readers, "_compiled_qrels", lambda *args: None)
        return readers.read_qrels(path, format="trec", trec_eval=rules)


def _same_qrels(a: Qrels, b: Qrels) -> None:
    assert a.qids == b.qids
    assert np.array_equal(a.offsets, b.offsets)
    assert a.docs.to_pylist() == b.docs.to_pylist()
    assert np.array_equal(a.doc_hash, b.doc_hash)
    assert a.grade.tobytes() == b.grade.tobytes()  # to the bit (no -0.0 either)
    assert a.label.dtype == b.label.dtype and np.array_equal(a.label, b.label)


def _outcome(path: Path, monkeypatch, compiled: bool, rules: int) -> Qrels | str:
    try:
        return _read(path, monkeypatch, compiled, rules)
    except InputError as error:
        return str(error)


def _check_file(tmp_path: Path, monkeypatch, content: bytes) -> list[Qrels | str]:
    """Under either rules, the compiled reader's outcome equals the usual readers'; the compiled path itself
    read every file the usual readers accept without a repeated pair (it did not hand it back to them)."""
    path = tmp_path / "qrels.trec"
    path.write_bytes(content)
    outcomes = []
    for rules in RULES:
        taken = []
        original = readers._compiled_qrels

        def recording(*args, **kwargs):
            qrels = original(*args, **kwargs)
            taken.append(qrels is not None)
            return qrels

        with monkeypatch.context() as patch:
            patch.setattr(readers, "_compiled_qrels", recording)
            compiled = _outcome(path, monkeypatch, True, rules)
        plain = _outcome(path, monkeypatch, False, rules)
        if isinstance(plain, str):
            assert compiled == plain
        else:
            assert isinstance(compiled, Qrels), compiled
            _same_qrels(compiled, plain)
            assert taken == [_core_reads_every_label(content)]
        outcomes.append(plain)
    return outcomes


def _core_reads_every_label(content: bytes) -> bool:
    """Whether the core reads every relevance of these (accepted) qrels itself: parse_score's decimals (see
    test_compiled_reader.py) of magnitude 2^53 at most, whose leading digits need 18 digits at most."""
    import re

    for line in content.split(b"\n"):
        fields = line.split()
        if len(fields) != 4 or fields[0].startswith(b"#"):
            continue
        value = core.parse_score(fields[3])
        digits = re.match(rb"[+-]?0*([0-9]*)", fields[3])[1]  # type: ignore[index]
        if value is None or abs(value) > 2.0**53 or len(digits) > 18:
            return False
    return True


LABELS = st.one_of(
    st.sampled_from(["0", "1", "2", "-1", "3", "+2", "-0", "0.0", "4.5", "-0.5", "1e2", "1E+1", ".5", "5.", "007",
                     "9007199254740992", "9007199254740993", "1e16", "123456789012345678e-3", "1_0", "nan", "inf",
                     "0x10", "abc", "1e400", "-", "+"]),
    st.integers(-5, 5).map(str),
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False).map(repr),
)
IDS = st.text(alphabet="abAB01é中_-.#", min_size=1, max_size=5).filter(lambda t: not t.startswith("#"))
SEPARATORS = st.sampled_from([" ", "\t", "  ", " \t ", "\x0b", "\x0c", "\r"])


@st.composite
def qrels_files(draw) -> bytes:
    """Qrels as people's tools write them, and broken: tabs, CRLF, odd whitespace, fractional and signed labels,
    long and non-ASCII ids, repeated pairs (identical or conflicting), blank and comment lines, lines of three or
    five fields, a last line cut short."""
    rows = draw(st.lists(st.tuples(st.sampled_from(["1", "2", "10", "é", "查询"]), IDS, LABELS), min_size=0,
                         max_size=25))
    if draw(st.booleans()):
        rows.sort(key=lambda row: row[0])
    if rows and draw(st.integers(0, 4)) == 0:  # a repeated pair, identical or not
        q, doc, _ = draw(st.sampled_from(rows))
        rows.append((q, doc, draw(LABELS)))
    end = draw(st.sampled_from(["\n", "\r\n"]))
    lines = []
    for q, doc, label in rows:
        fields = [q, draw(st.sampled_from(["0", "Q0", "1"])), doc, label]
        odd = draw(st.integers(0, 19))
        if odd == 0:
            fields.append("extra")
        elif odd == 1:
            fields.pop(1)
        line = draw(SEPARATORS).join(fields)
        if draw(st.integers(0, 9)) == 0:
            line = draw(st.sampled_from([" ", "\t", "  "])) + line + draw(st.sampled_from([" ", "\t "]))
        lines.append(line)
        if draw(st.integers(0, 9)) == 0:
            lines.append(draw(st.sampled_from(["", " ", "\t\x0b", "# comment", "  # indented comment"])))
    text = end.join(lines)
    cut = draw(st.integers(0, 3))
    if cut == 0:
        text = text[: draw(st.integers(max(0, len(text) - 20), len(text)))]
    elif cut == 1:
        text += end
    return text.encode("utf-8")


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=qrels_files())
def test_the_compiled_reader_reads_what_the_usual_readers_read(tmp_path, monkeypatch, content):
    _check_file(tmp_path, monkeypatch, content)


@pytest.mark.parametrize("content", [
    b"",
    b"\n\n  \n",
    b"# only a comment\n",
    b"1 0 d 1",  # no final newline
    b"1 0 d 1\r\n1 0 e 2\r\n",
    b"1\t0\td\t1\n1 0 e 2  \n",
    b"  1 0 d 1\n\t2 0 d 0\n",
    b"1 0 d 1\n2 0 d 2\n1 0 e 0\n",  # a query's judgments in two places
    b"1 0 d 1\n1 0 d 1\n",  # repeated, identical: one judgment
    b"1 0 d 4.5\n1 0 e -0.5\n1 0 f -0\n1 0 g 1e2\n1 0 h +3\n1 0 i .5\n",  # grades and atol's labels differ
    b"1 0 d 9007199254740992\n",
    b"1 0 d 123456789012345678e-9\n",  # 18 digits for atol
    b"1 0 d 1234567890123456789e-9\n",  # 19: left to Python
    # refused, with the usual readers' message and line
    b"1 0 d 1\n1 0 d 2\n",  # conflicting judgments
    b"1 0 d 1\n1 0 e 2 x\n",
    b"1 0 d 1\n1 e 2\n",
    b"1 0 d nan\n",
    b"1 0 d inf\n",
    b"1 0 d 1_0\n",
    b"1 0 d 9007199254740993\n",
    b"1 0 d abc\n",
    b"1 0 d 1\n1 0 \xff\xfe 1\n",  # a document id that is not UTF-8
    b"1 0 d 1\n\xc3\x28 0 d 1\n",  # a query id that is not UTF-8
    b"1 0 d 1\n1 0 \xed\xa0\x80 1\n",  # a surrogate
])
def test_odd_files_read_or_refused_as_the_usual_readers_do(tmp_path, monkeypatch, content):
    _check_file(tmp_path, monkeypatch, content)


def test_the_labels_follow_the_rules(tmp_path, monkeypatch):
    nine, ten = _check_file(tmp_path, monkeypatch, b"1 0 a 1e2\n1 0 b 4.5\n1 0 c -0.5\n")
    assert isinstance(nine, Qrels) and isinstance(ten, Qrels)
    as_read = {q: dict(zip(r.docs.to_pylist(), r.label.tolist())) for q, r in (("9", nine), ("10", ten))}
    assert as_read == {"9": {"a": 100, "b": 4, "c": 0}, "10": {"a": 1, "b": 4, "c": 0}}


GOLDEN_QRELS = sorted(path for path in {*TESTS.rglob("*qrels*"), *TESTS.rglob("*.qrel")}
                      if path.is_file() and path.suffix not in (".py", ".json", ".gz"))


def test_the_golden_qrels_are_many():
    assert len(GOLDEN_QRELS) >= 10


@pytest.mark.parametrize("path", GOLDEN_QRELS, ids=lambda path: str(path.relative_to(TESTS)))
def test_every_golden_qrels_file_reads_as_the_usual_readers_read_it(tmp_path, monkeypatch, path):
    _check_file(tmp_path, monkeypatch, path.read_bytes())


def test_the_bundled_collections_qrels_are_read_by_the_core(monkeypatch):
    from bm25lab import corpora

    original = readers._compiled_qrels
    for name in ("cranfield", "cisi"):
        path = corpora.get(name).qrels_path
        calls = []
        monkeypatch.setattr(readers, "_compiled_qrels", lambda *a: calls.append(original(*a)) or calls[-1])
        compiled = readers.read_qrels(path)
        monkeypatch.setattr(readers, "_compiled_qrels", lambda *a: None)
        _same_qrels(compiled, readers.read_qrels(path))
        assert len(calls) == 1 and calls[0] is not None


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=st.binary(max_size=300) | st.lists(st.sampled_from([b"1", b"0", b"d", b"4.5", b"-1", b" ", b"\t",
                                                                  b"\n", b"\r", b"#", b"\xff", b"\xc3", b"e"]),
                                                  max_size=80).map(b"".join))
def test_random_bytes_are_read_or_refused_as_the_usual_readers_do(tmp_path, monkeypatch, content):
    _check_file(tmp_path, monkeypatch, content)


# ---------------------------------------------------------------------------------------------
# Hostile arguments: a Python exception, never a crash


def _arguments(data: bytes, rows: int = 8) -> dict:
    return {"data": np.frombuffer(data, dtype=np.uint8), "lo": 0, "hi": len(data),
            "codes": np.empty(rows, np.int32), "doc_offsets": np.empty(rows + 1, np.int32),
            "doc_bytes": np.empty(len(data), np.uint8), "hashes": np.empty(rows, np.uint64),
            "grades": np.empty(rows, np.float64), "labels": np.empty(rows, np.int64)}


LINES = b"1 0 d 2\n1 0 e 4.5\n2 0 d 1e2\n"


@pytest.mark.parametrize("change, error", [
    ({"lo": -1}, ValueError), ({"hi": len(LINES) + 1}, ValueError), ({"lo": 5, "hi": 4}, ValueError),
    ({"codes": np.empty(8, np.int64)}, TypeError), ({"codes": np.empty(2, np.int32)}, ValueError),
    ({"doc_offsets": np.empty(0, np.int32)}, ValueError), ({"doc_offsets": np.empty(2, np.int32)}, ValueError),
    ({"doc_offsets": np.empty(9, np.int64)}, TypeError), ({"doc_bytes": np.empty(3, np.uint8)}, ValueError),
    ({"hashes": np.empty(8, np.int64)}, TypeError), ({"grades": np.empty(8, np.float32)}, TypeError),
    ({"grades": np.empty(16)[::2]}, TypeError), ({"labels": np.empty(8, np.int32)}, TypeError),
    ({"labels": np.empty(2, np.int64)}, ValueError), ({"data": "text"}, TypeError),
    ({"data": np.zeros(len(LINES), np.int32)}, TypeError), ({"codes": np.frombuffer(bytes(32), np.int32)}, TypeError),
    ({"codes": None}, TypeError), ({"grades": np.frombuffer(bytearray(72), np.float64, offset=1, count=8)}, ValueError),
])
def test_hostile_arguments_are_python_errors(change, error):
    with pytest.raises(error):
        core.read_trec_qrels(**{**_arguments(LINES), **change})


def test_the_reader_given_room_reads_the_lines():
    arguments = _arguments(LINES)
    status, rows, qids = core.read_trec_qrels(**arguments)
    assert (status, rows, qids) == (0, 3, ["1", "2"])
    assert arguments["codes"][:3].tolist() == [0, 0, 1] and arguments["labels"][:3].tolist() == [2, 4, 1]
    assert arguments["grades"][:3].tolist() == [2.0, 4.5, 100.0]
    assert bytes(arguments["doc_bytes"][: arguments["doc_offsets"][3]]) == b"ded"


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=200), lo=st.integers(0, 200), hi=st.integers(0, 200), rows=st.integers(0, 40))
def test_random_bytes_and_bounds_into_the_reader_never_crash(data, lo, hi, rows):
    arguments = _arguments(data, rows)
    arguments.update(lo=lo, hi=hi)
    try:
        status, n, qids = core.read_trec_qrels(**arguments)
    except ValueError:
        return
    assert status in (0, 1) and 0 <= n <= rows
    if status == 0:
        offsets = arguments["doc_offsets"][: n + 1]
        assert offsets[0] == 0 and (np.diff(offsets) > 0).all() and offsets[-1] <= hi - lo
        assert all(isinstance(qid, str) for qid in qids) and len(qids) <= n
        assert (arguments["codes"][:n] >= 0).all() and (arguments["codes"][:n] < max(len(qids), 1)).all()
