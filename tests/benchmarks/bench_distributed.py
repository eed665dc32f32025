"""Scale-out on Dask distributed: build and batch-query throughput of a sharded index with 1 and 2
workers (a LocalCluster of worker processes on this machine), beside one process.

    python tests/benchmarks/bench_distributed.py                      # 100,000 documents, 4 shards
    python tests/benchmarks/bench_distributed.py --small              # 5,000 documents: a quick look
    python tests/benchmarks/bench_distributed.py --docs 200000 --json /tmp/distributed.json

What is timed is what a user runs: the corpus is a JSONL file (the synthetic Zipf collection of
``benchlib``, whitespace tokens); the cluster build is ``bm25lab.distributed.build(file, ...)`` (the
client reads the file and streams partitions to the workers, which analyse, build and merge the
shards and reduce the statistics; the client commits); a batch is ``DistributedIndex.search_many``
(texts in, ``Results`` out: the client tokenizes, two rounds of tasks, the merge on the client), after
one untimed batch that loads the shards on the workers. One process: ``Index.build`` and
``search_many`` of an ordinary index, and ``ShardedIndex`` (the same shards, searched in this process).
Every sharded result is checked equal, documents and float64 bits, to the ordinary index's.

The machine has two cores: with two workers the client, the scheduler and both workers share them,
so the figures say what the overheads cost and whether work spreads, not what more machines would
give; the README's projection uses them with that caveat.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchlib import SyntheticConfig, machine_info, machine_line, make_synthetic, markdown_table, median, write_json


def bits(results: Any) -> dict[str, tuple[list[str], bytes]]:
    return {q: (h.doc_ids, np.asarray(h.scores, dtype=np.float64).tobytes()) for q, h in results.items()}


def timed(fn: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=2_000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--partition-docs", type=int, default=10_000)
    parser.add_argument("--backend", default="numba", help="backend of the searches (numpy, numba, auto)")
    parser.add_argument("--reps", type=int, default=3, help="timed batches per k (median reported)")
    parser.add_argument("--workers", default="1,2", help="cluster sizes to measure")
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    if args.small:
        args.docs, args.queries, args.partition_docs = 5_000, 300, 1_000

    import distributed

    from bm25lab import Index, Tokenizer
    from bm25lab import distributed as bd
    from bm25lab.engine.shards import ShardedIndex

    info = machine_info()
    load_start = os.getloadavg()
    config = SyntheticConfig(docs=args.docs, queries=args.queries, vocab=min(200_000, max(20_000, args.docs)))
    data = make_synthetic(config)
    queries = data.query_texts
    tok = Tokenizer("whitespace", stopwords=None)
    rows: list[list[Any]] = []
    figures: dict[str, Any] = {"args": vars(args), "machine": info}
    with tempfile.TemporaryDirectory(prefix="bm25lab-bench-distributed-") as tmp:
        root = Path(tmp)
        source = root / "docs.jsonl"
        with source.open("w", encoding="utf-8") as out:
            for doc_id, text in zip(data.doc_ids, data.texts):
                out.write(json.dumps({"id": doc_id, "text": text}) + "\n")
        size_mb = source.stat().st_size / 1e6
        del data

        # one process: an ordinary index, and the sharded index searched here
        from bm25lab.corpora import documents_of
        seconds, single = timed(lambda: Index.build(documents_of(source), tokenizer=tok, workers=1, backend=args.backend))
        rows.append(["one process, ordinary index", f"{args.docs / seconds:,.0f}", *search_rates(single, queries, args, None)])
        figures["one process"] = {"build_s": seconds}
        expected = {k: bits(single.search_many(queries, k=k, workers=1)) for k in (10, 1000)}
        from bm25lab.engine import shards as sharding
        seconds, _ = timed(lambda: sharding.build(documents_of(source), root / "here", args.shards, tok, workers=1,
                                                  backend=args.backend))
        here = ShardedIndex.load(root / "here", backend=args.backend)
        rows.append([f"one process, {args.shards} shards", f"{args.docs / seconds:,.0f}",
                     *search_rates(here, queries, args, expected)])

        for workers in [int(w) for w in args.workers.split(",")]:
            cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                               host="127.0.0.1", dashboard_address="127.0.0.1:0",
                                               silence_logs=logging.ERROR)
            client = distributed.Client(cluster)
            try:
                target = root / f"cluster-{workers}"
                seconds, _ = timed(lambda: bd.build(source, target, shards=args.shards, client=client, tokenizer=tok,
                                                    partition_docs=args.partition_docs, backend=args.backend))
                index = bd.DistributedIndex(target, client, backend=args.backend)
                rows.append([f"Dask, {workers} worker{'s' if workers > 1 else ''}, {args.shards} shards",
                             f"{args.docs / seconds:,.0f}", *search_rates(index, queries, args, expected)])
                figures[f"{workers} workers"] = {"build_s": seconds}
            finally:
                client.close()
                cluster.close()

    header = ["", "build (docs/s)", "batch top-10 (q/s)", "batch top-1000 (q/s)"]
    print(f"\n{args.docs:,} documents ({size_mb:,.0f} MB of JSONL), {args.queries:,} queries, {args.shards} shards, "
          f"{args.partition_docs:,} documents a partition, backend {args.backend}; batches: median of {args.reps}\n")
    print(markdown_table(header, rows))
    load_end = os.getloadavg()
    print(f"\n{machine_line(info)}; load averages (1, 5, 15 min) at start {load_start[0]:.1f} {load_start[1]:.1f} "
          f"{load_start[2]:.1f}, at end {load_end[0]:.1f} {load_end[1]:.1f} {load_end[2]:.1f}")
    figures.update(rows=rows, load_start=load_start, load_end=load_end)
    write_json(args.json, figures)


def search_rates(index: Any, queries: dict[str, str], args: argparse.Namespace,
                 expected: dict[int, Any] | None) -> list[str]:
    """Queries per second of batches at k = 10 and k = 1000 (after one untimed batch), each batch's
    results checked against the ordinary index's."""
    rates = []
    for k in (10, 1000):
        kwargs = {"workers": 1} if not hasattr(index, "client") else {}
        first = index.search_many(queries, k=k, **kwargs)  # loads, prepares, compiles what a first batch does
        if expected is not None:
            assert bits(first) == expected[k], f"results differ from one index's at k={k}"
        times = [timed(lambda: index.search_many(queries, k=k, **kwargs))[0] for _ in range(args.reps)]
        rates.append(f"{len(queries) / median(times):,.0f}")
    return rates


if __name__ == "__main__":
    main()
