"""Readers of qrels and runs in the field's formats, and the run writers.

Qrels formats (:data:`QRELS_FORMATS`; fields separated by any run of spaces or tabs, ``.gz`` files
accepted by their content):

- ``trec``: ``qid iteration docid relevance``; relevance a number, negative meaning "in the pool,
  unjudged". A non-integer grade (a rating such as ``4.5``) is kept for the measures of ratings
  (MAE, RMSE); every other measure reads the integer label: the grade truncated toward zero under
  trec_eval 9 rules (``4.5`` is 4, ``1e2`` is 100), C's ``atol`` of the text under trec_eval 10 rules
  (``4.5`` is 4, ``1e2`` is 1), as :mod:`bm25lab.evaluation.conventions` says.
- ``beir``: BEIR's TSV ``query-id corpus-id score``, its header line optional; its score read as TREC's
  relevance.
- ``smart``: the SMART collections' relevance files (CISI ``CISI.REL``, CACM ``qrels.text``):
  ``qid docid 0 0`` (the last two columns unused); every listed pair is relevant (label 1).
  Numeric ids lose their leading zeros (``01`` is ``1``), as :mod:`bm25lab.engine.sources` reads the
  SMART queries.
- ``cranfield``: Cranfield's ``cranqrel``, ``qid docid grade`` on Cleverdon's inverted scale: grade
  1 (a complete answer) .. 4 (minimum interest) become labels 4 .. 1 (label = 5 - grade), and -1
  ("of no interest") becomes 0, judged non-relevant: the labels of the bundled Cranfield collection.
- ``time``, ``npl``, ``lisa``, ``lisarj``: the Glasgow collections' relevance files, records over
  lines: TIME's ``TIME.REL`` (``qid doc doc ...`` per line, ``*STOP`` optional), NPL's ``rlv-ass``
  (the query number, its documents, a line ``/``), LISA's ``LISA.REL`` (``Query N``, ``K Relevant
  Refs:``, the documents ended by ``-1``, K checked) and ``lisarj.num`` (``qid count doc ...``, the
  documents running over lines). Every listed pair is relevant (label 1); ids lose leading zeros.
- ``ranx``: ranx's (and ir_measures' dict) JSON ``{"qid": {"docid": relevance, ...}, ...}``; a
  relevance is a number (a rating such as 4.5 kept, as in TREC qrels, the integer label its truncation).

Run formats (:data:`RUN_FORMATS`):

- ``trec``: ``qid Q0 docid rank score tag``. The rank and ``Q0`` columns are ignored: documents are
  ranked by score with trec_eval's tie rule (:mod:`bm25lab.evaluation.ranking`). Scores are read as
  float64, as trec_eval's ``atof``. As in trec_eval, anything after the tag is ignored (its own test
  run has "STANDARD more junk at end of lines") and the run is named by the tag of its last line
  (trec_eval's ``runid``).
- ``msmarco``: MS MARCO's ``qid<TAB>docid<TAB>rank``: the rank is the order (score = -rank); the
  ranks of a query must be distinct integers.
- ``ranx``: JSON ``{"qid": {"docid": score, ...}, ...}``.

Detection (``format="auto"``): a file starting with ``{`` is JSON (``ranx``); otherwise the number of
fields of the first line decides, and where two formats have that many the content does, with an
:class:`~bm25lab.engine.errors.InputWarning` saying which was chosen and how to choose the other:

- qrels, first: ``lisa`` (a first line ``Query N``), ``npl`` (numbers and lines ``/``), and, for
  lines of numbers only that do not all have 3 or 4 fields, ``lisarj`` when they read as ``qid count
  doc ...`` records each starting a line, else ``time`` (MED.REL's ``5 0 1 1`` stays TREC);
- qrels, 4 fields: ``smart`` when the third column holds one value throughout and the second more
  than one (SMART's ``qid docid 0 0``; read as TREC, every judgment would name document ``0``),
  else ``trec``; 3 fields: ``beir`` (header or not), or ``cranfield`` when the labels are grades of
  Cranfield's scale (1..4 and -1, with -1 present); 6 or more: an error (a TREC run, not qrels).
- runs, 6 fields or more: ``trec``; 3 fields: ``msmarco``; 4 fields: an error (TREC qrels, not a run).

Strictness: blank lines and lines starting with ``#`` are skipped (as trec_eval does); any other line
must have exactly the format's number of fields (a run line at least six), a number where a score or
a relevance is due (NaN refused). A repeated (query, document) pair in a run is an error, as in
trec_eval; repeated qrels lines are an error unless identical. Every error is an
:class:`~bm25lab.engine.errors.InputError` naming the file and the line.

Three parsing paths, one result. Where the compiled core is built (:func:`bm25lab.engine.core.kernels`),
a TREC run is read by its reader (``engine/core/runreader.c``), on line-aligned chunks in two threads for a
large file: one pass splits the lines as the Python path does, numbers the query ids, copies and hashes
the document ids (the hash :func:`~bm25lab.engine.columns.string_hashes` gives), reads the scores
(exactly: the float64 Python's ``float`` gives, which it calls for the spellings the core leaves to it),
looks for a document repeated within a query's rows and puts each query's rows in the tie-rule order
(a run whose queries' rows lie in several places is ordered as a whole by the core's ``order_run``), so
that the run needs no further sort, hashing or duplicate check. TREC qrels likewise, by the core's qrels
reader (the same file: one pass numbers the query ids, copies and hashes the document ids, reads each
relevance as a number and as ``atol`` reads it). Neither needs pyarrow: the document ids stay in numpy
arrays (:class:`~bm25lab.engine.columns.Strings`). Any line the other paths would refuse, and any
repeated document (conflicting judgments), sends the file to them (they name the line). Otherwise (other
formats, or no core) the fast path hands the bytes to pyarrow's CSV reader, whose delimiter is a single character: it
is taken when the fields are separated by single spaces (or single tabs), with no comment lines.
Whenever it cannot parse a file, or finds anything wrong in it, the file is parsed again line by line
in Python, which defines the accepted syntax and names the line of the first error. All split fields on ASCII whitespace only (C's ``isspace``), so an
ideographic space inside a document id stays part of it, as in trec_eval.

Large files (16 MiB and more, plain, not gzipped) are mapped into memory read-only rather than read
into a copy: the bytes are the page cache's own pages, which the kernel need not zero (on the issue-20
run, 333 MB of fresh memory less). As with any reader, a file must not be truncated while it is read
(mapped, the process would stop with SIGBUS rather than read a short file).
"""
from __future__ import annotations

import functools
import gzip
import io
import itertools
import json
import math
import mmap
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Iterator, Literal, Mapping

import numpy as np

from ..engine.columns import Strings, numpy_values
from ..engine.compressed import decompress
from ..engine.errors import InputWarning, cr_line_ends
from .conventions import DEFAULT_TREC_EVAL, atol, get_rules
from .errors import InputError, ParameterError
from .ranking import Qrels, Run

__all__ = ["QRELS_FORMATS", "RUN_FORMATS", "RUN_WRITERS", "detect_qrels_format", "detect_run_format", "read_qrels",
           "read_run", "write_run"]

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
    more_allowed: bool = False  # fields after the last one are ignored (a run's, as trec_eval does)

    def describe(self) -> str:
        return f"{len(self.fields)} fields ({self.name}: {' '.join(self.fields)})"


TREC_RUN = _Layout("TREC run", ("qid", "Q0", "docid", "rank", "score", "tag"), 0, 2, 4, "score", more_allowed=True)
MSMARCO_RUN = _Layout("MS MARCO run", ("qid", "docid", "rank"), 0, 1, 2, "label")
TREC_QRELS = _Layout("TREC qrels", ("qid", "iteration", "docid", "relevance"), 0, 2, 3, "label")
BEIR_QRELS = _Layout("BEIR qrels", ("query-id", "corpus-id", "score"), 0, 1, 2, "label")
SMART_QRELS = _Layout("SMART qrels", ("qid", "docid", "0", "0"), 0, 1, 3, "score")
CRANFIELD_QRELS = _Layout("Cranfield qrels", ("qid", "docid", "grade"), 0, 1, 2, "label")
_JSON = "JSON"  # the layout-less formats: one JSON object of objects

QRELS_FORMATS: dict[str, Any] = {"trec": TREC_QRELS, "beir": BEIR_QRELS, "smart": SMART_QRELS,
                                 "cranfield": CRANFIELD_QRELS, "ranx": _JSON}
