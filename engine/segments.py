"""Indexes made of segments: building one, deleting from it, merging them, committing changes.

An index is a list of immutable segments, each with the sorted numbers of its deleted documents.
``add`` writes the new documents as one more segment and deletes the older documents that have the
same ids (an id is live in at most one segment); ``delete`` only records deletions; ``optimize``
rewrites the live documents as one segment.

Searching several segments uses one merged in-memory :class:`~bm25lab.engine.postings.Postings` of the live
documents (:func:`merge`): vocabularies united, term ids and document numbers remapped, deleted
postings and terms left without postings dropped, tie-break ranks recomputed over the live ids.
Collection statistics (N, df, avgdl) are therefore global by construction, and every document's
score is summed over the same terms in the same (code point) order as in a fresh build of the same
documents: scores are bit-identical to it. A single segment without deletions is used as it is
(memory-mapped).

Changes to an index directory (:func:`add_documents`, :func:`delete_documents`, :func:`optimize`,
:func:`replace_all`) hold the writer's lock (:mod:`bm25lab.engine.locking`) only to commit: new documents are
analysed first, then, under the lock, the current manifest is read again, new segment folders and
deletion files are written (never a file the manifest names), and one atomic replacement of
``index.json`` commits (:mod:`bm25lab.engine.storage`). A writer killed at any moment leaves the index as it
was before or as it is after.
"""
from __future__ import annotations

import json
import os
import time
import sqlite3
from collections import deque
from contextlib import contextmanager
from dataclasses import InitVar, dataclass, field
from itertools import compress, islice, repeat
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from . import backends, storage
from .backends import Backend
from .docstore import DocStore, DocStoreWriter, fields
from .errors import IndexFormatError, InputError, ParameterError
from .locking import check_unlocked, write_lock
from .postings import Postings, PostingsBuilder, concat_ranges
from .records import Document
from .scratch import Scratch
from .segmentation import PackedTerms
from .selection import id_ranks
from .tokenization import Tokenizer, chunk_lists, usable_cores

DocLike = Document | tuple[str, str] | Mapping[str, Any]
Progress = Callable[[int], None]

_NO_DELETIONS = np.zeros(0, dtype=np.int32)


@dataclass(frozen=True)
class Change:
    """What one change did, and the size of the index after it."""

    added: int = 0       # documents written by an add (new ones and replacements)
    replaced: int = 0    # of those, how many replaced a live document with the same id
    deleted: int = 0     # documents deleted by id
    merged: int = 0      # segments merged into one by an optimize
    purged: int = 0      # deleted documents physically removed by an optimize
    documents: int = 0   # live documents after the change
    segments: int = 0    # segments after the change


@dataclass(frozen=True, eq=False)
class Part:
    """One segment of an index with its deleted document numbers (sorted, unique int32), its store
    reader, and its manifest entry once it is on disk (``verified``: its files' checksums were
    checked when it was loaded)."""

    segment: storage.Segment
    deleted: np.ndarray = field(default_factory=lambda: _NO_DELETIONS)
    entry: dict[str, Any] | None = None
    verified: bool = True
    opened: InitVar[DocStore | None] = None  # its store, opened already (pinned: see load_parts)
    store: DocStore = field(init=False, repr=False)

    def __post_init__(self, opened: DocStore | None) -> None:
        assert self.segment.store_path is not None
        store = DocStore(self.segment.store_path, self.deleted) if opened is None else opened.with_deleted(self.deleted)
        object.__setattr__(self, "store", store)

    @property
    def num_docs(self) -> int:
        return self.segment.postings.num_docs

    @property
    def num_live(self) -> int:
        return self.num_docs - int(self.deleted.shape[0])

    def live_mask(self) -> np.ndarray:
        """True for every live document number."""
        mask = np.ones(self.num_docs, dtype=bool)
        mask[self.deleted] = False
        return mask

    def with_deleted(self, nums: Iterable[int]) -> "Part":
        """This segment with ``nums`` deleted as well (same entry: the deletions file is rewritten on commit)."""
        more = np.fromiter(nums, dtype=np.int64)
        return Part(self.segment, np.union1d(self.deleted, more).astype(np.int32), self.entry, self.verified,
                    self.store)

    def source(self) -> Path | None:
        """The index directory the segment was loaded from (None when it was never saved)."""
        return None if self.entry is None else self.segment.store_path.parent.parent  # type: ignore[union-attr]

    def check(self) -> None:
        """Before its data is rewritten (a merge, a save): verify an unverified segment's checksums,
        so that damaged data never gets fresh ones (IndexFormatError naming the damaged file)."""
        source = self.source()
        if source is not None and not self.verified:
            storage.verify_entry(source, self.entry)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# Building one segment


def as_document(item: DocLike) -> Document:
    """Normalise one input document; a malformed one is an InputError naming what is wrong."""
    if isinstance(item, Document):
        return item
    if isinstance(item, Mapping):
        doc_id = item.get("id", item.get("_id"))
        if doc_id is None:
            raise InputError(f"document without an 'id' or '_id': {str(dict(item))[:80]}")
        text = item.get("text", "")
        title = item.get("title", "")
        meta = {k: v for k, v in item.items() if k not in ("id", "_id", "text", "title")}
        return Document(str(doc_id), "" if text is None else str(text), "" if title is None else str(title), meta)
    if isinstance(item, tuple) and len(item) == 2:
        return Document(str(item[0]), "" if item[1] is None else str(item[1]))
    raise InputError(f"a document must be (id, text), a Document or a dict, got {type(item).__name__}")


