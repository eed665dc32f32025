"""The compiled batch path: numba kernels when numba is installed, else None (callers use numpy).

numba is imported the first time a batch needs it, never at ``import engine``. Compiled kernels are
cached on disk by numba (``cache=True``), so later processes load them instead of compiling.
Results are identical to the numpy path (:mod:`engine.retrieval`): same float64 sums in the same
order, same tie rule; the tests compare the two.
"""
from __future__ import annotations

import os
import sys
from functools import lru_cache
from types import ModuleType
from typing import Sequence

import numpy as np

from .retrieval import QueryTerms, Scorer
from .scoring import Params, get_variant


# Loading numba and the cached kernels costs about 1-3 s per process (compiling them the first time
# after installation, 10-30 s); the numpy path scores about 10^8 postings in that time. Smaller
# batches stay on numpy unless the kernels are loaded already. BM25LAB_NUMBA=1 / 0 forces the choice.
COMPILED_MIN_POSTINGS = 100_000_000


def worth_compiling(total_postings: int) -> bool:
    """Whether a batch touching ``total_postings`` postings should take the compiled path."""
    forced = os.environ.get("BM25LAB_NUMBA")
    if forced in ("0", "1"):
        return forced == "1"
    return "engine._kernels" in sys.modules or total_postings >= COMPILED_MIN_POSTINGS


@lru_cache(maxsize=1)
def kernels() -> ModuleType | None:
    """The kernel module, or None when numba is missing."""
    try:
        from . import _kernels
    except ImportError:
        return None
    return _kernels


def batch_top_k(scorer: Scorer, queries: Sequence[QueryTerms], k: int, params: Params,
                threads: int) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """Top-k of every query with the prepared weights, in ``threads`` threads; None when numba is
    missing or the batch is too small to pay for loading it (:func:`worth_compiling`)."""
    p = scorer.postings
    offsets = np.asarray(p.offsets)
    touched = sum(int((offsets[q.term_ids + 1] - offsets[q.term_ids]).sum()) for q in queries)
    if not worth_compiling(touched):
        return None
    module = kernels()
    if module is None:
        return None
    weights = scorer.prepare(params)
    idf = scorer.idf(params.variant)
    zero = get_variant(params.variant).zero_tf_part(params.k1, params.b, params.delta)
    sizes = np.array([q.term_ids.shape[0] for q in queries], dtype=np.int64)
    q_ptr = np.zeros(len(queries) + 1, dtype=np.int64)
    np.cumsum(sizes, out=q_ptr[1:])
    terms = np.concatenate([q.term_ids for q in queries]) if len(queries) else np.zeros(0, np.int64)
    mult = np.concatenate([q.counts for q in queries]) if len(queries) else np.zeros(0)
    const = np.array([float(np.dot(idf[q.term_ids] * zero, q.counts)) if zero and not q.empty else 0.0
                      for q in queries])
    k_eff = max(1, min(k, scorer.n_docs))
    out_docs = np.full((len(queries), k_eff), -1, dtype=np.int64)
    out_scores = np.zeros((len(queries), k_eff), dtype=np.float64)
    out_len = np.zeros(len(queries), dtype=np.int64)
    module.batch_top_k(q_ptr, offsets[terms], offsets[terms + 1], mult.astype(np.float64), const,
                       p.doc_nums, weights, scorer.id_rank, scorer.n_docs, k_eff, max(1, threads),
                       out_docs, out_scores, out_len)
    return [(out_docs[i, :n], out_scores[i, :n]) for i, n in enumerate(out_len.tolist())]
