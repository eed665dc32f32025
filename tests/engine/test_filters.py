"""Metadata filters (:mod:`bm25lab.engine.filters`): parsed once, applied exactly inside the top-k.

The reference is brute force: the numpy full ranking of the unfiltered query, filtered by a Python
predicate written here from the documented rules (not the module's code), cut at k. Every variant, both
backends, single searches and batches, k below and above the number of matching documents, an index of
several segments with deletions and a sharded index.
"""
from __future__ import annotations

import math
import operator
import random
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bm25lab.engine import Index, ParameterError, ShardedIndex, Tokenizer
from bm25lab.engine.filters import Filter, parse_condition
from bm25lab.engine.scoring import VARIANTS, Params

WORDS = ["wing", "flow", "layer", "heat", "shock", "wave", "boundary", "plate", "jet", "noise"]
LANGS = ["en", "fr", "de", "zh"]


def make_docs(n: int, seed: int) -> list[dict[str, Any]]:
    """Documents with varied metadata: numbers, numeric strings, lists, booleans, nulls, missing keys."""
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        words = rng.choices(WORDS, weights=[1 / (r + 1) for r in range(len(WORDS))], k=rng.randint(1, 12))
        doc: dict[str, Any] = {"id": f"d{i:04d}", "text": " ".join(words)}
        year = 1960 + rng.randrange(60)
        doc["year"] = str(year) if i % 7 == 0 else year  # some as strings, as CSV gives them
        if i % 11:
            doc["lang"] = LANGS[i % len(LANGS)]
        if i % 5 == 0:
            doc["tags"] = rng.sample(["a", "b", "c"], rng.randint(0, 2))
        if i % 3 == 0:
            doc["draft"] = bool(i % 2)
        if i % 13 == 0:
            doc["doi"] = None
        elif i % 4 == 0:
            doc["doi"] = f"10.{i}"
        doc["date"] = f"{year}-{1 + i % 12:02d}-01"
        docs.append(doc)
    return docs


# ------------------------------------------------------------------ the rules, written out once more
_DECIMAL = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def _number(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str) and _DECIMAL.fullmatch(v.strip()):
        return float(v)
    return None


def _text(v: Any) -> str | None:
    return ("true" if v else "false") if isinstance(v, bool) else v if isinstance(v, str) else None


def _items(meta: dict, key: str) -> list | None:
    if meta.get(key) is None:
        return None
    value = meta[key]
    return [v for v in value if isinstance(v, (str, int, float, bool))] if isinstance(value, list) else \
        [] if isinstance(value, dict) else [value]


def _equal(v: Any, f: Any) -> bool:
    a, b = _number(v), _number(f)
    return (a is not None and b is not None and a == b) or (_text(v) is not None and _text(v) == _text(f))


_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def _holds(meta: dict, key: str, op: str, values: tuple) -> bool:
    items = _items(meta, key)
    if op == "exists":
        return items is not None
    if items is None:
        return False
    if op in ("=", "in"):
        return any(_equal(v, f) for v in items for f in values)
    bound = values[0]
    compare = _COMPARE[op]
    if _number(bound) is not None:
        return any(_number(v) is not None and compare(_number(v), _number(bound)) for v in items)
    return any(_text(v) is not None and compare(_text(v), bound) for v in items)


def passes(meta: dict, where: Filter | None) -> bool:
    if where is None:
        return True
    return (all(_holds(meta, c.key, c.op, c.values) for c in where.where)
            and not any(_holds(meta, c.key, c.op, c.values) for c in where.where_not))


def brute_force(full: Index, query: str, k: int, params: Params, meta: dict[str, dict]) -> tuple[list, list]:
    """The best k that pass, from the numpy index's full unfiltered ranking."""
    ranking = full.search(query, k=full.num_docs, params=Params(params.variant, params.k1, params.b, params.delta,
                                                                 params.k3))
    kept = [(h.doc_id, h.score) for h in ranking if passes(meta[h.doc_id], params.where)][:k]
    return [d for d, _ in kept], [s for _, s in kept]


FILTERS: list[tuple[Any, Any]] = [
    ({"year": {">=": 1990}}, None),
    ({"lang": ["en", "fr"], "year": {"<": 2000}}, None),
    (None, {"tags": "a"}),
    (["year>=1985", "year<=1987"], None),  # few documents: k above the number that pass
    ("draft=true", {"lang": "de"}),
    ({"doi": {"exists": False}}, None),
    ({"lang": "zz"}, None),  # none
    ({"date": {">=": "2001-06-01"}}, ["tags in b,c"]),  # text bounds compare texts
    (["lang in en, zh", "doi exists"], ["year<1970"]),
]
QUERIES = ["wing flow", "boundary layer noise", "jet", "heat heat plate shock wave"]


