"""Readers for TREC qrels, TREC runs and BEIR qrels TSV, and the TREC run writer.

Formats (fields separated by any run of spaces or tabs, ``.gz`` files accepted by their content):

- TREC run: ``qid Q0 docid rank score tag``. The rank and ``Q0`` columns are ignored: documents are
  ranked by score with trec_eval's tie rule (:mod:`bm25lab.evaluation.ranking`). Scores are read as float64,
  as trec_eval's ``atof``.
- TREC qrels: ``qid iteration docid relevance``; relevance an integer (``2`` or ``2.0``), negative
  meaning "in the pool, unjudged".
- BEIR qrels TSV: ``query-id corpus-id score``, with its header line (``query-id corpus-id score``).

Strictness: blank lines and lines starting with ``#`` are skipped (as trec_eval does); any other line
must have exactly the format's number of fields, a number where a score is due (NaN refused), an
integer where a relevance is due. A repeated (query, document) pair in a run is an error, as in
trec_eval; repeated qrels lines are an error unless identical. Every error is an
:class:`~bm25lab.engine.errors.InputError` naming the file and the line.

Two parsing paths, one result. The fast path hands the bytes to pyarrow's CSV reader, whose
delimiter is a single character: it is taken when the fields are separated by single spaces (or
single tabs), with no comment lines. Whenever it cannot parse a file, or finds anything wrong in it,
the file is parsed again line by line in Python, which defines the accepted syntax and names the
line of the first error. Both split fields on ASCII whitespace only (C's ``isspace``), so an
ideographic space inside a document id stays part of it, as in trec_eval.
"""
from __future__ import annotations

import functools
import gzip
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Iterator, Literal, Mapping

import numpy as np

from .errors import InputError
from .ranking import Qrels, Run

__all__ = ["read_qrels", "read_run", "write_run"]

_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"
_LARGEST_LABEL = 2.0**53


@dataclass(frozen=True)
class _Layout:
    """A line format: field names, which fields hold the query, document and value, the value kind."""

    name: str
    fields: tuple[str, ...]
    query: int
    doc: int
    value: int
    kind: Literal["score", "label"]

    def describe(self) -> str:
        return f"{len(self.fields)} fields ({self.name}: {' '.join(self.fields)})"


TREC_RUN = _Layout("TREC run", ("qid", "Q0", "docid", "rank", "score", "tag"), 0, 2, 4, "score")
TREC_QRELS = _Layout("TREC qrels", ("qid", "iteration", "docid", "relevance"), 0, 2, 3, "label")
BEIR_QRELS = _Layout("BEIR qrels", ("query-id", "corpus-id", "score"), 0, 1, 2, "label")
QRELS_FORMATS = {"trec": TREC_QRELS, "beir": BEIR_QRELS}


@dataclass(frozen=True)
class _Columns:
    """Parsed rows: query ids, document ids, values, and the 1-based line of each row (slow path)."""

    qid: Any
    doc: Any
    value: Any
    lines: np.ndarray | None


# ---------------------------------------------------------------------------------------------
# Public readers


def _within_memory(read: Callable[..., Any]) -> Callable[..., Any]:
    """A reader whose file does not fit in the memory available raises InputError naming it
    (instead of a MemoryError from wherever the allocation failed)."""

    @functools.wraps(read)
    def reader(path: str | Path, *args: Any, **kwargs: Any) -> Any:
        try:
            return read(path, *args, **kwargs)
        except MemoryError:
            size = _size(path)
            raise InputError(f"too large to read in the memory available ({size}); split the file or give "
                             f"the process more memory", path) from None

    return reader


def _size(path: str | Path) -> str:
    try:
        return f"{Path(path).stat().st_size:,} bytes on disk"
    except OSError:
        return "size unknown"


@_within_memory
def read_run(path: str | Path) -> Run:
    """Read a TREC run file into a :class:`~bm25lab.evaluation.ranking.Run` named by its first line's tag."""
    data = _load(path)
    first = _first_fields(data)
    name = first[1][5].decode("utf-8", "replace") if first and len(first[1]) == 6 else ""

    def build(columns: _Columns) -> Run:
        return Run.from_columns(columns.qid, columns.doc, columns.value, name=name, source=path, lines=columns.lines)

    return _parse_and_build(data, TREC_RUN, path, build, skip_header=False)


