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
from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable, Iterable, Iterator, Optional, Protocol, TypeVar

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
    imports (numpy, ctypes) would cost a small evaluation a fifth of its time.

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
        _pyarrow_through_glibc()


def _pyarrow_through_glibc() -> None:
    """pyarrow allocates through glibc (its system pool): set now where pyarrow is loaded, else by the variable
    Arrow reads when it first allocates (the compiled readers need no pyarrow: it is imported, 0.1 s, only by
    a reader that needs it)."""
    if "pyarrow" in sys.modules:
        import pyarrow as pa

        pa.set_memory_pool(pa.system_memory_pool())
    else:
        os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")


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
    DEFAULT_K1, DEFAULT_VARIANT_NAME, LANGUAGE_HELP, WHERE_OPT, WHERE_NOT_OPT): made when a command that has them is first built, so that a command
    without them (``evaluate``) does not import the engine's tokenizers, backends and scoring (0.1 s)."""
    from ..engine.backends import BACKENDS
    from ..engine.scoring import DEFAULT_B, DEFAULT_K1, DEFAULT_VARIANT, VARIANTS
    from ..engine.filters import GRAMMAR
    from ..engine.tokenization import LANGUAGES

    variant = _choices("VariantName", VARIANTS)
    return {"Language": _choices("Language", LANGUAGES), "VariantName": variant,
            "BackendName": _choices("BackendName", BACKENDS), "DEFAULT_B": DEFAULT_B, "DEFAULT_K1": DEFAULT_K1,
            "DEFAULT_VARIANT_NAME": variant(DEFAULT_VARIANT),
            "LANGUAGE_HELP": "Analyser: " + ", ".join(f"{code} ({spec.name})" for code, spec in LANGUAGES.items()) + ".",
            "WHERE_OPT": typer.Option("--where", help="Only documents whose metadata meet this condition (repeatable: "
                                                      "all must hold): " + GRAMMAR + ", e.g. --where 'year>=1990' "
                                                      "--where 'lang in en,fr'."),
            "WHERE_NOT_OPT": typer.Option("--where-not", help="Leave out documents whose metadata meet this condition "
                                                              "(repeatable: none may hold), same form as --where.")}


_ENGINE_CHOICES = ("Language", "VariantName", "BackendName", "DEFAULT_B", "DEFAULT_K1", "DEFAULT_VARIANT_NAME",
                   "LANGUAGE_HELP", "WHERE_OPT", "WHERE_NOT_OPT")


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
BACKEND_OPT = typer.Option("--backend", help="auto: the compiled core when it is built, else numpy (the "
                                             "specification, the same results bit for bit). Default: "
                                             "$BM25LAB_BACKEND or auto.")
__all__ = ["B_OPT", "BACKEND_OPT", "LANGUAGE_HELP", "DEFAULT_B", "DEFAULT_K1", "DEFAULT_VARIANT_NAME", "DELTA_OPT", "FIELD_B_OPT",
           "FIELD_WEIGHTS_OPT", "K1_OPT", "K3_OPT", "QUIET_OPT", "Meter", "Progress", "Tick", "make_sink",
           "VARIANT_OPT", "WHERE_NOT_OPT", "WHERE_OPT", "BackendName", "Language", "TableFormat", "VariantName",
           "backend_name", "console",
           "document_progress", "fail", "handles_errors", "human_bytes", "note", "progress_bars", "query_progress",
           "report_duplicates", "say",
           "settle_memory_for_large_files"]


def backend_name(choice: Optional[Enum]) -> Optional[str]:
    return None if choice is None else choice.value


def console(stderr: bool = False) -> Any:
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=False)


def say(message: str, stderr: bool = False) -> None:
    """Print one plain line whole (never wrapped at the terminal's width: a pipe gets it as one line): as rich
    prints it, by rich on a terminal, without it elsewhere (:mod:`bm25lab.cli.plain`)."""
    from .plain import line_text, plain_width, write

    text = line_text(message) if plain_width(stderr) is not None else None
    if text is None:
        console(stderr).print(message, soft_wrap=True)
    else:
        write(text, stderr)


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


def report_duplicates(docs: object) -> None:
    """Say how many documents a duplicates policy skipped."""
    skipped = getattr(docs, "duplicates", 0)
    if skipped:
        kept = "first" if getattr(docs, "policy", "") == "first" else "last"
        note(f"{skipped:,} documents repeated an id and were skipped (kept the {kept} of each)")


