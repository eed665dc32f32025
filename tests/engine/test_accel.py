"""The compiled (numba) batch path gives exactly the numpy path's results: same documents, same
float64 scores, same order, for every variant and for k below and above the candidate counts."""
from __future__ import annotations

import numpy as np
import pytest

from bm25lab.engine import accel
from bm25lab.engine.scoring import Params


@pytest.mark.parametrize("variant", ["lucene", "robertson", "atire", "bm25l", "bm25+", "okapi"])
def test_compiled_equals_numpy(variant, cranfield_index, cranfield, monkeypatch) -> None:
    monkeypatch.setenv("BM25LAB_NUMBA", "1")
    scorer = cranfield_index._scorer
    queries = [scorer.query_terms(cranfield_index.tokenizer.tokenize(t))
               for t in cranfield.judged_queries().values()]
    queries.append(scorer.query_terms([]))  # an empty query
    queries.append(scorer.query_terms(["flow", "flow", "flow"]))  # a repeated term
    params = Params(variant, 1.2, 0.75).resolved()
    for k in (1, 10, 1000, 5000):
        _assert_compiled_equals_numpy(scorer, queries, k, params, threads=2)


def _assert_compiled_equals_numpy(scorer, queries, k: int, params: Params, threads: int, single: bool = False,
                                  use_prepared: bool = False) -> None:
    """The compiled batch (and, with ``single``, each single search) gives the numpy path's arrays."""
    compiled = accel.batch_top_k(scorer, queries, k, params, threads=threads)
    assert compiled is not None
    for q, (docs, scores) in zip(queries, compiled):
        ref_docs, ref_scores = scorer.top(q, k, params, use_prepared=use_prepared)
        assert np.array_equal(docs, ref_docs)
        assert np.array_equal(scores, ref_scores)
        if single:
            one = accel.query_top_k(scorer, q, k, params)
            assert one is not None
            assert np.array_equal(one[0], ref_docs) and np.array_equal(one[1], ref_scores)


def test_small_batches_stay_on_numpy(monkeypatch) -> None:
    monkeypatch.delenv("BM25LAB_NUMBA", raising=False)
    monkeypatch.setattr(accel, "COMPILED_MIN_POSTINGS", 10**12)
    monkeypatch.delitem(__import__("sys").modules, "bm25lab.engine._kernels", raising=False)
    assert not accel.worth_compiling(10**6)
    monkeypatch.setenv("BM25LAB_NUMBA", "0")
    assert not accel.worth_compiling(10**15)


@pytest.mark.parametrize("numba", ["0", "1"])
def test_warm_single_searches_equal_cold_ones(numba, cranfield, monkeypatch) -> None:
    # from the WARM_AFTER-th search on, single searches use prepared weights (and the compiled
    # kernel when it is loaded): the results must not change
    from bm25lab.engine import Index, Tokenizer
    from bm25lab.engine.retrieval import WARM_AFTER

    monkeypatch.setenv("BM25LAB_NUMBA", numba)
    index = Index.build(cranfield.documents(), tokenizer=Tokenizer("en"))
    queries = list(cranfield.judged_queries().values())[: WARM_AFTER + 6]
    cold = [[(h.doc_id, h.score) for h in index.search(q, k=50, variant="bm25l")] for q in queries[:1]] * 2
    again = [[(h.doc_id, h.score) for h in index.search(queries[0], k=50, variant="bm25l")]
             for _ in range(WARM_AFTER + 2)]
    assert all(run == cold[0] for run in again)
    assert index._scorer._weights is not None  # warm now
    fresh = Index.build(cranfield.documents(), tokenizer=Tokenizer("en"))
    for q in queries:
        assert [(h.doc_id, h.score) for h in index.search(q, k=50, variant="bm25l")] == \
               [(h.doc_id, h.score) for h in fresh.search(q, k=50, variant="bm25l")]


