"""The backends: the compiled core gives exactly the numpy backend's results (same documents, same
float64 scores, same order, for every variant and for k below and above the candidate counts), each
tested by name; ``auto`` is the core whenever it is built, in every process."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from recording import as_version_2, without_saved_pairs, zipf_documents

from bm25lab.engine import backends
from bm25lab.engine.backends.core_backend import BLOCK_MAX, TERM_AT_A_TIME, CoreBackend, CoreVocabulary
from bm25lab.engine.backends.numpy_backend import NumpyBackend
from bm25lab.engine.core import kernels
from bm25lab.engine.errors import ParameterError
from bm25lab.engine.codec import encode
from bm25lab.engine.retrieval import TermBatch
from bm25lab.engine.scoring import Params

NUMPY = NumpyBackend()


def _compiled() -> list:
    """The backends that search with compiled kernels: the core (which the installation must have
    built: a missing one fails here, by name), with each of its two searches for every query (term at
    a time, block-max MaxScore over windows; the core chooses one of them)."""
    return [CoreBackend(TERM_AT_A_TIME), CoreBackend(BLOCK_MAX)]


@pytest.mark.parametrize("variant", ["lucene", "robertson", "atire", "bm25l", "bm25+", "okapi"])
def test_compiled_equals_numpy(variant, cranfield_index, cranfield) -> None:
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
    """Each compiled backend's batch (and, with ``single``, each single search) gives the numpy
    backend's arrays, both its batch and the plain reference :meth:`Scorer.top`."""
    batch = TermBatch.of(queries)
    plain = NUMPY.top_k_batch(scorer, batch, k, params, threads)
    for backend in _compiled():
        compiled = backend.top_k_batch(scorer, batch, k, params, threads)
        for q, (docs, scores), (numpy_docs, numpy_scores) in zip(queries, compiled, plain):
            ref_docs, ref_scores = scorer.top(q, k, params, use_prepared=use_prepared)
            assert np.array_equal(docs, ref_docs) and np.array_equal(numpy_docs, ref_docs), backend
            assert np.array_equal(scores, ref_scores) and np.array_equal(numpy_scores, ref_scores), backend
            if single:
                one = backend.top_k(scorer, q, k, params)
                assert np.array_equal(one[0], ref_docs) and np.array_equal(one[1], ref_scores), backend


@pytest.mark.parametrize("backend", ["numpy", "core", "auto"])
def test_warm_single_searches_equal_cold_ones(backend, cranfield) -> None:
    # from the WARM_AFTER-th search on, single searches use prepared weights (numpy), the core uses
    # them from the first: the results must not change
    from bm25lab.engine import Index, Tokenizer
    from bm25lab.engine.retrieval import WARM_AFTER

    index = Index.build(cranfield.documents(), tokenizer=Tokenizer("en"), backend=backend)
    queries = list(cranfield.judged_queries().values())[: WARM_AFTER + 6]
    cold = [[(h.doc_id, h.score) for h in index.search(q, k=50, variant="bm25l")] for q in queries[:1]] * 2
    again = [[(h.doc_id, h.score) for h in index.search(queries[0], k=50, variant="bm25l")]
             for _ in range(WARM_AFTER + 2)]
    assert all(run == cold[0] for run in again)
    assert index._scorer._weights is not None  # warm now
    fresh = Index.build(cranfield.documents(), tokenizer=Tokenizer("en"), backend="numpy")
    for q in queries:
        assert [(h.doc_id, h.score) for h in index.search(q, k=50, variant="bm25l")] == \
               [(h.doc_id, h.score) for h in fresh.search(q, k=50, variant="bm25l")]


def _zipf_index(n_docs: int = 20_000, vocab: int = 30_000, seed: int = 3):
    """A Zipf collection large enough for every path of the pruned kernel: listed and dense
    candidates, pruning by galloping and by marks, the histogram floor, crowds of equal scores."""
    from bm25lab.engine import Index, Tokenizer

    docs, flat, probs, rng = zipf_documents(n_docs, vocab, seed)
    index = Index.build(docs, tokenizer=Tokenizer("whitespace", stopwords=None), workers=1, backend="numpy")
    present = np.unique(flat)
    queries = [[f"w{t}" for t in rng.choice(present, size=int(m), p=probs[present] / probs[present].sum())]
               for m in rng.integers(1, 8, 150)]
    queries += [["w0", "w1"], ["w0", "w0", "w5"], [f"w{present[-1]}", "w0"]]  # common terms, repeats, rare + common
    return index, queries


@pytest.mark.parametrize("variant", ["lucene", "bm25+", "okapi"])
def test_pruned_kernel_equals_numpy_on_a_zipf_collection(variant) -> None:
    index, queries = _zipf_index()
    scorer = index._scorer
    terms = [scorer.query_terms(q) for q in queries]
    params = Params(variant, 0.9, 0.4).resolved()
    assert scorer.bounds(params)[1]  # no negative weight: the kernel prunes
    for k in (1, 10, 100, 1000, 30_000):
        _assert_compiled_equals_numpy(scorer, terms, k, params, threads=2, single=True)


