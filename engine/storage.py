"""Index directories on disk: a versioned manifest beside segment folders of ``.npy`` arrays.

Layout of an index directory::

    index.json            manifest: format, format_version, tokenizer config, counts, segments, checksum
    seg-<hex>/            one segment: offsets.npy doc_lengths.npy id_rank.npy, the postings in blocks
                          (last_docs.npy positions.npy blocks.npy bound_codes.npy bound_pairs.npy) and
                          their (tf, length) pairs (pairs.npy), terms.txt (one term a line)
                          doc_ids.json docs.sqlite; an index built with fields (BM25F) also
                          field_lengths.npy (fields x documents) and field_tfs.npy (fields x postings),
                          its entry naming the fields
    del-<hex>.npy         the deleted document numbers of one segment (sorted int32), if any
    .writer.lock          the writers' lock (:mod:`bm25lab.engine.locking`)
    .writer.journal       the names a writer is about to create or make obsolete (see below)

``index.json`` lists every segment, in order, with every file's size and SHA-256, and, for a segment
with deletions, its ``deleted`` file (``{"file", "count", "bytes", "sha256"}``). Its ``checksum`` is
the SHA-256 of the rest of the manifest (canonical JSON: sorted keys, no spaces), so that an edit of
the manifest itself, such as the tokenizer's settings, is detected like damage to any other file.
An index built with fields (BM25F) names them in the manifest (``fields``) and in every segment's
entry, whose files then include the two field arrays: the checksum and the files' records cover
them like the rest (a manifest without ``fields`` is an index without fields).

Format version 3 stores the postings compressed in blocks of 128 (:mod:`bm25lab.engine.codec`: each
block's document gaps and frequencies bit-packed, its last document, the code of its bound pair):
about 1.7 bytes a posting on disk, where version 2 stored a document number and a frequency, 8 bytes,
plus a 2-byte pair code. ``pairs.npy`` (int64, 2 x pairs: their tf, their length) holds the postings'
distinct (tf, document length) pairs (:class:`~bm25lab.engine.retrieval.PostingPairs`), so that a
loaded index's first batch need not find them over every posting. An index of version 2 (plain
``doc_nums.npy`` and ``tfs.npy``, and since 0.2.1 ``pair_codes.npy`` and ``pairs.npy``) is read and
searched as it is (its blocks are encoded in memory when it is first searched); a change to it writes
its new segments in blocks and the manifest at version 3.

Files that a manifest names are never modified: a change writes new segment folders (under
temporary names, then renamed) and new deletion files, and is then committed by atomically
replacing ``index.json`` (write a temporary file, fsync, rename, fsync the directory). A reader
therefore sees the old index or the new one, never a mixture, and a writer killed at any moment
leaves the old one.

What may be removed, and when: only files that a manifest of the index names, and files that a
writer recorded in ``.writer.journal`` (fsynced) *before* creating them. A commit first records in
the journal the names the new manifest drops; after the new manifest is in place, and at the start
of every later change (which finishes what a killed writer left), every journal name that the
manifest on disk does not name is removed and the journal emptied (:func:`settle`). Anything else
in the folder, whatever its name, is never touched. Temporary files of the work before a commit
live in scratch folders (:mod:`bm25lab.engine.scratch`).

A sharded index's folder (:mod:`bm25lab.engine.shards`) follows the same rules with ``shards.json``
as its manifest: its journal names shard and statistics folders, :func:`named_files` reads either
manifest, and :func:`commit_json` is the one atomic commit of both; each shard is an index folder.

Readers take no lock (:func:`load_segment`): they open every file a manifest names before reading
any, so that a writer that removes them afterwards takes nothing from under them (an open file
lives on until it is closed, a memory map until it is unmapped); a file already gone when it is
opened is :class:`MissingFile`, and the reader reads the manifest again. Arrays are memory-mapped
from those open files, never loaded with pickle.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import stat
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from .errors import IndexFormatError, InputError
from .files import create_file, open_file, read_file, write_file
from .locking import LOCK_FILE
from .postings import Fields, Postings, TermList
from .scratch import held, is_scratch_name, remove_abandoned

if TYPE_CHECKING:
    from .retrieval import PostingPairs

FORMAT_NAME = "bm25lab-index"
FORMAT_VERSION = 3  # 3: postings in compressed blocks; 2: the manifest's checksum, the writer's journal
READABLE_VERSIONS = (2, 3)
MANIFEST = "index.json"
MANIFEST_TMP = f".{MANIFEST}.tmp"
JOURNAL = ".writer.journal"
# a sharded index's folder holds this manifest instead (bm25lab.engine.shards); its format name here so
# that whoever settles or checks a folder knows what its manifest names
SHARDED_MANIFEST = "shards.json"
SHARDED_MANIFEST_TMP = f".{SHARDED_MANIFEST}.tmp"
SHARDED_FORMAT_NAME = "bm25lab-sharded-index"
ARRAYS = ("offsets", "doc_lengths", "id_rank")  # every segment's
PLAIN_ARRAYS = ("doc_nums", "tfs")  # version 2's postings
BLOCK_ARRAYS = ("last_docs", "positions", "blocks", "bound_codes", "bound_pairs", "pairs")  # version 3's
_DTYPES = {"offsets": np.dtype(np.int64), "doc_nums": np.dtype(np.int32), "tfs": np.dtype(np.int32),
           "doc_lengths": np.dtype(np.int32), "id_rank": np.dtype(np.int32), "last_docs": np.dtype(np.int32),
           "positions": np.dtype(np.int64), "blocks": np.dtype(np.uint8)}
TERMS_FILE = "terms.txt"
IDS_FILE = "doc_ids.json"
STORE_FILE = "docs.sqlite"
_COMMON_FILES = frozenset([f"{key}.npy" for key in ARRAYS] + [TERMS_FILE, IDS_FILE, STORE_FILE])
PLAIN_FILES = _COMMON_FILES | {f"{key}.npy" for key in PLAIN_ARRAYS}  # a version 2 segment
SEGMENT_FILES = _COMMON_FILES | {f"{key}.npy" for key in BLOCK_ARRAYS}  # a segment written now
FIELD_ARRAYS = ("field_lengths", "field_tfs")  # 2-D int32: fields x documents, fields x postings
FIELD_FILES = frozenset(f"{key}.npy" for key in FIELD_ARRAYS)
PAIR_CODES_FILE, PAIRS_FILE = "pair_codes.npy", "pairs.npy"
PAIR_FILES = frozenset([PAIR_CODES_FILE, PAIRS_FILE])  # a version 2 segment's, since 0.2.1
_CODE_DTYPES = (np.dtype(np.uint16), np.dtype(np.uint32))
_SEGMENT_NAME = re.compile(r"seg-[0-9a-f]{1,32}")
_DELETIONS_NAME = re.compile(r"del-[0-9a-f]{1,32}\.npy")
# what a journal may name: segments, their temporary folders, deletion files, the manifest's temporary file;
# in a sharded index's folder, shard and statistics folders, their temporary folders, its manifest's temporary file
_JOURNALED = re.compile(r"(?:\.tmp-)?(?:seg|shard|stats)-[0-9a-f]{1,32}|del-[0-9a-f]{1,32}\.npy|"
                        + re.escape(MANIFEST_TMP) + "|" + re.escape(SHARDED_MANIFEST_TMP))
_OWN_FILES = frozenset([MANIFEST, LOCK_FILE, JOURNAL])
COUNTS = ("documents", "terms", "postings", "total_length")  # the manifest's counts of the live documents


class MissingFile(IndexFormatError):
    """A file the manifest names is not there: damage, or a writer that committed since the manifest
    was read and removed it (a reader then reads the manifest again: :meth:`Index.load`)."""


@dataclass(frozen=True)
class Segment:
    """A loaded segment: postings, external ids, their tie-break ranks, its store file, for an index
    built with fields its :class:`Fields`, and its postings' pairs when they were written with it."""

    postings: Postings
    doc_ids: list[str]
    id_rank: np.ndarray
    store_path: Path | None  # None for a merged in-memory view of several segments
    fields: Fields | None = None
    pairs: PostingPairs | None = None  # as written with the segment, if it was


