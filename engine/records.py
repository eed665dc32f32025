"""Immutable records at the engine's boundaries."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping


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
