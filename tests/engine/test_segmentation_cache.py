"""The compiled jieba dictionary's cache on disk (bm25lab.engine.segmentation.cached_dictionary): a new
process reads it instead of jieba's dictionary and cuts exactly as the dictionary made in memory; a
truncated, damaged, stale or foreign file, or one that is not a regular file, is made again silently
(and written atomically, never through a symbolic link); each user dictionary has its own."""
from __future__ import annotations

import json
import os
import sys
import unicodedata
from pathlib import Path

import numpy as np
import pytest

from bm25lab import corpora
from bm25lab.engine import segmentation, tokenization
from bm25lab.engine.segmentation import CompiledJieba, DictionaryArrays, cached_dictionary, dictionary_arrays
from bm25lab.engine.tokenization import Tokenizer, _dictionary_source, _jieba_tokenizer

pytestmark = pytest.mark.skipif(segmentation.core_cut() is None, reason="the compiled core is not built")

USER = "创新办 3 i\n云计算 5\n被告人应国平 9\n常在 1000\n"
OTHER_USER = "创新办主任 50\n较陡峭 20\n"


@pytest.fixture()
def cache(monkeypatch, tmp_path: Path) -> Path:
    """An empty cache directory, no compiled cut in this process yet, jieba's global
    ``Force_Split_Words`` empty (a frequency-0 user word of another test fills it)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("BM25LAB_CACHE_DIR", str(folder))
    monkeypatch.delenv(segmentation.SEGMENTER_VARIABLE, raising=False)
    _jieba_tokenizer(None)
    monkeypatch.setattr(sys.modules["jieba.finalseg"], "Force_Split_Words", set())
    monkeypatch.setattr(segmentation, "_COMPILED", {})
    return folder


@pytest.fixture(scope="module")
def made() -> dict[str | None, DictionaryArrays]:
    """The dictionaries made in memory (never cached), with no user dictionary and with ``USER``."""
    return {user: dictionary_arrays(_jieba_tokenizer(user).FREQ, _jieba_tokenizer(user).total)
            for user in (None, USER)}


def sample_texts() -> list[str]:
    """CMRC 2018 paragraphs and questions and LeCaRD case facts, NFKC as the tokenizer sees them."""
    cmrc = corpora.get("cmrc2018")
    texts = [d.full_text for _, d in zip(range(150), cmrc.documents())] + list(cmrc.queries().values())[:300]
    texts += [d.full_text for _, d in zip(range(20), corpora.get("lecard-10q").documents())]
    texts += ["创新办主任也是云计算方面的专家", "被告人应国平常在较陡峭的礁岸以1-2失利", "ΑΣ Σ İstanbul 中文ΣΑ 𠀀"]
    return [unicodedata.normalize("NFKC", text) for text in texts]


def assert_same_arrays(a: DictionaryArrays, b: DictionaryArrays) -> None:
    for name in segmentation._ARRAY_DTYPES:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes(), name  # bit for bit
        assert x.flags.c_contiguous and x.flags.aligned, name  # as the core takes them
    assert a.log_total.hex() == b.log_total.hex()


def assert_same_cut(cached: CompiledJieba, plain: CompiledJieba, texts: list[str]) -> None:
    assert [cached.cut(t) for t in texts] == [plain.cut(t) for t in texts]
    for language in ("zh", "auto"):
        rules = Tokenizer(language)._term_rules()
        assert cached.packed_terms(texts, rules) == plain.packed_terms(texts, rules)


def cache_file(folder: Path, user: str | None) -> Path:
    path = segmentation.arrays_cache_path("jieba-compiled", _dictionary_source(sys.modules["jieba"], user))
    assert path.parent == folder
    return path


@pytest.mark.parametrize("user", [None, USER])
def test_the_cached_dictionary_cuts_as_the_one_made_in_memory(monkeypatch, cache, made, user) -> None:
    first = tokenization._compiled(user)  # made (the cache is empty) and written
    path = cache_file(cache, user)
    assert first is not None and path.is_file()
    monkeypatch.setattr(segmentation, "_COMPILED", {})  # as a new process: read from the file, nothing made
    monkeypatch.setattr(segmentation, "dictionary_arrays", lambda *a: pytest.fail("made, not read from the cache"))
    monkeypatch.setattr(tokenization, "_base_prefix_dict", lambda: pytest.fail("jieba's dictionary was read"))
    if user is None:  # jieba's own dictionary: no jieba tokenizer needed at all
        monkeypatch.setattr(tokenization, "_jieba_tokenizer", lambda *a: pytest.fail("a jieba tokenizer was made"))
    second = tokenization._compiled(user)
    assert second is not None and second is not first
    assert_same_arrays(second.arrays, made[user])
    assert_same_cut(second, CompiledJieba.from_arrays(made[user]), sample_texts())
    words = second.cut("创新办主任也是云计算方面的专家")
    assert ("创新办" in words) == (user is not None)  # the user dictionary's words are in its cut


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-4096])


def _garbage(path: Path) -> None:
    path.write_bytes(np.random.default_rng(3).bytes(path.stat().st_size))


def _flip_a_payload_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x40
    path.write_bytes(bytes(data))


def _other_format(path: Path) -> None:
    data = path.read_bytes()
    magic, header, payload = data.split(b"\n", 2)
    fields = json.loads(header)
    fields["format"] = segmentation.ARRAYS_FORMAT + 1
    path.write_bytes(magic + b"\n" + json.dumps(fields).encode() + b"\n" + payload)


def _overlong(path: Path) -> None:
    path.write_bytes(path.read_bytes() + b"\0" * 8)


def _header_lies_about_shapes(path: Path) -> None:
    # sizes and CRC intact, but the header gives one key of freq to table: arrays that do not fit together
    data = path.read_bytes()
    magic, header, payload = data.split(b"\n", 2)
    fields = json.loads(header)
    shapes = {name: shape for name, _, shape in fields["arrays"]}
    shapes["table"] = [shapes["table"][0] + 1]
    shapes["freq"] = [shapes["freq"][0] - 1]
    fields["arrays"] = [[name, dtype, shapes[name]] for name, dtype, _ in fields["arrays"]]
    path.write_bytes(magic + b"\n" + json.dumps(fields).encode() + b"\n" + payload)


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _a_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)  # reading would wait for a writer forever


def _a_symbolic_link(path: Path) -> None:
    target = path.with_name("elsewhere")
    path.rename(target)
    path.symlink_to(target)  # a good file, but through a link: never read, and replaced (not followed) on writing


@pytest.mark.parametrize("damage", [_truncate, _garbage, _flip_a_payload_byte, _other_format, _overlong,
                                    _header_lies_about_shapes, _empty, _a_fifo, _a_symbolic_link])
def test_a_bad_cache_file_is_made_again_and_the_cut_stays_right(cache, made, damage) -> None:
    source = _dictionary_source(sys.modules["jieba"], None)
    calls = []

    def make() -> DictionaryArrays:
        calls.append(1)
        return made[None]

    cached_dictionary(source, make)
    path = cache_file(cache, None)
    damage(path)
    elsewhere = path.with_name("elsewhere")
    linked = elsewhere.read_bytes() if elsewhere.exists() else None
    arrays = cached_dictionary(source, make)  # never an exception, never the damaged arrays
    assert len(calls) == 2
    assert path.is_file() and not path.is_symlink()  # rewritten as a regular file of its own
    if linked is not None:
        assert elsewhere.read_bytes() == linked  # the link's target left alone
    assert_same_arrays(arrays, made[None])
    assert_same_cut(CompiledJieba.from_arrays(arrays), CompiledJieba.from_arrays(made[None]), sample_texts()[:80])
    assert_same_arrays(cached_dictionary(source, make), made[None])  # rewritten: read back now
    assert len(calls) == 2


def test_an_unwritable_cache_directory_only_costs_time(cache, made) -> None:
    cache.parent.mkdir(exist_ok=True)
    cache.write_text("a file where the cache directory should be")
    source = _dictionary_source(sys.modules["jieba"], None)
    assert_same_arrays(cached_dictionary(source, lambda: made[None]), made[None])


def test_each_user_dictionary_has_its_own_cache_file_and_never_reads_another(monkeypatch, cache, made) -> None:
    paths = {user: cache_file(cache, user) for user in (None, USER, OTHER_USER)}
    assert len(set(paths.values())) == 3
    text = "创新办主任也是云计算方面的专家, 常在较陡峭的礁岸"
    assert tokenization._compiled(USER).cut(text) == _jieba_tokenizer(USER).lcut(text)
    # another dictionary's file in this one's place (as a collision of names would): refused, made again
    paths[OTHER_USER].write_bytes(paths[USER].read_bytes())
    other = tokenization._compiled(OTHER_USER)
    assert other.cut(text) == _jieba_tokenizer(OTHER_USER).lcut(text) != _jieba_tokenizer(USER).lcut(text)
    assert set(cache.glob("jieba-compiled-*.arrays")) == {paths[USER], paths[OTHER_USER]}
    monkeypatch.setattr(segmentation, "_COMPILED", {})
    monkeypatch.setattr(segmentation, "dictionary_arrays", lambda *a: pytest.fail("made, not read from the cache"))
    assert tokenization._compiled(OTHER_USER).cut(text) == other.cut(text)  # its own file, rewritten


def test_the_cache_key_follows_jiebas_dictionary_file(monkeypatch, cache) -> None:
    jieba_module = sys.modules["jieba"]
    before = _dictionary_source(jieba_module, None)
    original = tokenization._dictionary_file

    def touched(module):  # the same file, modified since
        path, stamp = original(module)
        return path, {**stamp, "mtime_ns": stamp["mtime_ns"] + 1}

    monkeypatch.setattr(tokenization, "_dictionary_file", touched)
    after = _dictionary_source(jieba_module, None)
    assert after != before
    assert segmentation.arrays_cache_path("jieba-compiled", after) != segmentation.arrays_cache_path(
        "jieba-compiled", before)


def test_the_unicode_tables_are_cached_and_equal_the_computed_ones(monkeypatch, cache) -> None:
    computed = {"nfkc": segmentation._make_nfkc_table(), "lower": segmentation._make_lower_table(),
                "classes": segmentation._make_classes_table()}
    first = segmentation._unicode_tables.__wrapped__()  # made and written
    files = list(cache.glob("unicode-tables-*.arrays"))
    assert len(files) == 1
    _flip_a_payload_byte(files[0])
    monkeypatch.setattr(segmentation, "_make_lower_table", lambda: computed["lower"].copy())
    again = segmentation._unicode_tables.__wrapped__()  # damaged: made again
    monkeypatch.setattr(segmentation, "_make_lower_table", lambda: pytest.fail("made, not read from the cache"))
    read = segmentation._unicode_tables.__wrapped__()
    for tables in (first, again, read):
        assert {name: table.tobytes() for name, table in tables.items()} == {
            name: table.tobytes() for name, table in computed.items()}
        assert all(table.flags.writeable and table.flags.aligned for table in tables.values())
