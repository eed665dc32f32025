"""The README's Python example runs as printed (in a folder of its own) and prints what it says."""
from __future__ import annotations

import ast
import contextlib
import io
import os
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_example() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Python API"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_python_api_example_runs(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(python_example(), str(README), "exec"), {"__name__": "readme"})
    lines = printed.getvalue().splitlines()
    assert lines[0] == "['iphon', '15', '价格']"
    count, means = lines[2].split(" ", 1)
    assert count == "225"
    assert {m: round(v, 4) for m, v in ast.literal_eval(means).items()} == {"P@10": 0.2289, "nDCG@10": 0.3616,
                                                                          "AP": 0.2997}
    assert lines[-1].startswith("0.3829")
    assert sorted(os.listdir(tmp_path)) == ["bm25.run", "cran-index"]


SHELL_BLOCK = re.compile(r"```\n(\$ bm25lab .*?)```", re.S)
TIMING = re.compile(r"\d[\d,]*(\.\d+)? (s|docs/s)\b|in \d+(\.\d+)? s|\((indexed|cached index)\)")  # and the cache's state


def shell_examples() -> list[tuple[str, list[str]]]:
    """Every ``$ bm25lab ...`` command of the README's command sections with the lines printed after it."""
    examples: list[tuple[str, list[str]]] = []
    for block in SHELL_BLOCK.findall(README.read_text(encoding="utf-8")):
        for line in block.splitlines():
            if line.startswith("$ bm25lab "):
                examples.append((line[2:], []))
            elif examples:
                examples[-1][1].append(line)
    return examples


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


def test_the_shell_examples_run_and_print_what_they_say(tmp_path: Path) -> None:
    import shlex
    import subprocess
    import sys

    raw = README.parent / "tests" / "data" / "raw"  # the README's paths are relative to the checkout
    (tmp_path / "new.jsonl").write_text('{"id": "1", "text": "replaced"}\n{"id": "new", "text": "added"}\n')
    (tmp_path / "ranks.txt").write_text("Jack born_in Italy 2\nJohn born_in Ireland 1\n")  # link-prediction's
    env = {**os.environ, "COLUMNS": "110", "BM25LAB_DEBUG": ""}
    ran = 0
    for command, printed in shell_examples():
        args = [str(raw / a[len("tests/data/raw/"):]) if a.startswith("tests/data/raw/") else a
                for a in shlex.split(command)[1:]]
        width = max([len(line) for line in printed if line[:1] in "┏│┌"] or [110])  # the width it was printed at
        done = subprocess.run([sys.executable, "-m", "bm25lab", *args], cwd=tmp_path, env={**env, "COLUMNS": str(width)},
                              capture_output=True, text=True, timeout=300)
        shown = printed and printed[-1].startswith("bm25lab: error:")
        assert done.returncode == (1 if shown else 0), (command, done.stderr)
        output = (done.stdout + done.stderr).replace(str(raw), "tests/data/raw").splitlines()
        prose = " ".join(TIMING.sub("<time>", " ".join(line.split())) for line in output if line[:1] not in "┏┡└┃│")
        missing = {fact for fact in facts(printed) - facts(output) if "|" in fact or fact not in prose}
        assert not missing, (command, missing)
        ran += 1
    assert ran >= 15
