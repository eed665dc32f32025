"""bm25lab through its public API beside PISA, tantivy, bm25s and rank-bm25, each in a fresh process.

    python tests/benchmarks/bench_engines.py --small              # 5,000 docs, 200 queries (~1 min)
    python tests/benchmarks/bench_engines.py                      # 150,000 docs, 1,000 queries (~10 min)
    python tests/benchmarks/bench_engines.py --docs 1000000 --systems bm25lab,pisa,tantivy,bm25s
    python tests/benchmarks/bench_engines.py --json out.json --reps 5
    python tests/benchmarks/bench_engines.py --report out.json      # reprint a saved run's report

What a user gets: every system runs in its own fresh Python process (``engine_runner.py``), started
in a temporary folder with the parent's environment less any ``BM25LAB_*`` variable, and imports
nothing of the system before its timed import. bm25lab is used as its README shows it: ``from
bm25lab import Index, Tokenizer``, ``Index.build(zip(ids, texts), tokenizer=Tokenizer("whitespace",
stopwords=None))``, ``index.search_many({qid: text}, k=k)``, every other argument at its default
(``--systems`` may add ``bm25lab-numba``, the same with ``backend="numba"``, to time a version of
bm25lab from before its compiled core, when numba was one of its backends).

Same tokens: the synthetic Zipf collection of ``benchlib.make_synthetic`` is generated here, once,
and written to a temporary folder as one line of space-joined tokens per document and a JSON list of
query token lists (generation is never timed). bm25lab, PISA and tantivy index the lines with a
whitespace-only analysis (PISA's parser lowercases and splits at non-alphanumerics, which leaves
the ``w123`` tokens as they are: the parent checks that PISA's vocabulary has the corpus's size);
bm25s and rank-bm25 get the lines split at spaces.

Same model, where the peer allows it: Lucene's BM25 with k1 = 0.9, b = 0.4 for bm25lab and bm25s
(``method="lucene"``). PISA is given k1 = 0.9, b = 0.4 but scores with its own BM25: idf =
max(1e-6, ln((N - df + 0.5) / (df + 0.5))) times (1 + k1), where Lucene's is ln(1 + (N - df + 0.5)
/ (df + 0.5)); a term in more than half of the documents adds (almost) nothing in PISA. tantivy's
BM25 has k1 = 1.2, b = 0.75 fixed (not settable from Python), Lucene's idf times (1 + k1), and
document lengths rounded to one byte (Lucene's SmallFloat). rank-bm25's ``BM25Okapi`` has its own
idf. So only bm25s must return bm25lab's top-10; for the others the report gives the overlap with
bm25lab's top-10 and whether each returns the exact top-10 of its own formula (recomputed here in
numpy from the token lists, on the ``--agree-queries`` first queries).

Protocol: ``--reps`` repetitions; each runs every system once in a fresh process, the order rotated
by one per repetition (rank-bm25 only in the first: it takes seconds per query). Before them, one
untimed bm25lab process (``--no-warmup`` skips it) fills the caches a user's machine has after its
first search (numba's compiled kernels on disk, the page cache). Per process: import time; build
time (for PISA: ``index()`` plus the first ``bm25()``, which compresses the index for its scorer);
then, per k (10 and 1000) and configuration, the first batch of all queries alone ("first batch":
in bm25lab's first one, whatever the process loads or prepares on its first search) and warm batches
(``--warm`` at most, at least 2, stopping after ``--budget`` seconds). Reported: medians over the
processes of each process's median warm batch, as queries per second; ratios are bm25lab time /
peer time (below 1: bm25lab faster). Results are what each system's API returns: bm25lab ``Hits``
(ids read on demand), PISA a DataFrame with docnos, tantivy ``(score, DocAddress)`` pairs, bm25s
arrays of document numbers. Threads: PISA's ``threads`` (1, and 2 as an extra row); tantivy's
searches from 1 and 2 Python threads (it releases the GIL); bm25s numba ``n_threads`` 2 and 1;
bm25lab whatever its defaults use (``workers=None``: every core).

Targets (the issue): bm25lab's warm top-10 and top-1000 throughput at least PISA's with 1 thread
and at least twice bm25s numba's with 2 threads.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import benchlib as bl  # noqa: E402  (sibling module; see its docstring)

RUNNER = HERE / "engine_runner.py"
SYSTEMS = ("bm25lab", "bm25lab-numba", "pisa", "tantivy", "bm25s", "rank-bm25")
DEFAULT_SYSTEMS = ("bm25lab", "pisa", "tantivy", "bm25s", "rank-bm25")  # bm25lab-numba: versions that had numba
KS = (10, 1000)
K1, B = 0.9, 0.4

# Rows of the report: (label, system, batch configuration or None for bm25lab's own key)
ROWS = (
    ("bm25lab search_many (defaults)", "bm25lab", ""),
    ('bm25lab search_many, backend="numba"', "bm25lab-numba", ""),
    ("PISA (pyterrier-pisa), 1 thread", "pisa", ", threads=1"),
    ("PISA (pyterrier-pisa), 2 threads", "pisa", ", threads=2"),
    ("tantivy, 1 thread", "tantivy", ", threads=1"),
    ("tantivy, 2 threads", "tantivy", ", threads=2"),
    ("bm25s numba, n_threads=2", "bm25s", ", numba, n_threads=2"),
    ("bm25s numba, n_threads=1", "bm25s", ", numba, n_threads=1"),
    ("bm25s numpy", "bm25s", ", numpy, n_threads=0"),
    ("rank-bm25 BM25Okapi (extrapolated)", "rank-bm25", ""),
)
LAB = "bm25lab search_many (defaults)"
PISA_1 = "PISA (pyterrier-pisa), 1 thread"
BM25S_2 = "bm25s numba, n_threads=2"


# ---------------------------------------------------------------------- running the children
def write_data(syn: bl.Synthetic, folder: Path) -> None:
    with open(folder / "corpus.txt", "w", encoding="utf-8") as stream:
        for text in syn.texts:
            stream.write(text + "\n")
    (folder / "queries.json").write_text(json.dumps(syn.query_tokens), encoding="utf-8")


def child_env() -> tuple[dict[str, str], list[str]]:
    """The parent's environment without bm25lab's own variables (and the names removed)."""
    removed = sorted(k for k in os.environ if k.startswith("BM25LAB_"))
    return {k: v for k, v in os.environ.items() if k not in removed}, removed


def run_child(system: str, data: Path, workdir: Path, opts: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    """One fresh process of ``engine_runner.py``; its JSON, or ``{"failed": stderr tail}``."""
    folder = Path(tempfile.mkdtemp(prefix=f"{system}-", dir=workdir))
    out = folder / "out.json"
    cmd = [sys.executable, str(RUNNER), system, str(data), str(out), json.dumps({**opts, "workdir": str(folder)})]
    try:
        seconds, done = bl.timed(lambda: subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True,
                                                        check=False))
        if done.returncode != 0 or not out.exists():
            return {"failed": f"exit code {done.returncode}: {done.stderr.strip()[-1500:]}"}
        result = json.loads(out.read_text(encoding="utf-8"))
        result["process_s"] = seconds
        return result
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def wait_for_background_compilation(limit_s: float = 300.0) -> float:
    """Wait while a process compiling bm25lab's kernels runs (``auto`` starts one, detached, the first
    time the kernels would pay and were never compiled), so that it shares no core with the timed
    processes; the seconds waited. Nothing is stopped: a user's machine is like this after it ends."""
    def compiling() -> bool:
        for entry in Path("/proc").iterdir():
            try:
                cmdline = (entry / "cmdline").read_bytes() if entry.name.isdigit() else b""
            except OSError:
                continue
            if b"compile_all" in cmdline and b"bm25lab" in cmdline:
                return True
        return False

    start = time.perf_counter()
    while compiling() and time.perf_counter() - start < limit_s:
        time.sleep(1)
    return time.perf_counter() - start


