"""bm25lab's search engine: tokenizers, an inverted index, BM25 variants and fast top-k search.

    from bm25lab.engine import Tokenizer, Index, Hit

Modules follow the data: ``sources`` (documents and queries in), ``tokenization`` (text to terms),
``postings`` and ``segments`` (terms to an index), ``storage``, ``files``, ``docstore`` and ``locking``
(the index on disk), ``scoring`` (BM25 variants), ``retrieval`` (weights and the numpy reference search),
``backends`` (the hot operations in numpy, their specification, and in the compiled core, ``core``), ``selection`` (top-k and the
tie rule), ``records`` (documents, hits, results), ``index`` (the ``Index`` that ties them), ``shards``
(a sharded index: N indexes searched as one with global statistics).
Names are loaded on first use: importing this package imports no numpy.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .lazy import lazy_exports

# public name -> the module (relative to this package) that defines it
_EXPORTS = {
    "BM25LabError": ".errors",
    "IndexFormatError": ".errors",
    "IndexLockedError": ".errors",
    "InputError": ".errors",
    "ParameterError": ".errors",
    "Index": ".index",
    "PreparedBatch": ".index",
    "ShardedIndex": ".shards",
    "Document": ".records",
    "Hit": ".records",
    "Hits": ".records",
    "Results": ".records",
    "Change": ".segments",
    "VARIANTS": ".scoring",
    "Tokenizer": ".tokenization",
    "BACKENDS": ".backends",
    "read_documents": ".sources",
    "read_queries": ".sources",
}
__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from .backends import BACKENDS
    from .errors import BM25LabError, IndexFormatError, IndexLockedError, InputError, ParameterError
    from .index import Index, PreparedBatch
    from .shards import ShardedIndex
    from .records import Document, Hit, Hits, Results
    from .scoring import VARIANTS
    from .segments import Change
    from .sources import read_documents, read_queries
    from .tokenization import Tokenizer


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
