"""Inverted postings in compressed sparse (CSR-by-term) form, built from streams of tokens.

A :class:`Postings` holds, for a sorted vocabulary of V terms and N documents,

- ``offsets`` (int64, V + 1): the postings of term t are ``offsets[t]:offsets[t + 1]``;
- ``doc_nums`` (int32, P): document numbers, ascending within each term;
- ``tfs`` (int32, P): the term's frequency in that document;
- ``doc_lengths`` (int32, N): exact document lengths in terms (after stopword removal).

The builder holds at most a chunk of about a million tokens as strings: each chunk becomes term ids
(a new term takes the next id as it is met) and (term, doc, tf) triples, each term's together. With
the numba kernels loaded, the vocabulary itself lives in the kernels' hash table: a chunk's tokens,
joined by spaces, are hashed from their UTF-8, a counting sort makes the triples, and the terms
become Python strings only at the end, sorted by the kernels and decoded all at once. Without them,
pyarrow splits and hashes large chunks (only a chunk's distinct tokens meet the Python vocabulary),
small chunks and any chunk with a token holding a space are looked up token by token, and
``np.unique`` makes the triples. Raw text never accumulates, so memory follows the postings.
"""
from __future__ import annotations

from array import array
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import chain, compress, count, repeat
from operator import itemgetter
from types import ModuleType
from typing import Iterable, Sequence

import numpy as np

from .selection import code_point_order

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


def _look_up(table: dict[str, int], keys: list[str]) -> tuple[int, ...]:
    """``table[key]`` of every key, in one C loop (itemgetter: ~15% faster than map over a bound method)."""
    return itemgetter(*keys)(table) if len(keys) != 1 else (table[keys[0]],)


_ARROW_MIN_TOKENS = 50_000  # below this a chunk's tokens are looked up one by one (no pyarrow import)


