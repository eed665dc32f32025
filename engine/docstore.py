"""The document store: titles, texts and metadata in one SQLite file per segment (standard library only).

Table ``docs(num INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, title TEXT, text TEXT, meta TEXT)``,
``num`` being the segment's document number and ``meta`` a JSON object. Results read titles and
snippets from here, so a saved index shows them without the original corpus.

A store never changes once written. :class:`DocStore` reads one segment's store and hides the
documents deleted from that segment; :class:`SegmentedStore` reads an index made of several segments,
where each id has at most one live document. A store's file is opened when the reader is created and
stays open, so a writer that removes an obsolete segment later does not take it from under a reader.
"""
from __future__ import annotations

import errno
import json
import queue
import sqlite3
import threading
from contextlib import contextmanager
from itertools import count
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from .records import Document

_SCHEMA = "CREATE TABLE docs (num INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, title TEXT, text TEXT, meta TEXT)"
_BATCH = 500  # ids per IN (...) query: below SQLite's variable limit
_PAGE = 2048  # rows per page when iterating
_WRITE_ROWS, _WRITE_CHARS = 1000, 1 << 23  # a writer inserts when either many rows or much text is pending
_QUEUED_BATCHES = 2  # batches a writer's caller may be ahead of its inserting thread
_SQLITE_FULL = 13  # SQLITE_FULL: "database or disk is full"


Fields = tuple[str, str, str, str]  # a row without its number: (id, title, text, meta JSON)


def fields(doc: Document) -> Fields:
    """The store row of ``doc``, without its number."""
    return doc.id, doc.title, doc.text, json.dumps(dict(doc.metadata), ensure_ascii=False) if doc.metadata else ""


class DocStoreWriter:
    """Appends documents to a new store file; :meth:`close` commits.

    Rows are inserted by a thread of the writer's own, a batch at a time, while the caller goes on
    (SQLite lets go of the GIL while it writes; the builder's kernels too); at most
    ``_QUEUED_BATCHES`` batches wait for it. An error of the insert is raised by the next
    :meth:`add_columns`/:meth:`add_row` that writes, or by :meth:`close`.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        with self._naming_path():
            self._db = sqlite3.connect(path, check_same_thread=False)  # by one thread at a time
            try:
                self._db.execute("PRAGMA journal_mode=OFF")
                self._db.execute("PRAGMA synchronous=OFF")
                self._db.execute("PRAGMA temp_store=MEMORY")  # nothing in $TMPDIR: the store's own disk only
                self._db.execute(_SCHEMA)
            except BaseException:
                self._db.close()
                raise
        self._rows: list[tuple[int, str, str, str, str]] = []
        self._pending_chars = 0
        self._queue: queue.Queue[list[tuple[int, str, str, str, str]] | None] = queue.Queue(_QUEUED_BATCHES)
        self._inserting: threading.Thread | None = None
        self._error: BaseException | None = None
        self._error_raised = False

    def add_columns(self, first: int, ids: Iterable[str], titles: Iterable[str], texts: Iterable[str],
                    metas: Iterable[str]) -> None:
        """Add documents ``first``, ``first + 1``, ... from columns of their fields (the shortest
        column gives their number; the others may be endless, e.g. ``itertools.repeat("")``), and
        hand them to the inserting thread."""
        self._rows.extend(zip(count(first), ids, titles, texts, metas))
        self._write()

    def add_row(self, row: tuple[int, str, str, str, str]) -> None:
        """Add one raw row ``(num, id, title, text, meta JSON)``, as :meth:`DocStore.rows` yields them."""
        self._rows.append(row)
        self._pending_chars += len(row[3]) + len(row[2])
        if len(self._rows) >= _WRITE_ROWS or self._pending_chars >= _WRITE_CHARS:
            self._write()

    def _write(self) -> None:
        """Queue the pending rows for the inserting thread (started on the first)."""
        self._raise_error()
        rows, self._rows, self._pending_chars = self._rows, [], 0
        if rows:
            if self._inserting is None:
                self._inserting = threading.Thread(target=self._insert, name="bm25lab-store", daemon=True)
                self._inserting.start()
            self._queue.put(rows)

    def _insert(self) -> None:
        """The inserting thread: batches from the queue until None; after an error, it only empties it."""
        while (rows := self._queue.get()) is not None:
            if self._error is None:
                try:
                    self._insert_rows(rows)
                except BaseException as error:  # raised in the caller's thread by _raise_error
                    self._error = error

    def _insert_rows(self, rows: list[tuple[int, str, str, str, str]]) -> None:
        with self._naming_path():
            self._db.executemany("INSERT INTO docs VALUES (?, ?, ?, ?, ?)", rows)

    @contextmanager
    def _naming_path(self) -> Iterator[None]:
        """SQLite's errors of the disk (full, a file size limit, I/O) as the OSError they are, naming
        the store's file (SQLite's own message names none)."""
        try:
            yield
        except sqlite3.OperationalError as exc:
            code = getattr(exc, "sqlite_errorcode", None)
            full = code == _SQLITE_FULL or "full" in str(exc)
            raise OSError(errno.ENOSPC if full else errno.EIO,
                          f"cannot write the document store ({exc}{'' if full else _size_limit()})",
                          str(self.path)) from None

    def _raise_error(self) -> None:
        """Raise the insert's error, once (the thread inserts nothing more after it)."""
        if self._error is not None and not self._error_raised:
            self._error_raised = True
            raise self._error

    def close(self) -> None:
        """Insert what is pending, wait for the thread and commit (raising an error of the insert)."""
        try:
            try:
                self._write()
            finally:
                if self._inserting is not None:
                    self._queue.put(None)
                    self._inserting.join()
                    self._inserting = None
            self._raise_error()
            if self._error is None:
                with self._naming_path():
                    self._db.commit()
        finally:
            self._db.close()


