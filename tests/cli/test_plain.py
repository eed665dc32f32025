"""Tables and lines without rich (bm25lab/cli/plain.py) are rich's, character for character: random tables,
captions and lines against rich's own rendering at random widths; the stream rules (terminal, FORCE_COLOR,
TTY_COMPATIBLE, COLUMNS) against rich's Console; and whole commands' output with and without rich."""
from __future__ import annotations

import io
from pathlib import Path

import pytest
from bm25lab.cli import build_app, plain
from bm25lab.cli.plain import Field, Sheet, line_text, sheet_lines, text_lines
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.console import Console
from typer.testing import CliRunner

WORDS = st.text(alphabet="abcdefghij0123456789.,-…▲éß", min_size=1, max_size=30)
TEXTS = st.lists(WORDS, max_size=10).map(" ".join) | st.lists(WORDS, max_size=6).map("\n".join) | \
    st.text(alphabet="ab  \n", max_size=12)


def _rich(renderable: object, width: int, **options: object) -> str:
    out = io.StringIO()
    Console(file=out, width=width, highlight=False, soft_wrap=False).print(renderable, **options)
    return out.getvalue()


@st.composite
def sheets(draw) -> Sheet:
    count = draw(st.integers(1, 6))
    fields = [Field(draw(WORDS), draw(st.sampled_from(["left", "right", "center"])), draw(st.booleans()),
                    draw(st.none() | st.integers(0, 15)), draw(st.none() | st.integers(1, 25))) for _ in range(count)]
    rows = draw(st.lists(st.lists(TEXTS, min_size=count, max_size=count), max_size=4))
    return Sheet(draw(st.sampled_from(["", "Evaluation"]) | TEXTS), fields, rows)


@settings(max_examples=400, deadline=None)
@given(sheet=sheets(), width=st.integers(5, 160))
def test_a_table_is_laid_out_as_rich_lays_it_out(sheet, width):
    lines = sheet_lines(sheet, width)
    if lines is not None:
        assert "".join(line + "\n" for line in lines) == _rich(sheet.rich(), width)


@settings(max_examples=300, deadline=None)
@given(text=TEXTS, width=st.integers(1, 160))
def test_a_caption_is_wrapped_as_rich_wraps_it(text, width):
    lines = text_lines(text, width)
    assert lines is not None
    assert "".join(line + "\n" for line in lines) == _rich(text, width, markup=False)


@settings(max_examples=300, deadline=None)
@given(message=st.text(max_size=40), width=st.integers(1, 120))
def test_a_line_is_printed_as_rich_prints_it_or_left_to_rich(message, width):
    text = line_text(message)
    if text is not None:
        assert text == _rich(message, width, soft_wrap=True)


@pytest.mark.parametrize("message", ["a [bold]word[/bold]", "a :smile: face", "a\ttab", "bell\x07", "cr\r"])
def test_markup_emoji_and_control_characters_are_rich(message):
    assert line_text(message) is None
    assert text_lines(message, 80) is None
    assert sheet_lines(Sheet("", [Field("h")], [[message]]), 80) is None


def test_the_tables_of_the_commands_need_no_rich():
    evaluation = Sheet("Evaluation", [Field("run", no_wrap=True, min_width=4), Field("queries", "right", False, 7),
                                      Field("nDCG@10", "right", True, 7)], [["cran", "225", "0.3616"]])
    search = Sheet("2 results for 'boundary layer'", [Field(h, j) for h, j in (
        ("rank", "right"), ("doc_id", "left"), ("score", "right"), ("title", "left"), ("snippet", "left"))],
        [["1", "272", "4.5424", "oscillatory aerodynamic coefficients", "…boundary-layer transition experiments…"]] * 2)
    for sheet in (evaluation, search):
        assert sheet_lines(sheet, 80) is not None


def test_the_characters_taken_for_one_cell_are_one_cell_in_rich():
    for character in [*plain._NARROW, *(chr(c) for c in range(0x20, 0x300) if chr(c).isprintable())]:
        assert cell_len(character) == 1, hex(ord(character))


@pytest.mark.parametrize("environment", [
    {}, {"COLUMNS": "100"}, {"COLUMNS": "0"}, {"COLUMNS": "x"}, {"FORCE_COLOR": "1"}, {"FORCE_COLOR": ""},
    {"TTY_COMPATIBLE": "1"}, {"TTY_COMPATIBLE": "0", "FORCE_COLOR": "1"}, {"TTY_COMPATIBLE": "x", "COLUMNS": "33"},
])
@pytest.mark.parametrize("stderr", [False, True])
def test_the_stream_rules_are_richs(monkeypatch, environment, stderr):
    for name in ("COLUMNS", "LINES", "FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    console = Console(stderr=stderr, highlight=False, soft_wrap=False)
    width = plain.plain_width(stderr)
    if console.is_terminal:
        assert width is None
    else:
        assert width == console.width


# ---------------------------------------------------------------------------------------------
# Whole commands: the same output through rich and without it

DATA = Path(__file__).resolve().parents[1] / "data"


def _both(monkeypatch, args: list[str], without_rich: bool) -> tuple[str, str]:
    from bm25lab.cli import common

    runner = CliRunner()
    app = build_app([args[0]])
    consoles = []
    original = common.console
    monkeypatch.setattr(common, "console", lambda stderr=False: consoles.append(stderr) or original(stderr))
    plain_run = runner.invoke(app, args)
    assert not consoles or not without_rich  # no table or line needed rich
    with monkeypatch.context() as patch:
        patch.setattr(plain, "plain_width", lambda stderr=False: None)  # rich prints everything
        rich_run = runner.invoke(app, args)
    assert consoles  # rich printed
    assert plain_run.exit_code == rich_run.exit_code == 0, (plain_run.output, rich_run.output)
    return plain_run.output, rich_run.output


@pytest.mark.parametrize(("args", "without_rich"), [
    (["evaluate", "cranfield", "{run}"], True),
    (["evaluate", "cranfield", "{run}", "-q", "-m", "all_trec"], True),
    (["evaluate", "cranfield", "{run}", "{run}", "-m", "P@5", "-m", "nDCG@10"], True),
    (["measures"], False),  # its definitions hold "[" (markup for rich)
    (["corpora"], False),
])
def test_a_commands_output_is_the_same_without_rich(monkeypatch, tmp_path, args, without_rich):
    from bm25lab import corpora
    from bm25lab.evaluation import write_run

    run = tmp_path / "run.trec"
    qrels = corpora.get("cranfield").qrels()
    write_run({q: {d: 1.0 / (i + 1) for i, d in enumerate(qrels.docs.slice(a, b - a).to_pylist())}
               for q, a, b in zip(qrels.qids, qrels.offsets[:-1].tolist(), qrels.offsets[1:].tolist())}, run)
    mine, richs = _both(monkeypatch, [arg.format(run=run) for arg in args], without_rich)
    assert mine == richs


def test_the_search_table_is_the_same_without_rich(monkeypatch, tmp_path):
    from bm25lab.engine import Index, Tokenizer

    docs = [{"id": f"doc-{i}", "title": f"the boundary layer, part {i} " * (i % 3 + 1),
             "text": " ".join(["flow"] * i + ["boundary layer transition"] + ["turbulence and heat"] * (20 - i))}
            for i in range(12)]
    Index.build(docs, tokenizer=Tokenizer("en"), workers=1).save(tmp_path / "idx")
    for query in ("boundary transition", "heat"):
        mine, richs = _both(monkeypatch, ["search", str(tmp_path / "idx"), query, "-k", "7"], True)
        assert mine == richs and "…" in mine
