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

``$BM25LAB_SEGMENTER`` (:data:`SEGMENTERS`) chooses the cut for a process and the tokenizer
workers it forks: ``auto`` (the default, as above), ``python`` (the Python replica, never numba) or
``jieba`` (jieba's own ``Tokenizer.lcut`` / ``lcut_for_search``: the reference the others are
tested against, and the slowest). All three give the same words, so an index built under one
analyses queries identically under another; ``jieba`` exists to measure and check that.
"""
from __future__ import annotations

import math
import os
import sys
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import ParameterError

if TYPE_CHECKING:  # pragma: no cover - typing only
    import jieba

__all__ = ["CompiledJieba", "SEGMENTERS", "SEGMENTER_VARIABLE", "compiled_for", "nfkc_many", "segmenter",
           "unpack_terms"]

SEGMENTER_VARIABLE = "BM25LAB_SEGMENTER"
SEGMENTERS = {
    "auto": "the compiled cut once it pays for loading numba, the Python replica before it (default)",
    "python": "the Python replica of jieba's cut (tokenization._cut_precise); numba is never loaded",
    "jieba": "jieba's own Tokenizer.lcut and lcut_for_search: the reference, and the slowest",
}
"""Registry of ``$BM25LAB_SEGMENTER`` values: which implementation of jieba's cut a process uses
(the same words from each)."""


def segmenter() -> str:
    """``$BM25LAB_SEGMENTER`` when set, else ``"auto"``; a value not in :data:`SEGMENTERS` raises
    ``ParameterError`` listing them."""
    name = os.environ.get(SEGMENTER_VARIABLE, "").strip() or "auto"
    if name not in SEGMENTERS:
        raise ParameterError(f"{SEGMENTER_VARIABLE}={name!r} is not a segmenter; choose one of: {', '.join(SEGMENTERS)}")
    return name

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
        self._cps, self._starts, self._lengths = _key_arrays(keys)
        self._freq = np.fromiter(freq.values(), dtype=np.int64, count=len(keys))
        self._log_freq = np.fromiter((math.log(count) if count else 0.0 for count in freq.values()), dtype=np.float64,
                                     count=len(keys))
        self._table, self._parent, self._last = self._kernels.build_trie(self._cps, self._starts, self._lengths)
        self._log_total = math.log(total)
        self._emit, self._start_p, self._trans, self._prev = _hmm_tables(self._kernels)
        self._stop_tries: dict[frozenset[str], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}

    def cut(self, text: str) -> list[str]:
        """``jieba.Tokenizer(...).lcut(text)`` for this dictionary."""
        ends = self._ends(self._codes(text)).tolist()
        return [text[a:b] for a, b in zip([0, *ends], ends)]

    def packed_terms(self, texts: list[str], stopwords: frozenset[str]) -> tuple[str, list[int]]:
        """The terms of each of ``texts`` (the words of :meth:`cut` that hold a letter or digit,
        lowercased, less ``stopwords``), packed: one string holding every term followed by a line
        feed, and each text's number of terms
        (:func:`unpack_terms` makes the lists). One kernel call cuts, judges, lowercases and drops
        stopwords for all the texts; Python only tells the rare words the kernel cannot (letters
        with a case beyond ASCII, characters beyond the BMP)."""
        codes = self._codes("".join(texts))
        text_ends = np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)))
        out, counts, odd = self._kernels.chunk_terms(
            codes, text_ends, self._table, self._parent, self._last, self._freq, self._log_freq, self._log_total,
            self._emit, self._start_p, self._trans, self._prev, _alnum_table(), _lower_table(),
            *self._stop_trie(stopwords))
        joined = out.tobytes().decode("utf-32-le", "surrogatepass")
        if len(odd):
            return _settle_odd(joined, counts.tolist(), odd.tolist(), stopwords)
        return joined, counts.tolist()

    def _stop_trie(self, stopwords: frozenset[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``stopwords`` as a trie for :func:`chunk_terms` (every prefix a key, whole words flagged 1),
        made once per stopword set."""
        trie = self._stop_tries.get(stopwords)
        if trie is None:
            flags: dict[str, int] = {}
            for word in stopwords:
                for i in range(1, len(word)):
                    flags.setdefault(word[:i], 0)
            flags.update(dict.fromkeys(stopwords, 1))
            flags.pop("", None)
            table, parent, last = self._kernels.build_trie(*_key_arrays(list(flags)))
            trie = (table, parent, last, np.fromiter(flags.values(), dtype=np.uint8, count=len(flags)))
            if len(self._stop_tries) >= 8:
                self._stop_tries.clear()
            self._stop_tries[stopwords] = trie
        return trie

    def _codes(self, text: str) -> np.ndarray:
        return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)

    def _ends(self, codes: np.ndarray) -> np.ndarray:
        return self._kernels.cut_text(codes, self._table, self._parent, self._last, self._freq, self._log_freq,
                                      self._log_total, self._emit, self._start_p, self._trans, self._prev)