def test_crowds_of_equal_scores_keep_the_tie_rule() -> None:
    # every document has the same length: the documents of a term all score the same, and only the
    # tie rule (document id descending) orders them: the heap, the sort with its runs of ties and
    # the heap the sort falls back to when a crowd defeats the histogram floor must all keep it
    from bm25lab.engine import Index, Tokenizer

    rng = np.random.default_rng(5)
    n_docs = 50_000
    words = np.where(np.arange(n_docs) < 2_000, "listed", np.where(np.arange(n_docs) < 42_000, "dense", "other"))
    names = rng.permutation(n_docs)  # ids in no relation to the document numbers
    docs = [(f"d{names[i]}", f"{words[i]} u{i % 7}") for i in range(n_docs)]
    index = Index.build(docs, tokenizer=Tokenizer("whitespace", stopwords=None), workers=1, backend="numpy")
    scorer = index._scorer
    terms = [scorer.query_terms(q) for q in (["listed"], ["dense"], ["listed", "dense"], ["u3"], ["listed", "u3"])]
    for variant in ("lucene", "okapi"):
        params = Params(variant, 1.2, 0.75).resolved()
        for k in (1, 10, 64, 100, 500, 1999, 5_000, 45_000):
            _assert_compiled_equals_numpy(scorer, terms, k, params, threads=2, single=True)


def test_kernel_without_pruning_when_a_weight_is_negative() -> None:
    # a negative weight voids the MaxScore bound: the kernel must then add every posting
    index, queries = _zipf_index(n_docs=3_000, vocab=5_000)
    scorer = index._scorer
    params = Params("lucene", 0.9, 0.4).resolved()
    prepared = scorer.prepare(params)
    flipped = np.where(np.arange(prepared.scale.shape[0]) % 7 == 0, -1.0, 1.0)
    scorer._weights = replace(prepared, scale=prepared.scale * flipped)  # every 7th term's weights negative
    scorer._bounds = scorer._block_weights = None
    assert not scorer.bounds(params)[1]
    terms = [scorer.query_terms(q) for q in queries]
    for k in (1, 10, 500):
        _assert_compiled_equals_numpy(scorer, terms, k, params, threads=1, use_prepared=True)


def test_documents_whose_every_weight_is_zero_still_match() -> None:
    # the kernels take an accumulator holding -0.0 for "no posting added yet": a weight of -0.0 (a
    # negative idf times a tf part of 0.0) would hide the documents it alone matches, so every path
    # adds 0.0 to the product; the documents scoring exactly 0 are then found by the dense and the
    # listed paths and the single search alike
    index, queries = _zipf_index(n_docs=3_000, vocab=5_000)
    scorer = index._scorer
    params = Params("lucene", 0.9, 0.4).resolved()
    prepared = scorer.prepare(params)
    table = prepared.table.copy()
    postings = scorer.postings
    codes = scorer.pair_lookup().codes(postings.tfs, postings.doc_nums)
    table[np.argsort(-np.bincount(codes))[::2]] = 0.0  # every other pair, by frequency
    scorer._weights = replace(prepared, table=table, scale=-prepared.scale)
    scorer._bounds = scorer._block_weights = None
    weights = np.concatenate([scorer.prepared_weights(scorer._weights, postings.span(t), t)
                              for t in range(postings.num_terms)])
    assert (weights == 0).sum() > weights.shape[0] // 4 and not np.signbit(weights[weights == 0]).any()
    assert np.signbit(-prepared.scale[0] * table[table == 0][:1]).all()  # the product alone is -0.0
    single_terms = [[t] for t in sorted({t for q in queries for t in q})[:60]]
    terms = [scorer.query_terms(q) for q in queries + single_terms]
    for k in (1, 10, 500, 3_000):
        _assert_compiled_equals_numpy(scorer, terms, k, params, threads=2, single=True, use_prepared=True)


def test_kernels_with_32_bit_length_ranks_and_bound_codes(monkeypatch) -> None:
    # past 2**16 distinct lengths a document's length rank takes 32 bits (the grid has a row per length
    # and the ranks are checked), past 2**16 bound pairs a block's bound code too: the kernels read both
    # and give the numpy backend's results
    from bm25lab.engine import codec, retrieval

    monkeypatch.setattr(retrieval, "code_dtype", lambda n: np.uint32)
    monkeypatch.setattr(codec, "code_dtype", lambda n: np.uint32)
    index, queries = _zipf_index(n_docs=3_000, vocab=5_000)
    scorer = index._scorer
    terms = [scorer.query_terms(q) for q in queries]
    for variant in ("lucene", "bm25l"):
        params = Params(variant, 0.9, 0.4).resolved()
        for k in (1, 10, 500):
            _assert_compiled_equals_numpy(scorer, terms, k, params, threads=2, single=True, use_prepared=True)
    assert scorer.pair_lookup().length_rank.dtype == np.uint32
    assert scorer.postings.blocks().bound_codes.dtype == np.uint32


def test_frequencies_past_the_grid_find_their_entry_by_their_key(monkeypatch) -> None:
    # a frequency above 2**grid_shift (64 at most) is found by a search of the pairs' keys, in blocks of
    # such frequencies and in blocks mixing them with small ones
    from bm25lab.engine import Index, Tokenizer, retrieval

    monkeypatch.setattr(retrieval, "_GRID_TFS", 2)
    rng = np.random.default_rng(8)
    docs = [(f"d{i}", " ".join(["x"] * int(rng.integers(1, 90)) + [f"y{i % 5}"] * int(rng.integers(1, 4))
                               + ["z"] * (i % 3)))
            for i in range(3_000)]
    index = Index.build(docs, tokenizer=Tokenizer("whitespace", stopwords=None), workers=1, backend="numpy")
    scorer = index._scorer
    terms = [scorer.query_terms(q) for q in (["x"], ["x", "y1"], ["z", "x", "y3"], ["y2"])]
    params = Params("bm25+", 1.2, 0.75).resolved()
    for k in (1, 10, 300):
        _assert_compiled_equals_numpy(scorer, terms, k, params, threads=1, single=True)
    assert scorer.block_weights(params).grid_shift == 1


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


