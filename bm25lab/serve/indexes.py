"""The indexes a server serves, each always at its latest committed state.

A :class:`ServedIndex` keeps one loaded index (ordinary or sharded) and the identity of the manifest it
was loaded from (the file's inode, size and modification time: a commit replaces the manifest by a
rename, so each commit changes it). Every request asks for :meth:`ServedIndex.current`, which looks at
the manifest (one ``stat``) and, when another process has committed since, loads the index anew. The
engine's readers open every file a manifest names before reading any and re-read a manifest that
changed while they loaded (:meth:`bm25lab.engine.index.Index.load`), and an index object keeps its
files open: requests still searching the previous state finish on it, the next ones get the new one,
and none fails. One request reloads at a time; the others meanwhile search the state they had.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..engine.errors import BM25LabError, InputError

__all__ = ["Catalogue", "ServedIndex"]


def _manifest(path: Path) -> Path:
    from ..engine import storage
    from ..engine.shards import is_sharded

    return path / (storage.SHARDED_MANIFEST if is_sharded(path) else storage.MANIFEST)


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """The identity of the index's manifest now (None: unreadable)."""
    try:
        found = os.stat(_manifest(path))
    except OSError:
        return None
    return found.st_ino, found.st_size, found.st_mtime_ns


class ServedIndex:
    """One index folder, served by ``name`` at its latest committed state (see the module docstring)."""

    def __init__(self, name: str, path: Path, backend: str | None = None) -> None:
        self.name = name
        self.path = Path(path).absolute()
        self._backend = backend
        self._reloading = threading.Lock()
        self.reloads = 0
        self._stamp = _stamp(self.path)
        self._index = self._open(verify=True)
        self._keys: tuple[Any, list[str]] | None = None

    def _open(self, verify: bool) -> Any:
        from ..engine import Index
        from ..engine.shards import ShardedIndex, is_sharded

        kind = ShardedIndex if is_sharded(self.path) else Index
        return kind.load(self.path, verify=verify, backend=self._backend)

    def current(self) -> Any:
        """The index at its latest committed state: loaded anew when the manifest changed since (by
        this request, unless another is at it: then the state before, which its files still hold)."""
        stamp = _stamp(self.path)
        if stamp != self._stamp and self._reloading.acquire(blocking=False):
            try:
                if stamp != self._stamp:
                    try:
                        fresh = self._open(verify=False)
                    except BM25LabError:
                        return self._index  # a commit still under way, or damage: keep the state it had
                    self._index, self._stamp = fresh, stamp
                    self.reloads += 1
            finally:
                self._reloading.release()
        return self._index

    def metadata_keys(self, sample: int = 1000) -> list[str]:
        """The metadata keys of the index's first ``sample`` documents (for the page's filters), kept
        until the index changes."""
        index = self.current()
        if self._keys is None or self._keys[0] is not index:
            keys: set[str] = set()
            for i, document in enumerate(index.documents()):
                if i >= sample:
                    break
                keys.update(document.metadata)
            self._keys = (index, sorted(keys))
        return self._keys[1]

    def growth(self) -> Any:
        """The module that adds to and deletes from this index (ordinary or sharded) by committing."""
        from ..engine import segments, shards

        return shards if shards.is_sharded(self.path) else segments


class Catalogue:
    """The served indexes by name (the first is the default) and the runs and qrels the evaluation
    page offers, read when asked for and kept while their files do not change."""

    def __init__(self, indexes: Iterable[tuple[str, Path]], runs: Mapping[str, Path], qrels: Mapping[str, Path],
                 backend: str | None = None) -> None:
        self.indexes = {name: ServedIndex(name, path, backend) for name, path in indexes}
        self.default = next(iter(self.indexes))
        self.runs = dict(runs)
        self.qrels = dict(qrels)
        self._read: dict[tuple[str, str], tuple[tuple[int, int], Any]] = {}
        self._lock = threading.Lock()

    def index(self, name: str | None) -> ServedIndex:
        found = self.indexes.get(self.default if name is None else name)
        if found is None:
            raise LookupError(f"no index named {name!r}; served: {', '.join(self.indexes)}")
        return found

    def run(self, name: str) -> Any:
        from ..evaluation import read_run

        return self._file("run", self.runs, name, read_run)

    def qrel(self, name: str) -> Any:
        from ..evaluation import read_qrels

        return self._file("qrels", self.qrels, name, read_qrels)

    def _file(self, what: str, files: Mapping[str, Path], name: str, read: Any) -> Any:
        path = files.get(name)
        if path is None:
            raise LookupError(f"no {what} named {name!r}; offered: {', '.join(files) or 'none'}")
        try:
            found = os.stat(path)
        except OSError as exc:
            raise InputError(f"cannot read it: {exc.strerror}", path) from None
        stamp = (found.st_ino, found.st_mtime_ns)
        with self._lock:
            kept = self._read.get((what, name))
        if kept is not None and kept[0] == stamp:
            return kept[1]
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a note on the format guessed: the page shows no notes
            value = read(path)
        with self._lock:
            self._read[(what, name)] = (stamp, value)
        return value
