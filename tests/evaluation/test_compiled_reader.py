"""The compiled TREC run reader (engine/core/runreader.c, readers._compiled_run) against the usual readers
(pyarrow's and Python's, the specification): the same runs (query ids, documents, hashes, scores to the bit,
tie-rule order, name) from every spelling the usual readers accept, every golden run under tests/ included,
and the same error (message, file, line) for everything they refuse; its hash against string_hashes, its
decimals against Python's float, its UTF-8 check against Python's decoder; hostile arguments and random
bytes give a Python exception or the usual readers' outcome, never a crash."""
from __future__ import annotations

import math
import struct
import sys
from pathlib import Path

import numpy as np
import pytest
from bm25lab.engine.columns import string_hashes
from bm25lab.engine.core import kernels
from bm25lab.evaluation import InputError, readers
from bm25lab.evaluation.ranking import Run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

core = kernels()
pytestmark = pytest.mark.skipif(core is None, reason="the compiled core is not built")
TESTS = Path(__file__).resolve().parents[1]

# ---------------------------------------------------------------------------------------------
# The pieces: hash, decimals, UTF-8


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=40), min_size=1, max_size=20))
def test_the_readers_hash_is_string_hashes(texts):
    import pyarrow as pa

    assert [core.string_hash(t.encode()) for t in texts] == string_hashes(pa.array(texts, type=pa.string())).tolist()


def _bits(value: float) -> bytes:
    return struct.pack("<d", value)


ODD_SCORES = [
    "0", "-0", "+0", "0.0", "-0.0", "00012", "5.", ".5", "+.5", "-.5", "+5", "1e5", "1E5", "1e+05", "1e-05",
    "-1.5E-3", "12.5e2", "1e22", "1e23", "1e-22", "1e-23", "9007199254740992", "9007199254740993",
    "9007199254740993e-5", "1234567890123456789", "12345678901234567890", "0.1234567890123456789",
    "1.0000000000000000000000001", "0.000000000000000000000000001", "4.9e-324", "2.2250738585072014e-308",
    "1.7976931348623157e308", "1e400", "-1e400", "1e-400", "1e0000000000000000000000005", "inf", "-inf", "+inf",
    "Infinity", "-INF", "123.456", "3.141592653589793", "0.30000000000000004", "1" * 30, "0." + "0" * 30 + "1",
    "nan", "NaN", "-nan", "1_0", "0x1p3", "1e", "e5", ".", "+", "-", "+-1", "1.2.3", "1e5.5", "1ee5", "١", "1d5",
    "12.345678901234567", "-0.12345678901234567", "9999999999999999999", "18446744073709551615",
    "1.8446744073709551615e19", "9.999999999999999999e-19", "0.5000000000000000001", "2.5000000000000001e-16",
    "9007199254740993.5", "4503599627370497.5", "1e19", "1e-19", "1e20", "1e-20", "0e999999", "-0e-999999",
    "1e+", "1e-", "1E+x", "",
]


def _fast_path_takes(text: str) -> bool:
    """Whether the core must read ``text`` itself (see runreader.c): a decimal of at most 19 significant
    digits w times 10^q, with w <= 2^53 and |q| <= 22, or |q| <= 19, or w == 0."""
    import re

    match = re.fullmatch(r"[+-]?([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]+))?", text)
    if match is None or not (match.group(1) or match.group(2)):
        return False
    whole, fraction, exponent = match.group(1), match.group(2) or "", match.group(3)
    if exponent is not None and int(exponent.lstrip("+-")[:-1] or "0") > 100_000:
        return False  # the core stops reading an exponent past 100,000
    digits = (whole + fraction).lstrip("0")
    if len(digits) > 19:
        return False
    w = int(digits or "0")
    q = int(exponent or 0) - len(fraction)
    return w == 0 or (w <= 2**53 and abs(q) <= 22) or abs(q) <= 19


@pytest.mark.parametrize("text", ODD_SCORES)
def test_a_score_read_by_the_core_is_pythons_float(text):
    value = core.parse_score(text.encode())
    assert (value is not None) == _fast_path_takes(text), text
    if value is not None:  # exactly Python's float, but -0.0 read as 0.0 (C compares them equal)
        assert _bits(value) == _bits(float(text) + 0.0)


def test_the_core_reads_the_usual_spellings_itself():
    # the forms of run files, 17 digits included: the core must take them (else every score would go
    # through Python, or the file to the usual readers)
    for text in ["24.56", "-1e-3", "0.5", "12", "1e5", ".5", "5.", "+3.25", "9007199254740992", "1e22", "1e-22",
                 "12.345678901234567", "0.30000000000000004", "11.02240374612502", "1.5e-7", "-7.25E+3"]:
        value = core.parse_score(text.encode())
        assert value is not None and _bits(value) == _bits(float(text)), text
    for text in ["1e23", "12345678901234567890", "inf", "nan", "4.9e-324", "1_0", "1.2345678901234567e-05"]:
        assert core.parse_score(text.encode()) is None, text