@pytest.mark.parametrize("backend", [NUMPY, CoreBackend()])
def test_compiled_query_batch_equals_query_batch(backend, cranfield_index, cranfield) -> None:
    # the compiled look-up (tokens joined, hashed from their UTF-8) and grouping give Scorer.query_batch's
    # arrays, whatever the tokens hold; the numpy backend's is Scorer.query_batch itself
    scorer = cranfield_index._scorer
    queries = [cranfield_index.tokenizer.tokenize(t) for t in cranfield.judged_queries().values()]
    long_query = [t for q in queries[:6] for t in q] * 3  # more tokens than the insertion sort takes
    odd = [[], ["no such term"], ["flow", "", "flow", "\ud800", "wing"], ["", ""], ("wing", "flow"), long_query,
           ["flüssigkeit", "流体", "flow"], []]
    for batch_queries in (queries + odd, odd, [["flow"]], []):
        expected = scorer.query_batch(batch_queries)
        got = backend.term_batch(scorer, batch_queries)
        for name in ("q_ptr", "term_ids", "counts"):
            assert np.array_equal(getattr(got, name), getattr(expected, name)), name
            assert getattr(got, name).dtype == getattr(expected, name).dtype, name


def test_compiled_vocabulary_of_an_index_finds_every_term() -> None:
    # terms holding spaces, NUL bytes, lone surrogates or nothing at all keep their ids
    terms = sorted({"", " ", "a b", "a", "b", "a\x00", "\x00", "\ud800x", "流", "é", "e\u0301"})
    vocabulary = CoreVocabulary.of_terms(terms)
    assert len(vocabulary) == len(terms)
    probe = terms + ["missing", "a b c", "\ud801"]
    ids = vocabulary.look_up(probe, probe, len(probe))
    assert ids.tolist() == list(range(len(terms))) + [-1, -1, -1]
    assert len(vocabulary) == len(terms)  # looking up added nothing



# ---------------------------------------------------------------------- choosing a backend
def test_backend_names_and_the_environment_default(monkeypatch) -> None:
    monkeypatch.delenv(backends.ENV_VARIABLE, raising=False)
    assert backends.default_name() == "auto"
    assert [backends.create(name).name for name in backends.BACKENDS] == ["core", "core", "numpy"]
    monkeypatch.setenv(backends.ENV_VARIABLE, "numpy")
    assert backends.create().name == "numpy" and backends.create("core").name == "core"  # an argument wins
    monkeypatch.setenv(backends.ENV_VARIABLE, "gpu")
    with pytest.raises(ParameterError, match="BM25LAB_BACKEND='gpu' is not a backend; choose one of: auto, core, numpy"):
        backends.create()
    with pytest.raises(ParameterError, match="unknown backend 'fast'; choose one of: auto, core, numpy"):
        backends.create("fast")
    with pytest.raises(ParameterError, match="unknown backend 'numba'"):  # (the JIT backend of earlier versions)
        backends.create("numba")


def test_auto_is_numpy_in_an_installation_without_the_core(monkeypatch) -> None:
    from bm25lab.engine import core
    from bm25lab.engine.errors import BM25LabError

    monkeypatch.setattr(core, "kernels", lambda: None)
    assert backends.create("auto").name == "numpy"
    with pytest.raises(BM25LabError, match="lacks"):
        backends.create("core")


