"""bm25lab.experiments: collections (bundled or a folder), the cached index, and the whole pipeline,
whose figures are the README's results table."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from bm25lab import corpora
from bm25lab.engine.errors import InputError
from bm25lab.experiments import cached_index, experiment, open_collection

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_results() -> dict[str, tuple[int, float, float, float]]:
    """The README's "Results on the bundled collections" table, read from the README itself:
    {collection: (queries, nDCG@10, AP, P@10)} (its language and documents columns are corpora's own
    facts: checked in test_the_readme_table_lists_every_bundled_collection)."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Results on the bundled collections"):]
    section = section[:section.index("\n## ", 1)]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and cells[0] in corpora.names():
            name, language, documents = cells[:3]
            assert (language, int(documents.replace(",", ""))) == (corpora.get(name).language,
                                                                  corpora.get(name).num_docs), name
            rows[name] = (int(cells[3].replace(",", "")), float(cells[4]), float(cells[5]), float(cells[6]))
    return rows


README_RESULTS = readme_results()


def test_the_readme_table_lists_every_bundled_collection() -> None:
    assert sorted(README_RESULTS) == sorted(corpora.names())


@pytest.mark.parametrize("name", sorted(README_RESULTS))
def test_the_readme_results_table(name: str) -> None:
    queries, ndcg, ap, p10 = README_RESULTS[name]
    result = experiment(name, measures=["nDCG@10", "AP", "P@10"])
    assert result.evaluation.num_queries == len(result.results) == queries
    assert [round(result.evaluation.mean[m], 4) for m in ("nDCG@10", "AP", "P@10")] == [ndcg, ap, p10]


def test_the_index_is_cached_per_tokenizer(tmp_path: Path, monkeypatch) -> None:
    from bm25lab.engine import Tokenizer

    monkeypatch.setenv("BM25LAB_CACHE_DIR", str(tmp_path))
    collection = open_collection("cisi")
    first, cached = cached_index(collection, Tokenizer("en"))
    assert not cached and first.num_docs == 1460
    again, cached = cached_index(collection, Tokenizer("en"))
    assert cached and again.path == first.path
    other, cached = cached_index(collection, Tokenizer("en", stem=False))
    assert not cached and other.path != first.path
    (first.path / "index.json").write_text("{}")  # a damaged cache entry is rebuilt
    rebuilt, cached = cached_index(collection, Tokenizer("en"))
    assert not cached and rebuilt.num_docs == 1460


def test_a_folder_collection_equals_the_bundled_one(tmp_path: Path) -> None:
    bundled = corpora.get("cranfield")
    folder = tmp_path / "cran"
    folder.mkdir()
    for source in (bundled.docs_path, bundled.queries_path, bundled.qrels_path):
        (folder / source.name).write_bytes(source.read_bytes())
    ours = experiment(folder, measures=["nDCG@10", "AP"], k=100)
    theirs = experiment("cranfield", measures=["nDCG@10", "AP"], k=100)
    assert ours.collection.name == "cran" and ours.evaluation.per_query == theirs.evaluation.per_query


def test_collection_errors_name_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="neither a bundled corpus .* nor a folder"):
        open_collection(tmp_path / "nothing")
    (tmp_path / "docs.jsonl").write_text(json.dumps({"id": "a", "text": "x"}) + "\n")
    with pytest.raises(InputError, match=f"{tmp_path}: no file named like the qrels .*: give it with --qrels FILE"):
        open_collection(tmp_path)
    (tmp_path / "qrels.trec").write_text("1 0 a 1\n")
    with pytest.raises(InputError, match=f"{tmp_path}: no file named like the queries .*: give it with --queries FILE"):
        open_collection(tmp_path)


def test_raw_smart_collections_need_no_conversion() -> None:
    """The raw Cranfield and CISI files (tests/data/raw, ../shared/corpora's byte for byte), as they come
    (SMART documents and queries, cranqrel's inverted grades numbering the queries by position, CISI.REL's 'qid docid 0 0'), give the
    bundled collections' figures exactly."""
    raw_files = Path(__file__).resolve().parent / "data" / "raw"
    for name in ("cranfield", "cisi"):
        raw = experiment(raw_files / name, measures=["nDCG@10", "AP", "P@10"], k=100)
        bundled = experiment(name, measures=["nDCG@10", "AP", "P@10"], k=100)
        assert raw.evaluation.per_query == bundled.evaluation.per_query and raw.evaluation.num_queries > 70


def test_search_progress_reports_every_query() -> None:
    seen: list[tuple[int, int]] = []
    result = experiment("cranfield", measures=["AP"], search_progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1] == (225, 225) and all(t == 225 for _, t in seen)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert result.index.info().documents == 1400 and result.index.info().size_bytes > 0


def test_experiment_gives_the_confusion_measures_its_collection_size():
    done = experiment("cranfield", measures=["TP", "TN", "accuracy"], k=100)
    for values in done.evaluation.per_query.values():
        assert values["accuracy"] == pytest.approx((values["TP"] + values["TN"]) / 1400, abs=1e-12)
