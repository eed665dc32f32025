"""Speed of evaluation, files to results: bm25lab vs pytrec_eval, ir_measures, ranx and trec_eval.

Not collected by pytest. Run ``python tests/benchmarks/bench_evaluate.py [--queries 10000] [--depth 1000]``
from an empty folder: it writes a run of ``queries x depth`` lines (scores with 3 decimals, so ties occur,
in rank order as retrieval systems write them) and graded qrels (about 50 judgments per query, half
of them on retrieved documents) into a temporary folder, then times, ``--repeats`` times each (medians
printed), every tool from the files to the results:

- bm25lab: ``read_qrels`` + ``read_run`` + ``evaluate`` of the measures below, in this process;
- pytrec_eval: its ``parse_qrel`` / ``parse_run`` + ``RelevanceEvaluator.evaluate``, in this process;
- ir_measures (``bench`` extra): ``read_trec_qrels`` / ``read_trec_run`` + ``iter_calc`` of its pytrec_eval
  provider, in this process;
- ranx (``bench`` extra): ``Qrels.from_file`` / ``Run.from_file`` + ``evaluate``, in this process (its
  numba functions compile on its first use: the first repetition pays for it, the median does not);
- ``bm25lab evaluate QRELS RUN`` as a fresh process (the command a user runs: start-up, reading,
  measuring, printing the means), wall and CPU time (the CPU time of the child: pyarrow's reader uses
  every core, trec_eval one);
- trec_eval (the C program) as a fresh process with the same measures, when a binary is given with
  ``--trec-eval PATH`` or a ``trec_eval`` is on PATH (none can be installed from the package
  registries; build it from its source).

``--shapes`` (issue 31) times only the two commands, ``bm25lab evaluate`` and trec_eval, side by side in turn, on
runs of several shapes (:data:`SHAPES`, or ``--shape DIGITS,IDS,ORDER`` repeated): scores with 3 or 17
significant digits, document ids short (``D123``) or long (``clueweb12-0013wb-45-00123``-like), lines sorted
(rank order, as systems write runs), shuffled within each query, or shuffled across the whole file; with
``--no-avx512`` both run as on a CPU without AVX-512 (:func:`no_avx512_environment`: numpy's and pyarrow's SIMD
dispatch and glibc's string functions limited to AVX2; the compiled core has no AVX-512 code to choose). It prints
each shape's medians of wall and CPU seconds and the ratios (target: wall <= 0.333).

It prints the medians, the ratios (``bm25lab evaluate`` (command) / trec_eval is issue 20's figure),
the 1-minute load average before and after, and checks agreement: every per-query value of bm25lab
against pytrec_eval (largest difference; 0 expected), the means of ir_measures against bm25lab's
(tolerance 1e-12: the same pytrec_eval underneath), and the means of ranx, reported as they are
(ranx follows its own conventions on some measures: ties, queries without relevant documents).
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

MEASURES = ["P@10", "R@100", "nDCG@10", "nDCG", "AP", "RR", "bpref", "Rprec"]


def generate(folder: Path, queries: int, depth: int, seed: int = 0, shape: str = "3,short,sorted") -> tuple[Path, Path]:
    """Write run.trec and qrels.trec for a synthetic collection of 2 million documents, the run of the
    shape ``DIGITS,IDS,ORDER`` (see the module's notes)."""
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
    digits, id_kind, order = shape.split(",")
    raw = rng.gamma(2.0, 3.0, (queries, depth))
    score = -np.sort(-(np.round(raw, 3) if digits == "3" else raw), axis=1).ravel()
    rank = np.tile(np.arange(1, depth + 1), queries)

    def ids(prefix: str, values: np.ndarray) -> pa.Array:
        return pc.binary_join_element_wise(prefix, pa.array(values).cast(pa.string()), "")

    def doc_ids(values: np.ndarray) -> pa.Array:
        if id_kind == "short":
            return ids("D", values)
        return pc.binary_join_element_wise(pa.array([f"clueweb12-{v // 100_000:04d}wb-{v // 1000 % 100:02d}-"
                                                     for v in range(0, 2_000_000, 1000)])
                                           .take(pa.array(values // 1000)),
                                           pc.utf8_lpad(pa.array(values % 1000).cast(pa.string()), 5, "0"), "")

    score_text = pa.array(score) if digits == "3" else pa.array([f"{x:.17g}" for x in score.tolist()])
    write = pcsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
    run = pa.table({"q": ids("q", qid), "i": pa.repeat(pa.scalar("Q0"), n), "d": doc_ids(doc),
                    "r": pa.array(rank), "s": score_text, "t": pa.repeat(pa.scalar("bench"), n)})
    if order == "query-shuffled":  # each query's lines in random order, queries still together
        run = run.take(pa.array(np.argsort(qid * float(depth) + rng.random(n), kind="stable")))
    elif order == "shuffled":  # every line anywhere
        run = run.take(pa.array(rng.permutation(n)))
    run_path = folder / "run.trec"
    pcsv.write_csv(run, run_path, write)

    judged_ret = rng.random(n) < 25 / depth
    extra = queries * 25
    qrel_q = np.concatenate([qid[judged_ret], rng.integers(0, queries, extra)])
    qrel_d = np.concatenate([doc[judged_ret], rng.integers(0, collection, extra)])
    qrel_q, first = np.unique(qrel_q * collection + qrel_d, return_index=True)
    qrel_q, qrel_d = qrel_q // collection, qrel_q % collection
    grade = rng.choice([0, 0, 1, 1, 2, 3], qrel_q.size)
    qrels = pa.table({"q": ids("q", qrel_q), "i": pa.repeat(pa.scalar("0"), qrel_q.size), "d": doc_ids(qrel_d),
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


IR_MEASURES = {"P@10": "P@10", "R@100": "R@100", "nDCG@10": "nDCG@10", "nDCG": "nDCG", "AP": "AP", "RR": "RR",
               "bpref": "Bpref", "Rprec": "Rprec"}
RANX = {"P@10": "precision@10", "R@100": "recall@100", "nDCG@10": "ndcg@10", "nDCG": "ndcg", "AP": "map",
        "RR": "mrr", "bpref": "bpref", "Rprec": "r-precision"}


def time_ir_measures(run_path: Path, qrels_path: Path) -> tuple[float, float, dict]:
    """ir_measures from files to per-query values, with its pytrec_eval provider; returns the means."""
    import ir_measures

    measures = [ir_measures.parse_measure(IR_MEASURES[m]) for m in MEASURES]
    start, cpu = time.perf_counter(), time.process_time()
    qrels = list(ir_measures.read_trec_qrels(str(qrels_path)))
    run = list(ir_measures.read_trec_run(str(run_path)))
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for metric in ir_measures.pytrec_eval.iter_calc(measures, qrels, run):
        name = str(metric.measure)
        sums[name] = sums.get(name, 0.0) + metric.value
        counts[name] = counts.get(name, 0) + 1
    seconds = time.perf_counter() - start, time.process_time() - cpu
    means = {m: sums[str(ir_measures.parse_measure(IR_MEASURES[m]))] / counts[str(ir_measures.parse_measure(IR_MEASURES[m]))]
             for m in MEASURES}
    return *seconds, means


def time_ranx(run_path: Path, qrels_path: Path) -> tuple[float, float, dict]:
    """ranx from files to its means (``evaluate`` averages over the queries itself)."""
    from ranx import Qrels, Run, evaluate

    start, cpu = time.perf_counter(), time.process_time()
    qrels = Qrels.from_file(str(qrels_path), kind="trec")
    run = Run.from_file(str(run_path), kind="trec")
    means = evaluate(qrels, run, [RANX[m] for m in MEASURES])
    seconds = time.perf_counter() - start, time.process_time() - cpu
    return *seconds, {m: float(means[RANX[m]]) for m in MEASURES}


def time_command(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of ``command`` run in ``cwd`` (an empty folder: no checkout shadows bm25lab) with
    the environment ``env`` (None: this one); CPU is the child's user + system time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, cwd=cwd, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def trec_eval_command(binary: str, run_path: Path, qrels_path: Path) -> list[str]:
    return [binary, "-m", "P.10", "-m", "recall.100", "-m", "ndcg_cut.10", "-m", "ndcg", "-m", "map",
            "-m", "recip_rank", "-m", "bpref", "-m", "Rprec", str(qrels_path), str(run_path)]


def bm25lab_command(run_path: Path, qrels_path: Path) -> list[str]:
    measures = [arg for m in MEASURES for arg in ("-m", m)]
    return [sys.executable, "-c", "from bm25lab.cli import main; main()", "evaluate", str(qrels_path),
            str(run_path), *measures, "--format", "trec"]


def mean_differences(ours: dict, theirs: dict) -> dict[str, float]:
    """|their mean - bm25lab's mean| per measure (bm25lab's over the queries it averaged)."""
    return {m: abs(theirs[m] - sum(v[m] for v in ours.values()) / len(ours)) for m in MEASURES}


def load() -> str:
    return f"{os.getloadavg()[0]:.2f}"


def agree(ours: dict, theirs: dict) -> float:
    from bm25lab.evaluation.measures import parse_measure

    worst = 0.0
    for qid, values in theirs.items():
        for m in MEASURES:
            worst = max(worst, abs(values[parse_measure(m).trec_eval_name] - ours[qid][m]))
    return worst


SHAPES = ["3,short,sorted", "17,short,sorted", "3,long,sorted", "17,long,sorted", "3,short,query-shuffled",
          "17,long,query-shuffled", "3,short,shuffled"]
"""Run shapes of ``--shapes``: score digits (3 or 17), document ids (short or long), line order (sorted,
query-shuffled, shuffled)."""


def no_avx512_environment() -> dict[str, str]:
    """The environment of a process run as on a CPU without AVX-512: numpy's dispatch targets of AVX-512
    disabled (X86_V4, AVX512_* in numpy 2), pyarrow's SIMD level AVX2, and glibc's string functions kept from
    their EVEX/AVX-512 versions (its hwcaps tunable)."""
    from numpy._core._multiarray_umath import __cpu_dispatch__

    targets = [t for t in __cpu_dispatch__ if "AVX512" in t or t == "X86_V4"]
    hwcaps = ",".join(f"-{f}" for f in ("AVX512F", "AVX512VL", "AVX512BW", "AVX512DQ", "AVX512CD", "AVX512ER",
                                        "AVX512PF"))
    return {**os.environ, "NPY_DISABLE_CPU_FEATURES": " ".join(targets), "ARROW_USER_SIMD_LEVEL": "AVX2",
            "GLIBC_TUNABLES": f"glibc.cpu.hwcaps={hwcaps}"}


def time_shapes(args: argparse.Namespace, binary: str) -> None:
    """``bm25lab evaluate`` and trec_eval in turn, ``args.repeats`` times, on a run of each shape."""
    env = no_avx512_environment() if args.no_avx512 else None
    print(f"shapes: {args.queries} queries x {args.depth} documents; measures {', '.join(MEASURES)}; "
          f"{os.cpu_count()} cores; {'no AVX-512 (simulated)' if env else 'this CPU as it is'}; trec_eval {binary}")
    print(f"{'shape':28s} {'MB':>5s} {'bm25lab wall':>12s} {'CPU':>6s} {'trec_eval wall':>14s} {'CPU':>6s} "
          f"{'ratio wall':>10s} {'CPU':>6s}  load")
    for shape in args.shape or SHAPES:
        with tempfile.TemporaryDirectory() as tmp:
            run_path, qrels_path = generate(Path(tmp), args.queries, args.depth, shape=shape)
            cwd = Path(tmp) / "cwd"
            cwd.mkdir()
            ours, theirs, loads = [], [], []
            for _ in range(args.repeats):
                loads.append(load())
                ours.append(time_command(bm25lab_command(run_path, qrels_path), cwd, env))
                theirs.append(time_command(trec_eval_command(binary, run_path, qrels_path), cwd, env))
            wall = [statistics.median(w for w, _ in runs) for runs in (ours, theirs)]
            cpu = [statistics.median(c for _, c in runs) for runs in (ours, theirs)]
            ratio = statistics.median(a[0] / b[0] for a, b in zip(ours, theirs))  # pair by pair
            print(f"{shape:28s} {run_path.stat().st_size / 1e6:5.0f} {wall[0]:12.2f} {cpu[0]:6.2f} {wall[1]:14.2f} "
                  f"{cpu[1]:6.2f} {ratio:10.3f} {cpu[0] / cpu[1]:6.3f}  {', '.join(loads)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--trec-eval", help="path of a trec_eval binary (default: trec_eval on PATH, if any)")
    parser.add_argument("--skip", action="append", default=[], choices=["ir_measures", "ranx"],
                        help="leave a tool out (repeatable)")
    parser.add_argument("--shapes", action="store_true", help="time only bm25lab evaluate and trec_eval, on runs of "
                                                              "several shapes (issue 31)")
    parser.add_argument("--shape", action="append", help="a shape DIGITS,IDS,ORDER for --shapes (repeatable; "
                                                         f"default: {' '.join(SHAPES)})")
    parser.add_argument("--no-avx512", action="store_true", help="--shapes as on a CPU without AVX-512")
    args = parser.parse_args()
    if args.shapes:
        binary = args.trec_eval or shutil.which("trec_eval")
        if not binary:
            parser.error("--shapes needs a trec_eval binary (--trec-eval PATH)")
        time_shapes(args, binary)
        return
    with tempfile.TemporaryDirectory() as tmp:
        run_path, qrels_path = generate(Path(tmp), args.queries, args.depth)
        cwd = Path(tmp) / "cwd"
        cwd.mkdir()
        print(f"run: {args.queries} queries x {args.depth} documents, {run_path.stat().st_size / 1e6:.0f} MB; "
              f"qrels {qrels_path.stat().st_size / 1e6:.1f} MB; measures {', '.join(MEASURES)}; "
              f"{os.cpu_count()} cores; 1-min load average at start {load()}")
        binary = args.trec_eval or shutil.which("trec_eval")
        in_process = {"bm25lab read + evaluate": time_bm25lab, "pytrec_eval parse + evaluate": time_pytrec_eval}
        if "ir_measures" not in args.skip:
            in_process["ir_measures (pytrec_eval provider)"] = time_ir_measures
        if "ranx" not in args.skip:
            in_process["ranx from_file + evaluate"] = time_ranx
        times: dict[str, list[tuple[float, float]]] = {label: [] for label in in_process}
        results: dict[str, dict] = {}
        commands = {"bm25lab evaluate (command)": bm25lab_command(run_path, qrels_path)}
        if binary:
            commands["trec_eval (C)"] = trec_eval_command(binary, run_path, qrels_path)
        times.update({label: [] for label in commands})
        loads = []
        for _ in range(args.repeats):
            for label, timer in in_process.items():
                *seconds, results[label] = timer(run_path, qrels_path)
                times[label].append(tuple(seconds))
            for label, command in commands.items():
                loads.append(load())
                times[label].append(time_command(command, cwd))
        wall = {label: statistics.median(w for w, _ in runs) for label, runs in times.items()}
        cpu = {label: statistics.median(c for _, c in runs) for label, runs in times.items()}
        for label, runs in times.items():
            walls = ", ".join(f"{w:.2f}" for w, _ in runs)
            print(f"{label:36s} wall median {wall[label]:6.2f} s (runs {walls}); CPU median {cpu[label]:6.2f} s")
        ours, theirs = "bm25lab read + evaluate", "pytrec_eval parse + evaluate"
        print(f"ratio bm25lab / pytrec_eval (in process): wall {wall[ours] / wall[theirs]:.3f}, "
              f"CPU {cpu[ours] / cpu[theirs]:.3f}")
        cli = "bm25lab evaluate (command)"
        print(f"ratio bm25lab evaluate (command) / pytrec_eval parse + evaluate: wall {wall[cli] / wall[theirs]:.3f}")
        for label in in_process:
            if label not in (ours, theirs):
                print(f"ratio bm25lab evaluate (command) / {label}: wall {wall[cli] / wall[label]:.3f}")
        if binary:
            c = "trec_eval (C)"
            version = subprocess.run([binary, "-v"], capture_output=True, text=True)
            name = (version.stdout + version.stderr).strip() or binary
            print(f"trec_eval: {name}")
            print(f"ratio bm25lab evaluate (command) / trec_eval: wall {wall[cli] / wall[c]:.3f}, "
                  f"CPU {cpu[cli] / cpu[c]:.3f}  (issue 20's target: wall <= 0.333)")
        else:
            print("trec_eval (C): no trec_eval binary given or on PATH, not timed")
        print(f"1-min load average before each command run: {', '.join(loads)}; at the end {load()}")
        print(f"largest per-query difference from pytrec_eval: {agree(results[ours], results[theirs]):.2e}")
        if "ir_measures (pytrec_eval provider)" in results:
            worst = max(mean_differences(results[ours], results["ir_measures (pytrec_eval provider)"]).values())
            print(f"ir_measures means vs bm25lab: largest difference {worst:.2e} "
                  f"({'agree' if worst <= 1e-12 else 'DISAGREE'} within 1e-12)")
        if "ranx from_file + evaluate" in results:
            differences = mean_differences(results[ours], results["ranx from_file + evaluate"])
            print("ranx means vs bm25lab (ranx's own conventions, reported as they are): "
                  + ", ".join(f"{m} {d:.1e}" for m, d in differences.items()))


if __name__ == "__main__":
    main()
