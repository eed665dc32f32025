"""The ``Index``: build from documents, search, save and load.

    index = Index.build(docs, tokenizer=Tokenizer("auto"))
    index.search("清华大学", k=10)                      # -> [Hit(doc_id, score), ...]
    index.search_many({"q1": "..."}, k=1000)            # -> {"q1": [Hit, ...]}
    index.save("my-index"); Index.load("my-index")

Documents are ``(doc_id, text)`` pairs, :class:`~engine.records.Document` objects, or dicts with
``id`` or ``_id``, ``text``, optional ``title`` and any other keys (kept as metadata).
"""
from __future__ import annotations

import os
import tempfile
from collections import deque
import weakref
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from . import accel, storage
from .docstore import DocStore, DocStoreWriter
from .errors import IndexFormatError, InputError
from .postings import PostingsBuilder
from .records import Document, Hit
from .retrieval import QueryBatch, QueryTerms, Scorer
from .scoring import DEFAULT_B, DEFAULT_K1, DEFAULT_VARIANT, Params
from .selection import id_ranks
from .tokenization import Tokenizer

DocLike = Document | tuple[str, str] | Mapping[str, Any]
Progress = Callable[[int], None]

# Batches smaller than this are scored in-process: a worker pool costs more than it saves.
_MIN_PARALLEL_QUERIES = 64


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


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k <= 0:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    return int(k)


