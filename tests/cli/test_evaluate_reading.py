"""`bm25lab evaluate` reads the qrels and its first run at once (the run in a second thread): the
figures, the notes and the order of errors are those of reading them one after the other."""
from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from bm25lab.cli import app
from bm25lab.evaluation import evaluate, read_qrels, read_run

runner = CliRunner()
RUN = "".join(f"q{i % 3} Q0 d{i} {i} {(i * 7) % 5}.5 t\n" for i in range(40))
QRELS = "".join(f"q{i % 3} 0 d{i} {i % 3}\n" for i in range(0, 40, 2))


def write(tmp_path: Path, name: str, text: str) -> str:
    (tmp_path / name).write_text(text)
    return str(tmp_path / name)


def test_two_runs_give_the_library_figures(tmp_path):
    qrels, first = write(tmp_path, "qrels", QRELS), write(tmp_path, "a.run", RUN)
    second = write(tmp_path, "b.run", RUN.replace(".5 t", ".25 u"))
    result = runner.invoke(app, ["evaluate", qrels, first, second, "-m", "AP", "-m", "P@5", "--format", "trec"])
    assert result.exit_code == 0, result.output
    for path, tag in ((first, "t"), (second, "u")):
        expected = evaluate(read_qrels(qrels), read_run(path), ["AP", "P@5"]).mean
        lines = [line.split() for line in result.stdout.splitlines()]
        assert ["runid", "all", tag] in lines
        assert any(line[0] == "AP" and float(line[2]) == round(expected["AP"], 4) for line in lines)


def test_bad_qrels_are_reported_before_a_bad_run(tmp_path):
    qrels = write(tmp_path, "qrels", QRELS + "q1 0 d99 x\n")
    run = write(tmp_path, "run", RUN + "q1 Q0 d77 2.0 t\n")  # 5 fields on line 41
    result = runner.invoke(app, ["evaluate", qrels, run])
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [f"bm25lab: error: {qrels}:21: relevance 'x' is not a number"]


def test_a_bad_run_after_good_qrels_names_its_line(tmp_path):
    qrels = write(tmp_path, "qrels", QRELS)
    run = write(tmp_path, "run", RUN + "q1 Q0 d77 2.0 t\n")
    result = runner.invoke(app, ["evaluate", qrels, run])
    assert result.exit_code == 1
    expected = f"bm25lab: error: {run}:41: expected 6 fields (TREC run: qid Q0 docid rank score tag), found 5"
    assert result.stderr.strip().splitlines() == [expected]


def test_a_missing_run_and_the_notes_of_both_files(tmp_path):
    qrels = write(tmp_path, "qrels", QRELS)
    missing = runner.invoke(app, ["evaluate", qrels, str(tmp_path / "none.run")])
    assert missing.exit_code == 1 and "none.run" in missing.stderr and "Traceback" not in missing.output
    smart = write(tmp_path, "smart", "".join(f"q{i % 3} d{i} 0 0\n" for i in range(0, 40, 2)))
    noted = runner.invoke(app, ["evaluate", smart, write(tmp_path, "run", RUN), "-m", "P@5", "--format", "trec"])
    assert noted.exit_code == 0, noted.output
    assert "read as SMART qrels" in noted.stderr


def _without_avx512() -> dict[str, str]:
    """The environment of a process whose numpy dispatches no AVX-512 code (NPY_DISABLE_CPU_FEATURES names
    its dispatch targets of AVX-512: X86_V4, AVX512_* in numpy 2, AVX512F... in numpy 1) and whose pyarrow
    chooses none either (ARROW_USER_SIMD_LEVEL)."""
    import os

    from numpy._core._multiarray_umath import __cpu_dispatch__  # type: ignore[import-not-found]

    targets = [t for t in __cpu_dispatch__ if "AVX512" in t or t == "X86_V4"]
    return {**os.environ, "NPY_DISABLE_CPU_FEATURES": " ".join(targets), "ARROW_USER_SIMD_LEVEL": "AVX2"}


def test_the_figures_are_the_same_without_avx512(tmp_path):
    # the whole command in new processes, numpy's SIMD dispatch limited in one: the same bytes out
    import subprocess
    import sys

    import numpy as np

    rng = np.random.default_rng(7)
    lines = [f"q{q} Q0 d{d} {r} {s!r} t" for q in range(40) for r, (d, s) in
             enumerate(zip(rng.permutation(3000)[:300], np.sort(rng.gamma(2.0, 3.0, 300))[::-1].tolist()))]
    run = write(tmp_path, "run", "\n".join(lines) + "\n")
    qrels = write(tmp_path, "qrels", "".join(f"q{q} 0 d{d} {d % 4}\n" for q in range(40) for d in range(0, 3000, 7)))
    command = [sys.executable, "-c", "from bm25lab.cli import main; main()", "evaluate", qrels, run, "-q",
               "--format", "json", "-m", "P@10", "-m", "R@100", "-m", "nDCG@10", "-m", "nDCG", "-m", "AP", "-m",
               "RR", "-m", "bpref", "-m", "Rprec", "-m", "AUC"]
    usual = subprocess.run(command, capture_output=True, check=True, cwd=tmp_path, timeout=300)
    limited = subprocess.run(command, capture_output=True, check=True, cwd=tmp_path, timeout=300,
                             env=_without_avx512())
    assert usual.stdout == limited.stdout and b'"AP"' in usual.stdout
