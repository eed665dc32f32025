"""Columnar qrels and runs, trec_eval's tie rule, and the judged ranking every measure reads.

Data flows one way: readers (or plain dicts) -> :class:`Qrels`, :class:`Run` ->
:func:`judged_ranking` -> :class:`JudgedRanking` -> the measures of :mod:`evaluation.measures`.

**Columnar form.** A :class:`Qrels` or :class:`Run` holds one numpy row per judgment or retrieved
document: the query as a segment of rows (``offsets``), the document as an integer code into a sorted
vocabulary of document ids (``docs``, a pyarrow string array), and the label or score. Codes follow
the vocabulary's order, which is code point order: UTF-8 byte order, C's ``strcmp`` order, Python's
``str`` order. So comparing codes compares document ids, and a 10-million-line run is sorted, checked
for duplicates and joined with its qrels by integer array operations, never a Python loop per document.

**Tie rule** (trec_eval ``form_res_rels.c``, ``comp_sim_docno``): the documents of a query are ranked
by score descending, ties broken by document id descending. The rank column of a run file is ignored.
A :class:`Run` keeps each query's rows in this order.

**Labels** (``form_res_rels.c``): a qrels label ``>= 0`` is a judgment, relevant when ``>= rel``.
A negative label means "in the pool but unjudged": never relevant, gain 0, not a judged non-relevant
document. A retrieved document absent from the qrels is unjudged too. In a :class:`JudgedRanking`
both carry the label :data:`NOT_JUDGED`.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import numpy as np

from evaluation.errors import InputError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["NOT_JUDGED", "JudgedRanking", "Qrels", "Run", "judged_ranking", "natural_key", "tie_rule_order"]

NOT_JUDGED = -1
"""Label of a retrieved document that is absent from the qrels or judged with a negative label."""

_DIGITS = re.compile(r"([0-9]+)")


def natural_key(qid: str) -> tuple[tuple[Any, ...], str]:
    """Sort key that orders query ids as people do: ``"2" < "10"``, ``"q9" < "q10"``; ties by the id."""
    parts = _DIGITS.split(qid)
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts)), qid


# ---------------------------------------------------------------------------------------------
# Small array helpers


def _string_array(values: Any) -> pa.Array | pa.ChunkedArray:
    """A pyarrow string array (chunked arrays stay chunked) from pyarrow data or a sequence of str."""
    import pyarrow as pa

    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    return pa.array(values, type=pa.string())


def _encode(values: pa.Array | pa.ChunkedArray, *, sort: bool) -> tuple[np.ndarray, pa.Array]:
    """Dictionary-encode strings: ``(codes, vocabulary)`` with ``vocabulary.take(codes) == values``.

    Unsorted, codes follow first appearance; sorted, the vocabulary is in code point order, so that
    ``codes[i] < codes[j]`` exactly when ``values[i] < values[j]`` as Python strings.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(values)
    if isinstance(encoded, pa.ChunkedArray):  # one memo table for all chunks: a shared dictionary
        if encoded.num_chunks == 0:
            return np.zeros(0, dtype=np.int64), pa.array([], type=pa.string())
        vocabulary = encoded.chunk(encoded.num_chunks - 1).dictionary
        codes = np.concatenate([c.indices.to_numpy(zero_copy_only=False) for c in encoded.chunks])
    else:
        vocabulary, codes = encoded.dictionary, encoded.indices.to_numpy(zero_copy_only=False)
    codes = codes.astype(np.int64, copy=False)
    if sort and len(vocabulary) > 1:
        order = pc.sort_indices(vocabulary).to_numpy()
        position = np.empty_like(order)
        position[order] = np.arange(order.size, dtype=order.dtype)
        codes = position[codes].astype(np.int64, copy=False)
        vocabulary = vocabulary.take(order)
    return codes, vocabulary


