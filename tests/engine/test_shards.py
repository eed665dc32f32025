"""Sharded indexes in one process (no Dask): the same documents, order and float64 scores as one index
of the same documents, bit for bit, for every variant, both backends, English and Chinese, 1, 2, 3 and
7 shards; the format, routing, growth, failures and crash safety of bm25lab.engine.shards."""
from __future__ import annotations

import hashlib
import json
import random
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

from bm25lab.engine import Document, Index, IndexFormatError, InputError, Tokenizer, segments, shards, storage
from bm25lab.engine.scoring import VARIANTS, Params
from bm25lab.engine.shards import GlobalTerms, ShardedIndex, ShardHits, merge_hits, route

SHARD_COUNTS = (1, 2, 3, 7)


def bits(results) -> dict[str, tuple[list[str], list[int]]]:
    """Every query's document ids and the bit patterns of their float64 scores, best first."""
    return {q: (h.doc_ids, np.asarray(h.scores, dtype=np.float64).view(np.int64).tolist()) for q, h in results.items()}


def hits_bits(hits) -> tuple[list[str], list[int]]:
    return hits.doc_ids, np.asarray(hits.scores, dtype=np.float64).view(np.int64).tolist()


def snapshot(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file() and p.name != ".writer.lock"}


class Collection:
    """A corpus's documents and queries, one index of them (the reference, whose results are kept per
    parameters) and sharded indexes of them."""

    def __init__(self, corpus, language: str, queries: int | None, counts: tuple[int, ...], folder: Path) -> None:
        self.docs = list(corpus.documents())
        self.tokenizer = Tokenizer(language)
        judged = corpus.judged_queries()
        self.queries = dict(list(judged.items())[:queries]) if queries else judged
        self.single = Index.build(self.docs, tokenizer=self.tokenizer, workers=1, backend="numpy")
        self.paths = {n: shards.build(self.docs, folder / f"s{n}", n, self.tokenizer, workers=1) for n in counts}
        self._expected: dict[tuple, dict] = {}

    def expected(self, variant: str, k: int) -> dict:
        if (variant, k) not in self._expected:
            self._expected[variant, k] = bits(self.single.search_many(self.queries, k=k, variant=variant, workers=1))
        return self._expected[variant, k]


@pytest.fixture(scope="module")
def collections(cranfield, cmrc, tmp_path_factory) -> dict[str, Collection]:
    """Cranfield with 1, 2, 3 and 7 shards; CMRC 2018 (jieba, slower to build) with 2 and 7 (the cluster's
    tests, tests/test_distributed.py, build both with 1, 2, 3 and 7)."""
    return {"cranfield": Collection(cranfield, "en", None, SHARD_COUNTS, tmp_path_factory.mktemp("cranfield")),
            "cmrc2018": Collection(cmrc, "zh", 200, (2, 7), tmp_path_factory.mktemp("cmrc"))}


# ---------------------------------------------------------------------------------------------- identity
@pytest.mark.parametrize("name", ["cranfield", "cmrc2018"])
@pytest.mark.parametrize("backend", ["numpy", "core"])
def test_sharded_search_equals_one_index_bit_for_bit(collections, name: str, backend: str) -> None:
    c = collections[name]
    singles = list(c.queries.values())[:6]
    for count, path in c.paths.items():
        index = ShardedIndex.load(path, backend=backend)
        assert index.num_shards == count and index.backend == backend
        assert index.counts() == c.single.counts() and index.avgdl == c.single.avgdl
        for variant in VARIANTS:
            for k in ((100, 1000) if variant in ("lucene", "okapi") else (100,)):
                got = bits(index.search_many(c.queries, k=k, variant=variant, workers=1))
                assert got == c.expected(variant, k), (count, variant, k)
            for text in singles:  # one query at a time: the cold path, without every posting's weight
                assert hits_bits(index.search(text, k=20, variant=variant, k1=1.2, b=0.75)) == \
                    hits_bits(c.single.search(text, k=20, variant=variant, k1=1.2, b=0.75)), (count, variant, text)


def test_the_collections_largest_weights_are_needed(collections) -> None:
    """Each document's weights are added in the canonical order of the query's terms, which their largest
    weights in the whole collection fix: with each shard's own largest weights instead, sums differ
    in the last bits (this is what the first round of a sharded search is for)."""
    c = collections["cranfield"]
    tokens = [c.tokenizer.tokenize(t) for t in c.queries.values()]
    params = Params("lucene").resolved()
    index = ShardedIndex.load(c.paths[3], backend="numpy")
    answers = [shard.look_up(tokens, params) for shard in index.shards]
    whole = GlobalTerms.union(answers)
    right = merge_hits([shard.top_k(whole, 1000, params) for shard in index.shards], 1000)
    wrong_parts = []
    which = np.repeat(np.arange(len(whole)), np.diff(whole.q_ptr))
    for shard, own in zip(index.shards, answers):
        own_which = np.repeat(np.arange(len(own)), np.diff(own.q_ptr))
        mine = dict(zip(zip(own_which.tolist(), own.term_ids.tolist()), own.upper.tolist()))
        upper = np.array([mine.get(key, 0.0) for key in zip(which.tolist(), whole.term_ids.tolist())])
        wrong_parts.append(shard.top_k(GlobalTerms(whole.q_ptr, whole.term_ids, whole.counts, upper), 1000, params))
    wrong = merge_hits(wrong_parts, 1000)
    expected = c.single.retrieve_tokens(tokens, 1000, workers=1)
    ids = c.single.doc_ids

    def differs(found: ShardHits, i: int) -> bool:
        a, z = found.offsets[i], found.offsets[i + 1]
        return found.ids()[a:z] != [ids[d] for d in expected[i][0]] or \
            found.scores[a:z].tobytes() != expected[i][1].tobytes()

    assert not any(differs(right, i) for i in range(len(tokens)))
    assert sum(differs(wrong, i) for i in range(len(tokens))) > 10


