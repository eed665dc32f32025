"""Readers that stream documents and queries out of a user's files.

Each format is a reader in a module of its own (:mod:`.jsonl`, :mod:`.delimited`, :mod:`.folder`,
:mod:`.trec`, :mod:`.smart`, :mod:`.glasgow`; what they share in :mod:`.base`) and one row of
:data:`DOCUMENT_FORMATS` or :data:`QUERY_FORMATS`, which says everything else about it: its one-line
description, the extensions and first bytes that tell it, whether a folder may hold it, whether fields
can be chosen, how its records are counted for a progress total. Detection, the command line's choices
and its help come from these rows: a new format is a reader and a row.

Document formats (``read_documents``; the format is detected from the name and the content, and
``format=`` always overrides it):

``jsonl``
    One JSON object per line: ``{"id", "text"}``, BEIR ``{"_id", "title", "text"}`` or Pyserini
    ``{"id", "contents"}``. The id is the first present of ``id, _id, docid, doc_id`` (a string or an
    integer), the text the first of ``text, contents, body`` (a string), the title ``title`` (a string
    or null). Every other field goes to ``Document.metadata``. Blank lines are skipped.
``tsv``
    ``id<TAB>text`` or ``id<TAB>title<TAB>text``; the first data line fixes the number of columns and
    every line must have it (a tab inside a text is an error, not a silent split). An optional header
    whose first column is ``id``/``_id``/``docid``/``doc_id`` and whose others are ``text``, ``title``,
    ``contents`` or ``body`` (any case) is recognised and names the columns.
``csv``
    Comma-separated with a header row and RFC 4180 quoting (fields may span lines). Columns, any case:
    id = ``id|_id|docid|doc_id``, text = ``text|body|contents``, optional ``title``; the rest become
    metadata (strings).
``folder``
    A folder of ``.txt`` files (and ``.txt.gz``), searched recursively in sorted order, hidden entries
    skipped; one file is one document, its id the path relative to the folder with ``/`` separators.
    Symbolic links to folders are not followed; a symbolic link to a file outside the folder is an
    error (never a document read from wherever it points).
``trec``
    ``<DOC> ... <DOCNO> id </DOCNO> ... </DOC>`` records, one file or a folder of such files. DOCNO is
    required and unique within a record; ``<TITLE>``, ``<HEAD>`` or ``<HEADLINE>`` (the first present)
    gives the title; the text is everything else with tags removed, SGML entities decoded and
    whitespace collapsed.
``smart``
    The SMART format of the classic collections (Cranfield, CISI, CACM, MED, ...): a record starts
    with ``.I id``; a line ``.T``, ``.W``, ``.A``, ``.B``, ``.N``, ``.X``, ``.K``, ``.C`` (any capital
    letter) starts a field whose text runs to the next marker. ``.T`` is the title, ``.W`` the text,
    the other fields become metadata (:data:`SMART_FIELDS` names them: ``author``, ``bib``, ...;
    repeated fields such as one ``.A`` per author are joined with ``"; "``). Once ``.W`` has begun, a
    marker that already appeared in the record is a stray line inside the text (three Cranfield
    records repeat ``.A``/``.B``/``.W`` in their abstract): its text stays in ``.W``. Lines are joined
    and runs of whitespace collapsed. A numeric id loses its leading zeros (``.I 001`` is ``1``), as
    the collections' relevance files write them.
``time``, ``npl``, ``lisa``
    The other Glasgow layouts: TIME (``*TEXT 017 01/04/63 PAGE 020`` opens a document, ``*STOP`` ends
    the file; ids are positions 1, 2, ..., as ``TIME.REL`` numbers documents, the text number and
    header are metadata), NPL ``doc-text`` (the number on a line, the text, a line ``/``) and LISA
    (``Document N``, the title up to a blank line, the abstract, a line of asterisks; a folder of
    ``LISA0.001`` .. ``LISA5.850`` is one corpus in sorted name order).
``parquet``
    A ``.parquet`` file or a folder of them (a dataset: its files in sorted order), read through
    ``pyarrow.dataset``; a row is a record with JSON Lines' columns (``id``, ``text``, ``title``, the
    rest metadata; ``id_field``/``text_fields`` choose others); errors name the file and the row.

Detection: a folder reads as ``folder`` when it holds a ``.txt`` file, else as the one format its
files show (``lisa``, ``trec``); a file by its extension (``.jsonl .json .ndjson .tsv .csv
.trec .sgml``, a trailing ``.gz`` ignored), else by its first bytes: ``{`` JSON Lines, ``<DOC`` TREC,
``.I`` SMART, ``*TEXT`` TIME, ``Document N`` LISA, a number line then a ``/`` line NPL, lines that all hold the same number (1 or 2) of tabs TSV, a first line naming an id and
a text column between commas CSV. Any file may be gzip-compressed (recognised by its magic bytes).

Field mapping (``id_field=``, ``text_fields=``): ``id_field`` names the id field of a JSONL, CSV or
TSV-with-header source; ``text_fields`` lists the fields whose values are indexed, in order (JSONL,
CSV, TSV with a header, SMART, TREC). When ``title`` is one of them it stays the document's title
(shown in results); the others are joined with newlines into its text; a listed field missing from a
record is an error, a null one empty. Without ``text_fields`` the title and the text are indexed.

Duplicate ids (``duplicates=``): ``"error"`` (default) leaves them to the index builder, which
refuses them naming both places; ``"first"`` keeps the first document of each id and ``"last"`` the
last (read in two passes over the source), the others skipped and counted in
:attr:`Documents.duplicates`.

Query formats (``read_queries``): ``tsv`` (``qid<TAB>text``, an optional header ``qid<TAB>text``),
``jsonl`` (the id the first of ``_id, id, qid, query_id, topic_id, ridx`` present, a string or an
integer, the text the first of ``text, query, q, question, title``: BEIR's ``{"_id", "text"}``,
LeCaRD's raw ``{"ridx": 5156, "q": "..."}``), ``trec`` topics (``<top> <num> Number: 401 <title> ...
</top>``, the ``<title>`` by default; ``topic_field="desc"`` or ``"title+desc"`` pick others) and
``smart`` (``.I``/``.W`` records as above; the text is ``.T`` and ``.W`` joined), ``time`` (``*FIND 46``
records), ``npl`` (ended by ``/``) and ``lisa`` (ended by ``#``). Field mapping, as for
documents: ``id_field`` names a JSONL query's id field (a TSV's id column, its first line then naming
the columns), ``text_fields`` the field or fields of its text, joined with spaces. ``ids="position"``
numbers the queries 1, 2, ... in file order instead of using their ids: Cranfield's ``cranqrel``
numbers the queries of ``cran.qry`` (ids 001..365 with gaps) that way.

Contract for bad input: every problem raises :class:`bm25lab.engine.errors.InputError` with the file and the
1-based line (``path:line: message``): malformed lines, text that is not valid UTF-8 (always an
error, never replaced: the message names the line and the byte), a missing or unreadable file, a
corrupt gzip stream, a file with no documents or no queries, a JSON line that is not an object or
lacks its id or text, a duplicate query id, and a line-based file (JSONL, TSV, SMART, CSV, TREC) whose
lines end in a carriage return alone (it would read as one line). Empty text is allowed (an empty
document or query). Ids are stripped of surrounding whitespace and must not be empty. A UTF-8
byte-order mark at the start of a file is ignored.

Everything streams: a file is read line by line and never held whole, except one ``.txt`` file of a
folder, which is one document.
"""
from __future__ import annotations

