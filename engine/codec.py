"""Postings compressed in blocks of 128: the format, its numpy specification, and the door to the core's codec.

Each term's postings (document numbers ascending, frequencies) are cut into blocks of :data:`BLOCK`
postings (the last one of a term shorter). A block stores

- its document gaps ``d[i] - d[i - 1] - 1`` (``d[-1]``: the last document of the term's previous block, or
  -1 at the term's first block) and its frequencies less one, each packed in the fewest bits that hold
  the block's largest value (the block's two *widths*, 0 to 32), in ``data`` from ``positions[j]``:
  one byte for the gaps' width, one for the frequencies', the packed gaps, then the packed frequencies;
- ``last_docs[j]``, its last document (what a search skips blocks by);
- ``bound_codes[j]``, the code of its (largest frequency, smallest document length) among ``bound_pairs``:
  every BM25 tf part grows with the frequency and falls with the length, so the part of that pair is at
  least that of every posting of the block (the block's upper bound, once per parameter set).

Packing is binary packing with a width per block (Lemire and Boytsov, "Decoding billions of integers per
second through vectorization", Software: Practice and Experience 45(1), 2015; PISA's ``block_simdbp``
codec): a full block in the vertical layout of their SIMD-BP128 (value ``i`` in 32-bit lane ``i % 4``,
row ``i // 4``; each lane a little-endian stream of ``width`` bits a value, the four lanes' 32-bit words
interleaved: ``16 * width`` bytes), which the core unpacks four values at a time; a shorter block packed
value after value in one little-endian bit stream (``ceil(n * width / 8)`` bytes). Chosen by measurement
(the benchmarks' 150,000-document Zipf collection, 14.6 M postings): gaps 1.19 bytes a posting and
frequencies 0.10, 1.71 in all with the block and term data, where StreamVByte needs 1.62 + 1.25 and
binary interpolative or Elias-Fano gaps alone 1.06; packed (tf, length) pair codes instead of
frequencies would need 0.95 (their lengths repeat what the documents' lengths say), so the frequencies
are packed and a search finds a posting's pair from its document's length.

``data`` ends with :data:`PAD` zero bytes so that a decoder may read a whole word past a block's end.
The numpy functions here are the specification; the core (``engine/core/codec.c``) encodes and decodes
the same bytes (the tests compare them), and :func:`encode` / :func:`decode` use it when it is built.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .core import kernels

BLOCK = 128
LANES = 4
PAD = 16
HEADER = 2  # bytes: the gaps' width, the frequencies' width


@dataclass(frozen=True, eq=False)
class Blocks:
    """Every term's postings in blocks (see the module docstring); ``term_starts`` (derived from the
    postings' offsets, never stored): term ``t``'s blocks are ``term_starts[t]:term_starts[t + 1]``."""

    last_docs: np.ndarray    # int32, one per block
    positions: np.ndarray    # int64, blocks + 1: where each block starts in data (the last: where data's blocks end)
    data: np.ndarray         # uint8: the blocks, then PAD zero bytes
    bound_codes: np.ndarray  # uint16 (uint32 past 2**16 bound pairs), one per block
    bound_pairs: np.ndarray  # int64, 2 x bound pairs: (largest tf, smallest length), sorted
    term_starts: np.ndarray = field(repr=False)  # int64, terms + 1

    @property
    def num_blocks(self) -> int:
        return int(self.last_docs.shape[0])

    @property
    def nbytes(self) -> int:
        """Bytes of the block arrays (what is stored)."""
        return sum(int(np.asarray(a).nbytes) for a in (self.last_docs, self.positions, self.data, self.bound_codes,
                                                           self.bound_pairs))


def term_starts(offsets: np.ndarray) -> np.ndarray:
    """Where each term's blocks start (int64, terms + 1): ``ceil(df / BLOCK)`` blocks a term."""
    offsets = np.asarray(offsets, dtype=np.int64)
    starts = np.zeros(offsets.shape[0], dtype=np.int64)
    np.cumsum((np.diff(offsets) + BLOCK - 1) // BLOCK, out=starts[1:])
    return starts


def code_dtype(n_codes: int) -> type:
    """The narrowest unsigned type that numbers ``n_codes`` codes (uint16 or uint32)."""
    return np.uint16 if n_codes <= 1 << 16 else np.uint32


def widths(values: np.ndarray) -> np.ndarray:
    """The bits each value (< 2**32) needs: its bit length (0 for 0); exact, as a float64 holds it exactly."""
    return np.frexp(np.asarray(values, dtype=np.float64))[1].astype(np.int64)


def section_bytes(n: np.ndarray, width: np.ndarray) -> np.ndarray:
    """Bytes of ``n`` values of ``width`` bits packed: 16 x width for a full block, else ceil(n x width / 8)."""
    n, width = np.asarray(n, dtype=np.int64), np.asarray(width, dtype=np.int64)
    return np.where(n == BLOCK, 16 * width, (n * width + 7) // 8)


@dataclass(frozen=True)
class _Layout:
    """Per posting: its block, its index in the block; per block: term, first posting, size."""

    block_of: np.ndarray
    index: np.ndarray
    first: np.ndarray
    size: np.ndarray
    term: np.ndarray


def _layout(offsets: np.ndarray) -> _Layout:
    offsets = np.asarray(offsets, dtype=np.int64)
    starts = term_starts(offsets)
    n_blocks = int(starts[-1])
    term = np.repeat(np.arange(offsets.shape[0] - 1, dtype=np.int64), np.diff(starts))
    first = offsets[term] + (np.arange(n_blocks, dtype=np.int64) - starts[term]) * BLOCK
    size = np.minimum(offsets[term + 1] - first, BLOCK)
    block_of = np.repeat(np.arange(n_blocks, dtype=np.int64), size)
    index = np.arange(block_of.shape[0], dtype=np.int64) - first[block_of]
    return _Layout(block_of, index, first, size, term)


def _bit_places(layout: _Layout, section: np.ndarray, width: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For every posting's value in a section starting at byte ``section[block]`` with the block's
    ``width``: the byte offset of the 32-bit word (full block: its lane's word) or of the byte (short
    block) its lowest bit is in, and the bit within it."""
    b = width[layout.block_of]
    full = layout.size[layout.block_of] == BLOCK
    row_bit = (layout.index // LANES) * b
    word_byte = section[layout.block_of] + 16 * (row_bit // 32) + 4 * (layout.index % LANES)
    stream_bit = layout.index * b
    byte = np.where(full, word_byte, section[layout.block_of] + stream_bit // 8)
    bit = np.where(full, row_bit % 32, stream_bit % 8)
    return byte, bit


def _pack(data: np.ndarray, layout: _Layout, section: np.ndarray, width: np.ndarray, values: np.ndarray) -> None:
    """OR every value into ``data`` at its place (see the module docstring)."""
    byte, bit = _bit_places(layout, section, width)
    values = values.astype(np.uint64)
    full = layout.size[layout.block_of] == BLOCK
    b = width[layout.block_of]
    shifted = values << bit.astype(np.uint64)  # at most 32 + 31 bits
    low = np.where(full, shifted & 0xFFFFFFFF, shifted)  # full: the word's part; short: every byte
    for k in range(5):  # a short block's value spans at most 5 bytes (32 bits from bit 7)
        part = ((low >> np.uint64(8 * k)) & 0xFF).astype(np.uint8)
        keep = (part != 0) & (~full | (k < 4))
        np.bitwise_or.at(data, byte[keep] + k, part[keep])
    spill = full & (bit + b > 32)  # a full block's value continuing in its lane's next word
    high = shifted[spill] >> np.uint64(32)
    for k in range(4):
        part = ((high >> np.uint64(8 * k)) & 0xFF).astype(np.uint8)
        np.bitwise_or.at(data, byte[spill] + 16 + k, part)


def _unpack(data: np.ndarray, layout: _Layout, section: np.ndarray, width: np.ndarray) -> np.ndarray:
    """Every posting's value of a section (uint64)."""
    byte, bit = _bit_places(layout, section, width)
    full = layout.size[layout.block_of] == BLOCK
    b = width[layout.block_of].astype(np.uint64)
    word = np.zeros(byte.shape[0], dtype=np.uint64)
    for k in range(5):
        present = ~full | (k < 4)
        word |= np.where(present, data[np.minimum(byte + k, data.shape[0] - 1)].astype(np.uint64), 0) << np.uint64(8 * k)
    spill = np.zeros(byte.shape[0], dtype=np.uint64)
    for k in range(4):
        spill |= data[np.minimum(byte + 16 + k, data.shape[0] - 1)].astype(np.uint64) << np.uint64(8 * k)
    word = np.where(full, word | (spill << np.uint64(32)), word)
    mask = (np.uint64(1) << b) - np.uint64(1)
    return (word >> bit.astype(np.uint64)) & mask


def _gaps(offsets: np.ndarray, doc_nums: np.ndarray) -> np.ndarray:
    docs = np.asarray(doc_nums, dtype=np.int64)
    previous = np.empty_like(docs)
    previous[1:] = docs[:-1]
    offsets = np.asarray(offsets, dtype=np.int64)
    firsts = offsets[:-1][np.diff(offsets) > 0]
    previous[firsts] = -1
    return docs - previous - 1


def encode_numpy(offsets: np.ndarray, doc_nums: np.ndarray, tfs: np.ndarray, doc_lengths: np.ndarray) -> Blocks:
    """:func:`encode` in numpy: the specification of the format."""
    layout = _layout(offsets)
    n_blocks = layout.size.shape[0]
    gaps = _gaps(offsets, doc_nums)
    freqs = np.asarray(tfs, dtype=np.int64) - 1
    lengths = np.asarray(doc_lengths, dtype=np.int64)[np.asarray(doc_nums, dtype=np.int64)]
    if n_blocks:
        gap_width = widths(np.maximum.reduceat(gaps, layout.first - layout.first[0]))
        tf_width = widths(np.maximum.reduceat(freqs, layout.first - layout.first[0]))
        max_tf = np.maximum.reduceat(freqs, layout.first - layout.first[0]) + 1
        min_length = np.minimum.reduceat(lengths, layout.first - layout.first[0])
    else:
        gap_width = tf_width = max_tf = min_length = np.zeros(0, np.int64)
    gap_bytes, tf_bytes = section_bytes(layout.size, gap_width), section_bytes(layout.size, tf_width)
    positions = np.zeros(n_blocks + 1, dtype=np.int64)
    np.cumsum(HEADER + gap_bytes + tf_bytes, out=positions[1:])
    data = np.zeros(int(positions[-1]) + PAD, dtype=np.uint8)
    data[positions[:-1]] = gap_width
    data[positions[:-1] + 1] = tf_width
    _pack(data, layout, positions[:-1] + HEADER, gap_width, gaps)
    _pack(data, layout, positions[:-1] + HEADER + gap_bytes, tf_width, freqs)
    last_docs = np.asarray(doc_nums, dtype=np.int32)[layout.first + layout.size - 1] if n_blocks else np.zeros(0, np.int32)
    bound_codes, bound_pairs = _bound_codes(max_tf, min_length)
    return Blocks(last_docs.astype(np.int32), positions, data, bound_codes, bound_pairs, term_starts(offsets))


def _bound_codes(max_tf: np.ndarray, min_length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each block's code among the sorted distinct (largest tf, smallest length) pairs, and the pairs."""
    if not max_tf.shape[0]:
        return np.zeros(0, np.uint16), np.zeros((2, 0), np.int64)
    keys = (max_tf.astype(np.int64) << 32) | min_length.astype(np.int64)
    distinct, inverse = np.unique(keys, return_inverse=True)
    pairs = np.stack([distinct >> 32, distinct & 0xFFFFFFFF]).astype(np.int64)
    return inverse.reshape(-1).astype(code_dtype(distinct.shape[0])), pairs


def decode_numpy(blocks: Blocks, offsets: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`decode` in numpy."""
    offsets = np.asarray(offsets, dtype=np.int64)
    layout = _layout(offsets)
    positions = np.asarray(blocks.positions, dtype=np.int64)
    data = np.asarray(blocks.data)
    gap_width = data[positions[:-1]].astype(np.int64)
    tf_width = data[positions[:-1] + 1].astype(np.int64)
    gaps = _unpack(data, layout, positions[:-1] + HEADER, gap_width).astype(np.int64)
    freqs = _unpack(data, layout, positions[:-1] + HEADER + section_bytes(layout.size, gap_width), tf_width)
    # documents: per term, the running sum of gap + 1 from -1
    steps = gaps + 1
    total = np.cumsum(steps)
    first_of = np.repeat(offsets[:-1], np.diff(offsets))  # each posting's term's first posting
    docs = total - (total - steps)[first_of] - 1
    return docs[lo:hi].astype(np.int32), (freqs[lo:hi] + 1).astype(np.int32)


# ---------------------------------------------------------------------------------------- the door
def encode(offsets: np.ndarray, doc_nums: np.ndarray, tfs: np.ndarray, doc_lengths: np.ndarray,
           threads: int = 1) -> Blocks:
    """Postings (term offsets, documents ascending per term, frequencies >= 1) and the documents' lengths
    as :class:`Blocks`: by the compiled core when it is built (on ``threads`` threads, the terms shared out
    by postings), else by numpy (the same bytes)."""
    core = kernels()
    if core is None:
        return encode_numpy(offsets, doc_nums, tfs, doc_lengths)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    doc_nums = np.ascontiguousarray(doc_nums, dtype=np.int32)
    tfs = np.ascontiguousarray(tfs, dtype=np.int32)
    doc_lengths = np.ascontiguousarray(doc_lengths, dtype=np.int32)
    starts = term_starts(offsets)
    n_blocks = int(starts[-1])
    positions = np.empty(n_blocks + 1, dtype=np.int64)
    last_docs = np.empty(n_blocks, dtype=np.int32)
    max_tf = np.empty(n_blocks, dtype=np.int64)
    min_length = np.empty(n_blocks, dtype=np.int64)
    core.block_layout(offsets, starts, doc_nums, tfs, doc_lengths, positions, last_docs, max_tf, min_length,
                      threads=threads)
    data = np.empty(int(positions[-1]) + PAD, dtype=np.uint8)  # every byte written
    core.write_blocks(offsets, starts, doc_nums, tfs, positions, data, threads=threads)
    bound_codes, bound_pairs = _bound_codes(max_tf, min_length)
    return Blocks(last_docs, positions, data, bound_codes, bound_pairs, starts)


def decode(blocks: Blocks, offsets: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """The documents and frequencies (int32) of postings ``lo:hi`` (positions in the term-by-term
    order of ``offsets``): by the core when it is built (only the blocks holding them), else by numpy."""
    core = kernels()
    if core is None:
        return decode_numpy(blocks, offsets, lo, hi)
    docs = np.empty(max(hi - lo, 0), dtype=np.int32)
    tfs = np.empty(max(hi - lo, 0), dtype=np.int32)
    core.decode_postings(np.asarray(offsets), blocks.term_starts, blocks.last_docs, blocks.positions, blocks.data,
                         lo, hi, docs, tfs)
    return docs, tfs


_MAX_RUNS = 4096  # runs of positions decoded one by one; more: the range that holds them all


class BlockColumn:
    """The documents or frequencies of compressed postings, read like an array: a slice (or an array of
    positions) decodes only the blocks that hold it; ``np.asarray`` decodes all of them."""

    __slots__ = ("blocks", "offsets", "which", "shape")
    dtype = np.dtype(np.int32)
    ndim = 1

    def __init__(self, blocks: Blocks, offsets: np.ndarray, which: int) -> None:
        self.blocks, self.offsets, self.which = blocks, offsets, which
        self.shape = (int(np.asarray(offsets)[-1]),)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, key: Any) -> np.ndarray:
        if isinstance(key, slice):
            lo, hi, step = key.indices(self.shape[0])
            if step == 1:
                return self._range(lo, max(lo, hi))
            return np.asarray(self)[key]
        positions = np.asarray(key)
        if positions.dtype == bool or positions.ndim != 1 or not positions.shape[0] or positions.dtype.kind not in "iu":
            return np.asarray(self)[key]
        positions = positions.astype(np.int64, copy=False)
        if positions.min() < 0:
            return np.asarray(self)[key]
        # runs of consecutive positions (the spans of a batch's terms), each decoded on its own
        breaks = np.flatnonzero(np.diff(positions) != 1) + 1
        if breaks.shape[0] >= _MAX_RUNS:
            lo = int(positions.min())
            return self._range(lo, int(positions.max()) + 1)[positions - lo]
        starts = np.concatenate(([0], breaks))
        ends = np.concatenate((breaks, [positions.shape[0]]))
        return np.concatenate([self._range(int(positions[a]), int(positions[b - 1]) + 1)
                               for a, b in zip(starts.tolist(), ends.tolist())])

    def _range(self, lo: int, hi: int) -> np.ndarray:
        return decode(self.blocks, self.offsets, lo, hi)[self.which]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        values = decode(self.blocks, self.offsets, 0, self.shape[0])[self.which]
        return values if dtype is None else values.astype(dtype, copy=False)

    @property
    def nbytes(self) -> int:
        return 4 * self.shape[0]

    def __repr__(self) -> str:
        return f"BlockColumn({'documents' if self.which == 0 else 'frequencies'}, {self.shape[0]} postings)"
