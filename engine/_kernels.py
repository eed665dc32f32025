"""numba kernels for batch search (imported only through :mod:`engine.accel`).

The arithmetic is exactly that of :meth:`engine.retrieval.Scorer.score`: float64 weights, a repeated
query term multiplies its weight, each document's weights are added in query-term order starting
from 0.0, then the per-query constant is added. Selection is exact top-k with bm25lab's tie rule
(score descending, then document id descending via ``id_rank``).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, nogil=True, inline="always")
def _worse(sa: float, ra: int, sb: float, rb: int) -> bool:
    """Whether (score a, id rank a) ranks below (score b, id rank b): lower score, or tied and lower id."""
    return sa < sb or (sa == sb and ra < rb)


@njit(cache=True, nogil=True)
def _sift_down(hs: np.ndarray, hr: np.ndarray, hd: np.ndarray, n: int, i: int) -> None:
    """Restore the min-heap (worst at the root) below position ``i``."""
    while True:
        left = 2 * i + 1
        if left >= n:
            return
        child = left
        if left + 1 < n and _worse(hs[left + 1], hr[left + 1], hs[left], hr[left]):
            child = left + 1
        if not _worse(hs[child], hr[child], hs[i], hr[i]):
            return
        hs[i], hs[child] = hs[child], hs[i]
        hr[i], hr[child] = hr[child], hr[i]
        hd[i], hd[child] = hd[child], hd[i]
        i = child


@njit(cache=True, nogil=True)
def _select(cand: np.ndarray, nc: int, acc: np.ndarray, const: float, id_rank: np.ndarray, k: int,
            hs: np.ndarray, hr: np.ndarray, hd: np.ndarray, out_docs: np.ndarray, out_scores: np.ndarray) -> int:
    """Write the best ``k`` of ``cand[:nc]`` into the output rows, best first; returns how many.

    A bounded min-heap keyed by (score, id rank) keeps the best k seen so far; the heap is then
    emptied worst-first into the output from the back.
    """
    n = 0
    for i in range(nc):
        d = cand[i]
        s = acc[d] + const
        r = id_rank[d]
        if n < k:
            # sift up
            j = n
            hs[j] = s
            hr[j] = r
            hd[j] = d
            n += 1
            while j > 0:
                parent = (j - 1) // 2
                if not _worse(hs[j], hr[j], hs[parent], hr[parent]):
                    break
                hs[j], hs[parent] = hs[parent], hs[j]
                hr[j], hr[parent] = hr[parent], hr[j]
                hd[j], hd[parent] = hd[parent], hd[j]
                j = parent
        elif _worse(hs[0], hr[0], s, r):
            hs[0] = s
            hr[0] = r
            hd[0] = d
            _sift_down(hs, hr, hd, n, 0)
    count = n
    while n > 0:
        out_docs[n - 1] = hd[0]
        out_scores[n - 1] = hs[0]
        n -= 1
        hs[0] = hs[n]
        hr[0] = hr[n]
        hd[0] = hd[n]
        _sift_down(hs, hr, hd, n, 0)
    return count


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
        hs = np.empty(k, np.float64)
        hr = np.empty(k, np.int64)
        hd = np.empty(k, np.int64)
        for qi in range(c, nq, n_chunks):
            nc = 0
            for j in range(q_ptr[qi], q_ptr[qi + 1]):
                mult = span_mult[j]
                for p in range(span_start[j], span_end[j]):
                    d = doc_nums[p]
                    if mult == 1.0:
                        acc[d] += weights[p]
                    else:
                        acc[d] += weights[p] * mult
                    if not seen[d]:
                        seen[d] = True
                        cand[nc] = d
                        nc += 1
            out_len[qi] = _select(cand, nc, acc, q_const[qi], id_rank, k, hs, hr, hd, out_docs[qi], out_scores[qi])
            for i in range(nc):
                acc[cand[i]] = 0.0
                seen[cand[i]] = False