def test_global_statistics_are_one_index_s(collections) -> None:
    for c in collections.values():
        single = c.single
        for path in c.paths.values():
            manifest = json.loads((path / shards.MANIFEST).read_text())
            counts = shards.load_counts(path, manifest["statistics"])
            assert counts.terms == list(single._segment.postings.terms)
            assert np.array_equal(counts.df, single._segment.postings.document_frequencies())
            assert (counts.documents, counts.total_length) == (single.num_docs, single.counts()["total_length"])
            assert sum(s["manifest"]["counts"]["documents"] for s in manifest["shards"]) == single.num_docs


# ---------------------------------------------------------------------------------------------- format
def test_routing_is_fixed_and_every_document_is_in_its_shard(collections) -> None:
    # pinned: the first 8 bytes of BLAKE2b of the UTF-8 id, big-endian, modulo the count
    assert [route(doc_id, 7) for doc_id in ("1", "2", "d17", "清华大学", "")] == \
        [int.from_bytes(hashlib.blake2b(i.encode(), digest_size=8).digest(), "big") % 7
         for i in ("1", "2", "d17", "清华大学", "")]
    assert route("1", 1) == 0
    c = collections["cranfield"]
    for count in (3, 7):
        index = ShardedIndex.load(c.paths[count])
        seen = []
        for position, shard in enumerate(index.shards):
            assert {route(d, count) for d in shard.segment.doc_ids} <= {position}
            seen += shard.segment.doc_ids
        assert sorted(seen) == sorted(d.id for d in c.docs)
        assert index.document(c.docs[5].id) == c.docs[5]


def test_each_shard_is_an_ordinary_index_that_changes_only_with_its_sharded_index(collections, tmp_path: Path) -> None:
    path = collections["cranfield"].paths[3]
    manifest = json.loads((path / shards.MANIFEST).read_text())
    shard_dir = path / manifest["shards"][1]["name"]
    alone = Index.load(shard_dir)  # an ordinary index, with its own statistics
    assert alone.num_docs == manifest["shards"][1]["manifest"]["counts"]["documents"]
    assert json.loads((shard_dir / "index.json").read_text()) == manifest["shards"][1]["manifest"]
    before = snapshot(path)
    with pytest.raises(IndexFormatError, match="is a shard of the sharded index"):
        segments.delete_documents(shard_dir, [alone.doc_ids[0]])
    with pytest.raises(IndexFormatError, match="is a shard"):
        segments.add_documents(shard_dir, [("new", "text")])
    with pytest.raises(IndexFormatError, match="is a shard"):
        alone.save(shard_dir, overwrite=True)
    assert snapshot(path) == before
    with pytest.raises(IndexFormatError, match="a sharded index"):
        Index.load(path)


def test_merge_takes_the_best_k_by_the_tie_rule() -> None:
    # two shards, two queries; equal scores are broken by document id descending in code point order
    a = ShardHits(np.array([0, 3, 4]), ["z", "B", "a", "q"], np.array([3.0, 1.0, 1.0, 2.0]))
    b = ShardHits(np.array([0, 3, 3]), ["é", "b", "A"], np.array([1.0, 1.0, 0.5]))
    merged = merge_hits([a, b], 4)
    assert merged.offsets.tolist() == [0, 4, 5]
    assert merged.ids() == ["z", "é", "b", "a", "q"]  # "é" > "b" > "a" > "B": code points, not locale
    assert merged.scores.tolist() == [3.0, 1.0, 1.0, 1.0, 2.0]
    assert merge_hits([a, b], 2).ids() == ["z", "é", "q"]
    assert merge_hits([ShardHits.empty(2), ShardHits.empty(2)], 5).offsets.tolist() == [0, 0, 0]


def test_merge_equals_sorting_every_candidate_with_many_ties() -> None:
    rng = random.Random(7)
    alphabet = ["a", "b", "Z", "é", "清", "10", "9", "b\U0001F600"]
    for _ in range(200):
        queries, k, count = rng.randint(1, 4), rng.randint(1, 12), rng.randint(1, 5)
        ids = rng.sample(sorted({"".join(rng.choices(alphabet, k=rng.randint(1, 3))) for _ in range(80)}), 40)
        owner = {doc_id: rng.randrange(count) for doc_id in ids}  # a document lives in one shard
        candidates = [[(doc_id, float(rng.choice([0.0, 1.0, 1.5, 2.0, -1.0]))) for doc_id in rng.sample(ids, rng.randint(0, 30))]
                      for _ in range(queries)]
        parts = []
        for shard in range(count):
            lists = [sorted(sorted([c for c in cands if owner[c[0]] == shard], reverse=True), key=lambda c: -c[1])[:k]
                     for cands in candidates]  # each shard's own top k, by the tie rule
            offsets = np.cumsum([0] + [len(x) for x in lists])
            parts.append(ShardHits(offsets, [c[0] for x in lists for c in x], np.array([c[1] for x in lists for c in x])))
        merged = merge_hits(parts, k)
        for q, cands in enumerate(candidates):
            expected = sorted(sorted(cands, reverse=True), key=lambda c: -c[1])[:k]
            a, z = merged.offsets[q], merged.offsets[q + 1]
            assert list(zip(merged.ids()[a:z], merged.scores[a:z].tolist())) == expected


