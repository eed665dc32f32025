"""Readers that stream documents and queries out of a user's files.

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

import csv
import html
import json
import os
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable, Iterator, Mapping

from .compressed import open_gzip
from .errors import InputError, ParameterError, cr_line_ends
from .records import Document

__all__ = [
    "DOCUMENT_READERS",
    "DUPLICATE_POLICIES",
    "Documents",
    "FieldMap",
    "QUERY_ID_MODES",
    "QUERY_READERS",
    "SMART_FIELDS",
    "TOPIC_FIELDS",
    "count_documents",
    "detect_document_format",
    "detect_query_format",
    "read_documents",
    "read_queries",
]

_GZIP_MAGIC = b"\x1f\x8b"
_BOM = "\ufeff"
_SNIFF_BYTES = 65536
_READ_BUFFER = 1 << 16  # bytes read at a time; a run of blank lines in them is skipped at once (_lines)

DOC_ID_KEYS = ("id", "_id", "docid", "doc_id")
DOC_TEXT_KEYS = ("text", "contents", "body")
QUERY_ID_KEYS = ("_id", "id", "qid", "query_id", "topic_id", "ridx")
QUERY_TEXT_KEYS = ("text", "query", "q", "question", "title")
"""The fields a JSON Lines record (or a TSV header) names its id and its text with, first present
first: BEIR, Pyserini, ir_datasets and MS MARCO exports, LeCaRD's ``{"ridx", "q"}``. Other names are
chosen with ``id_field=`` / ``text_fields=``, on the command line the options below."""
ID_OPTION, TEXT_OPTION = "id_field (--id-field)", "text_fields (--text-fields)"
QUERY_ID_OPTION, QUERY_TEXT_OPTION = "id_field (--query-id-field)", "text_fields (--query-text-fields)"

QueryLines = Iterator[tuple[int, str, str]]  # (line, qid, text)


@dataclass(frozen=True)
class FieldMap:
    """Which fields of a record hold the document's id and its indexed text (None: the defaults)."""

    id_field: str | None = None
    text_fields: tuple[str, ...] | None = None

    @classmethod
    def of(cls, id_field: str | None, text_fields: str | Iterable[str] | None) -> "FieldMap":
        """A field map from ``--id-field`` and ``--text-fields`` (a comma list or a sequence)."""
        if isinstance(text_fields, str):
            text_fields = text_fields.split(",")
        fields = None if text_fields is None else tuple(f.strip() for f in text_fields)
        if fields is not None and (not fields or not all(fields) or len(set(fields)) != len(fields)):
            raise InputError(f"text fields must be distinct non-empty names, got {','.join(fields)!r}")
        if id_field is not None and not id_field.strip():
            raise InputError("the id field name is empty")
        return cls(None if id_field is None else id_field.strip(), fields)

    @property
    def default(self) -> bool:
        return self.id_field is None and self.text_fields is None

    def document(self, doc_id: str, values: Mapping[str, Any], path: Path, line: int) -> Document:
        """The document of one record whose fields are ``values`` (names as the source writes them),
        with ``text_fields`` chosen; every other field is metadata."""
        assert self.text_fields is not None
        missing = [f for f in self.text_fields if f not in values]
        if missing:
            known = ", ".join(map(repr, values)) or "none"
            raise InputError(f"no field {missing[0]!r} (fields: {known})", path, line)
        texts = {}
        for name in self.text_fields:
            value = values[name]
            if value is not None and not isinstance(value, str):
                raise InputError(f"field {name!r} must be a string or null, found {_json_type(value)}", path, line)
            texts[name] = value or ""
        title = texts.pop("title", "")
        metadata = {k: v for k, v in values.items() if k not in self.text_fields and k != self.id_field}
        return Document(id=doc_id, text="\n".join(texts.values()), title=title, metadata=metadata)


DocumentReader = Callable[[Path, FieldMap], Iterator[Document]]


# --------------------------------------------------------------------------- low-level input


def _open_binary(path: Path) -> BinaryIO:
    """Open ``path`` for reading bytes, decompressing gzip when the file starts with its magic."""
    try:
        raw = open(path, "rb", buffering=_READ_BUFFER)  # noqa: SIM115 - closed by the caller's ``with``
    except IsADirectoryError:
        raise InputError("is a folder, expected a file", path) from None
    except FileNotFoundError:
        raise InputError("no such file", path) from None
    except OSError as exc:
        raise InputError(f"cannot open: {exc.strerror or exc}", path) from None
    try:
        magic = raw.peek(2)[:2] if hasattr(raw, "peek") else b""
    except OSError as exc:
        raw.close()
        raise InputError(f"cannot read: {exc.strerror or exc}", path) from None
    if magic == _GZIP_MAGIC:
        return open_gzip(raw, path, _READ_BUFFER)  # bounded: a gzip bomb is an error naming the file
    return raw  # type: ignore[return-value]


