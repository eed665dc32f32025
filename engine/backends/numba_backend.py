"""The numba backend: compiled kernels (:mod:`._kernels`) for searching and building.

numba is imported when a numba backend first works, never at ``import bm25lab``. The kernels are
compiled on first use and cached on disk by numba (``cache=True``); later processes load them in
about 0.4 s. :func:`bm25lab.engine.warmup.compile_all` compiles them ahead (``python -m
bm25lab.engine.warmup``) and marks the installation as compiled (:func:`ready`), which is what
``auto`` asks before it counts on a cheap load; ``auto`` runs it in a background process
(:func:`compile_in_background`) the first time its kernels would have paid off.

Results are identical to the numpy backend's: the same float64 sums in the same order (the
canonical term order of :func:`bm25lab.engine.retrieval.term_order`, compiled from the same
source), the same tie rule. The search kernels prune (MaxScore) but re-score exactly what they keep.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
import threading
from functools import lru_cache
from itertools import chain
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np

from ..columns import utf8_pieces
from ..errors import BM25LabError
from ..postings import TermList, TextChunk, Triples
from ..retrieval import TermBatch
from . import Backend, Ranked, compiled
from .compiled import PerScorer, SearchState

if TYPE_CHECKING:
    from ..retrieval import QueryTerms, Scorer
    from ..scoring import Params

KERNELS = f"{__package__}._kernels"
SEGMENT_KERNELS = f"{__package__}._segment_kernels"  # jieba's cut (bm25lab.engine.segmentation)
# What ``auto`` counts loading the cached kernels as (measured 0.3-0.4 s: importing numba ~0.26 s,
# reading the kernels' cache), and compiling them (about 25 s on the project's 2-core machine).
LOAD_SECONDS = 0.5
COMPILE_SECONDS = 30.0
# What loading one kernel module costs once the other is loaded (numba imported, its registries read:
# most of LOAD_SECONDS): the build kernels after jieba's compiled cut, measured 0.12 s.
LOAD_SECONDS_AFTER_OTHER = 0.15
_THREADED_LAY_OUT = 1 << 20  # postings from which a build lays out documents and tfs on two threads


@lru_cache(maxsize=1)
def available() -> bool:
    """Whether numba is installed."""
    return importlib.util.find_spec("numba") is not None


def loaded() -> bool:
    """Whether this process has imported the kernels already (using them then costs nothing more)."""
    return KERNELS in sys.modules


def kernels() -> ModuleType:
    """The kernel module (imports numba; compiles nothing yet)."""
    return _import(KERNELS)


def segment_kernels() -> ModuleType:
    """The kernels of jieba's segmentation (imports numba; compiles nothing yet)."""
    return _import(SEGMENT_KERNELS)


def _import(name: str) -> ModuleType:
    if not available():
        raise BM25LabError("the numba backend needs numba: pip install numba (or use backend='numpy')")
    if name not in sys.modules:
        _import_arraymath_without_scipy()
    return importlib.import_module(name)


_BLAS_MODULE = "scipy.linalg.cython_blas"


def _import_arraymath_without_scipy() -> None:
    """Import numba's ``numba.np.arraymath`` (which numba loads with the first compiled function of a
    process) without importing ``scipy.linalg``: 0.15-0.3 s of a new process indexing Chinese, for
    BLAS, which bm25lab's kernels never call.

    numba's module asks once, on import, whether scipy's BLAS can be imported (``_HAVE_BLAS``, read
    only when it types ``np.correlate``/``np.convolve``; ``np.dot`` and ``np.linalg`` import scipy
    themselves when compiled). The import is made to fail for that moment, and ``_HAVE_BLAS`` then set
    to whether scipy is installed (found, not imported): numba behaves as it would have, for any other
    numba code of the process too, with scipy imported when such code first needs it. Nothing is done
    if numba's module or scipy's BLAS is imported already, or numba's module has no such flag."""
    if "numba.np.arraymath" in sys.modules or _BLAS_MODULE in sys.modules:
        return
    blocked = True
    sys.modules[_BLAS_MODULE] = None  # type: ignore[assignment]  # makes ``import scipy.linalg.cython_blas`` raise
    try:
        arraymath = importlib.import_module("numba.np.arraymath")
    finally:
        if blocked and sys.modules.get(_BLAS_MODULE, 0) is None:
            del sys.modules[_BLAS_MODULE]
    if hasattr(arraymath, "_HAVE_BLAS"):
        arraymath._HAVE_BLAS = importlib.util.find_spec("scipy") is not None


