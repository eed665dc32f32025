"""Grid search of BM25's k1 and b with k-fold cross-validation over the queries (``bm25lab tune``).

Data flows one way: queries + index -> one :class:`~bm25lab.engine.index.PreparedBatch` (tokens and postings
gathered once) -> for every (k1, b) of the grid, a run scored from the same postings -> per-query
values of one measure -> a ``(len(k1_grid), len(b_grid), num_queries)`` array -> :func:`cross_validate`.

Definitions (``v[i, j, q]`` = the measure of query q at ``k1_grid[i]``, ``b_grid[j]``):

- **Queries.** The queries of QUERIES that have judgments in QRELS, evaluated with ``complete=True``
  (trec_eval ``-c``): every such query counts at every grid point, a query with no hits scores 0.
  A query whose measure is undefined (e.g. AUC without both kinds of judged documents) at some grid
  point is left out everywhere, so that every mean is over the same queries.
- **Grid mean** ``grid[i, j]`` = mean over the queries of ``v[i, j, q]``; **best** = its argmax.
- **Ties** between grid points go to the first in grid order: k1 ascending-index-major, then b
  (``numpy.argmax`` of the row-major flattening), both here and inside each fold.
- **Folds.** A permutation of the queries drawn by ``numpy.random.default_rng(seed)`` is cut into
  ``folds`` consecutive parts with ``numpy.array_split`` (sizes differ by at most one, the larger
  parts first). Fold f (numbered from 1) trains on the other parts: it chooses the grid point with
  the largest mean over its training queries and applies it to its held-out queries.
- **train_mean** = mean over the folds of the chosen point's training mean.
  **test_mean** = mean over all queries of the held-out value (each query is held out exactly once).
- **default_mean** = the measure at the engine's defaults (k1 = 0.9, b = 0.4), computed directly,
  whether or not that point is on the grid.
- **Search depth** (:func:`search_depth`): a measure with a cutoff n whose family depends only on the
  top n documents (P, R, F1, RR, AP, Success, CG, DCG, nDCG, DCG_exp, nDCG_exp, Judged; any alias:
  ``nDCG@10``, ``ndcg_cut_10``, ``MAP@100``) needs only ``min(n, k)`` results per query; every other
  measure (AP, RR, bpref, Rprec, AUC, iprec, RBP, set_P, num_ret, ...) gets the full ``k``. The engine
  and the evaluation share one tie rule (score descending, then document id descending), so the top
  n of a deeper run are exactly the n results searched.

Grids on the command line (:func:`parse_grid`): ``"start:stop:step"`` includes ``stop`` when it falls
on the grid and rounds every value to 10 decimals (no 0.30000000000000004), or a comma list
``"0.5,0.9,1.2"``; values are sorted ascending and duplicates dropped.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np

from ..engine.scoring import DEFAULT_B, DEFAULT_K1, DEFAULT_VARIANT, Params
from .errors import InputError, ParameterError

if TYPE_CHECKING:
    from ..engine import Index
    from ..engine.index import PreparedBatch

__all__ = [
    "DEFAULT_B_GRID",
    "DEFAULT_K1_GRID",
    "CrossValidation",
    "Fold",
    "TuneResult",
    "cross_validate",
    "fold_assignment",
    "grid_range",
    "parse_grid",
    "search_depth",
    "tune",
    "tune_feedback",
    "FeedbackTuning",
]

_DECIMALS = 10
_MAX_GRID_VALUES = 1000

ProgressCallback = Callable[[int, int], None]
"""Called as ``progress(done, total)`` after each grid point."""


# --------------------------------------------------------------------------- grids


def grid_range(start: float, stop: float, step: float) -> tuple[float, ...]:
    """``start, start + step, ...`` up to and including ``stop`` (with a 1e-9 step tolerance), rounded.

    >>> grid_range(0.0, 1.0, 0.25)
    (0.0, 0.25, 0.5, 0.75, 1.0)
    """
    if not all(math.isfinite(x) for x in (start, stop, step)):
        raise ParameterError("grid bounds and step must be finite numbers")
    if step <= 0:
        raise ParameterError(f"grid step must be > 0, got {step:g}")
    if stop < start:
        raise ParameterError(f"grid stop {stop:g} is below its start {start:g}")
    count = int(math.floor((stop - start) / step + 1e-9)) + 1
    if count > _MAX_GRID_VALUES:
        raise ParameterError(f"grid {start:g}:{stop:g}:{step:g} has {count} values; at most {_MAX_GRID_VALUES}")
    return tuple(round(start + i * step, _DECIMALS) for i in range(count))




def parse_grid(text: str, name: str = "grid") -> tuple[float, ...]:
    """Grid values from ``"start:stop:step"`` or ``"v1,v2,..."``, sorted ascending without duplicates.

    A bad string is a ParameterError in one line that starts with ``name`` (e.g. ``--k1-grid``).
    """
    hint = "expected start:stop:step (e.g. 0.2:3.0:0.1) or a comma list (e.g. 0.5,0.9,1.2)"
    try:
        if ":" in text:
            parts = [float(p) for p in text.split(":")]
            if len(parts) != 3:
                raise ParameterError(hint)
            values = grid_range(*parts)
        else:
            values = tuple(float(p) for p in text.split(","))
            if not all(math.isfinite(v) for v in values):
                raise ParameterError("grid values must be finite numbers")
    except ValueError as exc:
        reason = str(exc) if str(exc) and not str(exc).startswith("could not convert") else hint
        raise ParameterError(f"{name} {text!r}: {reason}") from None
    return tuple(sorted({round(v, _DECIMALS) for v in values}))


# --------------------------------------------------------------------------- search depth

_TOP_N_FAMILIES = frozenset({"P", "R", "F1", "RR", "AP", "Success", "Hits", "CG", "DCG", "nDCG", "DCG_exp", "nDCG_exp",
                             "Judged", "ERR"})
"""Measure families (canonical names of :data:`bm25lab.evaluation.MEASURES`) whose value with cutoff n depends
only on the top n documents of each query (their denominators, such as R or the ideal DCG, come from
the qrels)."""


DEFAULT_K1_SPEC = "0.2:3.0:0.1"
DEFAULT_K1_GRID: tuple[float, ...] = parse_grid(DEFAULT_K1_SPEC)
"""k1 = 0.2, 0.3, ..., 3.0 (29 values)."""
DEFAULT_B_SPEC = "0:1:0.05"
DEFAULT_B_GRID: tuple[float, ...] = parse_grid(DEFAULT_B_SPEC)
"""b = 0.0, 0.05, ..., 1.0 (21 values)."""


def search_depth(measure: str, k: int) -> int:
    """Results per query that ``measure`` needs: ``min(n, k)`` for a top-n measure ``NAME@n``, else ``k``.

    An unknown measure name is a :class:`~bm25lab.evaluation.errors.MeasureError` listing the known ones.
    """
    from .measures import numeric_measure

    parsed = numeric_measure(measure)
    if parsed.definition.name in _TOP_N_FAMILIES and isinstance(parsed.param, int):
        return min(parsed.param, k)
    return k


# --------------------------------------------------------------------------- cross-validation


@dataclass(frozen=True)
class Fold:
    """One fold: the point chosen on its training queries and how it did on both parts."""

    index: int  # 1-based
    k1: float
    b: float
    train_mean: float
    test_mean: float
    num_test_queries: int


@dataclass(frozen=True, eq=False)
class CrossValidation:
    """The folds, their summary means and every query's held-out value (in query order)."""

    folds: tuple[Fold, ...]
    train_mean: float
    test_mean: float
    held_out: np.ndarray


