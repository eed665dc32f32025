"""Top-k selection with bm25lab's deterministic tie rule.

Order: score descending, then document id descending (plain code point comparison of the external
ids). This is trec_eval's own tie rule, so the ranks bm25lab writes are exactly the ranks trec_eval
evaluates. It does not depend on the order in which documents were indexed.
"""
from __future__ import annotations

import numpy as np


def id_ranks(doc_ids: list[str]) -> np.ndarray:
    """Rank of every id in code point order (int32): larger rank = larger id."""
    order = sorted(range(len(doc_ids)), key=doc_ids.__getitem__)
    ranks = np.empty(len(doc_ids), dtype=np.int32)
    ranks[np.asarray(order, dtype=np.int64)] = np.arange(len(doc_ids), dtype=np.int32)
    return ranks


def top_k(candidates: np.ndarray, scores: np.ndarray, id_rank: np.ndarray, k: int) -> np.ndarray:
    """Positions into ``candidates``/``scores`` of the best ``k``, best first, ties by id descending.

    Exact at the cut: every candidate tied with the k-th score takes part in the tie break.
    """
    n = scores.shape[0]
    if n == 0 or k <= 0:
        return np.zeros(0, dtype=np.int64)
    positions = np.arange(n)
    if n > k:
        kth = np.partition(scores, n - k)[n - k]
        positions = np.flatnonzero(scores >= kth)
    order = np.lexsort((-id_rank[candidates[positions]].astype(np.int64), -scores[positions]))
    return positions[order[:k]]