"""Qrels formats ``read_qrels(format=)`` and ``--qrels-format`` take (and ``auto``)."""
RUN_FORMATS: dict[str, _Layout | str] = {"trec": TREC_RUN, "msmarco": MSMARCO_RUN, "ranx": _JSON}
"""Run formats ``read_run(format=)`` and ``--run-format`` take (and ``auto``)."""
CRANFIELD_GRADES = {1: 4, 2: 3, 3: 2, 4: 1, -1: 0}
"""Cleverdon's grade -> bm25lab's label (5 - grade; -1, "of no interest", judged non-relevant)."""


@dataclass(frozen=True)
class _Columns:
    """Parsed rows: query ids, document ids, values, the 1-based line of each row (slow path) and,
    for labels read with ``atol``, the integer labels."""

    qid: Any
    doc: Any
    value: Any
    lines: np.ndarray | None
    integer: np.ndarray | None = None


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
def read_run(path: str | Path, *, format: str = "auto") -> Run:
    """Read a run (:data:`RUN_FORMATS`: ``trec``, ``msmarco``, ``ranx``; ``auto`` detects it) into a
    :class:`~bm25lab.evaluation.ranking.Run`, named by a TREC run's last tag (trec_eval's ``runid``)."""
    data = _load(path)
    _check_line_ends(data, path)
    chosen = _chosen(format, RUN_FORMATS, "run", path) or detect_run_format(path, data)
    if chosen == "ranx":
        return _from_json(Run.from_dict, data, path, "run")
    layout = RUN_FORMATS[chosen]
    assert isinstance(layout, _Layout)
    last = _last_fields(data) if chosen == "trec" else None
    name = last[5].decode("utf-8", "replace") if last and len(last) >= 6 else ""

    def build(columns: _Columns) -> Run:
        score = columns.value
        if layout is MSMARCO_RUN:
            _check_ranks(columns, path)
            score = -np.asarray(score, dtype=np.float64)
        return Run.from_columns(columns.qid, columns.doc, score, name=name, source=path, lines=columns.lines,
                                copy=False)

    box = [data]
    del data  # the parser lets the bytes go before the build
    if chosen == "trec" and len(box[0]) >= _COMPILED_FROM:
        run = _compiled_run(box, name, path)
        if run is not None:
            return run
    return _parse_and_build(box, layout, path, build, skip_header=False)


@_within_memory
def read_qrels(path: str | Path, *, format: str = "auto", trec_eval: int = DEFAULT_TREC_EVAL) -> Qrels:
    """Read qrels (:data:`QRELS_FORMATS`: ``trec``, ``beir``, ``smart``, ``cranfield``, ``ranx``;
    ``auto`` detects it, see the module's notes) into :class:`~bm25lab.evaluation.ranking.Qrels`.

    A detection that another format could also have matched warns (:class:`InputWarning`) naming
    the format chosen and the one to ask for instead. ``trec_eval`` (9 or 10) chooses how the integer
    labels are read from the text (see the module's docstring).
    """
    by_atol = get_rules(trec_eval).label_from_text == "atol"
    data = _load(path)
    _check_line_ends(data, path)
    chosen = _chosen(format, QRELS_FORMATS, "qrels", path) or detect_qrels_format(path, data)
    if chosen == "ranx":
        return _from_json(Qrels.from_dict, data, path, "qrels")
    layout = QRELS_FORMATS[chosen]
    if isinstance(layout, _Records):
        qids, docs, lines = layout.parse(_text_lines(data, path), path)
        return Qrels.from_columns(qids, docs, np.ones(len(qids)), integer_labels=np.ones(len(qids), dtype=np.int64),
                                  source=path, lines=np.array(lines, dtype=np.int64))
    assert isinstance(layout, _Layout)
    if layout is TREC_QRELS:
        qrels = _compiled_qrels(data, path, by_atol)
        if qrels is not None:
            return qrels
    first = _first_fields(data)
    header = layout is BEIR_QRELS and first is not None and len(first[1]) == 3 and not _is_number(first[1][2])
    adjust = _QRELS_ADJUSTERS.get(chosen)

    def build(columns: _Columns) -> Qrels:
        if adjust is not None:
            columns = adjust(columns, path)
        return Qrels.from_columns(columns.qid, columns.doc, columns.value, integer_labels=columns.integer,
                                  source=path, lines=columns.lines)

    return _parse_and_build(data, layout, path, build, skip_header=header,
                            atol_labels=by_atol and layout.kind == "label")


def _check_line_ends(data: bytes, path: str | Path) -> None:
    """A file whose lines end in a carriage return alone (classic Mac OS) is one line to the readers (its
    fields then miscounted: "expected 4 fields, found 8"): refused, naming its line ends, when its first
    line holds a CR that no line feed follows. JSON is read whatever its line ends."""
    if _is_json(data):
        return
    first = next(_content_lines(data), None)
    if first is not None and b"\r" in data[first[1] : first[2]].rstrip(b"\r"):
        raise cr_line_ends(path, first[0])


def _chosen(format: str, formats: Mapping[str, Any], what: str, path: str | Path) -> str | None:
    """``format`` checked against the registry; None for ``auto``."""
    if format == "auto":
        return None
    if format not in formats:
        raise ParameterError(f"unknown {what} format {format!r}; known: auto, {', '.join(formats)}")
    return format


# ---------------------------------------------------------------------------------------------
# Detection


def _sample_rows(data: bytes, limit: int = 2000) -> list[list[bytes]]:
    """The fields of the first ``limit`` lines that are neither blank nor comments (blank lines
    before them cost no Python step: :func:`_content_lines`)."""
    rows: list[list[bytes]] = []
    for _, start, end in _content_lines(data):
        rows.append(data[start:end].split())
        if len(rows) == limit:
            break
    return rows


def _is_json(data: bytes, block_size: int = 1 << 22) -> bool:
    """Whether the first byte that is not whitespace opens a JSON object (found by numpy a block of
    bytes at a time, the blocks growing from 64 KiB to ``block_size``: no copy of ``data``, no Python step per
    blank line, and a file that starts with a field costs one small block)."""
    for lo, hi in _blocks(len(data), block_size):
        block = np.frombuffer(data, dtype=np.uint8, count=hi - lo, offset=lo)
        filled = np.flatnonzero(~((block - np.uint8(9) <= 4) | (block == 32)))  # C's isspace
        if filled.size:
            return bool(block[filled[0]] == ord("{"))
    return False


def _warn(message: str) -> None:
    warnings.warn(InputWarning(message), stacklevel=3)


def detect_qrels_format(path: str | Path, data: bytes | None = None) -> str:
    """The qrels format of a file from its content (see the module's notes); warns when the content
    could be read another way, and raises :class:`InputError` for a file that is no qrels file."""
    data = _load(path) if data is None else data
    if _is_json(data):
        return "ranx"
    rows = _sample_rows(data)
    if not rows:
        return "trec"
    records = _detect_records(rows, path)
    if records:
        return records
    width = len(rows[0])
    if width == 4:
        third = {row[2] for row in rows if len(row) == 4}
        second = {row[1] for row in rows if len(row) == 4}
        if len(third) == 1 and len(second) > 1:
            _warn(f"{path}: read as SMART qrels ('query document {third.pop().decode(errors='replace')} ...': "
                  f"every listed pair relevant), since its third column never changes; --qrels-format trec "
                  f"reads the third column as the document")
            return "smart"
        return "trec"
    if width == 3:
        header = not _is_number(rows[0][2])
        labels = {row[2] for row in rows[int(header):] if len(row) == 3}
        if not header and labels <= {b"1", b"2", b"3", b"4", b"-1"} and b"-1" in labels:
            _warn(f"{path}: read as Cranfield qrels (grades 1 best .. 4, -1 of no interest; label = 5 - grade, "
                  f"-1 -> 0); --qrels-format beir takes the third column as the label itself")
            return "cranfield"
        return "beir"
    if width >= 6:
        raise InputError(f"{width} fields: this looks like a TREC run (qid Q0 docid rank score tag), not qrels; "
                         "the qrels come first", path, 1)
    raise InputError(f"expected {TREC_QRELS.describe()}, {BEIR_QRELS.describe()} or JSON, found {width}",
                     path, _first_fields(data)[0] if _first_fields(data) else None)


