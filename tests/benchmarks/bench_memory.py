"""Resident memory of a loaded, memory-mapped index: bm25lab ``Index.load`` vs bm25s ``load(mmap=True)``.

    python tests/benchmarks/bench_memory.py --small
    python tests/benchmarks/bench_memory.py                 # 150,000 documents (the issue's size)
    python tests/benchmarks/bench_memory.py --workdir /tmp/bench-indexes   # keep the saved indexes

The synthetic Zipf collection of ``bench_search`` is indexed by both systems on identical tokens and
saved. Each load is then measured in a fresh Python process: VmRSS (from ``/proc/self/status``)
after importing the library, after loading the index, and after one batch of the synthetic queries
at k = 10 in that process (bm25lab ``retrieve_tokens(workers=1)``; bm25s with its numpy backend and,
as ``bm25s-numba``, with the numba backend that the speed benchmarks time). Reported: the RSS added
by the load and by the batch, the whole process's RSS after the batch, the load time, and the
index's size on disk, and whether bm25lab's process loaded numba (it must not: its search runs on its
compiled core). Each process runs ``--reps`` times, rotating the systems; medians.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402

K1, B = 0.9, 0.4

# Run in a fresh interpreter, in an empty temporary folder (bm25lab as installed, never the
# checkout's folder): argv = [system, index dir, queries JSON]; prints one JSON line.
CHILD = r"""
import json, sys, time
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
system, directory, queries_path = sys.argv[1:4]
queries = json.load(open(queries_path))
if system == "bm25lab":
    from bm25lab.engine import Index
    before = rss(); t = time.perf_counter()
    index = Index.load(directory)
    load_s = time.perf_counter() - t; loaded = rss()
    index.retrieve_tokens(queries, 10, workers=1)
else:
    import bm25s, logging
    logging.getLogger("bm25s").setLevel(logging.ERROR)
    before = rss(); t = time.perf_counter()
    index = bm25s.BM25.load(directory, mmap=True, load_corpus=False, show_progress=False)
    load_s = time.perf_counter() - t; loaded = rss()
    backend = "numba" if system == "bm25s-numba" else "numpy"
    index.retrieve(queries, k=10, n_threads=0, show_progress=False, backend_selection=backend)
print(json.dumps({"import_mb": before, "load_mb": loaded - before, "batch_mb": rss() - loaded,
                  "total_mb": rss(), "load_s": load_s, "numba": int("numba" in sys.modules),
                  "native": int("bm25lab.engine.core._core" in sys.modules)}))