def _key_arrays(keys: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Trie keys as the kernels read them: their code points end to end, each key's start and length."""
    cps = np.frombuffer("".join(keys).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    lengths = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
    return cps, np.cumsum(lengths) - lengths, lengths


def nfkc_many(texts: list[str]) -> list[str]:
    """``[unicodedata.normalize("NFKC", t) for t in texts]``, several times faster on text that is not
    normalised already (LeCaRD's full-width punctuation: 18 against 95 ns a character).

    Every BMP character whose NFKC form is one other character is replaced by it, in numpy; where
    the result is NFKC-normalised (``unicodedata.is_normalized``, C speed) it is the answer, else
    the text is normalised by ``unicodedata``. Exact: NFKC(x) = compose(NFKD(x)), and NFKD of a
    character's NFKC form is NFKD of the character (Unicode's stability), so the replacement leaves
    NFKD, hence NFKC, of the whole text unchanged; a normalised result is therefore NFKC(x) itself.
    """
    import unicodedata

    out = []
    for text in texts:
        if unicodedata.is_normalized("NFKC", text):
            out.append(text)
            continue
        table = _nfkc_table()  # made on first need (0.2 s): text normalised already never pays for it
        codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        mapped = np.where(codes < 65536, table[np.minimum(codes, 65535)], codes)
        replaced = mapped.tobytes().decode("utf-32-le", "surrogatepass")
        out.append(replaced if unicodedata.is_normalized("NFKC", replaced) else unicodedata.normalize("NFKC", text))
    return out


@lru_cache(maxsize=1)
def _nfkc_table() -> np.ndarray:
    """Every BMP code point mapped to its NFKC form when that is one character, else to itself."""
    import unicodedata

    table = np.arange(65536, dtype=np.uint32)
    for code in range(65536):
        if 0xD800 <= code <= 0xDFFF:
            continue  # lone surrogates: no normal form
        form = unicodedata.normalize("NFKC", chr(code))
        if len(form) == 1:
            table[code] = ord(form)
    return table


def unpack_terms(joined: str, counts: list[int]) -> list[list[str]]:
    """The lists of terms that :meth:`CompiledJieba.packed_terms` packed."""
    terms = joined.split("\n")
    if len(terms) != sum(counts) + 1:  # a term holding a line feed: impossible (see chunk_terms)
        raise RuntimeError(f"packed terms do not match their counts ({len(terms) - 1} != {sum(counts)})")
    lists = []
    start = 0
    for count in counts:
        lists.append(terms[start:start + count])
        start += count
    return lists


def _settle_odd(joined: str, counts: list[int], odd: list[int], stopwords: frozenset[str]) -> tuple[str, list[int]]:
    """Packed terms with the kernel's kind-2 terms (numbers ``odd``) told by Python: lowercased,
    dropped when they hold no letter or digit or are stopwords (their text's count lowered)."""
    terms = joined.split("\n")
    text_of = np.repeat(np.arange(len(counts)), counts)
    dropped = []
    for number in odd:
        term = _python_term(terms[number])
        if term and term not in stopwords:
            terms[number] = term
        else:
            dropped.append(number)
            counts[text_of[number]] -= 1
    for number in reversed(dropped):
        del terms[number]
    return "\n".join(terms), counts


def _python_term(word: str) -> str:
    """``word`` lowercased if it holds a letter or digit, else "" (as ``tokenization._jieba_terms``'s
    Python path)."""
    from .tokenization import _is_word

    return word.lower() if word.isalnum() or _is_word(word) else ""


@lru_cache(maxsize=1)
def _alnum_table() -> np.ndarray:
    """``str.isalnum()`` of every BMP character (uint8)."""
    return np.fromiter((chr(c).isalnum() for c in range(65536)), dtype=np.uint8, count=65536)


@lru_cache(maxsize=1)
def _lower_table() -> np.ndarray:
    """``ord(c.lower())`` of every BMP character ``c`` (uint32), 0 where Python must lowercase the
    word: ``c.lower()`` is not one character (``İ``) or depends on the context (``Σ``, final sigma)."""
    lowered = [chr(c).lower() for c in range(65536)]
    table = np.fromiter((ord(low) if len(low) == 1 else 0 for low in lowered), dtype=np.uint32, count=65536)
    table[0x03A3] = 0
    return table


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
    first use and kept on ``jt``), else None; ``num_chars`` of Python cutting are counted. Always
    None unless :func:`segmenter` is ``auto``."""
    if segmenter() != "auto":
        return None
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