def detect_run_format(path: str | Path, data: bytes | None = None) -> str:
    """The run format of a file from its content; :class:`InputError` for a file that is no run."""
    data = _load(path) if data is None else data
    if _is_json(data):
        return "ranx"
    first = _first_fields(data)
    if first is None or len(first[1]) >= 6:  # a TREC run line may carry more fields after the tag
        return "trec"
    line, fields = first
    if len(fields) == 3:
        return "msmarco"
    if len(fields) == 4:
        raise InputError("4 fields: this looks like TREC qrels (qid iteration docid relevance), not a run; "
                         "the qrels come first", path, line)
    raise InputError(f"expected {TREC_RUN.describe()} or {MSMARCO_RUN.describe()}, found {len(fields)}", path, line)


# ---------------------------------------------------------------------------------------------
# Format-specific steps after parsing


def _smart_id(value: str) -> str:
    return str(int(value)) if value.isdigit() else value


def _smart_columns(columns: _Columns, path: str | Path) -> _Columns:
    """SMART qrels: every listed pair is relevant (label 1); numeric ids without leading zeros."""
    qid = [_smart_id(q) for q in _as_list(columns.qid)]
    doc = [_smart_id(d) for d in _as_list(columns.doc)]
    return _Columns(qid, doc, np.ones(len(qid), dtype=np.float64), columns.lines)


def _cranfield_columns(columns: _Columns, path: str | Path) -> _Columns:
    """Cranfield's grades to labels (:data:`CRANFIELD_GRADES`); any other grade is an error."""
    values = np.asarray(columns.value, dtype=np.float64)
    known = np.isin(values, list(CRANFIELD_GRADES))
    if not known.all():
        row = int(np.flatnonzero(~known)[0])
        line = int(columns.lines[row]) if columns.lines is not None else None
        grade = int(values[row]) if values[row].is_integer() else float(values[row])
        raise InputError(f"Cranfield grade {grade} is not one of 1, 2, 3, 4, -1", path, line)
    grades = values.astype(np.int64)
    mapping = np.zeros(grades.max() - grades.min() + 1, dtype=np.int64)
    for grade, label in CRANFIELD_GRADES.items():
        if grades.min() <= grade <= grades.max():
            mapping[grade - grades.min()] = label
    qid = [_smart_id(q) for q in _as_list(columns.qid)]
    doc = [_smart_id(d) for d in _as_list(columns.doc)]
    labels = mapping[grades - grades.min()] if grades.size else grades
    return _Columns(qid, doc, labels.astype(np.float64), columns.lines)


_QRELS_ADJUSTERS: dict[str, Any] = {"smart": _smart_columns, "cranfield": _cranfield_columns}


# ---------------------------------------------------------------------------------------------
# The Glasgow collections' relevance files: records spanning lines, every listed document relevant


@dataclass(frozen=True)
class _Records:
    """A qrels format of multi-line records (not one judgment per line): ``parse`` gives the query
    ids, document ids and 1-based lines of the judgments, every one relevant (label 1)."""

    name: str
    parse: Callable[[list[str], str | Path], tuple[list[str], list[str], list[int]]]


def _text_lines(data: bytes, path: str | Path) -> list[str]:
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise InputError("invalid UTF-8", path, data.count(b"\n", 0, exc.start) + 1) from None


def _number(field: str, what: str, path: str | Path, line: int) -> str:
    if not field.isdigit():
        raise InputError(f"{what} {field!r} is not a number", path, line)
    return _smart_id(field)


Judgments = tuple[list[str], list[str], list[int]]


def _parse_time_rel(lines: list[str], path: str | Path) -> Judgments:
    """TIME.REL: ``qid doc doc ...`` on one line per query (blank lines between), ``*STOP`` optional
    at the end."""
    qids: list[str] = []
    docs: list[str] = []
    numbers: list[int] = []
    stopped = 0
    for number, text in enumerate(lines, 1):
        fields = text.split()
        if not fields:
            continue
        if stopped:
            raise InputError(f"text after *STOP (line {stopped})", path, number)
        if fields == ["*STOP"]:
            stopped = number
            continue
        qid = _number(fields[0], "query id", path, number)
        for field in fields[1:]:
            qids.append(qid)
            docs.append(_number(field, "document id", path, number))
            numbers.append(number)
    return qids, docs, numbers


def _parse_npl_rel(lines: list[str], path: str | Path) -> Judgments:
    """NPL's rlv-ass: the query's number on a line by itself, lines of document numbers, a line ``/``."""
    qids: list[str] = []
    docs: list[str] = []
    numbers: list[int] = []
    qid = None
    opened = 0
    for number, text in enumerate(lines, 1):
        fields = text.split()
        if not fields:
            continue
        if qid is None:
            if len(fields) != 1:
                raise InputError(f"expected a query number on a line by itself (NPL rlv-ass), found {len(fields)} "
                                 f"fields", path, number)
            qid, opened = _number(fields[0], "query id", path, number), number
        elif fields == ["/"]:
            qid = None
        else:
            for field in fields:
                qids.append(qid)
                docs.append(_number(field, "document id", path, number))
                numbers.append(number)
    if qid is not None:
        raise InputError(f"query {qid} is not ended by a line '/'", path, opened)
    return qids, docs, numbers


def _parse_lisa_rel(lines: list[str], path: str | Path) -> Judgments:
    """LISA.REL: ``Query 1``, ``2 Relevant Refs:``, the documents ended by ``-1``; the count must
    match the documents listed (a damaged record is an error, not a short list)."""
    qids: list[str] = []
    docs: list[str] = []
    numbers: list[int] = []
    state, qid, announced, listed, opened = "query", "", 0, 0, 0
    for number, text in enumerate(lines, 1):
        fields = text.split()
        if not fields:
            continue
        if state == "query":
            if len(fields) != 2 or fields[0] != "Query":
                raise InputError("expected 'Query <number>' (LISA.REL)", path, number)
            qid, opened, state = _number(fields[1], "query id", path, number), number, "count"
        elif state == "count":
            if len(fields) != 3 or fields[1:] != ["Relevant", "Refs:"]:
                raise InputError(f"expected '<count> Relevant Refs:' after query {qid}", path, number)
            announced, listed, state = int(_number(fields[0], "count", path, number)), 0, "refs"
        else:
            if fields[-2:] == ["Relevant", "Refs:"] or fields[0] == "Query":
                raise InputError(f"query {qid} (line {opened}) announces {announced} relevant refs but its list "
                                 f"is cut after {listed} by this line, without the closing -1: the file is damaged "
                                 f"here", path, number)
            for field in fields:
                if field == "-1":
                    if listed != announced:
                        raise InputError(f"query {qid} (line {opened}) announces {announced} relevant refs, lists "
                                         f"{listed}", path, number)
                    state = "query"
                    break
                if state != "refs":
                    raise InputError(f"text after the closing -1 of query {qid}", path, number)
                qids.append(qid)
                docs.append(_number(field, "document id", path, number))
                numbers.append(number)
                listed += 1
    if state != "query":
        raise InputError(f"query {qid} is not ended by -1", path, opened)
    return qids, docs, numbers


def _parse_lisarj(lines: list[str], path: str | Path) -> Judgments:
    """LISA's lisarj.num: ``qid count doc doc ...`` in fixed-width columns, the documents running on
    over as many lines as they need; a record starts on a new line."""
    qids: list[str] = []
    docs: list[str] = []
    numbers: list[int] = []
    qid, remaining, opened = "", 0, 0
    for number, text in enumerate(lines, 1):
        fields = text.split()
        if not fields:
            continue
        if remaining == 0:
            if len(fields) < 2:
                raise InputError("expected 'query count document ...' (lisarj.num)", path, number)
            qid, opened = _number(fields[0], "query id", path, number), number
            remaining = int(_number(fields[1], "count", path, number))
            fields = fields[2:]
        if len(fields) > remaining:
            raise InputError(f"query {qid} (line {opened}) lists more documents than its count", path, number)
        for field in fields:
            qids.append(qid)
            docs.append(_number(field, "document id", path, number))
            numbers.append(number)
        remaining -= len(fields)
    if remaining:
        raise InputError(f"query {qid} lists fewer documents than its count", path, opened)
    return qids, docs, numbers


TIME_QRELS = _Records("TIME.REL", _parse_time_rel)
NPL_QRELS = _Records("NPL rlv-ass", _parse_npl_rel)
LISA_QRELS = _Records("LISA.REL", _parse_lisa_rel)
LISARJ_QRELS = _Records("LISA lisarj.num", _parse_lisarj)


def _aligned_records(rows: list[list[bytes]]) -> bool:
    """Whether the rows read as lisarj.num's records (``qid count`` then that many documents, each
    record starting a row); a row of TIME.REL (``qid doc doc``) almost never does."""
    remaining = 0
    for row in rows:
        if remaining == 0:
            if len(row) < 2:
                return False
            remaining = int(row[1])
            row = row[2:]
        if len(row) > remaining:
            return False
        remaining -= len(row)
    return remaining == 0


