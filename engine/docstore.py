"""The document store: titles, texts and metadata in one SQLite file (standard library only).

Table ``docs(num INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, title TEXT, text TEXT, meta TEXT)``,
``meta`` being a JSON object. Results read titles and snippets from here, so a saved index shows
them without the original corpus.
"""
from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Iterable

from .records import Document

_SCHEMA = "CREATE TABLE docs (num INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, title TEXT, text TEXT, meta TEXT)"


class DocStoreWriter:
    """Appends documents to a new store file; :meth:`close` commits."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db = sqlite3.connect(path)
        self._db.execute("PRAGMA journal_mode=OFF")
        self._db.execute("PRAGMA synchronous=OFF")
        self._db.execute(_SCHEMA)
        self._rows: list[tuple[int, str, str, str, str]] = []

    def add(self, num: int, doc: Document) -> None:
        meta = json.dumps(dict(doc.metadata), ensure_ascii=False) if doc.metadata else ""
        self._rows.append((num, doc.id, doc.title, doc.text, meta))
        if len(self._rows) >= 2048:
            self._write()

    def _write(self) -> None:
        self._db.executemany("INSERT INTO docs VALUES (?, ?, ?, ?, ?)", self._rows)
        self._rows = []

    def close(self) -> None:
        self._write()
        self._db.commit()
        self._db.close()


class DocStore:
    """Read-only access by external id; one connection per thread, opened on first use."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()

    def _connection(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
            self._local.db = db
        return db

    def get(self, doc_id: str) -> Document | None:
        row = self._connection().execute("SELECT id, title, text, meta FROM docs WHERE id = ?", (doc_id,)).fetchone()
        return None if row is None else _document(row)

    def get_many(self, doc_ids: Iterable[str]) -> dict[str, Document]:
        ids = list(doc_ids)
        found: dict[str, Document] = {}
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            marks = ",".join("?" * len(part))
            for row in self._connection().execute(f"SELECT id, title, text, meta FROM docs WHERE id IN ({marks})", part):
                found[row[0]] = _document(row)
        return found

    def iter_documents(self) -> Iterable[Document]:
        """Every stored document in document-number order."""
        for row in self._connection().execute("SELECT id, title, text, meta FROM docs ORDER BY num"):
            yield _document(row)


def _document(row: tuple[str, str, str, str]) -> Document:
    doc_id, title, text, meta = row
    return Document(doc_id, text or "", title or "", json.loads(meta) if meta else {})
