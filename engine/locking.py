"""The writer's lock of an index directory.

One writer at a time: a change (``add``, ``delete``, ``optimize``, ``save``, ``index --overwrite``)
holds an exclusive ``flock`` on ``<index>/.writer.lock`` while it commits, with its process id
written inside so that a second writer can say who holds it. Readers take no lock: they read the
manifest, which is replaced atomically, and open every file it names before reading any
(:mod:`bm25lab.engine.storage`).

The kernel releases a ``flock`` when its holder exits, however it exits, so a writer killed with
``kill -9`` leaves no stale lock behind (the file stays; its content is only a hint). Never delete
the lock file by hand while a writer runs: a new file would be a new lock. The lock file is opened
as every file of an index folder is (:mod:`bm25lab.engine.files`): a link, a FIFO or anything but a
regular file in its place is refused, never followed or waited on.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .errors import IndexLockedError
from .files import open_file

LOCK_FILE = ".writer.lock"


def _locked(directory: Path, fd: int) -> IndexLockedError:
    """The error for a lock held by someone else, naming the process id written in the lock file."""
    try:
        text = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
    except OSError:
        text = ""
    holder = f"process {text}" if text.isdigit() else "another process"
    return IndexLockedError(f"{directory}: index is locked by {holder} (another change is being written); "
                            f"try again when it has finished")


def check_unlocked(directory: Path) -> None:
    """Raise IndexLockedError if a writer holds ``directory``'s lock now; changes nothing on disk
    (a writer checks this before its long work, and takes the lock only to commit)."""
    import fcntl

    try:
        fd = open_file(directory / LOCK_FILE)
    except OSError:  # no lock file: nobody has ever held the lock (a file that is no lock file is refused)
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
    except BlockingIOError:
        raise _locked(directory, fd) from None
    finally:
        os.close(fd)


def _hint(fd: int, text: str) -> None:
    """Write who holds the lock into it: only a hint, so a full disk does not stop the change."""
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, text.encode("ascii"), 0)
    except OSError:
        pass


@contextmanager
def write_lock(directory: Path) -> Iterator[None]:
    """Hold the writer's lock of ``directory`` (which must exist) for the ``with`` block.

    Raises :class:`~bm25lab.engine.errors.IndexLockedError` at once, without waiting, when another writer
    (in this process or any other) holds it.
    """
    import fcntl

    fd = open_file(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise _locked(directory, fd) from None
        try:
            _hint(fd, f"{os.getpid()}\n")
            yield
        finally:
            _hint(fd, "")
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