def _detect_records(rows: list[list[bytes]], path: str | Path) -> str | None:
    """The Glasgow layouts, recognised before the one-judgment-per-line ones (see the module's notes)."""
    if rows[0] and rows[0][0] == b"Query":
        _warn(f"{path}: read as LISA.REL qrels ('Query N', 'K Relevant Refs:', documents ended by -1; every listed "
              f"document relevant)")
        return "lisa"
    body = [row for row in rows if row != [b"*STOP"]]
    if any(row == [b"/"] for row in body) and all(f.isdigit() for row in body if row != [b"/"] for f in row):
        _warn(f"{path}: read as NPL rlv-ass qrels (a query number, its documents, a line '/'; every listed "
              f"document relevant)")
        return "npl"
    if not body or not all(f.isdigit() for row in body for f in row):
        return None
    widths = {len(row) for row in body}
    if len(widths) == 1 and widths <= {3, 4}:
        return None  # one judgment per line (TREC, SMART, BEIR, Cranfield): decided by the usual rules
    if _aligned_records(body):
        _warn(f"{path}: read as LISA lisarj.num qrels ('query count document ...', the documents running over "
              f"lines; every listed document relevant); --qrels-format time reads each line as 'query document ...'")
        return "lisarj"
    _warn(f"{path}: read as TIME.REL qrels ('query document document ...' on each line; every listed document "
          f"relevant); --qrels-format names another layout")
    return "time"



QRELS_FORMATS.update({"time": TIME_QRELS, "npl": NPL_QRELS, "lisa": LISA_QRELS, "lisarj": LISARJ_QRELS})

def _as_list(values: Any) -> list[str]:
    return values.to_pylist() if hasattr(values, "to_pylist") else list(values)


def _check_ranks(columns: _Columns, path: str | Path) -> None:
    """MS MARCO runs: the ranks are integers, distinct within a query (a repeat means the file is
    something else, qrels with their labels in the third column, say)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ranks = np.asarray(columns.value, dtype=np.float64)
    fractional = np.flatnonzero(ranks != np.trunc(ranks))
    if fractional.size:
        row = int(fractional[0])
        line = int(columns.lines[row]) if columns.lines is not None else None
        raise InputError(f"rank {float(ranks[row])!r} is not an integer", path, line)
    qid = columns.qid if hasattr(columns.qid, "type") else pa.array(columns.qid, type=pa.string())
    table = pa.table({"q": qid, "r": pa.array(ranks.astype(np.int64))})
    counts = table.group_by(["q", "r"], use_threads=False).aggregate([("r", "count")])  # nothing left to its threads
    repeated = pc.greater(counts.column("r_count"), 1)
    if pc.any(repeated).as_py():
        bad = counts.filter(repeated).to_pylist()[0]
        raise InputError(f"query {bad['q']!r} has rank {bad['r']} {bad['r_count']} times: an MS MARCO run "
                         f"(qid docid rank) ranks each document once; is this a qrels file?", path)


def _from_json(build: Any, data: bytes, path: str | Path, what: str) -> Any:
    """``build`` (``Qrels.from_dict`` or ``Run.from_dict``) of the file's JSON object, errors naming the file."""
    try:
        return build(_json_object(data, path, what))
    except InputError as exc:
        if exc.path is not None:
            raise
        raise InputError(exc.reason, path) from None


def _json_object(data: bytes, path: str | Path, what: str) -> dict[str, dict[str, Any]]:
    """A JSON ``{qid: {docid: value}}`` object; anything else is an :class:`InputError`."""
    try:
        value = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError(f"invalid UTF-8 at byte {exc.start + 1}", path) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg} at column {exc.colno}", path, exc.lineno) from None
    if not isinstance(value, dict) or not all(isinstance(inner, dict) for inner in value.values()):
        raise InputError(f"expected a JSON {what} object {{\"qid\": {{\"docid\": value, ...}}, ...}}", path)
    return value


def _parse_and_build(data: bytes | list[bytes], layout: _Layout, path: str | Path, build: Any, *, skip_header: bool,
                     atol_labels: bool = False) -> Any:
    """Parse fast and build; on any failure or error parse slowly, so errors name their line.

    ``data`` may come in a list the caller keeps no other reference to: the bytes are then let go once
    parsed, before the build, whose arrays reuse their memory (a 333 MB run would otherwise stay in
    memory while 10 million rows are sorted and hashed, and the kernel zero hundreds of MB of fresh
    pages); the Python path, reached on an error only, reads the file again."""
    box = data if isinstance(data, list) else [data]
    columns = _parse_fast(box[0], layout, skip_header, atol_labels)
    if columns is not None:
        if isinstance(data, list):
            box.clear()
        try:
            return build(columns)
        except InputError:
            pass
        del columns
    return build(_parse_slow(box[0] if box else _load(path), layout, path, skip_header, atol_labels))


# ---------------------------------------------------------------------------------------------
# Bytes in


_MAP_FROM = 1 << 24
"""Files of at least this many bytes are mapped into memory (:class:`_MappedFile`), not read."""


class _MappedFile(mmap.mmap):
    """A file mapped read-only, with the few ``bytes`` methods the readers use besides ``mmap``'s own
    (``find``, ``rfind``, slices as ``bytes``, the buffer numpy and pyarrow read).

    Reading a 333 MB run into a ``bytes`` object costs a copy and 333 MB of fresh memory, which the
    kernel must map and zero page by page (a quarter of ``bm25lab evaluate``'s time); mapped, the bytes
    are the page cache's own pages. ``count`` is meant for single bytes and ``b"\r\n"`` (patterns
    that cannot overlap themselves), as the readers use it."""

    def __contains__(self, sub: bytes) -> bool:
        return self.find(sub) >= 0

    def count(self, sub: bytes, start: int = 0, end: int | None = None) -> int:
        end = len(self) if end is None else min(end, len(self))
        total = 0
        for lo in range(max(start, 0), end, _COUNT_BLOCK):  # a match is counted in the block it starts in
            total += self[lo : min(lo + _COUNT_BLOCK + len(sub) - 1, end)].count(sub)
        return total

    def startswith(self, prefix: bytes) -> bool:
        return self[: len(prefix)] == prefix

    def endswith(self, suffix: bytes) -> bool:
        return len(self) >= len(suffix) and self[len(self) - len(suffix) :] == suffix

    def decode(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        return self[:].decode(encoding, errors)


_COUNT_BLOCK = 1 << 22


def _load(path: str | Path) -> bytes:
    """The file's bytes, gunzipped when they start with gzip's magic number, without a UTF-8 BOM; a
    large plain file (:data:`_MAP_FROM`) mapped into memory rather than read (:class:`_MappedFile`)."""
    try:
        with open(path, "rb") as stream:
            mapped = _mapped(stream)
            if mapped is not None:
                return mapped  # type: ignore[return-value]
            data = stream.read()
        if data[:2] == _GZIP_MAGIC:
            data = decompress(data, path)  # bounded: a gzip bomb is an error naming the file
    except (OSError, EOFError, gzip.BadGzipFile) as error:
        reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
        raise InputError(f"cannot read: {reason}", path) from None
    return data[len(_BOM) :] if data.startswith(_BOM) else data


def _mapped(stream: IO[bytes]) -> _MappedFile | None:
    """The open file mapped read-only, or None: when it is small, not a regular file, compressed, starts
    with a BOM, or cannot be mapped (then it is read as usual)."""
    import os
    import stat

    if not hasattr(mmap, "PROT_READ"):  # not a POSIX system
        return None
    status = os.fstat(stream.fileno())
    if not stat.S_ISREG(status.st_mode) or status.st_size < max(_MAP_FROM, 1):
        return None
    try:
        mapped = _MappedFile(stream.fileno(), 0, flags=mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0),
                             prot=mmap.PROT_READ)
    except (OSError, ValueError):
        return None
    if mapped[:2] == _GZIP_MAGIC or mapped.startswith(_BOM):
        mapped.close()
        return None
    return mapped


def _first_fields(data: bytes) -> tuple[int, list[bytes]] | None:
    """(line number, fields) of the first line that is neither blank nor a comment."""
    for number, start, end in _content_lines(data):
        return number, data[start:end].split()
    return None


