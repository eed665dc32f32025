"""Collections by ir_datasets id: ``corpora.get("irds:vaswani")``, ``bm25lab experiment irds:vaswani``,
``bm25lab evaluate irds:beir/scifact/test RUN`` (the ``irds`` extra: ``pip install "bm25lab[irds]"``).

A name ``irds:ID`` is the ir_datasets dataset ``ID`` (https://ir-datasets.com): its documents (a title
field where it has one, kept as the title; the other text fields joined as the text), its queries (the
``text`` field, else the first text field, else the text fields joined) and its qrels (TREC-style
relevance, kept as the grades). ir_datasets keeps its files under ``$IR_DATASETS_HOME`` (default
``~/.ir_datasets``) and downloads what is missing there on first use; bm25lab adds nothing to that, except
one-line errors: the package missing (naming the extra), or the data neither there nor downloadable
(naming where ir_datasets keeps it).
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from ..engine.errors import InputError

if TYPE_CHECKING:
    from ..engine.records import Document
    from ..evaluation.ranking import Qrels

__all__ = ["PREFIX", "IrdsCorpus", "is_irds", "load"]

PREFIX = "irds:"
EXTRA = 'pip install "bm25lab[irds]"'


def is_irds(name: str | os.PathLike[str]) -> bool:
    """Whether ``name`` names an ir_datasets collection (``irds:ID``)."""
    return isinstance(name, str) and name.startswith(PREFIX)


def _package() -> Any:
    try:
        import ir_datasets
    except ImportError:
        raise InputError(f"irds: collections need the ir_datasets package: {EXTRA}") from None
    return ir_datasets


def home() -> Path:
    """Where ir_datasets keeps its files: ``$IR_DATASETS_HOME``, else ``~/.ir_datasets``."""
    return Path(os.environ.get("IR_DATASETS_HOME", Path.home() / ".ir_datasets"))


def _missing(name: str, error: BaseException) -> InputError:
    text = error.args[0] if error.args and isinstance(error.args[0], str) else str(error)
    first = text.strip().splitlines()[0] if text.strip() else type(error).__name__
    top = name[len(PREFIX):].split("/")[0]
    return InputError(f"{name}: its data is not where ir_datasets keeps it, {home() / top} (IR_DATASETS_HOME), and "
                      f"could not be downloaded ({first})")


def _guarded(name: str, read: Any) -> Any:
    """``read()``, with ir_datasets' failures to find or download data as one :class:`InputError`."""
    try:
        return read()
    except InputError:
        raise
    except Exception as error:  # noqa: BLE001 - ir_datasets raises many kinds (IOError, HTTP, its own)
        raise _missing(name, error) from None


def _text_fields(record: Any, skip: tuple[str, ...]) -> list[str]:
    fields = getattr(type(record), "_fields", ())
    return [f for f in fields if f not in skip and isinstance(getattr(record, f), str)]


def _document(record: Any) -> Document:
    from ..engine.records import Document

    title = getattr(record, "title", "") or ""
    fields = _text_fields(record, ("doc_id", "title"))
    text = record.text if "text" in fields else " ".join(getattr(record, f) for f in fields)
    return Document(str(record.doc_id), text, title if isinstance(title, str) else "")


def _query_text(record: Any) -> str:
    fields = _text_fields(record, ("query_id",))
    if "text" in fields:
        return record.text
    return " ".join(getattr(record, f) for f in fields)


@dataclass(frozen=True)
class IrdsCorpus:
    """An ir_datasets collection with the reading methods of a bundled :class:`~bm25lab.corpora.Corpus`."""

    name: str  # "irds:ID"
    dataset_id: str
    language: str

    def _dataset(self) -> Any:
        return _package().load(self.dataset_id)

    def documents(self) -> Iterator[Document]:
        """The documents in ir_datasets' order."""
        dataset = self._dataset()
        if not dataset.has_docs():
            raise InputError(f"{self.name} has no documents")

        def stream() -> Iterator[Document]:
            iterator = _guarded(self.name, dataset.docs_iter)
            while True:
                record = _guarded(self.name, lambda: next(iterator, None))
                if record is None:
                    return
                yield _document(record)

        return stream()

    def queries(self) -> dict[str, str]:
        """Every query as ``{qid: text}``."""
        dataset = self._dataset()
        if not dataset.has_queries():
            raise InputError(f"{self.name} has no queries")
        return _guarded(self.name, lambda: {str(q.query_id): _query_text(q) for q in dataset.queries_iter()})

    def qrels(self, trec_eval: int | None = None) -> Qrels:
        """The judgments, grades as ir_datasets gives them (numbers: ``trec_eval``'s reading of text does not
        apply)."""
        from ..evaluation.ranking import Qrels

        dataset = self._dataset()
        if not dataset.has_qrels():
            raise InputError(f"{self.name} has no qrels")
        rows = _guarded(self.name, lambda: [(str(r.query_id), str(r.doc_id), float(r.relevance))
                                            for r in dataset.qrels_iter()])
        if not rows:
            raise InputError(f"{self.name}: its qrels are empty")
        qids, docs, grades = zip(*rows)
        return Qrels.from_columns(list(qids), list(docs), list(grades))

    def judged_queries(self) -> dict[str, str]:
        """The queries with at least one judgment, in ir_datasets' order."""
        judged = set(self.qrels().qids)
        return {q: t for q, t in self.queries().items() if q in judged}

    def fingerprint(self) -> str:
        """What a cached index of the collection is keyed by: the id, ir_datasets' version and the size and
        time of every file under its folder of ``IR_DATASETS_HOME``."""
        package = _package()
        folder = home() / self.dataset_id.split("/")[0]
        files = sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []
        stamp = [(str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files]
        return hashlib.sha256(repr((self.dataset_id, package.__version__, stamp)).encode()).hexdigest()[:16]


def load(name: str) -> IrdsCorpus:
    """The collection ``irds:ID``; an unknown id is an :class:`InputError` (ir_datasets' registry)."""
    if not is_irds(name) or not name[len(PREFIX):]:
        raise InputError(f"an ir_datasets collection is named irds:ID (irds:vaswani, irds:beir/scifact/test), not {name!r}")
    package = _package()
    dataset_id = name[len(PREFIX):]
    try:
        dataset = package.load(dataset_id)
    except KeyError:
        raise InputError(f"{name}: ir_datasets has no dataset {dataset_id!r} (see https://ir-datasets.com)") from None
    language = "en"
    if dataset.has_docs():
        try:
            language = dataset.docs_lang() or "auto"
        except Exception:  # noqa: BLE001 - a dataset without the method or the knowledge
            language = "auto"
    return IrdsCorpus(name, dataset_id, language if language in ("en", "zh") else "auto")
