"""A document source cut into pieces that readers read on their own (a cluster's workers), by name: the
client lists files and their sizes (it never opens a document file), each reader reads its piece, and
the pieces' documents, in the pieces' order, are the source's documents in the order one reader reads
them (:func:`read_source`): files in order, each file's records in file order.

A source is a file, a folder or a glob pattern (``docs-*.jsonl.gz``: the matching files in sorted order,
read one after another as one source). A piece (:class:`Piece`) is

* a whole file (any format, detected from the file as :func:`~bm25lab.engine.sources.read_documents`
  detects it);
* a byte range ``[start, end)`` of a JSON Lines or TSV file (by its extension or the given format) larger
  than ``partition_bytes``: the range reads the lines that begin inside it (a line that crosses ``end``
  is its range's; a reader of a range past the first seeks to ``start - 1`` and skips to the next line
  end). A TSV range first reads the file's first line, which fixes its columns (or names them) for the
  whole file. A gzip-compressed file (known by its first bytes, which only the reader looks at) cannot be
  cut: its first range reads it whole, the others nothing. An error names the file and its line in the
  file (counted, when a range fails, from the start of the file);
* a run of a folder's files: the one-document ``.txt`` files of a ``folder`` source (ids relative to
  the folder), the files of a TREC or LISA folder, the files of a Parquet dataset;
  several small files (at most ``partition_bytes`` together) make one piece.
"""
from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Iterable, Iterator

from ..errors import InputError, cr_line_ends
from ..records import Document
from .base import FieldMap, decode_line, format_extension, is_txt, walk_files
from .parquet import parquet_files

DEFAULT_PARTITION_BYTES = 64 << 20
SPLITTABLE = ("jsonl", "tsv")  # line-based formats whose lines are records (CSV's quoted fields may span lines)
_RANGE_LINE = 1 << 40  # lines of a range past the first are numbered from here until an error needs their number
GLOB_CHARACTERS = frozenset("*?[")


@dataclass(frozen=True)
class Piece:
    """Part of a source read on its own: ``files`` (one, or a run of a folder's), in ``format`` (None:
    detected from the file), the whole of each, or the byte range ``[start, end)`` of one file (``end``
    None: to its end, ``start`` 0 and ``end`` None: whole). ``root``: the folder a ``folder`` source's
    ids are relative to."""

    files: tuple[str, ...]
    format: str | None = None
    start: int = 0
    end: int | None = None
    root: str | None = None

    @property
    def ranged(self) -> bool:
        return self.start > 0 or self.end is not None

    def __str__(self) -> str:
        if self.ranged:
            return f"{self.files[0]} (bytes {self.start}-{'' if self.end is None else self.end})"
        return self.files[0] if len(self.files) == 1 else f"{self.files[0]} .. {self.files[-1]}"


def is_glob(source: str | Path) -> bool:
    """Whether ``source`` is a glob pattern (it holds ``*``, ``?`` or ``[``) that names no file itself."""
    return bool(GLOB_CHARACTERS & set(str(source))) and not os.path.lexists(source)


def expand(source: str | Path) -> list[Path]:
    """The files of a glob pattern in sorted order (folders it matches left out); none is an InputError."""
    found = sorted(Path(name) for name in glob.glob(str(source)) if os.path.isfile(name))
    if not found:
        raise InputError("no file matches the pattern", source)
    return found


def _format_of(path: Path, format: str | None) -> str | None:
    """The format a file is read in, as far as its name tells (None: its reader detects it from its bytes)."""
    from . import DOCUMENT_FORMATS

    if format is not None:
        return format
    extension = format_extension(path)
    return next((name for name, row in DOCUMENT_FORMATS.items() if extension in row.extensions), None)


def plan(source: str | Path, format: str | None = None, partition_bytes: int = DEFAULT_PARTITION_BYTES) -> list[Piece]:
    """The pieces of ``source`` (a file, a folder, or a glob pattern) in reading order, from the names and
    sizes of its files (no document file is opened, except to tell a folder's format when its files'
    names do not: a folder without ``.txt`` files)."""
    from . import _document_format

    if partition_bytes < 1:
        raise InputError(f"partition_bytes must be positive, got {partition_bytes}", source)
    if is_glob(source):
        return [piece for path in expand(source) for piece in _file_pieces(path, format, partition_bytes)]
    path = Path(source)
    if not os.path.lexists(path):
        raise InputError("no such file or folder", path)
    if not path.is_dir():
        return _file_pieces(path, format, partition_bytes)
    fmt = _document_format(path, format)
    if fmt == "folder":
        files = list(walk_files(path, is_txt))
        if not files:
            raise InputError("no documents (.txt files) found", path)
    elif fmt == "parquet":
        files = parquet_files(path)
    else:
        files = list(walk_files(path, lambda name: True))
    return [Piece(tuple(map(str, run)), fmt, root=str(path) if fmt == "folder" else None)
            for run in _runs(files, partition_bytes)]


def _runs(files: list[Path], partition_bytes: int) -> Iterator[list[Path]]:
    """Consecutive files of at most ``partition_bytes`` together (a larger file alone)."""
    run: list[Path] = []
    held = 0
    for file in files:
        size = file.stat().st_size
        if run and held + size > partition_bytes:
            yield run
            run, held = [], 0
        run.append(file)
        held += size
    if run:
        yield run


def _file_pieces(path: Path, format: str | None, partition_bytes: int) -> list[Piece]:
    fmt = _format_of(path, format)
    size = path.stat().st_size if path.is_file() else 0
    if fmt not in SPLITTABLE or size <= partition_bytes:
        return [Piece((str(path),), format)]
    cuts = list(range(0, size, partition_bytes))
    return [Piece((str(path),), fmt, start, start + partition_bytes if start + partition_bytes < size else None)
            for start in cuts]


