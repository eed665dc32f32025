"""Shared pieces of the command line: choices taken from the library's registries, options, errors,
console output and progress bars. Nothing here computes a result: the library does."""
from __future__ import annotations

import functools
import os
import sys
import threading
import time
import warnings
from contextlib import contextmanager
from enum import Enum
from typing import Any, Callable, Iterable, Iterator, Optional, TypeVar

import typer

from ..engine.errors import BM25LabError, InputWarning, ParameterError

F = TypeVar("F", bound=Callable[..., Any])

EXIT_CODES_HELP = ("Exit codes: 0 success, 1 bad input or data (one line on stderr), 2 bad usage, "
                   "3 an internal error (a bug: --debug shows where).")
DEBUG_VARIABLE = "BM25LAB_DEBUG"


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8  # glibc's mallopt parameters (malloc.h)
_KEPT_BYTES = 1 << 30


def settle_memory_for_large_files(paths: Iterable[Any] = ()) -> None:
    """Memory settings of a process that reads large files once (``evaluate``, ``compare``): a
    process-wide choice, so made by those commands, never on import; the memory is returned when the
    command ends. Nothing is done when ``paths`` are given and add up to less than :data:`_LARGE_FILES`
    bytes (files that are not there count as large): small files need no settings, and the settings'
    imports (numpy, ctypes, pyarrow) would cost a small evaluation a fifth of its time.

    - Freed memory is kept for reuse instead of handed back to the system at once. Reading a
      10-million-line run makes many column-sized arrays (80 MB each) one after another. By default
      glibc maps every one afresh and unmaps it when freed, and pyarrow's mimalloc returns freed pages
      too, so the kernel zeroes each new array's pages again: half of ``bm25lab evaluate``'s time on
      such a run was system time. Raising glibc's thresholds (``mallopt``) keeps freed blocks for
      reuse, and pyarrow then allocates through glibc (its system pool). One arena for every thread
      (``M_ARENA_MAX``): what pyarrow's and the hashing's threads free, the main thread reuses (with
      an arena per thread it could not: a 10-million-line run's peak was 280 MB higher). A no-op
      where glibc's ``mallopt`` is missing.
    - Small pages: numpy asks for transparent huge pages for its large arrays (``madvise``); where
      the kernel defragments memory to make one on demand (Linux's default ``defrag`` setting,
      "madvise"), touching a new array can stall for that compaction. A 333 MB run's evaluation took
      2.0-2.6 s, 0.2-1.2 s of it system time, varying run to run; with small pages 2.0 s, 0.3-0.4 s
      system time, every time (each page is touched once or twice: a huge page saves little).
    """
    if paths and _total_size(paths) < _LARGE_FILES:
        return
    import ctypes

    import numpy as np

    core = getattr(np, "_core", None) or np.core  # numpy 2, numpy 1
    set_huge_pages = getattr(core.multiarray, "_set_madvise_hugepage", None)
    if set_huge_pages is not None:
        set_huge_pages(False)
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return
    if mallopt(_M_MMAP_THRESHOLD, _KEPT_BYTES) and mallopt(_M_TRIM_THRESHOLD, _KEPT_BYTES):
        mallopt(_M_ARENA_MAX, 1)
        import pyarrow as pa

        pa.set_memory_pool(pa.system_memory_pool())


_LARGE_FILES = 1 << 26


def _total_size(paths: Iterable[Any]) -> int:
    """The bytes of the files ``paths`` together; a path that is not a file counts as :data:`_LARGE_FILES`."""
    total = 0
    for path in paths:
        try:
            total += os.stat(path).st_size
        except (OSError, TypeError, ValueError):
            total += _LARGE_FILES
    return total


def _choices(name: str, values: Any) -> type[Enum]:
    """An Enum of a registry's names, for typer's choice checking and help."""
    return Enum(name, {value: value for value in values}, type=str)  # type: ignore[return-value]


