"""Text analysis: turning a string into the list of terms the index stores and queries look up.

Every language runs the same chain; only the segmentation step differs (registry ``LANGUAGES``):

1. Unicode NFKC normalisation (full-width letters, digits and punctuation become their ASCII forms,
   compatibility ideographs become unified ones, ``①`` becomes ``1``).
2. Segmentation into words:

   - ``en``: Unicode word splitting. A word is a maximal run of letters and digits (``str.isalnum``)
     that may carry combining marks, zero-width (non-)joiners, and single apostrophes between
     letters (``don't``, ``o'neil``); everything else (punctuation, symbols, emoji, ``_``,
     whitespace) separates words. Words are lowercased and a trailing possessive ``'s`` is dropped.
   - ``zh``: jieba over the whole text, precise mode (``mode="default"``) or ``cut_for_search``
     (``mode="search"``), with an optional user dictionary; words are lowercased.
   - ``auto`` (default): each run of Han characters (``_HAN_RANGES``: U+3400-4DBF, U+4E00-9FFF,
     U+F900-FAFF, U+20000-3134F) goes through jieba on its own as in ``zh``, everything between the
     runs through the ``en`` path (stemmed, stopwords of both lists), so ``"iPhone 15 价格"`` gives
     ``["iphon", "15", "价格"]``. On text without Han characters it equals ``en`` exactly and never
     imports jieba. The core makes these terms for whole texts at once (``engine/core/cut.c``);
     :func:`_auto_terms` is their definition.
   - a Snowball language by its code (``fr``, ``de``, ``ru``, ``ar``, ... :data:`SNOWBALL_LANGUAGES`):
     the ``en`` path with the language's stopword list and stemmer.
   - ``ja``, ``ko``: runs of CJK characters (Han, kana, Hangul) become overlapping character bigrams
     (``"東京都"``: ``["東京", "京都"]``; a character alone stays a unigram), as Lucene's CJK analyser
     does; everything between them goes through the ``en`` path.
   - ``whitespace``: already-segmented text, split on whitespace only, case kept.

   Where ``auto``'s terms differ from ``zh``'s, exactly: ``zh`` gives jieba the whole text, whose
   blocks (``re_han_default``) hold ASCII letters, digits and ``+#&._%-`` as well as the Han
   characters U+4E00-9FD5; ``auto`` gives jieba each Han run alone. On a Han run that touches none of
   those ASCII characters both give the same terms. They differ (a) where Han characters meet them:
   ``zh`` cuts them together, so a dictionary word such as ``B超`` or ``T恤`` is one term and the cut of
   the Han characters next to them may change (``"做B超"``: ``zh`` ``["做", "b超"]``, ``auto`` ``["做",
   "b", "超"]``); (b) on all text outside the Han runs: ``zh`` keeps jieba's pieces (runs of ASCII
   letters and digits as jieba's HMM splits them, so ``3.14%``, ``python3.8`` and ``c++`` are terms;
   every other character a piece of its own, so ``Ünïcödé`` gives seven terms) and the Chinese
   stopword list only; ``auto`` applies the English rules (Unicode words, a trailing ``'s`` dropped,
   English and Chinese stopwords, Snowball stemming: ``3``, ``14``, ``python3``, ``8``, ``ünïcödé``,
   ``running`` -> ``run``). Why: ``auto`` is for mixed text, whose Latin-script words should match an
   English query as English words do (stems, stopwords), which jieba does not give them; the price is
   the few dictionary words that mix Han and Latin characters. (``tests/engine/test_tokenization_auto.py``
   holds these examples.)

3. Words with no letter or digit are dropped: punctuation and whitespace never become terms.
4. Stopword removal (exact match against the normalised list).
5. Optional Snowball stemming (PyStemmer) of the words that came through the word path, by the
   language's algorithm (English for ``en``, ``auto``, ``ja`` and ``ko``).

The whole configuration, including the stopword list and the user dictionary's text, is returned by
``Tokenizer.config()`` and restored by ``Tokenizer.from_config()``, so an index can analyse its
queries exactly as it analysed its documents.

jieba is imported lazily. Its prefix dictionary is built once per user and cached in
``cache_dir()`` (``$BM25LAB_CACHE_DIR``, else ``$XDG_CACHE_HOME/bm25lab``, else ``~/.cache/bm25lab``)
in a plain binary format that loads about four times faster than jieba's own marshal cache. jieba's
``initialize()`` is never called, so its "Building prefix dict" log lines are never emitted, and the
global ``jieba.dt`` tokenizer is never touched. jieba's precise cut is re-implemented here
(``_cut_precise``) with output identical to ``jieba.Tokenizer.lcut`` (tested against it on real
and random text) at about twice its speed, and in the compiled core (``engine/core/cut.c``, through
:mod:`bm25lab.engine.segmentation`), which takes it whenever the core is built; other jieba versions
fall back to jieba's own ``cut``. ``$BM25LAB_SEGMENTER=jieba`` makes a process use jieba's own cut
throughout, ``python`` the replica (:data:`bm25lab.engine.segmentation.SEGMENTERS`).
"""
from __future__ import annotations

import array
import hashlib
import json
import os
import re
import string
import sys
import unicodedata
from collections import deque
from dataclasses import dataclass
from functools import lru_cache, partial
from itertools import islice
from math import log
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from .errors import IndexFormatError, InputError, ParameterError
from .segmentation import (CompiledJieba, PackedTerms, TermRules, cache_dir, compiled_cut, core_cut, nfkc_many,
                           open_regular, segmenter, unpack_terms, write_atomically)

if TYPE_CHECKING:  # pragma: no cover - typing only
    import jieba

__all__ = ["ANALYSIS_VERSION", "Tokenizer", "cache_dir", "LANGUAGES", "MODES", "SNOWBALL_LANGUAGES"]

ANALYSIS_VERSION = 1
"""Version of the analysis chain. Bump it whenever any step changes the terms it produces."""

DEFAULT_STEM = True
"""Snowball stemming on by default for English: measured on Cranfield and CISI (engine/data/PROVENANCE.md)."""

_DATA_DIR = Path(__file__).resolve().parent / "data"

# ---------------------------------------------------------------------------------------------
# Character classes
# ---------------------------------------------------------------------------------------------

