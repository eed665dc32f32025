"""jieba's precise segmentation compiled: the words of ``jieba.Tokenizer.lcut`` (jieba 0.42.1, HMM on),
many times faster, for the tokenizer's ``zh`` and ``auto`` analysis.

:class:`CompiledJieba` holds one prefix dictionary (jieba's, with a user dictionary's words added) as
arrays (a trie) and cuts whole texts in the kernels of :mod:`bm25lab.engine.backends._segment_kernels`.
The output equals that of the Python replica :func:`bm25lab.engine.tokenization._cut_precise`
(tests compare them on whole bundled corpora and odd text), which equals jieba's own.

Loading numba and these kernels costs about half a second, so a process takes the compiled cut only
once the Python cut's work would have paid for it (the rule of ``backend="auto"``,
:func:`bm25lab.engine.backends.numba_backend.worth_loading`): a one-shot query never loads numba,
indexing a Chinese corpus does after its first few hundred thousand characters. It falls back to
the Python cut for a jieba version it was not checked against and while jieba's global
``finalseg.Force_Split_Words`` is not empty (a user dictionary word of frequency 0 fills it).
"""
from __future__ import annotations

import math
import sys
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover - typing only
    import jieba

__all__ = ["CompiledJieba", "compiled_for"]

# Seconds of the Python cut per character (Cranfield-era machine: 12.5 s for 5.8 M characters of
# CMRC 2018 and LeCaRD): what the compiled cut saves, counted against the cost of loading it.
PYTHON_SECONDS_PER_CHAR = 2e-6
CHECKED_JIEBA_VERSIONS = frozenset({"0.42.1"})

_STATES = "BEMS"  # the kernels' state numbers are positions in this string (jieba's letters, sorted)


class CompiledJieba:
    """jieba's precise cut over one prefix dictionary (``freq``: word -> frequency, prefixes 0)."""

    def __init__(self, freq: dict[str, int], total: int, kernels: Any | None = None) -> None:
        from .backends import numba_backend

        self._kernels = kernels or numba_backend.segment_kernels()
        keys = list(freq)
        self._cps = np.frombuffer("".join(keys).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        self._lengths = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
        self._starts = np.cumsum(self._lengths) - self._lengths
        self._freq = np.fromiter(freq.values(), dtype=np.int64, count=len(keys))
        self._log_freq = np.fromiter((math.log(count) if count else 0.0 for count in freq.values()), dtype=np.float64,
                                     count=len(keys))
        self._table, self._parent, self._last = self._kernels.build_trie(self._cps, self._starts, self._lengths)
        self._log_total = math.log(total)
        self._emit, self._start_p, self._trans, self._prev = _hmm_tables(self._kernels)

    def cut(self, text: str) -> list[str]:
        """``jieba.Tokenizer(...).lcut(text)`` for this dictionary."""
        ends = self._ends(self._codes(text)).tolist()
        return [text[a:b] for a, b in zip([0, *ends], ends)]

    def terms(self, text: str) -> list[str]:
        """The words of :meth:`cut` that hold a letter or digit, lowercased (what the tokenizer keeps of
        jieba's words before stopwords): most of them judged and lowercased in the kernels."""
        codes = self._codes(text)
        ends = self._ends(codes)
        kinds = self._kernels.word_kinds(codes, ends, *_character_tables()).tolist()
        upper = (codes >= 65) & (codes <= 90)
        lowered = np.where(upper, codes + 32, codes).astype(np.uint32).tobytes().decode("utf-32-le", "surrogatepass")
        ends = ends.tolist()
        out = [lowered[a:b] if kind == 1 else _python_term(text[a:b])
               for a, b, kind in zip([0, *ends], ends, kinds) if kind]
        return [term for term in out if term] if 2 in kinds else out

    def _codes(self, text: str) -> np.ndarray:
        return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)

    def _ends(self, codes: np.ndarray) -> np.ndarray:
        return self._kernels.cut_text(codes, self._table, self._parent, self._last, self._freq, self._log_freq,
                                      self._log_total, self._emit, self._start_p, self._trans, self._prev)


def _python_term(word: str) -> str:
    """``word`` lowercased if it holds a letter or digit, else "" (as ``tokenization._jieba_terms``)."""
    from .tokenization import _is_word

    return word.lower() if word.isalnum() or _is_word(word) else ""


@lru_cache(maxsize=1)
def _character_tables() -> tuple[np.ndarray, np.ndarray]:
    """``str.isalnum()`` and ``c.lower() == c`` of every BMP character (uint8)."""
    chars = [chr(c) for c in range(65536)]
    alnum = np.fromiter((c.isalnum() for c in chars), dtype=np.uint8, count=65536)
    uncased = np.fromiter((c.lower() == c for c in chars), dtype=np.uint8, count=65536)
    return alnum, uncased


def _hmm_tables(kernels: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """jieba's HMM (``finalseg``) as arrays: emission log-probabilities of the Han characters
    (MIN_FLOAT where jieba has none), start and transition log-probabilities, predecessor states."""
    finalseg = sys.modules["jieba.finalseg"]
    low, high = kernels.HAN_FIRST, kernels.HAN_LAST
    emit = np.full((4, high - low + 1), finalseg.MIN_FLOAT, dtype=np.float64)
    for state, table in finalseg.emit_P.items():
        row = emit[_STATES.index(state)]
        for char, logp in table.items():
            if low <= ord(char) <= high:
                row[ord(char) - low] = logp
    start = np.array([finalseg.start_P.get(s, finalseg.MIN_FLOAT) for s in _STATES], dtype=np.float64)
    trans = np.array([[finalseg.trans_P[a].get(b, finalseg.MIN_FLOAT) for b in _STATES] for a in _STATES],
                     dtype=np.float64)
    prev = np.array([[_STATES.index(p) for p in finalseg.PrevStatus[s]] for s in _STATES], dtype=np.int64)
    return emit, start, trans, prev


def compiled_for(jt: "jieba.Tokenizer", num_chars: int) -> CompiledJieba | None:
    """The compiled cut of ``jt``'s dictionary when it may be used and pays for itself now (made on
    first use and kept on ``jt``), else None; ``num_chars`` of Python cutting are counted."""
    compiled = getattr(jt, "_bm25lab_compiled", None)
    if compiled is not None:
        return compiled if _usable() else None
    if not _usable():
        return None
    from .backends import numba_backend

    _WORK[0] += num_chars
    loaded = numba_backend.SEGMENT_KERNELS in sys.modules
    if not (loaded or numba_backend.worth_loading(_WORK[0] * PYTHON_SECONDS_PER_CHAR)):
        return None
    compiled = jt._bm25lab_compiled = CompiledJieba(jt.FREQ, jt.total)
    return compiled


_WORK = [0]  # characters this process has cut in Python so far (what the compiled cut would have saved)


def _usable() -> bool:
    jieba_module = sys.modules["jieba"]
    from .backends import numba_backend

    return (jieba_module.__version__ in CHECKED_JIEBA_VERSIONS and numba_backend.available()
            and not sys.modules["jieba.finalseg"].Force_Split_Words)
