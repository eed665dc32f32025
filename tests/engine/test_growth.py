"""Growing an index: add, delete, replace and optimize give exactly a fresh build's results, on real
collections, committed atomically under the writer's lock; readers are never disturbed."""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from bm25lab.engine import Document, Index, IndexFormatError, IndexLockedError, InputError, Tokenizer, segments, storage
from bm25lab.engine.locking import write_lock
from bm25lab.cli import app

WS = Tokenizer("whitespace", stopwords=None)


def hits(index: Index, query: str, **params) -> list[tuple[str, float]]:
    return [(h.doc_id, h.score) for h in index.search(query, k=100, **params)]


def assert_same_results(grown: Index, fresh: Index, queries: dict[str, str]) -> None:
    """Same documents, same float64 scores (bit for bit), same order, for several variants."""
    assert grown.counts() == fresh.counts()
    assert grown.avgdl == fresh.avgdl
    for params in (dict(), dict(variant="bm25+", k1=1.2, b=0.75), dict(variant="okapi", k1=1.5, b=0.75)):
        for text in queries.values():
            assert hits(grown, text, **params) == hits(fresh, text, **params)
        batch_a = grown.search_many(queries, k=50, workers=1, **params)
        batch_b = fresh.search_many(queries, k=50, workers=1, **params)
        assert {q: [(h.doc_id, h.score) for h in v] for q, v in batch_a.items()} == \
               {q: [(h.doc_id, h.score) for h in v] for q, v in batch_b.items()}


def snapshot(directory: Path) -> dict[str, str]:
    """Every file under ``directory`` with the SHA-256 of its content (the lock file excluded)."""
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file() and p.name != ".writer.lock"}


def edited(doc: Document) -> Document:
    """A replacement: other text (the words reversed plus one), another title."""
    return replace(doc, text=" ".join(reversed(doc.text.split())) + " replacement", title=f"new {doc.title}")


# ---------------------------------------------------------------------- equality with a fresh build
def test_grown_on_disk_equals_fresh_build_cranfield(tmp_path: Path, cranfield) -> None:
    docs = list(cranfield.documents())
    queries = dict(list(cranfield.judged_queries().items())[:40])
    tok = Tokenizer("en")
    Index.build(docs[:800], tokenizer=tok, workers=1).save(tmp_path / "i")
    index = Index.load(tmp_path / "i")
    assert index.add(docs[800:1100], workers=1).added == 300
    replaced = [edited(d) for d in docs[100:130] + docs[900:910]]      # in the first and second segments
    change = index.add(replaced + docs[1100:], workers=1)
    assert (change.added, change.replaced, change.segments) == (340, 40, 3)
    gone = [d.id for d in docs[0:25] + docs[1200:1210]]
    assert index.delete(gone).deleted == 35
    assert index.num_segments == 3

    final = {d.id: d for d in docs}
    final.update({d.id: d for d in replaced})
    for doc_id in gone:
        del final[doc_id]
    fresh = Index.build(sorted(final.values(), key=lambda d: d.id), tokenizer=tok, workers=1)  # another order
    assert_same_results(index, fresh, queries)
    assert_same_results(Index.load(tmp_path / "i"), fresh, queries)

    # documents: the live version of a replaced one, never a deleted one
    assert index.document(replaced[0].id) == replaced[0]
    assert index.document(gone[0]) is None
    assert index.document(docs[500].id) == docs[500]
    assert sorted(d.id for d in index.documents()) == sorted(final)
    top = index.search(replaced[3].text, k=1)[0]
    assert top.doc_id == replaced[3].id and top.title == replaced[3].title

    change = index.optimize()
    assert (change.merged, change.purged, change.segments, change.documents) == (3, 75, 1, len(final))
    assert [p.name for p in (tmp_path / "i").iterdir() if p.name.startswith(("seg-", "del-"))].__len__() == 1
    reloaded = Index.load(tmp_path / "i")
    assert isinstance(reloaded._segment.postings.blocks().data, np.memmap)
    assert_same_results(reloaded, fresh, queries)
    assert reloaded.document(replaced[5].id) == replaced[5]