_NOTED: set[str] = set()  # notes already printed by this process: a file read twice is noted once


def _show_input_warning(message: Any, category: type, filename: str, lineno: int, file: Any = None,
                        line: Any = None) -> None:
    from ..engine.core import CoreMissingWarning

    if issubclass(category, (InputWarning, CoreMissingWarning)):
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


QUIET_OPT = typer.Option("--quiet", help="No progress display (on a terminal a live bar, else a line every few "
                                         "seconds, on stderr).")


@dataclass(frozen=True)
class Tick:
    """What a progress display is told: ``done`` of ``total`` (None while unknown) ``unit``s, after
    ``elapsed`` seconds; the rate (per second) and the seconds left, where they can be known."""

    label: str
    unit: str
    done: int
    total: Optional[int]
    elapsed: float
    rate: Optional[float]
    left: Optional[float]

    def text(self) -> str:
        """``1,000/1,400 docs, 2,449 docs/s, 0:00:01 left``."""
        count = f"{self.done:,}/{self.total:,}" if self.total is not None else f"{self.done:,}"
        parts = [f"{count} {self.unit}"]
        if self.rate is not None:
            parts.append(f"{self.rate:,.0f} {self.unit}/s")
        if self.left is not None:
            parts.append(f"{_clock(self.left)} left")
        return ", ".join(parts)


def _clock(seconds: float) -> str:
    whole = int(round(seconds))
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


class Sink(Protocol):
    """Where progress goes: a live bar on a terminal, periodic lines elsewhere, nowhere under ``--quiet``."""

    def show(self, tick: Tick) -> None: ...

    def close(self) -> None: ...


class Meter:
    """One piece of work's progress: called with the count done (and the total when the caller knows it),
    it tells its sink the count, the total, the rate and the time left. ``total``, a function, counts the
    work in a background thread while the work starts (a file's records): the total is shown from the
    moment it is known."""

    def __init__(self, sink: Sink, label: str, unit: str, total: Optional[Callable[[], Optional[int]]] = None,
                 lazy: bool = False) -> None:
        self._sink, self._label, self._unit = sink, label, unit
        self._started = time.perf_counter()
        self._known: Optional[int] = None
        self._done = 0
        self._lock = threading.Lock()
        self._total = total
        self._counting: Optional[threading.Thread] = None
        self._begun = False
        if not lazy:  # shown at once; a lazy meter, for work that may not happen (a cached index), when first called
            self._begin()

    def _begin(self) -> None:
        self._begun = True
        self._started = time.perf_counter()
        if self._total is not None:
            self._counting = threading.Thread(target=self._count, args=(self._total,), daemon=True)
            self._counting.start()
        self._tell()

    def finish(self) -> None:
        """The last word, once the work is done: with the total, when the count ends soon after the work."""
        if not self._begun:
            return
        if self._counting is not None:
            self._counting.join(timeout=5.0)
        self._tell()

    def _count(self, total: Callable[[], Optional[int]]) -> None:
        counted = _safely(total)
        with self._lock:
            self._known = counted
        self._tell()

    def __call__(self, done: int, total: Optional[int] = None) -> None:
        if not self._begun:
            self._begin()
        with self._lock:
            self._done = max(self._done, done)
            if total is not None:
                self._known = total
        self._tell()

    def tick(self) -> Tick:
        with self._lock:
            done, total = self._done, self._known
        elapsed = time.perf_counter() - self._started
        if total is not None:
            total = max(total, done)
        rate = done / elapsed if done and elapsed > 0 else None
        left = (total - done) / rate if rate and total is not None else None
        return Tick(self._label, self._unit, done, total, elapsed, rate, left)

    def _tell(self) -> None:
        self._sink.show(self.tick())


class RichSink:
    """A live bar per piece of work on the terminal (stderr), redrawn ten times a second."""

    def __init__(self) -> None:
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self._bar = Progress(SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(),
                             TextColumn("{task.fields[text]}"), TimeElapsedColumn(), console=console(stderr=True),
                             transient=True, refresh_per_second=10)
        self._tasks: dict[str, Any] = {}
        self._bar.start()

    def show(self, tick: Tick) -> None:
        task = self._tasks.get(tick.label)
        if task is None:
            task = self._tasks[tick.label] = self._bar.add_task(tick.label, total=None, text="")
        self._bar.update(task, completed=tick.done, total=tick.total, text=tick.text())

    def close(self) -> None:
        self._bar.stop()


