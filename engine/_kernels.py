"""numba kernels for batch search (imported only through :mod:`engine.accel`).

The arithmetic is exactly that of :meth:`engine.retrieval.Scorer.score`: float64 weights, a repeated
query term multiplies its weight, each document's weights are added in query-term order starting
from 0.0, then the per-query constant is added. Selection is exact top-k with bm25lab's tie rule
(score descending, then document id descending via ``id_rank``).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, nogil=True)
def _select(cand: np.ndarray, nc: int, acc: np.ndarray, const: float, id_rank: np.ndarray, k: int,
            out_docs: np.ndarray, out_scores: np.ndarray) -> int:
    """Write the best ``k`` of ``cand[:nc]`` into the output rows; returns how many were written."""
    scores = np.empty(nc, np.float64)
    for i in range(nc):
        scores[i] = acc[cand[i]] + const
    if nc > k:
        kth = np.partition(scores.copy(), nc - k)[nc - k]
        m = 0
        for i in range(nc):
            if scores[i] >= kth:
                m += 1
        sel = np.empty(m, np.int64)
        m = 0
        for i in range(nc):
            if scores[i] >= kth:
                sel[m] = i
                m += 1
    else:
        sel = np.arange(nc)
    m = sel.shape[0]
    # order by id descending, then stable by score descending: ties keep id descending
    ranks = np.empty(m, np.int64)
    for i in range(m):
        ranks[i] = -id_rank[cand[sel[i]]]
    by_id = np.argsort(ranks, kind="mergesort")
    neg = np.empty(m, np.float64)
    for i in range(m):
        neg[i] = -scores[sel[by_id[i]]]
    by_score = np.argsort(neg, kind="mergesort")
    n_out = min(k, m)
    for r in range(n_out):
        i = sel[by_id[by_score[r]]]
        out_docs[r] = cand[i]
        out_scores[r] = scores[i]
    return n_out


@njit(parallel=True, cache=True, nogil=True)
def batch_top_k(q_ptr: np.ndarray, span_start: np.ndarray, span_end: np.ndarray, span_mult: np.ndarray,
                q_const: np.ndarray, doc_nums: np.ndarray, weights: np.ndarray, id_rank: np.ndarray,
                n_docs: int, k: int, n_chunks: int, out_docs: np.ndarray, out_scores: np.ndarray,
                out_len: np.ndarray) -> None:
    """Query ``qi`` owns spans ``q_ptr[qi]:q_ptr[qi+1]``; span ``j`` covers postings
    ``span_start[j]:span_end[j]`` of ``doc_nums``/``weights`` with query multiplicity ``span_mult[j]``."""
    nq = q_ptr.shape[0] - 1
    for c in prange(n_chunks):
        acc = np.zeros(n_docs, np.float64)
        seen = np.zeros(n_docs, np.bool_)
        cand = np.empty(n_docs, np.int64)
        for qi in range(c, nq, n_chunks):
            nc = 0
            for j in range(q_ptr[qi], q_ptr[qi + 1]):
                mult = span_mult[j]
                for p in range(span_start[j], span_end[j]):
                    d = doc_nums[p]
                    w = weights[p]
                    if mult != 1.0:
                        w = w * mult
                    acc[d] += w
                    if not seen[d]:
                        seen[d] = True
                        cand[nc] = d
                        nc += 1
            out_len[qi] = _select(cand, nc, acc, q_const[qi], id_rank, k, out_docs[qi], out_scores[qi])
            for i in range(nc):
                acc[cand[i]] = 0.0
                seen[cand[i]] = False
