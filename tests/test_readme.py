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
