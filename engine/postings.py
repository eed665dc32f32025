"""Inverted postings in compressed sparse (CSR-by-term) form, built from streams of tokens.

A :class:`Postings` holds, for a sorted vocabulary of V terms and N documents,

- ``offsets`` (int64, V + 1): the postings of term t are ``offsets[t]:offsets[t + 1]``;
- ``doc_nums`` (int32, P): document numbers, ascending within each term;
- ``tfs`` (int32, P): the term's frequency in that document;
- ``doc_lengths`` (int32, N): exact document lengths in terms (after stopword removal).

The builder holds at most a chunk of about a million tokens as strings: each chunk becomes term ids
(a new term takes the next id as it is met) and (term, doc, tf) triples, each term's together; the
index's backend (:mod:`bm25lab.engine.backends`) keeps the vocabulary and makes the triples. Raw
text never accumulates, so memory follows the postings.
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from itertools import chain, compress, repeat
from typing import Protocol, Sequence

import numpy as np

from .selection import code_point_order



class Vocabulary(Protocol):
    """A growing map from token strings to term ids, kept while an index is built."""

    def __len__(self) -> int: ...

    def term_ids(self, joined: list[str], tokens: Sequence[str], num_tokens: int) -> np.ndarray:
        """The term id of each of ``tokens`` (``joined``: the same tokens joined by single spaces,
        in groups such as documents); a new term takes the next id."""

    def terms_by_id(self) -> list[str]:
        """Every term, term ``i`` at position ``i``."""

    def sorted_terms(self) -> tuple[list[str], np.ndarray]:
        """The terms in code point order, and the id of each."""


class Builds(Protocol):
    """What the builder asks of a backend (:class:`bm25lab.engine.backends.Backend` has it)."""

    def for_build(self, num_tokens: int) -> "Builds":
        """The backend that builds a chunk of ``num_tokens`` tokens."""

    def vocabulary(self, terms: Sequence[str] = ()) -> Vocabulary:
        """A new building vocabulary holding ``terms`` (term ``i`` with id ``i``)."""

    def group_by_term(self, term_ids: np.ndarray, lengths: np.ndarray, first_doc: int,
                      num_terms: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(term, document, tf) triples of the token ids of consecutive documents (each term's together)."""

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

    def term_ids(self, tokens: Sequence[str]) -> np.ndarray:
        """The id of every token (int64), -1 for a token not in the vocabulary."""
        self.term_id("")  # builds the lookup table
        return np.fromiter(map(self._lookup.get, tokens, repeat(-1)), dtype=np.int64, count=len(tokens))

    def document_frequencies(self) -> np.ndarray:
        """df of every term (int64, V)."""
        return np.diff(self.offsets)

    def span(self, term_id: int) -> slice:
        return slice(int(self.offsets[term_id]), int(self.offsets[term_id + 1]))