def _size_limit() -> str:
    """The process's file size limit, when it has one (SQLite reports a write beyond it as an I/O error)."""
    try:
        import resource

        limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    except (ImportError, OSError, ValueError):
        return ""
    return "" if limit == resource.RLIM_INFINITY else f"; files are limited to {limit:,} bytes (ulimit -f)"


class DocStore:
    """Read-only access to one segment's store; documents numbered in ``deleted`` are invisible.

    One connection, opened at once and shared by all threads under a lock.
    """

    def __init__(self, path: Path, deleted: np.ndarray | None = None) -> None:
        self.path = path
        self._deleted = np.zeros(0, dtype=np.int32) if deleted is None else np.asarray(deleted)
        self._lock = threading.Lock()
        uri = f"{Path(path).resolve().as_uri()}?mode=ro&immutable=1"
        self._db = sqlite3.connect(uri, uri=True, check_same_thread=False)

    def with_deleted(self, deleted: np.ndarray) -> "DocStore":
        """The same store, sharing this one's open file, with the documents ``deleted`` hidden."""
        view = DocStore.__new__(DocStore)
        view.path, view._deleted, view._lock, view._db = self.path, np.asarray(deleted), self._lock, self._db
        return view

    def _query(self, sql: str, args: Sequence[object]) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def _live(self, num: int) -> bool:
        d = self._deleted
        i = int(np.searchsorted(d, num))
        return i == d.shape[0] or int(d[i]) != num

    def get(self, doc_id: str) -> Document | None:
        rows = self._query("SELECT num, id, title, text, meta FROM docs WHERE id = ?", (doc_id,))
        return _document(rows[0][1:]) if rows and self._live(rows[0][0]) else None

    def get_many(self, doc_ids: Iterable[str]) -> dict[str, Document]:
        return {row[1]: _document(row[1:]) for row in self._rows_of(doc_ids)}

    def nums(self, doc_ids: Iterable[str]) -> dict[str, int]:
        """The segment's document number of every live id among ``doc_ids``."""
        return {row[1]: row[0] for row in self._rows_of(doc_ids, "num, id")}

    def _rows_of(self, doc_ids: Iterable[str], columns: str = "num, id, title, text, meta") -> Iterator[tuple]:
        ids = list(doc_ids)
        for start in range(0, len(ids), _BATCH):
            part = ids[start:start + _BATCH]
            marks = ",".join("?" * len(part))
            for row in self._query(f"SELECT {columns} FROM docs WHERE id IN ({marks})", part):
                if self._live(row[0]):
                    yield row

    def rows(self) -> Iterator[tuple[int, str, str, str, str]]:
        """Every live row ``(num, id, title, text, meta JSON)`` in document-number order, page by page."""
        after = -1
        while True:
            page = self._query("SELECT num, id, title, text, meta FROM docs WHERE num > ? ORDER BY num LIMIT ?",
                               (after, _PAGE))
            if not page:
                return
            nums = np.fromiter((r[0] for r in page), dtype=np.int64, count=len(page))
            dead = np.isin(nums, self._deleted)
            for row, gone in zip(page, dead.tolist()):
                if not gone:
                    yield row
            after = page[-1][0]

    def iter_documents(self) -> Iterator[Document]:
        """Every live document in document-number order."""
        for row in self.rows():
            yield _document(row[1:])

    def metadata_values(self, key: str) -> list[tuple[int, str, Any]]:
        """``(document number, JSON type, value)`` of metadata key ``key`` in every document that has it,
        deleted ones included (for :mod:`bm25lab.engine.filters`): the types of SQLite's ``json_each``
        (null, true, false, integer, real, text, array, object; an array or object's value is its JSON)."""
        try:
            return self._query("SELECT d.num, j.type, j.value FROM docs d, json_each(nullif(d.meta, '')) j "
                               "WHERE j.key = ?", (key,))
        except sqlite3.OperationalError:  # an SQLite without its JSON functions
            rows = self._query("SELECT num, meta FROM docs WHERE meta <> ''", ())
            return [(num, *_json_type(meta[key])) for num, meta in ((n, json.loads(m)) for n, m in rows)
                    if key in meta]

    def close(self) -> None:
        with self._lock:
            self._db.close()


