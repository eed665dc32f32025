"""Index behaviour: building, the tie rule, k, empty queries, Chinese search, save/load and damage."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from recording import pandas_stand_in

from bm25lab.engine import Hit, Index, IndexFormatError, InputError, Tokenizer
from bm25lab.engine.errors import ParameterError

WS = Tokenizer("whitespace", stopwords=None)


def test_build_accepts_pairs_dicts_and_documents() -> None:
    from bm25lab.engine import Document

    index = Index.build([("a", "x y"), {"_id": "b", "title": "T", "text": "y z", "lang": "en"},
                         {"id": "c", "text": "z"}, Document("d", "x")], tokenizer=WS)
    assert list(index.doc_ids) == ["a", "b", "c", "d"]
    assert index.document("b").title == "T"
    assert index.document("b").metadata == {"lang": "en"}
    assert index.document("nope") is None


def test_duplicate_id_is_an_error_naming_it() -> None:
    with pytest.raises(InputError, match="'a'"):
        Index.build([("a", "x"), ("b", "y"), ("a", "z")], tokenizer=WS)


def test_empty_document_is_kept_with_length_zero() -> None:
    index = Index.build([("a", ""), ("b", "x x")], tokenizer=WS)
    assert index.num_docs == 2
    assert index.avgdl == 1.0
    assert [h.doc_id for h in index.search("x")] == ["b"]


def test_tie_rule_score_then_doc_id_descending() -> None:
    # four identical documents: equal scores, so the order is by id descending (trec_eval's rule)
    docs = [("d10", "x"), ("d2", "x"), ("d1", "x"), ("D3", "x"), ("e", "y")]
    index = Index.build(docs, tokenizer=WS)
    hits = index.search("x", k=10)
    assert [h.doc_id for h in hits] == ["d2", "d10", "d1", "D3"]
    assert len({h.score for h in hits}) == 1
    # cut inside a tie: the k best by the same rule, not whatever a partition left
    assert [h.doc_id for h in index.search("x", k=2)] == ["d2", "d10"]


def test_k_larger_than_corpus_and_nonmatching_documents() -> None:
    index = Index.build([("a", "x y"), ("b", "y"), ("c", "z")], tokenizer=WS)
    hits = index.search("y", k=1000)
    assert {h.doc_id for h in hits} == {"a", "b"}


@pytest.mark.parametrize("query", ["", "   ", "unknownterm", "the of and"])
def test_queries_without_known_terms_return_nothing(query: str) -> None:
    index = Index.build([("a", "boundary layer"), ("b", "the shock")], tokenizer=Tokenizer("en"))
    assert index.search(query) == []
    assert index.search_many({"q": query}) == {"q": []}


@pytest.mark.parametrize("k", [0, -1, 1.5])
def test_bad_k(k) -> None:
    index = Index.build([("a", "x")], tokenizer=WS)
    with pytest.raises(ValueError, match="k must be"):
        index.search("x", k=k)


def test_hit_gives_title_and_text() -> None:
    index = Index.build([{"id": "a", "title": "Heat", "text": "heat transfer"}], tokenizer=Tokenizer("en"))
    (hit,) = index.search("heat")
    assert isinstance(hit, Hit)
    assert (hit.doc_id, hit.title, hit.text) == ("a", "Heat", "heat transfer")


def test_hits_are_an_immutable_sequence_of_hit(cranfield_index, cranfield) -> None:
    from bm25lab.evaluation import Run

    queries = dict(list(cranfield.judged_queries().items())[:20])
    runs = cranfield_index.search_many(queries, k=50, workers=1)
    for qid, hits in runs.items():
        made = list(hits)
        assert all(isinstance(h, Hit) for h in made) and len(hits) == len(made) == 50
        assert hits == made and made == list(hits) and hits == tuple(made) and hits != made[:-1]
        assert hits.doc_ids == [h.doc_id for h in made] and hits.scores == [h.score for h in made]
        assert [hits[i] for i in (0, 7, -1, -50)] == [made[i] for i in (0, 7, -1, -50)]
        assert hits[3:9] == made[3:9] and hits[::-2] == made[::-2] and hits[60:] == []
        assert hits[-1].title == made[-1].title and hits[-1].text == cranfield_index.document(made[-1].doc_id).text
        assert hits == cranfield_index.search(queries[qid], k=50) and hash(hits) == hash(hits[:])
        with pytest.raises(IndexError):
            hits[50]
        with pytest.raises(AttributeError):
            hits.extra = 1
    as_lists = {qid: list(hits) for qid, hits in runs.items()}
    assert Run.from_dict(runs).to_dict() == Run.from_dict(as_lists).to_dict()
    assert "more" in repr(runs[next(iter(runs))])


def test_chinese_query_finds_document_containing_it_first() -> None:
    docs = [("1", "清华大学位于北京市海淀区，是中国著名的高等学府。"),
            ("2", "北京大学与清华相邻。"),
            ("3", "大学生在学校学习数学。"),
            ("4", "今天天气很好。")]
    index = Index.build(docs, tokenizer=Tokenizer("zh"))
    hits = index.search("清华大学")
    assert hits[0].doc_id == "1"
    assert hits[0].score > 0
    # bm25s's default tokenizer (regex \w\w+) keeps each Chinese clause as one token, so the query
    # term 清华大学 is not in its vocabulary and every document scores 0 there
    import bm25s

    corpus = bm25s.tokenize([d[1] for d in docs], stopwords=None, show_progress=False, return_ids=False)
    (query,) = bm25s.tokenize(["清华大学"], stopwords=None, show_progress=False, return_ids=False)
    assert corpus[0][0] == "清华大学位于北京市海淀区"
    assert not set(query) & {t for doc in corpus for t in doc}


def test_mixed_chinese_and_english() -> None:
    docs = [("a", "iPhone 15 价格 是 多少"), ("b", "华为手机价格"), ("c", "apple iphone review")]
    index = Index.build(docs, tokenizer=Tokenizer("auto"))
    assert [h.doc_id for h in index.search("iPhone 15 价格")][0] == "a"
    assert {h.doc_id for h in index.search("价格")} == {"a", "b"}


def test_search_many_parallel_equals_serial(cranfield_index, cranfield) -> None:
    queries = cranfield.judged_queries()
    serial = cranfield_index.search_many(queries, k=100, workers=1)
    parallel = cranfield_index.search_many(queries, k=100, workers=2)
    assert serial.keys() == parallel.keys() == queries.keys()
    for qid in queries:
        assert [(h.doc_id, h.score) for h in serial[qid]] == [(h.doc_id, h.score) for h in parallel[qid]]
        single = cranfield_index.search(queries[qid], k=100)
        assert [(h.doc_id, h.score) for h in single] == [(h.doc_id, h.score) for h in serial[qid]]


def test_save_load_identical(tmp_path: Path, cranfield_index, cranfield) -> None:
    cranfield_index.save(tmp_path / "idx")
    loaded = Index.load(tmp_path / "idx")
    assert loaded.counts() == cranfield_index.counts()
    assert loaded.tokenizer.config() == cranfield_index.tokenizer.config()
    queries = dict(list(cranfield.judged_queries().items())[:40])
    for variant in ("lucene", "okapi", "bm25+"):
        a = cranfield_index.search_many(queries, k=50, variant=variant)
        b = loaded.search_many(queries, k=50, variant=variant)
        assert {q: [(h.doc_id, h.score) for h in v] for q, v in a.items()} == \
               {q: [(h.doc_id, h.score) for h in v] for q, v in b.items()}
    first = loaded.search(queries[next(iter(queries))], k=1)[0]
    assert first.text and first.text == cranfield_index.document(first.doc_id).text
    assert isinstance(loaded._segment.postings.blocks().data, np.memmap)  # the postings, in blocks, mapped


def test_save_refuses_to_overwrite(tmp_path: Path) -> None:
    index = Index.build([("a", "x")], tokenizer=WS)
    index.save(tmp_path / "i")
    with pytest.raises(InputError, match="an index exists already"):
        index.save(tmp_path / "i")
    Index.build([("b", "y")], tokenizer=WS).save(tmp_path / "i", overwrite=True)
    assert list(Index.load(tmp_path / "i").doc_ids) == ["b"]
    assert len([p for p in (tmp_path / "i").iterdir() if p.name.startswith("seg-")]) == 1


def _saved(tmp_path: Path) -> Path:
    Index.build([("a", "x y"), ("b", "y z")], tokenizer=WS).save(tmp_path / "i")
    return tmp_path / "i"


def test_corrupted_array_is_a_clear_error(tmp_path: Path) -> None:
    path = _saved(tmp_path)
    (array_file,) = path.glob("seg-*/blocks.npy")
    data = bytearray(array_file.read_bytes())
    data[-1] ^= 0xFF
    array_file.write_bytes(bytes(data))
    with pytest.raises(IndexFormatError, match="checksum mismatch.*rebuild"):
        Index.load(path)


@pytest.mark.parametrize("cores", [1, 2, 4])
@pytest.mark.parametrize("threaded_from", [0, None])
def test_the_first_damaged_file_is_named_whatever_the_threads(tmp_path: Path, monkeypatch, cores: int,
                                                              threaded_from: int | None) -> None:
    # the checksums are computed in threads, largest file first (from 0 bytes; by default a small index's
    # in one thread); the error still names the first damaged file in the manifest's order, as checking
    # them one by one does
    from bm25lab.engine import storage, tokenization

    monkeypatch.setattr(tokenization, "usable_cores", lambda: cores)
    if threaded_from is not None:
        monkeypatch.setattr(storage, "_THREADED_HASHING", threaded_from)
    path = _saved(tmp_path)
    for name in ("positions.npy", "blocks.npy", "terms.txt"):
        (damaged,) = path.glob(f"seg-*/{name}")
        data = bytearray(damaged.read_bytes())
        data[-1] ^= 0x01
        damaged.write_bytes(bytes(data))
    with pytest.raises(IndexFormatError, match=r"blocks\.npy: checksum mismatch"):
        Index.load(path)
    (first,) = path.glob("seg-*/blocks.npy")
    first.unlink()
    os.mkfifo(first)  # in its place, a FIFO: named, never read (reading it would block)
    with pytest.raises(IndexFormatError, match=r"blocks\.npy: a FIFO, not a regular file"):
        Index.load(path)


def test_truncated_array_is_a_clear_error(tmp_path: Path) -> None:
    path = _saved(tmp_path)
    (array_file,) = path.glob("seg-*/blocks.npy")
    array_file.write_bytes(array_file.read_bytes()[:-4])
    with pytest.raises(IndexFormatError, match="size differs"):
        Index.load(path)


def test_unknown_format_version_says_what_to_do(tmp_path: Path) -> None:
    path = _saved(tmp_path)
    manifest = json.loads((path / "index.json").read_text())
    manifest["format_version"] = 99
    (path / "index.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexFormatError, match="version 99.*upgrade bm25lab"):
        Index.load(path)


def test_folder_that_is_not_an_index(tmp_path: Path) -> None:
    with pytest.raises(IndexFormatError, match="not a bm25lab index"):
        Index.load(tmp_path)
    with pytest.raises(IndexFormatError, match="no such index"):
        Index.load(tmp_path / "missing")


def test_tokenizer_is_restored_with_the_index(tmp_path: Path) -> None:
    tok = Tokenizer("en", stem=False, stopwords=["boundary"])
    Index.build([("a", "boundary layers"), ("b", "layer")], tokenizer=tok).save(tmp_path / "i")
    loaded = Index.load(tmp_path / "i")
    assert loaded.tokenizer.config() == tok.config()
    assert [h.doc_id for h in loaded.search("boundary layers")] == ["a"]


def test_prepared_batch_equals_search_many(cranfield_index, cranfield) -> None:
    queries = dict(list(cranfield.judged_queries().items())[:50])
    batch = cranfield_index.batch(queries)
    for params in (dict(), dict(variant="okapi", k1=1.5, b=0.75), dict(variant="bm25l", k1=1.2, b=0.3)):
        expected = cranfield_index.search_many(queries, k=100, workers=1, **params)
        got = batch.search(k=100, **params)
        assert type(got) is type(expected) and got.qids == expected.qids
        assert np.array_equal(got.offsets, expected.offsets) and np.array_equal(got.doc_nums, expected.doc_nums)
        assert np.array_equal(got.scores, expected.scores)
        assert got == expected and got.to_dict() == expected.to_dict()


def test_build_tokens_equals_a_build_from_text(cranfield) -> None:
    # pre-tokenized input (strings, or ids into a vocabulary) gives exactly the index a text build of
    # the same tokens gives: arrays, scores, order
    from bm25lab.engine import Index, Tokenizer

    analyser = Tokenizer("en")
    docs = list(cranfield.documents())[:400]
    tokens = [(d.id, analyser.tokenize(d.full_text)) for d in docs]
    whitespace = Tokenizer("whitespace", stopwords=None)
    from_text = Index.build([(i, " ".join(t)) for i, t in tokens], tokenizer=whitespace, workers=1)
    from_strings = Index.build_tokens(tokens)
    vocabulary = sorted({t for _, ts in tokens for t in ts}, reverse=True)
    position = {t: n for n, t in enumerate(vocabulary)}
    from_ids = Index.build_tokens([(i, np.array([position[t] for t in ts])) for i, ts in tokens], vocabulary=vocabulary)
    for built in (from_strings, from_ids):
        a, b = built._segment.postings, from_text._segment.postings
        assert list(a.terms) == list(b.terms)
        for name in ("offsets", "doc_nums", "tfs", "doc_lengths"):
            assert np.array_equal(getattr(a, name), getattr(b, name))
        for q in ("boundary layer", "heat transfer flow"):
            assert [(h.doc_id, h.score) for h in built.search(q, k=20)] == \
                   [(h.doc_id, h.score) for h in from_text.search(q, k=20)]
    assert from_strings.document(tokens[0][0]).text == " ".join(tokens[0][1])
    assert from_ids.document(tokens[0][0]).text == ""


def test_build_tokens_bad_input() -> None:
    from bm25lab.engine import Index
    from bm25lab.engine.errors import InputError

    with pytest.raises(InputError, match="duplicate document id 'a'"):
        Index.build_tokens([("a", ["x"]), ("a", ["y"])])
    with pytest.raises(InputError, match="outside the vocabulary"):
        Index.build_tokens([("a", np.array([0, 5]))], vocabulary=["x", "y"])
    with pytest.raises(InputError, match="repeated term"):
        Index.build_tokens([("a", np.array([0]))], vocabulary=["x", "x"])
    with pytest.raises(InputError, match="must be \\(id, tokens\\)"):
        Index.build_tokens([("a", "not a token list")])


@pytest.mark.parametrize("extra", ["", " \n", "".join(map(chr, range(128)))])
def test_token_strings_split_in_c_equal_one_look_up_per_token(monkeypatch, extra: str) -> None:
    # token strings get their ids from the core's vocabulary (a token with a space: by its own bounds)
    # or from pyarrow's split and hash (large chunks), else are looked up token by token, as is a chunk
    # holding a token with a space: the index is the same; so it is from token ids, grouped by the core
    # or numpy. The core sorts its terms (terms up to 28 bytes long, some differing only by trailing
    # NULs) and decodes them at once, split at a newline, at another character when a term holds a
    # newline, or one by one when every ASCII character is in some term
    from bm25lab.engine import postings, selection
    from bm25lab.engine.backends import core_backend, numpy_backend

    rng = np.random.default_rng(7)
    alphabet = ["a", "b", "é", "中", "文", "𝄞", "Z", "\x00"] + list(extra)
    spaced = " " in extra
    words = sorted({"".join(map(alphabet.__getitem__, rng.integers(0, len(alphabet), size=int(rng.integers(0, 8)))))
                    for _ in range(9000)} | set(extra))  # (numpy's strings would drop trailing NULs)
    docs = [(f"d{i}", [words[w] for w in rng.integers(0, len(words), size=int(rng.integers(0, 30)))])
            for i in range(2000)] + [("every", list(extra))]
    used = sorted({t for _, ts in docs for t in ts}, reverse=True)  # a given vocabulary's terms all stay
    position = {w: i for i, w in enumerate(used)}
    id_docs = [(i, np.array([position[t] for t in ts], dtype=np.int64)) for i, ts in docs]
    taken: dict[str, list] = {"arrow": [], "core": []}
    split = numpy_backend._split_and_encode
    monkeypatch.setattr(numpy_backend, "_split_and_encode", lambda *a: taken["arrow"].append(split(*a)) or
                        taken["arrow"][-1])
    compiled = core_backend.CoreVocabulary.term_ids
    monkeypatch.setattr(core_backend.CoreVocabulary, "term_ids", lambda self, *a: taken["core"].append(None) or
                        compiled(self, *a))
    monkeypatch.setattr(postings, "_CHUNK_TOKENS", 997)  # many chunks, documents across their borders

    separators = []

    class Spy:  # the core's table, its separators recorded
        def __init__(self, table) -> None:
            self._table = table

        def __getattr__(self, name: str):
            return getattr(self._table, name)

        def __len__(self) -> int:
            return len(self._table)

        def joined(self, *args):
            separators.append(self._table.joined(*args))
            return separators[-1]

    made = core_backend.CoreVocabulary.__init__

    def spied(self) -> None:
        made(self)
        self._table = Spy(self._table)

    monkeypatch.setattr(core_backend.CoreVocabulary, "__init__", spied)

    def build(mode: str, tokens: list) -> Index:
        monkeypatch.setattr(numpy_backend, "_ARROW_MIN_TOKENS", 1 if mode == "arrow" else 10**9)
        monkeypatch.setattr(selection, "_ARROW_MIN_STRINGS", 1 if mode != "python" else 10**9)
        return Index.build_tokens(tokens, vocabulary=used if tokens is id_docs else None,
                                  backend="core" if mode == "core" else "numpy")

    plain = build("python", docs)
    assert not taken["arrow"] and not taken["core"]
    for mode, tokens in (("arrow", docs), ("core", docs), ("core", id_docs), ("python", id_docs)):
        fast = build(mode, tokens)
        assert tokens is id_docs or taken[mode]
        assert mode != "arrow" or all((t is None) == spaced for t in taken[mode])  # a space: token by token
        a, b = fast._segment.postings, plain._segment.postings
        assert list(a.terms) == list(b.terms) == sorted(b.terms)
        for name in ("offsets", "doc_nums", "tfs", "doc_lengths"):
            assert np.array_equal(getattr(a, name), getattr(b, name)), (mode, name)
        assert np.array_equal(fast._segment.id_rank, plain._segment.id_rank)
        assert fast.document("d5").text == (" ".join(docs[5][1]) if tokens is docs else "")
    assert separators == [{"": 10, " \n": 11}.get(extra, -1)]


def test_code_point_order_by_pyarrow_and_by_python(monkeypatch) -> None:
    from bm25lab.engine import selection

    strings = ["b", "", "é", "中", "𝄞", "a\x00", "a", "\uffff", "Z", "é", "ab"] * 3
    expected = sorted(range(len(strings)), key=strings.__getitem__)
    monkeypatch.setattr(selection, "_ARROW_MIN_STRINGS", 1)
    assert selection.code_point_order(strings).tolist() == expected  # stable: equal strings keep order
    with_surrogate = strings + ["\ud800"]  # no UTF-8: Python sorts them
    assert selection.code_point_order(with_surrogate).tolist() == sorted(range(len(with_surrogate)),
                                                                          key=with_surrogate.__getitem__)


def test_code_point_order_of_many_strings_never_imports_pandas(tmp_path: Path) -> None:
    # pyarrow imports pandas, where it is installed, on pa.array of Python strings and on to_numpy
    # (0.15-0.3 s of a command's start): a stand-in pandas records any attempt, installed or not
    import subprocess
    import sys

    env, marker = pandas_stand_in(tmp_path)
    code = ("import numpy as np; from bm25lab.engine.selection import code_point_order\n"
            "s = [f'd{i}' for i in np.random.default_rng(0).permutation(30_000)] + ['é', '中']\n"
            "assert code_point_order(s).tolist() == sorted(range(len(s)), key=s.__getitem__)\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path, env=env)
    assert not marker.exists()
    # the stand-in works: pyarrow's conversion of Python strings does try to import it
    subprocess.run([sys.executable, "-c", "import pyarrow as pa; pa.array(['x']).to_numpy(zero_copy_only=False)"],
                   check=True, cwd=tmp_path, env=env)
    assert marker.exists()


@pytest.mark.parametrize("batch", [3, 1000])
def test_build_tokens_in_batches_names_the_first_bad_document(monkeypatch, batch: int) -> None:
    from collections import namedtuple

    from bm25lab.engine import segments

    monkeypatch.setattr(segments, "_BATCH_DOCS", batch)
    ok = [(f"d{i}", ["x", "y"][: i % 3]) for i in range(7)]
    with pytest.raises(InputError, match=r"duplicate document id 'd1' \(documents 2 and 9 of"):
        Index.build_tokens(ok + [("d7", ["z"]), ("d1", ["y"]), ("d1", ["x"])])
    with pytest.raises(InputError, match=r"duplicate document id 'd8' \(documents 9 and 10 of"):
        Index.build_tokens(ok + [("d7", ["z"]), ("d8", ["y"]), ("d8", ["x"])])
    with pytest.raises(InputError, match=r"got \['d7', \['z'\]\]"):
        Index.build_tokens(ok + [["d7", ["z"]], ("d8", "text")])
    with pytest.raises(InputError, match=r"got \('d8', 'text'\)"):
        Index.build_tokens(ok + [("d7", ["z"]), ("d8", "text"), ("d9", "more")])
    with pytest.raises(InputError, match=r"got \('d7',\)"):
        Index.build_tokens(ok + [("d7",)])
    pair = namedtuple("pair", "id tokens")
    built = Index.build_tokens([pair(i, t) for i, t in ok] + [(8, ("z", "x"))])  # any 2-tuple; ids made str
    assert list(built.doc_ids) == [f"d{i}" for i in range(7)] + ["8"]
    assert built.document("8").text == "z x" and built.document("d0").text == ""
    assert [h.doc_id for h in built.search("z")] == ["8"]


def test_store_insert_error_surfaces_and_leaves_no_thread(monkeypatch) -> None:
    # the store inserts in a thread of its own; its error reaches the caller, nothing is left behind
    import tempfile
    import threading

    from bm25lab.engine import docstore, segments

    monkeypatch.setattr(segments, "_BATCH_DOCS", 2)
    insert_rows = docstore.DocStoreWriter._insert_rows
    before = set(Path(tempfile.gettempdir()).glob("bm25lab-scratch-*"))
    docs = [(f"d{i}", ["x", "y"]) for i in range(5)] + [("bad", ["\ud800"])] + [(f"e{i}", ["z"]) for i in range(50)]
    inserted = []
    monkeypatch.setattr(docstore.DocStoreWriter, "_insert_rows", lambda self, rows: inserted.extend(rows) or
                        insert_rows(self, rows))
    with pytest.raises(InputError, match="surrogates not allowed"):  # once, not blocked by a full queue
        Index.build_tokens(docs)
    assert not [t for t in threading.enumerate() if t.name == "bm25lab-store"]
    assert [row[1] for row in inserted][-2:] == ["d4", "bad"]  # nothing after the failed batch
    assert set(Path(tempfile.gettempdir()).glob("bm25lab-scratch-*")) == before


def test_the_scratch_folder_of_a_killed_build_is_removed_by_the_next(tmp_path: Path) -> None:
    # an index built in memory keeps its store in $TMPDIR; a build killed with SIGKILL cannot remove
    # it, so the next build there does (and leaves alone a live one's, and folders without the marker)
    import signal
    import subprocess
    import sys
    import time

    from bm25lab.engine import scratch

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    (tmp / "bm25lab-scratch-not-ours").mkdir()  # no marker: never touched
    code = ("import itertools\nfrom bm25lab.engine import Index, Tokenizer\n"
            "Index.build(((f'd{i}', 'x y') for i in itertools.count()), tokenizer=Tokenizer('whitespace'))\n")
    builder = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "TMPDIR": str(tmp)}, cwd=tmp_path)
    deadline = time.monotonic() + 120
    while not list(tmp.glob("bm25lab-scratch-*/docs.sqlite")) and time.monotonic() < deadline:
        time.sleep(0.01)
    builder.send_signal(signal.SIGKILL)
    builder.wait()
    (abandoned,) = [p for p in tmp.glob("bm25lab-scratch-*") if p.name != "bm25lab-scratch-not-ours"]
    assert scratch.held(abandoned) is False
    live = scratch.Scratch(tmp)  # a new scratch folder removes the abandoned one first
    assert not abandoned.exists() and live.path.exists() and (tmp / "bm25lab-scratch-not-ours").exists()
    assert scratch.held(live.path) is True and scratch.remove_abandoned(tmp) == []  # a live one is kept
    live.cleanup()
    assert not live.path.exists()


def test_search_many_takes_a_list_of_texts_numbered_by_position(cranfield_index) -> None:
    texts = ["boundary layer", "heat transfer"]
    by_position = cranfield_index.search_many(texts, k=5)
    assert list(by_position) == ["0", "1"]
    by_id = cranfield_index.search_many({"0": texts[0], "1": texts[1]}, k=5)
    assert [list(by_position[q].doc_ids) for q in by_position] == [list(by_id[q].doc_ids) for q in by_id]
    with pytest.raises(ParameterError, match="not one string"):
        cranfield_index.search_many("boundary layer")


def test_a_scratch_folder_killed_while_being_made_is_removed_by_the_next(tmp_path: Path) -> None:
    # a process killed between making its folder and locking the marker in it leaves a "making"
    # folder (empty, or with an unlocked marker.new or marker): abandoned, removed by the next one;
    # one whose marker is held, and a marker-less folder under a scratch name, stay
    import fcntl

    from bm25lab.engine import scratch

    empty = tmp_path / "bm25lab-scratch-making-a1"
    with_new = tmp_path / "bm25lab-scratch-making-b2"
    with_marker = tmp_path / ".bm25lab-scratch-making-c3"
    locked = tmp_path / "bm25lab-scratch-making-d4"
    foreign = tmp_path / "bm25lab-scratch-e5"
    for folder in (empty, with_new, with_marker, locked, foreign):
        folder.mkdir()
    (with_new / f"{scratch.MARKER}.new").write_text("")
    (with_marker / scratch.MARKER).write_text("")
    (locked / f"{scratch.MARKER}.new").write_text("")
    fd = os.open(locked / f"{scratch.MARKER}.new", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        assert [scratch.held(f) for f in (empty, with_new, with_marker, locked, foreign)] == [False, False, False,
                                                                                            True, None]
        live = scratch.Scratch(tmp_path)
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted([locked.name, foreign.name, live.path.name])
        assert live.path.name.startswith(".bm25lab-scratch-") and "making" not in live.path.name
        assert scratch.held(live.path) is True
        live.cleanup()
    finally:
        os.close(fd)
    assert scratch.remove_abandoned(tmp_path) == [locked.name] and foreign.exists()


def test_a_scratch_folder_taken_away_while_being_made_is_made_again(tmp_path: Path, monkeypatch) -> None:
    # another process may take a making folder for abandoned before its marker is locked (it looks
    # empty): the maker starts again rather than fail
    from bm25lab.engine import scratch

    real_mkdtemp = scratch.tempfile.mkdtemp
    taken = []

    def mkdtemp_then_taken(**kwargs):
        path = real_mkdtemp(**kwargs)
        if len(taken) < 2:
            taken.append(path)
            os.rmdir(path)  # what remove_abandoned in another process does to an empty making folder
        return path

    monkeypatch.setattr(scratch.tempfile, "mkdtemp", mkdtemp_then_taken)
    live = scratch.Scratch(tmp_path)
    assert len(taken) == 2 and scratch.held(live.path) is True
    assert [p.name for p in tmp_path.iterdir()] == [live.path.name]
    live.cleanup()


def test_a_writer_still_using_a_scratch_folder_adds_nothing_while_it_is_removed(tmp_path: Path, monkeypatch) -> None:
    # a task of a cluster build may outlive its build and go on writing into the build's staging
    # folder by its path while the build removes it: it must get an error, not leave a folder behind
    from bm25lab.engine import scratch

    live = scratch.Scratch(tmp_path)
    (live.path / "shard-0").mkdir()
    real_rmtree = scratch.shutil.rmtree
    attempts = []

    def rmtree_with_a_late_writer(path, **kwargs):
        for late in (live.path / "shard-0" / "segment", live.path / "late"):
            try:
                late.mkdir()
            except FileNotFoundError:
                attempts.append(late.name)
        return real_rmtree(path, **kwargs)

    monkeypatch.setattr(scratch.shutil, "rmtree", rmtree_with_a_late_writer)
    live.cleanup()
    assert attempts == ["segment", "late"]
    assert list(tmp_path.iterdir()) == []


def test_a_making_folder_taken_for_abandoned_is_out_of_its_makers_reach_while_it_is_emptied(tmp_path: Path,
                                                                                             monkeypatch) -> None:
    # two builds making scratch folders side by side: one sees the other's making folder before its
    # marker is locked and takes it for abandoned; the maker, going on meanwhile, must find it gone (and
    # start again) rather than rename it into use while it is being emptied (its files then vanish)
    from bm25lab.engine import scratch

    making = tmp_path / ".bm25lab-scratch-making-abc"
    making.mkdir()
    real_rmtree = scratch.shutil.rmtree
    maker = []

    def rmtree_while_the_maker_goes_on(path, **kwargs):
        try:
            os.rename(making, tmp_path / ".bm25lab-scratch-abc")  # the maker's next step
            maker.append("renamed it into use")
        except FileNotFoundError:
            maker.append("found it gone")
        return real_rmtree(path, **kwargs)

    monkeypatch.setattr(scratch.shutil, "rmtree", rmtree_while_the_maker_goes_on)
    assert scratch.remove_abandoned(tmp_path) == [making.name]
    assert maker == ["found it gone"]
    assert list(tmp_path.iterdir()) == []


def test_string_columns_from_python_strings_never_import_pandas(tmp_path: Path) -> None:
    # the column of an index's document ids (a run made from search results reads it) was made by
    # pa.array, which imports pandas where installed; made from the UTF-8 now, equal to pa.array's
    import subprocess
    import sys

    env, marker = pandas_stand_in(tmp_path)
    code = ("from bm25lab.engine.columns import string_array, string_hashes\n"
            "ids = ['d1', 'é', '', '中文', 'a\\x00b', '\\U0001F600'] * 5\n"
            "column = string_array(ids)\n"
            "assert column.type == 'string' and column.to_pylist() == ids and len(string_hashes(column)) == 30\n"
            "assert string_array(tuple(ids)).to_pylist() == ids\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path, env=env)
    assert not marker.exists()


def test_string_columns_refuse_what_pyarrow_refuses() -> None:
    import pyarrow as pa

    from bm25lab.engine.columns import string_array

    for bad in (["a", 1], ["a", "\ud800"]):
        with pytest.raises((pa.ArrowException, TypeError, UnicodeEncodeError)) as ours:
            string_array(bad)
        with pytest.raises(type(ours.value)):
            pa.array(bad, type=pa.string())
