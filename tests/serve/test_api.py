"""The HTTP API (:mod:`bm25lab.serve.app`) through Starlette's TestClient: the same hits and scores as the
command line, batches, documents, facts, writes behind the token, an index committed to by another
process served at its new state, the evaluation view's figures, and every bad request a 4xx."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from bm25lab.cli import app as cli
from bm25lab.engine import Index

from .conftest import config_of, make_client

QUERIES = ["boundary layer transition", "heat transfer in hypersonic flow", "wing flutter", "what similarity laws"]


def cli_json(index: Path, query: str, *args: str) -> list[dict[str, Any]]:
    result = CliRunner().invoke(cli, ["search", str(index), query, "--format", "json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("options", [
    {},
    {"k": "25", "variant": "okapi", "k1": "1.2", "b": "0.75"},
    {"k": "7", "variant": "bm25+", "k3": "2", "where": ["year>=1960", "author exists"], "where_not": ["year=1962"]},
])
def test_get_search_answers_what_the_command_line_prints(client, served_files, query: str, options: dict) -> None:
    args: list[str] = []
    for name, value in options.items():
        for one in value if isinstance(value, list) else [value]:
            args += ["-k" if name == "k" else f"--{name.replace('_', '-')}", one]
    expected = cli_json(served_files["index"], query, *args)
    response = client.get("/search", params={"q": query, **options})
    assert response.status_code == 200, response.text
    hits = response.json()["hits"]
    assert [(h["rank"], h["doc_id"], h["score"], h["title"]) for h in hits] == \
        [(r["rank"], r["doc_id"], r["score"], r["title"]) for r in expected]
    assert len(hits) == int(options.get("k", 10))


def test_filters_reach_the_search_and_are_echoed(client) -> None:
    body = client.get("/search", params={"q": "boundary layer", "k": 50, "where": ["year<1955"],
                                         "where_not": ['author=""']}).json()
    assert body["where"] == {"where": ["year<1955"], "where_not": ['author=""']}
    assert body["hits"] and all(h["metadata"]["year"] < 1955 and h["metadata"]["author"] for h in body["hits"])


def test_pages_are_slices_of_one_ranking(client) -> None:
    whole = client.get("/search", params={"q": "supersonic wing", "k": 30}).json()["hits"]
    pages = [client.get("/search", params={"q": "supersonic wing", "k": 10, "offset": offset}).json()
             for offset in (0, 10, 20)]
    assert [h for page in pages for h in page["hits"]] == whole
    assert [page["more"] for page in pages] == [True, True, True]
    assert [h["rank"] for h in pages[1]["hits"]] == list(range(11, 21))


def test_snippets_highlight_the_query_terms(client) -> None:
    hit = client.get("/search", params={"q": "boundary layers", "k": 1, "snippets": "true"}).json()["hits"][0]
    text, spans = hit["snippet"]["text"], hit["snippet"]["highlights"]
    assert spans and {text[a:b].lower() for a, b in spans} <= {"boundary", "layer", "layers", "boundary-layer"}


def test_a_batch_answers_what_search_many_gives(client, served_files) -> None:
    index = Index.load(served_files["index"])
    queries = {f"q{i}": text for i, text in enumerate(QUERIES)}
    for body in ({"queries": queries, "k": 20}, {"queries": QUERIES, "k": 5, "variant": "atire", "b": 0.3,
                                                 "where": {"year": {">=": 1958}}, "titles": True}):
        response = client.post("/search", json=body)
        assert response.status_code == 200, response.text
        parameters = {key: value for key, value in body.items() if key not in ("queries", "titles")}
        expected = index.search_many(body["queries"], **parameters)
        got = response.json()["results"]
        assert list(got) == list(expected)
        for qid, hits in expected.items():
            assert [(r["doc_id"], r["score"]) for r in got[qid]] == list(zip(hits.doc_ids, hits.scores))
            if body.get("titles"):
                assert [r["title"] for r in got[qid]] == [h.title for h in hits]


def test_documents_facts_and_indexes(client, served_files) -> None:
    index = Index.load(served_files["index"])
    document = client.get("/documents/272").json()
    stored = index.document("272")
    assert (document["doc_id"], document["title"], document["text"], document["metadata"]) == \
        (stored.id, stored.title, stored.text, dict(stored.metadata))
    assert client.get("/documents/99999").status_code == 404
    info = client.get("/info").json()
    assert (info["name"], info["documents"], info["terms"]) == ("cran", index.num_docs, index.num_terms)
    assert info["metadata_keys"] == ["author", "bib", "year"] and "path" not in info
    assert info["tokenizer"]["language"] == "en" and info["limits"]["max_k"] == 1000 and info["writes"] is False
    assert client.get("/indexes").json() == {"default": "cran", "indexes": [
        {"name": "cran", "documents": 1400, "terms": index.num_terms, "language": "en", "shards": None}]}


def test_several_indexes_are_served_under_their_names(served_files, tmp_path) -> None:
    from bm25lab.engine import ShardedIndex, Tokenizer
    from bm25lab.serve import ServeConfig, create_app

    from .conftest import cranfield_documents

    ShardedIndex.build(cranfield_documents()[:500], tmp_path / "sharded", 3, Tokenizer("en"), workers=1)
    config = ServeConfig(indexes=(("cran", served_files["index"]), ("part", tmp_path / "sharded")))
    with make_client(create_app(config)) as client:
        listed = client.get("/indexes").json()
        assert [i["name"] for i in listed["indexes"]] == ["cran", "part"] and listed["indexes"][1]["shards"] == 3
        one = ShardedIndex.load(tmp_path / "sharded").search("boundary layer", k=5, where="year>=1960")
        got = client.get("/search", params={"q": "boundary layer", "k": 5, "index": "part", "where": "year>=1960"})
        assert [(h["doc_id"], h["score"]) for h in got.json()["hits"]] == list(zip(one.doc_ids, one.scores))
        assert client.get("/search", params={"q": "x", "index": "nope"}).status_code == 404


# ------------------------------------------------------------------ bad requests: 4xx, one line each
BAD_GETS = [
    ({"q": "wing", "k": 0}, 422, "k"),
    ({"q": "wing", "k": -5}, 422, "k"),
    ({"q": "wing", "k": 10 ** 30}, 422, "max_k"),
    ({"q": "wing", "k": 1001}, 422, "max_k"),
    ({"q": "wing", "k": 10, "offset": 995}, 422, "offset + k"),
    ({"q": "wing", "k": "ten"}, 422, "k"),
    ({"q": "wing", "offset": -1}, 422, "offset"),
    ({"k": 3}, 422, "q"),
    ({"q": "wing", "colour": "red"}, 422, "unknown parameter 'colour'"),
    ({"q": "wing", "where": "year>>3"}, 400, "bad filter"),
    ({"q": "wing", "where": "year"}, 400, "bad filter"),
    ({"q": "wing", "variant": "bm99"}, 400, "unknown BM25 variant"),
    ({"q": "wing", "k1": "nan"}, 400, "k1"),
    ({"q": "wing", "b": 2}, 400, "b must be between 0 and 1"),
    ({"q": "wing", "field_weights": "title=2"}, 400, "without fields"),
    ({"q": "wing", "index": "other"}, 404, "no index named 'other'"),
    ({"q": "w" * 10_001}, 422, "q"),
]


@pytest.mark.parametrize("params, status, words", BAD_GETS)
def test_bad_searches_are_4xx_with_one_line(client, params: dict, status: int, words: str) -> None:
    response = client.get("/search", params=params)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert words in error and "\n" not in error


BAD_POSTS: list[tuple[Any, int, str]] = [
    (b"{not json", 422, "not valid JSON"),
    (b"", 422, ""),
    (b"[]", 422, ""),
    (b'{"queries": ["a"], "k": 5, "colour": "red"}', 422, "colour"),
    (b'{"queries": ["a"], "k": -1}', 422, "k"),
    (b'{"queries": ["a"], "k": 100000000000000000000000000000}', 422, "max_k"),
    (b'{"queries": ["a"], "k": 1e400}', 422, "k"),
    (b'{"queries": ["a"], "k1": NaN}', 400, "k1"),
    (b'{"queries": ["a"], "where": {"year": {"~": 1}}}', 400, "unknown operator"),
    (b'{"queries": ["a"], "where": 42}', 422, "where"),
    (b'{"queries": "just text"}', 422, "queries"),
    (b'{"queries": {"a": 3}}', 422, "queries"),
    (b'{"queries": []}', 200, ""),
    (json.dumps({"queries": ["a"] * 1001}).encode(), 422, "at most 1,000 queries"),
    (b"[" * 50_000 + b"]" * 50_000, 400, "parsing the body"),
    (b'{"queries": ["a"], "index": "nope"}', 404, "no index"),
]


@pytest.mark.parametrize("body, status, words", BAD_POSTS)
def test_bad_batches_are_4xx(client, body: bytes, status: int, words: str) -> None:
    response = client.post("/search", content=body, headers={"content-type": "application/json"})
    assert response.status_code == status, response.text
    if status != 200:
        assert words in response.json()["error"]


def test_bodies_over_the_limit_are_413_whole_or_streamed(served_files) -> None:
    from bm25lab.serve import Limits, create_app

    with make_client(create_app(config_of(served_files, limits=Limits(max_body_bytes=1000)))) as client:
        big = json.dumps({"queries": ["boundary layer " * 100]}).encode()
        assert client.post("/search", content=big, headers={"content-type": "application/json"}).status_code == 413

        def chunks():  # no Content-Length: counted as it comes
            for _ in range(10):
                yield b" " * 200

        assert client.post("/search", content=chunks(), headers={"content-type": "application/json"}).status_code == 413
        assert client.post("/search", json={"queries": ["wing"]}).status_code == 200


def test_a_request_past_the_time_limit_is_503(served_files) -> None:
    from bm25lab.serve import Limits, create_app

    with make_client(create_app(config_of(served_files, limits=Limits(timeout_seconds=1e-9)))) as client:
        response = client.get("/search", params={"q": "boundary layer"})
        assert response.status_code == 503 and "longer than" in response.json()["error"]


def test_unknown_routes_and_methods(client) -> None:
    assert client.get("/nothing").status_code == 404
    assert client.put("/search").status_code == 405
    assert client.get("/documents/").status_code == 404


# ------------------------------------------------------------------ writes
def test_writes_are_refused_on_a_read_only_server(client) -> None:
    before = client.get("/info").json()["documents"]
    answer = client.post("/documents", json={"documents": [{"id": "x", "text": "y"}]})
    assert answer.status_code == 403 and "read-only" in answer.json()["error"]
    assert client.delete("/documents/272").status_code == 403
    assert client.get("/documents/272").status_code == 200 and client.get("/info").json()["documents"] == before


def test_writes_need_the_token(index_copy: Path) -> None:
    from bm25lab.serve import ServeConfig, create_app

    config = ServeConfig(indexes=(("cran", index_copy),), allow_writes=True, token="s3cret")
    new = {"id": "new-1", "title": "Zygomorphic vortices", "text": "zygomorphic vortex shedding", "year": 1999}
    with make_client(create_app(config)) as client:
        for header in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"}):
            answer = client.post("/documents", json={"documents": [new]}, headers=header)
            assert answer.status_code == 401 and "token" in answer.json()["error"]
        good = {"Authorization": "Bearer s3cret"}
        added = client.post("/documents", json={"documents": [new]}, headers=good)
        assert added.status_code == 200, added.text
        assert added.json()["added"] == 1 and added.json()["documents"] == 1401
        hits = client.get("/search", params={"q": "zygomorphic", "where": "year=1999"}).json()["hits"]
        assert [h["doc_id"] for h in hits] == ["new-1"]
        assert client.post("/documents", json={"documents": [{"text": "no id"}]}, headers=good).status_code == 400
        assert client.post("/documents", json={"docs": []}, headers=good).status_code == 422
        assert client.delete("/documents/new-1", headers=good).json()["documents"] == 1400
        assert client.get("/search", params={"q": "zygomorphic"}).json()["hits"] == []
        assert client.delete("/documents/new-1", headers=good).status_code == 404
    assert Index.load(index_copy).num_docs == 1400


def test_a_commit_by_another_process_is_served_without_a_restart(index_copy: Path) -> None:
    from bm25lab.serve import ServeConfig, create_app

    with make_client(create_app(ServeConfig(indexes=(("cran", index_copy),)))) as client:
        assert client.get("/search", params={"q": "quokka"}).json()["hits"] == []
        code = ("import sys\nfrom bm25lab.engine import Index\n"
                "Index.load(sys.argv[1]).add([{'id': 'q1', 'text': 'the quokka flow'}], workers=1)\n")
        subprocess.run([sys.executable, "-c", code, str(index_copy)], check=True, timeout=120)
        hits = client.get("/search", params={"q": "quokka"}).json()["hits"]
        assert [h["doc_id"] for h in hits] == ["q1"]
        assert client.get("/info").json()["documents"] == 1401
        served = client.app.state.catalogue.index("cran")
        assert served.reloads == 1
        client.get("/search", params={"q": "quokka"})
        assert served.reloads == 1  # reloaded once per commit, not per request


# ------------------------------------------------------------------ evaluation
def test_the_evaluation_view_gives_the_librarys_figures(client, served_files) -> None:
    from bm25lab.evaluation import evaluate, read_qrels, read_run
    from bm25lab.evaluation.evaluator import precision_recall_curve

    assert client.get("/evaluation/sources").json() == {
        "runs": ["bm25.run"], "qrels": ["cranfield"], "measures": ["nDCG@10", "AP", "P@10", "R@100", "RR"]}
    answer = client.get("/evaluation", params={"run": "bm25.run", "qrels": "cranfield", "measure": ["nDCG@10", "P.5"]})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    qrels, run = read_qrels(served_files["qrels"]), read_run(served_files["run"])
    expected = evaluate(qrels, run, ["nDCG@10", "P.5"])
    assert body["measures"] == list(expected.measures) and len(body["measures"]) == 2 and body["num_queries"] == 225
    assert body["mean"] == expected.summary and body["per_query"] == expected.per_query
    curve = precision_recall_curve(qrels, run)
    assert body["curve"] == {"recall": list(curve), "precision": list(curve.values())}
    assert client.get("/evaluation", params={"run": "x", "qrels": "cranfield"}).status_code == 404
    assert client.get("/evaluation", params={"run": "bm25.run", "qrels": "cranfield", "measure": "P@x"}).status_code \
        == 400
    assert client.get("/evaluation", params={"run": "bm25.run"}).status_code == 422


# ------------------------------------------------------------------ the reference and the files
def test_the_openapi_reference_and_no_file_from_elsewhere(client) -> None:
    spec = client.get("/openapi.json").json()
    assert {"get", "post"} <= set(spec["paths"]["/search"])
    assert "/documents/{doc_id}" in spec["paths"] and "/evaluation" in spec["paths"]
    for path in ("/", "/docs", "/static/app.js", "/static/style.css"):
        answer = client.get(path)
        assert answer.status_code == 200
        assert "https://" not in answer.text and "//cdn" not in answer.text
    static = Path(__file__).resolve().parents[2] / "bm25lab" / "serve" / "static"
    for file in static.iterdir():
        text = file.read_text(encoding="utf-8")
        assert "https://" not in text and [u for u in __import__("re").findall(r"http://[^\"' ]+", text)
                                             if not u.startswith("http://www.w3.org/2000/svg")] == []