@_within_memory
def read_qrels(path: str | Path, *, format: Literal["auto", "trec", "beir"] = "auto") -> Qrels:
    """Read TREC qrels or BEIR qrels TSV into :class:`~bm25lab.evaluation.ranking.Qrels`.

    ``format="auto"`` decides by the first line: 4 fields is TREC, 3 is BEIR. A BEIR file's first line
    is taken as its header when its score field is not a number.
    """
    data = _load(path)
    first = _first_fields(data)
    if format == "auto":
        layout = _detect_qrels(first, path)
    elif format in QRELS_FORMATS:
        layout = QRELS_FORMATS[format]
    else:
        raise InputError(f"unknown qrels format {format!r}; known: auto, {', '.join(QRELS_FORMATS)}", path)
    header = layout is BEIR_QRELS and first is not None and len(first[1]) == 3 and not _is_number(first[1][2])

    def build(columns: _Columns) -> Qrels:
        return Qrels.from_columns(columns.qid, columns.doc, columns.value, source=path, lines=columns.lines)

    return _parse_and_build(data, layout, path, build, skip_header=header)


def _detect_qrels(first: tuple[int, list[bytes]] | None, path: str | Path) -> _Layout:
    if first is None:
        return TREC_QRELS
    line, fields = first
    if len(fields) == 4:
        return TREC_QRELS
    if len(fields) == 3:
        return BEIR_QRELS
    raise InputError(
        f"expected {TREC_QRELS.describe()} or {BEIR_QRELS.describe()}, found {len(fields)}", path, line
    )


def _parse_and_build(data: bytes, layout: _Layout, path: str | Path, build: Any, *, skip_header: bool) -> Any:
    """Parse fast and build; on any failure or error parse slowly, so errors name their line."""
    columns = _parse_fast(data, layout, skip_header)
    if columns is not None:
        try:
            return build(columns)
        except InputError:
            pass
    return build(_parse_slow(data, layout, path, skip_header))


# ---------------------------------------------------------------------------------------------
# Bytes in


def _load(path: str | Path) -> bytes:
    """The file's bytes, gunzipped when they start with gzip's magic number, without a UTF-8 BOM."""
    try:
        data = Path(path).read_bytes()
        if data[:2] == _GZIP_MAGIC:
            data = gzip.decompress(data)
    except (OSError, EOFError, gzip.BadGzipFile) as error:
        reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
        raise InputError(f"cannot read: {reason}", path) from None
    return data[len(_BOM) :] if data.startswith(_BOM) else data


def _first_fields(data: bytes) -> tuple[int, list[bytes]] | None:
    """(line number, fields) of the first line that is neither blank nor a comment."""
    for number, start, end in _content_lines(data):
        return number, data[start:end].split()
    return None


_SCAN_BLOCK = 1 << 22  # bytes looked at a time by _content_lines


def _content_lines(data: bytes, block_size: int = _SCAN_BLOCK) -> Iterator[tuple[int, int, int]]:
    """``(line number, start, end)`` of every line with a field that is not a comment (its first
    field does not start with ``#``), ``start`` at that field. Blank and comment lines cost no
    Python step: numpy skips them a block of bytes at a time (two billion blank lines take seconds
    instead of the best part of an hour)."""
    number, counted = 1, 0  # the line number at byte ``counted``
    in_line = False  # whether the line running into the next block has had its first field already
    for lo in range(0, len(data), block_size):
        hi = min(lo + block_size, len(data))
        block = np.frombuffer(data, dtype=np.uint8, count=hi - lo, offset=lo)
        if block.max() <= 13 and block.min() >= 9:  # only \t \n \v \f \r: a quick look at most blank blocks
            fields = block[:0]
        else:
            blank = (block - np.uint8(9) <= 4) | (block == 32)  # C's isspace: \t \n \v \f \r and space
            fields = np.flatnonzero(~blank)
        last_newline = data.rfind(b"\n", lo, hi) - lo  # -1 - lo < 0 when there is none
        if fields.size:
            line = np.cumsum(block == 10, dtype=np.int64)[fields]  # newlines before each field byte
            first = np.empty(fields.size, dtype=bool)  # the first field byte of its line
            first[0] = not (in_line and line[0] == 0)
            np.not_equal(line[1:], line[:-1], out=first[1:])
            starts = fields[first]
            for start in (starts[block[starts] != ord("#")] + lo).tolist():
                number += data.count(b"\n", counted, start)
                counted = start
                end = data.find(b"\n", start)
                yield number, start, len(data) if end < 0 else end
            in_line = int(fields[-1]) > last_newline
        elif last_newline >= 0:
            in_line = False


