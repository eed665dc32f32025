"""Writes that fail for want of space: a full disk (a small tmpfs) and a file size limit (ulimit -f).

Every failed `index`, `add`, `delete` and `optimize` must say so in one line naming a file on the
disk that filled, exit 1, leave the index as it was and remove whatever it had written (so the disk
is as full as before and the next change works once there is room); a full $TMPDIR must not matter
(temporary data goes in the index's own folder, and SQLite keeps its temporary data in memory).

The tmpfs is mounted in a mount namespace of the scenario's own (`unshare --mount`, with
`--map-root-user` when not root): it exists only for that process tree and vanishes with it, even if
the test is killed. The commands are the installed entry point next to this interpreter.
"""
from __future__ import annotations

import json
import os
import random
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BM25LAB = str(Path(sys.executable).parent / "bm25lab")


def write_docs(path: Path, count: int, words: int, seed: int, prefix: str) -> Path:
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as out:
        for i in range(count):
            out.write(json.dumps({"id": f"{prefix}{i}", "text": " ".join(f"w{rng.randrange(3000)}" for _ in range(words))})
                      + "\n")
    return path


# Runs inside the namespace: mounts the tmpfs, runs the commands, reports what it saw as JSON.
SCENARIO = r"""
import json, os, subprocess, sys
from pathlib import Path
bm25lab, root, small, big = sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4]
disk, tmp = root / "disk", root / "tmp"
for folder, size in ((disk, "3m"), (tmp, "64k")):
    folder.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], check=True)
def run(*args, env=None):
    done = subprocess.run([bm25lab, *args], capture_output=True, text=True, env={**os.environ, **(env or {})})
    return {"code": done.returncode, "stderr": done.stderr.strip().splitlines(), "stdout": done.stdout}
def used():
    stat = os.statvfs(disk)
    return (stat.f_blocks - stat.f_bfree) * stat.f_frsize
def listing(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else None
def fill(path):
    with open(path, "wb", buffering=0) as out:
        try:
            while True:
                out.write(b"\0" * 4096)
        except OSError:
            pass
report = {}
ix = disk / "ix"
report["index small"] = run("index", small, "--out", str(ix), "--language", "whitespace")
before, space = listing(ix), used()
report["add big"] = run("add", str(ix), big)
report["after add"] = {"same": listing(ix) == before, "freed": used() == space, "listing": listing(ix)}
report["index big"] = run("index", big, "--out", str(disk / "new"), "--language", "whitespace")
report["after index"] = {"exists": (disk / "new").exists(), "freed": used() == space}
report["delete"] = run("delete", str(ix), "s1", "s2")
fill(disk / "fill")
before = listing(ix)
report["full delete"] = run("delete", str(ix), "s3")
report["full optimize"] = run("optimize", str(ix))
report["full add"] = run("add", str(ix), small)
report["after full"] = {"same": listing(ix) == before}
os.unlink(disk / "fill")
report["delete again"] = run("delete", str(ix), "s3")
report["optimize again"] = run("optimize", str(ix))
report["search"] = run("search", str(ix), "w1 w2", "--format", "json")
fill(tmp / "fill")
full_tmp = {"TMPDIR": str(tmp)}
report["tmp index"] = run("index", small, "--out", str(disk / "t"), "--language", "whitespace", env=full_tmp)
report["tmp add"] = run("add", str(disk / "t"), small, env=full_tmp)
report["tmp delete"] = run("delete", str(disk / "t"), "s5", env=full_tmp)
report["tmp optimize"] = run("optimize", str(disk / "t"), env=full_tmp)
report["final"] = {"ix": listing(ix), "t": listing(disk / "t")}
print(json.dumps(report))
"""


def namespace_command() -> list[str] | None:
    """How to run a process in a mount namespace of its own here, or None if this machine cannot."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    for command in ([unshare, "--mount"], [unshare, "--mount", "--map-root-user"]):
        probe = subprocess.run(command + ["sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt"], capture_output=True)
        if probe.returncode == 0:
            return command
    return None


def one_error(result: dict, *fragments: str) -> str:
    assert result["code"] == 1, result
    assert len(result["stderr"]) == 1 and result["stderr"][0].startswith("bm25lab: error: "), result
    assert "Traceback" not in result["stderr"][0] and "internal error" not in result["stderr"][0]
    for fragment in fragments:
        assert fragment in result["stderr"][0], (fragment, result["stderr"][0])
    return result["stderr"][0]


def only_index_files(listing: list[str]) -> bool:
    """Nothing but the index's manifest, lock, journal, segment folders and deletion files."""
    top = {name.split("/")[0] for name in listing}
    return all(n in ("index.json", ".writer.lock", ".writer.journal") or n.startswith(("seg-", "del-")) for n in top)


