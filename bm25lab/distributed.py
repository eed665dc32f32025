"""bm25lab on a Dask distributed cluster: a sharded index built and searched by the cluster's workers.

    from bm25lab import Tokenizer, distributed
    with distributed.connect("local:2") as client:            # or "tcp://HOST:8786", a running scheduler
        distributed.build("docs.jsonl", "idx", shards=3, client=client, tokenizer=Tokenizer("en"))
        index = distributed.DistributedIndex("idx", client)
        results = index.search_many(queries, k=1000)          # the Results one index of the documents gives

Needs Dask distributed (``pip install "bm25lab[distributed]"``); the sharded index itself, its format
and its search in one process are :mod:`bm25lab.engine.shards`, which needs no Dask.

**Storage.** The index folder must be a path that the client and every worker can read and write
under the same name: a shared file system, or a cluster on one machine. Building checks it (each
worker reads a file the client wrote and writes one the client reads) and opening an index checks
that every worker reads the same ``shards.json``; otherwise one clear error says which worker cannot.

**Build** (:func:`build`). Given files (a file, a folder, a Parquet dataset or a glob pattern), the
client cuts them into pieces by their names and sizes (:mod:`bm25lab.engine.sources.pieces`: whole
files, runs of a folder's small files, byte ranges of big uncompressed JSONL/TSV files) and sends each
worker names, never documents: a read task reads its piece itself. Given documents (or a bundled
collection), the client reads them as a stream and sends them to the workers in partitions
(``partition_docs`` documents, at most two partitions per worker in flight: the client never holds the
corpus). Each piece or partition is a task that analyses its documents (jieba included) and writes,
for every shard, one segment into a staging folder; the client places each one's documents after
those before it in input order; one task per shard then merges its
segments into an ordinary index folder; the shards' term counts are added up by a tree of tasks into
the global statistics, written by a last task. The client then commits ``shards.json``, under the
folder's writer lock, which it holds from the start. A worker that dies mid-build has its tasks run
again on another worker (Dask's retries: a task's output goes to new files, and what a dead attempt
wrote is removed with the staging folder); when the cluster gives up (``KilledWorker``), or anything
else fails, the build ends with one error and the folder holds the old index, or nothing.

**Changes** (:func:`add_documents`, :func:`delete_documents`, :func:`optimize`). The new documents are
staged as a build stages them; under the writer's lock, held here, tasks check every shard and the
statistics, one task a changed shard writes its new segment or deletions
(:mod:`bm25lab.engine.shards.changes`), a task writes the new statistics, and the client commits: the
index the same change gives in one process.

**Search** (:class:`DistributedIndex`). The client tokenizes the queries once and sends them to one
task per shard, twice (:func:`bm25lab.engine.shards.search_shards`: first the terms' global ids and
largest weights, then each shard's exact top k under the global statistics), and merges the shards'
lists by the tie rule. Each shard goes to one worker, where it is loaded once and kept in a
worker-local cache keyed by the index folder, the shard and the digest of its manifest, so later
queries, commands and clients reuse it, and a changed index is loaded again. A worker that finds a file
of its shard gone (a writer committed after the index was opened) makes the client read ``shards.json``
again and search the index as it is now (as :meth:`bm25lab.engine.shards.ShardedIndex.load` does; a
file gone from an unchanged index is damage). A task whose worker dies runs on another worker, which
loads the shard; the results are the same.
"""
from __future__ import annotations

import hashlib
import json
import logging
import threading
import uuid
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

from .engine.errors import BM25LabError, ParameterError
from .engine.scoring import DEFAULT_B, DEFAULT_K1, DEFAULT_VARIANT, Params
from .engine.searching import FieldValues, Searcher

if TYPE_CHECKING:
    from distributed import Client, Future

    from .engine.filters import Filter
    from .engine.records import Document, Hits, Results
    from .engine.segments import Change
    from .engine.retrieval import CollectionStatistics
    from .engine.segments import DocLike
    from .engine.shards import GlobalTerms, PartitionSegments, Shard, ShardHits, ShardRecord, TermCounts
    from .engine.sources.pieces import Piece
    from .engine.tokenization import Tokenizer

__all__ = ["ADDRESS_FORMS", "DEFAULT_PARTITION_DOCS", "DistributedIndex", "Reading", "add_documents", "build", "connect",
           "delete_documents", "optimize", "parse_address", "worker_count"]

DEFAULT_PARTITION_DOCS = 10_000
# the forms of a cluster address, with what each means
ADDRESS_FORMS = {
    "tcp://HOST:PORT": "a running Dask scheduler (`dask scheduler`, with `dask worker` processes)",
    "local:W": "a local cluster of W worker processes on 127.0.0.1, started here and closed at the end",
}
_CONNECT_SECONDS = 10
_WORKERS_SECONDS = 30  # how long a build or a search waits for a cluster's first worker
_IN_FLIGHT_PER_WORKER = 2  # partitions sent ahead of the workers
_TASK_RETRIES = 1  # a task that raised (not one whose worker died: the scheduler reruns those) runs again once


# ---------------------------------------------------------------------------------------------
# The cluster


