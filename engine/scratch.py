"""Scratch folders: where a build, an add or a merge keeps its temporary files while it works.

A scratch folder is made in a parent folder: the index directory a change is written to (so that a
full disk is the index's own disk, and the finished segment is renamed into place rather than
copied), or the system's temporary folder for an index that lives in memory only. It is named
``bm25lab-scratch-<random>`` (``.bm25lab-scratch-<random>`` inside an index directory) and holds a
marker file, ``.bm25lab-scratch``, on which its process keeps an exclusive ``flock`` for as long as
the folder is in use. The kernel releases a ``flock`` when its holder exits, however it exits, so
the folder of a process killed with ``kill -9`` is recognisable as abandoned: whoever makes a new
scratch folder in the same parent first removes the abandoned ones. Nothing else is ever removed:
a folder without the marker (someone else's, whatever its name) or with the marker held stays.

A folder is made under a name of its own, ``[.]bm25lab-scratch-making-<random>``, and renamed to its
scratch name once its marker is in it and locked, so that a process killed in between leaves no
marker-less folder under a scratch name. A making folder whose marker (or the marker's ``.new``
file, while it is being locked) nobody holds is abandoned too; its maker, if alive, starts again.

A folder is removed (by its process, or as abandoned) by first renaming it to ``<name>-removing``, then
emptying that: whoever still uses it by its old name (its maker going on, a task that outlived its
build) gets an error instead of writing into what is being removed.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from pathlib import Path

MARKER = ".bm25lab-scratch"
_PREFIX = "bm25lab-scratch-"
_MAKING = "making-"  # after the prefix: a folder whose marker is being put in place
_ATTEMPTS = 8  # makings another process may take away (as abandoned) before this one gives up
_REMOVING = "-removing"  # after a folder's name while it is removed


def is_scratch_name(name: str) -> bool:
    """Whether ``name`` is a scratch folder's name (its marker decides whether it is one)."""
    return name.startswith((_PREFIX, f".{_PREFIX}"))


def held(folder: Path) -> bool | None:
    """Whether a live process holds ``folder``'s marker: True, False (abandoned), or None when
    ``folder`` has no marker (not a scratch folder; never to be touched). A making folder (see the
    module docstring) without a held marker is abandoned."""
    making = folder.name.lstrip(".").startswith(_PREFIX + _MAKING)
    # the ".new" first: it becomes the marker by a rename, locked throughout, so one of the two is seen held
    for name in (f"{MARKER}.new", MARKER) if making else (MARKER,):
        state = _marker_held(folder / name)
        if state is not None:
            return state
    return False if making else None


def _marker_held(marker: Path) -> bool | None:
    """Whether a live process holds the ``flock`` of ``marker``; None when there is no such file, or
    something else than a regular file (a link, a FIFO: :func:`bm25lab.engine.files.open_file`) is there."""
    import fcntl

    from .errors import IndexFormatError
    from .files import open_file

    try:
        fd = open_file(marker)
    except (OSError, IndexFormatError):
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def remove_abandoned(parent: Path) -> list[str]:
    """Remove the scratch folders in ``parent`` that no live process holds; returns their names."""
    removed = []
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return removed
    for entry in entries:
        if not is_scratch_name(entry.name) or not entry.is_dir(follow_symlinks=False):
            continue
        if held(Path(entry.path)) is False:
            # renamed first: a maker that goes on after the check (a making folder looks abandoned until
            # its marker is locked) then fails and starts again, instead of losing what it writes next
            # under its new name to this removal
            gone = Path(entry.path).with_name(entry.name + _REMOVING)
            try:
                os.rename(entry.path, gone)
            except OSError:
                continue  # its maker renamed it meanwhile, or another remover took it
            shutil.rmtree(gone, ignore_errors=True)
            removed.append(entry.name)
    return removed


class Scratch:
    """A scratch folder of this process in ``parent`` (default: the system's temporary folder),
    removed by :meth:`cleanup` or when the object is collected, and by the next process that makes
    one in the same parent if this one is killed."""

    def __init__(self, parent: str | Path | None = None) -> None:
        import fcntl

        where = Path(parent) if parent is not None else Path(tempfile.gettempdir())
        remove_abandoned(where)
        prefix = _PREFIX if parent is None else f".{_PREFIX}"  # hidden among an index's own files
        for attempt in range(_ATTEMPTS):
            try:
                making = Path(tempfile.mkdtemp(prefix=prefix + _MAKING, dir=where))
            except OSError as exc:
                raise OSError(exc.errno, exc.strerror, str(where)) from None
            fd = -1
            try:  # the marker appears under its name already locked: nobody can find it unheld meanwhile
                fd = os.open(making / f"{MARKER}.new", os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
                fcntl.flock(fd, fcntl.LOCK_EX)  # a new file nobody else has opened: never blocks
                os.rename(making / f"{MARKER}.new", making / MARKER)
                path = where / (prefix + making.name[len(prefix + _MAKING):])
                os.rename(making, path)  # a new random name: taken only if someone made it meanwhile
            except OSError as exc:
                if fd >= 0:
                    os.close(fd)
                shutil.rmtree(making, ignore_errors=True)
                if isinstance(exc, FileNotFoundError) and attempt + 1 < _ATTEMPTS:
                    continue  # another process took the folder for abandoned before its marker was held
                raise OSError(exc.errno, exc.strerror, str(making / MARKER)) from None
            break
        self.path = path
        self._finalizer = weakref.finalize(self, _remove, self.path, fd)

    @property
    def name(self) -> str:
        return str(self.path)

    def cleanup(self) -> None:
        """Remove the folder and everything in it (once; later calls do nothing)."""
        self._finalizer()


def _remove(path: Path, fd: int) -> None:
    # first renamed (still a scratch name, its marker still held), so that a writer who still uses the
    # folder's path (a task of a cluster build that outlived its build) can add nothing to what is removed
    gone = path.with_name(path.name + _REMOVING)
    try:
        try:
            os.rename(path, gone)
        except OSError:
            gone = path
        shutil.rmtree(gone, ignore_errors=True)  # while the marker is still held: no other remover races us
    finally:
        os.close(fd)