def run_systems(systems: Sequence[str], data: Path, workdir: Path, opts: dict[str, Any], reps: int,
            warmup: bool) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
    env, removed = child_env()
    if removed:
        print(f"not passed to the processes: {', '.join(removed)}", file=sys.stderr)
    extra: dict[str, Any] = {"env_removed": removed}
    if warmup and "bm25lab" in systems:
        extra["warmup"] = {}
        for name in [s for s in systems if s.startswith("bm25lab")][::-1]:  # the forced backend first, if run
            print(f"untimed {name} process (caches) ...", file=sys.stderr, flush=True)
            extra["warmup"][name] = run_child(name, data, workdir, opts, env)
        extra["warmup"]["waited_for_background_compilation_s"] = wait_for_background_compilation()
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in systems}
    skipped: dict[str, str] = {}
    active = list(systems)
    for rep in range(reps):
        order = active[rep % len(active):] + active[:rep % len(active)]
        for name in order:
            if name == "rank-bm25" and rep > 0 or name in skipped:
                continue
            print(f"rep {rep + 1}/{reps}: {name} ...", file=sys.stderr, flush=True)
            result = run_child(name, data, workdir, opts, env)
            if "skipped" in result or "failed" in result:
                skipped[name] = result.get("skipped") or result["failed"]
                print(f"  {name}: {skipped[name]}", file=sys.stderr, flush=True)
                continue
            runs[name].append(result)
    extra["skipped"] = skipped
    return {name: r for name, r in runs.items() if r}, extra


