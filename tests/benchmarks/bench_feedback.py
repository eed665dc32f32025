"""Pseudo-relevance feedback before and after the bulk path: BM25 + RM3 (and, with ``--methods``, Bo1 and
Rocchio) over Cranfield's 225 queries, in one process.

    python tests/benchmarks/bench_feedback.py                       # RM3, 5 repetitions
    python tests/benchmarks/bench_feedback.py --methods rm3,bo1,rocchio --reps 7 --json out.json
    python tests/benchmarks/bench_feedback.py --sharded 3           # a sharded index of 3 shards too

"before" is :func:`bm25lab.engine.feedback.search_many_reference`, feedback as the engine ran it until the bulk
path (expand and second_pass query by query, every statistic a single-term search; a fresh
``FeedbackStatistics`` per run, as ``bm25lab run --rm3`` made one per run); "after" is
:func:`bm25lab.engine.feedback.search_many` (one first-pass batch, the statistics from the postings in bulk, the
second pass as one batch of weighted queries through the compiled kernels). Both run on the same index, loaded
from disk (built once into ``--work``, default a temporary folder), with the engine's default BM25 and the
method's defaults, k = 1000; the two runs' results are checked identical (documents, order, score bits) before
any timing. The repetitions alternate the two (after one untimed run of each); the report gives each one's
median, per query, and the ratio, with the 1-minute load average before and after.

Peers: no Pyserini-free library installed here runs RM3 (bm25s and rank-bm25 have no pseudo-relevance
feedback; PyTerrier's Bo1/RM3 need Java), so there is no peer column; ``--peers`` lists what was looked for.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402

import numpy as np  # noqa: E402

PEERS = ("pyterrier", "pyserini", "retriv", "bm25s", "rank_bm25")  # what --peers reports as installed or not


def bits(results) -> dict:
    return {q: (list(h.doc_ids), np.asarray(h.scores, dtype=np.float64).view(np.int64).tolist())
            for q, h in results.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, help="where the index is kept (default: a temporary folder)")
    parser.add_argument("--methods", default="rm3")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--sharded", type=int, default=0, help="also a sharded index of this many shards")
    parser.add_argument("--peers", action="store_true", help="say which PRF-capable peers are installed")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args(argv)

    from bm25lab import corpora
    from bm25lab.engine import Index, Tokenizer
    from bm25lab.engine.feedback import Feedback, search_many, search_many_reference
    from bm25lab.engine.shards import ShardedIndex

    if args.peers:
        for name in PEERS:
            print(f"{name}: {'installed' if importlib.util.find_spec(name) else 'not installed'}")
    with tempfile.TemporaryDirectory() as scratch:
        work = args.work or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        corpus = corpora.get("cranfield")
        queries = dict(corpus.queries())
        indexes = {}
        plain = work / "cranfield-idx"
        if not (plain / "index.json").exists():
            Index.build(corpus.documents(), tokenizer=Tokenizer("en")).save(plain, overwrite=True)
        indexes["index"] = Index.load(plain)
        if args.sharded:
            sharded = work / f"cranfield-{args.sharded}-shards"
            if not sharded.exists():
                ShardedIndex.build(corpus.documents(), sharded, shards=args.sharded, tokenizer=Tokenizer("en"))
            indexes[f"sharded ({args.sharded})"] = ShardedIndex.load(sharded)
        load_before = os.getloadavg()[0]
        figures: dict[str, dict[str, float]] = {}
        for name, index in indexes.items():
            for method in filter(None, args.methods.split(",")):
                feedback = Feedback(method)
                runs = {"before": lambda: search_many_reference(index, queries, 1000, None, feedback),
                        "after": lambda: search_many(index, queries, 1000, None, feedback)}
                if bits(runs["before"]()) != bits(runs["after"]()):  # also the untimed, warming run
                    raise SystemExit(f"{name} {method}: the bulk path's results differ from the reference's")
                times = bl.alternate(runs, args.reps)
                before, after = bl.median(times["before"]), bl.median(times["after"])
                figures[f"{name} {method}"] = {"before": before, "after": after}
                print(f"{name} {method}: before {before:.3f} s, after {after:.3f} s "
                      f"(x{before / after:.1f}); runs {[round(t, 3) for t in times['before']]} vs "
                      f"{[round(t, 3) for t in times['after']]}", flush=True)
        load_after = os.getloadavg()[0]
    info = bl.machine_info()
    print(f"\n{info['date']}; {info['cpu']}, {info['nproc']} cores; bm25lab {bl.source_version()}; "
          f"1-min load {load_before:.2f} before, {load_after:.2f} after; medians of {args.reps} runs; "
          f"{len(queries)} queries, k = 1000\n")
    print(bl.markdown_table(["index, method", "before (s)", "after (s)", "before / after", "after, ms/query"],
                            [[name, row["before"], row["after"], bl.ratio(row["before"], row["after"]),
                              1000 * row["after"] / len(queries)] for name, row in figures.items()]))
    bl.write_json(args.json, {"figures": figures, "load": [load_before, load_after], "reps": args.reps,
                              "queries": len(queries)})


if __name__ == "__main__":
    main()
