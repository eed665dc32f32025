"""Building from raw texts (the whitespace analysis's compiled path, :meth:`PostingsBuilder.add_texts`)
gives exactly the index of the plain path: the same terms and term ids, postings, lengths, id ranks,
the same saved bytes and the same search results, with 1 or 2 threads, across chunk and job borders,
whatever the texts hold (non-ASCII text, Unicode whitespace, pieces without a letter or digit,
empty documents, titles); and the path is taken when it should be. Each entry point of the core's
building (``engine/core/build.c``) is also compared with the numpy backend's on hostile input."""
from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest

from bm25lab.engine import Index, Tokenizer, backends, postings, segments, storage
from bm25lab.engine.backends import core_backend
from bm25lab.engine.backends.core_backend import CoreBackend
from bm25lab.engine.errors import InputError
from bm25lab.engine.records import Document
from bm25lab.engine.selection import code_point_order

WHITESPACE = Tokenizer("whitespace", stopwords=None)
ODD_TEXTS = [
    "",  # empty
    "  ,  ... --- ",  # no piece holds a letter or digit
    "a_b _ x\x1cy\x1dz\x1e1\x1f2\t3\n4\x0b5\x0c6\r7 w1 w1",  # every ASCII whitespace byte of str.split()
    "héllo wörld \u3000 naïve\u00a0q \x85 z\u2028end w1",  # non-ASCII letters and whitespace
    "ﬁne Ｆｕｌｌ ①  w2",  # NFKC changes these
    "\x00a b\x00 \x7f",  # control characters inside pieces
    "中文 文本 w3",
]


def _corpus(n: int = 1500, seed: int = 3) -> list:  # n > 1200
    """(id, text) pairs of Zipf-ish tokens, the odd texts among them, and a few Documents and dicts
    (with titles and metadata), so that some batches are not (str, str) pairs."""
    rng = np.random.default_rng(seed)
    docs: list = []
    for i in range(n):
        words = [f"w{int(r)}" for r in rng.zipf(1.3, size=int(rng.integers(0, 60))) if r < 5000]
        docs.append((f"d{i}", " ".join(words)))
    for j, text in enumerate(ODD_TEXTS):
        docs[37 * j + 5] = (f"d{37 * j + 5}", text)
    docs[900] = Document("d900", "w1 w2 w5", title="A title w9")
    docs[901] = {"id": "d901", "text": "w3 w3", "title": "t", "lang": "x"}
    docs[1200] = ("d1200", None)
    return docs


def _small_chunks(monkeypatch) -> None:
    """Many flushes, jobs and token chunks, so that documents cross every border."""
    monkeypatch.setattr(postings, "_TEXT_FLUSH_CHARS", 9_000)
    monkeypatch.setattr(postings, "_TEXT_JOB_CHARS", 2_000)
    monkeypatch.setattr(postings, "_CHUNK_TOKENS", 997)
    monkeypatch.setattr(segments, "_BATCH_DOCS", 64)
    monkeypatch.setattr(core_backend, "_THREADED_LAY_OUT", 0)  # documents and tfs on two threads too


def _plain(monkeypatch, docs: list, backend: str) -> Index:
    """The plain path: the tokenizer's tokens, whatever the backend."""
    with monkeypatch.context() as patch:
        patch.setattr(Tokenizer, "splits_at_whitespace", lambda self: False)
        return Index.build(docs, tokenizer=WHITESPACE, backend=backend, workers=1)