def _is_number(field: bytes) -> bool:
    try:
        float(field)
    except ValueError:
        return False
    return b"_" not in field


# ---------------------------------------------------------------------------------------------
# Fast path: pyarrow


def _fast_delimiter(data: bytes) -> str | None:
    """The one-character delimiter pyarrow can split this file on, or None when only Python can."""
    if not data or b"\x0b" in data or b"\x0c" in data:
        return None
    if b"\r" in data and data.count(b"\r") != data.count(b"\r\n"):
        return None
    if b"#" in data and (data.startswith(b"#") or b"\n#" in data):
        return None
    if b"\t" in data:
        return None if b" " in data else "\t"
    return " "


def _parse_fast(data: bytes, layout: _Layout, skip_header: bool) -> _Columns | None:
    """Columns parsed by pyarrow, or None when the file needs (or may need) the Python path."""
    delimiter = _fast_delimiter(data)
    first = next(_content_lines(data), None) if delimiter is not None else None
    if first is None:
        return None
    data = memoryview(data)[first[1]:]  # without the blank lines before the first line (no copy)
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    names = [f"f{i}" for i in range(len(layout.fields))]
    types = {name: pa.binary() for name in names}  # unused fields: only checked to be non-empty
    types.update({names[layout.query]: pa.string(), names[layout.doc]: pa.string(), names[layout.value]: pa.float64()})
    try:
        table = pcsv.read_csv(
            pa.BufferReader(pa.py_buffer(data)),
            read_options=pcsv.ReadOptions(column_names=names, skip_rows=int(skip_header), block_size=1 << 24),
            parse_options=pcsv.ParseOptions(
                delimiter=delimiter, quote_char=False, double_quote=False, escape_char=False, newlines_in_values=False
            ),
            convert_options=pcsv.ConvertOptions(
                column_types=types, null_values=[], strings_can_be_null=False, quoted_strings_can_be_null=False
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, UnicodeDecodeError):
        return None
    if table.num_rows and any(  # an empty field: two delimiters in a row, or one at a line's end
        pc.min(pc.binary_length(table.column(name))).as_py() == 0
        for i, name in enumerate(names)
        if i != layout.value
    ):
        return None
    qid = table.column(names[layout.query])
    doc = table.column(names[layout.doc])
    value = table.column(names[layout.value]).to_numpy()
    if qid.null_count or doc.null_count or np.isnan(value).any():
        return None
    if layout.kind == "label":
        if not (np.isfinite(value).all() and (value == np.round(value)).all() and (np.abs(value) <= _LARGEST_LABEL).all()):
            return None
        value = value.astype(np.int64)
    return _Columns(qid, doc, value, None)


# ---------------------------------------------------------------------------------------------
# Slow path: Python, line by line


def _parse_slow(data: bytes, layout: _Layout, path: str | Path, skip_header: bool) -> _Columns:
    """Columns parsed line by line; raises :class:`InputError` at the first malformed line."""
    qids: list[str] = []
    docs: list[str] = []
    values: list[Any] = []
    lines: list[int] = []
    expected = len(layout.fields)
    convert = _score if layout.kind == "score" else _label
    header_pending = skip_header
    for number, start, end in _content_lines(data):
        fields = data[start:end].split()
        if header_pending:
            header_pending = False
            continue
        if len(fields) != expected:
            raise InputError(f"expected {layout.describe()}, found {len(fields)}", path, number)
        qids.append(_text(fields[layout.query], "query id", path, number))
        docs.append(_text(fields[layout.doc], "document id", path, number))
        values.append(convert(fields[layout.value], path, number))
        lines.append(number)
    dtype = np.float64 if layout.kind == "score" else np.int64
    return _Columns(qids, docs, np.array(values, dtype=dtype), np.array(lines, dtype=np.int64))


def _text(field: bytes, what: str, path: str | Path, line: int) -> str:
    try:
        return field.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{what} is not valid UTF-8", path, line) from None


def _score(field: bytes, path: str | Path, line: int) -> float:
    """A float64 score, as ``atof`` reads it; NaN and non-numbers are errors."""
    try:
        if b"_" in field:
            raise ValueError
        value = float(field)
    except ValueError:
        raise InputError(f"score {field.decode('utf-8', 'replace')!r} is not a number", path, line) from None
    if math.isnan(value):
        raise InputError("score is NaN", path, line)
    return value


def _label(field: bytes, path: str | Path, line: int) -> int:
    """An integer relevance (``2`` or ``2.0``, magnitude at most 2**53)."""
    try:
        if b"_" in field:
            raise ValueError
        value = float(field)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value.is_integer() and abs(value) <= _LARGEST_LABEL):
        raise InputError(f"relevance {field.decode('utf-8', 'replace')!r} is not an integer", path, line)
    return int(value)


