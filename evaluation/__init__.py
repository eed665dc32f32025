"""bm25lab's evaluation harness: read qrels and runs, measure with trec_eval's conventions, report.

    from evaluation import read_qrels, read_run, write_run, evaluate
    result = evaluate(read_qrels("qrels.trec"), read_run("run.trec"), ["P@10", "nDCG@10", "AP"])
    result.per_query["1"]["AP"], result.mean["nDCG@10"], result.num_queries

Modules follow the data: ``readers`` (files in and out), ``ranking`` (columnar qrels and runs, the tie
rule, the judged ranking), ``measures`` (registry of measures), ``evaluate`` (which queries count,
means), ``report`` (table, trec_eval text, JSON, CSV).
"""
from evaluation.errors import EvaluationError, InputError, MeasureError
from evaluation.evaluate import EvaluationResult, evaluate
from evaluation.measures import MEASURES, parse_measure
from evaluation.ranking import Qrels, Run
from evaluation.readers import read_qrels, read_run, write_run

__all__ = [
    "EvaluationError",
    "EvaluationResult",
    "InputError",
    "MEASURES",
    "MeasureError",
    "Qrels",
    "Run",
    "evaluate",
    "parse_measure",
    "read_qrels",
    "read_run",
    "write_run",
]
