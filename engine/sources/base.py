"""What every reader of :mod:`bm25lab.engine.sources` shares: files opened plain or gzipped (bounded: a gzip
bomb is an error naming the file), strict UTF-8 lines that name their line on a bad byte, blank lines
skipped a buffer at a time, ids, JSON records, folder walks, a file's first bytes for sniffing, records
counted from the bytes for a progress total."""
from __future__ import annotations

import json
import os
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable, Iterator, Mapping

from ..compressed import open_gzip
from ..errors import InputError, cr_line_ends
from ..records import Document

GZIP_MAGIC = b"\x1f\x8b"
BOM = "\ufeff"
SNIFF_BYTES = 65536
READ_BUFFER = 1 << 16  # bytes read at a time; a run of blank lines in them is skipped at once (read_lines)

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
                raise InputError(f"field {name!r} must be a string or null, found {json_type(value)}", path, line)
            texts[name] = value or ""
        title = texts.pop("title", "")
        metadata = {k: v for k, v in values.items() if k not in self.text_fields and k != self.id_field}
        return Document(id=doc_id, text="\n".join(texts.values()), title=title, metadata=metadata)


DocumentReader = Callable[[Path, FieldMap], Iterator[Document]]


# --------------------------------------------------------------------------- low-level input


def open_binary(path: Path) -> BinaryIO:
    """Open ``path`` for reading bytes, decompressing gzip when the file starts with its magic."""
    try:
        raw = open(path, "rb", buffering=READ_BUFFER)  # noqa: SIM115 - closed by the caller's ``with``
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
    if magic == GZIP_MAGIC:
        return open_gzip(raw, path, READ_BUFFER)  # bounded: a gzip bomb is an error naming the file
    return raw  # type: ignore[return-value]


def decode_line(raw: bytes, path: Path, line: int) -> str:
    """Strict UTF-8 decoding; an invalid byte is an error naming the line and the byte."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = raw[exc.start : exc.start + 1].hex()
        raise InputError(
            f"invalid UTF-8: byte 0x{bad} at byte {exc.start + 1} of the line", path, line
        ) from None
    if line == 1 and text.startswith(BOM):
        text = text[1:]
    return text


WHITESPACE = b" \t\n\r\x0b\x0c"  # what bytes.isspace() and bytes.split() take for whitespace
LINE_ENDS = b"\r\n"  # the empty lines a CSV reader is given together (a quoted field keeps them as they are)


def blank_run(data: bytes, blank: bytes) -> int:
    """The length of the whole lines at the start of ``data`` that hold only bytes of ``blank`` (0: none)."""
    end = len(data) - len(data.lstrip(blank))
    return data.rfind(b"\n", 0, end) + 1


def read_lines(path: Path, blank: bytes = WHITESPACE) -> Iterator[tuple[int, str]]:
    """Yield ``(line number, decoded line with its terminator)`` from a plain or gzip file. A first
    line holding a carriage return that no line feed follows is refused: the file's lines end in
    CR alone (classic Mac OS), and it would read as a single line.

    Lines of ``blank`` bytes only (whitespace) come in pieces: after one such line, the ones that follow
    it in the read buffer are given at once as one "line" holding them all (numbered by its first),
    found by ``bytes.lstrip`` (C), so that a file of millions of blank lines costs a Python step per
    buffer (64 KiB), not per line. Every reader skips, or collapses, whitespace."""
    line = 0
    with open_binary(path) as stream:
        try:
            for raw in stream:
                line += 1
                if line == 1 and b"\r" in raw.rstrip(b"\r\n"):
                    raise cr_line_ends(path, line)
                if raw.isspace() and raw.endswith(b"\n") and not raw.strip(blank):  # isspace: no copy of a line
                    yield line, raw.decode("ascii")
                    while (buffered := stream.peek(1)) and (run := blank_run(buffered, blank)):
                        piece = stream.read(run)
                        yield line + 1, piece.decode("ascii")
                        line += piece.count(b"\n")
                    continue
                yield line, decode_line(raw, path, line)
        except (OSError, EOFError, zlib.error) as exc:
            reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            raise InputError(f"cannot read (corrupt or truncated file?): {reason}", path, line + 1) from None


def read_text(path: Path) -> str:
    """A whole (small) file as text, decoded strictly; a bad byte names its line."""
    with open_binary(path) as stream:
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
    return text[1:] if text.startswith(BOM) else text


def first_bytes(path: Path) -> bytes:
    """The first bytes of a file (decompressed), stripped of leading whitespace and BOM, for sniffing."""
    with open_binary(path) as stream:
        try:
            data = stream.read(SNIFF_BYTES)
        except (OSError, EOFError, zlib.error):
            return b""
    return data.lstrip(b"\xef\xbb\xbf").lstrip()


def strip_eol(line: str) -> str:
    return line.rstrip("\r\n")


def clean_id(value: str, what: str, path: Path, line: int) -> str:
    ident = value.strip()
    if not ident:
        raise InputError(f"empty {what}", path, line)
    return ident


# --------------------------------------------------------------------------- JSON helpers

SURROGATE = re.compile("[\ud800-\udfff]")


def parse_json_object(line: str, path: Path, lineno: int) -> dict[str, Any]:
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
        raise InputError(f"expected a JSON object, found {json_type(value)}{hint}", path, lineno)
    if "\\u" in line and has_surrogate(value):
        raise InputError("a string holds an unpaired UTF-16 surrogate escape (\\ud800-\\udfff)", path, lineno)
    return value


def json_type(value: Any) -> str:
    names = {list: "an array", str: "a string", bool: "a boolean", type(None): "null", int: "a number", float: "a number"}
    return names.get(type(value), type(value).__name__)


def has_surrogate(value: Any) -> bool:
    """True when any string (key or value) in a parsed JSON value holds a lone surrogate; iterative."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def first_key(obj: Mapping[str, Any], keys: Iterable[str]) -> str | None:
    return next((key for key in keys if key in obj), None)


