"""Compressed input: gzip files read with a bound on what they may decompress to.

A few kilobytes of gzip can hold gigabytes (a megabyte of newlines compresses to a kilobyte), so a
hostile or broken file could keep a reader busy, or fill the memory, for as long as it pleases. Every
gzip input bm25lab reads (documents, queries, qrels, runs) goes through here and may decompress to
at most :data:`FLOOR` bytes, or :data:`DEFAULT_RATIO` times its own size when that is more; past
that, an :class:`~bm25lab.engine.errors.InputError` names the file and the environment variable
:data:`RATIO_VARIABLE` that raises the ratio (``0``: no limit). Real collections and runs compress
5 to 15 times; a file of blank lines, a thousand times.
"""
from __future__ import annotations

import gzip
import io
import os
from pathlib import Path
from typing import BinaryIO

from .errors import InputError, ParameterError

__all__ = ["DEFAULT_RATIO", "FLOOR", "GZIP_MAGIC", "RATIO_VARIABLE", "decompress", "limit_for", "open_gzip"]

GZIP_MAGIC = b"\x1f\x8b"
RATIO_VARIABLE = "BM25LAB_GZIP_RATIO"
DEFAULT_RATIO = 100
FLOOR = 256 << 20  # bytes any gzip file may decompress to, whatever its ratio
_BLOCK = 1 << 20


def limit_for(compressed: int) -> int | None:
    """The most bytes a gzip file of ``compressed`` bytes may decompress to (None: no limit), from
    ``$BM25LAB_GZIP_RATIO`` (default :data:`DEFAULT_RATIO`); a value that is no whole number >= 0 is a
    :class:`ParameterError` naming the variable."""
    text = os.environ.get(RATIO_VARIABLE, "").strip()
    try:
        ratio = int(text) if text else DEFAULT_RATIO
    except ValueError:
        ratio = -1
    if ratio < 0:
        raise ParameterError(f"{RATIO_VARIABLE}={text!r}: expected a whole number >= 0 (the most a gzip file may "
                             f"decompress to, in times its size; 0: no limit)")
    return None if ratio == 0 else max(FLOOR, ratio * compressed)


def _too_large(path: str | Path, compressed: int, limit: int) -> InputError:
    ratio = os.environ.get(RATIO_VARIABLE, "").strip() or str(DEFAULT_RATIO)
    return InputError(f"decompresses to more than {limit:,} bytes from {compressed:,} (more than {ratio} times its "
                      f"size; a gzip bomb?); to read it, raise the limit: {RATIO_VARIABLE}=N allows N times the "
                      f"compressed size (0: no limit)", path)


class _Bounded(io.RawIOBase):
    """The decompressed bytes of the gzip file ``raw``, raising :func:`_too_large` once they pass
    ``limit``; closing it closes ``raw``."""

    def __init__(self, raw: BinaryIO, path: str | Path, compressed: int, limit: int | None) -> None:
        self._raw, self._path, self._compressed, self._limit = raw, path, compressed, limit
        self._stream = gzip.GzipFile(fileobj=raw, mode="rb")
        self._given = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        count = self._stream.readinto(buffer)
        self._given += count
        if self._limit is not None and self._given > self._limit:
            raise _too_large(self._path, self._compressed, self._limit)
        return count

    def close(self) -> None:
        try:
            self._stream.close()
            self._raw.close()
        finally:
            super().close()


def open_gzip(raw: BinaryIO, path: str | Path, buffer_size: int = 1 << 16) -> BinaryIO:
    """A buffered reader of the decompressed bytes of the open gzip file ``raw`` (closed with it),
    bounded by :func:`limit_for` of its size."""
    try:
        compressed = os.fstat(raw.fileno()).st_size
    except (OSError, AttributeError, io.UnsupportedOperation):
        compressed = 0
    return io.BufferedReader(_Bounded(raw, path, compressed, limit_for(compressed)), buffer_size=buffer_size)


def decompress(data: bytes, path: str | Path) -> bytes:
    """The decompressed bytes of the gzip file ``path`` whose bytes are ``data``, bounded by
    :func:`limit_for` of its size (gzip's own errors as they are)."""
    limit = limit_for(len(data))
    pieces = []
    total = 0
    with gzip.GzipFile(fileobj=io.BytesIO(data), mode="rb") as stream:
        while piece := stream.read(_BLOCK):
            total += len(piece)
            if limit is not None and total > limit:
                raise _too_large(path, len(data), limit)
            pieces.append(piece)
    return b"".join(pieces)
