"""Fuzzing the API with what clients may send (hypothesis, derandomized): query strings of known and unknown
parameters with any values, JSON bodies of any shape, bytes that are not JSON, any document path. The
answer is always a 2xx or a 4xx with a one-line error, never a 5xx."""
from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SETTINGS = settings(max_examples=120, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

SEARCH_PARAMETERS = ["q", "k", "offset", "index", "variant", "k1", "b", "delta", "k3", "field_weights", "field_b",
                     "where", "where_not", "snippets"]
BODY_FIELDS = ["index", "queries", "k", "titles", "variant", "k1", "b", "delta", "k3", "field_weights", "field_b",
               "where", "where_not"]

texts = st.text(max_size=30)
numbers = st.one_of(st.integers(-10 ** 20, 10 ** 20), st.floats(allow_nan=True, allow_infinity=True),
                    st.sampled_from(["0", "-1", "1e309", "nan", "inf", "10", "1001", "0.5", "true", ""]))
conditions = st.one_of(texts, st.sampled_from(["year>=1960", "year in 1958,1959", 'author=""', "author exists",
                                               "year>>1", "=3", "year in", "a in \"x,y\",z", "year<\"1960\""]))
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10 ** 30, 10 ** 30), st.integers(-10 ** 400, 10 ** 400),
                  st.floats(), texts)
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                             st.dictionaries(texts, inner, max_size=4)), max_leaves=12)


def _check(response: Any) -> None:
    assert response.status_code < 500, (response.status_code, response.text)
    if response.status_code >= 400:
        error = response.json()["error"]
        assert isinstance(error, str) and error and "\n" not in error


@SETTINGS
@given(st.lists(st.tuples(st.one_of(st.sampled_from(SEARCH_PARAMETERS), texts),
                          st.one_of(texts, numbers.map(str), conditions)), max_size=8))
def test_any_query_string_of_get_search(client, pairs: list[tuple[str, str]]) -> None:
    _check(client.get("/search", params=pairs))


@SETTINGS
@given(st.dictionaries(st.sampled_from(BODY_FIELDS), st.one_of(json_values, numbers, conditions,
                                                                st.lists(conditions, max_size=3),
                                                                st.dictionaries(texts, texts, max_size=3)),
                       max_size=8),
       st.booleans())
def test_any_json_body_of_post_search(client, body: dict[str, Any], with_queries: bool) -> None:
    if with_queries:
        body.setdefault("queries", ["boundary layer", "wing"])
    _check(client.post("/search", content=json.dumps(body, allow_nan=True).encode(),
                       headers={"content-type": "application/json"}))


@SETTINGS
@given(st.one_of(st.binary(max_size=200), json_values.map(lambda v: json.dumps(v).encode())))
def test_any_bytes_to_every_endpoint_that_takes_a_body(client, body: bytes) -> None:
    for path in ("/search", "/documents"):
        _check(client.post(path, content=body, headers={"content-type": "application/json"}))


@SETTINGS
@given(st.text(min_size=1, max_size=40).filter(lambda s: "?" not in s and "#" not in s),
       st.lists(st.tuples(st.sampled_from(["index", "x"]), texts), max_size=2))
def test_any_document_path(client, doc_id: str, params: list[tuple[str, str]]) -> None:
    from urllib.parse import quote

    _check(client.get("/documents/" + quote(doc_id, safe=""), params=params))
    _check(client.delete("/documents/" + quote(doc_id, safe="")))


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(["run", "qrels", "measure", "other"]),
                          st.one_of(texts, st.sampled_from(["bm25.run", "cranfield", "nDCG@10", "P.5,10", "map",
                                                            "all_trec", "P@-1", "ndcg_cut.x"]))), max_size=6))
def test_any_evaluation_request(client, pairs: list[tuple[str, str]]) -> None:
    _check(client.get("/evaluation", params=pairs))


@pytest.mark.parametrize("path", ["/info", "/indexes", "/evaluation/sources", "/", "/docs", "/openapi.json"])
def test_the_read_endpoints_answer(client, path: str) -> None:
    assert client.get(path).status_code == 200
