"""bm25lab against PISA as collections grow: saved indexes loaded as a user loads them, batches of 1,000
queries at top-10 and top-1000, postings bytes on disk, build time, search memory.

    python tests/benchmarks/bench_scale.py --docs 150000 1000000 2000000        # the issue's sizes
    python tests/benchmarks/bench_scale.py --docs 1000000 10000000 --doc-len 60 # a 10^7 series that fits
    python tests/benchmarks/bench_scale.py --docs 20000 --reps 1                # a quick look
    python tests/benchmarks/bench_scale.py --report results.json                # reprint a saved run

Same tokens: the synthetic Zipf collection of ``benchlib`` (documents of Poisson(``--doc-len``) terms
over a 200,000-term Zipf(s = 1) vocabulary, seeded; queries of 2 to 7 distinct terms from the same
distribution restricted to the terms the corpus holds) is generated here, streamed to a text file
(one document a line, its tokens joined by spaces; never held whole in memory), and at 150,000
documents it is the very collection of ``bench_engines.py``. Each system indexes that file:

- bm25lab: ``Index.build(documents, tokenizer=Tokenizer("whitespace", stopwords=None))`` then
  ``index.save(folder)``, in a fresh process (the build time is ``Index.build``'s; saving is reported
  beside it);
- PISA (pyterrier-pisa): ``PisaIndex(folder, stemmer="none", stops="none", threads=2).index(...)`` and its
  first ``bm25(k1=0.9, b=0.4)``, which compresses the index for its default block-max WAND
  (``block_simdbp`` postings, block-max data of 64 postings); the build time is both.

Then, per repetition, each system in a fresh process, alternated (the order rotated each repetition):
load the saved index as a user does (``Index.load(folder)``; ``PisaIndex(folder).bm25(k1=0.9, b=0.4,
num_results=k, threads=2)``), one batch of all queries per k as a warm-up (bm25lab's first batch of a
parameter set prepares the weights and bounds: reported apart), then ``--batches`` timed batches per
k; the figure is the median over repetitions of each process's median batch. Both search with two
threads (bm25lab's default on this machine: every core; PISA's ``threads=2``). The process's peak
resident memory (``ru_maxrss``) after its batches is the search memory.

Postings bytes on disk: bm25lab's postings arrays (the blocks, their last documents, positions and
bounds, the terms' offsets, the pairs), PISA's compressed postings (``*.block_simdbp``) and block-max
data (``*.bmw.*``); neither counts the documents' lengths, ids, terms or texts.

bm25lab's results are checked against its numpy specification on the first ``--check`` queries of the
smallest size (documents, order and float64 score bits); PISA scores by its own formula and is only
timed. The 1-minute load average is printed at the start of every process.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import benchlib as bl  # noqa: E402  (sibling module)

KS = (10, 1000)
K1, B = 0.9, 0.4
MB = 1024 * 1024


# ---------------------------------------------------------------------- the collection
def write_collection(folder: Path, docs: int, doc_len: int, vocab: int, queries: int, seed: int = 0) -> None:
    """The benchlib collection of ``docs`` documents as ``corpus.txt`` and ``queries.json`` in ``folder``,
    drawn in chunks from the same generator calls as :func:`benchlib.make_synthetic` (a chunked
    ``choice`` draws the same uniforms as one call), so the tokens are the same."""
    rng = np.random.default_rng(seed)
    probs = bl.zipf_probabilities(vocab, 1.0)
    lengths = np.maximum(rng.poisson(doc_len, docs), 1)
    words = np.array([f"w{r}" for r in range(vocab)], dtype=object)
    present = np.zeros(vocab, dtype=bool)
    chunk_docs = 20_000
    with open(folder / "corpus.txt", "w", encoding="utf-8") as out:
        for first in range(0, docs, chunk_docs):
            chunk = lengths[first:first + chunk_docs]
            flat = rng.choice(vocab, size=int(chunk.sum()), p=probs)
            present[flat] = True
            tokens = words[flat]
            ends = np.cumsum(chunk)
            out.write("".join(" ".join(tokens[e - n:e]) + "\n" for n, e in zip(chunk.tolist(), ends.tolist())))
    kept = np.flatnonzero(present)
    q_probs = probs[kept] / probs[kept].sum()
    drawn = [[f"w{int(r)}" for r in rng.choice(kept, size=int(n), replace=False, p=q_probs)]
             for n in rng.integers(2, 8, size=queries)]
    (folder / "queries.json").write_text(json.dumps(drawn), encoding="utf-8")


# ---------------------------------------------------------------------- the children
# Each runs in a fresh interpreter in an empty temporary folder (no checkout shadows the installed
# package) and prints one JSON line. argv = [data folder, index folder, ...].
BUILD_BM25LAB = r"""
import json, os, resource, sys, time
started = time.perf_counter()
from bm25lab import Index, Tokenizer
imported = time.perf_counter() - started

