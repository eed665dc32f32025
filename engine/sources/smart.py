"""The SMART format of the classic collections (Cranfield, CISI, CACM, MED, ...): ``.I id`` records of
``.T``/``.W``/``.A``/... fields; documents and queries."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator, Mapping

from ..errors import InputError
from ..records import Document
from .base import DocumentFormat, FieldMap, QueryFormat, QueryLines, counting, read_lines, strip_eol

# --------------------------------------------------------------------------- SMART

#: Names of the SMART fields that become metadata (``.T`` is the title, ``.W`` the text); any other
#: capital letter ``X`` becomes the field ``X``.
SMART_FIELDS: dict[str, str] = {"T": "title", "W": "text", "A": "author", "B": "bib", "N": "note", "X": "xref",
                                "K": "keywords", "C": "categories"}
_SMART_MARKER = re.compile(r"^\.([A-Z])(?:[ \t]+(\S+))?[ \t]*$")
SMART_START = re.compile(rb"(?m)^\.I[ \t]+\S")

SmartRecord = tuple[int, str, dict[str, list[str]]]  # (line of .I, id, {field letter: [value, ...]})


def smart_id(raw: str) -> str:
    """A SMART id as the relevance files write it: ``001`` -> ``1``; other ids as they are."""
    return str(int(raw)) if raw.isdigit() else raw


def _smart_records(path: Path) -> Iterator[SmartRecord]:
    """Every ``.I`` record of a SMART file, its fields' lines squashed into one value each."""
    start = 0
    record_id: str | None = None
    fields: dict[str, list[str]] = {}
    current: list[str] | None = None
    for lineno, line in read_lines(path):
        content = strip_eol(line)
        marker = _SMART_MARKER.match(content)
        if marker and marker.group(1) == "I":
            if marker.group(2) is None:
                raise InputError(".I without a record id", path, lineno)
            if record_id is not None:
                yield start, record_id, _squashed(fields)
            start, record_id, fields, current = lineno, smart_id(marker.group(2)), {}, None
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


def read_smart_documents(path: Path, mapping: FieldMap = FieldMap()) -> Iterator[Document]:
    if mapping.id_field is not None:
        raise InputError("SMART documents take their id from .I: an id field cannot be chosen", path)
    for line, doc_id, fields in _smart_records(path):
        values = _smart_values(fields)
        if mapping.text_fields is not None:
            yield mapping.document(doc_id, values, path, line)
            continue
        title, text = values.pop("title", ""), values.pop("text", "")
        yield Document(id=doc_id, text=text, title=title, metadata=values)


def read_smart_queries(path: Path, mapping: FieldMap = FieldMap(), topic_field: str = "title") -> QueryLines:
    """SMART queries: ``.I id`` records; the text is the ``.T`` and ``.W`` values joined."""
    for line, qid, fields in _smart_records(path):
        values = _smart_values(fields)
        yield line, qid, " ".join(t for t in (values.get("title", ""), values.get("text", "")) if t)


SMART_RECORD = re.compile(rb"(?m)^\.I[ \t]+\S")  # a record's first line
DOCUMENTS = DocumentFormat(read_smart_documents, "SMART records (.I id, .T title, .W text, ...): Cranfield, CISI, "
                           "CACM, MED", sniff=lambda head: SMART_START.match(head) is not None,
                           count=counting(SMART_RECORD))
QUERIES = QueryFormat(read_smart_queries, "SMART records (.I id, .W text): cran.qry, CISI.QRY", extensions=(".qry",),
                      sniff=lambda head: SMART_START.match(head) is not None)