def checkpoint(step: str) -> None:
    """A moment of a change at which a writer may be killed (it does nothing). The crash test
    (tests/engine/test_crash.py) replaces it in a forked writer to kill that writer at each one in
    turn, so that every step of every kind of change is interrupted once, whatever the machine's speed."""


# ---------------------------------------------------------------------------------------------
# Files


def sha256_file(path: Path) -> str:
    fd = open_file(path)
    try:
        return _sha256_fd(fd)
    finally:
        os.close(fd)


_HASH_BLOCK = 1 << 18


def _sha256_fd(fd: int) -> str:
    """SHA-256 of an open file's bytes, read (without moving its offset) into one reused buffer of
    :data:`_HASH_BLOCK` bytes: a new bytes object a block, in each hashing thread, would leave its
    memory to that thread's malloc arena (16 MiB of a 150k-document index's load, measured)."""
    digest = hashlib.sha256()
    buffer = bytearray(_HASH_BLOCK)
    view = memoryview(buffer)
    offset = 0
    while count := os.preadv(fd, [buffer], offset):
        digest.update(view[:count])
        offset += count
    return digest.hexdigest()


def fsync_path(path: Path) -> None:
    """fsync a file or a directory (of bm25lab's own making: a FIFO would not wait for a writer)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def unique_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:16]}"


@contextmanager
def writing(path: Path) -> Iterator[None]:
    """Name ``path`` in an OSError raised while it is written (a full disk, a file size limit) that
    names no file of its own."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None:
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None


def remove_path(path: Path) -> None:
    """Remove a file or a folder tree (not following a symbolic link); gone already is fine."""
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    except FileNotFoundError:
        pass


# ---------------------------------------------------------------------------------------------
# The journal: what a writer may leave behind


