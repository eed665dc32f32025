"""Large input: peak memory of streaming 1,000,000 documents into an index, of growing it, and of
evaluating a ~2 GB run file. A measurement script, not a test (it takes minutes and gigabytes).

    python tests/benchmarks/large_input.py                     # everything, full sizes (about 15 min)
    python tests/benchmarks/large_input.py index --docs 200000 # a smaller corpus, then add and optimize
    python tests/benchmarks/large_input.py text                # the text-heavy corpus only
    python tests/benchmarks/large_input.py run --gigabytes 0.5
    python tests/benchmarks/large_input.py scale --docs 10000000   # build, save, load and search 10 M

Each measured step runs in a fresh Python process; its peak resident memory is the kernel's
``ru_maxrss`` of that process (``getrusage``) and, for the tokenizer's worker processes, of its
largest child. What is measured:

- ``index``: ``Index.build`` over a generator of synthetic documents (Zipf words, whitespace
  tokenizer) and ``save``. The generator makes each document when the builder asks for it, so the
  corpus's raw text (its size is reported) never exists in memory at once; the peak follows the
  postings, not the text. Then ``bm25lab add`` of 100,000 more documents (10,000 of them
  replacing existing ones) and ``bm25lab optimize``.
- ``text``: ``--text-heavy N`` documents whose words are padded to 500 characters: about 5 GB of
  text for N = 200,000 with a fifth of the postings, so a peak far below the text's size shows that
  the text streams through.
- ``scale``: ``Index.build`` of ``--docs`` streamed documents and ``save`` (as ``index``), then in
  another fresh process ``Index.load`` and batches of 1,000 queries (2-7 words drawn by the corpus's
  word frequencies) through ``search_many`` at k = 10 and k = 1,000: seconds of each batch (the
  first, which makes the terms' look-up table and each term's largest weight, and the best of the
  next two; the postings' (tf, length) pairs are read from the index, saved with it) and the peak memory of
  each process.
- ``run``: ``bm25lab evaluate`` of a generated TREC run of the requested size (queries x 1,000
  documents) against generated qrels. The readers parse with pyarrow into columns, so no Python
  object is made per line; the peak is reported next to the file's size.

Files go to a temporary folder under ``--workdir`` (default: the system's), deleted at the end.
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

HERE = Path(__file__).resolve().parent
MB = 1024 * 1024

# The children import bm25lab as installed: they run in an empty temporary folder and put only this
# folder (for ``synthetic_documents``) on sys.path, never the checkout's root, whose bm25lab/ folder
# would shadow the installed package.
# Run in a fresh interpreter: argv = [this folder, index dir, documents, seed, pad]; prints one JSON line.
INDEX_CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from large_input import synthetic_documents
from bm25lab.engine import Index, Tokenizer

directory, docs, seed, pad = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
stats = {"text_bytes": 0}
started = time.perf_counter()
index = Index.build(synthetic_documents(docs, seed, stats, pad=pad), tokenizer=Tokenizer("whitespace", stopwords=None))
built = time.perf_counter() - started
index.save(directory)
print(json.dumps({"seconds_build": built, "seconds_total": time.perf_counter() - started,
                  "text_bytes": stats["text_bytes"], "counts": index.counts(),
                  "peak_rss_self": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "peak_rss_children": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}))
"""

# argv = [this folder, index dir, queries]; loads the index and times batches; prints one JSON line.
SEARCH_CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from large_input import synthetic_queries
from bm25lab.engine import Index

started = time.perf_counter()
index = Index.load(sys.argv[2])
loaded = time.perf_counter() - started
queries = synthetic_queries(int(sys.argv[3]), seed=5)
batches = {}
for k in (10, 1000):
    times = []
    for _ in range(3):
        started = time.perf_counter()
        results = index.search_many(queries, k=k)
        times.append(time.perf_counter() - started)
    batches[str(k)] = {"first": times[0], "best_next": min(times[1:]), "results": results.num_results}
print(json.dumps({"seconds_load": loaded, "batches": batches,
                  "peak_rss_self": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "peak_rss_children": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}))
