"""The compiled kernels' document mask (a filter's) against its specification, the numpy top-k that keeps
only the documents the mask lets through (:meth:`bm25lab.engine.retrieval.Scorer.top` with ``mask=``):
the same documents, score bits and order, on a Zipf collection large enough for every path of the
pruned kernel (listed and dense candidates, pruning by galloping and by marks, the histogram floor),
single searches and batches on two threads, k below and above the documents that pass."""
from __future__ import annotations

import numpy as np
import pytest

from recording import zipf_documents

from bm25lab.engine.backends.core_backend import BLOCK_MAX, TERM_AT_A_TIME, CoreBackend, index_args, weight_args
from bm25lab.engine.backends.numpy_backend import NumpyBackend
from bm25lab.engine.retrieval import TermBatch
from bm25lab.engine.scoring import Params


@pytest.fixture(scope="module")
def collection():
    from bm25lab.engine import Index, Tokenizer

    docs, flat, probs, rng = zipf_documents(20_000, 30_000, 3)
    index = Index.build(docs, tokenizer=Tokenizer("whitespace", stopwords=None), workers=1, backend="numpy")
    present = np.unique(flat)
    queries = [[f"w{t}" for t in rng.choice(present, size=int(m), p=probs[present] / probs[present].sum())]
               for m in rng.integers(1, 8, 50)]
    queries += [["w0", "w1"], ["w0", "w0", "w5"], [f"w{present[-1]}", "w0"], ["w0"]]
    n = index.num_docs
    masks = {
        "half": (rng.random(n) < 0.5).astype(np.uint8),
        "few": (rng.random(n) < 0.02).astype(np.uint8),
        "most": (rng.random(n) < 0.97).astype(np.uint8),
        "blocks": ((np.arange(n) // 1000) % 2).astype(np.uint8),
        "alternate": (np.arange(n) % 2).astype(np.uint8),  # leaves out every sampled document of a dense floor
        "none": np.zeros(n, dtype=np.uint8),
        "all": np.ones(n, dtype=np.uint8),
    }
    scorer = index._scorer
    return scorer, [scorer.query_terms(q) for q in queries], masks


@pytest.mark.parametrize("method", [TERM_AT_A_TIME, BLOCK_MAX])
@pytest.mark.parametrize("variant", ["lucene", "bm25+", "okapi"])
@pytest.mark.parametrize("mask_name", ["half", "few", "most", "blocks", "alternate", "none", "all"])
def test_the_masked_kernels_equal_the_numpy_specification(collection, variant: str, mask_name: str,
                                                          method: int) -> None:
    # both of the core's searches (term at a time, block-max MaxScore over windows)
    scorer, queries, masks = collection
    mask = masks[mask_name]
    params = Params(variant, 0.9, 0.4).resolved()
    core, numpy_backend = CoreBackend(method), NumpyBackend()
    batch = TermBatch.of(queries)
    passing = int(mask.sum())
    for k in sorted({1, 10, 1000, passing + 50}):
        compiled = core.top_k_batch(scorer, batch, k, params, 2, mask)
        plain = numpy_backend.top_k_batch(scorer, batch, k, params, 2, mask)
        for q, (docs, scores), (numpy_docs, numpy_scores) in zip(queries, compiled, plain):
            ref_docs, ref_scores = scorer.top(q, k, params, use_prepared=True, mask=mask)
            assert np.array_equal(docs, ref_docs) and np.array_equal(scores, ref_scores), (k, mask_name)
            assert np.array_equal(numpy_docs, ref_docs) and np.array_equal(numpy_scores, ref_scores)
            assert mask[docs].all()
        for q in queries[::8]:
            docs, scores = core.top_k(scorer, q, k, params, mask)
            ref_docs, ref_scores = scorer.top(q, k, params, use_prepared=True, mask=mask)
            assert np.array_equal(docs, ref_docs) and np.array_equal(scores, ref_scores), (k, mask_name)


@pytest.mark.parametrize("method", [TERM_AT_A_TIME, BLOCK_MAX])
def test_a_mask_letting_every_document_through_changes_nothing(collection, method: int) -> None:
    scorer, queries, masks = collection
    core = CoreBackend(method)
    params = Params().resolved()
    batch = TermBatch.of(queries)
    for k in (10, 1000):
        masked = core.top_k_batch(scorer, batch, k, params, 2, masks["all"])
        plain = core.top_k_batch(scorer, batch, k, params, 2)
        for (a, s), (b, t) in zip(masked, plain):
            assert np.array_equal(a, b) and np.array_equal(s.view(np.int64), t.view(np.int64))


def test_the_kernels_refuse_a_bad_mask(collection) -> None:
    from bm25lab.engine.core import kernels

    core = kernels()
    scorer, queries, _ = collection
    weights = scorer.prepare(Params().resolved())
    n = scorer.n_docs
    batch = TermBatch.of(queries[:2])
    upper = scorer.bounds(Params().resolved())[0]

    def call(mask):
        out_docs, out_scores, out_len = np.empty((2, 5), np.int64), np.empty((2, 5)), np.zeros(2, np.int64)
        core.batch_top_k(index_args(scorer), weight_args(scorer, weights), batch.q_ptr, batch.term_ids, batch.counts,
                         upper, upper, np.zeros(2), n, 5, True, 1, TERM_AT_A_TIME, out_docs, out_scores, out_len,
                         mask=mask)
        return out_len

    assert call(None).tolist() == call(np.ones(n, np.uint8)).tolist()
    with pytest.raises(ValueError, match="mask is shorter"):
        call(np.ones(n - 1, np.uint8))
    with pytest.raises(TypeError, match="mask"):
        call(np.ones(n, np.int64))
    with pytest.raises(TypeError, match="mask"):
        call(np.ones((n, 2), np.uint8)[:, 0])  # not contiguous
