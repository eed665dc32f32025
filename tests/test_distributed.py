"""bm25lab.distributed on a real Dask LocalCluster (two worker processes on 127.0.0.1, no mocks of Dask):
sharded indexes built and searched by the workers give one index's results bit for bit (Cranfield and
CMRC 2018, 1, 2, 3 and 7 shards, six variants, numpy and the core); the scheduler runs the tasks; shards
stay loaded on the workers; a worker killed with SIGKILL mid-build or mid-query is survived or ends
the build with one clear error and the old index (or no folder)."""
from __future__ import annotations

import hashlib
import logging
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any, Callable

import distributed  # the test extra installs it, as bm25lab[distributed] does
import numpy as np
import pytest

from bm25lab import distributed as bd
from bm25lab.engine import BM25LabError, Document, Index, IndexFormatError, ParameterError, Tokenizer, shards, storage
from bm25lab.engine.scoring import VARIANTS

SHARD_COUNTS = (1, 2, 3, 7)


def bits(results) -> dict[str, tuple[list[str], list[int]]]:
    return {q: (h.doc_ids, np.asarray(h.scores, dtype=np.float64).view(np.int64).tolist()) for q, h in results.items()}


def snapshot(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file() and p.name != ".writer.lock"}


def local_cluster(**config: Any) -> tuple[Any, Any]:
    """Two worker processes on 127.0.0.1 (``config``: Dask settings for the scheduler, which runs here)."""
    import dask

    with dask.config.set(config):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                           dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
    return cluster, distributed.Client(cluster)


@pytest.fixture(scope="module")
def client():
    cluster, client = local_cluster()
    yield client
    client.close()
    cluster.close()


class Reference:
    """A corpus, its queries and one index of its documents, with that index's results kept per parameters."""

    def __init__(self, corpus, language: str, queries: int | None, docs: int | None = None) -> None:
        self.docs = list(corpus.documents())[:docs]
        self.tokenizer = Tokenizer(language)
        judged = corpus.judged_queries()
        self.queries = dict(list(judged.items())[:queries]) if queries else judged
        self.single = Index.build(self.docs, tokenizer=self.tokenizer, workers=1, backend="numpy")
        self._expected: dict[tuple, dict] = {}

    def expected(self, variant: str, k: int) -> dict:
        if (variant, k) not in self._expected:
            self._expected[variant, k] = bits(self.single.search_many(self.queries, k=k, variant=variant, workers=1))
        return self._expected[variant, k]


@pytest.fixture(scope="module")
def references(cranfield, cmrc) -> dict[str, Reference]:
    # CMRC: its first 550 paragraphs (jieba on the workers costs most of the test's time), all the questions
    return {"cranfield": Reference(cranfield, "en", 150), "cmrc2018": Reference(cmrc, "zh", 150, docs=550)}


def worker_pids(client) -> dict[str, int]:
    return client.run(os.getpid)


def kill_when(client, busy: Callable[[dict[str, list[str]]], str | None], running: threading.Thread,
              timeout: float = 60.0) -> str:
    """SIGKILL the worker that ``busy`` names from the scheduler's tasks in progress per worker, as soon as
    it names one while ``running`` still runs; returns the worker's address."""
    pids = worker_pids(client)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert running.is_alive(), "the work ended before a worker could be killed in its middle"
        victim = busy({w: list(keys) for w, keys in client.processing().items()})
        if victim is not None:
            os.kill(pids[victim], signal.SIGKILL)
            return victim
        time.sleep(0.002)
    raise AssertionError("no worker was busy with the work")


def busy_with(prefix: str) -> Callable[[dict[str, list[str]]], str | None]:
    def pick(processing: dict[str, list[str]]) -> str | None:
        return next((w for w, keys in sorted(processing.items()) if any(str(k).startswith(prefix) for k in keys)), None)

    return pick