def test_a_full_disk(tmp_path: Path) -> None:
    namespace = namespace_command()
    if namespace is None:  # pragma: no cover - a machine without mount namespaces
        pytest.fail("cannot mount a tmpfs in a mount namespace here (unshare --mount); "
                    "test_a_file_size_limit covers the same failures with ulimit -f")
    small = write_docs(tmp_path / "small.jsonl", 300, 30, 1, "s")
    big = write_docs(tmp_path / "big.jsonl", 12000, 60, 2, "b")
    (tmp_path / "ns").mkdir()
    done = subprocess.run(namespace + [sys.executable, "-c", SCENARIO, BM25LAB, str(tmp_path / "ns"), str(small),
                                       str(big)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    disk = tmp_path / "ns" / "disk"
    assert report["index small"]["code"] == 0
    # the document store filled the disk: named, nothing left behind, the space given back
    one_error(report["add big"], f"{disk / 'ix'}/", "disk is full")
    assert report["after add"]["same"] and report["after add"]["freed"], report["after add"]
    one_error(report["index big"], f"{disk / 'new'}/", "disk is full")
    assert not report["after index"]["exists"] and report["after index"]["freed"]
    assert report["delete"]["code"] == 0  # the failed add left room for the next change
    # a disk full to the last byte: every change fails in one line naming its file, and changes nothing
    for step in ("full delete", "full optimize", "full add"):
        one_error(report[step], f"{disk / 'ix'}/")
    assert report["after full"]["same"]
    # room again: the changes go through, the index is whole
    assert report["delete again"]["code"] == 0 and report["optimize again"]["code"] == 0
    assert report["search"]["code"] == 0 and json.loads(report["search"]["stdout"])
    # a full $TMPDIR is never used
    for step in ("tmp index", "tmp add", "tmp delete", "tmp optimize"):
        assert report[step]["code"] == 0, (step, report[step])
    assert only_index_files(report["final"]["ix"]) and only_index_files(report["final"]["t"]), report["final"]


def _limited(limit: int):
    def set_limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return set_limit


def test_a_file_size_limit(tmp_path: Path) -> None:
    small = write_docs(tmp_path / "small.jsonl", 300, 30, 1, "s")
    big = write_docs(tmp_path / "big.jsonl", 8000, 60, 2, "b")
    ix = tmp_path / "ix"

    def run(*args: str, limit: int | None = 200_000) -> dict:
        done = subprocess.run([BM25LAB, *args], capture_output=True, text=True, timeout=300,
                              preexec_fn=_limited(limit) if limit else None)
        return {"code": done.returncode, "stderr": done.stderr.strip().splitlines(), "stdout": done.stdout}

    assert run("index", str(small), "--out", str(ix), "--language", "whitespace")["code"] == 0
    before = sorted(p.relative_to(ix) for p in ix.rglob("*"))
    message = one_error(run("add", str(ix), str(big)), f"{ix}/", "ulimit -f")
    assert "200,000 bytes" in message
    one_error(run("index", str(big), "--out", str(tmp_path / "new"), "--language", "whitespace"), f"{tmp_path / 'new'}/")
    assert not (tmp_path / "new").exists()
    assert sorted(p.relative_to(ix) for p in ix.rglob("*")) == before
    assert run("delete", str(ix), "s1")["code"] == 0 and run("optimize", str(ix))["code"] == 0
    assert run("add", str(ix), str(big), limit=None)["code"] == 0
    # a merge bigger than the limit: refused in one line, the index as it was
    assert run("delete", str(ix), "b1")["code"] == 0
    before = sorted(p.relative_to(ix) for p in ix.rglob("*"))
    one_error(run("optimize", str(ix), limit=400_000), f"{ix}/")
    assert sorted(p.relative_to(ix) for p in ix.rglob("*")) == before
    assert os.path.getsize(ix / "index.json") > 0 and run("search", str(ix), "w1", limit=None)["code"] == 0


def test_a_file_size_limit_on_a_sharded_index(tmp_path: Path) -> None:
    # the same for a sharded index: its build stages partitions, its changes write into its shards, in
    # scratch folders inside the index folder; a failed write names its file and leaves nothing behind
    small = write_docs(tmp_path / "small.jsonl", 300, 30, 1, "s")
    big = write_docs(tmp_path / "big.jsonl", 8000, 60, 2, "b")
    sx = tmp_path / "sx"

    def run(*args: str, limit: int | None = 200_000) -> dict:
        done = subprocess.run([BM25LAB, *args], capture_output=True, text=True, timeout=300,
                              preexec_fn=_limited(limit) if limit else None)
        return {"code": done.returncode, "stderr": done.stderr.strip().splitlines(), "stdout": done.stdout}

    sharded = ["--language", "whitespace", "--shards", "2", "--workers", "1"]
    assert run("index", str(small), "--out", str(sx), *sharded)["code"] == 0
    before = sorted(p.relative_to(sx) for p in sx.rglob("*"))
    message = one_error(run("add", str(sx), str(big), "--workers", "1"), f"{sx}/", "ulimit -f")
    assert "200,000 bytes" in message
    assert sorted(p.relative_to(sx) for p in sx.rglob("*")) == before
    one_error(run("index", str(big), "--out", str(tmp_path / "new"), *sharded), f"{tmp_path / 'new'}/")
    assert not (tmp_path / "new").exists()
    assert run("add", str(sx), str(big), "--workers", "1", limit=None)["code"] == 0
    assert run("delete", str(sx), "b1", "s1")["code"] == 0
    before = sorted(p.relative_to(sx) for p in sx.rglob("*"))
    one_error(run("optimize", str(sx), limit=400_000), f"{sx}/")  # a merge bigger than the limit
    assert sorted(p.relative_to(sx) for p in sx.rglob("*")) == before
    assert run("search", str(sx), "w1", limit=None)["code"] == 0
    assert run("optimize", str(sx), limit=None)["code"] == 0
