"""Tables and lines as rich prints them where it prints plain text (a pipe, a file, a test's runner), without
importing rich: rich's import is 0.02-0.05 s of CPU, a sixth of a small ``bm25lab evaluate``'s whole process.

rich decides how a stream is printed (styled on a terminal, plain elsewhere) and how wide it is
(:func:`plain_width` follows its rules: ``TTY_COMPATIBLE``, ``FORCE_COLOR``, ``COLUMNS``, the standard
streams' terminal size, else 80 columns). Where it would print plain text in UTF-8, a :class:`Sheet` (a rich
``Table`` with the command line's settings: heavy-head box, padding 1, title centred, cells wrapped at spaces
and folded) is laid out here as rich lays it out, line for line (``rich.table.Table._calculate_column_widths``,
``rich.text.Text.wrap``, ``rich._wrap.divide_line``, ``rich.containers.Lines.justify``), and a line as
``Console.print`` prints it. Only text rich prints as it is written goes this way: lines of printable
characters one cell wide (below U+0300, and a few marks the tables use), no ``[`` (markup) and no ``:name:``
(emoji codes); anything else, and any terminal, is rich's (:func:`sheet_lines` and :func:`line_text` return
None). tests/cli/test_plain.py compares the two on random tables.
"""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from typing import IO, NamedTuple, Optional, Sequence, Union

__all__ = ["Field", "Marked", "Sheet", "Span", "cell_length", "line_text", "plain_width", "sheet_lines", "text_lines",
           "write"]

_EMOJI = re.compile(r":\S*?:")  # the form of rich's emoji codes (any such text goes to rich)
_NARROW = frozenset("…▲▼–—‘’“”•")  # one cell in rich, beside the characters below U+0300
_WORD = re.compile(r"\s*\S+\s*")  # rich._wrap.re_word
_TRAILING_SPACE = re.compile(r"\s+$")
_PADDING = 2  # a cell's padding, one space each side
_BOX = {"top": "┏━┳┓", "head": "┃┃┃", "head_row": "┡━╇┩", "body": "│││", "bottom": "└─┴┘"}  # rich.box.HEAVY_HEAD


@dataclass(frozen=True)
class Field:
    """A column as rich's ``Table.add_column`` takes it (overflow "fold")."""

    header: str
    justify: str = "left"
    no_wrap: bool = False
    min_width: Optional[int] = None
    width: Optional[int] = None


class Span(NamedTuple):
    """Characters ``start`` to ``end`` (excluded) of a text."""

    start: int
    end: int


@dataclass(frozen=True)
class Marked:
    """A cell's text printed as it is written (a rich ``Text``: no markup, no emoji codes), its ``spans``
    shown in ``style`` on a terminal (the query's terms in a snippet)."""

    plain: str
    spans: tuple[Span, ...] = ()
    style: str = "bold yellow"

    def rich(self) -> object:
        """The rich ``Text`` of this cell."""
        from rich.text import Text

        text = Text(self.plain)
        for span in self.spans:
            text.stylize(self.style, span.start, span.end)
        return text


Cell = Union[str, Marked]


@dataclass
class Sheet:
    """A table as rich's ``Table(title=...)`` draws it: a title, columns and rows of cells (text, which rich
    reads as markup, or :class:`Marked` text)."""

    title: str
    fields: list[Field]
    rows: list[list[Cell]] = field(default_factory=list)

    def rich(self) -> object:
        """The rich ``Table`` of this sheet."""
        from rich.table import Table

        table = Table(title=self.title or None)
        for column in self.fields:
            table.add_column(column.header, justify=column.justify, no_wrap=column.no_wrap,  # type: ignore[arg-type]
                             min_width=column.min_width, width=column.width, overflow="fold")
        for row in self.rows:
            table.add_row(*(cell.rich() if isinstance(cell, Marked) else cell for cell in row))
        return table


# ---------------------------------------------------------------------------------------------
# Where rich would print plain text


