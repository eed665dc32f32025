"""The `bm25lab` command: index, add, delete, optimize, search, run, evaluate, compare, fuse, link-prediction,
tune, corpora, experiment, info, measures, serve.

Each area lives in its own module; this one only assembles the app. The commands parse their
arguments, call the library and render what it returns. Bad input or data is one line on stderr
and exit code 1; bad usage exit code 2; an internal error (a bug) one line and exit code 3, with the
traceback under ``--debug`` (:func:`bm25lab.cli.common.handles_errors`).

The installed script (:func:`main`) imports only the module of the command it runs, and builds only
that command's options: in a new process, the others' imports and typer's reading of their
signatures cost about 0.1 s (``bm25lab evaluate`` of issue 20's run takes 1.7 s in all). ``app``, the
whole command line (for help, a misspelt command, and tests), is built when first asked for; typer and
the command's modules are imported by :mod:`bm25lab.cli.app` (:func:`build_app`), not by this one.
"""
from __future__ import annotations

import gc
import os
import sys
from typing import TYPE_CHECKING, Any, Callable, Sequence

if TYPE_CHECKING:
    import typer

    app: typer.Typer

COMMANDS: dict[str, tuple[str, str]] = {
    "index": ("engine_cmds", "index"),
    "search": ("search_cmds", "search"),
    "run": ("engine_cmds", "run"),
    "evaluate": ("evaluate_cmds", "evaluate_cmd"),
    "compare": ("compare_cmds", "compare_cmd"),
    "fuse": ("fusion_cmds", "fuse_cmd"),
    "link-prediction": ("evaluate_cmds", "link_prediction_cmd"),
    "tune": ("tune_cmds", "tune"),
    "corpora": ("corpora_cmds", "corpora_list"),
    "experiment": ("corpora_cmds", "experiment"),
    "info": ("engine_cmds", "info"),
    "measures": ("evaluate_cmds", "measures_cmd"),
    "add": ("growth_cmds", "add"),
    "delete": ("growth_cmds", "delete"),
    "optimize": ("growth_cmds", "optimize"),
    "serve": ("serve_cmds", "serve"),
}
"""Each command's module (in this package) and function, in the order the help lists them."""


def requested(args: Sequence[str]) -> list[str]:
    """The commands the command line ``args`` needs: the one it names, when its first word (after
    ``--debug``) is a command; else all (the help, ``--version``, a misspelt name: click lists them)."""
    for arg in args:
        if arg == "--debug":
            continue
        return [arg] if arg in COMMANDS else list(COMMANDS)
    return list(COMMANDS)


def __getattr__(name: str) -> Any:
    if name == "build_app":
        from .app import build_app

        return build_app
    if name == "app":
        from .app import build_app

        globals()["app"] = whole = build_app()
        return whole
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_SINGLE_BLAS_THREAD = {"evaluate", "search", "measures", "info", "corpora"}
"""Commands that compute no matrix product: OpenBLAS (loaded with numpy) need not start its thread pool for
them, which costs a new process about 35 ms of CPU (numpy's import: 0.108 -> 0.073 CPU-s here)."""


def main() -> None:
    """Entry point of the installed `bm25lab` script."""
    names = requested(sys.argv[1:])
    if len(names) == 1 and names[0] in _SINGLE_BLAS_THREAD:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # read when numpy first loads, in this process
    _started(names)()


def _started(names: Sequence[str]) -> Callable[[], Any]:
    """The command line of ``names``, built with the garbage collector paused, then its objects frozen out of
    its sight (``gc.freeze``): typer's, numpy's and the commands' imports make objects that live as long as
    the process, which the collector would otherwise look through again and again while they are made, and
    once more at exit (0.02-0.025 s of CPU of a new ``evaluate`` or ``search``). The collector runs as usual
    for the command's own objects."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        from .app import build_app

        return build_app(names)
    finally:
        gc.freeze()
        if collecting:
            gc.enable()