class SegmentedStore:
    """The documents of an index made of several segments, in segment order.

    An id is live in at most one segment (adding an existing id deletes the older document), so a
    lookup asks the newest segment first and returns the first live document it finds.
    """

    def __init__(self, stores: Sequence[DocStore]) -> None:
        self.stores = list(stores)

    def get(self, doc_id: str) -> Document | None:
        for store in reversed(self.stores):
            doc = store.get(doc_id)
            if doc is not None:
                return doc
        return None

    def get_many(self, doc_ids: Iterable[str]) -> dict[str, Document]:
        wanted = list(dict.fromkeys(doc_ids))
        found: dict[str, Document] = {}
        for store in reversed(self.stores):
            if len(found) == len(wanted):
                break
            found.update(store.get_many([i for i in wanted if i not in found]))
        return found

    def iter_documents(self) -> Iterator[Document]:
        """Every live document: segment by segment, each in document-number order."""
        for store in self.stores:
            yield from store.iter_documents()


def _json_type(value: Any) -> tuple[str, Any]:
    """A metadata value as SQLite's ``json_each`` gives it: (its JSON type, the value)."""
    if value is None or isinstance(value, bool):
        return ("null" if value is None else "true" if value else "false"), value
    if isinstance(value, (list, dict)):
        return ("array" if isinstance(value, list) else "object"), json.dumps(value)
    return {int: "integer", float: "real"}.get(type(value), "text"), value


def _document(row: tuple[str, str, str, str]) -> Document:
    doc_id, title, text, meta = row
    return Document(doc_id, text or "", title or "", json.loads(meta) if meta else {})