@settings(max_examples=1000, deadline=None)
@given(st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e19, max_value=1e19).map(repr),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda x: f"{x:.6e}"),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda x: f"{x:.17g}"),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6).map(lambda x: f"{x:.3f}"),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e3, max_value=1e3).map(lambda x: f"{x:.17f}"),
    st.tuples(st.integers(0, 10**25), st.integers(-40, 40)).map(lambda p: f"{p[0]}e{p[1]}"),
    st.tuples(st.integers(0, 2**64), st.integers(-19, 19)).map(lambda p: f"{p[0]}e{p[1]}"),
    st.tuples(st.integers(0, 10**20), st.integers(0, 25)).map(lambda p: f"{str(p[0])[:max(1, len(str(p[0])) - p[1])]}."
                                                                   f"{str(p[0])[max(1, len(str(p[0])) - p[1]):]}"),
))
def test_random_scores_read_by_the_core_are_pythons_float(text):
    value = core.parse_score(text.encode())
    assert (value is not None) == _fast_path_takes(text), text
    if value is not None:
        assert _bits(value) == _bits(float(text) + 0.0), text


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=0, max_size=24))
def test_random_bytes_as_a_score_are_pythons_float_or_left_to_it(raw):
    value = core.parse_score(raw)
    if value is not None:
        assert _bits(value) == _bits(float(raw) + 0.0)


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=0, max_size=12))
def test_the_utf8_check_is_pythons_strict_decoder(raw):
    try:
        raw.decode("utf-8")
        valid = True
    except UnicodeDecodeError:
        valid = False
    assert core.valid_utf8(raw) == valid
    assert core.valid_utf8(b"x" + raw + b"x") == valid


# ---------------------------------------------------------------------------------------------
# Whole files: the compiled reader and the usual readers


def _chunked(monkeypatch, limit: int) -> None:
    """Chunks of about ``limit`` bytes: below 1 KiB cut anywhere (not only where the query id changes), so
    that queries' segments span chunks; from 1 KiB on (the test files are smaller), as the reader cuts them."""
    monkeypatch.setattr(readers, "_CHUNK_LIMIT", limit)
    monkeypatch.setattr(readers, "_QUERY_LINES", 0 if limit < 1 << 10 else readers._QUERY_LINES)


def test_chunks_end_where_the_query_changes_so_each_query_is_ordered_by_one_reader(tmp_path, monkeypatch):
    # each query's lines out of rank order: the reader sorts each query's rows itself, the run needs no sort
    rng = np.random.default_rng(3)
    lines = [f"q{q} Q0 d{d} 0 {s} t" for q in range(6) for d, s in zip(rng.permutation(40), rng.integers(0, 9, 40))]
    content = ("\n".join(lines) + "\n").encode()
    monkeypatch.setattr(readers, "_CHUNK_LIMIT", 300)  # about 10 chunks, each cut where a query starts
    bounds = readers._line_chunks(content, readers._pieces(len(content)))
    assert len(bounds) > 3 and all(content[b : b + 3] in (b"q1 ", b"q2 ", b"q3 ", b"q4 ", b"q5 ") for b in bounds[1:-1])
    flags = []
    original = Run.from_encoded.__func__

    def recording(cls, *args, **kwargs):
        if "ranked" in kwargs:  # the compiled reader's call (the usual readers' goes through from_columns)
            flags.append(kwargs["ranked"])
        return original(cls, *args, **kwargs)

    monkeypatch.setattr(Run, "from_encoded", classmethod(recording))
    _check_file(tmp_path, monkeypatch, content)
    assert flags == [True]


def _read(path: Path, monkeypatch, compiled: bool) -> Run:
    with monkeypatch.context() as patch:
        patch.setattr(readers, "_COMPILED_FROM", 0 if compiled else 1 << 62)
        return readers.read_run(path)


def _same_run(a: Run, b: Run) -> None:
    assert a.qids == b.qids and a.name == b.name
    assert np.array_equal(a.offsets, b.offsets)
    assert a.doc_ids.to_pylist() == b.doc_ids.to_pylist()
    assert np.array_equal(a.doc_hash, b.doc_hash)
    assert a.score.tobytes() == b.score.tobytes()  # to the bit (no -0.0 either)


def _outcome(path: Path, monkeypatch, compiled: bool) -> Run | str:
    try:
        return _read(path, monkeypatch, compiled)
    except InputError as error:
        return str(error)


