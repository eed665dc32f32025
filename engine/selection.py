"""Top-k selection with bm25lab's deterministic tie rule.

Order: score descending, then document id descending (plain code point comparison of the external
ids). This is trec_eval's own tie rule, so the ranks bm25lab writes are exactly the ranks trec_eval
evaluates. It does not depend on the order in which documents were indexed.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np


_ARROW_MIN_STRINGS = 20_000  # fewer strings are sorted by Python (no pyarrow import)


def code_point_order(strings: Sequence[str]) -> np.ndarray:
    """Positions of ``strings`` in code point order (int64); equal strings keep their order.

    Many strings are sorted by pyarrow as UTF-8 bytes, whose order is the code point order (about
    twice as fast as ``sorted``), from a string array made of their bytes (``pa.array`` of Python
    strings, like ``to_numpy``, imports pandas where it is installed: 0.15-0.3 s); a string without
    UTF-8 (a lone surrogate) makes Python sort them.
    """
    if len(strings) >= _ARROW_MIN_STRINGS:
        from .columns import numpy_values, utf8_pieces

        try:
            data, lengths = utf8_pieces(strings, "strict")
        except UnicodeEncodeError:
            pass
        else:
            import pyarrow as pa
            import pyarrow.compute as pc

            offsets = np.zeros(len(strings) + 1, dtype=np.int64)
            np.cumsum(lengths, out=offsets[1:])
            column = pa.LargeStringArray.from_buffers(len(strings), pa.py_buffer(offsets), pa.py_buffer(data))
            return numpy_values(pc.sort_indices(column)).astype(np.int64)
    return np.asarray(sorted(range(len(strings)), key=strings.__getitem__), dtype=np.int64)


def id_ranks(doc_ids: list[str]) -> np.ndarray:
    """Rank of every id in code point order (int32): larger rank = larger id."""
    ranks = np.empty(len(doc_ids), dtype=np.int32)
    ranks[code_point_order(doc_ids)] = np.arange(len(doc_ids), dtype=np.int32)
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
