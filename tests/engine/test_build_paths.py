"""Building from raw texts (the whitespace analysis's compiled path, :meth:`PostingsBuilder.add_texts`)
gives exactly the index of the plain path: the same terms and term ids, postings, lengths, id ranks,
the same saved bytes and the same search results, with 1 or 2 threads, across chunk and job borders,
whatever the texts hold (non-ASCII text, Unicode whitespace, pieces without a letter or digit,
empty documents, titles); and the path is taken when it should be."""
from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest

from recording import RecordingAuto

from bm25lab.engine import Index, Tokenizer, backends, postings, segments, storage
from bm25lab.engine.backends import numba_backend
from bm25lab.engine.backends.numba_backend import NumbaBackend
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
    monkeypatch.setattr(numba_backend, "_THREADED_LAY_OUT", 0)  # documents and tfs on two threads too


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
    split = NumbaBackend.split_texts
    monkeypatch.setattr(NumbaBackend, "split_texts", lambda self, *a: calls.append(1) or split(self, *a))
    fast = Index.build(docs, tokenizer=WHITESPACE, backend="numba", workers=threads)
    assert len(calls) > 20  # the path was taken, in many jobs
    reference = _plain(monkeypatch, docs, "numpy")
    compiled_tokens = _plain(monkeypatch, docs, "numba")
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
    fast = Index.build(docs, tokenizer=WHITESPACE, backend="numba", workers=2)
    expected = [WHITESPACE.tokenize(text) for text in ODD_TEXTS]
    assert fast._segment.postings.doc_lengths.tolist() == list(map(len, expected))
    assert list(fast._segment.postings.terms) == sorted({t for terms in expected for t in terms})
    assert expected[2][:6] == ["a_b", "x", "y", "z", "1", "2"] and expected[1] == []


def test_texts_and_tokens_interleave_in_document_order(monkeypatch) -> None:
    # auto starts on numpy (the texts analysed into tokens) and moves to the kernels' text path: the
    # vocabulary is handed over with its ids, and the chunks stay in document order
    _small_chunks(monkeypatch)
    monkeypatch.setattr(backends, "NUMPY_SECONDS_PER_TOKEN", numba_backend.LOAD_SECONDS / 6000)
    monkeypatch.setattr(numba_backend, "loaded", lambda: False)  # as in a new process
    monkeypatch.setattr(numba_backend, "numba_loaded", lambda: False)
    monkeypatch.setattr(numba_backend, "ready", lambda: True)
    docs = _corpus()
    auto = RecordingAuto()
    built = segments.build_segment(docs, WHITESPACE, backend=auto, workers=2)
    moved = Index(built.segment, WHITESPACE, None, built.workdir, auto)
    assert auto.chosen[0] == "numpy" and auto.chosen[-1] == "numba"
    _assert_same_index(moved, _plain(monkeypatch, docs, "numpy"))


def test_a_small_build_with_auto_stays_on_numpy(monkeypatch) -> None:
    # a few documents are not worth loading the kernels for: their tokens go the numpy way
    monkeypatch.setattr(numba_backend, "loaded", lambda: False)  # as in a new process
    monkeypatch.setattr(numba_backend, "numba_loaded", lambda: False)
    monkeypatch.setattr(numba_backend, "ready", lambda: True)
    docs = _corpus()[:200]
    auto = RecordingAuto()
    built = segments.build_segment(docs, WHITESPACE, backend=auto)
    assert set(auto.chosen) == {"numpy"}
    _assert_same_index(Index(built.segment, WHITESPACE, None, built.workdir, auto), _plain(monkeypatch, docs, "numpy"))


@pytest.mark.parametrize("backend", ["numpy", "numba"])
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


def test_code_point_order_of_the_kernels() -> None:
    # ids sorted from their UTF-8 as selection sorts them: prefixes, long common prefixes, zero
    # bytes, non-ASCII, lone surrogates; equal strings keep their order
    rng = np.random.default_rng(5)
    alphabet = ["a", "b", "\x00", "é", "中", "\U0001f600", "\ud800", "\uffff", "z"]
    strings = ["", "a", "a\x00", "ab", "abcdefghij", "abcdefghijk", "abcdefgh", "abcdefgh\x00", "a"]
    strings += ["".join(rng.choice(alphabet, size=int(rng.integers(0, 20)))) for _ in range(3000)]
    order = NumbaBackend().code_point_order(strings)
    assert order.tolist() == code_point_order(strings).tolist()
    ascii_ids = [f"doc-{int(i)}" for i in rng.integers(0, 10**9, size=5000)]
    assert NumbaBackend().code_point_order(ascii_ids).tolist() == code_point_order(ascii_ids).tolist()


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
@pytest.mark.parametrize("backend", ["numpy", "numba"])
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


@pytest.mark.parametrize("backend", ["numpy", "numba"])
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