import zlib
from pathlib import Path
from typing import Iterable, Iterator

from ..errors import InputError, ParameterError
from ..records import Document
from . import delimited, folder, glasgow, jsonl, parquet, smart, trec
from .base import (QUERY_ID_KEYS, QUERY_TEXT_KEYS, DocumentFormat, FieldMap, QueryFormat, check_exists, first_bytes,
                   format_extension, is_txt, walk_files)
from .smart import SMART_FIELDS
from .trec import TOPIC_FIELDS

__all__ = ["DOCUMENT_FORMATS", "DUPLICATE_POLICIES", "DocumentFormat", "Documents", "FieldMap", "QUERY_FORMATS",
           "QUERY_ID_KEYS", "QUERY_ID_MODES", "QUERY_TEXT_KEYS", "QueryFormat", "SMART_FIELDS", "TOPIC_FIELDS",
           "count_documents", "detect_document_format", "detect_query_format", "read_documents", "read_queries"]

DOCUMENT_FORMATS: dict[str, DocumentFormat] = {
    "jsonl": jsonl.DOCUMENTS,
    "tsv": delimited.TSV_DOCUMENTS,
    "csv": delimited.CSV_DOCUMENTS,
    "folder": folder.DOCUMENTS,
    "trec": trec.DOCUMENTS,
    "smart": smart.DOCUMENTS,
    "time": glasgow.TIME_DOCUMENTS,
    "npl": glasgow.NPL_DOCUMENTS,
    "lisa": glasgow.LISA_DOCUMENTS,
    "parquet": parquet.DOCUMENTS,
}
"""Every document format by name (``read_documents(format=)``, ``--format``): see :class:`DocumentFormat`."""

