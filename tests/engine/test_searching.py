"""The search protocol every kind of index shares (:mod:`bm25lab.engine.searching`): the parameters of a
search as one ``Params`` or as keywords, the same results either way, checked once and named when bad."""
from __future__ import annotations

from pathlib import Path

import pytest

from bm25lab.engine import Index, ParameterError, ShardedIndex, Tokenizer
from bm25lab.engine.scoring import Params
from bm25lab.engine.searching import Searcher

DOCS = [(f"d{i}", text) for i, text in enumerate(["wing flow flow", "boundary layer flow", "wing", "layer layer",
                                                   "flow over a wing", "heat transfer"])]
QUERIES = {"1": "wing flow", "2": "layer", "3": "nothing here"}


def test_every_kind_of_index_is_a_searcher() -> None:
    from bm25lab.distributed import DistributedIndex

    assert all(issubclass(kind, Searcher) for kind in (Index, ShardedIndex, DistributedIndex))


@pytest.fixture(scope="module")
def indexes(tmp_path_factory) -> list:
    tokenizer = Tokenizer("en")
    single = Index.build(DOCS, tokenizer=tokenizer, workers=1)
    sharded = ShardedIndex.build(DOCS, tmp_path_factory.mktemp("sharded") / "idx", 2, tokenizer, workers=1)
    return [single, sharded]


@pytest.mark.parametrize("kind", [0, 1])
def test_params_as_one_value_equal_the_keywords(indexes, kind: int) -> None:
    index = indexes[kind]
    params = Params("bm25+", 1.2, 0.6, k3=2.0)
    keywords = dict(variant="bm25+", k1=1.2, b=0.6, k3=2.0)
    assert index.search("wing flow", k=3, params=params) == index.search("wing flow", k=3, **keywords)
    assert index.search_tokens(["wing"], k=3, params=params) == index.search_tokens(["wing"], k=3, **keywords)
    got, expected = index.search_many(QUERIES, k=5, params=params), index.search_many(QUERIES, k=5, **keywords)
    assert {q: list(h) for q, h in got.items()} == {q: list(h) for q, h in expected.items()}
    assert index.params(**keywords) == Params("bm25+", 1.2, 0.6, 1.0, 2.0)  # checked: the variant's delta
    with pytest.raises(ParameterError, match="not both .*k1"):
        index.search("wing", params=params, k1=2.0)
    with pytest.raises(ParameterError, match="must be a Params"):
        index.search("wing", params={"k1": 2.0})
    with pytest.raises(ParameterError, match="b must be between 0 and 1"):
        index.search_many(QUERIES, params=Params(b=2.0))


def test_a_sharded_and_a_single_index_agree_through_the_protocol(indexes) -> None:
    single, sharded = indexes
    for params in (Params(), Params("okapi", 1.5, 0.75), Params("bm25l", k3=0.5)):
        a, b = single.search_many(QUERIES, k=4, params=params), sharded.search_many(QUERIES, k=4, params=params)
        assert {q: (h.doc_ids, h.scores) for q, h in a.items()} == {q: (h.doc_ids, h.scores) for q, h in b.items()}
    with pytest.raises(ParameterError, match="a sharded index has no fields"):
        sharded.search("wing", field_weights="title=2")


def test_field_parameters_reach_an_index_with_fields(tmp_path: Path) -> None:
    docs = [{"id": f"d{i}", "title": title, "text": text}
            for i, (title, text) in enumerate([("wing", "flow"), ("flow", "wing wing"), ("heat", "layer")])]
    index = Index.build(docs, tokenizer=Tokenizer("en"), fields=["title", "text"], workers=1)
    params = index.params(field_weights="title=3", field_b="text=0.2")
    assert params.fields == (("title", 3.0, 0.4), ("text", 1.0, 0.2))
    assert index.search("wing", params=params) == index.search("wing", field_weights="title=3", field_b="text=0.2")
    assert index.search("wing", params=params) != index.search("wing")