def _check_file(tmp_path: Path, monkeypatch, content: bytes) -> Run | str:
    """The compiled reader's outcome equals the usual readers'; the compiled path itself read every
    file the usual readers accept (it did not hand it back to them)."""
    path = tmp_path / "run.trec"
    path.write_bytes(content)
    taken = []
    original = readers._compiled_run

    def recording(*args, **kwargs):
        run = original(*args, **kwargs)
        taken.append(run is not None)
        return run

    with monkeypatch.context() as patch:
        patch.setattr(readers, "_compiled_run", recording)
        plain = _outcome(path, monkeypatch, compiled=False)
        compiled = _outcome(path, monkeypatch, compiled=True)
    if isinstance(plain, str):
        assert compiled == plain
    else:
        assert isinstance(compiled, Run), compiled
        _same_run(compiled, plain)
        if readers.detect_run_format(path) == "trec":  # (a line cut to 3 fields reads as an MS MARCO run)
            assert taken == [True]  # only compiled runs are recorded: the plain read never calls it
    return plain


SCORES = st.one_of(
    st.sampled_from(["1", "2.5", "2.5", "0.125", "-1e-3", "+.5", "5.", "1E+2", "-0", "0.0", "12.000", "inf", "-inf",
                     "4.9e-324", "9007199254740993", "0.1234567890123456789", "1e23"]),
    st.floats(allow_nan=False).map(repr),
)
IDS = st.text(alphabet="abAB01é中_-.#", min_size=1, max_size=5).filter(lambda t: not t.startswith("#"))
SEPARATORS = st.sampled_from([" ", "\t", "  ", " \t ", "\x0b", "\x0c", "\r"])


@st.composite
def run_files(draw) -> bytes:
    rows = draw(st.lists(st.tuples(st.sampled_from(["q1", "q2", "10", "é"]), IDS, SCORES), min_size=0, max_size=30))
    if draw(st.booleans()):  # most runs list each query's documents together
        rows.sort(key=lambda row: row[0])
    end = draw(st.sampled_from(["\n", "\r\n"]))
    lines = []
    for qid, doc, score in rows:
        sep = draw(SEPARATORS)
        fields = [qid, "Q0", doc, str(draw(st.integers(0, 9))), score, "tag"]
        if draw(st.integers(0, 9)) == 0:
            fields.append("more junk")
        line = sep.join(fields)
        if draw(st.integers(0, 9)) == 0:
            line = draw(st.sampled_from([" ", "\t", "  "])) + line + draw(st.sampled_from([" ", "\t "]))
        lines.append(line)
        extra = draw(st.integers(0, 14))
        if extra == 0:
            lines.append("")
        elif extra == 1:
            lines.append("# a comment")
        elif extra == 2:
            lines.append(" \t ")
    text = end.join(lines)
    if lines and draw(st.booleans()):
        text += end  # else: a last line without its newline
    return text.encode("utf-8")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=run_files(), chunk=st.sampled_from([1 << 30, 40, 97]))
def test_the_compiled_reader_reads_what_the_usual_readers_read(tmp_path, monkeypatch, content, chunk):
    # chunk: small chunk limits cut the file into many chunks, queries' segments spanning them
    _chunked(monkeypatch, chunk)
    _check_file(tmp_path, monkeypatch, content)


@pytest.mark.parametrize("chunk", [1 << 30, 30])
@pytest.mark.parametrize("content", [
    b"",
    b"\n\n  \n",
    b"# only a comment\n",
    b"q Q0 d 1 1.5 t",  # no final newline
    b"q Q0 d 1 1.5 t\r\nq Q0 e 2 1.5 t\r\n",
    b"q\tQ0\td\t1\t1.5\tt\nq Q0 e 2 1.5 t  \n",
    b"  q Q0 d 1 1.5 t\n\tq Q0 e 2 2.5 t more junk\n",
    b"q Q0 d 1 1.5 t\nq Q0 e 1 1.5 t\nq Q0 f 1 1.5 t\n",  # ties: document id descending
    b"q Q0 d 1 3 t\nr Q0 d 1 2 t\nq Q0 e 1 1 t\n",  # a query's documents in two segments
    b"q Q0 d 1 -0 t\nq Q0 e 1 0 t\nq Q0 f 1 -0.0 t\n",  # -0.0 is 0.0, tied with 0
    b"q Q0 d 1 inf t\nq Q0 e 1 -inf t\nq Q0 f 1 1e400 t\nq Q0 g 1 4.9e-324 t\n",
    # refused, with the usual readers' message and line
    b"q Q0 d 1 1.0 t\nq Q0 e 2 1.0\n",
    b"q Q0 d 1 1.0 t\nq Q0 e 2 nan t\n",
    b"q Q0 d 1 1_0 t\n",
    b"q Q0 d 1 0x1p3 t\n",
    b"q Q0 d 1 abc t\n",
    b"q Q0 d 1 1.0 t\nq Q0 d 1 1.0 t\n",  # a repeated document in one segment
    b"q Q0 d 1 1.0 t\nr Q0 x 1 1.0 t\nq Q0 d 1 2.0 t\n",  # ... in two segments of the query
    b"q Q0 d 1 1.0 t\nq Q0 e 2 0.5 t\n\nq Q0 d 3 0.2 t\n",
    b"q Q0 d 1 1.0 t\nq Q0 \xff\xfe 2 1.0 t\n",  # a document id that is not UTF-8
    b"q Q0 d 1 1.0 t\n\xc3\x28 Q0 d 2 1.0 t\n",  # a query id that is not UTF-8
    b"q Q0 d 1 1.0 t\nq Q0 \xed\xa0\x80 2 1.0 t\n",  # a surrogate
    b"q Q0 d 1 1.0 t\nq  e 2 1.0 t\n",
    b"q Q0 d 1 1.0 t\nq Q0 e 2 1.0  \n",
])
def test_odd_files_read_or_refused_as_the_usual_readers_do(tmp_path, monkeypatch, content, chunk):
    _chunked(monkeypatch, chunk)
    _check_file(tmp_path, monkeypatch, content)


