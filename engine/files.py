"""Opening the files of an index folder: regular files only, never through a symbolic link.

An index folder holds what bm25lab wrote there: regular files (the manifest, the lock, the journal,
``.npy`` arrays, texts, SQLite stores) and real folders (segments, shards, statistics). Anything else
in the place of one of them (a symbolic link, to a file outside the folder or inside it, a FIFO, a
socket, a device, a folder where a file belongs) is refused before a byte is read or written, with an
:class:`~bm25lab.engine.errors.IndexFormatError` naming it: a writer that followed a link to the lock
file would truncate whatever it points to, and a reader that opened a FIFO would wait for a writer
that never comes. This module is the one place that opens them; every reader and writer of an index
folder goes through it.

- :func:`open_file` opens with ``O_NOFOLLOW | O_NONBLOCK`` (a link is refused by the kernel itself, a
  FIFO opens without waiting), then ``fstat``s the descriptor: anything but a regular file is closed
  and refused. Given the index folder (``root``), every folder between it and the file is opened the
  same way (``O_DIRECTORY | O_NOFOLLOW``, one below the other by descriptor), so that a linked segment
  or shard folder is refused too, and nothing can swap a folder for a link in between. A file opened
  for writing must also have no other hard link: writing it would change the other name's content.
- :func:`create_file` makes a new file (``O_EXCL``: never an existing name, link or not).
- :func:`check_folder` refuses a folder of the index that is not a real folder (before a writer
  writes into it by its path).
- SQLite opens a store by its path itself, so :func:`bm25lab.engine.segments.open_store` opens the
  file here first (checked), lets SQLite open it, and checks that the path still names that very file.

The index folder itself (``root``) is the user's to name, through a link or not.
"""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from .errors import IndexFormatError

__all__ = ["check_folder", "create_file", "open_file", "read_file", "refused", "write_file"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_OPEN = _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | _CLOEXEC
_FOLDER = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC
_WRITING = os.O_WRONLY | os.O_RDWR


def _kind(mode: int) -> str:
    """What a file of ``mode`` is, in words."""
    for test, name in ((stat.S_ISREG, "a file"), (stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a folder"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a device")):
        if test(mode):
            return name
    return "a special file"


def refused(path: Path, kind: str, expected: str = "a regular file") -> IndexFormatError:
    """The error for ``path`` being ``kind`` where the index holds ``expected``."""
    return IndexFormatError(f"{path}: {kind}, not {expected}; bm25lab neither follows nor uses it (an index folder "
                            f"holds only its own files: remove it, or rebuild the index)")


def _open_error(path: Path, exc: OSError, expected: str) -> OSError | IndexFormatError:
    """The refusal an ``open`` failure means (a link, a FIFO or socket opened for writing, a folder), or
    the error itself (missing, permissions, ...) naming ``path``."""
    if exc.errno in (errno.ELOOP, errno.EMLINK, errno.ENXIO, errno.EISDIR, errno.ENOTDIR, errno.EOPNOTSUPP,
                     errno.ENODEV):
        try:
            kind = _kind(os.lstat(path).st_mode)
        except OSError:
            kind = "a special file"
        return refused(path, kind, expected)
    return OSError(exc.errno, exc.strerror, str(path))


def _folder_fd(root: Path, inner: tuple[str, ...]) -> int:
    """A descriptor of the folder ``root/inner...``: ``root`` as named, each inner folder opened
    below the last without following a link."""
    fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
    at = root
    try:
        for name in inner:
            at = at / name
            try:
                below = os.open(name, _FOLDER, dir_fd=fd)
            except OSError as exc:
                raise _open_error(at, exc, "a folder") from None
            os.close(fd)
            fd = below
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_file(path: Path, flags: int = os.O_RDONLY, mode: int = 0o644, *, root: Path | None = None) -> int:
    """An open descriptor of the regular file ``path`` (``flags`` as ``os.open``'s; ``O_TRUNC`` is not
    taken: truncate after the checks). Raises :class:`IndexFormatError` naming ``path`` when it is a
    link, or anything but a regular file (or, opened for writing, has another hard link); a missing file
    or another failure is the ``OSError`` naming it. With ``root`` (the index folder, holding ``path``),
    no folder between them may be a link either."""
    assert not flags & os.O_TRUNC, "truncate after the checks"
    path = Path(path)
    inner: tuple[str, ...] = ()
    if root is not None:
        inner = path.relative_to(root).parts[:-1]
    folder = _folder_fd(root, inner) if root is not None else None
    try:
        try:
            fd = os.open(path.name if folder is not None else path, flags | _OPEN, mode, dir_fd=folder)
        except OSError as exc:
            raise _open_error(path, exc, "a regular file") from None
    finally:
        if folder is not None:
            os.close(folder)
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise refused(path, _kind(status.st_mode))
        if flags & _WRITING and status.st_nlink > 1:
            raise IndexFormatError(f"{path}: a file with {status.st_nlink} names (hard links); bm25lab does not "
                                   f"write a file that another name shares (remove it, or rebuild the index)")
    except BaseException:
        os.close(fd)
        raise
    return fd


def create_file(path: Path, mode: int = 0o644) -> int:
    """A descriptor of the new, empty file ``path``, open for writing; any existing entry of that name
    (a link included) is an error (``FileExistsError``)."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, mode)


def read_file(path: Path, *, root: Path | None = None) -> bytes:
    """The bytes of the regular file ``path`` (:func:`open_file`'s checks)."""
    fd = open_file(path, root=root)
    try:
        with os.fdopen(os.dup(fd), "rb") as stream:
            return stream.read()
    finally:
        os.close(fd)


def write_file(path: Path, data: bytes) -> None:
    """Write ``data`` as the new file ``path`` (:func:`create_file`), synced."""
    fd = create_file(path)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


def check_folder(path: Path) -> None:
    """Raise :class:`IndexFormatError` unless ``path`` is a real folder (not a link to one); a missing
    one is the ``FileNotFoundError``."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    if not stat.S_ISDIR(mode):
        raise refused(path, _kind(mode), "a folder")
