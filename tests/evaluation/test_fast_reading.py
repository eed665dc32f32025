"""The fast paths of reading a large run give the plain paths' results exactly: a run already in the
tie-rule order (no sort), tied rows moved in place of pyarrow's ``take``, a large file mapped into
memory instead of read, the scores kept instead of copied."""
from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bm25lab.evaluation import InputError, Qrels, Run, evaluate, read_qrels, read_run
from bm25lab.evaluation import ranking, readers
from bm25lab.engine.columns import Strings


def tie_rule_rows(rows: list[tuple[str, str, float]], qids: list[str]) -> list[tuple[str, str, float]]:
    """The plain definition: queries in the given order, score descending, document id descending."""
    position = {q: i for i, q in enumerate(qids)}
    by_doc = sorted(rows, key=lambda r: r[1].encode(), reverse=True)  # strcmp order, descending
    return sorted(by_doc, key=lambda r: (position[r[0]], -r[2]))  # stable: ties keep the document order


def run_rows(run: Run) -> list[tuple[str, str, float]]:
    docs, scores, bounds = run.doc_ids.to_pylist(), run.score.tolist(), run.offsets.tolist()
    return [(q, docs[row], scores[row]) for i, q in enumerate(run.qids) for row in range(bounds[i], bounds[i + 1])]


def _rows(seed: int, queries: int = 6, depth: int = 30) -> list[tuple[str, str, float]]:
    rng = random.Random(seed)
    rows = []
    for q in range(queries):
        docs = rng.sample([f"d{i}" for i in range(200)] + ["é", "中文", "D9", "d"], depth)
        rows += [(f"q{q}", doc, float(rng.choice([0.0, -0.0, 1.5, 2.0, 2.0, 3.25, -1.0]))) for doc in docs]
    return rows


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("layout", ["tie rule order", "ties ascending", "scores in order, ties shuffled",
                                    "shuffled", "queries interleaved"])
def test_every_row_order_gives_the_tie_rule_order(seed, layout):
    # in order: the O(n) check skips the sort; ties in the other id order: only tied rows move (in
    # place, by the bytes); out of order: one argsort. All must give the plain sort's rows exactly.
    rows = _rows(seed)
    qids = list(dict.fromkeys(q for q, _, _ in rows))
    expected = tie_rule_rows(rows, qids)
    rng = random.Random(seed)
    if layout == "tie rule order":
        given_rows = expected
    elif layout == "ties ascending":
        given_rows = sorted(rows, key=lambda r: (qids.index(r[0]), -r[2], r[1].encode()))
    elif layout == "scores in order, ties shuffled":
        given_rows = sorted(rng.sample(rows, len(rows)), key=lambda r: (qids.index(r[0]), -r[2]))
    elif layout == "shuffled":
        given_rows = rng.sample(rows, len(rows))
    else:
        given_rows = sorted(expected, key=lambda r: rng.random() < 0.5)
    q, d, s = (list(column) for column in zip(*given_rows))
    run = Run.from_columns(q, d, np.array(s), qids=qids)
    assert [(a, b, c + 0.0) for a, b, c in run_rows(run)] == [(a, b, c + 0.0) for a, b, c in expected]
    assert np.array_equal(run.doc_hash, ranking.string_hashes(pa.array([r[1] for r in expected])))
    assert not (np.signbit(run.score) & (run.score == 0)).any()  # -0.0 read as 0.0, as C compares them
    kept = Run.from_columns(q, d, np.array(s), qids=qids, copy=False)
    assert run_rows(kept) == run_rows(run) and np.array_equal(kept.doc_hash, run.doc_hash)
    assert not (np.signbit(kept.score) & (kept.score == 0)).any()


def test_a_run_in_the_tie_rule_order_is_not_sorted_again():
    rows = tie_rule_rows(_rows(1), [f"q{i}" for i in range(6)])
    _, codes = np.unique([r[0] for r in rows], return_inverse=True)
    steps = ranking._tie_rule_steps(codes, np.array([r[2] + 0.0 for r in rows]), Strings.of([r[1] for r in rows]))
    assert steps == (None, None, None)


def test_copy_false_keeps_the_readers_array_and_copy_true_the_callers():
    score = np.array([1.0, -0.0, 2.0])
    copied = Run.from_columns(["q"] * 3, ["a", "b", "c"], score)
    assert np.signbit(score[1]) and copied.score is not score
    kept = Run.from_columns(["q"] * 3, ["a", "b", "c"], score, copy=False)
    assert not np.signbit(score[1])  # made 0.0 in place: the run's own array
    assert run_rows(kept) == run_rows(copied)
    read_only = np.array([1.0, 2.0])
    read_only.flags.writeable = False
    assert Run.from_columns(["q", "q"], ["a", "b"], read_only, copy=False).score is not read_only