_HAN_RANGES = (
    "\u3400-\u4dbf"  # CJK Unified Ideographs Extension A
    "\u4e00-\u9fff"  # CJK Unified Ideographs
    "\uf900-\ufaff"  # CJK Compatibility Ideographs (NFKC maps most to unified ones)
    "\U00020000-\U0003134f"  # Extensions B-G
)
_HAN_RUN = re.compile(f"([{_HAN_RANGES}]+)")
_HAS_HAN = re.compile(f"[{_HAN_RANGES}]")
_CJK_RANGES = (
    _HAN_RANGES
    + "\u3040-\u309f"  # Hiragana
    + "\u30a0-\u30ff\u31f0-\u31ff"  # Katakana (ー included) and its phonetic extensions
    + "\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\ud7b0-\ud7ff"  # Hangul Jamo, compatibility Jamo, extensions
    + "\uac00-\ud7af"  # Hangul syllables
)
_CJK_RUN = re.compile(f"([{_CJK_RANGES}]+)")
_HAS_CJK = re.compile(f"[{_CJK_RANGES}]")
_HAS_WORD_CHAR = re.compile(r"[^\W_]")
_WORD_RUN = re.compile(r"[^\W_]+")
_NOT_WORD_OR_SPACE = re.compile(r"[^\w\s]|_")  # a character that is neither a letter or digit nor whitespace
_ASCII_WORD_OR_SPACE = (string.ascii_letters + string.digits + " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f").encode()


def _only_words_and_spaces(text: str) -> bool:
    """Whether ``text`` holds only letters, digits and whitespace (``str.isalnum``, ``str.isspace``):
    ASCII text is checked by deleting those bytes (C speed), other text by a regular expression."""
    if text.isascii():
        return not text.encode("ascii").translate(None, _ASCII_WORD_OR_SPACE)
    return _NOT_WORD_OR_SPACE.search(text) is None
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'"})


@lru_cache(maxsize=1)
def _word_pattern() -> re.Pattern[str]:
    """The ``en`` word pattern: alnum start, then alnum, combining marks, ZWNJ/ZWJ, or ``'`` + alnum.

    Combining marks (categories Mn, Mc, Me) are collected from the Basic Multilingual Plane once per
    process (about 25 ms); without them Devanagari or vocalised Arabic words would fall apart.
    """
    marks: list[str] = []
    start = prev = None
    for code in range(0x10000):
        if unicodedata.category(chr(code))[0] == "M":
            if start is None:
                start = code
            elif code != prev + 1:
                marks.append(_char_range(start, prev))
                start = code
            prev = code
    if start is not None:
        marks.append(_char_range(start, prev))
    joiners = "\u200c\u200d"
    return re.compile(rf"[^\W_](?:[^\W_]|[{''.join(marks)}{joiners}]|'(?=[^\W_]))*")


_ASCII_WORD = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z0-9]+)*")
"""``_word_pattern()`` restricted to ASCII text, where it finds exactly the same words (no marks exist there).

English queries are nearly always ASCII, so a cold search never pays for building the full pattern."""


def _char_range(first: int, last: int) -> str:
    return re.escape(chr(first)) if first == last else f"{re.escape(chr(first))}-{re.escape(chr(last))}"


def _is_word(token: str) -> bool:
    """True if ``token`` holds at least one letter or digit (so it may become a term)."""
    return _HAS_WORD_CHAR.search(token) is not None


# ---------------------------------------------------------------------------------------------
# Per-process lazy state: stemmer and jieba tokenizers (never pickled, inherited by forked workers)
# ---------------------------------------------------------------------------------------------

_STEMMERS: dict[str, Any] = {}
_JIEBA: dict[str, "jieba.Tokenizer"] = {}
_JIEBA_BASE: list[tuple[dict[str, int], int]] = []


def _stemmer(algorithm: str) -> Any:
    """The process's PyStemmer instance for ``algorithm`` (imported on first use)."""
    stemmer = _STEMMERS.get(algorithm)
    if stemmer is None:
        import Stemmer

        stemmer = _STEMMERS[algorithm] = Stemmer.Stemmer(algorithm)
    return stemmer


def _import_jieba() -> Any:
    """Import jieba quietly and without ``pkg_resources``.

    jieba's module source triggers invalid-escape and ``pkg_resources`` deprecation warnings, which
    are silenced for the import only. jieba uses ``pkg_resources`` just to open its data files and
    falls back to plain ``open`` when the import fails; blocking it for the duration of the import
    saves ``pkg_resources``' import time (most of jieba's). Nothing changes if it is already loaded.
    """
    if "jieba" in sys.modules:
        return sys.modules["jieba"]
    import warnings

    blocked = "pkg_resources" not in sys.modules
    if blocked:
        sys.modules["pkg_resources"] = None  # type: ignore[assignment]  # makes its import raise ImportError
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import jieba
    finally:
        if blocked and sys.modules.get("pkg_resources", 0) is None:
            del sys.modules["pkg_resources"]
    return jieba


_FREQ_MAGIC = b"bm25lab-jieba-prefix-dict\n"