def fold_assignment(num_queries: int, folds: int, seed: int = 0) -> list[np.ndarray]:
    """Query positions of each fold: a seeded permutation cut into ``folds`` near-equal parts."""
    if folds < 2:
        raise ParameterError(f"cross-validation needs at least 2 folds, got {folds}")
    if folds > num_queries:
        raise ParameterError(f"{folds} folds need at least {folds} queries; there are {num_queries}")
    permutation = np.random.default_rng(seed).permutation(num_queries)
    return [np.sort(part) for part in np.array_split(permutation, folds)]


def _first_best(means: np.ndarray) -> tuple[int, int]:
    """(i, j) of the largest value, the first in row-major order on ties."""
    i, j = np.unravel_index(int(np.argmax(means)), means.shape)
    return int(i), int(j)


def cross_validate(per_query_grid: np.ndarray, k1_grid: Sequence[float], b_grid: Sequence[float],
                   folds: int = 5, seed: int = 0) -> CrossValidation:
    """k-fold cross-validation of a grid search on ``per_query_grid[i, j, q]`` (k1 index, b index, query).

    Works on any per-query matrix (no index needed); see the module docstring for the definitions.
    """
    values = np.asarray(per_query_grid, dtype=np.float64)
    if values.ndim != 3 or values.shape[:2] != (len(k1_grid), len(b_grid)):
        raise ParameterError(f"per-query grid has shape {values.shape}; expected ({len(k1_grid)}, {len(b_grid)}, queries)")
    if np.isnan(values).any():
        raise ParameterError("per-query grid has missing (NaN) values")
    num_queries = values.shape[2]
    held_out = np.empty(num_queries, dtype=np.float64)
    chosen: list[Fold] = []
    for number, test in enumerate(fold_assignment(num_queries, folds, seed), start=1):
        train = np.setdiff1d(np.arange(num_queries), test, assume_unique=True)
        i, j = _first_best(values[:, :, train].mean(axis=2))
        held_out[test] = values[i, j, test]
        chosen.append(Fold(number, float(k1_grid[i]), float(b_grid[j]), float(values[i, j, train].mean()),
                           float(values[i, j, test].mean()), int(test.size)))
    return CrossValidation(tuple(chosen), float(np.mean([f.train_mean for f in chosen])),
                           float(held_out.mean()), held_out)


