"""String columns (pyarrow arrays) and 64-bit hashes of their values, computed without a Python loop.

The engine hashes an index's document ids once (:class:`bm25lab.engine.records.DocIds`) and the
evaluation hashes the ids of qrels and runs (:mod:`bm25lab.evaluation.ranking`) with the same
function, so that a run made from search results needs no hashing of its own.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["arrow_array", "numpy_values", "string_array", "string_hashes", "utf8_pieces"]


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


def _chunk_hashes(chunk: pa.Array) -> np.ndarray:
    """Hashes of one string array's values, read 8 bytes at a time from its offsets and data buffers."""
    import pyarrow as pa

    n = len(chunk)
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    offset_type = np.int64 if pa.types.is_large_string(chunk.type) else np.int32
    buffers = chunk.buffers()
    offsets = np.frombuffer(buffers[1], dtype=offset_type)[chunk.offset : chunk.offset + n + 1].astype(np.int64)
    first, last = int(offsets[0]), int(offsets[-1])
    data = np.zeros(last - first + 8, dtype=np.uint8)
    if buffers[2] is not None and last > first:
        data[: last - first] = np.frombuffer(buffers[2], dtype=np.uint8)[first:last]
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


def string_hashes(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A 64-bit hash of every string's UTF-8 bytes: equal strings, equal hashes (the converse is checked
    wherever it matters)."""
    import pyarrow as pa

    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    if not chunks:
        return np.zeros(0, dtype=np.uint64)
    workers = min(len(chunks), os.cpu_count() or 1, len(values) // _ROWS_PER_THREAD)
    if workers < 2:
        return np.concatenate([_chunk_hashes(chunk) for chunk in chunks])
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(workers) as pool:  # numpy releases the GIL on these column-sized steps
        return np.concatenate(list(pool.map(_chunk_hashes, chunks)))


_ROWS_PER_THREAD = 1 << 20  # below this many strings a thread costs more than it saves