def parse_address(address: str) -> tuple[str, str | int]:
    """``("tcp", address)`` or ``("local", W)``; anything else is a ParameterError naming the forms."""
    text = str(address).strip()
    if text.startswith("tcp://") and ":" in text[len("tcp://"):]:
        host, _, port = text[len("tcp://"):].rpartition(":")
        if host and port.isdigit():
            return "tcp", text
    if text.startswith("local:") and text[len("local:"):].isdigit() and int(text[len("local:"):]) >= 1:
        return "local", int(text[len("local:"):])
    forms = " or ".join(f"{form} ({meaning})" for form, meaning in ADDRESS_FORMS.items())
    raise ParameterError(f"unknown cluster address {address!r}; use {forms}")


def _dask() -> Any:
    try:
        import distributed
    except ImportError:
        raise BM25LabError('a cluster needs Dask distributed: pip install "bm25lab[distributed]"') from None
    return distributed


@contextmanager
def connect(address: "str | Client") -> Iterator["Client"]:
    """A Dask client for ``address`` (see :data:`ADDRESS_FORMS`; a ``Client`` is used as it is), closed
    (with the local cluster it started) at the end of the ``with`` block."""
    if not isinstance(address, str):
        yield address
        return
    kind, where = parse_address(address)
    dask = _dask()
    cluster = None
    try:
        if kind == "local":  # its workers' logs kept quiet: a worker's heartbeat failing as the cluster closes is no news

            cluster = dask.LocalCluster(n_workers=int(where), threads_per_worker=1, processes=True, host="127.0.0.1",
                                        dashboard_address="127.0.0.1:0", silence_logs=logging.CRITICAL)
            client = dask.Client(cluster)
        else:
            client = dask.Client(str(where), timeout=_CONNECT_SECONDS)
    except (OSError, dask.TimeoutError) as exc:
        if cluster is not None:
            cluster.close()
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BM25LabError(f"cannot reach the Dask scheduler at {address}: {reason}") from None
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _workers(client: "Client") -> list[str]:
    """The addresses of the cluster's workers, sorted (waiting a while for a first one)."""
    dask = _dask()
    try:
        client.wait_for_workers(1, timeout=_WORKERS_SECONDS)
    except (dask.TimeoutError, TimeoutError):
        raise BM25LabError(f"the Dask cluster at {client.scheduler.address} has no workers") from None
    return sorted(client.scheduler_info(n_workers=-1)["workers"])


def worker_count(client: "Client") -> int:
    """How many workers the cluster has (waiting a while for a first one)."""
    return len(_workers(client))


@contextmanager
def _cluster_errors(what: str) -> Iterator[None]:
    """Dask's ways of failing as one BM25LabError line (the library's own errors pass through)."""
    dask = _dask()
    from distributed.comm.core import CommClosedError

    try:
        yield
    except BM25LabError:
        raise
    except dask.KilledWorker as exc:
        raise BM25LabError(f"{what}: the cluster lost the workers running a task too many times ({exc}); "
                           f"nothing was changed") from None
    except (dask.CancelledError, dask.TimeoutError) as exc:
        raise BM25LabError(f"{what}: the cluster cancelled the work ({type(exc).__name__}: {exc}); "
                           f"nothing was changed") from None
    except CommClosedError as exc:
        raise BM25LabError(f"{what}: the connection to the cluster closed ({exc}); nothing was changed") from None


def _token() -> str:
    return uuid.uuid4().hex[:16]


# ---------------------------------------------------------------------------------------------
# Storage that every worker shares


def _probe(folder: str, token: str) -> str:
    """On a worker: read the client's probe in ``folder`` and write one back; returns its name, or
    why not (``!`` first)."""
    path = Path(folder)
    try:
        if (path / f".probe-client-{token}").read_text(encoding="utf-8") != token:
            return f"!{path} holds another file of that name (another file system)"
        name = f".probe-worker-{token}-{_token()}"
        (path / name).write_text(token, encoding="utf-8")
        return name
    except OSError as exc:
        return f"!{exc.filename or path}: {(exc.strerror or str(exc)).lower()}"


def check_shared(client: "Client", folder: Path) -> None:
    """Every worker reads a file the client wrote in ``folder``, and the client reads the one each writes
    back: else a BM25LabError naming the first worker that cannot."""
    token = _token()
    mine = folder / f".probe-client-{token}"
    mine.write_text(token, encoding="utf-8")
    try:
        answers = client.run(_probe, str(folder), token, workers=_workers(client), on_error="return")
        for worker, answer in sorted(answers.items()):
            problem = None
            if not isinstance(answer, str):
                problem = f"{type(answer).__name__}: {answer}"
            elif answer.startswith("!"):
                problem = answer[1:]
            elif not (folder / answer).is_file() or (folder / answer).read_text(encoding="utf-8") != token:
                problem = f"this client does not see the file the worker wrote ({folder / answer})"
            if problem is not None:
                raise BM25LabError(f"{folder.parent}: the worker {worker} cannot share this folder ({problem}); "
                                   f"the index must be on a path that the client and every worker read and "
                                   f"write: a shared file system, or a cluster on this machine")
    finally:
        for path in folder.glob(f".probe-*-{token}*"):
            path.unlink(missing_ok=True)
        mine.unlink(missing_ok=True)


