"""Index directories on disk: a versioned manifest beside segment folders of ``.npy`` arrays.

Layout of an index directory::

    index.json            manifest: format, format_version, tokenizer config, counts, segments
    seg-<hex>/            one segment: offsets.npy doc_nums.npy tfs.npy doc_lengths.npy id_rank.npy
                          terms.txt (one term a line) doc_ids.json docs.sqlite

``index.json`` lists every file of every segment with its size and SHA-256. A change is committed by
writing new segment folders under temporary names, renaming them, and then atomically replacing
``index.json`` (write a temporary file, fsync, rename, fsync the directory): a reader sees the old
index or the new one, never a mixture. Arrays load with memory mapping and never with pickle.
"""
from __future__ import annotations

import hashlib
import json
import os
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
ARRAYS = ("offsets", "doc_nums", "tfs", "doc_lengths", "id_rank")
TERMS_FILE = "terms.txt"
IDS_FILE = "doc_ids.json"
STORE_FILE = "docs.sqlite"


@dataclass(frozen=True)
class Segment:
    """A loaded segment: postings, external ids, their tie-break ranks, and its store file."""

    postings: Postings
    doc_ids: list[str]
    id_rank: np.ndarray
    store_path: Path


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_segment(directory: Path, postings: Postings, doc_ids: list[str], id_rank: np.ndarray,
                  store_file: Path) -> dict[str, Any]:
    """Write one segment into a new folder inside ``directory``; returns its manifest entry."""
    name = f"seg-{uuid.uuid4().hex[:16]}"
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
    shutil.copyfile(store_file, tmp / STORE_FILE)
    files = {}
    for path in sorted(tmp.iterdir()):
        _fsync(path)
        files[path.name] = {"bytes": path.stat().st_size, "sha256": sha256_file(path)}
    _fsync(tmp)
    tmp.rename(directory / name)
    return {"name": name, "documents": postings.num_docs, "files": files}


def write_manifest(directory: Path, manifest: dict[str, Any]) -> None:
    """Atomically replace ``index.json`` and remove the folders it no longer names."""
    tmp = directory / f".{MANIFEST}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, ensure_ascii=False, indent=1)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, directory / MANIFEST)
    _fsync(directory)
    remove_unreferenced(directory, {s["name"] for s in manifest["segments"]})


def remove_unreferenced(directory: Path, keep: set[str]) -> None:
    """Delete segment folders and temporary leftovers that the manifest does not name."""
    for path in directory.iterdir():
        if path.name in keep:
            continue
        if path.name.startswith("seg-") or path.name.startswith(".tmp-seg-"):
            shutil.rmtree(path, ignore_errors=True)


def read_manifest(directory: Path) -> dict[str, Any]:
    """The manifest of ``directory``, checked for format and version."""
    path = directory / MANIFEST
    if not directory.is_dir():
        raise IndexFormatError(f"{directory}: no such index directory")
    if not path.is_file():
        raise IndexFormatError(f"{directory}: not a bm25lab index (no {MANIFEST}); build one with `bm25lab index`")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise IndexFormatError(f"{path}: unreadable manifest ({exc}); rebuild the index") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        raise IndexFormatError(f"{path}: not a bm25lab index manifest; rebuild the index")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        newer = isinstance(version, int) and version > FORMAT_VERSION
        hint = "upgrade bm25lab to read it" if newer else "rebuild it with this version of bm25lab"
        raise IndexFormatError(f"{path}: index format version {version!r}, this bm25lab reads version "
                               f"{FORMAT_VERSION}; {hint}")
    return manifest


def load_segment(directory: Path, entry: dict[str, Any], verify: bool = True, mmap: bool = True) -> Segment:
    """Load one segment named by the manifest, checking sizes and (``verify``) checksums."""
    folder = directory / entry["name"]
    files = entry["files"]
    for name, info in files.items():
        path = folder / name
        if not path.is_file():
            raise IndexFormatError(f"{path}: missing index file; rebuild the index")
        if path.stat().st_size != info["bytes"]:
            raise IndexFormatError(f"{path}: size differs from the manifest (file damaged); rebuild the index")
        if verify and sha256_file(path) != info["sha256"]:
            raise IndexFormatError(f"{path}: checksum mismatch (file damaged); rebuild the index")
    try:
        arrays = {key: np.load(folder / f"{key}.npy", mmap_mode="r" if mmap else None, allow_pickle=False)
                  for key in ARRAYS}
        raw_terms = (folder / TERMS_FILE).read_text(encoding="utf-8")
        doc_ids = json.loads((folder / IDS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise IndexFormatError(f"{folder}: unreadable segment ({exc}); rebuild the index") from None
    terms = raw_terms.split("\n") if raw_terms else []
    postings = Postings(terms, arrays["offsets"], arrays["doc_nums"], arrays["tfs"], arrays["doc_lengths"])
    if (len(terms) + 1 != postings.offsets.shape[0] or len(doc_ids) != postings.num_docs
            or postings.tfs.shape != postings.doc_nums.shape or arrays["id_rank"].shape[0] != len(doc_ids)):
        raise IndexFormatError(f"{folder}: arrays disagree with each other; rebuild the index")
    return Segment(postings, doc_ids, arrays["id_rank"], folder / STORE_FILE)