def _freq_cache_path(jieba_module: Any, dict_path: Path) -> Path:
    digest = hashlib.sha1(str(dict_path).encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return cache_dir() / f"jieba-{jieba_module.__version__}-{digest}.prefix-dict"


def _read_freq_cache(path: Path, stamp: dict[str, Any]) -> tuple[dict[str, int], int]:
    """Read a prefix-dictionary cache; ``ValueError`` or ``OSError`` if absent, stale or damaged.

    Layout: magic line, one JSON header line (source stamp, total, count, byte sizes), ``count``
    little-endian int64 frequencies, then the ``count`` words as UTF-8 joined by ``\\n``.
    """
    with open_regular(path) as handle:
        if handle.readline() != _FREQ_MAGIC:
            raise ValueError("not a prefix-dict cache")
        header = json.loads(handle.readline())
        if not isinstance(header, dict) or header.get("source") != stamp:
            raise ValueError("stale prefix-dict cache")
        freqs = array.array("q")
        freqs.frombytes(handle.read(8 * header["count"]))
        words = handle.read(header["words_bytes"]).decode("utf-8").split("\n")
    if len(freqs) != header["count"] or len(words) != header["count"]:
        raise ValueError("truncated prefix-dict cache")
    if sys.byteorder != "little":
        freqs.byteswap()
    return dict(zip(words, freqs.tolist())), int(header["total"])


def _write_freq_cache(path: Path, stamp: dict[str, Any], freq: dict[str, int], total: int) -> None:
    """Write the cache atomically (:func:`~bm25lab.engine.segmentation.write_atomically`)."""
    words = "\n".join(freq).encode("utf-8")
    freqs = array.array("q", freq.values())
    if sys.byteorder != "little":
        freqs.byteswap()
    header = {"source": stamp, "total": total, "count": len(freq), "words_bytes": len(words)}

    def write(handle: Any) -> None:
        handle.write(_FREQ_MAGIC + json.dumps(header).encode("ascii") + b"\n")
        handle.write(freqs.tobytes())
        handle.write(words)

    write_atomically(path, write)


def _dictionary_file(jieba_module: Any) -> tuple[Path, dict[str, Any]]:
    """jieba's default dictionary file and its stamp (jieba's version, the file's size and mtime)."""
    dict_path = Path(jieba_module.__file__).resolve().parent / jieba_module.DEFAULT_DICT_NAME
    info = dict_path.stat()
    return dict_path, {"jieba": jieba_module.__version__, "size": info.st_size, "mtime_ns": info.st_mtime_ns}


def _base_prefix_dict() -> tuple[dict[str, int], int]:
    """jieba's default prefix dictionary (word -> frequency, 0 for prefixes) and its total, cached."""
    if _JIEBA_BASE:
        return _JIEBA_BASE[0]
    jieba_module = _import_jieba()
    dict_path, stamp = _dictionary_file(jieba_module)
    path = _freq_cache_path(jieba_module, dict_path)
    try:
        loaded = _read_freq_cache(path, stamp)
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
        with open(dict_path, "rb") as handle:
            loaded = jieba_module.Tokenizer.gen_pfdict(handle)
        try:
            _write_freq_cache(path, stamp, *loaded)
        except OSError:
            pass  # an unwritable cache directory only costs speed
    _JIEBA_BASE.append(loaded)
    return loaded


def _dictionary_source(jieba_module: Any, user_dict: str | None) -> dict[str, Any]:
    """Everything a private jieba tokenizer's dictionary and HMM are made from, the key of its compiled
    form's cache (:func:`bm25lab.engine.segmentation.cached_arrays`): jieba's version and folder, its
    dictionary file's and HMM tables' sizes and mtimes, the SHA-256 of the user dictionary's text,
    the machine's byte order."""
    dict_path, stamp = _dictionary_file(jieba_module)
    hmm = [dict_path.parent / "finalseg" / f"prob_{name}.py" for name in ("start", "trans", "emit")]
    user = hashlib.sha256((user_dict or "").encode("utf-8", "surrogatepass")).hexdigest() if user_dict else None
    return {"jieba": jieba_module.__version__, "folder": str(dict_path.parent),
            "dictionary": {"size": stamp["size"], "mtime_ns": stamp["mtime_ns"]},
            "hmm": [[p.name, p.stat().st_size, p.stat().st_mtime_ns] if p.exists() else [p.name] for p in hmm],
            "user_dict_sha256": user, "byteorder": sys.byteorder}


def _jieba_tokenizer(user_dict: str | None) -> "jieba.Tokenizer":
    """A private ``jieba.Tokenizer`` (one per user dictionary per process), ready without logging;
    ``_bm25lab_user_dict`` on it is the user dictionary's text its words come from (the key of its
    compiled cut, :func:`_compiled`)."""
    key = user_dict or ""
    tokenizer = _JIEBA.get(key)
    if tokenizer is not None:
        return tokenizer
    jieba_module = _import_jieba()
    freq, total = _base_prefix_dict()
    tokenizer = jieba_module.Tokenizer()
    tokenizer.tmp_dir = str(cache_dir())  # only used if jieba ever initialises itself
    tokenizer.cache_file = f"jieba-{jieba_module.__version__}.marshal.cache"
    tokenizer.FREQ = dict(freq) if user_dict else freq  # add_word mutates FREQ: copy before adding words
    tokenizer.total = total
    tokenizer.initialized = True
    for word, count, tag in _parse_user_dict(user_dict or ""):
        tokenizer.add_word(word, count, tag)
    tokenizer._bm25lab_user_dict = user_dict
    _JIEBA[key] = tokenizer
    return tokenizer


# ---------------------------------------------------------------------------------------------
# jieba segmentation: jieba 0.42.1's precise cut, re-implemented for speed with identical output
# ---------------------------------------------------------------------------------------------

_FAST_CUT_JIEBA_VERSIONS = frozenset({"0.42.1"})
"""jieba versions whose ``Tokenizer.cut(HMM=True)`` ``_cut_precise`` and the core's cut reproduce exactly
(tested on real text)."""


def _compiled(user_dict: str | None) -> CompiledJieba | None:
    """The compiled core's cut of jieba's dictionary with ``user_dict``'s words added (the text of a
    user dictionary) when this process may take it: ``$BM25LAB_SEGMENTER`` is ``auto``, the core is
    built, jieba's version is one it was checked against and jieba's global ``Force_Split_Words`` is
    empty. Made once per process and dictionary, from its cache on disk when there is one
    (:func:`~bm25lab.engine.segmentation.compiled_cut`: jieba's dictionary is then never read into Python)."""
    if segmenter() != "auto" or core_cut() is None:
        return None
    if user_dict:
        _jieba_tokenizer(user_dict)  # its words of frequency 0 reach jieba's global Force_Split_Words first
    jieba_module = _import_jieba()
    if jieba_module.__version__ not in _FAST_CUT_JIEBA_VERSIONS or sys.modules["jieba.finalseg"].Force_Split_Words:
        return None

    def dictionary() -> tuple[dict[str, int], int]:
        jt = _jieba_tokenizer(user_dict)
        return jt.FREQ, jt.total

    return compiled_cut(user_dict or "", lambda: _dictionary_source(jieba_module, user_dict), dictionary)


def _cut_precise(jt: "jieba.Tokenizer", text: str) -> list[str]:
    """jieba's precise mode with HMM: ``jt.lcut(text)``, about twice as fast.

    Same steps as jieba 0.42.1 ``Tokenizer.cut``: the text is split into blocks by jieba's
    ``re_han_default``; a block of other characters yields its whitespace runs and single characters;
    a Han block is segmented on the word graph of the prefix dictionary, choosing from the end the
    route of maximal log-probability

        route(i) = max over words w = s[i..x] of (log f(w) - log total + route(x + 1), x)

    (ties to the larger ``x``, as jieba's tuple ``max``), then runs of single characters that are not a
    dictionary word go through jieba's HMM (``finalseg.cut``). The speed comes from building the
    route in one backward pass over flat lists instead of jieba's DAG dict and generator ``max``.
    When the compiled core is built, its cut (:mod:`bm25lab.engine.segmentation`, ``engine/core/cut.c``)
    takes the text instead (the same words, many times faster): this function is its specification.
    """
    jieba_module = sys.modules["jieba"]
    if jieba_module.__version__ not in _FAST_CUT_JIEBA_VERSIONS or segmenter() == "jieba":
        return jt.lcut(text)
    compiled = _compiled(jt._bm25lab_user_dict) if hasattr(jt, "_bm25lab_user_dict") else None
    if compiled is not None:
        return compiled.cut(text)
    re_han, re_skip = jieba_module.re_han_default, jieba_module.re_skip_default
    words: list[str] = []
    for block in re_han.split(text):
        if not block:
            continue
        if re_han.match(block):
            _cut_han_block(jt, block, words)
        else:
            for piece in re_skip.split(block):
                if re_skip.match(piece):
                    words.append(piece)
                else:
                    words.extend(piece)
    return words


def _best_route(freq: dict[str, int], total: int, sentence: str) -> list[int]:
    """``end[i]``: the last index of the word starting at ``i`` on the most probable route."""
    size = len(sentence)
    log_total = log(total)
    value = [0.0] * (size + 1)
    end = [0] * (size + 1)
    for start in range(size - 1, -1, -1):
        best_value, best_end, found = 0.0, start, False
        stop = start
        fragment = sentence[start]
        while (count := freq.get(fragment)) is not None:
            if count:
                candidate = log(count) - log_total + value[stop + 1]
                if not found or candidate > best_value or (candidate == best_value and stop > best_end):
                    best_value, best_end, found = candidate, stop, True
            stop += 1
            if stop >= size:
                break
            fragment = sentence[start:stop + 1]
        if not found:
            best_value = log(freq.get(sentence[start]) or 1) - log_total + value[start + 1]
        value[start], end[start] = best_value, best_end
    return end


def _cut_han_block(jt: "jieba.Tokenizer", sentence: str, words: list[str]) -> None:
    """jieba's ``__cut_DAG`` on one block: route words, with single-character runs sent to the HMM."""
    freq = jt.FREQ
    end = _best_route(freq, jt.total, sentence)
    hmm_cut = sys.modules["jieba.finalseg"].cut
    position, pending = 0, ""
    while position < len(sentence):
        after = end[position] + 1
        if after - position == 1:
            pending += sentence[position]
        else:
            if pending:
                _flush_singles(freq, hmm_cut, pending, words)
                pending = ""
            words.append(sentence[position:after])
        position = after
    if pending:
        _flush_singles(freq, hmm_cut, pending, words)


def _flush_singles(freq: dict[str, int], hmm_cut: Callable[[str], Iterable[str]], run: str, words: list[str]) -> None:
    if len(run) == 1:
        words.append(run)
    elif not freq.get(run):
        words.extend(hmm_cut(run))
    else:
        words.extend(run)


def _cut_search(jt: "jieba.Tokenizer", text: str) -> list[str]:
    """jieba's ``cut_for_search``: before each precise word longer than 2 (3) characters, its 2-grams
    (3-grams) that are dictionary words, in order."""
    if segmenter() == "jieba":
        return jt.lcut_for_search(text)
    freq = jt.FREQ
    words: list[str] = []
    for word in _cut_precise(jt, text):
        if len(word) > 2:
            words.extend(gram for i in range(len(word) - 1) if freq.get(gram := word[i:i + 2]))
        if len(word) > 3:
            words.extend(gram for i in range(len(word) - 2) if freq.get(gram := word[i:i + 3]))
        words.append(word)
    return words


# ---------------------------------------------------------------------------------------------
# Word lists and user dictionaries
# ---------------------------------------------------------------------------------------------

_USER_DICT_LINE = re.compile(r"^(?P<word>\S+?)(?: (?P<freq>[0-9]+))?(?: (?P<tag>[a-z]+))?$")


def _parse_user_dict(text: str, path: str | None = None) -> list[tuple[str, int | None, str | None]]:
    """Parse jieba's user dictionary format: ``word [frequency] [part-of-speech tag]`` per line.

    Blank lines are skipped; a word is NFKC-normalised (jieba sees normalised text). A line that
    does not fit raises ``InputError`` naming the file (when known) and the line.
    """
    entries: list[tuple[str, int | None, str | None]] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        match = _USER_DICT_LINE.match(line)
        if match is None:
            raise InputError(f"bad user dictionary line {line!r}: expected 'word [frequency] [tag]'", path, number)
        freq = match.group("freq")
        word = unicodedata.normalize("NFKC", match.group("word"))
        entries.append((word, None if freq is None else int(freq), match.group("tag")))
    return entries


def _read_text(path: str | Path, what: str) -> str:
    """Read a UTF-8 file (BOM allowed); a missing or undecodable file raises ``InputError``."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError(f"{what} not found", path) from None
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror or exc}", path) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(f"{what} is not valid UTF-8", path, line) from None


def _word_list(text: str) -> list[str]:
    """One word per line; blank lines and lines starting with ``#`` are ignored."""
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


@lru_cache(maxsize=None)
def _builtin_stopwords(name: str) -> tuple[str, ...]:
    """A stopword list shipped in ``engine/data`` (see ``PROVENANCE.md`` there)."""
    return tuple(_word_list((_DATA_DIR / f"stopwords_{name}.txt").read_text(encoding="utf-8")))


# ---------------------------------------------------------------------------------------------
# Languages: each a segmentation function plus its defaults
# ---------------------------------------------------------------------------------------------


def _english_words(text: str) -> list[str]:
    """Unicode word splitting, lowercasing and possessive removal (``en`` path, step 2)."""
    text = text.translate(_APOSTROPHES).lower()
    words = (_ASCII_WORD if text.isascii() else _word_pattern()).findall(text)
    return [word[:-2] if word.endswith("'s") else word for word in words]


def _english_terms(tok: "Tokenizer", text: str) -> list[str]:
    """The word path (``en`` and every Snowball language): words, stopwords dropped, stemmed by the
    language's Snowball algorithm when ``stem`` is on."""
    words = [word for word in _english_words(text) if word not in tok._stopset]
    if tok._stem and words:
        return _stemmer(tok._spec.stemmer).stemWords(words)
    return words


def _tell_word(word: str) -> str:
    """A word of jieba's cut as a term: lowercased if it holds a letter or digit, else "" (dropped)."""
    return word.lower() if word.isalnum() or _is_word(word) else ""  # isalnum: the common, cheap case


def _jieba_terms(tok: "Tokenizer", text: str) -> list[str]:
    """The terms of ``text`` cut whole by jieba (the ``zh`` analysis; a Han run of ``auto``'s)."""
    stop = tok._stopset
    jt = _jieba_tokenizer(tok._user_dict)
    terms = []
    for word in MODES[tok._mode](jt, text):
        word = _tell_word(word)
        if word and word not in stop:
            terms.append(word)
    return terms


def _analyse_en(tok: "Tokenizer", text: str) -> list[str]:
    return _english_terms(tok, text)


def _analyse_zh(tok: "Tokenizer", text: str) -> list[str]:
    compiled = tok._compiled_cut()
    if compiled is not None:  # the same terms, made by the core
        return unpack_terms(*compiled.packed_terms([text], tok._term_rules()))[0]
    return _jieba_terms(tok, text)


def _analyse_auto(tok: "Tokenizer", text: str) -> list[str]:
    if _HAS_HAN.search(text) is None:
        return _english_terms(tok, text)
    compiled = tok._compiled_cut()
    if compiled is not None:  # the same terms, made by the core
        return unpack_terms(*compiled.packed_terms([text], tok._term_rules()))[0]
    return _auto_terms(tok, text)


def _auto_terms(tok: "Tokenizer", text: str) -> list[str]:
    """``auto``'s terms by their definition: the text split into runs of Han characters
    (``_HAN_RANGES``) and the stretches between them, each run's terms by jieba (:func:`_jieba_terms`),
    each stretch's by the English path. The core makes the same terms in one pass (``cut_terms``)."""
    terms: list[str] = []
    for index, piece in enumerate(_HAN_RUN.split(text)):
        if piece:
            terms.extend(_jieba_terms(tok, piece) if index % 2 else _english_terms(tok, piece))
    return terms


def _cjk_bigrams(run: str) -> list[str]:
    """A run of CJK characters as overlapping character bigrams (one character alone: itself), as
    Lucene's ``CJKBigramFilter`` makes them: ``"東京都"`` gives ``["東京", "京都"]``. Characters that are
    no letter (``・``, a code point this Python's Unicode does not know yet) separate runs."""
    if not run.isalnum():
        return [bigram for part in _WORD_RUN.findall(run) for bigram in _cjk_bigrams(part)]
    return [run] if len(run) == 1 else [run[i:i + 2] for i in range(len(run) - 1)]


def _analyse_cjk(tok: "Tokenizer", text: str) -> list[str]:
    if _HAS_CJK.search(text) is None:
        return _english_terms(tok, text)
    terms: list[str] = []
    for index, piece in enumerate(_CJK_RUN.split(text)):
        if piece:
            terms.extend(_cjk_bigrams(piece) if index % 2 else _english_terms(tok, piece))
    return terms


def _analyse_whitespace(tok: "Tokenizer", text: str) -> list[str]:
    # word.isalnum() is an exact fast accept: [^\W_] matches precisely the characters c.isalnum()
    stop = tok._stopset
    if _only_words_and_spaces(text):  # every piece is letters and digits only: all are words
        return text.split() if not stop else [word for word in text.split() if word not in stop]
    if not stop:
        return [word for word in text.split() if word.isalnum() or _is_word(word)]
    return [word for word in text.split() if (word.isalnum() or _is_word(word)) and word not in stop]


@dataclass(frozen=True)
class _Language:
    """How one language value analyses text, and what its defaults are."""

    analyse: Callable[["Tokenizer", str], list[str]]
    stopword_lists: tuple[str, ...]  # built-in lists that make up stopwords="default"
    stemmer: str | None  # the Snowball algorithm (PyStemmer's name) of its word path; None: no stemming
    jieba_options: bool  # whether mode and user_dict are meaningful (jieba may be used)
    lowercase: bool
    needs_jieba: Callable[[str], bool]  # does analysing this text use jieba?
    description: str
    in_process: bool = False  # analysing costs less than carrying the tokens back from a worker process
    packed: bool = False  # in precise mode the core's cut_terms makes the terms of many texts at once
    english_between_han: bool = False  # jieba cuts each run of Han characters, the English path the rest
    name: str = ""  # what the language is, in a word or two (the command line's help lists them)

    @property
    def stemmable(self) -> bool:
        """Whether stem=True is meaningful (the word path is used, with a Snowball algorithm)."""
        return self.stemmer is not None


def _no_jieba(text: str) -> bool:
    return False


SNOWBALL_LANGUAGES: dict[str, tuple[str, str]] = {
    "ar": ("Arabic", "arabic"), "hy": ("Armenian", "armenian"), "eu": ("Basque", "basque"),
    "ca": ("Catalan", "catalan"), "cs": ("Czech", "czech"), "da": ("Danish", "danish"), "nl": ("Dutch", "dutch"),
    "eo": ("Esperanto", "esperanto"), "et": ("Estonian", "estonian"), "fi": ("Finnish", "finnish"),
    "fr": ("French", "french"), "de": ("German", "german"), "el": ("Greek", "greek"), "hi": ("Hindi", "hindi"),
    "hu": ("Hungarian", "hungarian"), "id": ("Indonesian", "indonesian"), "ga": ("Irish", "irish"),
    "it": ("Italian", "italian"), "lt": ("Lithuanian", "lithuanian"), "ne": ("Nepali", "nepali"),
    "no": ("Norwegian", "norwegian"), "fa": ("Persian", "persian"), "pl": ("Polish", "polish"),
    "pt": ("Portuguese", "portuguese"), "ro": ("Romanian", "romanian"), "ru": ("Russian", "russian"),
    "sr": ("Serbian", "serbian"), "st": ("Sesotho", "sesotho"), "es": ("Spanish", "spanish"),
    "sv": ("Swedish", "swedish"), "ta": ("Tamil", "tamil"), "tr": ("Turkish", "turkish"), "yi": ("Yiddish", "yiddish"),
}
"""Every language of PyStemmer's Snowball algorithms but English (``en``): its code (ISO 639-1), name and
algorithm. Each analyses text as ``en`` does, with its own stopword list (``engine/data``, see
``PROVENANCE.md`` there) and its own stemmer."""

LANGUAGES: dict[str, _Language] = {
    "auto": _Language(
        _analyse_auto, ("en", "zh"), "english", True, True, lambda text: _HAS_HAN.search(text) is not None,
        "Han runs through jieba, everything else through the English path", packed=True, english_between_han=True,
        name="Chinese via jieba, rest English",
    ),
    "zh": _Language(_analyse_zh, ("zh",), None, True, True, lambda text: True, "Chinese: jieba over the whole text",
                    packed=True, name="Chinese"),
    "en": _Language(
        _analyse_en, ("en",), "english", False, True, _no_jieba, "English: Unicode words, lowercase, Snowball stemming",
        name="English",
    ),
    "ja": _Language(_analyse_cjk, ("en",), "english", False, True, _no_jieba,
                    "Japanese: CJK runs to character bigrams, the rest as en", name="Japanese, CJK bigrams"),
    "ko": _Language(_analyse_cjk, ("en",), "english", False, True, _no_jieba,
                    "Korean: CJK runs to character bigrams, the rest as en", name="Korean, CJK bigrams"),
    **{code: _Language(_analyse_en, (code,), algorithm, False, True, _no_jieba,
                       f"{name}: Unicode words, lowercase, Snowball stemming", name=name)
       for code, (name, algorithm) in SNOWBALL_LANGUAGES.items()},
    "whitespace": _Language(
        _analyse_whitespace, (), None, False, False, _no_jieba, "already segmented: split on whitespace only",
        in_process=True,  # 40,000 texts: 0.46 s here, 0.92 s on 2 workers
        name="already segmented",
    ),
}
"""Registry of language values accepted by ``Tokenizer(language=...)``."""

MODES: dict[str, Callable[["jieba.Tokenizer", str], list[str]]] = {"default": _cut_precise, "search": _cut_search}
"""jieba segmentation modes: precise (jieba's ``cut``) or finer, overlapping search mode (``cut_for_search``)."""


def _normalise_stopword(word: str, lowercase: bool) -> str:
    word = unicodedata.normalize("NFKC", word).strip().translate(_APOSTROPHES)
    return word.lower() if lowercase else word


# ---------------------------------------------------------------------------------------------
# The tokenizer
# ---------------------------------------------------------------------------------------------

_CONFIG_KEYS = {"analysis_version", "language", "mode", "stem", "stopwords", "user_dict", "normalization"}
"""Keys ``from_config`` requires; ``jieba`` and ``unicode`` (versions that shape the terms) are informational."""


class Tokenizer:
    """Analyses text into terms; picklable, comparable, and fully described by ``config()``.

    ``language``: one of ``LANGUAGES`` (``auto``, ``zh``, ``en``, ``whitespace``).
    ``stem``: Snowball English stemming of the English path; ``None`` means ``DEFAULT_STEM`` for
    ``en``/``auto`` and off for the others (which reject ``stem=True``).
    ``stopwords``: ``"default"`` (built-in lists for the language), ``None`` or ``"none"`` (keep every
    word), a path to a UTF-8 file with one word per line, or an iterable of words.
    ``mode``: one of ``MODES`` (jieba precise ``default`` or ``search``).
    ``user_dict``: a jieba user dictionary file (``word [frequency] [tag]`` per line).
    """

    def __init__(
        self,
        language: str = "auto",
        *,
        stem: bool | None = None,
        stopwords: str | Path | Iterable[str] | None = "default",
        mode: str = "default",
        user_dict: str | Path | None = None,
    ) -> None:
        spec = _language_spec(language)
        _check_jieba_options(language, spec, mode, user_dict)
        user_text = None
        if user_dict is not None:
            user_text = _read_text(user_dict, "user dictionary")
            _parse_user_dict(user_text, str(user_dict))
        words = {_normalise_stopword(word, spec.lowercase) for word in _resolve_stopwords(spec, stopwords)}
        self._setup(language, _resolve_stem(language, spec, stem), words - {""}, mode, user_text)

    def _setup(self, language: str, stem: bool, stopwords: Iterable[str], mode: str, user_dict: str | None) -> None:
        """Set every field from already-normalised values (shared by ``__init__``, ``from_config``, unpickling)."""
        if mode not in MODES:
            raise ParameterError(f"unknown tokenizer mode {mode!r}; valid modes: {', '.join(MODES)}")
        self._language = language
        self._spec = LANGUAGES[language]
        self._stem = stem
        self._stopwords = tuple(sorted(set(stopwords)))
        self._stopset = frozenset(self._stopwords)
        self._mode = mode
        self._user_dict = user_dict
        self._rules: TermRules | None = None

    # -- public API ----------------------------------------------------------------------------

    @property
    def language(self) -> str:
        return self._language

    @property
    def stem(self) -> bool:
        return self._stem

    @property
    def mode(self) -> str:
        return self._mode

    @property
    def stopwords(self) -> frozenset[str]:
        return self._stopset

    def tokenize(self, text: str) -> list[str]:
        """The terms of ``text``, in text order (duplicates kept)."""
        return self._spec.analyse(self, unicodedata.normalize("NFKC", text))

    def splits_at_whitespace(self) -> bool:
        """Whether the terms of an ASCII text are exactly its pieces between whitespace that hold a
        letter or digit (``whitespace`` without stopwords; NFKC leaves ASCII as it is), which the
        index builder then finds in the text's bytes (:meth:`bm25lab.engine.postings.PostingsBuilder.add_texts`)."""
        return self._language == "whitespace" and not self._stopset

    def tokenize_many(self, texts: Iterable[str], workers: int | None = None, chunksize: int = 256) -> Iterator[list[str]]:
        """Tokenize a stream of texts, in order, on ``workers`` processes (``None`` = all usable cores).

        Output equals ``[self.tokenize(t) for t in texts]``. Input is read lazily and at most a few
        chunks per worker are in flight, so memory stays bounded on any corpus size. ``workers=1``
        runs in this process, and so does an input that ends within the first ``2 * workers *
        chunksize`` texts and is too little work to pay for starting processes (``_POOL_MIN_WORK``);
        a short input that is worth it is cut into smaller chunks so every worker gets a share. The
        whitespace analysis always runs here: unpickling a worker's tokens costs more than splitting.
        ``zh`` and ``auto`` in precise mode take a chunk at a time through the core's cut, and a
        worker hands such a chunk's terms back as one string (:meth:`_tokenize_packed`).
        """
        for chunk in self.tokenize_chunks(texts, workers, chunksize):
            yield from chunk_lists(chunk)

    def tokenize_chunks(self, texts: Iterable[str], workers: int | None = None,
                        chunksize: int = 256) -> Iterator[list[list[str]] | PackedTerms]:
        """:meth:`tokenize_many`'s output a chunk of consecutive texts at a time, each chunk the texts'
        lists of tokens or, from the compiled cut, their terms packed (:class:`PackedTerms`, what
        :meth:`~bm25lab.engine.postings.PostingsBuilder.add_packed` takes without a string per term)."""
        if chunksize < 1:
            raise ParameterError(f"chunksize must be at least 1, got {chunksize}")
        count = _resolve_workers(workers)
        iterator = iter(texts)
        if count == 1 or self._spec.in_process:
            yield from self._tokenize_here(iterator, chunksize)
            return
        head = list(islice(iterator, 2 * count * chunksize))
        if len(head) < 2 * count * chunksize:  # the whole input is in ``head``
            if self._work(head) < _POOL_MIN_WORK:
                yield from self._tokenize_here(iter(head), chunksize)
                return
            chunksize = min(chunksize, -(-len(head) // (4 * count)))
        # long texts go in smaller chunks: a chunk's tokens come back whole, and progress is told per chunk
        average = sum(map(len, head)) / max(len(head), 1)
        chunksize = max(1, min(chunksize, int(_CHUNK_CHARS // max(average, 1.0))))
        yield from self._tokenize_pool(head, iterator, count, chunksize)

    def _tokenize_here(self, texts: Iterator[str], chunksize: int) -> Iterator[list[list[str]] | PackedTerms]:
        """``map(self.tokenize, texts)`` in this process, ``chunksize`` texts at a time, through the
        compiled cut when it can take them together (:meth:`_tokenize_packed`)."""
        if not self._packable():
            for text in texts:
                yield [self.tokenize(text)]
            return
        for chunk in _chunks([], texts, chunksize):
            yield _packed(self._tokenize_packed(chunk))

    def _tokenize_packed(self, texts: list[str]) -> list[list[str]] | tuple[str, list[int]]:
        """``[self.tokenize(t) for t in texts]``, packed by the core's cut when this process has it
        (``zh`` or ``auto``, precise mode; for ``auto`` a text of the chunk holds Han characters): one
        string of all the terms and their counts (:func:`~bm25lab.engine.segmentation.unpack_terms`),
        which a worker process hands back several times cheaper than lists of strings."""
        compiled = self._compiled_cut() if any(map(self._spec.needs_jieba, texts)) else None
        if compiled is None:
            return [self.tokenize(text) for text in texts]
        return compiled.packed_terms(nfkc_many(texts), self._term_rules())

    def _packable(self) -> bool:
        """Whether the core's cut may make the terms of many texts at once (``zh`` and ``auto`` in precise mode)."""
        return self._spec.packed and self._mode == "default"

    def _compiled_cut(self) -> CompiledJieba | None:
        """The core's cut this tokenizer takes texts with (:func:`_compiled`), when it may."""
        return _compiled(self._user_dict) if self._packable() else None

    def _term_rules(self) -> TermRules:
        """What Python tells of the terms the core makes (:class:`~bm25lab.engine.segmentation.TermRules`):
        the words it leaves to Python, and for ``auto`` the English path's text it leaves and stemming."""
        if self._rules is None:
            if self._spec.english_between_han:
                stem = _stemmer(self._spec.stemmer).stemWords if self._stem else None
                self._rules = TermRules(self._stopset, _tell_word, partial(_english_terms, self), stem)
            else:
                self._rules = TermRules(self._stopset, _tell_word)
        return self._rules

    def config(self) -> dict[str, Any]:
        """Self-contained, JSON-serialisable description of the analysis chain."""
        uses_jieba = self._language in ("auto", "zh")
        return {
            "analysis_version": ANALYSIS_VERSION,
            "language": self._language,
            "mode": self._mode,
            "stem": self._stem,
            "stopwords": list(self._stopwords),
            "user_dict": self._user_dict,
            "normalization": "NFKC",
            "jieba": _jieba_version() if uses_jieba else None,
            "unicode": unicodedata.unidata_version,
        }

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> "Tokenizer":
        """Rebuild the tokenizer described by ``config``; a bad description raises ``IndexFormatError``."""
        _check_config(config)
        tokenizer = cls.__new__(cls)
        try:
            tokenizer._setup(config["language"], config["stem"], config["stopwords"], config["mode"], config["user_dict"])
            _parse_user_dict(config["user_dict"] or "")
        except (ValueError, InputError) as exc:
            raise IndexFormatError(f"bad tokenizer configuration: {exc}") from None
        return tokenizer

    # -- dunder --------------------------------------------------------------------------------

    def _key(self) -> tuple[Any, ...]:
        return (self._language, self._mode, self._stem, self._stopwords, self._user_dict)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tokenizer) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        parts = [f"language={self._language!r}", f"stem={self._stem}", f"stopwords=<{len(self._stopwords)} words>"]
        if self._mode != "default":
            parts.append(f"mode={self._mode!r}")
        if self._user_dict is not None:
            parts.append(f"user_dict=<{len(_parse_user_dict(self._user_dict))} entries>")
        return f"Tokenizer({', '.join(parts)})"

    def __getstate__(self) -> dict[str, Any]:
        return {"language": self._language, "stem": self._stem, "stopwords": self._stopwords,
                "mode": self._mode, "user_dict": self._user_dict}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._setup(state["language"], state["stem"], state["stopwords"], state["mode"], state["user_dict"])

    # -- worker pool ---------------------------------------------------------------------------

    def _work(self, texts: list[str]) -> float:
        """Estimated cost of ``texts`` in characters of jieba work (the English path is ~16x cheaper)."""
        chars = sum(len(text) for text in texts)
        return chars if any(self._spec.needs_jieba(text) for text in texts) else chars / 16

    def _warm(self, sample: list[str]) -> None:
        """Load jieba/stemmer state here so forked workers inherit it instead of loading it twice: the
        core's cut (its dictionary arrays, tables and stopword trie) instead of jieba's dictionary when
        this process takes it (:func:`_compiled`)."""
        chinese = [text for text in sample if self._spec.needs_jieba(text)]
        if chinese:
            if self._compiled_cut() is None:
                _jieba_tokenizer(self._user_dict)
            else:
                self._tokenize_packed(chinese[:1])  # its tables and stopword trie made here, once
        if self._spec.stemmable and not all(text.isascii() for text in sample):
            _word_pattern()
        if self._stem:
            _stemmer(self._spec.stemmer)

    def _tokenize_pool(self, head: list[str], rest: Iterator[str], workers: int,
                       chunksize: int) -> Iterator[list[list[str]] | PackedTerms]:
        from concurrent.futures import ProcessPoolExecutor

        self._warm(head)
        chunks = _chunks(head, rest, chunksize)
        in_flight: deque[Any] = deque()
        executor = ProcessPoolExecutor(workers, mp_context=_mp_context(), initializer=_init_worker, initargs=(self,))
        try:
            for chunk in chunks:
                in_flight.append(executor.submit(_tokenize_chunk, chunk))
                if len(in_flight) >= 3 * workers:
                    yield _packed(in_flight.popleft().result())
            while in_flight:
                yield _packed(in_flight.popleft().result())
        finally:
            executor.shutdown(wait=True, cancel_futures=True)


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------


_CHUNK_CHARS = 100_000  # characters in a worker's chunk, about a tenth of a second of jieba


def _language_spec(language: str) -> _Language:
    spec = LANGUAGES.get(language) if isinstance(language, str) else None
    if spec is None:
        raise ParameterError(f"unknown tokenizer language {language!r}; valid languages: {', '.join(LANGUAGES)}")
    return spec


def _check_jieba_options(language: str, spec: _Language, mode: str, user_dict: object) -> None:
    if mode not in MODES:
        raise ParameterError(f"unknown tokenizer mode {mode!r}; valid modes: {', '.join(MODES)}")
    if spec.jieba_options or (mode == "default" and user_dict is None):
        return
    applies = ", ".join(name for name, lang in LANGUAGES.items() if lang.jieba_options)
    raise ParameterError(f"mode and user_dict do not apply to language {language!r}; they apply to: {applies}")


def _resolve_stem(language: str, spec: _Language, stem: bool | None) -> bool:
    if stem is None:
        return DEFAULT_STEM if spec.stemmable else False
    if stem and not spec.stemmable:
        stemmable = ", ".join(name for name, lang in LANGUAGES.items() if lang.stemmable)
        raise ParameterError(f"stemming does not apply to language {language!r}; it applies to: {stemmable}")
    return bool(stem)


def _resolve_stopwords(spec: _Language, stopwords: str | Path | Iterable[str] | None) -> list[str]:
    if stopwords is None or (isinstance(stopwords, str) and stopwords == "none"):
        return []
    if isinstance(stopwords, str) and stopwords == "default":
        return [word for name in spec.stopword_lists for word in _builtin_stopwords(name)]
    if isinstance(stopwords, (str, Path)):
        return _word_list(_read_text(stopwords, "stopword file"))
    words = list(stopwords)
    if not all(isinstance(word, str) for word in words):
        raise ParameterError("stopwords must be 'default', 'none', None, a path, or an iterable of strings")
    return words


def _check_config(config: Any) -> None:
    if not isinstance(config, dict):
        raise IndexFormatError(f"bad tokenizer configuration: expected an object, got {type(config).__name__}")
    missing = _CONFIG_KEYS - config.keys()
    if missing:
        raise IndexFormatError(f"bad tokenizer configuration: missing {', '.join(sorted(missing))}")
    version = config["analysis_version"]
    if version != ANALYSIS_VERSION:
        raise IndexFormatError(
            f"tokenizer analysis version {version!r} is not supported (this bm25lab reads {ANALYSIS_VERSION}); "
            "rebuild the index with this version"
        )
    checks = {
        "language": lambda v: isinstance(v, str) and v in LANGUAGES,
        "mode": lambda v: isinstance(v, str) and v in MODES,
        "stem": lambda v: isinstance(v, bool),
        "stopwords": lambda v: isinstance(v, list) and all(isinstance(w, str) for w in v),
        "user_dict": lambda v: v is None or isinstance(v, str),
        "normalization": lambda v: v == "NFKC",
    }
    for key, valid in checks.items():
        if not valid(config[key]):
            raise IndexFormatError(f"bad tokenizer configuration: invalid {key} {config[key]!r}")
    spec = LANGUAGES[config["language"]]
    if config["stem"] and not spec.stemmable:
        raise IndexFormatError(f"bad tokenizer configuration: stemming with language {config['language']!r}")
    try:
        _check_jieba_options(config["language"], spec, config["mode"], config["user_dict"])
    except ValueError as exc:
        raise IndexFormatError(f"bad tokenizer configuration: {exc}") from None


@lru_cache(maxsize=1)
def _jieba_version() -> str:
    """jieba's version without importing it (recorded in the config; the dictionary comes with it)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("jieba")
    except PackageNotFoundError:
        return "unknown"


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system tells it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _resolve_workers(workers: int | None) -> int:
    if workers is None:
        return usable_cores()
    if workers < 1:
        raise ParameterError(f"workers must be at least 1, got {workers}")
    return workers


def _chunks(head: list[str], rest: Iterator[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(head), size):
        yield head[start:start + size]
    while chunk := list(islice(rest, size)):
        yield chunk


def _mp_context() -> Any:
    """``fork`` on Linux (workers inherit the loaded jieba dictionary), the platform default elsewhere."""
    import multiprocessing

    return multiprocessing.get_context("fork" if sys.platform.startswith("linux") else None)


_POOL_MIN_WORK = 40_000
"""Least work (``Tokenizer._work``) for which a short input is sent to worker processes: about 0.1-0.3 s
of jieba, well above the cost of forking two workers (15-50 ms measured)."""

_WORKER: list[Tokenizer] = []


def _init_worker(tokenizer: Tokenizer) -> None:
    _die_with_parent()
    _WORKER[:] = [tokenizer]


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this worker when its parent dies (``prctl(PR_SET_PDEATHSIG)``), so a
    ``kill -9`` of an indexing command never leaves tokenizer workers behind. No-op elsewhere."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - no prctl: workers then end with the pool
        return
    if os.getppid() == 1:  # pragma: no cover - the parent died before prctl took effect
        os._exit(1)


def _tokenize_chunk(texts: list[str]) -> list[list[str]] | tuple[str, list[int]]:
    return _WORKER[0]._tokenize_packed(texts)


def chunk_lists(chunk: list[list[str]] | PackedTerms) -> list[list[str]]:
    """A chunk of :meth:`Tokenizer.tokenize_chunks` as each text's list of tokens."""
    return chunk.lists() if isinstance(chunk, PackedTerms) else chunk


def _packed(result: list[list[str]] | tuple[str, list[int]]) -> list[list[str]] | PackedTerms:
    """:meth:`Tokenizer._tokenize_packed`'s result, its packed terms as :class:`PackedTerms`."""
    return PackedTerms(*result) if isinstance(result, tuple) else result