def _decode(raw: bytes, path: Path, line: int) -> str:
    """Strict UTF-8 decoding; an invalid byte is an error naming the line and the byte."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = raw[exc.start : exc.start + 1].hex()
        raise InputError(
            f"invalid UTF-8: byte 0x{bad} at byte {exc.start + 1} of the line", path, line
        ) from None
    if line == 1 and text.startswith(_BOM):
        text = text[1:]
    return text


_WHITESPACE = b" \t\n\r\x0b\x0c"  # what bytes.isspace() and bytes.split() take for whitespace
_LINE_ENDS = b"\r\n"  # the empty lines a CSV reader is given together (a quoted field keeps them as they are)


def _blank_run(data: bytes, blank: bytes) -> int:
    """The length of the whole lines at the start of ``data`` that hold only bytes of ``blank`` (0: none)."""
    end = len(data) - len(data.lstrip(blank))
    return data.rfind(b"\n", 0, end) + 1


def _lines(path: Path, blank: bytes = _WHITESPACE) -> Iterator[tuple[int, str]]:
    """Yield ``(line number, decoded line with its terminator)`` from a plain or gzip file. A first
    line holding a carriage return that no line feed follows is refused: the file's lines end in
    CR alone (classic Mac OS), and it would read as a single line.

    Lines of ``blank`` bytes only (whitespace) come in pieces: after one such line, the ones that follow
    it in the read buffer are given at once as one "line" holding them all (numbered by its first),
    found by ``bytes.lstrip`` (C), so that a file of millions of blank lines costs a Python step per
    buffer (64 KiB), not per line. Every reader skips, or collapses, whitespace."""
    line = 0
    with _open_binary(path) as stream:
        try:
            for raw in stream:
                line += 1
                if line == 1 and b"\r" in raw.rstrip(b"\r\n"):
                    raise cr_line_ends(path, line)
                if raw.isspace() and raw.endswith(b"\n") and not raw.strip(blank):  # isspace: no copy of a line
                    yield line, raw.decode("ascii")
                    while (buffered := stream.peek(1)) and (run := _blank_run(buffered, blank)):
                        piece = stream.read(run)
                        yield line + 1, piece.decode("ascii")
                        line += piece.count(b"\n")
                    continue
                yield line, _decode(raw, path, line)
        except (OSError, EOFError, zlib.error) as exc:
            reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            raise InputError(f"cannot read (corrupt or truncated file?): {reason}", path, line + 1) from None


def _read_text(path: Path) -> str:
    """A whole (small) file as text, decoded strictly; a bad byte names its line."""
    with _open_binary(path) as stream:
        try:
            data = stream.read()
        except (OSError, EOFError, zlib.error) as exc:
            reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            raise InputError(f"cannot read (corrupt or truncated file?): {reason}", path) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        bad = data[exc.start : exc.start + 1].hex()
        raise InputError(f"invalid UTF-8: byte 0x{bad} at byte {column} of the line", path, line) from None
    return text[1:] if text.startswith(_BOM) else text


def _head(path: Path) -> bytes:
    """The first bytes of a file (decompressed), stripped of leading whitespace and BOM, for sniffing."""
    with _open_binary(path) as stream:
        try:
            data = stream.read(_SNIFF_BYTES)
        except (OSError, EOFError, zlib.error):
            return b""
    return data.lstrip(b"\xef\xbb\xbf").lstrip()


def _strip_eol(line: str) -> str:
    return line.rstrip("\r\n")


def _clean_id(value: str, what: str, path: Path, line: int) -> str:
    ident = value.strip()
    if not ident:
        raise InputError(f"empty {what}", path, line)
    return ident


# --------------------------------------------------------------------------- JSON helpers

_SURROGATE = re.compile("[\ud800-\udfff]")


def _parse_json_object(line: str, path: Path, lineno: int) -> dict[str, Any]:
    """One JSON Lines record; anything but an object (or unparsable text) is an error."""
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        hint = " (expected JSON Lines: one object per line, not a JSON array)" if line.lstrip().startswith("[") else ""
        raise InputError(f"invalid JSON: {exc.msg} at column {exc.colno}{hint}", path, lineno) from None
    except (ValueError, RecursionError) as exc:
        raise InputError(f"invalid JSON: {exc}", path, lineno) from None
    if not isinstance(value, dict):
        hint = " (expected JSON Lines: one object per line, not a JSON array)" if isinstance(value, list) else ""
        raise InputError(f"expected a JSON object, found {_json_type(value)}{hint}", path, lineno)
    if "\\u" in line and _has_surrogate(value):
        raise InputError("a string holds an unpaired UTF-16 surrogate escape (\\ud800-\\udfff)", path, lineno)
    return value


def _json_type(value: Any) -> str:
    names = {list: "an array", str: "a string", bool: "a boolean", type(None): "null", int: "a number", float: "a number"}
    return names.get(type(value), type(value).__name__)


def _has_surrogate(value: Any) -> bool:
    """True when any string (key or value) in a parsed JSON value holds a lone surrogate; iterative."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _first_key(obj: Mapping[str, Any], keys: Iterable[str]) -> str | None:
    return next((key for key in keys if key in obj), None)


def _fields_present(obj: Mapping[str, Any]) -> str:
    return ", ".join(map(repr, obj)) or "none"


def _missing(what: str, keys: tuple[str, ...], obj: Mapping[str, Any], option: str) -> str:
    """``missing query id: none of 'id', ... (fields: 'path', 'q'); name it with ...``: one line saying
    what was looked for, what the record holds and (``option``: the fields were guessed) how to choose."""
    looked = f"no field {keys[0]!r}" if len(keys) == 1 else f"none of {', '.join(map(repr, keys))}"
    return f"missing {what}: {looked} (fields: {_fields_present(obj)})" + (f"; name it with {option}" if option else "")


def _json_id(obj: Mapping[str, Any], keys: tuple[str, ...], what: str, path: Path, line: int,
             option: str = "") -> tuple[str, str]:
    """(field, id) of a record: the first of ``keys`` present, a string or an integer (made a string)."""
    key = _first_key(obj, keys)
    if key is None:
        raise InputError(_missing(what, keys, obj, option), path, line)
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(f"{what} {key!r} must be a string or an integer, found {_json_type(value)}", path, line)
    return key, _clean_id(str(value), what, path, line)


def _json_text(obj: Mapping[str, Any], keys: tuple[str, ...], path: Path, line: int,
               option: str = "") -> tuple[str, str]:
    """(field, text) of a record: the first of ``keys`` present, a string."""
    key = _first_key(obj, keys)
    if key is None:
        raise InputError(_missing("text", keys, obj, option), path, line)
    value = obj[key]
    if not isinstance(value, str):
        raise InputError(f"field {key!r} must be a string, found {_json_type(value)}", path, line)
    return key, value


# --------------------------------------------------------------------------- document readers


def _read_jsonl_documents(path: Path, fields: FieldMap = FieldMap()) -> Iterator[Document]:
    id_keys = DOC_ID_KEYS if fields.id_field is None else (fields.id_field,)
    for lineno, line in _lines(path):
        if not line.strip():
            continue
        obj = _parse_json_object(line, path, lineno)
        id_key, doc_id = _json_id(obj, id_keys, "document id", path, lineno, "" if fields.id_field else ID_OPTION)
        if fields.text_fields is not None:
            yield fields.document(doc_id, {k: v for k, v in obj.items() if k != id_key}, path, lineno)
            continue
        text_key, text = _json_text(obj, DOC_TEXT_KEYS, path, lineno, TEXT_OPTION)
        title = obj.get("title")
        if title is None:
            title = ""
        elif not isinstance(title, str):
            raise InputError(f"field 'title' must be a string or null, found {_json_type(title)}", path, lineno)
        metadata = {k: v for k, v in obj.items() if k not in (id_key, text_key, "title")}
        yield Document(id=doc_id, text=text, title=title, metadata=metadata)


_TSV_HEADER_ROLES = {"title": "title", **{k: "text" for k in DOC_TEXT_KEYS}}


def _tsv_header(fields: list[str]) -> list[str] | None:
    """Column roles when ``fields`` is a header line (``id<TAB>[title<TAB>]text``), else None."""
    names = [f.strip().lower() for f in fields]
    if len(names) not in (2, 3) or names[0] not in DOC_ID_KEYS:
        return None
    roles = [_TSV_HEADER_ROLES.get(n) for n in names[1:]]
    if None in roles or roles.count("text") != 1 or len(set(roles)) != len(roles):
        return None
    return ["id", *roles]  # type: ignore[list-item]


def _read_tsv_documents(path: Path, mapping: FieldMap = FieldMap()) -> Iterator[Document]:
    if not mapping.default:
        yield from _read_named_tsv_documents(path, mapping)
        return
    roles: list[str] | None = None
    for lineno, line in _lines(path):
        content = _strip_eol(line)
        if not content.strip():
            continue
        fields = content.split("\t")
        if roles is None:
            roles = _tsv_header(fields)
            if roles is not None:
                continue
            if len(fields) not in (2, 3):
                raise InputError(
                    f"expected 2 or 3 tab-separated fields (id, [title,] text), found {len(fields)}", path, lineno
                )
            roles = ["id", "text"] if len(fields) == 2 else ["id", "title", "text"]
        if len(fields) != len(roles):
            raise InputError(
                f"expected {len(roles)} tab-separated fields ({', '.join(roles)}) like the first line, found {len(fields)}",
                path,
                lineno,
            )
        row = dict(zip(roles, fields))
        yield Document(
            id=_clean_id(row["id"], "document id", path, lineno), text=row["text"], title=row.get("title", "")
        )