# --------------------------------------------------------------------------- tuning an index


@dataclass(frozen=True, eq=False)
class TuneResult:
    """A tuned grid: every grid mean, the best point on all queries, the folds and the default's score."""

    measure: str
    variant: str
    k1_grid: tuple[float, ...]
    b_grid: tuple[float, ...]
    grid: np.ndarray  # (len(k1_grid), len(b_grid)) means over all queries
    best: dict[str, float]  # {"k1": ..., "b": ...}
    best_mean: float
    default_mean: float  # at DEFAULT_K1, DEFAULT_B
    folds: tuple[Fold, ...]
    train_mean: float
    test_mean: float
    num_queries: int
    depth: int  # results searched per query
    k3: float | None = None  # query-term saturation used at every grid point (None: off)

    @property
    def on_edge(self) -> list[str]:
        """Warnings for a best point on the grid's edge, where the optimum may lie outside the grid:
        one per parameter whose best value is the grid's smallest or largest, unless that value is
        the parameter's own bound (b = 0 or 1, k1 = 0) or the grid has one value only."""
        limits = {"k1": (0.0, math.inf), "b": (0.0, 1.0)}
        warnings = []
        for name, grid in (("k1", self.k1_grid), ("b", self.b_grid)):
            value, low, high = self.best[name], min(grid), max(grid)
            if len(set(grid)) < 2:
                continue
            for edge, side, option in ((low, "smallest", "lower"), (high, "largest", "higher")):
                if value == edge and edge not in limits[name]:
                    warnings.append(f"the best {name} ({value:g}) is the grid's {side} value: the optimum may lie "
                                    f"beyond it; extend --{name}-grid to {option} values")
        return warnings

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: best, train_mean, test_mean, default_mean, folds (a list of objects) and
        ``on_edge`` (the warnings of :attr:`on_edge`)."""
        return {
            "on_edge": self.on_edge,
            "best": dict(self.best),
            "train_mean": self.train_mean,
            "test_mean": self.test_mean,
            "default_mean": self.default_mean,
            "folds": [{"fold": f.index, "k1": f.k1, "b": f.b, "train_mean": f.train_mean, "test_mean": f.test_mean,
                       "num_test_queries": f.num_test_queries} for f in self.folds],
        }


def _judged(qrels: Any, queries: Mapping[str, str]) -> tuple[list[str], Any]:
    """The query ids of ``queries`` with judgments (query order) and the qrels restricted to them."""
    from .ranking import Qrels

    judgments = Qrels.from_dict(qrels).to_dict()
    qids = [str(q) for q in queries if str(q) in judgments and judgments[str(q)]]
    if not qids:
        raise InputError("no query has judgments in the qrels (are the query ids the same?)")
    return qids, Qrels.from_dict({q: judgments[q] for q in qids})


def _check_grid(variant: str, k1_grid: Sequence[float], b_grid: Sequence[float]) -> None:
    if not k1_grid or not b_grid:
        raise ParameterError("the k1 and b grids need at least one value each")
    for k1 in k1_grid:
        Params(variant, k1, DEFAULT_B).resolved()
    for b in b_grid:
        Params(variant, DEFAULT_K1, b).resolved()


def _per_query(result: Any, qids: Sequence[str], measure: str) -> np.ndarray:
    """The measure's value of every query, NaN where it has none."""
    rows = result.per_query
    return np.array([rows.get(q, {}).get(measure, math.nan) for q in qids], dtype=np.float64)


