"""Readers that stream documents and queries out of a user's files.

Document formats (``read_documents``; the format is sniffed, ``format=`` overrides it):

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

Any file may be gzip-compressed: gzip is recognised by its magic bytes, and a trailing ``.gz`` is
ignored when the format is sniffed from the extension.

Query formats (``read_queries``): ``tsv`` (``qid<TAB>text``), ``jsonl`` (``{"_id" | "id" | "qid" |
"query_id", "text" | "query"}``) and ``trec`` topics (``<top> <num> Number: 401 <title> ... </top>``,
the ``<title>`` by default; ``topic_field="desc"`` or ``"title+desc"`` pick others).

Contract for bad input: every problem raises :class:`bm25lab.engine.errors.InputError` with the file and the
1-based line (``path:line: message``): malformed lines, text that is not valid UTF-8 (always an
error, never replaced: the message names the line and the byte), a missing or unreadable file, a
corrupt gzip stream, a file with no documents or no queries, a JSON line that is not an object or
lacks its id or text, a duplicate query id, and a line-based file (JSONL, TSV) whose lines end in a
carriage return alone (it would read as one line). Empty text is allowed (an empty document or query).
Duplicate document ids are left to the index builder. Ids are stripped of surrounding whitespace and
must not be empty. A UTF-8 byte-order mark at the start of a file is ignored.

Everything streams: a file is read line by line and never held whole, except one ``.txt`` file of a
folder, which is one document.
"""
from __future__ import annotations

import csv
import gzip
import html
import json
import os
import re
import zlib
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable, Iterator, Mapping

from .errors import InputError
from .records import Document

__all__ = [
    "DOCUMENT_READERS",
    "QUERY_READERS",
    "TOPIC_FIELDS",
    "read_documents",
    "read_queries",
]

_GZIP_MAGIC = b"\x1f\x8b"
_BOM = "\ufeff"
_SNIFF_BYTES = 65536

DOC_ID_KEYS = ("id", "_id", "docid", "doc_id")
DOC_TEXT_KEYS = ("text", "contents", "body")
QUERY_ID_KEYS = ("_id", "id", "qid", "query_id")
QUERY_TEXT_KEYS = ("text", "query")

DocumentReader = Callable[[Path], Iterator[Document]]
QueryLines = Iterator[tuple[int, str, str]]  # (line, qid, text)


# --------------------------------------------------------------------------- low-level input


