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

The package's modules follow the job: :mod:`.manifest` (``shards.json``, routing, the statistics),
:mod:`.build` (building), :mod:`.shard` (a shard and the two rounds of a search), :mod:`.changes` (add,
delete, optimize; and their steps a shard at a time, which :mod:`bm25lab.distributed` runs as tasks) and :mod:`.sharded` (the :class:`ShardedIndex`); this module only hands their names on.
"""
from __future__ import annotations

from .build import Build, PartitionSegments, assemble_shard, build, building, check_target, write_partition
from .changes import (ShardChange, add_documents, add_to_shard, changed_statistics, changing, check_shard,
                      check_statistics, commit_changes, delete_documents, delete_from_shard, optimize, optimize_shard,
                      unknown_ids)
from .manifest import (DF_FILE, FORMAT_VERSION, MANIFEST, ShardRecord, TermCounts, check_shard_count, is_sharded,
                       load_counts, parse_manifest, read_manifest, read_manifest_bytes, route, settle, size_on_disk,
                       write_statistics)
from .shard import (GlobalTerms, Shard, ShardHits, code_point_ranks, load_shard, load_shards, merge_hits, results_of,
                    search_params, search_shards)
from .sharded import ShardedIndex, ShardedIndexInfo

__all__ = ["Build", "DF_FILE", "FORMAT_VERSION", "GlobalTerms", "MANIFEST", "PartitionSegments", "Shard",
           "ShardChange", "ShardHits", "ShardRecord", "ShardedIndex", "ShardedIndexInfo", "TermCounts",
           "add_documents", "add_to_shard", "assemble_shard", "build", "building", "changed_statistics",
           "changing", "check_shard", "check_shard_count", "check_statistics", "check_target",
           "code_point_ranks", "commit_changes", "delete_documents", "delete_from_shard", "is_sharded",
           "load_counts", "load_shard", "load_shards", "merge_hits", "optimize", "optimize_shard",
           "parse_manifest", "read_manifest", "read_manifest_bytes", "results_of", "route", "search_params",
           "search_shards", "settle", "size_on_disk", "unknown_ids", "write_partition", "write_statistics"]
