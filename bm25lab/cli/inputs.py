"""The command line's inputs: document sources, queries, qrels and runs, given as files in any of the
library's formats (detected, or chosen with an option) or, for queries and qrels, as the name of a
bundled collection (``bm25lab run IDX cranfield``, ``bm25lab evaluate cranfield RUN``).

The choices come from the library's registries; reading is the library's. A missing file is the
library's one-line :class:`~bm25lab.engine.errors.InputError` (exit 1), never typer's usage block.
"""
from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional

import typer

from ..engine.errors import InputError, ParameterError
from ..evaluation.readers import QRELS_FORMATS, RUN_FORMATS, RUN_WRITERS
from .common import _choices

if TYPE_CHECKING:
    from ..engine.records import Document
    from ..evaluation.ranking import Qrels, Run

QrelsFormat = _choices("QrelsFormat", ["auto", *QRELS_FORMATS])
RunFormat = _choices("RunFormat", ["auto", *RUN_FORMATS])
RunWriter = _choices("RunWriter", RUN_WRITERS)


def _source_choices() -> dict[str, Any]:
    """The choices and options the engine's document and query readers give (DocumentFormat, Duplicates,
    QueryFormat, QueryIds, CollectionQueryIds and the field options, their help from the formats' registry):
    made when a command that has them is first built, so that one without them (``evaluate``) does not import
    :mod:`bm25lab.engine.sources`."""
    from ..engine.sources import (DOCUMENT_FORMATS, DUPLICATE_POLICIES, QUERY_FORMATS, QUERY_ID_KEYS, QUERY_ID_MODES,
                                  QUERY_TEXT_KEYS)

    def formats(registry: dict[str, Any], has: str) -> str:
        return ", ".join(name for name, row in registry.items() if getattr(row, has))

    query_id_field = typer.Option("--query-id-field", help="The field holding a query's id (a TSV with a header: the "
                                  f"column; {formats(QUERY_FORMATS, 'fields')}). Default: the first present of "
                                  f"{', '.join(QUERY_ID_KEYS)}.")
    query_text_fields = typer.Option("--query-text-fields", help="The field(s) holding a query's text, comma-"
                                     f"separated, joined with spaces ({formats(QUERY_FORMATS, 'fields')}). Default: "
                                     f"the first present of {', '.join(QUERY_TEXT_KEYS)}.")
    id_field = typer.Option("--id-field", help="The field holding the id (a TSV with a header: the column; "
                            f"{formats(DOCUMENT_FORMATS, 'id_field')}).")
    text_fields = typer.Option("--text-fields", help="Fields to index, comma-separated, e.g. title,text "
                               f"({formats(DOCUMENT_FORMATS, 'text_fields')}).")
    return {"DocumentFormat": _choices("DocumentFormat", ["auto", *DOCUMENT_FORMATS]),
            "Duplicates": _choices("Duplicates", DUPLICATE_POLICIES),
            "QueryFormat": _choices("QueryFormat", ["auto", *QUERY_FORMATS]),
            "QueryIds": _choices("QueryIds", QUERY_ID_MODES),
            "CollectionQueryIds": _choices("CollectionQueryIds", ["auto", *QUERY_ID_MODES]),
            "QUERY_ID_FIELD_OPT": query_id_field, "QUERY_TEXT_FIELDS_OPT": query_text_fields,
            "ID_FIELD_OPT": id_field, "TEXT_FIELDS_OPT": text_fields}


_SOURCE_CHOICES = ("DocumentFormat", "Duplicates", "QueryFormat", "QueryIds", "CollectionQueryIds",
                   "QUERY_ID_FIELD_OPT", "QUERY_TEXT_FIELDS_OPT", "ID_FIELD_OPT", "TEXT_FIELDS_OPT")