def plain_width(stderr: bool = False) -> int | None:
    """The width rich gives a stream (stdout, or stderr) when it would print plain text on it, in UTF-8; None
    when it would style it (a terminal, or ``TTY_COMPATIBLE=1``, ``FORCE_COLOR`` asking for one), draw in
    another encoding, or run in a notebook: then rich must print."""
    stream = sys.stderr if stderr else sys.stdout
    if _styled(stream) or not (getattr(stream, "encoding", None) or "utf-8").lower().startswith("utf"):
        return None
    import builtins

    if hasattr(builtins, "get_ipython"):  # IPython or Jupyter: rich's own rules
        return None
    columns = os.environ.get("COLUMNS")
    if columns is not None and columns.isdigit():
        return int(columns)
    for descriptor in _standard_descriptors():
        try:
            return os.get_terminal_size(descriptor).columns or 80
        except (AttributeError, ValueError, OSError):
            continue
    return 80


def _standard_descriptors() -> list[int]:
    """The descriptors of the process's standard streams, which rich asks for a terminal's size."""
    found = []
    for stream, usual in ((sys.__stdin__, 0), (sys.__stdout__, 1), (sys.__stderr__, 2)):
        try:
            found.append(stream.fileno())  # type: ignore[union-attr]
        except Exception:  # no such stream, or not a file
            found.append(usual)
    return found


def _styled(stream: IO[str]) -> bool:
    """rich's ``Console.is_terminal``."""
    compatible = os.environ.get("TTY_COMPATIBLE", "")
    if compatible in ("0", "1"):
        return compatible == "1"
    force = os.environ.get("FORCE_COLOR")
    if force is not None:
        return force != ""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _one_cell(line: str) -> bool:
    """Whether every character of ``line`` is printable and one cell wide in rich."""
    return line.isprintable() and (line.isascii() or all(ch < "\u0300" or ch in _NARROW for ch in line))


def cell_length(line: str) -> int:
    """rich.cells.cell_len of a line: its length where each character is one cell (without importing rich,
    whose cell tables cost 0.02 s), else rich's count."""
    if _one_cell(line):
        return len(line)
    from rich.cells import cell_len

    return cell_len(line)


def _plain(text: str) -> bool:
    """Whether rich prints ``text`` as written (lines of printable, one-cell characters; no markup, no emoji)."""
    if "[" in text or _EMOJI.search(text) is not None:
        return False
    return all(_one_cell(line) for line in text.split("\n"))


def write(text: str, stderr: bool = False) -> None:
    """``text`` on the stream, flushed (as rich flushes each print)."""
    stream = sys.stderr if stderr else sys.stdout
    stream.write(text)
    stream.flush()


def line_text(message: str) -> str | None:
    """What ``Console.print(message, soft_wrap=True)`` writes (the message whole, and a newline), or None when
    rich must print it (markup, emoji codes, control characters)."""
    if "[" in message or _EMOJI.search(message) is not None:
        return None
    if not all(line.isprintable() for line in message.split("\n")):
        return None
    return message + "\n"


# ---------------------------------------------------------------------------------------------
# Text as rich wraps it (rich.text.Text.wrap, plain text of one-cell characters)


def _divide_line(text: str, width: int) -> list[int]:
    """rich._wrap.divide_line with fold: the offsets to break ``text`` at to fit ``width``."""
    breaks: list[int] = []
    offset = 0
    for match in _WORD.finditer(text):
        start, word = match.start(), match.group(0)
        length = len(word.rstrip())
        if width - offset >= length:
            offset += len(word)
        elif length > width:  # folded over lines of ``width``
            pieces = [word[i : i + width] for i in range(0, len(word), width)]
            for n, piece in enumerate(pieces):
                if start:
                    breaks.append(start)
                if n == len(pieces) - 1:
                    offset = len(piece)
                else:
                    start += len(piece)
        elif offset and start:
            breaks.append(start)
            offset = len(word)
    return breaks


def _sized(text: str, width: int) -> str:
    """rich.cells.set_cell_size: cropped or padded with spaces to ``width``."""
    return text[:width] if len(text) >= width else text + " " * (width - len(text))


def _justified(line: str, width: int, justify: str) -> str:
    """rich.containers.Lines.justify of one line, then Text.truncate (fold: a crop)."""
    if justify == "left":
        line = _sized(line, width)
    elif justify in ("center", "right"):
        line = line.rstrip()[:width]
        left = (width - len(line)) // 2 if justify == "center" else width - len(line)
        line = " " * max(left, 0) + line
        if justify == "center":
            line += " " * max(width - len(line), 0)
    return line[:width]


