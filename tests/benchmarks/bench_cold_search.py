"""Cold-process search: wall time of ``bm25lab search DIR "query"`` started as a fresh process.

    python tests/benchmarks/bench_cold_search.py            # median of 5 runs per command
    python tests/benchmarks/bench_cold_search.py --reps 9 --workdir /tmp/cold-indexes

Indexes of Cranfield (English, ``Tokenizer("en")``) and CMRC 2018 (Chinese, ``Tokenizer("zh")``) are
built with the library and saved. Then each command below runs ``--reps`` times as a subprocess,
the commands alternating, after one untimed run of each (so the OS file cache and bm25lab's jieba
dictionary cache are warm, as on a user's machine after the first search):

- ``python -c pass``: the interpreter's own start, the floor of any Python command;
- ``python -c "import jieba; jieba.initialize()"``: jieba's dictionary load, the Chinese floor;
- ``bm25lab search DIR QUERY`` on each index (the installed console script, run directly, not
  through a pyenv shim);
- ``python -c "from bm25lab import Index; Index.load(DIR).search(QUERY)"``: the same work without the
  command line, to separate the CLI's import cost from the engine's. If the CLI fails, its rows say
  so and this row is the one to read.

Targets: English at most 0.5 s; Chinese: close to the jieba floor.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402

COLLECTIONS = {"cranfield": "en", "cmrc2018": "zh"}


def build_indexes(workdir: Path) -> dict[str, tuple[Path, str]]:
    """Save the two indexes (reused when present); returns {name: (directory, first judged query)}."""
    from bm25lab import corpora
    from bm25lab.engine import Index, Tokenizer, storage

    out = {}
    for name, language in COLLECTIONS.items():
        corpus = corpora.get(name)
        directory = workdir / name
        if not (directory / storage.MANIFEST).exists():
            Index.build(corpus.documents(), tokenizer=Tokenizer(language)).save(directory, overwrite=True)
        out[name] = (directory, next(iter(corpus.judged_queries().values())))
    return out


def cli_executable() -> list[str]:
    """The ``bm25lab`` console script next to this interpreter (pyenv shims add ~0.1 s of bash)."""
    beside = Path(sys.executable).parent / "bm25lab"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("bm25lab")
    return [found] if found else [sys.executable, "-m", "bm25lab"]


def commands(indexes: dict[str, tuple[Path, str]]) -> dict[str, list[str]]:
    py = sys.executable
    cmds = {
        "python -c pass": [py, "-c", "pass"],
        "jieba.initialize() (Chinese floor)": [py, "-c", "import jieba; jieba.setLogLevel(60); jieba.initialize()"],
    }
    for name, (directory, query) in indexes.items():
        cmds[f"bm25lab search ({name})"] = cli_executable() + ["search", str(directory), query]
        code = f"from bm25lab import Index; Index.load({str(directory)!r}).search({query!r}, 10)"
        cmds[f"python -c Index.load().search() ({name})"] = [py, "-c", code]
    return cmds


def run_once(cmd: list[str], cwd: Path) -> tuple[float, int, str]:
    seconds, done = bl.timed(lambda: subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, check=False))
    return seconds, done.returncode, done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""


def run(workdir: Path, reps: int) -> dict[str, Any]:
    indexes = build_indexes(workdir)
    cmds = commands(indexes)
    cwd = workdir / "cwd"  # an empty folder: bm25lab as installed, as a user runs it (no PYTHONPATH)
    cwd.mkdir(exist_ok=True)
    failures = {name: err for name, cmd in cmds.items() for _, code, err in [run_once(cmd, cwd)] if code != 0}
    names = [n for n in cmds if n not in failures]
    times: dict[str, list[float]] = {n: [] for n in names}
    for rep in range(reps):
        shift = rep % len(names)
        for name in names[shift:] + names[:shift]:
            seconds, code, err = run_once(cmds[name], cwd)
            if code != 0:
                failures[name] = err
            times[name].append(seconds)
    return {"median_s": {n: bl.median(v) for n, v in times.items() if n not in failures},
            "failures": failures, "queries": {n: q for n, (_, q) in indexes.items()}}


def report(results: dict[str, Any]) -> str:
    cold = results["cold"]
    rows = [(name, f"{s:.3f}") for name, s in cold["median_s"].items()]
    rows += [(name, f"FAILED: {err}") for name, err in cold["failures"].items()]
    return "\n".join([f"### Cold-process search (median wall seconds of {results['reps']} fresh processes)",
                      bl.markdown_table(["command", "seconds"], rows),
                      f"queries: {cold['queries']}"])


def summary_rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    med = results["cold"]["median_s"]
    floor = med.get("jieba.initialize() (Chinese floor)")
    rows = []
    for name, target in (("cranfield", 0.5), ("cmrc2018", None)):
        cli = f"bm25lab search ({name})"
        api = f"python -c Index.load().search() ({name})"
        used, label = (cli, "CLI") if cli in med else (api, "python -c, CLI failed")
        if used not in med:
            continue
        lab = med[used]
        if target is not None:
            rows.append({"case": f"cold search, English ({name}, {label}) (s)", "bm25lab": f"{lab:.3f}",
                         "peer": "target 0.5 s", "ratio": lab / target, "target": "<= 0.5 s", "met": lab <= target})
        elif floor:
            rows.append({"case": f"cold search, Chinese ({name}, {label}) (s)", "bm25lab": f"{lab:.3f}",
                         "peer": f"jieba.initialize(): {floor:.3f}", "ratio": lab / floor,
                         "target": "close to 1", "met": None})
    return rows


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--small", action="store_true", help="accepted for run_all; same as --reps 3")
    parser.add_argument("--workdir", help="where to save the indexes (kept); default: a temporary folder")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    reps = 3 if args.small and args.reps == 5 else args.reps
    info = bl.machine_info()
    print(bl.machine_line(info), flush=True)
    temp = None if args.workdir else tempfile.mkdtemp(prefix="bm25lab-bench-cold-")
    workdir = Path(args.workdir or temp)
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        cold = run(workdir, reps)
    finally:
        if temp:
            shutil.rmtree(temp, ignore_errors=True)
    results = {"machine": info, "reps": reps, "cold": cold}
    results["summary"] = summary_rows(results)
    print(report(results))
    bl.write_json(args.json, results)
    return results


if __name__ == "__main__":
    main()