def _digest_of(path: str) -> str:
    """On a worker: the SHA-256 of a file, or why it cannot be read (``!`` first)."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as exc:
        return f"!{exc.filename or path}: {(exc.strerror or str(exc)).lower()}"


def check_readable(client: "Client", path: Path) -> None:
    """Every worker reads the same ``path`` as the client (by content), else a BM25LabError."""
    expected = hashlib.sha256(path.read_bytes()).hexdigest()
    answers = client.run(_digest_of, str(path), workers=_workers(client), on_error="return")
    for worker, answer in sorted(answers.items()):
        if answer != expected:
            problem = answer[1:] if isinstance(answer, str) and answer.startswith("!") else \
                "it reads another file there" if isinstance(answer, str) else f"{type(answer).__name__}: {answer}"
            raise BM25LabError(f"{path.parent}: the worker {worker} cannot read this index ({problem}); the index "
                               f"must be on a path that the client and every worker read: a shared file system, "
                               f"or a cluster on this machine")


# ---------------------------------------------------------------------------------------------
# Building


def _partition_task(docs: list["Document"], tokenizer: "Tokenizer", shards: int, staging: str, first: int,
                    source: str | None, backend: str | None) -> "PartitionSegments":
    from .engine.shards import write_partition

    return write_partition(docs, tokenizer, shards, Path(staging), first=first, workers=1, source=source,
                           backend=backend)


def _assemble_task(directory: str, staging: str, position: int, shards: int,
                   pieces: list[tuple[int, int, dict[str, Any]]], tokenizer_config: dict[str, Any],
                   source: str | None, name: str) -> "ShardRecord":
    from .engine.shards import assemble_shard

    return assemble_shard(Path(directory), Path(staging), position, shards, pieces, tokenizer_config, source, name)


def _counts_of(record: "ShardRecord") -> "TermCounts":
    assert record.counts is not None
    return record.counts


def _entry_of(record: "ShardRecord") -> "ShardRecord":
    from .engine.shards import ShardRecord

    return ShardRecord(record.name, record.manifest, None)


def _combine_task(*counts: "TermCounts") -> "TermCounts":
    from .engine.shards import TermCounts

    return TermCounts.total(counts)


def _statistics_task(directory: str, counts: "TermCounts", name: str) -> dict[str, Any]:
    from .engine.shards import write_statistics

    return write_statistics(Path(directory), counts, name)


def build(source: "str | Path | Iterable[DocLike]", directory: str | Path, *, shards: int, client: "Client",
          tokenizer: "Tokenizer | None" = None, overwrite: bool = False,
          partition_docs: int = DEFAULT_PARTITION_DOCS, backend: str | None = None,
          progress: Callable[[int], None] | None = None, source_name: str | Path | None = None,
          partition_bytes: int | None = None, format: str | None = None, id_field: str | None = None,
          text_fields: "str | Sequence[str] | None" = None, title_field: str | None = None) -> Path:
    """Build a sharded index of ``shards`` shards in ``directory`` on the cluster of ``client`` (see the
    module docstring). ``source`` is a file, a folder or a glob pattern (``"docs-*.jsonl.gz"``), which
    the workers read (the client sends them names: :mod:`bm25lab.engine.sources.pieces`, pieces of about
    ``partition_bytes``; ``format``, ``id_field``, ``text_fields`` and ``title_field`` as the command
    line's options), a bundled corpus name, or documents (read here and sent in partitions of
    ``partition_docs``; from the file ``source_name``, which errors then name). ``progress`` is called
    with the number of documents indexed so far. Returns the index folder. The index is the one
    :func:`bm25lab.engine.shards.build` writes of the same documents in the same order."""
    from .engine.shards import building, check_shard_count
    from .engine.tokenization import Tokenizer

    shards = check_shard_count(shards)
    if isinstance(partition_docs, bool) or not isinstance(partition_docs, int) or partition_docs < 1:
        raise ParameterError(f"partition_docs must be a positive integer, got {partition_docs!r}")
    reading, docs, where = _source(source, source_name, format, id_field, text_fields, title_field, partition_bytes)
    tokenizer = tokenizer or Tokenizer()
    config = tokenizer.config()
    run = _token()
    held: list[Future] = []  # the futures of the shards' tasks, let go of when the build fails
    with building(directory, overwrite) as new, _cluster_errors(f"building {new.directory}"):
        try:
            check_shared(client, new.staging)
            if reading is not None:
                parts = _read_partitions(client, reading, tokenizer, shards, str(new.staging), backend, progress, run)
            else:
                parts = _write_partitions(client, docs, tokenizer, shards, str(new.staging), partition_docs, where,
                                          backend, progress, run)
            new.commit(config, *_assemble(client, new, parts, shards, config, where, run, held))
        except BaseException:
            held.clear()
            _wait_idle(client, run)  # no task of this build writes into the folder while it is cleaned
            raise
    return new.directory


@dataclass(frozen=True)
class Reading:
    """A source the workers read (a file, a folder or a glob pattern) and how: its format (None:
    detected), the field mapping and the title field, pieces of about ``partition_bytes``."""

    source: str
    format: str | None = None
    id_field: str | None = None
    text_fields: "str | Sequence[str] | None" = None
    title_field: str | None = None
    partition_bytes: int | None = None

    def pieces(self) -> list["Piece"]:
        """The pieces, planned from the files' names and sizes (:func:`bm25lab.engine.sources.pieces.plan`);
        a folder's field mapping is checked here, as reading it in one process checks it."""
        from .engine.sources import read_documents
        from .engine.sources.pieces import DEFAULT_PARTITION_BYTES, is_glob, plan

        if not is_glob(self.source) and Path(self.source).is_dir():
            read_documents(self.source, format=self.format, id_field=self.id_field, text_fields=self.text_fields)
        return plan(self.source, self.format, self.partition_bytes or DEFAULT_PARTITION_BYTES)

    def documents(self, piece: "Piece") -> Iterator["Document"]:
        """On a worker: the documents of one piece."""
        from .engine.sources.pieces import read_piece, with_titles

        docs = read_piece(piece, self.id_field, self.text_fields)
        return docs if self.title_field is None else with_titles(docs, self.title_field)