def _read_named_tsv_documents(path: Path, mapping: FieldMap) -> Iterator[Document]:
    """A TSV whose first line names its columns, mapped by ``--id-field`` / ``--text-fields``."""
    header: list[str] | None = None
    id_col = 0
    for lineno, line in _lines(path):
        content = _strip_eol(line)
        if not content.strip():
            continue
        fields = content.split("\t")
        if header is None:
            header = [f.strip() for f in fields]
            id_col = _named_column(header, mapping.id_field, DOC_ID_KEYS, "id", path, lineno)
            continue
        if len(fields) != len(header):
            raise InputError(f"expected {len(header)} tab-separated fields like the header, found {len(fields)}",
                             path, lineno)
        values = {name: value for i, (name, value) in enumerate(zip(header, fields)) if i != id_col}
        doc_id = _clean_id(fields[id_col], "document id", path, lineno)
        yield _mapped_document(mapping, doc_id, values, path, lineno)


def _named_column(header: list[str], wanted: str | None, defaults: Iterable[str], what: str, path: Path,
                  line: int) -> int:
    """The index of column ``wanted`` (exact name, else any case), or of the first default name present."""
    lower = [h.lower() for h in header]
    names = [wanted] if wanted is not None else list(defaults)
    for name in names:
        if name in header:
            return header.index(name)
        if name.lower() in lower:
            return lower.index(name.lower())
    raise InputError(f"no {what} column {' or '.join(map(repr, names))} in the header (columns: "
                     f"{', '.join(header)}); the first line must name the columns", path, line)


def _mapped_document(mapping: FieldMap, doc_id: str, values: dict[str, Any], path: Path, line: int) -> Document:
    """A document of named fields: ``text_fields`` when given, else the title and the first text field."""
    if mapping.text_fields is not None:
        return mapping.document(doc_id, values, path, line)
    lower = {k.lower(): k for k in values}
    text_key = next((lower[k] for k in DOC_TEXT_KEYS if k in lower), None)
    if text_key is None:
        raise InputError(f"no text field (one of {', '.join(DOC_TEXT_KEYS)}); name them with text_fields "
                         f"(--text-fields); fields: {', '.join(values)}", path, line)
    title_key = lower.get("title")
    metadata = {k: v for k, v in values.items() if k not in (title_key, text_key)}
    return Document(id=doc_id, text=values[text_key], title=values[title_key] if title_key else "", metadata=metadata)


def _csv_columns(header: list[str], path: Path, line: int) -> tuple[int, int, int | None]:
    """Indices of the id, text and (optional) title columns of a CSV header."""
    names = [h.strip().lower() for h in header]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InputError(f"duplicate column name(s) in the header: {', '.join(duplicates)}", path, line)

    def find(keys: Iterable[str]) -> int | None:
        return next((names.index(k) for k in keys if k in names), None)

    id_col, text_col, title_col = find(DOC_ID_KEYS), find(DOC_TEXT_KEYS), find(("title",))
    if id_col is None or text_col is None:
        raise InputError(
            f"the header needs an id column ({'/'.join(DOC_ID_KEYS)}) and a text column "
            f"({'/'.join(DOC_TEXT_KEYS)}); found: {', '.join(header) or 'nothing'}",
            path,
            line,
        )
    return id_col, text_col, title_col


def _read_csv_documents(path: Path, mapping: FieldMap = FieldMap()) -> Iterator[Document]:
    csv.field_size_limit(max(csv.field_size_limit(), 1 << 30))  # documents can exceed the 128 KiB default
    last = [0]  # the number of the last line handed to the reader (a piece of empty lines counts them all)

    def lines() -> Iterator[str]:
        for number, line in _lines(path, _LINE_ENDS):
            last[0] = number + max(line.count("\n"), 1) - 1
            yield line

    reader = csv.reader(lines(), strict=True)
    header: list[str] | None = None
    columns: tuple[int, int, int | None] = (0, 0, None)
    start = 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise InputError(f"malformed CSV: {exc}", path, start) from None
        if not row or (len(row) == 1 and not row[0].strip()):
            start = last[0] + 1
            continue
        if header is None:
            header = row
            if mapping.default:
                columns = _csv_columns(header, path, start)
            else:
                names = [h.strip() for h in header]
                id_col = _named_column(names, mapping.id_field, DOC_ID_KEYS, "id", path, start)
        elif mapping.default:
            yield _csv_document(row, header, columns, path, start)
        else:
            if len(row) != len(header):
                raise InputError(f"expected {len(header)} fields like the header, found {len(row)}", path, start)
            values = {name: value for i, (name, value) in enumerate(zip(names, row)) if i != id_col}
            yield _mapped_document(mapping, _clean_id(row[id_col], "document id", path, start), values, path, start)
        start = last[0] + 1


def _csv_document(row: list[str], header: list[str], columns: tuple[int, int, int | None], path: Path, line: int) -> Document:
    if len(row) != len(header):
        raise InputError(f"expected {len(header)} fields like the header, found {len(row)}", path, line)
    id_col, text_col, title_col = columns
    used = {id_col, text_col, title_col}
    metadata = {header[i].strip(): value for i, value in enumerate(row) if i not in used}
    return Document(
        id=_clean_id(row[id_col], "document id", path, line),
        text=row[text_col],
        title="" if title_col is None else row[title_col],
        metadata=metadata,
    )


def _walk(folder: Path, keep: Callable[[str], bool], root: Path | None = None) -> Iterator[Path]:
    """Files under ``folder`` whose name passes ``keep``, depth first in sorted name order (so in the
    order of their relative paths compared component by component), hidden entries skipped, symbolic
    links to folders not followed. A symbolic link to a file is followed only when the file is inside
    the folder (``root``, the folder given): one that leads outside is an InputError naming it, never
    a document read from wherever it points."""
    root = root or Path(os.path.realpath(folder))
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError as exc:
        raise InputError(f"cannot list: {exc.strerror or exc}", folder) from None
    for entry in entries:
        if entry.name.startswith("."):
            continue
        if entry.is_dir(follow_symlinks=False):
            yield from _walk(Path(entry.path), keep, root)
        elif entry.is_file() and keep(entry.name):
            if entry.is_symlink():
                _check_inside(Path(entry.path), root)
            yield Path(entry.path)


def _check_inside(link: Path, root: Path) -> None:
    target = Path(os.path.realpath(link))
    if root != target and root not in target.parents:
        raise InputError(f"a symbolic link to {target}, outside the folder: only files inside the folder are read "
                         f"(copy the file in, or remove the link)", link)


def _is_txt(name: str) -> bool:
    lower = name.lower()
    return lower.endswith(".txt") or lower.endswith(".txt.gz")


def _read_folder_documents(folder: Path, mapping: FieldMap = FieldMap()) -> Iterator[Document]:
    if not mapping.default:
        raise InputError("a folder of .txt files has no fields to map: one file is one document's text", folder)
    if not folder.is_dir():
        raise InputError("format 'folder' needs a folder of .txt files", folder)
    for file in _walk(folder, _is_txt):
        doc_id = file.relative_to(folder).as_posix()
        if _SURROGATE.search(doc_id):
            raise InputError("the file name is not valid UTF-8", file)
        yield Document(id=doc_id, text=_read_text(file))