def _encode_queries(values: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, tuple[str, ...]]:
    """Query codes in first-appearance order; rows grouped by query need no hashing, only a linear scan."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(values)
    if n > 1:
        change = pc.not_equal(values.slice(1), values.slice(0, n - 1))
        starts = np.flatnonzero(np.concatenate(([True], np.asarray(change.to_numpy(zero_copy_only=False), dtype=bool))))
        heads = values.take(pa.array(starts)).to_pylist()
        if len(set(heads)) == len(heads):
            return np.repeat(np.arange(len(heads), dtype=np.int64), np.diff(np.append(starts, n))), tuple(heads)
    codes, vocabulary = _encode(values, sort=False)
    return codes, tuple(vocabulary.to_pylist())


def _offsets(codes: np.ndarray, count: int) -> np.ndarray:
    """Segment bounds of rows grouped by ``codes`` (already sorted): ``rows of i = offsets[i]:offsets[i+1]``."""
    offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.bincount(codes, minlength=count), out=offsets[1:])
    return offsets


def segment_rows(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenated row indices ``starts[i] .. starts[i] + lengths[i] - 1`` for every segment i."""
    lengths = np.asarray(lengths, dtype=np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    out_starts = np.cumsum(lengths) - lengths
    return np.repeat(np.asarray(starts, dtype=np.int64) - out_starts, lengths) + np.arange(total, dtype=np.int64)


def _where(source: str | Path | None, lines: np.ndarray | None, row: int) -> tuple[str | Path | None, int | None]:
    """The (file, line) of a row for an error message; row numbers count from 1 without lines."""
    if lines is not None:
        return source, int(lines[row])
    return source, (row + 1 if source is not None else None)


def _first_duplicate(keys: np.ndarray) -> int | None:
    """Row of the earliest second occurrence of a repeated key, or None when all keys are distinct."""
    if keys.size < 2:
        return None
    ordered = np.sort(keys)
    if not (ordered[1:] == ordered[:-1]).any():
        return None
    order = np.argsort(keys, kind="stable")
    repeats = keys[order[1:]] == keys[order[:-1]]
    return int(order[1:][repeats].min())


# ---------------------------------------------------------------------------------------------
# Qrels


@dataclass(frozen=True, eq=False, repr=False)
class Qrels:
    """Relevance judgments in columnar form.

    ``qids`` lists the judged queries (each with at least one judgment) in first-appearance order;
    the judgments of ``qids[i]`` are rows ``offsets[i]:offsets[i+1]``, sorted by document id, with
    ``doc`` the codes into the sorted vocabulary ``docs`` and ``label`` the integer judgments.
    Build one with :func:`evaluation.read_qrels`, :meth:`from_dict` or :meth:`from_columns`.
    """

    qids: tuple[str, ...]
    docs: Any
    offsets: np.ndarray
    doc: np.ndarray
    label: np.ndarray

    @classmethod
    def from_columns(
        cls,
        qid: Any,
        doc: Any,
        label: Any,
        *,
        source: str | Path | None = None,
        lines: np.ndarray | None = None,
    ) -> Qrels:
        """Qrels from parallel columns (pyarrow arrays or sequences), one judgment per row.

        A repeated (query, document) pair is dropped when its label is the same and an
        :class:`InputError` naming ``source`` and the line (from ``lines``) when it differs.
        """
        qid, doc = _string_array(qid), _string_array(doc)
        labels = np.asarray(label, dtype=np.int64)
        q, qvocab = _encode_queries(qid)
        d, vocabulary = _encode(doc, sort=True)
        width = max(len(vocabulary), 1)
        keys = q * width + d
        order = np.argsort(keys, kind="stable")
        keys, q, d, labels = keys[order], q[order], d[order], labels[order]
        repeat = np.zeros(keys.size, dtype=bool)
        repeat[1:] = keys[1:] == keys[:-1]
        if repeat.any():
            conflict = repeat.copy()
            conflict[1:] &= labels[1:] != labels[:-1]
            if conflict.any():
                rows = order[np.flatnonzero(conflict)]
                row = int(rows.min())
                at = int(np.flatnonzero(order == row)[0])
                path, line = _where(source, lines, row)
                raise InputError(
                    f"conflicting judgments for query {qvocab[int(q[at])]!r}, document "
                    f"{vocabulary[int(d[at])].as_py()!r}: {int(labels[at - 1])} and {int(labels[at])}",
                    path,
                    line,
                )
            keep = ~repeat
            q, d, labels = q[keep], d[keep], labels[keep]
        return cls(qvocab, vocabulary, _offsets(q, len(qvocab)), d, labels)

    @classmethod
    def from_dict(cls, judgments: Mapping[str, Mapping[str, int]]) -> Qrels:
        """Qrels from ``{qid: {docid: grade}}``; ids are taken as ``str``, grades must be integers.

        A query whose inner mapping is empty has no judgments and is left out.
        """
        if isinstance(judgments, Qrels):
            return judgments
        qids: list[str] = []
        docs: list[str] = []
        labels: list[int] = []
        for qid, graded in judgments.items():
            for docid, grade in graded.items():
                qids.append(str(qid))
                docs.append(str(docid))
                labels.append(_as_label(grade, qid, docid))
        return cls.from_columns(qids, docs, labels)

    def to_dict(self) -> dict[str, dict[str, int]]:
        """``{qid: {docid: grade}}`` with queries in first-appearance order, documents sorted."""
        docs = self.docs.take(self.doc).to_pylist() if self.doc.size else []
        labels = self.label.tolist()
        return {
            qid: dict(zip(docs[start:stop], labels[start:stop]))
            for qid, start, stop in zip(self.qids, self.offsets[:-1].tolist(), self.offsets[1:].tolist())
        }

    def __len__(self) -> int:
        return int(self.label.size)

    @property
    def num_queries(self) -> int:
        return len(self.qids)

    def __repr__(self) -> str:
        return f"Qrels({self.num_queries} queries, {len(self)} judgments)"


def _as_label(grade: Any, qid: Any, docid: Any) -> int:
    """An integer relevance grade from an int, a numpy integer or an integral float."""
    if isinstance(grade, (bool, np.bool_)):
        return int(grade)
    try:
        return int(grade.__index__())
    except (AttributeError, TypeError):
        pass
    if isinstance(grade, (float, np.floating)) and math.isfinite(grade) and float(grade).is_integer():
        return int(grade)
    raise InputError(f"query {str(qid)!r}, document {str(docid)!r}: relevance {grade!r} is not an integer")


# ---------------------------------------------------------------------------------------------
# Runs


@dataclass(frozen=True, eq=False, repr=False)
class Run:
    """A ranked run in columnar form, each query's documents in tie-rule order.

    ``qids`` lists the queries in first-appearance order (a query from a dict may have no documents);
    the documents of ``qids[i]`` are rows ``offsets[i]:offsets[i+1]`` ranked by score descending, ties
    by document id descending; ``doc`` holds codes into the sorted vocabulary ``docs``, ``score`` the
    float64 scores. ``name`` is the run tag. Build one with :func:`evaluation.read_run`,
    :meth:`from_dict` or :meth:`from_columns`.
    """

    qids: tuple[str, ...]
    docs: Any
    offsets: np.ndarray
    doc: np.ndarray
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
    ) -> Run:
        """A run from parallel columns, one retrieved document per row, in any order.

        ``qids``, when given, lists every query (in order), including queries without documents.
        A NaN score or a repeated (query, document) pair is an :class:`InputError` naming
        ``source`` and the line (from ``lines``), as trec_eval refuses duplicate documents.
        """
        qid, doc = _string_array(qid), _string_array(doc)
        scores = np.asarray(score, dtype=np.float64) + 0.0  # -0.0 -> 0.0, as C compares them equal
        nan = np.isnan(scores)
        if nan.any():
            path, line = _where(source, lines, int(np.flatnonzero(nan)[0]))
            raise InputError("score is NaN", path, line)
        if qids is None:
            q, all_qids = _encode_queries(qid)
        else:
            q, all_qids = _codes_in(qid, qids)
        d, vocabulary = _encode(doc, sort=True)
        width = max(len(vocabulary), 1)
        duplicate = _first_duplicate(q * width + d)
        if duplicate is not None:
            path, line = _where(source, lines, duplicate)
            raise InputError(
                f"duplicate document {vocabulary[int(d[duplicate])].as_py()!r} for query "
                f"{all_qids[int(q[duplicate])]!r} (trec_eval refuses duplicates)",
                path,
                line,
            )
        order = tie_rule_order(q, scores, d, width)
        if order is not None:
            q, d, scores = q[order], d[order], scores[order]
        return cls(all_qids, vocabulary, _offsets(q, len(all_qids)), d, scores, name)

    @classmethod
    def from_dict(cls, ranking: Mapping[str, Any], *, name: str = "") -> Run:
        """A run from ``{qid: {docid: score}}``, ``{qid: [(docid, score), ...]}`` or ``{qid: [Hit, ...]}``.

        Hits are any objects with ``doc_id`` and ``score`` (the engine's ``Hit``). The order given
        is ignored: documents are ranked by the tie rule.
        """
        if isinstance(ranking, Run):
            return ranking
        qids: list[str] = []
        docs: list[str] = []
        scores: list[float] = []
        for qid, ranked in ranking.items():
            for docid, score in _scored_docs(ranked):
                qids.append(str(qid))
                docs.append(str(docid))
                scores.append(_as_score(score, qid, docid))
        return cls.from_columns(qids, docs, scores, qids=[str(q) for q in ranking], name=name)

    def to_dict(self) -> dict[str, dict[str, float]]:
        """``{qid: {docid: score}}``, queries in order, documents in rank order."""
        return {qid: dict(self.ranked(i)) for i, qid in enumerate(self.qids)}

    def ranked(self, query: int | str) -> list[tuple[str, float]]:
        """``[(docid, score), ...]`` of one query (by position or id), in rank order."""
        i = self.qids.index(query) if isinstance(query, str) else query
        start, stop = int(self.offsets[i]), int(self.offsets[i + 1])
        docs = self.docs.take(self.doc[start:stop]).to_pylist() if stop > start else []
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
    codes = pc.index_in(qid, value_set=pa.array(ordered, type=pa.string()))
    if codes.null_count:
        raise InputError("a run row names a query missing from its list of queries")
    return codes.to_numpy(zero_copy_only=False).astype(np.int64), ordered


