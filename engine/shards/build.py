"""Building a sharded index: the documents analysed in partitions, each written as one segment a shard into
a staging folder (:func:`write_partition`), each shard assembled from its segments (:func:`assemble_shard`),
the statistics added up, all under the writer's lock and committed at once (:func:`build`, :class:`Build`)."""
from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence


from .. import backends, segments, storage
from ..errors import IndexFormatError, InputError
from ..locking import LOCK_FILE, write_lock
from ..scratch import Scratch
from ..segments import DocLike, Part, Progress
from ..tokenization import Tokenizer
from .manifest import (SHARD_NAME, ShardRecord, TermCounts, check_shard_count, commit, fresh, journaled_name,
                       new_manifest, read_manifest, route, sealed, settle_after_failure, write_statistics)


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
    check_unique_ids(parts, pieces, source)
    name = journaled_name(directory, "shard") if name is None else name
    assert SHARD_NAME.fullmatch(name), name
    counts = TermCounts.of_parts(parts)
    live = segments.live_counts(parts)
    tmp = fresh(directory, name)
    manifest: dict[str, Any] = {"format": storage.FORMAT_NAME, "format_version": storage.FORMAT_VERSION,
                                "tokenizer": tokenizer_config, segments.SHARD_KEY: {"position": position, "shards": shards}}
    if len(parts) == 1:  # the staged segment becomes the shard's, as it is (linked: the staging stays whole)
        entry = pieces[0][2]
        link_segment(folder / entry["name"], tmp / entry["name"], entry["files"])
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
    return ShardRecord(name, sealed(manifest), counts)


def link_segment(source: Path, target: Path, names: Iterable[str]) -> None:
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


def check_unique_ids(parts: Sequence[Part], pieces: Sequence[tuple[int, int, Any]], source: str | Path | None) -> None:
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
        commit(self.directory, new_manifest(tokenizer_config, shards, stats, generation_of(self.directory) + 1))


def generation_of(directory: Path) -> int:
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
                settle_after_failure(directory)
                raise
            finally:
                staging.cleanup()
    except BaseException:
        if created:
            remove_if_only_ours(directory)
        raise


def remove_if_only_ours(directory: Path) -> None:
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
