"""Growing a sharded index: add, delete and optimize route to the shards and update the statistics, in one
commit under the writer's lock (:func:`add_documents`, :func:`delete_documents`, :func:`optimize`)."""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence


from .. import backends, segments, storage
from ..errors import IndexFormatError, InputError
from ..files import check_folder
from ..locking import check_unlocked, write_lock
from ..scratch import Scratch
from ..segments import Change, DocLike, Part, Progress
from ..tokenization import Tokenizer
from .manifest import (MANIFEST, TermCounts, commit, config_key, journaled_name, load_counts, read_manifest, route,
                       sealed, settle_after_failure, sync_shards, write_statistics)


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
            shards[position]["manifest"] = sealed(segments.manifest_of(shard_dir, shards[position]["manifest"],
                                                                        parts, move_stores))
        if new_stats:
            old = load_counts(self.directory, stats, verify=True)
            items = [old] + [TermCounts.of_parts(self.parts(i)) for i in changed] + \
                    [TermCounts.of_parts(parts) for parts in changed.values()]
            signs = [1] + [-1] * len(changed) + [1] * len(changed)
            stats = write_statistics(self.directory, TermCounts.total(items, signs),
                                     journaled_name(self.directory, "stats"))
        updated = dict(self.manifest, generation=self.manifest["generation"] + 1, shards=shards, statistics=stats)
        commit(self.directory, updated)


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
        if tokenizer_config is not None and (config_key(manifest["tokenizer"]) != config_key(tokenizer_config)
                                             or len(manifest["shards"]) != shards):
            raise IndexFormatError(f"{directory}: the index was replaced by another while the documents were "
                                   f"being analysed; run the command again")
        transaction = _Transaction(directory, manifest, verify)
        _check_whole(transaction)
        sync_shards(directory, manifest)
        try:
            yield transaction
        except BaseException:
            settle_after_failure(directory)
            raise


def _check_whole(tx: _Transaction) -> None:
    """Before a change writes anything: every shard as ``shards.json`` records it and the statistics,
    read (verified with ``tx.verify``) as :meth:`ShardedIndex.load` reads them, and each shard's folder
    and journal what a writer may write to. A change to any shard is refused while another is damaged
    (a file changed, a shard folder replaced by another build's), as searching and ``info`` refuse the
    index; nothing is written into a damaged shard (not even its ``index.json`` brought to its copy)."""
    for position in range(tx.num_shards):
        tx._parts[position] = check_shard(tx.directory, tx.manifest, position, tx.verify)
    load_counts(tx.directory, tx.manifest["statistics"], verify=tx.verify)


def check_shard(directory: Path, manifest: Mapping[str, Any], position: int, verify: bool) -> list[Part]:
    """Shard ``position`` of the (checked) ``manifest``, read as :func:`_check_whole` reads each shard
    (its folder, its journal, its segments against its counts); its parts."""
    entry = manifest["shards"][position]
    shard_dir = directory / entry["name"]
    check_folder(shard_dir)
    storage.Journal(shard_dir).names()  # a journal that is no regular file is refused now, not after the commit
    parts = segments.load_parts(shard_dir, entry["manifest"], verify=verify, root=directory)
    if sum(p.num_live for p in parts) != entry["manifest"]["counts"]["documents"]:
        raise IndexFormatError(f"{shard_dir}: its segments hold {sum(p.num_live for p in parts)} documents, "
                               f"{directory / MANIFEST} says {entry['manifest']['counts']['documents']}; "
                               f"rebuild the index")
    return parts


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


# ---------------------------------------------------------------------------------------------
# A change a shard at a time: the steps of add, delete and optimize that a cluster's workers run, each
# on one shard (bm25lab.distributed), between the holder's lock (changing) and its commit


@dataclass(frozen=True)
class ShardChange:
    """What a change wrote into shard ``position``: its new manifest (sealed; None: unchanged), the
    counts of its live documents before and after (None: the same documents), and what it did."""

    position: int
    manifest: dict[str, Any] | None
    before: TermCounts | None = None
    after: TermCounts | None = None
    replaced: int = 0
    merged: int = 0
    purged: int = 0


@contextmanager
def changing(directory: str | Path, tokenizer_config: dict[str, Any] | None = None,
             shards: int | None = None) -> Iterator[dict[str, Any]]:
    """The writer's lock of the sharded index in ``directory`` held, what an earlier writer left
    settled, and its manifest (with ``tokenizer_config``/``shards``: still the index the new documents
    were analysed and routed for). The holder checks every shard and the statistics
    (:func:`check_shard`, :func:`check_statistics`), then calls :func:`sync_shards`, then changes
    shards (:func:`add_to_shard`, ...) and commits (:func:`commit_changes`); on failure what was
    written is removed."""
    directory = Path(directory).absolute()
    with write_lock(directory):
        storage.settle(directory)
        manifest = read_manifest(directory)
        if tokenizer_config is not None and (config_key(manifest["tokenizer"]) != config_key(tokenizer_config)
                                             or len(manifest["shards"]) != shards):
            raise IndexFormatError(f"{directory}: the index was replaced by another while the documents were "
                                   f"being analysed; run the command again")
        try:
            yield manifest
        except BaseException:
            settle_after_failure(directory)
            raise