def _read_task(reading: Reading, piece: "Piece", tokenizer: "Tokenizer", shards: int, staging: str,
               backend: str | None) -> "PartitionSegments | BM25LabError":
    """On a worker: read one piece of the source, analyse it and stage one segment a shard (its
    documents' places in the input are set by the client once every piece is counted). Bad input is
    returned, not raised: the client raises it (one line), and the worker logs no failed task."""
    from .engine.shards import write_partition

    try:
        return write_partition(reading.documents(piece), tokenizer, shards, Path(staging), first=0, workers=1,
                               source=str(piece), backend=backend)
    except BM25LabError as exc:
        return exc


def _read_partitions(client: "Client", reading: Reading, tokenizer: "Tokenizer", shards: int, staging: str,
                     backend: str | None, progress: Callable[[int], None] | None,
                     run: str) -> list["PartitionSegments"]:
    """One task a piece of the source, all sent at once (a piece is a name and a range: the client
    reads no document); their records in input order, each placed after the documents of the pieces
    before it. The first piece (in input order) that fails raises its error; a source without a
    document, or a file cut into ranges without one, is an InputError."""
    from dataclasses import replace

    from .engine.errors import InputError

    pieces = reading.pieces()
    futures = [client.submit(_read_task, reading, piece, tokenizer, shards, staging, backend,
                             key=f"bm25lab-read-{i}-{run}", pure=False) for i, piece in enumerate(pieces)]
    done: list[PartitionSegments] = []
    first = 0
    per_file: dict[str, int] = {}
    for piece, future in zip(pieces, futures):
        try:
            result = future.result()
            if isinstance(result, BM25LabError):
                raise result
        except BaseException:
            client.cancel(futures)  # the pieces not begun are dropped (the build then waits for those running)
            raise
        part = replace(result, first=first)
        first += part.count
        done.append(part)
        if piece.ranged:
            per_file[piece.files[0]] = per_file.get(piece.files[0], 0) + part.count
        if progress is not None:
            progress(first)
    empty = next((file for file, count in per_file.items() if not count), None)
    if empty is not None:
        raise InputError("no documents found", empty)
    if not first:
        raise InputError("no documents found", reading.source)
    return done


def _assemble(client: "Client", new: Any, parts: list["PartitionSegments"], shards: int, config: dict[str, Any],
              source: str | None, run: str, held: list["Future"]) -> tuple[list["ShardRecord"], dict[str, Any]]:
    """One task per shard merges its staged segments into its folder; a tree of tasks adds the shards'
    counts up, and a last one writes the statistics. Returns the shards' entries and the statistics' record.
    The folders' names are journaled here, by the holder of the lock, before any task makes them."""
    names = new.names("shard", shards)
    stats_name = new.names("stats", 1)[0]
    for position in range(shards):
        pieces = [(p.first, p.count, p.segments[position]) for p in parts if position in p.segments]
        held.append(client.submit(_assemble_task, str(new.directory), str(new.staging), position, shards, pieces,
                                  config, source, names[position], key=f"bm25lab-shard-{position}-{run}", pure=False))
    records = list(held)
    counts = [client.submit(_counts_of, r, key=f"bm25lab-counts-{i}-{run}", pure=False) for i, r in enumerate(records)]
    held.append(client.submit(_statistics_task, str(new.directory), _tree(client, counts, run), stats_name,
                              key=f"bm25lab-statistics-{run}", pure=False))
    entries = client.gather([client.submit(_entry_of, r, key=f"bm25lab-entry-{i}-{run}", pure=False)
                             for i, r in enumerate(records)])
    return entries, held[-1].result()


def _executing(run: str, dask_worker: Any) -> list[str]:
    """On a worker: the keys of the tasks of build ``run`` that its threads are running."""
    return [str(task.key) for task in dask_worker.state.executing if run in str(task.key)]


