"""The engine's user-facing errors: one base type, one line of text each."""
from __future__ import annotations

from pathlib import Path


class BM25LabError(Exception):
    """Base of every error bm25lab raises for bad input or bad state (never for its own bugs)."""


class InputError(BM25LabError, ValueError):
    """Bad input data; names the file and, where known, the 1-based line."""

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None) -> None:
        self.path = None if path is None else str(path)
        self.line = line
        self.reason = message
        where = ""
        if self.path is not None:
            where = f"{self.path}:{line}: " if line is not None else f"{self.path}: "
        super().__init__(where + message)


def cr_line_ends(path: str | Path | None, line: int) -> InputError:
    """The error for a line holding a carriage return no line feed follows: the file's lines end in CR alone
    (classic Mac OS), and it would read as one line (a document reader's, a qrels or run reader's)."""
    return InputError("a carriage return (CR) inside the line: lines ending in CR alone (classic Mac OS) are not "
                      "read; convert the file to LF or CRLF line endings", path, line)


class ParameterError(BM25LabError, ValueError):
    """A parameter out of its range or not among its choices: a k of 0, a b above 1, an unknown BM25
    variant, backend or tokenizer language."""


class IndexFormatError(BM25LabError):
    """An index directory that cannot be loaded: missing, corrupted or of an unknown format version."""


class IndexLockedError(BM25LabError):
    """Another process holds the index's write lock."""


class InputWarning(UserWarning):
    """Input read on a guess the user should know about: a format recognised from content that
    another format could also have, e.g. 4-column SMART relevance files read as such rather than as
    TREC qrels. The command line prints it as one ``bm25lab: note:`` line."""