def concat_ranges(starts: np.ndarray | Sequence[int], lengths: np.ndarray | Sequence[int]) -> np.ndarray:
    """The ranges ``starts[i] : starts[i] + lengths[i]``, concatenated (int64), without a Python loop."""
    lengths = np.asarray(lengths, dtype=np.int64)
    total = int(lengths.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    begin = np.cumsum(lengths) - lengths  # where each range begins in the result
    return np.repeat(np.asarray(starts, dtype=np.int64) - begin, lengths) + np.arange(total, dtype=np.int64)


class PostingsBuilder:
    """Accumulates tokenized documents, :meth:`add_many` per batch of documents, then :meth:`finish`."""

    def __init__(self, backend: Builds, vocabulary: Sequence[str] | None = None) -> None:
        """With ``vocabulary``, documents are added as arrays of indices into it (no string is looked
        up); without, as sequences of token strings, whose vocabulary ``backend`` keeps."""
        self._backend = backend
        self._given = None if vocabulary is None else list(vocabulary)
        if self._given is not None and len(set(self._given)) != len(self._given):
            raise ValueError("the vocabulary has a repeated term")
        self._vocabulary: Vocabulary | None = None  # made by the backend of the first chunk
        self._vocabulary_owner: Builds | None = None
        self._lengths = array("i")
        self._pending: list[Sequence[str]] = []
        self._joined: list[str] = []  # the pending documents' tokens joined by spaces (string tokens only)
        self._pending_tokens = 0
        self._flushed_docs = 0
        self._chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    @property
    def num_docs(self) -> int:
        return len(self._lengths)

    def add_many(self, docs: Sequence[Sequence[str] | np.ndarray], joined: Sequence[str] | None = None) -> int:
        """Add documents' tokens (indices into the vocabulary, if one was given); returns the first one's
        document number. ``joined``, when the caller has it, is ``" ".join(tokens)`` of each document."""
        first = len(self._lengths)
        lengths = list(map(len, docs))
        self._lengths.extend(lengths)
        self._pending.extend(docs)
        self._pending_tokens += sum(lengths)
        if self._given is None:  # string tokens: their joined text (empty documents left out)
            self._joined.extend(compress(map(" ".join, docs) if joined is None else joined, lengths))
        if self._pending_tokens >= _CHUNK_TOKENS:
            self._flush()
        return first

    def _flush(self) -> None:
        """Map the pending documents' tokens to term ids (new terms get unused ids: :meth:`finish`
        renumbers in code point order) and reduce them to (term, doc, tf) triples, each term's together
        with documents ascending."""
        if not self._pending_tokens:
            self._pending = []
            self._flushed_docs = len(self._lengths)
            return
        backend = self._backend.for_build(self._pending_tokens)
        if self._given is None:
            vocabulary = self._vocabulary_of(backend)
            ids = vocabulary.term_ids(self._joined, chain.from_iterable(self._pending), self._pending_tokens)
            num_terms = len(vocabulary)
        else:
            ids = np.concatenate([np.asarray(t, dtype=np.int64) for t in self._pending])
            num_terms = len(self._given)
            if ids.shape[0] and (ids.min() < 0 or ids.max() >= num_terms):
                raise ValueError(f"a token id is outside the vocabulary of {num_terms} terms")
        lengths = np.frombuffer(self._lengths, dtype=np.int32)[self._flushed_docs:].copy()  # no view: it blocks extend
        self._chunks.append(backend.group_by_term(ids, lengths, self._flushed_docs, num_terms))
        self._pending = []
        self._joined = []
        self._pending_tokens = 0
        self._flushed_docs = len(self._lengths)

    def _vocabulary_of(self, backend: Builds) -> Vocabulary:
        """The building vocabulary, of ``backend``'s kind: handed over, ids kept, when ``auto`` moved
        the build to another backend between chunks."""
        if self._vocabulary is None:
            self._vocabulary = backend.vocabulary()
        elif backend is not self._vocabulary_owner:
            self._vocabulary = backend.vocabulary(self._vocabulary.terms_by_id())
        self._vocabulary_owner = backend
        return self._vocabulary

    def finish(self) -> Postings:
        """Sort the vocabulary (code point order) and lay the postings out by term.

        No global sort: within a chunk the triples are grouped by term with documents ascending, and
        chunks come in document order, so each chunk's groups are scattered to the next free places
        of their terms (a counting sort, linear in the postings).
        """
        self._flush()
        if self._given is not None:
            order = code_point_order(self._given)
            terms = list(map(self._given.__getitem__, order.tolist()))
        elif self._vocabulary is not None:
            terms, order = self._vocabulary.sorted_terms()
        else:  # no token at all
            terms, order = [], np.zeros(0, dtype=np.int64)
        new_id = np.empty(len(terms), dtype=np.int64)
        new_id[order] = np.arange(len(terms), dtype=np.int64)
        df = np.zeros(len(terms), dtype=np.int64)
        for chunk_terms, _, _ in self._chunks:
            df += np.bincount(new_id[chunk_terms], minlength=len(terms))
        offsets = np.zeros(len(terms) + 1, dtype=np.int64)
        np.cumsum(df, out=offsets[1:])
        doc_nums = np.empty(int(offsets[-1]), dtype=np.int32)
        tfs = np.empty(int(offsets[-1]), dtype=np.int32)
        free = offsets[:-1].copy()
        for chunk_terms, chunk_docs, chunk_tfs in self._chunks:
            n = chunk_terms.shape[0]
            starts = np.flatnonzero(np.concatenate(([True], chunk_terms[1:] != chunk_terms[:-1])))
            sizes = np.diff(np.append(starts, n))
            group_terms = new_id[chunk_terms[starts]]
            places = concat_ranges(free[group_terms], sizes)
            doc_nums[places] = chunk_docs
            tfs[places] = chunk_tfs
            free[group_terms] += sizes
        self._chunks = []
        return Postings(
            terms=terms,
            offsets=offsets,
            doc_nums=doc_nums,
            tfs=tfs,
            doc_lengths=np.frombuffer(self._lengths, dtype=np.int32).copy(),
        )
