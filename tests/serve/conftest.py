"""What the serve tests share: a Cranfield index with a year in each document's metadata (from its
bibliography), a run of its queries and its qrels, and an app serving them."""
from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest

pytest.importorskip("fastapi", reason="the serve extra (fastapi, uvicorn) is part of the test extra")


def cranfield_documents() -> list[dict[str, Any]]:
    """Cranfield's documents as dicts, each with ``year`` (an int, from its bibliography, when it names one)."""
    from bm25lab import corpora

    docs = []
    for doc in corpora.get("cranfield").documents():
        row: dict[str, Any] = {"id": doc.id, "title": doc.title, "text": doc.text, **doc.metadata}
        found = re.search(r"\b(19[4-6]\d)\b", doc.metadata.get("bib", ""))
        if found:
            row["year"] = int(found.group(1))
        docs.append(row)
    return docs


@pytest.fixture(scope="session")
def served_files(tmp_path_factory) -> dict[str, Path]:
    """An index of Cranfield with years, a run of its judged queries, its qrels."""
    from bm25lab import corpora
    from bm25lab.engine import Index, Tokenizer
    from bm25lab.evaluation import write_run

    root = tmp_path_factory.mktemp("served")
    index = Index.build(cranfield_documents(), tokenizer=Tokenizer("en"), workers=1)
    index.save(root / "cran")
    collection = corpora.get("cranfield")
    write_run(index.search_many(collection.judged_queries(), k=100), root / "bm25.run", tag="bm25")
    return {"index": root / "cran", "run": root / "bm25.run", "qrels": Path(collection.qrels_path), "root": root}


def config_of(files: dict[str, Path], **options: Any) -> Any:
    from bm25lab.serve import ServeConfig

    return ServeConfig(indexes=(("cran", files["index"]),), runs=(("bm25.run", files["run"]),),
                       qrels=(("cranfield", files["qrels"]),), **options)


@pytest.fixture(scope="session")
def app(served_files) -> Any:
    from bm25lab.serve import create_app

    return create_app(config_of(served_files))


def make_client(app: Any) -> Any:
    """Starlette's TestClient of ``app`` (its import warns that it would rather run on another HTTP client)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient
    return TestClient(app)


@pytest.fixture(scope="session")
def client(app) -> Iterator[Any]:
    with make_client(app) as made:
        yield made


@pytest.fixture()
def index_copy(served_files, tmp_path) -> Path:
    """A copy of the served index that a test may change."""
    target = tmp_path / "cran"
    shutil.copytree(served_files["index"], target)
    return target
