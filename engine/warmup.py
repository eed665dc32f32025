"""Compile the numba kernels ahead (search, building), for the argument types
an index gives them, and mark the installation compiled (what ``backend="auto"`` asks before it counts on loading them cheaply).

    python -m bm25lab.engine.warmup

``auto`` runs this in a background process the first time the kernels would have paid off
(:func:`bm25lab.engine.backends.numba_backend.compile_in_background`).
"""
from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from .backends.numba_backend import NumbaBackend, mark_compiled
from .index import Index
from .retrieval import posting_pairs
from .tokenization import Tokenizer

__all__ = ["compile_all"]


def compile_all() -> Path:
    """Compile (or load) every kernel for the argument types an index gives them, built in memory
    and memory-mapped from disk, then mark the installation compiled; returns the marker."""
    docs = [(f"d{i}", " ".join(f"w{(i * j) % 23}" for j in range(1 + i % 7))) for i in range(64)]
    queries = {"q1": "w1 w2 w3", "q2": "w5 w5", "q3": "nothing"}
    with tempfile.TemporaryDirectory(prefix="bm25lab-compile-") as folder:
        built = Index.build(docs, Tokenizer("whitespace", stopwords=None), workers=1, backend="numba")
        built.save(Path(folder) / "index")
        loaded = Index.load(Path(folder) / "index", backend="numba")
        # the pairs of a loaded index saved without them (bm25lab 0.2.0): coded over its mapped postings
        posting_pairs(loaded._segment.postings, NumbaBackend())
        for index in (built, loaded):
            for wide in (False, True):
                for variant in ("lucene", "bm25l"):
                    index.search_many(queries, k=5, variant=variant, workers=1)
                    if wide:
                        _widen_codes(index)
                        index.search_many(queries, k=5, variant=variant, workers=1)
                    index.search("w1 w2", k=5, variant=variant)
    return mark_compiled()


def _widen_codes(index: Index) -> None:
    """The index's prepared weights with 32-bit pair codes (what a collection of more than 2**16
    (tf, length) pairs gets: :func:`~.retrieval.code_dtype`), for the kernels compiled for them."""
    scorer = index._scorer
    prepared = scorer._weights
    assert prepared is not None
    codes = prepared.codes.astype(np.uint32)
    codes.flags.writeable = prepared.codes.flags.writeable  # a loaded index's codes are read-only (mapped)
    scorer._weights = replace(prepared, codes=codes)


if __name__ == "__main__":
    print(f"compiled bm25lab's numba kernels -> {compile_all()}")