# ---------------------------------------------------------------------- figures
def aggregate(runs: dict[str, list[dict[str, Any]]], n_queries: int) -> dict[str, dict[str, Any]]:
    """Per report row: import and build seconds, and per k the warm queries/s and the first batch's seconds."""
    rows: dict[str, dict[str, Any]] = {}
    for label, system, config in ROWS:
        if system not in runs:
            continue
        procs = runs[system]
        row: dict[str, Any] = {"processes": len(procs),
                               "import_s": bl.median([p["import_s"] for p in procs]),
                               "build_s": bl.median([p["build_s"] for p in procs]),
                               "peak_rss_mb": bl.median([p["peak_rss_mb"] for p in procs])}
        for key in ("index_s", "prepare_s", "segments", "terms"):
            if key in procs[0]:
                row[key] = bl.median([p[key] for p in procs])
        for k in KS:
            timings = [p["batches"][f"k={k}{config}"] for p in procs]
            if system == "rank-bm25":  # a few queries once, extrapolated to the batch
                per_query = bl.median([t["first_s"] / t["queries"] for t in timings])
                row[f"qps_{k}"] = 1 / per_query
                row[f"batch_s_{k}"] = per_query * n_queries
                continue
            warm = bl.median([bl.median(t["warm_s"]) for t in timings])
            row[f"qps_{k}"] = n_queries / warm
            row[f"batch_s_{k}"] = warm
            row[f"first_s_{k}"] = bl.median([t["first_s"] for t in timings])
            row[f"warm_batches_{k}"] = sum(len(t["warm_s"]) for t in timings)
        rows[label] = row
    return rows


