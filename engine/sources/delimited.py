"""Tab- and comma-separated documents (TSV ``id<TAB>[title<TAB>]text`` with an optional header, CSV with a
header and RFC 4180 quoting) and TSV queries."""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Iterable, Iterator

from ..errors import InputError
from ..records import Document
from .base import (CONTENT_LINE, DOC_ID_KEYS, DOC_TEXT_KEYS, LINE_ENDS, QUERY_ID_KEYS, QUERY_TEXT_KEYS, DocumentFormat,
                   FieldMap, QueryFormat, QueryLines, clean_id, count_matching, first_bytes, read_lines, sniff_lines,
                   strip_eol)

_TSV_HEADER_ROLES = {"title": "title", **{k: "text" for k in DOC_TEXT_KEYS}}


def tsv_header(fields: list[str]) -> list[str] | None:
    """Column roles when ``fields`` is a header line (``id<TAB>[title<TAB>]text``), else None."""
    names = [f.strip().lower() for f in fields]
    if len(names) not in (2, 3) or names[0] not in DOC_ID_KEYS:
        return None
    roles = [_TSV_HEADER_ROLES.get(n) for n in names[1:]]
    if None in roles or roles.count("text") != 1 or len(set(roles)) != len(roles):
        return None
    return ["id", *roles]  # type: ignore[list-item]


def read_tsv_documents(path: Path, mapping: FieldMap = FieldMap(),
                       lines: Iterable[tuple[int, str]] | None = None) -> Iterator[Document]:
    """``lines``: the (number, line) pairs to read instead of the file's (the first line, then a byte range
    of the file: :mod:`.pieces`)."""
    if not mapping.default:
        yield from _read_named_tsv_documents(path, mapping, lines)
        return
    roles: list[str] | None = None
    for lineno, line in read_lines(path) if lines is None else lines:
        content = strip_eol(line)
        if not content.strip():
            continue
        fields = content.split("\t")
        if roles is None:
            roles = tsv_header(fields)
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
            id=clean_id(row["id"], "document id", path, lineno), text=row["text"], title=row.get("title", "")
        )


def _read_named_tsv_documents(path: Path, mapping: FieldMap,
                              lines: Iterable[tuple[int, str]] | None = None) -> Iterator[Document]:
    """A TSV whose first line names its columns, mapped by ``--id-field`` / ``--text-fields``."""
    header: list[str] | None = None
    id_col = 0
    for lineno, line in read_lines(path) if lines is None else lines:
        content = strip_eol(line)
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
        doc_id = clean_id(fields[id_col], "document id", path, lineno)
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


def read_csv_documents(path: Path, mapping: FieldMap = FieldMap()) -> Iterator[Document]:
    csv.field_size_limit(max(csv.field_size_limit(), 1 << 30))  # documents can exceed the 128 KiB default
    last = [0]  # the number of the last line handed to the reader (a piece of empty lines counts them all)

    def lines() -> Iterator[str]:
        for number, line in read_lines(path, LINE_ENDS):
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
            yield _mapped_document(mapping, clean_id(row[id_col], "document id", path, start), values, path, start)
        start = last[0] + 1


def _csv_document(row: list[str], header: list[str], columns: tuple[int, int, int | None], path: Path, line: int) -> Document:
    if len(row) != len(header):
        raise InputError(f"expected {len(header)} fields like the header, found {len(row)}", path, line)
    id_col, text_col, title_col = columns
    used = {id_col, text_col, title_col}
    metadata = {header[i].strip(): value for i, value in enumerate(row) if i not in used}
    return Document(
        id=clean_id(row[id_col], "document id", path, line),
        text=row[text_col],
        title="" if title_col is None else row[title_col],
        metadata=metadata,
    )


def looks_tsv(lines: list[bytes]) -> bool:
    """Every sniffed line holds the same number of tabs, 1 or 2 (``id, [title,] text``)."""
    tabs = {line.count(b"\t") for line in lines}
    return bool(lines) and len(tabs) == 1 and tabs <= {1, 2}


def looks_csv(lines: list[bytes]) -> bool:
    """The first line is a header naming an id column and a text column between commas."""
    if not lines or b"," not in lines[0]:
        return False
    names = {name.strip().strip(b'"').decode("utf-8", "replace").lower() for name in lines[0].split(b",")}
    return bool(names & set(DOC_ID_KEYS)) and bool(names & set(DOC_TEXT_KEYS))


# --------------------------------------------------------------------------- query readers


def read_tsv_queries(path: Path, mapping: FieldMap = FieldMap(), topic_field: str = "title") -> QueryLines:
    if not mapping.default:
        yield from _read_named_tsv_queries(path, mapping)
        return
    first = True
    for lineno, line in read_lines(path):
        content = strip_eol(line)
        if not content.strip():
            continue
        fields = content.split("\t")
        if first and len(fields) == 2 and fields[0].strip().lower() in QUERY_ID_KEYS and fields[1].strip().lower() in QUERY_TEXT_KEYS:
            first = False
            continue  # a header line
        first = False
        if len(fields) != 2:
            raise InputError(f"expected 2 tab-separated fields (qid, text), found {len(fields)}", path, lineno)
        yield lineno, clean_id(fields[0], "query id", path, lineno), fields[1].strip()


def _read_named_tsv_queries(path: Path, mapping: FieldMap) -> QueryLines:
    """A TSV of queries whose first line names its columns (any case), mapped by ``id_field`` /
    ``text_fields``: the text is the chosen columns joined with spaces, else the first of
    :data:`QUERY_TEXT_KEYS`."""
    header: list[str] | None = None
    id_col, text_cols = 0, [1]
    for lineno, line in read_lines(path):
        content = strip_eol(line)
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
        yield lineno, clean_id(fields[id_col], "query id", path, lineno), text


def _count_tsv(source: Path, named: bool) -> int:
    """A TSV's content lines less its header (one whose first line names its columns)."""
    lines = count_matching(source, CONTENT_LINE)
    first = sniff_lines(first_bytes(source))[:1]
    header = bool(first) and tsv_header(first[0].decode("utf-8", "replace").split("\t")) is not None
    return lines - int(header or named)


TSV_DOCUMENTS = DocumentFormat(read_tsv_documents, "id<TAB>text or id<TAB>title<TAB>text, an optional header line",
                               extensions=(".tsv",), sniff=lambda head: looks_tsv(sniff_lines(head)), sniff_last=True, id_field=True,
                               count=_count_tsv)
CSV_DOCUMENTS = DocumentFormat(read_csv_documents, "comma-separated with a header (id, text, title, ...) and RFC 4180 "
                               "quoting", extensions=(".csv",), sniff=lambda head: looks_csv(sniff_lines(head)),
                               sniff_last=True, id_field=True)
TSV_QUERIES = QueryFormat(read_tsv_queries, "qid<TAB>text, an optional header line", extensions=(".tsv",),
                          sniff=lambda head: True, sniff_last=True, fields=True)  # any other file is read as TSV
