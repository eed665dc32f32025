"""A sharded index's manifest and statistics: ``shards.json`` read, checked and committed, the routing of
ids to shards, the global term counts (:class:`TermCounts`) written to and read from ``stats-<hex>/``,
and settling what a killed writer left (see the package's docstring)."""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from .. import segments, storage
from ..errors import IndexFormatError, ParameterError
from ..files import check_folder, write_file
from ..retrieval import CollectionStatistics
from ..segments import Part
from ..selection import code_point_order


MANIFEST = storage.SHARDED_MANIFEST  # "shards.json"
FORMAT_NAME = storage.SHARDED_FORMAT_NAME
FORMAT_VERSION = 3  # 3: shards of index format 3 (postings in blocks); 2: the checksum over itself, the journal
READABLE_VERSIONS = (2, 3)  # a sharded index of version 2 (its shards of index format 2) is read as it is
ROUTING = "blake2b-64 of the UTF-8 id, modulo the shard count"
TERMS_FILE, DF_FILE = "terms.txt", "df.npy"
STATS_FILES = frozenset([TERMS_FILE, DF_FILE])
SHARD_NAME = re.compile(r"shard-[0-9a-f]{1,32}")
STATS_NAME = re.compile(r"stats-[0-9a-f]{1,32}")


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
        distinct, inverse = distinct_terms(terms)
        df = np.zeros(len(distinct), dtype=np.int64)
        np.add.at(df, inverse, np.concatenate([s * np.asarray(item.df, dtype=np.int64) for s, item in zip(signs, items)]))
        if documents < 0 or (df < 0).any():
            raise IndexFormatError("the sharded index's statistics disagree with its shards; rebuild the index")
        keep = np.flatnonzero(df)
        return cls(documents, total_length, [distinct[i] for i in keep.tolist()], df[keep])

    def statistics(self) -> CollectionStatistics:
        return CollectionStatistics(self.documents, self.total_length, self.terms, self.df)


def distinct_terms(terms: list[str]) -> tuple[list[str], np.ndarray]:
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
    tmp = fresh(directory, name)
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


def fresh(directory: Path, name: str) -> Path:
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
    if version not in READABLE_VERSIONS or not integer(version):
        newer = integer(version) and version > FORMAT_VERSION
        hint = "upgrade bm25lab to read it" if newer else "rebuild it with this version of bm25lab"
        raise IndexFormatError(f"{path}: sharded index format version {version!r}, this bm25lab reads versions "
                               f"{READABLE_VERSIONS[0]} to {FORMAT_VERSION}; {hint}")
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
    if not (isinstance(stats, dict) and isinstance(stats.get("name"), str) and STATS_NAME.fullmatch(stats["name"])
            and all(integer(stats.get(k)) for k in ("documents", "total_length", "terms", "postings"))
            and isinstance(stats.get("files"), dict) and set(stats["files"]) == STATS_FILES
            and all(storage.is_file_record(v) for v in stats["files"].values())):
        raise bad("a malformed statistics record")
    shards = manifest.get("shards")
    if not isinstance(shards, list) or not shards:
        raise bad("no shard list")
    for position, entry in enumerate(shards):
        if not (isinstance(entry, dict) and isinstance(entry.get("name"), str) and SHARD_NAME.fullmatch(entry["name"])
                and isinstance(entry.get("manifest"), dict)):
            raise bad(f"shard {position} without a valid name or manifest")
        copy = entry["manifest"]
        storage.parse_manifest(directory / entry["name"], json.dumps(copy).encode("utf-8"))
        if copy.get(segments.SHARD_KEY) != {"position": position, "shards": len(shards)}:
            raise bad(f"shard {position}'s manifest does not say it is shard {position} of {len(shards)}")
        if config_key(copy["tokenizer"]) != config_key(manifest["tokenizer"]):
            raise bad(f"shard {position}'s tokenizer is not the index's")
    totals = [sum(entry["manifest"]["counts"][key] for entry in shards) for key in ("documents", "total_length",
                                                                                    "postings")]
    if totals != [stats["documents"], stats["total_length"], stats["postings"]]:
        raise bad("the statistics' counts are not the sum of the shards'")
    return manifest


def referenced(manifest: Mapping[str, Any]) -> set[str]:
    return {entry["name"] for entry in manifest["shards"]} | {manifest["statistics"]["name"]}


def sealed(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """``manifest`` with its checksum (as written to disk), as plain JSON data."""
    body = {key: value for key, value in manifest.items() if key != "checksum"}
    return json.loads(json.dumps(dict(body, checksum=storage.manifest_checksum(body)), ensure_ascii=False))


def sync_shards(directory: Path, manifest: Mapping[str, Any]) -> None:
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
    shard (:func:`sync_shards`). Without a readable ``shards.json`` no shard is touched. The caller
    holds the writer's lock."""
    storage.settle(directory)
    try:
        manifest = read_manifest(directory)
    except IndexFormatError:
        return
    sync_shards(directory, manifest)


def settle_after_failure(directory: Path) -> None:
    """:func:`settle` after a failed change (a full disk: the next writer finishes what this cannot)."""
    try:
        settle(directory)
    except (OSError, IndexFormatError):
        pass


def commit(directory: Path, manifest: dict[str, Any]) -> None:
    """Atomically replace ``shards.json`` by ``manifest`` with its checksum (the commit: the names it
    drops are journaled first), then update the shards' ``index.json`` and remove what no manifest
    names. The caller holds the writer's lock."""
    body = sealed(manifest)
    storage.commit_json(directory, MANIFEST, body, referenced(body))
    sync_shards(directory, body)
    storage.settle(directory)


@dataclass(frozen=True)
class ShardRecord:
    """A shard written by :func:`assemble_shard`: its folder's name, its manifest and its counts."""

    name: str
    manifest: dict[str, Any]
    counts: TermCounts | None  # None once handed to the commit, which needs only the name and manifest


def config_key(config: Any) -> str:
    """A tokenizer configuration as canonical JSON: equal configurations, equal keys."""
    return json.dumps(config, sort_keys=True, ensure_ascii=False)


def new_manifest(tokenizer_config: dict[str, Any], shards: Sequence["ShardRecord"], stats: dict[str, Any],
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
