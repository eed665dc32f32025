"""Run fusion: several runs of the same queries -> one run (``bm25lab fuse``, :func:`fuse`).

Data flows one way: runs -> per-run, per-query normalized scores (:data:`NORMALIZATIONS`) -> one row per
(run, query, document) -> per (query, document) a fused score (:data:`METHODS`) -> a :class:`Run`, ranked
by the tie rule. Every method and normalization is a small named function with its formula, registered
by the name the command line uses; they equal ranx's ``fuse(runs, norm=..., method=...)`` (the tests
compare scores per query and document to 1e-12, and the rankings).

**Conventions** (ranx's, unless said):

- A run's *rank* of a document is its 1-based position in the run ranked by the tie rule (score
  descending, document id descending). ranx takes the position in its own sort (numpy's argsort, whose
  order among tied scores is not specified): with tied scores in an input run the rank-based methods
  (``rrf``, ``isr``, ``log_isr``, ``logn_isr``) and the ``rank`` normalization may differ from ranx on
  the tied documents; bm25lab's result is fixed by the tie rule.
- Normalization is per run and per query, over the documents that run retrieved for it; a document a
  run did not retrieve has no score in it. ``sum``-style methods (``combsum``, ``wsum``, ``rrf``) add 0
  for it (ranx's ``res.get(doc_id, 0.0)``); the ``*nz`` and ``min``/``max``/``med`` methods use the runs
  that retrieved it only.
- Queries: every query of any run (first-appearance order). ranx refuses runs whose queries differ;
  here a run that lacks a query simply contributes nothing to it (a deliberate difference).
- The fused run holds every document any run retrieved for the query (no cut; ``depth`` keeps the best
  ``depth``), ranked by the tie rule.

Weights: ``wsum`` and ``wmnz`` take one weight per run (default 1 each); :func:`tune_weights` chooses
them on a grid of the simplex (weights >= 0 summing to 1, a step apart) with the queries' k-fold
cross-validation of :mod:`bm25lab.evaluation.tuning` (:func:`~bm25lab.evaluation.tuning.fold_assignment`).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .errors import InputError, ParameterError
from .ranking import Qrels, Run

__all__ = ["METHODS", "NORMALIZATIONS", "Columns", "FusionTuning", "fuse", "tune_weights", "weight_grid"]

_FLOOR = 1e-9
"""ranx's smallest denominator of a normalization (``max(denominator, 1e-9)``)."""


@dataclass(frozen=True)
class Columns:
    """The runs' rows side by side: per row its run, query position (in ``qids``), document code (in
    ``docs``), normalized score and rank in its run; rows grouped by run, then query, in rank order."""

    qids: tuple[str, ...]
    docs: Any  # pyarrow string array of the distinct document ids
    run: np.ndarray
    query: np.ndarray
    doc: np.ndarray
    score: np.ndarray
    rank: np.ndarray


# --------------------------------------------------------------------------- normalizations
# Each takes one run's scores of one query's documents (rank order) and returns them normalized;
# applied segment by segment (segment = query) through :func:`_per_segment`.


def _segments(seg: np.ndarray, count: int) -> np.ndarray:
    return np.searchsorted(seg, np.arange(count + 1))