QUERY_FORMATS: dict[str, QueryFormat] = {
    "tsv": delimited.TSV_QUERIES,
    "jsonl": jsonl.QUERIES,
    "trec": trec.TOPICS,
    "smart": smart.QUERIES,
    "time": glasgow.TIME_QUERIES,
    "npl": glasgow.NPL_QUERIES,
    "lisa": glasgow.LISA_QUERIES,
}
"""Every query format by name (``read_queries(format=)``, ``--query-format``): see :class:`QueryFormat`."""

DUPLICATE_POLICIES = ("error", "first", "last")
"""What ``read_documents(duplicates=)`` and ``--duplicates`` do with a repeated document id."""
QUERY_ID_MODES = ("given", "position")
"""``read_queries(ids=)``: the ids the file gives, or the queries' positions 1, 2, ... in the file."""

_FOLDER_SNIFF_FILES = 50


def _by_name(formats: dict, path: Path) -> str | None:
    """The format whose extensions hold ``path``'s (a trailing ``.gz`` ignored), if one does."""
    extension = format_extension(path)
    return next((name for name, row in formats.items() if extension in row.extensions), None)


def _by_content(formats: dict, head: bytes) -> str | None:
    """The first format whose sniff takes ``head`` (a file's first bytes): in the registry's order, the rows
    whose test is loose (``sniff_last``) after the others."""
    rows = sorted(formats.items(), key=lambda item: item[1].sniff_last)  # (stable: the registry's order kept)
    return next((name for name, row in rows if row.sniff is not None and row.sniff(head)), None)


def _folder_formats() -> list[str]:
    return [name for name, row in DOCUMENT_FORMATS.items() if row.folder]


def detect_document_format(source: str | Path) -> str:
    """The format :func:`read_documents` reads ``source`` in without ``format=``: a folder by what it holds,
    a file by its extension, else by its first bytes (:data:`DOCUMENT_FORMATS`' sniffs, in order)."""
    path = Path(source)
    check_exists(path)
    if path.is_dir():
        return _folder_format(path)
    found = _by_name(DOCUMENT_FORMATS, path) or _by_content(DOCUMENT_FORMATS, first_bytes(path))
    if found is None:
        raise InputError(f"cannot tell the format from the name or the content; choose one with format= (--format): "
                         f"{', '.join(DOCUMENT_FORMATS)}", path)
    return found


def _folder_format(source: Path) -> str:
    """A folder's format: ``folder`` when it holds a ``.txt`` file (or nothing readable); else the format its
    files' content shows (the first 50 files looked at) when they agree on one that a folder can hold (LISA's
    ``LISA0.001`` .. ``LISA5.850``, TREC files); files that disagree are an error naming two of them."""
    if next(walk_files(source, is_txt), None) is not None:
        return "folder"
    seen: dict[str, Path] = {}
    for count, file in enumerate(walk_files(source, lambda name: True)):
        if count == _FOLDER_SNIFF_FILES:
            break
        seen.setdefault(_by_content(DOCUMENT_FORMATS, first_bytes(file)) or "unknown", file)
    if len(seen) == 1 and next(iter(seen)) in _folder_formats():
        return next(iter(seen))
    if len(seen) > 1:
        found = ", ".join(f"{file.name}: {name}" for name, file in seen.items())
        raise InputError(f"a folder without .txt files whose files are not all of one format ({found}); choose "
                         f"one with format= (--format): {', '.join(_folder_formats())}", source)
    return "folder"


