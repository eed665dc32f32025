"""Tables that fit the terminal: every column kept, every number and name whole.

A :class:`Grid` is what a command shows (a title, column headers, rows of text cells, a caption);
:func:`fit` lays it out as one or more tables (:class:`~bm25lab.cli.plain.Sheet`, rich's tables) no wider
than the console. Numbers and names are never wrapped or cut: a table too wide for the terminal is split
into several, each repeating the key columns (the run, the query, the measure...) beside as many other
columns as fit. Only text columns marked ``wrap`` (a licence, a description) wrap, at spaces, never inside
a word.

rich draws them on a terminal; where it would print plain text (a pipe, a file), :mod:`bm25lab.cli.plain`
lays them out as rich does, without importing it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from . import plain
from .plain import Field, Sheet, cell_length, sheet_lines, text_lines, write

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

__all__ = ["Column", "Grid", "fit", "parts", "print_grid", "print_sheet", "print_text", "screen_width"]

_EDGE = 3  # a column's padding (1 + 1) and its border (the table's last border is counted once)


@dataclass(frozen=True)
class Column:
    """A column: its header, alignment, and whether its cells may wrap at spaces (prose only)."""

    header: str
    justify: str = "left"
    wrap: bool = False


@dataclass
class Grid:
    """A table as data: ``keys`` leading columns identify a row and repeat in every part of a split table."""

    title: str
    columns: list[Column]
    rows: list[list[str]] = field(default_factory=list)
    caption: str = ""
    keys: int = 1

    def add_row(self, *cells: Any) -> None:
        self.rows.append([str(cell) for cell in cells])


def _cell_width(text: str) -> int:
    return max((cell_length(line) for line in text.splitlines()), default=0)


def _narrowest(column: Column, cells: Sequence[str]) -> int:
    """The least width that shows the column's header and cells with no word broken."""
    words = [word for text in (column.header, *cells) for word in text.split()] if column.wrap else \
        [column.header, *cells]
    header_words = column.header.split() or [""]
    return max([_cell_width(word) for word in words] + [_cell_width(w) for w in header_words] + [1])


def _parts(grid: Grid, width: int) -> list[list[int]]:
    """The value columns of each part: as many, in order, as fit beside the key columns."""
    least = [_narrowest(c, [row[i] for row in grid.rows]) + _EDGE for i, c in enumerate(grid.columns)]
    keys = sum(least[:grid.keys]) + 1
    parts: list[list[int]] = [[]]
    used = keys
    for i in range(grid.keys, len(grid.columns)):
        if parts[-1] and used + least[i] > width:
            parts.append([])
            used = keys
        parts[-1].append(i)
        used += least[i]
    return parts


def _widest(column: Column, cells: Sequence[str]) -> int:
    return max([_cell_width(text) for text in (column.header, *cells)] + [1])


def _wrap_widths(columns: Sequence[Column], cells: Sequence[Sequence[str]], width: int) -> list[int | None]:
    """Fixed widths for the columns that wrap, when the part is too wide for ``width`` with every cell on one
    line: the room left by the other columns, shared in proportion to how much each would like beyond its
    narrowest (rich's own sharing can stop short of it and crop the last columns)."""
    least = [_narrowest(c, col) for c, col in zip(columns, cells)]
    most = [_widest(c, col) for c, col in zip(columns, cells)]
    room = width - _EDGE * len(columns) - 1
    if sum(most) <= room:
        return [None] * len(columns)
    wrapping = [i for i, c in enumerate(columns) if c.wrap]
    spare = room - sum(most[i] for i in range(len(columns)) if i not in wrapping) - sum(least[i] for i in wrapping)
    fixed: list[int | None] = [None] * len(columns)
    waiting = sorted(wrapping, key=lambda i: most[i] - least[i])  # the least wanting first: they get all they want
    for n, i in enumerate(waiting):
        given = min(most[i] - least[i], max(0, spare) // (len(waiting) - n))
        fixed[i] = least[i] + given
        spare -= given
    return fixed


def parts(grid: Grid, width: int) -> int:
    """How many tables the grid takes at ``width``."""
    return len(_parts(grid, width))


def sheets(grid: Grid, width: int) -> list[Sheet]:
    """The grid as tables no wider than ``width``: one when it fits, else the value columns split over
    several tables, each with the key columns. The caption is not theirs: :func:`print_grid` prints it
    under the last, as wide as the terminal."""
    least = [_narrowest(c, [row[i] for row in grid.rows]) for i, c in enumerate(grid.columns)]
    split = _parts(grid, width)
    tables = []
    for n, part in enumerate(split):
        title = grid.title if len(split) == 1 else f"{grid.title} ({n + 1} of {len(split)})"
        shown = [*range(grid.keys), *part]
        fixed = _wrap_widths([grid.columns[i] for i in shown], [[row[i] for row in grid.rows] for i in shown], width)
        fields = [Field(grid.columns[i].header, grid.columns[i].justify, not grid.columns[i].wrap, least[i], fixed_width)
                  for i, fixed_width in zip(shown, fixed)]
        tables.append(Sheet(title, fields, [[row[i] for i in shown] for row in grid.rows]))
    return tables


def fit(grid: Grid, width: int) -> list["Table"]:
    """The grid as rich tables no wider than ``width`` (:func:`sheets`)."""
    return [sheet.rich() for sheet in sheets(grid, width)]  # type: ignore[misc]


def screen_width() -> int:
    """The width of stdout, as rich measures it (without rich where it prints plain text)."""
    width = plain.plain_width()
    if width is None:
        from .common import console

        width = console().width
    return width


def print_grid(grid: Grid, out: "Console | None" = None) -> None:
    """Print the grid on ``out`` (stdout's console by default), split to fit its width."""
    width = plain.plain_width() if out is None else None
    if width is not None:
        lines = _grid_lines(grid, width)
        if lines is not None:
            write("".join(line + "\n" for line in lines))
            return
    from .common import console

    out = out or console()
    for table in fit(grid, out.width):
        out.print(table)
    if grid.caption:
        out.print(grid.caption, highlight=False, markup=False)


def _grid_lines(grid: Grid, width: int) -> list[str] | None:
    """The lines rich prints for the grid and its caption at ``width``, where it prints plain text; None
    where rich must (:mod:`bm25lab.cli.plain`)."""
    lines: list[str] = []
    for sheet in sheets(grid, width):
        drawn = sheet_lines(sheet, width)
        if drawn is None:
            return None
        lines += drawn
    if grid.caption:
        caption = text_lines(grid.caption, width)
        if caption is None:
            return None
        lines += caption
    return lines


def print_sheet(sheet: Sheet) -> None:
    """Print one table on stdout as rich draws it."""
    width = plain.plain_width()
    drawn = None if width is None else sheet_lines(sheet, width)
    if drawn is not None:
        write("".join(line + "\n" for line in drawn))
        return
    from .common import console

    console().print(sheet.rich())


def print_text(text: str) -> None:
    """Print a paragraph on stdout, wrapped at the terminal's width, as rich prints it (no highlighting)."""
    width = plain.plain_width()
    lines = None if width is None else text_lines(text, width)
    if lines is not None:
        write("".join(line + "\n" for line in lines))
        return
    from .common import console

    console().print(text, highlight=False)