def in_thread(work: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = work()
        except BaseException as exc:  # handed to the test
            out["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


# ---------------------------------------------------------------------------------------------- identity
@pytest.mark.parametrize("name", ["cranfield", "cmrc2018"])
def test_built_and_searched_on_the_cluster_equals_one_index(client, references, tmp_path: Path, name: str) -> None:
    ref = references[name]
    singles = list(ref.queries.values())[:1]
    for count in SHARD_COUNTS:
        path = bd.build(ref.docs, tmp_path / f"s{count}", shards=count, client=client, tokenizer=ref.tokenizer,
                        partition_docs=250)
        stats = shards.load_counts(path, shards.read_manifest(path)["statistics"])
        assert stats.terms == list(ref.single._segment.postings.terms)
        assert np.array_equal(stats.df, ref.single._segment.postings.document_frequencies())
        # the compiled path with 1 and 3 shards, numpy with 2 and 7 (tests/engine/test_shards.py runs both
        # on every count in one process: the code that scores a shard is the same)
        backend = "core" if count in (1, 3) else "numpy"
        index = bd.DistributedIndex(path, client, backend=backend)
        for variant in VARIANTS:
            for k in ((100, 1000) if variant == "lucene" else (100,)):
                got = bits(index.search_many(ref.queries, k=k, variant=variant, k1=0.9, b=0.4))
                assert got == ref.expected(variant, k), (count, backend, variant, k)
            for text in singles if count in (3, 7) else ():
                hits, one = index.search(text, k=10, variant=variant), ref.single.search(text, k=10, variant=variant)
                assert (hits.doc_ids, hits.scores) == (one.doc_ids, one.scores)
    scheduler_saw = client.run_on_scheduler(
        lambda dask_scheduler: {name: dict(p.state_counts) for name, p in dask_scheduler.task_prefixes.items()})
    for prefix in ("bm25lab-partition", "bm25lab-shard", "bm25lab-combine", "bm25lab-statistics",
                   "bm25lab-look-up", "bm25lab-top-k"):
        assert scheduler_saw[prefix]["memory"] >= 1, (prefix, scheduler_saw)


def test_shards_stay_loaded_on_the_workers_until_the_index_changes(client, references, tmp_path: Path) -> None:
    ref = references["cranfield"]
    docs = ref.docs
    path = bd.build(docs[:1000], tmp_path / "idx", shards=3, client=client, tokenizer=ref.tokenizer, partition_docs=400)
    index = bd.DistributedIndex(path, client, backend="numpy")
    queries = dict(list(ref.queries.items())[:50])
    first = bits(index.search_many(queries, k=50))
    loads = {w: s["loads"] for w, s in client.run(bd.worker_cache).items()}
    for _ in range(3):
        assert bits(bd.DistributedIndex(path, client, backend="numpy").search_many(queries, k=50)) == first
    cache = client.run(bd.worker_cache)
    assert {w: s["loads"] for w, s in cache.items()} == loads  # no shard was loaded again
    mine = [key for s in cache.values() for key in s["shards"] if key[0] == str(path)]
    assert sorted(key[1] for key in mine) == [0, 1, 2]  # each shard on one worker
    # a change (here, in this process) is a new version: the workers load it, and search like a fresh build
    shards.add_documents(path, docs[1000:], workers=1)
    shards.delete_documents(path, [docs[0].id])
    fresh = Index.build(docs[1:], tokenizer=ref.tokenizer, workers=1)
    assert bits(bd.DistributedIndex(path, client, backend="numpy").search_many(queries, k=50)) == \
        bits(fresh.search_many(queries, k=50, workers=1))
    mine = [key for s in client.run(bd.worker_cache).values() for key in s["shards"] if key[0] == str(path)]
    assert len(mine) == 3  # the old versions were dropped


def test_an_index_changed_before_the_workers_load_it_is_read_again(client, references, tmp_path: Path) -> None:
    # opened at one version, searched after a writer committed and removed files that version named: the
    # workers find a file gone, and the client reads shards.json again (never "rebuild the index")
    ref = references["cranfield"]
    path = shards.build(ref.docs[:600], tmp_path / "idx", 3, ref.tokenizer, workers=1)
    queries = dict(list(ref.queries.items())[:30])
    index = bd.DistributedIndex(path, client, backend="numpy")  # nothing loaded on the workers yet
    shards.delete_documents(path, [ref.docs[0].id, ref.docs[1].id])
    shards.optimize(path)  # every shard with a deletion is rewritten: the segments the opened version named go
    fresh = Index.build(ref.docs[2:600], tokenizer=ref.tokenizer, workers=1)
    assert bits(index.search_many(queries, k=20)) == bits(fresh.search_many(queries, k=20, workers=1))
    assert index.num_docs == 598
    # a file gone from an index nobody changes is damage, and said so
    broken = bd.DistributedIndex(path, client, backend="core")  # another backend: loaded anew on the workers
    (victim, *_) = path.glob("shard-*/seg-*/blocks.npy")
    victim.unlink()
    with pytest.raises(IndexFormatError, match="blocks.npy: missing index file; rebuild the index"):
        broken.search_many(queries, k=20)


def test_experiment_on_the_cluster_equals_the_experiment_here(client) -> None:
    from bm25lab import experiment

    here = experiment("cisi", measures=["AP", "nDCG@10"])
    there = experiment("cisi", measures=["AP", "nDCG@10"], cluster=client, shards=3)
    assert there.index.num_shards == 3 and not there.cached
    assert bits(there.results) == bits(here.results)
    assert there.evaluation.per_query == here.evaluation.per_query
    assert experiment("cisi", measures=["AP"], cluster=client, shards=3).cached
    # k3 on the cluster: the union of the workers' answers is weighted as one index weighs a query's terms
    here_k3 = experiment("cisi", measures=["AP", "nDCG@10"], k3=1.0)
    there_k3 = experiment("cisi", measures=["AP", "nDCG@10"], k3=1.0, cluster=client, shards=3)
    assert bits(there_k3.results) == bits(here_k3.results) != bits(here.results)
    assert there_k3.evaluation.per_query == here_k3.evaluation.per_query
    with pytest.raises(ParameterError, match="a sharded index has no fields"):  # BM25F: refused, not approximated
        bd.DistributedIndex(there.index.path, client).search("flow", field_weights="title=2")


# ---------------------------------------------------------------------------------------------- faults
def many_copies(docs: list[Document], copies: int) -> list[Document]:
    return [Document(f"{d.id}-{c}", d.text, d.title) for c in range(copies) for d in docs]


def test_a_worker_killed_mid_build_is_survived(client, references, tmp_path: Path) -> None:
    ref = references["cranfield"]
    docs = many_copies(ref.docs, 3)
    thread, out = in_thread(lambda: bd.build(docs, tmp_path / "idx", shards=3, client=client, tokenizer=ref.tokenizer,
                                             partition_docs=100))
    try:
        kill_when(client, busy_with("bm25lab-partition"), thread)
    finally:
        thread.join(timeout=300)
    assert "error" not in out, out.get("error")
    client.wait_for_workers(2, timeout=60)  # the nanny restarts the killed worker
    fresh = Index.build(docs, tokenizer=ref.tokenizer, workers=1)
    queries = dict(list(ref.queries.items())[:60])
    assert bits(bd.DistributedIndex(out["value"], client).search_many(queries, k=100)) == \
        bits(fresh.search_many(queries, k=100, workers=1))
    assert not [p for p in Path(out["value"]).iterdir() if p.name.startswith((".staging", ".tmp"))]


def test_a_worker_killed_mid_query_is_survived(client, references, tmp_path: Path) -> None:
    ref = references["cranfield"]
    path = shards.build(ref.docs, tmp_path / "idx", 2, ref.tokenizer, workers=1)
    queries = {f"{q}-{c}": text for c in range(40) for q, text in ref.queries.items()}  # 9,000 queries
    index = bd.DistributedIndex(path, client, backend="numpy", batch=len(queries))
    thread, out = in_thread(lambda: index.search_many(queries, k=10))
    try:
        kill_when(client, busy_with("bm25lab-top-k"), thread)
    finally:
        thread.join(timeout=300)
    assert "error" not in out, out.get("error")
    client.wait_for_workers(2, timeout=60)
    expected = ref.single.search_many(queries, k=10, workers=1)
    assert bits(out["value"]) == bits(expected)


class _PartitionsWait(distributed.WorkerPlugin):
    """On every worker, a restarted one too: each partition task waits, inside the task, until the file
    ``release`` exists. A worker the test sees busy with one is then killed in its middle whatever the
    machine's speed (before, under load, the kill could come as the task ended or after the build had
    sent its last partition: the build then succeeded, or the test found nothing to kill)."""

    name = "bm25lab-partitions-wait"

    def __init__(self, release: str) -> None:
        self.release = release

    def setup(self, worker: Any) -> None:
        from bm25lab.engine import shards as on_worker

        real = getattr(on_worker, "_unpatched_write_partition", on_worker.write_partition)
        release = self.release

        def waiting(*args: Any, **kwargs: Any) -> Any:
            deadline = time.monotonic() + 300
            while not os.path.exists(release) and time.monotonic() < deadline:
                time.sleep(0.01)
            return real(*args, **kwargs)

        on_worker._unpatched_write_partition = real
        on_worker.write_partition = waiting


def test_a_build_the_cluster_gives_up_on_fails_in_one_line_and_leaves_the_old_index(references, tmp_path: Path) -> None:
    ref = references["cranfield"]
    docs = many_copies(ref.docs, 3)
    old = shards.build(ref.docs[:300], tmp_path / "idx", 2, ref.tokenizer, workers=1)
    before = snapshot(old)
    cluster, strict = local_cluster(**{"distributed.scheduler.allowed-failures": 0})
    release = tmp_path / "release-the-partitions"
    strict.register_plugin(_PartitionsWait(str(release)))
    try:
        for target, overwrite in ((tmp_path / "idx", True), (tmp_path / "new", False)):
            release.unlink(missing_ok=True)
            thread, out = in_thread(lambda: bd.build(docs, target, shards=3, client=strict, tokenizer=ref.tokenizer,
                                                     partition_docs=100, overwrite=overwrite))
            try:
                kill_when(strict, busy_with("bm25lab-partition"), thread, timeout=300)
            finally:
                release.touch()  # the other worker's partitions go on; the build has lost one for good
                thread.join(timeout=300)
            error = out.get("error")
            assert isinstance(error, BM25LabError) and "lost the workers running a task" in str(error), error
            assert len(str(error).splitlines()) == 1
            strict.wait_for_workers(2, timeout=60)
        assert snapshot(old) == before
        assert sorted(p.name for p in old.iterdir() if p.name.startswith(".")) == [".writer.journal", ".writer.lock"]
        assert storage.Journal(old).names() == []  # what the failed builds journaled was removed
        assert not (tmp_path / "new").exists(), sorted(map(str, (tmp_path / "new").rglob("*")))
    finally:
        strict.close()
        cluster.close()


# ---------------------------------------------------------------------------------------------- storage, errors
def _pretend_another_file_system() -> None:
    """On a worker: its probes answer as a worker on another machine would (the file is not there)."""
    import bm25lab.distributed as mine

    mine._real = (mine._probe, mine._digest_of)
    mine._probe = lambda folder, token: f"!{folder}/.probe-client-{token}: no such file or directory"
    mine._digest_of = lambda path: f"!{path}: no such file or directory"


def _back_to_this_file_system() -> None:
    import bm25lab.distributed as mine

    mine._probe, mine._digest_of = mine._real


def test_a_folder_the_workers_do_not_share_is_refused_in_one_line(client, references, tmp_path: Path) -> None:
    ref = references["cranfield"]
    built = shards.build(ref.docs[:100], tmp_path / "built", 2, ref.tokenizer, workers=1)
    victim = sorted(worker_pids(client))[1]
    client.run(_pretend_another_file_system, workers=[victim])
    try:
        with pytest.raises(BM25LabError, match=f"the worker {victim} cannot share this folder .*no such file.*a shared "
                                               f"file system, or a cluster on this machine"):
            bd.build(ref.docs[:100], tmp_path / "new", shards=2, client=client, tokenizer=ref.tokenizer)
        assert not (tmp_path / "new").exists()
        with pytest.raises(BM25LabError, match=f"the worker {victim} cannot read this index"):
            bd.DistributedIndex(built, client)
    finally:
        client.run(_back_to_this_file_system, workers=[victim])
    assert bd.DistributedIndex(built, client).num_docs == 100


def test_addresses_and_unreachable_schedulers(monkeypatch, tmp_path: Path, client) -> None:
    assert bd.parse_address("tcp://127.0.0.1:8786") == ("tcp", "tcp://127.0.0.1:8786")
    assert bd.parse_address("local:3") == ("local", 3)
    for bad in ("127.0.0.1:8786", "local:0", "local:x", "tcp://host", "udp://h:1"):
        with pytest.raises(ParameterError, match=r"use tcp://HOST:PORT .* or local:W"):
            bd.parse_address(bad)
    monkeypatch.setattr(bd, "_CONNECT_SECONDS", 1)
    with pytest.raises(BM25LabError, match="cannot reach the Dask scheduler at tcp://127.0.0.1:9"):
        with bd.connect("tcp://127.0.0.1:9"):
            pass
    Index.build([("a", "x")], tokenizer=Tokenizer("whitespace")).save(tmp_path / "ordinary")
    with pytest.raises(IndexFormatError, match="an ordinary index; a cluster searches a sharded index"):
        bd.DistributedIndex(tmp_path / "ordinary", client)


# The scale-out example (docs/scale-out.md) runs in tests/test_readme.py, with every code block of the docs.


def test_filters_on_the_cluster_equal_the_sharded_index_here(client, tmp_path: Path) -> None:
    docs = [{"id": f"d{i}", "text": " ".join(["wing", "flow", "layer", "heat"][j % 4] for j in range(i % 9 + 1)),
             "year": 1950 + i % 40, "lang": ["en", "fr", "de"][i % 3]} for i in range(300)]
    path = bd.build(docs, tmp_path / "filtered", shards=3, client=client, tokenizer=Tokenizer("en"))
    here, there = shards.ShardedIndex.load(path), bd.DistributedIndex(path, client, backend="core")
    queries = {"1": "wing flow", "2": "heat", "3": "layer wing heat"}
    for where, where_not in (({"year": {">=": 1980}}, None), (["lang in en,fr"], {"year": {"<": 1960}}),
                             ("lang=xx", None)):
        got = there.search_many(queries, k=50, where=where, where_not=where_not)
        expected = here.search_many(queries, k=50, where=where, where_not=where_not)
        assert bits(got) == bits(expected)
        one, other = (index.search("wing", k=500, where=where, where_not=where_not) for index in (there, here))
        assert (one.doc_ids, one.scores) == (other.doc_ids, other.scores)
