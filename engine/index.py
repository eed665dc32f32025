"""The ``Index``: build from documents, search, grow, save and load.

    index = Index.build(docs, tokenizer=Tokenizer("auto"))
    index.search("清华大学", k=10)                      # -> Hits([Hit(doc_id, score), ...])
    index.search_many({"q1": "..."}, k=1000)            # -> {"q1": Hits([...])}
    index.save("my-index"); Index.load("my-index")
    index.add(more_docs); index.delete(["d7"]); index.optimize()

Documents are ``(doc_id, text)`` pairs, :class:`~bm25lab.engine.records.Document` objects, or dicts with
``id`` or ``_id``, ``text``, optional ``title`` and any other keys (kept as metadata).

An index is one or more segments with deletions (:mod:`bm25lab.engine.segments`); search results and scores
are those of a fresh build of the live documents. ``add``, ``delete`` and ``optimize`` on an index
loaded from a directory commit to that directory (under its writer's lock) and then show the
committed index; on an index that was never saved they change it in memory only. A change reads the
index verified, whatever ``load`` was told (a file damaged since is an IndexFormatError naming it, and
never reaches a new manifest); a file this process verified and that has not changed since is not
hashed again (:func:`bm25lab.engine.storage.known_digest`).
"""
from __future__ import annotations

import weakref
from dataclasses import replace
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Sequence

import numpy as np

from . import backends, lookups, segments, storage
from .backends import Backend, Ranked
from .docstore import SegmentedStore
from .errors import IndexFormatError, InputError, ParameterError
from .filters import Masks
from .records import DocIds, Document, Hits, IndexInfo, Results
from .retrieval import QueryBatch, Scorer
from .scratch import Scratch
from .scoring import DEFAULT_B, DEFAULT_K1, DEFAULT_VARIANT, Params, parse_field_values
from .searching import FieldValues, Searcher, TermStatistics, check_k
from .segments import Change, DocLike, Part, Progress, as_document, worker_count
from .tokenization import Tokenizer


__all__ = ["Change", "DocLike", "Index", "PreparedBatch", "as_document"]

# A reader that finds a file gone re-reads the manifest this many times (writers committed meanwhile). It
# opens every file before reading any, so one attempt takes milliseconds however large the index is.
_LOAD_ATTEMPTS = 50


