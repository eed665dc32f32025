"""`bm25lab evaluate` and `compare` keep freed memory for reuse (glibc's mallopt, pyarrow's system pool)
and take small pages for numpy's arrays when their files are large: process-wide choices made by the
commands, never on import nor for small files, that change no figure."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

RUN = "".join(f"q{i % 4} Q0 d{i} {i} {(i * 7) % 11}.5 t\n" for i in range(80))
QRELS = "".join(f"q{i % 4} 0 d{i} {(i // 3) % 3}\n" for i in range(0, 80, 3))


def _python(code: str, cwd: Path) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, check=True).stdout


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux only")
@pytest.mark.parametrize("large", [True, False])
def test_the_evaluate_command_reuses_freed_memory_and_gives_the_library_figures(tmp_path, large):
    # large: the files count as large (the threshold lowered to 0 bytes); else they are small and the
    # process's settings are left as they are
    (tmp_path / "run").write_text(RUN)
    (tmp_path / "qrels").write_text(QRELS)
    # numpy's switch returns whether huge pages were asked for (np._core: numpy 2; np.core: numpy 1)
    huge_pages = "(getattr(np, '_core', None) or np.core).multiarray._set_madvise_hugepage(True)"
    imported = _python("import sys, bm25lab.cli; import numpy as np; import pyarrow as pa; "
                       f"print(pa.default_memory_pool().backend_name, {huge_pages})", tmp_path)
    assert imported.split()[0] != "system" and imported.split()[1] == "True"  # importing the CLI changes nothing
    command = _python(
        "import sys; from bm25lab.cli import main, common; import numpy as np; import pyarrow as pa\n"
        f"common._LARGE_FILES = {0 if large else 1 << 26}\n"
        "sys.argv = ['bm25lab', 'evaluate', 'qrels', 'run', '-m', 'AP', '-m', 'nDCG@10', '--format', 'trec']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"print(pa.default_memory_pool().backend_name, {huge_pages})", tmp_path)
    *lines, settings = command.strip().splitlines()
    assert settings == ("system False" if large else f"{imported.split()[0]} True")
    from bm25lab.evaluation import evaluate, read_qrels, read_run

    result = evaluate(read_qrels(tmp_path / "qrels"), read_run(tmp_path / "run"), ["AP", "nDCG@10"])
    printed = {line.split()[0]: float(line.split()[2]) for line in lines if line.split()[0] in ("AP", "nDCG@10")}
    assert printed["AP"] == round(result.mean["AP"], 4) and printed["nDCG@10"] == round(result.mean["nDCG@10"], 4)
