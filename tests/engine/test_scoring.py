"""BM25 variants: closed-form values on a three-document corpus, worked out by hand.

Corpus (whitespace tokens):  d1 = "a b" (dl 2), d2 = "a a c" (dl 3), d3 = "b c c d" (dl 4).
N = 3, avgdl = 3, df(a) = 2, df(d) = 1. Query "a d". Defaults k1 = 0.9, b = 0.4 unless stated.
norm(dl) = 1 - b + b * dl / avgdl:  d1 0.866667, d2 1.0, d3 1.133333.
"""
from __future__ import annotations

import math

import pytest

from bm25lab.engine import Index, Tokenizer
from bm25lab.engine.scoring import VARIANTS, Params, get_variant

DOCS = [("d1", "a b"), ("d2", "a a c"), ("d3", "b c c d")]


@pytest.fixture(scope="module")
def index() -> Index:
    return Index.build(DOCS, tokenizer=Tokenizer("whitespace", stopwords=None))


def scores(index: Index, **params: float | str) -> dict[str, float]:
    return {h.doc_id: h.score for h in index.search("a d", k=10, **params)}


def test_lucene_closed_form(index: Index) -> None:
    idf_a, idf_d = math.log(1 + 1.5 / 2.5), math.log(1 + 2.5 / 1.5)  # ln(1.6), ln(8/3)
    expected = {
        "d1": idf_a * 1 / (1 + 0.9 * (0.6 + 0.4 * 2 / 3)),  # a once, dl 2
        "d2": idf_a * 2 / (2 + 0.9 * 1.0),  # a twice, dl 3
        "d3": idf_d * 1 / (1 + 0.9 * (0.6 + 0.4 * 4 / 3)),  # d once, dl 4
    }
    literal = {"d1": 0.2640469827223234, "d2": 0.3241404339625763, "d3": 0.485559036144419}
    got = scores(index)
    assert got == pytest.approx(expected, rel=1e-12)
    assert got == pytest.approx(literal, rel=1e-12)
    assert list(got) == ["d3", "d2", "d1"]


def test_robertson_floors_negative_idf_at_zero(index: Index) -> None:
    # idf(a) = ln(max(1.5 / 2.5, 1)) = 0; idf(d) = ln(2.5 / 1.5) = 0.5108256
    got = scores(index, variant="robertson")
    assert got == pytest.approx({"d3": 0.25288397216138153, "d1": 0.0, "d2": 0.0}, rel=1e-12)
    # a document with score 0 still matches a query term, so it is returned; ties by id descending
    assert list(got) == ["d3", "d2", "d1"]


def test_atire_closed_form(index: Index) -> None:
    # idf = ln(N / n): ln(1.5), ln(3); tf part tf (k1 + 1) / (tf + k1 norm)
    got = scores(index, variant="atire")
    assert got == pytest.approx({"d1": 0.43279983449747883, "d2": 0.5312991071762154,
                                 "d3": 1.0333481923115884}, rel=1e-12)


def test_bm25l_counts_absent_terms(index: Index) -> None:
    # idf = ln((N + 1) / (n + 0.5)); c = tf / norm; part (k1 + 1)(c + delta) / (k1 + c + delta), delta 0.5;
    # an absent term contributes idf * 1.9 * 0.5 / 1.4 (c = 0) to every matching document
    got = scores(index, variant="bm25l")
    assert got == pytest.approx({"d1": 1.2438653656745582, "d2": 1.3221854247294156,
                                 "d3": 1.4476430482282923}, rel=1e-12)


def test_bm25plus_counts_absent_terms(index: Index) -> None:
    # idf = ln((N + 1) / n); part (k1 + 1) tf / (k1 norm + tf) + delta, delta 1; absent: idf * 1
    got = scores(index, variant="bm25+")
    assert got == pytest.approx({"d1": 2.8193177456483163, "d2": 2.987703364482523,
                                 "d3": 3.3833817823371586}, rel=1e-12)


def test_okapi_epsilon_floor(index: Index) -> None:
    # raw idf ln(N - n + 0.5) - ln(n + 0.5): a, b, c -> ln(1.5/2.5) = -0.5108256, d -> +0.5108256;
    # mean over the 4 terms = -0.2554128; negatives become 0.25 * mean = -0.0638532. k1 1.5, b 0.75.
    got = scores(index, variant="okapi", k1=1.5, b=0.75)
    assert got == pytest.approx({"d1": -0.07512141525970452, "d2": -0.09121886138678406,
                                 "d3": 0.44419619457912235}, rel=1e-12)


def test_registry_lists_six_variants_and_rejects_unknown() -> None:
    assert set(VARIANTS) == {"lucene", "robertson", "atire", "bm25l", "bm25+", "okapi"}
    with pytest.raises(ValueError, match="lucene, robertson"):
        get_variant("bm26")
    for name, variant in VARIANTS.items():
        assert variant.idf.__doc__ and variant.tf_part.__doc__, name