def _wait_idle(client: "Client", run: str, seconds: float = 60.0, unreachable_s: float = 5.0) -> None:
    """Wait until no worker runs a task of build ``run`` (a task the client let go of still runs to its
    end), for at most ``seconds``; a cluster that cannot be asked for ``unreachable_s`` in a row ends the
    wait (while a killed worker is being replaced, asking can fail for a moment: that is no answer)."""
    import time

    deadline = time.monotonic() + seconds
    failing_since: float | None = None
    while (now := time.monotonic()) < deadline:
        try:
            answers = client.run(_executing, run, on_error="return")
        except Exception:
            failing_since = now if failing_since is None else failing_since
            if now - failing_since >= unreachable_s:
                return
            time.sleep(0.05)
            continue
        failing_since = None
        if not any(isinstance(a, list) and a for a in answers.values()):
            return
        time.sleep(0.05)


def _write_partitions(client: "Client", docs: Iterable["DocLike"], tokenizer: "Tokenizer", shards: int, staging: str,
                      partition_docs: int, source: str | None, backend: str | None,
                      progress: Callable[[int], None] | None, run: str) -> list["PartitionSegments"]:
    """Send the documents to the workers in partitions, a few per worker at a time; each partition's
    record once it is written, in input order (the client then lets go of the partition's task)."""
    limit = max(1, _IN_FLIGHT_PER_WORKER * len(_workers(client)))
    items = iter(docs)
    pending: deque[Future] = deque()
    done: list[PartitionSegments] = []
    first = 0

    def collect() -> None:
        done.append(pending.popleft().result())
        if progress is not None:
            progress(done[-1].first + done[-1].count)

    while chunk := list(islice(items, partition_docs)):
        pending.append(client.submit(_partition_task, chunk, tokenizer, shards, staging, first, source, backend,
                                     key=f"bm25lab-partition-{len(done) + len(pending)}-{run}", pure=False))
        first += len(chunk)
        while len(pending) >= limit:
            collect()
    while pending:
        collect()
    if progress is not None and not done:
        progress(0)
    return done


def _tree(client: "Client", items: list["Future"], run: str, fan_in: int = 8) -> "Future":
    """The sum of ``items`` (futures of TermCounts) by a tree of tasks, ``fan_in`` at a time."""
    level = 0
    while len(items) > 1 or level == 0:
        items = [client.submit(_combine_task, *items[i:i + fan_in], key=f"bm25lab-combine-{level}-{i}-{run}",
                               pure=False) for i in range(0, len(items), fan_in)]
        level += 1
    return items[0]


# ---------------------------------------------------------------------------------------------
# Changing: add, delete and optimize a shard a task


def _answer(task: Callable[..., Any], *args: Any) -> Any:
    """On a worker: ``task(*args)``, bad input or a damaged index returned as a value (the client raises
    it: one line, and no failed task in the worker's log)."""
    try:
        return task(*args)
    except BM25LabError as exc:
        return exc


def _results(client: "Client", futures: list["Future"]) -> list[Any]:
    """The answers of ``futures`` in order; the first error among them raised (the others let go of)."""
    answers = []
    for future in futures:
        try:
            answer = future.result()
        except BaseException:
            client.cancel(futures)
            raise
        if isinstance(answer, BM25LabError):
            client.cancel(futures)
            raise answer
        answers.append(answer)
    return answers


def _checked(client: "Client", directory: Path, manifest: dict[str, Any], verify: bool, run: str,
             ids: dict[int, list[str]] | None = None) -> list[str]:
    """Every shard and the statistics checked by tasks (:func:`bm25lab.engine.shards.check_shard`, as a
    change in one process checks them before it writes anything), then the shards' ``index.json``
    brought to their copies here; with ``ids`` (per shard), the ids no shard holds."""
    from .engine.shards import check_statistics, unknown_ids
    from .engine.shards.manifest import sync_shards

    futures = [client.submit(_answer, unknown_ids, directory, manifest, position, (ids or {}).get(position, []),
                             verify, key=f"bm25lab-check-{position}-{run}", pure=False)
               for position in range(len(manifest["shards"]))]
    futures.append(client.submit(_answer, check_statistics, directory, manifest, verify,
                                 key=f"bm25lab-check-statistics-{run}", pure=False))
    answers = _results(client, futures)
    sync_shards(directory, manifest)
    return [doc_id for found in answers[:-1] for doc_id in found]


def _committed(client: "Client", directory: Path, manifest: dict[str, Any], futures: list["Future"],
               run: str) -> "Change":
    """The shards' changes (``futures``), the statistics they make (a task), and the commit (here)."""
    from .engine.shards import changed_statistics, commit_changes

    changes = _results(client, futures)
    statistics = _results(client, [client.submit(_answer, changed_statistics, directory, manifest, changes,
                                                 key=f"bm25lab-statistics-{run}", pure=False)])[0]
    return commit_changes(directory, manifest, changes, statistics)


