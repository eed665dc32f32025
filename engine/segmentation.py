"""jieba's precise cut in the compiled core: the words of ``jieba.Tokenizer.lcut`` (jieba 0.42.1, HMM on),
and the terms the tokenizer's ``zh`` and ``auto`` analyses make of them, many texts in one call.

:class:`CompiledJieba` holds one prefix dictionary (jieba's, with a user dictionary's words added) as
arrays (a trie in a hash table, :class:`DictionaryArrays`) and cuts whole texts with the core's
``cut_text`` and ``cut_terms`` (``engine/core/cut.c``). The words equal those of the Python replica
:func:`bm25lab.engine.tokenization._cut_precise` (tests compare them on whole bundled corpora and
generated text), which equal jieba's own. The core is part of the installation and costs nothing to
load, so the tokenizer takes it whenever it is built (:func:`compiled_cut`) and the Python replica
otherwise; it also keeps the Python cut for a jieba version it was not checked against and while
jieba's global ``finalseg.Force_Split_Words`` is not empty (a user dictionary word of frequency 0
fills it).

``cut_terms`` leaves to Python what only Python can tell (:class:`TermRules`): a word with a letter
whose lowercase depends on its context or is not one character, or a character beyond the BMP; for
``auto``, English text with letters, digits or marks beyond ASCII, and the Snowball stemming of
English words (:func:`_settle`).

The dictionary's arrays (trie, frequencies and their logarithms, jieba's HMM tables: 25 MB for
jieba's own dictionary) are cached in :func:`cache_dir` (``$BM25LAB_CACHE_DIR``, else
``$XDG_CACHE_HOME/bm25lab``, else ``~/.cache/bm25lab``) as ``jieba-compiled-<digest>.arrays``, one
file per dictionary, named after everything it is made from
(:func:`bm25lab.engine.tokenization._dictionary_source`: jieba's version, its dictionary and HMM
files, the user dictionary's text; :data:`ARRAYS_FORMAT`). A new process reads it (about 20 ms)
instead of reading jieba's dictionary into Python and building the trie (about 0.6 s). A file that
is truncated, damaged (CRC-32), of another format or source, or not a regular file, is made again
and rewritten (atomically, by renaming a new file over it), silently; deleting the files only costs
that time once.

``$BM25LAB_SEGMENTER`` (:data:`SEGMENTERS`) chooses the cut for a process and the tokenizer
workers it forks: ``auto`` (the default: the core when it is built), ``python`` (the Python
replica) or ``jieba`` (jieba's own ``Tokenizer.lcut`` / ``lcut_for_search``: the reference the
others are tested against, and the slowest). All three give the same words, so an index built under
one analyses queries identically under another; ``python`` and ``jieba`` exist to measure and check.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import stat
import sys
import tempfile
import zlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, BinaryIO, Callable

import numpy as np

from .errors import ParameterError

__all__ = ["ARRAYS_FORMAT", "CompiledJieba", "DictionaryArrays", "PackedTerms", "SEGMENTERS", "SEGMENTER_VARIABLE",
           "TermRules", "arrays_cache_path", "cache_dir", "cached_arrays", "cached_dictionary", "compiled_cut",
           "core_cut", "dictionary_arrays", "nfkc_many", "read_arrays", "segmenter", "unpack_terms", "write_arrays"]

SEGMENTER_VARIABLE = "BM25LAB_SEGMENTER"
SEGMENTERS = {
    "auto": "the compiled core's cut when it is built, else the Python replica (default)",
    "python": "the Python replica of jieba's cut (tokenization._cut_precise), never the core's",
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


def cache_dir() -> Path:
    """Per-user cache directory: ``$BM25LAB_CACHE_DIR``, else ``$XDG_CACHE_HOME/bm25lab``, else ``~/.cache/bm25lab``."""
    explicit = os.environ.get("BM25LAB_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg and os.path.isabs(os.path.expanduser(xdg)) else Path.home() / ".cache"
    return base / "bm25lab"


def core_cut() -> Any | None:
    """The compiled core when it is built with the cut (``build_trie``, ``cut_text``, ``cut_terms``), else None."""
    from .core import kernels

    core = kernels()
    return core if core is not None and hasattr(core, "cut_terms") else None


# jieba's HMM reads the Han characters U+4E00..U+9FD5 (finalseg's re_han); cut.c checks the emit table's width
HAN_FIRST, HAN_LAST = 0x4E00, 0x9FD5
_STATES = "BEMS"  # the core's state numbers are positions in this string (jieba's letters, sorted)

# bits of the core's ``classes`` table (cut.c: ALNUM, ENGLISH)
ALNUM, ENGLISH = 1, 2
# kinds of the rows of cut_terms' fixups (cut.c: TELL, STEM, ENGLISH_TEXT)
TELL, STEM, ENGLISH_TEXT = 1, 2, 3


@dataclass(frozen=True)
class TermRules:
    """What Python tells of the terms the core makes: the analysis's own rules
    (:mod:`bm25lab.engine.tokenization`). ``english`` set: ``auto`` (Han runs cut, the rest by the
    English path), else ``zh`` (whole texts cut)."""

    stopwords: frozenset[str]
    tell: Callable[[str], str]
    """A word of the cut the core leaves to Python: its term (lowercase) if it holds a letter or digit, else ""."""
    english: Callable[[str], list[str]] | None = None
    """auto: the terms of a stretch of text by the English path (stopwords dropped, stemmed when stemming)."""
    stem: Callable[[list[str]], list[str]] | None = None
    """auto with stemming: Snowball stems of English words."""


class CompiledJieba:
    """jieba's precise cut over one prefix dictionary (``freq``: word -> frequency, prefixes 0)."""

    def __init__(self, freq: dict[str, int], total: int, kernels: Any | None = None) -> None:
        self._setup(dictionary_arrays(freq, total, kernels), kernels)

    @classmethod
    def from_arrays(cls, arrays: DictionaryArrays, kernels: Any | None = None) -> "CompiledJieba":
        """The cut over a dictionary made already (:func:`dictionary_arrays`, or read from the cache)."""
        compiled = cls.__new__(cls)
        compiled._setup(arrays, kernels)
        return compiled

    def _setup(self, arrays: DictionaryArrays, kernels: Any | None) -> None:
        self._kernels = kernels or _required_core()
        self.arrays = arrays
        self._dictionary = arrays.kernel_args()
        self._stop_tries: dict[frozenset[str], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}

    def cut(self, text: str) -> list[str]:
        """``jieba.Tokenizer(...).lcut(text)`` for this dictionary."""
        codes = _codes(text)
        ends = np.empty(len(codes), np.int64)
        count = self._kernels.cut_text(codes, self._dictionary, ends)
        stops = ends[:count].tolist()
        return [text[a:b] for a, b in zip([0, *stops], stops)]

    def packed_terms(self, texts: list[str], rules: TermRules) -> tuple[str, list[int]]:
        """The terms of each of ``texts`` (NFKC already), packed: one string holding every term
        followed by a line feed, and each text's number of terms (:func:`unpack_terms` makes the lists).
        ``zh`` (``rules.english`` None): the words of :meth:`cut` that hold a letter or digit,
        lowercased, less the stopwords. ``auto``: each run of Han characters cut so, the text
        between them by the English path. One core call does it all for every text; Python only
        finishes what the core lists (:func:`_settle`)."""
        codes = _codes("".join(texts))
        size = len(codes)
        text_ends = np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)))
        out = np.empty(2 * size + 1, np.uint32)
        counts = np.empty(len(texts), np.int64)
        fixups = np.empty((size, 4), np.int64)
        tables = _unicode_tables()
        written, n_fixups = self._kernels.cut_terms(
            codes, text_ends, self._dictionary, tables["lower"], tables["classes"], self._stop_trie(rules.stopwords),
            rules.english is not None, rules.stem is not None, out, counts, fixups)
        joined = out[:written].tobytes().decode("utf-32-le", "surrogatepass")
        if n_fixups:
            return _settle(joined, counts.tolist(), fixups[:n_fixups].tolist(), rules)
        return joined, counts.tolist()

    def _stop_trie(self, stopwords: frozenset[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``stopwords`` as a trie for ``cut_terms`` (every prefix a key, whole words flagged 1), made
        once per stopword set."""
        trie = self._stop_tries.get(stopwords)
        if trie is None:
            flags: dict[str, int] = {}
            for word in stopwords:
                for i in range(1, len(word)):
                    flags.setdefault(word[:i], 0)
            flags.update(dict.fromkeys(stopwords, 1))
            flags.pop("", None)
            trie = (*_trie(self._kernels, list(flags)), np.fromiter(flags.values(), dtype=np.uint8, count=len(flags)))
            if len(self._stop_tries) >= 8:
                self._stop_tries.clear()
            self._stop_tries[stopwords] = trie
        return trie


def _required_core() -> Any:
    core = core_cut()
    if core is None:
        raise RuntimeError("the compiled core is not built: jieba's cut runs in Python (tokenization._cut_precise)")
    return core


def _codes(text: str) -> np.ndarray:
    """The code points of ``text`` (lone surrogates included) as uint32."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _key_arrays(keys: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Trie keys as the core reads them: their code points end to end, each key's start and length."""
    cps = _codes("".join(keys))
    lengths = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
    return cps, np.cumsum(lengths) - lengths, lengths


def _trie(kernels: Any, keys: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``keys`` (every prefix of a key a key) as the core's trie: a hash table of a power of two, at
    least ``2 * len(keys) + 2`` slots (slot -> key id), each key's parent key and last character."""
    table = np.empty(1 << (2 * len(keys) + 1).bit_length(), np.int64)
    parent, last = np.empty(len(keys), np.int64), np.empty(len(keys), np.int64)
    kernels.build_trie(*_key_arrays(keys), table, parent, last)
    return table, parent, last


# ---------------------------------------------------------------------------------------------
# The dictionary as arrays, and their cache on disk
# ---------------------------------------------------------------------------------------------

ARRAYS_FORMAT = 1
"""Version of the dictionary arrays' cache file: raise it when the arrays or their layout change."""
_ARRAYS_MAGIC = b"bm25lab-compiled-jieba\n"


@dataclass(frozen=True)
class DictionaryArrays:
    """One prefix dictionary and jieba's HMM as the core reads them: the trie (hash-table slots,
    each key's parent and last character), each key's frequency and its ``math.log`` (0.0 for a
    prefix), ``log(total)``, and the HMM's emission, start, transition and predecessor tables
    (:func:`_hmm_tables`)."""

    table: np.ndarray
    parent: np.ndarray
    last: np.ndarray
    freq: np.ndarray
    log_freq: np.ndarray
    emit: np.ndarray
    start_p: np.ndarray
    trans: np.ndarray
    prev: np.ndarray
    log_total: float

    def kernel_args(self) -> tuple[Any, ...]:
        """The ``dictionary`` argument of the core's ``cut_text`` and ``cut_terms``."""
        return (self.table, self.parent, self.last, self.freq, self.log_freq, self.emit, self.start_p, self.trans,
                self.prev, self.log_total)


_ARRAY_DTYPES = {"table": np.int64, "parent": np.int64, "last": np.int64, "freq": np.int64, "log_freq": np.float64,
                 "emit": np.float64, "start_p": np.float64, "trans": np.float64, "prev": np.int64}
"""The dtype of each array: the types the core takes."""


def dictionary_arrays(freq: dict[str, int], total: int, kernels: Any | None = None) -> DictionaryArrays:
    """``freq`` (word -> frequency, prefixes 0) and ``total`` as :class:`DictionaryArrays`, the trie
    built by the core's ``build_trie``; jieba's HMM from ``jieba.finalseg``. The logarithms are
    Python's ``math.log``, as the Python cut takes them."""
    table, parent, last = _trie(kernels or _required_core(), list(freq))
    log_freq = np.fromiter((math.log(count) if count else 0.0 for count in freq.values()), dtype=np.float64,
                           count=len(freq))
    emit, start_p, trans, prev = _hmm_tables()
    return DictionaryArrays(table, parent, last, np.fromiter(freq.values(), dtype=np.int64, count=len(freq)), log_freq,
                            emit, start_p, trans, prev, math.log(total))


def _hmm_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """jieba's HMM (``finalseg``) as arrays: emission log-probabilities of the Han characters
    (MIN_FLOAT where jieba has none), start and transition log-probabilities, predecessor states."""
    finalseg = sys.modules["jieba.finalseg"]
    emit = np.full((4, HAN_LAST - HAN_FIRST + 1), finalseg.MIN_FLOAT, dtype=np.float64)
    for state, table in finalseg.emit_P.items():
        row = emit[_STATES.index(state)]
        for char, logp in table.items():
            if HAN_FIRST <= ord(char) <= HAN_LAST:
                row[ord(char) - HAN_FIRST] = logp
    start = np.array([finalseg.start_P.get(s, finalseg.MIN_FLOAT) for s in _STATES], dtype=np.float64)
    trans = np.array([[finalseg.trans_P[a].get(b, finalseg.MIN_FLOAT) for b in _STATES] for a in _STATES],
                     dtype=np.float64)
    prev = np.array([[_STATES.index(p) for p in finalseg.PrevStatus[s]] for s in _STATES], dtype=np.int64)
    return emit, start, trans, prev


def arrays_cache_path(kind: str, source: dict[str, Any]) -> Path:
    """Where the arrays of ``kind`` made from ``source`` (what they depend on, e.g.
    :func:`bm25lab.engine.tokenization._dictionary_source`) are cached: :func:`cache_dir`, under a
    name that is a digest of ``source`` and :data:`ARRAYS_FORMAT`, so that other sources never read it."""
    facts = json.dumps({"format": ARRAYS_FORMAT, "kind": kind, "source": source}, sort_keys=True)
    return cache_dir() / f"{kind}-{hashlib.sha256(facts.encode('utf-8', 'surrogatepass')).hexdigest()[:24]}.arrays"


def write_atomically(path: Path, write: Callable[[BinaryIO], None]) -> None:
    """Write a file by ``write`` atomically: a new temporary file in the same folder (created, never
    opened through a symbolic link), then ``os.replace``, which replaces whatever ``path`` names (a
    symbolic link itself, not its target)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def open_regular(path: Path) -> BinaryIO:
    """``path`` opened to read, only if it is a regular file: never through a symbolic link, never
    waiting on a FIFO or device (``OSError`` otherwise)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def write_arrays(path: Path, source: dict[str, Any], arrays: dict[str, np.ndarray], scalars: dict[str, float]) -> None:
    """Write ``arrays`` and ``scalars`` made from ``source`` (:func:`write_atomically`). Layout: a
    magic line, one JSON header line (format, source, the scalars as ``float.hex``, each array's
    name, dtype and shape, payload size and CRC-32), then the arrays' bytes end to end (8-byte
    items: every array read back is aligned)."""
    parts = {name: np.ascontiguousarray(array) for name, array in arrays.items()}
    crc = 0
    for part in parts.values():
        crc = zlib.crc32(memoryview(part).cast("B"), crc)
    header = {"format": ARRAYS_FORMAT, "source": source, "scalars": {k: float(v).hex() for k, v in scalars.items()},
              "arrays": [[name, part.dtype.str, list(part.shape)] for name, part in parts.items()],
              "bytes": sum(part.nbytes for part in parts.values()), "crc32": crc}

    def write(handle: BinaryIO) -> None:
        handle.write(_ARRAYS_MAGIC + json.dumps(header).encode("utf-8", "surrogatepass") + b"\n")
        for part in parts.values():
            handle.write(memoryview(part).cast("B"))

    write_atomically(path, write)


def read_arrays(path: Path, source: dict[str, Any],
                dtypes: dict[str, type]) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """The arrays (named and typed as ``dtypes``, in its order) and scalars :func:`write_arrays` wrote
    for ``source``; ``OSError`` if the file cannot be read or is not a regular file
    (:func:`open_regular`), ``ValueError`` if it is another format, made from another source,
    truncated, overlong, damaged (CRC-32 of the payload) or holds other arrays. The payload is read
    into one aligned buffer."""
    with open_regular(path) as handle:
        if handle.readline(len(_ARRAYS_MAGIC)) != _ARRAYS_MAGIC:
            raise ValueError("not a bm25lab arrays cache")
        header = json.loads(handle.readline(1 << 16))
        if not isinstance(header, dict) or header.get("format") != ARRAYS_FORMAT or header.get("source") != source:
            raise ValueError("an arrays cache of another format or source")
        size = header["bytes"]
        if not isinstance(size, int) or size != os.fstat(handle.fileno()).st_size - handle.tell():
            raise ValueError("a truncated or overlong arrays cache")
        payload = bytearray(size)
        if handle.readinto(payload) != size:
            raise ValueError("a truncated arrays cache")
    if zlib.crc32(payload) != header["crc32"]:
        raise ValueError("a damaged arrays cache")
    if [entry[0] for entry in header["arrays"]] != list(dtypes):
        raise ValueError("an arrays cache with other arrays")
    found: dict[str, np.ndarray] = {}
    offset = 0
    for name, dtype, shape in header["arrays"]:
        expected = np.dtype(dtypes[name])
        if dtype != expected.str or not all(isinstance(n, int) and n >= 0 for n in shape):
            raise ValueError(f"an arrays cache with a bad array {name!r}")
        count = math.prod(shape)
        found[name] = np.frombuffer(payload, dtype=expected, count=count, offset=offset).reshape(shape)
        offset += count * expected.itemsize
    if offset != len(payload):
        raise ValueError("an arrays cache whose arrays do not fill it")
    return found, {name: float.fromhex(value) for name, value in header["scalars"].items()}


def cached_arrays(kind: str, source: dict[str, Any] | None, dtypes: dict[str, type],
                  make: Callable[[], tuple[dict[str, np.ndarray], dict[str, float]]],
                  check: Callable[[dict[str, np.ndarray], dict[str, float]], None] = lambda arrays, scalars: None,
                  ) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """The arrays and scalars of ``kind`` made from ``source``: read from their cache file (and
    accepted by ``check``, which raises ``ValueError`` otherwise), else made by ``make`` and written
    there for the next process. A missing, stale or damaged file is rewritten silently; an unwritable
    cache directory only costs the time of ``make``; ``source`` None: never cached."""
    if source is None:
        return make()
    path = arrays_cache_path(kind, source)
    try:
        found = read_arrays(path, source, dtypes)
        check(*found)
        return found
    except (OSError, ValueError, KeyError, TypeError, IndexError, OverflowError, MemoryError):
        pass  # json's and UTF-8's errors are ValueErrors
    made = make()
    try:
        write_arrays(path, source, *made)
    except OSError:
        pass
    return made


def cached_dictionary(source: dict[str, Any] | None, make: Callable[[], DictionaryArrays]) -> DictionaryArrays:
    """:func:`cached_arrays` of a dictionary's arrays (:class:`DictionaryArrays`) made from ``source``."""
    def made() -> tuple[dict[str, np.ndarray], dict[str, float]]:
        arrays = make()
        return {name: getattr(arrays, name) for name in _ARRAY_DTYPES}, {"log_total": arrays.log_total}

    found, scalars = cached_arrays("jieba-compiled", source, _ARRAY_DTYPES, made, _check_dictionary)
    return DictionaryArrays(**found, log_total=scalars["log_total"])


def _check_dictionary(found: dict[str, np.ndarray], scalars: dict[str, float]) -> None:
    """``ValueError`` unless the arrays fit together as a :class:`DictionaryArrays` (the core checks
    them again, and every key id it reads)."""
    keys = found["parent"].shape
    if (set(scalars) != {"log_total"} or found["table"].ndim != 1 or found["table"].shape[0] < 2 * keys[0] + 2 or
            any(found[name].shape != keys for name in ("last", "freq", "log_freq")) or
            found["start_p"].shape != (4,) or found["trans"].shape != (4, 4) or found["emit"].shape[0] != 4 or
            found["prev"].shape[0] != 4):
        raise ValueError("a compiled-dictionary cache whose arrays do not fit together")


_COMPILED: dict[str, CompiledJieba] = {}
"""This process's compiled cuts, by user dictionary text ("" for none); forked workers inherit them."""


def compiled_cut(key: str, source: Callable[[], dict[str, Any] | None],
                 dictionary: Callable[[], tuple[dict[str, int], int]]) -> CompiledJieba | None:
    """The compiled cut of the dictionary ``key`` (a user dictionary's text, "" for jieba's own),
    made once per process: its arrays read from the cache made from ``source()`` when there is one
    (:func:`cached_dictionary`), else made from ``dictionary()`` (word -> frequency, and the total)
    and cached. None when the core is not built."""
    compiled = _COMPILED.get(key)
    if compiled is not None:
        return compiled
    kernels = core_cut()
    if kernels is None:
        return None

    def make() -> DictionaryArrays:
        return dictionary_arrays(*dictionary(), kernels)

    compiled = _COMPILED[key] = CompiledJieba.from_arrays(cached_dictionary(source(), make), kernels)
    return compiled


# ---------------------------------------------------------------------------------------------
# NFKC, and the BMP tables cut_terms reads
# ---------------------------------------------------------------------------------------------

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
        table = _unicode_tables()["nfkc"]  # read or made on first need: text normalised already never needs it
        codes = _codes(text)
        mapped = np.where(codes < 65536, table[np.minimum(codes, 65535)], codes)
        replaced = mapped.tobytes().decode("utf-32-le", "surrogatepass")
        out.append(replaced if unicodedata.is_normalized("NFKC", replaced) else unicodedata.normalize("NFKC", text))
    return out


def _make_nfkc_table() -> np.ndarray:
    """Every BMP code point mapped to its NFKC form when that is one character, else to itself (0.05 s)."""
    import unicodedata

    table = np.arange(65536, dtype=np.uint32)
    for code in range(65536):
        if 0xD800 <= code <= 0xDFFF:
            continue  # lone surrogates: no normal form
        form = unicodedata.normalize("NFKC", chr(code))
        if len(form) == 1:
            table[code] = ord(form)
    return table


def _make_lower_table() -> np.ndarray:
    """``ord(c.lower())`` of every BMP character ``c`` (uint32), 0 where Python must lowercase the
    word: ``c.lower()`` is not one character (``İ``) or depends on the context (``Σ``, final sigma)."""
    lowered = [chr(c).lower() for c in range(65536)]
    table = np.fromiter((ord(low) if len(low) == 1 else 0 for low in lowered), dtype=np.uint32, count=65536)
    table[0x03A3] = 0
    return table


def _make_classes_table() -> np.ndarray:
    """Bits of every BMP character (uint8): :data:`ALNUM` where ``str.isalnum()`` (a word of the cut
    holding one is a term; the English words' ``[^\\W_]``), :data:`ENGLISH` where an English rule
    looks at it: a letter or digit, a combining mark (category M), a zero-width (non-)joiner, or a
    character ``str.lower`` changes. English text with no ENGLISH character beyond ASCII, but the
    apostrophes U+2018 and U+2019, is split by ASCII's rules (cut.c)."""
    import unicodedata

    classes = np.zeros(65536, np.uint8)
    for code in range(65536):
        char = chr(code)
        alnum = char.isalnum()
        english = (alnum or char.lower() != char or unicodedata.category(char).startswith("M")
                   or char in "\u200c\u200d")
        classes[code] = (ALNUM if alnum else 0) | (ENGLISH if english else 0)
    return classes


_UNICODE_DTYPES = {"nfkc": np.uint32, "lower": np.uint32, "classes": np.uint8}
_UNICODE_TABLES = 2  # the version of the tables' set (1: nfkc, lower, alnum)


@lru_cache(maxsize=1)
def _unicode_tables() -> dict[str, np.ndarray]:
    """The BMP tables of :func:`_make_nfkc_table`, :func:`_make_lower_table` and
    :func:`_make_classes_table` (0.2-0.3 s to compute), cached on disk per Python and Unicode version
    (:func:`cached_arrays`)."""
    import unicodedata

    source = {"python": sys.version.split()[0], "unicode": unicodedata.unidata_version, "byteorder": sys.byteorder,
              "tables": _UNICODE_TABLES}

    def make() -> tuple[dict[str, np.ndarray], dict[str, float]]:
        return {"nfkc": _make_nfkc_table(), "lower": _make_lower_table(), "classes": _make_classes_table()}, {}

    def check(found: dict[str, np.ndarray], scalars: dict[str, float]) -> None:
        if scalars or any(table.shape != (65536,) for table in found.values()):
            raise ValueError("a Unicode tables cache of other shapes")

    return cached_arrays("unicode-tables", source, _UNICODE_DTYPES, make, check)[0]


# ---------------------------------------------------------------------------------------------
# Packed terms
# ---------------------------------------------------------------------------------------------

def _settle(joined: str, counts: list[int], fixups: list[list[int]], rules: TermRules) -> tuple[str, list[int]]:
    """The core's packed terms with its ``fixups`` (rows of kind, text, start, end over ``joined``, in
    order) finished by ``rules``: a word to tell (TELL) lowercased, or dropped when it holds no letter
    or digit or is a stopword; an English word (STEM) stemmed; English text (ENGLISH_TEXT, written as
    it is, with no line feed after it) replaced by its terms. Each text's count follows."""
    stems = iter(rules.stem([joined[a:b] for kind, _, a, b in fixups if kind == STEM])) if rules.stem else iter(())
    parts: list[str] = []
    done = 0
    for kind, text, start, end in fixups:
        parts.append(joined[done:start])
        done = end
        if kind == TELL:
            term = rules.tell(joined[start:end])
            if term and term not in rules.stopwords:
                parts.append(term)
            else:
                counts[text] -= 1
                done = end + 1  # its line feed too
        elif kind == STEM:
            parts.append(next(stems))
        else:
            assert kind == ENGLISH_TEXT and rules.english is not None, kind
            terms = rules.english(joined[start:end])
            counts[text] += len(terms)
            parts.extend(term + "\n" for term in terms)
    parts.append(joined[done:])
    return "".join(parts), counts


def unpack_terms(joined: str, counts: list[int]) -> list[list[str]]:
    """The lists of terms that :meth:`CompiledJieba.packed_terms` packed."""
    terms = joined.split("\n")
    if len(terms) != sum(counts) + 1:  # a term holding a line feed: impossible (see cut.c)
        raise RuntimeError(f"packed terms do not match their counts ({len(terms) - 1} != {sum(counts)})")
    lists = []
    start = 0
    for count in counts:
        lists.append(terms[start:start + count])
        start += count
    return lists


@dataclass(frozen=True)
class PackedTerms:
    """Consecutive documents' terms as :meth:`CompiledJieba.packed_terms` packs them: every term
    followed by a line feed (no term holds one), in one string, and each document's count. The index builder takes them
    as they are (:meth:`~bm25lab.engine.postings.PostingsBuilder.add_packed`: no string per term);
    :meth:`lists` makes the lists (:func:`unpack_terms`)."""

    joined: str
    counts: list[int]

    def __len__(self) -> int:
        return len(self.counts)

    def lists(self) -> list[list[str]]:
        """Each document's terms."""
        return unpack_terms(self.joined, self.counts)

    def terms(self) -> list[str]:
        """Every document's terms, one after the other."""
        return self.joined.split("\n")[:-1]

    def spaced(self) -> str:
        """The terms joined by spaces."""
        return self.joined[:-1].replace("\n", " ")