def test_a_repeated_document_across_two_chunks_names_its_line(tmp_path, monkeypatch):
    lines = [f"q Q0 d{i} {i} {100 - i} t" for i in range(40)] + ["q Q0 d3 41 0.5 t"]
    path = tmp_path / "run.trec"
    path.write_text("\n".join(lines) + "\n")
    _chunked(monkeypatch, 200)  # the query's segment spans several chunks
    monkeypatch.setattr(readers, "_COMPILED_FROM", 0)
    chunks = readers._compiled_chunks(path.read_bytes(), core)
    assert chunks is not None and len(chunks[0]) > 2  # the kernel saw no repeat within any chunk
    with pytest.raises(InputError, match="duplicate document 'd3' for query 'q'") as caught:
        readers.read_run(path)
    assert (caught.value.path, caught.value.line) == (str(path), 41)


def test_a_segment_longer_than_the_kernels_hash_set_is_checked_in_full(tmp_path, monkeypatch):
    monkeypatch.setattr(readers, "_SEEN_DOCUMENTS", 1 << 10)  # segments of up to 512 rows checked
    lines = [f"q Q0 d{i} {i} {i % 7} t" for i in range(3000)] + ["q Q0 d5 1 0.5 t"]
    read = readers._compiled_chunks(("\n".join(lines[:-1]) + "\n").encode(), core)
    assert read is not None and not any(chunk.grouped for chunk in read[0])  # so the run gets the full check
    _check_file(tmp_path, monkeypatch, ("\n".join(lines[:-1]) + "\n").encode())
    message = _check_file(tmp_path, monkeypatch, ("\n".join(lines) + "\n").encode())
    assert isinstance(message, str) and message.endswith("3001: duplicate document 'd5' for query 'q' "
                                                         "(trec_eval refuses duplicates)")


def test_too_many_scores_for_pythons_float_send_the_file_to_the_usual_readers(tmp_path, monkeypatch):
    monkeypatch.setattr(readers, "_SLOW_SCORES", 0)
    content = "".join(f"q Q0 d{i} 1 {'inf' if i % 2 else '1e400'} t\n" for i in range(200)).encode()
    path = tmp_path / "run.trec"
    path.write_bytes(content)
    assert readers._compiled_chunks(content, core) is None
    _same_run(_read(path, monkeypatch, compiled=True), _read(path, monkeypatch, compiled=False))


def test_large_runs_are_read_by_the_compiled_reader(tmp_path, monkeypatch):
    monkeypatch.setattr(readers, "_COMPILED_FROM", 1 << 24)  # 16 MiB here, as a mapped file (readers._MAP_FROM)
    rng = np.random.default_rng(1)
    lines = [f"q{q} Q0 D{d} {r} {s:.3f} a-run-tag-of-some-length" for r, (q, d, s) in
             enumerate(zip(np.repeat(np.arange(200), 1000), rng.permutation(200_000), rng.gamma(2.0, 3.0, 200_000)))]
    path = tmp_path / "big.trec"
    path.write_text("\n".join(lines) + "\n" + "\n".join(lines) + "\n")  # queries repeat, in two segments each
    assert path.stat().st_size >= readers._COMPILED_FROM
    calls = []
    original = readers._compiled_run
    monkeypatch.setattr(readers, "_compiled_run", lambda *a, **k: calls.append(1) or original(*a, **k))
    with pytest.raises(InputError, match=r"big.trec:200001: duplicate document"):
        readers.read_run(path)
    copies = ["\n".join(lines).replace("Q0 D", f"Q0 {prefix}") for prefix in "DE"]
    path.write_text("\n".join(copies) + "\n" + "\n".join(lines[:5]).replace(" a-run-tag-of-some-length", " run2").replace("Q0 D", "Q0 F"))
    run = readers.read_run(path)
    assert calls == [1, 1] and run.name == "run2" and len(run) == 400_005
    monkeypatch.setattr(readers, "_COMPILED_FROM", 1 << 62)
    _same_run(run, readers.read_run(path))


