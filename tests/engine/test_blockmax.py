"""The core's two exact searches over the postings' blocks (engine/core/search.c: term at a time;
engine/core/blockmax.c: block-max MaxScore over windows of documents, which skips blocks) each give the
numpy specification's documents, order and float64 score bits, through the public API, whichever the
core would choose: every variant (bm25+ and bm25l with their per-query constant, okapi with its idf
floor), k3, BM25F, k from 1 to 5,000, empty, one-term and many-term queries, on the bundled collections
and on generated Zipf collections, sharded indexes and indexes with deleted documents, filtered searches
(a metadata filter's document mask); a property test draws collections, parameters, queries and masks."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from recording import zipf_documents

from bm25lab.engine import Index, ShardedIndex, Tokenizer
from bm25lab.engine.backends import core_backend
from bm25lab.engine.backends.core_backend import BLOCK_MAX, TERM_AT_A_TIME, CoreBackend
from bm25lab.engine.backends.numpy_backend import NumpyBackend
from bm25lab.engine.retrieval import TermBatch
from bm25lab.engine.scoring import VARIANTS, Params

WS = Tokenizer("whitespace", stopwords=None)
SEARCHES = {"term at a time": TERM_AT_A_TIME, "block-max windows": BLOCK_MAX}
NUMPY = NumpyBackend()


@pytest.fixture(params=list(SEARCHES))
def search(request, monkeypatch) -> int:
    """Every search of the core runs as the one the core chooses (whatever k and the documents)."""
    method = SEARCHES[request.param]
    monkeypatch.setattr(core_backend, "search_method", lambda n_docs, k: method)
    return method


def _hits(found) -> dict:
    return {q: [(h.doc_id, float(h.score).hex()) for h in hits] for q, hits in found.items()}


def _same(index: Index, reference: Index, queries: dict[str, str], k: int, **options) -> None:
    """The batch and single searches of ``index`` (the core) give ``reference``'s (numpy) results."""
    assert _hits(index.search_many(queries, k=k, workers=2, **options)) == \
           _hits(reference.search_many(queries, k=k, workers=1, **options))
    for q in list(queries)[:8]:
        assert index.search(queries[q], k=k, **options) == reference.search(queries[q], k=k, **options)


def _zipf(n_docs: int, vocab: int, seed: int, n_queries: int = 60) -> tuple[list, dict[str, str]]:
    docs, flat, probs, rng = zipf_documents(n_docs, vocab, seed, longest=70)
    present = np.unique(flat)
    p = probs[present] / probs[present].sum()
    queries = {f"q{i}": " ".join(f"w{t}" for t in rng.choice(present, size=int(m), p=p))
               for i, m in enumerate(rng.integers(1, 9, n_queries))}
    queries.update({"empty": "", "unknown": "nothere", "one common": "w0", "one rare": f"w{present[-1]}",
                    "repeated": "w0 w0 w1 w1 w1", "many": " ".join(f"w{t}" for t in present[:40])})
    return docs, queries


@pytest.fixture(scope="module")
def cranfield_pair(cranfield_index) -> tuple[Index, Index]:
    """Cranfield searched by the core and by numpy (the same segment)."""
    return (Index(cranfield_index._parts[0].segment, cranfield_index.tokenizer, backend="core"),
            Index(cranfield_index._parts[0].segment, cranfield_index.tokenizer, backend="numpy"))


@pytest.fixture(scope="module")
def zipf_pair() -> tuple[Index, Index, dict[str, str]]:
    docs, queries = _zipf(6_000, 8_000, 13)
    index = Index.build(docs, tokenizer=WS, backend="core", workers=1)
    return index, Index(index._parts[0].segment, WS, backend="numpy"), queries


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_variant_on_cranfield(search: int, variant: str, cranfield_pair, cranfield) -> None:
    index, reference = cranfield_pair
    queries = dict(list(cranfield.judged_queries().items())[:40])
    queries.update({"empty": "", "one": "flow"})
    for k in (1, 10, 100, 5_000):
        _same(index, reference, queries, k, variant=variant)