def test_grown_chinese_index_equals_fresh_build(tmp_path: Path, cmrc) -> None:
    docs = list(cmrc.documents())[:150]
    queries = {q: t for q, t in list(cmrc.judged_queries().items())[:60]}
    tok = Tokenizer("zh")
    Index.build(docs[:100], tokenizer=tok, workers=1).save(tmp_path / "zh")
    replacement = [Document(docs[3].id, docs[140].text, "换过的标题")]
    index = Index.load(tmp_path / "zh")
    index.add(docs[100:] + replacement, workers=1)
    index.delete([docs[0].id, docs[120].id])
    final = {d.id: d for d in docs} | {replacement[0].id: replacement[0]}
    del final[docs[0].id], final[docs[120].id]
    fresh = Index.build(list(final.values()), tokenizer=tok, workers=1)
    assert_same_results(index, fresh, queries)
    assert index.document(docs[3].id).title == "换过的标题"


def test_merged_view_on_the_compiled_path(cranfield) -> None:
    docs = list(cranfield.documents())[:400]
    queries = dict(list(cranfield.judged_queries().items())[:30])
    tok = Tokenizer("en")
    grown = Index.build(docs[:200], tokenizer=tok, workers=1, backend="core")
    grown.add(docs[200:], workers=1)
    grown.delete([docs[7].id])
    fresh = Index.build([d for d in docs if d.id != docs[7].id], tokenizer=tok, workers=1, backend="numpy")
    for variant in ("lucene", "bm25l"):
        a = grown.search_many(queries, k=20, variant=variant, workers=2)
        b = fresh.search_many(queries, k=20, variant=variant, workers=2)
        assert {q: [(h.doc_id, h.score) for h in v] for q, v in a.items()} == \
               {q: [(h.doc_id, h.score) for h in v] for q, v in b.items()}


