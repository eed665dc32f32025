"""The native backend: the search kernels compiled ahead, as a C extension (``engine/core/search.c``, built by
``pip install``), with everything else of the numpy backend.

The extension is the numba search kernels (:func:`._kernels.query_top_k`, :func:`._kernels.batch_top_k`)
written in C: the same pruning, the same float64 sums in the same order, the same tie rule, so the
same documents, scores and order as numba's and numpy's (the tests compare all three). A batch runs
on POSIX threads without the GIL. Loading it costs a quarter of a millisecond and 56 KiB: no
numba, no LLVM. That is why ``auto`` searches with it whenever it is built, from the first batch;
numba then loads only for building (and for pair codes, when that work pays for it).

The extension is optional at installation: without a C compiler ``pip install`` still succeeds, and
:func:`available` is False (``auto`` falls back to numpy and numba as before).
"""
from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from ..core import kernels
from ..errors import BM25LabError
from . import Ranked, compiled
from .compiled import PerScorer, SearchState
from .numpy_backend import NumpyBackend

if TYPE_CHECKING:
    from ..retrieval import PairCoder, PreparedWeights, QueryTerms, Scorer, TermBatch
    from ..scoring import Params

# the pair codes and document id ranks the extension reads (other dtypes: the numpy search)
_CODES = (np.dtype(np.uint16), np.dtype(np.uint32))
_RANKS = (np.dtype(np.int32), np.dtype(np.int64))


def extension() -> ModuleType | None:
    """The compiled core (:mod:`bm25lab.engine.core`), or None when this installation was built without it."""
    return kernels()


def available() -> bool:
    """Whether the compiled core is built and importable."""
    return kernels() is not None


class NativeBackend(NumpyBackend):
    """Searches with the C extension; looks terms up and builds as the numpy backend does."""

    name = "native"

    def __init__(self, coder: Callable[[], PairCoder] | None = None) -> None:
        """``coder``: what numbers the postings' pairs when the weights are prepared (numpy's by default;
        ``auto`` passes its own choice)."""
        kernels = extension()
        if kernels is None:
            raise BM25LabError("the native backend needs bm25lab's C extension, which this installation lacks "
                               "(reinstall with a C compiler, or use backend='numba' or 'numpy')")
        self._kernels = kernels
        self._coder = coder
        self._state: PerScorer[SearchState] = PerScorer(SearchState)

    def pair_coder(self) -> PairCoder:
        return self._coder() if self._coder is not None else super().pair_coder()

    def top_k(self, scorer: Scorer, query: QueryTerms, k: int, params: Params) -> Ranked:
        coder = self.pair_coder()
        if not _fits(scorer, scorer.prepare(params, coder)):
            return super().top_k(scorer, query, k, params)
        return compiled.top_k(self._kernels, scorer, query, k, params, coder, self._state.of(scorer))

    def top_k_batch(self, scorer: Scorer, batch: TermBatch, k: int, params: Params, workers: int) -> Sequence[Ranked]:
        coder = self.pair_coder()
        if not _fits(scorer, scorer.prepare(params, coder)):
            return super().top_k_batch(scorer, batch, k, params, workers)
        return compiled.top_k_batch(self._kernels, scorer, batch, k, params, workers, coder)


def _fits(scorer: Scorer, weights: PreparedWeights) -> bool:
    """Whether the extension reads these weights' codes and the scorer's id ranks (it always does but
    for BM25F fields over more than 2**32 postings, whose codes are int64)."""
    return weights.codes.dtype in _CODES and scorer.id_rank.dtype in _RANKS
