"""The README and the documentation say what bm25lab does: every code block in them runs, in a folder of
its own, and prints what they show; the documentation site builds (``mkdocs build --strict``).

- ``console`` blocks: each ``$ bm25lab ...`` line runs (``python -m bm25lab``) and what the block shows
  after it must be in what the command printed: table rows cell by cell, other lines with their timings
  masked (the machine's speed is not a claim). A block showing ``bm25lab: error:`` expects exit code 1.
- ``bash`` blocks: commands without shown output; ``pip install X`` is checked against pyproject.toml's
  extras (the suite runs in that installation), ``pytest`` is this very run, ``bm25lab`` lines run.
- ``python`` blocks run; their figures are ``assert`` statements.
The README's results table is checked against the library by tests/test_experiments.py.
A page's blocks run in order in one folder (a search needs the index built before it)."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
TIMING = re.compile(r"\d[\d,]*(\.\d+)? (s|docs/s)\b|in \d+(\.\d+)? s|\((indexed|cached index)\)")  # and the cache's state
QUICKSTART = ['pip install . && bm25lab experiment cranfield', 'pip install ".[test]" && pytest']


def blocks(page: Path) -> list[tuple[str, str]]:
    return [(language, text) for language, text in FENCE.findall(page.read_text(encoding="utf-8"))]


def facts(lines: list[str]) -> set[str]:
    """What a printed output states, whatever the terminal's width and the machine's speed: table rows as
    their cells, other lines with their timings masked."""
    out = set()
    for line in lines:
        line = line.strip()
        if not line or line[0] in "┏┡└┃━─┌├":
            continue
        if line.startswith("│"):
            out.add("|".join(cell.strip() for cell in line.strip("│").split("│")))
        elif len(line.split()) > 2 and not line.startswith(("…", ".")):
            out.add(TIMING.sub("<time>", " ".join(line.split())))
    return out


class Folder:
    """Where a page's examples run: files its commands name, paths of the checkout mapped both ways."""

    def __init__(self, path: Path) -> None:
        self.path = path
        (path / "tests").symlink_to(ROOT / "tests")  # the pages' paths are the checkout's: tests/data/raw/...
        (path / "new.jsonl").write_text('{"id": "1", "text": "replaced"}\n{"id": "new", "text": "added"}\n')
        (path / "ranks.txt").write_text("Jack born_in Italy 2\nJohn born_in Ireland 1\n")

    def args(self, command: str) -> list[str]:
        return shlex.split(command)

    def bm25lab(self, command: str, width: int = 110) -> subprocess.CompletedProcess:
        env = {**os.environ, "COLUMNS": str(width), "BM25LAB_DEBUG": ""}
        return subprocess.run([sys.executable, "-m", "bm25lab", *self.args(command)[1:]], cwd=self.path, env=env,
                              capture_output=True, text=True, timeout=600)

    def console(self, text: str) -> int:
        examples: list[tuple[str, list[str]]] = []
        for line in text.splitlines():
            if line.startswith("$ "):
                examples.append((line[2:], []))
            elif examples:
                examples[-1][1].append(line)
        for command, printed in examples:
            assert command.startswith("bm25lab "), command
            width = max([len(line) for line in printed if line[:1] in "┏│┌"] or [110])  # the width it was printed at
            done = self.bm25lab(command, width)
            shown_error = bool(printed) and printed[-1].startswith("bm25lab: error:")
            assert done.returncode == (1 if shown_error else 0), (command, done.stderr)
            output = (done.stdout + done.stderr).replace(str(ROOT) + "/", "").splitlines()
            prose = " ".join(TIMING.sub("<time>", " ".join(line.split())) for line in output if line[:1] not in "┏┡└┃│")
            missing = {fact for fact in facts(printed) - facts(output) if "|" in fact or fact not in prose}
            assert not missing, (command, missing)
        return len(examples)

    def bash(self, text: str) -> int:
        extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
        ran = 0
        for line in text.splitlines():
            line = line.split("  #")[0].strip()
            for part in filter(None, (p.strip() for p in line.split("&&"))):
                if part.startswith("pip install "):
                    target = shlex.split(part)[2]
                    extra = re.fullmatch(r"\.(?:\[(\w+)\])?", target)
                    assert extra and (extra[1] is None or extra[1] in extras), part
                elif part in ("pytest", "mkdocs serve", "mkdocs build --strict"):
                    continue  # this run, and test_the_site_builds_strictly
                else:
                    done = self.bm25lab(part)
                    assert done.returncode == 0, (part, done.stderr)
                    ran += 1
        return ran

    def python(self, text: str, page: Path) -> None:
        here = os.getcwd()
        os.chdir(self.path)
        try:
            exec(compile(text, str(page), "exec"), {"__name__": "docs_example"})
        finally:
            os.chdir(here)


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_code_block_runs_and_prints_what_it_shows(page: Path, tmp_path: Path) -> None:
    folder = Folder(tmp_path)
    for language, text in blocks(page):
        if language == "console":
            assert folder.console(text) > 0
        elif language == "bash":
            folder.bash(text)
        elif language == "python":
            folder.python(text, page)
        else:
            raise AssertionError(f"{page.name}: a code block in {language or 'no language'}: console, bash or "
                                 f"python, so that it runs as a test")


def test_the_readme_is_for_users() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    assert all(command in text for command in QUICKSTART)
    for section in ("## Install", "## Quickstart", "## A tour", "## Results on the bundled collections",
                    "## Documentation"):
        assert section in text
    for link in re.findall(r"\]\((docs/[\w./-]+)\)", text):
        assert (ROOT / link).is_file(), link


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    """``mkdocs build --strict`` (a warning is an error: a broken link, a docstring reference that does not
    resolve), into a folder of its own, with no network (no web fonts, no plugin that downloads)."""
    config = (ROOT / "mkdocs.yml").read_text()
    assert "font: false" in config
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
                           "--site-dir", str(tmp_path / "site")], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    commands = (tmp_path / "site" / "commands" / "index.html").read_text()
    from bm25lab.cli import COMMANDS

    assert all(f'id="{name}"' in commands for name in COMMANDS)  # generated from the app: every command
    import typer

    from bm25lab.cli import app

    every = [opt for command in typer.main.get_command(app).commands.values() for p in command.params
             for opt in p.opts if opt.startswith("--") and opt != "--help"]
    shown = {name for code in re.findall(r"<code>(.*?)</code>", commands) for name in code.split(", ")}
    assert every and not set(every) - shown  # and every option
    measures = (tmp_path / "site" / "measures" / "index.html").read_text()
    from bm25lab.evaluation.measures import MEASURES

    assert all(f"<strong>{name}</strong>" in measures for name in MEASURES)  # generated from the registry
    site = "".join(p.read_text(errors="ignore") for p in (tmp_path / "site").rglob("*.html"))
    assert "fonts.googleapis" not in site and "fonts.gstatic" not in site
