"""JSON Lines documents and queries: one JSON object a line (BEIR, Pyserini, ir_datasets, MS MARCO exports,
LeCaRD's raw queries); the id and text fields found by their usual names or chosen."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from ..errors import InputError
from ..records import Document
from .base import (CONTENT_LINE, DOC_ID_KEYS, DOC_TEXT_KEYS, ID_OPTION, QUERY_ID_KEYS, QUERY_ID_OPTION, QUERY_TEXT_KEYS,
                   QUERY_TEXT_OPTION, TEXT_OPTION, DocumentFormat, FieldMap, QueryFormat, QueryLines, counting, json_id,
                   json_text, json_type, missing_field, parse_json_object, read_lines)

# --------------------------------------------------------------------------- document readers


def read_jsonl_documents(path: Path, fields: FieldMap = FieldMap(),
                         lines: Iterable[tuple[int, str]] | None = None) -> Iterator[Document]:
    """``lines``: the (number, line) pairs to read instead of the file's (a byte range of it: :mod:`.pieces`)."""
    id_keys = DOC_ID_KEYS if fields.id_field is None else (fields.id_field,)
    for lineno, line in read_lines(path) if lines is None else lines:
        if not line.strip():
            continue
        obj = parse_json_object(line, path, lineno)
        id_key, doc_id = json_id(obj, id_keys, "document id", path, lineno, "" if fields.id_field else ID_OPTION)
        if fields.text_fields is not None:
            yield fields.document(doc_id, {k: v for k, v in obj.items() if k != id_key}, path, lineno)
            continue
        text_key, text = json_text(obj, DOC_TEXT_KEYS, path, lineno, TEXT_OPTION)
        title = obj.get("title")
        if title is None:
            title = ""
        elif not isinstance(title, str):
            raise InputError(f"field 'title' must be a string or null, found {json_type(title)}", path, lineno)
        metadata = {k: v for k, v in obj.items() if k not in (id_key, text_key, "title")}
        yield Document(id=doc_id, text=text, title=title, metadata=metadata)


def _query_text(values: Mapping[str, Any], mapping: FieldMap, path: Path, line: int) -> str:
    """A JSON query's text: its ``text_fields`` joined with spaces (a null one empty), else the first
    of :data:`QUERY_TEXT_KEYS` present."""
    if mapping.text_fields is None:
        return json_text(values, QUERY_TEXT_KEYS, path, line, QUERY_TEXT_OPTION)[1]
    texts = []
    for name in mapping.text_fields:
        if name not in values:
            raise InputError(missing_field("text", (name,), values, ""), path, line)
        value = values[name]
        if value is not None and not isinstance(value, str):
            raise InputError(f"field {name!r} must be a string or null, found {json_type(value)}", path, line)
        texts.append(value or "")
    return " ".join(t for t in texts if t)


def read_jsonl_queries(path: Path, mapping: FieldMap = FieldMap(), topic_field: str = "title") -> QueryLines:
    id_keys = QUERY_ID_KEYS if mapping.id_field is None else (mapping.id_field,)
    for lineno, line in read_lines(path):
        if not line.strip():
            continue
        obj = parse_json_object(line, path, lineno)
        _, qid = json_id(obj, id_keys, "query id", path, lineno, "" if mapping.id_field else QUERY_ID_OPTION)
        yield lineno, qid, _query_text(obj, mapping, path, lineno)


DOCUMENTS = DocumentFormat(read_jsonl_documents, 'one JSON object a line: {"id", "text"}, BEIR {"_id", "title", "text"}, '
                           'Pyserini {"id", "contents"}', extensions=(".jsonl", ".json", ".ndjson"),
                           sniff=lambda head: head.startswith(b"{"), id_field=True, count=counting(CONTENT_LINE))
QUERIES = QueryFormat(read_jsonl_queries, 'one JSON object a line: BEIR {"_id", "text"}, LeCaRD {"ridx", "q"}',
                      extensions=(".jsonl", ".json", ".ndjson"), sniff=lambda head: head.startswith(b"{"), fields=True)