def check_statistics(directory: Path, manifest: Mapping[str, Any], verify: bool) -> None:
    load_counts(directory, manifest["statistics"], verify=verify)


def unknown_ids(directory: Path, manifest: Mapping[str, Any], position: int, doc_ids: Sequence[str],
                verify: bool) -> list[str]:
    """Check shard ``position`` (:func:`check_shard`); the ids of ``doc_ids`` that it holds no live document of."""
    located = segments.locate(check_shard(directory, manifest, position, verify), list(doc_ids))
    return [doc_id for doc_id in doc_ids if doc_id not in located]


def _rewritten(directory: Path, manifest: Mapping[str, Any], position: int, parts: list[Part], changed: list[Part],
               move_stores: bool, counts: bool, **done: int) -> ShardChange:
    entry = manifest["shards"][position]
    if counts:
        for part in parts:
            part.check()  # damaged data never gets fresh statistics
    new = sealed(segments.manifest_of(directory / entry["name"], entry["manifest"], changed, move_stores))
    before, after = (TermCounts.of_parts(parts), TermCounts.of_parts(changed)) if counts else (None, None)
    return ShardChange(position, new, before, after, **done)


def _parts(directory: Path, manifest: Mapping[str, Any], position: int) -> list[Part]:
    entry = manifest["shards"][position]
    return segments.load_parts(directory / entry["name"], entry["manifest"], verify=False, root=directory)


def add_to_shard(directory: Path, manifest: Mapping[str, Any], position: int, staging: Path,
                 pieces: Sequence[tuple[int, int, dict[str, Any]]], source: str | Path | None) -> ShardChange:
    """Add to shard ``position`` the documents staged for it in ``<staging>/shard-<position>/`` (``pieces``:
    ``(first, count, entry)`` of each partition of the input that sent it some, in input order), as one
    new segment (a document whose id the shard holds replaces it), as :func:`add_documents` adds them."""
    from .build import check_unique_ids

    folder = staging / f"shard-{position}"
    staged = segments.load_parts(folder, {"segments": [entry for _, _, entry in pieces]}, verify=len(pieces) > 1)
    check_unique_ids(staged, pieces, source)
    work = Scratch(staging)
    try:
        new = segments.merged_part(staged, work.path)
        parts = _parts(directory, manifest, position)
        changed, replaced = segments.with_added(parts, new)
        return _rewritten(directory, manifest, position, parts, changed, True, True, replaced=replaced)
    finally:
        work.cleanup()


def delete_from_shard(directory: Path, manifest: Mapping[str, Any], position: int,
                      doc_ids: Sequence[str]) -> ShardChange:
    """Delete ``doc_ids`` (each a live document of shard ``position``: :func:`unknown_ids`) from it."""
    parts = _parts(directory, manifest, position)
    return _rewritten(directory, manifest, position, parts, segments.with_deleted(parts, doc_ids)[0], False, True)


def optimize_shard(directory: Path, manifest: Mapping[str, Any], position: int, scratch: Path) -> ShardChange:
    """Shard ``position``'s segments merged into one without its deleted documents (in a scratch folder
    inside ``scratch``), as :func:`optimize` merges them; unchanged (``manifest`` None) when it is one
    segment without deletions."""
    parts = _parts(directory, manifest, position)
    deleted = sum(int(p.deleted.shape[0]) for p in parts)
    if len(parts) <= 1 and not deleted:
        return ShardChange(position, None)
    work = Scratch(scratch)
    try:
        changed = [segments.merged_part(parts, work.path)] if sum(p.num_live for p in parts) else []
        return _rewritten(directory, manifest, position, parts, changed, True, False, merged=len(parts),
                          purged=deleted)
    finally:
        work.cleanup()


def changed_statistics(directory: Path, manifest: Mapping[str, Any], changes: Sequence[ShardChange]
                       ) -> dict[str, Any]:
    """The statistics after ``changes`` (derived from the old ones, verified, and the changed shards'
    counts before and after), written under a journaled name; the old record when no live document changed."""
    counted = [c for c in changes if c.manifest is not None and c.before is not None and c.after is not None]
    if not counted:
        return dict(manifest["statistics"])
    old = load_counts(directory, manifest["statistics"], verify=True)
    items = [old] + [c.before for c in counted] + [c.after for c in counted]
    signs = [1] + [-1] * len(counted) + [1] * len(counted)
    return write_statistics(directory, TermCounts.total(items, signs),  # type: ignore[arg-type]
                            journaled_name(directory, "stats"))


def commit_changes(directory: Path, manifest: Mapping[str, Any], changes: Sequence[ShardChange],
                   statistics: Mapping[str, Any]) -> Change:
    """Commit the shards' new manifests and ``statistics`` (:func:`changed_statistics`) as the next
    generation (nothing to commit when no shard changed); the index after it."""
    written = [c for c in changes if c.manifest is not None]
    if written:
        shards = [dict(entry) for entry in manifest["shards"]]
        for change in written:
            shards[change.position]["manifest"] = change.manifest
        commit(directory, dict(manifest, generation=manifest["generation"] + 1, shards=shards,
                               statistics=dict(statistics)))
    documents, segs = _after(read_manifest(directory))
    return Change(replaced=sum(c.replaced for c in written), merged=sum(c.merged for c in written),
                  purged=sum(c.purged for c in written), documents=documents, segments=segs)