def _scorer(prepared: "PreparedBatch", qrels: Any, qids: Sequence[str], measure: str, variant: str,
            depth: int, k3: float | None = None) -> Callable[[float, float], np.ndarray]:
    """``score(k1, b)``: the per-query values of ``measure`` (query order ``qids``) at one grid point."""
    from .evaluator import evaluate
    from .ranking import Run

    def score(k1: float, b: float) -> np.ndarray:
        run = Run.from_results(prepared.search(k=depth, variant=variant, k1=k1, b=b, k3=k3))
        return _per_query(evaluate(qrels, run, [measure], complete=True), qids, measure)

    return score


def tune(index: "Index", queries: Mapping[str, str], qrels: Any, measure: str = "nDCG@10",
         variant: str = DEFAULT_VARIANT, k1_grid: Sequence[float] = DEFAULT_K1_GRID,
         b_grid: Sequence[float] = DEFAULT_B_GRID, folds: int = 5, k: int = 1000, seed: int = 0,
         progress: ProgressCallback | None = None, k3: float | None = None) -> TuneResult:
    """Grid search of (k1, b) on ``index`` for ``measure``, with ``folds``-fold cross-validation.

    ``queries`` is ``{qid: text}``; ``qrels`` is ``{qid: {docid: grade}}`` or a ``Qrels``. Every grid
    point reuses the postings gathered once by ``index.batch``; ``k3`` (fixed over the grid) saturates
    repeated query terms. See the module docstring.
    """
    k1_grid, b_grid = tuple(float(v) for v in k1_grid), tuple(float(v) for v in b_grid)
    _check_grid(variant, k1_grid, b_grid)
    Params(variant, k3=k3).resolved()
    if k < 1:
        raise ParameterError(f"k must be >= 1, got {k}")
    qids, judged = _judged(qrels, queries)
    fold_assignment(len(qids), folds, seed)  # fail before searching when there are too few queries
    depth = search_depth(measure, k)
    score = _scorer(index.batch({q: queries[q] for q in qids}), judged, qids, measure, variant, depth, k3)
    values = np.empty((len(k1_grid), len(b_grid), len(qids)), dtype=np.float64)
    total = values.shape[0] * values.shape[1]
    for n, (i, j) in enumerate(np.ndindex(*values.shape[:2]), start=1):
        values[i, j] = score(k1_grid[i], b_grid[j])
        if progress is not None:
            progress(n, total)
    defaults = score(DEFAULT_K1, DEFAULT_B)
    defined = ~np.isnan(values).any(axis=(0, 1)) & ~np.isnan(defaults)
    if not defined.any():
        raise InputError(f"{measure} has no value for any query")
    values, defaults = values[:, :, defined], defaults[defined]
    cv = cross_validate(values, k1_grid, b_grid, folds, seed)
    grid = values.mean(axis=2)
    i, j = _first_best(grid)
    return TuneResult(measure, variant, k1_grid, b_grid, grid, {"k1": k1_grid[i], "b": b_grid[j]},
                      float(grid[i, j]), float(defaults.mean()), cv.folds, cv.train_mean, cv.test_mean,
                      int(defined.sum()), depth, k3)