def add_documents(directory: str | Path, source: "str | Path | Iterable[DocLike]", *, client: "Client",
                  verify: bool = True, partition_docs: int = DEFAULT_PARTITION_DOCS, partition_bytes: int | None = None,
                  format: str | None = None, id_field: str | None = None,
                  text_fields: "str | Sequence[str] | None" = None, title_field: str | None = None,
                  backend: str | None = None, progress: Callable[[int], None] | None = None,
                  source_name: str | Path | None = None) -> "Change":
    """:func:`bm25lab.engine.shards.add_documents` on the cluster: the workers read ``source`` (a file, a
    folder or a glob pattern; or documents, sent from here) and stage its documents by shard, then,
    under the writer's lock held here, one task a shard that got some adds them as one new segment
    (replacing the documents of the same ids), a task writes the statistics, and this process commits.
    The same index as the add in one process."""
    from dataclasses import replace

    from .engine.locking import check_unlocked
    from .engine.scratch import Scratch
    from .engine.shards import add_to_shard, changing, read_manifest
    from .engine.tokenization import Tokenizer

    directory = Path(directory).absolute()
    manifest = read_manifest(directory)
    tokenizer = Tokenizer.from_config(manifest["tokenizer"])
    count = len(manifest["shards"])
    reading, docs, where = _source(source, source_name, format, id_field, text_fields, title_field, partition_bytes)
    check_unlocked(directory)
    run = _token()
    staging = Scratch(directory)
    try:
        with _cluster_errors(f"adding to {directory}"):
            check_shared(client, staging.path)
            if reading is not None:
                parts = _read_partitions(client, reading, tokenizer, count, str(staging.path), backend, progress, run)
            else:
                parts = _write_partitions(client, docs, tokenizer, count, str(staging.path), partition_docs, where,
                                          backend, progress, run)
            added = sum(p.count for p in parts)
            with changing(directory, manifest["tokenizer"], count) as current:
                _checked(client, directory, current, verify, run)
                futures = [client.submit(_answer, add_to_shard, directory, current, position, staging.path,
                                         [(p.first, p.count, p.segments[position]) for p in parts
                                          if position in p.segments], where,
                                         key=f"bm25lab-add-{position}-{run}", pure=False)
                           for position in range(count) if any(position in p.segments for p in parts)]
                change = _committed(client, directory, current, futures, run)
        return replace(change, added=added)
    except BaseException:
        _wait_idle(client, run)
        raise
    finally:
        staging.cleanup()


def delete_documents(directory: str | Path, doc_ids: Iterable[str], *, client: "Client",
                     verify: bool = True) -> "Change":
    """:func:`bm25lab.engine.shards.delete_documents` on the cluster: one task a shard checks it and
    finds its ids, then (every id found) one task a shard that holds some deletes them, a task writes
    the statistics, and this process commits. An unknown id deletes nothing."""
    from dataclasses import replace

    from .engine.errors import InputError
    from .engine.shards import changing, delete_from_shard, read_manifest, route

    directory = Path(directory).absolute()
    read_manifest(directory)
    wanted = list(dict.fromkeys(doc_ids))
    run = _token()
    try:
        with _cluster_errors(f"deleting from {directory}"), changing(directory) as current:
            by_shard: dict[int, list[str]] = {}
            for doc_id in wanted:
                by_shard.setdefault(route(doc_id, len(current["shards"])), []).append(doc_id)
            unknown = _checked(client, directory, current, verify, run, by_shard)
            if unknown:
                unknown.sort(key=wanted.index)
                shown = ", ".join(repr(u) for u in unknown[:10]) + \
                    (f" and {len(unknown) - 10} more" if len(unknown) > 10 else "")
                raise InputError(f"no such document{'s' if len(unknown) > 1 else ''} in the index: {shown}; "
                                 f"nothing was deleted", directory)
            futures = [client.submit(_answer, delete_from_shard, directory, current, position, ids,
                                     key=f"bm25lab-delete-{position}-{run}", pure=False)
                       for position, ids in sorted(by_shard.items())]
            change = _committed(client, directory, current, futures, run)
    except BaseException:
        _wait_idle(client, run)
        raise
    return replace(change, deleted=len(wanted))


def optimize(directory: str | Path, *, client: "Client", verify: bool = True) -> "Change":
    """:func:`bm25lab.engine.shards.optimize` on the cluster: one task a shard merges its segments into
    one without its deleted documents (the statistics do not change), and this process commits."""
    from .engine.scratch import Scratch
    from .engine.shards import changing, optimize_shard, read_manifest

    directory = Path(directory).absolute()
    read_manifest(directory)
    run = _token()
    try:
        with _cluster_errors(f"optimizing {directory}"), changing(directory) as current:
            _checked(client, directory, current, verify, run)
            scratch = Scratch(directory)
            try:
                futures = [client.submit(_answer, optimize_shard, directory, current, position, scratch.path,
                                         key=f"bm25lab-optimize-{position}-{run}", pure=False)
                           for position in range(len(current["shards"]))]
                return _committed(client, directory, current, futures, run)
            except BaseException:
                _wait_idle(client, run)
                raise
            finally:
                scratch.cleanup()
    except BaseException:
        _wait_idle(client, run)
        raise


