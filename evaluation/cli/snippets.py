"""Snippets for the search table: a window of the document around the first query term, terms in bold.

A word of the text is highlighted when the index's own tokenizer turns it into a query term, so
stemmed and case-folded forms match. Chinese query terms are highlighted where they occur verbatim.
"""
from __future__ import annotations

import re
from typing import Any

from rich.text import Text

_WORD = re.compile(r"\w+")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def highlight_spans(text: str, terms: set[str], tokenizer: Any) -> list[tuple[int, int]]:
    """Character spans of ``text`` that analyse to a query term."""
    spans = []
    for match in _WORD.finditer(text):
        word = match.group()
        if _CJK.search(word):
            continue
        if terms.intersection(tokenizer.tokenize(word)):
            spans.append(match.span())
    for term in terms:
        if _CJK.search(term):
            spans.extend((m.start(), m.end()) for m in re.finditer(re.escape(term), text))
    return sorted(spans)


def snippet(text: str, terms: set[str], tokenizer: Any, width: int = 160) -> Text:
    """About ``width`` characters of ``text`` around the first highlighted term."""
    flat = " ".join(text.split())
    spans = highlight_spans(flat, terms, tokenizer) if terms else []
    start = max(0, spans[0][0] - width // 4) if spans else 0
    end = min(len(flat), start + width)
    out = Text("…" if start else "")
    cursor = start
    for s, e in spans:
        if e <= cursor or s >= end:
            continue
        s = max(s, cursor)
        out.append(flat[cursor:s])
        out.append(flat[s:min(e, end)], style="bold yellow")
        cursor = min(e, end)
    out.append(flat[cursor:end])
    if end < len(flat):
        out.append("…")
    return out