def _assert_same_index(a: Index, b: Index) -> None:
    pa, pb = a._segment.postings, b._segment.postings
    assert list(pa.terms) == list(pb.terms)
    for name in ("offsets", "doc_nums", "tfs", "doc_lengths"):
        x, y = getattr(pa, name), getattr(pb, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name
    assert list(a.doc_ids) == list(b.doc_ids)
    assert np.array_equal(a._segment.id_rank, b._segment.id_rank)
    assert list(a.documents()) == list(b.documents())


def _saved(index: Index, folder: Path) -> tuple[dict[str, bytes], dict]:
    """The saved segment's files' bytes by name, and the manifest less the segment's (random) name and
    the checksum that covers it."""
    index.save(folder)
    manifest = json.loads((folder / storage.MANIFEST).read_text(encoding="utf-8"))
    (segment,) = manifest["segments"]
    files = {p.name: p.read_bytes() for p in sorted((folder / segment.pop("name")).iterdir())}
    manifest.pop("checksum")
    assert set(files) == set(segment["files"])
    return files, manifest


@pytest.mark.parametrize("threads", [1, 2])
def test_texts_path_builds_the_plain_paths_index(monkeypatch, tmp_path: Path, threads: int) -> None:
    _small_chunks(monkeypatch)
    docs = _corpus()
    calls = []
    split = CoreBackend.split_texts
    monkeypatch.setattr(CoreBackend, "split_texts", lambda self, *a: calls.append(1) or split(self, *a))
    fast = Index.build(docs, tokenizer=WHITESPACE, backend="core", workers=threads)
    assert len(calls) > 20  # the path was taken, in many jobs
    reference = _plain(monkeypatch, docs, "numpy")
    compiled_tokens = _plain(monkeypatch, docs, "core")
    for other in (reference, compiled_tokens):
        _assert_same_index(fast, other)
    assert fast.document("d900").title == "A title w9" and fast.document("d901").metadata == {"lang": "x"}
    assert _saved(fast, tmp_path / "fast") == _saved(reference, tmp_path / "plain")
    queries = {"q1": "w1 w2", "q2": "wörld naïve", "q3": "fine Full 1", "q4": "a_b y 7", "q5": "中文 w3 title"}
    for k in (3, 1000):
        got, expected = fast.search_many(queries, k=k), reference.search_many(queries, k=k)
        assert {q: (h.doc_ids, h.scores) for q, h in got.items()} == \
               {q: (h.doc_ids, h.scores) for q, h in expected.items()}


def test_each_document_has_the_tokenizers_terms(monkeypatch) -> None:
    # every odd text on its own: the document's length and terms are those of Tokenizer.tokenize
    _small_chunks(monkeypatch)
    docs = [(f"d{i}", text) for i, text in enumerate(ODD_TEXTS)]
    fast = Index.build(docs, tokenizer=WHITESPACE, backend="core", workers=2)
    expected = [WHITESPACE.tokenize(text) for text in ODD_TEXTS]
    assert fast._segment.postings.doc_lengths.tolist() == list(map(len, expected))
    assert list(fast._segment.postings.terms) == sorted({t for terms in expected for t in terms})
    assert expected[2][:6] == ["a_b", "x", "y", "z", "1", "2"] and expected[1] == []


@pytest.mark.parametrize("backend", ["numpy", "core"])
def test_bad_input_on_the_texts_path(backend: str, monkeypatch) -> None:
    # the same errors as the plain path, and no thread left running
    _small_chunks(monkeypatch)
    before = threading.active_count()
    docs = _corpus()
    docs[1400] = ("d7", "w1")  # a duplicate, in a late batch
    with pytest.raises(InputError) as fast:
        Index.build(docs, tokenizer=WHITESPACE, backend=backend, workers=2, source="corpus.jsonl")
    with pytest.raises(InputError) as plain:  # stopwords: the plain path
        Index.build(docs, tokenizer=Tokenizer("whitespace", stopwords=["zzz"]), backend=backend, source="corpus.jsonl")
    assert str(fast.value) == str(plain.value) == \
        "corpus.jsonl: duplicate document id 'd7' (documents 8 and 1401 of the input)"
    docs[1400] = ("d1400", "w1", "extra")
    with pytest.raises(InputError, match="a document must be"):
        Index.build(docs, tokenizer=WHITESPACE, backend=backend, workers=2)
    assert threading.active_count() == before


def test_code_point_order_of_the_core() -> None:
    # ids sorted from their UTF-8 as selection sorts them: prefixes, long common prefixes, zero
    # bytes, non-ASCII, lone surrogates; equal strings keep their order
    rng = np.random.default_rng(5)
    alphabet = ["a", "b", "\x00", "é", "中", "\U0001f600", "\ud800", "\uffff", "z"]
    strings = ["", "a", "a\x00", "ab", "abcdefghij", "abcdefghijk", "abcdefgh", "abcdefgh\x00", "a"]
    strings += ["".join(rng.choice(alphabet, size=int(rng.integers(0, 20)))) for _ in range(3000)]
    order = CoreBackend().code_point_order(strings)
    assert order.tolist() == code_point_order(strings).tolist()
    ascii_ids = [f"doc-{int(i)}" for i in rng.integers(0, 10**9, size=5000)]
    assert CoreBackend().code_point_order(ascii_ids).tolist() == code_point_order(ascii_ids).tolist()


# ---------------------------------------------------------------------- packed Chinese terms
ZH_ODD = ["", "，。！", "北京 清华大学 1-2 ΣΑ", "我来到北京清华大学", "中文\n文本\t混合 English words 123"]


def _zh_corpus() -> list:
    """The bundled CMRC 2018 documents (title and text) with odd texts among them: empty, only
    punctuation, Latin, digits, Greek, line feeds."""
    from bm25lab import corpora

    docs: list = [(d.id, d.full_text) for d in corpora.get("cmrc2018").documents()][:300]
    for j, text in enumerate(ZH_ODD):
        docs[41 * j + 3] = (f"odd{j}", text)
    return docs


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("backend", ["numpy", "core"])
def test_packed_chinese_terms_build_the_index_of_their_lists(monkeypatch, backend: str, workers: int) -> None:
    # the compiled cut's terms reach the builder packed (no string per term): the index equals the
    # one built from the same terms as lists, chunks and flushes crossing documents everywhere
    from bm25lab.engine.segmentation import PackedTerms

    _small_chunks(monkeypatch)
    monkeypatch.setattr(segments, "_BATCH_DOCS", 16)
    monkeypatch.setattr("bm25lab.engine.tokenization._POOL_MIN_WORK", 0)  # workers even for this little
    docs = _zh_corpus()
    tokenizer = Tokenizer("zh")
    seen: list = []
    added = postings.PostingsBuilder.add_packed

    def recording(self, chunks):
        seen.extend(chunks)
        return added(self, chunks)

    monkeypatch.setattr(postings.PostingsBuilder, "add_packed", recording)
    packed = Index.build(docs, tokenizer=tokenizer, backend=backend, workers=workers)
    assert seen and all(isinstance(c, PackedTerms) for c in seen) and sum(map(len, seen)) == len(docs)
    lists = Index.build_tokens([(i, tokenizer.tokenize(t)) for i, t in docs], tokenizer=tokenizer, backend=backend)
    pa, pb = packed._segment.postings, lists._segment.postings
    assert list(pa.terms) == list(pb.terms)
    for name in ("offsets", "doc_nums", "tfs", "doc_lengths"):
        assert np.array_equal(getattr(pa, name), getattr(pb, name)), name
    assert list(packed.doc_ids) == list(lists.doc_ids) and packed.document("odd4").text == ZH_ODD[4]


@pytest.mark.parametrize("backend", ["numpy", "core"])
def test_add_packed_equals_add_many(monkeypatch, backend: str) -> None:
    # documents without terms, a chunk without any, a term holding a space (looked up one by one)
    from bm25lab.engine.segmentation import PackedTerms

    monkeypatch.setattr(postings, "_CHUNK_TOKENS", 3)
    chunks = [PackedTerms("a\nb\nb\n", [2, 0, 1]), PackedTerms("", [0, 0]), PackedTerms("new york\nc\na\n", [0, 3]),
              PackedTerms("日本\nb\n", [1, 1])]
    one = postings.PostingsBuilder(backends.create(backend))
    assert one.add_packed(chunks[:2]) == 0 and one.add_packed(chunks[2:]) == 5
    other = postings.PostingsBuilder(backends.create(backend))
    other.add_many([t for c in chunks for t in c.lists()])
    a, b = one.finish(), other.finish()
    assert list(a.terms) == list(b.terms) == ["a", "b", "c", "new york", "日本"]
    for name in ("offsets", "doc_nums", "tfs", "doc_lengths"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.doc_lengths.tolist() == [2, 0, 1, 0, 0, 0, 3, 1, 1]


def test_a_backend_that_does_not_split_texts_analyses_them_into_tokens(monkeypatch) -> None:
    # the numpy backend has no text path: the texts are analysed by the tokenizer, the same index
    calls = []
    analyse = WHITESPACE.tokenize
    monkeypatch.setattr(Tokenizer, "tokenize", lambda self, text: calls.append(1) or analyse(text))
    docs = _corpus()[:300]
    plain = Index.build(docs, tokenizer=WHITESPACE, backend="numpy", workers=1)
    assert calls
    _assert_same_index(plain, Index.build(docs, tokenizer=WHITESPACE, backend="core", workers=1))


# ---------------------------------------------------------------------- the core's building entry points
def test_group_by_term_of_the_core_equals_numpys() -> None:
    rng = np.random.default_rng(9)
    numpy_backend = backends.create("numpy")
    for trial in range(40):
        n_docs, num_terms = int(rng.integers(0, 60)), int(rng.integers(1, 50))
        lengths = rng.integers(0, 30, n_docs).astype(np.int32)
        ids = rng.integers(0, num_terms, int(lengths.sum())).astype(np.int64 if trial % 2 else np.int32)
        first = int(rng.integers(0, 1000))
        got = CoreBackend().group_by_term(ids, lengths, first, num_terms)
        expected = numpy_backend.group_by_term(ids, lengths, first, num_terms)
        for a, b in zip(got, expected):
            assert a.dtype == b.dtype == np.int32 and a.tolist() == b.tolist()


def test_lay_out_of_the_core_equals_numpys() -> None:
    rng = np.random.default_rng(10)
    numpy_backend = backends.create("numpy")
    for threads in (1, 2):
        num_terms, chunks, first = 40, [], 0
        for _ in range(5):
            lengths = rng.integers(0, 20, 30).astype(np.int32)
            ids = rng.integers(0, num_terms, int(lengths.sum()))
            chunks.append(numpy_backend.group_by_term(ids, lengths, first, num_terms))
            first += 30
        new_id = rng.permutation(num_terms).astype(np.int64)
        got = CoreBackend().lay_out(chunks, new_id, threads)
        expected = numpy_backend.lay_out(chunks, new_id)
        for a, b in zip(got, expected):
            assert a.tolist() == b.tolist()


def test_the_cores_building_entry_points_refuse_hostile_arrays() -> None:
    # an index out of range, a length that does not add up, a wrong dtype: a Python error naming what
    # is wrong, never a read or write out of bounds
    from bm25lab.engine.core import kernels

    core = kernels()
    i32 = lambda *v: np.array(v, np.int32)  # noqa: E731
    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    out = [np.empty(4, np.int32) for _ in range(3)]
    cases = [
        (core.group_by_term, (i32(0, 5), i32(2), 0, 3, *out), ValueError),  # a term id past num_terms
        (core.group_by_term, (i32(0, 1), i32(3), 0, 3, *out), ValueError),  # lengths past the terms
        (core.group_by_term, (i32(0, 1), i32(-1, 3), 0, 3, *out), ValueError),
        (core.group_by_term, (i32(0, 1), i32(2), 0, 3, *[np.empty(1, np.int32)] * 3), ValueError),
        (core.group_by_term, (np.array([0.0]), i32(1), 0, 3, *out), TypeError),
        (core.count_terms, (i32(0, 7), i64(0, 1), np.zeros(3, np.int64)), ValueError),
        (core.count_terms, (i32(0, 1), i64(0, 5), np.zeros(3, np.int64)), ValueError),
        (core.scatter_by_term, (i32(0, 1), i32(5), i64(0, 1), i64(0, 1), np.empty(2, np.int32)), ValueError),
        (core.scatter_by_term, (i32(0, 0, 0), i32(1, 2, 3), i64(0), i64(1), np.empty(2, np.int32)), ValueError),
        (core.mark_pairs, (i32(0, 9), i32(1, 1), np.zeros(3, np.uint16), 2, np.zeros(8, np.uint8)), ValueError),
        (core.mark_pairs, (i32(0, 1), i32(1, 9), np.zeros(3, np.uint16), 2, np.zeros(8, np.uint8)), ValueError),
        (core.split_texts, (np.zeros(4, np.uint8), i64(0, 9, 2), 0, *out, np.empty(2, np.int32),
                            np.empty(4, np.uint64), np.empty(4, np.int64), np.empty(4, np.int64)), ValueError),
        (core.split_texts, (np.zeros(40, np.uint8), i64(0, 4), 0, *out, np.empty(1, np.int32),
                            np.empty(4, np.uint64), np.empty(4, np.int64), np.empty(4, np.int64)), ValueError),
        (core.sort_terms, (i64(0, 3), i64(2, 2), np.zeros(4, np.uint8), np.empty(2, np.int64)), ValueError),
        (core.group_query_terms, (i32(0, 1), i64(3), np.empty(2, np.int64), np.empty(2, np.int64),
                                  np.empty(2)), ValueError),
    ]
    for function, args, error in cases:
        with pytest.raises(error):
            function(*args)
    table = core.Vocabulary()
    for args in ((np.frombuffer(b"a b", np.uint8), i64(1, 9), np.empty(2, np.int32), True),  # ends past the text
                 (np.frombuffer(b"a b", np.uint8), i64(2, 1), np.empty(2, np.int32), True),  # ends decreasing
                 (np.frombuffer(b"a", np.uint8), i64(), np.empty(2, np.int32), True)):  # fewer pieces than ids
        with pytest.raises(ValueError):
            table.encode(*args)
    with pytest.raises(ValueError, match="hash"):
        table.merge(np.frombuffer(b"ab", np.uint8), np.array([7], np.uint64), i64(0), i64(2), np.empty(1, np.int32))
    with pytest.raises(ValueError):
        table.joined(i64(0), np.empty(1, np.uint8))
    assert len(table) == 0
