"""BM25 variants: idf and term-frequency parts as named pure functions, looked up in one registry.

Notation: N documents, n = document frequency of the term, tf = its frequency in the document,
dl = document length in terms, avgdl = mean document length, k1, b, delta = parameters chosen per
search. A document's score for a query is the sum, over the query's distinct terms, of
``query_term_weight(qf, k3) * idf(term) * tf_part(tf, dl)``, qf the term's count in the query: by
default ``qf`` itself (a repeated query term counts each time, as in Lucene and rank_bm25); with
``k3`` Robertson's saturation ``qf (k3 + 1) / (qf + k3)``.

Variants whose ``tf_part(0) != 0`` (``bm25l``, ``bm25+``) give every document a contribution for
each query term it does *not* contain; it is added to every matching document, as rank_bm25 and
bm25s do. A document that contains none of the query's terms is never returned.

Sources: Kamphuis, de Vries, Boytsov, Lin, "Which BM25 Do You Mean? A Large-Scale Reproducibility
Study of Scoring Variants" (ECIR 2020); bm25s ``scoring.py``; rank_bm25 ``BM25Okapi``, ``BM25L``,
``BM25Plus``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Hashable

import numpy as np

from . import exactmath
from .errors import ParameterError

FloatArray = np.ndarray

DEFAULT_K1 = 0.9
DEFAULT_B = 0.4
OKAPI_EPSILON = 0.25
LARGEST = 1e100
"""The largest k1, delta, k3 or field weight. Within it no score's float64 arithmetic can overflow, for any
collection (lengths and frequencies below 2**31, fewer than 10**12 documents: the largest product, a
field weight times a frequency over the smallest length normalisation, stays below 10**125); past it,
``k1 = 1e308`` made ``k1 * (1 - b + b * dl / avgdl)`` infinite (numpy's overflow warning, scores of 0 or
NaN). :meth:`Params.resolved` refuses larger values: a ParameterError, exit code 2 on the command line."""


# ---------------------------------------------------------------- idf ----------------------------
# The logarithms are exactmath's, correctly rounded, one per distinct document frequency: the same float64
# on every CPU (numpy's vectorised log differs in the last bit between CPUs with and without AVX-512).

def idf_lucene(df: np.ndarray, n_docs: int) -> FloatArray:
    """Lucene: ``ln(1 + (N - n + 0.5) / (n + 0.5))``; always positive."""
    df = df.astype(np.float64)
    return exactmath.each(exactmath.ln1p, (n_docs - df + 0.5) / (df + 0.5))


def idf_robertson(df: np.ndarray, n_docs: int) -> FloatArray:
    """Robertson-Sparck Jones: ``ln((N - n + 0.5) / (n + 0.5))``, floored at 0 as bm25s does."""
    df = df.astype(np.float64)
    return exactmath.each(exactmath.ln, np.maximum((n_docs - df + 0.5) / (df + 0.5), 1.0))


def idf_atire(df: np.ndarray, n_docs: int) -> FloatArray:
    """ATIRE: ``ln(N / n)``."""
    return exactmath.each(exactmath.ln, n_docs / df.astype(np.float64))


def idf_bm25l(df: np.ndarray, n_docs: int) -> FloatArray:
    """BM25L (Lv and Zhai 2011): ``ln((N + 1) / (n + 0.5))``."""
    return exactmath.each(exactmath.ln, (n_docs + 1.0) / (df.astype(np.float64) + 0.5))


def idf_bm25plus(df: np.ndarray, n_docs: int) -> FloatArray:
    """BM25+ (Lv and Zhai 2011): ``ln((N + 1) / n)``."""
    return exactmath.each(exactmath.ln, (n_docs + 1.0) / df.astype(np.float64))


def idf_okapi(df: np.ndarray, n_docs: int, epsilon: float = OKAPI_EPSILON) -> FloatArray:
    """rank_bm25 ``BM25Okapi``: ``ln(N - n + 0.5) - ln(n + 0.5)``; a negative idf becomes
    ``epsilon * mean idf`` where the mean is taken over the whole vocabulary *before* the floor
    (``BM25Okapi._calc_idf``). Computed as two logarithms, exactly as rank_bm25 does."""
    df = df.astype(np.float64)
    idf = exactmath.each(exactmath.ln, n_docs - df + 0.5) - exactmath.each(exactmath.ln, df + 0.5)
    if idf.size:
        floor = epsilon * (float(np.sum(idf)) / idf.size)
        idf = np.where(idf < 0, floor, idf)
    return idf


# ---------------------------------------------------------------- tf part ------------------------

def _ratio(numerator: np.ndarray, denominator: np.ndarray, k1: float) -> FloatArray:
    """``numerator / denominator`` with ``0 / 0`` taken as 0.

    The tf parts below are ``x / (x + k1 * norm)`` in one form or another, with ``x >= 0``: the
    denominator is 0 only where ``x = 0`` and ``k1 = 0``, and 0 is the part's limit there as k1 -> 0.
    So k1 = 0 is BM25 without term frequency saturation: a term counts fully once present (tf part
    1, or 1 + delta for BM25+) and not at all when absent (0, or delta for BM25+), never 0 / 0 = NaN.
    """
    if k1 != 0:
        return numerator / denominator
    numerator, denominator = np.broadcast_arrays(numerator, denominator)
    return np.divide(numerator, denominator, out=np.zeros(numerator.shape), where=denominator != 0)


def _norm(dl: np.ndarray, avgdl: float, b: float) -> FloatArray:
    """Length normalisation ``1 - b + b * dl / avgdl`` (1 when the collection is empty)."""
    if avgdl <= 0:
        return np.ones_like(dl, dtype=np.float64)
    return 1.0 - b + b * (dl.astype(np.float64) / avgdl)


def tf_lucene(tf: np.ndarray, dl: np.ndarray, avgdl: float, k1: float, b: float, delta: float) -> FloatArray:
    """Lucene, Robertson: ``tf / (tf + k1 * (1 - b + b * dl / avgdl))`` (no ``k1 + 1`` factor)."""
    tf = tf.astype(np.float64)
    return _ratio(tf, tf + k1 * _norm(dl, avgdl, b), k1)


def tf_atire(tf: np.ndarray, dl: np.ndarray, avgdl: float, k1: float, b: float, delta: float) -> FloatArray:
    """ATIRE, Okapi: ``tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))``."""
    tf = tf.astype(np.float64)
    return _ratio(tf * (k1 + 1.0), tf + k1 * _norm(dl, avgdl, b), k1)


def tf_bm25l(tf: np.ndarray, dl: np.ndarray, avgdl: float, k1: float, b: float, delta: float) -> FloatArray:
    """BM25L: with ``c = tf / (1 - b + b * dl / avgdl)``, ``(k1 + 1) * (c + delta) / (k1 + c + delta)``."""
    c = tf.astype(np.float64) / _norm(dl, avgdl, b)
    return _ratio((k1 + 1.0) * (c + delta), k1 + c + delta, k1)


def tf_bm25plus(tf: np.ndarray, dl: np.ndarray, avgdl: float, k1: float, b: float, delta: float) -> FloatArray:
    """BM25+: ``(k1 + 1) * tf / (k1 * (1 - b + b * dl / avgdl) + tf) + delta``."""
    tf = tf.astype(np.float64)
    return _ratio((k1 + 1.0) * tf, k1 * _norm(dl, avgdl, b) + tf, k1) + delta


# ---------------------------------------------------------------- BM25F -------------------------

def bm25f_tf_part(field_tfs: list[np.ndarray], field_lengths: list[np.ndarray], average_lengths: list[float],
                  weights: list[float], bs: list[float], k1: float) -> FloatArray:
    """BM25F's term-frequency part (Robertson and Zaragoza, "The Probabilistic Relevance Framework:
    BM25 and Beyond", 2009, section 3.5): the fields' frequencies are weighted, each normalised by its
    own length, and added before one saturation,
    ``tf~ = sum_f w_f * tf_f / (1 - b_f + b_f * len_f / avglen_f)``, part ``tf~ / (k1 + tf~)``
    (a field whose average length is 0 is not normalised; a field without the term adds 0, even an empty
    one at b = 1, whose normaliser is 0). The score is ``sum_t idf(t) * part`` with Lucene's idf, the
    document frequency counted over any field."""
    tilde = np.zeros(field_tfs[0].shape[0] if field_tfs else 0, dtype=np.float64)
    for tf, length, average, weight, b in zip(field_tfs, field_lengths, average_lengths, weights, bs):
        term = np.zeros_like(tilde)
        np.divide(weight * tf.astype(np.float64), _norm(length, average, b), out=term, where=tf > 0)
        tilde = tilde + term
    return tilde / (k1 + tilde)


def parse_field_values(given: str | dict[str, float] | None, what: str) -> dict[str, float]:
    """``{"title": 3.0, "text": 1.0}`` from ``"title=3,text=1"`` or a mapping; a malformed entry is a
    ParameterError naming ``what``."""
    if given is None:
        return {}
    pairs = given.items() if hasattr(given, "items") else (part.partition("=")[::2] for part in str(given).split(","))
    values: dict[str, float] = {}
    for name, value in pairs:
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if not str(name).strip() or not math.isfinite(number) or str(name) in values:
            raise ParameterError(f"{what}: expected field=number pairs such as title=3,text=1, got {given!r}")
        values[str(name)] = number
    return values


# ---------------------------------------------------------------- query terms --------------------

def query_term_weight(qf: np.ndarray, k3: float | None) -> FloatArray:
    """How much a query term given ``qf`` times weighs: ``qf (k3 + 1) / (qf + k3)`` (Robertson, Walker,
    Jones, Hancock-Beaulieu, Gatford, "Okapi at TREC-3", 1994: the query-term frequency part of the
    original BM25), or ``qf`` itself when ``k3`` is None (Lucene's linear count, the default). 1 for
    ``qf = 1`` whatever ``k3``; k3 = 0 counts every term once; a large k3 tends to ``qf``. Example: with
    k3 = 8 a term given three times weighs 3 * 9 / 11 = 27/11 of a term given once."""
    qf = np.asarray(qf, dtype=np.float64)
    return qf if k3 is None else qf * (k3 + 1.0) / (qf + k3)


def absent_terms_constant(idf: np.ndarray, zero: float, counts: np.ndarray) -> float:
    """``sum_t idf(t) * tf_part(0) * qf(t)`` over a query's terms (``zero`` = ``tf_part(0)``): what
    ``bm25l``/``bm25+`` add to every matching document. Each product rounded, then summed exactly
    (``math.fsum``): the same on every machine, where a BLAS dot product adds in the order of its CPU's
    kernel, fused or not."""
    return math.fsum(((idf * zero) * counts).tolist())


# ---------------------------------------------------------------- registry -----------------------

@dataclass(frozen=True)
class Variant:
    """A BM25 variant: its idf, its tf part and its default ``delta`` (0 where unused)."""

    name: str
    idf: Callable[[np.ndarray, int], FloatArray]
    tf_part: Callable[[np.ndarray, np.ndarray, float, float, float, float], FloatArray]
    default_delta: float = 0.0
    description: str = ""

    def zero_tf_part(self, k1: float, b: float, delta: float) -> float:
        """``tf_part(0)``: independent of the document length for every variant here."""
        return float(self.tf_part(np.zeros(1), np.ones(1), 1.0, k1, b, delta)[0])


VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("lucene", idf_lucene, tf_lucene, 0.0, "Lucene/Anserini BM25 (default)"),
        Variant("robertson", idf_robertson, tf_lucene, 0.0, "Robertson et al.; idf floored at 0"),
        Variant("atire", idf_atire, tf_atire, 0.0, "ATIRE: idf ln(N/n), tf part with k1 + 1"),
        Variant("bm25l", idf_bm25l, tf_bm25l, 0.5, "BM25L (Lv and Zhai), delta default 0.5"),
        Variant("bm25+", idf_bm25plus, tf_bm25plus, 1.0, "BM25+ (Lv and Zhai), delta default 1.0"),
        Variant("okapi", idf_okapi, tf_atire, 0.0, "exactly rank_bm25's BM25Okapi (epsilon 0.25)"),
    )
}
DEFAULT_VARIANT = "lucene"


def get_variant(name: str) -> Variant:
    """The variant called ``name``; an unknown name is a ParameterError listing the known ones."""
    try:
        return VARIANTS[name]
    except KeyError:
        raise ParameterError(f"unknown BM25 variant {name!r}; choose one of: {', '.join(VARIANTS)}") from None


@dataclass(frozen=True)
class Params:
    """The parameters of one search: variant name, k1, b, delta (``None`` = the variant's default),
    k3 (``None`` = query terms count linearly; see :func:`query_term_weight`), for BM25F on an index
    built with fields ``fields``: (field, weight, b) for every field of the index, in its order, and
    ``where``: the metadata filter of the documents it may return (a :class:`~.filters.Filter`, a floor above
    this module's: None for every document)."""

    variant: str = DEFAULT_VARIANT
    k1: float = DEFAULT_K1
    b: float = DEFAULT_B
    delta: float | None = None
    k3: float | None = None
    fields: tuple[tuple[str, float, float], ...] | None = None
    where: Hashable | None = None  # a filters.Filter

    def resolved(self) -> "Params":
        """Check the values and fill in the variant's default delta."""
        variant = get_variant(self.variant)
        if not (math.isfinite(self.k1) and 0 <= self.k1 <= LARGEST):
            raise ParameterError(f"k1 must be a number from 0 to {LARGEST:g} (a larger one overflows the scores), "
                                 f"got {self.k1}")
        if not (math.isfinite(self.b) and 0 <= self.b <= 1):
            raise ParameterError(f"b must be between 0 and 1, got {self.b}")
        delta = variant.default_delta if self.delta is None else float(self.delta)
        if not (math.isfinite(delta) and 0 <= delta <= LARGEST):
            raise ParameterError(f"delta must be a number from 0 to {LARGEST:g} (a larger one overflows the scores), "
                                 f"got {delta}")
        k3 = self.k3
        if k3 is not None and (isinstance(k3, bool) or not isinstance(k3, (int, float)) or not math.isfinite(k3)
                               or not 0 <= k3 <= LARGEST):
            raise ParameterError(f"k3 must be a number from 0 to {LARGEST:g} (or None for the linear count), got {k3!r}")
        if self.fields is not None:
            if self.variant != "lucene":
                raise ParameterError(f"BM25F (field weights) scores with Lucene's idf and saturation: use the variant "
                                     f"lucene, not {self.variant!r}")
            for name, weight, b in self.fields:
                if not (math.isfinite(weight) and 0 <= weight <= LARGEST):
                    raise ParameterError(f"the weight of field {name!r} must be a number from 0 to {LARGEST:g} (a "
                                         f"larger one overflows the scores), got {weight}")
                if not (math.isfinite(b) and 0 <= b <= 1):
                    raise ParameterError(f"the b of field {name!r} must be between 0 and 1, got {b}")
        return Params(self.variant, float(self.k1), float(self.b), delta, None if k3 is None else float(k3),
                      None if self.fields is None else tuple((n, float(w), float(b)) for n, w, b in self.fields),
                      self.where)

    def of_documents(self) -> "Params":
        """These parameters without k3 and the filter: what the postings' weights depend on (k3 weighs
        query terms, the filter chooses documents)."""
        return Params(self.variant, self.k1, self.b, self.delta, None, self.fields)


@lru_cache(maxsize=64)
def zero_tf_part(params: Params) -> float:
    """``tf_part(0)`` of the variant of ``params`` (resolved): what a document gets from a query term it
    lacks (non-zero for ``bm25l`` and ``bm25+`` only). Cached: every search asks for it."""
    return get_variant(params.variant).zero_tf_part(params.k1, params.b, params.delta)