@dataclass
class BuiltSegment:
    """A segment built in a scratch folder (which holds its store until ``cleanup``)."""

    segment: storage.Segment
    workdir: Scratch

    def cleanup(self) -> None:
        self.workdir.cleanup()


def build_segment(docs: Iterable[DocLike], tokenizer: Tokenizer, *, workers: int | None = None,
                  progress: Progress | None = None, source: str | Path | None = None,
                  pretokenized: bool = False, vocabulary: Sequence[str] | None = None,
                  backend: Backend | None = None, fields: Sequence[str] | None = None,
                  scratch: str | Path | None = None) -> BuiltSegment:
    """Analyse ``docs`` into one segment (streamed: texts go to the on-disk store, only postings stay
    in memory). A duplicate id raises InputError naming it (and ``source``, when given).

    With ``pretokenized``, ``docs`` are ``(id, tokens)`` pairs indexed as they are (no analysis);
    each stores its tokens joined by spaces as its text. With a ``vocabulary`` as well, the tokens
    are arrays of indices into it, and no text is stored. ``backend`` builds the postings (a new
    default one when None: see :mod:`bm25lab.engine.backends`). With ``fields`` (names: ``title``,
    ``text`` or a metadata key), each field is analysed on its own, a document's tokens are its fields'
    tokens one after the other, and the segment also records each field's lengths and frequencies
    (:class:`~bm25lab.engine.postings.Fields`, for BM25F). The store is written in a scratch folder in
    ``scratch`` (default: the system's temporary folder; :mod:`bm25lab.engine.scratch`).
    """
    workdir = Scratch(scratch)
    storage.checkpoint("scratch made")
    seen: dict[str, int] = {}
    try:
        chosen = backend or backends.create()
        if fields:
            names = check_fields(fields)
            batches = _analysed_fields(docs, tokenizer, workers, seen, source, names)
            builders = [PostingsBuilder(chosen) for _ in names]
        elif not pretokenized and tokenizer.splits_at_whitespace():  # the builder analyses the texts
            batches = _raw_texts(docs, seen, source)
            names, builders = (), []
        else:
            batches = (_given_tokens(docs, seen, source, vocabulary is None) if pretokenized
                       else _analysed(docs, tokenizer, workers, seen, source))
            names, builders = (), []
        builder = PostingsBuilder(chosen, vocabulary if pretokenized else None, analyse=tokenizer.tokenize,
                                  threads=worker_count(workers))
        segment = _build(batches, builder, seen, progress, workdir.path, names, builders)
        chosen.built(segment.postings, worker_count(workers))
        return BuiltSegment(segment, workdir)
    except BaseException:
        workdir.cleanup()
        raise


_BATCH_DOCS = 1000  # documents handed to the builder and the store at a time; progress is told per batch
_BATCH_SECONDS = 0.5  # ... or fewer, when analysing them takes longer: progress is told at least this often


def _take_for(items: Iterator[Any], count: int, seconds: float, size: Callable[[Any], int] | None = None) -> list[Any]:
    """Items until they hold ``count`` (each holding ``size(item)``, or 1), fewer when ``seconds``
    have passed since the first arrived (so a slow analysis, long Chinese documents say, still
    reports its progress every ``seconds``)."""
    taken: list[Any] = []
    held = 0
    deadline = None
    for item in items:
        taken.append(item)
        held += 1 if size is None else size(item)
        now = time.monotonic()
        deadline = deadline or now + seconds
        if held >= count or now >= deadline:
            break
    return taken


@dataclass(frozen=True)
class _Batch:
    """Consecutive documents: their store columns, their tokens and, when the stored text is the
    tokens joined by spaces, that text again for the builder (see :meth:`PostingsBuilder.add_many`)."""

    columns: tuple[Iterable[str], Iterable[str], Iterable[str], Iterable[str]]  # id, title, text, meta
    tokens: list[Sequence[str]]
    joined: list[str] | None = None
    packed: list[PackedTerms] | None = None  # instead of tokens: the documents' terms packed
    field_tokens: list[list[Sequence[str]]] | None = None  # per field, each document's tokens in it
    texts: list[str] | None = None  # instead of tokens: the texts the builder analyses (add_texts)


def check_fields(fields: Sequence[str]) -> tuple[str, ...]:
    """Field names as given: distinct, non-empty; a bad list is a ParameterError."""
    names = tuple(str(f) for f in fields)
    if not names or any(not n.strip() for n in names) or len(set(names)) != len(names):
        raise ParameterError(f"fields must be distinct non-empty names (title, text or metadata keys), got {list(fields)}")
    return names


def field_text(doc: Document, name: str) -> str:
    """The text of field ``name`` of ``doc``: its title, its text, or the metadata value (a string, or "")."""
    if name == "title":
        return doc.title
    if name == "text":
        return doc.text
    value = doc.metadata.get(name) if doc.metadata else None
    return value if isinstance(value, str) else "" if value is None else str(value)


def _register(seen: dict[str, int], doc_id: str, source: str | Path | None, offset: int = 0) -> None:
    """Number a new document; a duplicate id is an InputError naming both places (``offset``: how
    many documents of the input came before the first of ``seen``)."""
    number = len(seen)
    first = seen.setdefault(doc_id, number)
    if first != number:
        raise InputError(f"duplicate document id {doc_id!r} (documents {first + offset + 1} and "
                         f"{number + offset + 1} of the input)", source)


