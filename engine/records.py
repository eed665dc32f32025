"""Immutable records at the engine's boundaries."""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, overload

if TYPE_CHECKING:
    import numpy as np


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
