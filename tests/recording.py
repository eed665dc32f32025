"""Test helpers shared by test modules (``tests/`` is on ``sys.path`` under pytest, as for ``fuzzing``)."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np


def pandas_stand_in(folder: Path) -> tuple[dict[str, str], Path]:
    """An environment for a child process in which ``import pandas`` finds a stand-in that creates
    the returned marker file and fails (as if pandas were not installed): whether pandas is installed
    or not, the marker tells whether anything tried to import it (pyarrow does on its conversions)."""
    stand_in = folder / "stand-in-site" / "pandas"
    stand_in.mkdir(parents=True)
    marker = folder / "pandas-imported"
    (stand_in / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\nraise ImportError('stand-in')\n")
    path = os.pathsep.join([str(stand_in.parent), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path}, marker


def as_version_2(index_path: Path, pairs: bool = True) -> None:
    """Rewrite the index at ``index_path`` as bm25lab 0.2.1 wrote it (format version 2): each segment's
    postings as plain ``doc_nums.npy`` and ``tfs.npy``, with (``pairs``) or without (0.2.0) its
    ``pair_codes.npy`` and ``pairs.npy``; the manifest's records and checksum made again."""
    import json

    from bm25lab.engine import storage
    from bm25lab.engine.codec import Blocks, decode_numpy, term_starts

    manifest = json.loads((index_path / storage.MANIFEST).read_text())
    for entry in manifest["segments"]:
        folder = index_path / entry["name"]
        if "blocks.npy" not in entry["files"]:
            continue
        offsets = np.load(folder / "offsets.npy")
        blocks = Blocks(np.load(folder / "last_docs.npy"), np.load(folder / "positions.npy"),
                        np.load(folder / "blocks.npy"), np.load(folder / "bound_codes.npy"),
                        np.load(folder / "bound_pairs.npy"), term_starts(offsets))
        docs, tfs = decode_numpy(blocks, offsets, 0, int(offsets[-1]))
        saved = np.load(folder / "pairs.npy")
        written = {"doc_nums.npy": docs, "tfs.npy": tfs}
        if pairs:  # each posting's code: the position of its (tf, length) among the sorted pairs
            lengths = np.load(folder / "doc_lengths.npy")[docs]
            keys = (saved[0] << 32) | saved[1]
            codes = np.searchsorted(keys, (tfs.astype(np.int64) << 32) | lengths)
            written["pair_codes.npy"] = codes.astype(np.uint16 if saved.shape[1] <= 1 << 16 else np.uint32)
        for name in ("last_docs.npy", "positions.npy", "blocks.npy", "bound_codes.npy", "bound_pairs.npy",
                     "pairs.npy"):
            (folder / name).unlink()
            del entry["files"][name]
        if pairs:
            written["pairs.npy"] = saved
        for name, array in written.items():
            np.save(folder / name, array)
            entry["files"][name] = {"bytes": (folder / name).stat().st_size,
                                    "sha256": storage.sha256_file(folder / name)}
    manifest["format_version"] = 2
    manifest["checksum"] = storage.manifest_checksum(manifest)
    (index_path / storage.MANIFEST).write_text(json.dumps(manifest))


def without_saved_pairs(index_path: Path) -> None:
    """Make the index at ``index_path`` one saved before its pairs were (bm25lab 0.2.0, format version 2)."""
    as_version_2(index_path, pairs=False)


def zipf_documents(n_docs: int, vocab: int, seed: int, longest: int = 80
                   ) -> tuple[list[tuple[str, str]], np.ndarray, np.ndarray, np.random.Generator]:
    """``n_docs`` documents ``("d<i>", text)`` of 1 to ``longest - 1`` words ``w<r>`` drawn with
    probability proportional to 1 / (r + 1) from ``vocab`` words; with every word drawn, the
    probabilities and the generator, for queries of the same distribution."""
    rng = np.random.default_rng(seed)
    probs = 1.0 / np.arange(1, vocab + 1)
    probs /= probs.sum()
    lengths = rng.integers(1, longest, n_docs)
    flat = rng.choice(vocab, size=int(lengths.sum()), p=probs)
    bounds = np.concatenate(([0], np.cumsum(lengths)))
    docs = [(f"d{i}", " ".join(f"w{t}" for t in flat[bounds[i]:bounds[i + 1]])) for i in range(n_docs)]
    return docs, flat, probs, rng


class TooManySteps(AssertionError):
    """More lines of Python ran than :func:`at_most_python_steps` allowed."""


def at_most_python_steps(limit: int):
    """A context manager under which at most ``limit`` lines of Python run (counted by ``sys.settrace``, in
    every function called); one more raises :class:`TooManySteps` at once. What C code does (numpy,
    pyarrow, the compiled core) costs no step, so a test can tell a loop in C from a Python step per
    line of input without timing anything."""
    import sys
    from contextlib import contextmanager

    @contextmanager
    def counting():
        steps = [0]

        def trace(frame, event, arg):  # noqa: ANN001, ANN202 - sys.settrace's signature
            if event == "line":
                steps[0] += 1
                if steps[0] > limit:
                    raise TooManySteps(f"more than {limit} lines of Python ran")
            return trace

        previous = sys.gettrace()
        sys.settrace(trace)
        try:
            yield steps
        finally:
            sys.settrace(previous)

    return counting()