def test_a_file_cut_into_chunks_numbers_its_queries_in_first_appearance_order(monkeypatch):
    content = b"b Q0 x 1 1 t\na Q0 x 1 1 t\nc Q0 x 1 1 t\na Q0 y 1 1 t\nd Q0 x 1 1 t\nb Q0 y 1 1 t\n"
    for limit in (1 << 30, 13, 26, 39):
        _chunked(monkeypatch, limit)
        chunks, codes, *_ = readers._compiled_chunks(content, core)
        codes, qids, grouped = readers._global_codes(chunks, codes)
        assert qids == ("b", "a", "c", "d") and codes.tolist() == [0, 1, 2, 1, 3, 0] and not grouped


# ---------------------------------------------------------------------------------------------
# Runs in rank order: the kernel orders their ties itself


@st.composite
def ranked_run_files(draw) -> bytes:
    """A run as systems write it: each query's documents together, scores non-increasing, many ties."""
    lines = []
    for qid in draw(st.lists(st.sampled_from(["q1", "q2", "10", "é"]), min_size=1, max_size=4, unique=True)):
        docs = draw(st.lists(st.text(alphabet="dD01é中z", min_size=1, max_size=4), min_size=1, max_size=40,
                             unique=True))
        scores = sorted(draw(st.lists(st.sampled_from([3.0, 2.5, 2.5, 1.0, 0.0, -0.0, -1e-3, 7.25]),
                                      min_size=len(docs), max_size=len(docs))), reverse=True)
        lines += [f"{qid} Q0 {doc} {rank} {score!r} tag" for rank, (doc, score) in enumerate(zip(docs, scores))]
    return ("\n".join(lines) + "\n").encode()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=ranked_run_files(), chunk=st.sampled_from([None, 64, 301]))
def test_a_run_in_rank_order_has_its_ties_ordered_by_the_kernel(tmp_path, monkeypatch, content, chunk):
    # one chunk: the kernel orders every tie (the tie rule's sort is skipped); many chunks: a tie across
    # two of them leaves the ordering to the tie rule
    flags = []
    original = Run.from_encoded.__func__

    def recording(cls, *args, **kwargs):
        if "ranked" in kwargs:  # the compiled reader's call (the usual readers' goes through from_columns)
            flags.append(kwargs["ranked"])
        return original(cls, *args, **kwargs)

    with monkeypatch.context() as patch:
        if chunk is None:
            patch.setattr(readers, "_line_chunks", lambda data, pieces: [0, len(data)])
        else:
            _chunked(patch, chunk)
        patch.setattr(Run, "from_encoded", classmethod(recording))
        _check_file(tmp_path, monkeypatch, content)
    assert flags == [True] if chunk is None else len(flags) == 1


@st.composite
def query_shuffled_run_files(draw) -> bytes:
    """Each query's documents together, in any order (scores with many ties)."""
    lines = []
    for qid in draw(st.lists(st.sampled_from(["q1", "q2", "10", "é"]), min_size=1, max_size=4, unique=True)):
        docs = draw(st.lists(st.text(alphabet="dD01é中z", min_size=1, max_size=4), min_size=1, max_size=60,
                             unique=True))
        scores = draw(st.lists(st.sampled_from(["3", "2.5", "2.50", "1", "0", "-0", "-1e-3", "7.25", "1e2", "100"]),
                               min_size=len(docs), max_size=len(docs)))
        lines += [f"{qid} Q0 {doc} 0 {score} tag" for doc, score in zip(docs, scores)]
    return ("\n".join(lines) + "\n").encode()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=query_shuffled_run_files())
