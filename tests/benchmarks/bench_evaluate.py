"""Speed of evaluation, files to results: bm25lab vs parsing + pytrec_eval (and trec_eval, if installed).

Not collected by pytest. Run ``python tests/benchmarks/bench_evaluate.py [--queries 10000] [--depth 1000]``:
it writes a run of ``queries x depth`` lines (scores with 3 decimals, so ties occur, in rank order as
retrieval systems write them) and graded qrels (about 50 judgments per query, half of them on
retrieved documents) into a temporary folder, then times, three times each, in one process:

- bm25lab: ``read_qrels`` + ``read_run`` + ``evaluate`` of the measures below;
- pytrec_eval: its ``parse_qrel`` / ``parse_run`` + ``RelevanceEvaluator.evaluate`` of the same measures;
- ``bm25lab evaluate QRELS RUN`` as a fresh process (the command a user runs: start-up, reading,
  measuring, printing the means);
- trec_eval (the C program) as a fresh process with the same measures, when a binary is given with
  ``--trec-eval PATH`` or a ``trec_eval`` is on PATH (none can be installed from the package
  registries; build it from its source).

It prints the medians, the ratios, and checks that bm25lab and pytrec_eval agree on every
per-query value.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

MEASURES = ["P@10", "R@100", "nDCG@10", "nDCG", "AP", "RR", "bpref", "Rprec"]


def generate(folder: Path, queries: int, depth: int, seed: int = 0) -> tuple[Path, Path]:
    """Write run.trec and qrels.trec for a synthetic collection of 2 million documents."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    rng = np.random.default_rng(seed)
    collection = 2_000_000
    n = queries * depth
    qid = np.repeat(np.arange(queries), depth)
    doc = rng.integers(0, collection, n)
    # make documents distinct within each query: offset each slot into its own stripe
    stripe = collection // depth
    doc = np.tile(np.arange(depth), queries) * stripe + doc % stripe
    score = -np.sort(-np.round(rng.gamma(2.0, 3.0, (queries, depth)), 3), axis=1).ravel()
    rank = np.tile(np.arange(1, depth + 1), queries)

    def ids(prefix: str, values: np.ndarray) -> pa.Array:
        return pc.binary_join_element_wise(prefix, pa.array(values).cast(pa.string()), "")

    write = pcsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
    run = pa.table({"q": ids("q", qid), "i": pa.repeat(pa.scalar("Q0"), n), "d": ids("D", doc),
                    "r": pa.array(rank), "s": pa.array(score), "t": pa.repeat(pa.scalar("bench"), n)})
    run_path = folder / "run.trec"
    pcsv.write_csv(run, run_path, write)

    judged_ret = rng.random(n) < 25 / depth
    extra = queries * 25
    qrel_q = np.concatenate([qid[judged_ret], rng.integers(0, queries, extra)])
    qrel_d = np.concatenate([doc[judged_ret], rng.integers(0, collection, extra)])
    qrel_q, first = np.unique(qrel_q * collection + qrel_d, return_index=True)
    qrel_q, qrel_d = qrel_q // collection, qrel_q % collection
    grade = rng.choice([0, 0, 1, 1, 2, 3], qrel_q.size)
    qrels = pa.table({"q": ids("q", qrel_q), "i": pa.repeat(pa.scalar("0"), qrel_q.size), "d": ids("D", qrel_d),
                      "g": pa.array(grade)})
    qrels_path = folder / "qrels.trec"
    pcsv.write_csv(qrels, qrels_path, write)
    return run_path, qrels_path


def time_bm25lab(run_path: Path, qrels_path: Path) -> tuple[float, float, dict]:
    from bm25lab.evaluation import evaluate, read_qrels, read_run

    start, cpu = time.perf_counter(), time.process_time()
    result = evaluate(read_qrels(qrels_path), read_run(run_path), MEASURES)
    return time.perf_counter() - start, time.process_time() - cpu, result.per_query