def _zipf_index(n_docs: int = 20_000, vocab: int = 30_000, seed: int = 3):
    """A Zipf collection large enough for every path of the pruned kernel: listed and dense
    candidates, pruning by galloping and by marks, the histogram floor, crowds of equal scores."""
    from bm25lab.engine import Index, Tokenizer

    rng = np.random.default_rng(seed)
    probs = 1.0 / np.arange(1, vocab + 1)
    probs /= probs.sum()
    lengths = rng.integers(1, 80, n_docs)
    flat = rng.choice(vocab, size=int(lengths.sum()), p=probs)
    bounds = np.concatenate(([0], np.cumsum(lengths)))
    docs = [(f"d{i}", " ".join(f"w{t}" for t in flat[bounds[i]:bounds[i + 1]])) for i in range(n_docs)]
    index = Index.build(docs, tokenizer=Tokenizer("whitespace", stopwords=None), workers=1)
    present = np.unique(flat)
    queries = [[f"w{t}" for t in rng.choice(present, size=int(m), p=probs[present] / probs[present].sum())]
               for m in rng.integers(1, 8, 150)]
    queries += [["w0", "w1"], ["w0", "w0", "w5"], [f"w{present[-1]}", "w0"]]  # common terms, repeats, rare + common
    return index, queries


@pytest.mark.parametrize("variant", ["lucene", "bm25+", "okapi"])
def test_pruned_kernel_equals_numpy_on_a_zipf_collection(variant, monkeypatch) -> None:
    monkeypatch.setenv("BM25LAB_NUMBA", "1")
    index, queries = _zipf_index()
    scorer = index._scorer
    terms = [scorer.query_terms(q) for q in queries]
    params = Params(variant, 0.9, 0.4).resolved()
    assert scorer.bounds(params)[1]  # no negative weight: the kernel prunes
    for k in (1, 10, 100, 1000, 30_000):
        _assert_compiled_equals_numpy(scorer, terms, k, params, threads=2, single=True)


def test_crowds_of_equal_scores_keep_the_tie_rule(monkeypatch) -> None:
    # every document has the same length: the documents of a term all score the same, and only the
    # tie rule (document id descending) orders them: the heap, the sort with its runs of ties and
    # the heap the sort falls back to when a crowd defeats the histogram floor must all keep it
    from bm25lab.engine import Index, Tokenizer

    monkeypatch.setenv("BM25LAB_NUMBA", "1")
    rng = np.random.default_rng(5)
    n_docs = 50_000
    words = np.where(np.arange(n_docs) < 2_000, "listed", np.where(np.arange(n_docs) < 42_000, "dense", "other"))
    names = rng.permutation(n_docs)  # ids in no relation to the document numbers
    docs = [(f"d{names[i]}", f"{words[i]} u{i % 7}") for i in range(n_docs)]
    index = Index.build(docs, tokenizer=Tokenizer("whitespace", stopwords=None), workers=1)
    scorer = index._scorer
    terms = [scorer.query_terms(q) for q in (["listed"], ["dense"], ["listed", "dense"], ["u3"], ["listed", "u3"])]
    for variant in ("lucene", "okapi"):
        params = Params(variant, 1.2, 0.75).resolved()
        for k in (1, 10, 64, 100, 500, 1999, 5_000, 45_000):
            _assert_compiled_equals_numpy(scorer, terms, k, params, threads=2, single=True)


def test_kernel_without_pruning_when_a_weight_is_negative(monkeypatch) -> None:
    # a negative weight voids the MaxScore bound: the kernel must then add every posting
    monkeypatch.setenv("BM25LAB_NUMBA", "1")
    index, queries = _zipf_index(n_docs=3_000, vocab=5_000)
    scorer = index._scorer
    params = Params("lucene", 0.9, 0.4).resolved()
    weights = scorer.prepare(params)
    weights[::7] *= -1.0  # in place: the prepared weights of these params
    scorer._bounds = None
    assert not scorer.bounds(params)[1]
    terms = [scorer.query_terms(q) for q in queries]
    for k in (1, 10, 500):
        _assert_compiled_equals_numpy(scorer, terms, k, params, threads=1, use_prepared=True)