@pytest.fixture(scope="module")
def collection(tmp_path_factory) -> dict[str, Any]:
    docs = make_docs(400, seed=7)
    meta = {d["id"]: d for d in docs}
    tokenizer = Tokenizer("en", stem=False)
    full = Index.build(docs, tokenizer=tokenizer, workers=1, backend="numpy")
    segmented = {name: Index.build(docs[:150], tokenizer=tokenizer, workers=1, backend=name)
                 for name in ("numpy", "core")}
    for index in segmented.values():  # three segments, with deletions and replaced documents
        index.add(docs[150:300], workers=1)
        index.add(docs[300:], workers=1)
        index.delete([d["id"] for d in docs[::9]])
    live = [d for i, d in enumerate(docs) if i % 9]
    return {"docs": docs, "meta": meta, "full": full, "tokenizer": tokenizer, "segmented": segmented,
            "live_full": Index.build(live, tokenizer=tokenizer, workers=1, backend="numpy"),
            "sharded": {name: ShardedIndex.build(docs, tmp_path_factory.mktemp(f"sharded-{name}") / "idx", 3, tokenizer,
                                                 workers=1, backend=name) for name in ("numpy", "core")},
            "single": {name: Index.build(docs, tokenizer=tokenizer, workers=1, backend=name)
                       for name in ("numpy", "core")}}


def _passing(meta: dict[str, dict], where: Filter | None) -> int:
    return sum(passes(m, where) for m in meta.values())


def _check(index: Any, reference: Index, params: Params, meta: dict[str, dict], ks: list[int]) -> None:
    for k in ks:
        for query in QUERIES:
            hits = index.search(query, k=k, params=params)
            assert (hits.doc_ids, hits.scores) == brute_force(reference, query, k, params, meta), (query, k)
        batch = index.search_many({str(i): q for i, q in enumerate(QUERIES)}, k=k, params=params, workers=2)
        for i, query in enumerate(QUERIES):
            assert (batch[str(i)].doc_ids, batch[str(i)].scores) == brute_force(reference, query, k, params, meta)


@pytest.mark.parametrize("backend", ["numpy", "core"])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_a_filtered_search_equals_brute_force(collection, backend: str, variant: str) -> None:
    meta, full = collection["meta"], collection["full"]
    for where, where_not in FILTERS:
        filt = Filter.of(where, where_not)
        params = Params(variant, 1.1, 0.6, where=filt)
        passing = _passing(meta, filt)
        ks = sorted({1, 5, max(1, passing - 1), passing + 7})
        _check(collection["single"][backend], full, params, meta, ks)
        # the keywords and params= give the same
        kw = collection["single"][backend].search("wing flow", k=5, variant=variant, k1=1.1, b=0.6, where=where,
                                                  where_not=where_not)
        assert kw == collection["single"][backend].search("wing flow", k=5, params=params)


@pytest.mark.parametrize("backend", ["numpy", "core"])
def test_segments_with_deletions_and_a_sharded_index_filter_exactly(collection, backend: str) -> None:
    meta = collection["meta"]
    live_meta = {d["id"]: d for i, d in enumerate(collection["docs"]) if i % 9}
    for where, where_not in FILTERS:
        filt = Filter.of(where, where_not)
        for variant in ("lucene", "bm25+"):
            params = Params(variant, where=filt)
            ks = sorted({3, _passing(live_meta, filt) + 2})
            _check(collection["segmented"][backend], collection["live_full"], params, live_meta, ks)
            ks = sorted({3, _passing(meta, filt) + 2})
            _check(collection["sharded"][backend], collection["full"], params, meta, ks)


def test_a_filter_never_returns_fewer_than_k_while_more_pass(collection) -> None:
    index = collection["single"]["core"]
    hits = index.search("wing", k=20, where={"year": {">=": 2015}})
    matching = [d for d in collection["docs"] if "wing" in d["text"].split() and passes(d, Filter.of({"year": {">=": 2015}}))]
    assert len(hits) == min(20, len(matching)) > 0
    assert all(int(collection["meta"][h]["year"]) >= 2015 for h in hits.doc_ids)


def test_tuning_batches_take_the_filter(collection) -> None:
    index, meta, full = collection["single"]["numpy"], collection["meta"], collection["full"]
    filt = Filter.of({"lang": ["en", "fr"]})
    prepared = index.batch({str(i): q for i, q in enumerate(QUERIES)})
    got = prepared.search(k=6, params=Params("okapi", 1.3, 0.5, where=filt))
    for i, query in enumerate(QUERIES):
        assert (got[str(i)].doc_ids, got[str(i)].scores) == brute_force(full, query, 6, Params("okapi", 1.3, 0.5,
                                                                                                where=filt), meta)


# ------------------------------------------------------------------ parsing


@pytest.mark.parametrize("text, key, op, values", [
    ("year>=1990", "year", ">=", ("1990",)),
    (" year >= 1990 ", "year", ">=", ("1990",)),
    ("lang=en", "lang", "=", ("en",)),
    ("lang==en", "lang", "=", ("en",)),
    ("lang in en,fr", "lang", "in", ("en", "fr")),
    ('title in "a, b", c', "title", "in", ("a, b", "c")),
    ("doi exists", "doi", "exists", ()),
    ('note=""', "note", "=", ("",)),
    ('note="say \\"hi\\""', "note", "=", ('say "hi"',)),
    ("x.y<-2.5e3", "x.y", "<", ("-2.5e3",)),
])
def test_condition_strings(text: str, key: str, op: str, values: tuple) -> None:
    condition = parse_condition(text)
    assert (condition.key, condition.op, condition.values) == (key, op, values)
    assert parse_condition(str(condition)) == condition  # shown as it reads back


