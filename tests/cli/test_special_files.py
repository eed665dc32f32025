"""Special files in an index folder (issue 28): a symbolic link (to a file outside the folder, or inside
it), a FIFO, a folder or a socket in the place of each file that bm25lab reads or writes there (the
lock, the journal, the manifests, a segment's arrays, texts and store, a deletions file, a scratch
folder's marker; a shard's and the statistics' folders and files of a sharded index), and a link, a
FIFO, a file or a socket in the place of a segment, shard or statistics folder. Every command that
uses it (index --overwrite, add, delete, optimize, search, info, run, on ordinary and sharded
indexes) refuses it in one line naming it, exit code 1, no traceback, and leaves the index folder as
it was; a command that does not use it succeeds, and so does ``experiment``, which rebuilds a damaged
cached index; nothing bm25lab would reach through a link
changes (bytes and modification time); nothing waits on a FIFO.

Each kind of file runs in a subprocess of its own (this module as a script: ``python
test_special_files.py KIND FIXTURES``), which runs every case with typer's CliRunner on a fresh copy
of the indexes built once, and prints a JSON line per case; the subprocess has a timeout, so a
command that hangs fails the test, naming the case it was running.
"""
from __future__ import annotations

import gc
import hashlib
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

KINDS = ("symlink-outside", "symlink-inside", "fifo", "folder", "socket")
WRITERS = ("index", "add", "delete", "optimize")
READERS = ("search", "info", "run")
COMMANDS = WRITERS + READERS
_TIMEOUT = 600  # seconds for one kind's every case: a hang, not a slow machine, reaches it


# ---------------------------------------------------------------------- the cases
def _first(folder: Path, pattern: str) -> Path:
    return sorted(folder.glob(pattern))[0]


# role -> (where it is, in the index folder, and which commands use it: those refuse it, the others succeed)
ORDINARY: dict[str, tuple[Callable[[Path], Path], tuple[str, ...]]] = {
    "lock": (lambda d: d / ".writer.lock", WRITERS),
    "journal": (lambda d: d / ".writer.journal", WRITERS),
    "manifest": (lambda d: d / "index.json", COMMANDS),
    "segment folder": (lambda d: _first(d, "seg-*"), COMMANDS[1:]),
    "array": (lambda d: _first(d, "seg-*") / "offsets.npy", COMMANDS[1:]),
    "store": (lambda d: _first(d, "seg-*") / "docs.sqlite", COMMANDS[1:]),
    "terms": (lambda d: _first(d, "seg-*") / "terms.txt", COMMANDS[1:]),
    "ids": (lambda d: _first(d, "seg-*") / "doc_ids.json", COMMANDS[1:]),
    "deletions": (lambda d: _first(d, "del-*.npy"), COMMANDS[1:]),
    "scratch marker": (lambda d: d / ".bm25lab-scratch-0123abcd" / ".bm25lab-scratch", ()),
}
SHARDED: dict[str, tuple[Callable[[Path], Path], tuple[str, ...]]] = {
    "lock": (lambda d: d / ".writer.lock", WRITERS),
    "journal": (lambda d: d / ".writer.journal", WRITERS),
    "manifest": (lambda d: d / "shards.json", COMMANDS),
    "shard folder": (lambda d: _first(d, "shard-*"), COMMANDS[1:]),
    "statistics folder": (lambda d: _first(d, "stats-*"), COMMANDS[1:]),
    "statistics array": (lambda d: _first(d, "stats-*") / "df.npy", COMMANDS[1:]),
    "shard manifest": (lambda d: _first(d, "shard-*") / "index.json", WRITERS[1:]),
    "shard journal": (lambda d: _first(d, "shard-*") / ".writer.journal", WRITERS[1:]),
    "shard store": (lambda d: _first(_first(d, "shard-*"), "seg-*") / "docs.sqlite", COMMANDS[1:]),
    "shard array": (lambda d: _first(_first(d, "shard-*"), "seg-*") / "blocks.npy", COMMANDS[1:]),
}
# ``experiment`` reads its collection's cached index (one segment, no deletions): a damaged one it rebuilds
# (the cache's own folder, removed without following a link), so it succeeds whatever is planted there
EXPERIMENT_ROLES = tuple(role for role in ORDINARY if role != "deletions")


def _args(command: str, index: Path, fixtures: Path, sharded: bool) -> list[str]:
    out = fixtures / "out.run"
    return {"index": ["index", str(fixtures / "docs.jsonl"), "--out", str(index), "--overwrite", "--language",
                      "whitespace", *(["--shards", "2"] if sharded else [])],
            "add": ["add", str(index), str(fixtures / "more.jsonl")],
            "delete": ["delete", str(index), "d3"],
            "optimize": ["optimize", str(index)],
            "search": ["search", str(index), "alpha w1", "-k", "3"],
            "info": ["info", str(index)],
            "run": ["run", str(index), str(fixtures / "queries.tsv"), "--out", str(out), "-k", "5"],
            "experiment": ["experiment", str(fixtures / "collection"), "-m", "P@5"]}[command]