def _document_format(path: Path, format: str | None) -> str:
    """The reader to use: ``format`` if given (checked against what holds it), else :func:`detect_document_format`."""
    if format is None:
        return detect_document_format(path)
    row = DOCUMENT_FORMATS.get(format)
    if row is None:
        raise InputError(f"unknown document format {format!r}; known: {', '.join(DOCUMENT_FORMATS)}", path)
    if path.is_dir() and not row.folder:
        raise InputError(f"format {format!r} needs a file, found a folder", path)
    if not path.is_dir() and not row.file:
        raise InputError(f"format {format!r} needs a folder ({row.description}), found a file", path)
    return format


class Documents(Iterator[Document]):
    """The documents of a source, streamed, with what the reading found: the ``format`` read,
    ``duplicates`` (documents skipped for a repeated id under ``"first"``/``"last"``) and, after
    :meth:`count`, how many documents the source holds."""

    def __init__(self, path: Path, format: str, mapping: FieldMap, duplicates: str) -> None:
        self.path, self.format, self.mapping, self.policy = path, format, mapping, duplicates
        self.duplicates = 0
        self._iterator = self._read()

    def __next__(self) -> Document:
        return next(self._iterator)

    def _stream(self) -> Iterator[Document]:
        return DOCUMENT_FORMATS[self.format].read(self.path, self.mapping)

    def _read(self) -> Iterator[Document]:
        count = 0
        if self.policy == "last":
            keep = self._last_positions()
            for position, doc in enumerate(self._stream()):
                if keep.get(doc.id) == position:
                    count += 1
                    yield doc
                else:
                    self.duplicates += 1
        elif self.policy == "first":
            seen: set[str] = set()
            for doc in self._stream():
                if doc.id in seen:
                    self.duplicates += 1
                    continue
                seen.add(doc.id)
                count += 1
                yield doc
        else:
            for doc in self._stream():
                count += 1
                yield doc
        if count == 0:
            what = "documents (.txt files)" if self.format == "folder" else "documents"
            raise InputError(f"no {what} found", self.path)

    def _last_positions(self) -> dict[str, int]:
        """A first pass: the position of the last document of each id."""
        return {doc.id: position for position, doc in enumerate(self._stream())}

    def count(self) -> int | None:
        """How many documents the source holds (repeated ids included), counted from its bytes
        without parsing it; None where that cannot be done cheaply (CSV, whose quoted fields may
        span lines). Reads the source once more: call it beside the reading, e.g. in a thread."""
        return count_documents(self.path, self.format, named_columns=not self.mapping.default)


def count_documents(source: str | Path, format: str | None = None, *, named_columns: bool = False) -> int | None:
    """The number of documents in ``source`` for a progress bar, from its bytes (see
    :meth:`Documents.count`); None when it cannot be counted cheaply or the source is unreadable.
    ``named_columns``: the first line of a TSV names its columns (a field mapping was given)."""
    path = Path(source)
    try:
        counter = DOCUMENT_FORMATS[_document_format(path, format)].count
        return None if counter is None else counter(path, named_columns)
    except (InputError, OSError, EOFError, zlib.error):
        return None


def read_documents(source: str | Path, *, format: str | None = None, id_field: str | None = None,
                   text_fields: str | Iterable[str] | None = None, duplicates: str = "error") -> Documents:
    """Stream the documents of a file or folder, in file order (folders: sorted relative paths).

    ``format`` is one of :data:`DOCUMENT_FORMATS` (``jsonl``, ``tsv``, ``csv``, ``folder``, ``trec``,
    ``smart``, ...); without it the format is detected (:func:`detect_document_format`). ``id_field`` and
    ``text_fields`` map a record's fields (see the module's notes); ``duplicates`` is ``"error"``,
    ``"first"`` or ``"last"`` (:data:`DUPLICATE_POLICIES`). A missing source, an unknown format and
    a mapping the format cannot take raise here; bad content raises :class:`InputError` naming file
    and line while iterating, and a source without a single document raises at the end.
    """
    path = Path(source)
    check_exists(path)
    fmt = _document_format(path, format)
    mapping = FieldMap.of(id_field, text_fields)
    if mapping.id_field is not None and not DOCUMENT_FORMATS[fmt].id_field:
        choosing = ", ".join(name for name, row in DOCUMENT_FORMATS.items() if row.id_field)
        raise InputError(f"an id field can be chosen for {choosing} documents, not {fmt}", path)
    if duplicates not in DUPLICATE_POLICIES:
        raise ParameterError(f"unknown duplicates policy {duplicates!r}; known: {', '.join(DUPLICATE_POLICIES)}", path)
    return Documents(path, fmt, mapping, duplicates)