def _scored_docs(ranked: Any) -> Iterable[tuple[Any, Any]]:
    """(docid, score) pairs from a mapping, a sequence of pairs or a sequence of hits."""
    if isinstance(ranked, Mapping):
        return ranked.items()
    return ((item.doc_id, item.score) if hasattr(item, "doc_id") else tuple(item) for item in ranked)


def _as_score(score: Any, qid: Any, docid: Any) -> float:
    try:
        value = float(score)
    except (TypeError, ValueError):
        raise InputError(f"query {str(qid)!r}, document {str(docid)!r}: score {score!r} is not a number") from None
    if math.isnan(value):
        raise InputError(f"query {str(qid)!r}, document {str(docid)!r}: score is NaN")
    return value


def tie_rule_order(q: np.ndarray, score: np.ndarray, d: np.ndarray, width: int) -> np.ndarray | None:
    """Row order by query code, then score descending, then document code descending (trec_eval's rule).

    Returns None when the rows are already in that order. A run written in rank order (rows grouped by
    query, scores non-increasing) costs one linear check, plus a small sort of its tied rows when their
    document ids are not in descending order; anything else gets one integer argsort. ``width`` is the
    number of document codes. (query, document) pairs must be distinct.
    """
    n = q.size
    if n < 2:
        return None
    same_query = q[1:] == q[:-1]
    grouped = bool((q[1:] >= q[:-1]).all()) and bool((same_query <= (score[1:] <= score[:-1])).all())
    if not grouped:
        return _full_order(q, score, d, width)
    tied = same_query & (score[1:] == score[:-1])
    if not (tied & (d[1:] > d[:-1])).any():
        return None
    member = np.zeros(n, dtype=bool)
    member[:-1] |= tied
    member[1:] |= tied
    starts = member.copy()
    starts[1:] &= ~tied
    rows = np.flatnonzero(member)
    group = np.cumsum(starts)[rows]
    within = np.argsort(group * width + (width - 1 - d[rows]), kind="stable")
    order = np.arange(n, dtype=np.int64)
    order[rows] = rows[within]
    return order


