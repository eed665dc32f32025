"""The installed script builds only the command it runs (bm25lab.cli.main): the same command line as the
whole app, with the other commands' modules left unimported."""
from __future__ import annotations

import subprocess
import sys

import pytest
from bm25lab.cli import COMMANDS, app, build_app, requested
from typer.testing import CliRunner

runner = CliRunner()


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_command_built_alone_is_the_whole_apps_command(name):
    whole = runner.invoke(app, [name, "--help"])
    alone = runner.invoke(build_app([name]), [name, "--help"])
    assert whole.exit_code == alone.exit_code == 0
    assert alone.output == whole.output


@pytest.mark.parametrize(("args", "expected"), [
    (["evaluate", "q", "r"], ["evaluate"]),
    (["--debug", "search", "--index", "x"], ["search"]),
    (["--help"], list(COMMANDS)),
    (["--version"], list(COMMANDS)),
    (["evalute", "q"], list(COMMANDS)),  # misspelt: click names the commands it has
    ([], list(COMMANDS)),
])
def test_the_commands_a_command_line_needs(args, expected):
    assert requested(args) == expected


def test_running_a_command_imports_only_its_module():
    code = ("import sys\nsys.argv = ['bm25lab', 'measures']\nfrom bm25lab.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('bm25lab.cli.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = done.stdout.splitlines()[-1]
    assert "bm25lab.cli.evaluate_cmds" in loaded
    for other in ("engine_cmds", "corpora_cmds", "growth_cmds", "tune_cmds"):
        assert f"bm25lab.cli.{other}" not in loaded


def test_a_misspelt_command_is_named_with_the_nearest_ones():
    result = runner.invoke(build_app(requested(["evalute"])), ["evalute"])
    assert result.exit_code == 2
    assert "No such command 'evalute'" in result.output and "evaluate" in result.output