def detect_query_format(source: str | Path) -> str:
    """``read_queries``' format without ``format=``: the extension, else the first bytes (:data:`QUERY_FORMATS`'
    sniffs: ``{`` JSONL, ``<`` TREC topics, ``.I`` SMART, ``*FIND`` TIME, NPL, LISA, else TSV)."""
    path = Path(source)
    check_exists(path)
    if path.is_dir():
        raise InputError("is a folder, expected a queries file", path)
    return _by_name(QUERY_FORMATS, path) or _by_content(QUERY_FORMATS, first_bytes(path)) or "tsv"


def _query_format(path: Path, format: str | None) -> str:
    """``format`` if given, else :func:`detect_query_format`."""
    if format is None:
        return detect_query_format(path)
    if format not in QUERY_FORMATS:
        raise InputError(f"unknown query format {format!r}; known: {', '.join(QUERY_FORMATS)}", path)
    return format


def read_queries(source: str | Path, *, format: str | None = None, topic_field: str = "title",
                 ids: str = "given", id_field: str | None = None,
                 text_fields: str | Iterable[str] | None = None) -> dict[str, str]:
    """All queries of a file as ``{qid: text}`` in file order.

    ``format`` is one of :data:`QUERY_FORMATS` (``tsv``, ``jsonl``, ``trec``, ``smart``, ...), detected
    when omitted (:func:`detect_query_format`). ``topic_field`` picks the TREC topic text: ``title``
    (default), ``desc``, ``narr`` or a join such as ``title+desc``. ``ids="position"`` numbers the
    queries 1, 2, ... in file order (Cranfield's relevance file does). ``id_field`` names the field
    holding a JSONL query's id (or the column of a TSV with a header), ``text_fields`` the field or
    fields (a comma list or a sequence, joined with spaces) holding its text; without them the first of
    :data:`QUERY_ID_KEYS` and of :data:`QUERY_TEXT_KEYS` present is taken (LeCaRD's ``{"ridx": 5156,
    "q": "..."}`` reads as it comes; a numeric id becomes a string). A duplicate query id, a malformed
    line, a record without its id or text (the message lists the record's fields) and an empty file
    raise :class:`InputError` naming file and line.
    """
    path = Path(source)
    check_exists(path)
    if ids not in QUERY_ID_MODES:
        raise ParameterError(f"unknown query id mode {ids!r}; known: {', '.join(QUERY_ID_MODES)}")
    fmt = _query_format(path, format)
    mapping = FieldMap.of(id_field, text_fields)
    if not mapping.default and not QUERY_FORMATS[fmt].fields:
        choosing = " and ".join(name for name, row in QUERY_FORMATS.items() if row.fields)
        raise InputError(f"a query id field and text fields can be chosen for {choosing} queries, not {fmt}"
                         + (" (--topic-field picks a topic's fields)" if fmt == "trec" else ""), path)
    lines = QUERY_FORMATS[fmt].read(path, mapping, topic_field)
    if ids == "position":
        lines = ((lineno, str(number), text) for number, (lineno, _, text) in enumerate(lines, 1))
    queries: dict[str, str] = {}
    first_line: dict[str, int] = {}
    for lineno, qid, text in lines:
        if qid in queries:
            raise InputError(f"duplicate query id {qid!r} (first at line {first_line[qid]})", path, lineno)
        queries[qid] = text
        first_line[qid] = lineno
    if not queries:
        raise InputError("no queries found", path)
    return queries
