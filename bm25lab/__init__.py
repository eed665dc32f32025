"""bm25lab: a BM25 search engine for Chinese and English with a trec_eval-exact evaluation harness.

    import bm25lab
    index = bm25lab.Index.build(bm25lab.corpora.get("cranfield").documents())
    results = index.search_many({"1": "boundary layer transition"}, k=1000)
    bm25lab.evaluate(bm25lab.read_qrels("qrels.trec"), results, ["nDCG@10", "AP"])

The package has three layers, each a sub-package: :mod:`bm25lab.engine` (tokenizers, index,
BM25, top-k search; imports nothing else of bm25lab), :mod:`bm25lab.evaluation` (qrels, runs,
measures, comparisons, tuning; uses the engine only through its result type) and
:mod:`bm25lab.corpora` (the bundled collections). :mod:`bm25lab.experiments` and the command line
(:mod:`bm25lab.cli`) sit above the three. This module only hands their public names on, each
loaded when first used: ``import bm25lab`` imports no numpy, jieba or pyarrow. :mod:`bm25lab.distributed`
runs sharded indexes (:class:`ShardedIndex`) on a Dask cluster (the ``distributed`` extra).
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

# Installed, the sub-packages engine, evaluation and corpora sit in this folder. In a checkout they are
# the top-level folders beside it (pyproject.toml maps them): when the checkout's own bm25lab/ is the
# one imported (``python -m pytest`` or ``python -c`` at the checkout's root put it first on sys.path),
# they are found there, as the installation would find them.
if not os.path.isdir(os.path.join(__path__[0], "engine")) and os.path.isfile(
        os.path.join(__path__[0], os.pardir, "pyproject.toml")):
    __path__.append(os.path.dirname(os.path.abspath(__path__[0])))

from .engine.lazy import lazy_exports  # noqa: E402 (the sub-packages are found once __path__ is set)

__version__ = "0.2.1"

# public name -> the module (relative to this package) that defines it
_EXPORTS = {
    "Index": ".engine.index",
    "ShardedIndex": ".engine.shards",
    "Tokenizer": ".engine.tokenization",
    "Document": ".engine.records",
    "Hit": ".engine.records",
    "Hits": ".engine.records",
    "Results": ".engine.records",
    "Change": ".engine.segments",
    "Feedback": ".engine.feedback",
    "VARIANTS": ".engine.scoring",
    "BACKENDS": ".engine.backends",
    "read_documents": ".engine.sources",
    "read_queries": ".engine.sources",
    "BM25LabError": ".engine.errors",
    "InputError": ".engine.errors",
    "IndexFormatError": ".engine.errors",
    "IndexLockedError": ".engine.errors",
    "ParameterError": ".engine.errors",
    "EvaluationError": ".evaluation.errors",
    "MeasureError": ".evaluation.errors",
    "Qrels": ".evaluation.ranking",
    "Run": ".evaluation.ranking",
    "read_qrels": ".evaluation.readers",
    "read_run": ".evaluation.readers",
    "write_run": ".evaluation.readers",
    "evaluate": ".evaluation.evaluator",
    "EvaluationResult": ".evaluation.evaluator",
    "MEASURES": ".evaluation.measures",
    "parse_measure": ".evaluation.measures",
    "compare": ".evaluation.compare",
    "fuse": ".evaluation.fusion",
    "tune": ".evaluation.tuning",
    "experiment": ".experiments",
}
_SUBPACKAGES = ("engine", "evaluation", "corpora", "experiments", "distributed", "cli")
__all__ = ["__version__", *sorted(_EXPORTS), *_SUBPACKAGES]

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from . import corpora, distributed, engine, evaluation
    from .engine.backends import BACKENDS
    from .engine.feedback import Feedback
    from .engine.errors import BM25LabError, IndexFormatError, IndexLockedError, InputError, ParameterError
    from .engine.index import Index
    from .engine.shards import ShardedIndex
    from .engine.records import Document, Hit, Hits, Results
    from .engine.scoring import VARIANTS
    from .engine.segments import Change
    from .engine.sources import read_documents, read_queries
    from .engine.tokenization import Tokenizer
    from .evaluation.compare import compare
    from .evaluation.fusion import fuse
    from .evaluation.errors import EvaluationError, MeasureError
    from .evaluation.evaluator import EvaluationResult, evaluate
    from .evaluation.measures import MEASURES, parse_measure
    from .evaluation.ranking import Qrels, Run
    from .evaluation.readers import read_qrels, read_run, write_run
    from .evaluation.tuning import tune
    from .experiments import experiment


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals(), frozenset(_SUBPACKAGES))
