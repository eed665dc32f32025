"""String columns and 64-bit hashes of their values, computed without a Python loop.

A string column has pyarrow's layout: offsets and bytes. :class:`Strings` holds one in two numpy arrays,
made without pyarrow (the evaluation's readers' own, from the compiled core) and handed to pyarrow without a
copy (:meth:`Strings.arrow`); pyarrow arrays stay the engine's (:class:`bm25lab.engine.records.DocIds`).

The engine hashes an index's document ids once (:class:`bm25lab.engine.records.DocIds`) and the
evaluation hashes the ids of qrels and runs (:mod:`bm25lab.evaluation.ranking`) with the same
function, so that a run made from search results needs no hashing of its own.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["Strings", "arrow_array", "numpy_values", "string_array", "string_hashes", "utf8_pieces"]

_INT32_BYTES = 2**31  # a column of this many bytes or more needs int64 offsets


@dataclass(frozen=True, eq=False)
class Strings:
    """A column of strings in two numpy arrays, as pyarrow lays out a string array: string ``i`` is the UTF-8
    ``data[offsets[i]:offsets[i + 1]]``, ``offsets`` (int32 or int64, non-decreasing, not necessarily from 0)
    within ``data`` (uint8). The methods pyarrow's string arrays have and the evaluation uses (``len``,
    :meth:`take`, :meth:`slice`, :meth:`to_pylist`) need neither pyarrow nor a Python step per string; the
    compiled core's kernels (``engine/core/strings.c``) do :meth:`take` and :meth:`same_at`, which numpy does
    where the core is not built (their specification)."""

    offsets: np.ndarray
    data: np.ndarray

    @classmethod
    def of(cls, values: Any) -> Strings:
        """``values`` (a :class:`Strings`, a pyarrow string array, or a sequence of ``str``) as a column: a list
        of str from its UTF-8 (no pyarrow), pyarrow data by its buffers (no copy for one chunk)."""
        if isinstance(values, Strings):
            return values
        if isinstance(values, (list, tuple)):
            try:
                data, lengths = utf8_pieces(values, "strict")
            except (TypeError, UnicodeEncodeError):
                pass  # not all str, or a lone surrogate: pyarrow's own error below
            else:
                offsets = np.zeros(len(values) + 1, dtype=np.int64)
                np.cumsum(lengths, out=offsets[1:])
                return cls(offsets.astype(np.int32) if data.size < _INT32_BYTES else offsets, data)
        return cls.from_arrow(string_array(values))

    @classmethod
    def from_arrow(cls, values: pa.Array | pa.ChunkedArray) -> Strings:
        """The buffers of a pyarrow string (or large string) array, viewed; a chunked array's chunks joined."""
        import pyarrow as pa

        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
            if isinstance(values, pa.ChunkedArray):  # no chunks at all
                values = pa.array([], type=values.type)
        kind = np.int64 if pa.types.is_large_string(values.type) else np.int32
        n, offset = len(values), values.offset
        buffers = values.buffers()
        offsets = np.frombuffer(buffers[1], dtype=kind)[offset : offset + n + 1] if buffers[1] is not None and n \
            else np.zeros(1, dtype=kind)
        data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.zeros(0, dtype=np.uint8)
        return cls(offsets, data)

    def __len__(self) -> int:
        return self.offsets.size - 1

    def take(self, rows: np.ndarray) -> Strings:
        """The strings of ``rows`` (integers in ``0 .. len - 1``), in that order, as a new column from 0."""
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        starts = self.offsets[rows].astype(np.int64)
        lengths = self.offsets[rows + 1] - starts
        total = int(lengths.sum())
        out_offsets = np.zeros(rows.size + 1, dtype=np.int32 if total < _INT32_BYTES else np.int64)
        out = np.empty(total, dtype=np.uint8)
        from .core import kernels

        core = kernels()
        if core is None:
            np.cumsum(lengths, out=out_offsets[1:])
            _gather(self.data, starts, lengths, out_offsets, out)
        else:
            core.take_strings(self.offsets, self.data, rows, out_offsets, out)
        return Strings(out_offsets, out)

    def slice(self, start: int, length: int | None = None) -> Strings:
        """Strings ``start .. start + length - 1`` (to the end without ``length``), sharing this column's bytes."""
        stop = len(self) if length is None else min(len(self), start + length)
        return Strings(self.offsets[start : max(start, stop) + 1], self.data)

    def same_at(self, rows: np.ndarray, other: Strings, other_rows: np.ndarray) -> np.ndarray:
        """Whether string ``rows[i]`` of this column equals string ``other_rows[i]`` of ``other`` (bool)."""
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        other_rows = np.ascontiguousarray(other_rows, dtype=np.int64)
        from .core import kernels

        core = kernels()
        if core is None:
            return _same(self, rows, other, other_rows)
        out = np.empty(rows.size, dtype=np.uint8)
        core.same_strings(self.offsets, self.data, rows, other.offsets, other.data, other_rows, out)
        return out.view(bool)

    def to_pylist(self) -> list[str]:
        """The strings as a list of ``str``."""
        lo, hi = int(self.offsets[0]), int(self.offsets[-1])
        blob = self.data[lo:hi].tobytes()
        bounds = (self.offsets - lo).tolist()
        if blob.isascii():  # byte offsets are character offsets: one decode
            text = blob.decode("ascii")
            return [text[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
        return [blob[a:b].decode("utf-8") for a, b in zip(bounds[:-1], bounds[1:])]

    def arrow(self) -> pa.Array:
        """The column as a pyarrow string array (large string past 2 GiB of bytes) on the same bytes."""
        import pyarrow as pa

        lo = int(self.offsets[0])
        offsets = self.offsets if lo == 0 else self.offsets - lo
        size = int(offsets[-1])
        if size < _INT32_BYTES:
            kind, offsets = pa.string(), offsets.astype(np.int32, copy=False)
        else:
            kind, offsets = pa.large_string(), offsets.astype(np.int64, copy=False)
        return pa.Array.from_buffers(kind, len(self), [None, pa.py_buffer(np.ascontiguousarray(offsets)),
                                                       pa.py_buffer(np.ascontiguousarray(self.data[lo : lo + size]))])

    def __arrow_array__(self, type: Any = None) -> pa.Array:
        values = self.arrow()
        return values if type is None else values.cast(type)

    def __repr__(self) -> str:
        shown = self.slice(0, 3).to_pylist()
        return f"Strings({len(self)}: {shown!r}{' ...' if len(self) > 3 else ''})"


_GATHER_BYTES = 1 << 22  # bytes numpy gathers at a time (its index arrays: 8 bytes per byte)


def _gather(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, out_offsets: np.ndarray,
            out: np.ndarray) -> None:
    """``out`` = the bytes ``data[starts[i]:starts[i] + lengths[i]]`` end to end (``out_offsets`` their
    bounds), batches of rows of about :data:`_GATHER_BYTES` bytes at a time: the specification of the core's
    ``take_strings``."""
    total = int(out_offsets[-1])
    step = max(1, _GATHER_BYTES * lengths.size // max(1, total))
    for lo in range(0, lengths.size, step):
        hi = min(lo + step, lengths.size)
        part = lengths[lo:hi]
        first, size = int(out_offsets[lo]), int(out_offsets[hi]) - int(out_offsets[lo])
        within = np.arange(size, dtype=np.int64) - np.repeat(out_offsets[lo:hi].astype(np.int64) - first, part)
        out[first : first + size] = data[np.repeat(starts[lo:hi], part) + within]


def _same(a: Strings, rows: np.ndarray, b: Strings, other_rows: np.ndarray) -> np.ndarray:
    """The specification of the core's ``same_strings``: equal lengths, then equal bytes (numpy)."""
    a_start = a.offsets[rows].astype(np.int64)
    b_start = b.offsets[other_rows].astype(np.int64)
    length = a.offsets[rows + 1] - a_start
    same = length == b.offsets[other_rows + 1] - b_start
    check = np.flatnonzero(same & (length > 0))
    if check.size:
        part = length[check].astype(np.int64)
        bounds = np.zeros(check.size + 1, dtype=np.int64)
        np.cumsum(part, out=bounds[1:])
        owner = np.repeat(np.arange(check.size), part)
        within = np.arange(int(bounds[-1]), dtype=np.int64) - bounds[:-1][owner]
        differ = a.data[a_start[check][owner] + within] != b.data[b_start[check][owner] + within]
        same[check[np.bincount(owner, weights=differ, minlength=check.size) > 0]] = False
    return same


def string_array(values: Any) -> pa.Array | pa.ChunkedArray:
    """A pyarrow string array (chunked arrays stay chunked) from pyarrow data or a sequence of str (a
    list or tuple of them made from their UTF-8, without ``pa.array``'s import of pandas)."""
    import pyarrow as pa

    if isinstance(values, pa.ChunkedArray):
        if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
            values = values.cast(pa.string())
        return values
    if isinstance(values, pa.Array):
        if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
            values = values.cast(pa.string())
        return values
    if isinstance(values, (list, tuple)):
        try:
            data, lengths = utf8_pieces(values, "strict")
        except (TypeError, UnicodeEncodeError):
            pass  # not all str, or a lone surrogate: pyarrow's own error below
        else:
            if data.size < 2 ** 31:  # a string array's offsets are int32
                offsets = np.zeros(len(values) + 1, dtype=np.int64)
                np.cumsum(lengths, out=offsets[1:])
                return pa.StringArray.from_buffers(len(values), pa.py_buffer(offsets.astype(np.int32)),
                                                   pa.py_buffer(data))
    return pa.array(values, type=pa.string())  # imports pandas where installed (0.15-0.3 s)


def utf8_pieces(strings: Sequence[str], errors: str = "surrogatepass") -> tuple[np.ndarray, np.ndarray]:
    """The UTF-8 of ``strings`` end to end (uint8) and each one's length in bytes (int64); ``errors``
    as ``str.encode``'s ("strict" raises UnicodeEncodeError on a lone surrogate)."""
    joined = "".join(strings)
    if joined.isascii():
        lengths = np.fromiter(map(len, strings), dtype=np.int64, count=len(strings))
        return np.frombuffer(joined.encode("ascii"), dtype=np.uint8), lengths
    pieces = [string.encode("utf-8", errors) for string in strings]
    lengths = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
    return np.frombuffer(b"".join(pieces), dtype=np.uint8), lengths


def numpy_values(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The values of a pyarrow numeric or boolean array without nulls as a numpy array, read from its
    buffers (a view where it can be: one chunk, not boolean). Unlike ``to_numpy`` this never imports
    pandas, which pyarrow's conversions do (0.15-0.3 s of a command's start-up)."""
    import pyarrow as pa

    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    parts = [_chunk_values(chunk) for chunk in chunks]
    if len(parts) == 1:
        return parts[0]
    if not parts:
        return np.zeros(0, dtype=_numpy_dtype(values.type))
    return np.concatenate(parts)


def _chunk_values(chunk: pa.Array) -> np.ndarray:
    import pyarrow as pa

    if chunk.null_count:
        raise ValueError("numpy_values: the array has nulls")
    n, offset = len(chunk), chunk.offset
    data = chunk.buffers()[1]
    if pa.types.is_boolean(chunk.type):
        if n == 0:
            return np.zeros(0, dtype=bool)
        bits = np.frombuffer(data, dtype=np.uint8, count=(offset + n + 7) // 8)
        return np.unpackbits(bits, bitorder="little")[offset : offset + n].view(bool)
    dtype = _numpy_dtype(chunk.type)
    if n == 0:
        return np.zeros(0, dtype=dtype)
    return np.frombuffer(data, dtype=dtype, count=offset + n)[offset:]


def _numpy_dtype(type_: pa.DataType) -> np.dtype:
    """The numpy dtype of a pyarrow integer or floating-point type (``to_pandas_dtype`` imports pandas)."""
    import pyarrow as pa

    if pa.types.is_boolean(type_):
        return np.dtype(bool)
    kind = "f" if pa.types.is_floating(type_) else "i" if pa.types.is_signed_integer(type_) else "u"
    if not (pa.types.is_floating(type_) or pa.types.is_integer(type_)):
        raise TypeError(f"numpy_values: {type_} is not a number type")
    return np.dtype(f"<{kind}{type_.bit_width // 8}")


def arrow_array(values: np.ndarray) -> pa.Array:
    """A pyarrow array viewing a 1-d numpy array of numbers (no copy, and no pandas import, unlike
    ``pa.array``)."""
    import pyarrow as pa

    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), values.size, [None, pa.py_buffer(values)])


_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, in place on uint64 arrays (wrapping arithmetic)."""
    h ^= h >> np.uint64(30)
    h *= _MIX1
    h ^= h >> np.uint64(27)
    h *= _MIX2
    h ^= h >> np.uint64(31)
    return h


def _column_hashes(column: Strings) -> np.ndarray:
    """Hashes of a column's strings, read 8 bytes at a time from its offsets and bytes."""
    n = len(column)
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    offsets = column.offsets.astype(np.int64)
    first, last = int(offsets[0]), int(offsets[-1])
    data = np.zeros(last - first + 8, dtype=np.uint8)
    data[: last - first] = column.data[first:last]
    words = np.ndarray(shape=(data.size - 7,), dtype="<u8", buffer=data, strides=(1,))  # 8 bytes from any byte
    start = offsets[:-1] - first
    length = offsets[1:] - offsets[:-1]
    h = length.astype(np.uint64) * _GOLDEN
    for at in range(0, int(length.max()), 8):
        rows = None if at == 0 else np.flatnonzero(length > at)
        word = words[start + at] if rows is None else words[start[rows] + at]
        remaining = length - at if rows is None else length[rows] - at
        short = remaining < 8
        if short.any():
            keep = (np.uint64(1) << (np.clip(remaining, 0, 7).astype(np.uint64) * np.uint64(8))) - np.uint64(1)
            word &= np.where(short, keep, np.uint64(0xFFFFFFFFFFFFFFFF))
        if rows is None:
            h = _mix(h ^ word)
        else:
            h[rows] = _mix(h[rows] ^ word)
    return h


def string_hashes(values: Strings | pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A 64-bit hash of every string's UTF-8 bytes (a :class:`Strings` or a pyarrow string array): equal
    strings, equal hashes (the converse is checked wherever it matters)."""
    if isinstance(values, Strings):
        return _column_hashes(values)
    import pyarrow as pa

    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    if not chunks:
        return np.zeros(0, dtype=np.uint64)
    workers = min(len(chunks), os.cpu_count() or 1, len(values) // _ROWS_PER_THREAD)
    if workers < 2:
        return np.concatenate([_column_hashes(Strings.from_arrow(chunk)) for chunk in chunks])
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(workers) as pool:  # numpy releases the GIL on these column-sized steps
        return np.concatenate(list(pool.map(lambda chunk: _column_hashes(Strings.from_arrow(chunk)), chunks)))


_ROWS_PER_THREAD = 1 << 20  # below this many strings a thread costs more than it saves