def _chunked(words: list[str], cuts: list[int], sliced: bool) -> pa.ChunkedArray | pa.Array:
    bounds = [0, *sorted(set(cuts)), len(words)]
    chunks = [pa.array(words[a:b], pa.string()) for a, b in zip(bounds[:-1], bounds[1:])]
    if sliced:  # an array that is a slice of a larger one: offsets not starting at 0
        whole = pa.array(["x"] + words + ["y"], pa.string())
        return whole.slice(1, len(words))
    return pa.chunked_array(chunks, pa.string())


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_moving_tied_strings_is_pyarrows_take(data):
    words = data.draw(st.lists(st.text(alphabet="ab中é", max_size=4), min_size=1, max_size=40))
    n = len(words)
    cuts = data.draw(st.lists(st.integers(0, n), max_size=3))
    strings = _chunked(words, cuts, data.draw(st.booleans()))
    order = np.arange(n)
    rows: list[int] = []
    at = 0
    while at < n:  # runs of consecutive rows, some permuted within themselves
        size = data.draw(st.integers(1, 6))
        run = np.arange(at, min(n, at + size))
        if run.size > 1 and data.draw(st.booleans()):
            order[run] = data.draw(st.permutations(run.tolist()))
            rows += run.tolist()
        at += size
    if not rows:
        return
    rows_array = np.array(rows, dtype=np.int64)
    batch = data.draw(st.sampled_from([1, 2, 3, 1 << 16]))
    moved = ranking._move_tied_strings(Strings.of(strings), rows_array, order[rows_array], batch=batch)
    assert moved.to_pylist() == strings.take(pa.array(order)).to_pylist()
    assert moved.offsets[0] == 0 and moved.arrow().type == pa.string()


def test_moving_tied_strings_with_int64_offsets():
    strings = Strings(np.array([2, 3, 5, 6, 8], dtype=np.int64), np.frombuffer(b"xxabbcddyy", dtype=np.uint8))
    moved = ranking._move_tied_strings(strings, np.array([0, 1, 2, 3]), np.array([1, 0, 3, 2]))
    assert moved.to_pylist() == ["bb", "a", "dd", "c"] and moved.offsets.dtype == np.int64


# ---------------------------------------------------------------------------------------------
# A large file is mapped, not read: the same bytes, the same results, the same errors


def _text(lines: int, crlf: bool = False, seed: int = 0) -> str:
    rng = random.Random(seed)
    end = "\r\n" if crlf else "\n"
    return "".join(f"q{i % 7} Q0 d{rng.randrange(10**6)}x{i} {i} {rng.choice([1, 2, 2.5, -0.0])} tag{end}"
                   for i in range(lines))


@pytest.mark.parametrize("content", [b"", b"a", b"ab\r\ncd\r\n\r\n#x", b"\r\n" * 9 + b"\r", bytes(range(256)) * 5])
def test_a_mapped_file_answers_as_its_bytes(tmp_path, monkeypatch, content):
    monkeypatch.setattr(readers, "_COUNT_BLOCK", 3)  # matches across block boundaries
    monkeypatch.setattr(readers, "_MAP_FROM", 1)
    path = tmp_path / "f"
    path.write_bytes(content)
    with open(path, "rb") as stream:
        mapped = readers._mapped(stream) if content else None
        if mapped is None:  # an empty file cannot be mapped: it is read
            assert not content
            return
    for sub in (b"\n", b"\r", b"\r\n", b"#", b"a", b"\x0b"):
        assert mapped.count(sub) == content.count(sub), sub
        assert mapped.count(sub, 2, 7) == content.count(sub, 2, 7), sub
        assert (sub in mapped) == (sub in content)
    for affix in (b"", b"a", b"ab", b"#x", b"\r", b"zz"):
        assert mapped.startswith(affix) == content.startswith(affix)
        assert mapped.endswith(affix) == content.endswith(affix)
    assert mapped[1:4] == content[1:4] and mapped.rfind(b"\n") == content.rfind(b"\n")
    assert mapped.decode("utf-8", "replace") == content.decode("utf-8", "replace")


