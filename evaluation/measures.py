"""Every measure of ``docs/measures.md``: one small function each over the judged ranking, and a registry.

A measure function takes a :class:`~bm25lab.evaluation.ranking.JudgedRanking` and its parameter (a cutoff
``k``, a fraction such as a recall level ``r``, a number, a tuple such as a gain map, or None) and returns
one float64 per query, NaN where the measure is undefined for that query (``AUC`` without both kinds of
judged documents, ``MAE``/``RMSE`` without a rated document retrieved); ``relstring`` returns strings. The
judged ranking already ranked the documents (score descending, ties by document id descending), attached
the labels and counted R (relevant judged documents, label ``>= rel``) and N (judged non-relevant,
``0 <= label < rel``) per query, so each function is a few vectorised lines. Sums over a query's documents
are added in rank order, as trec_eval adds them, so values agree with trec_eval to the last bits; the
measures trec_eval computes with a loop whose quirks decide the value (gain maps, ``G``, ``ndcg_rel``,
``Rndcg``) follow that loop query by query.

Names are parsed by :func:`parse_measure`, case-insensitively, in the field's syntaxes with the field's
meanings (``docs/measures.md``, "Names"):

- bm25lab's: ``P@10``, ``nDCG``, ``nDCG@10``, ``iprec@0.5``, ``RBP@0.8`` and aliases (``MAP``,
  ``MRR``, ``NDCG@k``, ``precision@k``, ``recall@k``);
- trec_eval's: ``P_10``, ``P.10``, ``map_cut_10``, ``ndcg_cut.10``, ``recip_rank``,
  ``iprec_at_recall_0.50``, ``11pt_avg``, with its parameter lists where a measure takes a list
  (``utility_2,-1,0,0``, ``ndcg_1=3,2=9``, ``11pt_avg_.25,.5,.75``); :func:`expand_measures` also takes its
  lists of cutoffs ``P.5,10``, its families without a parameter (``P`` is ``P_5`` .. ``P_1000``, as
  ``trec_eval -m P``) and its nicknames ``official``, ``set`` and ``all_trec``;
- ir_measures': ``P(rel=2)@5``, ``AP(rel=2)``, ``nDCG(dcg=exp-log2)@10``, ``RR(judged_only=True)``,
  ``SetP``, ``NumRet(rel=1)``, ``IPrec@0.5``, ``Judged@10``: parameters in parentheses, the cutoff after ``@``;
- ranx's: ``hits@10`` (relevant documents in the top 10, a count), ``hit_rate@10``, ``mrr@10``,
  ``ndcg_burges@10``, ``r-precision``, ``rbp.95``, and ``-l2`` for a relevance level (``map@100-l2``).

:data:`MEASURES` is the registry.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Literal

import numpy as np

from ..engine import exactmath
from .errors import MeasureError
from .ranking import JudgedRanking

__all__ = ["DEFAULT_MEASURES", "ELEVEN_POINTS", "MEASURES", "MIN_GEO_MEAN", "TREC_CUTOFFS", "TREC_NICKNAMES",
           "MEASURE_SYNTAX", "Expansion", "Measure", "MeasureDef", "expand_measures", "known_measures", "numeric_measure",
           "parse_measure", "parse_measures", "suggest_measure", "unknown_measure"]

Param = int | float | tuple | None
ParamKind = Literal["none", "cutoff", "optional cutoff", "fraction", "number", "list"]

MIN_GEO_MEAN = 0.00001
"""trec_eval's floor for a value entering a geometric mean (``gm_map``, ``gm_bpref``)."""
INFAP_EPSILON = 0.00001
"""trec_eval's smoothing constant of ``infAP``."""


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, 0 where the denominator is 0."""
    out = np.zeros(np.broadcast(numerator, denominator).shape, dtype=np.float64)
    np.divide(numerator, denominator, out=out, where=np.asarray(denominator) != 0)
    return out


def _rows(mask: np.ndarray) -> np.ndarray:
    return np.flatnonzero(mask)


def _sequential_sum(values: np.ndarray) -> float:
    """Sum added left to right, as a C loop adds (``np.sum`` adds pairwise)."""
    return float(np.cumsum(values)[-1]) if values.size else 0.0


# ---------------------------------------------------------------------------------------------
# Set and cutoff measures


def precision(r: JudgedRanking, k: int) -> np.ndarray:
    """P@k = relevant in the top k / k; a list shorter than k is padded with non-relevant (``P_k``)."""
    return r.rel_in_top(k) / float(k)


def recall(r: JudgedRanking, k: int) -> np.ndarray:
    """R@k = relevant in the top k / R; 0 when R = 0 (``recall_k``)."""
    return _ratio(r.rel_in_top(k).astype(np.float64), r.num_rel.astype(np.float64))


def f1(r: JudgedRanking, k: int) -> np.ndarray:
    """F1@k = 2 P R / (P + R) of P@k and R@k; 0 when both are 0."""
    p, q = precision(r, k), recall(r, k)
    return _ratio(2.0 * p * q, p + q)


def success(r: JudgedRanking, k: int) -> np.ndarray:
    """Success@k = 1 if any relevant document is in the top k, else 0 (``success_k``; ranx's ``hit_rate@k``)."""
    return (r.rel_in_top(k) > 0).astype(np.float64)


def hits(r: JudgedRanking, k: int | None) -> np.ndarray:
    """Hits(@k) = the number of relevant documents in the top k (all retrieved without k): ranx's ``hits``."""
    return (r.num_rel_ret if k is None else r.rel_in_top(k)).astype(np.float64)


def relative_precision(r: JudgedRanking, k: int) -> np.ndarray:
    """relative_P@k = relevant in the top k / min(k, R); 0 when R = 0 (``relative_P_k``): P@k up to R, R@k after."""
    return _ratio(r.rel_in_top(k).astype(np.float64), np.minimum(k, r.num_rel).astype(np.float64))


def reciprocal_rank(r: JudgedRanking, k: int | None) -> np.ndarray:
    """RR(@k) = 1 / rank of the first relevant document (in the top k); 0 if none (``recip_rank``)."""
    first = _rows(r.is_rel & (r.cum_rel == 1) & r.top(k))
    return r.total(first, 1.0 / r.rank[first])


def reciprocal_rank_of_best(r: JudgedRanking, k: int | None) -> np.ndarray:
    """RR_max(@k) = 1 / rank of the first retrieved document holding the query's highest judgment
    (article 003's MRR: "the position of the most relevant document"); 0 if it is not retrieved (in
    the top k) or the query has no relevant document. Not trec_eval's ``recip_rank``."""
    best = np.full(r.num_queries, -1.0)
    heads = r.judged_offsets[:-1][np.diff(r.judged_offsets) > 0]
    best[r.judged_seg[heads]] = r.judged_label[heads]  # judgments are sorted by label, descending
    is_best = (r.label == best[r.seg]) & r.is_rel & r.top(k)
    first = _rows(is_best & (r.running_count(is_best) == 1))
    return r.total(first, 1.0 / r.rank[first])


def average_precision(r: JudgedRanking, k: int | None) -> np.ndarray:
    """AP(@k) = sum of P@i over ranks i (<= k) holding a relevant document / R (``map``, ``map_cut_k``).

    Relevant documents never retrieved (or below k) add 0; the sum is still divided by all R.
    """
    hits = _rows(r.is_rel & r.top(k))
    return _ratio(r.total(hits, r.cum_rel[hits] / r.rank[hits]), r.num_rel.astype(np.float64))


def average_precision_over_retrieved(r: JudgedRanking, k: int | None) -> np.ndarray:
    """AP_relret(@k) = sum of P@i over ranks i (<= k) holding a relevant document / relevant retrieved
    (in the top k); 0 when none. Article 001's "interpolated AP" (its example: 3.25 / 5 = 0.65). Not
    trec_eval's ``map``: it ignores the relevant documents a run misses."""
    hits = _rows(r.is_rel & r.top(k))
    return _ratio(r.total(hits, r.cum_rel[hits] / r.rank[hits]), r.count(r.is_rel & r.top(k)).astype(np.float64))


def average_precision_over_hits(r: JudgedRanking, k: int) -> np.ndarray:
    """AP_hits@k = sum of P@i over ranks i <= k holding a relevant document / relevant in the top k;
    0 when none. What article 002's code computes (``cumsum(P@i * rel_i) / cumsum(rel_i)`` at k). Not
    trec_eval's ``map_cut_k``, which divides by R."""
    return average_precision_over_retrieved(r, k)


def r_precision(r: JudgedRanking, _: None) -> np.ndarray:
    """Rprec = relevant in the top R / R; 0 when R = 0 (``Rprec``)."""
    return _ratio(r.rel_in_top(r.num_rel).astype(np.float64), r.num_rel.astype(np.float64))


def r_precision_multiple(r: JudgedRanking, multiple: float) -> np.ndarray:
    """Rprec_mult@x = P@c with c = (long)(x R + 0.9) documents; 0 when c = 0 (``Rprec_mult_x``; both
    trec_eval releases still add 0.9 here)."""
    cutoff = np.floor(multiple * r.num_rel.astype(np.float64) + 0.9).astype(np.int64)
    return _ratio(r.rel_in_top(cutoff).astype(np.float64), cutoff.astype(np.float64))


def bpref(r: JudgedRanking, _: None) -> np.ndarray:
    """bpref = 1/R * sum over retrieved relevant d of (1 - min(n_d, R) / min(N, R)) (``bpref``).

    n_d = judged non-relevant documents ranked above d; the term is 1 when n_d = 0. Unjudged
    documents are skipped. 0 when R = 0.
    """
    hits = _rows(r.is_rel)
    above = r.running_count(r.is_nonrel)[hits]
    num_rel = r.num_rel[r.seg[hits]]
    denominator = np.minimum(r.num_nonrel, r.num_rel)[r.seg[hits]]
    term = np.ones(hits.size, dtype=np.float64)
    seen = above > 0
    term[seen] = 1.0 - np.minimum(above[seen], num_rel[seen]) / denominator[seen]
    return _ratio(r.total(hits, term), r.num_rel.astype(np.float64))


def _pooled_above(r: JudgedRanking, rows: np.ndarray) -> np.ndarray:
    """Per row of ``rows``: retrieved documents of its query with a negative label ranked above it."""
    width = np.int64(max(int(r.num_ret.max(initial=0)), int(r.rank.max(initial=0))) + 1)
    pooled = r.pooled_seg * width + r.pooled_rank
    before = np.searchsorted(pooled, r.seg[rows] * width + r.rank[rows])
    first = np.searchsorted(pooled, r.seg[rows] * width)
    return before - first


def inferred_ap(r: JudgedRanking, _: None) -> np.ndarray:
    """infAP (Yilmaz and Aslam, CIKM 2006; trec_eval ``infAP``): AP estimated from a judged sample of
    the pool. For the relevant document at rank j + 1 (0-based j), with ``rel``, ``nonrel`` and
    ``unjudged`` the relevant, judged non-relevant and pooled-but-unjudged (negative label) documents
    at or above it: 1 when j = 0, else ``1/(j+1) + (j/(j+1)) * ((rel - 1 + nonrel + unjudged) / j) *
    ((rel - 1 + e) / (rel - 1 + nonrel + 2e))`` with e = 0.00001; the sum divided by R (0 when R = 0).
    Documents absent from the qrels are skipped."""
    hits = _rows(r.is_rel)
    j = (r.rank[hits] - 1).astype(np.float64)
    rel_above = (r.cum_rel[hits] - 1).astype(np.float64)
    nonrel = r.running_count(r.is_nonrel)[hits].astype(np.float64)
    unjudged = _pooled_above(r, hits).astype(np.float64)
    term = np.ones(hits.size, dtype=np.float64)
    later = j > 0
    fj, a, n, u = j[later], rel_above[later], nonrel[later], unjudged[later]
    term[later] = 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * ((a + n + u) / fj) * (
        (a + INFAP_EPSILON) / (a + n + 2 * INFAP_EPSILON))
    return _ratio(r.total(hits, term), r.num_rel.astype(np.float64))


def interpolated_precision(r: JudgedRanking, level: float) -> np.ndarray:
    """iprec@r = max precision at any rank whose recall >= r (``iprec_at_recall_r``).

    As trec_eval: the recall level becomes a number of relevant documents c, by the rules of the
    chosen trec_eval release (:mod:`bm25lab.evaluation.conventions`: ``(long)(r R + 0.9)`` in 9.0.8,
    ``lround(r R)`` in 10.0). The value is the highest precision j / rank_j over the retrieved
    relevant documents j >= max(c, 1), and 0 when there is none (c above the relevant retrieved, or
    nothing relevant retrieved; trec_eval gives NaN when nothing at all is retrieved).
    """
    needed = np.maximum(r.rules.recall_count(level, r.num_rel), 1)
    hits = _rows(r.is_rel & (r.cum_rel >= needed[r.seg]))
    best = np.zeros(r.num_queries, dtype=np.float64)
    np.maximum.at(best, r.seg[hits], r.cum_rel[hits] / r.rank[hits])
    return best


ELEVEN_POINTS = tuple(i / 10 for i in range(11))


def eleven_point_ap(r: JudgedRanking, levels: tuple[float, ...] | None) -> np.ndarray:
    """11pt-AP = mean of iprec@r for r = 0.0, 0.1, ..., 1.0 (or the given levels) (``11pt_avg``),
    added from the highest level down as trec_eval adds them."""
    levels = ELEVEN_POINTS if levels is None else levels
    total = np.zeros(r.num_queries, dtype=np.float64)
    for level in sorted(levels, reverse=True):
        total += interpolated_precision(r, level)
    return total / len(levels)


# ---------------------------------------------------------------------------------------------
# Graded measures


def _exp(gain: np.ndarray) -> np.ndarray:
    return exactmath.exp2(gain) - 1.0


def _dcg(r: JudgedRanking, k: int | None, exponential: bool) -> np.ndarray:
    """sum of gain_i / log2(i + 1) over ranks i (<= k); only documents with a positive label add."""
    hits = _rows((r.label > 0) & r.top(k))
    gain = r.gain[hits]
    return r.total(hits, (_exp(gain) if exponential else gain) / exactmath.log2_of_integers(r.rank[hits] + 1))


def _ideal_dcg(r: JudgedRanking, k: int | None, exponential: bool) -> np.ndarray:
    """DCG of the ideal ranking: every positive label of the query sorted descending, cut at k."""
    keep = np.ones(r.ideal_gain.size, dtype=bool) if k is None else r.ideal_rank <= k
    gain = _exp(r.ideal_gain[keep]) if exponential else r.ideal_gain[keep]
    values = gain / exactmath.log2_of_integers(r.ideal_rank[keep] + 1)
    return np.bincount(r.ideal_seg[keep], weights=values, minlength=r.num_queries)


def cumulative_gain(r: JudgedRanking, k: int | None) -> np.ndarray:
    """CG(@k) = sum of the raw labels (unjudged: 0) over the top k."""
    hits = _rows((r.label > 0) & r.top(k))
    return r.total(hits, r.gain[hits])


def dcg(r: JudgedRanking, k: int | None) -> np.ndarray:
    """DCG(@k) = sum of label_i / log2(i + 1) over the top k (labels as gains, unjudged 0) (trec_eval ``dcg``)."""
    return _dcg(r, k, exponential=False)


def ideal_dcg(r: JudgedRanking, k: int | None) -> np.ndarray:
    """IDCG(@k) = DCG(@k) of the ideal ranking: the query's positive labels sorted descending
    (trec_eval ``ideal_dcg``). Article 001's example: 2/1 + 2/log2(3) + 1/2 = 3.7619 (it prints 7.170)."""
    return _ideal_dcg(r, k, exponential=False)


def ndcg(r: JudgedRanking, k: int | tuple | None) -> np.ndarray:
    """nDCG(@k) = DCG(@k) / ideal DCG(@k); 0 when the ideal DCG is 0 (``ndcg``, ``ndcg_cut_k``).

    Gains are the raw labels whatever ``rel`` is, as in trec_eval; with a gain map (trec_eval's
    ``ndcg.1=3,2=9``, a tuple of (label, gain) pairs) the mapped labels get those gains instead.
    """
    if isinstance(k, tuple):
        return _per_query(r, lambda q: _gain_map_ndcg(r, q, k))
    return _ratio(_dcg(r, k, exponential=False), _ideal_dcg(r, k, exponential=False))


def dcg_exp(r: JudgedRanking, k: int | None) -> np.ndarray:
    """DCG_exp(@k) = sum of (2^label_i - 1) / log2(i + 1) over the top k (Burges' "industry" gain)."""
    return _dcg(r, k, exponential=True)


def ideal_dcg_exp(r: JudgedRanking, k: int | None) -> np.ndarray:
    """IDCG_exp(@k) = DCG_exp(@k) of the ideal ranking."""
    return _ideal_dcg(r, k, exponential=True)


def ndcg_exp(r: JudgedRanking, k: int | None) -> np.ndarray:
    """nDCG_exp(@k) = DCG_exp(@k) / ideal DCG_exp(@k); 0 when the ideal is 0."""
    return _ratio(_dcg(r, k, exponential=True), _ideal_dcg(r, k, exponential=True))


ERR_MAX_JUDGMENT = 4
"""gdeval's ``$MAX_JUDGMENT``: the highest label ERR takes (the TREC Web track's 0..4 scale)."""


def err_satisfaction(label: np.ndarray) -> np.ndarray:
    """R(g) = (2^g - 1) / 2^4: the probability that a document of label g satisfies the user (Chapelle,
    Metzler, Zhang and Grinspan, "Expected reciprocal rank for graded relevance", CIKM 2009, eq. 3 with
    g_max = 4, as gdeval.pl fixes it); 0 for a label <= 0."""
    return (np.exp2(np.maximum(label, 0.0)) - 1.0) / 2.0 ** ERR_MAX_JUDGMENT


def expected_reciprocal_rank(r: JudgedRanking, k: int | None) -> np.ndarray:
    """ERR(@k) = sum over ranks i (<= k) of R(g_i) / i * prod over ranks j < i of (1 - R(g_j)), with
    R(g) = (2^g - 1) / 16 (:func:`err_satisfaction`): the expected reciprocal rank at which a user
    scanning down the ranking stops, satisfied (Chapelle et al., CIKM 2009; the TREC Web track's
    gdeval.pl, which ir_measures runs for ``ERR@k``). Graded: ``rel`` is ignored; documents with a
    label <= 0 and documents absent from the qrels have R = 0; 0 for a query without a positive label.
    The loop is gdeval's, term by term (``$score += $r*$decay/($i+1); $decay *= (1 - $r)``), so values
    agree with it to the last bits. A label above 4 is refused, as gdeval refuses it (R would exceed 1).
    """
    _check_err_labels(r)
    hits = _rows((r.label > 0) & r.top(k))
    satisfied = err_satisfaction(r.label[hits])
    decay = _exclusive_products(r.seg[hits], 1.0 - satisfied)
    return r.total(hits, satisfied * decay / r.rank[hits])


def _check_err_labels(r: JudgedRanking) -> None:
    above = np.flatnonzero(r.judged_label > ERR_MAX_JUDGMENT)
    if above.size:
        at = int(above[0])
        raise MeasureError(f"ERR takes labels up to {ERR_MAX_JUDGMENT} (gdeval's MAX_JUDGMENT: R(g) = (2^g - 1) "
                           f"/ 2^{ERR_MAX_JUDGMENT} is a probability only up to there); query "
                           f"{r.qids[int(r.judged_seg[at])]!r} has a judgment of {float(r.judged_label[at]):g}")


def _exclusive_products(seg: np.ndarray, factors: np.ndarray) -> np.ndarray:
    """Per row, the product of ``factors`` of the earlier rows of its segment (1 for a segment's first
    row), multiplied one by one in row order as a loop multiplies; ``seg`` is sorted."""
    out = np.ones(factors.size, dtype=np.float64)
    if not factors.size:
        return out
    index = np.arange(seg.size, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate(([True], seg[1:] != seg[:-1])))
    position = index - np.repeat(starts, np.diff(np.append(starts, seg.size)))
    order = np.argsort(position, kind="stable")
    bounds = np.searchsorted(position[order], np.arange(int(position.max()) + 2))
    for step in range(1, int(position.max()) + 1):
        rows = order[bounds[step]:bounds[step + 1]]
        out[rows] = out[rows - 1] * factors[rows - 1]
    return out


# trec_eval's gain-level loops (gain_init.c, m_ndcg.c, m_G.c, m_ndcg_rel.c, m_Rndcg.c), query by query


def _per_query(r: JudgedRanking, value: Callable[[int], float]) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.array([value(q) for q in range(r.num_queries)], dtype=np.float64)


def _glibc_merge_sort(items: list, compare: Callable[[object, object], int]) -> list:
    """glibc's ``qsort`` of a small array (``msort_with_tmp``: a top-down merge sort taking the left
    item on ``compare <= 0``), which decides the order trec_eval sorts gain levels in."""
    if len(items) <= 1:
        return list(items)
    half = len(items) // 2
    left, right = _glibc_merge_sort(items[:half], compare), _glibc_merge_sort(items[half:], compare)
    out, i, j = [], 0, 0
    while i < len(left) and j < len(right):
        if compare(left[i], right[j]) <= 0:
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    return out + left[i:] + right[j:]


def _gain_levels(levels: np.ndarray, gain_map: tuple | None) -> list[tuple[int, float, int]]:
    """trec_eval's ``setup_gains``: (label, gain, judgments at that label) sorted by increasing gain.

    The map's labels come first in the order given, then every label 0..max judged label not in the
    map with gain = label; the sort compares ``(int)(gain1 - gain2)``, so gains less than 1 apart
    compare equal (a trec_eval quirk kept here: it decides the ideal ranking of such maps).
    """
    given = list(gain_map or ())
    entries = [(label, gain, int(levels[label]) if 0 <= label < levels.size else 0) for label, gain in given]
    mapped = {label for label, _ in given}
    entries += [(level, float(level), int(levels[level])) for level in range(levels.size) if level not in mapped]
    return _glibc_merge_sort(entries, lambda a, b: int(a[1] - b[1]))


def _ideal_walk(entries: list[tuple[int, float, int]]) -> tuple[np.ndarray, float]:
    """The ideal gain at each rank as trec_eval walks the levels from the highest gain down (stopping
    at the first judged level whose gain is not positive), and the gain it stops on."""
    gains: list[float] = []
    current = entries[-1][1] if entries else 0.0
    if current > 0.0:
        for _, gain, count in reversed(entries):
            if count == 0:
                continue
            current = gain
            if gain <= 0.0:
                break
            gains.extend([gain] * count)
        else:
            current = 0.0
    return np.array(gains, dtype=np.float64), current


def _result_gains(r: JudgedRanking, q: int, entries: list[tuple[int, float, int]]) -> np.ndarray:
    """trec_eval's ``get_gain`` of the document at each rank (-1: absent from the qrels, -2: negative label)."""
    ranks = r.rel_list(q)
    gains = np.zeros(ranks.size, dtype=np.float64)
    for label, gain, _ in entries:  # labels are distinct
        gains[ranks == label] = gain
    return gains


def _gains_of(r: JudgedRanking, q: int, gain_map: tuple | None) -> tuple[np.ndarray, np.ndarray, float]:
    entries = _gain_levels(r.judged_levels(q), gain_map)
    ideal, stop = _ideal_walk(entries)
    return _result_gains(r, q, entries), ideal, stop


def _discounts(n: int) -> np.ndarray:
    return exactmath.log2_of_integers(np.arange(2, n + 2))


def _gain_map_ndcg(r: JudgedRanking, q: int, gain_map: tuple | None) -> float:
    gains, ideal, _ = _gains_of(r, q, gain_map)
    nonzero = gains != 0
    results = _sequential_sum(gains[nonzero] / _discounts(gains.size)[nonzero])
    best = _sequential_sum(ideal / _discounts(ideal.size))
    return results / best if best > 0.0 else 0.0


def g_measure(r: JudgedRanking, gain_map: tuple | None) -> np.ndarray:
    """G (trec_eval ``G``, "normalized gain", experimental): the document at rank i adds
    gain_i / log2(2 + cost_i - gained_i), where gained_i sums the gains down to i and cost_i sums
    max(ideal gain at each rank, 1) down to i; the sum divided by the sum of the ideal gains (0 when
    that is 0). Gains are the labels, or a gain map's."""
    return _per_query(r, lambda q: _g(r, q, gain_map))


def _g(r: JudgedRanking, q: int, gain_map: tuple | None) -> float:
    gains, ideal, _ = _gains_of(r, q, gain_map)
    cost = np.ones(gains.size, dtype=np.float64)
    head = min(ideal.size, gains.size)
    cost[:head] = np.where(ideal[:head] >= 1.0, ideal[:head], 1.0)
    sum_cost, sum_results = np.cumsum(cost), np.cumsum(gains)
    nonzero = gains != 0
    discounts = exactmath.each(exactmath.log2, (2.0 + sum_cost[nonzero]) - sum_results[nonzero])
    total = _sequential_sum(gains[nonzero] / discounts)
    ideal_total = _sequential_sum(ideal)
    return total / ideal_total if ideal_total > 0.0 else 0.0


def binary_g(r: JudgedRanking, _: None) -> np.ndarray:
    """binG (trec_eval ``binG``, experimental): the mean over the R relevant documents of
    1 / log2(2 + non-relevant documents above it), unretrieved ones adding 0."""
    hits = _rows(r.is_rel)
    term = 1.0 / exactmath.log2_of_integers(3 + (r.rank[hits] - 1) - r.cum_rel[hits])
    return _ratio(r.total(hits, term), r.num_rel.astype(np.float64))


def ndcg_over_relevant(r: JudgedRanking, gain_map: tuple | None) -> np.ndarray:
    """ndcg_rel (trec_eval ``ndcg_rel``, experimental): nDCG at each retrieved document with a positive
    gain, averaged over the documents with a positive ideal gain (a missed one counts the final nDCG)."""
    return _per_query(r, lambda q: _ndcg_rel(r, q, gain_map))


def _ndcg_rel(r: JudgedRanking, q: int, gain_map: tuple | None) -> float:
    gains, ideal, _ = _gains_of(r, q, gain_map)
    nonzero = gains != 0
    terms = np.where(nonzero, gains / _discounts(gains.size), 0.0)
    results = np.cumsum(np.where(nonzero, terms, 0.0)) if gains.size else gains
    ideal_cum = np.cumsum(ideal / _discounts(ideal.size))
    positive = np.flatnonzero(gains > 0)
    at = np.minimum(positive, ideal.size - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ideal_at = ideal_cum[at] if ideal.size else np.zeros(positive.size)
        total = _sequential_sum(results[positive] / ideal_at)
        results_final = float(results[-1]) if gains.size else 0.0
        ideal_final = float(ideal_cum[-1]) if ideal.size else 0.0
        total += np.float64(ideal.size - positive.size) * results_final / np.float64(ideal_final)  # C: inf or NaN at 0
        return float(total / np.float64(ideal.size)) if total > 0.0 else 0.0


def ndcg_at_r_levels(r: JudgedRanking, gain_map: tuple | None) -> np.ndarray:
    """Rndcg (trec_eval ``Rndcg``, experimental): nDCG averaged over the ranks where the ideal gain
    changes level (and the end of the ranking); 0 when R = 0."""
    return _per_query(r, lambda q: _rndcg(r, q, gain_map))


def _rndcg(r: JudgedRanking, q: int, gain_map: tuple | None) -> float:
    """``te_calc_Rndcg`` line by line (its boundary test compares gains before adding rank i)."""
    if r.num_rel[q] == 0:
        return 0.0
    gains, ideal, stop = _gains_of(r, q, gain_map)
    entries_top = _gain_levels(r.judged_levels(q), gain_map)
    ideal_gain = entries_top[-1][1] if entries_top else 0.0
    old = ideal_gain
    total, changes, results, best = 0.0, 0, 0.0, 0.0
    num_ret, i = gains.size, 0

    def advance(position: int) -> float:
        return float(ideal[position]) if position < ideal.size else stop

    while i < num_ret and ideal_gain > 0.0:
        ideal_gain = advance(i)
        if old != ideal_gain:
            if best > 0.0:
                total += results / best
                changes += 1
            old = ideal_gain
        if gains[i] != 0:
            results += float(gains[i]) / exactmath.log2(i + 2.0)
        if ideal_gain > 0.0:
            best += ideal_gain / exactmath.log2(i + 2.0)
        i += 1
    if i < num_ret:
        rest = np.flatnonzero(gains[i:] != 0) + i
        terms = [float(gains[p]) / exactmath.log2(p + 2.0) for p in rest.tolist()]
        results = float(np.cumsum([results, *terms])[-1])  # added one by one, as the C loop adds
        i = num_ret
        if best > 0.0:
            total += results / best
            changes += 1
    while ideal_gain > 0.0:
        ideal_gain = advance(i)
        if old != ideal_gain:
            if best > 0.0:
                total += results / best
                changes += 1
            old = ideal_gain
        if ideal_gain > 0.0:
            best += ideal_gain / exactmath.log2(i + 2.0)
        i += 1
    return total / changes if changes else math.nan


# ---------------------------------------------------------------------------------------------
# Whole-list, user-model and pool measures


def set_precision(r: JudgedRanking, _: None) -> np.ndarray:
    """set_P = relevant retrieved / retrieved, over the whole list; 0 when nothing is retrieved (``set_P``)."""
    return _ratio(r.num_rel_ret.astype(np.float64), r.num_ret.astype(np.float64))


def set_recall(r: JudgedRanking, _: None) -> np.ndarray:
    """set_R = relevant retrieved / R, over the whole list; 0 when R = 0 (``set_recall``); the TPR of article 001."""
    return _ratio(r.num_rel_ret.astype(np.float64), r.num_rel.astype(np.float64))


def set_f1(r: JudgedRanking, _: None) -> np.ndarray:
    """set_F1 = 2 set_P set_R / (set_P + set_R); 0 when both are 0 (``set_F``, beta = 1)."""
    p, q = set_precision(r, None), set_recall(r, None)
    return _ratio(2.0 * p * q, p + q)


def set_relative_precision(r: JudgedRanking, _: None) -> np.ndarray:
    """set_relative_P = relevant retrieved / min(retrieved, R); 0 when either is 0 (``set_relative_P``)."""
    return _ratio(r.num_rel_ret.astype(np.float64), np.minimum(r.num_ret, r.num_rel).astype(np.float64))


def set_map(r: JudgedRanking, _: None) -> np.ndarray:
    """set_map = relevant retrieved^2 / (retrieved R): set precision times set recall (``set_map``)."""
    relret = r.num_rel_ret.astype(np.float64)
    return _ratio(relret * relret, r.num_ret.astype(np.float64) * r.num_rel.astype(np.float64))


def utility(r: JudgedRanking, weights: tuple[float, float, float, float]) -> np.ndarray:
    """utility@a,b,c,d = a TP + b FP + c FN + d TN (trec_eval ``utility``, default 1,-1,0,0); TN needs
    the collection size."""
    a, b, c, d = weights
    relret, ret, rel = (x.astype(np.float64) for x in (r.num_rel_ret, r.num_ret, r.num_rel))
    size = float(_collection_size(r, "utility with a TN weight")) if d else 0.0
    return a * relret + b * (ret - relret) + c * (rel - relret) + d * (size + relret - ret - rel)


def judged(r: JudgedRanking, k: int) -> np.ndarray:
    """Judged@k = judged documents (any label >= 0) in the top k / the documents in the top k, as
    ir_measures defines it (its ``judged`` provider): a ranking shorter than k divides by its length;
    0 when nothing was retrieved."""
    return _ratio(r.count(r.top(k)).astype(np.float64), np.minimum(r.num_ret, k).astype(np.float64))


def unjudged(r: JudgedRanking, k: int) -> np.ndarray:
    """unj@k = documents without a judgment >= 0 in the top k / k (trec_eval ``unj_k``); a ranking
    shorter than k is padded with judged documents."""
    return (np.minimum(r.num_ret, k) - r.count(r.top(k))) / float(k)


def num_nonrel_judged_ret(r: JudgedRanking, _: None) -> np.ndarray:
    """Judged non-relevant documents retrieved (trec_eval ``num_nonrel_judged_ret``)."""
    return r.count(r.is_nonrel).astype(np.float64)


@np.errstate(over="ignore", under="ignore")
def _powers(p: float, n: int) -> np.ndarray:
    """p^0, p^1, ..., p^n by repeated multiplication, as trec_eval's loops compute them."""
    return np.cumprod(np.concatenate(([1.0], np.full(n, p))))


def rank_biased_precision(r: JudgedRanking, persistence: float) -> np.ndarray:
    """RBP@p = (1 - p) * sum over ranks i of rel_i p^(i-1), binary rel_i (Moffat and Zobel 2008)."""
    hits = _rows(r.is_rel)
    powers = _powers(persistence, int(r.rank.max(initial=0)))
    return (1.0 - persistence) * r.total(hits, powers[r.rank[hits] - 1])


def rank_biased_precision_graded(r: JudgedRanking, persistence: float) -> np.ndarray:
    """RBP_graded@p = (1 - p) * sum over ranks i of gain_i p^(i-1) with gain = label / the query's
    highest label when that is above 1, else the label (trec_eval ``rbp``, default p = 0.9: its
    ``m_rbp.c`` rescales gains outside [0, 1] by (gain - min) / (max - min) over the labels 0..max; it
    leaves min and max uninitialised, and this is what its program computes on its own tests). On
    binary qrels it equals RBP@p; it ignores ``rel``."""
    top = np.zeros(r.num_queries)
    heads = r.judged_offsets[:-1][np.diff(r.judged_offsets) > 0]
    top[r.judged_seg[heads]] = r.judged_label[heads]
    hits = _rows(r.label > 0)
    peak = top[r.seg[hits]].astype(np.float64)
    gain = np.where(peak > 1.0, (r.label[hits] - 0.0) / np.where(peak > 1.0, peak - 0.0, 1.0), r.label[hits])
    powers = _powers(persistence, int(r.rank.max(initial=0)))
    return (1.0 - persistence) * r.total(hits, gain * powers[r.rank[hits] - 1])


def rbp_residual(r: JudgedRanking, persistence: float) -> np.ndarray:
    """RBP_resid@p = p^n + (1 - p) * sum over the unjudged ranks i of p^(i-1), n documents retrieved,
    when any retrieved document lacks a judgment >= 0, else 0 (trec_eval ``rbp_resid``: how much RBP
    could rise if every unjudged document were relevant)."""
    total_ret = int(r.num_ret.sum())
    starts = np.cumsum(r.num_ret) - r.num_ret
    position = np.arange(total_ret, dtype=np.int64)
    seg = np.repeat(np.arange(r.num_queries, dtype=np.int64), r.num_ret)
    unknown = np.ones(total_ret, dtype=bool)
    unknown[starts[r.seg] + r.rank - 1] = False
    powers = _powers(persistence, int(r.num_ret.max(initial=0)))
    rank0 = position - starts[seg]
    sums = np.bincount(seg[unknown], weights=powers[rank0[unknown]], minlength=r.num_queries)
    any_unknown = np.bincount(seg[unknown], minlength=r.num_queries) > 0
    return np.where(any_unknown, powers[r.num_ret] + (1.0 - persistence) * sums, 0.0)


RELSTRING_CUTOFF = 10


def relstring(r: JudgedRanking, k: int | None) -> np.ndarray:
    """relstring@k (trec_eval ``relstring``): the labels of the first k (10) documents as characters:
    the digit for 0..9, ``>`` above 9, ``-`` absent from the qrels, ``.`` a negative label. Text, not averaged."""
    k = RELSTRING_CUTOFF if k is None else k

    def text(q: int) -> str:
        ranks = r.rel_list(q)[:k].tolist()
        return "".join(">" if v > 9 else str(v) if v >= 0 else "-" if v == -1 else "." for v in ranks)

    return np.array([text(q) for q in range(r.num_queries)], dtype=object)


# ---------------------------------------------------------------------------------------------
# ROC, confusion counts and counts


def auc(r: JudgedRanking, _: None) -> np.ndarray:
    """ROC AUC over the judged documents: the share of (relevant, judged non-relevant) pairs in which the
    relevant one scores higher, a tie in score counting 1/2 (Mann-Whitney; scikit-learn's ``roc_auc_score``
    on the raw scores). Unretrieved judged documents score below every retrieved one and tie with each
    other. Unjudged documents are ignored. NaN (undefined) when the query lacks either kind.
    """
    n = r.seg.size
    new_group = np.ones(n, dtype=bool)
    if n > 1:
        new_group[1:] = (r.seg[1:] != r.seg[:-1]) | (r.score[1:] != r.score[:-1])
    group = np.cumsum(new_group) - 1
    nonrel_in_group = np.bincount(group, weights=r.is_nonrel, minlength=int(group[-1]) + 1 if n else 0)
    nonrel_through_group = r.running_count(r.is_nonrel)
    last_of_group = np.append(np.flatnonzero(new_group)[1:] - 1, n - 1) if n else np.zeros(0, np.int64)
    nonrel_to_end = nonrel_through_group[last_of_group][group]  # judged non-relevant down to the group's end
    hits = _rows(r.is_rel)
    below = r.num_nonrel[r.seg[hits]] - nonrel_to_end[hits]
    wins = r.total(hits, below + 0.5 * nonrel_in_group[group[hits]])
    unretrieved_pairs = (r.num_rel - r.num_rel_ret) * (r.num_nonrel - r.count(r.is_nonrel))
    pairs = (r.num_rel * r.num_nonrel).astype(np.float64)
    value = np.full(r.num_queries, np.nan)
    defined = pairs > 0
    value[defined] = (wins[defined] + 0.5 * unretrieved_pairs[defined]) / pairs[defined]
    return value


def _collection_size(r: JudgedRanking, what: str) -> int:
    if r.collection_size is None:
        raise MeasureError(f"{what} needs the number of documents in the collection: give collection_size "
                           "(--collection-size N, or --index DIR to take it from an index)")
    return r.collection_size


def true_positives(r: JudgedRanking, _: None) -> np.ndarray:
    """TP = relevant documents retrieved."""
    return r.num_rel_ret.astype(np.float64)


def false_positives(r: JudgedRanking, _: None) -> np.ndarray:
    """FP = retrieved documents that are not relevant (judged non-relevant or unjudged)."""
    return (r.num_ret - r.num_rel_ret).astype(np.float64)


def false_negatives(r: JudgedRanking, _: None) -> np.ndarray:
    """FN = relevant documents not retrieved."""
    return (r.num_rel - r.num_rel_ret).astype(np.float64)


def true_negatives(r: JudgedRanking, _: None) -> np.ndarray:
    """TN = documents of the collection neither relevant nor retrieved: size - TP - FP - FN."""
    size = _collection_size(r, "TN")
    tn = size - r.num_rel_ret - (r.num_ret - r.num_rel_ret) - (r.num_rel - r.num_rel_ret)
    if (tn < 0).any():
        q = int(np.flatnonzero(tn < 0)[0])
        raise MeasureError(f"the collection size {size} is smaller than the documents query {r.qids[q]!r} "
                           f"retrieved plus the relevant ones it missed ({size - int(tn[q])})")
    return tn.astype(np.float64)


def accuracy(r: JudgedRanking, _: None) -> np.ndarray:
    """accuracy = (TP + TN) / collection size (article 001 prints (TP + FN) / all: a slip)."""
    size = float(_collection_size(r, "accuracy"))
    return (true_positives(r, None) + true_negatives(r, None)) / size if size else np.zeros(r.num_queries)


def false_positive_rate(r: JudgedRanking, _: None) -> np.ndarray:
    """FPR = FP / (FP + TN): the ROC curve's x axis; 0 when FP + TN = 0."""
    fp, tn = false_positives(r, None), true_negatives(r, None)
    return _ratio(fp, fp + tn)


def specificity(r: JudgedRanking, _: None) -> np.ndarray:
    """specificity = TN / (FP + TN) = 1 - FPR; 0 when FP + TN = 0."""
    fp, tn = false_positives(r, None), true_negatives(r, None)
    return _ratio(tn, fp + tn)


def num_ret(r: JudgedRanking, _: None) -> np.ndarray:
    """Documents retrieved (after ``judged_only``)."""
    return r.num_ret.astype(np.float64)


def num_rel(r: JudgedRanking, _: None) -> np.ndarray:
    """Relevant documents in the qrels (R)."""
    return r.num_rel.astype(np.float64)


def num_rel_ret(r: JudgedRanking, _: None) -> np.ndarray:
    """Relevant documents retrieved."""
    return r.num_rel_ret.astype(np.float64)


# ---------------------------------------------------------------------------------------------
# Ratings: run scores as predicted ratings, qrels grades as the ratings (article 002)

MISSING_RATINGS = {
    "skip": "only the rated documents retrieved are compared",
    "mean": "a retrieved document the user did not rate is taken as rated with the user's mean rating",
    "median": "a retrieved document the user did not rate is taken as rated with the user's median rating",
    "zero": "a retrieved document the user did not rate is taken as rated 0",
}
"""What MAE and RMSE do with a retrieved document the qrels do not rate (article 002's choices)."""


def _rating_errors(r: JudgedRanking) -> tuple[np.ndarray, np.ndarray]:
    """(query position, predicted - rating) of every compared (query, document) pair, in rank order."""
    if r.missing_ratings == "skip":
        return r.seg, r.score - r.grade
    sizes = np.diff(r.ret_offsets)
    seg = np.repeat(np.arange(r.num_queries, dtype=np.int64), sizes)
    rating = np.full(seg.size, np.nan)
    rated_at = r.ret_offsets[:-1][r.seg] + r.rank - 1
    fill = _imputed_ratings(r)
    rating[:] = fill[seg]
    rating[rated_at] = r.grade
    keep = ~np.isnan(rating)
    return seg[keep], (r.ret_score - rating)[keep]


def _imputed_ratings(r: JudgedRanking) -> np.ndarray:
    """The rating an unrated retrieved document gets, per query (NaN: a user without ratings)."""
    from .imputation import fills

    return fills(r.judged_offsets, r.judged_grade, r.missing_ratings)


def mean_absolute_error(r: JudgedRanking, _: None) -> np.ndarray:
    """MAE = mean of |predicted score - rating| over the compared documents (``missing_ratings``);
    undefined (NaN) for a query without one."""
    seg, errors = _rating_errors(r)
    count = np.bincount(seg, minlength=r.num_queries)
    total = np.bincount(seg, weights=np.abs(errors), minlength=r.num_queries)
    return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def pooled_mean_absolute_error(r: JudgedRanking) -> float:
    """MAE over every compared (query, document) pair of the run at once: sum |predicted - rating| / pairs
    (scikit-learn's ``mean_absolute_error`` of all the pairs; NaN without one). Users with more compared
    documents weigh more, where the mean of the per-user MAE weighs every user alike."""
    _, errors = _rating_errors(r)
    return float(np.mean(np.abs(errors))) if errors.size else math.nan


def pooled_root_mean_squared_error(r: JudgedRanking) -> float:
    """RMSE over every compared (query, document) pair at once: sqrt(sum (predicted - rating)^2 / pairs)
    (scikit-learn's ``root_mean_squared_error``, recommender systems' RMSE; NaN without a pair)."""
    _, errors = _rating_errors(r)
    return float(np.sqrt(np.mean(errors * errors))) if errors.size else math.nan


def root_mean_squared_error(r: JudgedRanking, _: None) -> np.ndarray:
    """RMSE = sqrt(mean of (predicted score - rating)^2) over the compared documents; undefined (NaN)
    for a query without one."""
    seg, errors = _rating_errors(r)
    count = np.bincount(seg, minlength=r.num_queries)
    total = np.bincount(seg, weights=errors * errors, minlength=r.num_queries)
    return np.where(count > 0, np.sqrt(total / np.maximum(count, 1)), np.nan)


# ---------------------------------------------------------------------------------------------
# Parameters written as lists (trec_eval's -m syntax)


def _numbers(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(part) for part in text.split(","))
    except ValueError:
        raise MeasureError(f"{text!r} is not a comma-separated list of numbers") from None


def parse_weights(text: str) -> tuple[float, float, float, float]:
    """utility's four weights ``a,b,c,d``."""
    weights = _numbers(text)
    if len(weights) != 4 or not all(map(math.isfinite, weights)):
        raise MeasureError(f"utility takes four finite weights a,b,c,d (TP, FP, FN, TN), not {text!r}")
    return weights  # type: ignore[return-value]


def parse_levels(text: str) -> tuple[float, ...]:
    """Recall levels ``.25,.5,.75``: each between 0 and 1, ascending (trec_eval's 11pt_avg parameters)."""
    levels = _numbers(text)
    if not all(0.0 <= x <= 1.0 for x in levels) or list(levels) != sorted(set(levels)):
        raise MeasureError(f"recall levels must be distinct, ascending and between 0 and 1, not {text!r}")
    return levels


_INTEGER = re.compile(r"^[+-]?[0-9]+$")


def parse_gain_map(text: str) -> tuple[tuple[int, float], ...]:
    """A gain map ``1=3,2=9,4=4.5``: label ``=`` gain pairs (trec_eval's ndcg and G parameters)."""
    pairs = []
    for part in text.split(","):
        label, sep, gain = part.partition("=")
        try:
            value = float(gain)
        except ValueError:
            value = math.nan
        if not sep or not _INTEGER.match(label) or not math.isfinite(value):
            raise MeasureError(f"a gain map is written label=gain,label=gain (1=3,2=9), not {text!r}")
        pairs.append((int(label), value))
    if len({label for label, _ in pairs}) != len(pairs):
        raise MeasureError(f"a gain map names a label twice: {text!r}")
    return tuple(pairs)


# ---------------------------------------------------------------------------------------------
# Registry


@dataclass(frozen=True)
class MeasureDef:
    """One measure family: its canonical name, function, parameter kind and names elsewhere.

    ``trec_eval`` is trec_eval's name for it (``{k}`` / ``{r}`` marking the parameter, ``{text}`` a list
    parameter as written); for a measure whose parameter is optional, the form with it, ``|``, and the
    form without it (either may be empty). ``bounded`` measures lie in [0, 1]; ``count`` ones count
    documents (as do the ``total`` ones). The run-level figure is the
    arithmetic mean of the per-query values, except for ``total`` measures (counts: trec_eval sums them)
    and ``geometric`` ones (the geometric mean of the values floored at ``MIN_GEO_MEAN``, which trec_eval
    prints without per-query lines, ``summary_only``). ``text`` measures give strings per query and no
    mean. ``default`` is the parameter when none is written; ``parse_text`` reads a list parameter
    (``utility_2,-1,0,0``); ``undefined_when`` says when the measure has no value for a query; ``pooled``,
    when given, computes the run-level figure from all the averaged queries' data at once instead of
    averaging the per-query values.
    """

    name: str
    compute: Callable[[JudgedRanking, Param], np.ndarray]
    param: ParamKind
    description: str
    aliases: tuple[str, ...] = ()
    trec_eval: str | None = None
    bounded: bool = True
    total: bool = False
    symbol: str = "k"
    count: bool = False
    geometric: bool = False
    summary_only: bool = False
    text: bool = False
    default: Param = None
    parse_text: Callable[[str], Param] | None = None
    undefined_when: str = ""
    pooled: Callable[[JudgedRanking], float] | None = None

    def forms(self) -> str:
        """How the name is written: ``P@k``, ``RR, RR@k``, ``iprec@r``, ``bpref``, ``utility@a,b,c,d``."""
        return {
            "none": self.name,
            "cutoff": f"{self.name}@k",
            "optional cutoff": f"{self.name}, {self.name}@k",
            "fraction": f"{self.name}@{self.symbol}" if self.default is None else f"{self.name}, {self.name}@{self.symbol}",
            "number": f"{self.name}@{self.symbol}",
            "list": f"{self.name}, {self.name}@{self.symbol}",
        }[self.param]


_GAINS = "label=gain,..."
_DEFS = (
    MeasureDef("P", precision, "cutoff", "precision at k", ("precision",), "P_{k}"),
    MeasureDef("R", recall, "cutoff", "recall at k", ("recall",), "recall_{k}"),
    MeasureDef("F1", f1, "cutoff", "harmonic mean of P@k and R@k"),
    MeasureDef("RR", reciprocal_rank, "optional cutoff", "reciprocal rank", ("MRR", "recip_rank"), "|recip_rank"),
    MeasureDef("AP", average_precision, "optional cutoff", "average precision", ("MAP", "map_cut"), "map_cut_{k}|map"),
    MeasureDef("Rprec", r_precision, "none", "precision at rank R", ("R-prec", "r-precision"), "Rprec"),
    MeasureDef("bpref", bpref, "none", "binary preference", (), "bpref"),
    MeasureDef("Success", success, "cutoff", "any relevant in the top k", ("hit_rate",), "success_{k}"),
    MeasureDef("Hits", hits, "optional cutoff", "number of relevant documents in the top k", bounded=False,
               count=True),
    MeasureDef("iprec", interpolated_precision, "fraction", "interpolated precision at recall r",
               ("iprec_at_recall",), "iprec_at_recall_{r}", symbol="r"),
    MeasureDef("11pt-AP", eleven_point_ap, "list", "11-point interpolated average precision",
               ("11pt_avg", "11pt"), "11pt_avg_{text}|11pt_avg", symbol="levels", parse_text=parse_levels),
    MeasureDef("CG", cumulative_gain, "optional cutoff", "cumulative gain", bounded=False),
    MeasureDef("DCG", dcg, "optional cutoff", "discounted cumulative gain", (), "|dcg", bounded=False),
    MeasureDef("IDCG", ideal_dcg, "optional cutoff", "ideal discounted cumulative gain", ("ideal_dcg",),
               "|ideal_dcg", bounded=False),
    MeasureDef("nDCG", ndcg, "optional cutoff", "normalized DCG, labels (or a gain map's gains) as gains",
               ("ndcg_cut",), "ndcg_cut_{k}|ndcg", parse_text=parse_gain_map),
    MeasureDef("DCG_exp", dcg_exp, "optional cutoff", "DCG with gain 2^label - 1", ("dcg_burges",), bounded=False),
    MeasureDef("IDCG_exp", ideal_dcg_exp, "optional cutoff", "ideal DCG with gain 2^label - 1", bounded=False),
    MeasureDef("nDCG_exp", ndcg_exp, "optional cutoff", "nDCG with gain 2^label - 1", ("ndcg_burges",)),
    MeasureDef("ERR", expected_reciprocal_rank, "optional cutoff", "expected reciprocal rank (Chapelle et al. "
               "2009), labels 0..4 as gdeval and ir_measures' ERR@k"),
    MeasureDef("AUC", auc, "none", "ROC area over the judged documents, scores' ties counting 1/2",
               undefined_when="no relevant or no judged non-relevant document"),
    MeasureDef("set_P", set_precision, "none", "precision of the whole retrieved list", ("SetP",), "set_P"),
    MeasureDef("set_R", set_recall, "none", "recall of the whole retrieved list", ("set_recall", "SetR", "TPR"),
               "set_recall"),
    MeasureDef("set_F1", set_f1, "none", "F1 of the whole retrieved list", ("set_F", "SetF"), "set_F"),
    MeasureDef("Judged", judged, "cutoff", "share of the top k that is judged"),
    MeasureDef("RBP", rank_biased_precision, "fraction", "rank-biased precision with persistence p (default 0.8, "
               "ir_measures')", symbol="p", default=0.8),
    MeasureDef("num_ret", num_ret, "none", "documents retrieved", ("NumRet",), "num_ret", bounded=False, total=True),
    MeasureDef("num_rel", num_rel, "none", "relevant documents judged", ("NumRel",), "num_rel", bounded=False,
               total=True),
    MeasureDef("num_rel_ret", num_rel_ret, "none", "relevant documents retrieved", ("NumRelRet",), "num_rel_ret",
               bounded=False, total=True),
    # trec_eval's further measures
    MeasureDef("infAP", inferred_ap, "none", "inferred AP (Yilmaz and Aslam 2006)", (), "infAP", bounded=False),
    MeasureDef("gm_map", average_precision, "none", "AP per query, geometric mean over queries", ("gm_ap",),
               "gm_map", geometric=True, summary_only=True),
    MeasureDef("gm_bpref", bpref, "none", "bpref per query, geometric mean over queries", (), "gm_bpref",
               geometric=True, summary_only=True),
    MeasureDef("Rprec_mult", r_precision_multiple, "number", "precision at x times R documents", (),
               "Rprec_mult_{r}", symbol="x"),
    MeasureDef("utility", utility, "list", "a TP + b FP + c FN + d TN", (), "utility_{text}|utility",
               bounded=False, symbol="a,b,c,d", default=(1.0, -1.0, 0.0, 0.0), parse_text=parse_weights),
    MeasureDef("relstring", relstring, "optional cutoff", "labels of the first k documents as a string",
               (), "relstring_{k}|relstring", bounded=False, text=True),
    MeasureDef("G", g_measure, "list", "normalized gain (trec_eval's experimental G)", (), "G_{text}|G",
               bounded=False, symbol=_GAINS, parse_text=parse_gain_map),
    MeasureDef("binG", binary_g, "none", "binary G (trec_eval, experimental)", (), "binG"),
    MeasureDef("ndcg_rel", ndcg_over_relevant, "list", "nDCG averaged over the relevant documents (experimental)",
               (), "ndcg_rel_{text}|ndcg_rel", bounded=False, symbol=_GAINS, parse_text=parse_gain_map),
    MeasureDef("Rndcg", ndcg_at_r_levels, "list", "nDCG averaged at the R levels (experimental)", (),
               "Rndcg_{text}|Rndcg", bounded=False, symbol=_GAINS, parse_text=parse_gain_map,
               undefined_when="no change of ideal gain level"),
    MeasureDef("relative_P", relative_precision, "cutoff", "relevant in the top k / min(k, R)", (),
               "relative_P_{k}"),
    MeasureDef("set_relative_P", set_relative_precision, "none", "relevant retrieved / min(retrieved, R)", (),
               "set_relative_P"),
    MeasureDef("set_map", set_map, "none", "set precision times set recall", (), "set_map"),
    MeasureDef("num_nonrel_judged_ret", num_nonrel_judged_ret, "none", "judged non-relevant documents retrieved",
               (), "num_nonrel_judged_ret", bounded=False, total=True),
    MeasureDef("unj", unjudged, "cutoff", "share of the top k without a judgment", (), "unj_{k}"),
    MeasureDef("RBP_graded", rank_biased_precision_graded, "fraction", "RBP with labels scaled to [0, 1] as gains",
               (), "|rbp", symbol="p", default=0.9),
    MeasureDef("RBP_resid", rbp_residual, "fraction", "RBP's residual: its rise if every unjudged document were "
               "relevant", (), "|rbp_resid", symbol="p", default=0.9),
    # the articles' own variants (not trec_eval's)
    MeasureDef("AP_relret", average_precision_over_retrieved, "optional cutoff",
               "AP divided by the relevant documents retrieved (article 001's 'interpolated AP')"),
    MeasureDef("AP_hits", average_precision_over_hits, "cutoff",
               "AP@k divided by the relevant documents in the top k (article 002's code)"),
    MeasureDef("RR_max", reciprocal_rank_of_best, "optional cutoff",
               "reciprocal rank of the most relevant document (article 003)"),
    # confusion counts over the collection (article 001)
    MeasureDef("TP", true_positives, "none", "relevant documents retrieved", bounded=False, total=True),
    MeasureDef("FP", false_positives, "none", "retrieved documents not relevant", bounded=False, total=True),
    MeasureDef("FN", false_negatives, "none", "relevant documents not retrieved", bounded=False, total=True),
    MeasureDef("TN", true_negatives, "none", "documents neither relevant nor retrieved (needs the collection size)",
               bounded=False, total=True),
    MeasureDef("accuracy", accuracy, "none", "(TP + TN) / collection size"),
    MeasureDef("FPR", false_positive_rate, "none", "false-positive rate FP / (FP + TN)", ("fallout",)),
    MeasureDef("specificity", specificity, "none", "TN / (FP + TN)", ("TNR",)),
    # ratings (article 002)
    MeasureDef("MAE", mean_absolute_error, "none", "mean absolute error of scores as predicted ratings",
               bounded=False, undefined_when="no rated document retrieved"),
    MeasureDef("RMSE", root_mean_squared_error, "none", "root mean squared error of scores as predicted ratings",
               bounded=False, undefined_when="no rated document retrieved"),
    MeasureDef("MAE_pooled", mean_absolute_error, "none", "MAE per user; over the run, pooled: every (user, item) "
               "pair at once (scikit-learn's)", ("pooled_MAE",), bounded=False,
               undefined_when="no rated document retrieved", pooled=pooled_mean_absolute_error),
    MeasureDef("RMSE_pooled", root_mean_squared_error, "none", "RMSE per user; over the run, pooled: every "
               "(user, item) pair at once (scikit-learn's)", ("pooled_RMSE",), bounded=False,
               undefined_when="no rated document retrieved", pooled=pooled_root_mean_squared_error),
)

MEASURES: dict[str, MeasureDef] = {d.name: d for d in _DEFS}
"""The registry: canonical name -> definition."""
DEFAULT_MEASURES = ("nDCG@10", "AP", "P@10", "R@100", "RR", "bpref")
"""What ``bm25lab evaluate`` and ``experiment`` report when no measure is named."""

_LOOKUP: dict[str, MeasureDef] = {}
for _d in _DEFS:
    for _name in (_d.name, *_d.aliases):
        assert _name.lower() not in _LOOKUP, f"measure name {_name} registered twice"
        _LOOKUP[_name.lower()] = _d

_NAME = re.compile(r"^(?P<base>.+?)(?:(?P<sep>[@_.])(?P<param>[0-9]+(?:\.[0-9]*)?|\.[0-9]+))?$")
_LISTED = re.compile(r"^(?P<base>.+?)[@_.](?P<param>[-+0-9.,=eE]+)$")  # trec_eval's lists: utility_2,-1,0,0
_IR_MEASURES = re.compile(r"^(?P<base>[^()@]+)\((?P<params>[^()]*)\)(?:@(?P<param>[0-9]+(?:\.[0-9]*)?|\.[0-9]+))?$")
_RANX_LEVEL = re.compile(r"^(?P<name>.+)-l(?P<rel>[0-9]+)$")

TREC_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
"""trec_eval's default cutoffs of ``P``, ``recall``, ``map_cut``, ``ndcg_cut`` (``-m P`` = ``P.5,10,...``)."""
_TREC_FAMILIES: dict[str, tuple[str, tuple[Param, ...]]] = {
    "p": ("P", TREC_CUTOFFS),
    "recall": ("recall", TREC_CUTOFFS),
    "map_cut": ("map_cut", TREC_CUTOFFS),
    "ndcg_cut": ("ndcg_cut", TREC_CUTOFFS),
    "success": ("success", (1, 5, 10)),
    "iprec_at_recall": ("iprec_at_recall", ELEVEN_POINTS),
    "relative_p": ("relative_P", TREC_CUTOFFS),
    "rprec_mult": ("Rprec_mult", tuple(i / 5 for i in range(1, 11))),
    "unj": ("unj", (5, 10, 20)),
}
"""trec_eval 10.0's measure families with default parameters: a family named alone stands for all of them."""
TREC_NICKNAMES: dict[str, tuple[str, ...]] = {
    "official": ("num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
                 "iprec_at_recall", "P"),
    "set": ("num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_recall", "set_relative_P", "set_map",
            "set_F"),
    "all_trec": ("num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
                 "iprec_at_recall", "P", "relstring", "recall", "unj", "rbp", "rbp_resid", "infAP", "gm_bpref",
                 "utility", "11pt_avg", "ndcg", "relative_P", "Rprec_mult", "success", "map_cut", "ndcg_cut",
                 "ndcg_rel", "Rndcg", "binG", "G", "set_P", "set_recall", "set_relative_P", "set_map", "set_F",
                 "num_nonrel_judged_ret"),
}
"""trec_eval 10.0's ``-m`` nicknames (``measures.c``), less ``runid`` and ``num_q`` (always reported)."""
TREC_RENAMED = {"rbp": "RBP_graded"}
"""trec_eval's measures bm25lab computes under another name, because the name means another measure in
the field's other tools: trec_eval's ``rbp`` (graded gains, p = 0.9) is ``RBP_graded``; ``rbp`` alone is
ir_measures' and ranx's ``RBP`` (binary, p = 0.8). A nickname holding them gives bm25lab's name."""
_AMBIGUOUS = {
    "recall": "trec_eval's -m recall means recall at its cutoffs (write recall.5,10 or R@k), ranx's recall the "
              "recall of the whole list (write set_R)",
}
_WHOLE_LIST = {"precision": "set_P"}  # ranx: a measure named without a cutoff covers the whole ranking
IGNORES_REL = frozenset({"CG", "DCG", "IDCG", "nDCG", "DCG_exp", "IDCG_exp", "nDCG_exp", "ERR", "G", "ndcg_rel", "Rndcg",
                         "RBP_graded", "RBP_resid", "relstring", "unj", "Judged", "num_ret", "MAE", "RMSE",
                         "MAE_pooled", "RMSE_pooled"})
"""Measures that do not use a relevance threshold (graded, counting every document, or ratings)."""


MEASURE_SYNTAX = ("names are case-insensitive: bm25lab's P@10, nDCG@10, AP; trec_eval's P_10, P.5,10, map, "
                  "ndcg_cut.10, all_trec; ir_measures' P(rel=2)@5; ranx's hits@10, map@100-l2; "
                  "`bm25lab measures` lists them all")
"""The syntaxes of a measure name in one line: what an error about an unknown name says."""


def _every_name() -> list[str]:
    """Every name a measure may be looked up by, as registered, with trec_eval's families and nicknames."""
    return [*(name for d in _DEFS for name in (d.name, *d.aliases)), *(f for f, _ in _TREC_FAMILIES.values()),
            *TREC_NICKNAMES]


def suggest_measure(name: str) -> str | None:
    """The known measure name closest to ``name`` (edit distance), written as ``name`` was (its cutoff kept),
    or None when none is close: ``nDGC@10`` -> ``nDCG@10``, ``all-trec`` -> ``all_trec``."""
    import difflib

    text = name.strip() if isinstance(name, str) else ""
    match = re.match(r"^(?P<base>.+?)(?P<rest>[@_.(].*)?$", text)
    if not match:
        return None
    base, rest = match["base"], match["rest"] or ""
    names = {n.lower(): n for n in _every_name()}
    for candidate, tail in ((base, rest), (text, "")):
        close = difflib.get_close_matches(candidate.lower(), list(names), n=1, cutoff=0.6)
        if close:
            return names[close[0]] + tail
    return None


def unknown_measure(name: object) -> MeasureError:
    """The error for a name no syntax reads: how its measure is written when its base is known (``nDCG@x``),
    else a suggestion when one is close, and the syntaxes in one line."""
    known = _lookup_base(re.split(r"[@_.(]", name.strip(), maxsplit=1)[0]) if isinstance(name, str) and name.strip() \
        else None
    suggestion = suggest_measure(name) if isinstance(name, str) and known is None else None
    hint = f"; {known.name} is written {known.forms()}" if known else f"; did you mean {suggestion}?" if suggestion \
        else ""
    return MeasureError(f"unknown measure {name!r}{hint} ({MEASURE_SYNTAX})")


def known_measures() -> str:
    """The known measure names and aliases, for help (:func:`unknown_measure` words the errors)."""
    forms = ", ".join(d.forms() for d in _DEFS)
    aliases = ", ".join(f"{a}={d.name}" for d in _DEFS for a in d.aliases)
    return (f"{forms} (aliases {aliases}; trec_eval names such as P_10, ndcg_cut.10, lists P.5,10 "
            f"and parameter lists ndcg_1=3,2=9, ir_measures "
            f"names such as P(rel=2)@5, ranx names such as hits@10 also work; `bm25lab measures` lists them)")


@dataclass(frozen=True)
class Measure:
    """A parsed measure: the name as written, its definition, its parameter, the relevance threshold
    and judged-only choice the name sets for itself (ir_measures' ``rel=``, ``judged_only=``; ranx's
    ``-l``), None where the evaluation's options apply, and the parameter as written (``param_text``)."""

    name: str
    definition: MeasureDef
    param: Param
    rel: float | None = None
    judged_only: bool | None = None
    param_text: str | None = None

    def __call__(self, ranking: JudgedRanking) -> np.ndarray:
        return self.definition.compute(ranking, self.param)

    @property
    def trec_eval_name(self) -> str | None:
        """trec_eval's name for this measure (``P_10``, ``ndcg``, ``iprec_at_recall_0.50``,
        ``utility_2,-1,0,0``), if it has one."""
        pattern = self.definition.trec_eval
        if pattern is None or self.rel is not None or self.judged_only is not None:
            return None
        if "|" in pattern:
            with_param, without = pattern.split("|")
        else:
            with_param, without = ("", pattern) if self.definition.param == "none" else (pattern, "")
        if self.param_text is None:
            return without or None
        if not with_param:
            return None
        if isinstance(self.param, tuple) and self.definition.param != "list":  # ndcg with a gain map
            return f"{without}_{self.param_text}"
        if self.definition.param in ("fraction", "number"):
            return with_param.format(r=f"{self.param:.2f}")
        return with_param.format(k=self.param, text=self.param_text)


def parse_measure(name: str) -> Measure:
    """Parse one measure name in any of the syntaxes above; :class:`MeasureError` lists the known
    names for an unknown one and says what is wrong with a known one."""
    if not isinstance(name, str) or not name.strip():
        raise unknown_measure(name)
    text = name.strip()
    rel: float | None = None
    level = _RANX_LEVEL.match(text)
    if level:  # no measure's name ends in -l<digits>
        text, rel = level["name"], int(level["rel"])
    call = _IR_MEASURES.match(text)
    if call:
        return _parse_call(name, call["base"].strip(), call["params"], call["param"], rel)
    match = _NAME.match(text)
    base = match["base"] if match else text
    if match and match["param"] is None and base.lower() in _AMBIGUOUS:
        raise MeasureError(f"measure {name!r} is ambiguous: {_AMBIGUOUS[base.lower()]}")
    if match and match["param"] is None and base.lower() in _WHOLE_LIST:
        return _checked(Measure(name, MEASURES[_WHOLE_LIST[base.lower()]], None, rel))
    definition = _lookup_base(base) if match else None
    if definition is None:  # trec_eval's parameter lists: utility_2,-1,0,0, ndcg_1=3,2=9
        match = _LISTED.match(text)
        definition = _lookup_base(match["base"]) if match else None
        if definition is not None and definition.parse_text is None:
            definition = None
    if match is None or definition is None:
        raise unknown_measure(name)
    param_text = _ranx_fraction(definition, match.groupdict().get("sep"), match["param"])
    return _checked(Measure(name, definition, _parse_param(name, definition, param_text), rel, param_text=param_text))


def _lookup_base(base: str) -> MeasureDef | None:
    return _LOOKUP.get(base.strip().lower())


def _ranx_fraction(definition: MeasureDef, sep: str | None, text: str | None) -> str | None:
    """ranx writes a persistence as ``rbp.95``: digits after a dot are the decimals of 0.xx."""
    if definition.param == "fraction" and sep == "." and text is not None and text.isdigit():
        return "0." + text
    return text


def _parse_call(name: str, base: str, params: str, cutoff: str | None, rel: float | None) -> Measure:
    """ir_measures' ``Name(key=value, ...)@cutoff``."""
    definition = _lookup_base(base)
    if definition is None:
        raise unknown_measure(name)
    values: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in params.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise MeasureError(f"measure {name!r}: expected key=value parameters, found {item!r}")
        values[key.strip()] = value.strip().strip("'\"")
    judged_only = None
    if "rel" in values:
        rel = relevance_threshold(values.pop("rel"), f"measure {name!r}: rel")
    if "judged_only" in values:
        judged_only = _bool_param(name, values.pop("judged_only"))
    if "dcg" in values:
        definition = _dcg_variant(name, definition, values.pop("dcg"))
    if "beta" in values and definition.name == "set_F1":
        if float(values.pop("beta")) != 1.0:
            raise MeasureError(f"measure {name!r}: only beta=1 (set_F1) is available")
    param_text = cutoff
    if "p" in values and definition.param == "fraction" and definition.symbol == "p":  # RBP(p=0.9)
        if cutoff is not None:
            raise MeasureError(f"measure {name!r}: bm25lab's {definition.name} sums the whole ranking; a cutoff "
                               f"cannot be given")
        param_text = values.pop("p")
    if values:
        raise MeasureError(f"measure {name!r}: unknown parameter {next(iter(values))!r} for {definition.name}")
    if definition.name == "num_ret" and rel is not None:  # ir_measures: NumRet(rel=r) counts relevant retrieved
        definition = MEASURES["num_rel_ret"]
    return _checked(Measure(name, definition, _parse_param(name, definition, param_text), rel, judged_only,
                            param_text))


def _dcg_variant(name: str, definition: MeasureDef, value: str) -> MeasureDef:
    """ir_measures' ``dcg=log2`` (labels as gains) or ``dcg=exp-log2`` (gain 2^label - 1)."""
    variants = {("nDCG", "log2"): "nDCG", ("nDCG", "exp-log2"): "nDCG_exp"}
    chosen = variants.get((definition.name, value))
    if chosen is None:
        raise MeasureError(f"measure {name!r}: dcg= is log2 or exp-log2 for nDCG")
    return MEASURES[chosen]


def relevance_threshold(value: object, what: str = "the relevance threshold rel") -> float | int:
    """A relevance threshold: a finite number > 0 (4.5 counts a rating of 4.5 or more as relevant), an
    ``int`` when it is a whole number (so that 2 and 2.0 name the same threshold and print as 2)."""
    try:
        number = float(value) if not isinstance(value, bool) else math.nan  # type: ignore[arg-type]
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number) or number <= 0:
        raise MeasureError(f"{what} must be a number > 0 (1, 2, 4.5), not {value!r}")
    return int(number) if number.is_integer() else number


def _bool_param(name: str, value: str) -> bool:
    flags = {"true": True, "1": True, "false": False, "0": False}
    if value.lower() not in flags:
        raise MeasureError(f"measure {name!r}: judged_only must be True or False, not {value!r}")
    return flags[value.lower()]


def _checked(measure: Measure) -> Measure:
    if measure.rel is not None:
        relevance_threshold(measure.rel, f"measure {measure.name!r}: rel")
        if measure.definition.name in IGNORES_REL:
            raise MeasureError(f"measure {measure.name!r}: {measure.definition.name} does not use a relevance "
                               f"threshold (graded, counting every document, or ratings)")
    return measure


def _parse_param(name: str, definition: MeasureDef, text: str | None) -> Param:
    kind = definition.param
    if text is None:
        if kind in ("cutoff", "fraction", "number") and definition.default is None:
            raise MeasureError(f"measure {name!r} needs a parameter: {definition.forms()}")
        return definition.default
    if kind == "none":
        raise MeasureError(f"measure {name!r} takes no parameter: write {definition.name}")
    if definition.parse_text is not None and (kind == "list" or "=" in text):
        return definition.parse_text(text)
    if kind in ("fraction", "number"):
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if kind == "fraction" and not 0.0 <= value <= 1.0:
            raise MeasureError(f"measure {name!r}: {definition.symbol} must be between 0 and 1")
        if kind == "number" and not value > 0.0:
            raise MeasureError(f"measure {name!r}: {definition.symbol} must be a positive number")
        return value
    if not text.isdigit() or int(text) < 1:
        raise MeasureError(f"measure {name!r}: the cutoff must be a positive integer")
    return int(text)


def numeric_measure(name: str) -> Measure:
    """:func:`parse_measure` for the places that compute with the values (compare, tune): a measure
    whose values are text (``relstring``) is a :class:`MeasureError` there."""
    measure = parse_measure(name)
    if measure.definition.text:
        raise MeasureError(f"measure {name!r} gives text per query, not numbers: it cannot be compared or tuned")
    return measure


@dataclass(frozen=True)
class Expansion:
    """Measure names with trec_eval's lists, families and nicknames spelled out: ``names`` to compute,
    ``unavailable`` the trec_eval measures a nickname holds that bm25lab does not compute."""

    names: tuple[str, ...]
    unavailable: tuple[str, ...] = ()


def expand_measures(names: Iterable[str] | str) -> Expansion:
    """Spell out trec_eval's ``-m`` forms: lists of parameters (``P.5,10`` -> ``P_5``, ``P_10``; ``P@5,10`` ->
    ``P@5``, ``P@10``; but not the one list parameter of ``utility``, ``11pt_avg``, ``G``...), families without
    a parameter (``P`` -> ``P_5`` .. ``P_1000``, ``success`` -> ``success_1,5,10``, ``iprec_at_recall`` -> its 11
    levels) and nicknames (``official``, ``set``, ``all_trec``; their members named as :data:`TREC_RENAMED`
    says). Other names pass as they are; repeats are dropped (first kept)."""
    if isinstance(names, str):
        names = [names]
    out: list[str] = []
    unavailable: list[str] = []
    for name in names:
        text = name.strip() if isinstance(name, str) else name
        nickname = TREC_NICKNAMES.get(text.lower()) if isinstance(text, str) else None
        if nickname is None:
            out.extend(_expand_one(name))
            continue
        for member in nickname:
            expanded = _expand_one(TREC_RENAMED.get(member, member))
            try:
                parse_measure(expanded[0])
            except MeasureError:
                unavailable.append(member)
                continue
            out.extend(expanded)
    return Expansion(tuple(dict.fromkeys(out)), tuple(dict.fromkeys(unavailable)))


def _expand_one(name: str) -> list[str]:
    if not isinstance(name, str):
        return [name]
    text = name.strip()
    family = _TREC_FAMILIES.get(text.lower())
    if family is not None:
        written, params = family
        return [_trec_name(written, p) for p in params]
    listed = re.match(r"^(?P<base>[^()@]+?)(?P<sep>[@_.])(?P<list>[0-9.]+(?:,[0-9.]+)+)$", text)
    definition = _lookup_base(listed["base"]) if listed else None
    if definition is not None and definition.param != "list":  # 11pt_avg_.25,.5 is one measure, one list
        sep = "_" if listed["sep"] == "." else listed["sep"]
        return [f"{listed['base']}{sep}{item}" for item in listed["list"].split(",")]
    dotted = re.match(r"^(?P<base>[^()@]+?)\.(?P<k>[0-9]+)$", text)  # trec_eval's P.10: printed P_10, as a list's
    definition = _lookup_base(dotted["base"]) if dotted else None
    if definition is not None and definition.param in ("cutoff", "optional cutoff"):
        return [f"{dotted['base']}_{dotted['k']}"]
    return [name]


def _trec_name(family: str, param: Param) -> str:
    return f"{family}_{param:.2f}" if isinstance(param, float) else f"{family}_{param}"


def parse_measures(names: Iterable[str] | str) -> tuple[Measure, ...]:
    """Parse measure names (:func:`expand_measures` first), dropping repeats (first kept); a single
    string is one name (or list, family, nickname)."""
    unique = list(expand_measures(names).names)
    if not unique:
        raise MeasureError(f"no measures given ({MEASURE_SYNTAX})")
    return tuple(parse_measure(n) for n in unique)