def _full_order(q: np.ndarray, score: np.ndarray, d: np.ndarray, width: int) -> np.ndarray:
    """argsort by (q ascending, score descending, d descending), as one int64 key when it fits."""
    distinct, score_rank = np.unique(score, return_inverse=True)
    levels = distinct.size
    descending_score = levels - 1 - score_rank.reshape(-1)
    descending_doc = width - 1 - d
    if (int(q.max()) + 1) * levels * width < 2**63:
        return np.argsort((q * levels + descending_score) * width + descending_doc, kind="stable")
    return np.lexsort((descending_doc, descending_score, q))


# ---------------------------------------------------------------------------------------------
# The judged ranking


@dataclass(frozen=True, eq=False, repr=False)
class JudgedRanking:
    """The judged documents each evaluated query retrieved, with their ranks: the input of every measure.

    Every measure of trec_eval depends on the retrieved documents only through their count and the
    ranks and labels of the judged ones (label ``>= 0``): unjudged documents are non-relevant, gain 0
    and not judged non-relevant. So only judged rows are kept, which makes the measures cheap: row j
    is a judged document ranked ``rank[j]`` (1-based, in tie-rule order) for query ``seg[j]`` with
    judgment ``label[j]``; rows are ordered by query, then rank. Per query: ``num_ret`` (documents
    retrieved), and from the qrels ``num_rel`` (R, labels ``>= rel``), ``num_nonrel`` (N, labels
    ``0 <= label < rel``) and the positive labels sorted descending (``ideal_gain``, segments
    ``ideal_offsets``) for the ideal DCG. ``in_run`` says which queries the run has. With
    ``judged_only`` (trec_eval ``-J``) the unjudged documents were removed before ranking, so ranks
    count judged documents only.
    """

    qids: tuple[str, ...]
    in_run: np.ndarray
    num_ret: np.ndarray
    seg: np.ndarray
    rank: np.ndarray
    label: np.ndarray
    rel: int
    num_rel: np.ndarray
    num_nonrel: np.ndarray
    ideal_offsets: np.ndarray
    ideal_gain: np.ndarray

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
    def ideal_seg(self) -> np.ndarray:
        """Query position of every ideal gain."""
        return np.repeat(np.arange(self.num_queries, dtype=np.int64), np.diff(self.ideal_offsets))

    @cached_property
    def ideal_rank(self) -> np.ndarray:
        """1-based rank of every ideal gain within its query."""
        return np.arange(self.ideal_gain.size, dtype=np.int64) - self.ideal_offsets[:-1][self.ideal_seg] + 1

    def __repr__(self) -> str:
        return f"JudgedRanking({self.num_queries} queries, {self.label.size} judged documents retrieved, rel={self.rel})"