# --------------------------------------------------------------------------- tuning feedback


@dataclass(frozen=True, eq=False)
class FeedbackTuning:
    """A feedback method's (fb_docs, fb_terms) grid at fixed BM25 parameters, cross-validated as :func:`tune`
    cross-validates (k1, b): ``grid[i, j]`` the mean at ``docs_grid[i]``, ``terms_grid[j]``; ``folds`` hold each
    fold's choice as ``Fold(k1=fb_docs, b=fb_terms)``; ``none_mean`` the measure without feedback."""

    measure: str
    method: str
    docs_grid: tuple[int, ...]
    terms_grid: tuple[int, ...]
    grid: np.ndarray
    best: dict[str, int]
    best_mean: float
    none_mean: float
    folds: tuple[Fold, ...]
    train_mean: float
    test_mean: float
    num_queries: int

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "best": dict(self.best), "best_mean": self.best_mean,
                "none_mean": self.none_mean, "train_mean": self.train_mean, "test_mean": self.test_mean,
                "folds": [{"fold": f.index, "fb_docs": int(f.k1), "fb_terms": int(f.b), "train_mean": f.train_mean,
                           "test_mean": f.test_mean, "num_test_queries": f.num_test_queries} for f in self.folds]}


def tune_feedback(index: Any, queries: Mapping[str, str], qrels: Any, measure: str = "nDCG@10",
                  method: str = "rm3", docs_grid: Sequence[int] = (5, 10, 20), terms_grid: Sequence[int] = (5, 10, 20),
                  original_query_weight: float | None = None, params: Params | None = None, folds: int = 5,
                  k: int = 1000, seed: int = 0, progress: ProgressCallback | None = None) -> FeedbackTuning:
    """Grid search of a feedback method's ``fb_docs`` x ``fb_terms`` (:mod:`bm25lab.engine.feedback`) at the
    BM25 parameters ``params`` (default: the engine's), with the queries' k-fold cross-validation of
    :func:`cross_validate` (same folds, same tie rule: the first grid point in row-major order)."""
    from ..engine.feedback import Feedback, FeedbackStatistics, expand, second_pass
    from .evaluator import evaluate

    docs_grid, terms_grid = tuple(int(v) for v in docs_grid), tuple(int(v) for v in terms_grid)
    if not docs_grid or not terms_grid or min(docs_grid + terms_grid) < 1:
        raise ParameterError("the feedback grids need values >= 1")
    qids, judged = _judged(qrels, queries)
    fold_assignment(len(qids), folds, seed)
    params = params or index.params()
    tokens = {q: index.tokenizer.tokenize(queries[q]) for q in qids}
    stats = FeedbackStatistics(index)

    def values_of(run: Mapping[str, Any]) -> np.ndarray:
        return _per_query(evaluate(judged, run, [measure], complete=True), qids, measure)

    values = np.empty((len(docs_grid), len(terms_grid), len(qids)))
    for n, (i, j) in enumerate(np.ndindex(*values.shape[:2]), start=1):
        feedback = Feedback(method, docs_grid[i], terms_grid[j], original_query_weight).resolved()
        run = {q: second_pass(stats, expand(index, tokens[q], params, feedback, stats), params, k) for q in qids}
        values[i, j] = values_of(run)
        if progress is not None:
            progress(n, values.shape[0] * values.shape[1])
    plain = values_of(index.search_many({q: queries[q] for q in qids}, k=k, params=params))
    defined = ~np.isnan(values).any(axis=(0, 1)) & ~np.isnan(plain)
    values, plain = values[:, :, defined], plain[defined]
    cv = cross_validate(values, docs_grid, terms_grid, folds, seed)
    grid = values.mean(axis=2)
    i, j = _first_best(grid)
    return FeedbackTuning(measure, method, docs_grid, terms_grid, grid, {"fb_docs": docs_grid[i], "fb_terms": terms_grid[j]},
                          float(grid[i, j]), float(plain.mean()), cv.folds, cv.train_mean, cv.test_mean,
                          int(defined.sum()))