def time_pytrec_eval(run_path: Path, qrels_path: Path) -> tuple[float, float, dict]:
    import pytrec_eval

    from bm25lab.evaluation.measures import parse_measure

    names = {parse_measure(m).trec_eval_name for m in MEASURES}
    start, cpu = time.perf_counter(), time.process_time()
    with open(qrels_path) as f:
        qrels = pytrec_eval.parse_qrel(f)
    with open(run_path) as f:
        run = pytrec_eval.parse_run(f)
    values = pytrec_eval.RelevanceEvaluator(qrels, names).evaluate(run)
    return time.perf_counter() - start, time.process_time() - cpu, values


def time_command(command: list[str], cwd: Path) -> float:
    """Wall seconds of ``command`` run in ``cwd`` (an empty folder: no checkout shadows bm25lab)."""
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, cwd=cwd)
    return time.perf_counter() - start


def trec_eval_command(binary: str, run_path: Path, qrels_path: Path) -> list[str]:
    return [binary, "-m", "P.10", "-m", "recall.100", "-m", "ndcg_cut.10", "-m", "ndcg", "-m", "map",
            "-m", "recip_rank", "-m", "bpref", "-m", "Rprec", str(qrels_path), str(run_path)]


def bm25lab_command(run_path: Path, qrels_path: Path) -> list[str]:
    measures = [arg for m in MEASURES for arg in ("-m", m)]
    return [sys.executable, "-c", "from bm25lab.cli import main; main()", "evaluate", str(qrels_path),
            str(run_path), *measures, "--format", "trec"]


def agree(ours: dict, theirs: dict) -> float:
    from bm25lab.evaluation.measures import parse_measure

    worst = 0.0
    for qid, values in theirs.items():
        for m in MEASURES:
            worst = max(worst, abs(values[parse_measure(m).trec_eval_name] - ours[qid][m]))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--trec-eval", help="path of a trec_eval binary (default: trec_eval on PATH, if any)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run_path, qrels_path = generate(Path(tmp), args.queries, args.depth)
        cwd = Path(tmp) / "cwd"
        cwd.mkdir()
        print(f"run: {args.queries} queries x {args.depth} documents, {run_path.stat().st_size / 1e6:.0f} MB; "
              f"qrels {qrels_path.stat().st_size / 1e6:.1f} MB; measures {', '.join(MEASURES)}")
        ours, theirs, c_times, cli_times = [], [], [], []
        binary = args.trec_eval or shutil.which("trec_eval")
        for _ in range(args.repeats):
            *seconds, ours_values = time_bm25lab(run_path, qrels_path)
            ours.append(seconds)
            *seconds, their_values = time_pytrec_eval(run_path, qrels_path)
            theirs.append(seconds)
            cli_times.append(time_command(bm25lab_command(run_path, qrels_path), cwd))
            if binary:
                c_times.append(time_command(trec_eval_command(binary, run_path, qrels_path), cwd))
        for label, times in (("bm25lab read + evaluate", ours), ("pytrec_eval parse + evaluate", theirs)):
            walls = ", ".join(f"{w:.2f}" for w, _ in times)
            print(f"{label:30s} wall median {statistics.median(w for w, _ in times):6.2f} s (runs {walls}); "
                  f"CPU median {statistics.median(c for _, c in times):6.2f} s")
        a, b = statistics.median(w for w, _ in ours), statistics.median(w for w, _ in theirs)
        ca, cb = statistics.median(c for _, c in ours), statistics.median(c for _, c in theirs)
        print(f"ratio bm25lab / pytrec_eval:   wall {a / b:.3f}, CPU {ca / cb:.3f}")
        cli = statistics.median(cli_times)
        print(f"bm25lab evaluate (command):    median {cli:6.2f} s; ratio to pytrec_eval parse + evaluate {cli / b:.3f}")
        if c_times:
            c = statistics.median(c_times)
            version = subprocess.run([binary, "-v"], capture_output=True, text=True)
            name = (version.stdout + version.stderr).strip() or binary
            print(f"trec_eval (C, {name}):  median {c:6.2f} s; ratio bm25lab evaluate (command) / trec_eval {cli / c:.3f}")
        else:
            print("trec_eval (C): no trec_eval binary given or on PATH, not timed")
        print(f"largest per-query difference from pytrec_eval: {agree(ours_values, their_values):.2e}")


if __name__ == "__main__":
    main()