def test_code_point_ranks_equal_python_sorting() -> None:
    import pyarrow as pa

    from bm25lab.engine.shards import code_point_ranks

    rng = random.Random(3)
    pieces = ["doc-0000", "doc-0000a", "a", "\x00", "é", "清华", "\U0001F600", "Z", "zz", "12345678", "123456789"]
    for _ in range(50):
        ids = ["".join(rng.choices(pieces, k=rng.randint(1, 4))) for _ in range(rng.randint(1, 60))]
        ranks = code_point_ranks(pa.array(ids, type=pa.large_string()))
        expected = sorted(range(len(ids)), key=lambda i: (ids[i], i))  # equal ids keep their order
        assert ranks.tolist() == [expected.index(i) for i in range(len(ids))]


def test_union_keeps_each_terms_largest_weight() -> None:
    a = GlobalTerms(np.array([0, 2, 3]), np.array([1, 5, 2]), np.array([1.0, 2.0, 1.0]), np.array([0.5, 0.7, 0.1]))
    b = GlobalTerms(np.array([0, 1, 3]), np.array([5, 2, 9]), np.array([2.0, 1.0, 1.0]), np.array([0.9, 0.3, 0.2]))
    u = GlobalTerms.union([a, b])
    assert u.q_ptr.tolist() == [0, 2, 4]
    assert u.term_ids.tolist() == [1, 5, 2, 9] and u.counts.tolist() == [1.0, 2.0, 1.0, 1.0]
    assert u.upper.tolist() == [0.5, 0.9, 0.3, 0.2]


def test_damage_and_foreign_versions_are_index_format_errors(collections, tmp_path: Path) -> None:
    import shutil

    path = tmp_path / "copy"
    shutil.copytree(collections["cranfield"].paths[2], path)
    manifest = json.loads((path / shards.MANIFEST).read_text())
    df = path / manifest["statistics"]["name"] / shards.DF_FILE
    raw = bytearray(df.read_bytes())
    raw[-1] ^= 1
    df.write_bytes(bytes(raw))
    with pytest.raises(IndexFormatError, match="checksum mismatch"):
        ShardedIndex.load(path)
    (path / shards.MANIFEST).write_text(json.dumps(dict(manifest, format_version=99)))
    with pytest.raises(IndexFormatError, match="version 99.*upgrade bm25lab"):
        ShardedIndex.load(path)
    (path / shards.MANIFEST).write_text("{not json")
    with pytest.raises(IndexFormatError, match="unreadable manifest"):
        ShardedIndex.load(path)


# ---------------------------------------------------------------------------------------------- growing
def edited(doc: Document) -> Document:
    return replace(doc, text=" ".join(reversed(doc.text.split())) + " replacement", title=f"new {doc.title}")


def test_add_delete_optimize_equal_a_fresh_build(cranfield, tmp_path: Path) -> None:
    docs = list(cranfield.documents())
    queries = dict(list(cranfield.judged_queries().items())[:60])
    tok = Tokenizer("en")
    index = ShardedIndex.build(docs[:800], tmp_path / "g", 3, tokenizer=tok, workers=1)
    assert index.add(docs[800:1100], workers=1).added == 300
    replaced = [edited(d) for d in docs[100:130] + docs[900:910]]
    change = index.add(replaced + docs[1100:], workers=1)
    assert (change.added, change.replaced, change.documents) == (340, 40, 1400)
    gone = [d.id for d in docs[0:25] + docs[1200:1210]]
    change = index.delete(gone)
    assert (change.deleted, change.documents) == (35, 1365)

    final = {d.id: d for d in docs}
    final.update({d.id: d for d in replaced})
    for doc_id in gone:
        del final[doc_id]
    fresh = Index.build(sorted(final.values(), key=lambda d: d.id), tokenizer=tok, workers=1)

    def same(grown) -> None:
        assert grown.counts() == fresh.counts() and grown.avgdl == fresh.avgdl
        for variant in ("lucene", "okapi", "bm25+"):
            assert bits(grown.search_many(queries, k=100, variant=variant, workers=1)) == \
                bits(fresh.search_many(queries, k=100, variant=variant, workers=1))

    same(index)
    same(ShardedIndex.load(tmp_path / "g", backend="core"))
    counts = shards.load_counts(tmp_path / "g", shards.read_manifest(tmp_path / "g")["statistics"])
    assert counts.terms == list(fresh._segment.postings.terms)
    assert np.array_equal(counts.df, fresh._segment.postings.document_frequencies())
    assert index.document(replaced[0].id) == replaced[0] and index.document(gone[0]) is None
    assert sorted(d.id for d in index.documents()) == sorted(final)

    change = index.optimize()
    assert (change.merged, change.purged, change.documents, change.segments) == (9, 75, 1365, 3)
    same(ShardedIndex.load(tmp_path / "g"))
    names = {p.name for p in (tmp_path / "g").iterdir()}
    assert {n for n in names if n.startswith("stats-")} == {shards.read_manifest(tmp_path / "g")["statistics"]["name"]}
    assert len([n for n in names if n.startswith("shard-")]) == 3 and not [n for n in names if n.startswith(".")
                                                                            and n not in (".writer.lock", ".writer.journal")]
    assert storage.Journal(tmp_path / "g").names() == []  # the journal holds nothing pending
    assert index.optimize().merged == 0  # nothing left to merge


def test_deleting_an_unknown_id_changes_nothing(collections, tmp_path: Path) -> None:
    import shutil

    path = tmp_path / "copy"
    shutil.copytree(collections["cranfield"].paths[3], path)
    before = snapshot(path)
    known = collections["cranfield"].docs[3].id
    with pytest.raises(InputError, match=r"no such documents in the index: 'nope', 'gone too'; nothing was deleted"):
        shards.delete_documents(path, ["nope", known, "gone too"])
    assert snapshot(path) == before