def judged_ranking(
    qrels: Qrels, run: Run, qids: Sequence[str], *, rel: int = 1, judged_only: bool = False
) -> JudgedRanking:
    """Join ``run`` with ``qrels`` for the queries ``qids`` (all judged; some may be absent from the run).

    Retrieved documents get their labels by an integer join on (query, document code): the qrels
    vocabulary is mapped into the run's once, then the rows whose document is judged for some query
    are matched with one ``searchsorted``. With ``judged_only`` (trec_eval ``-J``) unjudged documents
    are dropped and the judged ones close ranks.
    """
    n = len(qids)
    run_rows, run_start, num_ret, in_run = _run_segments(run, qids)
    judged_seg, judged_doc, judged_label = _qrels_segments(qrels, run, qids)

    seg = np.zeros(0, dtype=np.int64)
    rank = np.zeros(0, dtype=np.int64)
    label = np.zeros(0, dtype=np.int64)
    present = (judged_doc >= 0) & (judged_label >= 0)
    if present.any() and num_ret.sum():
        width = max(len(run.docs), 1)
        keys = judged_seg[present] * width + judged_doc[present]
        key_label = judged_label[present]
        order = np.argsort(keys, kind="stable")
        keys, key_label = keys[order], key_label[order]
        pooled = np.zeros(width, dtype=bool)
        pooled[judged_doc[present]] = True
        doc = run.doc if run_rows is None else run.doc[run_rows]
        candidates = np.flatnonzero(pooled[doc])
        candidate_seg = np.searchsorted(np.cumsum(num_ret), candidates, side="right")
        wanted = candidate_seg * width + doc[candidates]
        at = np.minimum(np.searchsorted(keys, wanted), keys.size - 1)
        hit = keys[at] == wanted
        rows = candidates[hit]
        seg, label = candidate_seg[hit], key_label[at[hit]]
        rank = rows - (np.cumsum(num_ret) - num_ret)[seg] + 1
    if judged_only:
        num_ret = np.bincount(seg, minlength=n).astype(np.int64)
        rank = np.arange(seg.size, dtype=np.int64) - (np.cumsum(num_ret) - num_ret)[seg] + 1

    num_rel = np.bincount(judged_seg, weights=judged_label >= rel, minlength=n).astype(np.int64)
    nonrel = (judged_label >= 0) & (judged_label < rel)
    num_nonrel = np.bincount(judged_seg, weights=nonrel, minlength=n).astype(np.int64)
    positive = judged_label > 0
    ideal_seg, ideal_label = judged_seg[positive], judged_label[positive]
    ideal_order = np.lexsort((-ideal_label, ideal_seg))
    return JudgedRanking(
        qids=tuple(qids),
        in_run=in_run,
        num_ret=num_ret,
        seg=seg,
        rank=rank,
        label=label,
        rel=rel,
        num_rel=num_rel,
        num_nonrel=num_nonrel,
        ideal_offsets=_offsets(ideal_seg, n),
        ideal_gain=ideal_label[ideal_order].astype(np.float64),
    )


