"""The API's changes to a damaged index (issue 28): ``Index.add``, ``delete`` and ``optimize`` (and a
sharded index's) on an index whose files were damaged after it was loaded raise the package's own
error, naming the damaged file, and change nothing; never ``IndexError``, ``ValueError``,
``MemoryError`` or a crash from damaged arrays (``Index.load(d).delete(["5"])`` with a byte flipped
near the end of a segment's ``offsets.npy`` raised ``IndexError: boolean index did not match``). The
changes read the index verified, whatever the loaded index was told: a file this process verified and
that has not changed since is not hashed again. Fuzzed as the command line's readers are
(tests/cli/test_bad_input.py): a flipped bit or a cut anywhere in any file, each change in turn."""
from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bm25lab.engine import BM25LabError, Index, ShardedIndex, Tokenizer, storage

WS = Tokenizer("whitespace", stopwords=None)
DOCS = [(f"d{i}", f"alpha beta w{i % 5} w{i % 3} x{i}") for i in range(40)]
CHANGES = {
    "add": lambda index: index.add([("n1", "alpha new"), ("d3", "a replacement")]),
    "delete": lambda index: index.delete(["d5", "d7"]),
    "optimize": lambda index: index.optimize(),
}


def _snapshot(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file() and p.name != ".writer.lock"}


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, Path]:
    """An index of two segments with deletions, and a sharded one of two shards alike."""
    root = tmp_path_factory.mktemp("damaged")
    index = Index.build(DOCS[:30], tokenizer=WS)
    index.save(root / "ordinary")
    index = Index.load(root / "ordinary")
    index.add(DOCS[30:])
    index.delete(["d1", "d2"])
    sharded = ShardedIndex.build(DOCS[:30], root / "sharded", 2, tokenizer=WS)
    sharded.add(DOCS[30:])
    sharded.delete(["d1", "d2"])
    return {"ordinary": root / "ordinary", "sharded": root / "sharded"}


def _damage(files: list[Path], pick: int, offset: int, bit: int, cut: bool) -> Path:
    victim = files[pick % len(files)]
    data = bytearray(victim.read_bytes())
    if cut:
        data = data[: offset % max(len(data), 1)]
    else:
        data[offset % len(data)] ^= 1 << bit
    victim.write_bytes(bytes(data))
    return victim


def _index_files(directory: Path) -> list[Path]:
    """Every file a change reads: the segments' files and deletions (the manifests' damage is caught
    before anything is loaded, by their checksums)."""
    return sorted(p for p in directory.rglob("*") if p.is_file() and (p.parent.name.startswith(("seg-", "stats-"))
                                                                        or p.name.startswith("del-")))


@settings(max_examples=90, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["ordinary", "sharded"]), change=st.sampled_from(sorted(CHANGES)),
       pick=st.integers(0, 200), offset=st.integers(0, 10**6), bit=st.integers(0, 7), cut=st.booleans(),
       loaded_verified=st.booleans())
def test_a_change_to_an_index_damaged_after_it_was_loaded_raises_the_packages_error(
        tmp_path_factory, sources, kind: str, change: str, pick: int, offset: int, bit: int, cut: bool,
        loaded_verified: bool) -> None:
    target = tmp_path_factory.mktemp("d") / kind
    shutil.copytree(sources[kind], target)
    opened = (ShardedIndex if kind == "sharded" else Index).load(target, verify=loaded_verified)
    victim = _damage(_index_files(target), pick, offset, bit, cut)
    before = _snapshot(target)
    with pytest.raises(BM25LabError) as raised:
        CHANGES[change](opened)
    assert "\n" not in str(raised.value)
    assert str(victim) in str(raised.value) or str(victim.parent) in str(raised.value), str(raised.value)
    assert _snapshot(target) == before


def test_the_issues_case_offsets_flipped_near_the_end(tmp_path: Path, sources) -> None:
    target = tmp_path / "index"
    shutil.copytree(sources["ordinary"], target)
    index = Index.load(target)
    offsets = sorted(target.glob("seg-*/offsets.npy"))[0]
    data = bytearray(offsets.read_bytes())
    data[-3] ^= 0x10
    offsets.write_bytes(bytes(data))
    with pytest.raises(BM25LabError, match=f"{offsets}: checksum mismatch"):
        index.delete(["d5"])


def test_a_file_verified_and_unchanged_is_not_hashed_again(tmp_path: Path, sources, monkeypatch) -> None:
    # the changes verify what they read; what this process verified, unchanged since (same inode, size and
    # times), is not hashed again: an API change costs no second pass over an index loaded verified
    target = tmp_path / "index"
    shutil.copytree(sources["ordinary"], target)
    monkeypatch.setattr(storage, "_SETTLED_NS", -10**12)  # files this new count as changed well before hashing
    hashed: list[str] = []
    real = storage._sha256_fd
    monkeypatch.setattr(storage, "_sha256_fd", lambda fd: hashed.append(os.readlink(f"/proc/self/fd/{fd}")) or real(fd))
    index = Index.load(target)
    first = set(hashed)
    assert len(first) == len(hashed) > 0
    hashed.clear()
    index.delete(["d5"])  # reads every segment verified: none is hashed again, only the new deletions file
    assert hashed and not set(hashed) & first and {Path(p).name.startswith("del-") for p in hashed} == {True}
    data = bytearray((victim := sorted(target.glob("seg-*/blocks.npy"))[0]).read_bytes())
    data[-1] ^= 1
    victim.write_bytes(bytes(data))  # a change moves the file's times: it is hashed again, and found damaged
    with pytest.raises(BM25LabError, match=f"{victim}: checksum mismatch"):
        index.delete(["d6"])