def test_a_killed_commit_leaves_shard_manifests_that_the_next_writer_repairs(cranfield, tmp_path: Path) -> None:
    docs = list(cranfield.documents())[:300]
    path = tmp_path / "idx"
    index = ShardedIndex.build(docs, path, 2, tokenizer=Tokenizer("en"), workers=1)
    manifest = shards.read_manifest(path)
    old = {e["name"]: (path / e["name"] / "index.json").read_bytes() for e in manifest["shards"]}
    old_files = {e["name"]: snapshot(path / e["name"]) for e in manifest["shards"]}
    index.delete([docs[0].id, docs[1].id])
    # as if the writer died just after committing shards.json: the shards' index.json and files are the old ones
    for name, raw in old.items():
        (path / name / "index.json").write_bytes(raw)
    loaded = ShardedIndex.load(path)
    assert loaded.num_docs == 298 and loaded.document(docs[0].id) is None
    assert all(old_files[n].keys() <= snapshot(path / n).keys() for n in old)
    shards.optimize(path)  # the next writer brings every shard's index.json to the manifest's copy
    for entry in shards.read_manifest(path)["shards"]:
        assert json.loads((path / entry["name"] / "index.json").read_text()) == entry["manifest"]
        assert Index.load(path / entry["name"]).num_docs == entry["manifest"]["counts"]["documents"]


# ---------------------------------------------------------------------------------------------- failures
def failing(docs: list[Document], after: int) -> Iterator[Document]:
    yield from docs[:after]
    raise InputError("bad line", "docs.jsonl", after + 1)


def test_a_failed_build_leaves_the_old_index_or_no_folder(cranfield, tmp_path: Path) -> None:
    docs = list(cranfield.documents())[:400]
    tok = Tokenizer("en")
    with pytest.raises(InputError, match="docs.jsonl:301: bad line"):
        shards.build(failing(docs, 300), tmp_path / "new", 3, tok, workers=1)
    assert not (tmp_path / "new").exists()

    shards.build(docs[:200], tmp_path / "old", 3, tok, workers=1)
    before = snapshot(tmp_path / "old")
    with pytest.raises(InputError, match="docs.jsonl:301"):
        shards.build(failing(docs, 300), tmp_path / "old", 2, tok, workers=1, overwrite=True)
    assert snapshot(tmp_path / "old") == before
    assert sorted(p.name for p in (tmp_path / "old").iterdir() if p.name.startswith(".")) == [".writer.journal",
                                                                                              ".writer.lock"]
    assert storage.Journal(tmp_path / "old").names() == []
    with pytest.raises(InputError, match="an index exists already"):
        shards.build(docs, tmp_path / "old", 3, tok, workers=1)
    assert snapshot(tmp_path / "old") == before
    shards.build(docs, tmp_path / "old", 2, tok, workers=1, overwrite=True)
    assert ShardedIndex.load(tmp_path / "old").num_docs == 400
    assert len([p for p in (tmp_path / "old").iterdir() if p.name.startswith("shard-")]) == 2


def test_duplicate_ids_are_named_within_and_across_partitions(tmp_path: Path) -> None:
    tok = Tokenizer("whitespace", stopwords=None)
    docs = [Document(f"d{i}", f"w{i % 7} w{i % 3}") for i in range(50)]
    with pytest.raises(InputError, match=r"duplicate document id 'd3' \(documents 4 and 51 of the input\)"):
        shards.build(docs + [docs[3]], tmp_path / "a", 3, tok, workers=1)
    assert not (tmp_path / "a").exists()
    # across partitions (as a cluster builds): both ranges of the input are named
    staging = tmp_path / "staging"
    staging.mkdir()
    first = shards.write_partition(docs[:30], tok, 1, staging, first=0)
    second = shards.write_partition(docs[30:] + [docs[3]], tok, 1, staging, first=30)
    assert second.count == 21 and list(first.segments) == [0]
    with pytest.raises(InputError, match=r"duplicate document id 'd3' \(among documents 1-30 and 31-51 of the input\)"):
        shards.assemble_shard(tmp_path, staging, 0, 1, [(0, 30, first.segments[0]), (30, 21, second.segments[0])],
                              tok.config())


def test_targets_that_are_refused(tmp_path: Path) -> None:
    tok = Tokenizer("whitespace", stopwords=None)
    docs = [("a", "x y"), ("b", "y z")]
    Index.build(docs, tokenizer=tok).save(tmp_path / "ordinary")
    with pytest.raises(InputError, match="holds an ordinary index"):
        shards.build(docs, tmp_path / "ordinary", 2, tok, overwrite=True)
    shards.build(docs, tmp_path / "sharded", 2, tok)
    with pytest.raises(InputError, match="holds a sharded index"):
        Index.build(docs, tokenizer=tok).save(tmp_path / "sharded", overwrite=True)
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="not a directory"):
        shards.build(docs, tmp_path / "file", 2, tok)
    from bm25lab.engine.errors import ParameterError

    with pytest.raises(ParameterError, match="number of shards"):
        shards.build(docs, tmp_path / "zero", 0, tok)


def test_more_shards_than_documents_and_empty_shards(tmp_path: Path) -> None:
    tok = Tokenizer("whitespace", stopwords=None)
    docs = [("a", "x y"), ("b", "y z"), ("c", "z z x")]
    index = ShardedIndex.build(docs, tmp_path / "s", 7, tokenizer=tok)
    single = Index.build(docs, tokenizer=tok)
    assert sum(1 for s in index.shards if s.num_docs == 0) >= 4
    for variant in VARIANTS:
        assert hits_bits(index.search("x z", k=5, variant=variant)) == hits_bits(single.search("x z", k=5, variant=variant))
    assert index.search("nothing", k=3) == [] and index.search_many({}, k=3) == {}
    index.delete(["a", "b", "c"])
    assert index.num_docs == 0 and index.search("x", k=3) == []