class Index(Searcher["Sequence[Ranked]"]):
    """A searchable BM25 index: postings, document ids, tokenizer and document store; searched through
    the protocol every kind of index shares (:class:`~bm25lab.engine.searching.Searcher`)."""

    def __init__(self, segment: storage.Segment, tokenizer: Tokenizer, path: Path | None = None,
                 workdir: Scratch | None = None, backend: Backend | str | None = None) -> None:
        self.tokenizer = tokenizer
        self.path = path
        self._backend = backend if isinstance(backend, Backend) else backends.create(backend)
        self._workdirs: list[Scratch] = [] if workdir is None else [workdir]
        self._attach([Part(segment)])

    @classmethod
    def _of_parts(cls, parts: list[Part], tokenizer: Tokenizer, path: Path | None, backend: Backend) -> "Index":
        index = cls.__new__(cls)
        index.tokenizer = tokenizer
        index.path = path
        index._backend = backend
        index._workdirs = []
        index._attach(parts)
        return index

    @property
    def backend(self) -> str:
        """The backend this index searches with: ``"core"`` (the compiled core) or ``"numpy"`` (see
        :mod:`bm25lab.engine.backends`; ``"auto"`` is the core when it is built)."""
        return self._backend.name

    def _attach(self, parts: list[Part]) -> None:
        """Show ``parts``: one merged view for scoring, the parts' stores for documents."""
        self._parts = parts
        self._segment = segments.merge(parts)
        self._ids = DocIds(self._segment.doc_ids)
        self._scorer = Scorer(self._segment.postings, self._segment.id_rank, fields=self._segment.fields,
                              pairs=self._segment.pairs)
        self._store = SegmentedStore([p.store for p in parts])
        self._masks = Masks(parts)

    # ------------------------------------------------------------------ building
    @classmethod
    def build(cls, docs: Iterable[DocLike], tokenizer: Tokenizer | None = None, *, workers: int | None = None,
              progress: Progress | None = None, source: str | Path | None = None,
              backend: str | None = None, fields: Sequence[str] | None = None,
              scratch: str | Path | None = None) -> "Index":
        """Index ``docs`` (streamed: texts go to the on-disk store, only postings stay in memory).

        A duplicate id raises InputError naming it (and ``source``, the file the documents come from,
        when given); an empty document is kept with length 0. ``progress`` is called with the number
        of documents indexed so far, every 1,000 documents. ``backend`` (``"auto"``, ``"core"``,
        ``"numpy"``; None: ``$BM25LAB_BACKEND`` or ``"auto"``) builds and then searches the index.
        ``fields`` (such as ``("title", "text")``; metadata keys too) indexes each field on its own as
        well, for BM25F (``search(..., field_weights=)``); without field weights such an index scores
        its documents' fields' tokens one after the other, as one text.
        ``scratch``: the folder in which the store is written until the index is saved (default: the
        system's temporary folder; give the folder the index will be saved to, to use its disk only).
        ``workers``: the processes that analyse the texts (None: every usable core); with the
        ``whitespace`` analysis without stopwords the builder itself analyses them, in the compiled core
        on that many threads (:mod:`bm25lab.engine.postings`): the
        same index, term for term and byte for byte.
        """
        tokenizer = tokenizer or Tokenizer()
        chosen = backends.create(backend)
        built = segments.build_segment(docs, tokenizer, workers=workers, progress=progress, source=source,
                                       backend=chosen, fields=fields, scratch=scratch)
        index = cls(built.segment, tokenizer, None, built.workdir, chosen)
        weakref.finalize(index, built.workdir.cleanup)
        return index

    @classmethod
    def build_tokens(cls, docs: Iterable[tuple[str, Sequence[str] | np.ndarray]], tokenizer: Tokenizer | None = None,
                     *, vocabulary: Sequence[str] | None = None, progress: Progress | None = None,
                     backend: str | None = None) -> "Index":
        """Index already analysed documents, ``(id, tokens)`` pairs, as they are (no analysis; each
        document's stored text is its tokens joined by spaces). With ``vocabulary`` (distinct terms),
        the tokens are arrays of indices into it instead, the fastest input, and no text is stored.
        ``tokenizer`` analyses the queries and is saved with the index; by default
        ``Tokenizer("whitespace", stopwords=None)``, which gives back such tokens from their joined text.
        """
        tokenizer = tokenizer or Tokenizer("whitespace", stopwords=None)
        chosen = backends.create(backend)
        try:
            built = segments.build_segment(docs, tokenizer, progress=progress, pretokenized=True,
                                           vocabulary=vocabulary, backend=chosen)
        except InputError:
            raise
        except ValueError as exc:  # the builder's word on the vocabulary or the ids
            raise InputError(str(exc)) from None
        index = cls(built.segment, tokenizer, None, built.workdir, chosen)
        weakref.finalize(index, built.workdir.cleanup)
        return index

    # ------------------------------------------------------------------ growing
    def add(self, docs: Iterable[DocLike], *, workers: int | None = None, progress: Progress | None = None,
            source: str | Path | None = None) -> Change:
        """Add ``docs`` as a new segment; a document whose id is in the index replaces it.

        On an index loaded from a directory this commits to the directory (see
        :func:`bm25lab.engine.segments.add_documents`) and the index then shows the committed state,
        including changes other writers committed meanwhile.
        """
        if self.path is not None:
            change = segments.add_documents(self.path, docs, workers=workers, progress=progress, source=source,
                                            backend=self._backend)
            self._reload()
            return change
        built = segments.build_segment(docs, self.tokenizer, workers=workers, progress=progress, source=source,
                                       backend=self._backend, fields=self.fields or None)
        self._workdirs.append(built.workdir)
        parts, replaced = segments.with_added(self._parts, Part(built.segment))
        self._attach(parts)
        return Change(added=built.segment.postings.num_docs, replaced=replaced, documents=self.num_docs,
                      segments=len(parts))

    def delete(self, doc_ids: Iterable[str]) -> Change:
        """Delete documents by id; an id not in the index raises InputError and nothing is deleted."""
        if isinstance(doc_ids, str):
            doc_ids = [doc_ids]
        if self.path is not None:
            change = segments.delete_documents(self.path, doc_ids)
            self._reload()
            return change
        parts, deleted = segments.with_deleted(self._parts, doc_ids)
        self._attach(parts)
        return Change(deleted=deleted, documents=self.num_docs, segments=len(parts))

    def optimize(self) -> Change:
        """Merge all segments into one and drop deleted documents (scores do not change)."""
        if self.path is not None:
            change = segments.optimize(self.path)
            self._reload()
            return change
        purged = sum(int(p.deleted.shape[0]) for p in self._parts)
        if len(self._parts) <= 1 and not purged:
            return Change(documents=self.num_docs, segments=len(self._parts))
        workdir = Scratch()
        self._workdirs.append(workdir)
        merged = len(self._parts)
        parts = [segments.merged_part(self._parts, workdir.path)] if self.num_docs else []
        self._attach(parts)
        return Change(merged=merged, purged=purged, documents=self.num_docs, segments=len(parts))

    def _reload(self) -> None:
        assert self.path is not None
        fresh = Index.load(self.path, verify=False, backend=self._backend)
        self.tokenizer = fresh.tokenizer
        self._attach(fresh._parts)

    # ------------------------------------------------------------------ disk
    def save(self, path: str | Path, overwrite: bool = False) -> Path:
        """Write the index to directory ``path`` as one segment, atomically and under the directory's
        writer lock (see :mod:`bm25lab.engine.storage`, :mod:`bm25lab.engine.locking`).

        ``path`` must be a new or empty folder, or (with ``overwrite``) hold a bm25lab index: a folder
        holding anything else is refused (InputError), and nothing but the index's own files is ever
        removed. The data of an index loaded with ``verify=False`` is verified before it is written."""
        directory = Path(path)
        if (directory / storage.MANIFEST).exists() and not overwrite:
            raise InputError("an index exists already (use overwrite=True to replace it)", directory)
        segments.replace_all(directory, self._parts_to_write(), self.tokenizer.config(), overwrite)
        return directory

    def _parts_to_write(self) -> Sequence[Part]:
        """The parts, the one that is searched as it is given the pairs its batches computed, so that
        saving writes them rather than computing them again."""
        pairs = self._scorer.pairs
        searched_as_is = len(self._parts) == 1 and self._parts[0].segment is self._segment
        if pairs is None or not searched_as_is or self._segment.pairs is not None:
            return self._parts
        part = self._parts[0]
        return [Part(replace(part.segment, pairs=pairs), part.deleted, part.entry, part.verified, opened=part.store)]

    @classmethod
    def load(cls, path: str | Path, verify: bool = True, mmap: bool = True,
             backend: Backend | str | None = None) -> "Index":
        """Load a saved index; arrays are memory-mapped. Damage or a foreign version is IndexFormatError.
        ``backend`` as in :meth:`build`.

        Takes no lock: every file the manifest names is opened before any is read, so that a writer
        committing meanwhile takes nothing from under the reader; when a file is already gone (a
        commit came between reading the manifest and opening its files), the new manifest is read and
        loading starts again. A file missing from an index that nobody changes is damage.
        """
        directory = Path(path)
        chosen = backend if isinstance(backend, Backend) else backends.create(backend)
        for attempt in range(_LOAD_ATTEMPTS):
            raw = storage.read_manifest_bytes(directory)
            manifest = storage.parse_manifest(directory, raw)
            try:
                tokenizer = Tokenizer.from_config(manifest["tokenizer"])
            except IndexFormatError as exc:
                raise IndexFormatError(f"{directory / storage.MANIFEST}: {exc}") from None
            except (KeyError, TypeError, ValueError) as exc:
                raise IndexFormatError(f"{directory / storage.MANIFEST}: bad manifest ({exc}); "
                                       f"rebuild the index") from None
            try:
                parts = segments.load_parts(directory, manifest, verify=verify, mmap=mmap)
            except storage.MissingFile:
                if not _manifest_changed(directory, raw):
                    raise  # gone from an index nobody changed: damage
                if attempt + 1 < _LOAD_ATTEMPTS:
                    continue
                raise IndexFormatError(f"{directory}: the index changed {_LOAD_ATTEMPTS} times while it was being "
                                       f"read (writers are committing); try again") from None
            index = cls._of_parts(parts, tokenizer, directory, chosen)
            if index.counts() != manifest["counts"]:  # what the files hold is what the manifest says
                raise IndexFormatError(f"{directory / storage.MANIFEST}: the segments hold {index.counts()}, the "
                                       f"manifest says {manifest['counts']}; rebuild the index")
            return index
        raise AssertionError("unreachable")  # pragma: no cover

    @property
    def num_segments(self) -> int:
        """How many segments the index is made of (1 after a build, a save or an optimize)."""
        return len(self._parts)

