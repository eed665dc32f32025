"""The core's cut entry points (engine/core/cut.c: build_trie, cut_text, cut_terms) take hostile arguments
as a Python exception, never a crash or a hang: wrong dtypes, short or non-contiguous arrays, key ids out
of range in the trie arrays, tables without an empty slot, random bytes as text and as arrays. And a new
process that indexes and searches Chinese never imports numba."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bm25lab.engine import segmentation
from bm25lab.engine.segmentation import _trie, _unicode_tables
from bm25lab.engine.tokenization import Tokenizer, _compiled, _jieba_tokenizer

CORE = segmentation.core_cut()
pytestmark = pytest.mark.skipif(CORE is None, reason="the compiled core is not built")

CLEAN = (ValueError, TypeError, MemoryError, OverflowError)


@pytest.fixture(scope="module")
def dictionary() -> tuple:
    """jieba's own dictionary as the core takes it (copies: the tests change them)."""
    _jieba_tokenizer(None)
    compiled = _compiled(None)
    assert compiled is not None
    return tuple(part.copy() if isinstance(part, np.ndarray) else part for part in compiled.arrays.kernel_args())


def codes(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def cut_text(text: np.ndarray, dictionary: tuple) -> np.ndarray:
    ends = np.empty(len(text), np.int64)
    return ends[:CORE.cut_text(text, dictionary, ends)]


def cut_terms(text: np.ndarray, dictionary: tuple, stop: tuple | None = None, auto: bool = True,
              tables: tuple | None = None) -> tuple[int, int]:
    tables = tables or (_unicode_tables()["lower"], _unicode_tables()["classes"])
    stop = stop or (*_trie(CORE, ["的", "a"]), np.ones(2, np.uint8))
    n = len(text)
    return CORE.cut_terms(text, np.array([n], np.int64), dictionary, *tables, stop, auto, True,
                          np.empty(2 * n + 1, np.uint32), np.empty(1, np.int64), np.empty(4 * n, np.int64))


SAMPLE = codes("被告人应国平驾驶牌号赣E×××××重型自卸货车, iPhone 15 价格 3.14% 的 John's 𠀀\r\n")


# --- build_trie ---------------------------------------------------------------------------------

def trie_args(keys: list[str]) -> list[np.ndarray]:
    cps = codes("".join(keys))
    lengths = np.array([len(k) for k in keys], np.int64)
    n = len(keys)
    return [cps, np.cumsum(lengths) - lengths, lengths, np.empty(1 << (2 * n + 1).bit_length(), np.int64),
            np.empty(n, np.int64), np.empty(n, np.int64)]


def test_build_trie_makes_a_trie_whose_keys_are_found() -> None:
    keys = ["a", "ab", "abc", "b", "中", "中文"]
    table, parent, last = _trie(CORE, keys)
    assert sorted(table[table >= 0].tolist()) == list(range(len(keys)))
    assert parent.tolist() == [-1, 0, 1, -1, -1, 4] and last.tolist() == [ord(k[-1]) for k in keys]


@pytest.mark.parametrize("position, bad, error", [
    (0, np.zeros(3, np.int64), TypeError),                 # cps of another dtype
    (1, np.zeros(3, np.float64), TypeError),              # starts of floats
    (2, np.zeros(3, np.int32), TypeError),                # lengths of 32-bit ints
    (3, np.zeros(16, np.uint64), TypeError),              # table unsigned
    (3, np.zeros(12, np.int64), ValueError),              # table not a power of two
    (3, np.zeros(2, np.int64), ValueError),               # table no longer than the keys
    (4, np.zeros(1, np.int64), ValueError),               # parent short
    (5, np.zeros(9, np.int64), ValueError),               # last long
    (2, np.array([1, 2, 40], np.int64), ValueError),      # a key past cps
    (2, np.array([1, 0, 1], np.int64), ValueError),       # an empty key
    (1, np.array([0, -1, 3], np.int64), ValueError),      # a negative start
    (2, np.array([1, 1, 2**62], np.int64), ValueError),   # a length that would overflow
    (1, np.array([0, 1], np.int64), ValueError),          # starts and lengths of other lengths
    (3, np.zeros(32, np.int64)[::2], TypeError),          # table not contiguous
    (0, "abc", TypeError),                                # not an array
])
def test_build_trie_refuses_bad_arguments(position, bad, error) -> None:
    args = trie_args(["a", "ab", "b"])
    args[position] = bad
    with pytest.raises(error):
        CORE.build_trie(*args)


def test_build_trie_refuses_a_read_only_output_and_a_missing_prefix() -> None:
    args = trie_args(["a", "ab", "b"])
    args[3].flags.writeable = False
    with pytest.raises(TypeError, match="table"):
        CORE.build_trie(*args)
    with pytest.raises(ValueError, match="prefix"):
        CORE.build_trie(*trie_args(["a", "xyz"]))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="ab中\U00020000", min_size=1, max_size=4), max_size=12), st.binary(max_size=64))
