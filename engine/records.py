"""Immutable records at the engine's boundaries: documents in, hits and batches of results out.

:class:`Results` is the one columnar result type from the engine to the evaluation: a batch's
rankings as flat arrays, in the tie-rule order, with the index's document ids and their hashes, so
that :meth:`bm25lab.evaluation.Run.from_results` makes a run of it without sorting or hashing.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Callable, overload

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True, slots=True)
class Document:
    """One document as read from a source: external id, text, optional title and metadata."""

    id: str
    text: str
    title: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def full_text(self) -> str:
        """What the index analyses: the title, a newline, then the text (the text alone without a title)."""
        return f"{self.title}\n{self.text}" if self.title else self.text


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result. ``title`` and ``text`` are read from the index's document store on demand."""

    doc_id: str
    score: float
    _fetch: Callable[[str], Document | None] | None = field(default=None, repr=False, compare=False)

    @property
    def document(self) -> Document | None:
        return None if self._fetch is None else self._fetch(self.doc_id)

    @property
    def title(self) -> str:
        doc = self.document
        return "" if doc is None else doc.title

    @property
    def text(self) -> str:
        doc = self.document
        return "" if doc is None else doc.text


class Hits(Sequence[Hit]):
    """One query's results, best first: an immutable sequence of :class:`Hit`, each made when it is read.

    ``doc_ids`` and ``scores`` give the whole ranking as two columns without a ``Hit`` per result (a
    batch of 1,000 queries at k = 1,000 holds a million results). A ``Hits`` equals any sequence of
    the same hits, a list included.
    """

    __slots__ = ("_numbers", "_scores", "_ids", "_fetch")

    def __init__(self, numbers: np.ndarray, scores: np.ndarray, ids: Sequence[str],
                 fetch: Callable[[str], Document | None] | None = None) -> None:
        self._numbers = numbers  # document numbers into ``ids``
        self._scores = scores
        self._ids = ids
        self._fetch = fetch

    @property
    def doc_ids(self) -> list[str]:
        """The documents' ids, best first."""
        return list(map(self._ids.__getitem__, self._numbers.tolist()))

    @property
    def scores(self) -> list[float]:
        """The scores, best first."""
        return self._scores.tolist()

    def __len__(self) -> int:
        return len(self._numbers)

    @overload
    def __getitem__(self, i: int) -> Hit: ...

    @overload
    def __getitem__(self, i: slice) -> Hits: ...

    def __getitem__(self, i: int | slice) -> Hit | Hits:
        if isinstance(i, slice):
            return Hits(self._numbers[i], self._scores[i], self._ids, self._fetch)
        return Hit(self._ids[self._numbers[i]], float(self._scores[i]), self._fetch)

    def __iter__(self) -> Iterator[Hit]:
        ids, fetch = self._ids, self._fetch
        return (Hit(ids[d], s, fetch) for d, s in zip(self._numbers.tolist(), self._scores.tolist()))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Hits):
            return self.doc_ids == other.doc_ids and self.scores == other.scores
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return list(self) == list(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        shown = ", ".join(map(repr, self[:3]))
        more = f", ... {len(self) - 3} more" if len(self) > 3 else ""
        return f"Hits([{shown}{more}])"


@dataclass(frozen=True)
class IndexInfo:
    """What :meth:`bm25lab.engine.Index.info` tells of an index."""

    path: str | None  # None for an index that was never saved
    format_version: int
    documents: int
    terms: int
    postings: int
    average_length: float
    size_bytes: int | None  # on disk; None for an index that was never saved
    segments: int
    backend: str
    tokenizer: Mapping[str, Any]
    fields: tuple[str, ...] = ()  # the fields it was built with, for BM25F (none: built without)

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


class DocIds(Sequence[str]):
    """An index's external document ids by document number, with the string column and the hash of
    every id (:func:`bm25lab.engine.columns.string_hashes`) made once, when first asked for."""

    __slots__ = ("ids", "__dict__")

    def __init__(self, ids: Sequence[str]) -> None:
        self.ids = ids

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[str]: ...

    def __getitem__(self, i: int | slice) -> str | Sequence[str]:
        return self.ids[i]

    @cached_property
    def column(self) -> pa.Array:
        """The ids as a pyarrow string array."""
        from .columns import string_array

        return string_array(self.ids)

    @cached_property
    def hashes(self) -> np.ndarray:
        """The 64-bit hash of every id (uint64)."""
        from .columns import string_hashes

        return string_hashes(self.column)


class RankedRows(Sequence[tuple[np.ndarray, np.ndarray]]):
    """A batch's rankings as flat columns: query ``i``'s best documents are ``doc_nums[offsets[i]:
    offsets[i + 1]]`` with ``scores`` (float64) alongside, best first. A sequence of (document
    numbers, scores) pairs to read; :meth:`Results.of` takes its columns as they are."""

    __slots__ = ("offsets", "doc_nums", "scores")

    def __init__(self, offsets: np.ndarray, doc_nums: np.ndarray, scores: np.ndarray) -> None:
        self.offsets = offsets
        self.doc_nums = doc_nums
        self.scores = scores

    @classmethod
    def of_padded(cls, docs: np.ndarray, scores: np.ndarray, lengths: np.ndarray) -> "RankedRows":
        """Row ``i`` of the 2-d ``docs`` and ``scores`` (C-contiguous, given up to this), cut to
        ``lengths[i]`` (what lies past it is never read), in their own memory: the rows after the first
        short one moved up behind it."""
        rows, width = docs.shape
        offsets = np.zeros(rows + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        flat_docs, flat_scores = docs.reshape(-1), scores.reshape(-1)
        short = np.flatnonzero(lengths < width)
        if short.size:
            for i, (start, n) in enumerate(zip(offsets[1:-1].tolist(), lengths[1:].tolist()), 1):
                if i > short[0]:
                    flat_docs[start:start + n] = flat_docs[i * width:i * width + n]
                    flat_scores[start:start + n] = flat_scores[i * width:i * width + n]
        total = int(offsets[-1])
        return cls(offsets, flat_docs[:total], flat_scores[:total])

    def __len__(self) -> int:
        return int(self.offsets.shape[0]) - 1

    @overload
    def __getitem__(self, i: int) -> tuple[np.ndarray, np.ndarray]: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[tuple[np.ndarray, np.ndarray]]: ...

    def __getitem__(self, i: int | slice) -> tuple[np.ndarray, np.ndarray] | Sequence[tuple[np.ndarray, np.ndarray]]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        i %= len(self)
        a, z = int(self.offsets[i]), int(self.offsets[i + 1])
        return self.doc_nums[a:z], self.scores[a:z]


class Results(Mapping[str, Hits]):
    """A batch's results: for each query, in the order given, its best documents as :class:`Hits`.

    A mapping ``{qid: Hits}`` to read, and flat columns to compute with: query ``qids[i]`` owns the
    rows ``offsets[i]:offsets[i + 1]`` of ``doc_nums`` (document numbers into ``doc_ids``) and
    ``scores`` (float64), best first, ties by document id descending (trec_eval's order).
    """

    __slots__ = ("qids", "offsets", "doc_nums", "scores", "doc_ids", "_fetch", "_position")

    def __init__(self, qids: Sequence[str], offsets: np.ndarray, doc_nums: np.ndarray, scores: np.ndarray,
                 doc_ids: DocIds, fetch: Callable[[str], Document | None] | None = None) -> None:
        self.qids = tuple(qids)
        self.offsets = offsets
        self.doc_nums = doc_nums
        self.scores = scores
        self.doc_ids = doc_ids
        self._fetch = fetch
        self._position: dict[str, int] | None = None

    @classmethod
    def of(cls, qids: Sequence[str], ranked: Sequence[tuple[np.ndarray, np.ndarray]], doc_ids: DocIds,
           fetch: Callable[[str], Document | None] | None = None) -> "Results":
        """The results of ``qids[i]`` = ``ranked[i]`` (document numbers, scores), laid end to end
        (:class:`RankedRows` are already)."""
        if isinstance(ranked, RankedRows):
            return cls(qids, ranked.offsets, ranked.doc_nums.astype(np.int64, copy=False),
                       ranked.scores.astype(np.float64, copy=False), doc_ids, fetch)
        offsets = np.zeros(len(ranked) + 1, dtype=np.int64)
        np.cumsum([docs.shape[0] for docs, _ in ranked], out=offsets[1:])
        if ranked:
            doc_nums = np.concatenate([np.asarray(docs, dtype=np.int64) for docs, _ in ranked])
            scores = np.concatenate([np.asarray(s, dtype=np.float64) for _, s in ranked])
        else:
            doc_nums, scores = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        return cls(qids, offsets, doc_nums, scores, doc_ids, fetch)

    def __len__(self) -> int:
        return len(self.qids)

    def __iter__(self) -> Iterator[str]:
        return iter(self.qids)

    def __contains__(self, qid: object) -> bool:
        return qid in self._positions()

    def __getitem__(self, qid: str) -> Hits:
        i = self._positions()[qid]
        a, z = int(self.offsets[i]), int(self.offsets[i + 1])
        return Hits(self.doc_nums[a:z], self.scores[a:z], self.doc_ids.ids, self._fetch)

    def _positions(self) -> dict[str, int]:
        if self._position is None:
            self._position = {qid: i for i, qid in enumerate(self.qids)}
        return self._position

    @property
    def num_results(self) -> int:
        """How many (query, document) results the batch holds."""
        return int(self.doc_nums.shape[0])

    def to_dict(self) -> dict[str, dict[str, float]]:
        """``{qid: {doc_id: score}}``, queries in order, documents best first."""
        ids, scores = self.doc_ids.ids, self.scores.tolist()
        names = list(map(ids.__getitem__, self.doc_nums.tolist()))
        bounds = zip(self.qids, self.offsets[:-1].tolist(), self.offsets[1:].tolist())
        return {qid: dict(zip(names[a:z], scores[a:z])) for qid, a, z in bounds}

    def __repr__(self) -> str:
        return f"Results({len(self)} queries, {self.num_results} results)"