# ---------------------------------------------------------------------------------------------
# Reading


def read_source(source: str | Path, *, format: str | None = None, id_field: str | None = None,
                text_fields: str | Iterable[str] | None = None) -> Iterator[Document]:
    """The documents of a file, a folder or a glob pattern (its files one after another), in order: what
    the pieces of :func:`plan` give together."""
    from . import read_documents

    if not is_glob(source):
        return read_documents(source, format=format, id_field=id_field, text_fields=text_fields)
    return chain.from_iterable(read_documents(path, format=format, id_field=id_field, text_fields=text_fields)
                               for path in expand(source))


def read_piece(piece: Piece, id_field: str | None = None, text_fields: str | Iterable[str] | None = None
               ) -> Iterator[Document]:
    """The documents of one piece, in order (errors name the file and the line, as reading the whole
    source would)."""
    from . import read_documents

    if piece.format == "folder":
        if not FieldMap.of(id_field, text_fields).default:
            raise InputError("a folder of .txt files has no fields to map: one file is one document's text",
                             piece.root)
        return _folder_documents(piece)
    if not piece.ranged:
        return chain.from_iterable(read_documents(file, format=piece.format, id_field=id_field,
                                                  text_fields=text_fields) for file in piece.files)
    return _range_documents(piece, FieldMap.of(id_field, text_fields))


def with_titles(docs: Iterable[Document], title_field: str) -> Iterator[Document]:
    """``docs`` with each one's title taken from its metadata field ``title_field`` (``--title-field``), as
    :func:`bm25lab.experiments.titled` gives them (a document without the field keeps its title)."""
    from dataclasses import replace

    for doc in docs:
        metadata = dict(doc.metadata)
        title = metadata.pop(title_field, None)
        if title is None and doc.title:
            yield doc
            continue
        yield replace(doc, title="" if title is None else str(title), metadata=metadata)


def _folder_documents(piece: Piece) -> Iterator[Document]:
    from .base import SURROGATE, read_text

    assert piece.root is not None
    root = Path(piece.root)
    for name in piece.files:
        file = Path(name)
        doc_id = file.relative_to(root).as_posix()
        if SURROGATE.search(doc_id):
            raise InputError("the file name is not valid UTF-8", file)
        yield Document(id=doc_id, text=read_text(file))


def _is_gzip(path: Path) -> bool:
    from .base import GZIP_MAGIC

    try:
        with open(path, "rb") as stream:
            return stream.read(2) == GZIP_MAGIC
    except OSError:
        return False  # the reader says why


def _range_documents(piece: Piece, mapping: FieldMap) -> Iterator[Document]:
    from . import read_documents
    from .delimited import read_tsv_documents, tsv_header
    from .jsonl import read_jsonl_documents

    path = Path(piece.files[0])
    if _is_gzip(path):  # cannot be cut: the first range reads it whole
        if piece.start == 0:
            yield from read_documents(path, format=piece.format, id_field=mapping.id_field,
                                      text_fields=mapping.text_fields)
        return
    first_line = [0]  # the byte where the range's first line begins
    lines = _range_lines(path, piece.start, piece.end, first_line)
    skip = 0
    if piece.format == "tsv" and piece.start > 0:  # the file's first line fixes (or names) the columns
        head = next(((n, line) for n, line in _range_lines(path, 0, None, [0]) if line.strip()), None)
        if head is not None:
            lines = chain([head], lines)
            skip = int(mapping.default and tsv_header(head[1].rstrip("\r\n").split("\t")) is None)
    reader = read_jsonl_documents if piece.format == "jsonl" else read_tsv_documents
    try:
        for number, doc in enumerate(reader(path, mapping, lines)):  # type: ignore[call-arg]
            if number >= skip:
                yield doc
    except InputError as exc:
        if exc.line is None or exc.line < _RANGE_LINE or exc.path != str(path):
            raise
        line = _newlines_before(path, first_line[0]) + exc.line - _RANGE_LINE + 1
        raise InputError(exc.reason, path, line) from None


def _range_lines(path: Path, start: int, end: int | None, first: list[int]) -> Iterator[tuple[int, str]]:
    """(number, decoded line) of the lines that begin in ``[start, end)`` of an uncompressed file; the
    first range's lines are numbered from 1, the others' from :data:`_RANGE_LINE` (``first[0]``: the byte
    where the first of them begins, to count the lines before it when a number is needed)."""
    try:
        stream = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise InputError(f"cannot open: {exc.strerror or exc}", path) from None
    with stream:
        try:
            if start > 0:
                stream.seek(start - 1)
                stream.readline()  # the end of the line that began before the range (a line of the range before)
            position = first[0] = stream.tell()
            number = 1 if start == 0 else _RANGE_LINE
            while end is None or position < end:
                raw = stream.readline()
                if not raw:
                    return
                if start == 0 and number == 1 and b"\r" in raw.rstrip(b"\r\n"):
                    raise cr_line_ends(path, 1)
                yield number, decode_line(raw, path, number)
                number += 1
                position += len(raw)
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror or exc}", path) from None


def _newlines_before(path: Path, offset: int) -> int:
    """How many lines end before byte ``offset`` of a file (read in blocks, on an error only)."""
    count = 0
    with open(path, "rb") as stream:
        while offset > 0:
            block = stream.read(min(offset, 1 << 22))
            if not block:
                break
            count += block.count(b"\n")
            offset -= len(block)
    return count
