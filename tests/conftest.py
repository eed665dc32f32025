"""Shared fixtures: bundled corpora and indexes built once per test session."""
from __future__ import annotations

import os
import shutil
import tempfile

import pytest

# bm25lab's user cache (jieba's dictionary, experiments' indexes, the kernels' mark) goes to a folder
# of this run, removed at its end: nothing is reused from an earlier run or another version of the code
_CACHE = tempfile.mkdtemp(prefix="bm25lab-tests-cache-")
os.environ["BM25LAB_CACHE_DIR"] = _CACHE
# and so does every temporary file, of the tests, of pytest's tmp_path and of the processes they start:
# no test looks at, or leaves anything in, the temporary folder other runs and other programs share
_TMP = tempfile.mkdtemp(prefix="bm25lab-tests-tmp-")
os.environ["TMPDIR"] = _TMP
tempfile.tempdir = _TMP


@pytest.fixture(autouse=True)
def _jiebas_global_words_restored():
    """jieba keeps one process-wide set of words never to return from its HMM (``Force_Split_Words``, which a
    user dictionary's word of frequency 0 joins); while it is not empty bm25lab cuts with the Python replica.
    Each test leaves it as it found it, so that no test depends on the order the tests run in."""
    import sys

    finalseg = sys.modules.get("jieba.finalseg")
    kept = set(finalseg.Force_Split_Words) if finalseg is not None else None
    yield
    finalseg = sys.modules.get("jieba.finalseg")
    if finalseg is not None:
        finalseg.Force_Split_Words.clear()
        finalseg.Force_Split_Words.update(kept or ())


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_CACHE, ignore_errors=True)
    shutil.rmtree(_TMP, ignore_errors=True)


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
