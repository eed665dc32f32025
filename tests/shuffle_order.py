"""A pytest plugin (``-p shuffle_order``, with ``tests/`` on ``PYTHONPATH``) that runs the collected
tests in a seeded random order, ``$BM25LAB_TEST_ORDER_SEED``, and prints that order first; used by
tests/test_order_independence.py. Not a test module: pytest collects it only when asked to load it."""
from __future__ import annotations

import os
import random

import pytest


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    random.Random(int(os.environ["BM25LAB_TEST_ORDER_SEED"])).shuffle(items)
    print("ORDER " + " ".join(item.nodeid for item in items), flush=True)