def test_cmrc_in_chinese(search: int, cmrc_index, cmrc) -> None:
    reference = Index(cmrc_index._parts[0].segment, cmrc_index.tokenizer, backend="numpy")
    queries = dict(list(cmrc.judged_queries().items())[:50])
    for k in (1, 10, 1000):
        for variant in ("lucene", "bm25l"):
            _same(cmrc_index, reference, queries, k, variant=variant)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_variant_on_a_zipf_collection(search: int, variant: str, zipf_pair) -> None:
    index, reference, queries = zipf_pair
    for k in (1, 5, 10, 64, 1000):
        _same(index, reference, queries, k, variant=variant)
    _same(index, reference, queries, 3, variant=variant, k1=0.0, b=1.0)


@pytest.fixture(scope="module")
def filtered_pair() -> tuple[Index, Index, dict[str, str]]:
    """A Zipf collection of three windows with metadata, searched by the core and by numpy."""
    docs, queries = _zipf(10_000, 8_000, 17, n_queries=30)
    rows = [{"id": i, "text": t, "year": 1990 + n % 30, "lang": "fr" if n % 7 == 0 else "en"}
            for n, (i, t) in enumerate(docs)]
    return (Index.build(rows, tokenizer=WS, backend="core", workers=1),
            Index.build(rows, tokenizer=WS, backend="numpy", workers=1), queries)


@pytest.mark.parametrize("where, where_not", [({"year": {">=": 2015}}, None), ("lang=fr", None),
                                              (None, {"year": {"<": 2019}}), ({"year": [1990, 2001]}, "lang=fr")])
def test_filtered_searches(search: int, where, where_not, filtered_pair) -> None:
    # the mask leaves documents out of every window; the windows' and the blocks' bounds stay safe
    index, reference, queries = filtered_pair
    for k in (1, 10, 1000):
        _same(index, reference, queries, k, where=where, where_not=where_not)
    _same(index, reference, queries, 10, variant="bm25+", where=where, where_not=where_not)


def test_k3_and_bm25f(search: int) -> None:
    docs, queries = _zipf(3_000, 5_000, 21)
    fielded = [{"id": i, "title": " ".join(t.split()[:3]), "text": t} for i, t in docs]
    index = Index.build(fielded, tokenizer=WS, backend="core", fields=("title", "text"))
    reference = Index.build(fielded, tokenizer=WS, backend="numpy", fields=("title", "text"))
    for k in (1, 10, 500):
        _same(index, reference, queries, k, k3=1.5)
        _same(index, reference, queries, k, field_weights="title=3,text=1", field_b="title=0.2")
        _same(index, reference, queries, k, field_weights="title=1,text=0", k3=0.0)


def test_deleted_documents_and_segments(search: int, tmp_path) -> None:
    docs, queries = _zipf(4_000, 5_000, 5)
    index = Index.build(docs[:2_500], tokenizer=WS, backend="core")
    index.save(tmp_path / "i")
    grown = Index.load(tmp_path / "i", backend="core")
    grown.add(docs[2_500:])
    grown.delete([f"d{i}" for i in range(0, 4_000, 7)])
    left = [d for d in docs if int(d[0][1:]) % 7]
    reference = Index.build(left, tokenizer=WS, backend="numpy")
    assert grown.num_segments == 2
    for k in (1, 10, 300):
        _same(grown, reference, queries, k, variant="bm25+")
        _same(Index.load(tmp_path / "i", backend="core"), reference, queries, k)


def test_a_sharded_index_equals_one_index(search: int, tmp_path) -> None:
    from bm25lab.engine import shards

    docs, queries = _zipf(3_000, 4_000, 8)
    shards.build(docs, tmp_path / "s", shards=3, tokenizer=WS, workers=1)
    sharded = ShardedIndex.load(tmp_path / "s", backend="core")
    one = Index.build(docs, tokenizer=WS, backend="numpy")
    for k in (1, 10, 1000):
        for variant in ("lucene", "bm25l", "okapi"):
            assert _hits(sharded.search_many(queries, k=k, variant=variant)) == \
                   _hits(one.search_many(queries, k=k, variant=variant))