# ---------------------------------------------------------------------------------------------
# Writer


def write_run(run: Run | Mapping[str, Any], path_or_file: str | Path | IO[Any], tag: str = "bm25lab") -> None:
    """Write a TREC run: ``qid Q0 docid rank score tag`` lines, ranks 1..n in tie-rule order.

    ``run`` is a :class:`~bm25lab.evaluation.ranking.Run` or ``{qid: [(docid, score), ...]}``,
    ``{qid: {docid: score}}`` or ``{qid: [Hit, ...]}`` (objects with ``doc_id`` and ``score``).
    Queries keep their order; scores are written in the shortest decimal form that reads back to
    the same float64. A path ending in ``.gz`` is gzip-compressed; a file object gets text or bytes
    according to its kind. Ids and the tag must be non-empty and free of whitespace.

    A path is written atomically: to a temporary file beside it, then renamed over it, so that a
    reader (or a failure half-way) never sees half a run and an existing file is replaced whole.
    """
    run = Run.from_dict(run)
    _check_token(tag, "run tag")
    payload = _run_bytes(run, tag)
    if isinstance(path_or_file, (str, Path)):
        target = Path(path_or_file)
        _write_atomically(target, gzip.compress(payload, mtime=0) if target.suffix == ".gz" else payload)
    elif isinstance(path_or_file, io.TextIOBase) or hasattr(path_or_file, "encoding"):
        path_or_file.write(payload.decode("utf-8"))
    else:
        path_or_file.write(payload)


def _write_atomically(target: Path, payload: bytes) -> None:
    """``payload`` into ``target`` by way of a temporary file in the same folder and a rename; an
    error names ``target`` and leaves neither it nor a temporary file changed."""
    import os
    import tempfile

    if target.is_dir():
        raise InputError("is a directory; give a file name for the run", target)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        umask = os.umask(0o022)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # as open() would have made it (mkstemp makes 0600)
        with os.fdopen(fd, "wb") as stream:
            stream.write(payload)
        os.replace(tmp, target)
        tmp = None
    except OSError as error:
        raise InputError(f"cannot write: {error.strerror or error}", target) from None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


def _check_token(value: str, what: str) -> None:
    if not value or any(ch in value for ch in " \t\n\r\x0b\x0c"):
        raise InputError(f"{what} {value!r} is empty or contains whitespace; a TREC run cannot hold it")


def _run_bytes(run: Run, tag: str) -> bytes:
    """The run's lines as UTF-8 bytes, built column-wise by pyarrow."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    for qid in run.qids:
        _check_token(qid, "query id")
    if len(run):
        bad = pc.or_(pc.match_substring_regex(run.doc_ids, r"[ \t\n\r\x0b\x0c]"), pc.equal(pc.utf8_length(run.doc_ids), 0))
        if pc.any(bad).as_py():
            _check_token(run.doc_ids.filter(bad)[0].as_py(), "document id")
    counts = np.diff(run.offsets)
    seg = np.repeat(np.arange(run.num_queries, dtype=np.int64), counts)
    rank = np.arange(len(run), dtype=np.int64) - run.offsets[:-1][seg] + 1 if len(run) else seg
    size = len(run)
    table = pa.table(
        {
            "qid": pa.array(run.qids, type=pa.string()).take(pa.array(seg)),
            "iter": pa.repeat(pa.scalar("Q0", pa.string()), size),
            "doc": run.doc_ids,
            "rank": pa.array(rank),
            "score": pa.array(run.score, type=pa.float64()),
            "tag": pa.repeat(pa.scalar(tag, pa.string()), size),
        }
    )
    sink = io.BytesIO()
    pcsv.write_csv(table, sink, pcsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none"))
    return sink.getvalue()