def test_a_run_out_of_rank_order_is_ordered_by_the_reader(tmp_path, monkeypatch, content):
    flags = []
    original = Run.from_encoded.__func__

    def recording(cls, *args, **kwargs):
        if "ranked" in kwargs:
            flags.append(kwargs["ranked"])
        return original(cls, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(Run, "from_encoded", classmethod(recording))
        _check_file(tmp_path, monkeypatch, content)
    assert flags == [True]


def test_ties_the_reader_cannot_order_are_left_to_the_tie_rule(tmp_path, monkeypatch):
    long_tie = "".join(f"q Q0 d{i:03d} {i} 1.5 t\n" for i in range(100))  # 100 tied rows: more than the reader sorts
    out_of_order = "q Q0 a 1 1 t\nq Q0 b 2 2 t\nq Q0 c 3 2 t\n"  # sorted by the reader itself
    slow_score = "q Q0 a 1 inf t\nq Q0 b 2 1 t\nq Q0 c 3 1 t\n"
    for text, ranked in ((long_tie, False), (out_of_order, True), (slow_score, False)):
        monkeypatch.setattr(readers, "_CHUNK_LIMIT", 1 << 30)
        with monkeypatch.context() as patch:
            patch.setattr(readers, "_line_chunks", lambda data, pieces: [0, len(data)])  # one chunk
            chunks = readers._compiled_chunks(text.encode(), core)
        assert chunks is not None and chunks[0][0].ranked == ranked
        run = _check_file(tmp_path, monkeypatch, text.encode())
        assert isinstance(run, Run)
    assert run.ranked("q") == [("a", math.inf), ("c", 1.0), ("b", 1.0)]


# ---------------------------------------------------------------------------------------------
# Every golden run under tests/, and runs of every odd kind


GOLDEN_RUNS = sorted({*TESTS.rglob("*.run"), *TESTS.rglob("*.run.gz"),
                      *(TESTS / "evaluation" / "golden" / "trec_eval_10" / "quicktest").glob("results.*")})


def test_the_golden_runs_are_many():
    assert len(GOLDEN_RUNS) >= 45  # the adversarial cases, Cranfield's and CISI's runs, trec_eval's own


@pytest.mark.parametrize("path", GOLDEN_RUNS, ids=lambda path: str(path.relative_to(TESTS)))
def test_every_golden_run_reads_as_the_usual_readers_read_it(tmp_path, monkeypatch, path):
    import gzip

    content = path.read_bytes()
    _check_file(tmp_path, monkeypatch, gzip.decompress(content) if content[:2] == b"\x1f\x8b" else content)


ODD_IDS = st.one_of(
    IDS,
    st.text(alphabet="xyz09", min_size=200, max_size=3000),  # very long ids
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters=" \t\n\r\x0b\x0c#"),
            min_size=1, max_size=8),  # any non-ASCII text (ideographic spaces stay inside an id)
)
ODD_SCORES = st.one_of(SCORES, st.sampled_from(["nan", "NaN", "-nan", "1e", "+-1", "0x1p3", "1_0", "١", "Infinity",
                                                "-1.5E-3", "+.5e+3", "1.2345678901234567e-05", "12.345678901234567"]))


@st.composite
def odd_run_files(draw) -> bytes:
    """Runs as people's tools write them, and broken: tabs, CRLF, odd whitespace, scientific scores, signs,
    nan and inf, long and non-ASCII ids, repeated documents, blank and comment lines, a last line cut short."""
    rows = draw(st.lists(st.tuples(st.sampled_from(["q1", "q2", "10", "é", "查询"]), ODD_IDS, ODD_SCORES),
                         min_size=1, max_size=25))
    if draw(st.booleans()):
        rows.sort(key=lambda row: row[0])
    if draw(st.integers(0, 4)) == 0:  # a repeated document
        rows.append(draw(st.sampled_from(rows)))
    end = draw(st.sampled_from(["\n", "\r\n"]))
    lines = [draw(SEPARATORS).join([q, "Q0", doc, "1", score, "tag"]) for q, doc, score in rows]
    if draw(st.integers(0, 3)) == 0:  # blank, whitespace and comment lines among them
        at = draw(st.integers(0, len(lines)))
        lines.insert(at, draw(st.sampled_from(["", " ", "\t\x0b", "# comment", "  # indented comment"])))
    text = end.join(lines)
    cut = draw(st.integers(0, 3))
    if cut == 0:  # the last line cut short, wherever
        text = text[: draw(st.integers(max(0, len(text) - 30), len(text)))]
    elif cut == 1:
        text += end
    return text.encode("utf-8")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=odd_run_files(), chunk=st.sampled_from([1 << 30, 60]))
def test_odd_runs_are_read_or_refused_as_the_usual_readers_do(tmp_path, monkeypatch, content, chunk):
    _chunked(monkeypatch, chunk)
    _check_file(tmp_path, monkeypatch, content)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=st.binary(max_size=300) | st.lists(st.sampled_from([b"q", b"Q0", b"d", b"1", b"2.5", b"t", b" ",
                                                                  b"\t", b"\n", b"\r", b"#", b"\xff", b"\xc3"]),
                                                  max_size=80).map(b"".join))
def test_random_bytes_are_read_or_refused_as_the_usual_readers_do(tmp_path, monkeypatch, content):
    # any file the run detection takes for a TREC run: the same run, or the same error
    path = tmp_path / "run.trec"
    path.write_bytes(content)
    try:
        if readers.detect_run_format(path) != "trec":
            return
    except InputError:
        return
    _check_file(tmp_path, monkeypatch, content)


# ---------------------------------------------------------------------------------------------
# Hostile arguments: a Python exception, never a crash


def _arguments(data: bytes, rows: int = 8) -> dict:
    return {"data": np.frombuffer(data, dtype=np.uint8), "lo": 0, "hi": len(data),
            "codes": np.empty(rows, np.int32), "doc_offsets": np.empty(rows + 1, np.int32),
            "doc_bytes": np.empty(len(data), np.uint8), "hashes": np.empty(rows, np.uint64),
            "scores": np.empty(rows, np.float64), "slow_rows": np.empty(4, np.int64),
            "slow_starts": np.empty(4, np.int64), "slow_ends": np.empty(4, np.int64), "seen_limit": 1024}


LINES = b"q Q0 d 1 2.5 t\nq Q0 e 2 1.5 t\nr Q0 d 1 inf t\n"