@pytest.mark.parametrize("crlf", [False, True])
def test_a_mapped_run_and_qrels_read_as_the_same_files_read_into_memory(tmp_path, monkeypatch, crlf):
    run_path = tmp_path / "run"
    run_path.write_text(_text(3000, crlf), newline="")
    qrels_path = tmp_path / "qrels"
    qrels_path.write_text("".join(f"q{i % 7} 0 d{i} {i % 3}\n" for i in range(500)) +
                          "".join(line.split()[0] + " 0 " + line.split()[2] + " 2\n"
                                  for line in _text(3000).splitlines()[::50]))
    plain_run, plain_qrels = read_run(run_path), read_qrels(qrels_path)
    monkeypatch.setattr(readers, "_MAP_FROM", 1)
    loaded = readers._load(run_path)
    assert isinstance(loaded, readers._MappedFile)
    mapped_run, mapped_qrels = read_run(run_path), read_qrels(qrels_path)
    assert run_rows(mapped_run) == run_rows(plain_run) and mapped_run.name == plain_run.name == "tag"
    assert mapped_qrels.to_dict() == plain_qrels.to_dict()
    measures = ["AP", "nDCG@10", "P@5", "bpref"]
    assert evaluate(mapped_qrels, mapped_run, measures).per_query == evaluate(plain_qrels, plain_run,
                                                                             measures).per_query


@pytest.mark.parametrize("bad, message", [
    ("q1 Q0 d1 1 2.0 t\nq1 Q0 d1 2 1.0 t\n", "run:2: duplicate document 'd1'"),
    ("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 x t\n", "run:2: score 'x' is not a number"),
    ("q1 Q0 d1 1 2.0 t\n\n# note\nq1 Q0 d2 2.0 t\n", "run:4: expected 6 fields"),
])
def test_a_mapped_file_names_the_line_of_its_first_error(tmp_path, monkeypatch, bad, message):
    monkeypatch.setattr(readers, "_MAP_FROM", 1)
    path = tmp_path / "run"
    path.write_text(bad)
    with pytest.raises(InputError, match=message):
        read_run(path)


def test_compressed_files_and_files_with_a_bom_are_read_not_mapped(tmp_path, monkeypatch):
    import gzip

    monkeypatch.setattr(readers, "_MAP_FROM", 1)
    text = _text(50).encode()
    (tmp_path / "run.gz").write_bytes(gzip.compress(text))
    (tmp_path / "bom").write_bytes(b"\xef\xbb\xbf" + text)
    for name in ("run.gz", "bom"):
        loaded = readers._load(tmp_path / name)
        assert type(loaded) is bytes and loaded == text
    assert run_rows(read_run(tmp_path / "run.gz")) == run_rows(read_run(tmp_path / "bom"))


def test_a_folder_is_an_input_error_naming_it(tmp_path, monkeypatch):
    monkeypatch.setattr(readers, "_MAP_FROM", 1)
    with pytest.raises(InputError, match="cannot read"):
        read_run(tmp_path)


def test_the_dictionary_codes_of_a_chunked_column_are_the_plain_codes():
    qids = [f"q{i % 5}" for i in range(40)]
    chunked = pa.chunked_array([pa.array(qids[:13]).dictionary_encode(), pa.array(qids[13:]).dictionary_encode()])
    codes, dictionary = ranking._dictionary_parts(chunked)
    assert codes.dtype == np.int32 and [dictionary[c] for c in codes.tolist()] == qids


# ---------------------------------------------------------------------------------------------
# The join of a run with its qrels (a bitmap of judged (query, document) pairs, then a binary search)


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_the_judged_ranking_is_the_plain_join(data):
    # documents judged for many queries, retrieved by many: the bitmap filters by (query, document), so
    # a pair judged for one query only must still be found there and nowhere else
    docs = [f"d{i}" for i in range(data.draw(st.integers(1, 12)))]
    queries = [f"q{i}" for i in range(data.draw(st.integers(1, 5)))]
    judged = {q: data.draw(st.dictionaries(st.sampled_from(docs), st.integers(-1, 3), min_size=1)) for q in queries}
    ranked = {q: data.draw(st.dictionaries(st.sampled_from(docs), st.sampled_from([1.0, 2.0, 2.5]))) for q in queries}
    qrels, run = Qrels.from_dict(judged), Run.from_dict(ranked)
    qids = [q for q in queries if q in run.qids and ranked[q]]
    joined = ranking.judged_ranking(qrels, run, qids)
    expected = [(i, rank, judged[q][doc]) for i, q in enumerate(qids)
                for rank, (doc, _) in enumerate(run.ranked(q), 1) if judged[q].get(doc, -1) >= 0]
    assert list(zip(joined.seg.tolist(), joined.rank.tolist(), joined.label.tolist())) == expected
    pooled = [(i, rank) for i, q in enumerate(qids) for rank, (doc, _) in enumerate(run.ranked(q), 1)
              if doc in judged[q] and judged[q][doc] < 0]
    assert list(zip(joined.pooled_seg.tolist(), joined.pooled_rank.tolist())) == pooled


