"""A cluster build where the workers read (issue 31, item 3): `distributed.build("docs-*.jsonl", ...)` with a
LocalCluster of 1 and 2 worker processes, beside the sharded build in one process and beside the cluster build
whose client reads the documents and sends them (`distributed.build(documents, ...)`, before issue 31).

    python tests/benchmarks/bench_cluster_reading.py            # 40,000 documents in 8 JSONL files, 4 shards
    python tests/benchmarks/bench_cluster_reading.py --small    # 8,000 documents: a quick look
    python tests/benchmarks/bench_cluster_reading.py --docs 200000 --files 16 --json /tmp/reading.json

For each cluster build it reports the wall time, what the client sent the workers for the documents (the
pickled task arguments: names and byte ranges, or the documents), and from Dask's task stream the read
tasks' compute intervals on each worker: their total compute time over the wall time of the read phase
(above 1: the workers read at the same time) and the seconds during which two read tasks ran at once
(the same of the partition tasks when the client reads). Each cluster first makes an untimed build.
Every cluster-built index is checked equal to the one built here (shards.json but for its folders' random
names, hence the same files' checksums). The machine has two cores: the client, the scheduler and the
workers share them, so the figures say whether the reading spreads over the workers, not what more
machines would give.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import pickle
import random
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from benchlib import machine_info, machine_line, markdown_table, write_json


def normal(path: Path) -> dict:
    text = (path / "shards.json").read_text(encoding="utf-8")
    names: dict[str, str] = {}
    for name in re.findall(r"(?:shard|stats|seg|del)-[0-9a-f]{16}", text):
        names.setdefault(name, f"name-{len(names)}")
    manifest = json.loads(re.sub(r"(?:shard|stats|seg|del)-[0-9a-f]{16}", lambda m: names[m.group(0)], text))
    manifest.pop("checksum")
    for entry in manifest["shards"]:
        entry["manifest"].pop("checksum")
    return manifest


def write_files(root: Path, docs: int, files: int) -> int:
    """``docs`` documents of Zipf-ish words in ``files`` JSONL files; returns their bytes."""
    rng = random.Random(31)
    vocabulary = [f"w{i}" for i in range(20_000)]
    weights = [1 / (i + 1) for i in range(len(vocabulary))]
    total = 0
    per_file = -(-docs // files)
    for f in range(files):
        with (root / f"docs-{f:03d}.jsonl").open("w", encoding="utf-8") as out:
            for d in range(f * per_file, min(docs, (f + 1) * per_file)):
                out.write(json.dumps({"id": f"d{d}", "text": " ".join(rng.choices(vocabulary, weights, k=120))}) + "\n")
        total += (root / f"docs-{f:03d}.jsonl").stat().st_size
    return total


def read_intervals(stream: list[dict[str, Any]]) -> list[tuple[str, float, float]]:
    """(worker, start, stop) of each read task's (or, the client reading, each partition task's) compute."""
    return [(task["worker"], s["start"], s["stop"]) for task in stream
            if str(task["key"]).startswith(("bm25lab-read", "bm25lab-partition"))
            for s in task["startstops"] if s["action"] == "compute"]


def overlap_seconds(intervals: list[tuple[str, float, float]]) -> float:
    """Seconds during which at least two of the intervals ran at once."""
    events = sorted([(start, 1) for _, start, _ in intervals] + [(stop, -1) for _, _, stop in intervals])
    running, last, both = 0, 0.0, 0.0
    for moment, step in events:
        if running >= 2:
            both += moment - last
        running += step
        last = moment
    return both


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=40_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--workers", default="1,2", help="cluster sizes to measure")
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    if args.small:
        args.docs = 8_000

    import distributed

    from bm25lab import Tokenizer
    from bm25lab import distributed as bd
    from bm25lab.engine import shards
    from bm25lab.engine.sources.pieces import plan, read_source

    info = machine_info()
    load_start = os.getloadavg()
    tok = Tokenizer("whitespace", stopwords=None)
    rows: list[list[Any]] = []
    figures: dict[str, Any] = {"args": vars(args), "machine": info}
    with tempfile.TemporaryDirectory(prefix="bm25lab-bench-cluster-reading-") as tmp:
        root = Path(tmp)
        (root / "docs").mkdir()
        size = write_files(root / "docs", args.docs, args.files)
        pattern = str(root / "docs" / "docs-*.jsonl")
        start = time.perf_counter()
        here = shards.build(read_source(pattern), root / "here", args.shards, tok, workers=1)
        rows.append(["one process (reads, analyses, writes)", f"{time.perf_counter() - start:.2f}", "-", "-", "-", "-"])
        expected = normal(here)
        pieces = plan(pattern)
        names_bytes = len(pickle.dumps(pieces))
        docs_bytes = sum(len(pickle.dumps(chunk)) for chunk in _chunks(list(read_source(pattern)), 10_000))
        for workers in [int(w) for w in args.workers.split(",")]:
            cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                               host="127.0.0.1", dashboard_address="127.0.0.1:0",
                                               silence_logs=logging.ERROR)
            client = distributed.Client(cluster)
            try:  # an untimed build first: the workers import bm25lab and load its kernels
                bd.build(str(root / "docs" / "docs-000.jsonl"), root / f"warm-{workers}", shards=args.shards,
                         client=client, tokenizer=tok)
                for label, source, sent in (("the workers read", pattern, names_bytes),
                                            ("the client reads and sends", None, docs_bytes)):
                    target = root / f"cluster-{workers}-{len(rows)}"
                    with distributed.get_task_stream(client) as stream:
                        start = time.perf_counter()
                        bd.build(source if source is not None else read_source(pattern), target, shards=args.shards,
                                 client=client, tokenizer=tok)
                        seconds = time.perf_counter() - start
                    assert normal(target) == expected, "the cluster's index differs from the one built here"
                    intervals = read_intervals(stream.data)
                    if intervals:
                        busy = sum(stop - begin for _, begin, stop in intervals)
                        span = max(s for _, _, s in intervals) - min(b for _, b, _ in intervals)
                        parallel = f"{busy / span:.2f} ({len(intervals)} tasks)"
                        both = f"{overlap_seconds(intervals):.2f}"
                    else:
                        parallel = both = "-"
                    rows.append([f"Dask, {workers} worker{'s' if workers > 1 else ''}: {label}", f"{seconds:.2f}",
                                 f"{sent:,}", f"{sent / args.docs:.1f}", parallel, both])
                    figures[f"{workers} workers, {label}"] = {"build_s": seconds, "sent_bytes": sent,
                                                              "read_intervals": intervals}
            finally:
                client.close()
                cluster.close()

    header = ["", "build (s)", "sent for the documents (bytes)", "bytes/doc",
              "read (or partition) tasks: compute / wall of their phase", "s with 2 of them at once"]
    print(f"\n{args.docs:,} documents in {args.files} JSONL files ({size / 1e6:,.1f} MB), {args.shards} shards; "
          f"{len(pieces)} pieces (64 MiB at most each)\n")
    print(markdown_table(header, rows))
    load_end = os.getloadavg()
    print(f"\n{machine_line(info)}; load averages (1, 5, 15 min) at start {load_start[0]:.1f} {load_start[1]:.1f} "
          f"{load_start[2]:.1f}, at end {load_end[0]:.1f} {load_end[1]:.1f} {load_end[2]:.1f}")
    figures.update(rows=rows, load_start=load_start, load_end=load_end)
    write_json(args.json, figures)


def _chunks(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i:i + size] for i in range(0, len(items), size)]


if __name__ == "__main__":
    main()