def _register_all(seen: dict[str, int], doc_ids: list[str], source: str | Path | None) -> None:
    """:func:`_register` every id of ``doc_ids``, in C calls when none is a duplicate."""
    first = len(seen)
    if seen.keys().isdisjoint(doc_ids) and len(set(doc_ids)) == len(doc_ids):
        seen.update(zip(doc_ids, range(first, first + len(doc_ids))))
        return
    for doc_id in doc_ids:
        _register(seen, doc_id, source)


def _analysed(docs: Iterable[DocLike], tokenizer: Tokenizer, workers: int | None, seen: dict[str, int],
              source: str | Path | None, offset: int = 0) -> Iterator[_Batch]:
    pending: deque[Document] = deque()

    def texts() -> Iterator[str]:
        for item in docs:
            doc = as_document(item)
            _register(seen, doc.id, source, offset)
            pending.append(doc)
            yield doc.full_text

    chunks = tokenizer.tokenize_chunks(texts(), workers=workers)
    while taken := _take_for(chunks, _BATCH_DOCS, _BATCH_SECONDS, size=len):
        rows = [fields(pending.popleft()) for _ in range(sum(map(len, taken)))]
        columns = tuple(zip(*rows))
        if all(isinstance(chunk, PackedTerms) for chunk in taken):
            yield _Batch(columns, [], packed=taken)  # type: ignore[arg-type]
        else:
            yield _Batch(columns, [t for chunk in taken for t in chunk_lists(chunk)])  # type: ignore[arg-type]


def _token_lists(batch: _Batch) -> list[Sequence[str]]:
    """Each document's tokens of ``batch``, its packed terms unpacked."""
    return batch.tokens if batch.packed is None else [t for chunk in batch.packed for t in chunk_lists(chunk)]


def _analysed_fields(docs: Iterable[DocLike], tokenizer: Tokenizer, workers: int | None, seen: dict[str, int],
                     source: str | Path | None, names: tuple[str, ...]) -> Iterator[_Batch]:
    """Batches whose documents' fields are analysed one by one (a token never spans two fields)."""
    pending: deque[Document] = deque()

    def texts() -> Iterator[str]:
        for item in docs:
            doc = as_document(item)
            _register(seen, doc.id, source)
            pending.append(doc)
            yield from (field_text(doc, name) for name in names)

    analysed = tokenizer.tokenize_many(texts(), workers=workers)
    width = len(names)
    while flat := list(islice(analysed, _BATCH_DOCS * width)):
        per_doc = [flat[i:i + width] for i in range(0, len(flat), width)]
        rows = [fields(pending.popleft()) for _ in per_doc]
        combined = [[token for part in doc for token in part] for doc in per_doc]
        by_field = [[doc[f] for doc in per_doc] for f in range(width)]
        yield _Batch(tuple(zip(*rows)), combined, field_tokens=by_field)  # type: ignore[arg-type]


def _given_tokens(docs: Iterable[tuple[str, Sequence[str]]], seen: dict[str, int], source: str | Path | None,
                  with_text: bool) -> Iterator[_Batch]:
    """Batches of ``(id, tokens)`` pairs, checked, numbered and joined in C calls (no Python step
    per document: ~1 us each saved)."""
    items = iter(docs)
    while batch := list(islice(items, _BATCH_DOCS)):
        if set(map(type, batch)) != {tuple} or set(map(len, batch)) != {2}:  # then look at each (subclasses)
            _refuse_first(batch, lambda i: not (isinstance(i, tuple) and len(i) == 2), source)
        ids, tokens = (list(column) for column in zip(*batch))
        if any(map(isinstance, tokens, repeat(str))):
            _refuse_first(batch, lambda i: isinstance(i[1], str), source)
        ids = list(map(str, ids))
        _register_all(seen, ids, source)
        texts = list(map(" ".join, tokens)) if with_text else None
        yield _Batch((ids, repeat(""), repeat("") if texts is None else texts, repeat("")), tokens, texts)


def _raw_texts(docs: Iterable[DocLike], seen: dict[str, int], source: str | Path | None) -> Iterator[_Batch]:
    """Batches of documents with their full texts, for a builder that analyses them itself: a batch of
    ``(id, text)`` string pairs is checked and numbered in C calls, any other one document by document."""
    items = iter(docs)
    while batch := list(islice(items, _BATCH_DOCS)):
        if set(map(type, batch)) == {tuple} and set(map(len, batch)) == {2}:
            ids, texts = (list(column) for column in zip(*batch))
            if set(map(type, ids)) == {str} and set(map(type, texts)) == {str}:
                _register_all(seen, ids, source)
                yield _Batch((ids, repeat(""), texts, repeat("")), [], texts=texts)
                continue
        rows, texts = [], []
        for item in batch:
            doc = as_document(item)
            _register(seen, doc.id, source)
            rows.append(fields(doc))
            texts.append(doc.full_text)
        yield _Batch(tuple(zip(*rows)), [], texts=texts)  # type: ignore[arg-type]


def worker_count(workers: int | None) -> int:
    """Threads of a batch search or of a build that analyses texts itself: ``workers``, or every usable core."""
    return max(1, int(workers)) if workers is not None else usable_cores()


def _refuse_first(items: list[Any], bad: Callable[[Any], bool], source: str | Path | None) -> None:
    """An InputError naming the first of ``items`` that is ``bad`` (none: nothing happens)."""
    for item in items:
        if bad(item):
            raise InputError(f"a pre-tokenized document must be (id, tokens), got {str(item)[:80]}", source)


