"""String columns (bm25lab.engine.columns.Strings) and the core's kernels on them (engine/core/strings.c):
take and same_at equal their numpy specification and Python's own string operations, bit for bit, on columns
of any offsets (int32 or int64, not from 0, slices); pyarrow gets the same strings without a copy; hostile
arguments into the kernels are Python errors, never a crash."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from bm25lab.engine import columns
from bm25lab.engine.columns import Strings, string_hashes
from bm25lab.engine.core import kernels
from hypothesis import given, settings
from hypothesis import strategies as st

core = kernels()
needs_core = pytest.mark.skipif(core is None, reason="the compiled core is not built")
WORDS = st.lists(st.text(alphabet="ab中é\x00 ", max_size=6), max_size=30)


@st.composite
def columns_of(draw) -> tuple[Strings, list[str]]:
    """A column of drawn strings, laid out as the readers and pyarrow lay them: int32 or int64 offsets, from 0
    or not (bytes before and after the column's own), or a slice of a larger column."""
    words = draw(WORDS)
    before, after = draw(st.text(alphabet="xy", max_size=3)), draw(st.text(alphabet="xy", max_size=3))
    data = (before + "".join(words) + after).encode()
    lengths = [len(w.encode()) for w in words]
    offsets = np.cumsum([len(before.encode()), *lengths]).astype(draw(st.sampled_from([np.int32, np.int64])))
    column = Strings(offsets, np.frombuffer(data, dtype=np.uint8))
    if words and draw(st.booleans()):
        start = draw(st.integers(0, len(words)))
        length = draw(st.integers(0, len(words) - start))
        return column.slice(start, length), words[start : start + length]
    return column, words


@settings(max_examples=300, deadline=None)
@given(column=columns_of())
def test_a_column_reads_its_strings(column):
    strings, words = column
    assert len(strings) == len(words) and strings.to_pylist() == words
    assert strings.arrow().to_pylist() == words and pa.array(strings).to_pylist() == words
    assert string_hashes(strings).tolist() == string_hashes(pa.array(words, type=pa.string())).tolist()


@settings(max_examples=300, deadline=None)
@given(column=columns_of(), data=st.data())
def test_take_is_the_strings_of_the_rows(column, data):
    strings, words = column
    rows = np.array(data.draw(st.lists(st.integers(0, len(words) - 1), max_size=40)) if words else [], np.int64)
    expected = [words[r] for r in rows.tolist()]
    taken = strings.take(rows)
    assert taken.to_pylist() == expected and taken.offsets[0] == 0
    assert taken.offsets.dtype == np.int32 and taken.data.size == taken.offsets[-1]
    starts = strings.offsets[rows].astype(np.int64)
    lengths = strings.offsets[rows + 1] - starts
    out_offsets = np.zeros(rows.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=out_offsets[1:])
    out = np.empty(int(out_offsets[-1]), dtype=np.uint8)
    columns._gather(strings.data, starts, lengths, out_offsets, out)  # the specification, in batches too
    assert out.tobytes() == taken.data.tobytes()


@settings(max_examples=300, deadline=None)
@given(first=columns_of(), second=columns_of(), data=st.data())
def test_same_at_compares_the_rows_strings(first, second, data):
    (a, a_words), (b, b_words) = first, second
    if not a_words or not b_words:
        return
    pairs = data.draw(st.lists(st.tuples(st.integers(0, len(a_words) - 1), st.integers(0, len(b_words) - 1)),
                               max_size=40))
    rows = np.array([p[0] for p in pairs], np.int64)
    other = np.array([p[1] for p in pairs], np.int64)
    expected = [a_words[i] == b_words[j] for i, j in pairs]
    assert a.same_at(rows, b, other).tolist() == expected
    assert columns._same(a, rows, b, other).tolist() == expected  # the specification


def test_without_the_core_the_specification_answers(monkeypatch):
    import bm25lab.engine.core as core_package

    monkeypatch.setattr(core_package, "kernels", lambda: None)
    strings = Strings.of(["a", "bb", "", "中文"])
    assert strings.take(np.array([3, 0, 2, 1])).to_pylist() == ["中文", "a", "", "bb"]
    assert strings.same_at(np.array([0, 3, 2]), Strings.of(["中文", "a"]), np.array([1, 0, 1])).tolist() == \
        [True, True, False]


def test_a_column_of_any_source():
    words = ["x", "", "yz", "é"]
    for source in (words, tuple(words), pa.array(words), pa.chunked_array([words[:1], words[1:]]),
                   pa.array(["w", *words]).slice(1), pa.array(words, type=pa.large_string())):
        assert Strings.of(source).to_pylist() == words
    assert Strings.of(pa.chunked_array([], type=pa.string())).to_pylist() == []
    lone_surrogate = ["a", "\ud800"]
    with pytest.raises(Exception):  # pyarrow's own error, as before
        Strings.of(lone_surrogate)


def test_sixty_four_bit_offsets_reach_pyarrow_as_they_fit():
    strings = Strings(np.array([1, 2, 4], dtype=np.int64), np.frombuffer(b"xabc", dtype=np.uint8))
    array = strings.arrow()
    assert array.type == pa.string() and array.to_pylist() == ["a", "bc"]


# ---------------------------------------------------------------------------------------------
# Hostile arguments: a Python exception, never a crash

OFFSETS = np.array([0, 1, 3, 6], np.int32)
DATA = np.frombuffer(b"abbccc", np.uint8)


def _take_arguments() -> dict:
    return {"offsets": OFFSETS, "data": DATA, "rows": np.array([2, 0], np.int64),
            "out_offsets": np.empty(3, np.int64), "out_data": np.empty(4, np.uint8)}


@needs_core
def test_the_kernels_given_room_take_and_compare():
    arguments = _take_arguments()
    assert core.take_strings(**arguments) == 4
    assert arguments["out_offsets"].tolist() == [0, 3, 4] and bytes(arguments["out_data"]) == b"ccca"
    out = np.empty(2, np.uint8)
    core.same_strings(OFFSETS, DATA, np.array([2, 1]), OFFSETS, DATA, np.array([2, 0]), out)
    assert out.tolist() == [1, 0]


@needs_core
@pytest.mark.parametrize("change, error", [
    ({"offsets": np.array([0, 4, 3, 6], np.int32)}, ValueError), ({"offsets": np.array([0, 1, 3, 7], np.int32)}, ValueError),
    ({"offsets": np.array([-1, 1, 3, 6], np.int32)}, ValueError), ({"offsets": np.empty(0, np.int32)}, ValueError),
    ({"offsets": OFFSETS.astype(np.int16)}, TypeError), ({"offsets": OFFSETS.astype(np.uint32)}, TypeError),
    ({"rows": np.array([3], np.int64)}, ValueError), ({"rows": np.array([-1], np.int64)}, ValueError),
    ({"rows": np.array([0], np.int32)}, TypeError), ({"out_offsets": np.empty(2, np.int64)}, ValueError),
    ({"out_data": np.empty(3, np.uint8)}, ValueError), ({"out_data": np.empty(8, np.uint8)[::2]}, TypeError),
    ({"data": "text"}, TypeError), ({"out_offsets": np.frombuffer(bytes(24), np.int64)}, TypeError),
    ({"rows": None}, TypeError), ({"offsets": np.frombuffer(bytearray(20), np.int32, offset=1, count=4)}, ValueError),
])
def test_hostile_arguments_into_take_are_python_errors(change, error):
    with pytest.raises(error):
        core.take_strings(**{**_take_arguments(), **change})


@needs_core
@pytest.mark.parametrize("change, error", [
    ({"offsets": np.array([0, 4, 3, 6], np.int32)}, ValueError), ({"other_offsets": np.array([0, 9], np.int64)}, ValueError),
    ({"rows": np.array([5, 0], np.int64)}, ValueError), ({"other_rows": np.array([0, -2], np.int64)}, ValueError),
    ({"other_rows": np.array([0], np.int64)}, ValueError), ({"out": np.empty(3, np.uint8)}, ValueError),
    ({"out": np.empty(2, bool)}, TypeError), ({"out": np.frombuffer(bytes(2), np.uint8)}, TypeError),
    ({"data": np.zeros(6, np.int8)}, TypeError),
])
def test_hostile_arguments_into_same_strings_are_python_errors(change, error):
    arguments = {"offsets": OFFSETS, "data": DATA, "rows": np.array([2, 1], np.int64), "other_offsets": OFFSETS,
                 "other_data": DATA, "other_rows": np.array([2, 0], np.int64), "out": np.empty(2, np.uint8)}
    with pytest.raises(error):
        core.same_strings(**{**arguments, **change})


@needs_core
@settings(max_examples=300, deadline=None)
@given(offsets=st.lists(st.integers(-3, 12), max_size=6), data=st.binary(max_size=10),
       rows=st.lists(st.integers(-2, 6), max_size=6), room=st.integers(0, 12), wide=st.booleans())
def test_random_arguments_into_the_kernels_never_crash(offsets, data, rows, room, wide):
    kind = np.int64 if wide else np.int32
    column = np.array(offsets, kind)
    raw = np.frombuffer(data, np.uint8)
    picked = np.array(rows, np.int64)
    try:
        written = core.take_strings(column, raw, picked, np.empty(picked.size + 1, kind), np.empty(room, np.uint8))
    except ValueError:
        pass
    else:
        assert 0 <= written <= room
    try:
        core.same_strings(column, raw, picked, column, raw, picked[::-1].copy(), np.empty(picked.size, np.uint8))
    except ValueError:
        pass