class LineSink:
    """Progress as a line on stderr every ``every`` seconds (a log, a pipe, CI), whether or not the work told
    anything new meanwhile (the time elapsed grows), and a last one when the work printed any."""

    def __init__(self, every: float = 5.0) -> None:
        self._every = every
        self._lock = threading.Lock()
        self._last: dict[str, float] = {}  # when each piece of work was last printed (its elapsed seconds)
        self._pending: dict[str, tuple[Tick, float]] = {}  # its latest tick, and when it came
        self._stop = threading.Event()
        self._beat: Optional[threading.Thread] = None

    def show(self, tick: Tick) -> None:
        with self._lock:
            self._pending[tick.label] = (tick, time.perf_counter())
            due = tick.elapsed - self._last.get(tick.label, 0.0) >= self._every
        if due:
            self._print(tick, tick.elapsed)
        if self._beat is None and self._every > 0:
            self._beat = threading.Thread(target=self._heartbeat, daemon=True)
            self._beat.start()

    def _heartbeat(self) -> None:
        while not self._stop.wait(self._every / 5):
            now = time.perf_counter()
            with self._lock:
                due = [(tick, tick.elapsed + now - seen) for tick, seen in self._pending.values()
                       if tick.elapsed + now - seen - self._last.get(tick.label, 0.0) >= self._every
                       and (tick.total is None or tick.done < tick.total)]
            for tick, elapsed in due:
                self._print(tick, elapsed)

    def _print(self, tick: Tick, elapsed: float) -> None:
        with self._lock:
            self._last[tick.label] = elapsed
        print(f"bm25lab: {tick.label}: {tick.text()} ({_clock(elapsed)} elapsed)", file=sys.stderr, flush=True)

    def close(self) -> None:
        self._stop.set()
        for label, (tick, _) in self._pending.items():
            if label in self._last and self._last[label] != tick.elapsed:
                self._print(tick, tick.elapsed)


class QuietSink:
    def show(self, tick: Tick) -> None:
        pass

    def close(self) -> None:
        pass


def make_sink(quiet: bool) -> Sink:
    """The display of this process's progress: none (``--quiet``), a live bar when stderr is a terminal, else
    periodic lines."""
    if quiet:
        return QuietSink()
    return RichSink() if sys.stderr.isatty() else LineSink()


class Progress:
    """The progress of one command: its :class:`Meter` for each piece of work, on one sink."""

    def __init__(self, sink: Sink) -> None:
        self._sink = sink
        self.meters: list[Meter] = []

    def _kept(self, meter: Meter) -> Meter:
        self.meters.append(meter)
        return meter

    def documents(self, label: str, total: Optional[Callable[[], Optional[int]]] = None,
                  lazy: bool = False) -> Callable[[int], None]:
        """The ``progress(done)`` callback of an indexing: documents done of the total (``total`` counts them);
        ``lazy``: shown from its first call, for an indexing that may not happen."""
        return self._kept(Meter(self._sink, label, "docs", total, lazy))

    def queries(self, label: str = "searching") -> Callable[[int, int], None]:
        """The ``progress(done, total)`` callback of a batch of queries."""
        return self._kept(Meter(self._sink, label, "queries"))

    def points(self, label: str, total: int) -> Callable[[int, int], None]:
        """The ``progress(done, total)`` callback of a grid of parameter points (``tune``)."""
        meter = self._kept(Meter(self._sink, label, "points"))
        meter(0, total)
        return meter


def _safely(count: Callable[[], Optional[int]]) -> Optional[int]:
    try:
        return count()
    except Exception:  # a count is a nicety: the indexing itself reports any problem with the source
        return None


@contextmanager
def progress_bars(quiet: bool = False) -> Iterator[Progress]:
    """The progress displays of a command, closed when it ends (or fails)."""
    sink = make_sink(quiet)
    progress = Progress(sink)
    try:
        yield progress
        for meter in progress.meters:
            meter.finish()
    finally:
        sink.close()


@contextmanager
def document_progress(label: str, total: Optional[Callable[[], Optional[int]]] = None,
                      quiet: bool = False) -> Iterator[Callable[[int], None]]:
    with progress_bars(quiet) as bars:
        yield bars.documents(label, total)


@contextmanager
def query_progress(label: str = "searching", quiet: bool = False) -> Iterator[Callable[[int, int], None]]:
    with progress_bars(quiet) as bars:
        yield bars.queries(label)
