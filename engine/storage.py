"""Index directories on disk: a versioned manifest beside segment folders of ``.npy`` arrays.

Layout of an index directory::

    index.json            manifest: format, format_version, tokenizer config, counts, segments
    seg-<hex>/            one segment: offsets.npy doc_nums.npy tfs.npy doc_lengths.npy id_rank.npy
                          terms.txt (one term a line) doc_ids.json docs.sqlite
    del-<hex>.npy         the deleted document numbers of one segment (sorted int32), if any
    .writer.lock          the writers' lock (:mod:`bm25lab.engine.locking`)

``index.json`` lists every segment, in order, with every file's size and SHA-256, and, for a segment
with deletions, its ``deleted`` file (``{"file", "count", "bytes", "sha256"}``). Files that a manifest
names are never modified: a change writes new segment folders (under temporary names, then renamed)
and new deletion files, and is then committed by atomically replacing ``index.json`` (write a
temporary file, fsync, rename, fsync the directory). A reader therefore sees the old index or the new
one, never a mixture, and a writer killed at any moment leaves the old one; the next commit removes
what the manifest no longer names. Arrays load with memory mapping and never with pickle.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .errors import IndexFormatError
from .postings import Postings

FORMAT_NAME = "bm25lab-index"
FORMAT_VERSION = 1
MANIFEST = "index.json"
SHARDED_MANIFEST = "shards.json"  # the manifest of a sharded index instead (bm25lab.engine.shards)
ARRAYS = ("offsets", "doc_nums", "tfs", "doc_lengths", "id_rank")
_DTYPES = {"offsets": np.dtype(np.int64), "doc_nums": np.dtype(np.int32), "tfs": np.dtype(np.int32),
           "doc_lengths": np.dtype(np.int32), "id_rank": np.dtype(np.int32)}
TERMS_FILE = "terms.txt"
IDS_FILE = "doc_ids.json"
STORE_FILE = "docs.sqlite"
SEGMENT_FILES = frozenset([f"{key}.npy" for key in ARRAYS] + [TERMS_FILE, IDS_FILE, STORE_FILE])
_SEGMENT_NAME = re.compile(r"seg-[0-9a-f]{1,32}")
_DELETIONS_NAME = re.compile(r"del-[0-9a-f]{1,32}\.npy")


@dataclass(frozen=True)
class Segment:
    """A loaded segment: postings, external ids, their tie-break ranks, and its store file."""

    postings: Postings
    doc_ids: list[str]
    id_rank: np.ndarray
    store_path: Path | None  # None for a merged in-memory view of several segments


def size_on_disk(directory: Path) -> int:
    """Bytes of every file under ``directory``."""
    return sum(p.stat().st_size for p in Path(directory).rglob("*") if p.is_file())


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def fsync_path(path: Path) -> None:
    """fsync a file or a directory."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def unique_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:16]}"


def write_segment(directory: Path, postings: Postings, doc_ids: list[str], id_rank: np.ndarray,
                  store_file: Path, move_store: bool = False) -> dict[str, Any]:
    """Write one segment into a new folder inside ``directory``; returns its manifest entry.

    ``move_store`` moves ``store_file`` into the segment instead of copying it (a temporary store).
    """
    name = unique_name("seg")
    tmp = directory / f".tmp-{name}"
    tmp.mkdir()
    arrays = {"offsets": postings.offsets, "doc_nums": postings.doc_nums, "tfs": postings.tfs,
              "doc_lengths": postings.doc_lengths, "id_rank": id_rank}
    for key, arr in arrays.items():
        np.save(tmp / f"{key}.npy", np.ascontiguousarray(arr), allow_pickle=False)
    terms = list(postings.terms)
    if any("\n" in t for t in terms):
        raise ValueError("a term contains a newline; the tokenizer must never produce one")
    (tmp / TERMS_FILE).write_text("\n".join(terms), encoding="utf-8")
    (tmp / IDS_FILE).write_text(json.dumps(doc_ids, ensure_ascii=False), encoding="utf-8")
    if move_store:
        shutil.move(str(store_file), tmp / STORE_FILE)
    else:
        shutil.copyfile(store_file, tmp / STORE_FILE)
    files = {}
    for path in sorted(tmp.iterdir()):
        fsync_path(path)
        files[path.name] = {"bytes": path.stat().st_size, "sha256": sha256_file(path)}
    fsync_path(tmp)
    tmp.rename(directory / name)
    return {"name": name, "documents": postings.num_docs, "files": files}