# ---------------------------------------------------------------------------------------------- crash safety
# A helper interpreter forks one child per command (the real command line, as tests/engine/test_crash.py
# does for ordinary indexes); the child is killed with SIGKILL after a random delay, or a few
# milliseconds after a new file appears in the index folder or one of its shards (mid-write).
FORKER = r"""
import contextlib, io, json, os, signal, sys, time
import bm25lab.engine.shards, bm25lab.cli.growth_cmds, rich.progress
from bm25lab.cli import app
for command in ("index", "add", "delete", "optimize"):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        app([command, "--help"], prog_name="bm25lab")
print("ready", flush=True)

def names(folder):
    out = set()
    for root, dirs, files in os.walk(folder):
        out.update(os.path.join(root, n) for n in dirs + files)
    return out

for line in sys.stdin:
    job = json.loads(line)
    sys.stdout.flush(); sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        fd = os.open(job["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1); os.dup2(fd, 2)
        code = 0
        try:
            app(job["args"], prog_name="bm25lab")
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        sys.stdout.flush(); sys.stderr.flush()
        os._exit(code)
    started = time.perf_counter()
    watch = job.get("watch")
    seen = names(watch) if watch else set()
    clock = None if watch else started
    killed = False
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if clock is None and not names(watch) <= seen:
            clock = time.perf_counter()
        if clock is not None and time.perf_counter() - clock >= job["delay"]:
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            killed = os.WIFSIGNALED(status)
            break
        time.sleep(0.0005)
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    print(json.dumps({"killed": killed, "code": code, "took": time.perf_counter() - started}), flush=True)
"""


def observed(directory: Path) -> dict[str, str]:
    """The live documents of the sharded index, checked to search as a fresh index of them does."""
    index = ShardedIndex.load(directory)
    docs = {d.id: d.text for d in index.documents()}
    assert len(docs) == index.num_docs
    fresh = Index.build(sorted(docs.items()), tokenizer=index.tokenizer, workers=1)
    assert index.counts() == fresh.counts()
    for query in ("w1 w2 w3", "w7 w250 salt", "w99"):
        assert hits_bits(index.search(query, k=20)) == hits_bits(fresh.search(query, k=20))
    return docs


def left_behind(directory: Path) -> set[str]:
    """Files that no manifest names (a writer died while writing a change), and stale shard manifests."""
    manifest = json.loads((directory / shards.MANIFEST).read_text())
    named = {shards.MANIFEST, ".writer.lock", ".writer.journal"} | {e["name"] for e in manifest["shards"]} | \
        {manifest["statistics"]["name"]}
    out = {p.name for p in directory.iterdir() if p.name not in named}
    out |= {f"journal: {n}" for n in storage.Journal(directory).names()}
    for entry in manifest["shards"]:
        folder = directory / entry["name"]
        keep = {"index.json", ".writer.lock", ".writer.journal"} | storage.referenced_names(entry["manifest"])
        out |= {f"{entry['name']}/journal: {n}" for n in storage.Journal(folder).names()}
        out |= {f"{entry['name']}/{p.name}" for p in folder.iterdir() if p.name not in keep}
        if json.loads((folder / "index.json").read_text()) != entry["manifest"]:
            out.add(f"{entry['name']}/index.json (stale)")
    return out