class Journal:
    """``.writer.journal``: one name a line, each written (and fsynced) before the writer creates
    it or commits a manifest without it. Only complete lines count: a name whose line a killed
    writer did not finish was never acted on. Used by the holder of the writer's lock only."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / JOURNAL

    def names(self) -> list[str]:
        try:
            raw = read_file(self.path)
        except FileNotFoundError:
            return []
        lines = raw.split(b"\n")[:-1]
        return [name for name in (line.decode("utf-8", "replace") for line in lines) if _JOURNALED.fullmatch(name)]

    def add(self, *names: str) -> None:
        if not names:
            return
        assert all(_JOURNALED.fullmatch(name) for name in names), names
        self._write(names, new=not self.path.exists(), truncate=False)
        checkpoint("journaled")

    def keep_only(self, names: list[str]) -> None:
        """Rewrite the journal to hold ``names`` (empty: truncate it)."""
        self._write(names, truncate=True)

    def _write(self, names: Iterable[str], new: bool = False, truncate: bool = False) -> None:
        """Write ``names`` a line each to the journal, appended or (``truncate``) replacing what it holds,
        synced, and its folder too when the journal is ``new``. A journal that is not a regular file (a
        link, a FIFO) is refused (:func:`bm25lab.engine.files.open_file`)."""
        with writing(self.path):
            fd = open_file(self.path, os.O_WRONLY | os.O_CREAT | (0 if truncate else os.O_APPEND))
            try:
                if truncate:
                    os.ftruncate(fd, 0)
                os.write(fd, "".join(f"{name}\n" for name in names).encode("utf-8"))
                os.fsync(fd)
            finally:
                os.close(fd)
            if new:
                fsync_path(self.directory)


def settle(directory: Path) -> None:
    """Remove every name of the journal that the manifest on disk does not name, then empty the
    journal: what a commit made obsolete, or what a failed or killed writer left. Without a
    readable manifest of an index the journal's names are kept (none of them is removed) unless
    there is no manifest at all (a first build that never committed). Scratch folders that no live
    process holds go too (:func:`bm25lab.engine.scratch.remove_abandoned`). The caller holds the lock."""
    remove_abandoned(directory)
    journal = Journal(directory)
    pending = journal.names()
    if not pending:
        return
    keep = named_files(directory)
    if keep is None:
        return
    left = []
    for name in dict.fromkeys(pending):
        if name in keep:
            continue
        try:
            remove_path(directory / name)
        except OSError:
            left.append(name)  # tried again by the next writer
        checkpoint("removed")
    journal.keep_only(left)


def named_files(directory: Path) -> set[str] | None:
    """What ``directory``'s manifest names: the segment folders and deletion files of ``index.json``,
    the shard and statistics folders of a sharded index's ``shards.json``; empty without a manifest,
    None when there is one that cannot be read as a bm25lab manifest (damaged or someone else's).
    Lenient about everything else (any format version, no checksum)."""
    names: set[str] = set()
    for name, reader in ((MANIFEST, _index_names), (SHARDED_MANIFEST, _sharded_names)):
        try:
            raw = read_file(directory / name)
        except FileNotFoundError:
            continue
        except OSError:
            return None
        try:
            manifest = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            return None
        found = reader(manifest)
        if found is None:
            return None
        names |= found
    return names


def _index_names(manifest: Any) -> set[str] | None:
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        return None
    entries = manifest.get("segments")
    if not isinstance(entries, list):
        return None
    names = set()
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            return None
        names.add(entry["name"])
        deleted = entry.get("deleted")
        if isinstance(deleted, dict) and isinstance(deleted.get("file"), str):
            names.add(deleted["file"])
    return names


def _sharded_names(manifest: Any) -> set[str] | None:
    if not isinstance(manifest, dict) or manifest.get("format") != SHARDED_FORMAT_NAME:
        return None
    entries, stats = manifest.get("shards"), manifest.get("statistics")
    if not isinstance(entries, list) or not isinstance(stats, dict) or not isinstance(stats.get("name"), str):
        return None
    names = {stats["name"]}
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            return None
        names.add(entry["name"])
    return names


def referenced_names(manifest: dict[str, Any]) -> set[str]:
    """Names of the segment folders and deletion files that a (checked) ``manifest`` refers to."""
    names = set()
    for entry in manifest["segments"]:
        names.add(entry["name"])
        if entry.get("deleted"):
            names.add(entry["deleted"]["file"])
    return names


_KINDS = {False: (MANIFEST, "an ordinary index"), True: (SHARDED_MANIFEST, "a sharded index")}


def check_target(directory: Path, overwrite: bool, sharded: bool = False) -> None:
    """Whether an index (``sharded`` or not) may be written into ``directory`` (InputError naming it
    if not): a missing or empty folder, a folder holding only what an unfinished build of bm25lab
    left (its lock, journal, journaled names and scratch folders), or, with ``overwrite``, a bm25lab
    index of the same kind. Never a folder holding anything else, one holding the other kind of
    index, nor one with a manifest that is not bm25lab's."""
    if not directory.exists():
        return
    if not directory.is_dir():
        raise InputError("exists and is not a directory", directory)
    if named_files(directory) is None:
        foreign = MANIFEST if (directory / MANIFEST).exists() and _index_names_of(directory) is None \
            else SHARDED_MANIFEST
        raise InputError("not a bm25lab index manifest; refusing to replace it (choose another folder)",
                         directory / foreign)
    manifest, _ = _KINDS[sharded]
    other, other_kind = _KINDS[not sharded]
    if (directory / other).exists():
        raise InputError(f"holds {other_kind}; {_KINDS[sharded][1]} cannot replace it (choose another folder, "
                         f"or remove it)", directory)
    if (directory / manifest).exists():
        if not overwrite:
            raise InputError("an index exists already; add --overwrite (overwrite=True) to replace it", directory)
        return
    ours = _OWN_FILES | set(Journal(directory).names())
    foreign_names = sorted(name for name in os.listdir(directory)
                           if name not in ours and not (is_scratch_name(name) and held(directory / name) is not None))
    if foreign_names:
        raise InputError(f"the folder is not empty and holds no bm25lab index (it holds {foreign_names[0]!r}"
                         f"{' and more' if len(foreign_names) > 1 else ''}); refusing to write an index into it: "
                         f"choose a new or empty folder", directory)


def _index_names_of(directory: Path) -> set[str] | None:
    try:
        return _index_names(json.loads(read_file(directory / MANIFEST).decode("utf-8")))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None


def size_on_disk(directory: Path) -> int:
    """Bytes of the index in ``directory``: its manifest and the files the manifest names (as
    recorded there: a file a writer is removing meanwhile is still counted as it was)."""
    raw = read_manifest_bytes(directory)
    return len(raw) + recorded_bytes(parse_manifest(directory, raw)["segments"])


def recorded_bytes(entries: list[dict[str, Any]]) -> int:
    """Bytes of the files that manifest ``entries`` name."""
    total = 0
    for entry in entries:
        total += sum(info["bytes"] for info in entry["files"].values())
        if entry.get("deleted"):
            total += entry["deleted"]["bytes"]
    return total


# ---------------------------------------------------------------------------------------------
# Writing


def write_segment(directory: Path, postings: Postings, doc_ids: list[str], id_rank: np.ndarray,
                  store_file: Path, move_store: bool = False, fields: Fields | None = None,
                  pairs: PostingPairs | None = None) -> dict[str, Any]:
    """Write one segment into a new folder inside ``directory``; returns its manifest entry.

    ``move_store`` moves ``store_file`` into the segment instead of copying it (a temporary store).
    ``pairs``: the postings' pairs when they are known already (else they are computed here). The
    postings are written in blocks (:meth:`~bm25lab.engine.postings.Postings.blocks`).
    The caller holds the writer's lock; the folder is journaled before it is made.
    """
    name = unique_name("seg")
    tmp = directory / f".tmp-{name}"
    Journal(directory).add(name, tmp.name)
    with writing(tmp):
        tmp.mkdir()
    checkpoint("segment folder made")
    blocks = postings.blocks()
    pairs = _pairs_of(postings) if pairs is None else pairs
    arrays = {"offsets": postings.offsets, "doc_lengths": postings.doc_lengths, "id_rank": id_rank,
              "last_docs": blocks.last_docs, "positions": blocks.positions, "blocks": blocks.data,
              "bound_codes": blocks.bound_codes, "bound_pairs": blocks.bound_pairs,
              "pairs": np.stack([pairs.tfs, pairs.lengths]).astype(np.int64).reshape(2, -1)}
    if fields is not None:
        arrays.update(field_lengths=fields.lengths, field_tfs=fields.tfs)
    for key, arr in arrays.items():
        save_array(tmp / f"{key}.npy", arr)
    terms = list(postings.terms)
    if any("\n" in t for t in terms):
        raise ValueError("a term contains a newline; the tokenizer must never produce one")
    with writing(tmp / TERMS_FILE):
        write_file(tmp / TERMS_FILE, "\n".join(terms).encode("utf-8"))
    with writing(tmp / IDS_FILE):
        write_file(tmp / IDS_FILE, json.dumps(doc_ids, ensure_ascii=False).encode("utf-8"))
    with writing(tmp / STORE_FILE):
        if move_store:
            shutil.move(str(store_file), tmp / STORE_FILE)
        else:
            _copy_file(store_file, tmp / STORE_FILE)
    checkpoint("segment files written")
    files = {}
    for path in sorted(tmp.iterdir()):
        with writing(path):
            fsync_path(path)
        files[path.name] = {"bytes": path.stat().st_size, "sha256": sha256_file(path)}
    with writing(tmp):
        fsync_path(tmp)
        tmp.rename(directory / name)
    checkpoint("segment renamed")
    entry = {"name": name, "documents": postings.num_docs, "files": files}
    if fields is not None:
        entry["fields"] = list(fields.names)
    return entry


def save_array(path: Path, array: np.ndarray) -> None:
    """Write ``array`` as the new ``.npy`` file ``path`` (:func:`bm25lab.engine.files.create_file`), synced."""
    with writing(path):
        with os.fdopen(create_file(path), "wb") as fh:
            np.save(fh, np.ascontiguousarray(array), allow_pickle=False)
            fh.flush()
            os.fsync(fh.fileno())


def _copy_file(source: Path, target: Path) -> None:
    """Copy the file ``source`` (of bm25lab's making) into the new file ``target``."""
    with open(source, "rb") as src, os.fdopen(create_file(target), "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)


def _pairs_of(postings: Postings) -> PostingPairs:
    """The pairs of ``postings``, numbered by the default backend (the compiled core when built)."""
    from .backends import create
    from .retrieval import posting_pairs

    return posting_pairs(postings, create().pair_coder())


def write_deletions(directory: Path, deleted: np.ndarray) -> dict[str, Any]:
    """Write a segment's deleted document numbers to a new ``del-<hex>.npy``; returns its manifest
    record. The file is journaled before it is made, and named by no manifest until the caller
    commits one."""
    name = f"{unique_name('del')}.npy"
    path = directory / name
    Journal(directory).add(name)
    save_array(path, np.asarray(deleted, dtype=np.int32))
    checkpoint("deletions written")
    return {"file": name, "count": int(deleted.shape[0]), "bytes": path.stat().st_size, "sha256": sha256_file(path)}


def manifest_checksum(manifest: dict[str, Any]) -> str:
    """SHA-256 of the manifest without its ``checksum``, as canonical JSON (sorted keys, no spaces)."""
    body = {key: value for key, value in manifest.items() if key != "checksum"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                                     allow_nan=False).encode("utf-8")).hexdigest()


def write_manifest(directory: Path, manifest: dict[str, Any]) -> None:
    """Atomically replace ``index.json`` by ``manifest`` (its checksum added), then remove what the
    old manifest named and the new one does not, and what the journal holds (:func:`settle`).

    Only a writer holding the lock (:mod:`bm25lab.engine.locking`) may call this."""
    body = dict(manifest, checksum=manifest_checksum(manifest))
    commit_json(directory, MANIFEST, body, referenced_names(body))
    settle(directory)


def commit_json(directory: Path, name: str, body: dict[str, Any], referenced: set[str]) -> None:
    """Atomically replace the manifest ``directory/name`` by ``body`` (which names ``referenced``): the
    names the folder's manifest names now and ``body`` does not, and the temporary file, are journaled
    first; then a temporary file is written, fsynced, renamed over the manifest, and the directory
    fsynced. Nothing is removed (:func:`settle` does that). The caller holds the writer's lock."""
    obsolete = (named_files(directory) or set()) - referenced
    tmp = directory / f".{name}.tmp"
    step = "manifest" if name == MANIFEST else name  # the crash tests tell the two commits apart
    Journal(directory).add(tmp.name, *sorted(obsolete))
    with writing(tmp):
        fd = open_file(tmp, os.O_WRONLY | os.O_CREAT)  # a leftover of a killed writer is rewritten; a link refused
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            os.ftruncate(fd, 0)
            json.dump(body, fh, ensure_ascii=False, indent=1)
            fh.flush()
            os.fsync(fh.fileno())
    checkpoint(f"{step} written")
    with writing(directory / name):
        os.replace(tmp, directory / name)
        checkpoint(f"{step} replaced")
        fsync_path(directory)
    checkpoint("committed" if name == MANIFEST else f"{step} committed")


# ---------------------------------------------------------------------------------------------
# Reading


def manifest_bytes(directory: Path, name: str, missing: Callable[[], str]) -> bytes:
    """The raw bytes of the manifest ``name`` in ``directory``: an IndexFormatError when the folder does
    not exist, ``missing()`` (what the folder is instead) when it holds no such file, or the file
    cannot be read."""
    path = directory / name
    if not directory.is_dir():
        raise IndexFormatError(f"{directory}: no such index directory")
    try:
        return read_file(path)
    except FileNotFoundError:
        raise IndexFormatError(f"{directory}: {missing()}") from None
    except OSError as exc:
        raise IndexFormatError(f"{path}: unreadable manifest ({exc.strerror or exc})") from None


def read_manifest_bytes(directory: Path) -> bytes:
    """The raw bytes of ``directory``'s manifest (IndexFormatError when there is none)."""

    def missing() -> str:
        if (directory / SHARDED_MANIFEST).exists():
            return ("a sharded index, which this takes only as a whole (bm25lab.engine.shards.ShardedIndex), "
                    "not as one index")
        return f"not a bm25lab index (no {MANIFEST}); build one with `bm25lab index`"

    return manifest_bytes(directory, MANIFEST, missing)


def read_manifest(directory: Path) -> dict[str, Any]:
    """The manifest of ``directory``, checked for format, version and checksum."""
    return parse_manifest(directory, read_manifest_bytes(directory))


def parse_manifest(directory: Path, raw: bytes) -> dict[str, Any]:
    """Parse and check manifest bytes: format name, version, checksum, and the shape of the segment list."""
    path = directory / MANIFEST
    try:
        manifest = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise IndexFormatError(f"{path}: unreadable manifest ({reason}); rebuild the index") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        raise IndexFormatError(f"{path}: not a bm25lab index manifest; rebuild the index")
    version = manifest.get("format_version")
    if version not in READABLE_VERSIONS or isinstance(version, bool):
        newer = isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION
        hint = ("upgrade bm25lab to read it" if newer
                else "rebuild it with this version of bm25lab (bm25lab index ... --overwrite)")
        raise IndexFormatError(f"{path}: index format version {version!r}, this bm25lab reads versions "
                               f"{READABLE_VERSIONS[0]} to {FORMAT_VERSION}; {hint}")
    try:
        expected = manifest_checksum(manifest)
    except (TypeError, ValueError, RecursionError):
        expected = None
    if manifest.get("checksum") != expected:
        raise IndexFormatError(f"{path}: manifest checksum mismatch (the manifest was edited or damaged); "
                               f"rebuild the index")
    _check_entries(path, manifest.get("segments"), version)
    _check_fields(path, manifest)
    if not isinstance(manifest.get("tokenizer"), dict):
        raise IndexFormatError(f"{path}: bad manifest (no tokenizer configuration); rebuild the index")
    counts = manifest.get("counts")
    if not (isinstance(counts, dict) and set(counts) == set(COUNTS)
            and all(isinstance(v, int) and not isinstance(v, bool) for v in counts.values())):
        raise IndexFormatError(f"{path}: bad manifest (no counts of {', '.join(COUNTS)}); rebuild the index")
    return manifest


def segment_layouts(version: int, fields: bool) -> list[frozenset[str]]:
    """The file sets a segment entry of a manifest of ``version`` may list: a version 2 segment's
    (with or without its pairs), and in a version 3 manifest also a segment in blocks."""
    extra = FIELD_FILES if fields else frozenset()
    layouts = [PLAIN_FILES | extra, PLAIN_FILES | PAIR_FILES | extra]
    return layouts + [SEGMENT_FILES | extra] if version >= 3 else layouts


def _check_entries(path: Path, entries: Any, version: int) -> None:
    """The segment list must be well formed before any name in it is used as a path."""
    def bad(what: str) -> IndexFormatError:
        return IndexFormatError(f"{path}: bad manifest ({what}); rebuild the index")

    if not isinstance(entries, list):
        raise bad("no segment list")
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) \
                or not _SEGMENT_NAME.fullmatch(entry["name"]):
            raise bad("a segment without a valid name")
        files = entry.get("files")
        names = entry.get("fields")
        if names is not None and not is_field_list(names):
            raise bad(f"segment {entry['name']} has a malformed list of fields")
        layouts = segment_layouts(version, names is not None)
        if not isinstance(files, dict) or set(files) not in layouts or not all(is_file_record(v) for v in files.values()):
            raise bad(f"segment {entry['name']} lists other files than {', '.join(sorted(layouts[-1]))}")
        if not isinstance(entry.get("documents"), int) or isinstance(entry["documents"], bool):
            raise bad(f"segment {entry['name']} without a document count")
        deleted = entry.get("deleted")
        if deleted is not None and not (isinstance(deleted, dict) and is_file_record(deleted)
                                        and isinstance(deleted.get("file"), str)
                                        and _DELETIONS_NAME.fullmatch(deleted["file"])
                                        and isinstance(deleted.get("count"), int)):
            raise bad(f"segment {entry['name']} has a malformed deletions record")


