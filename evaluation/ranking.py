"""Columnar qrels and runs, trec_eval's tie rule, and the judged ranking every measure reads.

Data flows one way: readers (or plain dicts) -> :class:`Qrels`, :class:`Run` ->
:func:`judged_ranking` -> :class:`JudgedRanking` -> the measures of :mod:`bm25lab.evaluation.measures`.

**Columnar form.** A :class:`Qrels` or :class:`Run` holds one row per judgment or retrieved document:
the query as a segment of rows (``offsets``), the document id as a string (``docs``, a
:class:`~bm25lab.engine.columns.Strings` column: offsets and bytes in numpy arrays, as pyarrow lays a string
array out; ``doc_ids`` gives it to pyarrow) with a 64-bit hash of its UTF-8 bytes (``doc_hash``, computed by
numpy straight from the bytes, or by the compiled readers as they read), and the label or score. Duplicates, ties and the join of a run with its qrels are
found with integer operations on (query, hash) keys, and every match those keys suggest is confirmed
by comparing the strings themselves, so a hash collision can cost time but never change a result.
A 10-million-line run is thus handled without a Python loop per document and without building a
dictionary of its document ids.

**Tie rule** (trec_eval ``form_res_rels.c``, ``comp_sim_docno``): the documents of a query are ranked
by score descending, ties broken by document id descending in ``strcmp`` order, which is UTF-8 byte
order, code point order and Python's ``str`` order. The rank column of a run file is ignored. A
:class:`Run` keeps each query's rows in this order.

**Labels** (``form_res_rels.c``): a qrels label ``>= 0`` is a judgment, relevant when ``>= rel``. A label
is the judgment as trec_eval reads it where the judgment is a whole number, and the judgment as written
where it has a fraction (:attr:`Qrels.relevance`: 4.5 stays 4.5, relevant at ``rel=4.5``; trec_eval would
read 4).
A negative label means "in the pool but unjudged": never relevant, gain 0, not a judged non-relevant
document. A retrieved document absent from the qrels is unjudged too. A :class:`JudgedRanking` keeps
only the judged documents a run retrieved, with their ranks.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from ..engine.columns import Strings, arrow_array, numpy_values, string_hashes
from ..engine.columns import string_array as _string_array
from .conventions import DEFAULT_TREC_EVAL, TrecEvalRules, get_rules
from .errors import InputError

if TYPE_CHECKING:
    import pyarrow as pa

    from ..engine.records import Results

__all__ = ["JudgedRanking", "Qrels", "Run", "Strings", "judged_ranking", "natural_key", "string_hashes",
           "tie_rule_order"]

_DIGITS = re.compile(r"([0-9]+)")


def natural_key(qid: str) -> tuple[tuple[Any, ...], str]:
    """Sort key that orders query ids as people do: ``"2" < "10"``, ``"q9" < "q10"``; ties by the id."""
    parts = _DIGITS.split(qid)
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts)), qid


# ---------------------------------------------------------------------------------------------
# Strings: columns, query codes, hashes


def _column(doc: Any) -> tuple[Strings, np.ndarray]:
    """Document ids (a :class:`Strings`, a pyarrow string array or a sequence of ``str``) as a column, and
    their hashes (a pyarrow array's hashed chunk by chunk, as it comes)."""
    if isinstance(doc, (Strings, list, tuple)):
        docs = Strings.of(doc)
        return docs, string_hashes(docs)
    arrow = _string_array(doc)
    return Strings.from_arrow(arrow), string_hashes(arrow)


def _encode_queries(values: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, tuple[str, ...]]:
    """Query codes in first-appearance order; rows grouped by query need no hashing, only a linear scan
    (dictionary-encoded ids, as the readers give, none at all)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if _is_dictionary(values):
        return _dictionary_codes(values)
    n = len(values)
    if n > 1:
        change = numpy_values(pc.not_equal(values.slice(1), values.slice(0, n - 1)))
        starts = np.flatnonzero(np.concatenate(([True], change)))
        heads = values.take(arrow_array(starts)).to_pylist()
        if len(set(heads)) == len(heads):
            return np.repeat(np.arange(len(heads), dtype=np.int64), np.diff(np.append(starts, n))), tuple(heads)
    encoded = pc.dictionary_encode(values)
    if isinstance(encoded, pa.ChunkedArray) and not encoded.num_chunks:
        return np.zeros(0, dtype=np.int64), ()
    return _dictionary_codes(encoded)


def _is_dictionary(values: Any) -> bool:
    import pyarrow as pa

    return isinstance(values, (pa.Array, pa.ChunkedArray)) and pa.types.is_dictionary(values.type)


def _dictionary_parts(values: pa.DictionaryArray | pa.ChunkedArray) -> tuple[np.ndarray, list[Any]]:
    """(int32 indices, or int64 beyond 2**31 values, and the dictionary's values) of a dictionary-encoded
    array, its chunks' dictionaries unified."""
    import pyarrow as pa

    if isinstance(values, pa.ChunkedArray):
        if values.num_chunks > 1:
            values = pa.table({"v": values}).unify_dictionaries().column("v")
        if values.num_chunks == 0:
            return np.zeros(0, dtype=np.int64), []
        dictionary = values.chunk(0).dictionary
        chunks = [chunk.indices for chunk in values.chunks]
    else:
        dictionary, chunks = values.dictionary, [values.indices]
    # one array, no concatenation; int32 (a reader's index type) halves the fresh memory of 10 million rows
    kind = np.int32 if len(dictionary) < 2**31 else np.int64
    indices = np.empty(sum(len(chunk) for chunk in chunks), dtype=kind)
    at = 0
    for chunk in chunks:
        indices[at : at + len(chunk)] = numpy_values(chunk)
        at += len(chunk)
    return indices, _string_array(dictionary).to_pylist()


def _dictionary_codes(values: pa.DictionaryArray | pa.ChunkedArray) -> tuple[np.ndarray, tuple[str, ...]]:
    """Query codes in first-appearance order from dictionary-encoded ids: the indices themselves when the
    dictionary lists the ids in that order (a reader's does), else the indices renumbered."""
    codes, dictionary = _dictionary_parts(values)
    if not codes.size:
        return codes, ()
    heads = np.flatnonzero(np.concatenate(([True], codes[1:] != codes[:-1])))  # each id first appears at one
    seen = np.maximum.accumulate(codes[heads])
    if codes[0] == 0 and (np.diff(seen) <= 1).all() and int(seen[-1]) + 1 == len(dictionary):
        return codes, tuple(dictionary)
    used, first = np.unique(codes[heads], return_index=True)
    used = used[np.argsort(first, kind="stable")]
    renumber = np.zeros(len(dictionary), dtype=np.int64)
    renumber[used] = np.arange(used.size, dtype=np.int64)
    return renumber[codes], tuple(dictionary[i] for i in used.tolist())


def pa_indices(rows: np.ndarray) -> pa.Array:
    """``rows`` as a pyarrow int64 array, for ``take``."""
    return arrow_array(np.asarray(rows, dtype=np.int64))


def _text_at(docs: Strings, row: int) -> str:
    """The document id of one row."""
    return docs.slice(row, 1).to_pylist()[0]


def _key_bits(count: int) -> int:
    """Bits of a (query, hash) key given to the query: the rest holds the top of the hash."""
    return max(1, int(count).bit_length())


def _pair_keys(query: np.ndarray, hashes: np.ndarray, count: int) -> np.ndarray:
    """uint64 keys ``query << (64 - b) | hash >> b`` (b = bits for ``count`` queries): sorting them groups
    rows by query, and equal (query, document) pairs always get equal keys."""
    bits = _key_bits(count)
    keys = hashes >> np.uint64(bits)
    step = max(1, min(keys.size, _KEY_CHUNK))
    high = np.empty(step, dtype=np.uint64)  # one cache-sized buffer: no second key-sized array
    for lo in range(0, keys.size, step):
        hi = min(lo + step, keys.size)
        part = high[: hi - lo]
        part[:] = query[lo:hi]
        np.left_shift(part, np.uint64(64 - bits), out=part)
        np.bitwise_or(keys[lo:hi], part, out=keys[lo:hi])
    return keys


_KEY_CHUNK = 1 << 16


def _repeated_pairs(query: np.ndarray, doc_ids: Strings, hashes: np.ndarray, count: int) -> list[tuple[int, int]]:
    """(first row, later row) of every repeated (query, document id) pair, later rows ascending.

    Rows whose keys repeat are compared as strings, so hash collisions are not taken for repeats.
    """
    if query.size < 2:
        return []
    ordered = _pair_keys(query, hashes, count)
    ordered.sort()  # in place: no second key-sized array (most runs have no repeat, and need no other)
    repeated_keys = ordered[1:][ordered[1:] == ordered[:-1]]
    if repeated_keys.size == 0:
        return []
    rows = np.flatnonzero(np.isin(_pair_keys(query, hashes, count), repeated_keys))
    seen: dict[tuple[int, str], int] = {}
    pairs: list[tuple[int, int]] = []
    for row, q, doc in zip(rows.tolist(), query[rows].tolist(), doc_ids.take(rows).to_pylist()):
        first = seen.setdefault((q, doc), row)
        if first != row:
            pairs.append((first, row))
    return sorted(pairs, key=lambda pair: pair[1])


def _offsets(codes: np.ndarray, count: int) -> np.ndarray:
    """Segment bounds of rows grouped by ``codes`` (already sorted): ``rows of i = offsets[i]:offsets[i+1]``,
    found by binary search (``count + 1`` searches, not a pass over every row: 10 million rows of a run)."""
    return np.searchsorted(codes, np.arange(count + 1, dtype=codes.dtype if codes.size else np.int64)).astype(np.int64)


def _where(source: str | Path | None, lines: np.ndarray | None, row: int) -> tuple[str | Path | None, int | None]:
    """The (file, line) of a row for an error message; row numbers count from 1 without lines."""
    if lines is not None:
        return source, int(lines[row])
    return source, (row + 1 if source is not None else None)


# ---------------------------------------------------------------------------------------------
# Qrels


@dataclass(frozen=True, eq=False, repr=False)
class Qrels:
    """Relevance judgments in columnar form.

    ``qids`` lists the judged queries (each with at least one judgment) in first-appearance order;
    the judgments of ``qids[i]`` are rows ``offsets[i]:offsets[i+1]`` (in hash order), with document
    ids ``docs`` (:attr:`doc_ids` as pyarrow strings), their hashes ``doc_hash``, the judgments as written
    (``grade``, float64: a rating such as 4.5 stays 4.5 for MAE and RMSE) and the integer labels every other
    measure reads
    (``label``: by default the grade truncated toward zero, as trec_eval reads "4.5" with ``atol``).
    Build one with :func:`bm25lab.evaluation.read_qrels`, :meth:`from_dict` or :meth:`from_columns`.
    """

    qids: tuple[str, ...]
    offsets: np.ndarray
    docs: Strings
    doc_hash: np.ndarray
    label: np.ndarray
    grade: np.ndarray

    @classmethod
    def from_columns(
        cls,
        qid: Any,
        doc: Any,
        label: Any,
        *,
        integer_labels: Any = None,
        source: str | Path | None = None,
        lines: np.ndarray | None = None,
    ) -> Qrels:
        """Qrels from parallel columns (pyarrow arrays, sequences, or :class:`Strings` document ids), one
        judgment per row.

        ``label`` holds the judgments as numbers (finite; non-integers allowed); ``integer_labels``, when
        given, the integer labels to use instead of the judgments truncated toward zero (the reader
        passes trec_eval 10.0's ``atol`` reading of the text). A repeated (query, document) pair is
        dropped when its judgment is the same and an :class:`InputError` naming ``source`` and the line
        (from ``lines``) when it differs.
        """
        qid = qid if _is_dictionary(qid) else _string_array(qid)
        grades = np.asarray(label, dtype=np.float64) + 0.0
        if not np.isfinite(grades).all():
            path, line = _where(source, lines, int(np.flatnonzero(~np.isfinite(grades))[0]))
            raise InputError("relevance is not a finite number", path, line)
        labels = np.trunc(grades).astype(np.int64) if integer_labels is None else np.asarray(integer_labels, np.int64)
        q, qids = _encode_queries(qid)
        docs, hashes = _column(doc)
        return cls.from_encoded(q, qids, docs, hashes, grades, labels, source=source, lines=lines)

    @classmethod
    def from_encoded(cls, q: np.ndarray, qids: tuple[str, ...], docs: Strings, hashes: np.ndarray,
                     grades: np.ndarray, labels: np.ndarray, *, source: str | Path | None = None,
                     lines: np.ndarray | None = None) -> Qrels:
        """Qrels from columns already encoded, as a reader that hashes while it parses gives them: query codes
        ``q`` (positions in ``qids``, each used), document ids ``docs``, their :func:`string_hashes` ``hashes``,
        finite float64 ``grades`` and int64 ``labels``. The repeated pairs' check is :meth:`from_columns`'."""
        keep = np.ones(labels.size, dtype=bool)
        for first, later in _repeated_pairs(q, docs, hashes, len(qids)):
            if grades[first] != grades[later] or labels[first] != labels[later]:
                path, line = _where(source, lines, later)
                raise InputError(
                    f"conflicting judgments for query {qids[int(q[later])]!r}, document "
                    f"{_text_at(docs, later)!r}: {_grade_text(grades[first])} and {_grade_text(grades[later])}",
                    path,
                    line,
                )
            keep[later] = False
        rows = np.flatnonzero(keep)
        order = rows[np.argsort(_pair_keys(q[rows], hashes[rows], len(qids)), kind="stable")]
        return cls(qids, _offsets(q[order], len(qids)), docs.take(order), hashes[order], labels[order], grades[order])

    @cached_property
    def doc_ids(self) -> pa.Array:
        """The document ids as a pyarrow string array, on :attr:`docs`' bytes (pyarrow is imported then)."""
        return self.docs.arrow()

    @classmethod
    def from_dict(cls, judgments: Mapping[str, Mapping[str, float]]) -> Qrels:
        """Qrels from ``{qid: {docid: grade}}``; ids are taken as ``str``, grades are numbers (a rating
        such as 4.5 is kept for MAE and RMSE; the integer measures read it truncated, 4).

        A query whose inner mapping is empty has no judgments and is left out.
        """
        if isinstance(judgments, Qrels):
            return judgments
        qids, docs, grades = _flatten(judgments)
        if not all(type(g) is int for g in grades):
            grades = [_as_grade(g, q, d) for q, d, g in zip(qids, docs, grades)]
        return cls.from_columns(qids, docs, np.array(grades, dtype=np.float64))

    @cached_property
    def relevance(self) -> np.ndarray:
        """The label every measure reads (float64): trec_eval's integer ``label`` where the judgment is a whole
        number, the judgment as written (``grade``) where it has a fraction. On qrels of whole numbers it
        is ``label`` exactly, so trec_eval's figures are unchanged; a rating of 4.5 is 4.5, not 4."""
        return np.where(self.grade == np.trunc(self.grade), self.label, self.grade).astype(np.float64)

    @property
    def fractional(self) -> bool:
        """Whether some judgment has a fraction (4.5)."""
        return bool((self.grade != np.trunc(self.grade)).any())

    def to_dict(self) -> dict[str, dict[str, float]]:
        """``{qid: {docid: grade}}`` with queries in first-appearance order; whole grades as ``int``."""
        docs = self.docs.to_pylist()
        whole = bool((self.grade == self.label).all())
        grades = self.label.tolist() if whole else [int(g) if g.is_integer() else g for g in self.grade.tolist()]
        return {
            qid: dict(zip(docs[start:stop], grades[start:stop]))
            for qid, start, stop in zip(self.qids, self.offsets[:-1].tolist(), self.offsets[1:].tolist())
        }

    def __len__(self) -> int:
        return int(self.label.size)

    @property
    def num_queries(self) -> int:
        return len(self.qids)

    def __repr__(self) -> str:
        return f"Qrels({self.num_queries} queries, {len(self)} judgments)"


def _grade_text(grade: float) -> str:
    return str(int(grade)) if float(grade).is_integer() else repr(float(grade))


def _as_grade(grade: Any, qid: Any, docid: Any) -> float:
    """A finite relevance grade from an int, a float or a numpy number (bools count as 0 and 1)."""
    if isinstance(grade, (bool, np.bool_)):
        return float(grade)
    try:
        return float(grade.__index__())
    except (AttributeError, TypeError):
        pass
    if isinstance(grade, (float, np.floating)) and math.isfinite(grade):
        return float(grade)
    raise InputError(f"query {str(qid)!r}, document {str(docid)!r}: relevance {grade!r} is not a finite number")


# ---------------------------------------------------------------------------------------------
# Runs


@dataclass(frozen=True, eq=False, repr=False)
class Run:
    """A ranked run in columnar form, each query's documents in tie-rule order.

    ``qids`` lists the queries in first-appearance order (a query from a dict may have no documents);
    the documents of ``qids[i]`` are rows ``offsets[i]:offsets[i+1]``, ranked by score descending, ties
    by document id descending, with ids ``docs`` (:attr:`doc_ids` as pyarrow strings), their hashes
    ``doc_hash`` and float64 scores ``score``. ``name`` is the run tag. Build one with :func:`bm25lab.evaluation.read_run`, :meth:`from_dict`
    or :meth:`from_columns`.
    """

    qids: tuple[str, ...]
    offsets: np.ndarray
    docs: Strings
    doc_hash: np.ndarray
    score: np.ndarray
    name: str = ""

    @classmethod
    def from_columns(
        cls,
        qid: Any,
        doc: Any,
        score: Any,
        *,
        qids: Sequence[str] | None = None,
        name: str = "",
        source: str | Path | None = None,
        lines: np.ndarray | None = None,
        copy: bool = True,
    ) -> Run:
        """A run from parallel columns (pyarrow arrays, sequences, or :class:`Strings` document ids), one
        retrieved document per row, in any order.

        ``qids``, when given, lists every query (in order), including queries without documents.
        A NaN score or a repeated (query, document) pair is an :class:`InputError` naming
        ``source`` and the line (from ``lines``), as trec_eval refuses duplicate documents.
        With ``copy=False`` a writable float64 numpy ``score`` (a reader's own) becomes the run's
        scores itself, its negative zeros made 0.0 in place, instead of a copy.
        """
        qid = qid if _is_dictionary(qid) else _string_array(qid)
        if not copy and isinstance(score, np.ndarray) and score.dtype == np.float64 and score.flags.writeable:
            scores = np.add(score, 0.0, out=score)  # -0.0 -> 0.0, as C compares them equal
        else:
            scores = np.asarray(score, dtype=np.float64) + 0.0
        nan = np.isnan(scores)
        if nan.any():
            path, line = _where(source, lines, int(np.flatnonzero(nan)[0]))
            raise InputError("score is NaN", path, line)
        if qids is None:
            q, all_qids = _encode_queries(qid)
        else:
            q, all_qids = _codes_in(qid, qids)
        docs, hashes = _column(doc)
        return cls.from_encoded(q, all_qids, docs, hashes, scores, name=name, source=source, lines=lines)

    @classmethod
    def from_encoded(cls, q: np.ndarray, qids: tuple[str, ...], doc: Strings, hashes: np.ndarray, scores: np.ndarray, *,
                     name: str = "", source: str | Path | None = None, lines: np.ndarray | None = None,
                     unique: bool = False, ranked: bool = False) -> Run:
        """A run from columns already encoded, as a reader that hashes while it parses gives them: query
        codes ``q`` (positions in ``qids``), document ids ``doc`` (a :class:`Strings` column), their
        :func:`string_hashes` ``hashes`` and float64 ``scores`` without NaN or negative zero. ``hashes``
        and ``scores`` become the run's own (permuted in place where ties move). The duplicate check and
        the tie rule are :meth:`from_columns`' own; ``unique`` says the caller has made sure that no
        (query, document) pair repeats (the compiled reader checks as it reads), and skips the check;
        ``ranked`` that the rows are in the tie-rule order already, each query's rows together (the
        compiled reader orders ties as it reads), and skips the tie rule's sort."""
        repeated = [] if unique else _repeated_pairs(q, doc, hashes, len(qids))
        if repeated:
            later = repeated[0][1]
            path, line = _where(source, lines, later)
            raise InputError(
                f"duplicate document {_text_at(doc, later)!r} for query "
                f"{qids[int(q[later])]!r} (trec_eval refuses duplicates)",
                path,
                line,
            )
        order, rows, moved = (None, None, None) if ranked else _tie_rule_steps(q, scores, doc)
        if order is not None:  # not in rank order: every column permuted
            if rows is not None:
                order[rows] = order[moved]
            q, doc, hashes, scores = q[order], doc.take(order), hashes[order], scores[order]
        elif rows is not None:  # in rank order but for ties: only the tied rows' documents move
            hashes[rows] = hashes[moved]  # (their query and score are the same)
            doc = _move_tied_strings(doc, rows, moved)
        return cls(qids, _offsets(q, len(qids)), doc, hashes, scores, name)

    @classmethod
    def from_results(cls, results: Results, *, name: str = "") -> Run:
        """A run of the engine's search results as they are: their rankings are in the tie-rule order
        already, hold no duplicate, and their ids were hashed once per index, so nothing is sorted,
        hashed or checked again (equal to :meth:`from_dict` of the same results; the tests compare)."""
        ids = results.doc_ids
        return cls(results.qids, results.offsets.copy(), Strings.from_arrow(ids.column).take(results.doc_nums),
                   ids.hashes[results.doc_nums], results.scores + 0.0, name)

    @classmethod
    def from_dict(cls, ranking: Mapping[str, Any], *, name: str = "") -> Run:
        """A run from ``{qid: {docid: score}}``, ``{qid: [(docid, score), ...]}`` or ``{qid: [Hit, ...]}``
        (or the engine's :class:`~bm25lab.engine.records.Results`: :meth:`from_results`).

        Hits are any objects with ``doc_id`` and ``score`` (the engine's ``Hit``). The order given
        is ignored: documents are ranked by the tie rule.
        """
        if isinstance(ranking, Run):
            return ranking
        from ..engine.records import Results  # the engine's result type, imported where a run may be one

        if isinstance(ranking, Results):
            return cls.from_results(ranking, name=name)
        qids, docs, values = _flatten(ranking)
        try:
            scores = np.array(values, dtype=np.float64)
        except (TypeError, ValueError):
            scores = np.array([_as_score(v, q, d) for q, d, v in zip(qids, docs, values)], dtype=np.float64)
        nan = np.flatnonzero(np.isnan(scores))
        if nan.size:
            _as_score(math.nan, qids[nan[0]], docs[nan[0]])
        return cls.from_columns(qids, docs, scores, qids=[str(q) for q in ranking], name=name)

    def truncated(self, depth: int) -> Run:
        """The run cut to its best ``depth`` documents per query, after ranking by the tie rule
        (trec_eval ``-M``)."""
        counts = np.minimum(np.diff(self.offsets), depth)
        if (counts == np.diff(self.offsets)).all():
            return self
        offsets = np.zeros_like(self.offsets)
        np.cumsum(counts, out=offsets[1:])
        from ..engine.postings import concat_ranges

        rows = concat_ranges(self.offsets[:-1], counts)
        return Run(self.qids, offsets, self.docs.take(rows), self.doc_hash[rows], self.score[rows], self.name)

    @cached_property
    def doc_ids(self) -> pa.Array:
        """The document ids as a pyarrow string array, on :attr:`docs`' bytes (pyarrow is imported then)."""
        return self.docs.arrow()

    def to_dict(self) -> dict[str, dict[str, float]]:
        """``{qid: {docid: score}}``, queries in order, documents in rank order."""
        docs = self.docs.to_pylist()
        scores = self.score.tolist()
        bounds = zip(self.qids, self.offsets[:-1].tolist(), self.offsets[1:].tolist())
        return {qid: dict(zip(docs[start:stop], scores[start:stop])) for qid, start, stop in bounds}

    def ranked(self, query: int | str) -> list[tuple[str, float]]:
        """``[(docid, score), ...]`` of one query (by position or id), in rank order."""
        i = self.qids.index(query) if isinstance(query, str) else query
        start, stop = int(self.offsets[i]), int(self.offsets[i + 1])
        docs = self.docs.slice(start, stop - start).to_pylist()
        return list(zip(docs, self.score[start:stop].tolist()))

    def __len__(self) -> int:
        return int(self.score.size)

    @property
    def num_queries(self) -> int:
        return len(self.qids)

    def __repr__(self) -> str:
        tag = f" {self.name!r}" if self.name else ""
        return f"Run{tag}({self.num_queries} queries, {len(self)} documents)"


def _codes_in(qid: pa.Array, qids: Sequence[str]) -> tuple[np.ndarray, tuple[str, ...]]:
    """Codes of ``qid`` values as positions in ``qids`` (deduplicated, order kept)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ordered = tuple(dict.fromkeys(qids))
    value_set = pa.array(ordered, type=pa.string())
    if _is_dictionary(qid):
        indices, dictionary = _dictionary_parts(qid)
        positions = pc.index_in(pa.array(dictionary, type=pa.string()), value_set=value_set)
        if positions.null_count and indices.size and np.isin(np.flatnonzero(numpy_values(positions.is_null())), indices).any():
            raise InputError("a run row names a query missing from its list of queries")
        return numpy_values(positions.fill_null(-1)).astype(np.int64)[indices], ordered
    codes = pc.index_in(qid, value_set=value_set)
    if codes.null_count:
        raise InputError("a run row names a query missing from its list of queries")
    return numpy_values(codes).astype(np.int64), ordered


def _flatten(nested: Mapping[Any, Any]) -> tuple[list[str], list[str], list[Any]]:
    """(query ids, document ids, values), one per row, of ``{qid: {docid: value}}``,
    ``{qid: [(docid, value) or hit, ...]}`` or ``{qid: hits}`` where ``hits`` has the columns ``doc_ids`` and
    ``scores`` (an engine ``Hits``: read as columns, no object per hit); ids become ``str``."""
    qids: list[str] = []
    docs: list[Any] = []
    values: list[Any] = []
    for qid, inner in nested.items():
        before = len(docs)
        if hasattr(inner, "doc_ids") and hasattr(inner, "scores"):
            docs.extend(inner.doc_ids)
            values.extend(inner.scores)
        else:
            pairs = inner.items() if isinstance(inner, Mapping) else [_pair(item, qid) for item in inner]
            for doc, value in pairs:
                docs.append(doc)
                values.append(value)
        qids.extend([str(qid)] * (len(docs) - before))
    if not all(type(doc) is str for doc in docs):
        docs = [str(doc) for doc in docs]
    return qids, docs, values


def _pair(item: Any, qid: Any) -> tuple[Any, Any]:
    """(docid, score) from a hit (``doc_id``, ``score``) or a pair."""
    if hasattr(item, "doc_id"):
        return item.doc_id, item.score
    pair = tuple(item) if isinstance(item, (tuple, list)) else ()
    if len(pair) != 2:
        raise InputError(f"query {str(qid)!r}: expected (docid, score) pairs or hits, got {item!r}")
    return pair


def _as_score(score: Any, qid: Any, docid: Any) -> float:
    try:
        value = float(score)
    except (TypeError, ValueError):
        raise InputError(f"query {str(qid)!r}, document {str(docid)!r}: score {score!r} is not a number") from None
    if math.isnan(value):
        raise InputError(f"query {str(qid)!r}, document {str(docid)!r}: score is NaN")
    return value


def tie_rule_order(q: np.ndarray, score: np.ndarray, doc: Any) -> np.ndarray | None:
    """Row order by query code, then score descending, then document id descending (trec_eval's rule).

    Returns None when the rows are already in that order. A run written in rank order (rows grouped by
    query, scores non-increasing) costs one linear check; otherwise one integer argsort orders rows by
    (query, score). Then only tied rows (same query and score) are compared as strings, and sorted
    by pyarrow when they are out of order. ``doc`` holds the document ids (a :class:`Strings` column, pyarrow
    strings or a sequence of ``str``).
    """
    order, rows, source = _tie_rule_steps(q, score, Strings.of(doc))
    if rows is None:
        return order
    order = np.arange(q.size, dtype=np.int64) if order is None else order
    order[rows] = order[source]
    return order


def _tie_rule_steps(q: np.ndarray, score: np.ndarray,
                    doc: Strings) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """:func:`tie_rule_order` in two steps: ``order`` (None: as they are) ranks the rows by query and score;
    then, among the rows so ordered, rows ``rows`` (None: none) take the place of rows ``source``: tied
    rows only (same query, same score), which documents alone tell apart. So a run written in rank order
    needs no permutation of its own columns, only of its tied rows' documents."""
    n = q.size
    if n < 2:
        return None, None, None
    grouped = bool((q[1:] >= q[:-1]).all()) and bool(((q[1:] != q[:-1]) | (score[1:] <= score[:-1])).all())
    order = None if grouped else _query_score_order(q, score)
    q_sorted, s_sorted = (q, score) if order is None else (q[order], score[order])
    tied = (q_sorted[1:] == q_sorted[:-1]) & (s_sorted[1:] == s_sorted[:-1])
    if not tied.any():
        return order, None, None
    member = np.zeros(n, dtype=bool)
    member[:-1] |= tied
    member[1:] |= tied
    starts = member.copy()
    starts[1:] &= ~tied
    rows = np.flatnonzero(member)
    group = np.cumsum(starts[rows])
    within = _descending_within_groups(group, doc.take(rows if order is None else order[rows]))
    if within is None:
        return order, None, None
    return order, rows, rows[within]


def _descending_within_groups(group: np.ndarray, strings: Strings) -> np.ndarray | None:
    """Permutation sorting ``strings`` descending within each run of equal ``group``; None if already so
    (pyarrow compares and sorts them)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    docs = strings.arrow()
    same = group[1:] == group[:-1]
    ascending = numpy_values(pc.less(docs.slice(0, len(docs) - 1), docs.slice(1)))
    if not (same & ascending).any():
        return None
    table = pa.table({"group": arrow_array(group), "doc": docs})
    return numpy_values(pc.sort_indices(table, sort_keys=[("group", "ascending"), ("doc", "descending")]))


def _move_tied_strings(strings: Strings, rows: np.ndarray, moved: np.ndarray, batch: int = 1 << 16) -> Strings:
    """``strings.take(order)`` where ``order`` is the identity but for ``order[rows] = moved``: ``rows``
    ascending, ``moved`` a permutation of ``rows`` within each run of consecutive rows (tied rows: a
    query's rows of one score).

    Such a permutation leaves every other row's bytes where they are, and each run of rows the same
    span of bytes. So the strings are copied once, end to end, into a new column's arrays, and only the
    moved rows' offsets and bytes are rewritten there, ``batch`` rows (whole runs) at a time: a tenth of
    the time of a ``take`` (which copies every string one by one) and no row-sized temporary."""
    lo, hi = int(strings.offsets[0]), int(strings.offsets[-1])
    offsets = np.subtract(strings.offsets, lo, dtype=strings.offsets.dtype)
    data = strings.data[lo:hi].copy()
    run_start = np.flatnonzero(np.concatenate(([True], rows[1:] != rows[:-1] + 1)))  # runs of consecutive rows
    edges = np.append(run_start, rows.size)  # batches of about ``batch`` rows, ending where runs end
    bounds = np.append(edges[np.searchsorted(run_start, np.arange(0, rows.size, batch))], rows.size)
    bounds = bounds[np.append(True, bounds[1:] != bounds[:-1])]  # sorted: no np.unique (it imports numpy.ma)
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):  # whole runs: each batch's bytes its own
        target, source = rows[lo:hi], moved[lo:hi]
        start = offsets[source].astype(np.int64)
        length = offsets[source + 1] - start
        before = np.cumsum(length) - length  # bytes of the batch's moved rows before each
        first = run_start[(run_start >= lo) & (run_start < hi)] - lo
        first = np.repeat(first, np.diff(np.append(first, hi - lo)))  # each row's run's first row
        new_start = offsets[target[first]] + before - before[first]
        at = np.arange(int(length.sum()), dtype=np.int64)
        taken = data[np.repeat(start - before, length) + at]
        offsets[target] = new_start
        data[np.repeat(new_start - before, length) + at] = taken
    return Strings(offsets, data)


def _query_score_order(q: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Stable argsort by (query ascending, score descending), as one int64 key when it fits."""
    distinct, score_rank = np.unique(score, return_inverse=True)
    descending = distinct.size - 1 - score_rank.reshape(-1)
    if (int(q.max()) + 1) * distinct.size < 2**63:  # int32 query codes are widened: the key needs 64 bits
        return np.argsort(q.astype(np.int64) * distinct.size + descending, kind="stable")
    return np.lexsort((descending, q))


# ---------------------------------------------------------------------------------------------
# The judged ranking


@dataclass(frozen=True, eq=False, repr=False)
class JudgedRanking:
    """The judged documents each evaluated query retrieved, with their ranks: the input of every measure.

    Every measure of trec_eval depends on the retrieved documents only through their count and the
    ranks and labels of the documents in the qrels: documents absent from the qrels are non-relevant,
    gain 0 and not judged non-relevant. So only those are kept, which makes the measures cheap: row j
    is a judged document (label ``>= 0``) ranked ``rank[j]`` (1-based, in tie-rule order) for query
    ``seg[j]`` with label ``label[j]`` (:attr:`Qrels.relevance`), grade ``grade[j]`` (the judgment as written: a rating
    such as 4.5) and run score ``score[j]``; rows are ordered by query, then rank. Retrieved documents
    the qrels list with a negative label ("in the pool, unjudged") are ``pooled_seg`` / ``pooled_rank``.

    Per query: ``num_ret`` (documents retrieved), and from the qrels ``num_rel`` (R, labels ``>= rel``),
    ``num_nonrel`` (N, labels ``0 <= label < rel``), and every judgment ``>= 0`` sorted by label
    descending (``judged_label`` with ``judged_grade``, segments ``judged_offsets``), which give the
    ideal ranking. ``ret_score`` holds the scores of all retrieved documents in rank order (segments
    ``ret_offsets``) for the measures of ratings. ``in_run`` says which queries the run has. With
    ``judged_only`` (trec_eval ``-J``) the unjudged documents were removed before ranking, so ranks
    count judged documents only (trec_eval's ``-M`` is :meth:`Run.truncated`, before the join). ``rules`` are the trec_eval rules measures follow where 9.0.8 and 10.0 differ,
    ``collection_size`` the number of documents in the collection (None when not given), and
    ``missing_ratings`` what MAE and RMSE do with a retrieved document the user did not rate.
    """

    qids: tuple[str, ...]
    in_run: np.ndarray
    num_ret: np.ndarray
    seg: np.ndarray
    rank: np.ndarray
    label: np.ndarray
    grade: np.ndarray
    score: np.ndarray
    rel: float
    num_rel: np.ndarray
    num_nonrel: np.ndarray
    judged_offsets: np.ndarray
    judged_label: np.ndarray
    judged_grade: np.ndarray
    pooled_seg: np.ndarray
    pooled_rank: np.ndarray
    ret_offsets: np.ndarray
    ret_score: np.ndarray
    rules: TrecEvalRules
    collection_size: int | None = None
    missing_ratings: str = "skip"

    @property
    def num_queries(self) -> int:
        return len(self.qids)

    @cached_property
    def is_rel(self) -> np.ndarray:
        """Row is relevant: label ``>= rel``."""
        return self.label >= self.rel

    @cached_property
    def is_nonrel(self) -> np.ndarray:
        """Row is judged non-relevant: ``label < rel``."""
        return self.label < self.rel

    @cached_property
    def gain(self) -> np.ndarray:
        """Graded gain of every row: the raw label (trec_eval's ``ndcg``)."""
        return self.label.astype(np.float64)

    @cached_property
    def cum_rel(self) -> np.ndarray:
        """Relevant documents at this rank or above, within the query."""
        return self.running_count(self.is_rel)

    @cached_property
    def num_rel_ret(self) -> np.ndarray:
        """Relevant documents retrieved per query."""
        return self.count(self.is_rel)

    @cached_property
    def _row_offsets(self) -> np.ndarray:
        return _offsets(self.seg, self.num_queries)

    def running_count(self, flags: np.ndarray) -> np.ndarray:
        """Inclusive running count of ``flags`` over each query's rows (exact integers)."""
        total = np.cumsum(flags, dtype=np.int64)
        before = np.concatenate(([0], total))[self._row_offsets[:-1]]
        return total - before[self.seg]

    def count(self, flags: np.ndarray) -> np.ndarray:
        """Per-query number of rows where ``flags`` holds."""
        return np.bincount(self.seg[flags], minlength=self.num_queries).astype(np.int64)

    def total(self, rows: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Per-query sum of ``values`` of the rows ``rows`` (indices), added in rank order."""
        return np.bincount(self.seg[rows], weights=values, minlength=self.num_queries)

    def top(self, k: int | np.ndarray | None) -> np.ndarray:
        """Rows ranked ``<= k`` (``k`` an int, one value per query, or None for every row)."""
        if k is None:
            return np.ones(self.rank.size, dtype=bool)
        if np.ndim(k):
            return self.rank <= np.asarray(k)[self.seg]
        return self.rank <= k

    def rel_in_top(self, k: int | np.ndarray) -> np.ndarray:
        """Per query, relevant documents among the first ``k`` (an int or one value per query)."""
        return self.count(self.is_rel & self.top(k))

    @cached_property
    def judged_seg(self) -> np.ndarray:
        """Query position of every entry of ``judged_label``."""
        return np.repeat(np.arange(self.num_queries, dtype=np.int64), np.diff(self.judged_offsets))

    @cached_property
    def ideal_gain(self) -> np.ndarray:
        """Every positive label of each query, sorted descending: the gains of the ideal ranking."""
        return self.judged_label[self.judged_label > 0].astype(np.float64)

    @cached_property
    def ideal_seg(self) -> np.ndarray:
        """Query position of every ideal gain."""
        return self.judged_seg[self.judged_label > 0]

    @cached_property
    def ideal_offsets(self) -> np.ndarray:
        return _offsets(self.ideal_seg, self.num_queries)

    @cached_property
    def ideal_rank(self) -> np.ndarray:
        """1-based rank of every ideal gain within its query."""
        return np.arange(self.ideal_gain.size, dtype=np.int64) - self.ideal_offsets[:-1][self.ideal_seg] + 1

    def rel_list(self, q: int) -> np.ndarray:
        """trec_eval's ``results_rel_list`` of query position ``q``: the label at each rank, -1 for a
        document absent from the qrels (``RELVALUE_NONPOOL``), -2 for one with a negative label
        (``RELVALUE_UNJUDGED``)."""
        out = np.full(int(self.num_ret[q]), -1, dtype=np.int64)
        rows = slice(self._row_offsets[q], self._row_offsets[q + 1])
        out[self.rank[rows] - 1] = np.trunc(self.label[rows])  # a fractional label at its whole part
        out[self.pooled_rank[self._pooled_offsets[q]:self._pooled_offsets[q + 1]] - 1] = -2
        return out

    @cached_property
    def _pooled_offsets(self) -> np.ndarray:
        return _offsets(self.pooled_seg, self.num_queries)

    def judged_levels(self, q: int) -> np.ndarray:
        """trec_eval's ``rel_levels`` of query position ``q``: the number of judgments at each label 0, 1, ...
        (whole labels only: trec_eval's gain levels have no fractions)."""
        labels = self.judged_label[self.judged_offsets[q]:self.judged_offsets[q + 1]]
        if (labels != np.trunc(labels)).any():
            raise InputError(f"query {self.qids[q]!r} has fractional judgments: trec_eval's gain levels (nDCG with a "
                             f"gain map, G, ndcg_rel, Rndcg) are whole labels; nDCG without a map takes fractions")
        return np.bincount(labels.astype(np.int64)) if labels.size else np.zeros(0, dtype=np.int64)

    def __repr__(self) -> str:
        return f"JudgedRanking({self.num_queries} queries, {self.label.size} judged documents retrieved, rel={self.rel})"


def judged_ranking(
    qrels: Qrels,
    run: Run,
    qids: Sequence[str],
    *,
    rel: float = 1,
    judged_only: bool = False,
    trec_eval: int | TrecEvalRules = DEFAULT_TREC_EVAL,
    stand_in: bool = False,
    collection_size: int | None = None,
    missing_ratings: str = "skip",
    fractions: str = "keep",
) -> JudgedRanking:
    """Join ``run`` with ``qrels`` for the queries ``qids`` (all judged; some may be absent from the run).

    Each retrieved document is looked up among its query's judgments by (query, hash) key: a bitmap of
    judged hashes skips most unjudged documents, ``searchsorted`` finds the candidates, and a string
    comparison confirms each one. With ``judged_only`` (trec_eval ``-J``) documents without a judgment ``>= 0`` are
    dropped and the judged ones close ranks. With ``stand_in`` the queries missing from the run are
    evaluated as trec_eval 10.0 does under ``-c``: as a ranking of one unjudged document. ``fractions``:
    ``"keep"`` reads the labels as :attr:`Qrels.relevance` (4.5 is 4.5), ``"truncate"`` as trec_eval does
    (``Qrels.label``: 4.5 is 4, -0.5 is 0).
    """
    labels = _labels(qrels, fractions)
    n = len(qids)
    run_rows, num_ret, in_run = _run_segments(run, qids)
    q_seg, q_row, q_label = _qrels_segments(qrels, qids, labels)
    ends = np.cumsum(num_ret)
    starts = ends - num_ret
    selected_score = run.score if run_rows is None else run.score[run_rows]

    retrieved, matched = _lookup(qrels, run, run_rows, ends, q_seg, q_row, n)
    seg = np.searchsorted(ends, retrieved, side="right")
    rank = retrieved - starts[seg] + 1
    label, grade, score = labels[matched], qrels.grade[matched], selected_score[retrieved]
    ret_score = selected_score
    if judged_only:
        keep = label >= 0
        seg, label, grade, score = seg[keep], label[keep], grade[keep], score[keep]
        num_ret = np.bincount(seg, minlength=n).astype(np.int64)
        rank = np.arange(seg.size, dtype=np.int64) - (np.cumsum(num_ret) - num_ret)[seg] + 1
        ret_score = score
    ret_offsets = np.concatenate(([0], np.cumsum(num_ret))).astype(np.int64)
    if stand_in:
        num_ret = np.where(in_run, num_ret, 1)

    judged = label >= 0
    pooled_seg, pooled_rank = seg[~judged], rank[~judged]
    seg, rank, label, grade, score = seg[judged], rank[judged], label[judged], grade[judged], score[judged]

    num_rel = np.bincount(q_seg, weights=q_label >= rel, minlength=n).astype(np.int64)
    nonrel = (q_label >= 0) & (q_label < rel)
    num_nonrel = np.bincount(q_seg, weights=nonrel, minlength=n).astype(np.int64)
    in_pool = q_label >= 0
    pool_seg, pool_label, pool_grade = q_seg[in_pool], q_label[in_pool], qrels.grade[q_row[in_pool]]
    order = np.lexsort((-pool_label, pool_seg))
    return JudgedRanking(
        qids=tuple(qids),
        in_run=in_run,
        num_ret=num_ret,
        seg=seg,
        rank=rank,
        label=label,
        grade=grade,
        score=score,
        rel=rel,
        num_rel=num_rel,
        num_nonrel=num_nonrel,
        judged_offsets=_offsets(pool_seg, n),
        judged_label=pool_label[order],
        judged_grade=pool_grade[order],
        pooled_seg=pooled_seg,
        pooled_rank=pooled_rank,
        ret_offsets=ret_offsets,
        ret_score=ret_score,
        rules=get_rules(trec_eval),
        collection_size=collection_size,
        missing_ratings=missing_ratings,
    )


def _lookup(
    qrels: Qrels,
    run: Run,
    run_rows: np.ndarray | None,
    ends: np.ndarray,
    judged_seg: np.ndarray,
    judged_row: np.ndarray,
    n: int,
) -> tuple[np.ndarray, np.ndarray]:
    """(positions among the selected run rows, qrels rows) of the retrieved documents the qrels list."""
    empty = np.zeros(0, dtype=np.int64)
    if not judged_row.size or not ends.size or ends[-1] == 0:
        return empty, empty
    seg, row = judged_seg, judged_row
    hashes = qrels.doc_hash[row]
    keys = _pair_keys(seg, hashes, n)
    order = np.argsort(keys, kind="stable")
    keys, row = keys[order], row[order]

    run_hash = run.doc_hash if run_rows is None else run.doc_hash[run_rows]
    size = 1 << max(16, (_BITMAP_SPARSITY * hashes.size).bit_length())  # a bitmap of judged (query, document)s
    mask = np.uint64(size - 1)
    bitmap = np.zeros(size, dtype=bool)
    bitmap[((hashes ^ _query_mix(np.arange(n))[seg]) & mask).view(np.int64)] = True  # masked: the view is exact
    slots = np.repeat(_query_mix(np.arange(n)), np.diff(ends, prepend=0))
    np.bitwise_xor(slots, run_hash, out=slots)
    np.bitwise_and(slots, mask, out=slots)
    candidates = np.flatnonzero(bitmap[slots.view(np.int64)])
    del slots
    wanted = _pair_keys(np.searchsorted(ends, candidates, side="right"), run_hash[candidates], n)
    at = np.minimum(np.searchsorted(keys, wanted), keys.size - 1)
    hit = keys[at] == wanted
    candidates, wanted, at = candidates[hit], wanted[hit], at[hit]

    run_doc_rows = candidates if run_rows is None else run_rows[candidates]
    same = run.docs.same_at(run_doc_rows, qrels.docs, row[at])
    clustered = np.flatnonzero(np.searchsorted(keys, wanted, side="right") - at > 1)
    if clustered.size:  # several judgments share a key: find the one with the same string, if any
        for i in clustered.tolist():
            doc = _text_at(run.docs, int(run_doc_rows[i]))
            stop = int(np.searchsorted(keys, wanted[i], side="right"))
            names = qrels.docs.take(row[at[i] : stop]).to_pylist()
            same[i] = doc in names
            at[i] = at[i] + names.index(doc) if doc in names else at[i]
    return candidates[same], row[at[same]]


_BITMAP_SPARSITY = 32
"""The judged-pairs bitmap of :func:`_lookup` has this many slots per judgment: the share of retrieved documents
it lets through without a judgment (about 1/32) costs a binary search each."""
_MIX = np.uint64(0x9E3779B97F4A7C15)


def _query_mix(positions: np.ndarray) -> np.ndarray:
    """A 64-bit value per query position, mixed into a document's hash to give its bitmap slot for that query
    (Fibonacci hashing: the query spreads the slots of a document judged for many queries)."""
    return positions.astype(np.uint64) * _MIX


def _run_segments(run: Run, qids: Sequence[str]) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """The run's rows for ``qids`` in that order: (row indices, or None for all rows as they are,
    documents retrieved per query, which queries the run has)."""
    n = len(qids)
    at = {qid: i for i, qid in enumerate(run.qids)}
    position = np.array([at.get(qid, -1) for qid in qids], dtype=np.int64)
    in_run = position >= 0
    start = np.zeros(n, dtype=np.int64)
    length = np.zeros(n, dtype=np.int64)
    start[in_run] = run.offsets[:-1][position[in_run]]
    length[in_run] = np.diff(run.offsets)[position[in_run]]
    if int(length.sum()) == len(run) and bool((np.diff(start[in_run]) >= 0).all()):
        return None, length, in_run
    from ..engine.postings import concat_ranges

    return concat_ranges(start, length), length, in_run


FRACTIONS = {"keep": "a judgment with a fraction (4.5) is read as written", "truncate": "as trec_eval reads it: "
              "the whole part (4.5 is 4, -0.5 is 0)"}
"""How the measures read a fractional judgment (``fractions=``; whole judgments are trec_eval's either way)."""


def _labels(qrels: Qrels, fractions: str) -> np.ndarray:
    if fractions not in FRACTIONS:
        raise InputError(f"unknown fractions {fractions!r}; choose one of: {', '.join(FRACTIONS)}")
    return qrels.relevance if fractions == "keep" else qrels.label.astype(np.float64)


def _qrels_segments(qrels: Qrels, qids: Sequence[str], labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The judgments of ``qids`` in that order: (query position, qrels row, label)."""
    n = len(qids)
    at = {qid: i for i, qid in enumerate(qrels.qids)}
    position = np.array([at[qid] for qid in qids], dtype=np.int64)
    if n == 0:
        return position, position, position.astype(np.float64)
    length = np.diff(qrels.offsets)[position]
    from ..engine.postings import concat_ranges

    rows = concat_ranges(qrels.offsets[:-1][position], length)
    return np.repeat(np.arange(n, dtype=np.int64), length), rows, labels[rows]