@pytest.mark.parametrize("change, error", [
    ({"lo": -1}, ValueError), ({"hi": len(LINES) + 1}, ValueError), ({"lo": 5, "hi": 4}, ValueError),
    ({"codes": np.empty(8, np.int64)}, TypeError), ({"codes": np.empty(2, np.int32)}, ValueError),
    ({"doc_offsets": np.empty(0, np.int32)}, ValueError), ({"doc_offsets": np.empty(2, np.int32)}, ValueError),
    ({"doc_bytes": np.empty(3, np.uint8)}, ValueError), ({"hashes": np.empty(8, np.int64)}, TypeError),
    ({"scores": np.empty(8, np.float32)}, TypeError), ({"scores": np.empty(16)[::2]}, TypeError),
    ({"scores": np.empty(8).view(np.uint64)}, TypeError), ({"slow_rows": np.empty(3, np.int64)}, ValueError),
    ({"seen_limit": 1000}, ValueError), ({"seen_limit": 512}, ValueError), ({"seen_limit": -1}, ValueError),
    ({"data": "text"}, TypeError), ({"data": np.zeros(len(LINES), np.int32)}, TypeError),
    ({"codes": np.frombuffer(bytes(32), np.int32)}, TypeError), ({"codes": None}, TypeError),
    ({"scores": np.frombuffer(bytearray(72), np.float64, offset=1, count=8)}, ValueError),
])
def test_hostile_arguments_are_python_errors(change, error):
    with pytest.raises(error):
        core.read_trec_run(**{**_arguments(LINES), **change})


def test_the_reader_given_room_reads_the_lines():
    status, rows, slow, segments, qids, checked, ranked = core.read_trec_run(**_arguments(LINES))
    assert (status, rows, slow, segments, qids, checked, ranked) == (0, 3, 1, 2, ["q", "r"], True, False)


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=200), lo=st.integers(0, 200), hi=st.integers(0, 200), rows=st.integers(0, 40),
       slow=st.integers(0, 6))
def test_random_bytes_and_bounds_into_the_reader_never_crash(data, lo, hi, rows, slow):
    arguments = _arguments(data, rows)
    arguments.update(lo=lo, hi=hi, slow_rows=np.empty(slow, np.int64), slow_starts=np.empty(slow, np.int64),
                     slow_ends=np.empty(slow, np.int64))
    try:
        status, n, n_slow, segments, qids, checked, ranked = core.read_trec_run(**arguments)
    except ValueError:
        return
    assert status in (0, 1, 2) and 0 <= n <= rows and 0 <= n_slow <= slow
    if status == 0:
        offsets = arguments["doc_offsets"][: n + 1]
        assert offsets[0] == 0 and (np.diff(offsets) > 0).all() and offsets[-1] <= hi - lo
        assert all(isinstance(qid, str) for qid in qids) and len(qids) <= segments <= n


# order_run: the whole run in the tie-rule order


def _columns(qids: list[int], docs: list[str], scores: list[float]) -> dict:
    import pyarrow as pa

    array = pa.array(docs, type=pa.string())
    buffers = array.buffers()
    return {"codes": np.array(qids, dtype=np.int32), "n_queries": max(qids, default=-1) + 1,
            "scores": np.array(scores, dtype=np.float64), "hashes": string_hashes(array),
            "doc_offsets": np.frombuffer(buffers[1], dtype=np.int32)[: len(docs) + 1].copy(),
            "doc_bytes": np.frombuffer(buffers[2], dtype=np.uint8).copy() if buffers[2] else np.zeros(0, np.uint8),
            "order": np.empty(len(docs), dtype=np.int64)}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.text(alphabet="abAB01é", min_size=0, max_size=4),
                          st.sampled_from([0.0, 1.0, 2.5, -1.0, math.inf, -math.inf, 1e-300])), max_size=60))
def test_order_run_is_the_tie_rule_and_finds_repeated_documents(rows):
    from bm25lab.evaluation.ranking import Strings, _repeated_pairs, tie_rule_order

    qids, docs, scores = [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]
    columns = _columns(qids, docs, scores)
    status = core.order_run(**columns)
    array = Strings.of(docs)
    repeated = _repeated_pairs(columns["codes"].astype(np.int64), array, columns["hashes"], columns["n_queries"])
    assert status == int(bool(repeated))
    if not repeated:
        expected = tie_rule_order(columns["codes"].astype(np.int64), columns["scores"], array)
        assert columns["order"].tolist() == (list(range(len(rows))) if expected is None else expected.tolist())


def test_order_run_ties_beyond_any_bound_and_every_hash_colliding():
    docs = [f"d{i:05d}" for i in range(5000)]
    columns = _columns([0] * 5000, docs, [1.0] * 5000)
    assert core.order_run(**columns) == 0 and columns["order"].tolist() == list(range(4999, -1, -1))
    columns["hashes"][:] = 7  # every hash the same: the strings decide
    assert core.order_run(**columns) == 0 and columns["order"].tolist() == list(range(4999, -1, -1))
    columns["doc_bytes"][columns["doc_offsets"][3] : columns["doc_offsets"][4]] = np.frombuffer(b"d00001", np.uint8)
    assert core.order_run(**columns) == 1  # d00001 twice