def _seg_min(x: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    starts = bounds[:-1][np.diff(bounds) > 0]
    out = np.zeros(bounds.size - 1)
    out[np.diff(bounds) > 0] = np.minimum.reduceat(x, starts) if starts.size else []
    return out


def _seg_max(x: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    return -_seg_min(-x, bounds)


def _seg_sum(x: np.ndarray, seg: np.ndarray, count: int) -> np.ndarray:
    return np.bincount(seg, weights=x, minlength=count)


def norm_minmax(score: np.ndarray, seg: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """(s - min) / max(max - min, 1e-9) (ranx ``min-max``)."""
    low, high = _seg_min(score, bounds), _seg_max(score, bounds)
    return (score - low[seg]) / np.maximum(high - low, _FLOOR)[seg]


def norm_max(score: np.ndarray, seg: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """s / max(max, 1e-9) (ranx ``max``)."""
    return score / np.maximum(_seg_max(score, bounds), _FLOOR)[seg]


def norm_sum(score: np.ndarray, seg: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """(s - min) / max(sum - n min, 1e-9) (ranx ``sum``)."""
    count = np.diff(bounds)
    low = _seg_min(score, bounds)
    total = _seg_sum(score, seg, count.size)
    return (score - low[seg]) / np.maximum(total - low * count, _FLOOR)[seg]


def norm_zscore(score: np.ndarray, seg: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """(s - mean) / max(std, 1e-9), the population standard deviation (ranx ``zmuv``)."""
    count = np.maximum(np.diff(bounds), 1)
    mean = _seg_sum(score, seg, count.size) / count
    centred = score - mean[seg]
    std = np.sqrt(_seg_sum(centred * centred, seg, count.size) / count)
    return centred / np.maximum(std, _FLOOR)[seg]


def norm_rank(score: np.ndarray, seg: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """1 - (rank - 1) / n, n the documents the run retrieved for the query (ranx ``rank``)."""
    count = np.diff(bounds)
    position = np.arange(score.size) - bounds[:-1][seg]
    return 1.0 - position / count[seg]


def norm_none(score: np.ndarray, seg: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """The scores as they are."""
    return score


Normalization = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
NORMALIZATIONS: dict[str, Normalization] = {
    "minmax": norm_minmax,
    "zscore": norm_zscore,
    "sum": norm_sum,
    "max": norm_max,
    "rank": norm_rank,
    "none": norm_none,
}
"""Normalizations by name (ranx's ``min-max``, ``zmuv``, ``sum``, ``max``, ``rank``, ``None``)."""
RANX_NORMS = {"minmax": "min-max", "zscore": "zmuv", "sum": "sum", "max": "max", "rank": "rank", "none": None}


# --------------------------------------------------------------------------- fusion methods


@dataclass(frozen=True)
class Groups:
    """Rows gathered by (query, document): ``group`` of each row (rows ordered by group, then run), the
    group's query and document, and the number of groups."""

    group: np.ndarray
    query: np.ndarray
    doc: np.ndarray
    count: int

    def total(self, values: np.ndarray) -> np.ndarray:
        """Per group, the sum of ``values`` added in run order (as ranx's ``sum([...])``)."""
        return np.bincount(self.group, weights=values, minlength=self.count)

    def present(self) -> np.ndarray:
        """Per group, the number of runs that retrieved the document."""
        return np.bincount(self.group, minlength=self.count).astype(np.float64)

    def extreme(self, values: np.ndarray, ufunc: np.ufunc) -> np.ndarray:
        starts = np.flatnonzero(np.r_[True, self.group[1:] != self.group[:-1]]) if self.group.size else self.group
        return ufunc.reduceat(values, starts) if starts.size else np.zeros(0)


@dataclass(frozen=True)
class FusionInput:
    """What a method reads: the rows' normalized scores and ranks, their groups, the weights, options."""

    rows: Columns
    groups: Groups
    weights: np.ndarray  # one per run
    k: float  # rrf's constant
    gamma: float  # combgmnz's exponent
    sigma: float  # logn_isr's constant


def comb_sum(x: FusionInput) -> np.ndarray:
    """CombSUM = sum of the document's scores over the runs (Fox and Shaw, TREC-2 1993)."""
    return x.groups.total(x.rows.score)


def comb_mnz(x: FusionInput) -> np.ndarray:
    """CombMNZ = CombSUM times the number of runs that retrieved the document."""
    return x.groups.total(x.rows.score) * x.groups.present()


def comb_anz(x: FusionInput) -> np.ndarray:
    """CombANZ = CombSUM divided by the number of runs that retrieved the document."""
    return x.groups.total(x.rows.score) / x.groups.present()


def comb_gmnz(x: FusionInput) -> np.ndarray:
    """CombGMNZ = CombSUM times (runs that retrieved it)^gamma (Lee, SIGIR 1997)."""
    return x.groups.total(x.rows.score) * x.groups.present() ** x.gamma


def comb_max(x: FusionInput) -> np.ndarray:
    """CombMAX = the largest of the document's scores."""
    return x.groups.extreme(x.rows.score, np.maximum)


def comb_min(x: FusionInput) -> np.ndarray:
    """CombMIN = the smallest of the document's scores (over the runs that retrieved it)."""
    return x.groups.extreme(x.rows.score, np.minimum)


def comb_med(x: FusionInput) -> np.ndarray:
    """CombMED = the median of the document's scores (the mean of the two middle ones for an even count)."""
    order = np.lexsort((x.rows.score, x.groups.group))
    values = x.rows.score[order]
    count = np.bincount(x.groups.group, minlength=x.groups.count)
    start = np.concatenate(([0], np.cumsum(count)[:-1]))
    low, high = values[start + (count - 1) // 2], values[start + count // 2]
    return np.where(count % 2 == 1, low, (low + high) / 2.0)


def wsum(x: FusionInput) -> np.ndarray:
    """Weighted sum = sum over the runs of weight_i x score_i."""
    return x.groups.total(x.weights[x.rows.run] * x.rows.score)


def wmnz(x: FusionInput) -> np.ndarray:
    """WMNZ = CombSUM times the sum of the weights of the runs that retrieved it (Wu and Crestani, CIKM 2002)."""
    return x.groups.total(x.rows.score) * x.groups.total(x.weights[x.rows.run])


def rrf(x: FusionInput) -> np.ndarray:
    """Reciprocal rank fusion = sum over the runs of 1 / (k + rank), k = 60 (Cormack, Clarke and Buettcher,
    SIGIR 2009); scores are not used."""
    return x.groups.total(1.0 / (x.k + x.rows.rank))


def isr(x: FusionInput) -> np.ndarray:
    """ISR = (sum over the runs of 1 / rank^2) times the runs that retrieved it (Mourao et al. 2015)."""
    return x.groups.total(1.0 / x.rows.rank ** 2) * x.groups.present()


def log_isr(x: FusionInput) -> np.ndarray:
    """log_ISR = (sum of 1 / rank^2) times ln(runs that retrieved it): 0 for a document of one run only."""
    return x.groups.total(1.0 / x.rows.rank ** 2) * np.log(x.groups.present())


def logn_isr(x: FusionInput) -> np.ndarray:
    """logn_ISR = (sum of 1 / rank^2) times ln(runs that retrieved it + sigma), sigma = 0.01."""
    return x.groups.total(1.0 / x.rows.rank ** 2) * np.log(x.groups.present() + x.sigma)


Method = Callable[[FusionInput], np.ndarray]
METHODS: dict[str, Method] = {
    "rrf": rrf,
    "combsum": comb_sum,
    "combmnz": comb_mnz,
    "combmax": comb_max,
    "combmin": comb_min,
    "combmed": comb_med,
    "combanz": comb_anz,
    "combgmnz": comb_gmnz,
    "wsum": wsum,
    "wmnz": wmnz,
    "isr": isr,
    "log_isr": log_isr,
    "logn_isr": logn_isr,
}
"""Fusion methods by name."""
RANX_METHODS = {"rrf": "rrf", "combsum": "sum", "combmnz": "mnz", "combmax": "max", "combmin": "min",
                "combmed": "med", "combanz": "anz", "combgmnz": "gmnz", "wsum": "wsum", "wmnz": "wmnz", "isr": "isr",
                "log_isr": "log_isr", "logn_isr": "logn_isr"}
"""ranx's name of each method (``ranx.fuse(..., method=...)``), for the tests and the docs."""
WEIGHTED = frozenset({"wsum", "wmnz"})
"""The methods that take one weight per run."""


# --------------------------------------------------------------------------- fuse


def _lookup(table: Mapping[str, Any], name: str, what: str) -> Any:
    try:
        return table[name]
    except KeyError:
        raise ParameterError(f"unknown {what} {name!r}; choose one of: {', '.join(table)}") from None


def _columns(runs: Sequence[Run], normalize: Normalization) -> Columns:
    """Every run's rows with query positions in the union of the runs' queries and document codes."""
    import pyarrow as pa

    qids = tuple(dict.fromkeys(q for run in runs for q in run.qids))
    at = {q: i for i, q in enumerate(qids)}
    parts: dict[str, list[np.ndarray]] = {"run": [], "query": [], "score": [], "rank": []}
    docs = []
    for number, run in enumerate(runs):
        sizes = np.diff(run.offsets)
        seg = np.repeat(np.arange(run.num_queries), sizes)
        bounds = run.offsets
        parts["run"].append(np.full(seg.size, number, dtype=np.int64))
        parts["query"].append(np.array([at[q] for q in run.qids], dtype=np.int64)[seg])
        parts["score"].append(np.asarray(normalize(run.score, seg, bounds), dtype=np.float64))
        parts["rank"].append((np.arange(seg.size) - bounds[:-1][seg] + 1).astype(np.float64))
        docs.append(run.doc_ids)
    chunks = [chunk for column in docs for chunk in (column.chunks if hasattr(column, "chunks") else [column])]
    encoded = pa.chunked_array(chunks, type=pa.string()).combine_chunks().dictionary_encode()
    return Columns(qids, encoded.dictionary, *(np.concatenate(parts[key]) for key in ("run", "query")),
                   np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64),
                   *(np.concatenate(parts[key]) for key in ("score", "rank")))


def _groups(rows: Columns) -> tuple[Groups, np.ndarray]:
    """The rows' (query, document) groups, and the order that sorts the rows by group, then run."""
    key = rows.query * np.int64(max(len(rows.docs), 1)) + rows.doc
    order = np.lexsort((rows.run, key))
    unique, first, inverse = np.unique(key[order], return_index=True, return_inverse=True)
    sorted_rows = order[first]
    return Groups(inverse.astype(np.int64), rows.query[sorted_rows], rows.doc[sorted_rows], int(unique.size)), order


def _sorted(rows: Columns, order: np.ndarray) -> Columns:
    return Columns(rows.qids, rows.docs, rows.run[order], rows.query[order], rows.doc[order], rows.score[order],
                   rows.rank[order])


def _weights(weights: Sequence[float] | None, count: int) -> np.ndarray:
    if weights is None:
        return np.ones(count)
    values = np.asarray([float(w) for w in weights], dtype=np.float64)
    if values.size != count:
        raise ParameterError(f"{values.size} weights for {count} runs: give one weight per run")
    if not np.isfinite(values).all():
        raise ParameterError("weights must be finite numbers")
    return values


def fuse(
    runs: Sequence[Run | Mapping[str, Any]],
    method: str = "rrf",
    norm: str = "minmax",
    weights: Sequence[float] | None = None,
    *,
    k: float = 60.0,
    gamma: float = 1.0,
    sigma: float = 0.01,
    depth: int | None = None,
    name: str = "fused",
) -> Run:
    """Fuse ``runs`` (:class:`Run` or ``{qid: {docid: score}}``) into one run with ``method`` after ``norm``
    (see the module docstring); ``weights`` for ``wsum``/``wmnz`` (one per run, default 1 each), ``k`` for
    ``rrf``, ``gamma`` for ``combgmnz``, ``sigma`` for ``logn_isr``; ``depth`` keeps each query's best
    ``depth`` documents. Equal to ranx's ``fuse(runs, norm=RANX_NORMS[norm], method=RANX_METHODS[method],
    params=...)`` on runs without tied scores."""
    compute = _lookup(METHODS, method, "fusion method")
    normalize = _lookup(NORMALIZATIONS, norm, "normalization")
    loaded = [Run.from_dict(run) for run in runs]
    if len(loaded) < 2:
        raise ParameterError(f"fusion needs at least 2 runs, got {len(loaded)}")
    if weights is not None and method not in WEIGHTED:
        raise ParameterError(f"{method} takes no weights; {' and '.join(sorted(WEIGHTED))} do")
    if not sigma >= 0 or not math.isfinite(k) or k < 0:
        raise ParameterError("rrf's k and logn_isr's sigma must be finite numbers >= 0")
    rows = _columns(loaded, normalize)
    groups, order = _groups(rows)
    rows = _sorted(rows, order)
    scores = compute(FusionInput(rows, groups, _weights(weights, len(loaded)), float(k), float(gamma), float(sigma)))
    fused = Run.from_columns([rows.qids[q] for q in groups.query.tolist()], rows.docs.take(groups.doc),
                             scores, qids=rows.qids, name=name)
    return fused if depth is None else fused.truncated(depth)


# --------------------------------------------------------------------------- tuning the weights


def weight_grid(runs: int, step: float = 0.1) -> list[tuple[float, ...]]:
    """Every weight vector of ``runs`` weights >= 0, multiples of ``step``, summing to 1 (the simplex).

    Scaling every weight by one factor scales every fused score and keeps the ranking, so the simplex
    holds every ranking ``wsum`` can give on this grid. The order is lexicographic (first weight
    ascending), which decides ties between points (the first wins)."""
    if runs < 2:
        raise ParameterError(f"fusion needs at least 2 runs, got {runs}")
    parts = round(1.0 / step)
    if not 0.0 < step <= 1.0 or abs(parts * step - 1.0) > 1e-9:
        raise ParameterError(f"the weight step must divide 1 (0.5, 0.25, 0.1, 0.05, ...), got {step:g}")
    if math.comb(parts + runs - 1, runs - 1) > 100_000:
        raise ParameterError(f"a weight step of {step:g} over {runs} runs gives more than 100,000 points; "
                             f"take a larger step")
    return [tuple(round(c / parts, 10) for c in counts)
            for counts in itertools.product(range(parts + 1), repeat=runs) if sum(counts) == parts]


@dataclass(frozen=True)
class FusionTuning:
    """Weights chosen for a measure: the best point on all queries, the folds' choices and means."""

    measure: str
    method: str
    norm: str
    points: tuple[tuple[float, ...], ...]
    means: np.ndarray  # mean of the measure at each point, over all queries
    best: tuple[float, ...]
    best_mean: float
    equal_mean: float  # every run weighted alike
    folds: tuple[tuple[int, tuple[float, ...], float, float, int], ...]  # (fold, weights, train, test, queries)
    train_mean: float
    test_mean: float
    num_queries: int

    def to_dict(self) -> dict[str, Any]:
        return {"measure": self.measure, "method": self.method, "norm": self.norm, "best": list(self.best),
                "best_mean": self.best_mean, "equal_mean": self.equal_mean, "train_mean": self.train_mean,
                "test_mean": self.test_mean, "num_queries": self.num_queries,
                "folds": [{"fold": f, "weights": list(w), "train_mean": tr, "test_mean": te, "num_test_queries": n}
                          for f, w, tr, te, n in self.folds]}


def tune_weights(
    runs: Sequence[Run | Mapping[str, Any]],
    qrels: Qrels | Mapping[str, Mapping[str, float]],
    measure: str = "nDCG@10",
    method: str = "wsum",
    norm: str = "minmax",
    *,
    step: float = 0.1,
    folds: int = 5,
    seed: int = 0,
) -> FusionTuning:
    """Choose ``method``'s weights (``wsum`` or ``wmnz``) for ``measure`` on :func:`weight_grid`, with
    k-fold cross-validation over the judged queries of the runs, as ``bm25lab tune`` chooses k1 and b:
    the same seeded folds (:func:`~bm25lab.evaluation.tuning.fold_assignment`), each fold choosing the
    point with the best mean on its training queries (the first on ties) and scoring it on its held-out
    ones; queries evaluated with ``complete=True``."""
    from .evaluator import evaluate
    from .measures import numeric_measure
    from .tuning import fold_assignment

    if method not in WEIGHTED:
        raise ParameterError(f"only {' and '.join(sorted(WEIGHTED))} take weights to tune, not {method!r}")
    numeric_measure(measure)
    loaded = [Run.from_dict(run) for run in runs]
    judged = Qrels.from_dict(qrels)
    qids = [q for q in judged.qids if any(q in run.qids for run in loaded)]
    if not qids:
        raise InputError("the runs share no query with the qrels")
    fold_assignment(len(qids), folds, seed)
    points = weight_grid(len(loaded), step)

    def values(weights: Sequence[float]) -> np.ndarray:
        result = evaluate(judged, fuse(loaded, method, norm, weights), [measure], complete=True, strict=False)
        return np.array([result.per_query.get(q, {}).get(measure, math.nan) for q in qids], dtype=np.float64)

    grid = np.array([values(w) for w in points])
    equal = values([1.0] * len(loaded))
    defined = ~np.isnan(grid).any(axis=0) & ~np.isnan(equal)
    grid, equal = grid[:, defined], equal[defined]
    if not grid.shape[1]:
        raise InputError(f"{measure} has no value for any query")
    held_out = np.empty(grid.shape[1])
    chosen = []
    for number, test in enumerate(fold_assignment(grid.shape[1], folds, seed), start=1):
        train = np.setdiff1d(np.arange(grid.shape[1]), test, assume_unique=True)
        best = int(np.argmax(grid[:, train].mean(axis=1)))
        held_out[test] = grid[best, test]
        chosen.append((number, points[best], float(grid[best, train].mean()), float(grid[best, test].mean()),
                       int(test.size)))
    means = grid.mean(axis=1)
    best = int(np.argmax(means))
    return FusionTuning(measure, method, norm, tuple(points), means, points[best], float(means[best]),
                        float(equal.mean()), tuple(chosen), float(np.mean([c[2] for c in chosen])),
                        float(held_out.mean()), int(grid.shape[1]))
