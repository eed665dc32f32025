"""Crash safety: `kill -9` at every step of `bm25lab add`, `delete`, `optimize` and
`index --overwrite` leaves the index exactly as it was before or as it is after, never in between,
and the next writer removes whatever the killed one left (and nothing else); the same for a sharded
index (`index --shards N`), whose commit is the replacement of shards.json.

The kill moments are the writer's own: :func:`bm25lab.engine.storage.checkpoint` marks each step of
a change (a scratch folder made, the journal written, a segment's folder made, its files written, it
renamed, a deletions file written, the manifest written, replaced, the directory synced, each
obsolete file removed). Each command first runs to its end once, which lists its steps; then, from
the same state restored, it runs once for every step and is killed with SIGKILL by its parent when
it signals that step. So every step of every kind of change is interrupted exactly once, on any
machine at any speed: the test neither flakes nor passes without having killed anything. Killed
before the manifest is replaced, the index must be the one before; from then on, the one after;
both must search exactly as a fresh build of their documents.

The processes are forked by one helper interpreter (started with ``sys.executable``) that has
imported bm25lab once; each is a real process running the real command line.
"""
from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from bm25lab.engine import Index, scratch, segments, shards, storage

# The helper: reads {"args": [...], "kill_at": n or null, "log": path} lines; for each, forks a child
# that runs `bm25lab args` (output to log) with storage.checkpoint replaced: at each step the child
# notes the step's name and, at step number kill_at, tells the helper through a pipe and waits, and
# the helper kills it with SIGKILL. Answers {"killed": bool, "code": exit code or null, "steps": [...]}.
FORKER = r"""
import contextlib, io, json, os, select, signal, sys, time
import bm25lab.engine.index, bm25lab.engine.locking, bm25lab.engine.segments, bm25lab.engine.sources, bm25lab.cli.growth_cmds
import bm25lab.engine.shards, bm25lab.cli.distributed_cmds
import fcntl, hashlib, rich.console, rich.progress, sqlite3, tempfile
from bm25lab.cli import app
from bm25lab.engine import storage
for command in ("index", "add", "delete", "optimize"):  # warm up: typer builds each command once
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        app([command, "--help"], prog_name="bm25lab")
print("ready", flush=True)
for line in sys.stdin:
    job = json.loads(line)
    sys.stdout.flush(); sys.stderr.flush()
    steps_read, steps_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(steps_read)
        fd = os.open(job["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1); os.dup2(fd, 2)
        taken = []
        def checkpoint(step):
            os.write(steps_write, (json.dumps({"step": step, "kill": len(taken) == job["kill_at"]}) + "\n").encode())
            if len(taken) == job["kill_at"]:
                time.sleep(60)  # killed here by the helper
            taken.append(step)
        storage.checkpoint = checkpoint
        code = 0
        try:
            app(job["args"], prog_name="bm25lab")
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:
            import traceback; traceback.print_exc(); code = 99
        sys.stdout.flush(); sys.stderr.flush()
        os._exit(code)
    os.close(steps_write)
    steps, killed, buffer = [], False, b""
    while True:
        chunk = os.read(steps_read, 65536)
        if not chunk:
            break
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            note = json.loads(line)
            steps.append(note["step"])
            if note["kill"]:
                os.kill(pid, signal.SIGKILL)
                killed = True
    os.close(steps_read)
    _, status = os.waitpid(pid, 0)
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    print(json.dumps({"killed": killed and os.WIFSIGNALED(status), "code": code, "steps": steps}), flush=True)
"""

Docs = dict[str, str]
COMMIT = "manifest replaced"  # killed at this step or later, the change is committed


def synthetic(rng: random.Random, ids: list[str], salt: str = "") -> Docs:
    words = [f"w{i}" for i in range(300)]
    return {i: " ".join(rng.choices(words, k=rng.randint(5, 40))) + (f" {salt}" if salt else "") for i in ids}


def write_jsonl(path: Path, docs: Docs) -> Path:
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in docs.items()), encoding="utf-8")
    return path


def observed(directory: Path) -> Docs:
    """The documents of the index in ``directory``, checked to search exactly as a fresh build of them."""
    index = Index.load(directory)
    docs = {d.id: d.text for d in index.documents()}
    assert len(docs) == index.num_docs and sorted(docs) == sorted(index.doc_ids)
    fresh = Index.build(sorted(docs.items()), tokenizer=index.tokenizer, workers=1)
    assert index.counts() == fresh.counts()
    for query in ("w1 w2 w3", "w7 w250 salt", "w99"):
        assert [(h.doc_id, h.score) for h in index.search(query, k=20)] == \
               [(h.doc_id, h.score) for h in fresh.search(query, k=20)]
    return docs


