"""Shared hypothesis strategy for the readers' fuzz tests: valid samples, mutated a few bytes at a time."""
from __future__ import annotations

import gzip
from typing import Sequence

from hypothesis import strategies as st


@st.composite
def mutated(draw, samples: dict[str, bytes], alphabet: Sequence[int]) -> tuple[str, bytes]:
    """A valid sample (``(kind, bytes)``) with a few bytes from ``alphabet`` replaced, inserted or
    deleted, optionally gzipped and then possibly truncated."""
    kind = draw(st.sampled_from(sorted(samples)))
    data = bytearray(samples[kind])
    for _ in range(draw(st.integers(1, 6))):
        pos = draw(st.integers(0, len(data)))
        byte = draw(st.sampled_from(list(alphabet)))
        action = draw(st.sampled_from(["replace", "insert", "delete"]))
        if action == "insert" or pos == len(data):
            data.insert(pos, byte)
        elif action == "replace":
            data[pos] = byte
        else:
            del data[pos]
    blob = bytes(data)
    if draw(st.booleans()):
        blob = gzip.compress(blob, mtime=0)
        if draw(st.booleans()):
            blob = blob[: draw(st.integers(0, len(blob)))]
    return kind, blob
