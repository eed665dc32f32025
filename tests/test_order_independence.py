"""Tests pass in any order: a representative subset (every backend by name, batches on the default
backend, in-memory growth, k1 = 0 on both backends) runs in a fresh process in seeded random orders
in which a test loading the compiled kernels comes before tests of the numpy path; and, in this
process, the numpy backend runs numpy code whatever was loaded before (once, the compiled kernels
took over every batch in the process after the first test that loaded them, so a broken numpy batch
failed alone and passed in the full run)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
SUBSET = [
    "engine/test_backends.py::test_every_backend_by_name_through_the_public_api",
    "engine/test_backends.py::test_warm_single_searches_equal_cold_ones",
    "engine/test_index.py::test_search_many_parallel_equals_serial",
    "engine/test_index.py::test_prepared_batch_equals_search_many",
    "engine/test_growth.py::test_merged_view_on_the_compiled_path",
    "engine/test_growth.py::test_in_memory_index_grows_in_memory",
    "engine/test_scoring.py::test_k1_zero_counts_each_present_term_once",
    "test_order_independence.py::test_the_numpy_backend_runs_numpy_code_after_the_core_searched",
]


def test_the_numpy_backend_runs_numpy_code_after_the_core_searched(monkeypatch, cranfield) -> None:
    from bm25lab.engine import Index, Tokenizer
    from bm25lab.engine.backends.core_backend import CoreBackend
    from bm25lab.engine.backends.numpy_backend import NumpyBackend

    docs = list(cranfield.documents())[:300]
    queries = dict(list(cranfield.judged_queries().items())[:40])
    compiled = Index.build(docs, Tokenizer("en"), backend="core", workers=1)
    expected = compiled.search_many(queries, k=50)  # the core has searched in this process now
    singles = [compiled.search(t, k=10) for t in queries.values()]
    calls = []
    batch = NumpyBackend.top_k_batch
    monkeypatch.setattr(NumpyBackend, "top_k_batch", lambda self, *a, **k: calls.append(1) or batch(self, *a, **k))

    def no_kernels(*args, **kwargs):
        raise AssertionError("the numpy backend called the compiled kernels")

    monkeypatch.setattr(CoreBackend, "top_k_batch", no_kernels)
    monkeypatch.setattr(CoreBackend, "top_k", no_kernels)
    plain = Index.build(docs, Tokenizer("en"), backend="numpy", workers=1)
    got = plain.search_many(queries, k=50)
    assert calls and got == expected
    assert [plain.search(t, k=10) for t in queries.values()] == singles


@pytest.mark.parametrize("seed", [19])
def test_a_subset_passes_in_random_orders(seed: int, tmp_path: Path) -> None:
    env = dict(os.environ, BM25LAB_TEST_ORDER_SEED=str(seed), PYTHONPATH=os.pathsep.join(
        [str(TESTS), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "shuffle_order", "-p", "no:cacheprovider",
                           "-p", "no:randomly", "--rootdir", str(TESTS.parent), *[str(TESTS / t) for t in SUBSET]],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    order = next(line for line in done.stdout.splitlines() if line.startswith("ORDER ")).split()[1:]
    assert len(order) >= 15 and order != sorted(order)
    # the order that once broke things: the compiled path taken before a test of the numpy path or of a batch
    first_core = min(i for i, node in enumerate(order) if "core" in node or "compiled" in node)
    assert any(("numpy" in node or "search_many" in node or "prepared_batch" in node) for node in order[first_core:])
