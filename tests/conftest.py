"""Shared fixtures: bundled corpora and indexes built once per test session."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("BM25LAB_CACHE_DIR", str(Path(__file__).resolve().parent.parent / ".pytest_cache" / "bm25lab"))


@pytest.fixture(scope="session")
def cranfield():
    from bm25lab import corpora

    return corpora.get("cranfield")


@pytest.fixture(scope="session")
def cmrc():
    from bm25lab import corpora

    return corpora.get("cmrc2018")


@pytest.fixture(scope="session")
def cranfield_index(cranfield):
    from bm25lab.engine import Index, Tokenizer

    return Index.build(cranfield.documents(), tokenizer=Tokenizer("en"))


@pytest.fixture(scope="session")
def cmrc_index(cmrc):
    from bm25lab.engine import Index, Tokenizer

    return Index.build(cmrc.documents(), tokenizer=Tokenizer("zh"))