class Index:
    """A searchable BM25 index: postings, document ids, tokenizer and document store."""

    def __init__(self, segment: storage.Segment, tokenizer: Tokenizer, path: Path | None = None,
                 workdir: tempfile.TemporaryDirectory | None = None) -> None:
        self._segment = segment
        self.tokenizer = tokenizer
        self.path = path
        self._workdir = workdir
        self._scorer = Scorer(segment.postings, segment.id_rank)
        self._store = DocStore(segment.store_path)

    # ------------------------------------------------------------------ building
    @classmethod
    def build(cls, docs: Iterable[DocLike], tokenizer: Tokenizer | None = None, *, workers: int | None = None,
              progress: Progress | None = None) -> "Index":
        """Index ``docs`` (streamed: texts go to the on-disk store, only postings stay in memory).

        A duplicate id raises InputError naming it; an empty document is kept with length 0.
        ``progress`` is called with the number of documents indexed so far, every 1,000 documents.
        """
        tokenizer = tokenizer or Tokenizer()
        workdir = tempfile.TemporaryDirectory(prefix="bm25lab-build-")
        store_path = Path(workdir.name) / storage.STORE_FILE
        writer = DocStoreWriter(store_path)
        builder = PostingsBuilder()
        seen: dict[str, int] = {}
        pending: deque[Document] = deque()

        def texts() -> Iterator[str]:
            for item in docs:
                doc = as_document(item)
                if doc.id in seen:
                    raise InputError(f"duplicate document id {doc.id!r}")
                seen[doc.id] = len(seen)
                pending.append(doc)
                yield doc.full_text

        try:
            for tokens in tokenizer.tokenize_many(texts(), workers=workers):
                writer.add(builder.add(tokens), pending.popleft())
                if progress is not None and builder.num_docs % 1000 == 0:
                    progress(builder.num_docs)
        finally:
            writer.close()
        if progress is not None:
            progress(builder.num_docs)
        postings = builder.finish()
        doc_ids = list(seen)
        segment = storage.Segment(postings, doc_ids, id_ranks(doc_ids), store_path)
        index = cls(segment, tokenizer, None, workdir)
        weakref.finalize(index, workdir.cleanup)
        return index

    # ------------------------------------------------------------------ disk
    def save(self, path: str | Path, overwrite: bool = False) -> Path:
        """Write the index to directory ``path`` (atomically: see :mod:`engine.storage`)."""
        directory = Path(path)
        if (directory / storage.MANIFEST).exists() and not overwrite:
            raise FileExistsError(f"{directory}: an index exists already (use overwrite=True to replace it)")
        if directory.exists() and not directory.is_dir():
            raise InputError("exists and is not a directory", directory)
        directory.mkdir(parents=True, exist_ok=True)
        seg = self._segment
        entry = storage.write_segment(directory, seg.postings, seg.doc_ids, seg.id_rank, seg.store_path)
        manifest = {
            "format": storage.FORMAT_NAME,
            "format_version": storage.FORMAT_VERSION,
            "tokenizer": self.tokenizer.config(),
            "counts": self.counts(),
            "segments": [entry],
        }
        storage.write_manifest(directory, manifest)
        return directory

    @classmethod
    def load(cls, path: str | Path, verify: bool = True, mmap: bool = True) -> "Index":
        """Load a saved index; arrays are memory-mapped. Damage or a foreign version is IndexFormatError."""
        directory = Path(path)
        manifest = storage.read_manifest(directory)
        try:
            tokenizer = Tokenizer.from_config(manifest["tokenizer"])
            entries = manifest["segments"]
        except (KeyError, TypeError, ValueError) as exc:
            raise IndexFormatError(f"{directory / storage.MANIFEST}: bad manifest ({exc}); rebuild the index") from None
        if len(entries) != 1:
            raise IndexFormatError(f"{directory}: expected one segment, found {len(entries)}")
        segment = storage.load_segment(directory, entries[0], verify=verify, mmap=mmap)
        return cls(segment, tokenizer, directory)

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
    def doc_ids(self) -> Sequence[str]:
        return self._segment.doc_ids

    def counts(self) -> dict[str, int]:
        lengths = self._segment.postings.doc_lengths
        return {"documents": self.num_docs, "terms": self.num_terms, "postings": self.num_postings,
                "total_length": int(lengths.sum(dtype=np.int64))}

    def document(self, doc_id: str) -> Document | None:
        """The stored document (title, text, metadata), or None for an unknown id."""
        return self._store.get(doc_id)

    def documents(self) -> Iterator[Document]:
        """Every stored document, in indexing order."""
        return iter(self._store.iter_documents())

    # ------------------------------------------------------------------ search
    def search(self, query: str, k: int = 10, variant: str = DEFAULT_VARIANT, k1: float = DEFAULT_K1,
               b: float = DEFAULT_B, delta: float | None = None) -> list[Hit]:
        """The best ``k`` documents for ``query``: score descending, ties by document id descending."""
        return self.search_tokens(self.tokenizer.tokenize(query), k, variant, k1, b, delta)

    def search_tokens(self, tokens: Sequence[str], k: int = 10, variant: str = DEFAULT_VARIANT,
                      k1: float = DEFAULT_K1, b: float = DEFAULT_B, delta: float | None = None) -> list[Hit]:
        """Like :meth:`search` for an already analysed query."""
        k = _check_k(k)
        params = Params(variant, k1, b, delta).resolved()
        docs, scores = self._scorer.top(self._scorer.query_terms(tokens), k, params)
        return self._hits(docs, scores)

    def search_many(self, queries: Mapping[str, str], k: int = 1000, variant: str = DEFAULT_VARIANT,
                    k1: float = DEFAULT_K1, b: float = DEFAULT_B, delta: float | None = None,
                    workers: int | None = None) -> dict[str, list[Hit]]:
        """Search every query of ``{qid: text}``; every core is used for large batches."""
        qids = list(queries)
        tokens = list(self.tokenizer.tokenize_many((queries[q] for q in qids), workers=workers))
        results = self.retrieve_tokens(tokens, k, variant, k1, b, delta, workers)
        return {qid: self._hits(d, s) for qid, (d, s) in zip(qids, results)}

    def retrieve_tokens(self, queries: Sequence[Sequence[str]], k: int = 1000, variant: str = DEFAULT_VARIANT,
                        k1: float = DEFAULT_K1, b: float = DEFAULT_B, delta: float | None = None,
                        workers: int | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
        """Batch search on analysed queries: per query, (document numbers, scores), best first."""
        k = _check_k(k)
        params = Params(variant, k1, b, delta).resolved()
        terms = [self._scorer.query_terms(q) for q in queries]
        self._scorer.prepare(params)
        workers = _worker_count(workers)
        compiled = accel.batch_top_k(self._scorer, terms, k, params, workers)
        if compiled is not None:
            return compiled
        if workers <= 1 or len(terms) < _MIN_PARALLEL_QUERIES:
            return [self._scorer.top(q, k, params, use_prepared=True) for q in terms]
        return _parallel_top(self._scorer, terms, k, params, workers)

    def batch(self, queries: Mapping[str, str]) -> "PreparedBatch":
        """Analyse ``{qid: text}`` and gather its postings once, to score it under many parameter sets
        (grid search): each :meth:`PreparedBatch.search` reuses the postings and the tokens."""
        qids = list(queries)
        tokens = self.tokenizer.tokenize_many(queries[q] for q in qids)
        return PreparedBatch(self, qids, QueryBatch(self._scorer, [self._scorer.query_terms(t) for t in tokens]))

    def _hits(self, docs: np.ndarray, scores: np.ndarray) -> list[Hit]:
        ids = self._segment.doc_ids
        fetch = self._store.get
        return [Hit(ids[d], s, fetch) for d, s in zip(docs.tolist(), scores.tolist())]

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
               delta: float | None = None) -> dict[str, list[tuple[str, float]]]:
        """``{qid: [(doc_id, score), ...]}``, best first: the same results as :meth:`Index.search_many`."""
        k = _check_k(k)
        params = Params(variant, k1, b, delta).resolved()
        ids = self.index.doc_ids
        return {qid: [(ids[d], s) for d, s in zip(docs.tolist(), scores.tolist())]
                for qid, (docs, scores) in zip(self.qids, self._batch.top(params, k))}


# ---------------------------------------------------------------------- parallel batches
def _worker_count(workers: int | None) -> int:
    if workers is not None:
        return max(1, int(workers))
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


_FORKED: tuple[Scorer, list[QueryTerms], int, Params] | None = None


def _score_range(bounds: tuple[int, int]) -> list[tuple[np.ndarray, np.ndarray]]:
    assert _FORKED is not None
    scorer, terms, k, params = _FORKED
    return [scorer.top(q, k, params, use_prepared=True) for q in terms[bounds[0]:bounds[1]]]


def _parallel_top(scorer: Scorer, terms: list[QueryTerms], k: int, params: Params,
                  workers: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Score contiguous slices of the batch in forked workers that share the prepared weights."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    global _FORKED
    chunk = max(16, -(-len(terms) // (workers * 4)))
    bounds = [(i, min(i + chunk, len(terms))) for i in range(0, len(terms), chunk)]
    _FORKED = (scorer, terms, k, params)
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            parts = list(pool.map(_score_range, bounds))
    finally:
        _FORKED = None
    return [result for part in parts for result in part]