def targets(rows: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The issue's bounds: bm25lab q/s >= PISA 1 thread's and >= 2x bm25s numba (2 threads)'s."""
    out = []
    if LAB not in rows:
        return out
    lab = rows[LAB]
    for k in KS:
        for peer, factor in ((PISA_1, 1.0), (BM25S_2, 2.0)):
            if peer in rows:
                need = factor * rows[peer][f"qps_{k}"]
                out.append({"case": f"top-{k}: bm25lab >= {factor:g}x {peer}", "bm25lab_qps": lab[f"qps_{k}"],
                            "peer_qps": rows[peer][f"qps_{k}"], "needed_qps": need,
                            "met": lab[f"qps_{k}"] >= need})
    return out


# ---------------------------------------------------------------------- agreement
def lucene_smallfloat_table() -> np.ndarray:
    """Lucene's SmallFloat.byte4ToInt for 0..255: the document lengths tantivy's fieldnorms can hold."""
    def int4_to_long(i: int) -> int:
        bits, shift = i & 0x07, (i >> 3) - 1
        return bits if shift == -1 else (bits | 0x08) << shift

    return np.array([i if i < 24 else 24 + int4_to_long(i - 24) for i in range(256)], dtype=np.float64)


class Reference:
    """Exact BM25 of the synthetic corpus in numpy (float64), under each system's own formula."""

    def __init__(self, syn: bl.Synthetic) -> None:
        n = syn.config.docs
        lengths = np.fromiter((len(t) for t in syn.token_ids), dtype=np.int64, count=n)
        flat = np.concatenate(syn.token_ids).astype(np.int64)
        keys, tf = np.unique(flat * n + np.repeat(np.arange(n), lengths), return_counts=True)
        terms = keys // n
        self.docs, self.tf = keys % n, tf.astype(np.float64)
        self.offsets = np.concatenate(([0], np.cumsum(np.bincount(terms, minlength=syn.config.vocab))))
        self.n, self.dl = n, lengths.astype(np.float64)
        self.avgdl = float(lengths.mean())
        table = lucene_smallfloat_table()
        self.dl_byte = table[np.searchsorted(table, self.dl, side="right") - 1]

    def scores(self, query: list[str], formula: str) -> np.ndarray:
        k1, b, dl = (1.2, 0.75, self.dl_byte) if formula == "tantivy" else (K1, B, self.dl)
        out = np.zeros(self.n)
        for term in query:
            start, end = self.offsets[int(term[1:])], self.offsets[int(term[1:]) + 1]
            docs, tf, df = self.docs[start:end], self.tf[start:end], end - start
            if formula == "pisa":
                weight = max(1e-6, float(np.log((self.n - df + 0.5) / (df + 0.5)))) * (1 + k1)
            else:
                weight = float(np.log(1 + (self.n - df + 0.5) / (df + 0.5))) * (1 + k1 if formula == "tantivy" else 1)
            out[docs] += weight * tf / (tf + k1 * (1 - b + b * dl[docs] / self.avgdl))
        return out


FORMULA = {"bm25lab": "lucene", "bm25lab-numba": "lucene", "bm25s": "lucene", "pisa": "pisa", "tantivy": "tantivy"}


def agreement(runs: dict[str, list[dict[str, Any]]], syn: bl.Synthetic, check_formulas: bool,
              rtol: float = 1e-4) -> dict[str, dict[str, Any]]:
    """Each system's top-10 against bm25lab's (same documents, overlap) and, if ``check_formulas``,
    against the exact top-10 of the system's own formula: the same scores in its 10 results as in
    the exact 10 best (ties at the cut may pick other documents) and its scores equal to the
    formula's (relative ``rtol``: PISA and tantivy score in float32)."""
    if "bm25lab" not in runs:
        return {}
    lab = runs["bm25lab"][0]["top10"]
    ref = Reference(syn) if check_formulas else None
    out: dict[str, dict[str, Any]] = {}
    for system, procs in runs.items():
        if "top10" not in procs[0]:
            continue
        top = procs[0]["top10"]
        same = overlap = 0
        exact = worst = 0.0
        for i, ((docs, scores), (lab_docs, _)) in enumerate(zip(top, lab)):
            same += set(docs) == set(lab_docs)
            overlap += len(set(docs) & set(lab_docs))
            if ref is not None:
                full = ref.scores(syn.query_tokens[i], FORMULA[system])
                best = np.sort(full)[::-1][:10]
                best = best[best > 0]
                mine = np.sort(full[np.asarray(docs, dtype=np.int64)])[::-1]
                exact += mine.shape == best.shape and bool(np.allclose(mine, best, rtol=rtol, atol=0))
                if len(docs):
                    rel = np.abs(full[np.asarray(docs, dtype=np.int64)] - np.asarray(scores)) / np.maximum(
                        full[np.asarray(docs, dtype=np.int64)], 1e-12)
                    worst = max(worst, float(rel.max()))
        count = min(len(top), len(lab))
        out[system] = {"queries": count, "same_top10_as_bm25lab": same, "mean_overlap_with_bm25lab": overlap / count}
        if ref is not None:
            out[system].update({"formula": FORMULA[system], "exact_top10_of_own_formula": int(exact),
                                "max_relative_score_difference_from_formula": worst})
    return out


# ---------------------------------------------------------------------- report
def report(results: dict[str, Any]) -> str:
    rows, cfg = results["rows"], results["config"]
    lab = rows.get(LAB)
    n = cfg["queries"]
    head = ["system", "import s", "build s", "top-10 q/s", "top-1000 q/s", "first batch top-10 s",
            "first batch top-1000 s", "build: bm25lab/peer", "top-10 time: bm25lab/peer",
            "top-1000 time: bm25lab/peer"]
    table = []
    for label, row in rows.items():
        def ratio(key: str, inverse: bool = False) -> str:
            if lab is None or label == LAB:
                return "-"
            return bl.ratio(row[key], lab[key]) if inverse else bl.ratio(lab[key], row[key])
        table.append((label, row["import_s"], row["build_s"], row["qps_10"], row["qps_1000"],
                      row.get("first_s_10", "-"), row.get("first_s_1000", "-"), ratio("build_s"),
                      ratio("qps_10", inverse=True), ratio("qps_1000", inverse=True)))
    parts = [f"### bm25lab public API vs peers: {cfg['docs']:,} documents, {n:,} queries, fresh process per system "
             f"run (medians of {results['reps']} repetitions; q/s = warm batch throughput)",
             "", bl.markdown_table(head, table), ""]
    if lab is not None:
        extra = [f"top-{k}: first batch {lab[f'first_s_{k}']:.3f} s vs warm {lab[f'batch_s_{k}']:.3f} s "
                 f"(+{lab[f'first_s_{k}'] - lab[f'batch_s_{k}']:.3f} s)" for k in KS]
        parts += ["bm25lab's first batch in a process: " + "; ".join(extra) + ".", ""]
        for k in KS:
            seqs = ["[" + ", ".join(f"{s:.3f}" for s in [b["first_s"], *b["warm_s"]]) + "]"
                    for b in (p["batches"][f"k={k}"] for p in results["runs"]["bm25lab"])]
            parts.append(f"bm25lab top-{k} batches per process, first then warm (s): {' '.join(seqs)}")
        warmup = results.get("warmup", {})
        if warmup:
            firsts = ", ".join(f"{name}: first top-10 batch {w['batches']['k=10']['first_s']:.3f} s, build "
                               f"{w['build_s']:.2f} s" for name, w in warmup.items()
                               if isinstance(w, dict) and "batches" in w)
            parts.append(f"untimed process(es) before: {firsts or 'none completed'}; then waited "
                         f"{warmup.get('waited_for_background_compilation_s', 0):.0f} s for a background compilation.")
        parts.append("")
    if "pisa" in results["runs_summary"]:
        p = rows[PISA_1]
        parts += [f"PISA build = index() {p['index_s']:.2f} s + first bm25() (compression, block-max data) "
                  f"{p['prepare_s']:.2f} s; {int(p['terms']):,} terms indexed (corpus vocabulary: "
                  f"{results['corpus_terms']:,}).", ""]
    if results["targets"]:
        t_rows = [(t["case"], t["bm25lab_qps"], t["peer_qps"], t["needed_qps"], "yes" if t["met"] else "**no**")
                  for t in results["targets"]]
        parts += ["#### Targets", bl.markdown_table(["target", "bm25lab q/s", "peer q/s", "needed q/s", "met"],
                                                    t_rows), ""]
    if results["agreement"]:
        a_rows = []
        for system, a in results["agreement"].items():
            a_rows.append((system, a["queries"], a["same_top10_as_bm25lab"], f"{a['mean_overlap_with_bm25lab']:.2f}",
                           a.get("formula", "-"), a.get("exact_top10_of_own_formula", "-"),
                           f"{a['max_relative_score_difference_from_formula']:.1e}"
                           if "max_relative_score_difference_from_formula" in a else "-"))
        parts += ["#### Top-10 agreement",
                  bl.markdown_table(["system", "queries", "same 10 documents as bm25lab", "mean overlap (of 10)",
                                     "own formula", "= exact top-10 of own formula", "max rel. score diff. from it"],
                                    a_rows), ""]
    parts += ["#### Per process: median warm batch, top-10 / top-1000 (s), and the 1-min load average at its start",
              "(a row with 2 threads or workers slows down when another program takes a core)",
              bl.markdown_table(["system", *[f"process {i + 1}" for i in range(results["reps"])]],
                                per_process_rows(results)), ""]
    if results["skipped"]:
        parts += ["Not run: " + "; ".join(f"{s}: {why}" for s, why in results["skipped"].items()), ""]
    m = results["machine"]
    parts += [f"1-min load average: {m['loadavg']} at start, {results['loadavg_end']:.1f} at the end; "
              f"per process at its start: {results['loadavg_processes']}."]
    return "\n".join(parts)


def per_process_rows(results: dict[str, Any]) -> list[list[str]]:
    rows = []
    for label, system, config in ROWS:
        if label not in results["rows"] or system == "rank-bm25":
            continue
        cells = []
        for proc in results["runs"][system]:
            warm = [bl.median(proc["batches"][f"k={k}{config}"]["warm_s"]) for k in KS]
            cells.append(" / ".join(f"{w:.3f}" for w in warm) + f" (load {proc['loadavg_start']:.1f})")
        rows.append([label, *cells, *[""] * (results["reps"] - len(cells))])
    return rows


def summary_rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows for run_all's table: ratio = bm25lab time / peer time (below 1: bm25lab faster)."""
    rows, lab = results["rows"], results["rows"].get(LAB)
    if lab is None:
        return []
    docs = results["config"]["docs"]
    out = []
    for t in results["targets"]:
        ratio = t["peer_qps"] / t["bm25lab_qps"]
        factor = 2.0 if BM25S_2 in t["case"] else 1.0
        peer = PISA_1 if factor == 1.0 else BM25S_2
        k = t["case"].split(":")[0]
        out.append({"case": f"public API search_many {k}, {docs:,} docs, fresh process (q/s)",
                    "bm25lab": f"{t['bm25lab_qps']:,.0f}", "peer": f"{peer}: {t['peer_qps']:,.0f}",
                    "ratio": ratio, "target": f"<= {1 / factor:.2f}", "met": t["met"]})
    for k in KS:
        out.append({"case": f"public API first search_many batch, top-{k} (s, warm batch in peer column)",
                    "bm25lab": f"{lab[f'first_s_{k}']:.3f}", "peer": f"warm: {lab[f'batch_s_{k}']:.3f}",
                    "ratio": lab[f"first_s_{k}"] / lab[f"batch_s_{k}"], "target": "stated", "met": None})
    for label in ("tantivy, 1 thread", "tantivy, 2 threads", "PISA (pyterrier-pisa), 2 threads"):
        if label in rows:
            for k in KS:
                out.append({"case": f"public API search_many top-{k} vs {label} (q/s)",
                            "bm25lab": f"{lab[f'qps_{k}']:,.0f}", "peer": f"{rows[label][f'qps_{k}']:,.0f}",
                            "ratio": rows[label][f"qps_{k}"] / lab[f"qps_{k}"], "target": "none", "met": None})
    for label in (PISA_1, "tantivy, 1 thread", BM25S_2):
        if label in rows:
            build = rows[label]["build_s"]
            out.append({"case": f"build, {docs:,} docs, vs {label.split(',')[0]} (s)",
                        "bm25lab": f"{lab['build_s']:.2f}", "peer": f"{build:.2f}", "ratio": lab["build_s"] / build,
                        "target": "none", "met": None})
    return out


# ---------------------------------------------------------------------- main
def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", action="store_true", help="5,000 docs, 200 queries, 2 repetitions")
    parser.add_argument("--docs", type=int, help="documents (default 150,000; 5,000 with --small)")
    parser.add_argument("--queries", type=int, help="queries (default 1,000; 200 with --small)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reps", type=int, help="fresh processes per system (3; 2 with --small)")
    parser.add_argument("--warm", type=int, default=5, help="warm batches per process and configuration, at most")
    parser.add_argument("--budget", type=float, default=10.0,
                        help="seconds of warm batches per process and configuration after which no more start")
    parser.add_argument("--systems", default=",".join(DEFAULT_SYSTEMS), help=f"comma-separated subset of {SYSTEMS}")
    parser.add_argument("--rank-bm25-queries", type=int, default=10)
    parser.add_argument("--agree-queries", type=int, default=200, help="queries whose top-10 are compared")
    parser.add_argument("--no-formula-check", action="store_true",
                        help="skip recomputing each system's exact top-10 in numpy (memory-hungry at 10^6 docs)")
    parser.add_argument("--no-warmup", action="store_true", help="no untimed bm25lab process first")
    parser.add_argument("--workdir", help="where the corpus file and the indexes go (default: the system's temp)")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    parser.add_argument("--report", metavar="JSON", help="run nothing: print the report of a saved --json file")
    args = parser.parse_args(argv)
    args.reps = args.reps or (2 if args.small else 3)
    unknown = set(args.systems.split(",")) - set(SYSTEMS)
    if unknown:
        parser.error(f"unknown systems {sorted(unknown)}; valid: {', '.join(SYSTEMS)}")
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    if args.report:
        saved = json.loads(Path(args.report).read_text(encoding="utf-8"))
        print(bl.machine_line(saved["machine"]))
        print(report(saved))
        return saved
    base = bl.SyntheticConfig.small() if args.small else bl.SyntheticConfig()
    config = bl.SyntheticConfig(docs=args.docs or base.docs, doc_len=base.doc_len, vocab=base.vocab,
                                queries=args.queries or base.queries, seed=args.seed)
    info = bl.machine_info()
    print(bl.machine_line(info), flush=True)
    syn = bl.make_synthetic(config)
    workdir = Path(tempfile.mkdtemp(prefix="bm25lab-bench-engines-", dir=args.workdir))
    opts = {"ks": list(KS), "max_warm": args.warm, "min_warm": 2, "budget_s": args.budget,
            "agree_queries": args.agree_queries, "rank_queries": args.rank_bm25_queries, "build_threads": 2,
            "pisa_threads": [1, 2], "tantivy_heap": 1_000_000_000}
    try:
        data = workdir / "data"
        data.mkdir()
        write_data(syn, data)
        print(f"generated {config}", file=sys.stderr, flush=True)
        systems = [s for s in SYSTEMS if s in args.systems.split(",")]
        runs, extra = run_systems(systems, data, workdir, opts, args.reps, not args.no_warmup)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    rows = aggregate(runs, config.queries)
    results: dict[str, Any] = {
        "machine": info, "config": vars(config), "reps": args.reps, "options": opts, "rows": rows,
        "targets": targets(rows), "skipped": extra["skipped"], "env_removed": extra["env_removed"],
        "corpus_terms": int(np.unique(np.concatenate(syn.token_ids)).shape[0]),
        "agreement": agreement(runs, syn, not args.no_formula_check),
        "loadavg_end": os.getloadavg()[0],
        "loadavg_processes": ", ".join(f"{name} {bl.median([p['loadavg_start'] for p in procs]):.1f}"
                                       for name, procs in runs.items()),
        "runs_summary": {name: len(procs) for name, procs in runs.items()},
        "runs": runs,
    }
    if "warmup" in extra:
        results["warmup"] = extra["warmup"]
    results["summary"] = summary_rows(results)
    print(report(results))
    bl.write_json(args.json, results)
    return results


if __name__ == "__main__":
    main()