def test_merged_arrays_equal_a_fresh_build(monkeypatch) -> None:
    # with the documents in the same order, the merged view's arrays are a fresh build's, bit for bit
    # (small merge blocks, so that terms and blocks cross in every way)
    monkeypatch.setattr(segments, "_BLOCK", 3)
    rng = np.random.default_rng(5)
    docs = [(f"d{i:03d}", " ".join(rng.choice(list("abcdefghijklmnopqrst"), size=rng.integers(0, 12))))
            for i in range(200)]
    grown = Index.build(docs[:80], tokenizer=WS)
    grown.add(docs[80:150])
    grown.add(docs[150:])
    gone = {f"d{i:03d}" for i in rng.choice(200, size=60, replace=False)}
    grown.delete(sorted(gone))
    fresh = Index.build([d for d in docs if d[0] not in gone], tokenizer=WS)
    a, b = grown._segment, fresh._segment
    assert list(a.postings.terms) == list(b.postings.terms) and a.doc_ids == b.doc_ids
    for name in ("offsets", "doc_nums", "tfs", "doc_lengths"):
        x, y = getattr(a.postings, name), getattr(b.postings, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name
    assert np.array_equal(a.id_rank, b.id_rank)
    assert segments.live_counts(grown._parts) == fresh.counts()


def test_in_memory_index_grows_in_memory() -> None:
    index = Index.build([("a", "x y"), ("b", "y z"), ("c", "z z w")], tokenizer=WS)
    assert index.path is None
    change = index.add([("b", "x x"), ("d", "w")])
    assert (change.added, change.replaced, change.documents, change.segments) == (2, 1, 4, 2)
    index.delete(["c"])
    fresh = Index.build([("a", "x y"), ("b", "x x"), ("d", "w")], tokenizer=WS)
    assert_same_results(index, fresh, {"1": "x", "2": "w z", "3": "y x w"})
    assert index.optimize().segments == 1
    assert_same_results(index, fresh, {"1": "x", "2": "w z"})
    assert [d.id for d in index.documents()] == ["a", "b", "d"]
    assert index.document("b").text == "x x"


def test_bm25plus_constant_ignores_terms_only_in_deleted_documents() -> None:
    # "gone" exists only in a deleted document: it must leave the vocabulary, or bm25+'s per-term
    # constant would be added to every matching document's score
    index = Index.build([("a", "x"), ("b", "gone x")], tokenizer=WS)
    index.delete(["b"])
    fresh = Index.build([("a", "x")], tokenizer=WS)
    assert index.num_terms == fresh.num_terms == 1
    assert hits(index, "x gone", variant="bm25+") == hits(fresh, "x gone", variant="bm25+")


@pytest.mark.parametrize("backend", ["numpy", "core"])
@pytest.mark.parametrize("how", ["delete", "replace"])
def test_only_documents_without_terms_left(tmp_path: Path, how: str, backend: str) -> None:
    # the audit's repro: "b" is all stopwords; once "a" is gone no term has a live posting, and the
    # merged view used to index an empty array (IndexError in search, info and optimize)
    en = Tokenizer("en")
    Index.build([("a", "hello world"), ("b", "the")], tokenizer=en).save(tmp_path / "i")
    on_disk, in_memory = Index.load(tmp_path / "i", backend=backend), Index.build([("a", "hello world"), ("b", "the")],
                                                                                tokenizer=en, backend=backend)
    for index in (on_disk, in_memory):
        change = index.delete(["a"]) if how == "delete" else index.add([("a", "of the")])
        assert change.documents == (1 if how == "delete" else 2)
        fresh = Index.build([("b", "the")] + ([("a", "of the")] if how == "replace" else []), tokenizer=en)
        assert index.search("hello") == [] and index.search_many({"q": "hello world"})["q"] == []
        assert index.counts() == fresh.counts() and index.counts()["terms"] == 0
        assert index.info().documents == fresh.num_docs
        index.optimize()
        assert index.num_segments == 1 and index.search("hello") == [] and index.counts() == fresh.counts()
    loaded = Index.load(tmp_path / "i", backend=backend)
    assert sorted(loaded.doc_ids) == sorted(fresh.doc_ids) and loaded.search("world") == []


def test_delete_everything_then_add_again(tmp_path: Path) -> None:
    Index.build([("a", "x"), ("b", "y")], tokenizer=WS).save(tmp_path / "i")
    index = Index.load(tmp_path / "i")
    change = index.delete(["a", "b"])
    assert (change.documents, change.segments) == (0, 0)
    empty = Index.load(tmp_path / "i")
    assert empty.num_docs == 0 and empty.search("x") == [] and list(empty.documents()) == []
    empty.add([("c", "x")])
    assert [h.doc_id for h in Index.load(tmp_path / "i").search("x")] == ["c"]


def test_save_of_a_grown_index_writes_one_segment(tmp_path: Path) -> None:
    index = Index.build([("a", "x y"), ("b", "y")], tokenizer=WS)
    index.add([("c", "x")])
    index.delete(["a"])
    index.save(tmp_path / "i")
    loaded = Index.load(tmp_path / "i")
    assert loaded.num_segments == 1 and list(loaded.doc_ids) == ["b", "c"]
    assert hits(loaded, "x y") == hits(index, "x y")


# ---------------------------------------------------------------------- errors leave the index unchanged
def test_delete_unknown_ids_names_them_and_changes_nothing(tmp_path: Path) -> None:
    Index.build([("a", "x"), ("b", "y")], tokenizer=WS).save(tmp_path / "i")
    before = snapshot(tmp_path / "i")
    with pytest.raises(InputError, match=r"no such documents in the index: 'nope', 'zz'; nothing was deleted"):
        Index.load(tmp_path / "i").delete(["a", "nope", "zz"])
    assert snapshot(tmp_path / "i") == before


def test_add_with_duplicate_ids_changes_nothing(tmp_path: Path) -> None:
    Index.build([("a", "x")], tokenizer=WS).save(tmp_path / "i")
    before = snapshot(tmp_path / "i")
    with pytest.raises(InputError, match=r"new.jsonl: duplicate document id 'b' \(documents 1 and 3"):
        Index.load(tmp_path / "i").add([("b", "x"), ("c", "y"), ("b", "z")], source="new.jsonl")
    assert snapshot(tmp_path / "i") == before
    assert Index.load(tmp_path / "i").add([]).added == 0
    assert snapshot(tmp_path / "i") == before


def _make(path: Path, as_folder: bool, content: bytes) -> None:
    if as_folder:
        path.mkdir()
        (path / "f").write_bytes(content)
    else:
        path.write_bytes(content)


def test_leftovers_of_a_killed_writer_are_removed_by_the_next_commit_and_nothing_else(tmp_path: Path) -> None:
    directory = tmp_path / "i"
    Index.build([("a", "x"), ("c", "z")], tokenizer=WS).save(directory)
    # a writer killed mid-commit had journaled (fsynced) each name before creating it
    left = [".tmp-seg-0123456789abcdef", "seg-0123456789abcdef", "del-0123456789abcdef.npy", ".index.json.tmp"]
    storage.Journal(directory).add(*left)
    for name in left:
        _make(directory / name, "seg" in name, b"half")
    # the user's own files, some named as an index's files are: never the index's to remove
    mine = ["seg-00ff", "del-00ff.npy", ".tmp-seg-77", "seg-0123456789abcdee", ".index.json.99.tmp", "notes.txt"]
    for name in mine:
        _make(directory / name, name.startswith(("seg", ".tmp-seg")), b"mine")
    Index.load(directory).add([("b", "y")])
    assert not any((directory / name).exists() for name in left)
    assert storage.Journal(directory).names() == []
    for change in (lambda index: index.delete(["a"]), lambda index: index.optimize(),
                   lambda index: index.save(directory, overwrite=True)):
        change(Index.load(directory))
    for name in mine:
        assert ((directory / name / "f") if name.startswith(("seg", ".tmp-seg")) else directory / name).read_bytes() == b"mine"
    assert sorted(Index.load(directory).doc_ids) == ["b", "c"]


def test_a_commit_removes_only_what_the_old_manifest_named(tmp_path: Path) -> None:
    directory = tmp_path / "i"
    Index.build([("a", "x"), ("c", "z")], tokenizer=WS).save(directory)
    Index.load(directory).add([("b", "y")])
    Index.load(directory).delete(["a"])
    before = storage.named_files(directory)
    assert len(before) == 3  # two segments and a deletions file
    Index.load(directory).optimize()
    after = storage.named_files(directory)
    assert not before & after and all(not (directory / name).exists() for name in before)
    assert sorted(p.name for p in directory.iterdir()) == sorted(
        after | {"index.json", ".writer.lock", ".writer.journal"})


# ---------------------------------------------------------------------- lock and readers
def test_second_writer_gets_locked_error(tmp_path: Path) -> None:
    Index.build([("a", "x")], tokenizer=WS).save(tmp_path / "i")
    index = Index.load(tmp_path / "i")
    before = snapshot(tmp_path / "i")
    with write_lock(tmp_path / "i"):
        for change in (lambda: index.add([("b", "y")]), lambda: index.delete(["a"]), index.optimize,
                       lambda: Index.build([("z", "z")], tokenizer=WS).save(tmp_path / "i", overwrite=True)):
            with pytest.raises(IndexLockedError, match=f"index is locked by process {os.getpid()}"):
                change()
        assert Index.load(tmp_path / "i").num_docs == 1  # readers need no lock
        result = CliRunner().invoke(app, ["add", str(tmp_path / "i"), str(_jsonl(tmp_path, [("b", "y")]))])
        assert result.exit_code == 1
        assert result.stderr.strip() == f"bm25lab: error: {tmp_path / 'i'}: index is locked by process {os.getpid()} " \
                                        f"(another change is being written); try again when it has finished"
    assert snapshot(tmp_path / "i") == before
    assert index.add([("b", "y")]).documents == 2


def test_lock_of_a_killed_process_does_not_block(tmp_path: Path) -> None:
    Index.build([("a", "x")], tokenizer=WS).save(tmp_path / "i")
    holder = subprocess.Popen([sys.executable, "-c",
                               "import sys, time; from pathlib import Path; from bm25lab.engine.locking import write_lock\n"
                               "with write_lock(Path(sys.argv[1])):\n print('held', flush=True); time.sleep(60)",
                               str(tmp_path / "i")], stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(IndexLockedError, match=f"locked by process {holder.pid}"):
            Index.load(tmp_path / "i").delete(["a"])
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert Index.load(tmp_path / "i").delete(["a"]).documents == 0


def test_reader_keeps_working_after_a_writer_removes_its_segments(tmp_path: Path) -> None:
    Index.build([{"id": "a", "title": "Old", "text": "x y"}, ("b", "y")], tokenizer=WS).save(tmp_path / "i")
    reader = Index.load(tmp_path / "i")
    writer = Index.load(tmp_path / "i")
    writer.add([("c", "x")])
    writer.optimize()  # the reader's segment folder is gone now
    assert [h.doc_id for h in reader.search("x")] == ["a"]
    assert reader.search("x")[0].title == "Old" and reader.document("b").text == "y"
    assert [h.doc_id for h in Index.load(tmp_path / "i").search("x")] == ["c", "a"]


def test_load_starts_again_when_a_writer_commits_meanwhile(tmp_path: Path, monkeypatch) -> None:
    Index.build([("a", "x"), ("b", "y")], tokenizer=WS).save(tmp_path / "i")
    Index.load(tmp_path / "i").add([("c", "z")])
    original = segments.load_parts
    seen: list[list[str]] = []

    def racing(directory, manifest, **kwargs):
        names = [entry["name"] for entry in manifest["segments"]]
        if not seen:  # another writer commits between our manifest read and our segment reads
            seen.append(names)
            segments.optimize(directory)
        seen.append(names)
        return original(directory, manifest, **kwargs)

    monkeypatch.setattr(segments, "load_parts", racing)
    index = Index.load(tmp_path / "i")
    assert len(seen[0]) == 2 and len(seen[-1]) == 1  # first attempt saw two segments, the last one
    assert index.num_segments == 1 and index.num_docs == 3


def test_damaged_deletions_file_is_a_clear_error(tmp_path: Path) -> None:
    Index.build([("a", "x"), ("b", "y")], tokenizer=WS).save(tmp_path / "i")
    Index.load(tmp_path / "i").delete(["a"])
    (deletions,) = (tmp_path / "i").glob("del-*.npy")
    data = bytearray(deletions.read_bytes())
    data[-1] ^= 0x01
    deletions.write_bytes(bytes(data))
    with pytest.raises(IndexFormatError, match="del-.*checksum mismatch"):
        Index.load(tmp_path / "i")


def test_manifest_records_segments_deletions_and_counts(tmp_path: Path) -> None:
    Index.build([("a", "x y"), ("b", "y")], tokenizer=WS).save(tmp_path / "i")
    Index.load(tmp_path / "i").add([("a", "z"), ("c", "x")])
    manifest = json.loads((tmp_path / "i" / "index.json").read_text())
    first, second = manifest["segments"]
    assert first["deleted"]["count"] == 1 and first["documents"] == 2 and "deleted" not in second
    assert manifest["counts"] == Index.load(tmp_path / "i").counts() == \
           {"documents": 3, "terms": 3, "postings": 3, "total_length": 3}
    assert manifest["format_version"] == storage.FORMAT_VERSION


# ---------------------------------------------------------------------- command line
def _jsonl(folder: Path, docs: list[tuple[str, str]], name: str = "new.jsonl") -> Path:
    path = folder / name
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in docs), encoding="utf-8")
    return path