_DOC_TAG = re.compile(r"<(/?)DOC(?:\s[^>]*)?\s*>", re.IGNORECASE)
_DOCNO = re.compile(r"<DOCNO>(.*?)</DOCNO>", re.IGNORECASE | re.DOTALL)
_TITLE_TAGS = ("TITLE", "HEAD", "HEADLINE")
_TAG = re.compile(r"<[^<>]*>")
_SPACE = re.compile(r"\s+")


def _clean_markup(text: str) -> str:
    """Tags removed, SGML/HTML entities decoded, whitespace collapsed to single spaces."""
    return _SPACE.sub(" ", html.unescape(_TAG.sub(" ", text))).strip()


def _trec_record(body: str, path: Path, line: int, mapping: FieldMap = FieldMap()) -> Document:
    """One ``<DOC>`` record's inside: DOCNO, optional title element, the rest as text."""
    docnos = _DOCNO.findall(body)
    if not docnos:
        raise InputError("<DOC> without <DOCNO> ... </DOCNO>", path, line)
    if len(docnos) > 1:
        raise InputError(f"<DOC> with {len(docnos)} <DOCNO> elements", path, line)
    doc_id = _clean_id(_clean_markup(docnos[0]), "DOCNO", path, line)
    rest = _DOCNO.sub(" ", body)
    title = ""
    for tag in _TITLE_TAGS:
        match = re.search(rf"<{tag}>(.*?)</{tag}>", rest, re.IGNORECASE | re.DOTALL)
        if match:
            title = _clean_markup(match.group(1))
            rest = rest[: match.start()] + " " + rest[match.end() :]
            break
    if mapping.text_fields is not None:
        return mapping.document(doc_id, {"title": title, "text": _clean_markup(rest)}, path, line)
    return Document(id=doc_id, text=_clean_markup(rest), title=title)


def _tagged_blocks(path: Path, tag_pattern: re.Pattern[str], name: str) -> Iterator[tuple[int, str]]:
    """(line of the opening tag, inside) of every ``<name> ... </name>`` block of the file.

    Tags may stand anywhere in the lines; text outside blocks, nested or unclosed blocks and stray
    closing tags are errors naming the line.
    """
    open_line = 0  # line of the open tag, 0 when outside a block
    parts: list[str] = []
    for lineno, line in _lines(path):
        pos = 0
        for tag in tag_pattern.finditer(line):
            segment = line[pos : tag.start()]
            closing = tag.group(1) == "/"
            if open_line:
                parts.append(segment)
                if not closing:
                    raise InputError(f"<{name}> inside the <{name}> opened at line {open_line} (missing </{name}>?)",
                                     path, lineno)
                yield open_line, "".join(parts)
                open_line, parts = 0, []
            else:
                if segment.strip():
                    raise InputError(f"text outside <{name}> ... </{name}>", path, lineno)
                if closing:
                    raise InputError(f"</{name}> without an open <{name}>", path, lineno)
                open_line = lineno
            pos = tag.end()
        tail = line[pos:]
        if open_line:
            parts.append(tail)
        elif tail.strip():
            raise InputError(f"text outside <{name}> ... </{name}>", path, lineno)
    if open_line:
        raise InputError(f"<{name}> never closed with </{name}>", path, open_line)


def _trec_documents_in_file(path: Path, mapping: FieldMap = FieldMap()) -> Iterator[Document]:
    """Every ``<DOC>`` record of one TREC file."""
    for line, body in _tagged_blocks(path, _DOC_TAG, "DOC"):
        yield _trec_record(body, path, line, mapping)


def _read_trec_documents(source: Path, mapping: FieldMap = FieldMap()) -> Iterator[Document]:
    if mapping.id_field is not None:
        raise InputError("TREC documents take their id from <DOCNO>: an id field cannot be chosen", source)
    if source.is_dir():
        for file in _walk(source, lambda name: True):
            yield from _trec_documents_in_file(file, mapping)
    else:
        yield from _trec_documents_in_file(source, mapping)


# --------------------------------------------------------------------------- SMART

#: Names of the SMART fields that become metadata (``.T`` is the title, ``.W`` the text); any other
#: capital letter ``X`` becomes the field ``X``.
SMART_FIELDS: dict[str, str] = {"T": "title", "W": "text", "A": "author", "B": "bib", "N": "note", "X": "xref",
                                "K": "keywords", "C": "categories"}
_SMART_MARKER = re.compile(r"^\.([A-Z])(?:[ \t]+(\S+))?[ \t]*$")
_SMART_START = re.compile(rb"(?m)^\.I[ \t]+\S")

SmartRecord = tuple[int, str, dict[str, list[str]]]  # (line of .I, id, {field letter: [value, ...]})


def _smart_id(raw: str) -> str:
    """A SMART id as the relevance files write it: ``001`` -> ``1``; other ids as they are."""
    return str(int(raw)) if raw.isdigit() else raw


def _smart_records(path: Path) -> Iterator[SmartRecord]:
    """Every ``.I`` record of a SMART file, its fields' lines squashed into one value each."""
    start = 0
    record_id: str | None = None
    fields: dict[str, list[str]] = {}
    current: list[str] | None = None
    for lineno, line in _lines(path):
        content = _strip_eol(line)
        marker = _SMART_MARKER.match(content)
        if marker and marker.group(1) == "I":
            if marker.group(2) is None:
                raise InputError(".I without a record id", path, lineno)
            if record_id is not None:
                yield start, record_id, _squashed(fields)
            start, record_id, fields, current = lineno, _smart_id(marker.group(2)), {}, None
        elif marker and marker.group(2) is None:
            letter = marker.group(1)
            if record_id is None:
                raise InputError(f"field .{letter} before the first .I record (expected SMART: .I id, then .T, .W, "
                                 f"... fields)", path, lineno)
            if "W" in fields and letter in fields and current is not None:
                continue  # a stray marker inside the text: its lines stay in the current field
            current = []
            fields.setdefault(letter, []).append(current)  # type: ignore[arg-type]
        elif record_id is None:
            if content.strip():
                raise InputError("text before the first .I record (expected SMART: .I id, then .T, .W, ... fields)",
                                 path, lineno)
        elif current is None:
            if content.strip():
                raise InputError("text before the record's first field marker (.T, .W, ...)", path, lineno)
        else:
            current.append(content)
    if record_id is not None:
        yield start, record_id, _squashed(fields)


def _squashed(fields: Mapping[str, list[Any]]) -> dict[str, list[str]]:
    """Each field value's lines joined into one line, runs of whitespace collapsed; empty values dropped."""
    out: dict[str, list[str]] = {}
    for letter, values in fields.items():
        squashed = [" ".join(" ".join(lines).split()) for lines in values]
        out[letter] = [v for v in squashed if v]
    return out


def _smart_values(fields: Mapping[str, list[str]]) -> dict[str, str]:
    """``{field name: text}``: the title and text values joined with spaces, the others with ``"; "``."""
    return {SMART_FIELDS.get(letter, letter): (" " if letter in "TW" else "; ").join(values)
            for letter, values in fields.items()}


def _read_smart_documents(path: Path, mapping: FieldMap = FieldMap()) -> Iterator[Document]:
    if mapping.id_field is not None:
        raise InputError("SMART documents take their id from .I: an id field cannot be chosen", path)
    for line, doc_id, fields in _smart_records(path):
        values = _smart_values(fields)
        if mapping.text_fields is not None:
            yield mapping.document(doc_id, values, path, line)
            continue
        title, text = values.pop("title", ""), values.pop("text", "")
        yield Document(id=doc_id, text=text, title=title, metadata=values)


