"""Sharded indexes and Dask clusters from the command line: `index --shards N [--cluster ADDRESS]`,
`search`/`run`/`experiment --cluster`, `add`/`delete`/`optimize`/`info` on a sharded index; and the
issue's bar, once, with real `dask scheduler` and `dask worker` processes on 127.0.0.1."""
from __future__ import annotations

import json
import logging
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import distributed  # the test extra installs it, as bm25lab[distributed] does
import pytest
from typer.testing import CliRunner

from bm25lab.cli import app

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args))


def ok(*args: str):
    result = invoke(*args)
    assert result.exit_code == 0, result.output + (result.stderr or "")
    return result


def one_error_line(result) -> str:
    err = result.stderr.strip().splitlines()
    assert len(err) == 1, result.stderr
    assert "Traceback" not in result.output + result.stderr and err[0].startswith("bm25lab: error: ")
    return err[0]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, cranfield) -> Path:
    root = tmp_path_factory.mktemp("sharded-cli")
    queries = cranfield.judged_queries()
    (root / "queries.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in queries.items()), encoding="utf-8")
    ok("index", "cranfield", "--out", str(root / "single"), "--language", "en", "--workers", "1")
    ok("run", str(root / "single"), str(root / "queries.tsv"), "--out", str(root / "single.run"))
    return root


@pytest.fixture(scope="module")
def address():
    """A LocalCluster of two worker processes, given to the commands by its scheduler's address."""
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                       dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
    yield cluster.scheduler_address
    cluster.close()


def test_a_sharded_index_in_this_process(workdir: Path, tmp_path: Path) -> None:
    sharded = tmp_path / "sharded"
    result = ok("index", "cranfield", "--out", str(sharded), "--language", "en", "--shards", "3", "--workers", "1")
    assert "indexed 1,400 documents into 3 shards" in result.output
    ok("run", str(sharded), str(workdir / "queries.tsv"), "--out", str(tmp_path / "sharded.run"))
    assert (tmp_path / "sharded.run").read_bytes() == (workdir / "single.run").read_bytes()
    one = ok("search", str(workdir / "single"), "boundary layer transition", "-k", "5", "--format", "json").output
    assert ok("search", str(sharded), "boundary layer transition", "-k", "5", "--format", "json").output == one
    assert "transition" in ok("search", str(sharded), "boundary layer transition", "-k", "2").output
    facts = json.loads(ok("info", str(sharded), "--format", "json").output)
    assert (facts["shards"], facts["documents"], facts["segments"]) == (3, 1400, 3)

    (tmp_path / "new.jsonl").write_text(json.dumps({"id": "new1", "text": "hypersonic boundary layer flutter"}) + "\n"
                                        + json.dumps({"id": "1", "text": "a replaced first document"}) + "\n")
    assert "added 2 documents (1 replaced)" in ok("add", str(sharded), str(tmp_path / "new.jsonl"), "--workers", "1").output
    assert "deleted 2 documents -> " in ok("delete", str(sharded), "2", "3").output
    error = one_error_line(invoke("delete", str(sharded), "nope"))
    assert "no such document in the index: 'nope'; nothing was deleted" in error
    assert "dropped 3 deleted documents" in ok("optimize", str(sharded)).output
    assert json.loads(ok("info", str(sharded), "--format", "json").output)["documents"] == 1399
    # an experiment on a sharded index in this process: the same evaluation
    assert json.loads(ok("experiment", "cisi", "-m", "AP", "--format", "json", "--shards", "2").output) == \
        json.loads(ok("experiment", "cisi", "-m", "AP", "--format", "json").output)


def test_the_formats_options_k3_and_fields_on_a_sharded_index(tmp_path: Path) -> None:
    """Issue 17's format, field mapping and duplicates options build a sharded index as they build an
    ordinary one; issue 18's --k3 searches and runs it as one index; --fields and field weights (BM25F)
    are refused in one line, exit 2, nothing written (a sharded index has no fields)."""
    source = tmp_path / "docs.csv"
    source.write_text("ident,head,body\nd1,Flow,boundary layer flow flow\nd2,Heat,heat transfer boundary\n"
                      "d1,Flow again,laminar flow layer layer\nd3,Wings,wing flutter flow\nd4,Layer,layer layer\n")
    (tmp_path / "q.tsv").write_text("q1\tflow flow layer\nq2\tlayer boundary boundary\n")
    common = [str(source), "--language", "en", "--workers", "1", "--format", "csv", "--id-field", "ident",
              "--text-fields", "head,body", "--duplicates", "last"]
    ok("index", *common, "--out", str(tmp_path / "one"))
    built = ok("index", *common, "--out", str(tmp_path / "sharded"), "--shards", "2")
    assert "indexed 4 documents into 2 shards" in built.output
    assert "1 documents repeated an id and were skipped (kept the last of each)" in built.output + built.stderr
    for directory in ("one", "sharded"):
        ok("run", str(tmp_path / directory), str(tmp_path / "q.tsv"), "--out", str(tmp_path / f"{directory}.k3"),
           "--k3", "1")
        ok("run", str(tmp_path / directory), str(tmp_path / "q.tsv"), "--out", str(tmp_path / f"{directory}.run"))
    assert (tmp_path / "sharded.k3").read_bytes() == (tmp_path / "one.k3").read_bytes() != \
        (tmp_path / "one.run").read_bytes()
    assert (tmp_path / "sharded.run").read_bytes() == (tmp_path / "one.run").read_bytes()
    search = ["flow flow layer", "--format", "json", "--k3", "1.5"]
    assert ok("search", str(tmp_path / "sharded"), *search).output == ok("search", str(tmp_path / "one"), *search).output
    refused = invoke("index", *common, "--out", str(tmp_path / "fielded"), "--shards", "2", "--fields", "head,body")
    assert refused.exit_code == 2 and "a sharded index (--shards, --cluster) has no fields" in one_error_line(refused)
    assert not (tmp_path / "fielded").exists()
    refused = invoke("search", str(tmp_path / "sharded"), "flow", "--field-weights", "head=2")
    assert refused.exit_code == 2 and "a sharded index has no fields" in one_error_line(refused)


def test_sharded_and_ordinary_targets_do_not_replace_each_other(workdir: Path, tmp_path: Path, cranfield) -> None:
    ok("index", "cisi", "--out", str(tmp_path / "s"), "--shards", "2", "--workers", "1")
    error = one_error_line(invoke("index", "cisi", "--out", str(tmp_path / "s"), "--overwrite"))
    assert "holds a sharded index" in error
    error = one_error_line(invoke("index", "cisi", "--out", str(workdir / "single"), "--shards", "2", "--overwrite"))
    assert "holds an ordinary index" in error
    assert "an index exists already" in one_error_line(invoke("index", "cisi", "--out", str(tmp_path / "s"),
                                                              "--shards", "2"))
    assert invoke("index", "cisi", "--out", str(tmp_path / "t"), "--shards", "0").exit_code == 2
    error = one_error_line(invoke("tune", str(tmp_path / "s"), str(workdir / "queries.tsv"), str(cranfield.qrels_path)))
    assert "a sharded index" in error


def test_on_a_cluster(workdir: Path, tmp_path: Path, address: str) -> None:
    sharded = tmp_path / "sharded"
    result = ok("index", "cranfield", "--out", str(sharded), "--language", "en", "--shards", "3", "--cluster", address,
                "--partition-docs", "300")
    assert "indexed 1,400 documents into 3 shards" in result.output
    ok("run", str(sharded), str(workdir / "queries.tsv"), "--out", str(tmp_path / "cluster.run"), "--cluster", address)
    assert (tmp_path / "cluster.run").read_bytes() == (workdir / "single.run").read_bytes()
    one = ok("search", str(workdir / "single"), "boundary layer transition", "-k", "5", "--format", "json").output
    assert ok("search", str(sharded), "boundary layer transition", "-k", "5", "--format", "json",
              "--cluster", address).output == one
    here = json.loads(ok("experiment", "cisi", "-m", "AP", "--format", "json").output)
    there = json.loads(ok("experiment", "cisi", "-m", "AP", "--format", "json", "--cluster", address).output)
    assert there == here
    # without --shards, one shard per worker
    ok("index", "cisi", "--out", str(tmp_path / "per-worker"), "--cluster", address)
    assert json.loads(ok("info", str(tmp_path / "per-worker"), "--format", "json").output)["shards"] == 2


def test_cluster_errors_are_one_line(workdir: Path, tmp_path: Path, address: str, monkeypatch) -> None:
    result = invoke("run", str(workdir / "single"), str(workdir / "queries.tsv"), "--out", str(tmp_path / "r"),
                    "--cluster", "somewhere")
    assert result.exit_code == 2 and "use tcp://HOST:PORT" in one_error_line(result)
    import bm25lab.distributed

    monkeypatch.setattr(bm25lab.distributed, "_CONNECT_SECONDS", 1)
    result = invoke("index", "cisi", "--out", str(tmp_path / "x"), "--shards", "2", "--cluster", "tcp://127.0.0.1:9")
    assert result.exit_code == 1 and "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in one_error_line(result)
    assert not (tmp_path / "x").exists()
    result = invoke("run", str(workdir / "single"), str(workdir / "queries.tsv"), "--out", str(tmp_path / "r"),
                    "--cluster", address)
    assert result.exit_code == 1 and "an ordinary index; a cluster searches a sharded index" in one_error_line(result)


def test_files_read_by_the_workers_and_changes_on_a_cluster(tmp_path: Path, address: str) -> None:
    """`index 'docs-*.jsonl' --cluster`: the workers read the files, and the index is the one `index
    'docs-*.jsonl' --shards` writes here; `add`, `delete`, `optimize --cluster` change it as they change it
    here; a bad line is one error naming the file and the line, exit 1, no folder."""
    from test_distributed_files import normal, write_corpus  # type: ignore[import-not-found]

    corpus = write_corpus(tmp_path / "corpus", per_file=40)
    pattern = str(corpus / "docs-*.jsonl*")
    common = ["--shards", "3", "--language", "en"]
    ok("index", pattern, "--out", str(tmp_path / "here"), *common, "--workers", "1")
    built = ok("index", pattern, "--out", str(tmp_path / "there"), *common, "--cluster", address,
               "--partition-bytes", "1500")
    assert "indexed 160 documents into 3 shards" in built.output
    assert normal(tmp_path / "there") == normal(tmp_path / "here")
    (tmp_path / "new.jsonl").write_text("".join(json.dumps({"id": f"j0-{j}", "text": "wind wave"}) + "\n"
                                                for j in range(0, 80, 4)), encoding="utf-8")
    for cluster in ([], ["--cluster", address]):
        target = str(tmp_path / ("there" if cluster else "here"))
        assert "added 20 documents (10 replaced)" in ok("add", target, str(tmp_path / "new.jsonl"), *cluster).output
        assert "deleted 2 documents" in ok("delete", target, "j1-3", "j3-5", *cluster).output
        assert "no such document in the index: 'nope'" in one_error_line(invoke("delete", target, "nope", *cluster))
        assert "dropped 12 deleted documents" in ok("optimize", target, *cluster).output
    assert normal(tmp_path / "there") == normal(tmp_path / "here")
    lines = (corpus / "docs-3.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    lines[30] = "{not json\n"
    (corpus / "docs-3.jsonl").write_text("".join(lines), encoding="utf-8")
    failed = invoke("index", pattern, "--out", str(tmp_path / "bad"), *common, "--cluster", address,
                    "--partition-bytes", "1500")
    assert failed.exit_code == 1 and not (tmp_path / "bad").exists()
    assert f"{corpus / 'docs-3.jsonl'}:31: invalid JSON" in one_error_line(failed)
    refused = invoke("optimize", str(tmp_path / "there" / "nothing"), "--cluster", address)
    assert refused.exit_code == 1 and "no such index directory" in one_error_line(refused)


# ---------------------------------------------------------------------------------------------- the bar
def unseen_collection(folder: Path) -> tuple[Path, Path]:
    """A collection no part of bm25lab has seen: 3,000 seeded documents of English and Chinese words."""
    rng = random.Random(16)
    english = [f"{a}{b}" for a in ("wind", "wave", "heat", "flow", "shock", "plate", "wing", "jet") for b in
               ("", "s", "ing", "er", "ed")]
    chinese = ["清华", "大学", "北京", "边界层", "湍流", "激波", "机翼", "热传导", "实验", "理论"]
    words = english + chinese
    docs = folder / "docs.jsonl"
    with docs.open("w", encoding="utf-8") as out:
        for i in range(3000):
            text = " ".join(rng.choices(words, k=rng.randint(3, 60)))
            out.write(json.dumps({"id": f"u{i:05d}", "title": rng.choice(words), "text": text}, ensure_ascii=False) + "\n")
    queries = folder / "queries.tsv"
    queries.write_text("".join(f"q{i}\t{' '.join(rng.choices(words, k=rng.randint(1, 5)))}\n" for i in range(300)),
                       encoding="utf-8")
    return docs, queries


def test_the_bar_a_real_scheduler_and_two_workers(tmp_path: Path) -> None:
    """`dask scheduler` and two `dask worker` processes; `bm25lab index --shards 3 --cluster tcp://...` and
    `bm25lab run --cluster` give exactly the single-machine run; the scheduler ran the tasks."""
    docs, queries = unseen_collection(tmp_path)
    dask = [sys.executable, "-m", "dask"]
    scheduler_file = tmp_path / "scheduler.json"
    started: list[subprocess.Popen] = []
    log = (tmp_path / "dask.log").open("w")
    try:
        # cwd: not the source tree, whose bm25lab/ folder would shadow the installed package in `python -m`
        started.append(subprocess.Popen(dask + ["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                                "--scheduler-file", str(scheduler_file)], stdout=log, stderr=log,
                                        cwd=tmp_path))
        deadline = time.monotonic() + 60
        while not (scheduler_file.exists() and scheduler_file.stat().st_size):
            assert time.monotonic() < deadline and started[0].poll() is None, (tmp_path / "dask.log").read_text()
            time.sleep(0.1)
        address = json.loads(scheduler_file.read_text())["address"]
        for _ in range(2):
            started.append(subprocess.Popen(dask + ["worker", address, "--nthreads", "1", "--no-dashboard",
                                                    "--host", "127.0.0.1"], stdout=log, stderr=log, cwd=tmp_path))
        with distributed.Client(address, timeout=30) as client:
            client.wait_for_workers(2, timeout=60)

        def bm25lab(*args: str) -> str:
            done = subprocess.run([sys.executable, "-m", "bm25lab", *args], capture_output=True, text=True,
                                  cwd=tmp_path, timeout=300, env=dict(os.environ, COLUMNS="200"))
            assert done.returncode == 0, done.stderr
            return done.stdout

        pieces = -(-docs.stat().st_size // 150_000)  # the workers read the file in byte ranges of 150,000
        assert "into 3 shards" in bm25lab("index", str(docs), "--out", "sharded", "--shards", "3", "--cluster", address,
                                          "--partition-bytes", "150000")
        bm25lab("run", "sharded", str(queries), "--out", "cluster.run", "--cluster", address)
        bm25lab("index", str(docs), "--out", "single", "--workers", "1")
        bm25lab("run", "single", str(queries), "--out", "single.run")
        run = (tmp_path / "cluster.run").read_bytes()
        assert run == (tmp_path / "single.run").read_bytes() and len(run.splitlines()) > 10_000
        with distributed.Client(address, timeout=30) as client:
            saw = client.run_on_scheduler(lambda dask_scheduler: {
                name: dict(p.state_counts) for name, p in dask_scheduler.task_prefixes.items()})
            workers = client.run(lambda dask_worker: dask_worker.state.executed_count)
        assert pieces >= 3 and saw["bm25lab-read"]["memory"] == pieces  # the client sent names and ranges
        for prefix in ("bm25lab-shard", "bm25lab-statistics", "bm25lab-look-up", "bm25lab-top-k"):
            assert saw[prefix]["memory"] >= 1, saw
        assert len(workers) == 2 and all(count > 0 for count in workers.values()), workers  # both did work
    finally:
        for process in reversed(started):
            process.send_signal(signal.SIGTERM)
        for process in reversed(started):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)
        log.close()
