"""Shared helpers of the side-by-side benchmarks: synthetic corpus, timing, tables, machine facts.

Not a test module (pytest collects only ``test_*.py``). The scripts in this folder import it as a
sibling module, which works because Python puts a script's own folder first on ``sys.path``.

bm25lab is imported as installed (``pip install -e ".[bench]"`` or a wheel), never from the checkout:
the checkout's root is not put on ``sys.path`` (its ``bm25lab/`` folder would shadow the installed
package, whose sub-packages are mapped from ``engine/``, ``evaluation/`` and ``corpora/``), and
child processes run in a temporary folder. ``ROOT`` is only where ``git`` reads the commit.

Timing protocol: every repetition runs every system once, in an order rotated by one each
repetition (so no system always runs first on a cold cache); the figure reported is the median
over repetitions; ratios are ``bm25lab time / peer time`` (below 1 means bm25lab is faster).
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parents[2]  # the checkout, for its commit only (see the docstring)


# ---------------------------------------------------------------------- synthetic corpus
@dataclass(frozen=True)
class SyntheticConfig:
    """Sizes of the synthetic Zipf collection (the issue's full size by default)."""

    docs: int = 150_000
    doc_len: int = 120
    vocab: int = 200_000
    queries: int = 1_000
    zipf_s: float = 1.0
    seed: int = 0

    @classmethod
    def small(cls) -> "SyntheticConfig":
        return cls(docs=5_000, doc_len=120, vocab=20_000, queries=200)


@dataclass
class Synthetic:
    """One synthetic collection: the same tokens as whitespace-joined texts and as token lists.

    Term ``r`` (0-based frequency rank) is the string ``"w{r}"``; a document has a Poisson number of
    terms (mean ``doc_len``, at least one), each drawn from p(r) proportional to 1 / (r + 1) ** s.
    Queries have 2 to 7 distinct terms drawn from the same distribution restricted to the terms
    that occur in the corpus (so every system sees only known terms).
    """

    config: SyntheticConfig
    doc_ids: list[str]
    texts: list[str]
    tokens: list[list[str]]
    query_tokens: list[list[str]]
    vocab: list[str] = field(repr=False)
    token_ids: list[np.ndarray] = field(repr=False)

    @property
    def query_texts(self) -> dict[str, str]:
        return {f"q{i}": " ".join(q) for i, q in enumerate(self.query_tokens)}

    def bm25s_ids(self) -> tuple[list[list[int]], dict[str, int]]:
        """The corpus as bm25s's pre-tokenized ``(ids, vocab)`` form (ids renumbered densely)."""
        used = np.unique(np.concatenate(self.token_ids))
        remap = np.full(self.config.vocab, -1, dtype=np.int64)
        remap[used] = np.arange(used.shape[0])
        ids = [remap[t].tolist() for t in self.token_ids]
        return ids, {self.vocab[int(r)]: i for i, r in enumerate(used)}


def zipf_probabilities(vocab: int, s: float) -> np.ndarray:
    weights = 1.0 / np.arange(1, vocab + 1, dtype=np.float64) ** s
    return weights / weights.sum()


def make_synthetic(config: SyntheticConfig) -> Synthetic:
    """Generate the collection of ``config`` (deterministic for a given seed)."""
    rng = np.random.default_rng(config.seed)
    probs = zipf_probabilities(config.vocab, config.zipf_s)
    lengths = np.maximum(rng.poisson(config.doc_len, config.docs), 1)
    flat = rng.choice(config.vocab, size=int(lengths.sum()), p=probs).astype(np.int32)
    bounds = np.concatenate(([0], np.cumsum(lengths)))
    vocab = [f"w{r}" for r in range(config.vocab)]
    words = np.array(vocab, dtype=object)
    token_ids = [flat[bounds[i]:bounds[i + 1]] for i in range(config.docs)]
    tokens = [words[t].tolist() for t in token_ids]  # shares the vocabulary's string objects
    texts = [" ".join(t) for t in tokens]
    present = np.unique(flat)
    q_probs = probs[present] / probs[present].sum()
    query_tokens = []
    for n in rng.integers(2, 8, size=config.queries):
        ranks = rng.choice(present, size=int(n), replace=False, p=q_probs)
        query_tokens.append([vocab[int(r)] for r in ranks])
    doc_ids = [f"d{i}" for i in range(config.docs)]
    return Synthetic(config, doc_ids, texts, tokens, query_tokens, vocab, token_ids)


# ---------------------------------------------------------------------- timing
def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def alternate(systems: dict[str, Callable[[], Any]], reps: int,
              between: Callable[[], Any] | None = None) -> dict[str, list[float]]:
    """Run every system once per repetition, rotating the order; wall seconds per system. What a
    run returns is dropped at once; ``between`` (e.g. ``gc.collect``) runs after each, untimed."""
    names = list(systems)
    times: dict[str, list[float]] = {name: [] for name in names}
    for rep in range(reps):
        shift = rep % len(names)
        for name in names[shift:] + names[:shift]:
            times[name].append(timed(systems[name])[0])
            if between is not None:
                between()
    return times


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def rss_mb() -> float:
    """This process's resident set size (VmRSS) in MiB."""
    with open("/proc/self/status", encoding="ascii") as stream:
        for line in stream:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("VmRSS not found in /proc/self/status")


# ---------------------------------------------------------------------- reporting
def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def cell(value: Any) -> str:
        if isinstance(value, float):
            if value == 0 or abs(value) >= 100:
                return f"{value:,.0f}"
            return f"{value:.3g}" if abs(value) < 10 else f"{value:.1f}"
        return str(value)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def ratio(ours: float, theirs: float) -> str:
    """``ours / theirs`` with two decimals, or '-' when undefined."""
    return f"{ours / theirs:.2f}" if theirs else "-"


def write_json(path: str | None, payload: dict[str, Any]) -> None:
    if path:
        Path(path).write_text(json.dumps(payload, indent=1, default=float), encoding="utf-8")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as stream:
            for line in stream:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _version(module: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(module)
    except PackageNotFoundError:
        return "not installed"


def source_version() -> str:
    """The measured bm25lab tree: short commit, plus ``+local changes`` if engine/ or evaluation/ differ from it."""
    import subprocess

    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    changed = git("status", "--porcelain", "--", "bm25lab", "engine", "evaluation", "corpora", "pyproject.toml")
    checkout = commit + (" + local changes" if changed else "")
    import importlib.util

    spec = importlib.util.find_spec("bm25lab")  # where it would be imported from (nothing is executed)
    origin = Path(spec.origin).resolve().parent if spec and spec.origin else None
    if origin is None or origin.is_relative_to(ROOT):
        return checkout  # an editable install of this checkout
    return f"{_version('bm25lab')} installed at {origin} (not this checkout, which is at {checkout})"


def machine_info() -> dict[str, str]:
    """Facts to print beside the figures: cores, CPU, memory, versions, date."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    mem = "unknown"
    try:
        with open("/proc/meminfo", encoding="ascii") as stream:
            mem = f"{int(stream.readline().split()[1]) / 1024 ** 2:.0f} GiB"
    except OSError:
        pass
    return {
        "date": _dt.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "bm25lab": source_version(),
        "loadavg": f"{os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else "unknown",
        "nproc": str(cores),
        "cpu": _cpu_model(),
        "memory": mem,
        "os": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "bm25s": _version("bm25s"),
        "numba": _version("numba"),
        "rank-bm25": _version("rank-bm25"),
        "jieba": _version("jieba"),
        "pyterrier-pisa": _version("pyterrier-pisa"),
        "python-terrier": _version("python-terrier"),
        "tantivy": _version("tantivy"),
    }


def machine_line(info: dict[str, str]) -> str:
    return (f"{info['date']}, bm25lab {info.get('bm25lab', 'unknown')}; {info['cpu']}, {info['nproc']} cores, {info['memory']} RAM, {info['os']}; "
            f"Python {info['python']}, numpy {info['numpy']}, bm25s {info['bm25s']}, numba {info['numba']}, "
            f"rank-bm25 {info['rank-bm25']}, jieba {info['jieba']}, pyterrier-pisa {info.get('pyterrier-pisa', '?')}, "
            f"tantivy {info.get('tantivy', '?')}; 1-min load average at start {info['loadavg']}")


def quiet_logs() -> None:
    """Silence bm25s's and jieba's info logging (the benchmark prints its own tables)."""
    import logging

    for name in ("bm25s", "jieba"):
        logging.getLogger(name).setLevel(logging.ERROR)
