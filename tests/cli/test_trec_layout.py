"""`evaluate --trec-eval 10 --format trec` prints what the trec_eval 10.0 program prints, byte for byte:
its measure order, its names (``rbp``, ``P_5``, ``recall_1000``), ``runid`` and ``num_q`` after the queries'
lines, the queries in byte order of their ids. The golden files are the program's own output (NIST's
test suite in ``quicktest/``; ``printed/`` made by ``printed/make.sh``); the tests never run it."""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bm25lab.cli import app

GOLDEN = Path(__file__).parents[1] / "evaluation" / "golden" / "trec_eval_10"
QUICKTEST = {  # NIST's expected outputs of its `make quicktest` (-a is -m all_trec)
    "out.test": ("qrels.test", "results.test", ["-m", "official"]),
    "out.test.a": ("qrels.test", "results.test", ["-m", "all_trec"]),
    "out.test.aq": ("qrels.test", "results.test", ["-q", "-m", "all_trec"]),
    "out.test.aqc": ("qrels.test", "results.trunc", ["-q", "-c", "-m", "all_trec"]),
    "out.test.aqcM": ("qrels.test", "results.trunc", ["-q", "-c", "-M", "100", "-m", "all_trec"]),
}


def printed(qrels: Path, run: Path, args: list[str]) -> bytes:
    result = CliRunner().invoke(app, ["evaluate", str(qrels), str(run), *args, "--trec-eval", "10", "--format", "trec"])
    assert result.exit_code == 0, result.output
    return result.stdout_bytes


@pytest.mark.parametrize("case", list(QUICKTEST))
def test_trec_evals_own_test_outputs_byte_for_byte(case: str) -> None:
    qrels, run, args = QUICKTEST[case]
    folder = GOLDEN / "quicktest"
    assert printed(folder / qrels, folder / run, args) == (folder / case).read_bytes()


def cases() -> list[tuple[str, list[str]]]:
    lines = (GOLDEN / "printed" / "CASES").read_text().splitlines()
    return [(name, args.split()) for name, args in (line.split("|") for line in lines if line.strip())]


@pytest.mark.parametrize("name,args", cases(), ids=[name for name, _ in cases()])
def test_a_real_run_byte_for_byte(name: str, args: list[str], tmp_path: Path) -> None:
    run = tmp_path / "bm25.run"
    run.write_bytes(gzip.decompress((GOLDEN / "cranfield" / "bm25-top100.run.gz").read_bytes()))
    # bm25lab always prints runid and num_q, which trec_eval prints when asked (-m runid -m num_q) or in a nickname
    ours = [a for i, a in enumerate(args) if a not in ("runid", "num_q") and not (a == "-m" and args[i + 1] in
                                                                                 ("runid", "num_q"))]
    expected = gzip.decompress((GOLDEN / "printed" / f"{name}.out.gz").read_bytes())
    assert printed(GOLDEN / "cranfield" / "qrels.trec", run, ours) == expected