def test_kill_at_random_moments_leaves_before_or_after(tmp_path: Path) -> None:
    rng = random.Random(20261124)
    words = [f"w{i}" for i in range(300)]

    def synthetic(ids: list[str], salt: str = "") -> dict[str, str]:
        return {i: " ".join(rng.choices(words, k=rng.randint(5, 40))) + (f" {salt}" if salt else "") for i in ids}

    def jsonl(name: str, docs: dict[str, str]) -> str:
        path = tmp_path / name
        path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in docs.items()))
        return str(path)

    index_dir = tmp_path / "idx"
    log = tmp_path / "command.log"
    helper = subprocess.Popen([sys.executable, "-c", FORKER], cwd=tmp_path, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert helper.stdout.readline().strip() == "ready"

    def run(args: list[str], delay: float, watch: Path | None = None) -> tuple[bool, float]:
        helper.stdin.write(json.dumps({"args": args, "delay": delay, "log": str(log),
                                       "watch": str(watch) if watch else None}) + "\n")
        helper.stdin.flush()
        answer = json.loads(helper.stdout.readline())
        if not answer["killed"]:
            assert answer["code"] == 0, log.read_text()
        return answer["killed"], answer["took"]

    try:
        initial = synthetic([f"d{i}" for i in range(1200)])
        reset = synthetic([f"r{i}" for i in range(900)], salt="salt")
        reset_file = jsonl("reset.jsonl", reset)
        build = ["--language", "whitespace", "--workers", "1"]
        assert run(["index", jsonl("initial.jsonl", initial), "--out", str(index_dir), "--shards", "3", *build], 60)[0] is False
        state = observed(index_dir)
        assert state == initial

        def op_add(step: int):
            existing = rng.sample(sorted(state), k=min(40, len(state)))
            new = synthetic(existing + [f"n{step}-{i}" for i in range(600)], salt="salt")
            return ["add", str(index_dir), jsonl(f"add{step}.jsonl", new), "--workers", "1"], {**state, **new}

        def op_delete(step: int):
            gone = rng.sample(sorted(state), k=min(60, len(state) - 1))
            return ["delete", str(index_dir), *gone], {k: v for k, v in state.items() if k not in gone}

        def op_optimize(step: int):
            return ["optimize", str(index_dir)], dict(state)

        def op_overwrite(step: int):
            return ["index", reset_file, "--out", str(index_dir), "--shards", "3", "--overwrite", *build], dict(reset)

        ops = {"add": op_add, "delete": op_delete, "optimize": op_optimize, "index --overwrite": op_overwrite}
        duration: dict[str, float] = {}
        outcomes = {"finished": 0, "killed, before": 0, "killed, after": 0, "killed while writing": 0}
        for step in range(48):
            if step >= 16 and outcomes["killed, before"] + outcomes["killed, after"] >= 6 \
                    and outcomes["killed while writing"] >= 3:
                break
            name = rng.choice(sorted(ops)) if step else "add"
            args, after = ops[name](step)
            before, leftovers = state, left_behind(index_dir)
            if step % 2:
                killed, took = run(args, rng.uniform(0.0, 0.03), watch=index_dir)
            else:
                killed, took = run(args, rng.uniform(0.0, 1.05 * duration[name]) if name in duration else 60.0)
            if not killed:
                duration[name] = took
            elif left_behind(index_dir) - leftovers:
                outcomes["killed while writing"] += 1
            state = observed(index_dir)
            assert state in (before, after), f"step {step}: {name} killed={killed} left a state that is neither"
            outcomes["finished" if not killed else ("killed, after" if state == after != before else "killed, before")] += 1
        assert outcomes["killed, before"] + outcomes["killed, after"] >= 6, outcomes
        assert outcomes["killed while writing"] >= 3, outcomes
        # a clean change removes whatever the killed writers left, and repairs stale shard manifests
        assert run(["add", str(index_dir), jsonl("last.jsonl", {"z": "w1"})], 60)[0] is False
        assert left_behind(index_dir) == set()
        assert observed(index_dir) == {**state, "z": "w1"}
    finally:
        helper.stdin.close()
        helper.wait(timeout=60)


# ---------------------------------------------------------------------------------------------- on-disk rules
# The rules of an ordinary index (bm25lab.engine.storage) hold for a sharded one: checksummed manifests
# at format version 2, counts checked against the data, targets refused unless new, empty or an index,
# readers that pin their files, writers that verify before they rewrite, remove only what they journaled
# and refuse a shard before they remove anything. (Crashes: tests/engine/test_crash.py; readers under a
# committing writer: tests/engine/test_concurrency.py; full disks: tests/engine/test_disk_full.py.)
WS = Tokenizer("whitespace", stopwords=None)


def seal(manifest: dict) -> dict:
    body = {k: v for k, v in manifest.items() if k != "checksum"}
    return dict(body, checksum=storage.manifest_checksum(body))


def test_shards_json_is_checksummed_and_its_counts_are_checked(collections, tmp_path: Path) -> None:
    import copy
    import shutil

    path = tmp_path / "copy"
    shutil.copytree(collections["cranfield"].paths[2], path)
    manifest = json.loads((path / shards.MANIFEST).read_text())
    assert manifest["format_version"] == shards.FORMAT_VERSION == storage.FORMAT_VERSION == 3
    assert manifest["checksum"] == storage.manifest_checksum(manifest)
    for entry in manifest["shards"]:  # each shard's manifest: version 3, its own checksum, the same on disk
        assert entry["manifest"]["format_version"] == 3
        assert entry["manifest"]["checksum"] == storage.manifest_checksum(entry["manifest"])
        assert storage.read_manifest(path / entry["name"]) == entry["manifest"]

    def loading_says(edited: dict, message: str) -> None:
        (path / shards.MANIFEST).write_text(json.dumps(edited, indent=1))
        with pytest.raises(IndexFormatError, match=message):
            ShardedIndex.load(path)

    edited = copy.deepcopy(manifest)
    edited["tokenizer"]["stem"] = not edited["tokenizer"]["stem"]  # would silently change every search
    loading_says(edited, r"shards.json: manifest checksum mismatch \(the manifest was edited or damaged\)")
    edited = copy.deepcopy(manifest)
    edited["shards"][1]["manifest"]["tokenizer"]["stem"] = not manifest["tokenizer"]["stem"]
    loading_says(seal(edited), r"index.json: manifest checksum mismatch")  # the shard's copy has its own
    edited = copy.deepcopy(manifest)
    counts = edited["shards"][0]["manifest"]["counts"]
    counts["documents"] -= 1
    edited["shards"][0]["manifest"] = seal(edited["shards"][0]["manifest"])
    edited["statistics"]["documents"] -= 1
    loading_says(seal(edited), r"the segments hold \{'documents': \d+.*the manifest says")
    edited = copy.deepcopy(manifest)
    edited["statistics"]["total_length"] += 1
    loading_says(seal(edited), r"the statistics' counts are not the sum of the shards'")
    # a statistics file that agrees with its record but not with the shards: two terms' df swapped
    df_path = path / manifest["statistics"]["name"] / shards.DF_FILE
    df = np.load(df_path)
    first, other = 0, int(np.flatnonzero(df != df[0])[0])
    df[[first, other]] = df[[other, first]]
    np.save(df_path, df)
    edited = copy.deepcopy(manifest)
    edited["statistics"]["files"][shards.DF_FILE] = {"bytes": df_path.stat().st_size,
                                                    "sha256": storage.sha256_file(df_path)}
    loading_says(seal(edited), r"shards.json: the statistics disagree with the shards")


def test_sharded_targets_follow_the_index_out_rules(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from bm25lab.cli import app

    docs = [("a", "x y"), ("b", "y z")]
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match=r"not empty and holds no bm25lab index \(it holds 'notes.txt'\)"):
        shards.build(docs, foreign, 2, WS, overwrite=True)
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]  # not even a lock file was made
    someone = tmp_path / "someone"
    someone.mkdir()
    (someone / shards.MANIFEST).write_text('{"format": "another program"}')
    for overwrite in (False, True):
        with pytest.raises(InputError, match=r"shards.json: not a bm25lab index manifest; refusing to replace it"):
            shards.build(docs, someone, 2, WS, overwrite=overwrite)
    assert sorted(p.name for p in someone.iterdir()) == [shards.MANIFEST]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in docs))
    result = CliRunner().invoke(app, ["index", str(tmp_path / "d.jsonl"), "--out", str(foreign), "--shards", "2",
                                      "--overwrite"])
    assert result.exit_code == 1 and result.stderr.count("\n") == 1 and "refusing to write an index into it" in \
        result.stderr
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]