def is_field_list(names: Any) -> bool:
    """A manifest's list of fields: distinct non-empty strings."""
    return (isinstance(names, list) and bool(names) and all(isinstance(n, str) and n for n in names)
            and len(set(names)) == len(names))


def _check_fields(path: Path, manifest: dict[str, Any]) -> None:
    """The manifest's ``fields`` (absent: an index without fields) must be a field list that every
    segment's entry names too."""
    names = manifest.get("fields")
    if names is not None and not is_field_list(names):
        raise IndexFormatError(f"{path}: bad manifest (a malformed list of fields); rebuild the index")
    for entry in manifest["segments"]:
        if entry.get("fields") != names:
            raise IndexFormatError(f"{path}: bad manifest (segment {entry['name']}'s fields "
                                   f"{entry.get('fields')!r}, the index's {names!r}); rebuild the index")


def is_file_record(info: Any) -> bool:
    return (isinstance(info, dict) and isinstance(info.get("bytes"), int) and not isinstance(info["bytes"], bool)
            and isinstance(info.get("sha256"), str))


class Pins:
    """Files of an index opened for reading, by path (a context manager that closes them).

    Opening every file a manifest names before reading any pins them: a writer that removes them
    afterwards (a commit making them obsolete) takes nothing from under the reader. Each is opened as
    :func:`bm25lab.engine.files.open_file` opens the files of an index folder: a regular file, reached
    from ``root`` (the index folder: a sharded index's, for its shards' files) through no link."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root
        self._fds: dict[Path, int] = {}

    def open(self, path: Path) -> int:
        """The open descriptor of ``path`` (opened now if it is not yet)."""
        if path in self._fds:
            return self._fds[path]
        try:
            fd = open_file(path, root=self.root)
        except FileNotFoundError:
            raise MissingFile(f"{path}: missing index file; rebuild the index") from None
        except OSError as exc:
            raise IndexFormatError(f"{path}: unreadable index file ({exc.strerror or exc}); rebuild the index") from None
        self._fds[path] = fd
        return fd

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    def __enter__(self) -> "Pins":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def pin_entry(directory: Path, entry: dict[str, Any], pins: Pins) -> None:
    """Open every file of a segment entry (and its deletions file)."""
    folder = directory / entry["name"]
    for name in entry["files"]:
        pins.open(folder / name)
    if entry.get("deleted"):
        pins.open(directory / entry["deleted"]["file"])


# The SHA-256 of files this process verified, by identity: (device, inode) -> (size, mtime, ctime in ns,
# digest). Index files never change once written, and a write to a file moves its ctime (which nobody can set
# back), so a file whose identity is unchanged holds the bytes it held when it was hashed. The kernel stamps
# times in ticks (milliseconds): a file is remembered only when its last change was well before the hashing
# began (_SETTLED_NS), so that a change in the same tick as the hashing cannot leave its times as they were.
_VERIFIED: dict[tuple[int, int], tuple[int, int, int, str]] = {}
_SETTLED_NS = 2_000_000_000


def _identity(status: os.stat_result) -> tuple[tuple[int, int], tuple[int, int, int]]:
    return (status.st_dev, status.st_ino), (status.st_size, status.st_mtime_ns, status.st_ctime_ns)


def known_digest(fd: int) -> str | None:
    """The SHA-256 of the open file ``fd`` when this process verified it as it is now (else None)."""
    key, state = _identity(os.fstat(fd))
    known = _VERIFIED.get(key)
    return known[3] if known is not None and known[:3] == state else None


def remember_digest(fd: int, digest: str, hashed_from: int) -> None:
    """Record that the open file ``fd``, unchanged since before ``hashed_from`` (``time.time_ns()`` when its
    hashing began), has the SHA-256 ``digest`` (:func:`known_digest`); a file changed shortly before is not
    remembered."""
    status = os.fstat(fd)
    if max(status.st_mtime_ns, status.st_ctime_ns) < hashed_from - _SETTLED_NS:
        key, state = _identity(status)
        _VERIFIED[key] = (*state, digest)


def check_file(path: Path, fd: int, info: dict[str, Any], verify: bool, digest: str | None = None,
               hashed_from: int = 0) -> None:
    """Check an open file against its manifest record: a regular file of the recorded size and, with
    ``verify``, SHA-256 (``digest`` when the caller computed it already; a file this process hashed and
    that has not changed since is not hashed again: :func:`known_digest`)."""
    status = os.fstat(fd)
    if not stat.S_ISREG(status.st_mode):
        raise IndexFormatError(f"{path}: not a file; rebuild the index")
    if status.st_size != info["bytes"]:
        raise IndexFormatError(f"{path}: size differs from the manifest (file damaged); rebuild the index")
    if verify:
        if digest is None:  # else the caller hashed it, from ``hashed_from`` on
            hashed_from = time.time_ns()
        found = digest or known_digest(fd) or _sha256_fd(fd)
        if found != info["sha256"]:
            raise IndexFormatError(f"{path}: checksum mismatch (file damaged); rebuild the index")
        remember_digest(fd, found, hashed_from)


_THREADED_HASHING = 1 << 25
"""Bytes of an index from which its files are hashed in threads (Cranfield's 3 MB: 4 ms of CPU more in threads)."""


def check_files(files: Sequence[tuple[Path, int, dict[str, Any]]], verify: bool) -> None:
    """:func:`check_file` of every ``(path, fd, record)``, in that order (the first damaged file is named,
    as one by one), with their checksums computed beforehand in threads, largest file first: hashlib
    lets go of the interpreter, so on 2 cores a 10^6-document index's 0.9 GB are checked in about half
    the time; a small index's (below :data:`_THREADED_HASHING` bytes) in this thread, where threads cost more
    than they save. Only regular files of the recorded size are hashed (a FIFO would block the read)."""
    digests: dict[int, str] = {}
    hashed_from = time.time_ns()
    if verify:
        due = []
        for i, (_, fd, info) in enumerate(files):
            status = os.fstat(fd)
            if stat.S_ISREG(status.st_mode) and status.st_size == info["bytes"] and known_digest(fd) is None:
                due.append((status.st_size, i, fd))
        due.sort(reverse=True)
        from .tokenization import usable_cores

        threads = min(len(due), usable_cores()) if sum(size for size, _, _ in due) >= _THREADED_HASHING else 1
        if threads > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(threads) as pool:
                digests = dict(zip((i for _, i, _ in due), pool.map(_sha256_fd, (fd for _, _, fd in due))))
    for i, (path, fd, info) in enumerate(files):
        check_file(path, fd, info, verify, digests.get(i), hashed_from)


def verify_entry(directory: Path, entry: dict[str, Any], root: Path | None = None) -> None:
    """Check every file of a segment entry (and its deletions) against its recorded size and SHA-256
    (``root``: the folder holding ``directory``'s index, :class:`Pins`')."""
    with Pins(root or directory) as pins:
        pin_entry(directory, entry, pins)
        folder = directory / entry["name"]
        files = [(folder / name, pins.open(folder / name), info) for name, info in entry["files"].items()]
        if entry.get("deleted"):
            path = directory / entry["deleted"]["file"]
            files.append((path, pins.open(path), entry["deleted"]))
        check_files(files, verify=True)


_NPY_HEADER_LOCK = threading.Lock()
"""numpy parses a ``.npy`` header with :func:`ast.literal_eval`, which CPython 3.11 does not make safe in
several threads at once ("AST constructor recursion depth mismatch", a SystemError, seen in a Dask worker
loading shards with threads): one header at a time."""


def read_array(path: Path, fd: int, dtype: np.dtype | tuple[np.dtype, ...], mmap: bool, ndim: int = 1) -> np.ndarray:
    """An ``ndim``-D ``.npy`` array of ``dtype`` (or of one of several) (C order) from an open file:
    memory-mapped, or read."""
    from numpy.lib import format as npy

    with os.fdopen(os.dup(fd), "rb") as fh:  # a copy of the descriptor: closing it leaves the pin open
        try:
            version = npy.read_magic(fh)
            if version not in ((1, 0), (2, 0)):
                raise ValueError(f"npy format version {version}")
            read_header = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
            with _NPY_HEADER_LOCK:
                shape, fortran, found = read_header(fh)
            offset = fh.tell()
        except Exception as exc:  # numpy's parser of damaged header bytes: ValueError, SyntaxError, TokenError, ...
            raise IndexFormatError(f"{path}: unreadable array ({str(exc).splitlines()[0] if str(exc) else exc!r}); "
                                   f"rebuild the index") from None
        if found not in (dtype if isinstance(dtype, tuple) else (dtype,)) or len(shape) != ndim or (fortran and ndim > 1):
            raise IndexFormatError(f"{path}: array of unexpected shape or type; rebuild the index")
        count = math.prod(int(n) for n in shape)  # exact: a damaged shape's product may exceed any integer type
        if offset + count * found.itemsize != os.fstat(fd).st_size:
            raise IndexFormatError(f"{path}: array size disagrees with its header (file damaged); rebuild the index")
        if mmap:
            return np.memmap(fh, dtype=found, mode="r", offset=offset, shape=shape)
        return np.fromfile(fh, dtype=found, count=count).reshape(shape)


def read_text(path: Path, fd: int) -> str:
    with os.fdopen(os.dup(fd), "rb") as fh:
        try:
            return fh.read().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise IndexFormatError(f"{path}: unreadable ({exc}); rebuild the index") from None


def load_deletions(directory: Path, entry: dict[str, Any], pins: Pins, verify: bool = True) -> np.ndarray:
    """The sorted deleted document numbers of a segment entry (empty without deletions)."""
    record = entry.get("deleted")
    if not record:
        return np.zeros(0, dtype=np.int32)
    path = directory / record["file"]
    fd = pins.open(path)
    check_file(path, fd, record, verify)
    deleted = read_array(path, fd, np.dtype(np.int32), mmap=False)
    ok = (deleted.shape[0] == record["count"]
          and (deleted.shape[0] == 0 or (int(deleted[0]) >= 0 and int(deleted[-1]) < entry["documents"]
                                         and bool(np.all(deleted[1:] > deleted[:-1])))))
    if not ok:
        raise IndexFormatError(f"{path}: deletions disagree with the manifest; rebuild the index")
    return deleted


def load_segment(directory: Path, entry: dict[str, Any], pins: Pins, verify: bool = True,
                 mmap: bool = True) -> Segment:
    """Load one segment named by the manifest from its (pinned) files, checking sizes and
    (``verify``) checksums: in blocks (version 3), or plain arrays (version 2)."""
    folder = directory / entry["name"]
    fds = {name: pins.open(folder / name) for name in entry["files"]}
    check_files([(folder / name, fds[name], info) for name, info in entry["files"].items()], verify)
    arrays = {key: read_array(folder / f"{key}.npy", fds[f"{key}.npy"], _DTYPES[key], mmap) for key in ARRAYS}
    raw_terms = read_text(folder / TERMS_FILE, fds[TERMS_FILE])
    try:
        doc_ids = json.loads(read_text(folder / IDS_FILE, fds[IDS_FILE]))
    except (ValueError, RecursionError) as exc:
        raise IndexFormatError(f"{folder / IDS_FILE}: unreadable ({exc}); rebuild the index") from None
    if not isinstance(doc_ids, list) or not all(isinstance(i, str) for i in doc_ids):
        raise IndexFormatError(f"{folder / IDS_FILE}: not a list of document ids; rebuild the index")
    terms = TermList(raw_terms)
    offsets = arrays["offsets"]
    if (len(terms) + 1 != offsets.shape[0] or len(doc_ids) != arrays["doc_lengths"].shape[0]
            or arrays["id_rank"].shape[0] != len(doc_ids) or offsets[0] != 0):
        raise IndexFormatError(f"{folder}: arrays disagree with each other; rebuild the index")
    if "blocks.npy" in fds:
        postings, pairs = _load_blocks(folder, terms, arrays, fds, mmap)
    else:
        plain = {key: read_array(folder / f"{key}.npy", fds[f"{key}.npy"], _DTYPES[key], mmap) for key in PLAIN_ARRAYS}
        postings = Postings(terms, offsets, plain["doc_nums"], plain["tfs"], arrays["doc_lengths"])
        if postings.tfs.shape != postings.doc_nums.shape or not _offsets_fit(offsets, postings.doc_nums.shape[0]):
            raise IndexFormatError(f"{folder}: arrays disagree with each other; rebuild the index")
        pairs = _load_pairs(folder, postings, fds, mmap) if PAIR_FILES <= set(fds) else None
    if len(doc_ids) != entry["documents"]:
        raise IndexFormatError(f"{folder}: {len(doc_ids)} documents, the manifest says {entry['documents']}; "
                               f"rebuild the index")
    fields = None if entry.get("fields") is None else _load_fields(folder, entry["fields"], postings, fds, mmap)
    return Segment(postings, doc_ids, arrays["id_rank"], folder / STORE_FILE, fields, pairs)


def _load_blocks(folder: Path, terms: TermList, arrays: dict[str, np.ndarray], fds: dict[str, int],
                 mmap: bool) -> tuple[Postings, PostingPairs]:
    """A version 3 segment's postings (in blocks) and pairs, from its pinned files, checked against each
    other as a search relies on them (each block's bytes are checked as they are decoded)."""
    from .codec import PAD, Blocks, code_dtype, term_starts
    from .retrieval import PostingPairs

    read = {key: read_array(folder / f"{key}.npy", fds[f"{key}.npy"], _DTYPES[key], mmap)
            for key in ("last_docs", "positions", "blocks")}
    bound_codes = read_array(folder / "bound_codes.npy", fds["bound_codes.npy"], _CODE_DTYPES, mmap)
    bound_pairs = read_array(folder / "bound_pairs.npy", fds["bound_pairs.npy"], np.dtype(np.int64), mmap=False, ndim=2)
    pairs = read_array(folder / PAIRS_FILE, fds[PAIRS_FILE], np.dtype(np.int64), mmap=False, ndim=2)
    offsets = arrays["offsets"]
    starts = term_starts(offsets) if bool(np.all(np.diff(offsets) >= 0)) else None
    n_blocks = -1 if starts is None else int(starts[-1])
    positions = read["positions"]
    if (starts is None or read["last_docs"].shape[0] != n_blocks or positions.shape[0] != n_blocks + 1
            or positions[0] != 0 or read["blocks"].shape[0] != int(positions[-1]) + PAD
            or bound_codes.shape[0] != n_blocks or bound_pairs.shape[0] != 2
            or bound_codes.dtype != np.dtype(code_dtype(max(bound_pairs.shape[1], 1)))
            or (n_blocks > 0 and int(np.asarray(bound_codes).max()) >= bound_pairs.shape[1])
            or pairs.shape[0] != 2 or (pairs.shape[1] == 0) != (n_blocks == 0)
            or (pairs.shape[1] and (pairs[0].min() < 1 or pairs[1].min() < 0))):
        raise IndexFormatError(f"{folder}: postings blocks disagree with each other; rebuild the index")
    blocks = Blocks(read["last_docs"], positions, read["blocks"], bound_codes, bound_pairs, starts)
    return Postings.of_blocks(terms, offsets, blocks, arrays["doc_lengths"]), PostingPairs(pairs[0], pairs[1])


def _offsets_fit(offsets: np.ndarray, postings: int) -> bool:
    """Whether term offsets start at 0, never decrease and end at the number of postings (one pass over
    the terms, not the postings: what a damaged file must not give a merge or a count)."""
    return (int(offsets[0]) == 0 and int(offsets[-1]) == postings
            and (offsets.shape[0] < 2 or bool((offsets[1:] >= offsets[:-1]).all())))


def _load_pairs(folder: Path, postings: Postings, fds: dict[str, int], mmap: bool) -> PostingPairs:
    """A version 2 segment's pairs (from its pinned files), checked against its postings: a code for
    every posting, in the narrowest type that numbers the pairs, and pairs of a positive tf and a
    length >= 0. The codes themselves are not read (the checksum covers them; version 3 finds a
    posting's pair from its document's length)."""
    from .retrieval import PostingPairs, code_dtype

    codes = read_array(folder / PAIR_CODES_FILE, fds[PAIR_CODES_FILE], _CODE_DTYPES, mmap)
    pairs = read_array(folder / PAIRS_FILE, fds[PAIRS_FILE], np.dtype(np.int64), mmap=False, ndim=2)
    if (codes.shape != postings.doc_nums.shape or pairs.shape[0] != 2
            or codes.dtype != np.dtype(code_dtype(pairs.shape[1])) or (pairs.shape[1] == 0) != (codes.shape[0] == 0)
            or (pairs.shape[1] and (pairs[0].min() < 1 or pairs[1].min() < 0))):
        raise IndexFormatError(f"{folder}: pair arrays disagree with the postings; rebuild the index")
    return PostingPairs(pairs[0], pairs[1])


def _load_fields(folder: Path, names: list[str], postings: Postings, fds: dict[str, int], mmap: bool) -> Fields:
    """A segment's field arrays (from its pinned files), checked against its postings."""
    lengths, tfs = (read_array(folder / f"{key}.npy", fds[f"{key}.npy"], np.dtype(np.int32), mmap, ndim=2)
                    for key in FIELD_ARRAYS)
    if lengths.shape != (len(names), postings.num_docs) or tfs.shape != (len(names), postings.num_postings):
        raise IndexFormatError(f"{folder}: field arrays disagree with the postings; rebuild the index")
    return Fields(tuple(names), lengths, tfs)
