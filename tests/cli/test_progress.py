"""Progress tells the truth: what the library reports reaches the display as a count, the total, a rate and
the time left (issue 28's mutation audit: index's total set to 0 passed every test). A fake sink stands in
for the display and records every tick; no test depends on how fast the work goes."""
from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from bm25lab.cli import app, common

RAW = Path(__file__).parents[1] / "data" / "raw"


class FakeSink:
    def __init__(self) -> None:
        self.ticks: list[common.Tick] = []
        self.closed = False

    def show(self, tick: common.Tick) -> None:
        self.ticks.append(tick)

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def sink(monkeypatch: pytest.MonkeyPatch) -> FakeSink:
    fake = FakeSink()
    monkeypatch.setattr(common, "make_sink", lambda quiet: common.QuietSink() if quiet else fake)
    return fake


def invoke(*args: object) -> None:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output


def told(sink: FakeSink, label: str, total: int) -> list[common.Tick]:
    """The ticks of one piece of work, checked: counts never go back and end at the total, which was told;
    once work is done there is a rate, and with the total the time left."""
    ticks = [t for t in sink.ticks if t.label == label]
    assert ticks and sink.closed
    assert [t.done for t in ticks] == sorted(t.done for t in ticks)
    assert ticks[-1].done == total and ticks[-1].total == total
    assert all(t.total in (None, total) for t in ticks)
    assert all(t.rate is not None and t.rate > 0 for t in ticks if t.done)
    assert all(t.left is not None and t.left >= 0 for t in ticks if t.done and t.total is not None)
    assert ticks[-1].left == 0
    assert ticks[-1].text().startswith(f"{total:,}/{total:,} ")
    return ticks


def test_index_tells_the_total_and_the_rate(sink: FakeSink, tmp_path: Path) -> None:
    invoke("index", RAW / "cisi" / "CISI.ALL", "--out", tmp_path / "idx")  # the total counted from the file
    ticks = told(sink, f"indexing {RAW / 'cisi' / 'CISI.ALL'}", 1460)
    assert ticks[0].done == 0  # shown from the start, before the first batch is done


def test_index_of_a_bundled_collection(sink: FakeSink, tmp_path: Path) -> None:
    invoke("index", "cranfield", "--out", tmp_path / "idx")
    told(sink, "indexing cranfield", 1400)


def test_run_and_tune_tell_theirs(sink: FakeSink, tmp_path: Path) -> None:
    invoke("index", "cranfield", "--out", tmp_path / "idx", "--quiet")
    assert not sink.ticks  # --quiet: no display at all
    invoke("run", tmp_path / "idx", "cranfield", "--out", tmp_path / "bm25.run", "-k", "10")
    told(sink, "searching", 225)
    invoke("tune", tmp_path / "idx", "cranfield", "cranfield", "--k1-grid", "0.9,1.2", "--b-grid", "0.4,0.75,1",
           "--folds", "2")
    told(sink, "tuning k1 x b", 6)


def test_experiment_shows_an_indexing_only_when_it_indexes(sink: FakeSink) -> None:
    invoke("experiment", "cisi", "-m", "AP", "--rebuild")  # indexed into the cache
    told(sink, "indexing cisi", 1460)
    sink.ticks.clear()
    invoke("experiment", "cisi", "-m", "AP")  # from the cache: nothing to index
    assert not [t for t in sink.ticks if t.label.startswith("indexing")]
    told(sink, "searching", 76)


def test_lines_when_not_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    lines = common.LineSink(every=0.0)
    meter = common.Meter(lines, "indexing x", "docs", lambda: 10)
    meter(4)
    meter.finish()
    meter(10)
    lines.close()
    printed = capsys.readouterr().err.splitlines()
    assert printed[0] == "bm25lab: indexing x: 0 docs" or printed[0].startswith("bm25lab: indexing x: 0")
    assert any(line.startswith("bm25lab: indexing x: 4/10 docs, ") and "docs/s" in line and " left (" in line
               for line in printed)
    assert printed[-1].startswith("bm25lab: indexing x: 10/10 docs, ") and "0:00:00 left (" in printed[-1]
    assert printed[-1].endswith(" elapsed)")


def test_lines_keep_coming_while_the_work_is_silent(capsys: pytest.CaptureFixture[str]) -> None:
    import time

    lines = common.LineSink(every=0.05)
    meter = common.Meter(lines, "indexing y", "docs", lambda: 10)
    deadline, printed = time.monotonic() + 30, ""
    while printed.count("indexing y: 0/10 docs") < 2 and time.monotonic() < deadline:
        time.sleep(0.05)  # no tick comes: the heartbeat says the count, the total and the time elapsed
        printed += capsys.readouterr().err
    meter(10)
    lines.close()
    assert time.monotonic() < deadline