def fields_present(obj: Mapping[str, Any]) -> str:
    return ", ".join(map(repr, obj)) or "none"


def missing_field(what: str, keys: tuple[str, ...], obj: Mapping[str, Any], option: str) -> str:
    """``missing query id: none of 'id', ... (fields: 'path', 'q'); name it with ...``: one line saying
    what was looked for, what the record holds and (``option``: the fields were guessed) how to choose."""
    looked = f"no field {keys[0]!r}" if len(keys) == 1 else f"none of {', '.join(map(repr, keys))}"
    return f"missing {what}: {looked} (fields: {fields_present(obj)})" + (f"; name it with {option}" if option else "")


def json_id(obj: Mapping[str, Any], keys: tuple[str, ...], what: str, path: Path, line: int,
             option: str = "") -> tuple[str, str]:
    """(field, id) of a record: the first of ``keys`` present, a string or an integer (made a string)."""
    key = first_key(obj, keys)
    if key is None:
        raise InputError(missing_field(what, keys, obj, option), path, line)
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(f"{what} {key!r} must be a string or an integer, found {json_type(value)}", path, line)
    return key, clean_id(str(value), what, path, line)


def json_text(obj: Mapping[str, Any], keys: tuple[str, ...], path: Path, line: int,
               option: str = "") -> tuple[str, str]:
    """(field, text) of a record: the first of ``keys`` present, a string."""
    key = first_key(obj, keys)
    if key is None:
        raise InputError(missing_field("text", keys, obj, option), path, line)
    value = obj[key]
    if not isinstance(value, str):
        raise InputError(f"field {key!r} must be a string, found {json_type(value)}", path, line)
    return key, value


def walk_files(folder: Path, keep: Callable[[str], bool], root: Path | None = None) -> Iterator[Path]:
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
            yield from walk_files(Path(entry.path), keep, root)
        elif entry.is_file() and keep(entry.name):
            if entry.is_symlink():
                check_inside(Path(entry.path), root)
            yield Path(entry.path)


def check_inside(link: Path, root: Path) -> None:
    target = Path(os.path.realpath(link))
    if root != target and root not in target.parents:
        raise InputError(f"a symbolic link to {target}, outside the folder: only files inside the folder are read "
                         f"(copy the file in, or remove the link)", link)


