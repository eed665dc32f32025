"""Load on ``bm25lab serve``: N concurrent clients on 127.0.0.1 against the same searches in-process.

    python tests/benchmarks/bench_serve.py                      # Cranfield, 1/4/16 clients, 3,000 requests each row
    python tests/benchmarks/bench_serve.py --clients 1,8 --requests 5000 --json /tmp/serve.json

The server is the installed command, ``bm25lab serve DIR --port 0``, in a process of its own (started in
an empty folder, its defaults: the backend ``auto``, 127.0.0.1); each client is a process of its own with
one keep-alive connection, sending ``GET /search?q=...&k=10`` (Cranfield's 225 queries in turn, each
client starting at another) and timing every request from send to the last byte of the answer. Before
the timed rows, every query is sent once (untimed), as a warm server has seen them. The in-process row
is ``Index.load(DIR).search(q, k=10)`` in this process, the same queries in turn (what the server does
per request, without HTTP and JSON). A second set of rows does both with a metadata filter
(``where=year>=1960``). Reported: requests per second over the wall time of all clients, and each
request's latency at the median (p50) and the 99th percentile (p99). Every answer is checked: 200, and
the same documents and scores as the in-process search.

Servers and clients listen and connect on 127.0.0.1 only; the server is stopped (SIGTERM, waited for)
when the benchmark ends, whatever happens.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Sequence
from urllib.parse import urlencode, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402


def build_index(workdir: Path) -> tuple[Path, list[str]]:
    """Cranfield with a ``year`` in each document's metadata (from its bibliography), saved; its queries."""
    from bm25lab import corpora
    from bm25lab.engine import Index, Tokenizer, storage

    collection = corpora.get("cranfield")
    directory = workdir / "cranfield"
    if not (directory / storage.MANIFEST).exists():
        docs = []
        for doc in collection.documents():
            found = re.search(r"\b(19[4-6]\d)\b", doc.metadata.get("bib", ""))
            docs.append({"id": doc.id, "title": doc.title, "text": doc.text, **doc.metadata,
                         **({"year": int(found.group(1))} if found else {})})
        Index.build(docs, tokenizer=Tokenizer("en")).save(directory, overwrite=True)
    return directory, list(collection.queries().values())


def start_server(directory: Path, cwd: Path) -> tuple[subprocess.Popen, str]:
    command = [str(Path(sys.executable).with_name("bm25lab")), "serve", str(directory), "--port", "0"]
    environment = {k: v for k, v in os.environ.items() if not k.startswith("BM25LAB_")}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd,
                               env={**environment, "COLUMNS": "300"})
    line = process.stdout.readline()
    found = re.search(r"http://127\.0\.0\.1:\d+", line)
    if not found:
        process.kill()
        raise SystemExit(f"the server did not start: {line}{process.stderr.read()}")
    return process, found.group(0)


def stop_server(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _client(job: tuple[str, list[str], int, int, dict[str, str]]) -> tuple[list[float], list[tuple[str, list]]]:
    """One client process: ``count`` requests over one connection, queries in turn from ``start``."""
    url, queries, start, count, extra = job
    address = urlsplit(url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=120)
    latencies, answers = [], []
    for i in range(count):
        query = queries[(start + i) % len(queries)]
        path = "/search?" + urlencode({"q": query, "k": 10, **extra})
        began = time.perf_counter()
        connection.request("GET", path)
        response = connection.getresponse()
        body = response.read()
        latencies.append(time.perf_counter() - began)
        if response.status != 200:
            raise RuntimeError(f"{response.status}: {body[:200]!r}")
        if i < len(queries):
            answers.append((query, [(h["doc_id"], h["score"]) for h in json.loads(body)["hits"]]))
    connection.close()
    return latencies, answers


def load(url: str, queries: list[str], clients: int, requests: int, extra: dict[str, str]) -> dict[str, Any]:
    per_client = max(1, requests // clients)
    jobs = [(url, queries, c * len(queries) // clients, per_client, extra) for c in range(clients)]
    import multiprocessing

    with ProcessPoolExecutor(clients, mp_context=multiprocessing.get_context("fork")) as pool:
        began = time.perf_counter()
        parts = list(pool.map(_client, jobs))
        wall = time.perf_counter() - began
    latencies = sorted(x for part, _ in parts for x in part)
    answers = [a for _, part in parts for a in part]
    return {"clients": clients, "requests": len(latencies), "qps": len(latencies) / wall,
            "p50_ms": 1000 * percentile(latencies, 50), "p99_ms": 1000 * percentile(latencies, 99),
            "answers": answers}


def in_process(directory: Path, queries: list[str], requests: int, where: str | None) -> dict[str, Any]:
    from bm25lab.engine import Index

    index = Index.load(directory)
    for query in queries:  # warm, as the server is
        index.search(query, k=10, where=where)
    latencies = []
    expected = {}
    began = time.perf_counter()
    for i in range(requests):
        query = queries[i % len(queries)]
        start = time.perf_counter()
        hits = index.search(query, k=10, where=where)
        latencies.append(time.perf_counter() - start)
        if i < len(queries):
            expected[query] = list(zip(hits.doc_ids, hits.scores))
    wall = time.perf_counter() - began
    latencies.sort()
    return {"clients": "in-process", "requests": requests, "qps": requests / wall,
            "p50_ms": 1000 * percentile(latencies, 50), "p99_ms": 1000 * percentile(latencies, 99),
            "expected": expected}


def percentile(sorted_values: Sequence[float], p: float) -> float:
    if not sorted_values:
        return float("nan")
    rank = min(len(sorted_values) - 1, max(0, round(p / 100 * (len(sorted_values) - 1))))
    return sorted_values[rank]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default="1,4,16", help="concurrent clients of each row (comma-separated)")
    parser.add_argument("--requests", type=int, default=3000, help="requests of each row")
    parser.add_argument("--workdir", type=Path, default=None, help="where the index is kept (default: temporary)")
    parser.add_argument("--json", default=None, help="write the figures here")
    args = parser.parse_args(argv)
    counts = [int(c) for c in args.clients.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as scratch:
        workdir = args.workdir or Path(scratch)
        workdir.mkdir(parents=True, exist_ok=True)
        directory, queries = build_index(workdir)
        empty = Path(scratch) / "cwd"
        empty.mkdir()
        process, url = start_server(directory, empty)
        rows = []
        try:
            for label, extra in (("no filter", {}), ("where=year>=1960", {"where": "year>=1960"})):
                reference = in_process(directory, queries, args.requests, extra.get("where"))
                rows.append({"filter": label, **{k: v for k, v in reference.items() if k != "expected"}})
                load(url, queries, 1, len(queries), extra)  # every query once, untimed
                for clients in counts:
                    row = load(url, queries, clients, args.requests, extra)
                    wrong = [q for q, got in row.pop("answers") if got != reference["expected"][q]]
                    if wrong:
                        raise SystemExit(f"the server answered {wrong[0]!r} differently from the library")
                    rows.append({"filter": label, **row})
        finally:
            stop_server(process)
    info = bl.machine_info()
    print(f"bm25lab serve: {len(queries)} Cranfield queries, k=10, {args.requests:,} requests a row; "
          f"{bl.machine_line(info)}")
    print(bl.markdown_table(["filter", "clients", "requests", "q/s", "p50 ms", "p99 ms"],
                            [[r["filter"], r["clients"], f"{r['requests']:,}", f"{r['qps']:,.0f}",
                              f"{r['p50_ms']:.2f}", f"{r['p99_ms']:.2f}"] for r in rows]))
    bl.write_json(args.json, {"machine": info, "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
