"""Growing a sharded index: add, delete and optimize route to the shards and update the statistics, in one
commit under the writer's lock (:func:`add_documents`, :func:`delete_documents`, :func:`optimize`)."""
from __future__ import annotations

from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping


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
