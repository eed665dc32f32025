"""The other Glasgow layouts: TIME (``*TEXT``/``*FIND`` records), NPL (records ended by ``/``) and LISA
(``Document N`` records; queries ended by ``#``); documents and queries."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Iterable, Iterator

from ..errors import InputError
from ..records import Document
from .base import DocumentFormat, FieldMap, QueryFormat, QueryLines, counting, read_lines, strip_eol, walk_files
from .smart import smart_id

# --------------------------------------------------------------------------- Glasgow collections
# The classic test collections that do not use SMART's .I layout (University of Glasgow IR group's
# test_collections): TIME (*TEXT / *FIND records, *STOP at the end), NPL (an id line, text lines, a
# line "/") and LISA (a "Document N" line, the title, a blank line, the abstract, a line of asterisks;
# its queries end with "#").

_TIME_TEXT = re.compile(r"^\*TEXT[ \t]+(\S+)[ \t]*(.*?)[ \t]*$")
_TIME_FIND = re.compile(r"^\*FIND[ \t]+(\S+)[ \t]*$")
_TIME_STOP = re.compile(r"^\*STOP[ \t]*$")
NUMERIC_ID = re.compile(r"^[ \t]*(\d+)[ \t]*$")
_NPL_END = re.compile(r"^[ \t]*/[ \t]*$")
_LISA_DOCUMENT = re.compile(r"^Document[ \t]+(\d+)[ \t]*$")
_LISA_END = re.compile(r"^[ \t]*\*{10,}[ \t]*$")

GlasgowRecord = tuple[int, str, list[str]]  # (line of the record's first line, id or header, its lines)


def _starred_records(path: Path, start: re.Pattern[str], what: str) -> Iterator[GlasgowRecord]:
    """TIME's records: a line matching ``start`` (``*TEXT ...`` or ``*FIND n``) opens one, the next
    such line or ``*STOP`` ends it; text before the first record or after ``*STOP`` is an error."""
    line, key, body = 0, "", []  # type: tuple[int, str, list[str]]
    stopped = 0
    for lineno, raw in read_lines(path):
        content = strip_eol(raw)
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


def read_time_documents(path: Path, mapping: FieldMap = FieldMap()) -> Iterator[Document]:
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


def read_time_queries(path: Path, mapping: FieldMap = FieldMap(), topic_field: str = "title") -> QueryLines:
    """TIME.QUE: ``*FIND 46`` opens a query, whose text runs to the next ``*FIND`` or ``*STOP``."""
    for line, header, body in _starred_records(path, _TIME_FIND, "*FIND"):
        found = _TIME_FIND.match(header)
        assert found is not None
        yield line, smart_id(found.group(1)), _joined(body)


def _numbered_records(path: Path, opener: re.Pattern[str], ending: Callable[[str], str | None], expected: str,
                      unended: str, nested: str | None = None) -> Iterator[GlasgowRecord]:
    """Records that open with a line ``opener`` matches (its group 1 the id; blank lines between
    records skipped) and end with a line for which ``ending`` gives the text it adds (``None``: not an
    end). ``expected`` is the error for any other line between records, ``unended`` (with ``{key}``) for
    a record the file leaves open, ``nested`` (with ``{key}`` and ``{line}``), if given, for an opening
    line inside a record."""
    line, key, body = 0, "", []  # type: tuple[int, str, list[str]]
    for lineno, raw in read_lines(path):
        content = strip_eol(raw)
        if line == 0:
            if not content.strip():
                continue
            opened = opener.match(content)
            if opened is None:
                raise InputError(expected, path, lineno)
            line, key, body = lineno, smart_id(opened.group(1)), []
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
    return _numbered_records(path, NUMERIC_ID, lambda content: "" if _NPL_END.match(content) else None,
                             "expected a record's number on a line by itself (NPL: the number, the record's "
                             "lines, a line '/')", "record {key} is not ended by a line '/'")


def read_npl_documents(path: Path, mapping: FieldMap = FieldMap()) -> Iterator[Document]:
    """NPL's doc-text: the document's number, its text lines, a line ``/``."""
    if mapping.id_field is not None:
        raise InputError("NPL documents take their id from the number line: an id field cannot be chosen", path)
    for line, doc_id, body in _slash_records(path):
        if mapping.text_fields is not None:
            yield mapping.document(doc_id, {"text": _joined(body)}, path, line)
        else:
            yield Document(id=doc_id, text=_joined(body))


def read_npl_queries(path: Path, mapping: FieldMap = FieldMap(), topic_field: str = "title") -> QueryLines:
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


def read_lisa_documents(source: Path, mapping: FieldMap = FieldMap()) -> Iterator[Document]:
    """LISA documents: one file (``LISA0.001``) or a folder of them (the distribution's
    ``LISA0.001`` .. ``LISA5.850``, read in sorted name order, which is the collection's order)."""
    if mapping.id_field is not None:
        raise InputError("LISA documents take their id from 'Document N': an id field cannot be chosen", source)
    files = walk_files(source, lambda name: True) if source.is_dir() else iter([source])
    for file in files:
        yield from _read_lisa_file(file, mapping)


def read_lisa_queries(path: Path, mapping: FieldMap = FieldMap(), topic_field: str = "title") -> QueryLines:
    """LISA.QUE: the query's number on a line by itself, its text, ended by ``#``."""
    def ending(content: str) -> str | None:
        text = content.rstrip()
        return text[:-1] if text.endswith("#") else None

    for line, qid, body in _numbered_records(path, NUMERIC_ID, ending, "expected a query's number on a line by "
                                             "itself (LISA.QUE: the number, the text ended by '#')",
                                             "query {key} is not ended by '#'"):
        yield line, qid, _joined(body)


TIME_HEAD = re.compile(rb"^\*TEXT[ \t]+\S")
TIME_QUERY_HEAD = re.compile(rb"^\*FIND[ \t]+\S")
LISA_HEAD = re.compile(rb"^Document[ \t]+\d+[ \t]*\r?\n")

#: Record-opening lines, counted for a progress bar's total (:func:`count_documents`).
RECORD_STARTS: dict[str, re.Pattern[bytes]] = {
    "time": re.compile(rb"(?m)^\*TEXT[ \t]+\S"),
    "npl": re.compile(rb"(?m)^[ \t]*/[ \t]*\r?$"),
    "lisa": re.compile(rb"(?m)^Document[ \t]+\d+[ \t]*\r?$"),
}


def numbered_kind(head: bytes) -> str | None:
    """``npl`` or ``lisa`` for a file whose first line is a number alone and whose first record ends
    with a line ``/`` (NPL) or a line ending in ``#`` (LISA's queries); None otherwise."""
    lines = head.split(b"\n")
    if len(lines) < 2 or not NUMERIC_ID.match(lines[0].rstrip(b"\r").decode("latin-1")):
        return None
    for line in lines[1:200]:
        text = line.rstrip(b"\r").strip()
        if text == b"/":
            return "npl"
        if text.endswith(b"#"):
            return "lisa"
    return None


TIME_DOCUMENTS = DocumentFormat(read_time_documents, "TIME.ALL: *TEXT records, numbered by position",
                                sniff=lambda head: TIME_HEAD.match(head) is not None,
                                count=counting(RECORD_STARTS["time"]))
NPL_DOCUMENTS = DocumentFormat(read_npl_documents, "NPL doc-text: a number, the text, a line /",
                               sniff=lambda head: numbered_kind(head) == "npl", count=counting(RECORD_STARTS["npl"]))
LISA_DOCUMENTS = DocumentFormat(read_lisa_documents, "LISA: Document N records, a file or the folder LISA0.001 .. "
                                "LISA5.850", sniff=lambda head: LISA_HEAD.match(head) is not None, folder=True,
                                count=counting(RECORD_STARTS["lisa"]))
TIME_QUERIES = QueryFormat(read_time_queries, "TIME.QUE: *FIND records",
                           sniff=lambda head: TIME_QUERY_HEAD.match(head) is not None)
NPL_QUERIES = QueryFormat(read_npl_queries, "NPL query-text: a number, the text, a line /",
                          sniff=lambda head: numbered_kind(head) == "npl")
LISA_QUERIES = QueryFormat(read_lisa_queries, "LISA.QUE: a number, the text ended by #",
                           sniff=lambda head: numbered_kind(head) == "lisa")