def _split_and_encode(texts: list[str], num_tokens: int) -> tuple[list[str], np.ndarray] | None:
    """The distinct tokens of ``texts`` (documents' tokens joined by single spaces, none empty) and
    every token's index into them, split and hashed by pyarrow in C (several times faster than one
    Python dict look-up per token). None when that would not give the tokens back: a token holds a
    space (more pieces than ``num_tokens``) or a lone surrogate (no UTF-8)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        pieces = pc.split_pattern(pa.array(texts, type=pa.large_string()), " ").flatten()
    except (UnicodeEncodeError, pa.ArrowException):
        return None
    if len(pieces) != num_tokens:
        return None
    encoded = pc.dictionary_encode(pieces)
    return encoded.dictionary.to_pylist(), encoded.indices.to_numpy()


class CompiledVocabulary:
    """A vocabulary kept by the numba kernels (:func:`engine._kernels.encode_tokens`): term ids come
    straight from the UTF-8 of many tokens at once. The builder's grows as it meets new terms, which
    become Python strings only at the end, sorted (:meth:`sorted_terms`); a search's holds an index's
    terms (:meth:`of_terms`) and only looks tokens up (:meth:`look_up`)."""

    def __init__(self, kernels: ModuleType) -> None:
        self._kernels = kernels
        self._state: tuple = (np.full(1 << 12, -1, dtype=np.int32), np.empty(1 << 11, dtype=np.uint64),
                              np.empty(1 << 11, dtype=np.int64), np.empty(1 << 11, dtype=np.int64),
                              np.empty(1 << 14, dtype=np.uint8), 0, 0)

    def __len__(self) -> int:
        return self._state[5]

    @classmethod
    def of_terms(cls, kernels: ModuleType, terms: Sequence[str]) -> "CompiledVocabulary":
        """The vocabulary of distinct ``terms``, term ``i`` with id ``i``."""
        vocabulary = cls(kernels)
        if terms:
            vocabulary.term_ids(list(terms), terms, len(terms))
        return vocabulary

    def term_ids(self, joined: list[str], tokens: Iterable[str], num_tokens: int) -> np.ndarray:
        """The term id of each of ``tokens`` (``num_tokens`` of them; ``joined``: the same tokens joined
        by spaces, in groups such as documents), a new term numbered next. Lone surrogates pass
        through UTF-8 as in "surrogatepass", whose byte order is still the code point order."""
        return self._encode(joined, tokens, num_tokens, True)

    def look_up(self, joined: list[str], tokens: Iterable[str], num_tokens: int) -> np.ndarray:
        """:meth:`term_ids` that adds no term: -1 for a token not in the vocabulary."""
        return self._encode(joined, tokens, num_tokens, False)

    def _encode(self, joined: list[str], tokens: Iterable[str], num_tokens: int, insert: bool) -> np.ndarray:
        text = np.frombuffer(" ".join(joined).encode("utf-8", "surrogatepass"), dtype=np.uint8)
        ends = np.zeros(0, dtype=np.int64)  # the tokens are the pieces between spaces
        if self._kernels.count_pieces(text) != num_tokens:  # a token holds a space: every token's own end
            pieces = [token.encode("utf-8", "surrogatepass") for token in tokens]
            ends = np.cumsum(np.fromiter(map(len, pieces), dtype=np.int64, count=num_tokens))
            text = np.frombuffer(b"".join(pieces), dtype=np.uint8)
        ids, *state = self._kernels.encode_tokens(text, ends, num_tokens, insert, *self._state)
        self._state = tuple(state)
        return ids

    def sorted_terms(self) -> tuple[list[str], np.ndarray]:
        """The terms in code point order, and the id of each (sorted by the kernels, then decoded
        all at once and split at a byte no term holds)."""
        _, _, starts, lengths, data, distinct, used = self._state
        order = self._kernels.sort_terms(starts, lengths, data, distinct)
        if not distinct:
            return [], order
        joined, separator = self._kernels.joined_terms(order, starts, lengths, data, used)
        if separator >= 0:
            return joined.tobytes().decode("utf-8", "surrogatepass").split(chr(separator)), order
        raw = data.tobytes()  # every ASCII character is in some term: one at a time
        spans = zip(starts[order].tolist(), lengths[order].tolist())
        return [raw[a:a + b].decode("utf-8", "surrogatepass") for a, b in spans], order


def _build_kernels(num_tokens: int) -> ModuleType | None:
    """The numba kernels when the search's rule would use them for this much work (in practice: when
    they are loaded already, or BM25LAB_NUMBA=1), else None."""
    from . import accel

    return accel.kernels() if accel.worth_compiling(num_tokens) else None


class PostingsBuilder:
    """Accumulates tokenized documents, :meth:`add_many` per batch of documents, then :meth:`finish`."""

    def __init__(self, vocabulary: Sequence[str] | None = None) -> None:
        """With ``vocabulary``, documents are added as arrays of indices into it (no string is looked
        up); without, as sequences of token strings."""
        self._given = vocabulary
        # without a vocabulary, a term missing from it gets the next id on its first look-up (C calls
        # only: one pass over the tokens, where a set of the new ones first took another)
        self._vocab: dict[str, int] = (defaultdict(count().__next__) if vocabulary is None
                                       else dict(zip(vocabulary, range(len(vocabulary)))))
        if vocabulary is not None and len(self._vocab) != len(vocabulary):
            raise ValueError("the vocabulary has a repeated term")
        self._lengths = array("i")
        self._pending: list[Sequence[str]] = []
        self._joined: list[str] = []  # the pending documents' tokens joined by spaces (string tokens only)
        self._compiled: CompiledVocabulary | None = None
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
        if self._given is None:  # string tokens: their joined text, for pyarrow (empty documents left out)
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
        kernels = _build_kernels(self._pending_tokens)
        if self._given is None and self._compiled is None and kernels is not None and not self._vocab:
            self._compiled = CompiledVocabulary(kernels)  # from the first chunk on, or never
        if self._compiled is not None:
            local = self._compiled.term_ids(self._joined, chain.from_iterable(self._pending), self._pending_tokens)
            to_term = None
        elif self._given is None:
            local, to_term = self._local_ids()
        else:
            local, to_term = np.concatenate([np.asarray(t, dtype=np.int64) for t in self._pending]), None
            if local.shape[0] and (local.min() < 0 or local.max() >= len(self._given)):
                raise ValueError(f"a token id is outside the vocabulary of {len(self._given)} terms")
        lengths = np.frombuffer(self._lengths, dtype=np.int32)[self._flushed_docs:].copy()  # no view: it blocks extend
        if kernels is not None:
            num = len(to_term) if to_term is not None else self._num_terms()
            terms, docs, tfs = kernels.group_by_term(local, lengths, self._flushed_docs, num)
            self._chunks.append((terms if to_term is None else to_term[terms].astype(np.int32), docs, tfs))
        else:
            terms = local if to_term is None else to_term[local]
            docs = np.repeat(np.arange(self._flushed_docs, len(self._lengths), dtype=np.int64), lengths)
            keys, counts = np.unique((terms << 32) | docs, return_counts=True)
            self._chunks.append(((keys >> 32).astype(np.int32), (keys & 0xFFFFFFFF).astype(np.int32),
                                 counts.astype(np.int32)))
        self._pending = []
        self._joined = []
        self._pending_tokens = 0
        self._flushed_docs = len(self._lengths)

    def _num_terms(self) -> int:
        """Terms known so far (a given vocabulary's all): where the next new term's id starts."""
        return len(self._compiled) if self._compiled is not None else len(self._vocab)

    def _local_ids(self) -> tuple[np.ndarray, np.ndarray | None]:
        """Pending string tokens as (an id per token, the term id of each of those ids, or None when
        they are term ids already): split and hashed by pyarrow, or one look-up per token."""
        n = self._pending_tokens
        split = _split_and_encode(self._joined, n) if n >= _ARROW_MIN_TOKENS else None
        if split is None:
            return np.fromiter(_look_up(self._vocab, list(chain.from_iterable(self._pending))), dtype=np.int64,
                               count=n), None
        distinct, positions = split
        return positions, np.fromiter(_look_up(self._vocab, distinct), dtype=np.int64, count=len(distinct))

    def finish(self) -> Postings:
        """Sort the vocabulary (code point order) and lay the postings out by term.

        No global sort: within a chunk the triples are grouped by term with documents ascending, and
        chunks come in document order, so each chunk's groups are scattered to the next free places
        of their terms (a counting sort, linear in the postings).
        """
        self._flush()
        if self._compiled is not None:
            terms, order = self._compiled.sorted_terms()
        else:
            first_seen = list(self._vocab)
            order = code_point_order(first_seen)
            terms = list(map(first_seen.__getitem__, order.tolist()))
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


def build_postings(token_lists: Iterable[Sequence[str]]) -> Postings:
    """Postings of the given tokenized documents, numbered in order from 0."""
    builder = PostingsBuilder()
    builder.add_many(list(token_lists))
    return builder.finish()