def _engine_choices() -> dict[str, Any]:
    """The choices and defaults the engine's registries give (Language, VariantName, BackendName, DEFAULT_B,
    DEFAULT_K1, DEFAULT_VARIANT_NAME): made when a command that has them is first built, so that a command
    without them (``evaluate``) does not import the engine's tokenizers, backends and scoring (0.1 s)."""
    from ..engine.backends import BACKENDS
    from ..engine.scoring import DEFAULT_B, DEFAULT_K1, DEFAULT_VARIANT, VARIANTS
    from ..engine.tokenization import LANGUAGES

    variant = _choices("VariantName", VARIANTS)
    return {"Language": _choices("Language", LANGUAGES), "VariantName": variant,
            "BackendName": _choices("BackendName", BACKENDS), "DEFAULT_B": DEFAULT_B, "DEFAULT_K1": DEFAULT_K1,
            "DEFAULT_VARIANT_NAME": variant(DEFAULT_VARIANT)}


_ENGINE_CHOICES = ("Language", "VariantName", "BackendName", "DEFAULT_B", "DEFAULT_K1", "DEFAULT_VARIANT_NAME")


def __getattr__(name: str) -> Any:
    if name in _ENGINE_CHOICES:
        made = _engine_choices()
        globals().update(made)
        return made[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class TableFormat(str, Enum):
    table = "table"
    json = "json"


VARIANT_OPT = typer.Option("--variant", help="BM25 variant.")
K1_OPT = typer.Option("--k1", help="BM25 k1 (term frequency saturation).", min=0.0)
B_OPT = typer.Option("--b", help="BM25 b (length normalisation), 0..1.", min=0.0, max=1.0)
DELTA_OPT = typer.Option("--delta", help="delta of bm25l / bm25+ (default: the variant's).", min=0.0)
FIELD_WEIGHTS_OPT = typer.Option("--field-weights", help="BM25F on an index built with --fields: each field's "
                                 "weight, e.g. title=3,text=1 (a field not named weighs 1).")
FIELD_B_OPT = typer.Option("--field-b", help="BM25F: each field's length normalisation b, e.g. title=0.5,text=0.75 "
                           "(default: --b).")
K3_OPT = typer.Option("--k3", help="Saturate repeated query terms: qf times weighs qf (k3+1)/(qf+k3) (Robertson's "
                                   "k3; default: off, each repeat counts, as in Lucene).", min=0.0)
BACKEND_OPT = typer.Option("--backend", help="numpy, numba (compiled) or auto (numba once the work pays for "
                                             "loading it). Default: $BM25LAB_BACKEND or auto.")
__all__ = ["B_OPT", "BACKEND_OPT", "DEFAULT_B", "DEFAULT_K1", "DEFAULT_VARIANT_NAME", "DELTA_OPT", "FIELD_B_OPT",
           "FIELD_WEIGHTS_OPT", "K1_OPT", "K3_OPT",
           "VARIANT_OPT", "BackendName", "Language", "TableFormat", "VariantName", "backend_name", "console",
           "document_progress", "fail", "handles_errors", "human_bytes", "note", "progress_bars", "query_progress",
           "settle_memory_for_large_files"]


def backend_name(choice: Optional[Enum]) -> Optional[str]:
    return None if choice is None else choice.value


def console(stderr: bool = False) -> Any:
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=False)


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print ``bm25lab: error: message`` on stderr and return the Exit to raise."""
    print(f"bm25lab: error: {message}", file=sys.stderr)
    return typer.Exit(code)


def debugging() -> bool:
    """Whether ``--debug`` or ``$BM25LAB_DEBUG`` asks for tracebacks of internal errors."""
    return os.environ.get(DEBUG_VARIABLE, "") not in ("", "0")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _describe_os_error(exc: OSError) -> str:
    where = f"{exc.filename}: " if exc.filename else ""
    return where + (exc.strerror or _first_line(exc)).lower()


def note(message: str) -> None:
    """One ``bm25lab: note: ...`` line on stderr: something the user should know, not an error."""
    print(f"bm25lab: note: {message}", file=sys.stderr)


_NOTED: set[str] = set()  # notes already printed by this process: a file read twice is noted once


def _show_input_warning(message: Any, category: type, filename: str, lineno: int, file: Any = None,
                        line: Any = None) -> None:
    if issubclass(category, InputWarning):
        if str(message) not in _NOTED:
            _NOTED.add(str(message))
            note(str(message))
    else:  # pragma: no cover - other warnings keep Python's own display
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def handles_errors(func: F) -> F:
    """Report what a command raises in one stderr line: the library's errors for bad input or data
    (exit 1) or a bad parameter (exit 2), a file the system could not read or write (exit 1), and
    anything else as the bug it is (exit 3; ``--debug`` or ``BM25LAB_DEBUG=1`` re-raises it). The
    library's :class:`InputWarning` (a format recognised on a guess) becomes a ``bm25lab: note:`` line."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("always", InputWarning)
                warnings.showwarning = _show_input_warning
                return func(*args, **kwargs)
        except typer.Exit:
            raise
        except KeyboardInterrupt:
            raise fail("interrupted", 130) from None
        except ParameterError as exc:
            raise fail(_first_line(exc), 2) from None
        except BM25LabError as exc:
            raise fail(_first_line(exc)) from None
        except OSError as exc:  # the environment: a file missing, unreadable or unwritable, a full disk
            raise fail(_describe_os_error(exc)) from None
        except Exception as exc:
            if debugging():
                raise
            raise fail(f"internal error: {type(exc).__name__}: {_first_line(exc)} (a bug in bm25lab; run again "
                       f"with --debug, or {DEBUG_VARIABLE}=1, to see where)", 3) from None

    return wrapper  # type: ignore[return-value]


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