def documents(path):
    with open(path, encoding="utf-8") as lines:
        for i, line in enumerate(lines):
            yield f"d{i}", line[:-1]

load = os.getloadavg()[0]
started = time.perf_counter()
index = Index.build(documents(os.path.join(sys.argv[1], "corpus.txt")), tokenizer=Tokenizer("whitespace", stopwords=None))
built = time.perf_counter() - started
started = time.perf_counter()
index.save(sys.argv[2])
saved = time.perf_counter() - started
print(json.dumps({"build_s": built, "save_s": saved, "import_s": imported, "loadavg": load, "counts": index.counts(),
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

BUILD_PISA = r"""
import json, os, resource, sys, time
import pyterrier_pisa
try:
    pyterrier_pisa.log_level(False)
except AttributeError:
    pass

def documents(path):
    with open(path, encoding="utf-8") as lines:
        for i, line in enumerate(lines):
            yield {"docno": f"d{i}", "text": line[:-1]}

load = os.getloadavg()[0]
index = pyterrier_pisa.PisaIndex(sys.argv[2], stemmer="none", stops="none", threads=2)
started = time.perf_counter()
index.index(documents(os.path.join(sys.argv[1], "corpus.txt")))
indexed = time.perf_counter() - started
started = time.perf_counter()
index.bm25(k1=0.9, b=0.4, num_results=10, threads=2)  # compresses the index for its scorer (block-max data)
prepared = time.perf_counter() - started
print(json.dumps({"build_s": indexed + prepared, "index_s": indexed, "prepare_s": prepared, "loadavg": load,
                  "terms": index.num_terms(), "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

# argv = [data folder, index folder, batches, check]
SEARCH_BM25LAB = r"""
import json, os, resource, statistics, sys, time
load = os.getloadavg()[0]
started = time.perf_counter()
from bm25lab import Index
index = Index.load(sys.argv[2])
loaded = time.perf_counter() - started
with open(os.path.join(sys.argv[1], "queries.json"), encoding="utf-8") as stream:
    queries = {f"q{i}": " ".join(q) for i, q in enumerate(json.load(stream))}
out = {"load_s": loaded, "loadavg": load, "batches": {}}
for k in (10, 1000):
    started = time.perf_counter()
    index.search_many(queries, k=k)
    first = time.perf_counter() - started
    times, cpu = [], time.process_time()
    for _ in range(int(sys.argv[3])):
        started = time.perf_counter()
        index.search_many(queries, k=k)
        times.append(time.perf_counter() - started)
    read = getattr(index._backend, "last_read", None)  # the core's: blocks of the terms, read, their postings
    out["batches"][str(k)] = {"first_s": first, "warm_s": times, "cpu_s": (time.process_time() - cpu) / len(times),
                              "read": list(read) if read is not None else None}
out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
check = int(sys.argv[4])
if check:
    import numpy as np
    from bm25lab.engine.backends.numpy_backend import NumpyBackend
    scorer, params = index._scorer, index.params()
    qs = [q.split() for q in list(queries.values())[:check]]
    batch = index._backend.term_batch(scorer, qs)
    for k in (10, 1000):
        got = index._backend.top_k_batch(scorer, batch, k, params, 2)
        want = NumpyBackend().top_k_batch(scorer, batch, k, params, 1)
        bad = sum(d.tolist() != e.tolist() or s.tobytes() != f.tobytes() for (d, s), (e, f) in zip(got, want))
        out[f"differ_k{k}"] = bad
print(json.dumps(out))
"""

SEARCH_PISA = r"""
import json, os, resource, sys, time
load = os.getloadavg()[0]
started = time.perf_counter()
import pandas as pd
import pyterrier_pisa
try:
    pyterrier_pisa.log_level(False)
except AttributeError:
    pass
index = pyterrier_pisa.PisaIndex(sys.argv[2], stemmer="none", stops="none", threads=2)
with open(os.path.join(sys.argv[1], "queries.json"), encoding="utf-8") as stream:
    queries = json.load(stream)
frame = pd.DataFrame({"qid": [f"q{i}" for i in range(len(queries))], "query": [" ".join(q) for q in queries]})
retrievers = {k: index.bm25(k1=0.9, b=0.4, num_results=k, threads=2) for k in (10, 1000)}
loaded = time.perf_counter() - started
out = {"load_s": loaded, "loadavg": load, "batches": {}}
for k in (10, 1000):
    started = time.perf_counter()
    retrievers[k](frame)
    first = time.perf_counter() - started
    times, cpu = [], time.process_time()
    for _ in range(int(sys.argv[3])):
        started = time.perf_counter()
        retrievers[k](frame)
        times.append(time.perf_counter() - started)
    out["batches"][str(k)] = {"first_s": first, "warm_s": times, "cpu_s": (time.process_time() - cpu) / len(times)}
out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def child(code: str, *args: str) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter in an empty folder; its JSON line, or ``{"failed": ...}``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BM25LAB_")}
    with tempfile.TemporaryDirectory(prefix="bm25lab-scale-cwd-") as cwd:
        done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=cwd, env=env)
    if done.returncode != 0:
        return {"failed": done.stderr.strip()[-2000:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------- sizes on disk
BM25LAB_POSTINGS = ("offsets.npy", "last_docs.npy", "positions.npy", "blocks.npy", "bound_codes.npy",
                    "bound_pairs.npy", "pairs.npy")


def bm25lab_postings_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for name in BM25LAB_POSTINGS for p in folder.glob(f"seg-*/{name}"))


def pisa_postings_bytes(folder: Path) -> int:
    """PISA's compressed postings (``*.block_simdbp``) and its block-max data (``*.bmw.64``)."""
    return sum(p.stat().st_size for p in folder.iterdir() if ".bmw." in p.name)


# ---------------------------------------------------------------------- one size
def measure_size(workdir: Path, docs: int, args: argparse.Namespace) -> dict[str, Any]:
    folder = workdir / f"docs-{docs}-len-{args.doc_len}"
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "queries.json").exists():
        started = time.perf_counter()
        write_collection(folder, docs, args.doc_len, args.vocab, args.queries)
        print(f"{docs:,} documents generated in {time.perf_counter() - started:.0f} s", flush=True)
    out: dict[str, Any] = {"docs": docs, "doc_len": args.doc_len, "build": {}, "search": {s: [] for s in args.systems},
                           "bytes": {}}
    builders = {"bm25lab": BUILD_BM25LAB, "pisa": BUILD_PISA}
    searchers = {"bm25lab": SEARCH_BM25LAB, "pisa": SEARCH_PISA}
    for system in args.systems:
        index = folder / f"index-{system}"
        if not index.exists():
            facts = child(builders[system], str(folder), str(index))
            print(f"{system:8} build {json.dumps(facts)}", flush=True)
            (folder / f"build-{system}.json").write_text(json.dumps(facts), encoding="utf-8")
        out["build"][system] = json.loads((folder / f"build-{system}.json").read_text(encoding="utf-8"))
    if "bm25lab" in args.systems:
        out["bytes"]["bm25lab"] = bm25lab_postings_bytes(folder / "index-bm25lab")
    if "pisa" in args.systems:
        out["bytes"]["pisa"] = pisa_postings_bytes(folder / "index-pisa")
    order = list(args.systems)
    for rep in range(args.reps):
        for system in order[rep % len(order):] + order[:rep % len(order)]:
            check = str(args.check if rep == 0 and system == "bm25lab" else 0)
            extra = (check,) if system == "bm25lab" else ()
            facts = child(searchers[system], str(folder), str(folder / f"index-{system}"), str(args.batches), *extra)
            print(f"{system:8} search rep {rep + 1}: {json.dumps(facts)[:300]}", flush=True)
            out["search"][system].append(facts)
    if not args.keep:
        for system in args.systems:
            remove_tree(folder / f"index-{system}")
    return out


def remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


# ---------------------------------------------------------------------- the report
def per_second(result: dict[str, Any], system: str, k: int, queries: int) -> float | None:
    """Queries per second: the median over processes of each process's median warm batch."""
    runs = [r for r in result["search"].get(system, []) if "failed" not in r]
    if not runs:
        return None
    return queries / statistics.median(statistics.median(r["batches"][str(k)]["warm_s"]) for r in runs)


def cpu_per_batch(result: dict[str, Any], system: str, k: int) -> float | None:
    """CPU seconds of a warm batch (every thread's), the median over processes; None if not measured."""
    cpus = [r["batches"][str(k)]["cpu_s"] for r in result["search"].get(system, [])
            if "failed" not in r and "cpu_s" in r["batches"][str(k)]]
    return statistics.median(cpus) if cpus else None


def report(results: dict[str, Any]) -> str:
    queries = results["queries"]
    lines = [f"bench_scale: {results['date']}, commit {results['commit']}, {results['machine']}",
             f"1-minute load average at the start of each process: {results['loads']}", ""]
    lines.append("| documents | postings | bm25lab postings on disk | PISA's (postings + block-max) | ratio | "
                 "build bm25lab (+ save) | build PISA | top-10 bm25lab / PISA (q/s) | ratio | "
                 "top-1000 bm25lab / PISA (q/s) | ratio | search peak bm25lab / PISA (MB) |")
    lines.append("|" + "---|" * 12)
    for result in results["sizes"]:
        built = result["build"]
        postings = built.get("bm25lab", {}).get("counts", {}).get("postings")
        lab, pisa = result["bytes"].get("bm25lab"), result["bytes"].get("pisa")

        def size(b: int | None) -> str:
            return "-" if b is None else f"{b / MB:,.0f} MiB ({b / postings:.2f} B/posting)" if postings else f"{b / MB:,.0f} MiB"

        cells = [f"{result['docs']:,}", f"{postings:,}" if postings else "-", size(lab), size(pisa),
                 f"{lab / pisa:.2f}" if lab and pisa else "-",
                 f"{built['bm25lab']['build_s']:.1f} (+{built['bm25lab']['save_s']:.1f}) s" if "bm25lab" in built else "-",
                 f"{built['pisa']['build_s']:.1f} s" if "pisa" in built else "-"]
        for k in KS:
            a, b = per_second(result, "bm25lab", k, queries), per_second(result, "pisa", k, queries)
            cells.append(f"{a:,.0f} / {b:,.0f}" if a and b else f"{a or b or 0:,.0f}")
            cells.append(f"{a / b:.2f}" if a and b else "-")
        peaks = [statistics.median(r["peak_mb"] for r in result["search"][s] if "failed" not in r)
                 if result["search"].get(s) else None for s in ("bm25lab", "pisa")]
        cells.append(" / ".join("-" if p is None else f"{p:,.0f}" for p in peaks))
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("CPU seconds a batch (both threads' CPU: what the machine's load does not inflate), bm25lab / PISA:")
    for result in results["sizes"]:
        cells = []
        for k in KS:
            ours, theirs = cpu_per_batch(result, "bm25lab", k), cpu_per_batch(result, "pisa", k)
            if ours and theirs:
                cells.append(f"top-{k} {ours:.2f} / {theirs:.2f} (PISA {theirs / ours:.2f}x bm25lab's)")
        if cells:
            lines.append(f"- {result['docs']:,}: " + "; ".join(cells))
    lines.append("")
    lines.append("bm25lab's first batch of each k (the weights and bounds prepared) and its checks against numpy:")
    for result in results["sizes"]:
        runs = [r for r in result["search"].get("bm25lab", []) if "failed" not in r]
        if runs:
            firsts = {k: statistics.median(r["batches"][str(k)]["first_s"] for r in runs) for k in KS}
            checks = {key: value for r in runs for key, value in r.items() if key.startswith("differ")}
            lines.append(f"- {result['docs']:,}: first batch top-10 {firsts[10]:.2f} s, top-1000 {firsts[1000]:.2f} s; "
                         f"load {statistics.median(r['load_s'] for r in runs):.2f} s; "
                         f"queries differing from numpy: {checks or 'not checked'}")
            for k in KS:
                batch = runs[0]["batches"][str(k)]
                if batch.get("read"):
                    blocks, read, postings = batch["read"]
                    cpu = statistics.median(r["batches"][str(k)]["cpu_s"] for r in runs)
                    lines.append(f"  top-{k}: a batch reads {read:,} of its terms' {blocks:,} blocks "
                                 f"({100 * (1 - read / blocks):.1f}% passed over), {postings:,} postings; "
                                 f"{cpu * 1e9 / postings:.1f} ns of CPU a posting read ({cpu:.2f} CPU-s a batch)")
    sizes = {r["docs"]: r for r in results["sizes"]}
    for low, high in ((1_000_000, 10_000_000), (1_000_000, 2_000_000)):
        if low in sizes and high in sizes:
            for k in KS:
                falls = {s: (per_second(sizes[low], s, k, queries) or 0) / (per_second(sizes[high], s, k, queries) or 1)
                         for s in ("bm25lab", "pisa")}
                lines.append(f"- fall from {low:,} to {high:,} documents, top-{k}: bm25lab {falls['bm25lab']:.2f}x, "
                             f"PISA {falls['pisa']:.2f}x slower")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, nargs="+", default=[150_000, 1_000_000, 2_000_000])
    parser.add_argument("--doc-len", type=int, default=120, help="mean document length (Poisson)")
    parser.add_argument("--vocab", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--reps", type=int, default=3, help="search processes per system and size")
    parser.add_argument("--batches", type=int, default=3, help="timed batches per k in each process")
    parser.add_argument("--systems", default="bm25lab,pisa")
    parser.add_argument("--check", type=int, default=100, help="queries checked against numpy (first process)")
    parser.add_argument("--workdir", type=Path, default=None, help="where the collections and indexes go")
    parser.add_argument("--keep", action="store_true", help="keep the indexes (they are reused when present)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--report", type=Path, default=None, help="reprint the report of a saved run")
    args = parser.parse_args()
    if args.report is not None:
        print(report(json.loads(args.report.read_text(encoding="utf-8"))))
        return
    args.systems = [s for s in args.systems.split(",") if s]
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bm25lab-scale-"))
    info = bl.machine_info()
    results: dict[str, Any] = {"date": info["date"], "commit": info["bm25lab"], "machine": bl.machine_line(info),
                               "queries": args.queries, "loads": [], "sizes": []}
    for docs in args.docs:
        result = measure_size(workdir, docs, args)
        results["sizes"].append(result)
        results["loads"] += [round(r.get("loadavg", 0), 1) for runs in result["search"].values() for r in runs]
        if args.json:
            args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    print(report(results))


if __name__ == "__main__":
    main()