def test_a_one_shot_search_with_auto_never_imports_numba(tmp_path: Path, cranfield) -> None:
    from bm25lab.engine import Index, Tokenizer

    Index.build(list(cranfield.documents())[:300], Tokenizer("en"), backend="numpy").save(tmp_path / "idx")
    code = ("import sys\nfrom bm25lab import Index\n"
            f"index = Index.load({str(tmp_path / 'idx')!r}, backend='auto')\n"
            "assert index.backend == 'core'\n"
            "assert index.search('boundary layer', k=10)\n"
            "assert index._scorer._bounds is None, 'a single search computed every term bound'\n"
            "assert index.search_many({'1': 'flow', '2': 'wing'}, k=10)['2']\n"
            "assert 'numba' not in sys.modules, 'numba was imported'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env={**__import__("os").environ, backends.ENV_VARIABLE: "auto"})
    assert done.returncode == 0, done.stderr


def test_auto_searches_batches_of_a_loaded_index_with_the_core_and_no_numba(tmp_path: Path, cranfield) -> None:
    # a loaded index (its pairs saved) searched in batches by a fresh process with the defaults: the
    # core from the first batch, on two threads, numba never imported, the numpy backend's results
    import json

    from bm25lab.engine import Index, Tokenizer

    Index.build(cranfield.documents(), Tokenizer("en"), backend="numpy").save(tmp_path / "idx")
    queries = cranfield.judged_queries()
    (tmp_path / "queries.json").write_text(json.dumps(queries))
    expected = Index.load(tmp_path / "idx", backend="numpy").search_many(queries, k=100, variant="bm25+", workers=1)
    code = ("import json, sys\nfrom bm25lab import Index\n"
            f"index = Index.load({str(tmp_path / 'idx')!r})\n"
            f"queries = json.load(open({str(tmp_path / 'queries.json')!r}))\n"
            "results = index.search_many(queries, k=100, variant='bm25+', workers=2)\n"
            "assert 'numba' not in sys.modules, 'numba was imported'\n"
            "assert 'bm25lab.engine.core._core' in sys.modules, 'the core was not used'\n"
            "print(json.dumps({q: [h.doc_ids, [s.hex() for s in h.scores]] for q, h in results.items()}))\n")
    env = {k: v for k, v in __import__("os").environ.items() if k != backends.ENV_VARIABLE}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {q: [list(h.doc_ids), [s.hex() for s in h.scores]] for q, h in expected.items()}


@pytest.mark.parametrize("pairs", [True, False])
def test_single_searches_of_the_core_read_only_their_terms_bounds(pairs: bool, tmp_path: Path) -> None:
    # a single search before any batch takes its terms' largest weights from their own postings (no
    # bound of every term is computed), after a batch from the index's bounds: the numpy backend's
    # results either way, for every variant, with pairs saved or numbered by the first search
    from bm25lab.engine import Index

    built, queries = _zipf_index(n_docs=3_000, vocab=5_000)
    built.save(tmp_path / "index")
    if not pairs:
        without_saved_pairs(tmp_path / "index")
    reference = Index.load(tmp_path / "index", backend="numpy")
    for variant in ("lucene", "bm25l", "okapi"):
        loaded = Index.load(tmp_path / "index", backend="core")
        for query in queries[:40]:
            expected = reference.search_tokens(query, k=20, variant=variant)
            assert loaded.search_tokens(query, k=20, variant=variant) == expected
        assert loaded._scorer._bounds is None
        loaded.retrieve_tokens(queries[:5], 20, variant=variant)
        assert loaded._scorer._bounds is not None
        for query in queries[40:60]:
            assert loaded.search_tokens(query, k=20, variant=variant) == reference.search_tokens(query, k=20,
                                                                                                 variant=variant)


@pytest.mark.parametrize("fields", [False, True])
def test_the_core_finds_each_terms_extreme_weights_as_numpy_does(fields: bool) -> None:
    # the bounds' pass over every posting: the same largest and smallest table entries, bit for bit,
    # with terms without postings, negative entries and ties, on 1 to 3 threads
    from bm25lab.engine.postings import Postings
    from bm25lab.engine.retrieval import Scorer

    rng = np.random.default_rng(4)
    for trial in range(30):
        n_terms, n_docs = int(rng.integers(1, 300)), int(rng.integers(1, 400))
        df = rng.choice([0, 0, 1, 2, 7, 40, 200], n_terms).clip(0, n_docs)
        offsets = np.concatenate([[0], np.cumsum(df)]).astype(np.int64)
        docs = np.concatenate([np.sort(rng.choice(n_docs, n, replace=False)) for n in df] + [[]]).astype(np.int32)
        postings = Postings([f"t{t:03d}" for t in range(n_terms)], offsets, docs,
                            rng.integers(1, 9, docs.shape[0]).astype(np.int32),
                            rng.integers(1, 30, n_docs).astype(np.int32))
        scorer = Scorer(postings, np.arange(n_docs, dtype=np.int32))
        prepared = scorer.prepare(Params("lucene", 0.9, 0.4).resolved())
        size = postings.num_postings if fields else prepared.table.shape[0]
        values = rng.choice(rng.normal(size=9), size) if trial % 2 else rng.random(size)
        prepared = replace(prepared, table=values, per_posting=fields)
        scorer._weights = prepared
        expected = scorer.extreme_entries(prepared)
        got = CoreBackend()._entries(scorer, prepared, int(rng.integers(1, 4)))(np.arange(n_terms))
        assert got[0].tobytes() == expected[0].tobytes() and got[1].tobytes() == expected[1].tobytes()


def _kernel_args(doc_nums: np.ndarray, weights: np.ndarray, n_docs: int, id_rank: np.ndarray) -> tuple:
    """The ``index`` and ``weights`` tuples of one term whose postings (documents ``doc_nums``) weigh
    ``weights`` exactly (a per-posting table, scale 1.0; each block bounded by its largest weight)."""
    offsets = np.array([0, doc_nums.shape[0]], np.int64)
    blocks = encode(offsets, doc_nums, np.ones(doc_nums.shape[0], np.int32), np.ones(n_docs, np.int32))
    firsts = np.arange(0, doc_nums.shape[0], 128)
    bound_table = np.maximum.reduceat(weights, firsts) if firsts.shape[0] else np.zeros(1)
    index = (offsets, blocks.term_starts, blocks.last_docs, blocks.positions, blocks.data, id_rank)
    table = (weights, np.zeros(0), 0, 1, np.zeros(0, np.int64), np.zeros(0, np.uint16),
             np.arange(firsts.shape[0], dtype=np.uint32), bound_table, np.ones(1), True)
    return index, table


def test_the_core_refuses_arrays_it_cannot_read() -> None:
    # a wrong dtype or an inconsistent size is a clear Python error, never a read out of bounds
    core = kernels()
    n_docs, k = 4, 2
    index, weights = _kernel_args(np.array([1, 3], np.int32), np.array([0.5, 0.25]), n_docs,
                                  np.arange(n_docs, dtype=np.int32))
    args = dict(index=index, weights=weights, q_ptr=np.array([0, 1], np.int64), term_ids=np.array([0], np.int64),
                counts=np.ones(1), term_upper=np.ones(1), term_bound=np.ones(1), q_const=np.zeros(1), n_docs=n_docs,
                k=k, prune=True, n_threads=1, method=TERM_AT_A_TIME, out_docs=np.empty((1, k), np.int64),
                out_scores=np.empty((1, k)), out_len=np.zeros(1, np.int64))
    for method in (TERM_AT_A_TIME, BLOCK_MAX):
        core.batch_top_k(**{**args, "method": method})
        assert args["out_len"].tolist() == [2] and args["out_docs"][0].tolist() == [1, 3]
    short = tuple(index[:5]) + (np.arange(2, dtype=np.int32),)
    bad = [("index", index[:5], TypeError), ("index", short, ValueError), ("weights", list(weights), TypeError),
           ("term_ids", np.array([1], np.int64), ValueError), ("q_ptr", np.array([0, 2], np.int64), ValueError),
           ("out_docs", np.empty((1, 1), np.int64), ValueError), ("method", 3, ValueError),
           ("term_bound", np.ones(0), ValueError),
           ("out_len", np.zeros(1, np.int64)[::-1].copy().view(np.float64), TypeError)]
    for name, value, error in bad:
        with pytest.raises(error):
            core.batch_top_k(**{**args, name: value})
    mangled = [(0, np.array([0, 3], np.int64)), (2, np.array([1], np.int32)), (3, np.array([0], np.int64)),
               (4, np.zeros(3, np.uint8))]
    for position, value in mangled:  # postings and blocks that disagree: refused, or read as damaged
        with pytest.raises(ValueError):
            core.batch_top_k(**{**args, "index": index[:position] + (value,) + index[position + 1:]})


@pytest.mark.parametrize("backend", ["numpy", "core"])
def test_every_backend_by_name_through_the_public_api(backend, cranfield) -> None:
    # the same documents and scores as the numpy backend's, for single searches and batches, whatever
    # ran before in this process
    from bm25lab.engine import Index, Tokenizer

    docs = list(cranfield.documents())
    queries = cranfield.judged_queries()
    index = Index.build(docs, Tokenizer("en"), backend=backend, workers=1)
    reference = Index.build(docs, Tokenizer("en"), backend="numpy", workers=1)
    assert index.backend == backend
    for variant in ("lucene", "bm25+"):
        got = index.search_many(queries, k=100, variant=variant, workers=2)
        expected = reference.search_many(queries, k=100, variant=variant, workers=1)
        assert {q: (h.doc_ids, h.scores) for q, h in got.items()} == \
               {q: (h.doc_ids, h.scores) for q, h in expected.items()}
    for text in list(queries.values())[:20]:
        assert index.search(text, k=20, variant="okapi") == reference.search(text, k=20, variant="okapi")


def test_a_dense_selection_whose_sample_promises_too_much_counts_every_document() -> None:
    # every 16th document (the sampled ones) scores high, but only 50 of them do, fewer than k: the
    # floor the sample gives leaves fewer than k documents, and the histogram of all must be made
    from bm25lab.engine import Index, Tokenizer

    n_docs = 20_000
    docs = [(f"d{i:05d}", "alpha alpha beta" if i % 16 == 0 and i < 16 * 50 else f"alpha beta u{i % 9}")
            for i in range(n_docs)]
    index = Index.build(docs, tokenizer=Tokenizer("whitespace", stopwords=None), workers=1, backend="numpy")
    scorer = index._scorer
    terms = [scorer.query_terms(["alpha"]), scorer.query_terms(["alpha", "beta"])]
    for k in (64, 100, 300):
        _assert_compiled_equals_numpy(scorer, terms, k, Params("lucene", 1.2, 0.75).resolved(), threads=1, single=True)


@pytest.mark.parametrize("variant", ["lucene", "bm25+"])
def test_a_term_in_almost_every_document_beside_rare_ones(variant) -> None:
    # a few rare terms and one that almost every document holds with a tiny weight: for k above the
    # rare terms' documents the k-th best score is a common-term-only score, thousands of times below
    # the best; the dense selection's histogram must still find a floor near it (and when it cannot,
    # list and narrow the crowd) without losing one document of the top k or its order
    from bm25lab.engine import Index, Tokenizer

    rng = np.random.default_rng(11)
    n_docs = 40_000
    docs = []
    for i in range(n_docs):
        words = ["common"] * int(rng.integers(1, 4)) if i % 97 else []
        words += [f"filler{rng.integers(0, 5_000)}" for _ in range(int(rng.integers(3, 40)))]
        if i % 211 == 0:
            words.append("rare")
        if i % 53 == 0:
            words.append("scarce")
        docs.append((f"d{i}", " ".join(words)))
    index = Index.build(docs, tokenizer=Tokenizer("whitespace", stopwords=None), workers=1, backend="numpy")
    scorer = index._scorer
    terms = [scorer.query_terms(q) for q in (["rare", "common"], ["rare", "scarce", "common"], ["common"],
                                              ["scarce", "common", "common"])]
    params = Params(variant, 1.2, 0.75).resolved()
    for k in (64, 200, 1_000, 5_000):
        _assert_compiled_equals_numpy(scorer, terms, k, params, threads=2, single=True)


def test_skipping_to_a_few_documents_reads_their_frequencies_alone_at_every_width() -> None:
    # a rare term's documents prune the search at once, so each other term is read by skipping to those
    # few documents and reading each one's frequency by itself (not its block's): full blocks of every
    # width from 0 to 29 bits (block b's frequencies below 2**(b % 30)), and a short last block of each
    from bm25lab.engine.postings import Postings
    from bm25lab.engine.retrieval import Scorer
    from bm25lab.engine.selection import id_ranks

    rng = np.random.default_rng(29)
    n_docs = 20_000
    rare = np.concatenate([np.arange(0, n_docs - 400, 400), np.arange(n_docs - 80, n_docs, 4)]).astype(np.int32)
    columns: dict[str, tuple[np.ndarray, np.ndarray]] = {"rare": (rare, np.full(rare.size, 3, np.int32))}
    docs = np.arange(n_docs, dtype=np.int32)
    columns["every"] = (docs, (1 + rng.integers(0, 2 ** (docs // 128 % 30))).astype(np.int32))
    for width in range(30):
        kept = np.concatenate([np.sort(rng.choice(n_docs - 100, 4_960 + width, replace=False)),
                               np.arange(n_docs - 80, n_docs, 2)]).astype(np.int32)  # the short block: the last 8 + width
        tfs = 1 + rng.integers(0, 2 ** (np.arange(kept.size) // 128 % 30))
        tfs[kept.size // 128 * 128:] = 1 + rng.integers(0, 2 ** width, kept.size % 128)
        columns[f"short{width}"] = (kept, tfs.astype(np.int32))
    names = list(columns)
    lengths = np.ones(n_docs, np.int64)
    for doc_nums, tfs in columns.values():
        np.add.at(lengths, doc_nums, np.minimum(tfs, 2 ** 20))
    offsets = np.zeros(len(names) + 1, np.int64)
    np.cumsum([columns[t][0].size for t in names], out=offsets[1:])
    postings = Postings(names, offsets, np.concatenate([columns[t][0] for t in names]),
                        np.concatenate([columns[t][1] for t in names]), np.minimum(lengths, 2 ** 30).astype(np.int32))
    scorer = Scorer(postings, id_ranks([f"d{d}" for d in range(n_docs)]))
    queries = [scorer.query_terms(["rare", term]) for term in names[1:]]
    for k in (10, 40):
        _assert_compiled_equals_numpy(scorer, queries, k, Params("lucene", 0.9, 0.4).resolved(), threads=2,
                                      single=True)
    read, blocks = _blocks_read(scorer, queries[:1], 10, Params("lucene", 0.9, 0.4).resolved())
    assert read < blocks // 2, (read, blocks)  # 'every' read only where the rare term's documents are


def _half_and_common(n_docs: int, high: int) -> tuple:
    """Every document holds 'common' (a tiny weight), every even one 'half' (so many that a search turns
    dense before 'common'), with lengths spread by filler words; with ``high``, the first ``high`` of the
    documents a dense floor samples (every 16th) hold 'half' 6 times and the others once."""
    from bm25lab.engine import Index, Tokenizer

    rng = np.random.default_rng(5)
    docs = []
    for i in range(n_docs):
        words = ["common"] * int(rng.integers(1, 4)) + ["filler"] * int(rng.integers(0, 200))
        if i % 2 == 0:
            tf = (6 if i % 16 == 0 and i < 16 * high else 1) if high else int(rng.integers(1, 9))
            words += ["half"] * tf
        docs.append((f"d{i}", " ".join(words)))
    index = Index.build(docs, tokenizer=Tokenizer("whitespace", stopwords=None), workers=1, backend="numpy")
    return index._scorer, [index._scorer.query_terms(["half", "common"])]


def _blocks_read(scorer, queries, k: int, params: Params) -> tuple[int, int]:
    search = CoreBackend(TERM_AT_A_TIME)
    search.top_k_batch(scorer, TermBatch.of(queries), k, params, 1)
    return search.last_read.blocks_read, search.last_read.blocks


def test_a_dense_search_adds_its_last_common_term_to_the_few_documents_that_can_still_make_the_top_k() -> None:
    # 'half' added in full turns the search dense; 'common' can lift no document by more than a hair,
    # so only the documents within that hair of a floor of the k-th best score get it (their blocks
    # alone are read), and the top k is still numpy's, bit for bit
    scorer, queries = _half_and_common(40_000, high=0)
    params = Params("lucene", 2.0, 1.0).resolved()
    for k in (64, 100):
        _assert_compiled_equals_numpy(scorer, queries, k, params, threads=1, single=True)
    read, blocks = _blocks_read(scorer, queries, 64, params)
    assert read < blocks * 3 // 4, (read, blocks)


def test_a_dense_search_whose_sampled_floor_proves_too_high_adds_its_terms_again() -> None:
    # the sampled documents are the only high ones and fewer than k: the floor they give has fewer than
    # k documents at or above it, so nothing may be pruned by it: the terms are added again in full
    scorer, queries = _half_and_common(40_000, high=20)
    params = Params("lucene", 0.9, 0.4).resolved()
    for k in (64, 100):
        _assert_compiled_equals_numpy(scorer, queries, k, params, threads=1, single=True)
    read, blocks = _blocks_read(scorer, queries, 64, params)
    assert read > blocks, (read, blocks)  # the blocks of 'half' read twice


@pytest.mark.parametrize("method", [TERM_AT_A_TIME, BLOCK_MAX])
def test_scores_equal_only_once_the_constant_is_added_still_tie_by_id(method: int) -> None:
    # two partial sums an ulp apart become one final score when bm25l/bm25+'s constant is added: the
    # documents then tie, and the tie rule (id rank descending) orders them on every path of the
    # selection (the heap for a small k, the sort of the candidates for k >= 64)
    module = kernels()
    rng = np.random.default_rng(0)
    n_docs, n_postings, const = 10_000, 200, 1.0
    doc_nums = np.sort(rng.choice(n_docs, n_postings, replace=False)).astype(np.int32)
    table = np.array([1.0, 1.0 + 2.0 ** -52])
    assert table[0] != table[1] and table[0] + const == table[1] + const
    weights = table[rng.integers(0, 2, n_postings)]
    id_rank = rng.permutation(n_docs).astype(np.int32)  # an index's id ranks are int32 (selection.id_ranks)
    for k in (10, 64, 150, n_postings):
        docs, scores = _query(module, doc_nums, weights, n_docs, id_rank, k, const, method)
        assert len(docs) == k and set(scores) == {2.0}
        assert docs == doc_nums[np.argsort(-id_rank[doc_nums])][:k].tolist(), k


def _query(module, doc_nums: np.ndarray, weights: np.ndarray, n_docs: int, id_rank: np.ndarray, k: int,
           const: float, method: int) -> tuple[list, list]:
    """The core's top k of one term whose postings (documents ``doc_nums``) weigh ``weights``."""
    index, table = _kernel_args(doc_nums, weights, n_docs, id_rank)
    upper = max(float(weights.max()), 0.0) if weights.size else 0.0
    docs, out = np.empty(k, np.int64), np.empty(k)
    count = module.query_top_k(
        index, table, np.array([0], np.int64), np.ones(1), np.array([upper]), np.array([upper]), const, n_docs, k,
        bool(weights.size == 0 or weights.min() >= 0), method, np.full(n_docs, -0.0), np.zeros(n_docs, np.uint8),
        np.empty(n_docs, np.int64), np.empty(n_docs, np.int64), np.empty(n_docs), np.empty(k), np.empty(k, np.int64),
        np.empty(k, np.int64), docs, out)
    return docs[:count].tolist(), out[:count].tolist()


def _top_of_scores(module, scores: np.ndarray, k: int, const: float, id_rank: np.ndarray,
                   method: int) -> tuple[list, list]:
    """The core's top k of one term whose postings score ``scores`` (NaN: no posting): document d's one
    posting weighs ``scores[d]`` exactly."""
    present = np.flatnonzero(~np.isnan(scores)).astype(np.int32)
    return _query(module, present, scores[present].copy(), scores.shape[0], id_rank, k, const, method)


@pytest.mark.parametrize("method", [TERM_AT_A_TIME, BLOCK_MAX])
def test_the_core_selects_the_top_k_of_any_spread_of_scores(method: int) -> None:
    # the selection's paths (the heap, the sorted candidates with their bucketed radix order, the dense
    # histogram floor of the scores' bits sampled and in full, the blocks listed and cleared) over
    # scores spread across 60 binades, in crowds and exact ties, negatives, -0.0 and 0.0 and documents
    # without a posting: the numpy reference's top k (score descending, id rank descending), bit for bit
    from bm25lab.engine.selection import top_k

    module = kernels()
    rng = np.random.default_rng(3)
    for trial in range(60):
        n = int(rng.integers(1, 6_000))
        kind = trial % 5
        if kind == 0:
            scores = np.exp2(rng.uniform(-60, 4, n))
        elif kind == 1:
            scores = rng.choice(rng.random(7) * 3, n)
        elif kind == 2:
            scores = np.concatenate([1.0 + rng.random(n) * 1e-12, [1e-300, 1e300]])[:n]
        elif kind == 3:
            scores = rng.normal(size=n)
        else:
            scores = rng.choice([0.0, -0.0, 1.0, 2.5], n)
        scores = rng.permutation(scores)
        scores[rng.random(n) < float(rng.choice([0.0, 0.3, 0.9]))] = np.nan
        const = float(rng.choice([0.0, 0.5, 3.0]))
        id_rank = rng.permutation(n).astype(np.int32)
        present = np.flatnonzero(~np.isnan(scores))
        for k in (1, 10, 64, 500, n):
            best = top_k(present, scores[present] + const, id_rank, k)
            expected = (present[best].tolist(), (scores[present] + const)[best].tolist())
            assert _top_of_scores(module, scores, k, const, id_rank, method) == expected, (trial, k)


def test_ranked_rows_from_padded_rows_read_each_row_to_its_length() -> None:
    from bm25lab.engine.records import DocIds, RankedRows, Results

    rng = np.random.default_rng(2)
    for _ in range(200):  # short rows anywhere (rows move up in the arrays' own memory)
        n_rows, width = int(rng.integers(1, 30)), int(rng.integers(1, 50))
        docs, scores = rng.integers(0, 10 ** 6, (n_rows, width)), rng.random((n_rows, width))
        lengths = np.where(rng.random(n_rows) < 0.3, rng.integers(0, width + 1, n_rows), width)
        expected = [(docs[i, :n].tolist(), scores[i, :n].tolist()) for i, n in enumerate(lengths)]
        got = RankedRows.of_padded(docs, scores, lengths)
        assert [(d.tolist(), s.tolist()) for d, s in got] == expected

    docs = np.arange(12, dtype=np.int64).reshape(3, 4)
    scores = -docs.astype(np.float64)
    for lengths in ([4, 4, 4], [4, 0, 2], [0, 0, 0], [1, 4, 3]):
        rows = RankedRows.of_padded(docs.copy(), scores.copy(), np.array(lengths))  # takes the arrays' memory
        assert len(rows) == 3
        for i, n in enumerate(lengths):
            assert rows[i][0].tolist() == docs[i, :n].tolist() and rows[i][1].tolist() == scores[i, :n].tolist()
        assert [r[0].tolist() for r in rows[1:]] == [docs[i, :n].tolist() for i, n in enumerate(lengths)][1:]
        assert rows[-1][0].tolist() == docs[2, :lengths[2]].tolist()
        with pytest.raises(IndexError):
            rows[3]
        ids = DocIds([f"d{i}" for i in range(12)])
        flat, listed = Results.of(["a", "b", "c"], rows, ids), Results.of(["a", "b", "c"], list(rows), ids)
        assert flat.offsets.tolist() == listed.offsets.tolist()
        assert flat.doc_nums.tolist() == listed.doc_nums.tolist() and flat.scores.tolist() == listed.scores.tolist()


def _resident_kib(path: Path) -> int:
    """Resident KiB of this process's mappings of the file ``path`` (``/proc/self/smaps``): of that very
    file, not of every file of its name (another test's index, mapped and still to be collected, keeps
    pages of its own tfs.npy resident: counted, they failed this test in the full suite, never alone)."""
    total, inside, wanted = 0, False, " " + os.path.realpath(path)
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if re.match(r"[0-9a-f]+-[0-9a-f]+ ", line):  # a mapping's first line: address range ... path
            inside = line.rstrip().endswith(wanted)
        elif inside and line.startswith("Rss:"):
            total += int(line.split()[1])
    return total


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="reads Linux's /proc/self/smaps")
@pytest.mark.parametrize("saved_pairs", [True, False])
def test_a_version_2_index_lets_its_plain_postings_pages_go(saved_pairs, tmp_path) -> None:
    # an index of format version 2 keeps its postings plain: the core's batch encodes them in blocks
    # in memory and lets the mapped pages of the plain frequencies go; the index gives the in-memory
    # index's results (numpy, the specification, reads the plain postings as they are)
    from bm25lab.engine import Index

    backend = "core"
    built, queries = _zipf_index(n_docs=20_000, vocab=5_000)
    built.save(tmp_path / "index")
    as_version_2(tmp_path / "index", pairs=saved_pairs)
    loaded = Index.load(tmp_path / "index", backend=backend)
    tfs = next((tmp_path / "index").glob("seg-*/tfs.npy"))
    assert (loaded._scorer._pairs is not None) == saved_pairs
    assert int(np.asarray(loaded._scorer.postings.tfs).sum()) > 0  # every page read once
    assert _resident_kib(tfs) > 100
    found = loaded.retrieve_tokens(queries, 10, workers=1)
    assert _resident_kib(tfs) == 0
    expected = built.retrieve_tokens(queries, 10, workers=1)
    assert all(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) for a, b in zip(found, expected))
    assert int(np.asarray(loaded._scorer.postings.tfs).sum()) == int(np.asarray(built._scorer.postings.tfs).sum())


@pytest.mark.parametrize("spaced", [False, True])
def test_a_loaded_index_keeps_its_terms_as_text_for_compiled_batches(tmp_path, spaced: bool) -> None:
    # a loaded segment's terms stay the text of terms.txt: the compiled vocabulary is made from it
    # and no string per term is made, unless a term holds a space (then from the strings); the
    # results and the terms read are those of the index built in memory
    from bm25lab.engine import Index
    from bm25lab.engine.postings import TermList

    york = "new york" if spaced else "new_york"
    docs = [("d1", [york, "city", "city"]), ("d2", ["york", "new"]), ("d3", ["city", york]), ("d4", ["ümlaut", "日本"])]
    built = Index.build_tokens(docs, backend="core")
    built.save(tmp_path / "index")
    loaded = Index.load(tmp_path / "index", backend="core")
    terms = loaded._scorer.postings.terms
    assert isinstance(terms, TermList) and terms._terms is None and len(terms) == built.num_terms
    queries = [[york], ["new", "york"], ["city", "日本"], ["nothing"]]
    found, expected = loaded.retrieve_tokens(queries, 10, workers=1), built.retrieve_tokens(queries, 10, workers=1)
    assert all(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) for a, b in zip(found, expected))
    assert [loaded.doc_ids[d] for d in found[0][0]] == ["d3", "d1"]
    assert (terms._terms is None) is not spaced  # the batch read the text, not the strings
    assert terms == list(built._scorer.postings.terms) == built._scorer.postings.terms
    assert terms[0] == built._scorer.postings.terms[0] and list(terms) == sorted(list(terms))


def test_forgetting_the_term_table_leaves_a_lookup_under_way_its_table() -> None:
    # the numpy term table may be forgotten while another thread looks terms up: that thread keeps the
    # whole table it took (a new table replaces it; none is emptied in place), and the next look-up
    # makes a new one with the same ids
    from bm25lab.engine import Index

    index = Index.build_tokens([("d1", ["a", "b"]), ("d2", ["b", "c"])], backend="numpy")
    postings = index._scorer.postings
    taken = postings._table()
    postings.forget_lookup()
    assert taken == {"a": 0, "b": 1, "c": 2} and postings._lookup == {}
    assert postings.term_ids(["c", "x", "a"]).tolist() == [2, -1, 0] and postings._lookup == taken
