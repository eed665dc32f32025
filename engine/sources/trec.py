"""TREC ``<DOC>`` documents (one file or a folder of them) and TREC topics (``<top>``)."""
from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Iterator

from ..errors import InputError
from ..records import Document
from .base import SPACE, DocumentFormat, FieldMap, QueryFormat, QueryLines, clean_id, counting, read_lines, walk_files

_DOC_TAG = re.compile(r"<(/?)DOC(?:\s[^>]*)?\s*>", re.IGNORECASE)
_DOCNO = re.compile(r"<DOCNO>(.*?)</DOCNO>", re.IGNORECASE | re.DOTALL)
_TITLE_TAGS = ("TITLE", "HEAD", "HEADLINE")
_TAG = re.compile(r"<[^<>]*>")


def _clean_markup(text: str) -> str:
    """Tags removed, SGML/HTML entities decoded, whitespace collapsed to single spaces."""
    return SPACE.sub(" ", html.unescape(_TAG.sub(" ", text))).strip()


def _trec_record(body: str, path: Path, line: int, mapping: FieldMap = FieldMap()) -> Document:
    """One ``<DOC>`` record's inside: DOCNO, optional title element, the rest as text."""
    docnos = _DOCNO.findall(body)
    if not docnos:
        raise InputError("<DOC> without <DOCNO> ... </DOCNO>", path, line)
    if len(docnos) > 1:
        raise InputError(f"<DOC> with {len(docnos)} <DOCNO> elements", path, line)
    doc_id = clean_id(_clean_markup(docnos[0]), "DOCNO", path, line)
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
    for lineno, line in read_lines(path):
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


def read_trec_documents(source: Path, mapping: FieldMap = FieldMap()) -> Iterator[Document]:
    if mapping.id_field is not None:
        raise InputError("TREC documents take their id from <DOCNO>: an id field cannot be chosen", source)
    if source.is_dir():
        for file in walk_files(source, lambda name: True):
            yield from _trec_documents_in_file(file, mapping)
    else:
        yield from _trec_documents_in_file(source, mapping)
TREC_OPEN = re.compile(rb"<DOC(?:\s[^>]*)?\s*>", re.IGNORECASE)


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
        text = SPACE.sub(" ", html.unescape(body[tag.end() : end])).strip()
        label = TOPIC_FIELDS[name]
        if text.lower().startswith(label.lower()):
            text = text[len(label) :].strip()
        fields[name] = text
    return fields


def _topic_query(body: str, wanted: list[str], path: Path, line: int) -> tuple[str, str]:
    fields = _topic_fields(body, path, line)
    qid = clean_id(fields.get("num", ""), "topic number (<num>)", path, line)
    missing = [f for f in wanted if f not in fields]
    if missing:
        raise InputError(f"topic {qid} has no <{missing[0]}>", path, line)
    return qid, " ".join(fields[f] for f in wanted if fields[f])


def read_trec_topics(path: Path, mapping: FieldMap = FieldMap(), topic_field: str = "title") -> QueryLines:
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


DOCUMENTS = DocumentFormat(read_trec_documents, "<DOC><DOCNO>id</DOCNO>...</DOC> records, a file or a folder of them",
                           extensions=(".trec", ".sgml"), sniff=lambda head: head[:4].upper() == b"<DOC", folder=True,
                           count=counting(TREC_OPEN))
TOPICS = QueryFormat(read_trec_topics, "TREC topics: <top> <num> ... <title> ... </top>", extensions=(".trec",),
                     sniff=lambda head: head.startswith(b"<"))
