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

The compiled dictionary (trie, frequencies and their logarithms, jieba's HMM tables: 25 MB for
jieba's own dictionary) is cached in ``cache_dir()`` (``$BM25LAB_CACHE_DIR``, else
``~/.cache/bm25lab``) as ``jieba-compiled-<digest>.arrays``, one file per dictionary, named after
everything it is made from (:func:`bm25lab.engine.tokenization._dictionary_source`: jieba's version,
its dictionary and HMM files, the user dictionary's text; :data:`ARRAYS_FORMAT`). A new process
reads it (about 20 ms) instead of reading jieba's dictionary and building the trie (about 0.5 s).
A file that is truncated, damaged (CRC-32), of another format or source is made again and
rewritten, silently; deleting the files only costs that time once.

``$BM25LAB_SEGMENTER`` (:data:`SEGMENTERS`) chooses the cut for a process and the tokenizer
workers it forks: ``auto`` (the default, as above), ``python`` (the Python replica, never numba) or
``jieba`` (jieba's own ``Tokenizer.lcut`` / ``lcut_for_search``: the reference the others are
tested against, and the slowest). All three give the same words, so an index built under one
analyses queries identically under another; ``jieba`` exists to measure and check that.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import tempfile
import zlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .errors import ParameterError

__all__ = ["ARRAYS_FORMAT", "CompiledJieba", "DictionaryArrays", "SEGMENTERS", "SEGMENTER_VARIABLE", "arrays_cache_path",
           "PackedTerms", "cached_arrays", "cached_dictionary", "compiled_of", "dictionary_arrays", "nfkc_many", "read_arrays", "segmenter", "unpack_terms",
           "write_arrays"]

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
        self._setup(dictionary_arrays(freq, total, kernels), kernels)

    @classmethod
    def from_arrays(cls, arrays: DictionaryArrays, kernels: Any | None = None) -> "CompiledJieba":
        """The cut over a dictionary made already (:func:`dictionary_arrays`, or read from the cache)."""
        compiled = cls.__new__(cls)
        compiled._setup(arrays, kernels)
        return compiled

    def _setup(self, arrays: DictionaryArrays, kernels: Any | None) -> None:
        from .backends import numba_backend

        self._kernels = kernels or numba_backend.segment_kernels()
        self.arrays = arrays
        self._table, self._parent, self._last = arrays.table, arrays.parent, arrays.last
        self._freq, self._log_freq, self._log_total = arrays.freq, arrays.log_freq, arrays.log_total
        self._emit, self._start_p, self._trans, self._prev = arrays.emit, arrays.start_p, arrays.trans, arrays.prev
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


# ---------------------------------------------------------------------------------------------
# The compiled dictionary as arrays, and their cache on disk
# ---------------------------------------------------------------------------------------------

ARRAYS_FORMAT = 1
"""Version of the compiled dictionary's cache file: raise it when the arrays or their layout change."""
_ARRAYS_MAGIC = b"bm25lab-compiled-jieba\n"


@dataclass(frozen=True)
class DictionaryArrays:
    """One prefix dictionary and jieba's HMM as the kernels read them: the trie (hash-table slots,
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


_ARRAY_DTYPES = {"table": np.int64, "parent": np.int64, "last": np.int64, "freq": np.int64, "log_freq": np.float64,
                 "emit": np.float64, "start_p": np.float64, "trans": np.float64, "prev": np.int64}
"""The dtype of each array: the types the kernels were compiled for (another one would compile them anew)."""


def dictionary_arrays(freq: dict[str, int], total: int, kernels: Any | None = None) -> DictionaryArrays:
    """``freq`` (word -> frequency, prefixes 0) and ``total`` as :class:`DictionaryArrays`, the trie
    built by the ``build_trie`` kernel; jieba's HMM from ``jieba.finalseg``."""
    if kernels is None:
        from .backends import numba_backend

        kernels = numba_backend.segment_kernels()
    keys = list(freq)
    cps, starts, lengths = _key_arrays(keys)
    table, parent, last = kernels.build_trie(cps, starts, lengths)
    log_freq = np.fromiter((math.log(count) if count else 0.0 for count in freq.values()), dtype=np.float64,
                           count=len(keys))
    emit, start_p, trans, prev = _hmm_tables(kernels)
    return DictionaryArrays(table, parent, last, np.fromiter(freq.values(), dtype=np.int64, count=len(keys)), log_freq,
                            emit, start_p, trans, prev, math.log(total))


def arrays_cache_path(kind: str, source: dict[str, Any]) -> Path:
    """Where the arrays of ``kind`` made from ``source`` (what they depend on, e.g.
    :func:`bm25lab.engine.tokenization._dictionary_source`) are cached: ``cache_dir()``, under a name
    that is a digest of ``source`` and :data:`ARRAYS_FORMAT`, so that other sources never read it."""
    from .tokenization import cache_dir

    facts = json.dumps({"format": ARRAYS_FORMAT, "kind": kind, "source": source}, sort_keys=True)
    return cache_dir() / f"{kind}-{hashlib.sha256(facts.encode('utf-8', 'surrogatepass')).hexdigest()[:24]}.arrays"


def write_arrays(path: Path, source: dict[str, Any], arrays: dict[str, np.ndarray], scalars: dict[str, float]) -> None:
    """Write ``arrays`` and ``scalars`` made from ``source`` atomically (a temporary file in the same
    folder, then ``os.replace``). Layout: a magic line, one JSON header line (format, source, the
    scalars as ``float.hex``, each array's name, dtype and shape, payload size and CRC-32), then the
    arrays' bytes end to end (8-byte items: every array read back is aligned)."""
    parts = {name: np.ascontiguousarray(array) for name, array in arrays.items()}
    crc = 0
    for part in parts.values():
        crc = zlib.crc32(memoryview(part).cast("B"), crc)
    header = {"format": ARRAYS_FORMAT, "source": source, "scalars": {k: float(v).hex() for k, v in scalars.items()},
              "arrays": [[name, part.dtype.str, list(part.shape)] for name, part in parts.items()],
              "bytes": sum(part.nbytes for part in parts.values()), "crc32": crc}
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(_ARRAYS_MAGIC + json.dumps(header).encode("utf-8", "surrogatepass") + b"\n")
            for part in parts.values():
                handle.write(memoryview(part).cast("B"))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_arrays(path: Path, source: dict[str, Any],
                dtypes: dict[str, type]) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """The arrays (named and typed as ``dtypes``, in its order) and scalars :func:`write_arrays` wrote
    for ``source``; ``OSError`` if the file cannot be read, ``ValueError`` if it is another format,
    made from another source, truncated, overlong, damaged (CRC-32 of the payload) or holds other
    arrays.

    The payload is read into one writable, aligned buffer (not ``np.load(mmap_mode="r")``): numba
    types a read-only array differently and would compile the kernels anew for it."""
    with open(path, "rb") as handle:
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
    """:func:`cached_arrays` of a compiled dictionary (:class:`DictionaryArrays`) made from ``source``."""
    def made() -> tuple[dict[str, np.ndarray], dict[str, float]]:
        arrays = make()
        return {name: getattr(arrays, name) for name in _ARRAY_DTYPES}, {"log_total": arrays.log_total}

    found, scalars = cached_arrays("jieba-compiled", source, _ARRAY_DTYPES, made, _check_dictionary)
    return DictionaryArrays(**found, log_total=scalars["log_total"])


def _check_dictionary(found: dict[str, np.ndarray], scalars: dict[str, float]) -> None:
    """``ValueError`` unless the arrays fit together as a :class:`DictionaryArrays`."""
    keys = found["parent"].shape
    if (set(scalars) != {"log_total"} or found["table"].ndim != 1 or found["table"].shape[0] < 2 * keys[0] + 2 or
            any(found[name].shape != keys for name in ("last", "freq", "log_freq")) or
            found["start_p"].shape != (4,) or found["trans"].shape != (4, 4) or found["emit"].shape[0] != 4 or
            found["prev"].shape[0] != 4):
        raise ValueError("a compiled-dictionary cache whose arrays do not fit together")


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
        table = _nfkc_table()  # read or made on first need: text normalised already never needs it
        codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        mapped = np.where(codes < 65536, table[np.minimum(codes, 65535)], codes)
        replaced = mapped.tobytes().decode("utf-32-le", "surrogatepass")
        out.append(replaced if unicodedata.is_normalized("NFKC", replaced) else unicodedata.normalize("NFKC", text))
    return out


def _nfkc_table() -> np.ndarray:
    """Every BMP code point mapped to its NFKC form when that is one character, else to itself."""
    return _unicode_tables()["nfkc"]


def _make_nfkc_table() -> np.ndarray:
    """:func:`_nfkc_table`, computed (0.05 s)."""
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


def _alnum_table() -> np.ndarray:
    """``str.isalnum()`` of every BMP character (uint8)."""
    return _unicode_tables()["alnum"]


def _make_alnum_table() -> np.ndarray:
    return np.fromiter((chr(c).isalnum() for c in range(65536)), dtype=np.uint8, count=65536)


def _lower_table() -> np.ndarray:
    """``ord(c.lower())`` of every BMP character ``c`` (uint32), 0 where Python must lowercase the
    word: ``c.lower()`` is not one character (``İ``) or depends on the context (``Σ``, final sigma)."""
    return _unicode_tables()["lower"]


def _make_lower_table() -> np.ndarray:
    lowered = [chr(c).lower() for c in range(65536)]
    table = np.fromiter((ord(low) if len(low) == 1 else 0 for low in lowered), dtype=np.uint32, count=65536)
    table[0x03A3] = 0
    return table


_UNICODE_DTYPES = {"nfkc": np.uint32, "lower": np.uint32, "alnum": np.uint8}


@lru_cache(maxsize=1)
def _unicode_tables() -> dict[str, np.ndarray]:
    """The BMP tables of :func:`_nfkc_table`, :func:`_lower_table` and :func:`_alnum_table` (0.1-0.2 s
    to compute), cached on disk per Python and Unicode version (:func:`cached_arrays`)."""
    import unicodedata

    source = {"python": sys.version.split()[0], "unicode": unicodedata.unidata_version, "byteorder": sys.byteorder}

    def make() -> tuple[dict[str, np.ndarray], dict[str, float]]:
        return {"nfkc": _make_nfkc_table(), "lower": _make_lower_table(), "alnum": _make_alnum_table()}, {}

    def check(found: dict[str, np.ndarray], scalars: dict[str, float]) -> None:
        if scalars or any(table.shape != (65536,) for table in found.values()):
            raise ValueError("a Unicode tables cache of other shapes")

    return cached_arrays("unicode-tables", source, _UNICODE_DTYPES, make, check)[0]


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


def compiled_of(user_dict: str | None, num_chars: int) -> CompiledJieba | None:
    """The compiled cut of jieba's dictionary with ``user_dict``'s words added (the text of a user
    dictionary) when it may be used and pays for itself now, else None; ``num_chars`` of Python
    cutting are counted. Made once per process and dictionary, from its cache on disk when there is
    one (:func:`cached_arrays`: jieba's dictionary is then never read into Python). Always None
    unless :func:`segmenter` is ``auto``."""
    if segmenter() != "auto":
        return None
    from .tokenization import _dictionary_source, _import_jieba, _jieba_tokenizer

    if user_dict:
        _jieba_tokenizer(user_dict)  # its words of frequency 0 reach jieba's global Force_Split_Words first
    jieba_module = _import_jieba()
    compiled = _COMPILED.get(user_dict or "")
    if compiled is not None:
        return compiled if _usable() else None
    if not _usable():
        return None
    from .backends import numba_backend

    _WORK[0] += num_chars
    loaded = numba_backend.SEGMENT_KERNELS in sys.modules
    if not (loaded or numba_backend.worth_loading(_WORK[0] * PYTHON_SECONDS_PER_CHAR)):
        return None
    kernels = numba_backend.segment_kernels()

    def make() -> DictionaryArrays:
        jt = _jieba_tokenizer(user_dict)
        return dictionary_arrays(jt.FREQ, jt.total, kernels)

    arrays = cached_dictionary(_dictionary_source(jieba_module, user_dict), make)
    compiled = _COMPILED[user_dict or ""] = CompiledJieba.from_arrays(arrays, kernels)
    return compiled


_COMPILED: dict[str, CompiledJieba] = {}
"""This process's compiled cuts, by user dictionary text ("" for none); forked workers inherit them."""
_WORK = [0]  # characters this process has cut in Python so far (what the compiled cut would have saved)


def _usable() -> bool:
    jieba_module = sys.modules["jieba"]
    from .backends import numba_backend

    return (jieba_module.__version__ in CHECKED_JIEBA_VERSIONS and numba_backend.available()
            and not sys.modules["jieba.finalseg"].Force_Split_Words)