"""

# argv = [this folder, *bm25lab arguments]; runs the command line and prints one JSON line on stderr's last line.
CLI_CHILD = r"""
import json, resource, sys, time
from bm25lab.cli import app
started = time.perf_counter()
code = 0
try:
    app(sys.argv[2:], prog_name="bm25lab")
except SystemExit as exc:
    code = exc.code or 0
sys.stderr.write("\n" + json.dumps({"code": code, "seconds": time.perf_counter() - started,
                  "peak_rss_self": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "peak_rss_children": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}) + "\n")
"""


def synthetic_documents(count: int, seed: int, stats: dict | None = None, prefix: str = "d", start: int = 0,
                        pad: int = 0):
    """Yield ``count`` synthetic ``(id, text)`` documents, made block by block as they are consumed.

    Words ``w0, w1, ...`` (padded with ``x`` to ``pad`` characters) from a vocabulary of 100,000 with
    Zipf-like frequencies (exponent 1.1), 20 to 100 words a document (60 on average).
    ``stats["text_bytes"]`` adds up the UTF-8 size.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    vocabulary = np.array([f"w{i}".ljust(pad, "x") for i in range(100_000)], dtype=object)
    weights = 1.0 / (np.arange(100_000) + 2.7) ** 1.1
    cumulative = np.cumsum(weights / weights.sum())
    block = 10_000
    for first in range(0, count, block):
        n = min(block, count - first)
        lengths = rng.integers(20, 101, size=n)
        words = vocabulary[np.searchsorted(cumulative, rng.random(int(lengths.sum())), side="right").clip(0, 99_999)]
        ends = np.cumsum(lengths)
        for i in range(n):
            text = " ".join(words[ends[i] - lengths[i]:ends[i]])
            if stats is not None:
                stats["text_bytes"] += len(text) + 1
            yield f"{prefix}{start + first + i}", text