"""


def save_indexes(syn: bl.Synthetic, workdir: Path) -> dict[str, Path]:
    """Build both indexes on the same tokens and save them under ``workdir`` (reused if present)."""
    import bm25s
    from bm25lab.engine import Index, Tokenizer, storage

    lab_dir, bm25s_dir = workdir / f"bm25lab-{syn.config.docs}", workdir / f"bm25s-{syn.config.docs}"
    if not (lab_dir / storage.MANIFEST).exists():
        index = Index.build(zip(syn.doc_ids, syn.texts), tokenizer=Tokenizer("whitespace", stopwords=None), workers=1)
        index.save(lab_dir, overwrite=True)
        del index
    if not (bm25s_dir / "params.index.json").exists():
        retriever = bm25s.BM25(method="lucene", k1=K1, b=B)
        retriever.index(syn.tokens, show_progress=False)
        retriever.save(bm25s_dir, show_progress=False)
        del retriever
    return {"bm25lab": lab_dir, "bm25s": bm25s_dir, "bm25s-numba": bm25s_dir}


def dir_mb(path: Path, skip_suffix: str = "\0") -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.name.endswith(skip_suffix)) / 2 ** 20


def measure(system: str, directory: Path, queries_path: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bm25lab-bench-cwd-") as cwd:
        done = subprocess.run([sys.executable, "-c", CHILD, system, str(directory), str(queries_path)],
                              capture_output=True, text=True, check=False, cwd=cwd)
    if done.returncode != 0:
        raise RuntimeError(f"{system} child failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(syn: bl.Synthetic, workdir: Path, reps: int) -> dict[str, Any]:
    dirs = save_indexes(syn, workdir)
    queries_path = workdir / "queries.json"
    queries_path.write_text(json.dumps(syn.query_tokens), encoding="utf-8")
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in dirs}
    names = list(dirs)
    for rep in range(reps):
        for name in names[rep % len(names):] + names[:rep % len(names)]:
            samples[name].append(measure(name, dirs[name], queries_path))
    out: dict[str, Any] = {}
    for name, runs in samples.items():
        out[name] = {key: bl.median([r[key] for r in runs]) for key in runs[0]}
        out[name]["disk_mb"] = dir_mb(dirs[name])
        out[name]["disk_mb_no_texts"] = dir_mb(dirs[name], ".sqlite")  # bm25lab keeps the texts, bm25s does not
    return out


def report(results: dict[str, Any]) -> str:
    m = results["memory"]
    rows = [(name, r["import_mb"], r["load_mb"], r["batch_mb"], r["load_mb"] + r["batch_mb"], r["total_mb"],
             r["load_s"] * 1000, r["disk_mb"], r["disk_mb_no_texts"]) for name, r in m.items()]
    lab, peer, jitted = m["bm25lab"], m["bm25s"], m["bm25s-numba"]
    return "\n".join([
        f"### Memory of a loaded {results['config']['docs']:,}-document index (median of {results['reps']} "
        "fresh processes; MiB)",
        bl.markdown_table(["system", "RSS after import", "+ load", "+ one batch (k=10)", "load + batch",
                           "whole process", "load ms", "on disk MiB", "on disk without texts"], rows),
        f"RSS added by load, bm25lab / bm25s: {bl.ratio(lab['load_mb'], peer['load_mb'])}; "
        f"load + batch: {bl.ratio(lab['load_mb'] + lab['batch_mb'], peer['load_mb'] + peer['batch_mb'])}; "
        f"whole process: {bl.ratio(lab['total_mb'], peer['total_mb'])} (bm25s numba backend: "
        f"{bl.ratio(lab['total_mb'], jitted['total_mb'])})",
        "bm25lab's process loaded numba" if lab["numba"] else "bm25lab's batch ran on its compiled core, numba never loaded"
        if lab["native"] else "bm25lab's batch ran on numpy (its compiled core is not built)",
    ])


def summary_rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    m = results["memory"]
    lab, peer = m["bm25lab"], m["bm25s"]
    docs = results["config"]["docs"]
    rows = []
    # the issue bounds the memory after the first batch: what the load and the batch add, and the whole process
    for label, key, bounded in (("RSS added by load", ("load_mb",), True),
                                ("RSS added by load + one batch", ("load_mb", "batch_mb"), True),
                                ("whole process's RSS after one batch", ("total_mb",), True)):
        ours, theirs = sum(lab[k] for k in key), sum(peer[k] for k in key)
        rows.append({"case": f"{label}, {docs:,}-doc index (MiB)", "bm25lab": f"{ours:.0f}",
                     "peer": f"bm25s mmap: {theirs:.0f}", "ratio": ours / theirs if theirs else float("nan"),
                     "target": "<= 1" if bounded else "none", "met": ours <= theirs if bounded else None})
    return rows


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", action="store_true", help="5,000 documents")
    parser.add_argument("--docs", type=int)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--workdir", help="where to save the indexes (kept); default: a temporary folder")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    bl.quiet_logs()
    base = bl.SyntheticConfig.small() if args.small else bl.SyntheticConfig()
    config = bl.SyntheticConfig(docs=args.docs or base.docs, doc_len=base.doc_len, vocab=base.vocab,
                                queries=base.queries)
    info = bl.machine_info()
    print(bl.machine_line(info), flush=True)
    syn = bl.make_synthetic(config)
    temp = None if args.workdir else tempfile.mkdtemp(prefix="bm25lab-bench-memory-")
    workdir = Path(args.workdir or temp)
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        memory = run(syn, workdir, args.reps)
    finally:
        if temp:
            shutil.rmtree(temp, ignore_errors=True)
    results = {"machine": info, "config": vars(config), "reps": args.reps, "memory": memory}
    results["summary"] = summary_rows(results)
    print(report(results))
    bl.write_json(args.json, results)
    return results


if __name__ == "__main__":
    main()