def test_documents_whose_every_weight_is_zero_still_match(monkeypatch) -> None:
    # the kernels take an accumulator holding -0.0 for "no posting added yet": a prepared weight of
    # -0.0 would hide the documents it alone matches, so preparing turns -0.0 into 0.0; the documents
    # scoring exactly 0 are then found by the dense and the listed paths and the single search alike
    from bm25lab.engine.retrieval import Scorer

    monkeypatch.setenv("BM25LAB_NUMBA", "1")
    index, queries = _zipf_index(n_docs=3_000, vocab=5_000)
    scorer = index._scorer
    computed = Scorer._posting_weights

    def with_signed_zeros(self, sl, idf, params, zero):
        weights = computed(self, sl, idf, params, zero)
        weights[::3] = -0.0
        return weights

    monkeypatch.setattr(Scorer, "_posting_weights", with_signed_zeros)
    params = Params("lucene", 0.9, 0.4).resolved()
    weights = scorer.prepare(params)
    assert (weights == 0).sum() > weights.shape[0] // 4 and not np.signbit(weights).any()
    single_terms = [[t] for t in sorted({t for q in queries for t in q})[:60]]
    terms = [scorer.query_terms(q) for q in queries + single_terms]
    for k in (1, 10, 500, 3_000):
        _assert_compiled_equals_numpy(scorer, terms, k, params, threads=2, single=True, use_prepared=True)


def test_query_batch_equals_query_terms(cranfield_index, cranfield) -> None:
    scorer = cranfield_index._scorer
    queries = [cranfield_index.tokenizer.tokenize(t) for t in cranfield.judged_queries().values()]
    queries += [[], ["no-such-term"], ["flow", "flow", "no-such-term", "flow", "wing"]]
    batch = scorer.query_batch(queries)
    assert len(batch) == len(queries)
    for i, tokens in enumerate(queries):
        one, expected = batch.query(i), scorer.query_terms(tokens)
        assert np.array_equal(one.term_ids, expected.term_ids)
        assert np.array_equal(one.counts, expected.counts)


@pytest.mark.parametrize("numba", ["0", "1"])
def test_compiled_query_batch_equals_query_batch(numba, cranfield_index, cranfield, monkeypatch) -> None:
    # the compiled look-up (tokens joined, hashed from their UTF-8) and grouping give Scorer.query_batch's
    # arrays, whatever the tokens hold; with BM25LAB_NUMBA=0 it is Scorer.query_batch itself
    monkeypatch.setenv("BM25LAB_NUMBA", numba)
    scorer = cranfield_index._scorer
    queries = [cranfield_index.tokenizer.tokenize(t) for t in cranfield.judged_queries().values()]
    long_query = [t for q in queries[:6] for t in q] * 3  # more tokens than the insertion sort takes
    odd = [[], ["no such term"], ["flow", "", "flow", "\ud800", "wing"], ["", ""], ("wing", "flow"), long_query,
           ["flüssigkeit", "流体", "flow"], []]
    for batch_queries in (queries + odd, odd, [["flow"]], []):
        expected = scorer.query_batch(batch_queries)
        got = accel.query_batch(scorer, batch_queries)
        for name in ("q_ptr", "term_ids", "counts"):
            assert np.array_equal(getattr(got, name), getattr(expected, name)), name
            assert getattr(got, name).dtype == getattr(expected, name).dtype, name


def test_compiled_vocabulary_of_an_index_finds_every_term(monkeypatch) -> None:
    # terms holding spaces, NUL bytes, lone surrogates or nothing at all keep their ids
    from bm25lab.engine.postings import CompiledVocabulary

    terms = sorted({"", " ", "a b", "a", "b", "a\x00", "\x00", "\ud800x", "流", "é", "e\u0301"})
    vocabulary = CompiledVocabulary.of_terms(accel.kernels(), terms)
    assert len(vocabulary) == len(terms)
    probe = terms + ["missing", "a b c", "\ud801"]
    ids = vocabulary.look_up(probe, probe, len(probe))
    assert ids.tolist() == list(range(len(terms))) + [-1, -1, -1]
    assert len(vocabulary) == len(terms)  # looking up added nothing

