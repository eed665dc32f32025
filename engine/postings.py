"""Inverted postings in compressed sparse (CSR-by-term) form, built from streams of tokens.

A :class:`Postings` holds, for a sorted vocabulary of V terms and N documents,

- ``offsets`` (int64, V + 1): the postings of term t are ``offsets[t]:offsets[t + 1]``;
- ``doc_nums`` (int32, P): document numbers, ascending within each term;
- ``tfs`` (int32, P): the term's frequency in that document;
- ``doc_lengths`` (int32, N): exact document lengths in terms (after stopword removal).

Searching reads them compressed (:meth:`Postings.blocks`: :mod:`bm25lab.engine.codec`'s blocks of 128,
encoded at first need and kept); a loaded index has only the blocks, and its ``doc_nums`` and ``tfs``
are :class:`~bm25lab.engine.codec.BlockColumn` views that decode what is read of them.

The builder holds at most a chunk of about a million tokens as strings: each chunk becomes term ids
(a new term takes the next id as it is met) and (term, doc, tf) triples, each term's together; the
index's backend (:mod:`bm25lab.engine.backends`) keeps the vocabulary and makes the triples. Raw
text never accumulates, so memory follows the postings.

Documents may come as raw texts instead (:meth:`PostingsBuilder.add_texts`, for an analysis that
:class:`~bm25lab.engine.tokenization.Tokenizer.splits_at_whitespace`): a backend that splits texts
(:class:`SplitsTexts`, the compiled core's) turns chunks of them, as UTF-8, into triples over a vocabulary
of each chunk's own, on ``threads`` threads (its kernels let go of the GIL), and the chunks' terms
are merged into the index's vocabulary in document order, so the ids, the postings and the terms
are those of the token path. On another backend the texts are analysed and added as tokens.
"""
from __future__ import annotations

from array import array
from collections import deque
from dataclasses import dataclass, field
from itertools import chain, compress, repeat
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Protocol, Sequence, overload, runtime_checkable

import numpy as np