def _run_segments(run: Run, qids: Sequence[str]) -> tuple[np.ndarray | None, np.ndarray, np.ndarray, np.ndarray]:
    """The run's rows for ``qids`` in that order: (row indices or None for all rows as they are,
    segment starts, lengths, which queries the run has)."""
    n = len(qids)
    at = {qid: i for i, qid in enumerate(run.qids)}
    position = np.array([at.get(qid, -1) for qid in qids], dtype=np.int64)
    in_run = position >= 0
    start = np.zeros(n, dtype=np.int64)
    length = np.zeros(n, dtype=np.int64)
    start[in_run] = run.offsets[:-1][position[in_run]]
    length[in_run] = np.diff(run.offsets)[position[in_run]]
    covers_run = int(length.sum()) == len(run)
    in_order = covers_run and bool((np.diff(start[in_run]) >= 0).all())
    if in_order:
        return None, start, length, in_run
    return segment_rows(start, length), np.cumsum(length) - length, length, in_run


def _qrels_segments(qrels: Qrels, run: Run, qids: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The judgments of ``qids`` in that order: (query position, run document code or -1, label)."""
    import pyarrow.compute as pc

    n = len(qids)
    at = {qid: i for i, qid in enumerate(qrels.qids)}
    position = np.array([at[qid] for qid in qids], dtype=np.int64)
    length = np.diff(qrels.offsets)[position] if n else np.zeros(0, dtype=np.int64)
    rows = segment_rows(qrels.offsets[:-1][position] if n else position, length)
    seg = np.repeat(np.arange(n, dtype=np.int64), length)
    if len(run.docs) and len(qrels.docs):
        mapped = pc.index_in(qrels.docs, value_set=run.docs).fill_null(-1)
        in_run_vocabulary = mapped.to_numpy(zero_copy_only=False).astype(np.int64)
        doc = in_run_vocabulary[qrels.doc[rows]]
    else:
        doc = np.full(rows.size, -1, dtype=np.int64)
    return seg, doc, qrels.label[rows]
