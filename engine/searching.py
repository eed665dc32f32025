"""The search protocol that every kind of index shares: :class:`~bm25lab.engine.index.Index`,
:class:`~bm25lab.engine.shards.ShardedIndex` and :class:`~bm25lab.distributed.DistributedIndex`.

    index.search("boundary layer", k=10)                       # -> Hits
    index.search_tokens(["boundary", "layer"], k=10)           # an analysed query
    index.search_many({"q1": "...", "q2": "..."}, k=1000)     # -> Results ({qid: Hits})
    index.retrieve_tokens([["boundary", "layer"], ...], 1000)  # the kind's own ranked rows

The parameters of a search travel as one :class:`~bm25lab.engine.scoring.Params`: give it as
``params=`` (as the command line, the experiments and tuning do), or give its fields as keywords
(``variant=``, ``k1=``, ``b=``, ``delta=``, ``k3=``, and for BM25F ``field_weights=`` and ``field_b=``),
which :meth:`Searcher.params` checks against the index once, before any query is analysed. A metadata
filter (``where=``, ``where_not=``: :mod:`~bm25lab.engine.filters`) is parsed once into the Params too
(``Params.where``), and each kind of index applies it inside its top-k as a document mask. A kind of
index says how it checks parameters (:meth:`Searcher.params`), how it searches a batch of analysed
queries (:meth:`Searcher.retrieve`), and how its answers become hits and results; the rest is here.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Generic, Mapping, Sequence, TypeVar

from .errors import ParameterError
from .scoring import DEFAULT_B, DEFAULT_K1, DEFAULT_VARIANT, Params

if TYPE_CHECKING:
    from .filters import WhereSpec

if TYPE_CHECKING:
    from .records import Hits, Results
    from .tokenization import Tokenizer

__all__ = ["FieldValues", "Searcher", "as_query_mapping", "check_k"]

FieldValues = str | Mapping[str, float] | None
"""Per-field values: ``{"title": 3, "text": 1}`` or ``"title=3,text=1"``."""

Progress = Callable[[int, int], None]
"""Called with (queries done, queries in all) as a batch goes."""

PROGRESS_STEP = 512
"""A batch searched with a progress callback is searched this many queries at a time (at least)."""

Found = TypeVar("Found")  # a kind of index's answer to a batch of analysed queries


def check_k(k: int) -> int:
    """``k`` as an int; a ParameterError unless it is a positive integer."""
    import numpy as np

    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k <= 0:
        raise ParameterError(f"k must be a positive integer, got {k!r}")
    return int(k)


def as_query_mapping(queries: Mapping[str, str] | Sequence[str]) -> Mapping[str, str]:
    """``{qid: text}`` as it is; a list or tuple of texts numbered by position ("0", "1", ...)."""
    if isinstance(queries, Mapping):
        return queries
    if isinstance(queries, str):
        raise ParameterError("search_many takes many queries: a {qid: text} mapping or a list of texts, not one "
                             "string (search() takes one)")
    if isinstance(queries, (list, tuple)):
        return {str(i): text for i, text in enumerate(queries)}
    raise ParameterError(f"search_many takes a {{qid: text}} mapping or a list of texts, not {type(queries).__name__}")


class Searcher(ABC, Generic[Found]):
    """What every kind of index offers for searching (see the module docstring)."""

    tokenizer: Tokenizer

    # ------------------------------------------------------------------ what a kind of index provides
    @abstractmethod
    def params(self, variant: str = DEFAULT_VARIANT, k1: float = DEFAULT_K1, b: float = DEFAULT_B,
               delta: float | None = None, k3: float | None = None, field_weights: FieldValues = None,
               field_b: FieldValues = None) -> Params:
        """The checked parameters of a search of this index (a ParameterError names a bad one)."""

    @abstractmethod
    def retrieve(self, queries: Sequence[Sequence[str]], k: int, params: Params, workers: int | None) -> Found:
        """Each analysed query's best ``k`` documents under ``params`` (checked), on up to ``workers`` threads,
        among the documents that pass ``params.where`` (when it is set)."""

    @abstractmethod
    def _hits(self, found: Found) -> Hits:
        """The hits of the one query of ``found``."""

    @abstractmethod
    def _results(self, qids: Sequence[str], found: Sequence[Found]) -> Results:
        """The results of ``qids``, whose answers are the parts ``found`` one after another."""

    def _search_one(self, tokens: Sequence[str], k: int, params: Params) -> Hits:
        """One analysed query's hits (a kind of index may search a single query its own way)."""
        return self._hits(self.retrieve([tokens], k, params, 1))

    def _batch_size(self, queries: int, progress: Progress | None) -> int:
        """How many queries :meth:`search_many` hands to :meth:`retrieve` at a time."""
        return queries if progress is None else max(PROGRESS_STEP, -(-queries // 100))

    # ------------------------------------------------------------------ the protocol
    def _checked(self, params: Params | None, keywords: dict[str, Any], where: WhereSpec = None,
                 where_not: WhereSpec = None) -> Params:
        """``params`` (checked by :meth:`params`) or the parameters the keywords give (not both), with
        the filter of ``where`` and ``where_not`` (parsed here, once) or the one ``params`` carries."""
        from .filters import Filter

        given_filter = Filter.of(where, where_not)
        if params is None:
            return replace(self.params(**keywords), where=given_filter)
        given = {name: value for name, value in keywords.items() if value != _DEFAULTS[name]}
        if given:
            raise ParameterError(f"give the search's parameters as params= or as keywords, not both "
                                 f"({', '.join(sorted(given))} given beside params)")
        if not isinstance(params, Params):
            raise ParameterError(f"params must be a Params, not {type(params).__name__}")
        if params.where is not None and not isinstance(params.where, Filter):
            raise ParameterError(f"params.where must be a Filter (Filter.of(...)), not {type(params.where).__name__}")
        if params.where is not None and given_filter is not None:
            raise ParameterError("give the search's filter as params.where or as where=/where_not=, not both")
        fields = params.fields
        checked = self.params(params.variant, params.k1, params.b, params.delta, params.k3,
                              None if fields is None else {name: weight for name, weight, _ in fields},
                              None if fields is None else {name: b for name, _, b in fields})
        return replace(checked, where=params.where if given_filter is None else given_filter)

    def search(self, query: str, k: int = 10, variant: str = DEFAULT_VARIANT, k1: float = DEFAULT_K1,
               b: float = DEFAULT_B, delta: float | None = None, k3: float | None = None,
               field_weights: FieldValues = None, field_b: FieldValues = None, *, params: Params | None = None,
               where: WhereSpec = None, where_not: WhereSpec = None) -> Hits:
        """The best ``k`` documents for ``query``: score descending, ties by document id descending.
        ``k3`` saturates repeated query terms (:func:`~.scoring.query_term_weight`; None: linear count).
        ``field_weights`` (``{"title": 3, "text": 1}`` or ``"title=3,text=1"``; a field not named weighs 1)
        scores by BM25F on an index built with fields (:func:`~.scoring.bm25f_tf_part`), each field's
        length normalised with its ``field_b`` (default ``b``). ``params``: all of them as one value.
        ``where``/``where_not``: only documents whose metadata meet every condition of ``where`` and
        none of ``where_not`` (:mod:`~bm25lab.engine.filters`: ``{"year": {">=": 1990}, "lang": ["en",
        "fr"]}`` or ``["year>=1990", "lang in en,fr"]``), the best ``k`` of them."""
        checked = self._checked(params, dict(variant=variant, k1=k1, b=b, delta=delta, k3=k3,
                                             field_weights=field_weights, field_b=field_b), where, where_not)
        return self._search_one(self.tokenizer.tokenize(query), check_k(k), checked)

    def search_tokens(self, tokens: Sequence[str], k: int = 10, variant: str = DEFAULT_VARIANT,
                      k1: float = DEFAULT_K1, b: float = DEFAULT_B, delta: float | None = None,
                      k3: float | None = None, field_weights: FieldValues = None, field_b: FieldValues = None, *,
                      params: Params | None = None, where: WhereSpec = None, where_not: WhereSpec = None) -> Hits:
        """Like :meth:`search` for an already analysed query."""
        checked = self._checked(params, dict(variant=variant, k1=k1, b=b, delta=delta, k3=k3,
                                             field_weights=field_weights, field_b=field_b), where, where_not)
        return self._search_one(tokens, check_k(k), checked)

    def search_many(self, queries: Mapping[str, str] | Sequence[str], k: int = 1000, variant: str = DEFAULT_VARIANT,
                    k1: float = DEFAULT_K1, b: float = DEFAULT_B, delta: float | None = None,
                    workers: int | None = None, progress: Progress | None = None, k3: float | None = None,
                    field_weights: FieldValues = None, field_b: FieldValues = None, *,
                    params: Params | None = None, where: WhereSpec = None, where_not: WhereSpec = None) -> Results:
        """Search every query of ``{qid: text}``, or of a list of texts (their ids are their positions
        as strings: ``"0"``, ``"1"``, ...); every core is used for large batches. The :class:`Results`
        read as ``{qid: Hits}`` and hand their columns to the evaluation as they are. ``progress``,
        when given, is called with (queries done, queries in all) as the batch goes. ``where`` and
        ``where_not`` filter every query's documents as in :meth:`search`."""
        checked = self._checked(params, dict(variant=variant, k1=k1, b=b, delta=delta, k3=k3,
                                             field_weights=field_weights, field_b=field_b), where, where_not)
        k = check_k(k)
        queries = as_query_mapping(queries)
        qids = list(queries)
        tokens = list(self.tokenizer.tokenize_many((queries[q] for q in qids), workers=workers))
        step = max(1, self._batch_size(len(tokens), progress))
        found = []
        for start in range(0, len(tokens), step):
            found.append(self.retrieve(tokens[start:start + step], k, checked, workers))
            if progress is not None:
                progress(min(start + step, len(tokens)), len(tokens))
        return self._results(qids, found)

    def retrieve_tokens(self, queries: Sequence[Sequence[str]], k: int = 1000, variant: str = DEFAULT_VARIANT,
                        k1: float = DEFAULT_K1, b: float = DEFAULT_B, delta: float | None = None,
                        workers: int | None = None, *, k3: float | None = None, field_weights: FieldValues = None,
                        field_b: FieldValues = None, params: Params | None = None, where: WhereSpec = None,
                        where_not: WhereSpec = None) -> Found:
        """Batch search on analysed queries: each query's best ``k`` documents, in the kind of index's
        own rows (:meth:`retrieve`)."""
        checked = self._checked(params, dict(variant=variant, k1=k1, b=b, delta=delta, k3=k3,
                                             field_weights=field_weights, field_b=field_b), where, where_not)
        return self.retrieve(queries, check_k(k), checked, workers)


_DEFAULTS: dict[str, Any] = dict(variant=DEFAULT_VARIANT, k1=DEFAULT_K1, b=DEFAULT_B, delta=None, k3=None,
                                 field_weights=None, field_b=None)
"""The keywords of a search and their defaults (:meth:`Searcher._checked`)."""