# --------------------------------------------------------------------------- Glasgow collections
# The classic test collections that do not use SMART's .I layout (University of Glasgow IR group's
# test_collections): TIME (*TEXT / *FIND records, *STOP at the end), NPL (an id line, text lines, a
# line "/") and LISA (a "Document N" line, the title, a blank line, the abstract, a line of asterisks;
# its queries end with "#").

_TIME_TEXT = re.compile(r"^\*TEXT[ \t]+(\S+)[ \t]*(.*?)[ \t]*$")
_TIME_FIND = re.compile(r"^\*FIND[ \t]+(\S+)[ \t]*$")
_TIME_STOP = re.compile(r"^\*STOP[ \t]*$")
_NUMERIC_ID = re.compile(r"^[ \t]*(\d+)[ \t]*$")
_NPL_END = re.compile(r"^[ \t]*/[ \t]*$")
_LISA_DOCUMENT = re.compile(r"^Document[ \t]+(\d+)[ \t]*$")
_LISA_END = re.compile(r"^[ \t]*\*{10,}[ \t]*$")

GlasgowRecord = tuple[int, str, list[str]]  # (line of the record's first line, id or header, its lines)


def _starred_records(path: Path, start: re.Pattern[str], what: str) -> Iterator[GlasgowRecord]:
    """TIME's records: a line matching ``start`` (``*TEXT ...`` or ``*FIND n``) opens one, the next
    such line or ``*STOP`` ends it; text before the first record or after ``*STOP`` is an error."""
    line, key, body = 0, "", []  # type: tuple[int, str, list[str]]
    stopped = 0
    for lineno, raw in _lines(path):
        content = _strip_eol(raw)
        if stopped:
            if content.strip():
                raise InputError(f"text after *STOP (line {stopped}), which ends the file", path, lineno)
            continue
        opened = start.match(content)
        if opened or _TIME_STOP.match(content):
            if line:
                yield line, key, body
            line, key, body = 0, "", []
            if opened:
                line, key = lineno, opened.group(0)
            else:
                stopped = lineno
        elif line:
            body.append(content)
        elif content.strip():
            raise InputError(f"text before the first {what} record (expected TIME: {what} lines opening each "
                             f"record, *STOP at the end)", path, lineno)
    if line:
        yield line, key, body


def _joined(lines: Iterable[str]) -> str:
    """Lines joined with single spaces, runs of whitespace collapsed."""
    return " ".join(" ".join(lines).split())


def _read_time_documents(path: Path, mapping: FieldMap = FieldMap()) -> Iterator[Document]:
    """TIME.ALL: ``*TEXT 017 01/04/63 PAGE 020`` opens a document. Its id is its position in the file
    (1, 2, ...), the numbering TIME.REL uses; the text number and the rest of the header line are
    metadata (``text_number``, ``header``)."""
    if mapping.id_field is not None:
        raise InputError("TIME documents are numbered by position: an id field cannot be chosen", path)
    for position, (line, header, body) in enumerate(_starred_records(path, _TIME_TEXT, "*TEXT"), 1):
        parts = _TIME_TEXT.match(header)
        assert parts is not None
        values = {"text": _joined(body), "text_number": parts.group(1), "header": parts.group(2)}
        if mapping.text_fields is not None:
            yield mapping.document(str(position), values, path, line)
        else:
            yield Document(id=str(position), text=values.pop("text"), metadata=values)


def _read_time_queries(path: Path, mapping: FieldMap = FieldMap(), topic_field: str = "title") -> QueryLines:
    """TIME.QUE: ``*FIND 46`` opens a query, whose text runs to the next ``*FIND`` or ``*STOP``."""
    for line, header, body in _starred_records(path, _TIME_FIND, "*FIND"):
        found = _TIME_FIND.match(header)
        assert found is not None
        yield line, _smart_id(found.group(1)), _joined(body)


def _numbered_records(path: Path, opener: re.Pattern[str], ending: Callable[[str], str | None], expected: str,
                      unended: str, nested: str | None = None) -> Iterator[GlasgowRecord]:
    """Records that open with a line ``opener`` matches (its group 1 the id; blank lines between
    records skipped) and end with a line for which ``ending`` gives the text it adds (``None``: not an
    end). ``expected`` is the error for any other line between records, ``unended`` (with ``{key}``) for
    a record the file leaves open, ``nested`` (with ``{key}`` and ``{line}``), if given, for an opening
    line inside a record."""
    line, key, body = 0, "", []  # type: tuple[int, str, list[str]]
    for lineno, raw in _lines(path):
        content = _strip_eol(raw)
        if line == 0:
            if not content.strip():
                continue
            opened = opener.match(content)
            if opened is None:
                raise InputError(expected, path, lineno)
            line, key, body = lineno, _smart_id(opened.group(1)), []
            continue
        last = ending(content)
        if last is not None:
            body.append(last)
            yield line, key, body
            line = 0
        elif nested is not None and opener.match(content):
            raise InputError(nested.format(key=key, line=line), path, lineno)
        else:
            body.append(content)
    if line:
        raise InputError(unended.format(key=key), path, line)


def _slash_records(path: Path) -> Iterator[GlasgowRecord]:
    """NPL's records: a line holding a number (the id), the record's lines, a line ``/``."""
    return _numbered_records(path, _NUMERIC_ID, lambda content: "" if _NPL_END.match(content) else None,
                             "expected a record's number on a line by itself (NPL: the number, the record's "
                             "lines, a line '/')", "record {key} is not ended by a line '/'")


def _read_npl_documents(path: Path, mapping: FieldMap = FieldMap()) -> Iterator[Document]:
    """NPL's doc-text: the document's number, its text lines, a line ``/``."""
    if mapping.id_field is not None:
        raise InputError("NPL documents take their id from the number line: an id field cannot be chosen", path)
    for line, doc_id, body in _slash_records(path):
        if mapping.text_fields is not None:
            yield mapping.document(doc_id, {"text": _joined(body)}, path, line)
        else:
            yield Document(id=doc_id, text=_joined(body))


def _read_npl_queries(path: Path, mapping: FieldMap = FieldMap(), topic_field: str = "title") -> QueryLines:
    """NPL's query-text: the query's number, its text, a line ``/``."""
    for line, qid, body in _slash_records(path):
        yield line, qid, _joined(body)


def _lisa_records(path: Path) -> Iterator[GlasgowRecord]:
    """LISA's documents: ``Document 1``, the lines up to a line of asterisks."""
    return _numbered_records(path, _LISA_DOCUMENT, lambda content: "" if _LISA_END.match(content) else None,
                             "expected 'Document <number>' opening a record (LISA: the number, the title, a "
                             "blank line, the abstract, a line of asterisks)",
                             "document {key} is not ended by a line of asterisks",
                             nested="'Document' line inside document {key} (opened at line {line}): a line of "
                                    "asterisks ends each document")