# ---------------------------------------------------------------------- the driver (a subprocess per kind)
def _state(path: Path) -> dict[str, tuple]:
    """Every entry under ``path`` (itself included), links not followed: its kind, and a file's bytes'
    SHA-256 and modification time."""
    entries = {}
    if not os.path.lexists(path):
        return {str(path.name): ("missing",)}
    for entry in [path, *sorted(path.rglob("*"))] if path.is_dir() and not path.is_symlink() else [path]:
        info = entry.lstat()
        if stat.S_ISREG(info.st_mode):
            entries[str(entry.relative_to(path.parent))] = ("file", hashlib.sha256(entry.read_bytes()).hexdigest(),
                                                            info.st_mtime_ns)
        else:
            entries[str(entry.relative_to(path.parent))] = (stat.S_IFMT(info.st_mode),
                                                            os.readlink(entry) if entry.is_symlink() else "")
    return entries


def _index_state(index: Path) -> dict[str, tuple]:
    """The index folder's entries as :func:`_state` gives them, without times (a refused command may
    touch nothing, but reading a file is no change) and the lock's content (only a hint)."""
    return {name: value[:2] for name, value in _state(index).items() if not name.endswith(".writer.lock")}


def _plant(kind: str, place: Path, index: Path, elsewhere: Path) -> Path | None:
    """Put a file of ``kind`` at ``place`` (whatever was there moved aside: to ``elsewhere`` for a link
    outside, so that following the link would find it); returns the target a link points to."""
    folder_role = place.is_dir()
    moved = elsewhere / f"original-{place.name}"
    if place.exists() or place.is_symlink():
        if place.is_dir():
            shutil.move(str(place), moved)
        else:
            place.replace(moved)
    else:  # a scratch folder's marker: a scratch folder that looks abandoned, its marker this file
        place.parent.mkdir(parents=True, exist_ok=True)
        moved.write_bytes(b"")
    if kind == "symlink-outside":
        target = moved
        if not folder_role and place.name in (".writer.lock", ".writer.journal"):
            target.write_bytes(b"precious: another program's data\n")
        place.symlink_to(target, target_is_directory=folder_role)
        return target
    if kind == "symlink-inside":
        target = index / ("foreign-folder" if folder_role else "notes.txt")
        if not target.exists():
            if folder_role:
                shutil.copytree(moved, target)
            else:
                target.write_bytes(b"the user's own notes, in the index folder\n")
        place.symlink_to(target, target_is_directory=folder_role)
        return target
    if kind == "fifo":
        os.mkfifo(place)
    elif kind == "folder":
        if folder_role:
            place.write_bytes(b"a file where a folder belongs\n")
        else:
            place.mkdir()
    elif kind == "socket":
        here = os.getcwd()
        os.chdir(place.parent)  # a socket's path is limited to 108 bytes: bound by its name
        try:
            with socket.socket(socket.AF_UNIX) as sock:
                sock.bind(place.name)
        finally:
            os.chdir(here)
    return None


def _drive(kind: str, fixtures: Path) -> None:
    """Run every case of ``kind`` and print a JSON line per case (a line ``START ...`` before each, so
    that a hang names its case)."""
    from typer.testing import CliRunner

    from bm25lab.cli import app

    runner = CliRunner()
    work = fixtures / f"work-{kind}"
    cases = [(False, role) for role in ORDINARY] + [(True, role) for role in SHARDED]
    for sharded, role in cases:
        where, users = (SHARDED if sharded else ORDINARY)[role]
        commands = COMMANDS + (("experiment",) if not sharded and role in EXPERIMENT_ROLES else ())
        for command in commands:
            print(f"START {kind} {'sharded' if sharded else 'ordinary'} {role} {command}", file=sys.stderr, flush=True)
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir()
            elsewhere = work / "elsewhere"
            elsewhere.mkdir()
            if command == "experiment":
                cache = work / "cache"
                shutil.copytree(fixtures / "cache", cache, symlinks=True)
                os.environ["BM25LAB_CACHE_DIR"] = str(cache)
                index = _first(cache / "indexes", "*")
            else:
                index = work / "index"
                shutil.copytree(fixtures / ("sharded" if sharded else "ordinary"), index, symlinks=True)
            place = where(index)
            target = _plant(kind, place, index, elsewhere)
            watched = {} if target is None else _state(target)
            before = _index_state(index)
            result = runner.invoke(app, _args(command, index, fixtures, sharded))
            error = repr(result.exception) if not isinstance(result.exception, (SystemExit, type(None))) else None
            code, output, stderr = result.exit_code, result.output, result.stderr
            del result
            if command == "index" and code != 0:
                gc.collect()  # as the process's exit would: what the failed build held (its scratch folder) goes
            after = _index_state(index)
            lines = [line for line in stderr.splitlines() if line.strip()]
            print(json.dumps({
                "sharded": sharded, "role": role, "command": command, "place": str(place), "code": code,
                "stderr": lines, "traceback": "Traceback" in output + stderr or error is not None, "error": error,
                # experiment removes a damaged cached index's folder, a file inside it too, and builds it again
                "target_unchanged": target is None or _state(target) == watched or (
                    command == "experiment" and kind == "symlink-inside" and not os.path.lexists(target)),
                "index_unchanged": after == before,
                "index_changes": sorted(name for name in set(before) | set(after) if before.get(name) != after.get(name)),
                "uses": command in users,
            }), flush=True)