def _last_fields(data: bytes) -> list[bytes] | None:
    """The fields of the last line that is neither blank nor a comment. Trailing blank lines cost
    no Python step (:func:`_last_content_end`)."""
    end = len(data)
    while (end := _last_content_end(data, end)) > 0:
        start = data.rfind(b"\n", 0, end) + 1
        fields = data[start:end].split()
        if not fields[0].startswith(b"#"):
            return fields
        end = start
    return None


def _last_content_end(data: bytes, end: int, block_size: int = 1 << 22) -> int:
    """One past the last byte before ``end`` that is not whitespace (0: none), found by numpy a
    block of bytes at a time from the end, the blocks growing from 64 KiB to ``block_size``."""
    step = min(1 << 16, block_size)
    while end > 0:
        lo = max(0, end - step)
        step = min(2 * step, block_size)
        block = np.frombuffer(data, dtype=np.uint8, count=end - lo, offset=lo)
        filled = np.flatnonzero(~((block - np.uint8(9) <= 4) | (block == 32)))  # C's isspace, as below
        if filled.size:
            return lo + int(filled[-1]) + 1
        end = lo
    return 0


_SCAN_BLOCK = 1 << 22  # bytes looked at a time by _content_lines


def _blocks(size: int, largest: int, first: int = 1 << 16) -> Iterator[tuple[int, int]]:
    """``(lo, hi)`` bounds covering ``range(size)``: blocks doubling from ``first`` bytes up to ``largest``."""
    lo, step = 0, min(first, largest)
    while lo < size:
        yield lo, min(lo + step, size)
        lo += step
        step = min(2 * step, largest)


def _content_lines(data: bytes, block_size: int = _SCAN_BLOCK) -> Iterator[tuple[int, int, int]]:
    """``(line number, start, end)`` of every line with a field that is not a comment (its first
    field does not start with ``#``), ``start`` at that field. Blank and comment lines cost no
    Python step: numpy skips them a block of bytes at a time (two billion blank lines take seconds
    instead of the best part of an hour). The blocks grow from 64 KiB to ``block_size``: a caller after
    the first lines (detection, the fast path's start) does not pay for scanning megabytes."""
    number, counted = 1, 0  # the line number at byte ``counted``
    in_line = False  # whether the line running into the next block has had its first field already
    for lo, hi in _blocks(len(data), block_size):
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


def _parse_fast(data: bytes, layout: _Layout, skip_header: bool, atol_labels: bool = False) -> _Columns | None:
    """Columns parsed by pyarrow, or None when the file needs (or may need) the Python path (with
    ``atol_labels``, whenever a label is not plainly written as an integer).

    Only the query, document and value columns are converted, the query ids dictionary-encoded (integer
    codes: no string hashed per row). pyarrow checks every line's number of fields; that none is empty
    (a field the measures do not read included: ``Q0``, a rank, a tag) :func:`_has_empty_field` checks
    on the bytes.

    Those checks of the whole file (:func:`_fits_fast_path`) need not come first: on a large file they
    run in a second thread while pyarrow parses, and the parse is used only if they pass."""
    first = next(_content_lines(data), None) if data else None
    if first is None:
        return None
    line = data[first[1] : first[2]]
    delimiter = "\t" if b"\t" in line or b" " not in line else " "  # what _fast_delimiter must find
    if len(data) < _CHECK_ALONGSIDE_FROM:
        return _parse_checked(data, first[1], delimiter, layout, skip_header, atol_labels) \
            if _fits_fast_path(data, first[1], delimiter) else None
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:  # pyarrow's parse lets the checks have the interpreter
        fits = pool.submit(_fits_fast_path, data, first[1], delimiter)
        columns = _parse_checked(data, first[1], delimiter, layout, skip_header, atol_labels)
        return columns if fits.result() else None


_CHECK_ALONGSIDE_FROM = 1 << 22
"""Files of at least this many bytes are checked for the fast path while pyarrow parses them."""


def _fits_fast_path(data: bytes, start: int, delimiter: str) -> bool:
    """Whether pyarrow splits ``data[start:]`` (``start`` at the first line's first field) on ``delimiter``
    into the fields the Python path would find: the whole file's delimiter is that one, and no field is
    empty."""
    return _fast_delimiter(data) == delimiter and not _has_empty_field(data, start, delimiter)


def _parse_checked(data: bytes, start: int, delimiter: str, layout: _Layout, skip_header: bool,
                   atol_labels: bool) -> _Columns | None:
    """pyarrow's parse of ``data[start:]`` split on ``delimiter`` into columns, or None where it fails or
    finds a value the Python path must judge (the whole file's checks are :func:`_fits_fast_path`)."""
    data = memoryview(data)[start:]  # without the blank lines before the first line (no copy)
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    names = [f"f{i}" for i in range(len(layout.fields))]
    value_type = pa.string() if atol_labels else pa.float64()
    types = {names[layout.query]: pa.dictionary(pa.int32(), pa.string()), names[layout.doc]: pa.string(),
             names[layout.value]: value_type}
    try:
        table = pcsv.read_csv(
            pa.BufferReader(pa.py_buffer(data)),
            read_options=pcsv.ReadOptions(column_names=names, skip_rows=int(skip_header), block_size=1 << 24),
            parse_options=pcsv.ParseOptions(
                delimiter=delimiter, quote_char=False, double_quote=False, escape_char=False, newlines_in_values=False
            ),
            convert_options=pcsv.ConvertOptions(
                column_types=types, include_columns=list(types), null_values=[], strings_can_be_null=False,
                quoted_strings_can_be_null=False
            ),
        ).unify_dictionaries()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, UnicodeDecodeError):
        return None
    finally:
        _let_go(data)
    qid = table.column(names[layout.query])
    doc = table.column(names[layout.doc])
    if qid.null_count or doc.null_count:
        return None
    if atol_labels:  # only plain integers here; anything else is read by atol on the Python path
        text = table.column(names[layout.value])
        if table.num_rows and not pc.all(pc.match_substring_regex(text, r"^-?[0-9]{1,15}$")).as_py():
            return None
        integer = numpy_values(pc.cast(text, pa.int64()))
        return _Columns(qid, doc, integer.astype(np.float64), None, integer)
    value = _own_floats(table.column(names[layout.value]))
    if np.isnan(value).any():
        return None
    if layout.kind == "label" and not (np.isfinite(value).all() and (np.abs(value) <= _LARGEST_LABEL).all()):
        return None
    return _Columns(qid, doc, value, None)


_LET_GO_SECONDS = 10.0


def _let_go(view: memoryview) -> None:
    """Return once nothing but ``view`` itself holds the bytes it shows: pyarrow's threaded CSV reader
    may return while a read-ahead task of its I/O threads still holds the buffer it was given, and lets
    it go later from that thread, taking the interpreter's lock to release a Python object. Should that
    happen as the interpreter exits, Python ends the thread from inside that release, a C++ destructor
    that may not throw: ``std::terminate``, "terminate called without an active exception", SIGABRT
    (issue 28). So the reader waits (microseconds, a few milliseconds at most on a busy machine) until
    pyarrow has let go: nothing of a file it read is left to pyarrow's threads when it returns. Bounded:
    after :data:`_LET_GO_SECONDS` it returns anyway (then, as before, pyarrow lets go when it does)."""
    import time

    deadline = time.monotonic() + _LET_GO_SECONDS
    pause = 1e-5
    while True:
        try:
            view.release()  # BufferError while an export of it (pyarrow's buffer) is alive
            return
        except BufferError:
            if time.monotonic() > deadline:
                return
            time.sleep(pause)
            pause = min(2 * pause, 1e-3)


def _own_floats(column: Any) -> np.ndarray:
    """The float64 values of a pyarrow column (without nulls) in one new, writable array, negative zeros
    made 0.0 (C compares them equal): its chunks are written straight into it, no concatenation then
    copy (each a column-sized array of fresh memory)."""
    chunks = column.chunks if hasattr(column, "chunks") else [column]
    out = np.empty(sum(len(chunk) for chunk in chunks), dtype=np.float64)
    at = 0
    for chunk in chunks:
        np.add(numpy_values(chunk), 0.0, out=out[at : at + len(chunk)])
        at += len(chunk)
    return out


_EMPTY_FIELD_BLOCK = 1 << 23