def test_cli_add_delete_optimize(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "i"
    assert runner.invoke(app, ["index", str(_jsonl(tmp_path, [("a", "x y"), ("b", "y")], "d.jsonl")),
                               "--out", str(out), "--language", "whitespace"]).exit_code == 0
    added = runner.invoke(app, ["add", str(out), str(_jsonl(tmp_path, [("b", "x"), ("c", "z")]))])
    assert added.exit_code == 0, added.output
    assert added.stdout.startswith("added 2 documents (1 replaced) in ")
    assert added.stdout.rstrip().endswith(f"-> {out}: 3 documents in 2 segments")
    deleted = runner.invoke(app, ["delete", str(out), "c"])
    assert deleted.stdout.strip() == f"deleted 1 document -> {out}: 2 documents in 2 segments"
    unknown = runner.invoke(app, ["delete", str(out), "a", "q"])
    assert unknown.exit_code == 1
    assert unknown.stderr.strip() == f"bm25lab: error: {out}: no such document in the index: 'q'; nothing was deleted"
    merged = runner.invoke(app, ["optimize", str(out)])
    assert merged.stdout.strip() == f"merged 2 segments, dropped 2 deleted documents -> {out}: 2 documents in 1 segment"
    again = runner.invoke(app, ["optimize", str(out)])
    assert again.stdout.startswith("nothing to merge")
    found = json.loads(runner.invoke(app, ["search", str(out), "x", "--format", "json"]).stdout)
    assert [r["doc_id"] for r in found] == ["b", "a"]


@pytest.mark.parametrize("command", ["add", "delete", "optimize"])
def test_growth_commands_have_help_with_an_example(command: str) -> None:
    result = CliRunner().invoke(app, [command, "--help"])
    assert result.exit_code == 0 and "Example:" in result.output and "Exit codes" in result.output


# ---------------------------------------------------------------------- durability: fsync observed
def test_every_commit_fsyncs_its_files_and_the_directory_before_and_after_the_rename(tmp_path: Path,
                                                                                    monkeypatch) -> None:
    # storage's docstring claims: new files are fsynced, then the manifest is written to a temporary
    # file, fsynced, renamed over index.json, and the directory fsynced. Observed here, call by call.
    events: list[tuple[str, str]] = []
    real_fsync, real_replace, real_rename = os.fsync, os.replace, os.rename

    def fsync(fd: int) -> None:
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(src, dst, **kwargs) -> None:
        events.append(("replace", f"{src} -> {dst}"))
        real_replace(src, dst, **kwargs)

    def rename(src, dst, **kwargs) -> None:
        events.append(("rename", f"{src} -> {dst}"))
        real_rename(src, dst, **kwargs)

    directory = tmp_path / "i"
    Index.build([("a", "x y"), ("b", "y z"), ("c", "z")], tokenizer=WS).save(directory)
    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(os, "rename", rename)
    changes = {"add": lambda: Index.load(directory).add([("d", "x")]),
               "delete": lambda: Index.load(directory).delete(["a"]),
               "optimize": lambda: Index.load(directory).optimize(),
               "save": lambda: Index.load(directory).save(directory, overwrite=True)}
    for name, change in changes.items():
        events.clear()
        before = storage.named_files(directory)
        change()
        new = storage.named_files(directory) - before
        commit = next(i for i, (kind, what) in enumerate(events) if kind == "replace" and what.endswith("index.json"))
        synced = [path for kind, path in events[:commit] if kind == "fsync"]  # before the commit
        # the manifest's temporary file was fsynced before the rename, the directory after it
        assert events[commit - 1] == ("fsync", str(directory / storage.MANIFEST_TMP)), (name, events)
        assert events[commit + 1] == ("fsync", str(directory)), (name, events)
        # every new file and folder was fsynced before the manifest named it
        for entry in new:
            path = directory / entry
            files = sorted(path.iterdir()) if path.is_dir() else [path]
            for file in files:
                assert str(file) in synced or str(directory / f".tmp-{entry}" / file.name) in synced, (name, file)
            if path.is_dir():  # the segment's folder, under its temporary name, before the rename into place
                assert str(directory / f".tmp-{entry}") in synced, (name, entry)
        # and the journal, before anything it names was made
        assert str(directory / storage.JOURNAL) in synced[:1], (name, synced[:3])


def test_a_reader_outpaced_by_writers_never_says_rebuild(tmp_path: Path, monkeypatch) -> None:
    # if writers commit between every manifest read and its files' opening, the reader gives up with
    # "try again", never with "rebuild the index" (the index is healthy, only being changed)
    from bm25lab.engine import index as index_module

    directory = tmp_path / "i"
    Index.build([(f"d{i}", "x y") for i in range(10)], tokenizer=WS).save(directory)
    original = segments.load_parts
    victims = iter(f"d{i}" for i in range(10))

    writing: list[bool] = []

    def racing(directory, manifest, **kwargs):
        if not writing:  # the reader's call (the writer's own goes straight through)
            writing.append(True)
            segments.delete_documents(directory, [next(victims)])  # a commit between reading and opening
            writing.clear()
        return original(directory, manifest, **kwargs)

    monkeypatch.setattr(segments, "load_parts", racing)
    monkeypatch.setattr(index_module, "_LOAD_ATTEMPTS", 3)
    Index.load(directory)  # the first commit writes a deletions file: nothing named had gone yet
    with pytest.raises(IndexFormatError, match=r"the index changed 3 times while it was being read .*; try again$"):
        Index.load(directory)
    monkeypatch.setattr(segments, "load_parts", original)
    (deletions,) = directory.glob("del-*.npy")
    deletions.unlink()  # a file gone from an index nobody changes: damage, and said so
    with pytest.raises(IndexFormatError, match="del-.*: missing index file; rebuild the index"):
        Index.load(directory)
