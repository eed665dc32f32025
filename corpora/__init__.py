"""Bundled test collections, loaded by name: ``get("cranfield").documents()``.

Every collection lives in ``corpora/<name>/`` in one layout: ``docs.jsonl.gz`` (``{"id", "title",
"text", ...metadata}``), ``queries.jsonl`` (``{"id", "text", ...}``, all queries), ``qrels.trec``
(``qid 0 docid grade``) and ``meta.json`` (descriptive fields and counts), plus a README and, where the
source has one, its LICENCE. ``bm25lab.corpora.convert`` regenerates the files from ``../shared/corpora``;
loading never needs that folder. ``get("irds:ID")`` gives a collection of ir_datasets instead
(:mod:`bm25lab.corpora.irds`, the ``irds`` extra).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    from ..engine.records import Document
    from ..evaluation.ranking import Qrels
    from .irds import IrdsCorpus

__all__ = ["Corpus", "FORMAT_VERSION", "documents_of", "get", "names"]

ROOT = Path(__file__).resolve().parent
FORMAT_VERSION = 1
DOCS_FILE, QUERIES_FILE, QRELS_FILE, META_FILE = "docs.jsonl.gz", "queries.jsonl", "qrels.trec", "meta.json"


@dataclass(frozen=True)
class Corpus:
    """One bundled collection: what ``meta.json`` says about it and readers for its files."""

    name: str
    language: str  # "en" or "zh"
    description: str
    licence: str
    source: str
    path: Path
    num_docs: int
    num_queries: int
    num_judged_queries: int
    num_judgments: int = 0
    grades: str = ""

    @property
    def docs_path(self) -> Path:
        return self.path / DOCS_FILE

    @property
    def queries_path(self) -> Path:
        return self.path / QUERIES_FILE

    @property
    def qrels_path(self) -> Path:
        return self.path / QRELS_FILE

    @property
    def size_bytes(self) -> int:
        """Bytes on disk of the collection's folder."""
        return sum(p.stat().st_size for p in self.path.iterdir() if p.is_file())

    def documents(self) -> Iterator[Document]:
        """Stream the documents in file order; extra JSON fields (author, bib) are metadata."""
        from ..engine.sources import read_documents

        return read_documents(self.docs_path, format="jsonl")

    def queries(self) -> dict[str, str]:
        """Every query as ``{qid: text}``, judged or not, in file order."""
        from ..engine.sources import read_queries

        return read_queries(self.queries_path, format="jsonl")

    def qrels(self, trec_eval: int | None = None) -> Qrels:
        """The judgments of ``qrels.trec`` (read by the rules of ``trec_eval``, 9 or 10; None: the default)."""
        from ..evaluation.readers import read_qrels

        return read_qrels(self.qrels_path, format="trec", **({} if trec_eval is None else {"trec_eval": trec_eval}))

    def judged_queries(self) -> dict[str, str]:
        """The queries with at least one line in ``qrels.trec``, in file order."""
        judged = _qrels_query_ids(self.qrels_path)
        return {qid: text for qid, text in self.queries().items() if qid in judged}


def _qrels_query_ids(path: Path) -> set[str]:
    with path.open(encoding="utf-8") as stream:
        return {line.split(maxsplit=1)[0] for line in stream if line.strip()}


def names() -> list[str]:
    """The bundled collections, sorted: every sub-folder holding a ``meta.json``."""
    return sorted(p.parent.name for p in ROOT.glob(f"*/{META_FILE}"))


def get(name: str) -> Corpus | IrdsCorpus:
    """The bundled collection ``name``, or the ir_datasets collection ``irds:ID``; an unknown name raises
    InputError listing the known ones."""
    from .irds import is_irds, load

    if is_irds(name):
        return load(name)
    folder = ROOT / name
    if name not in names():
        from ..engine.errors import InputError

        raise InputError(f"unknown corpus {name!r}; bundled: {', '.join(names())}")
    meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
    version = meta.pop("format_version", None)
    if version != FORMAT_VERSION:
        from ..engine.errors import InputError

        raise InputError(
            f"corpus format version {version}, this bm25lab reads {FORMAT_VERSION}: "
            "regenerate with `python -m bm25lab.corpora.convert`",
            folder / META_FILE,
        )
    return Corpus(path=folder, **meta)


def documents_of(source: str | Path) -> Iterator[Document]:
    """The documents of ``source``: a file or folder in any format
    :func:`bm25lab.engine.sources.read_documents` reads, else the bundled collection of that name."""
    from ..engine.errors import InputError
    from ..engine.sources import read_documents

    path = Path(source)
    if path.exists():
        return read_documents(path)
    if str(source) in names() or str(source).startswith("irds:"):
        return get(str(source)).documents()
    raise InputError(f"no such file or folder, nor a bundled corpus ({', '.join(names())})", source)