# ---------------------------------------------------------------------- compiled ahead, or not yet
def _marker() -> Path:
    """The file that says this installation's kernels are compiled: named after what numba's cache
    depends on (numba's and Python's versions, the kernels' source files and their time stamps), and
    kept where numba keeps that cache: in the ``__pycache__`` folder beside the kernels when it can be
    written there (an installation in a virtual environment), else in the user's cache directory."""
    from importlib.metadata import version

    here = Path(__file__).resolve().parent
    sources = [here / "_kernels.py", here / "_segment_kernels.py", here.parent / "retrieval.py"]
    facts = [version("numba"), sys.version, *(f"{p}:{p.stat().st_mtime_ns}:{p.stat().st_size}" for p in sources)]
    name = f"bm25lab-kernels-{hashlib.sha256(chr(10).join(facts).encode()).hexdigest()[:20]}.compiled"
    beside = here / "__pycache__"
    if os.access(beside if beside.is_dir() else here, os.W_OK):
        return beside / name
    from ..tokenization import cache_dir

    return cache_dir() / "kernels" / name


def ready() -> bool:
    """Whether :func:`bm25lab.engine.warmup.compile_all` has run for this installation (so loading the
    kernels is cheap)."""
    try:
        return _marker().exists()
    except OSError:
        return False


def numba_loaded() -> bool:
    """Whether this process has loaded one of bm25lab's kernel modules (so numba is imported and set up)."""
    return KERNELS in sys.modules or SEGMENT_KERNELS in sys.modules


def load_seconds() -> float:
    """What loading a kernel module costs this process now: :data:`LOAD_SECONDS`, or
    :data:`LOAD_SECONDS_AFTER_OTHER` once the other module has set numba up (:func:`numba_loaded`)."""
    return LOAD_SECONDS_AFTER_OTHER if numba_loaded() else LOAD_SECONDS


def worth_loading(numpy_seconds: float) -> bool:
    """Whether ``numpy_seconds`` of numpy work (counted so far, the next operation included) pay for
    taking the kernels: their loading time once compiled (:func:`load_seconds`); before that, the first
    time it would have paid, a background process compiles them, and only work worth the compilation
    itself waits for none."""
    if numpy_seconds < load_seconds() or not available():
        return False
    if ready():
        return True
    compile_in_background()
    return numpy_seconds >= COMPILE_SECONDS


_BACKGROUND: list[subprocess.Popen] = []  # this process's one compiling child, once started
_BACKGROUND_LOCK = threading.Lock()


def compile_in_background() -> None:
    """Start, once per process, a low-priority process that runs
    :func:`bm25lab.engine.warmup.compile_all` and exits."""
    with _BACKGROUND_LOCK:
        if _BACKGROUND:
            return
        code = "import os; os.nice(10); from bm25lab.engine.warmup import compile_all; compile_all()"
        try:
            _BACKGROUND.append(subprocess.Popen([sys.executable, "-c", code], cwd=Path(__file__).parent,
                                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                stderr=subprocess.DEVNULL, start_new_session=True))
        except OSError:
            _BACKGROUND.append(None)  # type: ignore[arg-type]  # could not start one: do not try again


def mark_compiled() -> Path:
    """Mark this installation's kernels compiled (see :func:`ready`); returns the mark."""
    marker = _marker()
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()
    return marker