def test_the_judged_ranking_is_the_plain_join_when_every_hash_collides(monkeypatch):
    # equal hashes for every document: every retrieved document passes the bitmap and shares its key
    # with every judgment of its query; the strings decide
    monkeypatch.setattr(ranking, "string_hashes", lambda values: np.zeros(len(values), dtype=np.uint64))
    judged = {"a": {"x": 1, "y": 0, "z": 2}, "b": {"y": 3}}
    ranked = {"a": {"y": 3.0, "w": 2.0, "z": 1.0}, "b": {"x": 1.0, "y": 0.5}}
    joined = ranking.judged_ranking(Qrels.from_dict(judged), Run.from_dict(ranked), ["a", "b"])
    assert list(zip(joined.seg.tolist(), joined.rank.tolist(), joined.label.tolist())) == [(0, 1, 0), (0, 3, 2),
                                                                                          (1, 2, 3)]


@pytest.mark.parametrize("alongside", [False, True])
@pytest.mark.parametrize("text, fast", [
    ("q Q0 d 1 2.0 t\nq Q0 e 1 1.0 t\n", True),
    ("q\tQ0\td\t1\t2.0\tt\nq\tQ0\te\t1\t1.0\tt\n", True),
    ("\n\n  q Q0 d 1 2.0 t\n", True),  # blank lines and spaces before the first field
    ("q Q0 d 1 2.0 t\r\nq Q0 e 1 1.0 t\r\n", True),
    ("q Q0 d 1 2.0 t\nq\tQ0 e 1 1.0 t\n", False),  # tabs and spaces
    ("q Q0 d 1 2.0 t\nq\tQ0\te\t1\t1.0\tt\n", False),  # a tab-separated line after a space-separated one
    ("q Q0 d 1 2.0 t\n# note\nq Q0 e 1 1.0 t\n", False),  # a comment line
    ("q Q0 d 1 2.0 t\nq Q0  e 1 1.0 t\n", False),  # an empty field
    ("q Q0 d 1 2.0 t\nq Q0 e 1 1.0 t\x0b\n", False),  # a vertical tab: C's isspace
    ("q Q0 d 1 2.0 t\rq Q0 e 1 1.0 t\n", False),  # a lone carriage return
])
def test_the_checks_made_while_pyarrow_parses_decide_as_the_checks_made_before(tmp_path, monkeypatch, text, fast,
                                                                              alongside):
    if alongside:  # a large file's checks run in a second thread, alongside the parse
        monkeypatch.setattr(readers, "_CHECK_ALONGSIDE_FROM", 0)
    columns = readers._parse_fast(text.encode(), readers.TREC_RUN, False)
    assert (columns is not None) == fast
    slow = readers._parse_slow(text.encode(), readers.TREC_RUN, "mem", False)  # the definition
    if columns is not None:
        assert columns.qid.to_pylist() == slow.qid and columns.doc.to_pylist() == slow.doc
        assert columns.value.tolist() == slow.value.tolist()
    path = tmp_path / "run"
    path.write_text(text, newline="")
    if "\r" in text.split("\n")[0].rstrip("\r"):  # a lone CR in the first line: its lines end in CR (issue 28)
        with pytest.raises(InputError, match=f"{path}:1: a carriage return"):
            read_run(path)
        return
    assert run_rows(read_run(path)) == run_rows(Run.from_columns(slow.qid, slow.doc, slow.value))


@settings(max_examples=200, deadline=None)
@given(counts=st.lists(st.integers(0, 4), max_size=8), wide=st.booleans())
def test_segment_offsets_by_binary_search_are_the_counted_ones(counts, wide):
    # rows grouped by query code (sorted), some queries without rows
    codes = np.repeat(np.arange(len(counts)), counts).astype(np.int64 if wide else np.int32)
    counted = np.concatenate(([0], np.cumsum(np.bincount(codes, minlength=len(counts))))).astype(np.int64)
    offsets = ranking._offsets(codes, len(counts))
    assert offsets.dtype == np.int64 and offsets.tolist() == counted.tolist()


def test_int32_query_codes_of_a_run_out_of_order_sort_as_int64_codes():
    # a reader's query codes are int32; sorting rows by (query, score) makes one key of query x distinct
    # scores, beyond 2**31 here (60,000 queries x 120,000 scores): it must be computed in 64 bits
    rng = np.random.default_rng(5)
    n = 120_000  # rows of 60,000 queries in no order: the codes (first appearances) are not sorted
    qids = [f"q{i}" for i in rng.integers(0, 60_000, n)]
    docs = [f"d{i}" for i in range(n)]
    scores = rng.permutation(n).astype(np.float64)
    encoded = Run.from_columns(pa.array(qids).dictionary_encode(), docs, scores)
    assert ranking._dictionary_parts(pa.array(qids).dictionary_encode())[0].dtype == np.int32
    expected = tie_rule_rows(list(zip(qids, docs, scores.tolist())), list(dict.fromkeys(qids)))
    assert run_rows(encoded) == expected