def test_without_pruning_when_a_weight_is_negative(search: int) -> None:
    # a negative weight voids every bound: each search then adds every posting and offers every document
    docs, queries = _zipf(2_000, 3_000, 2)
    index = Index.build(docs, tokenizer=WS, backend="core")
    scorer = index._scorer
    params = Params("lucene", 0.9, 0.4).resolved()
    prepared = scorer.prepare(params)
    flipped = np.where(np.arange(prepared.scale.shape[0]) % 5 == 0, -1.0, 1.0)
    scorer._weights = replace(prepared, scale=prepared.scale * flipped)
    scorer._bounds = scorer._block_weights = None
    assert not scorer.bounds(params)[1]
    terms = [scorer.query_terms(q.split()) for q in queries.values()]
    batch = TermBatch.of(terms)
    expected = [scorer.top(q, 50, params, use_prepared=True) for q in terms]
    for (docs_, scores), (ref_docs, ref_scores) in zip(CoreBackend(search).top_k_batch(scorer, batch, 50, params, 2),
                                                      expected):
        assert docs_.tolist() == ref_docs.tolist() and scores.tobytes() == ref_scores.tobytes()


@st.composite
def collections(draw) -> tuple[list[tuple[str, str]], int]:
    """Documents of a few skewed terms (ties in lengths and frequencies, terms in most documents and in
    one), sometimes more documents than a window of the block-max search."""
    n_docs = draw(st.sampled_from([1, 3, 40, 300, 5_000]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    vocab = draw(st.integers(1, 30))
    p = 1.0 / np.arange(1, vocab + 1) ** draw(st.sampled_from([0.5, 1.0, 2.0]))
    docs = []
    for d in range(n_docs):
        words = rng.choice(vocab, size=int(rng.integers(0, 12)), p=p / p.sum())
        docs.append((f"x{rng.integers(0, 10**6)}-{d}", " ".join(f"t{w}" for w in words)))
    return docs, vocab


@given(collections(), st.data())
@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
def test_both_searches_equal_numpys_on_drawn_collections(drawn, data) -> None:
    docs, vocab = drawn
    index = Index.build(docs, tokenizer=WS, backend="core", workers=1)
    scorer = index._scorer
    params = Params(data.draw(st.sampled_from(sorted(VARIANTS))), data.draw(st.sampled_from([0.0, 0.5, 0.9, 2.0])),
                    data.draw(st.sampled_from([0.0, 0.4, 1.0])), k3=data.draw(st.sampled_from([None, 0.0, 2.0])))
    params = params.resolved()
    queries = data.draw(st.lists(st.lists(st.sampled_from([f"t{w}" for w in range(vocab)] + ["none"]), max_size=7),
                                 min_size=1, max_size=10))
    k = data.draw(st.sampled_from([1, 2, 10, 100, 5_000]))
    kept = data.draw(st.sampled_from([None, 0.0, 0.1, 0.5, 0.9]))  # a filter's mask: the share it lets through
    mask = None if kept is None else (np.random.default_rng(len(docs)).random(scorer.n_docs) < kept).astype(np.uint8)
    batch = NUMPY.term_batch(scorer, queries).weighted(params.k3)
    expected = NUMPY.top_k_batch(scorer, batch, k, params.of_documents(), 1, mask)
    for method in SEARCHES.values():
        search = CoreBackend(method)
        got = search.top_k_batch(scorer, batch, k, params.of_documents(), data.draw(st.sampled_from([1, 2])), mask)
        for i, ((d, s), (e, f)) in enumerate(zip(got, expected)):
            assert d.tolist() == e.tolist() and s.tobytes() == f.tobytes()
            one = search.top_k(scorer, batch.query(i), k, params.of_documents(), mask)
            assert one[0].tolist() == e.tolist() and one[1].tobytes() == f.tobytes()


def test_the_choice_depends_on_k_and_the_documents_only() -> None:
    assert core_backend.search_method(150_000, 10) == TERM_AT_A_TIME
    assert core_backend.search_method(2_000_000, 10) == BLOCK_MAX
    assert core_backend.search_method(2_000_000, 100_000) == TERM_AT_A_TIME