def write_deletions(directory: Path, deleted: np.ndarray) -> dict[str, Any]:
    """Write a segment's deleted document numbers to a new ``del-<hex>.npy``; returns its manifest
    record. The file is named by no manifest until the caller commits one."""
    name = f"{unique_name('del')}.npy"
    path = directory / name
    with open(path, "wb") as fh:
        np.save(fh, np.ascontiguousarray(deleted, dtype=np.int32), allow_pickle=False)
        fh.flush()
        os.fsync(fh.fileno())
    return {"file": name, "count": int(deleted.shape[0]), "bytes": path.stat().st_size, "sha256": sha256_file(path)}


def write_manifest(directory: Path, manifest: dict[str, Any]) -> None:
    """Atomically replace ``index.json`` and remove the files it no longer names.

    Only a writer holding the lock (:mod:`bm25lab.engine.locking`) may call this."""
    write_json_atomically(directory, MANIFEST, manifest)
    remove_unreferenced(directory, referenced_names(manifest))


def write_json_atomically(directory: Path, name: str, data: Any) -> None:
    """Replace ``directory/name`` by ``data`` as JSON, atomically: a temporary file ``.name.<pid>.tmp``,
    fsync, rename, fsync the directory."""
    tmp = directory / f".{name}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, ensure_ascii=False, indent=1)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, directory / name)
    fsync_path(directory)


def referenced_names(manifest: dict[str, Any]) -> set[str]:
    """Names of the segment folders and deletion files that ``manifest`` refers to."""
    names = set()
    for entry in manifest["segments"]:
        names.add(entry["name"])
        if entry.get("deleted"):
            names.add(entry["deleted"]["file"])
    return names


def _is_leftover(name: str) -> bool:
    """Whether ``name`` is something a writer creates: a segment, a deletion file or a temporary."""
    return (name.startswith(("seg-", "del-", ".tmp-seg-"))
            or (name.startswith(f".{MANIFEST}.") and name.endswith(".tmp")))


def remove_unreferenced(directory: Path, keep: set[str]) -> None:
    """Delete the segment folders, deletion files and temporary leftovers not named in ``keep``
    (leftovers of an earlier writer that was killed, or what a commit made obsolete)."""
    for path in directory.iterdir():
        if path.name in keep or not _is_leftover(path.name):
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                path.unlink()
            except OSError:
                pass


def read_manifest_bytes(directory: Path) -> bytes:
    """The raw bytes of ``directory``'s manifest (IndexFormatError when there is none)."""
    path = directory / MANIFEST
    if not directory.is_dir():
        raise IndexFormatError(f"{directory}: no such index directory")
    if not path.is_file():
        if (directory / SHARDED_MANIFEST).is_file():
            raise IndexFormatError(f"{directory}: a sharded index, which this takes only as a whole "
                                   f"(bm25lab.engine.shards.ShardedIndex), not as one index")
        raise IndexFormatError(f"{directory}: not a bm25lab index (no {MANIFEST}); build one with `bm25lab index`")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise IndexFormatError(f"{path}: unreadable manifest ({exc.strerror or exc})") from None


def read_manifest(directory: Path) -> dict[str, Any]:
    """The manifest of ``directory``, checked for format and version."""
    return parse_manifest(directory, read_manifest_bytes(directory))


def parse_manifest(directory: Path, raw: bytes) -> dict[str, Any]:
    """Parse and check manifest bytes: format name, version, and the shape of the segment list."""
    path = directory / MANIFEST
    try:
        manifest = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise IndexFormatError(f"{path}: unreadable manifest ({reason}); rebuild the index") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        raise IndexFormatError(f"{path}: not a bm25lab index manifest; rebuild the index")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        newer = isinstance(version, int) and version > FORMAT_VERSION
        hint = "upgrade bm25lab to read it" if newer else "rebuild it with this version of bm25lab"
        raise IndexFormatError(f"{path}: index format version {version!r}, this bm25lab reads version "
                               f"{FORMAT_VERSION}; {hint}")
    _check_entries(path, manifest.get("segments"))
    if not isinstance(manifest.get("tokenizer"), dict):
        raise IndexFormatError(f"{path}: bad manifest (no tokenizer configuration); rebuild the index")
    return manifest