if __name__ == "__main__":
    _drive(sys.argv[1], Path(sys.argv[2]))
    sys.exit(0)


# ---------------------------------------------------------------------- the tests
DOCS = [{"id": f"d{i}", "title": f"T{i}", "text": f"alpha beta w{i % 4} w{i % 3}"} for i in range(16)]


def _jsonl(path: Path, docs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(doc) + "\n" for doc in docs), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory) -> Path:
    """An ordinary index of two segments with deletions, a sharded index of two shards (the first of
    two segments with deletions), their inputs, and an experiment's collection with its cached index."""
    from typer.testing import CliRunner

    from bm25lab.cli import app

    root = tmp_path_factory.mktemp("special")
    runner = CliRunner()
    _jsonl(root / "docs.jsonl", DOCS)
    _jsonl(root / "more.jsonl", [{"id": "d1", "text": "gamma"}, {"id": "n1", "text": "delta w1"}])
    (root / "queries.tsv").write_text("q1\talpha w1\nq2\tbeta w2\n", encoding="utf-8")
    for name, extra in (("ordinary", []), ("sharded", ["--shards", "2"])):
        done = runner.invoke(app, ["index", str(root / "docs.jsonl"), "--out", str(root / name), "--language",
                                   "whitespace", *extra])
        assert done.exit_code == 0, done.output
        for args in (["add", str(root / name), str(root / "more.jsonl")], ["delete", str(root / name), "d5", "d6"]):
            done = runner.invoke(app, args)
            assert done.exit_code == 0, done.output
    collection = root / "collection"
    collection.mkdir()
    _jsonl(collection / "docs.jsonl", DOCS)
    (collection / "queries.tsv").write_text("1\talpha w1\n2\tbeta\n", encoding="utf-8")
    (collection / "qrels").write_text("1 0 d1 1\n2 0 d2 1\n", encoding="utf-8")
    environment = dict(os.environ, BM25LAB_CACHE_DIR=str(root / "cache"))
    done = subprocess.run([sys.executable, "-m", "bm25lab", "experiment", str(collection), "-m", "P@5"], env=environment,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (root / "cache" / "jieba").exists()  # whatever else the cache holds is copied with it
    return root


def _run_kind(kind: str, fixtures: Path) -> list[dict] | str:
    """The results of ``kind``'s cases, or what went wrong with its subprocess."""
    try:
        done = subprocess.run([sys.executable, __file__, kind, str(fixtures)], capture_output=True, text=True,
                              timeout=_TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        started = [line for line in (exc.stderr or b"").decode(errors="replace").splitlines() if line.startswith("START")]
        return f"{kind}: no answer within {_TIMEOUT} s: {started[-1] if started else 'before the first case'}"
    if done.returncode != 0:
        return f"{kind}: the driver failed: {done.stderr[-3000:]}"
    return [json.loads(line) for line in done.stdout.splitlines()]


def _problems(kind: str, results: list[dict]) -> list[str]:
    if len(results) != (len(ORDINARY) + len(SHARDED)) * len(COMMANDS) + len(EXPERIMENT_ROLES):
        return [f"{kind}: {len(results)} cases ran"]
    problems = []
    for r in results:
        case = f"{kind}: {'sharded' if r['sharded'] else 'ordinary'} {r['role']} / {r['command']}"
        if r["traceback"] or not r["target_unchanged"] or (r["code"] != 0 and len(r["stderr"]) != 1):
            problems.append(f"{case}: {r}")
        elif r["uses"]:
            refused = (r["code"] == 1 and r["stderr"][0].startswith("bm25lab: error: ") and r["place"] in r["stderr"][0])
            if not refused or not r["index_unchanged"]:
                problems.append(f"{case}: expected a refusal naming {r['place']} and nothing changed: {r}")
        elif r["code"] != 0:
            problems.append(f"{case}: does not use the file, expected success: {r}")
    return problems


def test_a_special_file_is_refused_never_followed_nor_waited_on(fixtures: Path) -> None:
    # the kinds in two subprocesses at a time (each runs its cases one by one)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:
        outcomes = dict(zip(KINDS, pool.map(lambda kind: _run_kind(kind, fixtures), KINDS)))
    problems = []
    for kind, outcome in outcomes.items():
        problems += [outcome] if isinstance(outcome, str) else _problems(kind, outcome)
    assert not problems, "\n".join(problems)