def _has_empty_field(data: bytes, start: int, delimiter: str, block_size: int = _EMPTY_FIELD_BLOCK) -> bool:
    """Whether a line of ``data[start:]`` (``start`` at a field) has an empty field, as pyarrow would split
    it on ``delimiter``: two delimiters in a row, or one at a line's start or end (a line of delimiters
    only included). The fast path's other checks leave no whitespace in ``data`` but ``delimiter``,
    ``\n`` and the ``\r`` of ``\r\n``. numpy looks a block at a time for two adjacent bytes <= 32 (three
    passes over the bytes: cheaper than converting the fields the measures do not read); only where
    it finds some (blank lines, CRLF) does it look at which bytes they are."""
    sep = ord(delimiter)
    if data.endswith(delimiter.encode()):
        return True
    for lo, hi in _blocks(len(data) - start, block_size):
        lo, hi = lo + start, min(hi + start + 1, len(data))  # one byte more: pairs across the boundary
        block = np.frombuffer(data, dtype=np.uint8, count=hi - lo, offset=lo)
        low = block <= 32
        pair = low[:-1] & low[1:]
        if not pair.any():
            continue
        at = np.flatnonzero(pair)
        left, right = block[at], block[at + 1]
        if (((left == sep) & ((right == sep) | (right == 10) | (right == 13))) | ((left == 10) & (right == sep))).any():
            return True
    return False


# ---------------------------------------------------------------------------------------------
# Fastest path: TREC runs read by the compiled core


_COMPILED_FROM = 0
"""TREC runs of at least this many bytes are read by the compiled core's reader (:func:`_compiled_run`) when
the core is built (:func:`bm25lab.engine.core.kernels`): every run, as the core loads in a millisecond."""
_THREADED_FROM = 1 << 22
"""Runs of at least this many bytes are read in two chunks on two threads (where two cores are usable)."""
_CHUNK_LIMIT = 1 << 30  # bytes of a chunk at most: its document ids' offsets stay int32
_SLOW_SCORES = 1 << 12  # scores Python's float may read per chunk, plus 1 in 64 rows, else the usual path
_SEEN_DOCUMENTS = 1 << 16  # the reader's hash set of a segment's documents: segments of up to 32k rows checked


@dataclass(frozen=True)
class _Chunk:
    """One chunk's columns as the core's ``read_trec_run`` left them: its rows' query codes, hashes, scores and
    document ids' offsets (from 0) at ``base`` in the arrays shared by all chunks, the ``used`` bytes of its
    document ids at ``byte_base`` in the bytes shared by all, its query ids in first-appearance order, how many
    segments (runs of rows of one query) it has, and whether each query id is one segment which the reader
    checked for repeated documents."""

    base: int
    rows: int
    byte_base: int
    used: int
    qids: list[str]
    segments: int
    grouped: bool
    ranked: bool  # each segment's rows in the tie-rule order


def _compiled_run(box: list[Any], name: str, path: str | Path) -> Run | None:
    """The run of the TREC run bytes ``box[0]``, read by the compiled core's reader (``runreader.c``) on
    line-aligned chunks, or None when the core is not built or the file needs the usual readers (any line
    they would refuse, a repeated (query, document): they name the line).

    The same run as :func:`_parse_and_build` gives: the query ids in first-appearance order, the same
    document ids, hashes (:func:`~bm25lab.engine.columns.string_hashes`'s) and scores (those of Python's
    ``float``: read exactly by the core, or by ``float`` itself), then :meth:`Run.from_encoded`; duplicates
    are looked for by the core within each segment of a query's rows, so a run listing each query's
    documents together (as every system writes them) needs no sort of its (query, document) keys. The bytes
    are let go (``box`` emptied) before the run is built, as :func:`_parse_and_build` does."""
    from ..engine.core import kernels

    core = kernels()
    if core is None:
        return None
    read = _compiled_chunks(box[0], core)
    if read is None:
        return None
    chunks, codes, hashes, scores, docs = read
    box.clear()
    codes, qids, single = _global_codes(chunks, codes)
    checked = single and all(chunk.grouped for chunk in chunks)
    ranked = single and all(chunk.ranked for chunk in chunks) and _ranked_across_chunks(chunks, codes, scores)
    if checked and _repeated_across_chunks(chunks, codes, docs, hashes, len(qids)):
        box.append(_load(path))
        return None
    del chunks
    if not (checked and ranked):  # the whole run ordered by the core (a query's rows in several places)
        ordered = _ordered(core, codes, len(qids), docs, hashes, scores)
        if ordered is None:  # a repeated document: the usual readers name its line
            box.append(_load(path))
            return None
        if ordered:
            codes, docs, hashes, scores = ordered
            checked = ranked = True
    try:
        return Run.from_encoded(codes, qids, docs, hashes, scores, name=name, source=path, unique=checked,
                                ranked=ranked)
    except InputError:  # a repeated document: the usual readers name its line
        box.append(_load(path))
        return None


def _compiled_qrels(data: Any, path: str | Path, by_atol: bool) -> Qrels | None:
    """TREC qrels read by the compiled core's reader (``read_trec_qrels``), or None when the core is not built
    or the file needs the usual readers (a line they would refuse, conflicting judgments: they name the line).
    The same qrels as :func:`_parse_and_build` gives: the query ids in first-appearance order, the document ids
    and their hashes, the grades as ``float`` reads them, the labels as trec_eval's rules read the text
    (``by_atol``: C's ``atol``, else the grade truncated)."""
    from ..engine.core import kernels

    core = kernels()
    if core is None or len(data) >= 2**31:
        return None
    array = np.frombuffer(data, dtype=np.uint8)
    room = _count_lines(array, 0, array.size) + 1
    codes, hashes, grades, offsets = _row_columns(room)
    labels = np.empty(room, dtype=np.int64)
    doc_bytes = np.empty(array.size, dtype=np.uint8)
    status, rows, qids = core.read_trec_qrels(array, 0, array.size, codes, offsets, doc_bytes, hashes, grades, labels)
    if status != 0:
        return None
    docs = Strings(offsets[: rows + 1], doc_bytes[: int(offsets[rows])])
    grades = grades[:rows]
    integer = labels[:rows] if by_atol else np.trunc(grades).astype(np.int64)
    try:
        return Qrels.from_encoded(codes[:rows], tuple(qids), docs, hashes[:rows], grades, integer, source=path)
    except InputError:  # conflicting judgments: the usual readers name the line
        return None


def _ordered(core: Any, codes: np.ndarray, queries: int, docs: Strings, hashes: np.ndarray,
             scores: np.ndarray) -> tuple[np.ndarray, Strings, np.ndarray, np.ndarray] | tuple[()] | None:
    """The columns of a run put in the tie-rule order by the core (``order_run``): query codes, document ids,
    hashes and scores; None when a query lists a document twice; ``()`` when there is nothing to order."""
    if len(docs) == 0:
        return ()
    order = np.empty(len(docs), dtype=np.int64)
    if core.order_run(codes, queries, scores, hashes, docs.offsets, docs.data, order):
        return None
    counts = np.bincount(codes, minlength=queries)
    ordered_codes = np.repeat(np.arange(queries, dtype=np.int32), counts)
    return ordered_codes, docs.take(order), hashes[order], scores[order]


def _compiled_chunks(data: Any, core: Any) -> tuple[list[_Chunk], np.ndarray, np.ndarray, np.ndarray, Strings] | None:
    """The chunks of ``data`` read by the core, two at a time on threads when the file is large, with the query
    codes, hashes, scores and document ids of all their rows, in order; None when a chunk is refused.

    Each chunk's lines are counted first (numpy), so that every chunk writes its rows straight into the arrays
    of the whole file, where they belong when no line is blank or a comment (else the later chunks' rows are
    moved up, within memory already written): fresh memory, which the kernel zeroes page by page, costs as
    much as the parsing on a busy machine; rows written at a bound and then moved would touch a third more.
    The document ids' bytes likewise: each chunk writes them at its own place in one array (its lines' bytes
    bound them), later chunks' moved up behind the first's."""
    array = np.frombuffer(data, dtype=np.uint8)
    spans = list(itertools.pairwise(_line_chunks(data, _pieces(len(data)))))

    def count(span: tuple[int, int]) -> int:
        return _count_lines(array, *span) + 1  # a bound on the span's rows

    def read(k: int) -> _Chunk | None:
        window = slice(bases[k], bases[k + 1])
        lo, hi = spans[k]
        return _read_chunk(core, array, data, lo, hi, bases[k], codes[window], hashes[window], scores[window],
                           offsets[bases[k] : bases[k + 1] + 1], doc_bytes[lo:hi])

    doc_bytes = np.empty(len(data), dtype=np.uint8)
    if len(spans) == 1:
        bases = [0, count(spans[0])]
        codes, hashes, scores, offsets = _row_columns(bases[-1])
        chunks = [read(0)]
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(2) as pool:  # numpy and the core let go of the interpreter
            bases = np.concatenate(([0], np.cumsum(list(pool.map(count, spans))))).tolist()
            codes, hashes, scores, offsets = _row_columns(bases[-1])
            chunks = list(pool.map(read, range(len(spans))))
    if any(chunk is None for chunk in chunks):
        return None
    rows = used = 0
    for chunk in chunks:  # each chunk's rows moved to follow the previous chunk's
        assert chunk is not None
        if chunk.base != rows:
            for column in (codes, hashes, scores):
                column[rows : rows + chunk.rows] = column[chunk.base : chunk.base + chunk.rows]
        if used + chunk.used >= 2**31 and offsets.dtype == np.int32:  # beyond int32 offsets
            offsets = offsets.astype(np.int64)
        if chunk.base != rows or used:
            offsets[rows + 1 : rows + chunk.rows + 1] = offsets[chunk.base + 1 : chunk.base + chunk.rows + 1] + used
        if chunk.byte_base != used:
            doc_bytes[used : used + chunk.used] = doc_bytes[chunk.byte_base : chunk.byte_base + chunk.used]
        rows, used = rows + chunk.rows, used + chunk.used
    offsets[0] = 0
    docs = Strings(offsets[: rows + 1], doc_bytes[:used])
    return chunks, codes[:rows], hashes[:rows], scores[:rows], docs  # type: ignore[return-value]


