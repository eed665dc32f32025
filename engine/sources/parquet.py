"""Parquet documents: a ``.parquet`` file, or a folder of them (a dataset, read file by file in sorted
order), read through ``pyarrow.dataset`` a record batch at a time. A row is a record as a JSON Lines
object is: the id the first of ``id, _id, docid, doc_id`` present (a string or an integer), the text the
first of ``text, contents, body``, the title ``title``; every other column is metadata; ``id_field`` and
``text_fields`` choose others. Errors name the file and the row (1-based, counted as lines are)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from ..errors import InputError
from ..records import Document
from .base import (DOC_ID_KEYS, DOC_TEXT_KEYS, ID_OPTION, TEXT_OPTION, DocumentFormat, FieldMap, json_id, json_text,
                   json_type, walk_files)

MAGIC = b"PAR1"
_BATCH_ROWS = 4096


def parquet_files(source: Path) -> list[Path]:
    """The Parquet files of ``source``: the file, or every ``.parquet`` file of a folder in sorted order
    (hidden entries and Spark's ``_SUCCESS``/``_metadata`` files skipped)."""
    if not source.is_dir():
        return [source]
    return list(walk_files(source, lambda name: name.lower().endswith(".parquet") and not name.startswith("_")))


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    import pyarrow as pa
    import pyarrow.dataset as ds

    try:
        dataset = ds.dataset(str(path), format="parquet")
        for batch in dataset.to_batches(batch_size=_BATCH_ROWS, use_threads=False):
            yield from batch.to_pylist()
    except (pa.ArrowInvalid, pa.ArrowIOError, OSError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"cannot read as Parquet: {reason}", path) from None


def read_parquet_documents(source: Path, fields: FieldMap = FieldMap()) -> Iterator[Document]:
    """The documents of a Parquet file or folder (see the module's notes)."""
    for path in parquet_files(source):
        yield from read_parquet_file(path, fields)


def read_parquet_file(path: Path, fields: FieldMap = FieldMap()) -> Iterator[Document]:
    id_keys = DOC_ID_KEYS if fields.id_field is None else (fields.id_field,)
    for row_number, row in enumerate(_rows(path), 1):
        id_key, doc_id = json_id(row, id_keys, "document id", path, row_number, "" if fields.id_field else ID_OPTION)
        if fields.text_fields is not None:
            yield fields.document(doc_id, {k: v for k, v in row.items() if k != id_key}, path, row_number)
            continue
        text_key, text = json_text(row, DOC_TEXT_KEYS, path, row_number, TEXT_OPTION)
        title = row.get("title")
        if title is None:
            title = ""
        elif not isinstance(title, str):
            raise InputError(f"field 'title' must be a string or null, found {json_type(title)}", path, row_number)
        metadata = {k: v for k, v in row.items() if k not in (id_key, text_key, "title")}
        yield Document(id=doc_id, text=text, title=title, metadata=metadata)


def count_parquet(source: Path, named: bool) -> int:
    """Rows of the Parquet files, from their footers (no data read)."""
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(str(path)).metadata.num_rows for path in parquet_files(source))


DOCUMENTS = DocumentFormat(read_parquet_documents, "Parquet: a .parquet file or a folder of them (a dataset), a row a "
                           "document with JSON Lines' columns (id, text, title, ...)", extensions=(".parquet",),
                           sniff=lambda head: head.startswith(MAGIC), folder=True, id_field=True, count=count_parquet)
