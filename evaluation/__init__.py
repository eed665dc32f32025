"""bm25lab's evaluation harness: read qrels and runs, measure with trec_eval's conventions, report.

    from bm25lab.evaluation import read_qrels, read_run, write_run, evaluate
    result = evaluate(read_qrels("qrels.trec"), read_run("run.trec"), ["P@10", "nDCG@10", "AP"])
    result.per_query["1"]["AP"], result.mean["nDCG@10"], result.num_queries

Modules follow the data: ``readers`` (files in and out), ``ranking`` (columnar qrels and runs, the tie
rule, the judged ranking), ``measures`` (registry of measures), ``evaluator`` (which queries count,
means), ``report`` (table, trec_eval text, JSON, CSV).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..engine.lazy import lazy_exports

# name -> module; loaded on first use so that `bm25lab search` never pays for the evaluation code
_EXPORTS = {
    "EvaluationError": ".errors",
    "InputError": ".errors",
    "MeasureError": ".errors",
    "EvaluationResult": ".evaluator",
    "evaluate": ".evaluator",
    "MEASURES": ".measures",
    "parse_measure": ".measures",
    "Qrels": ".ranking",
    "Run": ".ranking",
    "read_qrels": ".readers",
    "read_run": ".readers",
    "write_run": ".readers",
}
__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from .errors import EvaluationError, InputError, MeasureError
    from .evaluator import EvaluationResult, evaluate
    from .measures import MEASURES, parse_measure
    from .ranking import Qrels, Run
    from .readers import read_qrels, read_run, write_run


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
