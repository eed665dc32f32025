"""The :class:`ShardedIndex`: a sharded index loaded and searched in this process, through the search protocol
every kind of index shares, and grown by the changes of :mod:`.changes`."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np

from .. import lookups, storage
from .. import index as index_module
from ..errors import IndexFormatError, InputError
from ..records import Document, Hits, IndexInfo, Results
from ..scoring import DEFAULT_B, DEFAULT_K1, DEFAULT_VARIANT, Params
from ..retrieval import CollectionStatistics, _positions
from ..searching import FieldValues, Searcher, TermStatistics
from ..segments import Change, DocLike, Progress
from ..tokenization import Tokenizer
from .manifest import FORMAT_VERSION, MANIFEST, TermCounts, manifest_bytes, parse_manifest, read_manifest_bytes, route
from .build import build
from .shard import (GlobalTerms, Shard, ShardHits, load_shards, merge_hits, results_of, search_params, search_shards,
                    worker_count)
from .changes import add_documents, delete_documents, optimize


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
        return search_shards(self.shards, queries, k, params, worker_count(workers))

    def _hits(self, found: ShardHits) -> Hits:
        return Hits(np.arange(len(found.doc_ids)), found.scores, found.ids(), self.document)

    def _results(self, qids: Sequence[str], found: Sequence[ShardHits]) -> Results:
        return results_of(qids, found, self.document)

    # ------------------------------------------------------------------ feedback's reads, from the shards' postings
    def _term_statistics(self, terms: list[str], collection_frequencies: bool) -> TermStatistics:
        """N and each term's df from the collection's statistics; its cf the sum of the shards' (each from
        its postings: :func:`~bm25lab.engine.lookups.term_counts`)."""
        statistics = self.counts_.statistics()
        known, ids = _global_ids(statistics, terms)
        df = np.zeros(len(terms), dtype=np.int64)
        df[known] = statistics.df[ids[known]]
        cf = None
        if collection_frequencies:
            cf = np.zeros(len(terms), dtype=np.int64)
            for shard in self.shards:
                if shard.scorer is not None:
                    local = lookups.term_ids(shard.backend, shard.scorer, terms)
                    cf += lookups.term_counts(shard.scorer, local, True)[1]
        return TermStatistics(self.num_docs, tuple(terms), df, cf)

    def _term_weights(self, doc_ids: list[str], terms: list[list[str]], params: Params) -> list[np.ndarray]:
        """Each document's weights from the postings of its shard, scored with the collection's statistics."""
        out: list[np.ndarray] = [np.zeros(len(t), dtype=np.float64) for t in terms]
        by_shard: dict[int, list[int]] = {}
        for position, doc_id in enumerate(doc_ids):
            by_shard.setdefault(route(doc_id, self.num_shards), []).append(position)
        for number, positions in by_shard.items():
            shard = self.shards[number]
            if shard.scorer is None:
                continue
            found = lookups.term_weights(shard.backend, shard.scorer, shard.parts, [doc_ids[i] for i in positions],
                                         [terms[i] for i in positions], params)
            for i, weights in zip(positions, found):
                out[i] = weights
        return out

    def _retrieve_weighted(self, queries: list[dict[str, float]], k: int, params: Params,
                           workers: int | None) -> ShardHits | None:
        """The weighted queries in global term ids, every term's largest weight one power of two above all
        of theirs in every shard (:func:`~bm25lab.engine.lookups.ordering_upper`: the terms are added by
        weight descending, then term), searched by every shard's kernels and merged (as :meth:`retrieve`)."""
        scoring = params.of_documents()
        statistics = self.counts_.statistics()
        flat = [t for q in queries for t in q]
        known, ids = _global_ids(statistics, flat)
        weights = np.fromiter((w for q in queries for w in q.values()), dtype=np.float64, count=len(flat))
        which = np.repeat(np.arange(len(queries), dtype=np.int64), [len(q) for q in queries])
        ids, weights, which = ids[known], weights[known], which[known]
        order = np.lexsort((ids, which))
        q_ptr = np.zeros(len(queries) + 1, dtype=np.int64)
        np.cumsum(np.bincount(which, minlength=len(queries)), out=q_ptr[1:])
        largest = 0.0
        held = sorted({flat[i] for i in np.flatnonzero(known).tolist()})
        for shard in self.shards:
            if shard.scorer is None or not held:
                continue
            local = lookups.term_ids(shard.backend, shard.scorer, held)
            local = local[local >= 0]
            if local.shape[0]:
                if len(queries) > 1:
                    shard.scorer.prepare(scoring, shard.backend.pair_coder())
                largest = max(largest, float(shard.scorer.term_upper(local, scoring).max()))
        upper = lookups.ordering_upper(largest)
        if not np.isfinite(upper * weights).all():
            return None
        terms = GlobalTerms(q_ptr, ids[order], weights[order], np.full(ids.shape[0], upper))
        count = worker_count(workers)
        return merge_hits([shard.top_k(terms, k, scoring, count, params.where) for shard in self.shards], k)

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


def _global_ids(statistics: CollectionStatistics, terms: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Which of ``terms`` the collection holds, and each one's position among the statistics' terms (-1
    for the others)."""
    ids = _positions(terms, statistics.terms) if len(terms) else np.zeros(0, dtype=np.int64)
    return ids >= 0, ids


def _manifest_changed(directory: Path, raw: bytes) -> bool:
    try:
        return read_manifest_bytes(directory) != raw
    except IndexFormatError:
        return False
