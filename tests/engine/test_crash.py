"""Crash safety: `kill -9` at a random moment of `bm25lab add`, `delete`, `optimize` or
`index --overwrite` leaves the index exactly as it was before or as it is after, never in between.

A seeded loop runs each command in its own process and kills it with SIGKILL after a random delay:
every other time anywhere in the time the command takes (learnt from its runs that were not killed),
otherwise a few milliseconds after it has started writing files into the index folder, so that many
kills land in the middle of a commit. The index must then load, hold exactly the documents of the
before-state or of the after-state, and search exactly as a fresh build of those documents.

The processes are forked by one helper interpreter (started with ``sys.executable``) that has
imported bm25lab once, so each run costs its own work rather than a second of interpreter start-up;
each is a real process running the real command line, and a SIGKILL ends it as it would any other.
"""
from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from bm25lab.engine import Index, storage

ROOT = Path(__file__).resolve().parents[2]
ITERATIONS = 24

# The helper: reads {"args": [...], "delay": s, "log": path, "watch": folder or null} lines; for each,
# forks a child that runs `bm25lab args` (output to log), kills it with SIGKILL `delay` s after it
# started (with "watch": after a new file appeared in that folder, i.e. once it is writing) unless it
# has exited, and answers {"killed": bool, "code": exit code or null, "took": s}.
FORKER = r"""
import contextlib, io, json, os, signal, sys, time
import bm25lab.engine.index, bm25lab.engine.locking, bm25lab.engine.segments, bm25lab.engine.sources, bm25lab.cli.growth_cmds
import fcntl, hashlib, rich.console, rich.progress, sqlite3, tempfile
from bm25lab.cli import app
for command in ("index", "add", "delete", "optimize"):  # warm up: typer builds each command once
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        app([command, "--help"], prog_name="bm25lab")
print("ready", flush=True)
for line in sys.stdin:
    job = json.loads(line)
    sys.stdout.flush(); sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        fd = os.open(job["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1); os.dup2(fd, 2)
        code = 0
        try:
            app(job["args"], prog_name="bm25lab")
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:
            import traceback; traceback.print_exc(); code = 99
        sys.stdout.flush(); sys.stderr.flush()
        os._exit(code)
    started = time.perf_counter()
    watch = job.get("watch")
    seen = set(os.listdir(watch)) | {".writer.lock"} if watch else set()
    clock = None if watch else started  # with "watch": the delay runs from the first new file there
    killed = False
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if clock is None and not set(os.listdir(watch)) <= seen:
            clock = time.perf_counter()
        if clock is not None and time.perf_counter() - clock >= job["delay"]:
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            killed = os.WIFSIGNALED(status)
            break
        time.sleep(0.0005)
    took = time.perf_counter() - started
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    print(json.dumps({"killed": killed, "code": code, "took": took}), flush=True)
"""

Docs = dict[str, str]


def synthetic(rng: random.Random, ids: list[str], salt: str = "") -> Docs:
    words = [f"w{i}" for i in range(300)]
    return {i: " ".join(rng.choices(words, k=rng.randint(5, 40))) + (f" {salt}" if salt else "") for i in ids}


def write_jsonl(path: Path, docs: Docs) -> Path:
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in docs.items()), encoding="utf-8")
    return path


def observed(directory: Path) -> Docs:
    index = Index.load(directory)
    docs = {d.id: d.text for d in index.documents()}
    assert len(docs) == index.num_docs and sorted(docs) == sorted(index.doc_ids)
    fresh = Index.build(sorted(docs.items()), tokenizer=index.tokenizer, workers=1)
    assert index.counts() == fresh.counts()
    for query in ("w1 w2 w3", "w7 w250 salt", "w99"):
        assert [(h.doc_id, h.score) for h in index.search(query, k=20)] == \
               [(h.doc_id, h.score) for h in fresh.search(query, k=20)]
    return docs


def unreferenced(directory: Path) -> list[str]:
    """Files a killed writer left that the manifest does not name (it died while writing a change)."""
    manifest = json.loads((directory / "index.json").read_text())
    named = {"index.json", ".writer.lock"} | storage.referenced_names(manifest)
    return sorted(p.name for p in directory.iterdir() if p.name not in named)