def _read_lisa_file(path: Path, mapping: FieldMap) -> Iterator[Document]:
    for line, doc_id, body in _lisa_records(path):
        blank = next((i for i, text in enumerate(body) if not text.strip()), None)
        title, text = ([], body) if blank is None else (body[:blank], body[blank + 1 :])
        if mapping.text_fields is not None:
            yield mapping.document(doc_id, {"title": _joined(title), "text": _joined(text)}, path, line)
        else:
            yield Document(id=doc_id, text=_joined(text), title=_joined(title))


def _read_lisa_documents(source: Path, mapping: FieldMap = FieldMap()) -> Iterator[Document]:
    """LISA documents: one file (``LISA0.001``) or a folder of them (the distribution's
    ``LISA0.001`` .. ``LISA5.850``, read in sorted name order, which is the collection's order)."""
    if mapping.id_field is not None:
        raise InputError("LISA documents take their id from 'Document N': an id field cannot be chosen", source)
    files = _walk(source, lambda name: True) if source.is_dir() else iter([source])
    for file in files:
        yield from _read_lisa_file(file, mapping)


def _read_lisa_queries(path: Path, mapping: FieldMap = FieldMap(), topic_field: str = "title") -> QueryLines:
    """LISA.QUE: the query's number on a line by itself, its text, ended by ``#``."""
    def ending(content: str) -> str | None:
        text = content.rstrip()
        return text[:-1] if text.endswith("#") else None

    for line, qid, body in _numbered_records(path, _NUMERIC_ID, ending, "expected a query's number on a line by "
                                             "itself (LISA.QUE: the number, the text ended by '#')",
                                             "query {key} is not ended by '#'"):
        yield line, qid, _joined(body)


_TIME_HEAD = re.compile(rb"^\*TEXT[ \t]+\S")
_TIME_QUERY_HEAD = re.compile(rb"^\*FIND[ \t]+\S")
_LISA_HEAD = re.compile(rb"^Document[ \t]+\d+[ \t]*\r?\n")

#: Record-opening lines, counted for a progress bar's total (:func:`count_documents`).
_RECORD_STARTS: dict[str, re.Pattern[bytes]] = {
    "time": re.compile(rb"(?m)^\*TEXT[ \t]+\S"),
    "npl": re.compile(rb"(?m)^[ \t]*/[ \t]*\r?$"),
    "lisa": re.compile(rb"(?m)^Document[ \t]+\d+[ \t]*\r?$"),
}


def _numbered_kind(head: bytes) -> str | None:
    """``npl`` or ``lisa`` for a file whose first line is a number alone and whose first record ends
    with a line ``/`` (NPL) or a line ending in ``#`` (LISA's queries); None otherwise."""
    lines = head.split(b"\n")
    if len(lines) < 2 or not _NUMERIC_ID.match(lines[0].rstrip(b"\r").decode("latin-1")):
        return None
    for line in lines[1:200]:
        text = line.rstrip(b"\r").strip()
        if text == b"/":
            return "npl"
        if text.endswith(b"#"):
            return "lisa"
    return None


DOCUMENT_READERS: dict[str, DocumentReader] = {
    "jsonl": _read_jsonl_documents,
    "tsv": _read_tsv_documents,
    "csv": _read_csv_documents,
    "folder": _read_folder_documents,
    "trec": _read_trec_documents,
    "smart": _read_smart_documents,
    "time": _read_time_documents,
    "npl": _read_npl_documents,
    "lisa": _read_lisa_documents,
}

_DOCUMENT_EXTENSIONS = {
    ".jsonl": "jsonl",
    ".json": "jsonl",
    ".ndjson": "jsonl",
    ".tsv": "tsv",
    ".csv": "csv",
    ".trec": "trec",
    ".sgml": "trec",
}
_FOLDER_FORMATS = ("folder", "trec", "lisa")
_FIELD_FORMATS = ("jsonl", "tsv", "csv")  # where an id field can be chosen
DUPLICATE_POLICIES = ("error", "first", "last")
"""What ``read_documents(duplicates=)`` and ``--duplicates`` do with a repeated document id."""


def _extension(path: Path) -> str:
    """The format-bearing extension: ``a.jsonl.gz`` -> ``.jsonl``."""
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return os.path.splitext(name)[1]


def _check_exists(path: Path) -> None:
    if not path.exists():
        raise InputError("no such file or folder", path)


def _sniff_lines(head: bytes) -> list[bytes]:
    """The head's complete non-blank lines (the last, possibly cut, line dropped when more follow)."""
    lines = head.split(b"\n")
    if len(head) >= _SNIFF_BYTES and len(lines) > 1:
        lines = lines[:-1]
    return [line.rstrip(b"\r") for line in lines if line.strip()][:50]


def _looks_tsv(lines: list[bytes]) -> bool:
    """Every sniffed line holds the same number of tabs, 1 or 2 (``id, [title,] text``)."""
    tabs = {line.count(b"\t") for line in lines}
    return bool(lines) and len(tabs) == 1 and tabs <= {1, 2}


def _looks_csv(lines: list[bytes]) -> bool:
    """The first line is a header naming an id column and a text column between commas."""
    if not lines or b"," not in lines[0]:
        return False
    names = {name.strip().strip(b'"').decode("utf-8", "replace").lower() for name in lines[0].split(b",")}
    return bool(names & set(DOC_ID_KEYS)) and bool(names & set(DOC_TEXT_KEYS))


#: Content sniffers tried in order on a document file's first bytes: (format, test).
_DOCUMENT_SNIFFERS: tuple[tuple[str, Callable[[bytes], bool]], ...] = (
    ("jsonl", lambda head: head.startswith(b"{")),
    ("trec", lambda head: head[:4].upper() == b"<DOC"),
    ("smart", lambda head: _SMART_START.match(head) is not None),
    ("time", lambda head: _TIME_HEAD.match(head) is not None),
    ("lisa", lambda head: _LISA_HEAD.match(head) is not None),
    ("npl", lambda head: _numbered_kind(head) == "npl"),
    ("tsv", lambda head: _looks_tsv(_sniff_lines(head))),
    ("csv", lambda head: _looks_csv(_sniff_lines(head))),
)


def detect_document_format(source: str | Path) -> str:
    """The format :func:`read_documents` reads ``source`` in without ``format=``: a folder is
    ``folder``, a file goes by its extension, else by its first bytes (:data:`_DOCUMENT_SNIFFERS`)."""
    path = Path(source)
    _check_exists(path)
    if path.is_dir():
        return _folder_format(path)
    sniffed = _DOCUMENT_EXTENSIONS.get(_extension(path))
    if sniffed:
        return sniffed
    head = _head(path)
    for name, test in _DOCUMENT_SNIFFERS:
        if test(head):
            return name
    raise InputError(
        f"cannot tell the format from the name or the content; choose one with format= (--format): "
        f"{', '.join(DOCUMENT_READERS)}", path
    )


_FOLDER_SNIFF_FILES = 50


