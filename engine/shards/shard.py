"""Searching the shards: a :class:`Shard` (one shard's parts scored with the collection's statistics),
loaded from the manifest (:func:`load_shards`), the two rounds (:func:`search_shards`: every query's
terms and their largest weights in the whole collection, then each shard's exact top k) and the merge of
the shards' lists by the tie rule (:func:`merge_hits`)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .. import backends, segments, storage
from ..backends import Backend
from ..docstore import DocStore, SegmentedStore
from ..errors import IndexFormatError, ParameterError
from ..filters import Filter, Masks
from ..records import DocIds, Document, Results
from ..retrieval import CollectionStatistics, Scorer, TermBatch
from ..scoring import Params, absent_terms_constant, parse_field_values, query_term_weight, zero_tf_part
from ..searching import FieldValues
from ..segments import Part
from .manifest import MANIFEST, TermCounts, load_counts, pin_counts


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

    from ..columns import string_array

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


def worker_count(workers: int | None) -> int:
    from ..segments import worker_count

    return worker_count(workers)
