"""Readers never fail while a writer commits: real processes, sustained, on an index whose load
overlaps commits. The short run of tests/benchmarks/soak_readers.py (its 35-second run is the
issue's bar): a writer process commits about 50 times a second (deletions, additions, merges that
remove segment folders) while `bm25lab search` processes and a library process load and search the
index over and over. Before readers pinned the files they open, this failed within seconds
("missing index file; rebuild the index", FileNotFoundError, "unable to open database file")."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SOAK = Path(__file__).resolve().parents[1] / "benchmarks" / "soak_readers.py"


@pytest.mark.parametrize("shards", [None, 3])
def test_readers_never_fail_while_a_writer_commits(tmp_path: Path, shards: int | None) -> None:
    # shards: the same on a sharded index (its readers pin the statistics and every shard's files
    # before reading any, and read shards.json again when a commit came first)
    # what makes the run mean something: many commits, and many loads during which the manifest
    # changed; the soak goes on past its 5 s until each participant has done its part (at most 120 s),
    # so these counts do not depend on the machine's speed (a sharded commit writes and fsyncs the
    # statistics and every changed shard's manifest too: fewer a second)
    minimum = {"commits": 50 if shards else 100, "overlapping-loads": 20, "cli-searches": 3, "library-searches": 50}
    result = subprocess.run([sys.executable, str(SOAK), "--seconds", "5", "--docs", "8000", "--rate", "200",
                             "--cli-readers", "1", "--folder", str(tmp_path / "index"), "--json",
                             "--max-seconds", "120", *(a for k, v in minimum.items() for a in (f"--min-{k}", str(v)))]
                            + (["--shards", str(shards)] if shards else []),
                            capture_output=True, text=True, cwd=tmp_path, timeout=300)
    counts = json.loads(result.stdout.strip().splitlines()[-1])
    assert counts["failures"] == 0 and result.returncode == 0, counts["errors"]
    assert counts["writer_errors"] == []
    assert counts["commits"] >= minimum["commits"] and counts["overlapping_loads"] >= minimum["overlapping-loads"], counts
    assert counts["cli_searches"] >= minimum["cli-searches"], counts
    assert counts["library_searches"] >= minimum["library-searches"], counts
