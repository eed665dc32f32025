"""The `bm25lab` command: index, add, delete, optimize, search, run, evaluate, compare, link-prediction,
tune, corpora, experiment, info, measures.

Each area lives in its own module; this one only assembles the app. The commands parse their
arguments, call the library and render what it returns. Bad input or data is one line on stderr
and exit code 1; bad usage exit code 2; an internal error (a bug) one line and exit code 3, with the
traceback under ``--debug`` (:func:`bm25lab.cli.common.handles_errors`).
"""
from __future__ import annotations

import os
from typing import Annotated

import typer

from . import corpora_cmds, engine_cmds, evaluate_cmds, growth_cmds, tune_cmds
from .common import DEBUG_VARIABLE, EXIT_CODES_HELP

app = typer.Typer(
    name="bm25lab",
    help="BM25 search for Chinese and English with a trec_eval-exact evaluation harness.\n\n" + EXIT_CODES_HELP,
    epilog=EXIT_CODES_HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)



def _print_version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"bm25lab {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.", is_eager=True,
                                          callback=_print_version)] = False,
    debug: Annotated[bool, typer.Option("--debug", help=f"Show the traceback of an internal error (also "
                                                        f"{DEBUG_VARIABLE}=1).")] = False,
) -> None:
    """BM25 search for Chinese and English with a trec_eval-exact evaluation harness."""
    if debug:
        os.environ[DEBUG_VARIABLE] = "1"  # read by handles_errors, in this process only


_EPILOG = {"epilog": EXIT_CODES_HELP}
app.command("index", **_EPILOG)(engine_cmds.index)
app.command("search", **_EPILOG)(engine_cmds.search)
app.command("run", **_EPILOG)(engine_cmds.run)
app.command("evaluate", **_EPILOG)(evaluate_cmds.evaluate_cmd)
app.command("compare", **_EPILOG)(evaluate_cmds.compare_cmd)
app.command("link-prediction", **_EPILOG)(evaluate_cmds.link_prediction_cmd)
app.command("tune", **_EPILOG)(tune_cmds.tune)
app.command("corpora", **_EPILOG)(corpora_cmds.corpora_list)
app.command("experiment", **_EPILOG)(corpora_cmds.experiment)
app.command("info", **_EPILOG)(engine_cmds.info)
app.command("measures", **_EPILOG)(evaluate_cmds.measures_cmd)
app.command("add", **_EPILOG)(growth_cmds.add)
app.command("delete", **_EPILOG)(growth_cmds.delete)
app.command("optimize", **_EPILOG)(growth_cmds.optimize)


def main() -> None:
    """Entry point of the installed `bm25lab` script."""
    app()
