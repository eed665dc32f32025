"""Sharded indexes: N ordinary indexes searched as one, with the whole collection's statistics.

A sharded index is a directory::

    shards.json           manifest: format, format_version, generation, tokenizer config, routing,
                          the global statistics' record, every shard's name and index manifest, checksum
    shard-<hex>/          one shard: an ordinary index directory (index.json, segments, deletions)
    stats-<hex>/          the global statistics: terms.txt (every term with a live posting, code
                          point order, one a line) and df.npy (their document frequencies, int64)
    .writer.lock          the writers' lock (:mod:`bm25lab.engine.locking`)
    .writer.journal       the names a writer is about to create or make obsolete (:mod:`bm25lab.engine.storage`)

**Routing.** A document lives in exactly one shard, chosen by its id: :func:`route` (the first 8
bytes of BLAKE2b of the id's UTF-8, modulo the shard count). The count is fixed when the index is
built, so ``add`` sends a new document, and a replacement, to the shard that holds (or would hold)
its id, and ``delete`` finds a document where the build put it.

**Global statistics.** BM25 over shards uses the collection's live document count N, the integer
sum of the live documents' lengths (avgdl = sum / N, the very float one index computes) and every
term's document frequency, recorded at each commit in ``shards.json`` and ``stats-<hex>/`` (the
shards' counts added up: :class:`TermCounts`). Each shard scores its postings with them
(:class:`~bm25lab.engine.retrieval.CollectionStatistics`); idf is computed over the global
vocabulary exactly as one index computes it (``okapi``'s floor is the mean over all of it).

**Searching** (:func:`search_shards`) takes two rounds over the shards. First each shard looks the
queries' tokens up (:meth:`Shard.look_up`) and tells, for each term it holds, its global term id
and its largest weight in the shard; :meth:`GlobalTerms.union` keeps every query's terms with their
largest weight in the whole collection (what fixes the canonical order in which a document's weights
are added, :func:`bm25lab.engine.retrieval.term_order`). Then each shard returns its exact top k
under the global statistics, order and per-query constant (:meth:`Shard.top_k`), and
:func:`merge_hits` merges the shards' lists by the tie rule (score descending, then document id
descending in code point order). Every document gets the float64 score, summed in the order, that an
index of all the documents gives it, so the ranking is that index's, bit for bit. The same two rounds
run in one process (:class:`ShardedIndex`) or on a Dask cluster (:mod:`bm25lab.distributed`). With
``k3`` the union's multiplicities become the query terms' weights (:meth:`GlobalTerms.weighted`) before
the constants and the second round, as one index weighs them. A sharded index has no fields: BM25F
(field weights) is refused with a :class:`ParameterError` (:func:`search_params`), never approximated.

**On disk** the rules of an ordinary index (:mod:`bm25lab.engine.storage`) hold for the sharded
one and for each of its shards. ``shards.json`` carries a checksum over itself (canonical JSON, as
``index.json``), and each shard's manifest, at the same format version, with its own checksum and
counts; a reader checks the shards' segments against their counts and the statistics against the
shards. ``shards.json`` is the one commit point: a change writes new segment folders and deletion
files into the shards (journaled in each shard's ``.writer.journal``), new statistics (journaled in
the index's own), then atomically replaces ``shards.json``, and only then updates each changed
shard's ``index.json`` to its copy (which removes the shard's obsolete files) and removes the
journaled names that ``shards.json`` no longer names (:func:`settle`). Every later writer first
brings each shard's ``index.json`` to its copy and only then settles the shard, so that the files a
killed writer committed are never taken for leftovers; nothing that no journal lists is ever
removed. A reader (:meth:`ShardedIndex.load`) opens every file of the statistics and of every shard,
stores included, before it reads any, and reads ``shards.json`` again when one is already gone. A
shard is an ordinary index that :class:`~bm25lab.engine.index.Index` loads and searches (with its
own statistics), but its own writers refuse to change it, before they remove anything.

A new sharded index (:class:`Build`) may be written only into a new or empty folder, one holding
only what an unfinished build of bm25lab left, or (``overwrite``) a sharded index; never a folder
holding anything else, nor an ordinary index. It is written under the writer's lock: partitions of
the documents are staged in a scratch folder inside the index folder (:mod:`bm25lab.engine.scratch`:
removed by the next writer if this one is killed), each shard is assembled under a journaled name,
and the commit names them: a failure leaves the old index, or no folder.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from . import backends, segments, storage
from . import index as index_module
from .backends import Backend
from .docstore import DocStore, SegmentedStore
from .errors import IndexFormatError, InputError, ParameterError
from .filters import Filter, Masks
from .files import check_folder, write_file
from .locking import LOCK_FILE, check_unlocked, write_lock
from .records import DocIds, Document, Hits, IndexInfo, Results
from .retrieval import CollectionStatistics, Scorer, TermBatch
from .scoring import (DEFAULT_B, DEFAULT_K1, DEFAULT_VARIANT, Params, absent_terms_constant, parse_field_values,
                      query_term_weight, zero_tf_part)
from .scratch import Scratch
from .searching import FieldValues, Searcher
from .segments import Change, DocLike, Part, Progress
from .selection import code_point_order
from .tokenization import Tokenizer

__all__ = ["Build", "GlobalTerms", "MANIFEST", "Shard", "ShardHits", "ShardedIndex", "TermCounts",
           "add_documents", "delete_documents", "is_sharded", "merge_hits", "optimize", "route", "search_shards",
           "settle", "size_on_disk"]

MANIFEST = storage.SHARDED_MANIFEST  # "shards.json"
FORMAT_NAME = storage.SHARDED_FORMAT_NAME
FORMAT_VERSION = 2  # 2: the checksum over itself, shards of index format 2, the writer's journal
ROUTING = "blake2b-64 of the UTF-8 id, modulo the shard count"
TERMS_FILE, DF_FILE = "terms.txt", "df.npy"
STATS_FILES = frozenset([TERMS_FILE, DF_FILE])
_SHARD_NAME = re.compile(r"shard-[0-9a-f]{1,32}")
_STATS_NAME = re.compile(r"stats-[0-9a-f]{1,32}")


def route(doc_id: str, shards: int) -> int:
    """The shard (0 .. ``shards`` - 1) of the document ``doc_id``: the first 8 bytes of BLAKE2b of its
    UTF-8 (lone surrogates passed through), a big-endian unsigned integer, modulo ``shards``."""
    digest = hashlib.blake2b(doc_id.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shards


def is_sharded(directory: str | Path) -> bool:
    """Whether ``directory`` holds a sharded index (a ``shards.json``)."""
    return os.path.lexists(Path(directory) / MANIFEST)  # anything of that name: read (and refused) as such


def check_shard_count(shards: int) -> int:
    if isinstance(shards, bool) or not isinstance(shards, (int, np.integer)) or shards < 1:
        raise ParameterError(f"the number of shards must be a positive integer, got {shards!r}")
    return int(shards)


def journaled_name(directory: Path, prefix: str) -> str:
    """A new name ``<prefix>-<hex>`` for a folder of ``directory``, recorded in its journal (with the
    name of its temporary folder) before anything of that name is made: the caller holds the
    writer's lock, and the folder is made by the caller or by a task it runs (a cluster's worker)."""
    name = storage.unique_name(prefix)
    storage.Journal(directory).add(name, f".tmp-{name}")
    return name


# ---------------------------------------------------------------------------------------------
# Statistics that add up over shards


@dataclass(frozen=True, eq=False)
class TermCounts:
    """Live documents, the integer sum of their lengths, and the document frequency of every term with
    a live posting (terms in code point order) of some part of a collection; they add up over parts."""

    documents: int
    total_length: int
    terms: list[str]  # a pyarrow string array when loaded for searching (load_counts(arrow=True))
    df: np.ndarray  # int64, > 0

    @classmethod
    def of_parts(cls, parts: Sequence[Part]) -> "TermCounts":
        """The counts of the live documents of ``parts`` (one index's segments)."""
        items = []
        for part in parts:
            p = part.segment.postings
            if part.deleted.shape[0]:
                live = part.live_mask()
                df = segments._live_df(p, live)
                total = int(np.asarray(p.doc_lengths)[live].sum(dtype=np.int64))
            else:
                df = np.diff(np.asarray(p.offsets))
                total = int(np.asarray(p.doc_lengths).sum(dtype=np.int64))
            items.append(cls(part.num_live, total, list(p.terms), df))
        return cls.total(items)

    @classmethod
    def total(cls, items: Sequence["TermCounts"], signs: Sequence[int] | None = None) -> "TermCounts":
        """The sum of ``items`` (each times its sign, +1 or -1, when ``signs`` are given): counts added,
        document frequencies added term by term, terms left with none dropped."""
        signs = [1] * len(items) if signs is None else list(signs)
        documents = sum(s * item.documents for s, item in zip(signs, items))
        total_length = sum(s * item.total_length for s, item in zip(signs, items))
        terms = [t for item in items for t in item.terms]
        if not terms:
            return cls(documents, total_length, [], np.zeros(0, dtype=np.int64))
        distinct, inverse = _distinct(terms)
        df = np.zeros(len(distinct), dtype=np.int64)
        np.add.at(df, inverse, np.concatenate([s * np.asarray(item.df, dtype=np.int64) for s, item in zip(signs, items)]))
        if documents < 0 or (df < 0).any():
            raise IndexFormatError("the sharded index's statistics disagree with its shards; rebuild the index")
        keep = np.flatnonzero(df)
        return cls(documents, total_length, [distinct[i] for i in keep.tolist()], df[keep])

    def statistics(self) -> CollectionStatistics:
        return CollectionStatistics(self.documents, self.total_length, self.terms, self.df)


def _distinct(terms: list[str]) -> tuple[list[str], np.ndarray]:
    """The distinct strings of ``terms`` in code point order, and the position of each of ``terms`` among them."""
    seen: dict[str, int] = {}
    first = np.fromiter(map(lambda t: seen.setdefault(t, len(seen)), terms), dtype=np.int64, count=len(terms))
    in_first_order = list(seen)
    order = code_point_order(in_first_order)
    rank = np.empty(order.shape[0], dtype=np.int64)
    rank[order] = np.arange(order.shape[0], dtype=np.int64)
    return [in_first_order[i] for i in order.tolist()], rank[first]


def write_statistics(directory: Path, counts: TermCounts, name: str) -> dict[str, Any]:
    """Write ``counts`` as the statistics folder ``name`` of ``directory`` (a name the writer journaled:
    :func:`journaled_name`; named by no manifest until the writer commits one), under a temporary
    name until its files are fsynced; returns its manifest record."""
    if any("\n" in t for t in counts.terms):
        raise ValueError("a term contains a newline; the tokenizer must never produce one")
    tmp = _fresh(directory, name)
    with storage.writing(tmp / TERMS_FILE):
        write_file(tmp / TERMS_FILE, "\n".join(counts.terms).encode("utf-8"))
    storage.save_array(tmp / DF_FILE, np.asarray(counts.df, dtype=np.int64))
    files = {}
    for path in sorted(tmp.iterdir()):
        with storage.writing(path):
            storage.fsync_path(path)
        files[path.name] = {"bytes": path.stat().st_size, "sha256": storage.sha256_file(path)}
    with storage.writing(tmp):
        storage.fsync_path(tmp)
        tmp.rename(directory / name)
    storage.checkpoint("statistics renamed")
    return {"name": name, "documents": counts.documents, "total_length": counts.total_length,
            "terms": len(counts.terms), "postings": int(counts.df.sum()), "files": files}


def _fresh(directory: Path, name: str) -> Path:
    """The new temporary folder ``.tmp-<name>`` of ``directory`` for the journaled ``name``, after
    removing what an earlier attempt of the same task left under either name (a cluster runs the task
    of a worker that died again elsewhere)."""
    tmp = directory / f".tmp-{name}"
    for leftover in (tmp, directory / name):
        if leftover.exists() or leftover.is_symlink():
            storage.remove_path(leftover)
    with storage.writing(tmp):
        tmp.mkdir()
    return tmp


def pin_counts(directory: Path, record: Mapping[str, Any], pins: storage.Pins) -> None:
    """Open the files of the statistics a (checked) manifest record names."""
    for name in record["files"]:
        pins.open(directory / record["name"] / name)


def load_counts(directory: Path, record: Mapping[str, Any], pins: storage.Pins | None = None, verify: bool = True,
                arrow: bool = False) -> TermCounts:
    """The global statistics a (checked) manifest record names, read from their files (opened in
    ``pins``, or here), checked against the record. With ``arrow``, the terms are a pyarrow string
    array (no Python string per term: what searching needs of them)."""
    if pins is None:
        with storage.Pins(directory) as own:
            pin_counts(directory, record, own)
            return load_counts(directory, record, own, verify, arrow)
    folder = directory / record["name"]
    fds = {name: pins.open(folder / name) for name in record["files"]}
    storage.check_files([(folder / name, fds[name], info) for name, info in record["files"].items()], verify)
    raw = storage.read_text(folder / TERMS_FILE, fds[TERMS_FILE])
    df = storage.read_array(folder / DF_FILE, fds[DF_FILE], np.dtype(np.int64), mmap=False)
    if arrow:
        import pyarrow as pa
        import pyarrow.compute as pc

        terms: Any = pc.split_pattern(pa.array([raw], type=pa.large_string()), "\n").flatten() if raw else \
            pa.array([], type=pa.large_string())
    else:
        terms = raw.split("\n") if raw else []
    del raw
    if df.shape[0] != len(terms) or len(terms) != record["terms"] or (df <= 0).any() \
            or int(df.sum()) != record["postings"]:
        raise IndexFormatError(f"{folder}: statistics disagree with the manifest; rebuild the index")
    return TermCounts(record["documents"], record["total_length"], terms, df)


# ---------------------------------------------------------------------------------------------
# The manifest


def read_manifest_bytes(directory: Path) -> bytes:
    return storage.manifest_bytes(directory, MANIFEST, lambda: f"not a sharded bm25lab index (no {MANIFEST}); "
                                                               f"build one with `bm25lab index --shards N`")


def read_manifest(directory: Path) -> dict[str, Any]:
    return parse_manifest(directory, read_manifest_bytes(directory))


def parse_manifest(directory: Path, raw: bytes) -> dict[str, Any]:
    """Parse and check ``shards.json``: format, version, checksum, statistics record, and every shard's
    manifest (as :func:`bm25lab.engine.storage.parse_manifest` checks an index's: its checksum and
    counts included)."""
    path = directory / MANIFEST

    def bad(what: str) -> IndexFormatError:
        return IndexFormatError(f"{path}: bad manifest ({what}); rebuild the index")

    def integer(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    try:
        manifest = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise IndexFormatError(f"{path}: unreadable manifest ({reason}); rebuild the index") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        raise IndexFormatError(f"{path}: not a sharded bm25lab index manifest; rebuild the index")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        newer = integer(version) and version > FORMAT_VERSION
        hint = "upgrade bm25lab to read it" if newer else "rebuild it with this version of bm25lab"
        raise IndexFormatError(f"{path}: sharded index format version {version!r}, this bm25lab reads version "
                               f"{FORMAT_VERSION}; {hint}")
    try:
        expected = storage.manifest_checksum(manifest)
    except (TypeError, ValueError, RecursionError):
        expected = None
    if manifest.get("checksum") != expected:
        raise IndexFormatError(f"{path}: manifest checksum mismatch (the manifest was edited or damaged); "
                               f"rebuild the index")
    if not isinstance(manifest.get("tokenizer"), dict):
        raise bad("no tokenizer configuration")
    if not integer(manifest.get("generation")):
        raise bad("no generation")
    stats = manifest.get("statistics")
    if not (isinstance(stats, dict) and isinstance(stats.get("name"), str) and _STATS_NAME.fullmatch(stats["name"])
            and all(integer(stats.get(k)) for k in ("documents", "total_length", "terms", "postings"))
            and isinstance(stats.get("files"), dict) and set(stats["files"]) == STATS_FILES
            and all(storage.is_file_record(v) for v in stats["files"].values())):
        raise bad("a malformed statistics record")
    shards = manifest.get("shards")
    if not isinstance(shards, list) or not shards:
        raise bad("no shard list")
    for position, entry in enumerate(shards):
        if not (isinstance(entry, dict) and isinstance(entry.get("name"), str) and _SHARD_NAME.fullmatch(entry["name"])
                and isinstance(entry.get("manifest"), dict)):
            raise bad(f"shard {position} without a valid name or manifest")
        copy = entry["manifest"]
        storage.parse_manifest(directory / entry["name"], json.dumps(copy).encode("utf-8"))
        if copy.get(segments.SHARD_KEY) != {"position": position, "shards": len(shards)}:
            raise bad(f"shard {position}'s manifest does not say it is shard {position} of {len(shards)}")
        if _key(copy["tokenizer"]) != _key(manifest["tokenizer"]):
            raise bad(f"shard {position}'s tokenizer is not the index's")
    totals = [sum(entry["manifest"]["counts"][key] for entry in shards) for key in ("documents", "total_length",
                                                                                    "postings")]
    if totals != [stats["documents"], stats["total_length"], stats["postings"]]:
        raise bad("the statistics' counts are not the sum of the shards'")
    return manifest


def _referenced(manifest: Mapping[str, Any]) -> set[str]:
    return {entry["name"] for entry in manifest["shards"]} | {manifest["statistics"]["name"]}


def _sealed(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """``manifest`` with its checksum (as written to disk), as plain JSON data."""
    body = {key: value for key, value in manifest.items() if key != "checksum"}
    return json.loads(json.dumps(dict(body, checksum=storage.manifest_checksum(body)), ensure_ascii=False))


def _sync_shards(directory: Path, manifest: Mapping[str, Any]) -> None:
    """Bring every shard's ``index.json`` to its copy in ``manifest`` (after a commit, or a commit that a
    killed writer left half done), which removes the files the shard's old manifest named; then, and
    only then, remove what the shard's journal lists and its manifest does not name (what a killed
    writer wrote there before its commit). The caller holds the sharded index's lock."""
    for entry in manifest["shards"]:
        shard_dir = directory / entry["name"]
        check_folder(shard_dir)  # never written into through a link
        try:
            current = storage.read_manifest(shard_dir)
        except IndexFormatError:
            current = None
        if current != entry["manifest"]:
            storage.write_manifest(shard_dir, entry["manifest"])  # settles the shard
        else:
            storage.settle(shard_dir)


def settle(directory: Path) -> None:
    """Finish what an earlier writer of the sharded index in ``directory`` left: remove the journaled
    names that ``shards.json`` does not name (shards, statistics, their temporary folders) and the
    abandoned scratch folders, then bring every shard's ``index.json`` to its copy and settle the
    shard (:func:`_sync_shards`). Without a readable ``shards.json`` no shard is touched. The caller
    holds the writer's lock."""
    storage.settle(directory)
    try:
        manifest = read_manifest(directory)
    except IndexFormatError:
        return
    _sync_shards(directory, manifest)


def _settle_after_failure(directory: Path) -> None:
    """:func:`settle` after a failed change (a full disk: the next writer finishes what this cannot)."""
    try:
        settle(directory)
    except (OSError, IndexFormatError):
        pass


def _commit(directory: Path, manifest: dict[str, Any]) -> None:
    """Atomically replace ``shards.json`` by ``manifest`` with its checksum (the commit: the names it
    drops are journaled first), then update the shards' ``index.json`` and remove what no manifest
    names. The caller holds the writer's lock."""
    body = _sealed(manifest)
    storage.commit_json(directory, MANIFEST, body, _referenced(body))
    _sync_shards(directory, body)
    storage.settle(directory)


def _new_manifest(tokenizer_config: dict[str, Any], shards: Sequence["ShardRecord"], stats: dict[str, Any],
                  generation: int) -> dict[str, Any]:
    return {"format": FORMAT_NAME, "format_version": FORMAT_VERSION, "generation": generation,
            "tokenizer": tokenizer_config, "routing": ROUTING, "statistics": stats,
            "shards": [{"name": s.name, "manifest": s.manifest} for s in shards]}


def size_on_disk(directory: Path) -> int:
    """Bytes of the sharded index in ``directory`` as its manifest records them: ``shards.json``, the
    statistics' files, and each shard's manifest (its copy, as written) and the files it names."""
    raw = read_manifest_bytes(directory)
    return manifest_bytes(parse_manifest(directory, raw), len(raw))


def manifest_bytes(manifest: Mapping[str, Any], own: int) -> int:
    """Bytes of the files a (checked) sharded manifest of ``own`` bytes names, as it records them."""
    total = own + sum(info["bytes"] for info in manifest["statistics"]["files"].values())
    for entry in manifest["shards"]:
        copy = entry["manifest"]
        total += len(json.dumps(copy, ensure_ascii=False, indent=1).encode("utf-8"))  # as write_manifest writes it
        total += storage.recorded_bytes(copy["segments"])
    return total


# ---------------------------------------------------------------------------------------------
# Building: partitions of documents into staged segments, staged segments into shards


@dataclass(frozen=True)
class PartitionSegments:
    """What one partition of the input wrote to a staging folder: its place in the input (``first``
    document, ``count`` documents) and, per shard that got documents, the manifest entry of the
    segment written to ``<staging>/shard-<i>/``."""

    first: int
    count: int
    segments: dict[int, dict[str, Any]]


@dataclass(frozen=True)
class ShardRecord:
    """A shard written by :func:`assemble_shard`: its folder's name, its manifest and its counts."""

    name: str
    manifest: dict[str, Any]
    counts: TermCounts | None  # None once handed to the commit, which needs only the name and manifest


def write_partition(docs: Iterable[DocLike], tokenizer: Tokenizer, shards: int, staging: Path, *, first: int = 0,
                    workers: int | None = 1, progress: Progress | None = None, source: str | Path | None = None,
                    backend: str | None = None) -> PartitionSegments:
    """Analyse one partition of the input (its documents ``first``, ``first + 1``, ... of the input) and
    write, for each shard that gets some of them, one segment to ``<staging>/shard-<i>/`` (the stores
    are written in a scratch folder inside ``staging`` meanwhile)."""
    built, workdir = segments.build_routed(docs, tokenizer, partial(route, shards=shards), shards, workers=workers,
                                           progress=progress, source=source, backend=backends.create(backend),
                                           offset=first, scratch=staging)
    try:
        written: dict[int, dict[str, Any]] = {}
        for position, seg in enumerate(built):
            if seg.postings.num_docs:
                folder = staging / f"shard-{position}"
                with storage.writing(folder):
                    folder.mkdir(exist_ok=True)
                assert seg.store_path is not None
                written[position] = storage.write_segment(folder, seg.postings, seg.doc_ids, seg.id_rank,
                                                          seg.store_path, move_store=True)
        return PartitionSegments(first, sum(s.postings.num_docs for s in built), written)
    finally:
        workdir.cleanup()


def assemble_shard(directory: Path, staging: Path, position: int, shards: int,
                   pieces: Sequence[tuple[int, int, dict[str, Any]]], tokenizer_config: dict[str, Any],
                   source: str | Path | None = None, name: str | None = None) -> ShardRecord:
    """Shard ``position`` (of ``shards``) of a new sharded index in ``directory``: a new ordinary index
    folder ``name`` (journaled by the writer: :func:`journaled_name`; None: a new name journaled here, by
    the holder of the writer's lock) made of the staged segments
    ``pieces`` (``(first, count, entry)`` of each partition that sent it documents, in input order),
    merged into one segment, or the one staged segment moved as it is. Staged segments are verified
    before they are merged (damaged data never gets fresh checksums). A document id in two partitions
    is an InputError naming both ranges of the input."""
    folder = staging / f"shard-{position}"
    parts = segments.load_parts(folder, {"segments": [entry for _, _, entry in pieces]}, verify=len(pieces) > 1)
    _check_unique_ids(parts, pieces, source)
    name = journaled_name(directory, "shard") if name is None else name
    assert _SHARD_NAME.fullmatch(name), name
    counts = TermCounts.of_parts(parts)
    live = segments.live_counts(parts)
    tmp = _fresh(directory, name)
    manifest: dict[str, Any] = {"format": storage.FORMAT_NAME, "format_version": storage.FORMAT_VERSION,
                                "tokenizer": tokenizer_config, segments.SHARD_KEY: {"position": position, "shards": shards}}
    if len(parts) == 1:  # the staged segment becomes the shard's, as it is (linked: the staging stays whole)
        entry = pieces[0][2]
        _link_segment(folder / entry["name"], tmp / entry["name"], entry["files"])
        entries = [entry]
    elif parts:
        work = Scratch(staging)
        try:
            merged = segments.merged_part(parts, work.path)
            seg = merged.segment
            assert seg.store_path is not None
            entries = [storage.write_segment(tmp, seg.postings, seg.doc_ids, seg.id_rank, seg.store_path,
                                             move_store=True)]
        finally:
            work.cleanup()
    else:
        entries = []
    manifest = dict(manifest, counts=live, segments=entries)
    storage.write_manifest(tmp, manifest)
    with storage.writing(tmp):
        storage.fsync_path(tmp)
        tmp.rename(directory / name)
        storage.fsync_path(directory)
    storage.checkpoint("shard renamed")
    return ShardRecord(name, _sealed(manifest), counts)


def _link_segment(source: Path, target: Path, names: Iterable[str]) -> None:
    """A new segment folder ``target`` holding the files ``names`` of ``source`` (hard links, or copies
    where the file system has none), fsynced."""
    import shutil

    with storage.writing(target):
        target.mkdir()
    for name in sorted(names):
        with storage.writing(target / name):
            try:
                os.link(source / name, target / name)
            except OSError:
                shutil.copyfile(source / name, target / name)
                storage.fsync_path(target / name)
    with storage.writing(target):
        storage.fsync_path(target)


def _check_unique_ids(parts: Sequence[Part], pieces: Sequence[tuple[int, int, Any]], source: str | Path | None) -> None:
    """No document id in two of ``parts`` (each is checked when it is built)."""
    total = sum(p.num_docs for p in parts)
    if len(set().union(*(p.segment.doc_ids for p in parts))) == total:
        return
    seen: dict[str, int] = {}
    for index, part in enumerate(parts):
        for doc_id in part.segment.doc_ids:
            before = seen.setdefault(doc_id, index)
            if before != index:
                (a, n, _), (b, m, _) = pieces[before], pieces[index]
                raise InputError(f"duplicate document id {doc_id!r} (among documents {a + 1}-{a + n} and "
                                 f"{b + 1}-{b + m} of the input)", source)


class Build:
    """A new sharded index being written into ``directory`` (see :func:`building`) by the holder of its
    lock: the staging folder (a scratch folder inside ``directory``), the journaled names of the
    shards and statistics to write, and :meth:`commit` once they are written."""

    def __init__(self, directory: Path, overwrite: bool, staging: Path) -> None:
        self.directory = directory
        self.overwrite = overwrite
        self.staging = staging

    def names(self, prefix: str, count: int) -> list[str]:
        """``count`` new names for shard (``"shard"``) or statistics (``"stats"``) folders, journaled."""
        return [journaled_name(self.directory, prefix) for _ in range(count)]

    def commit(self, tokenizer_config: dict[str, Any], shards: Sequence[ShardRecord], stats: dict[str, Any]) -> None:
        storage.check_target(self.directory, self.overwrite, sharded=True)
        _commit(self.directory, _new_manifest(tokenizer_config, shards, stats, _generation(self.directory) + 1))


def _generation(directory: Path) -> int:
    """The generation of the sharded index in ``directory`` (0: none, or one too damaged to tell)."""
    try:
        return int(read_manifest(directory)["generation"])
    except IndexFormatError:
        return 0


def check_target(directory: str | Path, overwrite: bool) -> None:
    """Whether a sharded index may be written into ``directory``: InputError if not (see the module
    docstring; :func:`bm25lab.engine.storage.check_target`)."""
    storage.check_target(Path(directory), overwrite, sharded=True)


@contextmanager
def building(directory: str | Path, overwrite: bool = False) -> Iterator[Build]:
    """Hold the writer's lock of ``directory`` (made when missing) while a new sharded index is written
    into it: the ``with`` block writes shards and statistics and calls :meth:`Build.commit`. On any
    failure, what the block wrote is removed (it was journaled), and so is the directory when this
    call made it and nothing else is in it: the old index stays, or no folder."""
    directory = Path(directory).absolute()
    created = not directory.exists()
    check_target(directory, overwrite)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(directory)) from None
    try:
        with write_lock(directory):
            check_target(directory, overwrite)  # again, now that no other writer can change it
            storage.settle(directory)
            staging = Scratch(directory)
            storage.checkpoint("scratch made")
            try:
                yield Build(directory, overwrite, staging.path)
            except BaseException:
                _settle_after_failure(directory)
                raise
            finally:
                staging.cleanup()
    except BaseException:
        if created:
            _remove_if_only_ours(directory)
        raise


def _remove_if_only_ours(directory: Path) -> None:
    """Remove a folder that a failed build made, when nothing is left in it but the lock and a journal
    that lists nothing (what the build wrote was removed); anything else keeps it."""
    try:
        names = set(os.listdir(directory))
        if not names <= {LOCK_FILE, storage.JOURNAL} or storage.Journal(directory).names():
            return
        for name in names:
            (directory / name).unlink()
        directory.rmdir()
    except OSError:
        pass


def build(docs: Iterable[DocLike], directory: str | Path, shards: int, tokenizer: Tokenizer | None = None, *,
          overwrite: bool = False, workers: int | None = None, progress: Progress | None = None,
          source: str | Path | None = None, backend: str | None = None) -> Path:
    """Index ``docs`` into a new sharded index of ``shards`` shards in ``directory``, in this process
    (one pass over the documents; :mod:`bm25lab.distributed` does the same on a Dask cluster)."""
    shards = check_shard_count(shards)
    tokenizer = tokenizer or Tokenizer()
    with building(directory, overwrite) as new:
        part = write_partition(docs, tokenizer, shards, new.staging, workers=workers, progress=progress,
                               source=source, backend=backend)
        names = new.names("shard", shards)
        records = [assemble_shard(new.directory, new.staging, i, shards,
                                  [(part.first, part.count, part.segments[i])] if i in part.segments else [],
                                  tokenizer.config(), source, names[i]) for i in range(shards)]
        stats = write_statistics(new.directory, TermCounts.total([r.counts for r in records if r.counts is not None]),
                                 new.names("stats", 1)[0])
        new.commit(tokenizer.config(), records, stats)
    return new.directory


# ---------------------------------------------------------------------------------------------
# Searching: two rounds over the shards, then a merge


@dataclass(frozen=True)
class GlobalTerms:
    """A batch's queries in global term ids (the positions in the statistics' vocabulary): query ``i``
    owns ``term_ids[q_ptr[i]:q_ptr[i + 1]]`` (ascending) with its multiplicities ``counts`` and each
    term's largest weight ``upper`` (at least 0, before the multiplicity) in the shards that answered."""

    q_ptr: np.ndarray
    term_ids: np.ndarray
    counts: np.ndarray
    upper: np.ndarray

    def __len__(self) -> int:
        return self.q_ptr.shape[0] - 1

    @classmethod
    def empty(cls, queries: int) -> "GlobalTerms":
        return cls(np.zeros(queries + 1, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0))

    @classmethod
    def union(cls, parts: Sequence["GlobalTerms"]) -> "GlobalTerms":
        """Every query's terms known to any of ``parts`` (the shards' answers for the same batch), each
        with its largest weight over them: over all shards, the whole collection's."""
        queries = len(parts[0])
        which = np.concatenate([np.repeat(np.arange(queries, dtype=np.int64), np.diff(p.q_ptr)) for p in parts])
        terms = np.concatenate([p.term_ids for p in parts]).astype(np.int64)
        if not terms.shape[0]:
            return cls.empty(queries)
        counts = np.concatenate([p.counts for p in parts])
        upper = np.concatenate([p.upper for p in parts])
        order = np.lexsort((terms, which))
        which, terms, counts, upper = which[order], terms[order], counts[order], upper[order]
        first = np.ones(terms.shape[0], dtype=bool)
        first[1:] = (which[1:] != which[:-1]) | (terms[1:] != terms[:-1])
        starts = np.flatnonzero(first)
        q_ptr = np.searchsorted(which[starts], np.arange(queries + 1), side="left").astype(np.int64)
        return cls(q_ptr, terms[starts], counts[starts], np.maximum.reduceat(upper, starts))

    def weighted(self, k3: float | None) -> "GlobalTerms":
        """The multiplicities replaced by the query terms' weights under ``k3``
        (:func:`~bm25lab.engine.scoring.query_term_weight`; None: unchanged), as
        :meth:`bm25lab.engine.retrieval.TermBatch.weighted` does for one index."""
        if k3 is None:
            return self
        return GlobalTerms(self.q_ptr, self.term_ids, query_term_weight(self.counts, k3), self.upper)

    def constants(self, statistics: CollectionStatistics, params: Params) -> np.ndarray:
        """Each query's ``sum_t idf(t) * tf_part(0)`` over its global terms, computed as one index of
        the whole collection computes it (:meth:`bm25lab.engine.retrieval.Scorer.constant`)."""
        out = np.zeros(len(self), dtype=np.float64)
        zero = zero_tf_part(params)
        if zero:
            idf = statistics.idf(params.variant)
            for i in range(len(self)):
                a, z = int(self.q_ptr[i]), int(self.q_ptr[i + 1])
                if z > a:
                    out[i] = absent_terms_constant(idf[self.term_ids[a:z]], zero, self.counts[a:z])
        return out

    def local(self, term_map: np.ndarray, constants: np.ndarray) -> TermBatch:
        """The batch in a shard's term ids (``term_map``: each shard term's global id, ascending): the
        terms the shard holds, with their global largest weights and the queries' global constants."""
        if term_map.shape[0]:
            pos = np.searchsorted(term_map, self.term_ids)
            held = term_map[np.minimum(pos, term_map.shape[0] - 1)] == self.term_ids
        else:
            pos, held = np.zeros_like(self.term_ids), np.zeros(self.term_ids.shape[0], dtype=bool)
        which = np.repeat(np.arange(len(self), dtype=np.int64), np.diff(self.q_ptr))
        q_ptr = np.zeros(len(self) + 1, dtype=np.int64)
        np.cumsum(np.bincount(which[held], minlength=len(self)), out=q_ptr[1:])
        return TermBatch(q_ptr, pos[held].astype(np.int64), self.counts[held], self.upper[held], constants)


@dataclass(frozen=True)
class ShardHits:
    """A shard's best documents for each query of a batch, best first: query ``i`` owns
    ``doc_ids[offsets[i]:offsets[i + 1]]`` and ``scores`` at the same places. The ids are a pyarrow
    string array (a list of str is taken too): they travel between processes as two buffers."""

    offsets: np.ndarray
    doc_ids: Any
    scores: np.ndarray

    def __len__(self) -> int:
        return self.offsets.shape[0] - 1

    def ids(self) -> list[str]:
        """The document ids as Python strings."""
        return self.doc_ids if isinstance(self.doc_ids, list) else self.doc_ids.to_pylist()

    @classmethod
    def empty(cls, queries: int) -> "ShardHits":
        return cls(np.zeros(queries + 1, dtype=np.int64), [], np.zeros(0))

    @classmethod
    def of(cls, ranked: Sequence[tuple[np.ndarray, np.ndarray]], ids: DocIds) -> "ShardHits":
        """The hits of ``ranked`` (per query, document numbers and scores) of a shard whose ids are ``ids``."""
        offsets = np.zeros(len(ranked) + 1, dtype=np.int64)
        np.cumsum([docs.shape[0] for docs, _ in ranked], out=offsets[1:])
        if not offsets[-1]:
            return cls(offsets, [], np.zeros(0))
        nums = np.concatenate([np.asarray(docs, dtype=np.int64) for docs, _ in ranked])
        return cls(offsets, ids.column.take(nums), np.concatenate([np.asarray(s, dtype=np.float64) for _, s in ranked]))


def _large(ids: Any) -> Any:
    """``ids`` (a pyarrow string array or a list of str) as a pyarrow large_string array."""
    import pyarrow as pa

    from .columns import string_array

    return string_array(ids).cast(pa.large_string())


def _floors(parts: Sequence[ShardHits], k: int) -> np.ndarray:
    """A lower bound of each query's k-th best score over the shards (-inf when there is none): with
    ``m = ceil(k / shards)``, the least of the m-th scores of the shards that have m candidates, when
    those shards hold at least k candidates at or above it (each shard's list is best first)."""
    queries = len(parts[0])
    m = -(-k // len(parts))
    floors = np.full(queries, np.inf)
    holding = np.zeros(queries, dtype=np.int64)
    for p in parts:
        has = np.diff(p.offsets) >= m
        floors[has] = np.minimum(floors[has], p.scores[p.offsets[:-1][has] + m - 1])
        holding += has
    floors[holding * m < k] = -np.inf
    return floors


def merge_hits(parts: Sequence[ShardHits], k: int) -> ShardHits:
    """The best ``k`` of each query over the shards' lists, by the tie rule (score descending, then
    document id descending in code point order; :mod:`bm25lab.engine.selection`): what merging each
    query's lists k ways gives (a document is in one shard).

    Vectorised: candidates below a lower bound of their query's k-th score are dropped first
    (:func:`_floors`); the rest are sorted by query and score, each query's cut after its k-th
    together with every candidate tied with the k-th, and only candidates tied with another (equal
    query and score) have their ids compared (as UTF-8 bytes, whose order is the code point order).
    """
    import pyarrow as pa

    queries = len(parts[0])
    sizes = [len(p.doc_ids) for p in parts]
    if not sum(sizes):
        return ShardHits.empty(queries)
    which = np.concatenate([np.repeat(np.arange(queries, dtype=np.int64), np.diff(p.offsets)) for p in parts])
    scores = np.concatenate([p.scores for p in parts])
    candidates = np.flatnonzero(scores >= _floors(parts, k)[which])
    which, scores = which[candidates], scores[candidates]
    order = np.lexsort((-scores, which))
    which, scores = which[order], scores[order]
    first = np.searchsorted(which, np.arange(queries), side="left")
    rank_in_query = np.arange(which.shape[0]) - first[which]
    kth = np.full(queries, -np.inf)
    full = np.flatnonzero(np.bincount(which, minlength=queries) >= k)
    kth[full] = scores[first[full] + k - 1]
    keep = (rank_in_query < k) | (scores == kth[which])  # every candidate tied with a query's k-th, too
    which, scores, order = which[keep], scores[keep], order[keep]
    ids = pa.concat_arrays([_large(p.doc_ids) for p in parts]).take(candidates[order])
    # runs of equal (query, score): their members are put in id-descending order within the run
    same = (which[1:] == which[:-1]) & (scores[1:] == scores[:-1])
    tied = np.zeros(which.shape[0], dtype=bool)
    tied[1:] |= same
    tied[:-1] |= same
    placed = np.arange(which.shape[0])  # which candidate takes each place
    members = np.flatnonzero(tied)
    if members.shape[0]:
        run = np.cumsum(np.concatenate(([True], ~same)))[members]
        count = members.shape[0]
        placed[members] = members[np.argsort(run * count + (count - 1 - code_point_ranks(ids.take(members))),
                                             kind="stable")]
    first = np.searchsorted(which, np.arange(queries), side="left")
    chosen = placed[np.arange(which.shape[0]) - first[which] < k]
    offsets = np.zeros(queries + 1, dtype=np.int64)
    np.cumsum(np.minimum(np.bincount(which, minlength=queries), k), out=offsets[1:])
    return ShardHits(offsets, ids.take(chosen), scores[chosen])


def code_point_ranks(ids: Any) -> np.ndarray:
    """The rank (0 first) of each of ``ids`` (a pyarrow large_string array) in code point order, equal
    ids in their order: by the first 8 bytes of their UTF-8 as big-endian integers (UTF-8's byte order
    is the code point order), and where those are equal, by pyarrow's sort of the whole bytes."""
    import pyarrow as pa
    import pyarrow.compute as pc

    prefix = _prefixes(ids)
    order = np.argsort(prefix, kind="stable")
    ordered = prefix[order]
    equal = ordered[1:] == ordered[:-1]
    if equal.any():
        places = np.flatnonzero(np.concatenate(([False], equal)) | np.concatenate((equal, [False])))
        run = np.cumsum(np.concatenate(([True], ~equal)))[places]
        table = pa.table({"run": run, "id": ids.take(order[places])})
        within = pc.sort_indices(table, sort_keys=[("run", "ascending"), ("id", "ascending")]).to_numpy()
        order[places] = order[places][within]
    rank = np.empty(order.shape[0], dtype=np.int64)
    rank[order] = np.arange(order.shape[0], dtype=np.int64)
    return rank


def _prefixes(ids: Any) -> np.ndarray:
    """The first 8 bytes of each string's UTF-8 (zero-padded) as a big-endian unsigned integer, read
    from the large_string array's buffers."""
    n = len(ids)
    if not n:
        return np.zeros(0, dtype=np.uint64)
    buffers = ids.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int64)[ids.offset:ids.offset + n + 1]
    first, last = int(offsets[0]), int(offsets[-1])
    data = np.zeros(last - first + 8, dtype=np.uint8)
    if buffers[2] is not None and last > first:
        data[:last - first] = np.frombuffer(buffers[2], dtype=np.uint8)[first:last]
    words = np.ndarray(shape=(data.shape[0] - 7,), dtype=">u8", buffer=data, strides=(1,))
    length = np.minimum(np.diff(offsets), 8).astype(np.uint64)
    value = words[offsets[:-1] - first].astype(np.uint64)
    drop = (np.uint64(8) - length) * np.uint64(8)  # bits past the string's end
    keep = np.where(length > 0, ~((np.uint64(1) << np.minimum(drop, np.uint64(63))) - np.uint64(1)), np.uint64(0))
    keep = np.where(drop == 0, np.uint64(0xFFFFFFFFFFFFFFFF), keep)
    return value & keep


class Shard:
    """One shard loaded for searching: its live documents (one merged view of its segments), scored
    under the collection's ``statistics`` by its own backend, and its document store."""

    def __init__(self, parts: list[Part], statistics: CollectionStatistics, backend: Backend) -> None:
        self.parts = parts
        self.statistics = statistics
        self.backend = backend
        self.store = SegmentedStore([p.store for p in parts])
        self.segment = segments.merge(parts) if parts else None
        self.ids = DocIds([] if self.segment is None else self.segment.doc_ids)
        self.scorer = None if self.segment is None else Scorer(self.segment.postings, self.segment.id_rank, statistics,
                                                               pairs=self.segment.pairs)
        self.masks = Masks(parts)

    @property
    def num_docs(self) -> int:
        return 0 if self.segment is None else self.segment.postings.num_docs

    def counts(self) -> dict[str, int]:
        """The manifest's counts of this shard's live documents."""
        if self.segment is None:
            return {"documents": 0, "terms": 0, "postings": 0, "total_length": 0}
        p = self.segment.postings
        return {"documents": p.num_docs, "terms": p.num_terms, "postings": p.num_postings,
                "total_length": int(np.asarray(p.doc_lengths).sum(dtype=np.int64))}

    def look_up(self, queries: Sequence[Sequence[str]], params: Params) -> GlobalTerms:
        """First round: each query's terms that this shard holds, in global ids, with their largest
        weight here (a batch prepares every posting's weight, as the backends do)."""
        if self.scorer is None:
            return GlobalTerms.empty(len(queries))
        batch = self.backend.term_batch(self.scorer, queries)
        if len(queries) > 1:
            self.scorer.prepare(params, self.backend.pair_coder())
        assert self.scorer.term_map is not None
        return GlobalTerms(batch.q_ptr, self.scorer.term_map[batch.term_ids], batch.counts,
                           self.scorer.term_upper(batch.term_ids, params))

    def top_k(self, terms: GlobalTerms, k: int, params: Params, workers: int = 1,
              where: Filter | None = None) -> ShardHits:
        """Second round: the exact best ``k`` documents of each query here, under the collection's
        statistics, largest weights and constants, among those that pass ``where``."""
        if self.scorer is None:
            return ShardHits.empty(len(terms))
        assert self.segment is not None and self.scorer.term_map is not None
        batch = terms.local(self.scorer.term_map, terms.constants(self.statistics, params))
        mask = self.masks.of(where)
        if len(batch) == 1:
            ranked = [self.backend.top_k(self.scorer, batch.query(0), k, params, mask)]
        else:
            ranked = self.backend.top_k_batch(self.scorer, batch, k, params, workers, mask)
        return ShardHits.of(ranked, self.ids)


def search_shards(shards: Sequence[Shard], queries: Sequence[Sequence[str]], k: int, params: Params,
                  workers: int = 1) -> ShardHits:
    """The two rounds and the merge, in this process (see the module docstring); ``params.k3`` weighs
    the union's multiplicities, the shards score with the rest (:meth:`Params.of_documents`) and keep the
    documents that pass ``params.where``: each shard's best ``k`` of them, so the merge is exact."""
    scoring = params.of_documents()
    terms = GlobalTerms.union([shard.look_up(queries, scoring) for shard in shards]).weighted(params.k3)
    return merge_hits([shard.top_k(terms, k, scoring, workers, params.where) for shard in shards], k)


def search_params(variant: str, k1: float, b: float, delta: float | None, k3: float | None,
                  field_weights: FieldValues = None, field_b: FieldValues = None) -> Params:
    """The checked parameters of a search of a sharded index. A sharded index is built without
    fields, so field weights or field b (BM25F) are a ParameterError, whatever their values."""
    if parse_field_values(field_weights, "field weights") or parse_field_values(field_b, "field b"):
        raise ParameterError("a sharded index has no fields: BM25F (field weights, field b) scores an ordinary "
                             "index built with fields (bm25lab index --fields title,text, without --shards)")
    return Params(variant, k1, b, delta, k3).resolved()


@dataclass(frozen=True)
class ShardedIndexInfo(IndexInfo):
    """:class:`IndexInfo` of a sharded index, with its number of shards."""

    shards: int = 1


class ShardedIndex(Searcher[ShardHits]):
    """A sharded index loaded and searched in this process, with the search protocol of every index
    (:class:`~bm25lab.engine.searching.Searcher`) and the interface of :class:`~bm25lab.engine.index.Index`
    for growing; results equal those of one index
    of the same documents, bit for bit (see the module docstring).

        ShardedIndex.build(docs, "idx", shards=3, tokenizer=Tokenizer("en"))
        index = ShardedIndex.load("idx"); index.search_many({"q1": "..."}, k=1000)
    """

    def __init__(self, path: Path, manifest: dict[str, Any], tokenizer: Tokenizer, counts: TermCounts,
                 shards: list[Shard], backend: str | None, manifest_size: int = 0) -> None:
        self.path = path
        self.manifest = manifest
        self._manifest_size = manifest_size
        self.tokenizer = tokenizer
        self.counts_ = counts
        self.shards = shards
        self._backend_name = backend

    @classmethod
    def build(cls, docs: Iterable[DocLike], path: str | Path, shards: int, tokenizer: Tokenizer | None = None, *,
              overwrite: bool = False, workers: int | None = None, progress: Progress | None = None,
              source: str | Path | None = None, backend: str | None = None) -> "ShardedIndex":
        """Index ``docs`` into ``shards`` shards in ``path`` (see :func:`build`) and load it."""
        directory = build(docs, path, shards, tokenizer, overwrite=overwrite, workers=workers, progress=progress,
                          source=source, backend=backend)
        return cls.load(directory, verify=False, backend=backend)

    @classmethod
    def load(cls, path: str | Path, verify: bool = True, backend: str | None = None) -> "ShardedIndex":
        """Load the sharded index in ``path`` (shards memory-mapped; see :meth:`Index.load`).

        Takes no lock: every file of the statistics and of every shard (stores included) is opened
        before any is read, so that a writer committing meanwhile takes nothing from under the
        reader; when a file is already gone (a commit came between reading ``shards.json`` and
        opening its files), ``shards.json`` is read again and loading starts again. A file missing
        from an index that nobody changes is damage."""
        directory = Path(path).absolute()
        attempts = index_module._LOAD_ATTEMPTS
        for attempt in range(attempts):
            raw = read_manifest_bytes(directory)
            manifest = parse_manifest(directory, raw)
            try:
                tokenizer = Tokenizer.from_config(manifest["tokenizer"])
            except IndexFormatError as exc:
                raise IndexFormatError(f"{directory / MANIFEST}: {exc}") from None
            except (KeyError, TypeError, ValueError) as exc:
                raise IndexFormatError(f"{directory / MANIFEST}: bad manifest ({exc}); rebuild the index") from None
            try:
                counts, shards = load_shards(directory, manifest, verify, backend)
            except storage.MissingFile:
                if not _manifest_changed(directory, raw):
                    raise  # gone from an index nobody changed: damage
                if attempt + 1 < attempts:
                    continue
                raise IndexFormatError(f"{directory}: the index changed {attempts} times while it was being read "
                                       f"(writers are committing); try again") from None
            return cls(directory, manifest, tokenizer, counts, shards, backend, len(raw))
        raise AssertionError("unreachable")  # pragma: no cover

    # ------------------------------------------------------------------ facts
    @property
    def num_shards(self) -> int:
        return len(self.shards)

    @property
    def num_docs(self) -> int:
        return self.counts_.documents

    @property
    def num_terms(self) -> int:
        return len(self.counts_.terms)

    @property
    def num_postings(self) -> int:
        return int(self.counts_.df.sum())

    @property
    def num_segments(self) -> int:
        return sum(len(s.parts) for s in self.shards)

    @property
    def avgdl(self) -> float:
        return self.counts_.statistics().avgdl

    @property
    def backend(self) -> str:
        return self.shards[0].backend.name

    def counts(self) -> dict[str, int]:
        return {"documents": self.num_docs, "terms": self.num_terms, "postings": self.num_postings,
                "total_length": self.counts_.total_length}

    def info(self) -> ShardedIndexInfo:
        return ShardedIndexInfo(path=str(self.path), format_version=FORMAT_VERSION, documents=self.num_docs,
                                terms=self.num_terms, postings=self.num_postings, average_length=self.avgdl,
                                size_bytes=manifest_bytes(self.manifest, self._manifest_size), segments=self.num_segments,
                                backend=self.backend, tokenizer=self.tokenizer.config(), shards=self.num_shards)

    def document(self, doc_id: str) -> Document | None:
        """The stored document, or None for an unknown or deleted id (read from the shard of its id)."""
        return self.shards[route(doc_id, self.num_shards)].store.get(doc_id)

    def documents(self) -> Iterator[Document]:
        """Every live document, shard by shard."""
        for shard in self.shards:
            yield from shard.store.iter_documents()

    # ------------------------------------------------------------------ search (the protocol: .searching)
    def params(self, variant: str = DEFAULT_VARIANT, k1: float = DEFAULT_K1, b: float = DEFAULT_B,
               delta: float | None = None, k3: float | None = None, field_weights: FieldValues = None,
               field_b: FieldValues = None) -> Params:
        """The checked parameters of a search: :func:`search_params` (a sharded index has no fields)."""
        return search_params(variant, k1, b, delta, k3, field_weights, field_b)

    def retrieve(self, queries: Sequence[Sequence[str]], k: int, params: Params, workers: int | None) -> ShardHits:
        """Each analysed query's best documents over all shards."""
        if not queries:
            return ShardHits.empty(0)
        return search_shards(self.shards, queries, k, params, _worker_count(workers))

    def _hits(self, found: ShardHits) -> Hits:
        return Hits(np.arange(len(found.doc_ids)), found.scores, found.ids(), self.document)

    def _results(self, qids: Sequence[str], found: Sequence[ShardHits]) -> Results:
        return results_of(qids, found, self.document)

    def batch(self, queries: Mapping[str, str]) -> Any:
        raise InputError("tuning searches one index; a sharded index cannot be tuned (tune an ordinary index "
                         "of a sample of the documents)", self.path)

    # ------------------------------------------------------------------ growing
    def add(self, docs: Iterable[DocLike], *, workers: int | None = None, progress: Progress | None = None,
            source: str | Path | None = None) -> Change:
        change = add_documents(self.path, docs, workers=workers, progress=progress, source=source,
                               backend=self._backend_name)
        self._reload()
        return change

    def delete(self, doc_ids: Iterable[str]) -> Change:
        change = delete_documents(self.path, [doc_ids] if isinstance(doc_ids, str) else doc_ids)
        self._reload()
        return change

    def optimize(self) -> Change:
        change = optimize(self.path)
        self._reload()
        return change

    def _reload(self) -> None:
        fresh = ShardedIndex.load(self.path, verify=False, backend=self._backend_name)
        self.__dict__.update(fresh.__dict__)

    def __repr__(self) -> str:
        return f"ShardedIndex(documents={self.num_docs}, shards={self.num_shards}, path={str(self.path)!r})"


def results_of(qids: Sequence[str], found: Sequence[ShardHits],
               fetch: Callable[[str], Document | None] | None = None) -> Results:
    """The :class:`Results` of ``qids`` from consecutive batches' merged hits."""
    if not found:
        return Results(qids, np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0), DocIds([]), fetch)
    offsets = [found[0].offsets]
    for part in found[1:]:
        offsets.append(part.offsets[1:] + offsets[-1][-1])
    ids = [doc_id for part in found for doc_id in part.ids()]
    scores = np.concatenate([part.scores for part in found])
    return Results(qids, np.concatenate(offsets), np.arange(len(ids), dtype=np.int64), scores, DocIds(ids), fetch)


def load_shards(directory: Path, manifest: Mapping[str, Any], verify: bool = True,
                backend: str | None = None) -> tuple[TermCounts, list[Shard]]:
    """The global statistics and every shard of a (checked) manifest, each shard with a new backend,
    read after every file they need is opened (:class:`~bm25lab.engine.storage.Pins`); the shards'
    segments are checked against their manifests' counts, and the statistics against the shards."""
    entries = manifest["shards"]
    with storage.Pins(directory) as pins:
        pin_counts(directory, manifest["statistics"], pins)
        opened: list[list[DocStore]] = []
        try:
            for entry in entries:
                opened.append(segments.pin_parts(directory / entry["name"], entry["manifest"], pins))
        except BaseException:
            for store in (s for stores in opened for s in stores):
                store.close()
            raise
        try:
            counts = load_counts(directory, manifest["statistics"], pins, verify, arrow=True)
        except BaseException:
            for store in (s for stores in opened for s in stores):
                store.close()
            raise
        statistics = counts.statistics()
        shards: list[Shard] = []
        for position, (entry, stores) in enumerate(zip(entries, opened)):
            try:
                parts = segments.parts_of(directory / entry["name"], entry["manifest"], pins, stores, verify)
            except BaseException:
                for store in (s for later in opened[position + 1:] for s in later):
                    store.close()
                raise
            shards.append(_shard_of(directory / entry["name"], entry["manifest"], parts, statistics, backend))
    _check_statistics(directory, counts, shards)
    return counts, shards


def load_shard(directory: Path, entry: Mapping[str, Any], statistics: CollectionStatistics, verify: bool = True,
               backend: str | None = None) -> Shard:
    """One shard of a manifest (its ``{"name", "manifest"}`` entry), scored under ``statistics``."""
    shard_dir = directory / entry["name"]
    parts = segments.load_parts(shard_dir, entry["manifest"], verify=verify, root=directory)
    return _shard_of(shard_dir, entry["manifest"], parts, statistics, backend)


def _shard_of(shard_dir: Path, manifest: Mapping[str, Any], parts: list[Part], statistics: CollectionStatistics,
              backend: str | None) -> Shard:
    """The shard of ``parts``, checked against its manifest's counts."""
    try:
        shard = Shard(parts, statistics, backends.create(backend))
    except KeyError:
        raise IndexFormatError(f"{shard_dir}: the shard holds terms the global statistics lack; rebuild the "
                               f"index") from None
    if shard.counts() != manifest["counts"]:  # what the files hold is what the manifest says
        raise IndexFormatError(f"{shard_dir / storage.MANIFEST}: the segments hold {shard.counts()}, the manifest "
                               f"says {manifest['counts']}; rebuild the index")
    return shard


def _check_statistics(directory: Path, counts: TermCounts, shards: Sequence[Shard]) -> None:
    """The statistics are the shards' counts added up: documents, lengths and every term's df."""
    df = np.zeros(counts.df.shape[0], dtype=np.int64)
    for shard in shards:
        if shard.segment is not None and shard.scorer is not None and shard.scorer.term_map is not None:
            np.add.at(df, shard.scorer.term_map, np.diff(np.asarray(shard.segment.postings.offsets)))
    if (counts.documents != sum(s.num_docs for s in shards) or not np.array_equal(df, counts.df)
            or counts.total_length != sum(s.counts()["total_length"] for s in shards)):
        raise IndexFormatError(f"{directory / MANIFEST}: the statistics disagree with the shards; rebuild the index")


def _manifest_changed(directory: Path, raw: bytes) -> bool:
    try:
        return read_manifest_bytes(directory) != raw
    except IndexFormatError:
        return False


def _worker_count(workers: int | None) -> int:
    from .segments import worker_count

    return worker_count(workers)


# ---------------------------------------------------------------------------------------------
# Growing: add, delete, optimize route to the shards and update the statistics in one commit


class _Transaction:
    """Under the writer's lock: the current manifest and each shard's parts, loaded when first asked."""

    def __init__(self, directory: Path, manifest: dict[str, Any], verify: bool) -> None:
        self.directory = directory
        self.manifest = manifest
        self.verify = verify
        self._parts: dict[int, list[Part]] = {}

    @property
    def num_shards(self) -> int:
        return len(self.manifest["shards"])

    def parts(self, position: int) -> list[Part]:
        if position not in self._parts:
            entry = self.manifest["shards"][position]
            self._parts[position] = segments.load_parts(self.directory / entry["name"], entry["manifest"],
                                                        verify=self.verify, root=self.directory)
        return self._parts[position]

    def commit(self, changed: Mapping[int, list[Part]], move_stores: bool, same_documents: bool = False) -> None:
        """Write the changed shards' new files, the statistics they make (unless ``same_documents``: the
        live documents did not change), and commit. New statistics are derived from the old ones and
        the changed shards' segments, which are verified first whatever ``verify`` says (damaged data
        never gets fresh checksums)."""
        stats = self.manifest["statistics"]
        new_stats = not same_documents and bool(changed)
        if new_stats:
            for position in changed:
                for part in self.parts(position):
                    part.check()
        shards = [dict(entry) for entry in self.manifest["shards"]]
        for position, parts in changed.items():
            shard_dir = self.directory / shards[position]["name"]
            shards[position]["manifest"] = _sealed(segments.manifest_of(shard_dir, shards[position]["manifest"],
                                                                        parts, move_stores))
        if new_stats:
            old = load_counts(self.directory, stats, verify=True)
            items = [old] + [TermCounts.of_parts(self.parts(i)) for i in changed] + \
                    [TermCounts.of_parts(parts) for parts in changed.values()]
            signs = [1] + [-1] * len(changed) + [1] * len(changed)
            stats = write_statistics(self.directory, TermCounts.total(items, signs),
                                     journaled_name(self.directory, "stats"))
        updated = dict(self.manifest, generation=self.manifest["generation"] + 1, shards=shards, statistics=stats)
        _commit(self.directory, updated)


@contextmanager
def _transaction(directory: Path, verify: bool, tokenizer_config: dict[str, Any] | None = None,
                 shards: int | None = None) -> Iterator[_Transaction]:
    """Hold the writer's lock; finish what an earlier writer left (:func:`settle`: a commit a killed
    writer left half done, files it wrote before its commit) and yield the transaction; on failure,
    remove what this one wrote. With ``tokenizer_config``/``shards``, the index must still be the one
    the new documents were analysed and routed for."""
    with write_lock(directory):
        storage.settle(directory)
        manifest = read_manifest(directory)
        if tokenizer_config is not None and (_key(manifest["tokenizer"]) != _key(tokenizer_config)
                                             or len(manifest["shards"]) != shards):
            raise IndexFormatError(f"{directory}: the index was replaced by another while the documents were "
                                   f"being analysed; run the command again")
        transaction = _Transaction(directory, manifest, verify)
        _check_whole(transaction)
        _sync_shards(directory, manifest)
        try:
            yield transaction
        except BaseException:
            _settle_after_failure(directory)
            raise


def _check_whole(tx: _Transaction) -> None:
    """Before a change writes anything: every shard as ``shards.json`` records it and the statistics,
    read (verified with ``tx.verify``) as :meth:`ShardedIndex.load` reads them, and each shard's folder
    and journal what a writer may write to. A change to any shard is refused while another is damaged
    (a file changed, a shard folder replaced by another build's), as searching and ``info`` refuse the
    index; nothing is written into a damaged shard (not even its ``index.json`` brought to its copy)."""
    for position, entry in enumerate(tx.manifest["shards"]):
        shard_dir = tx.directory / entry["name"]
        check_folder(shard_dir)
        storage.Journal(shard_dir).names()  # a journal that is no regular file is refused now, not after the commit
        parts = tx.parts(position)
        if sum(p.num_live for p in parts) != entry["manifest"]["counts"]["documents"]:
            raise IndexFormatError(f"{shard_dir}: its segments hold {sum(p.num_live for p in parts)} documents, "
                                   f"{tx.directory / MANIFEST} says {entry['manifest']['counts']['documents']}; "
                                   f"rebuild the index")
    load_counts(tx.directory, tx.manifest["statistics"], verify=tx.verify)


def _key(config: Any) -> str:
    return json.dumps(config, sort_keys=True, ensure_ascii=False)


def _after(manifest: Mapping[str, Any]) -> tuple[int, int]:
    """(live documents, segments) of a committed manifest."""
    documents = manifest["statistics"]["documents"]
    return documents, sum(len(e["manifest"]["segments"]) for e in manifest["shards"])


def add_documents(directory: str | Path, docs: Iterable[DocLike], *, workers: int | None = None,
                  progress: Progress | None = None, source: str | Path | None = None, verify: bool = True,
                  backend: str | None = None) -> Change:
    """Add ``docs`` to the sharded index in ``directory``: each goes, as a new segment of its shard
    (:func:`route`), to the shard that holds or would hold its id (so a document with an id in the
    index replaces it there). The statistics are updated in the same commit. Bad input raises before
    anything is written."""
    directory = Path(directory).absolute()
    manifest = read_manifest(directory)
    tokenizer = Tokenizer.from_config(manifest["tokenizer"])
    count = len(manifest["shards"])
    check_unlocked(directory)
    built, workdir = segments.build_routed(docs, tokenizer, partial(route, shards=count), count, workers=workers,
                                           progress=progress, source=source, backend=backends.create(backend),
                                           scratch=directory)
    try:
        added = sum(s.postings.num_docs for s in built)
        replaced = 0
        with _transaction(directory, verify, manifest["tokenizer"], count) as tx:
            if not added:
                documents, segs = _after(tx.manifest)
                return Change(documents=documents, segments=segs)
            changed = {}
            for position, seg in enumerate(built):
                if seg.postings.num_docs:
                    changed[position], r = segments.with_added(tx.parts(position), Part(seg))
                    replaced += r
            tx.commit(changed, move_stores=True)
        documents, segs = _after(read_manifest(directory))
        return Change(added=added, replaced=replaced, documents=documents, segments=segs)
    finally:
        workdir.cleanup()


def delete_documents(directory: str | Path, doc_ids: Iterable[str], *, verify: bool = True) -> Change:
    """Delete ``doc_ids`` from the sharded index in ``directory`` (each from the shard of its id); an id
    that is not in the index raises InputError naming it, and nothing is deleted."""
    directory = Path(directory).absolute()
    read_manifest(directory)
    wanted = list(dict.fromkeys(doc_ids))
    with _transaction(directory, verify) as tx:
        by_shard: dict[int, list[str]] = {}
        for doc_id in wanted:
            by_shard.setdefault(route(doc_id, tx.num_shards), []).append(doc_id)
        unknown = []
        for position, ids in by_shard.items():
            located = segments.locate(tx.parts(position), ids)
            unknown += [doc_id for doc_id in ids if doc_id not in located]
        if unknown:
            unknown.sort(key=wanted.index)
            shown = ", ".join(repr(u) for u in unknown[:10]) + (f" and {len(unknown) - 10} more" if len(unknown) > 10 else "")
            raise InputError(f"no such document{'s' if len(unknown) > 1 else ''} in the index: {shown}; "
                             f"nothing was deleted", directory)
        changed = {position: segments.with_deleted(tx.parts(position), ids)[0] for position, ids in by_shard.items()}
        if changed:
            tx.commit(changed, move_stores=False)
    documents, segs = _after(read_manifest(directory))
    return Change(deleted=len(wanted), documents=documents, segments=segs)


def optimize(directory: str | Path, *, verify: bool = True) -> Change:
    """Merge every shard's segments into one, dropping deleted documents (the statistics do not change:
    the same documents are live). Shards that are one segment without deletions are left as they are.
    The segments are verified before they are rewritten whatever ``verify`` says; the merges are
    written in a scratch folder inside ``directory``."""
    directory = Path(directory).absolute()
    read_manifest(directory)
    merged = purged = 0
    with _transaction(directory, verify) as tx:
        scratch = Scratch(directory)
        storage.checkpoint("scratch made")
        try:
            changed = {}
            for position in range(tx.num_shards):
                parts = tx.parts(position)
                deleted = sum(int(p.deleted.shape[0]) for p in parts)
                if len(parts) <= 1 and not deleted:
                    continue
                merged += len(parts)
                purged += deleted
                folder = scratch.path / str(position)
                with storage.writing(folder):
                    folder.mkdir()
                live = sum(p.num_live for p in parts)
                changed[position] = [segments.merged_part(parts, folder)] if live else []
            if changed:
                tx.commit(changed, move_stores=True, same_documents=True)
        finally:
            scratch.cleanup()
    documents, segs = _after(read_manifest(directory))
    return Change(merged=merged, purged=purged, documents=documents, segments=segs)