class ProgressBars:
    """Live progress bars on stderr, several in one display (rich shows one display at a time)."""

    def __init__(self, bar: Any) -> None:
        self._bar = bar

    def documents(self, label: str, total: Optional[Callable[[], Optional[int]]] = None) -> Callable[[int], None]:
        """A "documents done of total, documents per second, time left" bar; returns the
        ``progress(done)`` callback. ``total``, when given, counts the documents; it runs in a
        background thread while the indexing starts, and the bar shows the total, its share and an
        ETA from the moment it is known. The bar is shown at once and redrawn ten times a second."""
        task = self._task(label)
        task()
        started = time.perf_counter()
        known: list[Optional[int]] = [None]
        if total is not None:
            threading.Thread(target=lambda: known.__setitem__(0, _safely(total)), daemon=True).start()

        def advance(done: int) -> None:
            rate = done / max(time.perf_counter() - started, 1e-9)
            whole = known[0]
            count = f"{done:,}/{whole:,} docs" if whole else f"{done:,} docs"
            self._bar.update(task(), completed=done, total=max(whole, done) if whole else None, count=count,
                             rate=f"{rate:,.0f} docs/s")

        return advance

    def queries(self, label: str = "searching") -> Callable[[int, int], None]:
        """A "queries done of all" bar, shown from its first call; returns the ``progress(done, total)``
        callback."""
        task = self._task(label)

        def advance(done: int, total: int) -> None:
            self._bar.update(task(), completed=done, total=total, count=f"{done:,}/{total:,} queries")

        return advance

    def _task(self, label: str) -> Callable[[], Any]:
        made: list[Any] = []

        def task() -> Any:
            if not made:
                made.append(self._bar.add_task(label, total=None, count="", rate=""))
            return made[0]

        return task


def _safely(count: Callable[[], Optional[int]]) -> Optional[int]:
    try:
        return count()
    except Exception:  # a count is a nicety: the indexing itself reports any problem with the source
        return None


@contextmanager
def progress_bars() -> Iterator[ProgressBars]:
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    columns = (SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.fields[count]}"),
               TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn())
    with Progress(*columns, console=console(stderr=True), transient=True, refresh_per_second=10) as bar:
        yield ProgressBars(bar)


@contextmanager
def document_progress(label: str, total: Optional[Callable[[], Optional[int]]] = None) -> Iterator[Callable[[int], None]]:
    with progress_bars() as bars:
        yield bars.documents(label, total)


@contextmanager
def query_progress(label: str = "searching") -> Iterator[Callable[[int, int], None]]:
    with progress_bars() as bars:
        yield bars.queries(label)
