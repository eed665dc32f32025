"""docs/feedback.md's comparison table is what its one command prints: the test runs the command and compares
the table between the markers line for line, so the page cannot go stale."""
from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from bm25lab.cli import app

PAGE = Path(__file__).resolve().parents[1] / "docs" / "feedback.md"


def test_the_page_shows_what_the_command_prints():
    text = PAGE.read_text(encoding="utf-8")
    start = text.index("<!-- cranfield-compare")
    shown = text[text.index("\n", start) + 1:text.index("<!-- end -->")].strip()
    out = CliRunner().invoke(app, ["experiment", "cranfield", "--rm3", "--compare", "-m", "AP", "-m", "nDCG@10",
                                   "-m", "P@10", "--compare-format", "markdown"])
    assert out.exit_code == 0, out.output
    assert out.stdout.strip() == shown