def synthetic_queries(count: int, seed: int) -> list[str]:
    """``count`` queries of 2 to 7 distinct words of :func:`synthetic_documents`'s vocabulary, drawn by
    its word frequencies (as its documents are)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    weights = 1.0 / (np.arange(100_000) + 2.7) ** 1.1
    probabilities = weights / weights.sum()
    return [" ".join(f"w{r}" for r in rng.choice(100_000, size=int(n), replace=False, p=probabilities))
            for n in rng.integers(2, 8, size=count)]


def _child(code: str, *args: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="bm25lab-large-cwd-") as cwd:
        result = subprocess.run([sys.executable, "-c", code, str(HERE), *args], capture_output=True, text=True,
                                cwd=cwd, env=dict(os.environ, COLUMNS="200"))
    if result.returncode != 0:
        raise SystemExit(f"child failed ({result.returncode}):\n{result.stderr[-3000:]}")
    line = result.stderr.strip().splitlines()[-1] if code is CLI_CHILD else result.stdout.strip().splitlines()[-1]
    facts = json.loads(line)
    if facts.get("code", 0):
        raise SystemExit(f"command failed:\n{result.stderr[-3000:]}")
    if code is CLI_CHILD:
        facts["stdout"] = result.stdout.strip()
    return facts


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size


def _peak(facts: dict) -> str:
    return (f"peak RSS {facts['peak_rss_self'] / MB:,.0f} MB "
            f"(largest worker process {facts['peak_rss_children'] / MB:,.0f} MB)")


def measure_index(workdir: Path, docs: int, pad: int = 0) -> Path:
    directory = workdir / f"index-{pad}"
    facts = _child(INDEX_CHILD, str(directory), str(docs), "1", str(pad))
    counts = facts["counts"]
    words = f" (words padded to {pad} characters)" if pad else ""
    print(f"index  {docs:,} documents{words} streamed from a generator: raw text {facts['text_bytes'] / MB:,.0f} MB, "
          f"{counts['postings']:,} postings, {counts['terms']:,} terms; build {facts['seconds_build']:.0f} s, "
          f"with save {facts['seconds_total']:.0f} s; {_peak(facts)}; index on disk {_size(directory) / MB:,.0f} MB")
    return directory


def measure_grow(workdir: Path, directory: Path, docs: int) -> None:
    more = workdir / "more.jsonl"
    with open(more, "w", encoding="utf-8") as fh:
        replaced = min(10_000, docs)
        for doc_id, text in synthetic_documents(replaced, 2):  # ids d0..: replace existing documents
            fh.write(json.dumps({"id": doc_id, "text": text}) + "\n")
        for doc_id, text in synthetic_documents(100_000 - replaced, 3, prefix="n"):
            fh.write(json.dumps({"id": doc_id, "text": text}) + "\n")
    for args in (["add", str(directory), str(more)], ["optimize", str(directory)]):
        facts = _child(CLI_CHILD, *args)
        print(f"{args[0]:<6} {facts['seconds']:.0f} s, {_peak(facts)}: {facts['stdout']}")


def measure_scale(workdir: Path, docs: int, queries: int = 1000) -> None:
    directory = measure_index(workdir, docs)
    facts = _child(SEARCH_CHILD, str(directory), str(queries))
    for k, batch in facts["batches"].items():
        print(f"search {queries:,} queries, k = {k}: first batch {batch['first']:.2f} s, "
              f"then {batch['best_next']:.3f} s = {queries / batch['best_next']:,.0f} queries/s; "
              f"{batch['results']:,} results")
    print(f"search process: load {facts['seconds_load']:.2f} s; {_peak(facts)}")


def write_run(path: Path, qrels: Path, gigabytes: float) -> int:
    """A TREC run of ``queries x 1,000`` lines of about ``gigabytes`` GB, and qrels for its queries."""
    import numpy as np

    rng = np.random.default_rng(7)
    per_query = 1000
    line_bytes = len("q00000 Q0 doc0000000 1000 12.345678 bm25lab\n")
    queries = max(1, int(gigabytes * 1e9 / (per_query * line_bytes)))
    ranks = np.arange(1, per_query + 1)
    with open(path, "w", encoding="ascii") as out, open(qrels, "w", encoding="ascii") as judged:
        for q in range(queries):
            docs = rng.choice(5_000_000, size=per_query, replace=False)
            scores = np.sort(rng.random(per_query) * 30)[::-1]
            qid = f"q{q:05d}"
            out.write("".join(f"{qid} Q0 doc{d:07d} {r} {s:.6f} bm25lab\n" for d, r, s in zip(docs.tolist(), ranks.tolist(), scores.tolist())))
            for d in rng.choice(docs, size=20, replace=False).tolist():
                judged.write(f"{qid} 0 doc{d:07d} {int(rng.integers(0, 3))}\n")
    return queries


def measure_run(workdir: Path, gigabytes: float) -> None:
    run, qrels = workdir / "big.run", workdir / "big.qrels"
    started = time.perf_counter()
    queries = write_run(run, qrels, gigabytes)
    print(f"run    generated {queries:,} queries x 1,000 = {queries * 1000:,} lines, {_size(run) / 1e9:.2f} GB "
          f"in {time.perf_counter() - started:.0f} s")
    facts = _child(CLI_CHILD, "evaluate", str(qrels), str(run), "-m", "AP", "-m", "nDCG@10", "-m", "P@10",
                   "--format", "json")
    means = json.loads(facts["stdout"])
    print(f"evaluate {_size(run) / 1e9:.2f} GB run: {facts['seconds']:.0f} s, {_peak(facts)}; "
          f"{json.dumps(means)[:160]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", nargs="?", choices=["all", "index", "text", "run", "scale"], default="all")
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--text-heavy", type=int, default=200_000, help="documents of the padded-words corpus")
    parser.add_argument("--gigabytes", type=float, default=2.0)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bm25lab-large-", dir=args.workdir))
    try:
        if args.what in ("all", "index"):
            directory = measure_index(workdir, args.docs)
            measure_grow(workdir, directory, args.docs)
            shutil.rmtree(directory)
        if args.what in ("all", "text"):
            shutil.rmtree(measure_index(workdir, args.text_heavy, pad=500))
        if args.what in ("all", "run"):
            measure_run(workdir, args.gigabytes)
        if args.what == "scale":
            measure_scale(workdir, args.docs)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
