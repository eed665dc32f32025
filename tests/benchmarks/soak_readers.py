"""Readers against a writer, sustained: searches in real processes while another process commits.

    python tests/benchmarks/soak_readers.py                     # 35 s on a ~50 MB index
    python tests/benchmarks/soak_readers.py --seconds 6 --docs 3000 --json   # the suite's short run
    python tests/benchmarks/soak_readers.py --shards 3          # the same on a sharded index of 3 shards

Builds a synthetic index (``--docs`` documents of ~120 Zipf-distributed words, whitespace
tokenizer; 80,000 give about 50 MB; with ``--shards N``, a sharded index of N shards,
:mod:`bm25lab.engine.shards`), then for ``--seconds`` runs at once:

- **a writer** (one process, the library's commits as ``Index.delete``/``add``/``optimize`` make
  them on a loaded index, or those of ``bm25lab.engine.shards`` on a sharded one): deletes one random live document per commit, ~6 commits a second (``--rate``), adds 20
  documents back every 10th commit and optimizes every 40th, so that deletion files and segment
  folders are replaced and removed all the time;
- **command-line readers** (``--cli-readers`` threads): ``bm25lab search DIR QUERY --format json``,
  each search a fresh process of the installed entry point (next to this interpreter), which loads
  the index cold with checksums verified;
- **a library reader** (one process): ``Index.load(DIR)`` (``ShardedIndex.load``) and a search, in a
  loop, noting each load whose manifest changed while it was loading (a load that overlapped a commit).

A failed search is a non-zero exit code, anything on stderr, output that is not the expected JSON,
or an exception in the library reader. Prints the searches, the failures, the failures per
thousand searches (the issue's bar: 0) and the commits and overlapping loads that make the run
meaningful; exits 1 when any search failed.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

# Every participant (the writer, the library reader, the command-line readers together) runs for at
# least --seconds, then on until each has done its minimum (it says so by a file in the sync folder),
# at most --max-seconds: the counts that make a run meaningful never depend on the machine's speed.
GOING_ON = r"""
import os, time
def going_on(deadline, hard, sync):
    now = time.monotonic()
    return now < hard and (now < deadline or len(os.listdir(sync)) < 3)
def enough(sync, name):
    open(os.path.join(sync, name), "w").close()
"""

WRITER = GOING_ON + r"""
import json, random, sys
from bm25lab.engine import Index, segments, shards
folder, seconds, rate, seed = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
sync, hard, min_commits = sys.argv[5], time.monotonic() + float(sys.argv[6]), int(sys.argv[7])
sharded = shards.is_sharded(folder)
rng = random.Random(seed)
if sharded:
    segments = shards  # add_documents, delete_documents and optimize of a sharded index
    live = sorted(d.id for d in shards.ShardedIndex.load(folder, verify=False).documents())
else:
    live = list(Index.load(folder, verify=False).doc_ids)
deleted, commits, errors = [], 0, []
deadline = time.monotonic() + seconds
while going_on(deadline, hard, sync):
    if commits >= min_commits:
        enough(sync, "writer")
    started = time.monotonic()
    try:
        if commits % 40 == 39:
            segments.optimize(folder, verify=False)
        elif commits % 10 == 9 and deleted:
            back, deleted[:] = deleted[:20], deleted[20:]
            segments.add_documents(folder, [(d, f"w{rng.randrange(50)} w{rng.randrange(500)} returned") for d in back],
                                   workers=1, verify=False)
            live.extend(back)
        else:
            victim = live.pop(rng.randrange(len(live)))
            segments.delete_documents(folder, [victim], verify=False)
            deleted.append(victim)
        commits += 1
    except Exception as exc:  # a writer's failure is reported, not a reader's
        errors.append(f"{type(exc).__name__}: {exc}")
    time.sleep(max(0.0, 1.0 / rate - (time.monotonic() - started)))