def _open_binary(path: Path) -> BinaryIO:
    """Open ``path`` for reading bytes, decompressing gzip when the file starts with its magic."""
    try:
        raw = open(path, "rb")  # noqa: SIM115 - closed by the caller's ``with``
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
        raw.close()
        return gzip.open(path, "rb")  # type: ignore[return-value]
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


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield ``(line number, decoded line with its terminator)`` from a plain or gzip file. A first
    line holding a carriage return that no line feed follows is refused: the file's lines end in
    CR alone (classic Mac OS), and it would read as a single line."""
    line = 0
    with _open_binary(path) as stream:
        try:
            for raw in stream:
                line += 1
                if line == 1 and b"\r" in raw.rstrip(b"\r\n"):
                    raise InputError("a carriage return (CR) inside the line: lines ending in CR alone (classic "
                                     "Mac OS) are not read; convert the file to LF or CRLF line endings", path, line)
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


def _json_id(obj: Mapping[str, Any], keys: tuple[str, ...], what: str, path: Path, line: int) -> tuple[str, str]:
    key = _first_key(obj, keys)
    if key is None:
        raise InputError(f"missing {what} (one of {', '.join(map(repr, keys))})", path, line)
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(f"{what} {key!r} must be a string or an integer, found {_json_type(value)}", path, line)
    return key, _clean_id(str(value), what, path, line)


def _json_text(obj: Mapping[str, Any], keys: tuple[str, ...], path: Path, line: int) -> tuple[str, str]:
    key = _first_key(obj, keys)
    if key is None:
        raise InputError(f"missing text (one of {', '.join(map(repr, keys))})", path, line)
    value = obj[key]
    if not isinstance(value, str):
        raise InputError(f"field {key!r} must be a string, found {_json_type(value)}", path, line)
    return key, value


# --------------------------------------------------------------------------- document readers


def _read_jsonl_documents(path: Path) -> Iterator[Document]:
    for lineno, line in _lines(path):
        if not line.strip():
            continue
        obj = _parse_json_object(line, path, lineno)
        id_key, doc_id = _json_id(obj, DOC_ID_KEYS, "document id", path, lineno)
        text_key, text = _json_text(obj, DOC_TEXT_KEYS, path, lineno)
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


def _read_tsv_documents(path: Path) -> Iterator[Document]:
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


def _read_csv_documents(path: Path) -> Iterator[Document]:
    csv.field_size_limit(max(csv.field_size_limit(), 1 << 30))  # documents can exceed the 128 KiB default
    lines = (line for _, line in _lines(path))
    reader = csv.reader(lines, strict=True)
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
            start = reader.line_num + 1
            continue
        if header is None:
            header = row
            columns = _csv_columns(header, path, start)
        else:
            yield _csv_document(row, header, columns, path, start)
        start = reader.line_num + 1


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


def _read_folder_documents(folder: Path) -> Iterator[Document]:
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


def _trec_record(body: str, path: Path, line: int) -> Document:
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


def _trec_documents_in_file(path: Path) -> Iterator[Document]:
    """Every ``<DOC>`` record of one TREC file."""
    for line, body in _tagged_blocks(path, _DOC_TAG, "DOC"):
        yield _trec_record(body, path, line)


def _read_trec_documents(source: Path) -> Iterator[Document]:
    if source.is_dir():
        for file in _walk(source, lambda name: True):
            yield from _trec_documents_in_file(file)
    else:
        yield from _trec_documents_in_file(source)


DOCUMENT_READERS: dict[str, DocumentReader] = {
    "jsonl": _read_jsonl_documents,
    "tsv": _read_tsv_documents,
    "csv": _read_csv_documents,
    "folder": _read_folder_documents,
    "trec": _read_trec_documents,
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
_FOLDER_FORMATS = ("folder", "trec")


def _extension(path: Path) -> str:
    """The format-bearing extension: ``a.jsonl.gz`` -> ``.jsonl``."""
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return os.path.splitext(name)[1]


def _check_exists(path: Path) -> None:
    if not path.exists():
        raise InputError("no such file or folder", path)


def _document_format(path: Path, format: str | None) -> str:
    """The reader to use: ``format`` if given, else a folder, the extension or the first bytes."""
    if format is not None:
        if format not in DOCUMENT_READERS:
            raise InputError(f"unknown document format {format!r}; known: {', '.join(DOCUMENT_READERS)}", path)
        if path.is_dir() and format not in _FOLDER_FORMATS:
            raise InputError(f"format {format!r} needs a file, found a folder", path)
        if format == "folder" and not path.is_dir():
            raise InputError("format 'folder' needs a folder of .txt files, found a file", path)
        return format
    if path.is_dir():
        return "folder"
    sniffed = _DOCUMENT_EXTENSIONS.get(_extension(path))
    if sniffed:
        return sniffed
    head = _head(path)
    if head.startswith(b"{"):
        return "jsonl"
    if head[:4].upper() == b"<DOC":
        return "trec"
    raise InputError(
        f"cannot tell the format from the name or the content; pass a format ({', '.join(DOCUMENT_READERS)})", path
    )


def _nonempty(documents: Iterator[Document], path: Path, what: str) -> Iterator[Document]:
    count = 0
    for doc in documents:
        count += 1
        yield doc
    if count == 0:
        raise InputError(f"no {what} found", path)


def read_documents(source: str | Path, *, format: str | None = None) -> Iterator[Document]:
    """Stream the documents of a file or folder, in file order (folders: sorted relative paths).

    ``format`` is one of :data:`DOCUMENT_READERS` (``jsonl``, ``tsv``, ``csv``, ``folder``, ``trec``);
    without it a folder reads as ``folder``, a file by its extension (``.jsonl .json .ndjson .tsv
    .csv .trec .sgml``, a trailing ``.gz`` ignored) or else by its first bytes (``{`` JSON Lines,
    ``<DOC`` TREC). A missing source and an unknown format raise here; bad content raises
    :class:`InputError` naming file and line while iterating, and a source without a single document
    raises at the end.
    """
    path = Path(source)
    _check_exists(path)
    fmt = _document_format(path, format)
    what = "documents (.txt files)" if fmt == "folder" else "documents"
    return _nonempty(DOCUMENT_READERS[fmt](path), path, what)


# --------------------------------------------------------------------------- query readers


def _read_tsv_queries(path: Path) -> QueryLines:
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


def _read_jsonl_queries(path: Path) -> QueryLines:
    for lineno, line in _lines(path):
        if not line.strip():
            continue
        obj = _parse_json_object(line, path, lineno)
        _, qid = _json_id(obj, QUERY_ID_KEYS, "query id", path, lineno)
        _, text = _json_text(obj, QUERY_TEXT_KEYS, path, lineno)
        yield lineno, qid, text


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


def _read_trec_topics(path: Path, topic_field: str = "title") -> QueryLines:
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


QUERY_READERS: dict[str, Callable[..., QueryLines]] = {
    "tsv": _read_tsv_queries,
    "jsonl": _read_jsonl_queries,
    "trec": _read_trec_topics,
}

_QUERY_EXTENSIONS = {".tsv": "tsv", ".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl", ".trec": "trec"}


def _query_format(path: Path, format: str | None) -> str:
    """``format`` if given, else the extension, else the first bytes (``{`` JSONL, ``<`` TREC, else TSV)."""
    if format is not None:
        if format not in QUERY_READERS:
            raise InputError(f"unknown query format {format!r}; known: {', '.join(QUERY_READERS)}", path)
        return format
    if path.is_dir():
        raise InputError("is a folder, expected a queries file", path)
    sniffed = _QUERY_EXTENSIONS.get(_extension(path))
    if sniffed:
        return sniffed
    head = _head(path)
    if head.startswith(b"{"):
        return "jsonl"
    if head.startswith(b"<"):
        return "trec"
    return "tsv"


def read_queries(source: str | Path, *, format: str | None = None, topic_field: str = "title") -> dict[str, str]:
    """All queries of a file as ``{qid: text}`` in file order.

    ``format`` is one of :data:`QUERY_READERS` (``tsv``, ``jsonl``, ``trec``), sniffed like
    :func:`read_documents` when omitted (unknown extensions: ``{`` JSONL, ``<`` TREC topics, else TSV).
    ``topic_field`` picks the TREC topic text: ``title`` (default), ``desc``, ``narr`` or a join such
    as ``title+desc``. A duplicate query id, a malformed line and an empty file raise
    :class:`InputError` naming file and line.
    """
    path = Path(source)
    _check_exists(path)
    fmt = _query_format(path, format)
    reader = QUERY_READERS[fmt]
    lines = reader(path, topic_field) if fmt == "trec" else reader(path)
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