class Forker:
    """The helper process; :meth:`run` runs one command and kills it after ``delay`` seconds."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.proc = subprocess.Popen([sys.executable, "-c", FORKER], cwd=log.parent, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "ready"

    def run(self, args: list[str], delay: float, watch: Path | None = None) -> tuple[bool, float]:
        """(killed while running, seconds it ran); a run that was not killed must have succeeded."""
        job = {"args": args, "delay": delay, "log": str(self.log), "watch": str(watch) if watch else None}
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline())
        if not answer["killed"]:
            assert answer["code"] == 0, self.log.read_text()
        return answer["killed"], answer["took"]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self.proc.stdout.close()


@pytest.fixture
def forker(tmp_path: Path):
    helper = Forker(tmp_path / "command.log")
    yield helper
    helper.close()


def test_kill_at_random_moments_leaves_before_or_after(tmp_path: Path, forker: Forker) -> None:
    rng = random.Random(20240607)
    index_dir = tmp_path / "idx"
    initial = synthetic(rng, [f"d{i}" for i in range(1500)])
    reset = synthetic(rng, [f"r{i}" for i in range(1200)], salt="salt")
    reset_file = write_jsonl(tmp_path / "reset.jsonl", reset)
    source = write_jsonl(tmp_path / "initial.jsonl", initial)
    assert forker.run(["index", str(source), "--out", str(index_dir), "--language", "whitespace"], 60)[0] is False
    state = observed(index_dir)
    assert state == initial

    def op_add(step: int) -> tuple[list[str], Docs]:
        existing = rng.sample(sorted(state), k=min(40, len(state)))
        new = synthetic(rng, existing + [f"n{step}-{i}" for i in range(800)], salt="salt")
        return ["add", str(index_dir), str(write_jsonl(tmp_path / f"add{step}.jsonl", new)), "--workers", "1"], \
            {**state, **new}

    def op_delete(step: int) -> tuple[list[str], Docs]:
        gone = rng.sample(sorted(state), k=min(60, len(state) - 1))
        return ["delete", str(index_dir), *gone], {k: v for k, v in state.items() if k not in gone}

    def op_optimize(step: int) -> tuple[list[str], Docs]:
        return ["optimize", str(index_dir)], dict(state)

    def op_overwrite(step: int) -> tuple[list[str], Docs]:
        return ["index", str(reset_file), "--out", str(index_dir), "--language", "whitespace", "--overwrite",
                "--workers", "1"], dict(reset)

    ops: dict[str, Callable[[int], tuple[list[str], Docs]]] = {
        "add": op_add, "delete": op_delete, "optimize": op_optimize, "index --overwrite": op_overwrite}
    duration: dict[str, float] = {}  # seconds each command ran the last time it was not killed
    outcomes = {"finished": 0, "killed, before": 0, "killed, after": 0, "killed while writing": 0}
    def covered() -> bool:  # enough kills of each kind: how many land mid-write depends on machine speed
        return (outcomes["killed, before"] + outcomes["killed, after"] >= 8
                and outcomes["killed while writing"] >= 3)

    for step in range(3 * ITERATIONS):
        if step >= ITERATIONS and covered():
            break
        name = rng.choice(sorted(ops)) if step else "add"
        args, after = ops[name](step)
        before, leftovers = state, set(unreferenced(index_dir))
        if step % 2:  # a few milliseconds into writing
            killed, took = forker.run(args, rng.uniform(0.0, 0.03), watch=index_dir)
        else:  # anywhere in the command's run time (its first run goes to the end)
            killed, took = forker.run(args, rng.uniform(0.0, 1.05 * duration[name]) if name in duration else 60.0)
        if not killed:
            duration[name] = took
        elif set(unreferenced(index_dir)) - leftovers:
            outcomes["killed while writing"] += 1
        state = observed(index_dir)
        assert state in (before, after), f"step {step}: {name} killed={killed} left a state that is neither"
        outcome = "finished" if not killed else ("killed, after" if state == after != before else "killed, before")
        outcomes[outcome] += 1

    assert outcomes["killed, before"] + outcomes["killed, after"] >= 8, outcomes
    assert outcomes["killed while writing"] >= 3, outcomes  # kills that left a half-written change
    # a clean commit removes whatever the killed writers left behind
    assert forker.run(["optimize", str(index_dir)], 60)[0] is False
    assert forker.run(["add", str(index_dir), str(write_jsonl(tmp_path / "last.jsonl", {"z": "w1"}))], 60)[0] is False
    leftovers = sorted(p.name for p in index_dir.iterdir())
    assert len([n for n in leftovers if n.startswith("seg-")]) == len(leftovers) - 2, leftovers
    assert set(leftovers) - {n for n in leftovers if n.startswith("seg-")} == {"index.json", ".writer.lock"}
    assert observed(index_dir) == {**state, "z": "w1"}