def _build(batches: Iterable[_Batch], builder: PostingsBuilder, seen: dict[str, int], progress: Progress | None,
           folder: Path, names: tuple[str, ...] = (), field_builders: Sequence[PostingsBuilder] = ()) -> storage.Segment:
    store_path = folder / storage.STORE_FILE
    writer = DocStoreWriter(store_path)
    try:  # the store inserts each batch in its own thread while the builder works
        for batch in batches:
            writer.add_columns(builder.num_docs, *batch.columns)
            if batch.texts is not None:
                builder.add_texts(batch.texts)
            elif batch.packed is not None:
                builder.add_packed(batch.packed)
            else:
                builder.add_many(batch.tokens, batch.joined)
            for field_builder, tokens in zip(field_builders, batch.field_tokens or ()):
                field_builder.add_many(tokens)
            if progress is not None:
                progress(builder.num_docs)
        postings = builder.finish()
        fields = _aligned_fields(postings, names, [b.finish() for b in field_builders]) if names else None
        doc_ids = list(seen)
        ranks = builder.id_ranks(doc_ids)
    finally:
        builder.close()
        writer.close()
    if progress is not None and not postings.num_docs:
        progress(0)
    return storage.Segment(postings, doc_ids, ranks, store_path, fields)


def _aligned_fields(postings: Postings, names: tuple[str, ...], per_field: Sequence[Postings]) -> storage.Fields:
    """Each field's postings laid onto the document's (``(term, document)`` keys; a field's term is a
    term of the whole document): its frequencies aligned with ``postings``, and its lengths."""
    width = np.int64(max(postings.num_docs, 1))
    term_of = np.repeat(np.arange(postings.num_terms, dtype=np.int64), np.diff(np.asarray(postings.offsets)))
    keys = term_of * width + np.asarray(postings.doc_nums, dtype=np.int64)
    tfs = np.zeros((len(names), postings.num_postings), dtype=np.int32)
    lengths = np.zeros((len(names), postings.num_docs), dtype=np.int32)
    for f, part in enumerate(per_field):
        ids = postings.term_ids(list(part.terms))
        part_terms = np.repeat(ids, np.diff(np.asarray(part.offsets)))
        places = np.searchsorted(keys, part_terms * width + np.asarray(part.doc_nums, dtype=np.int64))
        tfs[f, places] = part.tfs
        lengths[f] = part.doc_lengths
    assert (tfs.sum(axis=0, dtype=np.int64) == postings.tfs).all(), "field frequencies must add up to the tf"
    return storage.Fields(names, lengths, tfs)


def build_routed(docs: Iterable[DocLike], tokenizer: Tokenizer, route: Callable[[str], int], count: int, *,
                 workers: int | None = None, progress: Progress | None = None, source: str | Path | None = None,
                 backend: Backend | None = None, offset: int = 0,
                 scratch: str | Path | None = None) -> tuple[list[storage.Segment], Scratch]:
    """Analyse ``docs`` once into ``count`` segments, document ``d`` going to segment ``route(d.id)``
    (streamed as :func:`build_segment`; in each segment the documents keep their input order); and
    the scratch folder holding the segments' stores, made in ``scratch`` (default: the system's
    temporary folder; :mod:`bm25lab.engine.scratch`). A duplicate id raises InputError naming it
    (its place counted from ``offset``: how many documents of the input come before ``docs``).
    """
    workdir = Scratch(scratch)
    storage.checkpoint("scratch made")
    try:
        seen: dict[str, int] = {}
        chosen = backend or backends.create()
        builders = [PostingsBuilder(chosen) for _ in range(count)]
        stores = [workdir.path / f"{i}-{storage.STORE_FILE}" for i in range(count)]
        writers: list[DocStoreWriter] = []
        ids: list[list[str]] = [[] for _ in range(count)]
        try:
            writers.extend(DocStoreWriter(path) for path in stores)
            for batch in _analysed(docs, tokenizer, workers, seen, source, offset):
                columns = [list(column) for column in batch.columns]
                tokens = _token_lists(batch)
                for target, rows in _grouped(list(map(route, columns[0]))).items():
                    pick = [column.__getitem__ for column in columns]
                    picked = [list(map(get, rows)) for get in pick]
                    writers[target].add_columns(builders[target].num_docs, *picked)
                    builders[target].add_many([tokens[r] for r in rows])
                    ids[target].extend(picked[0])
                if progress is not None:
                    progress(len(seen))
        finally:
            for writer in writers:
                writer.close()
        if progress is not None and not seen:
            progress(0)
        built = [storage.Segment(builder.finish(), doc_ids, id_ranks(doc_ids), path)
                 for builder, doc_ids, path in zip(builders, ids, stores)]
        return built, workdir
    except BaseException:
        workdir.cleanup()
        raise


def _grouped(targets: list[int]) -> dict[int, list[int]]:
    """``{target: [positions with that target, ascending]}``."""
    groups: dict[int, list[int]] = {}
    for position, target in enumerate(targets):
        groups.setdefault(target, []).append(position)
    return groups


# ---------------------------------------------------------------------------------------------
# Reading segments together