# ------------------------------------------------------------------ facts
    @property
    def num_docs(self) -> int:
        return self._segment.postings.num_docs

    @property
    def num_terms(self) -> int:
        return self._segment.postings.num_terms

    @property
    def num_postings(self) -> int:
        return self._segment.postings.num_postings

    @property
    def avgdl(self) -> float:
        return self._scorer.avgdl

    @property
    def fields(self) -> tuple[str, ...]:
        """The fields the index was built with, for BM25F (empty: built without fields)."""
        return () if self._segment.fields is None else self._segment.fields.names

    @property
    def doc_ids(self) -> Sequence[str]:
        return self._segment.doc_ids

    def counts(self) -> dict[str, int]:
        lengths = self._segment.postings.doc_lengths
        return {"documents": self.num_docs, "terms": self.num_terms, "postings": self.num_postings,
                "total_length": int(lengths.sum(dtype=np.int64))}

    def info(self) -> IndexInfo:
        """The index's counts, size on disk, format version, backend and tokenizer configuration."""
        return IndexInfo(path=None if self.path is None else str(self.path), format_version=storage.FORMAT_VERSION,
                         documents=self.num_docs, terms=self.num_terms, postings=self.num_postings,
                         average_length=self.avgdl,
                         size_bytes=None if self.path is None else self._size_on_disk(self.path),
                         segments=self.num_segments, backend=self.backend, tokenizer=self.tokenizer.config(),
                         fields=self.fields)

    def _size_on_disk(self, directory: Path) -> int:
        """The manifest's size and those of the files it names, as it records them."""
        try:
            manifest = (directory / storage.MANIFEST).stat().st_size
        except OSError:
            manifest = 0
        return manifest + storage.recorded_bytes([p.entry for p in self._parts if p.entry is not None])

    def document(self, doc_id: str) -> Document | None:
        """The stored document (title, text, metadata), or None for an unknown or deleted id."""
        return self._store.get(doc_id)

    def documents(self) -> Iterator[Document]:
        """Every live document, in indexing order (segment by segment)."""
        return iter(self._store.iter_documents())

    # ------------------------------------------------------------------ search (the protocol: .searching)
    def params(self, variant: str = DEFAULT_VARIANT, k1: float = DEFAULT_K1, b: float = DEFAULT_B,
               delta: float | None = None, k3: float | None = None, field_weights: FieldValues = None,
               field_b: FieldValues = None) -> Params:
        """The checked parameters of a search; field weights and b become (field, weight, b) for every
        field of the index, in its order."""
        weights = parse_field_values(field_weights, "field weights")
        bs = parse_field_values(field_b, "field b")
        if not weights and not bs:
            return Params(variant, k1, b, delta, k3).resolved()
        if not self.fields:
            raise ParameterError("this index was built without fields: build it with fields=['title', 'text'] "
                                 "(bm25lab index --fields title,text) to score with field weights (BM25F)")
        unknown = sorted((set(weights) | set(bs)) - set(self.fields))
        if unknown:
            raise ParameterError(f"unknown field {unknown[0]!r}; this index's fields: {', '.join(self.fields)}")
        fields = tuple((name, weights.get(name, 1.0), bs.get(name, b)) for name in self.fields)
        return Params(variant, k1, b, delta, k3, fields).resolved()

    def retrieve(self, queries: Sequence[Sequence[str]], k: int, params: Params,
                 workers: int | None) -> Sequence[Ranked]:
        """Per analysed query, (document numbers, scores), best first (among the documents that pass
        ``params.where``: a mask of the documents, kept per filter)."""
        batch = self._backend.term_batch(self._scorer, queries).weighted(params.k3)
        return self._backend.top_k_batch(self._scorer, batch, k, params.of_documents(), worker_count(workers),
                                         self._masks.of(params.where))

    def _search_one(self, tokens: Sequence[str], k: int, params: Params) -> Hits:
        terms = self._backend.term_batch(self._scorer, [tokens]).query(0).weighted(params.k3)
        docs, scores = self._backend.top_k(self._scorer, terms, k, params.of_documents(),
                                           self._masks.of(params.where))
        return Hits(docs, scores, self._segment.doc_ids, self._store.get)

    # ------------------------------------------------------------------ feedback's reads, from the postings
    def _retrieve_weighted(self, queries: list[dict[str, float]], k: int, params: Params,
                           workers: int | None) -> Sequence[Ranked] | None:
        """The weighted queries as one batch of the kernels' search, whose counts are the weights and every
        term's largest weight one power of two above all of theirs (:func:`~.lookups.ordering_upper`): the
        terms are added in the order weight descending, then term, the order of
        :meth:`~.searching.Searcher.search_weighted`, and pruning stays exact."""
        scoring = params.of_documents()
        batch = lookups.weighted_batch(self._backend, self._scorer, queries)
        largest = 0.0
        if batch.term_ids.shape[0]:
            if len(batch) > 1:
                self._scorer.prepare(scoring, self._backend.pair_coder())
            largest = float(self._scorer.term_upper(np.unique(batch.term_ids), scoring).max())
        upper = lookups.ordering_upper(largest)
        if not np.isfinite(upper * batch.counts).all():
            return None
        batch = replace(batch, upper=np.full(batch.term_ids.shape[0], upper))
        return self._backend.top_k_batch(self._scorer, batch, k, scoring, worker_count(workers),
                                         self._masks.of(params.where))

    def _term_statistics(self, terms: list[str], collection_frequencies: bool) -> TermStatistics:
        """N and each term's df (and cf) from the postings (:func:`~bm25lab.engine.lookups.term_counts`)."""
        ids = lookups.term_ids(self._backend, self._scorer, terms)
        df, cf = lookups.term_counts(self._scorer, ids, collection_frequencies)
        return TermStatistics(self.num_docs, tuple(terms), df, cf)

    def _term_weights(self, doc_ids: list[str], terms: list[list[str]], params: Params) -> list[np.ndarray]:
        return lookups.term_weights(self._backend, self._scorer, self._parts, doc_ids, terms, params)

    def _hits(self, found: Sequence[Ranked]) -> Hits:
        (docs, scores), = found
        return Hits(docs, scores, self._segment.doc_ids, self._store.get)

    def _results(self, qids: Sequence[str], found: Sequence[Sequence[Ranked]]) -> Results:
        ranked = found[0] if len(found) == 1 else [row for part in found for row in part]
        return Results.of(qids, ranked, self._ids, self._store.get)

    def batch(self, queries: Mapping[str, str]) -> "PreparedBatch":
        """Analyse ``{qid: text}`` and gather its postings once, to score it under many parameter sets
        (grid search): each :meth:`PreparedBatch.search` reuses the postings and the tokens."""
        qids = list(queries)
        tokens = self.tokenizer.tokenize_many(queries[q] for q in qids)
        return PreparedBatch(self, qids, QueryBatch(self._scorer, [self._scorer.query_terms(t) for t in tokens]))

    def __repr__(self) -> str:
        where = f", path={str(self.path)!r}" if self.path else ""
        return f"Index(documents={self.num_docs}, terms={self.num_terms}{where})"


class PreparedBatch:
    """A batch of analysed queries bound to an index; see :meth:`Index.batch`."""

    def __init__(self, index: Index, qids: list[str], batch: QueryBatch) -> None:
        self.index = index
        self.qids = qids
        self._batch = batch

    def search(self, k: int = 1000, variant: str = DEFAULT_VARIANT, k1: float = DEFAULT_K1, b: float = DEFAULT_B,
               delta: float | None = None, k3: float | None = None, field_weights: FieldValues = None,
               field_b: FieldValues = None, *, params: Params | None = None) -> Results:
        """The same :class:`Results` as :meth:`Index.search_many` gives for these parameters."""
        checked = self.index._checked(params, dict(variant=variant, k1=k1, b=b, delta=delta, k3=k3,
                                                   field_weights=field_weights, field_b=field_b))
        return self.index._results(self.qids, [self._batch.top(checked, check_k(k),
                                                               self.index._masks.of(checked.where))])


def _manifest_changed(directory: Path, raw: bytes) -> bool:
    try:
        return storage.read_manifest_bytes(directory) != raw
    except IndexFormatError:
        return False