def _source(source: Any, source_name: Any, format: str | None, id_field: str | None, text_fields: Any,
            title_field: str | None, partition_bytes: int | None) -> tuple["Reading | None", Any, str | None]:
    """(what the workers read, or None; the documents this process reads, or None; the source's name)."""
    from .corpora import documents_of
    from .engine.sources.pieces import is_glob

    named = isinstance(source, (str, Path))
    where = str(source) if named else None if source_name is None else str(source_name)
    if named and (is_glob(source) or Path(source).exists()):
        if partition_bytes is not None and (isinstance(partition_bytes, bool) or not isinstance(partition_bytes, int)
                                            or partition_bytes < 1):
            raise ParameterError(f"partition_bytes must be a positive integer, got {partition_bytes!r}")
        return Reading(str(source), format, id_field, text_fields, title_field, partition_bytes), None, where
    if format is not None or id_field is not None or text_fields is not None or title_field is not None:
        raise ParameterError("format, id_field, text_fields and title_field are for a file, a folder or a glob "
                             "pattern")
    return None, documents_of(source) if named else source, where


# ---------------------------------------------------------------------------------------------
# Searching: shards kept loaded on the workers


@dataclass(frozen=True)
class ShardSpec:
    """What a worker needs to load shard ``position`` of the index in ``directory``: its manifest entry,
    the statistics' record and the backend; :attr:`key` names that version of the shard."""

    directory: str
    position: int
    entry: dict[str, Any]
    statistics: dict[str, Any]
    backend: str | None

    @property
    def key(self) -> tuple[str, int, str, str, str | None]:
        digest = hashlib.sha256(json.dumps(self.entry, sort_keys=True).encode("utf-8")).hexdigest()
        return self.directory, self.position, digest, self.statistics["name"], self.backend


class _WorkerCache:
    """The shards (and statistics) this worker process has loaded, one version of each shard position of
    an index folder: a newer version replaces the older."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._shards: dict[tuple, Shard] = {}
        self._statistics: dict[tuple[str, str], CollectionStatistics] = {}
        self.loads = 0  # shards loaded so far

    def shard(self, spec: ShardSpec) -> "Shard":
        from .engine.shards import load_shard

        key = spec.key
        with self._lock:
            found = self._shards.get(key)
            if found is None:
                for old in [k for k in self._shards if k[:2] == key[:2]]:
                    del self._shards[old]
                found = self._shards[key] = load_shard(Path(spec.directory), spec.entry, self._of(spec), True,
                                                       spec.backend)
                self.loads += 1
            return found

    def _of(self, spec: ShardSpec) -> "CollectionStatistics":
        from .engine.shards import load_counts

        key = (spec.directory, spec.statistics["name"])
        if key not in self._statistics:
            for old in [k for k in self._statistics if k[0] == spec.directory]:
                del self._statistics[old]
            self._statistics[key] = load_counts(Path(spec.directory), spec.statistics, arrow=True).statistics()
        return self._statistics[key]

    def state(self) -> dict[str, Any]:
        with self._lock:
            return {"loads": self.loads, "shards": list(self._shards)}


_CACHE = _WorkerCache()  # the cache of the worker process this module is imported in


def _look_up_task(specs: list[ShardSpec], queries: list[list[str]], params: "Params") -> list["GlobalTerms"]:
    return [_CACHE.shard(spec).look_up(queries, params) for spec in specs]


def _top_k_task(specs: list[ShardSpec], terms: "GlobalTerms", k: int, params: "Params",
                where: "Filter | None" = None) -> list["ShardHits"]:
    return [_CACHE.shard(spec).top_k(terms, k, params, 1, where) for spec in specs]  # a worker's threads are Dask's


def worker_cache() -> dict[str, Any]:
    """On a worker (``client.run(worker_cache)``): how many shards it has loaded so far (``loads``) and
    the keys of those it keeps (``shards``: folder, position, manifest digest, statistics, backend)."""
    return _CACHE.state()


def _load_attempts() -> int:
    """How many times a reader reads a changing index's manifest again (one home: :mod:`bm25lab.engine.index`)."""
    from .engine import index

    return index._LOAD_ATTEMPTS


def _placed(specs: list[ShardSpec], workers: list[str], client: "Client") -> list[tuple[str, list[ShardSpec]]]:
    """Shard ``i`` goes to worker ``i`` modulo their number; a worker's shards are searched by as many
    tasks as it has threads (fewer tasks: less of the scheduler's overhead per search)."""
    info = client.scheduler_info(n_workers=-1)["workers"]
    groups = []
    for w, worker in enumerate(workers):
        mine = specs[w::len(workers)]
        threads = max(1, min(len(mine), int(info.get(worker, {}).get("nthreads", 1))))
        groups += [(worker, mine[t::threads]) for t in range(threads) if mine[t::threads]]
    return groups


