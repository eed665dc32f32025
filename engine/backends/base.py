"""What every backend implements (:class:`Backend`) and what a search returns (:data:`Ranked`); the
backends themselves are :mod:`.numpy_backend` (the specification) and :mod:`.core_backend`."""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Sequence

import numpy as np

if TYPE_CHECKING:
    from ..postings import Postings, Triples, Vocabulary
    from ..retrieval import PairCoder, QueryTerms, Scorer, TermBatch
    from ..scoring import Params

__all__ = ["Backend", "Ranked"]

Ranked = tuple[np.ndarray, np.ndarray]  # (document numbers, float64 scores), best first


class Backend(ABC):
    """What the index asks of a backend (see the module docstring)."""

    name: str

    @abstractmethod
    def term_batch(self, scorer: Scorer, queries: Sequence[Sequence[str]]) -> TermBatch:
        """Each query's distinct known terms and their multiplicities (:meth:`Scorer.query_batch`'s arrays)."""

    @abstractmethod
    def top_k(self, scorer: Scorer, query: QueryTerms, k: int, params: Params,
              mask: np.ndarray | None = None) -> Ranked:
        """The best ``k`` documents of one query: score descending, ties by document id descending.
        ``mask`` (uint8, one per document; None: every document): only documents whose entry is not 0."""

    @abstractmethod
    def top_k_batch(self, scorer: Scorer, batch: TermBatch, k: int, params: Params, workers: int,
                    mask: np.ndarray | None = None) -> Sequence[Ranked]:
        """:meth:`top_k` of every query of ``batch``, with up to ``workers`` threads or processes."""

    @abstractmethod
    def pair_coder(self) -> PairCoder:
        """What numbers the postings' (tf, length) pairs when weights are prepared."""

    @abstractmethod
    def vocabulary(self, terms: Sequence[str] = ()) -> Vocabulary:
        """A new building vocabulary holding ``terms`` (term ``i`` with id ``i``)."""

    @abstractmethod
    def group_by_term(self, term_ids: np.ndarray, lengths: np.ndarray, first_doc: int,
                      num_terms: int) -> Triples:
        """(term, document, tf) of the token ids of consecutive documents of ``lengths`` tokens, the
        first numbered ``first_doc``: each term's triples together, documents ascending (int32)."""

    @abstractmethod
    def lay_out(self, chunks: Sequence[Triples], new_id: np.ndarray,
                threads: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(offsets, documents, tfs) of the postings of ``chunks`` (in document order), term ``t`` of a
        chunk becoming term ``new_id[t]`` (on up to ``threads`` threads)."""

    @abstractmethod
    def code_point_order(self, strings: Sequence[str]) -> np.ndarray:
        """:func:`bm25lab.engine.selection.code_point_order`."""

    def built(self, postings: Postings, threads: int = 1) -> None:
        """A new segment's ``postings`` are built: made ready for this backend's searches, on ``threads``
        threads (nothing here)."""

    def __repr__(self) -> str:
        return f"<{self.name} backend>"