def _pieces(size: int) -> int:
    """How many chunks a run of ``size`` bytes is read in: one below :data:`_THREADED_FROM`, else two (on one
    core the two threads take turns at no cost: the work is the same), and enough to keep each within
    :data:`_CHUNK_LIMIT`."""
    return max(1 if size < _THREADED_FROM else 2, -(-size // _CHUNK_LIMIT))


def _row_columns(rows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The query codes, hashes, scores and document ids' offsets (one more) of ``rows`` rows, uninitialised."""
    return (np.empty(rows, dtype=np.int32), np.empty(rows, dtype=np.uint64), np.empty(rows, dtype=np.float64),
            np.empty(rows + 1, dtype=np.int32))


_COUNT_BLOCK = 1 << 20


def _count_lines(array: np.ndarray, lo: int, hi: int) -> int:
    """How many ``\\n`` bytes ``array[lo:hi]`` holds (with one more, a bound on its rows), counted by
    numpy a block at a time (no array of the chunk's size; numpy lets go of the interpreter)."""
    found = np.empty(min(_COUNT_BLOCK, max(hi - lo, 0)), dtype=bool)
    lines = 0
    for start in range(lo, hi, _COUNT_BLOCK):
        block = array[start : min(hi, start + _COUNT_BLOCK)]
        lines += int(np.count_nonzero(np.equal(block, 10, out=found[: block.size])))
    return lines


def _line_chunks(data: Any, pieces: int) -> list[int]:
    """Bounds ``0 = b0 < b1 < ... = len(data)`` of about ``pieces`` chunks, each after a ``\\n``, where the
    query id changes when it does within a few thousand lines (:func:`_next_query`): each query's rows in one
    chunk, whose reader can then order them."""
    bounds = [0]
    for k in range(1, pieces):
        at = data.find(b"\n", max(bounds[-1], k * len(data) // pieces)) + 1
        if at <= 0 or at >= len(data):
            break
        at = _next_query(data, at)
        if at >= len(data):
            break
        if at > bounds[-1]:
            bounds.append(at)
    return [*bounds, len(data)] if len(data) > bounds[-1] or len(bounds) == 1 else bounds


_QUERY_LINES = 1 << 14  # lines :func:`_next_query` looks at, at most


def _next_query(data: Any, at: int) -> int:
    """The start of the first line from ``at`` (a line's start) on whose query id is not that of the line
    before ``at``, looking at :data:`_QUERY_LINES` lines at most (else ``at``)."""
    before = data[data.rfind(b"\n", 0, at - 1) + 1 : at].split(None, 1)
    if not before:
        return at
    prefix = before[0]
    line = at
    for _ in range(_QUERY_LINES):
        head = data[line : line + len(prefix) + 1]
        if len(head) <= len(prefix) or head[: len(prefix)] != prefix or head[-1:] not in (b" ", b"\t"):
            return line
        line = data.find(b"\n", line) + 1
        if line <= 0:
            return len(data)
    return at


def _read_chunk(core: Any, array: np.ndarray, data: Any, lo: int, hi: int, base: int, codes: np.ndarray,
                hashes: np.ndarray, scores: np.ndarray, offsets: np.ndarray, doc_bytes: np.ndarray) -> _Chunk | None:
    """One chunk, ``data[lo:hi]``, read by the core into ``codes``, ``hashes``, ``scores`` and the document ids'
    ``offsets`` and ``doc_bytes`` (at ``lo`` in the bytes of all chunks), the scores it leaves to Python read
    by ``float`` (:func:`_score`); None when the core refused the chunk or a score is not one the usual readers
    accept."""
    room = _SLOW_SCORES + codes.size // 64
    slow = tuple(np.empty(room, dtype=np.int64) for _ in range(3))
    status, rows, n_slow, segments, qids, checked, ranked = core.read_trec_run(
        array, lo, hi, codes, offsets, doc_bytes, hashes, scores, *slow, _SEEN_DOCUMENTS)
    if status != 0:
        return None
    for row, start, end in zip(*(part[:n_slow].tolist() for part in slow)):
        try:
            scores[row] = _score(data[start:end], "", None) + 0.0  # -0.0 -> 0.0, as C compares them equal
        except InputError:
            return None
    return _Chunk(base, rows, lo, int(offsets[rows]), qids, segments, checked and segments == len(qids),
                  ranked and segments == len(qids))


def _global_codes(chunks: list[_Chunk], codes: np.ndarray) -> tuple[np.ndarray, tuple[str, ...], bool]:
    """The rows' query codes in the whole file's first-appearance order (``codes`` renumbered in place),
    the query ids so ordered, and whether each query's rows are one segment in the whole file (then the
    kernel's checks for repeated documents and its tie-rule order cover the whole file but for the
    segments two chunks share)."""
    position: dict[str, int] = {}
    at = 0
    segments = 0
    for k, chunk in enumerate(chunks):
        local = np.array([position.setdefault(qid, len(position)) for qid in chunk.qids], dtype=np.int32)
        part = codes[at : at + chunk.rows]
        if local.size and not (local == np.arange(local.size, dtype=np.int32)).all():
            np.take(local, part, out=part)
        segments += chunk.segments - (k > 0 and chunk.rows > 0 and at > 0 and part[0] == codes[at - 1])
        at += chunk.rows
    return codes, tuple(position), segments == len(position)


def _ranked_across_chunks(chunks: list[_Chunk], codes: np.ndarray, scores: np.ndarray) -> bool:
    """Whether the rows of every query whose segment two chunks share stay in rank order across the
    chunks' boundary, with no tie there (each kernel ordered its own part's ties)."""
    at = 0
    for chunk in chunks[:-1]:
        at += chunk.rows
        if 0 < at < codes.size and codes[at] == codes[at - 1] and not scores[at] < scores[at - 1]:
            return False
    return True


def _repeated_across_chunks(chunks: list[_Chunk], codes: np.ndarray, docs: Strings, hashes: np.ndarray,
                            queries: int) -> bool:
    """Whether a document repeats within a query whose segment two chunks share (the kernel saw each
    half apart)."""
    from .ranking import _repeated_pairs

    at = 0
    for chunk in chunks[:-1]:
        at += chunk.rows
        if at == 0 or at >= codes.size or codes[at] != codes[at - 1]:
            continue
        lo, hi = _segment_around(codes, at)
        if _repeated_pairs(codes[lo:hi], docs.slice(lo, hi - lo), hashes[lo:hi], queries):  # slices: no copy
            return True
    return False


def _segment_around(codes: np.ndarray, at: int, window: int = 1 << 12) -> tuple[int, int]:
    """The bounds of the segment (consecutive rows of one query) holding rows ``at - 1`` and ``at``, found
    looking at windows of rows doubling in size outward from ``at`` (a segment's rows, not a chunk's)."""
    code = codes[at]
    lo, hi, step = at, at, window
    while lo > 0:
        other = np.flatnonzero(codes[max(0, lo - step) : lo] != code)
        if other.size:
            lo = max(0, lo - step) + int(other[-1]) + 1
            break
        lo, step = max(0, lo - step), 2 * step
    step = window
    while hi < codes.size:
        other = np.flatnonzero(codes[hi : hi + step] != code)
        if other.size:
            hi += int(other[0])
            break
        hi, step = min(codes.size, hi + step), 2 * step
    return lo, hi


# ---------------------------------------------------------------------------------------------
# Slow path: Python, line by line


def _parse_slow(data: bytes, layout: _Layout, path: str | Path, skip_header: bool,
                atol_labels: bool = False) -> _Columns:
    """Columns parsed line by line; raises :class:`InputError` at the first malformed line."""
    qids: list[str] = []
    docs: list[str] = []
    values: list[Any] = []
    integers: list[int] = []
    lines: list[int] = []
    expected = len(layout.fields)
    convert = _score if layout.kind == "score" else _label
    header_pending = skip_header
    for number, start, end in _content_lines(data):
        fields = data[start:end].split()
        if header_pending:
            header_pending = False
            continue
        if len(fields) < expected or (len(fields) > expected and not layout.more_allowed):
            raise InputError(f"expected {layout.describe()}, found {len(fields)}", path, number)
        qids.append(_text(fields[layout.query], "query id", path, number))
        docs.append(_text(fields[layout.doc], "document id", path, number))
        values.append(convert(fields[layout.value], path, number))
        if atol_labels:
            integers.append(atol(fields[layout.value]))
        lines.append(number)
    integer = np.array(integers, dtype=np.int64) if atol_labels else None
    return _Columns(qids, docs, np.array(values, dtype=np.float64), np.array(lines, dtype=np.int64), integer)


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


def _label(field: bytes, path: str | Path, line: int) -> float:
    """A relevance grade: a finite number (``2``, ``2.0``, ``4.5``) of magnitude at most 2**53."""
    try:
        if b"_" in field:
            raise ValueError
        value = float(field)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and abs(value) <= _LARGEST_LABEL):
        raise InputError(f"relevance {field.decode('utf-8', 'replace')!r} is not a number", path, line)
    return value


# ---------------------------------------------------------------------------------------------
# Writer


def write_run(run: Run | Mapping[str, Any], path_or_file: str | Path | IO[Any], tag: str = "bm25lab", *,
              format: str = "trec") -> None:
    """Write a run: TREC ``qid Q0 docid rank score tag`` lines, ranks 1..n in tie-rule order (the
    default), or in another of :data:`RUN_WRITERS`: ``msmarco`` (``qid<TAB>docid<TAB>rank``) or
    ``ranx`` (JSON ``{qid: {docid: score}}``, documents in rank order).

    ``run`` is a :class:`~bm25lab.evaluation.ranking.Run` or ``{qid: [(docid, score), ...]}``,
    ``{qid: {docid: score}}`` or ``{qid: [Hit, ...]}`` (objects with ``doc_id`` and ``score``).
    Queries keep their order; scores are written in the shortest decimal form that reads back to
    the same float64. A path ending in ``.gz`` is gzip-compressed; a file object gets text or bytes
    according to its kind. Ids and the tag must be non-empty and free of whitespace.

    A path is written atomically: to a temporary file beside it, then renamed over it, so that a
    reader (or a failure half-way) never sees half a run and an existing file is replaced whole.
    """
    if format not in RUN_WRITERS:
        raise ParameterError(f"unknown run format {format!r}; known: {', '.join(RUN_WRITERS)}")
    run = Run.from_dict(run)
    _check_token(tag, "run tag")
    payload = RUN_WRITERS[format](run, tag)
    if isinstance(path_or_file, (str, Path)):
        target = Path(path_or_file)
        _write_atomically(target, gzip.compress(payload, mtime=0) if target.suffix == ".gz" else payload)
    elif isinstance(path_or_file, io.TextIOBase) or hasattr(path_or_file, "encoding"):
        path_or_file.write(bytes(payload).decode("utf-8"))
    else:
        path_or_file.write(payload)


def _write_atomically(target: Path, payload: bytes | memoryview) -> None:
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


def _check_token(value: str, what: str, starts_line: bool = False) -> None:
    """An id or tag a run file can hold: not empty, no whitespace, and (``starts_line``: the first field of
    a line) not starting with ``#``, which would make its lines comments to the readers."""
    if not value or any(ch in value for ch in " \t\n\r\x0b\x0c"):
        raise InputError(f"{what} {value!r} is empty or contains whitespace; a TREC run cannot hold it")
    if starts_line and value.startswith("#"):
        raise InputError(f"{what} {value!r} starts with #: its lines would read as comments (the readers skip them, "
                         f"as trec_eval does); a TREC or MS MARCO run cannot hold it")


def _run_bytes(run: Run, tag: str, *, msmarco: bool = False) -> bytes | memoryview:
    """The run's TREC (or MS MARCO) lines as UTF-8 bytes, built column-wise by pyarrow: each query's
    line start (``qid Q0``) made once and taken for its rows, each line's fields joined by one kernel
    call, the lines then taken as the one buffer they fill. Any id without whitespace is written as it
    is (quotes included: a CSV writer quotes or refuses them); scores are pyarrow's shortest decimal that
    reads back to the same float64."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for qid in run.qids:
        _check_token(qid, "query id", starts_line=True)
    if _bad_id(run.doc_ids):
        bad = pc.or_(pc.match_substring_regex(run.doc_ids, r"[ \t\n\r\x0b\x0c]"), pc.equal(pc.utf8_length(run.doc_ids), 0))
        _check_token(run.doc_ids.filter(bad)[0].as_py(), "document id")
    counts = np.diff(run.offsets)
    seg = pa.array(np.repeat(np.arange(run.num_queries, dtype=np.int64), counts))
    rank = np.arange(len(run), dtype=np.int64) - np.repeat(run.offsets[:-1], counts) + 1
    text = pa.large_string()
    glue = pa.scalar("\t" if msmarco else " ", text)
    ranks = pc.cast(pa.array(rank), text)
    if msmarco:  # qid<TAB>docid<TAB>rank
        lines = pc.binary_join_element_wise(pa.array(run.qids, type=text).take(seg), pc.cast(run.doc_ids, text),
                                            pc.binary_join_element_wise(ranks, pa.scalar("\n", text),
                                                                        pa.scalar("", text)), glue)
    else:  # qid Q0 docid rank score tag
        starts = pa.array([f"{qid} Q0" for qid in run.qids], type=text).take(seg)
        lines = pc.binary_join_element_wise(starts, pc.cast(run.doc_ids, text), ranks,
                                            pc.cast(pa.array(run.score, type=pa.float64()), text),
                                            pa.scalar(f"{tag}\n", text), glue)
    chunks = getattr(lines, "chunks", [lines])
    return _string_bytes(chunks[0], copy=False) if len(chunks) == 1 else b"".join(map(_string_bytes, chunks))


def _bad_id(ids: Any) -> bool:
    """Whether an id of the pyarrow string array ``ids`` is empty or holds whitespace (C's ``isspace``:
    what splits a TREC line): its lengths, then its characters' bytes at once, by numpy (a regular
    expression per id took several times as long)."""
    import pyarrow.compute as pc

    for chunk in getattr(ids, "chunks", [ids]):
        if len(chunk) and pc.min(pc.binary_length(chunk)).as_py() == 0:
            return True
        values = np.frombuffer(_string_bytes(chunk, copy=False), dtype=np.uint8)
        if ((values - np.uint8(9) <= 4) | (values == 32)).any():
            return True
    return False


def _string_bytes(strings: Any, copy: bool = True) -> bytes | memoryview:
    """The characters of a pyarrow string or large string array's values one after the other: the used
    part of its data buffer, as its offsets bound it (without ``copy``, a view of that buffer)."""
    import pyarrow as pa

    if not len(strings):
        return b""
    width = 8 if pa.types.is_large_string(strings.type) or pa.types.is_large_binary(strings.type) else 4
    offsets = np.frombuffer(strings.buffers()[1], dtype=np.int64 if width == 8 else np.int32, count=len(strings) + 1,
                            offset=width * strings.offset)
    used = strings.buffers()[2][int(offsets[0]) : int(offsets[-1])]
    return used.to_pybytes() if copy else memoryview(used)


def _json_run_bytes(run: Run, tag: str) -> bytes:
    """The run as ranx's JSON ``{qid: {docid: score}}``; scores in their shortest exact form."""
    for qid in run.qids:
        _check_token(qid, "query id")
    return (json.dumps(run.to_dict(), ensure_ascii=False) + "\n").encode("utf-8")


RUN_WRITERS = {
    "trec": _run_bytes,
    "msmarco": lambda run, tag: _run_bytes(run, tag, msmarco=True),
    "ranx": _json_run_bytes,
}
"""Run formats :func:`write_run` writes (``bm25lab run --run-format``)."""
