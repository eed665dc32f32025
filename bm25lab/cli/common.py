"""Shared pieces of the command line: error handling, console, output formats, parameters."""
from __future__ import annotations

import functools
import sys
import time
from contextlib import contextmanager
from enum import Enum
from typing import Any, Callable, Iterator, TypeVar

import typer

F = TypeVar("F", bound=Callable[..., Any])

EXIT_CODES_HELP = "Exit codes: 0 success, 1 bad input or data (one line on stderr), 2 bad usage."


class Language(str, Enum):
    auto = "auto"
    zh = "zh"
    en = "en"
    whitespace = "whitespace"


class VariantName(str, Enum):
    lucene = "lucene"
    robertson = "robertson"
    atire = "atire"
    bm25l = "bm25l"
    bm25plus = "bm25+"
    okapi = "okapi"


class TableFormat(str, Enum):
    table = "table"
    json = "json"


def console(stderr: bool = False) -> Any:
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=False)


def user_errors() -> tuple[type[BaseException], ...]:
    """Exception types that mean bad input, not a bug: reported in one line, exit code 1."""
    from ..engine.errors import BM25LabError

    types: list[type[BaseException]] = [BM25LabError, OSError, ValueError, UnicodeError]
    try:
        from ..evaluation.errors import EvaluationError
        types.append(EvaluationError)
    except ImportError:  # pragma: no cover - evaluation always ships it
        pass
    return tuple(types)


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print ``bm25lab: error: message`` on stderr and return the Exit to raise."""
    print(f"bm25lab: error: {message}", file=sys.stderr)
    return typer.Exit(code)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, FileNotFoundError) and exc.filename:
        return f"{exc.filename}: no such file or directory"
    if isinstance(exc, PermissionError) and exc.filename:
        return f"{exc.filename}: permission denied"
    if isinstance(exc, IsADirectoryError) and exc.filename:
        return f"{exc.filename}: is a directory"
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def handles_errors(func: F) -> F:
    """Turn the user errors a command raises into one stderr line and exit code 1."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except typer.Exit:
            raise
        except KeyboardInterrupt:
            raise fail("interrupted", 130) from None
        except user_errors() as exc:
            raise fail(_describe(exc)) from None

    return wrapper  # type: ignore[return-value]


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def dir_size(path: Any) -> int:
    from pathlib import Path

    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


@contextmanager
def document_progress(label: str) -> Iterator[Callable[[int], None]]:
    """A live "documents, documents per second" bar on stderr; yields the callback that feeds it."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    started = time.perf_counter()
    columns = (SpinnerColumn(), TextColumn("[bold]{task.description}"), TextColumn("{task.completed:,} docs"),
               TextColumn("{task.fields[rate]}"), TimeElapsedColumn())
    with Progress(*columns, console=console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=None, rate="")

        def advance(done: int) -> None:
            rate = done / max(time.perf_counter() - started, 1e-9)
            bar.update(task, completed=done, rate=f"{rate:,.0f} docs/s")

        yield advance