def _folder_format(folder: Path) -> str:
    """A folder's format: ``folder`` when it holds a ``.txt`` file (or nothing readable); else the
    format its files' content shows (:data:`_DOCUMENT_SNIFFERS`, the first 50 files looked at) when
    they agree on one that a folder can hold (LISA's ``LISA0.001`` .. ``LISA5.850``, TREC files);
    files that disagree are an error naming two of them."""
    if next(_walk(folder, _is_txt), None) is not None:
        return "folder"
    seen: dict[str, Path] = {}
    for count, file in enumerate(_walk(folder, lambda name: True)):
        if count == _FOLDER_SNIFF_FILES:
            break
        head = _head(file)
        name = next((name for name, test in _DOCUMENT_SNIFFERS if test(head)), "unknown")
        seen.setdefault(name, file)
    if len(seen) == 1 and next(iter(seen)) in _FOLDER_FORMATS:
        return next(iter(seen))
    if len(seen) > 1:
        found = ", ".join(f"{file.name}: {name}" for name, file in seen.items())
        raise InputError(f"a folder without .txt files whose files are not all of one format ({found}); choose "
                         f"one with format= (--format): {', '.join(_FOLDER_FORMATS)}", folder)
    return "folder"


def _document_format(path: Path, format: str | None) -> str:
    """The reader to use: ``format`` if given, else :func:`detect_document_format`."""
    if format is None:
        return detect_document_format(path)
    if format not in DOCUMENT_READERS:
        raise InputError(f"unknown document format {format!r}; known: {', '.join(DOCUMENT_READERS)}", path)
    if path.is_dir() and format not in _FOLDER_FORMATS:
        raise InputError(f"format {format!r} needs a file, found a folder", path)
    if format == "folder" and not path.is_dir():
        raise InputError("format 'folder' needs a folder of .txt files, found a file", path)
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
        return DOCUMENT_READERS[self.format](self.path, self.mapping)

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


def _count_matching(path: Path, pattern: re.Pattern[bytes]) -> int:
    """Occurrences of ``pattern`` (which never matches whitespace alone) in a (possibly gzip) file, read
    in blocks split at line ends; a block of whitespace only is passed over at once (``isspace``: a loop
    in C, where a regular expression tries every position)."""
    total = 0
    rest = b""
    with _open_binary(path) as stream:
        while block := stream.read(1 << 22):
            block = rest + block
            cut = block.rfind(b"\n") + 1
            block, rest = block[:cut], block[cut:]
            if not block.isspace():
                total += len(pattern.findall(block))
        if rest:
            total += len(pattern.findall(rest + b"\n"))
    return total


_CONTENT_LINE = re.compile(rb"[^ \t\r\n\f\v][^\n]*\n")  # a line with a character that is not whitespace
_TREC_OPEN = re.compile(rb"<DOC(?:\s[^>]*)?\s*>", re.IGNORECASE)


def count_documents(source: str | Path, format: str | None = None, *, named_columns: bool = False) -> int | None:
    """The number of documents in ``source`` for a progress bar, from its bytes (see
    :meth:`Documents.count`); None when it cannot be counted cheaply or the source is unreadable.
    ``named_columns``: the first line of a TSV names its columns (a field mapping was given)."""
    path = Path(source)
    try:
        fmt = _document_format(path, format)
        if fmt == "folder":
            return sum(1 for _ in _walk(path, _is_txt))
        if fmt == "trec":
            files = list(_walk(path, lambda name: True)) if path.is_dir() else [path]
            return sum(_count_matching(file, _TREC_OPEN) for file in files)
        if fmt == "smart":
            return _count_matching(path, re.compile(rb"(?m)^\.I[ \t]+\S"))
        if fmt in _RECORD_STARTS:
            files = list(_walk(path, lambda name: True)) if path.is_dir() else [path]
            return sum(_count_matching(file, _RECORD_STARTS[fmt]) for file in files)
        if fmt == "jsonl":
            return _count_matching(path, _CONTENT_LINE)
        if fmt == "tsv":
            lines = _count_matching(path, _CONTENT_LINE)
            first = _sniff_lines(_head(path))[:1]
            header = bool(first) and _tsv_header(first[0].decode("utf-8", "replace").split("\t")) is not None
            return lines - int(header or named_columns)
    except (InputError, OSError, EOFError, zlib.error):
        return None
    return None


def read_documents(source: str | Path, *, format: str | None = None, id_field: str | None = None,
                   text_fields: str | Iterable[str] | None = None, duplicates: str = "error") -> Documents:
    """Stream the documents of a file or folder, in file order (folders: sorted relative paths).

    ``format`` is one of :data:`DOCUMENT_READERS` (``jsonl``, ``tsv``, ``csv``, ``folder``, ``trec``,
    ``smart``); without it the format is detected (:func:`detect_document_format`). ``id_field`` and
    ``text_fields`` map a record's fields (see the module's notes); ``duplicates`` is ``"error"``,
    ``"first"`` or ``"last"`` (:data:`DUPLICATE_POLICIES`). A missing source, an unknown format and
    a mapping the format cannot take raise here; bad content raises :class:`InputError` naming file
    and line while iterating, and a source without a single document raises at the end.
    """
    path = Path(source)
    _check_exists(path)
    fmt = _document_format(path, format)
    mapping = FieldMap.of(id_field, text_fields)
    if mapping.id_field is not None and fmt not in _FIELD_FORMATS:
        raise InputError(f"an id field can be chosen for {', '.join(_FIELD_FORMATS)} documents, not {fmt}", path)
    if duplicates not in DUPLICATE_POLICIES:
        raise ParameterError(f"unknown duplicates policy {duplicates!r}; known: {', '.join(DUPLICATE_POLICIES)}", path)
    return Documents(path, fmt, mapping, duplicates)


# --------------------------------------------------------------------------- query readers


def _read_tsv_queries(path: Path, mapping: FieldMap = FieldMap(), topic_field: str = "title") -> QueryLines:
    if not mapping.default:
        yield from _read_named_tsv_queries(path, mapping)
        return
    first = True
    for lineno, line in _lines(path):
        content = _strip_eol(line)
        if not content.strip():
            continue
        fields = content.split("\t")
        if first and len(fields) == 2 and fields[0].strip().lower() in QUERY_ID_KEYS and fields[1].strip().lower() in QUERY_TEXT_KEYS:
            first = False
            continue  # a header line
        first = False
        if len(fields) != 2:
            raise InputError(f"expected 2 tab-separated fields (qid, text), found {len(fields)}", path, lineno)
        yield lineno, _clean_id(fields[0], "query id", path, lineno), fields[1].strip()


def _read_named_tsv_queries(path: Path, mapping: FieldMap) -> QueryLines:
    """A TSV of queries whose first line names its columns (any case), mapped by ``id_field`` /
    ``text_fields``: the text is the chosen columns joined with spaces, else the first of
    :data:`QUERY_TEXT_KEYS`."""
    header: list[str] | None = None
    id_col, text_cols = 0, [1]
    for lineno, line in _lines(path):
        content = _strip_eol(line)
        if not content.strip():
            continue
        fields = content.split("\t")
        if header is None:
            header = [f.strip() for f in fields]
            id_col = _named_column(header, mapping.id_field, QUERY_ID_KEYS, "query id", path, lineno)
            wanted = [None] if mapping.text_fields is None else list(mapping.text_fields)
            text_cols = [_named_column(header, name, QUERY_TEXT_KEYS, "query text", path, lineno) for name in wanted]
            continue
        if len(fields) != len(header):
            raise InputError(f"expected {len(header)} tab-separated fields like the header, found {len(fields)}",
                             path, lineno)
        text = " ".join(t for t in (fields[c].strip() for c in text_cols) if t)
        yield lineno, _clean_id(fields[id_col], "query id", path, lineno), text