def test_a_sharded_reader_outpaced_by_writers_never_says_rebuild(tmp_path: Path, monkeypatch) -> None:
    # if writers commit between every reading of shards.json and the opening of its files, the reader
    # gives up with "try again", never with "rebuild the index" (the index is healthy, only being changed)
    from bm25lab.engine import index as index_module

    directory = tmp_path / "s"
    ids = [f"d{i}" for i in range(40)]
    shards.build([(i, "x y") for i in ids], directory, 2, WS)
    first = {route(i, 2): i for i in reversed(ids)}  # one document of each shard: each gets a deletions file
    shards.delete_documents(directory, list(first.values()))
    victims = iter(i for i in ids if i not in first.values())
    original = segments.pin_parts
    writing: list[bool] = []
    commits: list[str] = []

    def racing(folder, manifest, pins):
        if not writing:  # the reader's call (the writer's own go straight through)
            writing.append(True)
            commits.append(next(victims))
            shards.delete_documents(directory, commits[-1:])  # replaces a shard's deletions file
            writing.clear()
        return original(folder, manifest, pins)

    monkeypatch.setattr(segments, "pin_parts", racing)
    monkeypatch.setattr(index_module, "_LOAD_ATTEMPTS", 3)
    with pytest.raises(IndexFormatError, match=r"the index changed 3 times while it was being read .*; try again$"):
        ShardedIndex.load(directory)
    monkeypatch.setattr(segments, "pin_parts", original)
    assert len(commits) >= 3 and ShardedIndex.load(directory).num_docs == 40 - 2 - len(commits)
    (deletions, *_) = directory.glob("shard-*/del-*.npy")
    deletions.unlink()  # a file gone from an index nobody changes: damage, and said so
    with pytest.raises(IndexFormatError, match="del-.*: missing index file; rebuild the index"):
        ShardedIndex.load(directory)


def test_damage_is_not_rewritten_by_a_sharded_change(tmp_path: Path) -> None:
    path = tmp_path / "s"
    docs = [(f"d{i}", f"alpha w{i % 5} w{i % 3}") for i in range(40)]
    index = ShardedIndex.build(docs[:30], path, 2, tokenizer=WS)
    index.add(docs[30:])  # two segments in each shard: optimize would merge them
    manifest = shards.read_manifest(path)
    shard = manifest["shards"][0]
    damaged = path / shard["name"] / shard["manifest"]["segments"][0]["name"] / "blocks.npy"
    raw = bytearray(damaged.read_bytes())
    raw[-1] ^= 1
    damaged.write_bytes(bytes(raw))
    index = ShardedIndex.load(path, verify=False)  # loaded without checksums: the changes verify what they read
    before = snapshot(path)
    in_damaged = [d for d, _ in docs if route(d, 2) == 0]
    with pytest.raises(IndexFormatError, match=f"{damaged}: checksum mismatch"):
        index.optimize()  # would rewrite the damaged postings into a new segment with fresh checksums
    with pytest.raises(IndexFormatError, match=f"{damaged}: checksum mismatch"):
        index.delete([in_damaged[0]])  # new statistics would be derived from the damaged postings
    with pytest.raises(IndexFormatError, match=f"{damaged}: checksum mismatch"):
        index.add([(in_damaged[1], "a replacement")])
    assert snapshot(path) == before
    with pytest.raises(IndexFormatError, match="checksum mismatch"):
        ShardedIndex.load(path)


@pytest.mark.parametrize("writer", ["api", "cli"])
def test_a_change_is_refused_while_any_shard_is_damaged(writer: str, tmp_path: Path) -> None:
    # issue 28: a shard folder replaced by another build's, and documents that route to the healthy shards
    # only: add exited 0 (it read only the shards the documents go to) where search and info refuse the index
    from typer.testing import CliRunner

    from bm25lab.cli import app

    path, other = tmp_path / "s", tmp_path / "other"
    docs = [(f"d{i}", f"alpha w{i % 5} w{i % 3}") for i in range(30)]
    ShardedIndex.build(docs, path, 3, tokenizer=WS)
    ShardedIndex.build([(f"x{i}", f"beta w{i % 4}") for i in range(20)], other, 3, tokenizer=WS)
    victim = shards.read_manifest(path)["shards"][0]["name"]
    replacement = shards.read_manifest(other)["shards"][0]["name"]
    import shutil

    shutil.rmtree(path / victim)
    (other / replacement).rename(path / victim)  # another build's shard 0 in shard 0's place
    healthy = [f"n{i}" for i in range(100) if route(f"n{i}", 3) != 0][:3]
    (tmp_path / "more.jsonl").write_text("".join(json.dumps({"id": d, "text": "gamma"}) + "\n" for d in healthy))
    before = snapshot(path)
    for change in ("add", "delete", "optimize"):
        if writer == "api":
            run = {"add": lambda: shards.add_documents(path, [(d, "gamma") for d in healthy]),
                   "delete": lambda: shards.delete_documents(path, ["d1"] if route("d1", 3) else ["d2"]),
                   "optimize": lambda: shards.optimize(path)}[change]
            with pytest.raises(IndexFormatError, match=str(path / victim)):
                run()
        else:
            args = {"add": ["add", str(path), str(tmp_path / "more.jsonl")],
                    "delete": ["delete", str(path), "d1" if route("d1", 3) else "d2"],
                    "optimize": ["optimize", str(path)]}[change]
            result = CliRunner().invoke(app, args)
            assert result.exit_code == 1, (change, result.output)
            assert str(path / victim) in result.stderr and len(result.stderr.strip().splitlines()) == 1
        assert snapshot(path) == before, change  # nothing written, into the damaged shard least of all
    with pytest.raises(IndexFormatError, match=str(path / victim)):
        ShardedIndex.load(path)


