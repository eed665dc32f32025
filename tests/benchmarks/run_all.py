"""Run every side-by-side benchmark and print one Markdown summary, ready to paste in the README.

    python tests/benchmarks/run_all.py --small                  # a few minutes
    python tests/benchmarks/run_all.py --results /tmp/bench     # full sizes; JSON per script kept there
    python tests/benchmarks/run_all.py --results /tmp/bench --summarise    # reprint from saved JSON
    python tests/benchmarks/run_all.py --only search,memory --search-args "--reps 5"

Each benchmark runs as its own process (``bench_<name>.py --json RESULTS/<name>.json``), so one
system's memory or JIT state never leaks into another's figures; their own tables stream to the
terminal as they finish. ``bench_engines`` starts a fresh process per system itself (bm25lab's
public API beside PISA, tantivy, bm25s and rank-bm25). ``bench_evaluate.py`` (the evaluation
benchmark) is run too; its output is appended as printed, since its format is its own. Every
benchmark runs in an empty temporary folder, so bm25lab is the installed package, never the
checkout's ``bm25lab/`` folder.

Summary columns: the bm25lab figure, the peer's, ``ratio`` = bm25lab / peer in time (or resource)
units, so below 1 means bm25lab is faster or smaller; ``target`` is the issue's bound on that ratio.
"""
from __future__ import annotations

import argparse
import json
import math
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Sequence

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import benchlib as bl  # noqa: E402

BENCHMARKS = ("engines", "search", "memory", "cold_search", "tokenize")
EVALUATE_SCRIPT = HERE / "bench_evaluate.py"
CWD = Path(tempfile.mkdtemp(prefix="bm25lab-bench-cwd-"))  # empty: nothing in it shadows an installed package


def run_benchmark(name: str, results: Path, small: bool, extra: Sequence[str]) -> int:
    cmd = [sys.executable, str(HERE / f"bench_{name}.py"), "--json", str(results / f"{name}.json")]
    cmd += (["--small"] if small else []) + list(extra)
    print(f"\n## {' '.join(cmd)}", flush=True)
    return subprocess.run(cmd, check=False, cwd=CWD).returncode


def run_evaluate(results: Path, small: bool, extra: Sequence[str]) -> str | None:
    """Run bench_evaluate.py if present; its stdout (also saved to RESULTS/evaluate.txt)."""
    if not EVALUATE_SCRIPT.exists():
        return None
    helptext = subprocess.run([sys.executable, str(EVALUATE_SCRIPT), "--help"], capture_output=True, text=True,
                              check=False, cwd=CWD).stdout
    cmd = [sys.executable, str(EVALUATE_SCRIPT)]
    if small:  # its own small switch if it has one, else a tenth of the queries
        cmd += ["--small"] if "--small" in helptext else ["--queries", "1000"] if "--queries" in helptext else []
    cmd += list(extra)
    print(f"\n## {' '.join(cmd)}", flush=True)
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=CWD)
    out = done.stdout + (f"\n(exit code {done.returncode}: {done.stderr.strip()[-500:]})" if done.returncode else "")
    print(out, flush=True)
    (results / "evaluate.txt").write_text(out, encoding="utf-8")
    return out


def load_results(results: Path) -> dict[str, dict[str, Any]]:
    return {name: json.loads((results / f"{name}.json").read_text(encoding="utf-8"))
            for name in BENCHMARKS if (results / f"{name}.json").exists()}


def summary(loaded: dict[str, dict[str, Any]], evaluate: str | None) -> str:
    machine = next((r["machine"] for r in loaded.values()), bl.machine_info())
    rows = []
    for name, res in loaded.items():
        for row in res.get("summary", []):
            ratio = row["ratio"]
            met = {True: "yes", False: "**no**", None: "-"}[row["met"]]
            rows.append((row["case"], row["bm25lab"], row["peer"],
                         "-" if ratio is None or math.isnan(ratio) else f"{ratio:.2f}", row["target"], met))
    runs = [f"- {name}: {r['machine']['date']}, bm25lab {r['machine'].get('bm25lab', 'unknown')}, "
            f"1-min load average at start {r['machine']['loadavg']}"
            + (f", at the end {r['loadavg_end']:.1f}" if "loadavg_end" in r else "") for name, r in loaded.items()]
    parts = ["## Benchmark summary", "", f"Machine: {bl.machine_line(machine)}.", "", "Runs:", *runs, "",
             bl.markdown_table(["case", "bm25lab", "peer", "ratio bm25lab/peer", "target", "met"], rows)]
    for name in ("engines", "search"):
        if name in loaded:
            parts += ["", f"Synthetic corpus of {name}: {loaded[name]['config']}."]
    if evaluate is not None:
        parts += ["", "### Evaluation (bench_evaluate.py, as printed)", "", "```", evaluate.strip(), "```"]
    return "\n".join(parts)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", action="store_true", help="small sizes everywhere (a few minutes)")
    parser.add_argument("--results", help="folder for the per-benchmark JSON (default: a temporary folder)")
    parser.add_argument("--only", default=",".join(BENCHMARKS + ("evaluate",)),
                        help="comma-separated subset of: " + ", ".join(BENCHMARKS + ("evaluate",)))
    parser.add_argument("--summarise", action="store_true", help="do not run; summarise the JSON in --results")
    for name in BENCHMARKS + ("evaluate",):
        parser.add_argument(f"--{name.replace('_', '-')}-args", default="", help=f"extra arguments for {name}")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    results = Path(args.results or tempfile.mkdtemp(prefix="bm25lab-bench-"))
    results.mkdir(parents=True, exist_ok=True)
    only = args.only.split(",")
    failed = []
    evaluate = None
    if not args.summarise:
        for name in BENCHMARKS:
            if name in only:
                extra = shlex.split(getattr(args, f"{name}_args"))
                if run_benchmark(name, results, args.small, extra) != 0:
                    failed.append(name)
        if "evaluate" in only:
            evaluate = run_evaluate(results, args.small, shlex.split(args.evaluate_args))
    elif (results / "evaluate.txt").exists():
        evaluate = (results / "evaluate.txt").read_text(encoding="utf-8")
    print("\n" + summary(load_results(results), evaluate))
    print(f"\n(JSON figures in {results})")
    shutil.rmtree(CWD, ignore_errors=True)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