def merge(parts: Sequence[Part]) -> storage.Segment:
    """One searchable view of the live documents of ``parts``, numbered in segment order.

    A single part without deletions is returned as it is. Otherwise (vectorised, in blocks of about
    ``_BLOCK`` postings): the vocabularies are united in code point order and terms left without
    live postings dropped; ``df(t)`` is the sum of the parts' live document frequencies, which gives
    the merged ``offsets``; then each part, in order, scatters its live postings of term ``t`` to the
    next free places of ``t`` with its documents renumbered among the live ones. Parts come in
    document order and postings are document-ascending within a term in each part, so they are in
    the merged view too: the arrays are exactly those a fresh build of the live documents makes.
    The view has no store file (``store_path`` None): documents are read through the parts' stores.
    """
    if len(parts) == 1 and parts[0].deleted.shape[0] == 0:
        return parts[0].segment
    vocabulary = sorted(set().union(*(p.segment.postings.terms for p in parts)))
    lookup = dict(zip(vocabulary, range(len(vocabulary))))
    global_ids, live_masks, live_dfs = [], [], []
    df = np.zeros(len(vocabulary), dtype=np.int64)
    for part in parts:
        p = part.segment.postings
        global_id = np.fromiter(map(lookup.__getitem__, p.terms), dtype=np.int64, count=p.num_terms)
        live = part.live_mask()
        live_df = _live_df(p, live) if part.deleted.shape[0] else np.diff(np.asarray(p.offsets))
        df[global_id] += live_df
        global_ids.append(global_id)
        live_masks.append(live)
        live_dfs.append(live_df)
    used = np.flatnonzero(df)
    new_term = np.full(len(vocabulary), -1, dtype=np.int64)
    new_term[used] = np.arange(used.shape[0])
    offsets = np.zeros(used.shape[0] + 1, dtype=np.int64)
    np.cumsum(df[used], out=offsets[1:])
    doc_nums = np.empty(int(offsets[-1]), dtype=np.int32)
    tfs = np.empty(int(offsets[-1]), dtype=np.int32)
    names = _field_names(parts)
    field_tfs = np.empty((len(names), int(offsets[-1])), dtype=np.int32) if names else None
    free = offsets[:-1].copy()  # next free place of every merged term
    base = 0
    for part, global_id, live, live_df in zip(parts, global_ids, live_masks, live_dfs):
        p = part.segment.postings
        new_num = (np.cumsum(live, dtype=np.int64) - 1 + base).astype(np.int32)
        target = new_term[global_id]
        part_offsets = np.asarray(p.offsets)
        for lo, hi in _term_blocks(part_offsets):
            docs = np.asarray(p.doc_nums[part_offsets[lo]:part_offsets[hi]])
            tf = np.asarray(p.tfs[part_offsets[lo]:part_offsets[hi]])
            ftf = None if field_tfs is None else np.asarray(part.segment.fields.tfs[:, part_offsets[lo]:part_offsets[hi]])
            if part.deleted.shape[0]:
                keep = live[docs]
                docs, tf = docs[keep], tf[keep]
                ftf = None if ftf is None else ftf[:, keep]
            counts = live_df[lo:hi]
            present = counts > 0  # terms without live postings here have no merged place (target -1)
            terms, counts = target[lo:hi][present], counts[present]
            places = concat_ranges(free[terms], counts)  # each term's next free places
            doc_nums[places] = new_num[docs]
            tfs[places] = tf
            if field_tfs is not None:
                field_tfs[:, places] = ftf
            free[terms] += counts  # a part's terms are distinct, so plain fancy indexing adds correctly
        base += int(live.sum())
    doc_ids: list[str] = []
    for part, live in zip(parts, live_masks):
        doc_ids.extend(compress(part.segment.doc_ids, live.tolist()))
    lengths = [np.asarray(part.segment.postings.doc_lengths)[live] for part, live in zip(parts, live_masks)]
    postings = Postings(terms=[vocabulary[i] for i in used.tolist()], offsets=offsets, doc_nums=doc_nums, tfs=tfs,
                        doc_lengths=_concat(lengths, np.int32))
    fields = None
    if field_tfs is not None:
        field_lengths = [np.asarray(part.segment.fields.lengths)[:, live] for part, live in zip(parts, live_masks)]
        fields = storage.Fields(names, np.concatenate(field_lengths, axis=1).astype(np.int32)
                                if field_lengths else np.zeros((len(names), 0), np.int32), field_tfs)
    return storage.Segment(postings, doc_ids, id_ranks(doc_ids), None, fields)


def _field_names(parts: Sequence[Part]) -> tuple[str, ...]:
    """The fields every part has (all the same, or none)."""
    names = {p.segment.fields.names if p.segment.fields is not None else () for p in parts}
    if len(names) > 1:
        raise IndexFormatError(f"the index's segments have different fields: {sorted(names)}; rebuild the index")
    return names.pop() if names else ()


_BLOCK = 1 << 22  # postings handled at once while merging: bounds the temporary arrays


def _term_blocks(offsets: np.ndarray) -> Iterator[tuple[int, int]]:
    """Ranges ``[lo, hi)`` of term ids covering about ``_BLOCK`` postings each (one term at least)."""
    num_terms = offsets.shape[0] - 1
    lo = 0
    while lo < num_terms:
        hi = int(np.searchsorted(offsets, offsets[lo] + _BLOCK, side="right")) - 1
        hi = min(max(hi, lo + 1), num_terms)
        yield lo, hi
        lo = hi


