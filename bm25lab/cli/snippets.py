"""Snippets for the search table: a window of the document around the first query term, terms in bold.

A word of the text is highlighted when the index's own tokenizer turns it into a query term, so
stemmed and case-folded forms match. Chinese query terms are highlighted where they occur verbatim.
A snippet is :class:`~bm25lab.cli.plain.Marked` text: rich shows its marks in bold yellow on a terminal.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .plain import Marked, Span

_WORD = re.compile(r"\w+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\uac00-\ud7af]")  # Han, kana, Hangul: found verbatim


def highlight_spans(text: str, terms: set[str], tokenizer: Any, stop: int | None = None) -> list[tuple[int, int]]:
    """Character spans of ``text`` that analyse to a query term, in order. With ``stop``, scanning
    ends at the first span's start + ``stop`` characters (the rest cannot reach the snippet)."""
    spans: list[tuple[int, int]] = [
        (m.start(), m.end()) for term in terms if _CJK.search(term) for m in re.finditer(re.escape(term), text)]
    limit = min((s for s, _ in spans), default=None)
    known: dict[str, bool] = {}
    for match in _WORD.finditer(text):
        if stop is not None and limit is not None and match.start() > limit + stop:
            break
        word = match.group()
        if _CJK.search(word):
            continue
        key = word.lower()
        if key not in known:
            known[key] = bool(terms.intersection(tokenizer.tokenize(word)))
        if known[key]:
            spans.append(match.span())
            limit = match.start() if limit is None else min(limit, match.start())
    return sorted(spans)


@dataclass(frozen=True)
class Window:
    """A snippet: about ``width`` characters of a text around its first highlighted term (an ellipsis
    where the text was cut), and the character spans of ``text`` to highlight, in order, not overlapping."""

    text: str
    highlights: tuple[tuple[int, int], ...]


def snippet_window(text: str, terms: set[str], tokenizer: Any, width: int = 160) -> Window:
    """The :class:`Window` of ``text`` for the query ``terms`` (what the table's and the web page's
    snippets show)."""
    flat = " ".join(text.split())
    spans = highlight_spans(flat, terms, tokenizer, stop=width) if terms else []
    start = max(0, spans[0][0] - width // 4) if spans else 0
    if start:  # begin at a word boundary, not inside a word
        space = flat.find(" ", start, spans[0][0])
        start = space + 1 if space >= 0 else spans[0][0]
    end = min(len(flat), start + width)
    prefix = "…" if start else ""
    shift = len(prefix) - start
    kept = []
    cursor = start
    for s, e in spans:
        if e <= cursor or s >= end:
            continue
        s = max(s, cursor)
        cursor = min(e, end)
        kept.append((s + shift, cursor + shift))
    return Window(prefix + flat[start:end] + ("…" if end < len(flat) else ""), tuple(kept))


def snippet(text: str, terms: set[str], tokenizer: Any, width: int = 160) -> Marked:
    """About ``width`` characters of ``text`` around the first highlighted term, those marked (in bold on a
    terminal)."""
    window = snippet_window(text, terms, tokenizer, width)
    return Marked(window.text, tuple(Span(s, e) for s, e in window.highlights))