# ---------------------------------------------------------------------- the backend
class NumbaBackend(Backend):
    name = "numba"

    def __init__(self) -> None:
        self._kernels = kernels()
        self._state: PerScorer[SearchState] = PerScorer(SearchState)

    def term_batch(self, scorer: Scorer, queries: Sequence[Sequence[str]]) -> TermBatch:
        """The tokens, joined, are looked up from their UTF-8 in a compiled copy of the index's
        vocabulary (made by the first batch; look-ups never change it, so threads may share it) and
        grouped per query by the kernels: no Python dict look-up per token."""
        state = self._state.of(scorer)
        if state.vocabulary is None:
            state.vocabulary = CompiledVocabulary.of_terms(self._kernels, scorer.postings.terms)
        lengths = np.fromiter(map(len, queries), dtype=np.int64, count=len(queries))
        tokens = list(chain.from_iterable(queries))
        ids = state.vocabulary.look_up([" ".join(tokens)], tokens, len(tokens))
        return TermBatch(*self._kernels.group_query_terms(ids, lengths))

    def top_k(self, scorer: Scorer, query: QueryTerms, k: int, params: Params) -> Ranked:
        return compiled.top_k(self._kernels, scorer, query, k, params, self, self._state.of(scorer))

    def top_k_batch(self, scorer: Scorer, batch: TermBatch, k: int, params: Params, workers: int) -> Sequence[Ranked]:
        return compiled.top_k_batch(self._kernels, scorer, batch, k, params, workers, self)

    def pair_coder(self) -> NumbaBackend:
        """This backend: its kernels number the pairs (:meth:`mark_pairs`, :meth:`write_codes`)."""
        return self

    def mark_pairs(self, doc_nums: np.ndarray, tfs: np.ndarray, length_rank: np.ndarray, n_lengths: int,
                   used: np.ndarray) -> None:
        """:meth:`bm25lab.engine.retrieval.PairCoder.mark_pairs` by :func:`._kernels.mark_pairs`."""
        self._kernels.mark_pairs(doc_nums, tfs, length_rank, n_lengths, used)

    def write_codes(self, doc_nums: np.ndarray, tfs: np.ndarray, length_rank: np.ndarray, n_lengths: int,
                    code_of: np.ndarray, out: np.ndarray) -> None:
        """:meth:`bm25lab.engine.retrieval.PairCoder.write_codes` by :func:`._kernels.write_codes`."""
        self._kernels.write_codes(doc_nums, tfs, length_rank, n_lengths, code_of, out)

    def vocabulary(self, terms: Sequence[str] = ()) -> CompiledVocabulary:
        return CompiledVocabulary.of_terms(self._kernels, terms)

    def group_by_term(self, term_ids: np.ndarray, lengths: np.ndarray, first_doc: int,
                      num_terms: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self._kernels.group_by_term(term_ids, lengths, first_doc, num_terms)

    def split_texts(self, text: np.ndarray, bounds: np.ndarray, first_doc: int) -> TextChunk:
        """A chunk of raw texts analysed and grouped by :func:`._kernels.split_texts` (lets go of the
        GIL: the builder runs chunks on several threads)."""
        terms, docs, tfs, lengths, hashes, starts, sizes = self._kernels.split_texts(text, bounds, first_doc)
        return TextChunk(text, (terms, docs, tfs), lengths, hashes, starts, sizes)

    def code_point_order(self, strings: Sequence[str]) -> np.ndarray:
        """:func:`bm25lab.engine.selection.code_point_order` by :func:`._kernels.sort_terms` on the strings'
        UTF-8 ("surrogatepass": its byte order is the code point order; equal strings keep their order)."""
        data, lengths = utf8_pieces(strings)
        starts = np.cumsum(lengths) - lengths
        return self._kernels.sort_terms(starts, lengths, data, len(strings))

    def lay_out(self, chunks: Sequence[Triples], new_id: np.ndarray,
                threads: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:func:`bm25lab.engine.postings.lay_out` by the kernels, chunk by chunk (no copy of them all):
        the offsets from every chunk's terms (:func:`._kernels.count_terms`), then the documents and the
        tfs scattered (:func:`._kernels.scatter_by_term`), the two on two threads when ``threads`` > 1."""
        counts = np.zeros(len(new_id) + 1, dtype=np.int64)
        for terms, _, _ in chunks:
            self._kernels.count_terms(terms, new_id, counts)
        offsets = np.cumsum(counts)  # counts[t + 1]: term t's postings
        total = int(offsets[-1])

        def scatter(column: int) -> np.ndarray:
            out = np.empty(total, dtype=np.int32)
            free = offsets[:-1].copy()
            for chunk in chunks:
                self._kernels.scatter_by_term(chunk[0], chunk[column], new_id, free, out)
            return out

        if threads < 2 or total < _THREADED_LAY_OUT:
            return offsets, scatter(1), scatter(2)
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(1, thread_name_prefix="bm25lab-lay-out") as pool:
            tfs = pool.submit(scatter, 2)
            return offsets, scatter(1), tfs.result()


class CompiledVocabulary:
    """A vocabulary kept by the kernels (:func:`._kernels.encode_tokens`): term ids come straight
    from the UTF-8 of many tokens at once. A build's grows as it meets new terms, which become Python
    strings only at the end, sorted (:meth:`sorted_terms`); a search's holds an index's terms
    (:meth:`of_terms`) and only looks tokens up (:meth:`look_up`)."""

    def __init__(self, kernels: ModuleType) -> None:
        self._kernels = kernels
        self._state: tuple = (np.full(1 << 12, -1, dtype=np.int32), np.empty(1 << 11, dtype=np.uint64),
                              np.empty(1 << 11, dtype=np.int64), np.empty(1 << 11, dtype=np.int64),
                              np.empty(1 << 14, dtype=np.uint8), 0, 0)

    def __len__(self) -> int:
        return self._state[5]

    @classmethod
    def of_terms(cls, kernels: ModuleType, terms: Sequence[str]) -> "CompiledVocabulary":
        """The vocabulary of distinct ``terms``, term ``i`` with id ``i``."""
        vocabulary = cls(kernels)
        if len(terms):  # a loaded segment's terms: their text, its line feeds read as spaces
            joined = [terms.text.replace("\n", " ")] if isinstance(terms, TermList) else list(terms)
            vocabulary.term_ids(joined, terms, len(terms))
        return vocabulary

    def term_ids(self, joined: list[str], tokens: Iterable[str], num_tokens: int) -> np.ndarray:
        """The term id of each of ``tokens`` (``num_tokens`` of them; ``joined``: the same tokens joined
        by spaces, in groups such as documents), a new term numbered next. Lone surrogates pass
        through UTF-8 as in "surrogatepass", whose byte order is still the code point order."""
        return self._encode(joined, tokens, num_tokens, True)

    def look_up(self, joined: list[str], tokens: Iterable[str], num_tokens: int) -> np.ndarray:
        """:meth:`term_ids` that adds no term: -1 for a token not in the vocabulary."""
        return self._encode(joined, tokens, num_tokens, False)

    def _encode(self, joined: list[str], tokens: Iterable[str], num_tokens: int, insert: bool) -> np.ndarray:
        text = np.frombuffer(" ".join(joined).encode("utf-8", "surrogatepass"), dtype=np.uint8)
        ends = np.zeros(0, dtype=np.int64)  # the tokens are the pieces between spaces
        if self._kernels.count_pieces(text) != num_tokens:  # a token holds a space: every token's own end
            pieces = [token.encode("utf-8", "surrogatepass") for token in tokens]
            ends = np.cumsum(np.fromiter(map(len, pieces), dtype=np.int64, count=num_tokens))
            text = np.frombuffer(b"".join(pieces), dtype=np.uint8)
        ids, *state = self._kernels.encode_tokens(text, ends, num_tokens, insert, *self._state)
        self._state = tuple(state)
        return ids

    def merged_ids(self, chunk: TextChunk) -> np.ndarray:
        """The id of each of a chunk's terms (:func:`._kernels.merge_terms`), a new term numbered next."""
        ids, *state = self._kernels.merge_terms(chunk.text, chunk.term_hashes, chunk.term_starts, chunk.term_lengths,
                                                *self._state)
        self._state = tuple(state)
        return ids

    def terms_by_id(self) -> list[str]:
        """Every term, term ``i`` at position ``i`` (decoded one at a time: used only to hand a
        vocabulary over, never per build)."""
        _, _, starts, lengths, data, distinct, _ = self._state
        raw = data.tobytes()
        return [raw[a:a + b].decode("utf-8", "surrogatepass")
                for a, b in zip(starts[:distinct].tolist(), lengths[:distinct].tolist())]

    def sorted_terms(self) -> tuple[list[str], np.ndarray]:
        """The terms in code point order, and the id of each (sorted by the kernels, then decoded
        all at once and split at a byte no term holds)."""
        _, _, starts, lengths, data, distinct, used = self._state
        order = self._kernels.sort_terms(starts, lengths, data, distinct)
        if not distinct:
            return [], order
        joined, separator = self._kernels.joined_terms(order, starts, lengths, data, used)
        if separator >= 0:
            return joined.tobytes().decode("utf-8", "surrogatepass").split(chr(separator)), order
        raw = data.tobytes()  # every ASCII character is in some term: one at a time
        spans = zip(starts[order].tolist(), lengths[order].tolist())
        return [raw[a:a + b].decode("utf-8", "surrogatepass") for a, b in spans], order