def __getattr__(name: str) -> Any:
    if name in _SOURCE_CHOICES:
        made = _source_choices()
        globals().update(made)
        return made[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


FORMAT_OPT = typer.Option("--format", help="Document format (default: detected from the name and the content).")
TITLE_FIELD_OPT = typer.Option("--title-field", help="The field holding a document's title (shown with its results "
                                                     "and indexed with its text), e.g. ajName (JSONL, CSV, TSV with a "
                                                     "header).")
DUPLICATES_OPT = typer.Option("--duplicates", help="A repeated document id: error, or keep the first or the last.")
QUERY_FORMAT_OPT = typer.Option("--query-format", help="Queries format (default: detected).")
TOPIC_FIELD_OPT = typer.Option("--topic-field", help="TREC topics: title, desc, narr or a '+' join (title+desc).")
QUERY_IDS_OPT = typer.Option("--query-ids", help="given: the file's query ids; position: 1, 2, ... in file order "
                                                 "(Cranfield's cranqrel numbers cran.qry's queries so).")
QRELS_FORMAT_OPT = typer.Option("--qrels-format", help="Qrels format (default: detected; a guess is noted).")
RUN_FORMAT_OPT = typer.Option("--run-format", help="Run file format (default: detected).")


def bundled(name: str) -> Optional[str]:
    """``name`` when it names a bundled collection (or an ir_datasets one, ``irds:ID``) and no file or folder of
    that name exists."""
    if Path(name).exists():
        return None
    from .. import corpora
    from ..corpora.irds import is_irds

    return name if name in corpora.names() or is_irds(name) else None


def _neither(spec: str, what: str) -> InputError:
    from .. import corpora

    return InputError(f"no such {what}, nor a bundled collection ({', '.join(corpora.names())})", spec)


def is_files(source: str) -> bool:
    """Whether ``source`` names files (a file, a folder, a glob pattern), not a bundled collection."""
    from ..engine.sources.pieces import is_glob

    return bundled(source) is None and (Path(source).exists() or is_glob(source))


def documents(source: str, format: Enum, id_field: Optional[str], text_fields: Optional[str],
              duplicates: Enum, title_field: Optional[str] = None
              ) -> tuple[Iterator["Document"], Optional[Callable[[], Optional[int]]]]:
    """The documents of a file, a folder or a bundled collection (``title_field``: the field holding each
    one's title), and a way to count them."""
    from .. import corpora
    from ..engine.sources import read_documents

    if bundled(source) is not None:
        if format.value != "auto" or id_field or text_fields or title_field:
            raise ParameterError(f"{source} is a bundled collection: --format, --id-field, --text-fields and "
                                 f"--title-field are for files")
        corpus = corpora.get(source)
        if not hasattr(corpus, "docs_path"):  # an ir_datasets collection: its documents as ir_datasets reads them
            return corpus.documents(), None
        docs = read_documents(corpus.docs_path, format="jsonl", duplicates=duplicates.value)
        return docs, lambda: corpus.num_docs
    from ..engine.sources.pieces import is_glob

    if is_glob(source):  # the matching files, one after another
        return _glob_documents(source, format, id_field, text_fields, duplicates, title_field), None
    if not Path(source).exists():
        raise _neither(source, "file or folder")
    docs = read_documents(source, format=None if format.value == "auto" else format.value, id_field=id_field,
                          text_fields=text_fields, duplicates=duplicates.value)
    if title_field is None:
        return docs, docs.count
    from ..experiments import titled

    return titled(docs, title_field), docs.count


def _glob_documents(source: str, format: Enum, id_field: Optional[str], text_fields: Optional[str],
                    duplicates: Enum, title_field: Optional[str]) -> Iterator["Document"]:
    from ..engine.sources.pieces import read_source

    if duplicates.value != "error":
        raise ParameterError(f"--duplicates {duplicates.value} reads one file or folder, not a glob pattern")
    docs = read_source(source, format=None if format.value == "auto" else format.value, id_field=id_field,
                       text_fields=text_fields)
    if title_field is None:
        return docs
    from ..experiments import titled

    return iter(titled(docs, title_field))


def check_file(path: Path) -> None:
    """A file the command reads whole (a stopword list, a dictionary): one line when it is missing or a folder."""
    if not path.is_file():
        raise InputError("no such file" if not path.exists() else "is a folder, expected a file", path)


def queries(spec: str, format: Enum, topic_field: str, ids: Enum, id_field: Optional[str] = None,
            text_fields: Optional[str] = None) -> dict[str, str]:
    """``{qid: text}`` of a queries file (``id_field`` / ``text_fields``: ``--query-id-field`` and
    ``--query-text-fields``), or every query of a bundled collection."""
    from .. import corpora
    from ..engine.sources import read_queries

    name = bundled(spec)
    if name is not None:
        check_no_query_fields(name, id_field, text_fields)
        given = {"--query-format": format.value != "auto", "--topic-field": topic_field != "title",
                 "--query-ids": ids.value != "given"}
        if any(given.values()):
            raise ParameterError(f"{name} is a bundled collection, whose queries are read as they are: "
                                 f"{', '.join(option for option, chosen in given.items() if chosen)} "
                                 f"{'is' if sum(given.values()) == 1 else 'are'} for queries files")
        return corpora.get(name).queries()
    if not Path(spec).exists():
        raise _neither(spec, "queries file")
    _check_topic_field(topic_field)
    return read_queries(spec, format=None if format.value == "auto" else format.value, topic_field=topic_field,
                        ids=ids.value, id_field=id_field, text_fields=text_fields)


def check_no_query_fields(name: str, id_field: Optional[str], text_fields: Optional[str]) -> None:
    """A bundled collection's queries have their fields: ``--query-id-field`` and ``--query-text-fields``
    are for files."""
    if id_field is not None or text_fields is not None:
        raise ParameterError(f"{name} is a bundled collection: --query-id-field and --query-text-fields are for "
                             f"queries files")


def qrels(spec: str, format: Enum, *, trec_eval: int | None = None) -> "Qrels":
    """The qrels of a file, or of a bundled collection, labels read by the rules of ``trec_eval`` (9 or
    10; None: the default rules)."""
    from ..evaluation.readers import read_qrels

    rules = {} if trec_eval is None else {"trec_eval": trec_eval}
    name = bundled(spec)
    if name is not None:
        from .. import corpora

        if format.value not in ("auto", "trec"):
            raise ParameterError(f"{name} is a bundled collection, whose qrels are TREC qrels: --qrels-format "
                                 f"{format.value} is for qrels files")
        return corpora.get(name).qrels(**rules)
    if not Path(spec).exists():
        raise _neither(spec, "qrels file")
    return read_qrels(spec, format=format.value, **rules)


def run(path: Path, format: Enum) -> "Run":
    """The run of a file; one without a single run line (blank lines and comments only) is an error naming it."""
    from ..evaluation.readers import read_run

    found = read_run(path, format=format.value)
    if not found.num_queries:
        raise InputError("holds no run line (only blank lines or comments)", path)
    return found


def _check_topic_field(topic_field: str) -> None:
    from ..engine.sources import TOPIC_FIELDS

    parts = [part.strip().lower() for part in topic_field.split("+")]
    allowed = [f for f in TOPIC_FIELDS if f != "num"]
    if not all(part in allowed for part in parts):
        raise ParameterError(f"--topic-field {topic_field!r}: use {', '.join(allowed)} or a '+' join (title+desc)")