@pytest.mark.parametrize("bad", ["year", ">=1990", "year>=", "year in", "year in a,,b", "year ~ 3", "year=a\"b", "year>>3", "year=<3", "lang!=en",
                                 "lang in en,\"fr", "", "   ", "year exists now"])
def test_bad_condition_strings_are_parameter_errors_in_one_line(bad: str) -> None:
    with pytest.raises(ParameterError) as caught:
        parse_condition(bad)
    assert "\n" not in str(caught.value) and "expected" in str(caught.value) or "'in'" in str(caught.value)


@pytest.mark.parametrize("where", [
    {"year": None}, {"year": {}}, {"year": {"~": 3}}, {"year": {"exists": "yes"}}, {"year": []},
    {"year": {"in": 3}}, {"": 3}, {3: 3}, {"year": math.nan}, {"year": [{"a": 1}]}, {"year": {"<": [1, 2]}},
    42, [1, 2], {"year": {"in": list(range(10_001))}}, {"year": 10 ** 400}, {"year": {">": True}},
    {"year": {"<": 10 ** 400}}, {"year": math.inf},
])
def test_bad_mappings_are_parameter_errors(where: Any, collection) -> None:
    with pytest.raises(ParameterError):
        Filter.of(where)
    with pytest.raises(ParameterError):  # before any search: checked once
        collection["single"]["numpy"].search("wing", where=where)


def test_mappings_and_strings_give_the_same_filter() -> None:
    assert Filter.of({"year": {">=": "1990", "<": "2000"}, "lang": ["en", "fr"]}) == \
        Filter.of(["year>=1990", "year<2000", "lang in en,fr"])
    assert Filter.of({"doi": {"exists": False}}) == Filter.of(None, "doi exists")
    assert Filter.of(None, {"doi": {"exists": False}}) == Filter.of("doi exists")
    assert Filter.of(None) is None and Filter.of({}) is None and Filter.of([]) is None


def test_a_filter_given_twice_is_refused(collection) -> None:
    index = collection["single"]["numpy"]
    with pytest.raises(ParameterError, match="not both"):
        index.search("wing", params=Params(where=Filter.of("lang=en")), where="lang=fr")
    with pytest.raises(ParameterError, match="must be a Filter"):
        index.search("wing", params=Params(where={"lang": "en"}))  # type: ignore[arg-type]


def test_values_read_as_numbers_and_texts() -> None:
    docs = [{"id": "a", "text": "x", "v": 7}, {"id": "b", "text": "x", "v": "7"}, {"id": "c", "text": "x", "v": "007"},
            {"id": "d", "text": "x", "v": True}, {"id": "e", "text": "x", "v": [3, "seven"]},
            {"id": "f", "text": "x", "v": None}, {"id": "g", "text": "x", "v": {"n": 7}}, {"id": "h", "text": "x"},
            {"id": "i", "text": "x", "v": "7.0"}, {"id": "j", "text": "x", "v": "nan"}]
    index = Index.build(docs, tokenizer=Tokenizer("en"), workers=1)

    def ids(**kw: Any) -> list[str]:
        return sorted(index.search("x", k=20, **kw).doc_ids)

    assert ids(where={"v": 7}) == ["a", "b", "c", "i"]
    assert ids(where="v=7") == ["a", "b", "c", "i"]
    assert ids(where={"v": "seven"}) == ["e"]
    assert ids(where="v=true") == ids(where={"v": True}) == ["d"]
    assert ids(where="v>=5") == ["a", "b", "c", "i"]  # "nan" is no number
    assert ids(where="v<5") == ["e"]
    assert ids(where="v exists") == ["a", "b", "c", "d", "e", "g", "i", "j"]  # null is missing
    assert ids(where_not="v exists") == ["f", "h"]
    assert ids(where="v>=s") == ["d", "e"]  # a text bound compares texts: "true", "seven" >= "s" > "nan", "7"
    assert ids(where="missing=1") == []
    assert ids(where_not="missing=1") == sorted(d["id"] for d in docs)


def test_masks_are_kept_per_filter_and_follow_the_index(collection, tmp_path: Path) -> None:
    docs = make_docs(60, seed=3)
    index = Index.build(docs, tokenizer=Tokenizer("en"), workers=1)
    index.save(tmp_path / "idx")
    loaded = Index.load(tmp_path / "idx")
    filt = Filter.of("lang=en")
    first = loaded._masks.of(filt)
    assert loaded._masks.of(filt) is first and not first.flags.writeable
    before = loaded.search("wing", k=100, where="lang=en").doc_ids
    loaded.add([{"id": "new", "text": "wing wing wing", "lang": "en"}], workers=1)
    after = loaded.search("wing", k=100, where="lang=en").doc_ids
    assert "new" in after and set(after) - {"new"} == set(before)
    assert np.count_nonzero(loaded._masks.of(filt)) == np.count_nonzero(first) + 1