def _live_df(postings: Postings, live: np.ndarray) -> np.ndarray:
    """The number of live postings of every term of ``postings`` (int64)."""
    offsets = np.asarray(postings.offsets)
    live_df = np.zeros(postings.num_terms, dtype=np.int64)
    for lo, hi in _term_blocks(offsets):
        keep = live[np.asarray(postings.doc_nums[offsets[lo]:offsets[hi]])]
        term_of = np.repeat(np.arange(hi - lo, dtype=np.int32), np.diff(offsets[lo:hi + 1]))
        live_df[lo:hi] = np.bincount(term_of[keep], minlength=hi - lo)
    return live_df


def _concat(arrays: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(0, dtype=dtype)


def live_counts(parts: Sequence[Part]) -> dict[str, int]:
    """The manifest's counts of the live documents, without merging the postings."""
    documents = total = postings = 0
    terms: set[str] = set()
    for part in parts:
        p = part.segment.postings
        live = part.live_mask()
        documents += int(live.sum())
        total += int(np.asarray(p.doc_lengths)[live].sum(dtype=np.int64))
        if part.deleted.shape[0] == 0:
            postings += p.num_postings
            terms.update(p.terms)
            continue
        live_df = _live_df(p, live)
        postings += int(live_df.sum())
        terms.update(compress(p.terms, (live_df > 0).tolist()))
    return {"documents": documents, "terms": len(terms), "postings": postings, "total_length": total}


def locate(parts: Sequence[Part], doc_ids: Sequence[str]) -> dict[str, tuple[int, int]]:
    """``{id: (part index, document number)}`` of the live documents among ``doc_ids``."""
    found: dict[str, tuple[int, int]] = {}
    for index, part in enumerate(parts):
        for doc_id, num in part.store.nums(doc_ids).items():
            found[doc_id] = (index, num)
    return found


def _delete_located(parts: Sequence[Part], located: Iterable[tuple[int, int]]) -> list[Part]:
    """``parts`` with the located documents deleted; segments left without live documents dropped."""
    by_part: dict[int, list[int]] = {}
    for index, num in located:
        by_part.setdefault(index, []).append(num)
    updated = [part.with_deleted(by_part[i]) if i in by_part else part for i, part in enumerate(parts)]
    return [part for part in updated if part.num_live > 0]


def with_added(parts: Sequence[Part], new: Part) -> tuple[list[Part], int]:
    """``parts`` plus ``new``, older documents with the same ids deleted; and how many were replaced."""
    located = locate(parts, new.segment.doc_ids)
    kept = _delete_located(parts, located.values())
    return (kept + [new] if new.num_live else kept), len(located)


def with_deleted(parts: Sequence[Part], doc_ids: Iterable[str]) -> tuple[list[Part], int]:
    """``parts`` with ``doc_ids`` deleted, and how many; an unknown id is an InputError (nothing deleted)."""
    wanted = list(dict.fromkeys(doc_ids))
    located = locate(parts, wanted)
    unknown = [doc_id for doc_id in wanted if doc_id not in located]
    if unknown:
        shown = ", ".join(repr(u) for u in unknown[:10]) + (f" and {len(unknown) - 10} more" if len(unknown) > 10 else "")
        raise InputError(f"no such document{'s' if len(unknown) > 1 else ''} in the index: {shown}; nothing was deleted")
    return _delete_located(parts, located.values()), len(located)


def merged_part(parts: Sequence[Part], folder: Path) -> Part:
    """The live documents of ``parts`` as one new segment (postings and store) in ``folder``;
    segments loaded without verification are verified first (:meth:`Part.check`)."""
    for part in parts:
        part.check()
    view = merge(parts)
    store_path = folder / storage.STORE_FILE
    writer = DocStoreWriter(store_path)
    try:
        num = 0
        for part in parts:
            for row in part.store.rows():
                writer.add_row((num,) + tuple(row[1:]))
                num += 1
    finally:
        writer.close()
    assert num == view.postings.num_docs
    return Part(storage.Segment(view.postings, view.doc_ids, view.id_rank, store_path, view.fields))


def load_parts(directory: Path, manifest: dict[str, Any], verify: bool = True, mmap: bool = True,
               root: Path | None = None) -> list[Part]:
    """The segments a (checked) manifest names, with their deletions.

    Every file is opened before any is read, the stores included (SQLite opens its file when it
    connects), so that a writer that commits meanwhile and removes them takes nothing from under
    this reader; a file already gone raises :class:`~bm25lab.engine.storage.MissingFile`.
    Deletion files are always verified: they are small, and a change rewrites them. ``root``: the
    folder that holds ``directory`` (a sharded index's, for a shard; default ``directory``): no folder
    below it is followed through a link (:class:`~bm25lab.engine.storage.Pins`)."""
    with storage.Pins(root or directory) as pins:
        return parts_of(directory, manifest, pins, pin_parts(directory, manifest, pins), verify, mmap)


def pin_parts(directory: Path, manifest: dict[str, Any], pins: storage.Pins) -> list[DocStore]:
    """Open every file of the segments a (checked) manifest names, and their stores (closed again
    if one is missing): the first half of :func:`load_parts`, for a reader that pins the files of
    several indexes before it reads any (:mod:`bm25lab.engine.shards`)."""
    stores: list[DocStore] = []
    try:
        for entry in manifest["segments"]:
            storage.pin_entry(directory, entry, pins)
            path = directory / entry["name"] / storage.STORE_FILE
            stores.append(open_store(path, pins.open(path)))
    except BaseException:
        for store in stores:
            store.close()
        raise
    return stores


def parts_of(directory: Path, manifest: dict[str, Any], pins: storage.Pins, stores: list[DocStore],
             verify: bool = True, mmap: bool = True) -> list[Part]:
    """The second half of :func:`load_parts`: the segments read from their pinned files and opened
    ``stores`` (closed if reading fails)."""
    try:
        return [Part(storage.load_segment(directory, entry, pins, verify=verify, mmap=mmap),
                     storage.load_deletions(directory, entry, pins, verify=True), entry, verify, store)
                for entry, store in zip(manifest["segments"], stores)]
    except BaseException:
        for store in stores:
            store.close()
        raise


def open_store(path: Path, fd: int) -> DocStore:
    """The store ``path`` that ``fd`` holds open (a regular file: :class:`~bm25lab.engine.storage.Pins`).
    SQLite opens a file by its path itself, so the path is checked, once it has, to name still the very
    file ``fd`` holds: what was checked is what is read (:mod:`bm25lab.engine.files`)."""
    pinned = os.fstat(fd)
    try:
        store = DocStore(path)
    except sqlite3.Error as exc:
        if not os.path.lexists(path):
            raise storage.MissingFile(f"{path}: missing index file; rebuild the index") from None
        raise IndexFormatError(f"{path}: unreadable document store ({exc}); rebuild the index") from None
    try:
        now = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        now = None
    if now is None or (now.st_dev, now.st_ino) != (pinned.st_dev, pinned.st_ino):
        store.close()
        if now is None:
            raise storage.MissingFile(f"{path}: missing index file; rebuild the index")
        raise IndexFormatError(f"{path}: replaced while it was being opened; try again")
    return store


# ---------------------------------------------------------------------------------------------
# Committing changes to an index directory


def _commit(directory: Path, manifest: dict[str, Any], parts: Sequence[Part], move_stores: bool) -> None:
    """Write what ``parts`` need that is not on disk yet, then atomically replace the manifest.

    The caller holds the writer's lock. ``move_stores``: the new segments' stores are temporary files.
    If anything fails (a full disk), what this commit wrote is removed again (everything it writes
    is journaled first: :func:`bm25lab.engine.storage.settle`) and the error, naming its file, raised.
    """
    try:
        storage.write_manifest(directory, manifest_of(directory, manifest, parts, move_stores))
    except BaseException:
        try:
            storage.settle(directory)
        except OSError:
            pass  # the next writer finishes it
        raise


def manifest_of(directory: Path, manifest: dict[str, Any], parts: Sequence[Part], move_stores: bool) -> dict[str, Any]:
    """``manifest`` updated to name ``parts`` (at this format version, with their counts), after
    writing what they need that is not on disk yet (new segment folders, deletion files: journaled
    first) into ``directory``; nothing is committed. The caller holds the writer's lock (of
    ``directory``, or of the sharded index it is a shard of), and removes what was written if the
    commit does not happen (:func:`bm25lab.engine.storage.settle`)."""
    entries = []
    for part in parts:
        if part.entry is None:
            seg = part.segment
            assert seg.store_path is not None
            entry = storage.write_segment(directory, seg.postings, seg.doc_ids, seg.id_rank, seg.store_path,
                                          move_store=move_stores, fields=seg.fields, pairs=seg.pairs)
        else:
            entry = {k: v for k, v in part.entry.items() if k != "deleted"}
        if part.deleted.shape[0]:
            old = part.entry.get("deleted") if part.entry else None
            same = old is not None and old["count"] == part.deleted.shape[0]  # deletions only grow
            entry["deleted"] = old if same else storage.write_deletions(directory, part.deleted)
        entries.append(entry)
    return dict(manifest, format_version=storage.FORMAT_VERSION, counts=live_counts(parts), segments=entries)


def _config_key(config: Any) -> str:
    return json.dumps(config, sort_keys=True, ensure_ascii=False)


SHARD_KEY = "shard"  # in the manifest of an index that is a shard of a sharded index (bm25lab.engine.shards)


def refuse_shard(directory: Path) -> None:
    """An index that is a shard of a sharded index changes only with it (its global statistics
    would no longer be those of its documents, and its files are settled by the sharded index's
    writers): IndexFormatError when ``directory``'s manifest, read leniently (damaged or not), says
    it is one. Called before a writer removes anything."""
    try:
        manifest = json.loads((directory / storage.MANIFEST).read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return
    if isinstance(manifest, dict) and manifest.get(SHARD_KEY) is not None:
        raise IndexFormatError(f"{directory}: this index is a shard of the sharded index {directory.parent}; "
                               f"change that one instead")


def _refuse_sharded(directory: Path) -> None:
    if (directory / storage.SHARDED_MANIFEST).exists():
        raise InputError("holds a sharded index; an ordinary index cannot replace it (choose another folder, "
                         "or remove it)", directory)


@contextmanager
def _transaction(directory: Path, verify: bool, tokenizer_config: dict[str, Any] | None = None,
                 fields: tuple[str, ...] | None = None) -> Iterator[tuple[dict[str, Any], list[Part]]]:
    """Under the writer's lock: the current manifest of ``directory`` and its parts, after removing
    what an earlier writer that failed or was killed left (:func:`bm25lab.engine.storage.settle`).
    With ``tokenizer_config``, the index must still use the tokenizer (and the ``fields``) the new
    documents were analysed with."""
    with write_lock(directory):
        refuse_shard(directory)  # before settle: a shard's files are the sharded index's to settle
        storage.settle(directory)
        manifest = storage.read_manifest(directory)
        if tokenizer_config is not None and (_config_key(manifest["tokenizer"]) != _config_key(tokenizer_config)
                                             or index_fields(manifest) != fields):
            raise IndexFormatError(f"{directory}: the index was replaced by one with another tokenizer or other "
                                   f"fields while the documents were being analysed; run the command again")
        yield manifest, load_parts(directory, manifest, verify=verify)


def add_documents(directory: str | Path, docs: Iterable[DocLike], *, workers: int | None = None,
                  progress: Progress | None = None, source: str | Path | None = None,
                  verify: bool = True, backend: Backend | None = None) -> Change:
    """Add ``docs`` to the index in ``directory`` as a new segment; an id already in the index
    replaces that document. Bad input raises before anything is written. The documents are
    analysed into a scratch folder inside ``directory`` (:mod:`bm25lab.engine.scratch`)."""
    directory = Path(directory)
    manifest = storage.read_manifest(directory)
    refuse_shard(directory)  # before the work (and again under the lock)
    config = manifest["tokenizer"]
    tokenizer = Tokenizer.from_config(config)
    check_unlocked(directory)
    names = index_fields(manifest)
    built = build_segment(docs, tokenizer, workers=workers, progress=progress, source=source, backend=backend,
                          fields=names, scratch=directory)
    try:
        if built.segment.postings.num_docs == 0:
            return _unchanged(directory, verify)
        with _transaction(directory, verify, config, names) as (current, parts):
            updated, replaced = with_added(parts, Part(built.segment))
            _commit(directory, current, updated, move_stores=True)
        return Change(added=built.segment.postings.num_docs, replaced=replaced,
                      documents=sum(p.num_live for p in updated), segments=len(updated))
    finally:
        built.cleanup()


def delete_documents(directory: str | Path, doc_ids: Iterable[str], *, verify: bool = True) -> Change:
    """Delete the documents ``doc_ids`` from the index in ``directory``. An id that is not in the index
    raises InputError naming it, and nothing is deleted."""
    directory = Path(directory)
    storage.read_manifest(directory)
    wanted = list(doc_ids)
    with _transaction(directory, verify) as (manifest, parts):
        try:
            updated, deleted = with_deleted(parts, wanted)
        except InputError as exc:
            raise InputError(exc.reason, directory) from None
        if deleted:
            _commit(directory, manifest, updated, move_stores=False)
    return Change(deleted=deleted, documents=sum(p.num_live for p in updated), segments=len(updated))


def optimize(directory: str | Path, *, verify: bool = True) -> Change:
    """Merge the segments of the index in ``directory`` into one, dropping deleted documents.
    An index that is one segment without deletions is left as it is. The segments are verified
    before they are rewritten whatever ``verify`` says (damaged data never gets fresh checksums);
    the merge is written in a scratch folder inside ``directory``."""
    directory = Path(directory)
    storage.read_manifest(directory)
    with _transaction(directory, verify) as (manifest, parts):
        documents = sum(p.num_live for p in parts)
        if len(parts) <= 1 and sum(int(p.deleted.shape[0]) for p in parts) == 0:
            return Change(documents=documents, segments=len(parts))
        purged = sum(int(p.deleted.shape[0]) for p in parts)
        scratch = Scratch(directory)
        storage.checkpoint("scratch made")
        try:
            merged = [merged_part(parts, scratch.path)] if documents else []
            _commit(directory, manifest, merged, move_stores=True)
        finally:
            scratch.cleanup()
    return Change(merged=len(parts), purged=purged, documents=documents, segments=len(merged))


def replace_all(directory: Path, parts: Sequence[Part], tokenizer_config: dict[str, Any],
                overwrite: bool) -> None:
    """Write ``parts`` (merged into one segment unless already one) as the whole index in ``directory``,
    under the writer's lock. ``directory`` must be new, empty or hold only what an unfinished build
    left; an existing index is replaced only with ``overwrite``, and never a folder holding anything
    else (:func:`bm25lab.engine.storage.check_target`), a sharded index, or a shard of one. Segments
    loaded without verification are verified before they are rewritten."""
    _refuse_sharded(directory)
    refuse_shard(directory)
    storage.check_target(directory, overwrite)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(directory)) from None
    with write_lock(directory):
        _refuse_sharded(directory)  # again, now that no other writer can change it, before anything is removed
        refuse_shard(directory)
        storage.check_target(directory, overwrite)
        storage.settle(directory)
        manifest = {"format": storage.FORMAT_NAME, "format_version": storage.FORMAT_VERSION,
                    "tokenizer": tokenizer_config}
        names = _field_names(parts)
        if names:
            manifest["fields"] = list(names)
        for part in parts:
            part.check()
        if len(parts) == 1 and parts[0].deleted.shape[0] == 0:
            _commit(directory, manifest, [Part(parts[0].segment, opened=parts[0].store)], move_stores=False)
            return
        scratch = Scratch(directory)
        storage.checkpoint("scratch made")
        try:
            merged = [merged_part(parts, scratch.path)] if sum(p.num_live for p in parts) else []
            _commit(directory, manifest, merged, move_stores=True)
        finally:
            scratch.cleanup()


def index_fields(manifest: dict[str, Any]) -> tuple[str, ...] | None:
    """The fields an index directory was built with (None: built without fields)."""
    names = manifest.get("fields")
    return tuple(names) if isinstance(names, list) and names else None


def _unchanged(directory: Path, verify: bool) -> Change:
    manifest = storage.read_manifest(directory)
    parts = load_parts(directory, manifest, verify=verify)
    return Change(documents=sum(p.num_live for p in parts), segments=len(parts))
