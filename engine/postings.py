"""Inverted postings in compressed sparse (CSR-by-term) form, built from streams of tokens.

A :class:`Postings` holds, for a sorted vocabulary of V terms and N documents,

- ``offsets`` (int64, V + 1): the postings of term t are ``offsets[t]:offsets[t + 1]``;
- ``doc_nums`` (int32, P): document numbers, ascending within each term;
- ``tfs`` (int32, P): the term's frequency in that document;
- ``doc_lengths`` (int32, N): exact document lengths in terms (after stopword removal).

The builder keeps only integers: tokens become term ids as they arrive, and every chunk of about a
million tokens is reduced to (term, doc, tf) triples with one vectorised ``np.unique``. Raw text
never accumulates, so memory follows the postings.
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

_CHUNK_TOKENS = 1 << 20


@dataclass(frozen=True, eq=False)
class Postings:
    """An immutable inverted index over one set of documents (see the module docstring)."""

    terms: Sequence[str]
    offsets: np.ndarray
    doc_nums: np.ndarray
    tfs: np.ndarray
    doc_lengths: np.ndarray
    _lookup: dict[str, int] = field(default_factory=dict, repr=False)

    @property
    def num_docs(self) -> int:
        return int(self.doc_lengths.shape[0])

    @property
    def num_terms(self) -> int:
        return len(self.terms)

    @property
    def num_postings(self) -> int:
        return int(self.doc_nums.shape[0])

    def term_id(self, term: str) -> int | None:
        """The id of ``term``, or None when it is not in the vocabulary."""
        if not self._lookup and self.terms:
            self._lookup.update(zip(self.terms, range(len(self.terms))))
        return self._lookup.get(term)

    def document_frequencies(self) -> np.ndarray:
        """df of every term (int64, V)."""
        return np.diff(self.offsets)

    def span(self, term_id: int) -> slice:
        return slice(int(self.offsets[term_id]), int(self.offsets[term_id + 1]))


class PostingsBuilder:
    """Accumulates tokenized documents, one :meth:`add` per document, then :meth:`finish`."""

    def __init__(self) -> None:
        self._vocab: dict[str, int] = {}
        self._lengths = array("i")
        self._pending_terms = array("i")
        self._flushed_docs = 0
        self._chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    @property
    def num_docs(self) -> int:
        return len(self._lengths)

    def add(self, tokens: Sequence[str]) -> int:
        """Add one document's tokens; returns its document number."""
        doc_num = len(self._lengths)
        vocab = self._vocab
        try:
            ids = list(map(vocab.__getitem__, tokens))
        except KeyError:  # a new term: assign ids in first-seen order
            ids = [vocab.setdefault(t, len(vocab)) for t in tokens]
        self._lengths.append(len(ids))
        self._pending_terms.extend(ids)
        if len(self._pending_terms) >= _CHUNK_TOKENS:
            self._flush()
        return doc_num

    def _flush(self) -> None:
        """Reduce the pending tokens to sorted (term, doc, tf) triples."""
        if not self._pending_terms:
            self._flushed_docs = len(self._lengths)
            return
        terms = np.frombuffer(self._pending_terms, dtype=np.int32).astype(np.int64)
        lengths = np.frombuffer(self._lengths, dtype=np.int32)[self._flushed_docs:]
        docs = np.repeat(np.arange(self._flushed_docs, len(self._lengths), dtype=np.int64), lengths)
        keys, counts = np.unique((terms << 32) | docs, return_counts=True)
        self._chunks.append(((keys >> 32).astype(np.int32), (keys & 0xFFFFFFFF).astype(np.int32),
                             counts.astype(np.int32)))
        self._pending_terms = array("i")
        self._flushed_docs = len(self._lengths)

    def finish(self) -> Postings:
        """Sort the vocabulary (code point order) and lay the postings out by term."""
        self._flush()
        first_seen = list(self._vocab)
        order = sorted(range(len(first_seen)), key=first_seen.__getitem__)
        new_id = np.empty(len(first_seen), dtype=np.int32)
        new_id[np.asarray(order, dtype=np.int64)] = np.arange(len(first_seen), dtype=np.int32)
        if self._chunks:
            terms = new_id[np.concatenate([c[0] for c in self._chunks])]
            docs = np.concatenate([c[1] for c in self._chunks])
            tfs = np.concatenate([c[2] for c in self._chunks])
        else:
            terms = docs = tfs = np.zeros(0, dtype=np.int32)
        # Chunks arrive in document order, so a stable sort by term keeps documents ascending.
        by_term = np.argsort(terms, kind="stable")
        df = np.bincount(terms, minlength=len(first_seen))
        offsets = np.zeros(len(first_seen) + 1, dtype=np.int64)
        np.cumsum(df, out=offsets[1:])
        return Postings(
            terms=[first_seen[i] for i in order],
            offsets=offsets,
            doc_nums=docs[by_term],
            tfs=tfs[by_term],
            doc_lengths=np.frombuffer(self._lengths, dtype=np.int32).copy(),
        )


def build_postings(token_lists: Iterable[Sequence[str]]) -> Postings:
    """Postings of the given tokenized documents, numbered in order from 0."""
    builder = PostingsBuilder()
    for tokens in token_lists:
        builder.add(tokens)
    return builder.finish()