def _wrapped(text: str, width: int, justify: str, no_wrap: bool = False) -> list[str]:
    """rich.text.Text.wrap of plain one-cell text, overflow "fold"."""
    lines: list[str] = []
    for line in text.split("\n"):
        if no_wrap:
            pieces = [line]
        else:
            bounds = [0, *_divide_line(line, width), len(line)]
            pieces = [line[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
            pieces = [_rstrip_end(piece, width) for piece in pieces]
        lines.extend(_justified(piece, width, justify) for piece in pieces)
    return lines


def _rstrip_end(text: str, size: int) -> str:
    """rich.text.Text.rstrip_end: trailing whitespace beyond ``size`` removed."""
    if len(text) <= size:
        return text
    match = _TRAILING_SPACE.search(text)
    return text if match is None else text[: len(text) - min(len(match.group(0)), len(text) - size)]


# ---------------------------------------------------------------------------------------------
# Column widths (rich.table.Table._calculate_column_widths, without expand or a table width)


def _text_measure(text: str) -> tuple[int, int]:
    """rich.text.Text.__rich_measure__: the longest word, the longest line."""
    lines = text.splitlines()
    longest = max((len(line) for line in lines), default=0)
    words = text.split()
    return (max(len(word) for word in words) if words else longest), longest


def _normalize(low: int, high: int) -> tuple[int, int]:
    low = min(max(0, low), high)
    return max(0, low), max(0, max(low, high))


def _cell_measure(text: str, width: int) -> tuple[int, int]:
    """Measurement.get of a cell (a Padding of 1 each side around the text) at ``width``."""
    if width < 1:
        return 0, 0
    if width - _PADDING < 1:
        low, high = width, width
    else:
        low, high = _normalize(*_text_measure(text))
        low, high = min(low, width), min(high, width)
        low, high = (0, 0) if high < 1 else _normalize(low, high)
        low, high = min(low + _PADDING, width), min(high + _PADDING, width)
    low, high = _normalize(low, high)
    low, high = min(low, width), min(high, width)
    return (0, 0) if high < 1 else _normalize(low, high)


def _column_measure(column: Field, cells: Sequence[str], width: int) -> tuple[int, int]:
    """rich.table.Table._measure_column."""
    if width < 1:
        return 0, 0
    if column.width is not None:
        return min(column.width + _PADDING, width), min(column.width + _PADDING, width)
    measures = [_cell_measure(text, width) for text in (column.header, *cells)]
    low, high = max(m[0] for m in measures), max(m[1] for m in measures)
    low, high = min(low, width), min(high, width)
    if column.min_width is not None:
        least = max(0, column.min_width + _PADDING)
        low, high = max(low, least), max(high, least)
    return low, high


def _ratio_reduce(total: int, ratios: list[int], maximums: list[int], values: list[int]) -> list[int]:
    """rich._ratio.ratio_reduce."""
    ratios = [ratio if most else 0 for ratio, most in zip(ratios, maximums)]
    total_ratio = sum(ratios)
    if not total_ratio:
        return values[:]
    remaining = total
    result = []
    for ratio, most, value in zip(ratios, maximums, values):
        if ratio and total_ratio > 0:
            given = min(most, round(ratio * remaining / total_ratio))
            result.append(value - given)
            remaining -= given
            total_ratio -= ratio
        else:
            result.append(value)
    return result


def _collapse(widths: list[int], wrapable: list[bool], most: int) -> list[int]:
    """rich.table.Table._collapse_widths."""
    total = sum(widths)
    excess = total - most
    if any(wrapable):
        while total and excess > 0:
            widest = max(w for w, can in zip(widths, wrapable) if can)
            second = max(w if can and w != widest else 0 for w, can in zip(widths, wrapable))
            difference = widest - second
            ratios = [1 if (w == widest and can) else 0 for w, can in zip(widths, wrapable)]
            if not any(ratios) or not difference:
                break
            widths = _ratio_reduce(excess, ratios, [min(excess, difference)] * len(widths), widths)
            total = sum(widths)
            excess = total - most
    return widths


def _widths(sheet: Sheet, most: int) -> list[int]:
    """rich.table.Table._calculate_column_widths: each column's width, padding included."""
    cells = [[row[i] for row in sheet.rows] for i in range(len(sheet.fields))]
    most = max(0, most)
    widths = [_column_measure(column, part, most)[1] or 1 for column, part in zip(sheet.fields, cells)]
    if sum(widths) > most:
        widths = _collapse(widths, [c.width is None and not c.no_wrap for c in sheet.fields], most)
        if sum(widths) > most:
            widths = _ratio_reduce(sum(widths) - most, [1] * len(widths), widths, widths)
        widths = [_column_measure(column, part, max(0, width))[1] or 0
                  for column, part, width in zip(sheet.fields, cells, widths)]
    return widths


# ---------------------------------------------------------------------------------------------
# A whole sheet


def _cell(text: str, width: int, column: Field) -> list[str]:
    """A cell's lines: its text wrapped at ``width`` less the padding, each line padded to ``width``."""
    inner = width - _PADDING
    return [" " + _sized(line, inner) + " " for line in _wrapped(text, inner, column.justify, column.no_wrap)]


def _row(cells: list[list[str]], widths: list[int], bottom: bool, edges: str) -> list[str]:
    """One row's lines: its cells aligned (to the top, or the bottom for the header), bordered."""
    height = max(len(cell) for cell in cells)
    lines = []
    shaped = [[" " * w] * (height - len(cell)) + cell if bottom else cell + [" " * w] * (height - len(cell))
              for cell, w in zip(cells, widths)]
    for n in range(height):
        lines.append(edges[0] + edges[1].join(cell[n] for cell in shaped) + edges[2])
    return lines


def sheet_lines(sheet: Sheet, width: int) -> list[str] | None:
    """The lines ``Console(width=width).print(sheet.rich())`` writes where rich prints plain text, or None when
    rich must lay the sheet out (text it would not print as written; columns too narrow for a character)."""
    texts = [sheet.title, *(c.header for c in sheet.fields)]
    cells = [cell for row in sheet.rows for cell in row]
    if not sheet.fields or not all(_plain(text) for text in [*texts, *(c for c in cells if isinstance(c, str))]):
        return None
    if not all(_one_cell(line) for c in cells if isinstance(c, Marked) for line in c.plain.split("\n")):
        return None
    sheet = Sheet(sheet.title, sheet.fields, [[_text(cell) for cell in row] for row in sheet.rows])
    extra = len(sheet.fields) + 1  # the borders
    widths = _widths(sheet, width - extra)
    if min(widths) < _PADDING + 1:
        return None
    total = sum(widths) + extra
    lines = _wrapped(sheet.title, total, "center") if sheet.title else []
    lines.append(_BOX["top"][0] + _BOX["top"][2].join(_BOX["top"][1] * w for w in widths) + _BOX["top"][3])
    header = [_cell(c.header, w, c) for c, w in zip(sheet.fields, widths)]
    lines += _row(header, widths, True, _BOX["head"])
    lines.append(_BOX["head_row"][0] + _BOX["head_row"][2].join(_BOX["head_row"][1] * w for w in widths)
                 + _BOX["head_row"][3])
    for row in sheet.rows:
        lines += _row([_cell(text, w, c) for text, w, c in zip(row, widths, sheet.fields)], widths, False, _BOX["body"])
    lines.append(_BOX["bottom"][0] + _BOX["bottom"][2].join(_BOX["bottom"][1] * w for w in widths) + _BOX["bottom"][3])
    return [line[:width] for line in lines]  # the console crops what is wider than itself


def _text(cell: Cell) -> str:
    return cell.plain if isinstance(cell, Marked) else cell


def text_lines(text: str, width: int) -> list[str] | None:
    """The lines ``Console(width=width).print(text, markup=False)`` writes (wrapped at spaces, folded, not
    padded) where rich prints plain text, or None when rich must."""
    if not _plain(text):
        return None
    return [line[:width] for line in _wrapped(text, width, "default")]