print(json.dumps({"commits": commits, "errors": errors[:5]}), flush=True)
"""

LIBRARY_READER = GOING_ON + r"""
import json, sys, traceback
from dataclasses import dataclass
from pathlib import Path
from bm25lab.engine import Index, shards
folder, seconds, queries = Path(sys.argv[1]), float(sys.argv[2]), json.loads(sys.argv[3])
sync, hard, min_searches, min_overlaps = sys.argv[4], time.monotonic() + float(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
load, manifest = (shards.ShardedIndex.load, shards.MANIFEST) if shards.is_sharded(folder) else (Index.load, "index.json")
searches = failures = overlapped = 0
shown = []
deadline = time.monotonic() + seconds
while going_on(deadline, hard, sync):
    if searches >= min_searches and overlapped >= min_overlaps:
        enough(sync, "library")
    query = queries[searches % len(queries)]
    before = (folder / manifest).read_bytes()
    try:
        index = load(folder)
        if (folder / manifest).read_bytes() != before:
            overlapped += 1
        hits = index.search(query, k=5)
        [(h.doc_id, h.title) for h in hits]  # the stores are read too
    except Exception:
        failures += 1
        if len(shown) < 5:
            shown.append(traceback.format_exc(limit=3).strip().splitlines()[-1])
    searches += 1
print(json.dumps({"searches": searches, "failures": failures, "overlapped": overlapped, "errors": shown}), flush=True)
"""


def words(rng: random.Random, count: int) -> str:
    """``count`` words of a Zipf-like vocabulary of 5,000 (w0 the most frequent)."""
    return " ".join(f"w{int(rng.paretovariate(1.1)) % 5000}" for _ in range(count))


def build(folder: Path, docs: int, seed: int, shard_count: int | None = None) -> int:
    """Index ``docs`` synthetic documents into ``folder`` (``shard_count`` shards: a sharded index);
    returns its size in bytes."""
    from bm25lab.engine import Index, Tokenizer, shards, storage

    rng = random.Random(seed)
    corpus = ({"id": f"d{i}", "title": f"document {i}", "text": words(rng, rng.randint(60, 180))} for i in range(docs))
    tokenizer = Tokenizer("whitespace", stopwords=None)
    if shard_count:
        shards.build(corpus, folder, shard_count, tokenizer, workers=1)
        return shards.size_on_disk(folder)
    Index.build(corpus, tokenizer=tokenizer).save(folder)
    return storage.size_on_disk(folder)


def entry_point() -> str:
    """The ``bm25lab`` command of this interpreter's installation (never another one on PATH)."""
    return str(Path(sys.executable).parent / "bm25lab")


@dataclass(frozen=True)
class Minimum:
    """What makes a run meaningful: each participant goes on past ``--seconds`` until it has done this
    much (at most ``max_seconds`` in all)."""
    commits: int = 0
    library_searches: int = 0
    overlapping_loads: int = 0
    cli_searches: int = 0
    max_seconds: float = 0.0


def going_on(deadline: float, hard: float, sync: Path) -> bool:
    """The command-line readers' side of the scripts' ``going_on``."""
    now = time.monotonic()
    return now < hard and (now < deadline or len(os.listdir(sync)) < 3)


def cli_reader(folder: Path, seconds: float, queries: list[str], tally: dict, lock: threading.Lock,
               sync: Path, hard: float, minimum: int) -> None:
    env = dict(os.environ, COLUMNS="200")
    deadline = time.monotonic() + seconds
    n = 0
    while going_on(deadline, hard, sync):
        with lock:
            if tally["searches"] >= minimum:
                (sync / "cli").touch()
        query = queries[n % len(queries)]
        n += 1
        result = subprocess.run([entry_point(), "search", str(folder), query, "--format", "json", "-k", "5"],
                                capture_output=True, text=True, env=env)
        error = ""
        if result.returncode != 0 or result.stderr.strip():
            error = f"exit {result.returncode}: {result.stderr.strip()[-300:]}"
        else:
            try:
                rows = json.loads(result.stdout)
                assert isinstance(rows, list) and all("doc_id" in r for r in rows)
            except (ValueError, AssertionError):
                error = f"unexpected output: {result.stdout[:200]!r}"
        with lock:
            tally["searches"] += 1
            if error:
                tally["failures"] += 1
                if len(tally["errors"]) < 5:
                    tally["errors"].append(error)


def soak(folder: Path, seconds: float, cli_readers: int, rate: float, seed: int,
         minimum: Minimum = Minimum()) -> dict:
    """Run the writer and the readers for ``seconds``, then on until each has done its ``minimum``
    (at most ``minimum.max_seconds``, when that is longer); their counts."""
    rng = random.Random(seed + 1)
    queries = [words(rng, rng.randint(1, 4)) for _ in range(50)]
    env = dict(os.environ)
    sync = Path(tempfile.mkdtemp(prefix="bm25lab-soak-sync-"))
    if not cli_readers:
        (sync / "cli").touch()
    cap = max(seconds, minimum.max_seconds)
    started = time.monotonic()
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(folder), str(seconds), str(rate), str(seed),
                               str(sync), str(cap), str(minimum.commits)], stdout=subprocess.PIPE, text=True, env=env)
    library = subprocess.Popen([sys.executable, "-c", LIBRARY_READER, str(folder), str(seconds), json.dumps(queries),
                                str(sync), str(cap), str(minimum.library_searches), str(minimum.overlapping_loads)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    tally = {"searches": 0, "failures": 0, "errors": []}
    lock = threading.Lock()
    threads = [threading.Thread(target=cli_reader, args=(folder, seconds, queries, tally, lock, sync,
                                                         time.monotonic() + cap, minimum.cli_searches))
               for _ in range(cli_readers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    written = json.loads(writer.communicate(timeout=cap + 600)[0])
    out, err = library.communicate(timeout=cap + 600)
    ran = time.monotonic() - started
    shutil.rmtree(sync, ignore_errors=True)
    read = json.loads(out) if library.returncode == 0 else {"searches": 0, "failures": 1, "overlapped": 0,
                                                           "errors": [err.strip()[-300:]]}
    searches = tally["searches"] + read["searches"]
    failures = tally["failures"] + read["failures"]
    return {"seconds": round(ran, 1), "commits": written["commits"], "writer_errors": written["errors"],
            "cli_searches": tally["searches"], "cli_failures": tally["failures"],
            "library_searches": read["searches"], "library_failures": read["failures"],
            "overlapping_loads": read["overlapped"], "searches": searches, "failures": failures,
            "failures_per_1000": 1000.0 * failures / max(searches, 1), "errors": tally["errors"] + read["errors"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=35.0)
    parser.add_argument("--docs", type=int, default=80_000)
    parser.add_argument("--cli-readers", type=int, default=2)
    parser.add_argument("--rate", type=float, default=6.0, help="the writer's commits a second (default 6)")
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--shards", type=int, help="build a sharded index of this many shards")
    parser.add_argument("--folder", type=Path, help="where to build the index (default: a temporary folder)")
    parser.add_argument("--json", action="store_true", help="print the counts as one JSON object")
    parser.add_argument("--min-commits", type=int, default=0, help="go on past --seconds until this many commits")
    parser.add_argument("--min-library-searches", type=int, default=0)
    parser.add_argument("--min-overlapping-loads", type=int, default=0,
                        help="go on until the library reader saw this many loads overlap a commit")
    parser.add_argument("--min-cli-searches", type=int, default=0)
    parser.add_argument("--max-seconds", type=float, default=0.0,
                        help="stop going on for the minimums after this many seconds in all")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bm25lab-soak-") as tmp:
        folder = args.folder or Path(tmp) / "index"
        started = time.perf_counter()
        size = build(folder, args.docs, args.seed, args.shards)
        built = time.perf_counter() - started
        minimum = Minimum(args.min_commits, args.min_library_searches, args.min_overlapping_loads,
                          args.min_cli_searches, args.max_seconds)
        result = soak(folder, args.seconds, args.cli_readers, args.rate, args.seed, minimum)
        result.update(documents=args.docs, index_bytes=size, build_seconds=round(built, 1))
    if args.json:
        print(json.dumps(result))
    else:
        kind = f" in {args.shards} shards" if args.shards else ""
        print(f"index: {args.docs:,} documents{kind}, {size / 1e6:.1f} MB (built in {built:.1f} s)")
        print(f"writer: {result['commits']:,} commits in {result['seconds']:g} s"
              + (f", {len(result['writer_errors'])} errors: {result['writer_errors']}" if result["writer_errors"] else ""))
        print(f"readers: {result['cli_searches']:,} `bm25lab search` processes, {result['library_searches']:,} "
              f"library loads ({result['overlapping_loads']:,} overlapped a commit)")
        print(f"failed searches: {result['failures']} of {result['searches']:,} = "
              f"{result['failures_per_1000']:.2f} per thousand")
        for error in result["errors"]:
            print(f"  {error}")
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