def _query_text(values: Mapping[str, Any], mapping: FieldMap, path: Path, line: int) -> str:
    """A JSON query's text: its ``text_fields`` joined with spaces (a null one empty), else the first
    of :data:`QUERY_TEXT_KEYS` present."""
    if mapping.text_fields is None:
        return _json_text(values, QUERY_TEXT_KEYS, path, line, QUERY_TEXT_OPTION)[1]
    texts = []
    for name in mapping.text_fields:
        if name not in values:
            raise InputError(_missing("text", (name,), values, ""), path, line)
        value = values[name]
        if value is not None and not isinstance(value, str):
            raise InputError(f"field {name!r} must be a string or null, found {_json_type(value)}", path, line)
        texts.append(value or "")
    return " ".join(t for t in texts if t)


def _read_jsonl_queries(path: Path, mapping: FieldMap = FieldMap(), topic_field: str = "title") -> QueryLines:
    id_keys = QUERY_ID_KEYS if mapping.id_field is None else (mapping.id_field,)
    for lineno, line in _lines(path):
        if not line.strip():
            continue
        obj = _parse_json_object(line, path, lineno)
        _, qid = _json_id(obj, id_keys, "query id", path, lineno, "" if mapping.id_field else QUERY_ID_OPTION)
        yield lineno, qid, _query_text(obj, mapping, path, lineno)


#: Fields of a TREC topic and the label that may open their text.
TOPIC_FIELDS: dict[str, str] = {"num": "Number:", "title": "Topic:", "desc": "Description:", "narr": "Narrative:"}
_TOP_TAG = re.compile(r"<(/?)top\s*>", re.IGNORECASE)
_ANY_TAG = re.compile(r"<(/?)([A-Za-z]+)[^<>]*>")


def _topic_fields(body: str, path: Path, line: int) -> dict[str, str]:
    """``{field: text}`` of one topic: each text runs from its tag to the next tag."""
    tags = list(_ANY_TAG.finditer(body))
    fields: dict[str, str] = {}
    for i, tag in enumerate(tags):
        name = tag.group(2).lower()
        if tag.group(1) or name not in TOPIC_FIELDS:
            continue
        if name in fields:
            raise InputError(f"topic with two <{name}> fields", path, line)
        end = tags[i + 1].start() if i + 1 < len(tags) else len(body)
        text = _SPACE.sub(" ", html.unescape(body[tag.end() : end])).strip()
        label = TOPIC_FIELDS[name]
        if text.lower().startswith(label.lower()):
            text = text[len(label) :].strip()
        fields[name] = text
    return fields


def _topic_query(body: str, wanted: list[str], path: Path, line: int) -> tuple[str, str]:
    fields = _topic_fields(body, path, line)
    qid = _clean_id(fields.get("num", ""), "topic number (<num>)", path, line)
    missing = [f for f in wanted if f not in fields]
    if missing:
        raise InputError(f"topic {qid} has no <{missing[0]}>", path, line)
    return qid, " ".join(fields[f] for f in wanted if fields[f])


def _read_trec_topics(path: Path, mapping: FieldMap = FieldMap(), topic_field: str = "title") -> QueryLines:
    wanted = _topic_field_list(topic_field, path)
    for line, body in _tagged_blocks(path, _TOP_TAG, "top"):
        yield (line, *_topic_query(body, wanted, path, line))


def _topic_field_list(topic_field: str, path: Path) -> list[str]:
    wanted = [f.strip().lower() for f in topic_field.split("+")]
    unknown = [f for f in wanted if f not in TOPIC_FIELDS or f == "num"]
    if unknown or not wanted:
        choices = ", ".join(f for f in TOPIC_FIELDS if f != "num")
        raise InputError(f"unknown topic field {topic_field!r}; use one of {choices} or a '+' join", path)
    return wanted


def _read_smart_queries(path: Path, mapping: FieldMap = FieldMap(), topic_field: str = "title") -> QueryLines:
    """SMART queries: ``.I id`` records; the text is the ``.T`` and ``.W`` values joined."""
    for line, qid, fields in _smart_records(path):
        values = _smart_values(fields)
        yield line, qid, " ".join(t for t in (values.get("title", ""), values.get("text", "")) if t)


QueryReader = Callable[[Path, FieldMap, str], QueryLines]
"""A query reader: (path, field mapping, TREC topic field) -> (line, qid, text) of each query."""
QUERY_READERS: dict[str, QueryReader] = {
    "tsv": _read_tsv_queries,
    "jsonl": _read_jsonl_queries,
    "trec": _read_trec_topics,
    "smart": _read_smart_queries,
    "time": _read_time_queries,
    "npl": _read_npl_queries,
    "lisa": _read_lisa_queries,
}

_QUERY_FIELD_FORMATS = ("jsonl", "tsv")  # where the id and text fields can be chosen
QUERY_ID_MODES = ("given", "position")
"""``read_queries(ids=)``: the ids the file gives, or the queries' positions 1, 2, ... in the file."""

_QUERY_EXTENSIONS = {".tsv": "tsv", ".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl", ".trec": "trec",
                     ".qry": "smart"}


def detect_query_format(source: str | Path) -> str:
    """``read_queries``' format without ``format=``: the extension, else the first bytes (``{`` JSONL,
    ``.I`` SMART, ``<`` TREC topics, else TSV)."""
    path = Path(source)
    _check_exists(path)
    if path.is_dir():
        raise InputError("is a folder, expected a queries file", path)
    sniffed = _QUERY_EXTENSIONS.get(_extension(path))
    if sniffed:
        return sniffed
    head = _head(path)
    if head.startswith(b"{"):
        return "jsonl"
    if _SMART_START.match(head):
        return "smart"
    if _TIME_QUERY_HEAD.match(head):
        return "time"
    numbered = _numbered_kind(head)
    if numbered:
        return numbered
    if head.startswith(b"<"):
        return "trec"
    return "tsv"


def _query_format(path: Path, format: str | None) -> str:
    """``format`` if given, else :func:`detect_query_format`."""
    if format is None:
        return detect_query_format(path)
    if format not in QUERY_READERS:
        raise InputError(f"unknown query format {format!r}; known: {', '.join(QUERY_READERS)}", path)
    return format


def read_queries(source: str | Path, *, format: str | None = None, topic_field: str = "title",
                 ids: str = "given", id_field: str | None = None,
                 text_fields: str | Iterable[str] | None = None) -> dict[str, str]:
    """All queries of a file as ``{qid: text}`` in file order.

    ``format`` is one of :data:`QUERY_READERS` (``tsv``, ``jsonl``, ``trec``, ``smart``), detected
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
    _check_exists(path)
    if ids not in QUERY_ID_MODES:
        raise ParameterError(f"unknown query id mode {ids!r}; known: {', '.join(QUERY_ID_MODES)}")
    fmt = _query_format(path, format)
    mapping = FieldMap.of(id_field, text_fields)
    if not mapping.default and fmt not in _QUERY_FIELD_FORMATS:
        raise InputError(f"a query id field and text fields can be chosen for {' and '.join(_QUERY_FIELD_FORMATS)} "
                         f"queries, not {fmt}" + (" (--topic-field picks a topic's fields)" if fmt == "trec" else ""),
                         path)
    lines = QUERY_READERS[fmt](path, mapping, topic_field)
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