GOOD = _columns([0, 1, 0], ["a", "b", "c"], [1.0, 2.0, 3.0])


@pytest.mark.parametrize("change, error", [
    ({"codes": np.array([0, 1, 2], np.int32)}, ValueError), ({"codes": np.array([0, -1, 0], np.int32)}, ValueError),
    ({"codes": np.array([0, 1], np.int32)}, ValueError), ({"codes": np.array([0, 1, 0], np.int64)}, TypeError),
    ({"n_queries": -1}, ValueError), ({"n_queries": 2**40}, ValueError),
    ({"scores": np.zeros(3, np.float32)}, TypeError),
    ({"hashes": np.zeros(4, np.uint64)}, ValueError), ({"doc_offsets": np.array([0, 1, 2], np.int32)}, ValueError),
    ({"doc_offsets": np.array([0, 2, 1, 3], np.int32)}, ValueError),
    ({"doc_offsets": np.array([-1, 1, 2, 3], np.int32)}, ValueError),
    ({"doc_offsets": np.array([0, 1, 2, 4], np.int32)}, ValueError),
    ({"doc_offsets": np.array([0, 1, 2, 3], np.int64)}, None),
    ({"doc_offsets": np.array([0, 1, 2, 3], np.int16)}, TypeError),
    ({"order": np.empty(3, np.int64)[::-1]}, TypeError), ({"order": np.frombuffer(bytes(24), np.int64)}, TypeError),
    ({"doc_bytes": "abc"}, TypeError),
])
def test_hostile_arguments_into_order_run_are_python_errors(change, error):
    arguments = {key: value.copy() if isinstance(value, np.ndarray) else value for key, value in GOOD.items()}
    arguments.update(change)
    if error is None:
        assert core.order_run(**arguments) == 0 and arguments["order"].tolist() == [2, 0, 1]
    else:
        with pytest.raises(error):
            core.order_run(**arguments)


@settings(max_examples=300, deadline=None)
@given(n=st.integers(0, 30), queries=st.integers(0, 5), data=st.data())
def test_random_arrays_into_order_run_never_crash(n, queries, data):
    codes = np.array(data.draw(st.lists(st.integers(-2, 6), min_size=n, max_size=n)), dtype=np.int32)
    offsets = np.array(data.draw(st.lists(st.integers(-3, 40), min_size=n + 1, max_size=n + 1)), dtype=np.int32)
    arguments = {"codes": codes, "n_queries": queries, "scores": np.array(data.draw(st.lists(
                 st.floats(allow_nan=True), min_size=n, max_size=n)), dtype=np.float64),
                 "hashes": np.array(data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), dtype=np.uint64),
                 "doc_offsets": offsets, "doc_bytes": np.frombuffer(data.draw(st.binary(max_size=40)), np.uint8),
                 "order": np.empty(n, np.int64)}
    try:
        status = core.order_run(**arguments)
    except ValueError:
        return
    assert status in (0, 1)
    if status == 0:
        assert sorted(arguments["order"].tolist()) == list(range(n))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_random_bytes_into_the_pieces_never_crash(raw):
    import pyarrow as pa

    assert core.string_hash(raw) == string_hashes(pa.array([raw], type=pa.binary()).cast(pa.string(), safe=False))[0]
    core.parse_score(raw)
    core.valid_utf8(raw)
    for function in (core.string_hash, core.parse_score, core.valid_utf8):
        with pytest.raises(TypeError):
            function("text")


# ---------------------------------------------------------------------------------------------
# A new process


def test_a_new_process_that_evaluates_reads_the_run_compiled_and_never_imports_numba(tmp_path: Path) -> None:
    import subprocess

    (tmp_path / "run").write_text("".join(f"q{q} Q0 d{d} {d} {100 - d}.5 tag\n" for q in range(3) for d in range(50)))
    (tmp_path / "qrels").write_text("".join(f"q{q} 0 d{d} {d % 3}\n" for q in range(3) for d in range(0, 60, 4)))
    code = ("import sys\nfrom bm25lab.evaluation import readers\ntaken = []\noriginal = readers._compiled_run\n"
            "readers._compiled_run = lambda *a: taken.append(1) or original(*a)\n"
            "from bm25lab.cli import main\nsys.argv = ['bm25lab', 'evaluate', 'qrels', 'run', '-m', 'AP']\n"
            "try:\n    main()\nexcept SystemExit as exit:\n    assert not exit.code, exit.code\n"
            "print(len(taken), sorted(m for m in sys.modules if m.split('.')[0] in ('numba', 'llvmlite')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True,
                         timeout=300).stdout.splitlines()
    assert out[-1] == "1 []"