def test_build_trie_on_random_keys_and_bytes_never_crashes(keys, noise) -> None:
    args = trie_args(keys)
    try:
        CORE.build_trie(*args)  # duplicates and missing prefixes: a trie or ValueError
    except ValueError:
        pass
    cps = np.frombuffer(noise[: len(noise) // 4 * 4], np.uint32)
    starts = np.frombuffer(noise[: len(noise) // 8 * 8], np.int64)
    args = [cps, starts, starts.copy(), np.empty(1 << (2 * len(starts) + 1).bit_length(), np.int64),
            np.empty(len(starts), np.int64), np.empty(len(starts), np.int64)]
    try:
        CORE.build_trie(*args)
    except ValueError:
        pass


# --- cut_text and cut_terms: the dictionary ----------------------------------------------------

def with_part(dictionary: tuple, index: int, value) -> tuple:
    return dictionary[:index] + (value,) + dictionary[index + 1:]


@pytest.mark.parametrize("index, bad, error", [
    (0, np.full(1000, -1, np.int64), ValueError),          # table not a power of two
    (1, np.zeros(5, np.int64), ValueError),                 # parent shorter than last
    (3, np.zeros(5, np.int64), ValueError),                 # freq shorter than the keys
    (4, np.zeros(5, np.float64), ValueError),               # log_freq shorter than the keys
    (4, None, TypeError),                                   # log_freq not an array
    (5, np.zeros((4, 100)), ValueError),                    # emit of another width
    (6, np.zeros(3), ValueError),                           # start_p short
    (7, np.zeros((4, 4), np.float32), TypeError),           # trans of float32
    (8, np.array([[1, 3], [2, 0], [0, 7], [3, 1]]), ValueError),  # prev with a state out of range
    (8, np.array([[1, 3], [2, 0], [0, -1], [3, 1]]), ValueError),
    (9, "total", TypeError),                                # log_total not a number
])
def test_a_bad_dictionary_is_refused_by_both_cuts(dictionary, index, bad, error) -> None:
    hostile = with_part(dictionary, index, bad)
    with pytest.raises(error):
        cut_text(SAMPLE, hostile)
    with pytest.raises(error):
        cut_terms(SAMPLE, hostile)


def test_a_dictionary_tuple_of_another_length_is_refused(dictionary) -> None:
    with pytest.raises(TypeError):
        cut_text(SAMPLE, dictionary[:-1])
    with pytest.raises(TypeError):
        cut_text(SAMPLE, list(dictionary) + [1.0])


def test_key_ids_out_of_range_in_the_table_raise(dictionary) -> None:
    table = dictionary[0].copy()
    table[table >= 0] += len(dictionary[1])  # every key id one past the keys
    with pytest.raises(ValueError, match="key id out of range"):
        cut_text(SAMPLE, with_part(dictionary, 0, table))
    with pytest.raises(ValueError, match="key id out of range"):
        cut_terms(SAMPLE, with_part(dictionary, 0, table))
    stop_table, parent, last = _trie(CORE, ["的"])
    stop_table[stop_table >= 0] = 99
    with pytest.raises(ValueError, match="key id out of range"):
        cut_terms(codes("的的"), dictionary, (stop_table, parent, last, np.ones(1, np.uint8)))


def test_a_table_without_an_empty_slot_ends(dictionary) -> None:
    keys = len(dictionary[1])
    full = np.resize(np.arange(keys, dtype=np.int64), len(dictionary[0]))  # no -1 anywhere: every probe goes round
    small = (np.zeros(8, np.int64), np.full(1, 5, np.int64), np.full(1, 5, np.int64), np.ones(1, np.int64),
             np.zeros(1), *dictionary[5:])
    for hostile in (with_part(dictionary, 0, full), small):
        ends = cut_text(SAMPLE, hostile)  # words, however odd: none is lost
        assert ends[-1] == len(SAMPLE) and np.all(np.diff(ends) > 0)
        cut_terms(SAMPLE, hostile)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=400), st.integers(0, 8), st.binary(min_size=8, max_size=400))
def test_random_bytes_as_text_or_as_a_dictionary_array_never_crash(dictionary, noise, index, other) -> None:
    text = np.frombuffer(noise[: len(noise) // 4 * 4], np.uint32)  # any code points, beyond Unicode too
    ends = cut_text(text, dictionary)
    assert (len(ends) == 0) == (len(text) == 0) and (len(ends) == 0 or ends[-1] == len(text))
    written, fixups = cut_terms(text, dictionary)
    assert 0 <= written <= 2 * len(text) + 1 and 0 <= fixups <= len(text)
    part = dictionary[index]
    raw = (other * (part.nbytes // len(other) + 1))[: part.nbytes]
    hostile = with_part(dictionary, index, np.frombuffer(raw, part.dtype).reshape(part.shape).copy())
    for call in (cut_text, cut_terms):
        try:
            call(text if len(text) else SAMPLE, hostile)
        except ValueError:
            pass


# --- cut_terms: its other arguments --------------------------------------------------------------

def test_cut_terms_refuses_bad_outputs_and_tables(dictionary) -> None:
    n = len(SAMPLE)
    lower, classes = _unicode_tables()["lower"], _unicode_tables()["classes"]
    stop = (*_trie(CORE, ["的"]), np.ones(1, np.uint8))
    good = dict(text=SAMPLE, text_ends=np.array([n], np.int64), dictionary=dictionary, lower=lower, classes=classes,
                stop=stop, auto=True, stem=True, out=np.empty(2 * n + 1, np.uint32), counts=np.empty(1, np.int64),
                fixups=np.empty(4 * n, np.int64))
    CORE.cut_terms(**good)
    bad = [
        ("text_ends", np.array([n + 1], np.int64), ValueError), ("text_ends", np.array([5, 2], np.int64), ValueError),
        ("text_ends", np.array([-1], np.int64), ValueError), ("text_ends", np.array([n], np.int32), TypeError),
        ("out", np.empty(2 * n, np.uint32), ValueError), ("out", np.empty(2 * n + 1, np.int32), TypeError),
        ("counts", np.empty(0, np.int64), ValueError), ("fixups", np.empty(4 * n - 1, np.int64), ValueError),
        ("lower", lower[:-1], ValueError), ("classes", classes.astype(np.uint16), TypeError),
        ("stop", stop[:3], TypeError), ("stop", (*stop[:3], np.ones(2, np.uint8)), ValueError),
        ("text", SAMPLE.astype(np.int64), TypeError), ("text", SAMPLE[::2], TypeError),
    ]
    for name, value, error in bad:
        with pytest.raises(error):
            CORE.cut_terms(**{**good, name: value})
    read_only = np.empty(2 * n + 1, np.uint32)
    read_only.flags.writeable = False
    with pytest.raises(TypeError, match="out"):
        CORE.cut_terms(**{**good, "out": read_only})


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(min_size=4, max_size=200), st.booleans(), st.lists(st.text(alphabet="的是ab'", min_size=1, max_size=3),
                                                                     max_size=6))
def test_hostile_tables_and_stopwords_never_crash(dictionary, noise, auto, stopwords) -> None:
    words = sorted({w[:i] for w in stopwords for i in range(1, len(w) + 1)})
    stop = (*_trie(CORE, words), np.frombuffer((noise * len(words))[: len(words)], np.uint8).copy())
    lower = np.resize(np.frombuffer(noise[: len(noise) // 4 * 4] or b"\0\0\0\0", np.uint32), 65536)
    classes = np.resize(np.frombuffer(noise, np.uint8), 65536)
    written, fixups = cut_terms(SAMPLE, dictionary, stop, auto, (lower, classes))
    assert 0 <= written <= 2 * len(SAMPLE) + 1 and 0 <= fixups <= len(SAMPLE)


# --- a new process -------------------------------------------------------------------------------

NO_NUMBA = """
import os, sys

class Watch:  # every process of the command (the tokenizer's forked workers too) notes an import of numba
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("numba", "llvmlite"):
            with open(os.environ["NUMBA_IMPORTS"], "a") as log:
                log.write(f"{os.getpid()} {name}\\n")
        return None

sys.meta_path.insert(0, Watch())
from bm25lab import corpora
from bm25lab.engine import Index, Tokenizer

lecard = corpora.get("lecard-10q")
docs = list(lecard.documents())[:150]
for language, workers in (("auto", 2), ("zh", 1), ("auto", 1)):
    folder = os.path.join(os.environ["FOLDER"], f"{language}-{workers}")
    Index.build(docs, Tokenizer(language), workers=workers).save(folder)
    index = Index.load(folder)
    assert index.backend == "core"
    run = index.search_many(lecard.queries(), k=10)
    assert len(run) == 10 and index.search("被告人交通肇事 iPhone", k=3)
print(sorted(m for m in sys.modules if m.split(".")[0] in ("numba", "llvmlite")))
"""


def test_a_new_process_indexing_and_searching_chinese_never_imports_numba(tmp_path: Path) -> None:
    # the defaults a user gets: the cut, the build and the search all in the compiled core
    log = tmp_path / "numba-imports.txt"
    env = {**__import__("os").environ, "NUMBA_IMPORTS": str(log), "FOLDER": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(NO_NUMBA)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
    assert not log.exists(), log.read_text()
