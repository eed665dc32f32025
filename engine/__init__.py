"""bm25lab's search engine: tokenizers, an inverted index, BM25 variants and fast top-k search.

    from bm25lab.engine import Tokenizer, Index, Hit
"""
from .errors import BM25LabError, IndexFormatError, IndexLockedError, InputError
from .index import Index
from .records import Document, Hit, Hits
from .segments import Change
from .scoring import VARIANTS
from .tokenization import Tokenizer

__all__ = ["BM25LabError", "Change", "Document", "Hit", "Hits", "Index", "IndexFormatError", "IndexLockedError",
           "InputError", "Tokenizer", "VARIANTS"]