def _check_entries(path: Path, entries: Any) -> None:
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
        if not isinstance(files, dict) or set(files) != SEGMENT_FILES or not all(_file_record(v) for v in files.values()):
            raise bad(f"segment {entry['name']} lists other files than {', '.join(sorted(SEGMENT_FILES))}")
        if not isinstance(entry.get("documents"), int) or isinstance(entry["documents"], bool):
            raise bad(f"segment {entry['name']} without a document count")
        deleted = entry.get("deleted")
        if deleted is not None and not (isinstance(deleted, dict) and _file_record(deleted)
                                        and isinstance(deleted.get("file"), str)
                                        and _DELETIONS_NAME.fullmatch(deleted["file"])
                                        and isinstance(deleted.get("count"), int)):
            raise bad(f"segment {entry['name']} has a malformed deletions record")


def _file_record(info: Any) -> bool:
    return (isinstance(info, dict) and isinstance(info.get("bytes"), int) and not isinstance(info["bytes"], bool)
            and isinstance(info.get("sha256"), str))


def _check_file(path: Path, info: dict[str, Any], verify: bool) -> None:
    if not path.is_file():
        raise IndexFormatError(f"{path}: missing index file; rebuild the index")
    if path.stat().st_size != info["bytes"]:
        raise IndexFormatError(f"{path}: size differs from the manifest (file damaged); rebuild the index")
    if verify and sha256_file(path) != info["sha256"]:
        raise IndexFormatError(f"{path}: checksum mismatch (file damaged); rebuild the index")


def load_deletions(directory: Path, entry: dict[str, Any], verify: bool = True) -> np.ndarray:
    """The sorted deleted document numbers of a segment entry (empty without deletions)."""
    record = entry.get("deleted")
    if not record:
        return np.zeros(0, dtype=np.int32)
    path = directory / record["file"]
    _check_file(path, record, verify)
    try:
        deleted = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise IndexFormatError(f"{path}: unreadable deletions ({exc}); rebuild the index") from None
    ok = (deleted.ndim == 1 and deleted.dtype == np.int32 and deleted.shape[0] == record["count"]
          and (deleted.shape[0] == 0 or (int(deleted[0]) >= 0 and int(deleted[-1]) < entry["documents"]
                                         and bool(np.all(deleted[1:] > deleted[:-1])))))
    if not ok:
        raise IndexFormatError(f"{path}: deletions disagree with the manifest; rebuild the index")
    return deleted


def load_segment(directory: Path, entry: dict[str, Any], verify: bool = True, mmap: bool = True) -> Segment:
    """Load one segment named by the manifest, checking sizes and (``verify``) checksums."""
    folder = directory / entry["name"]
    for name, info in entry["files"].items():
        _check_file(folder / name, info, verify)
    try:
        arrays = {key: np.load(folder / f"{key}.npy", mmap_mode="r" if mmap else None, allow_pickle=False)
                  for key in ARRAYS}
        raw_terms = (folder / TERMS_FILE).read_text(encoding="utf-8")
        doc_ids = json.loads((folder / IDS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise IndexFormatError(f"{folder}: unreadable segment ({exc}); rebuild the index") from None
    if not isinstance(doc_ids, list) or not all(isinstance(i, str) for i in doc_ids):
        raise IndexFormatError(f"{folder / IDS_FILE}: not a list of document ids; rebuild the index")
    if not all(a.ndim == 1 and a.dtype == _DTYPES[k] for k, a in arrays.items()):
        raise IndexFormatError(f"{folder}: arrays of unexpected shape or type; rebuild the index")
    terms = raw_terms.split("\n") if raw_terms else []
    postings = Postings(terms, arrays["offsets"], arrays["doc_nums"], arrays["tfs"], arrays["doc_lengths"])
    if (len(terms) + 1 != postings.offsets.shape[0] or len(doc_ids) != postings.num_docs
            or postings.tfs.shape != postings.doc_nums.shape or arrays["id_rank"].shape[0] != len(doc_ids)):
        raise IndexFormatError(f"{folder}: arrays disagree with each other; rebuild the index")
    if len(doc_ids) != entry["documents"]:
        raise IndexFormatError(f"{folder}: {len(doc_ids)} documents, the manifest says {entry['documents']}; "
                               f"rebuild the index")
    return Segment(postings, doc_ids, arrays["id_rank"], folder / STORE_FILE)