def unexpected(directory: Path) -> list[str]:
    """What is in ``directory`` besides the index's manifest, lock, journal and named files."""
    named = {storage.MANIFEST, storage.LOCK_FILE, storage.JOURNAL} | storage.named_files(directory)
    return sorted(p.name for p in directory.iterdir() if p.name not in named)


class Forker:
    """The helper process; :meth:`run` runs one command, killed at its step ``kill_at`` if given."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.proc = subprocess.Popen([sys.executable, "-c", FORKER], cwd=log.parent, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "ready"

    def run(self, args: list[str], kill_at: int | None = None) -> tuple[bool, list[str]]:
        """(killed, the steps it took); a run that was not killed must have succeeded."""
        job = {"args": args, "kill_at": kill_at, "log": str(self.log)}
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline())
        if not answer["killed"]:
            assert answer["code"] == 0, self.log.read_text()
        return answer["killed"], answer["steps"]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self.proc.stdout.close()


@pytest.fixture
def forker(tmp_path: Path):
    helper = Forker(tmp_path / "command.log")
    yield helper
    helper.close()


def restore(saved: Path, index_dir: Path) -> None:
    shutil.rmtree(index_dir)
    shutil.copytree(saved, index_dir)


def growth_ops(rng: random.Random, state: Docs, index_dir: Path, tmp_path: Path, sizes: tuple[int, int, int, int],
               index_args: list[str]) -> dict[str, Callable[[], tuple[list[str], Docs]]]:
    """The four changes the kill tests interrupt, each as (its command, the documents after it): an
    add replacing ``sizes[0]`` documents and adding ``sizes[1]``, a delete of ``sizes[2]``, an optimize,
    and an ``index --overwrite`` of ``sizes[3]`` new documents (with ``index_args``)."""
    keep, new, gone, reset = sizes

    def op_add() -> tuple[list[str], Docs]:
        existing = rng.sample(sorted(state), k=keep)
        added = synthetic(rng, existing + [f"n{i}" for i in range(new)], salt="salt")
        return ["add", str(index_dir), str(write_jsonl(tmp_path / "add.jsonl", added)), "--workers", "1"], \
            {**state, **added}

    def op_delete() -> tuple[list[str], Docs]:
        victims = rng.sample(sorted(state), k=gone)
        return ["delete", str(index_dir), *victims], {k: v for k, v in state.items() if k not in victims}

    def op_optimize() -> tuple[list[str], Docs]:
        return ["optimize", str(index_dir)], dict(state)

    def op_overwrite() -> tuple[list[str], Docs]:
        fresh = synthetic(rng, [f"r{i}" for i in range(reset)], salt="salt")
        return ["index", str(write_jsonl(tmp_path / "reset.jsonl", fresh)), "--out", str(index_dir), *index_args,
                "--overwrite"], fresh

    return {"add": op_add, "delete": op_delete, "optimize": op_optimize, "index --overwrite": op_overwrite}


def test_kill_at_every_step_leaves_before_or_after(tmp_path: Path, forker: Forker) -> None:
    rng = random.Random(20240607)
    index_dir = tmp_path / "idx"
    initial = synthetic(rng, [f"d{i}" for i in range(300)])
    assert forker.run(["index", str(write_jsonl(tmp_path / "initial.jsonl", initial)), "--out", str(index_dir),
                       "--language", "whitespace"])[0] is False
    more = synthetic(rng, [f"e{i}" for i in range(100)])  # a second segment, and deletions in the first
    assert forker.run(["add", str(index_dir), str(write_jsonl(tmp_path / "more.jsonl", more))])[0] is False
    assert forker.run(["delete", str(index_dir), "d1", "d2", "d3", "e4"])[0] is False
    state = observed(index_dir)
    assert len(state) == 396 and Index.load(index_dir).num_segments == 2

    ops = growth_ops(rng, state, index_dir, tmp_path, (40, 150, 60, 200),
                     ["--language", "whitespace", "--workers", "1"])
    saved = tmp_path / "saved"
    shutil.copytree(index_dir, saved)
    kills: dict[str, list[str]] = {}
    for name, make in ops.items():
        args, after = make()
        killed, steps = forker.run(args)  # to its end: the steps this change takes
        assert not killed and observed(index_dir) == after and unexpected(index_dir) == []
        assert COMMIT in steps and steps.count("journaled") >= 2, steps
        kills[name] = []
        for at in range(len(steps)):
            restore(saved, index_dir)
            killed, taken = forker.run(args, kill_at=at)
            assert killed and taken == steps[:at + 1], (name, at, taken)
            kills[name].append(steps[at])
            expected = after if at >= steps.index(COMMIT) else state
            assert observed(index_dir) == expected, f"{name} killed at step {at} ({steps[at]})"
            segments.optimize(index_dir)  # the next writer finishes what the killed one left, and only that
            assert unexpected(index_dir) == [], f"{name} killed at step {at} ({steps[at]}): {unexpected(index_dir)}"
            assert observed(index_dir) == expected
        restore(saved, index_dir)
    # every kind of step was interrupted, in every kind of change
    for name, steps in kills.items():
        assert {"journaled", "manifest written", COMMIT, "committed", "removed"} <= set(steps), (name, steps)
    assert {"scratch made", "segment folder made", "segment files written", "segment renamed"} <= set(kills["add"])
    assert "deletions written" in kills["delete"] and "scratch made" in kills["optimize"]


def test_a_killed_build_leaves_nothing_the_next_one_keeps(tmp_path: Path, forker: Forker) -> None:
    # a first `index --out` killed at each step: the folder then holds only what bm25lab made, which
    # the next build accepts and clears; no scratch folder of the killed process survives it
    source = write_jsonl(tmp_path / "docs.jsonl", synthetic(random.Random(5), [f"d{i}" for i in range(50)]))
    args = ["index", str(source), "--out", str(tmp_path / "new"), "--language", "whitespace"]
    _, steps = forker.run(args)
    for at in range(len(steps)):
        shutil.rmtree(tmp_path / "new")
        killed, _ = forker.run(args, kill_at=at)
        assert killed
        if at < steps.index(COMMIT):
            assert not (tmp_path / "new" / storage.MANIFEST).exists()
            assert forker.run(args)[0] is False  # accepted without --overwrite: nothing in it is anyone else's
        else:
            assert forker.run(args + ["--overwrite"])[0] is False
        assert unexpected(tmp_path / "new") == [] and not [n for n in (tmp_path / "new").iterdir()
                                                           if scratch.is_scratch_name(n.name)]
        assert len(observed(tmp_path / "new")) == 50


# ---------------------------------------------------------------------- sharded indexes
SHARDED_COMMIT = "shards.json replaced"  # a sharded change is committed from this step on


def observed_sharded(directory: Path) -> Docs:
    """The documents of the sharded index in ``directory``, checked to search exactly as a fresh
    build of them (one ordinary index)."""
    index = shards.ShardedIndex.load(directory)
    docs = {d.id: d.text for d in index.documents()}
    assert len(docs) == index.num_docs
    fresh = Index.build(sorted(docs.items()), tokenizer=index.tokenizer, workers=1)
    assert index.counts() == fresh.counts()
    for query in ("w1 w2 w3", "w7 w250 salt", "w99"):
        assert [(h.doc_id, h.score) for h in index.search(query, k=20)] == \
               [(h.doc_id, h.score) for h in fresh.search(query, k=20)]
    return docs


def unexpected_sharded(directory: Path) -> list[str]:
    """What the sharded index's folder and its shards hold besides their manifests, locks, journals
    and the names the manifests give; names a journal still lists; shard manifests unlike their copies."""
    manifest = shards.read_manifest(directory)
    own = {shards.MANIFEST, storage.LOCK_FILE, storage.JOURNAL}
    out = sorted(p.name for p in directory.iterdir() if p.name not in own | storage.named_files(directory))
    out += [f"journal: {name}" for name in storage.Journal(directory).names()]
    for entry in manifest["shards"]:
        folder = directory / entry["name"]
        out += [f"{entry['name']}/{name}" for name in unexpected(folder)]
        out += [f"{entry['name']}/journal: {name}" for name in storage.Journal(folder).names()]
        if storage.read_manifest(folder) != entry["manifest"]:
            out.append(f"{entry['name']}/index.json (stale)")
    return out


def test_kill_at_every_step_of_a_sharded_change_leaves_before_or_after(tmp_path: Path, forker: Forker) -> None:
    rng = random.Random(20261916)
    index_dir = tmp_path / "idx"
    sharded = ["--language", "whitespace", "--shards", "2", "--workers", "1"]
    initial = synthetic(rng, [f"d{i}" for i in range(120)])
    assert forker.run(["index", str(write_jsonl(tmp_path / "initial.jsonl", initial)), "--out", str(index_dir),
                       *sharded])[0] is False
    more = synthetic(rng, [f"e{i}" for i in range(40)])  # second segments, and deletions in the first
    assert forker.run(["add", str(index_dir), str(write_jsonl(tmp_path / "more.jsonl", more)), "--workers", "1"])[0] \
        is False
    assert forker.run(["delete", str(index_dir), "d1", "d2", "d3", "e4"])[0] is False
    state = observed_sharded(index_dir)
    assert len(state) == 156 and shards.ShardedIndex.load(index_dir).num_segments == 4

    ops = growth_ops(rng, state, index_dir, tmp_path, (10, 30, 20, 60), sharded)
    saved = tmp_path / "saved"
    shutil.copytree(index_dir, saved)
    kills: dict[str, list[str]] = {}
    for name, make in ops.items():
        args, after = make()
        killed, steps = forker.run(args)  # to its end: the steps this change takes
        assert not killed and observed_sharded(index_dir) == after and unexpected_sharded(index_dir) == []
        assert steps.count(SHARDED_COMMIT) == 1 and "journaled" in steps[:steps.index(SHARDED_COMMIT)], steps
        kills[name] = []
        for at in range(len(steps)):
            restore(saved, index_dir)
            killed, taken = forker.run(args, kill_at=at)
            assert killed and taken == steps[:at + 1], (name, at, taken)
            kills[name].append(steps[at])
            expected = after if at >= steps.index(SHARDED_COMMIT) else state
            assert observed_sharded(index_dir) == expected, f"{name} killed at step {at} ({steps[at]})"
            shards.optimize(index_dir)  # the next writer finishes what the killed one left, and only that
            left = unexpected_sharded(index_dir)
            assert left == [], f"{name} killed at step {at} ({steps[at]}): {left}"
            assert observed_sharded(index_dir) == expected
        restore(saved, index_dir)
    # every kind of step was interrupted, in every kind of change: the shards' own commits (after the
    # sharded commit, bringing their index.json to their copies) and the removal of obsolete files too
    for name, steps in kills.items():
        assert {"journaled", "shards.json written", SHARDED_COMMIT, "shards.json committed", "manifest replaced",
                "removed"} <= set(steps), (name, steps)
    for name in ("add", "delete", "index --overwrite"):
        assert "statistics renamed" in kills[name], (name, kills[name])
    assert {"scratch made", "segment folder made", "segment files written", "segment renamed"} <= set(kills["add"])
    assert "deletions written" in kills["delete"] and "scratch made" in kills["optimize"]
    assert {"scratch made", "shard renamed"} <= set(kills["index --overwrite"])


def test_a_killed_sharded_build_leaves_nothing_the_next_one_keeps(tmp_path: Path, forker: Forker) -> None:
    # a first `index --shards 2 --out` killed at each step: the folder then holds only what bm25lab
    # made (journaled shard and statistics folders, the staging scratch folder), which the next build
    # accepts and clears
    source = write_jsonl(tmp_path / "docs.jsonl", synthetic(random.Random(6), [f"d{i}" for i in range(50)]))
    args = ["index", str(source), "--out", str(tmp_path / "new"), "--language", "whitespace", "--shards", "2"]
    _, steps = forker.run(args)
    for at in range(len(steps)):
        shutil.rmtree(tmp_path / "new")
        killed, _ = forker.run(args, kill_at=at)
        assert killed
        if at < steps.index(SHARDED_COMMIT):
            assert not (tmp_path / "new" / shards.MANIFEST).exists()
            assert forker.run(args)[0] is False  # accepted without --overwrite: nothing in it is anyone else's
        else:
            assert forker.run(args + ["--overwrite"])[0] is False
        assert unexpected_sharded(tmp_path / "new") == [] and not [n for n in (tmp_path / "new").iterdir()
                                                                   if scratch.is_scratch_name(n.name)]
        assert len(observed_sharded(tmp_path / "new")) == 50