@pytest.mark.parametrize("bad", [dict(k1=-1.0), dict(b=1.5), dict(b=float("nan")), dict(delta=-0.1)])
def test_bad_parameters(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        Params(**bad).resolved()


def test_parameters_chosen_per_search(index: Index) -> None:
    a = scores(index, k1=0.9, b=0.4)
    b = scores(index, k1=2.0, b=1.0)
    assert a != b
    assert scores(index, k1=0.9, b=0.4) == a


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("block", [1, 5, 1 << 20])
@pytest.mark.parametrize("dense_keys", [True, False])
def test_weights_prepared_in_blocks_equal_each_terms_own(monkeypatch, variant: str, block: int,
                                                         dense_keys: bool) -> None:
    # all postings' (tf, length) pairs are numbered (through a dense array of keys, or by sorting
    # them) and their extremes found a block at a time; blocks cut terms anywhere and empty terms
    # (equal offsets) sit at the start, in the middle and at the end: the prepared weights are
    # bit for bit each term's own weights (+ 0.0), and the bounds their largest
    import numpy as np

    from bm25lab.engine import retrieval
    from bm25lab.engine.postings import Postings

    rng = np.random.default_rng(3)
    df = np.array([0, 3, 1, 0, 0, 7, 2, 0, 11, 0])
    offsets = np.concatenate(([0], np.cumsum(df)))
    postings = Postings([f"t{i}" for i in range(len(df))], offsets,
                        np.concatenate([np.sort(rng.choice(12, n, replace=False)) for n in df]).astype(np.int32),
                        rng.integers(1, 5, offsets[-1]).astype(np.int32), rng.integers(1, 9, 12).astype(np.int32))
    scorer = retrieval.Scorer(postings, np.arange(12, dtype=np.int32))
    params = Params(variant, 1.2, 0.75).resolved()
    monkeypatch.setattr(retrieval, "_PREPARE_BLOCK", block)
    if not dense_keys:
        monkeypatch.setattr(retrieval, "_DENSE_PAIR_KEYS", 0)
    with np.errstate(divide="ignore"):  # the idf of an empty term may be infinite: it weighs no posting
        idf = scorer.idf(params.variant)
    zero = retrieval.zero_tf_part(params)
    expected = [scorer._posting_weights(postings.span(t), float(idf[t]), params, zero) + 0.0 for t in range(len(df))]
    prepared = scorer.prepare(params)
    assert prepared.table.shape[0] == len(set(zip(postings.tfs.tolist(), postings.doc_lengths[postings.doc_nums].tolist())))
    got = [scorer.prepared_weights(prepared, postings.span(t), t) for t in range(len(df))]
    assert np.concatenate(got).tobytes() == np.concatenate(expected).tobytes()
    upper, prunable = scorer.bounds(params)
    assert upper.tolist() == [max(w.max(), 0.0) if w.shape[0] else 0.0 for w in expected] and prunable


def test_pairs_past_16_bits_are_found_by_every_posting() -> None:
    # 300 tfs in documents of 300 lengths: 90,000 pairs, found by numpy and the kernels alike; each
    # posting's code (its pair's position, past 2**16) gives back its tf and length
    import numpy as np

    from bm25lab.engine import retrieval
    from bm25lab.engine.backends.core_backend import CoreBackend
    from bm25lab.engine.postings import Postings

    n_docs, per_doc = 300, 300
    doc_nums = np.repeat(np.arange(n_docs, dtype=np.int32), per_doc)
    tfs = np.tile(np.arange(1, per_doc + 1, dtype=np.int32), n_docs)
    order = np.argsort(np.tile(np.arange(per_doc), n_docs), kind="stable")  # term j: every document's tf j + 1
    postings = Postings([f"t{j:03d}" for j in range(per_doc)], np.arange(per_doc + 1, dtype=np.int64) * n_docs,
                        doc_nums[order], tfs[order], np.arange(1000, 1000 + n_docs, dtype=np.int32))
    for coder in (retrieval.NumpyPairCoder(), CoreBackend().pair_coder()):
        pairs = retrieval.posting_pairs(postings, coder)
        codes = retrieval.PairLookup.of(pairs, postings.doc_lengths).codes(postings.tfs, postings.doc_nums)
        assert pairs.tfs.shape[0] == n_docs * per_doc and codes.max() >= 1 << 16
        assert np.array_equal(pairs.tfs[codes], postings.tfs)
        assert np.array_equal(pairs.lengths[codes], postings.doc_lengths[postings.doc_nums])


def test_lengths_past_16_bits_are_ranked_in_32_bits() -> None:
    # the documents' lengths are ranked in the narrowest type (uint16, here uint32: 70,000 lengths):
    # every posting's pair is still its own, with numpy and the kernels alike
    import numpy as np

    from bm25lab.engine import retrieval
    from bm25lab.engine.backends.core_backend import CoreBackend
    from bm25lab.engine.postings import Postings

    n_docs = 70_000
    lengths = np.random.default_rng(1).permutation(np.arange(1, n_docs + 1)).astype(np.int32)
    doc_nums = np.concatenate([np.arange(n_docs), np.arange(0, n_docs, 7)]).astype(np.int32)
    tfs = np.concatenate([np.ones(n_docs), np.full(-(-n_docs // 7), 3)]).astype(np.int32)
    postings = Postings(["a", "b"], np.array([0, n_docs, doc_nums.shape[0]], dtype=np.int64), doc_nums, tfs, lengths)
    lookup = None
    for coder in (retrieval.NumpyPairCoder(), CoreBackend().pair_coder()):
        pairs = retrieval.posting_pairs(postings, coder)
        lookup = retrieval.PairLookup.of(pairs, lengths)
        codes = lookup.codes(tfs, doc_nums)
        assert np.array_equal(pairs.tfs[codes], tfs)
        assert np.array_equal(pairs.lengths[codes], lengths[doc_nums])
    assert lookup.length_rank.dtype == np.uint32


# ---------------------------------------------------------------------- k1 = 0: no saturation, never NaN
# With k1 = 0 every tf part's denominator is 0 at tf = 0: the part is its limit as k1 -> 0, so a present
# term counts once (lucene, robertson: 1; atire, okapi: (k1 + 1) = 1; bm25l: 1; bm25+: 1 + delta) and an
# absent one not at all (bm25+: delta; bm25l: 1 when delta > 0, as (c + delta) / (c + delta), else 0).
K1_ZERO = {  # query "a d": d1 has a, d2 has a twice, d3 has d (idf values as in the tests above)
    "lucene": {"d1": math.log(1.6), "d2": math.log(1.6), "d3": math.log(8 / 3)},
    "atire": {"d1": math.log(1.5), "d2": math.log(1.5), "d3": math.log(3)},
    "bm25+": {"d1": math.log(4 / 2) * 2 + math.log(4) * 1, "d2": math.log(2) * 2 + math.log(4),
              "d3": math.log(2) * 1 + math.log(4) * 2},
    "bm25l": {d: math.log(4 / 2.5) + math.log(4 / 1.5) for d in ("d1", "d2", "d3")},
}


@pytest.mark.parametrize("backend", ["numpy", "core"])
@pytest.mark.parametrize("variant", sorted(K1_ZERO))
def test_k1_zero_counts_each_present_term_once(variant: str, backend: str) -> None:
    import warnings

    index = Index.build(DOCS, tokenizer=Tokenizer("whitespace", stopwords=None), backend=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning of a 0 / 0 either
        got = {h.doc_id: h.score for h in index.search("a d", k=10, variant=variant, k1=0)}
        batch = index.search_many({"q": "a d"}, k=10, variant=variant, k1=0)["q"]
        prepared = index.batch({"q": "a d"}).search(k=10, variant=variant, k1=0)["q"]
    assert got == pytest.approx(K1_ZERO[variant], rel=1e-12)
    assert [(h.doc_id, h.score) for h in batch] == [(h.doc_id, h.score) for h in prepared] == list(got.items())


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_k1_zero_tf_parts_are_finite_and_the_limit_of_small_k1(variant: str) -> None:
    import numpy as np

    v = get_variant(variant)
    tf, dl = np.array([0, 1, 2, 7]), np.array([3, 3, 5, 9])
    for delta in (0.0, 0.5):
        at_zero = v.tf_part(tf, dl, 4.0, 0.0, 0.75, delta)
        near_zero = v.tf_part(tf, dl, 4.0, 1e-12, 0.75, delta)
        assert np.isfinite(at_zero).all()
        np.testing.assert_allclose(at_zero, near_zero, rtol=1e-9, atol=1e-9)
        assert math.isfinite(v.zero_tf_part(0.0, 0.75, delta))


def test_k1_zero_equals_bm25s(cranfield_index, cranfield) -> None:
    # bm25s scores each posting with tf / (tf + k1 * norm): at k1 = 0 every present term weighs its idf
    import bm25s
    import numpy as np

    corpus = list(cranfield_index.tokenizer.tokenize_many(d.full_text for d in cranfield.documents()))
    retriever = bm25s.BM25(method="lucene", k1=0.0, b=0.75)
    retriever.index(bm25s.tokenization.Tokenized(*_bm25s_ids(corpus)), show_progress=False)
    vocab = _bm25s_ids(corpus)[1]
    for qid, text in list(cranfield.judged_queries().items())[:25]:
        tokens = [t for t in cranfield_index.tokenizer.tokenize(text) if t in vocab]
        if not tokens:
            continue
        expected = retriever.get_scores(tokens)
        hits = cranfield_index.search_tokens(tokens, k=50, k1=0.0, b=0.75)
        position = {d: i for i, d in enumerate(cranfield_index.doc_ids)}
        np.testing.assert_allclose([h.score for h in hits], expected[[position[h.doc_id] for h in hits]],
                                   rtol=1e-6)


def _bm25s_ids(corpus: list[list[str]]) -> tuple[list[list[int]], dict[str, int]]:
    vocab: dict[str, int] = {}
    ids = [[vocab.setdefault(t, len(vocab)) for t in doc] for doc in corpus]
    return ids, vocab