def test_a_shard_is_refused_before_anything_is_removed(tmp_path: Path) -> None:
    # a writer killed after committing shards.json leaves a shard's index.json behind: the shard's own
    # writers must refuse it before they settle anything (they would take the committed files for leftovers)
    from typer.testing import CliRunner

    from bm25lab.cli import app

    path = tmp_path / "s"
    docs = [(f"d{i}", f"w{i % 7} w{i % 3}") for i in range(60)]
    index = ShardedIndex.build(docs, path, 2, tokenizer=WS)
    old = {e["name"]: (path / e["name"] / "index.json").read_bytes() for e in shards.read_manifest(path)["shards"]}
    index.delete(["d1", "d2", "d3", "d4"])
    for entry in shards.read_manifest(path)["shards"]:
        shard_dir = path / entry["name"]
        (shard_dir / "index.json").write_bytes(old[entry["name"]])
        # as the killed writer left it: the files it wrote for its commit are in the shard's journal
        storage.Journal(shard_dir).add(*sorted(storage.referenced_names(entry["manifest"])
                                               - storage.named_files(shard_dir)))
    before = snapshot(path)
    (tmp_path / "more.jsonl").write_text(json.dumps({"id": "n", "text": "w1"}) + "\n")
    for name in old:
        shard_dir = path / name
        for change in (lambda: segments.add_documents(shard_dir, [("n", "w1")]),
                       lambda: segments.delete_documents(shard_dir, ["d5", "d6"]),
                       lambda: segments.optimize(shard_dir),
                       lambda: Index.load(shard_dir).save(shard_dir, overwrite=True)):
            with pytest.raises(IndexFormatError, match="is a shard of the sharded index"):
                change()
        for args in (["add", str(shard_dir), str(tmp_path / "more.jsonl")], ["optimize", str(shard_dir)]):
            result = CliRunner().invoke(app, args)
            assert result.exit_code == 1 and "is a shard of the sharded index" in result.stderr
    assert snapshot(path) == before
    assert ShardedIndex.load(path).num_docs == 56


def test_k1_zero_is_computed_on_shards_as_on_one_index(collections) -> None:
    c = collections["cranfield"]
    queries = dict(list(c.queries.items())[:40])
    index = ShardedIndex.load(c.paths[3])
    for variant in VARIANTS:
        expected = bits(c.single.search_many(queries, k=50, variant=variant, k1=0.0, workers=1))
        assert bits(index.search_many(queries, k=50, variant=variant, k1=0.0, workers=1)) == expected, variant
        assert not any(np.isnan(s).any() for s in (np.asarray(h.scores) for h in
                                                   index.search_many(queries, k=5, variant=variant, k1=0.0).values()))


def test_size_on_disk_is_read_from_the_manifests(collections) -> None:
    path = collections["cranfield"].paths[3]
    on_disk = sum(p.stat().st_size for p in path.rglob("*")
                  if p.is_file() and p.name not in (".writer.lock", ".writer.journal"))
    assert ShardedIndex.load(path).info().size_bytes == shards.size_on_disk(path) == on_disk


# ---------------------------------------------------------------------------------------------- k3, BM25F
def repeating(queries: dict[str, str], count: int) -> dict[str, str]:
    """Queries whose first and last words come again (k3 changes only a repeated term's weight)."""
    out = {}
    for qid, text in list(queries.items())[:count]:
        words = text.split()
        out[qid] = f"{text} {words[0]} {words[0]} {words[-1]}"
    return out


def test_k3_is_applied_on_shards_as_on_one_index(collections) -> None:
    """k3 weighs a query's repeated terms: the union of the shards' answers is weighted before the
    queries' constants and the second round, so every variant (bm25l's and bm25+'s constants too), batch
    and single, numpy and the core, gives one index's documents and bits."""
    c = collections["cranfield"]
    queries = repeating(c.queries, 40)
    text = next(iter(queries.values()))
    for backend in ("numpy", "core"):
        index = ShardedIndex.load(c.paths[3], backend=backend)
        for variant in VARIANTS:
            expected = bits(c.single.search_many(queries, k=50, variant=variant, k3=1.5, workers=1))
            assert expected != bits(c.single.search_many(queries, k=50, variant=variant, workers=1)), variant
            assert bits(index.search_many(queries, k=50, variant=variant, k3=1.5, workers=1)) == expected, variant
            assert hits_bits(index.search(text, k=20, variant=variant, k3=1.5)) == \
                hits_bits(c.single.search(text, k=20, variant=variant, k3=1.5)), variant


def test_field_weights_are_refused_on_a_sharded_index(collections) -> None:
    """A sharded index is built without fields: BM25F is a ParameterError, whatever the weights, never a
    score computed some other way."""
    from bm25lab.engine.errors import ParameterError

    index = ShardedIndex.load(collections["cranfield"].paths[2])
    calls = [lambda: index.search("flow", field_weights="title=2,text=1"),
             lambda: index.search_many({"q": "flow"}, field_b={"title": 0.5}),
             lambda: index.retrieve_tokens([["flow"]], field_weights={"text": 1.0})]
    for call in calls:
        with pytest.raises(ParameterError, match="a sharded index has no fields"):
            call()
    assert index.search("flow", field_weights=None, field_b=None).doc_ids == index.search("flow").doc_ids
