"""Crash safety: `kill -9` at a random moment of `bm25lab add`, `delete`, `optimize` or
`index --overwrite` leaves the index exactly as it was before or as it is after, never in between.

A seeded loop starts each command as a real subprocess, waits until it has imported its modules
(it prints "ready"), sleeps a random part of the time the command takes (learnt from the first run of
each command, which is not killed; the work happens in the later part), and kills it with SIGKILL. The index must then load, hold exactly the documents of the before-state or of the
after-state, and search exactly as a fresh build of those documents.
"""
from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from engine import Index

ROOT = Path(__file__).resolve().parent.parent
ITERATIONS = 16
TIME_LIMIT_S = 24.0
CHILD = ("import sys; import engine.index, engine.segments, engine.sources, evaluation.cli.growth_cmds; "
         "from evaluation.cli import app; print('ready', flush=True); app(sys.argv[1:], prog_name='bm25lab')")

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


def run_and_kill(args: list[str], delay: float) -> tuple[bool, float]:
    """Run ``bm25lab args`` in a subprocess; SIGKILL it ``delay`` s after it is ready.
    Returns (killed while running, seconds from ready to exit or kill)."""
    child = subprocess.Popen([sys.executable, "-c", CHILD, *args], cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        started = time.perf_counter()
        try:
            child.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGKILL)
            child.wait()
            return True, time.perf_counter() - started
        assert child.returncode == 0, child.stderr.read()
        return False, time.perf_counter() - started
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()
        child.stderr.close()


def test_kill_at_random_moments_leaves_before_or_after(tmp_path: Path) -> None:
    rng = random.Random(20240607)
    index_dir = tmp_path / "idx"
    initial = synthetic(rng, [f"d{i}" for i in range(1500)])
    reset = synthetic(rng, [f"r{i}" for i in range(1200)], salt="salt")
    reset_file = write_jsonl(tmp_path / "reset.jsonl", reset)
    source = write_jsonl(tmp_path / "initial.jsonl", initial)
    assert run_and_kill(["index", str(source), "--out", str(index_dir), "--language", "whitespace"], 60)[0] is False
    state = observed(index_dir)
    assert state == initial

    def op_add(step: int) -> tuple[list[str], Docs]:
        existing = rng.sample(sorted(state), k=min(40, len(state)))
        new = synthetic(rng, existing + [f"n{step}-{i}" for i in range(800)], salt="salt")
        return ["add", str(index_dir), str(write_jsonl(tmp_path / f"add{step}.jsonl", new))], {**state, **new}

    def op_delete(step: int) -> tuple[list[str], Docs]:
        gone = rng.sample(sorted(state), k=min(60, len(state) - 1))
        return ["delete", str(index_dir), *gone], {k: v for k, v in state.items() if k not in gone}

    def op_optimize(step: int) -> tuple[list[str], Docs]:
        return ["optimize", str(index_dir)], dict(state)

    def op_overwrite(step: int) -> tuple[list[str], Docs]:
        return ["index", str(reset_file), "--out", str(index_dir), "--language", "whitespace", "--overwrite"], dict(reset)

    ops: dict[str, Callable[[int], tuple[list[str], Docs]]] = {
        "add": op_add, "delete": op_delete, "optimize": op_optimize, "index --overwrite": op_overwrite}
    window: dict[str, float] = {}  # seconds a command runs after "ready", from its first (whole) run
    outcomes = {"killed, before": 0, "killed, after": 0, "finished": 0}
    began = time.perf_counter()
    for step in range(ITERATIONS):
        if time.perf_counter() - began > TIME_LIMIT_S:
            break
        name = rng.choice(sorted(ops)) if step else "add"
        args, after = ops[name](step)
        before = state
        delay = rng.uniform(0.4 * window[name], 1.1 * window[name]) if name in window else 60.0
        killed, took = run_and_kill(args, delay)
        if name not in window:
            window[name] = took
        state = observed(index_dir)
        assert state in (before, after), f"step {step}: {name} killed={killed} left a state that is neither"
        outcome = "finished" if not killed else ("killed, after" if state == after != before else "killed, before")
        outcomes[outcome] += 1

    assert sum(outcomes.values()) >= 8, outcomes
    assert outcomes["killed, before"] + outcomes["killed, after"] >= 4, outcomes
    # a clean commit removes whatever the killed writers left behind
    assert run_and_kill(["optimize", str(index_dir)], 60)[0] is False
    assert run_and_kill(["add", str(index_dir), str(write_jsonl(tmp_path / "last.jsonl", {"z": "w1"}))], 60)[0] is False
    leftovers = sorted(p.name for p in index_dir.iterdir())
    assert len([n for n in leftovers if n.startswith("seg-")]) == len(leftovers) - 2, leftovers
    assert set(leftovers) - {n for n in leftovers if n.startswith("seg-")} == {"index.json", ".writer.lock"}
    assert observed(index_dir) == {**state, "z": "w1"}