from .codec import BlockColumn, Blocks, encode
from .selection import code_point_order

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

    from .segmentation import PackedTerms



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

    def vocabulary(self, terms: Sequence[str] = ()) -> Vocabulary:
        """A new building vocabulary holding ``terms`` (term ``i`` with id ``i``)."""

    def group_by_term(self, term_ids: np.ndarray, lengths: np.ndarray, first_doc: int,
                      num_terms: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(term, document, tf) triples of the token ids of consecutive documents (each term's together)."""

    def lay_out(self, chunks: Sequence[Triples], new_id: np.ndarray,
                threads: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(offsets, documents, tfs) of the postings of ``chunks`` (in document order), term ``t`` of a
        chunk becoming term ``new_id[t]`` (on up to ``threads`` threads)."""

    def code_point_order(self, strings: Sequence[str]) -> np.ndarray:
        """:func:`bm25lab.engine.selection.code_point_order`."""


Triples = tuple[np.ndarray, np.ndarray, np.ndarray]  # (term, document, tf), each term's triples together


@dataclass(frozen=True, eq=False)
class TextChunk:
    """A chunk of documents' texts reduced by :meth:`SplitsTexts.split_texts`: triples over the
    chunk's own term ids, and the chunk's terms (term ``e``: ``text[term_starts[e]:][:term_lengths[e]]``)."""

    text: np.ndarray          # the documents' UTF-8 (uint8)
    triples: Triples
    doc_lengths: np.ndarray   # int32: each document's number of terms
    term_hashes: np.ndarray   # uint64
    term_starts: np.ndarray   # int64
    term_lengths: np.ndarray  # int64


@runtime_checkable
class SplitsTexts(Protocol):
    """A backend that analyses raw texts itself (see the module docstring)."""

    def split_texts(self, text: np.ndarray, bounds: np.ndarray, first_doc: int) -> TextChunk:
        """The documents ``text[bounds[d]:bounds[d + 1]]`` (UTF-8: ASCII text raw, other text analysed
        already, its terms joined by spaces) numbered from ``first_doc``, reduced to a chunk."""

    def vocabulary(self, terms: Sequence[str] = ()) -> MergesChunks:
        """A building vocabulary that also takes in chunks' terms."""


class MergesChunks(Vocabulary, Protocol):
    def merged_ids(self, chunk: TextChunk) -> np.ndarray:
        """The id of each of ``chunk``'s terms, in its order (a new term takes the next id), as
        :meth:`Vocabulary.term_ids` gives them for the chunk's tokens."""


_CHUNK_TOKENS = 1 << 20
_TEXT_FLUSH_CHARS = 1 << 24  # texts pending before a backend that does not split them analyses them
_TEXT_JOB_CHARS = 1 << 20  # the texts of one job of a thread (smaller: more merging; larger: fewer cache hits)
_JOBS_PER_THREAD = 3  # jobs a thread may have queued before the builder waits for the oldest


class TermList(Sequence[str]):
    """A loaded segment's terms, one a line of ``text`` (its ``terms.txt``), split into strings only
    when a term is first read: a compiled batch looks its queries' terms up from the text itself
    (:meth:`bm25lab.engine.backends.core_backend.CoreVocabulary.of_terms`), so a loaded index
    searched that way never holds a string object per term."""

    __slots__ = ("text", "_count", "_terms")

    def __init__(self, text: str) -> None:
        self.text = text
        self._count = text.count("\n") + 1 if text else 0
        self._terms: list[str] | None = None

    def __len__(self) -> int:
        return self._count

    def forget(self) -> None:
        """Let go of the strings (the next read splits the text again)."""
        self._terms = None

    def _list(self) -> list[str]:
        terms = self._terms  # (read once: another thread may forget them meanwhile)
        if terms is None:
            terms = self._terms = self.text.split("\n") if self.text else []
        return terms

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> list[str]: ...

    def __getitem__(self, i: int | slice) -> str | list[str]:
        return self._list()[i]

    def __iter__(self) -> Iterator[str]:
        return iter(self._list())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TermList):
            return self.text == other.text
        return isinstance(other, Sequence) and not isinstance(other, str) and self._list() == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TermList({self._count} terms)"


@dataclass(frozen=True, eq=False)
class Postings:
    """An immutable inverted index over one set of documents (see the module docstring)."""

    terms: Sequence[str]
    offsets: np.ndarray
    doc_nums: np.ndarray  # or a BlockColumn of the blocks
    tfs: np.ndarray       # or a BlockColumn of the blocks
    doc_lengths: np.ndarray
    _lookup: dict[str, int] = field(default_factory=dict, repr=False)
    _blocks: Blocks | None = field(default=None, repr=False)

    @classmethod
    def of_blocks(cls, terms: Sequence[str], offsets: np.ndarray, blocks: Blocks, doc_lengths: np.ndarray) -> "Postings":
        """Postings held only as blocks (a loaded index): documents and frequencies decoded when read."""
        return cls(terms, offsets, BlockColumn(blocks, offsets, 0), BlockColumn(blocks, offsets, 1), doc_lengths,
                   _blocks=blocks)

    def blocks(self, threads: int = 1) -> Blocks:
        """The postings in blocks (:mod:`bm25lab.engine.codec`), encoded when first asked for (on
        ``threads`` threads) and kept (two threads asking at once may both encode: the same blocks);
        mapped plain postings (an index of format version 2) then let their pages go."""
        blocks = self._blocks
        if blocks is None:
            blocks = encode(self.offsets, self.doc_nums, self.tfs, self.doc_lengths, threads)
            object.__setattr__(self, "_blocks", blocks)
            release_pages(self.doc_nums)  # mapped plain postings (format version 2): searches read the blocks
            release_pages(self.tfs)
        return blocks

    @property
    def num_docs(self) -> int:
        return int(self.doc_lengths.shape[0])

    @property
    def num_terms(self) -> int:
        return len(self.terms)

    @property
    def num_postings(self) -> int:
        return int(self.doc_nums.shape[0])

    def _table(self) -> dict[str, int]:
        """The table of term ids, made when first needed; a table is made whole before it is put in
        place, and never changed after, so a thread reading one never sees it half made or emptied."""
        table = self._lookup
        if not table and len(self.terms):
            table = dict(zip(self.terms, range(len(self.terms))))
            object.__setattr__(self, "_lookup", table)
        return table

    def term_id(self, term: str) -> int | None:
        """The id of ``term``, or None when it is not in the vocabulary."""
        return self._table().get(term)

    def term_ids(self, tokens: Sequence[str]) -> np.ndarray:
        """The id of every token (int64), -1 for a token not in the vocabulary."""
        return np.fromiter(map(self._table().get, tokens, repeat(-1)), dtype=np.int64, count=len(tokens))

    def forget_lookup(self) -> None:
        """Let go of the table :meth:`term_id` builds (and of a :class:`TermList`'s strings): the next
        look-up builds them again (a look-up under way keeps reading the table it has)."""
        object.__setattr__(self, "_lookup", {})
        if isinstance(self.terms, TermList):
            self.terms.forget()

    def document_frequencies(self) -> np.ndarray:
        """df of every term (int64, V)."""
        return np.diff(self.offsets)

    def span(self, term_id: int) -> slice:
        return slice(int(self.offsets[term_id]), int(self.offsets[term_id + 1]))


@dataclass(frozen=True, eq=False)
class Fields:
    """The fields of an index built with fields (BM25F): their names, each document's length in each
    field (``lengths``, fields x documents) and each posting's frequency in each field (``tfs``, fields x
    postings, aligned with the postings; a posting's field frequencies add up to its ``tf``)."""

    names: tuple[str, ...]
    lengths: np.ndarray
    tfs: np.ndarray


class _Deferred:
    """Tokens made only if iterated: a packed chunk's terms, which a look-up reads one by one only when
    a term holds a space (see :meth:`Vocabulary.term_ids`)."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], list[str]]) -> None:
        self.make = make

    def __iter__(self) -> Iterator[str]:
        return iter(self.make())


def release_pages(values: np.ndarray) -> None:
    """Let go of the resident pages of ``values`` when it is a view of a whole read-only memory-mapped
    file (a loaded index's array): the pages stay in the page cache, and a later read maps them
    again. An array in the process's own memory is left alone."""
    base: object = values
    while base is not None and not isinstance(base, np.memmap):
        base = getattr(base, "base", None)
    import mmap

    mapped, dont_need = getattr(base, "_mmap", None), getattr(mmap, "MADV_DONTNEED", None)
    if isinstance(base, np.memmap) and base.mode == "r" and hasattr(mapped, "madvise") and dont_need is not None:
        mapped.madvise(dont_need)


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

    def __init__(self, backend: Builds, vocabulary: Sequence[str] | None = None, *,
                 analyse: Callable[[str], list[str]] | None = None, threads: int = 1) -> None:
        """With ``vocabulary``, documents are added as arrays of indices into it (no string is looked
        up); without, as sequences of token strings, whose vocabulary ``backend`` keeps. ``analyse``
        (the tokenizer's, one that splits at whitespace) lets documents be added as raw texts
        (:meth:`add_texts`), whose chunks are analysed on up to ``threads`` threads."""
        self._backend = backend
        self._given = None if vocabulary is None else list(vocabulary)
        if self._given is not None and len(set(self._given)) != len(self._given):
            raise ValueError("the vocabulary has a repeated term")
        self._vocabulary: Vocabulary | None = None  # made by the first chunk
        self._lengths = array("i")
        self._pending: list[Iterable[str]] = []  # the pending documents' tokens (or a packed chunk's)
        self._joined: list[str] = []  # the pending documents' tokens joined by spaces (string tokens only)
        self._pending_tokens = 0
        self._flushed_docs = 0
        self._chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._analyse = analyse
        self._threads = max(1, threads)
        self._texts: list[str] = []  # raw texts not yet handed to a job (add_texts)
        self._text_chars = 0
        self._text_flush = _TEXT_JOB_CHARS if isinstance(backend, SplitsTexts) else _TEXT_FLUSH_CHARS
        self._jobs: deque[Future[tuple[Triples, np.ndarray]]] = deque()  # merged jobs, in document order
        self._pool: ThreadPoolExecutor | None = None
        self._merger: ThreadPoolExecutor | None = None  # takes the jobs' terms into the vocabulary, in order
        self._num_docs = 0

    @property
    def num_docs(self) -> int:
        return self._num_docs

    def add_many(self, docs: Sequence[Sequence[str] | np.ndarray], joined: Sequence[str] | None = None) -> int:
        """Add documents' tokens (indices into the vocabulary, if one was given); returns the first one's
        document number. ``joined``, when the caller has it, is ``" ".join(tokens)`` of each document."""
        self._wait_for_texts()
        first = self._num_docs
        self._num_docs += len(docs)
        self._add_tokens(docs, joined)
        return first

    def add_packed(self, chunks: Sequence[PackedTerms]) -> int:
        """Add documents' terms packed (:class:`PackedTerms`), the same as :meth:`add_many` of their
        lists: the lengths are the counts and the text looked up is each chunk's, its line feeds
        between terms read as spaces; returns the first one's document number."""
        assert self._given is None, "packed terms are strings"
        self._wait_for_texts()
        first = self._num_docs
        for chunk in chunks:
            self._num_docs += len(chunk.counts)
            self._lengths.extend(chunk.counts)
            if chunk.joined:  # (a chunk of documents without terms adds nothing to look up)
                self._pending.append(_Deferred(chunk.terms))
                self._joined.append(chunk.spaced())
                self._pending_tokens += sum(chunk.counts)
            if self._pending_tokens >= _CHUNK_TOKENS:
                self._flush()
        return first

    def _add_tokens(self, docs: Sequence[Sequence[str] | np.ndarray], joined: Sequence[str] | None = None) -> None:
        lengths = list(map(len, docs))
        self._lengths.extend(lengths)
        self._pending.extend(docs)
        self._pending_tokens += sum(lengths)
        if self._given is None:  # string tokens: their joined text (empty documents left out)
            self._joined.extend(compress(map(" ".join, docs) if joined is None else joined, lengths))
        if self._pending_tokens >= _CHUNK_TOKENS:
            self._flush()

    def _flush(self) -> None:
        """Map the pending documents' tokens to term ids (new terms get unused ids: :meth:`finish`
        renumbers in code point order) and reduce them to (term, doc, tf) triples, each term's together
        with documents ascending."""
        if not self._pending_tokens:
            self._pending = []
            self._flushed_docs = len(self._lengths)
            return
        backend = self._backend
        if self._given is None:
            vocabulary = self._vocabulary_of()
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

    def add_texts(self, texts: list[str]) -> int:
        """Add documents as their raw texts (the builder analyses them: see the module docstring);
        returns the first one's document number."""
        assert self._analyse is not None and self._given is None, "raw texts need the analysis that splits them"
        first = self._num_docs
        self._num_docs += len(texts)
        self._texts.extend(texts)
        self._text_chars += sum(map(len, texts))
        if self._text_chars >= self._text_flush:
            self._flush_texts()
        return first

    def _flush_texts(self) -> None:
        """Hand the pending texts to the backend: one that splits texts gets them as jobs of about
        ``_TEXT_JOB_CHARS`` characters, run on the threads in the background; another gets their tokens."""
        texts, self._texts, self._text_chars = self._texts, [], 0
        if not texts:
            return
        backend = self._backend
        if not isinstance(backend, SplitsTexts):
            assert self._analyse is not None
            self._wait_for_texts()
            self._add_tokens(list(map(self._analyse, texts)))
            return
        first = self._num_docs - len(texts)
        self._flush()  # tokens added before go first
        vocabulary = self._vocabulary_of()
        for start, end in _cuts(texts, _TEXT_JOB_CHARS):
            text, bounds = _utf8(texts[start:end], self._analyse)
            self._run(backend, vocabulary, text, bounds, first + start)  # type: ignore[arg-type]

    def _run(self, backend: SplitsTexts, vocabulary: MergesChunks, text: np.ndarray, bounds: np.ndarray,
             first_doc: int) -> None:
        """One job: here with one thread; else split on the pool's threads and merged by the merger
        thread (one job at a time, in order), the builder waiting only when too many are running."""
        if self._threads == 1:
            self._take(_merged(vocabulary, backend.split_texts(text, bounds, first_doc)))
            return
        if self._pool is None or self._merger is None:
            from concurrent.futures import ThreadPoolExecutor  # not on a search's import path

            self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="bm25lab-build")
            self._merger = ThreadPoolExecutor(1, thread_name_prefix="bm25lab-merge")
        split = self._pool.submit(backend.split_texts, text, bounds, first_doc)
        self._jobs.append(self._merger.submit(lambda: _merged(vocabulary, split.result())))
        while len(self._jobs) > _JOBS_PER_THREAD * self._threads:
            self._take(self._jobs.popleft().result())

    def _wait_for_texts(self) -> None:
        """Take in every text job still running (they come before whatever is added next)."""
        if self._texts:
            self._flush_texts()
        while self._jobs:
            self._take(self._jobs.popleft().result())

    def _take(self, merged: tuple[Triples, np.ndarray]) -> None:
        """A merged job's triples and document lengths, after those before it."""
        triples, doc_lengths = merged
        self._chunks.append(triples)
        self._lengths.frombytes(doc_lengths.astype(np.int32, copy=False).tobytes())
        self._flushed_docs = len(self._lengths)

    def close(self) -> None:
        """Stop the threads (after :meth:`finish`, or when the build is abandoned)."""
        for job in self._jobs:
            job.cancel()
        self._jobs.clear()
        for pool in (self._pool, self._merger):
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
        self._pool = self._merger = None

    def id_ranks(self, doc_ids: list[str]) -> np.ndarray:
        """:func:`bm25lab.engine.selection.id_ranks` of the documents' ids, sorted by the backend (the
        core sorts them as it sorts the terms)."""
        ranks = np.empty(len(doc_ids), dtype=np.int32)
        ranks[self._backend.code_point_order(doc_ids)] = np.arange(len(doc_ids), dtype=np.int32)
        return ranks

    def _vocabulary_of(self) -> Vocabulary:
        """The building vocabulary, made by the backend when first needed."""
        if self._vocabulary is None:
            self._vocabulary = self._backend.vocabulary()
        return self._vocabulary

    def finish(self) -> Postings:
        """Sort the vocabulary (code point order) and lay the postings out by term.

        No global sort: within a chunk the triples are grouped by term with documents ascending, and
        chunks come in document order, so each chunk's groups are scattered to the next free places
        of their terms (a counting sort, linear in the postings: the backend's :meth:`Builds.lay_out`).
        """
        self._wait_for_texts()
        self.close()
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
        offsets, doc_nums, tfs = self._backend.lay_out(self._chunks, new_id, self._threads)
        self._chunks = []
        return Postings(
            terms=terms,
            offsets=offsets,
            doc_nums=doc_nums,
            tfs=tfs,
            doc_lengths=np.frombuffer(self._lengths, dtype=np.int32).copy(),
        )


def lay_out(chunks: Sequence[Triples], new_id: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:meth:`Builds.lay_out` in numpy: the terms' document frequencies give the offsets, then each
    chunk's groups are scattered to the next free places of their terms."""
    num_terms = new_id.shape[0]
    df = np.zeros(num_terms, dtype=np.int64)
    for chunk_terms, _, _ in chunks:
        df += np.bincount(new_id[chunk_terms], minlength=num_terms)
    offsets = np.zeros(num_terms + 1, dtype=np.int64)
    np.cumsum(df, out=offsets[1:])
    doc_nums = np.empty(int(offsets[-1]), dtype=np.int32)
    tfs = np.empty(int(offsets[-1]), dtype=np.int32)
    free = offsets[:-1].copy()
    for chunk_terms, chunk_docs, chunk_tfs in chunks:
        n = chunk_terms.shape[0]
        starts = np.flatnonzero(np.concatenate(([True], chunk_terms[1:] != chunk_terms[:-1])))
        sizes = np.diff(np.append(starts, n))
        group_terms = new_id[chunk_terms[starts]]
        places = concat_ranges(free[group_terms], sizes)
        doc_nums[places] = chunk_docs
        tfs[places] = chunk_tfs
        free[group_terms] += sizes
    return offsets, doc_nums, tfs


def _merged(vocabulary: MergesChunks, chunk: TextChunk) -> tuple[Triples, np.ndarray]:
    """A chunk's triples with the vocabulary's term ids (its terms taken in), and its document lengths."""
    ids = vocabulary.merged_ids(chunk)
    terms, docs, tfs = chunk.triples
    return (ids[terms], docs, tfs), chunk.doc_lengths


def _cuts(texts: list[str], chars: int) -> list[tuple[int, int]]:
    """``texts`` cut into consecutive runs of about ``chars`` characters (at least one text each)."""
    cuts, start, size = [], 0, 0
    for i, length in enumerate(map(len, texts)):
        size += length + 1
        if size >= chars:
            cuts.append((start, i + 1))
            start, size = i + 1, 0
    if start < len(texts):
        cuts.append((start, len(texts)))
    return cuts


def _utf8(texts: list[str], analyse: Callable[[str], list[str]] | None) -> tuple[np.ndarray, np.ndarray]:
    """The texts' UTF-8 joined by spaces and where each begins (``bounds``: n + 1 places, the last one
    past the end): ASCII texts as they are, the others analysed (``analyse``) and their terms joined
    by spaces (lone surrogates pass as in "surrogatepass", whose byte order is the code point order)."""
    joined = " ".join(texts)
    if not joined.isascii():
        assert analyse is not None
        texts = [text if text.isascii() else " ".join(analyse(text)) for text in texts]
        pieces = [text.encode("utf-8", "surrogatepass") for text in texts]
        sizes = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
        data = b" ".join(pieces)
    else:
        sizes = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
        data = joined.encode("ascii")
    bounds = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(sizes + 1, out=bounds[1:])
    return np.frombuffer(data, dtype=np.uint8), bounds