class DistributedIndex(Searcher["ShardHits"]):
    """A sharded index searched on a Dask cluster (see the module docstring), with the search protocol
    of every index (:class:`~bm25lab.engine.searching.Searcher`); results equal those of one index of
    the same documents. ``batch``: the queries :meth:`search_many` sends to the cluster at a time (the
    client tokenizes them once)."""

    def __init__(self, path: str | Path, client: "Client", backend: str | None = None, batch: int = 4096) -> None:
        from .engine.errors import IndexFormatError
        from .engine.shards import MANIFEST, is_sharded

        self.path = Path(path).absolute()
        if not is_sharded(self.path) and (self.path / "index.json").is_file():
            raise IndexFormatError(f"{self.path}: an ordinary index; a cluster searches a sharded index (build one "
                                   f"with --shards N)")
        self.client = client
        self._backend = backend
        self.batch = batch
        self._open()
        with _cluster_errors(f"opening {self.path}"):
            check_readable(client, self.path / MANIFEST)

    def _open(self) -> None:
        """Read ``shards.json`` (again) and place its shards on the workers."""
        from .engine.shards import read_manifest_bytes, parse_manifest
        from .engine.tokenization import Tokenizer

        self._raw = read_manifest_bytes(self.path)
        self.manifest = parse_manifest(self.path, self._raw)
        self.tokenizer = Tokenizer.from_config(self.manifest["tokenizer"])
        stats = self.manifest["statistics"]
        with _cluster_errors(f"opening {self.path}"):
            workers = _workers(self.client)
        self._specs = [ShardSpec(str(self.path), i, entry, stats, self._backend)
                       for i, entry in enumerate(self.manifest["shards"])]
        self._groups = _placed(self._specs, workers, self.client)
        self._stores: dict[int, Any] = {}

    def _changed(self) -> bool:
        from .engine.errors import IndexFormatError
        from .engine.shards import read_manifest_bytes

        try:
            return read_manifest_bytes(self.path) != self._raw
        except IndexFormatError:
            return False

    @property
    def num_shards(self) -> int:
        return len(self._specs)

    @property
    def num_docs(self) -> int:
        return self.manifest["statistics"]["documents"]

    def document(self, doc_id: str) -> "Document | None":
        """The stored document (read here, from the shard of its id), or None."""
        from .engine import segments
        from .engine.docstore import SegmentedStore
        from .engine.shards import route

        position = route(doc_id, self.num_shards)
        if position not in self._stores:
            entry = self.manifest["shards"][position]
            parts = segments.load_parts(self.path / entry["name"], entry["manifest"], verify=False, root=self.path)
            self._stores[position] = SegmentedStore([p.store for p in parts])
        return self._stores[position].get(doc_id)

    # ------------------------------------------------------------------ search (the protocol: engine.searching)
    def params(self, variant: str = DEFAULT_VARIANT, k1: float = DEFAULT_K1, b: float = DEFAULT_B,
               delta: float | None = None, k3: float | None = None, field_weights: FieldValues = None,
               field_b: FieldValues = None) -> Params:
        """The checked parameters of a search (a sharded index has no fields)."""
        from .engine.shards import search_params

        return search_params(variant, k1, b, delta, k3, field_weights, field_b)

    def _batch_size(self, queries: int, progress: Callable[[int, int], None] | None) -> int:
        return self.batch

    def _hits(self, found: "ShardHits") -> "Hits":
        import numpy as np

        from .engine.records import Hits

        return Hits(np.arange(len(found.doc_ids)), found.scores, found.ids(), self.document)

    def _results(self, qids: Sequence[str], found: Sequence["ShardHits"]) -> "Results":
        from .engine.shards import results_of

        return results_of(qids, found, self.document)

    def retrieve(self, queries: Sequence[Sequence[str]], k: int, params: Params, workers: int | None) -> "ShardHits":
        """The two rounds over the shards, as tasks on the cluster, and the merge here (``k3`` weighs
        the union's multiplicities, as :func:`bm25lab.engine.shards.search_shards` does)."""
        from .engine.errors import IndexFormatError
        from .engine.shards import GlobalTerms, ShardHits, merge_hits
        from .engine.storage import MissingFile

        scoring = params.of_documents()
        if not queries:
            return ShardHits.empty(0)
        listed = [list(q) for q in queries]
        attempts = _load_attempts()
        for attempt in range(attempts):
            run = _token()
            try:
                with _cluster_errors(f"searching {self.path}"):
                    terms = GlobalTerms.union(self._on_each_group("look-up", run, _look_up_task, listed,
                                                                  scoring)).weighted(params.k3)
                    hits = self._on_each_group("top-k", run, _top_k_task, terms, k, scoring, params.where)
            except MissingFile:  # a worker loading a shard found a file gone: a writer committed meanwhile?
                if not self._changed():
                    raise  # gone from an index nobody changed: damage
                if attempt + 1 < attempts:
                    self._open()  # the index as it is now, loaded anew by the workers
                    continue
                raise IndexFormatError(f"{self.path}: the index changed {attempts} times while it was being read "
                                       f"(writers are committing); try again") from None
            return merge_hits(hits, k)
        raise AssertionError("unreachable")  # pragma: no cover

    def _on_each_group(self, name: str, run: str, task: Callable[..., Any], *args: Any) -> list[Any]:
        """``task(group, *args)`` for every group of shards, each on its worker (or, if that one is gone,
        another); the answers of all shards, in the groups' order."""
        futures = [self.client.submit(task, group, *args, key=f"bm25lab-{name}-{i}-{run}", workers=[worker],
                                      allow_other_workers=True, retries=_TASK_RETRIES, pure=False)
                   for i, (worker, group) in enumerate(self._groups)]
        return [answer for answers in self.client.gather(futures) for answer in answers]

    def __repr__(self) -> str:
        return f"DistributedIndex(documents={self.num_docs}, shards={self.num_shards}, path={str(self.path)!r})"