def is_txt(name: str) -> bool:
    lower = name.lower()
    return lower.endswith(".txt") or lower.endswith(".txt.gz")
SPACE = re.compile(r"\s+")


def format_extension(path: Path) -> str:
    """The format-bearing extension: ``a.jsonl.gz`` -> ``.jsonl``."""
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return os.path.splitext(name)[1]


def check_exists(path: Path) -> None:
    if not path.exists():
        raise InputError("no such file or folder", path)


def sniff_lines(head: bytes) -> list[bytes]:
    """The head's complete non-blank lines (the last, possibly cut, line dropped when more follow)."""
    lines = head.split(b"\n")
    if len(head) >= SNIFF_BYTES and len(lines) > 1:
        lines = lines[:-1]
    return [line.rstrip(b"\r") for line in lines if line.strip()][:50]


def count_matching(path: Path, pattern: re.Pattern[bytes]) -> int:
    """Occurrences of ``pattern`` (which never matches whitespace alone) in a (possibly gzip) file, read
    in blocks split at line ends; a block of whitespace only is passed over at once (``isspace``: a loop
    in C, where a regular expression tries every position)."""
    total = 0
    rest = b""
    with open_binary(path) as stream:
        while block := stream.read(1 << 22):
            block = rest + block
            cut = block.rfind(b"\n") + 1
            block, rest = block[:cut], block[cut:]
            if not block.isspace():
                total += len(pattern.findall(block))
        if rest:
            total += len(pattern.findall(rest + b"\n"))
    return total


CONTENT_LINE = re.compile(rb"[^ \t\r\n\f\v][^\n]*\n")  # a line with a character that is not whitespace


QueryReader = Callable[[Path, FieldMap, str], QueryLines]
"""A query reader: (path, field mapping, TREC topic field) -> (line, qid, text) of each query."""


# --------------------------------------------------------------------------- the formats' registry rows

Counter = Callable[[Path, bool], "int | None"]
"""(source, its first line names its columns) -> how many records it holds, counted from its bytes for a
progress total, or None when that cannot be done cheaply."""


@dataclass(frozen=True)
class DocumentFormat:
    """A document format: its reader and what tells it, one row of :data:`bm25lab.engine.sources.DOCUMENT_FORMATS`
    (a new format is a reader and a row). Detection takes a file's extension first, then each row's ``sniff``
    of its first bytes, in the registry's order, the rows marked ``sniff_last`` after the others."""

    read: DocumentReader
    description: str  # one line: what a record looks like (the command line's help lists them)
    extensions: tuple[str, ...] = ()  # the names that tell it (a trailing ``.gz`` ignored)
    sniff: Callable[[bytes], bool] | None = None  # whether a file's first bytes (stripped) are of it
    sniff_last: bool = False  # a loose test (tabs, commas), tried after every other format's
    folder: bool = False  # a folder may hold it
    file: bool = True  # a file may hold it
    id_field: bool = False  # a record's id field can be chosen (--id-field)
    text_fields: bool = True  # the fields indexed can be chosen (--text-fields)
    count: Counter | None = None


@dataclass(frozen=True)
class QueryFormat:
    """A query format, one row of :data:`bm25lab.engine.sources.QUERY_FORMATS` (see :class:`DocumentFormat`)."""

    read: QueryReader
    description: str
    extensions: tuple[str, ...] = ()
    sniff: Callable[[bytes], bool] | None = None
    sniff_last: bool = False
    fields: bool = False  # a query's id and text fields can be chosen (--query-id-field, --query-text-fields)


def files_of(source: Path) -> list[Path]:
    """A source's files: the file itself, or every file of a folder (:func:`walk_files`)."""
    return list(walk_files(source, lambda name: True)) if source.is_dir() else [source]


def counting(pattern: re.Pattern[bytes]) -> Counter:
    """A :data:`Counter` of the records that ``pattern`` opens, in a file or a folder of files."""
    return lambda source, named: sum(count_matching(file, pattern) for file in files_of(source))
