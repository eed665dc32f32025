"""The typer app of the command line: the options every command shares and the commands asked for, each
imported from its module (:data:`bm25lab.cli.COMMANDS`)."""
from __future__ import annotations

import importlib
import os
from typing import Annotated, Iterable

import typer

from . import COMMANDS
from .common import DEBUG_VARIABLE, EXIT_CODES_HELP

__all__ = ["build_app"]


def _print_version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"bm25lab {__version__}")
        raise typer.Exit()


def _options(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.", is_eager=True,
                                          callback=_print_version)] = False,
    debug: Annotated[bool, typer.Option("--debug", help=f"Show the traceback of an internal error (also "
                                                        f"{DEBUG_VARIABLE}=1).")] = False,
) -> None:
    """BM25 search for Chinese and English with a trec_eval-exact evaluation harness."""
    if debug:
        os.environ[DEBUG_VARIABLE] = "1"  # read by handles_errors, in this process only


def build_app(names: Iterable[str] = COMMANDS) -> typer.Typer:
    """The command line with the commands ``names`` (keys of :data:`COMMANDS`), importing their modules only."""
    built = typer.Typer(
        name="bm25lab",
        help="BM25 search for Chinese and English with a trec_eval-exact evaluation harness.\n\n" + EXIT_CODES_HELP,
        epilog=EXIT_CODES_HELP,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    built.callback()(_options)
    for name in names:
        module, function = COMMANDS[name]
        command = getattr(importlib.import_module(f"{__package__}.{module}"), function)
        built.command(name, epilog=EXIT_CODES_HELP)(command)
    return built
