"""Property-based tests of the compiled core's search and building entry points against their numpy
specification: random collections, parameters and queries give the same documents, score bits and
order; random (valid) building inputs give the same arrays; random hostile arrays give a Python error,
never a crash. The examples are drawn by hypothesis (derandomized: the same every run), so the tests
are the same on every machine; tests/sanitize.py runs them under AddressSanitizer and UBSan too."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bm25lab.engine.backends.core_backend import BLOCK_MAX, TERM_AT_A_TIME, CoreBackend
from bm25lab.engine.backends.numpy_backend import NumpyBackend
from bm25lab.engine.core import kernels
from bm25lab.engine.postings import Postings
from bm25lab.engine.retrieval import Scorer, TermBatch
from bm25lab.engine.scoring import VARIANTS, Params
from bm25lab.engine.selection import id_ranks

FUZZ = settings(max_examples=60, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
CORE, NUMPY = CoreBackend(), NumpyBackend()
SEARCHES = (CoreBackend(TERM_AT_A_TIME), CoreBackend(BLOCK_MAX))  # the core's two searches, each for every query


@st.composite
def collections(draw) -> Postings:
    """A small collection: documents of a few terms from a small vocabulary, drawn with skew so that
    some terms are in most documents, with ties in lengths and frequencies."""
    n_docs = draw(st.integers(1, 120))
    n_terms = draw(st.integers(1, 25))
    lengths = []
    postings: dict[int, list[tuple[int, int]]] = {t: [] for t in range(n_terms)}
    for d in range(n_docs):
        tfs = draw(st.dictionaries(st.integers(0, n_terms - 1), st.integers(1, 6), max_size=8))
        for t, tf in tfs.items():
            postings[t].append((d, tf))
        lengths.append(sum(tfs.values()) + draw(st.integers(0, 3)))
    offsets = np.zeros(n_terms + 1, np.int64)
    np.cumsum([len(postings[t]) for t in range(n_terms)], out=offsets[1:])
    flat = [p for t in range(n_terms) for p in postings[t]]
    return Postings([f"t{t:03d}" for t in range(n_terms)], offsets, np.array([d for d, _ in flat], np.int32),
                    np.array([tf for _, tf in flat], np.int32), np.array(lengths, np.int32))


@given(postings=collections(), data=st.data())
@FUZZ
def test_the_cores_search_equals_numpys(postings: Postings, data) -> None:
    ids = [f"doc{data.draw(st.integers(0, 10**6))}-{d}" for d in range(postings.num_docs)]
    scorer = Scorer(postings, id_ranks(ids))
    params = Params(data.draw(st.sampled_from(sorted(VARIANTS))), data.draw(st.sampled_from([0.0, 0.5, 0.9, 1.2, 3.0])),
                    data.draw(st.sampled_from([0.0, 0.4, 0.75, 1.0]))).resolved()
    queries = data.draw(st.lists(st.lists(st.sampled_from(list(postings.terms) + ["unknown"]), max_size=6),
                                 min_size=1, max_size=12))
    k = data.draw(st.sampled_from([1, 3, 10, 64, 200]))
    batch = NUMPY.term_batch(scorer, queries)
    core_batch = CORE.term_batch(scorer, queries)
    for name in ("q_ptr", "term_ids", "counts"):
        assert np.array_equal(getattr(batch, name), getattr(core_batch, name))
    expected = NUMPY.top_k_batch(scorer, batch, k, params, 1)
    for search in SEARCHES:
        got = search.top_k_batch(scorer, batch, k, params, data.draw(st.sampled_from([1, 2, 3])))
        for i, ((docs, scores), (ref_docs, ref_scores)) in enumerate(zip(got, expected)):
            assert docs.tolist() == ref_docs.tolist() and scores.tobytes() == ref_scores.tobytes()
            one = search.top_k(scorer, batch.query(i), k, params)
            assert one[0].tolist() == ref_docs.tolist() and one[1].tobytes() == ref_scores.tobytes()


@given(st.lists(st.lists(st.integers(-1, 40), max_size=30), max_size=20))
@FUZZ
def test_the_cores_query_grouping_equals_numpys(queries) -> None:
    ids = np.array([t for q in queries for t in q], np.int32)
    lengths = np.array([len(q) for q in queries], np.int64)
    q_ptr, terms, counts = np.empty(len(queries) + 1, np.int64), np.empty(ids.size, np.int64), np.empty(ids.size)
    n = kernels().group_query_terms(ids, lengths, q_ptr, terms, counts)
    expected = TermBatch.of([_grouped(q) for q in queries])
    assert q_ptr.tolist() == expected.q_ptr.tolist()
    assert terms[:n].tolist() == expected.term_ids.tolist() and counts[:n].tolist() == expected.counts.tolist()


def _grouped(query: list[int]):
    from bm25lab.engine.retrieval import QueryTerms

    known = np.array([t for t in query if t >= 0], np.int64)
    values, counts = np.unique(known, return_counts=True)
    return QueryTerms(values, counts.astype(np.float64))


@given(st.lists(st.binary(max_size=12), max_size=60), st.booleans())
@FUZZ
def test_the_cores_vocabulary_and_order_equal_pythons(tokens: list[bytes], spaced: bool) -> None:
    # any bytes (NULs, spaces, invalid UTF-8) as terms: ids in order of first sight, the code point
    # (byte) order of the distinct terms, and look-ups that add nothing
    table = kernels().Vocabulary()
    ends = np.cumsum([len(t) for t in tokens]).astype(np.int64)
    text = np.frombuffer(b"".join(tokens), np.uint8)
    ids = np.empty(len(tokens), np.int32)
    if tokens:
        table.encode(text, ends, ids, True)
    first_seen = list(dict.fromkeys(tokens))
    assert ids.tolist() == [first_seen.index(t) for t in tokens] and len(table) == len(first_seen)
    order = np.empty(len(table), np.int64)
    table.order(order)
    assert [first_seen[i] for i in order] == sorted(first_seen)
    probe = [b"\xff\xfe missing"] + first_seen[:5]
    found = np.empty(len(probe), np.int32)
    table.encode(np.frombuffer(b"".join(probe), np.uint8), np.cumsum([len(t) for t in probe]).astype(np.int64),
                 found, False)
    assert found.tolist() == [-1] + list(range(len(probe) - 1)) and len(table) == len(first_seen)


@given(st.data())
@FUZZ
def test_hostile_arrays_into_the_search_entry_points_are_refused(data) -> None:
    # random shapes, dtypes and values in every array argument (and in the index's tuples): a Python
    # error or an answer, never a crash (the sanitizer run reads every access)
    core = kernels()
    n_docs = data.draw(st.integers(0, 6))
    dtype = st.sampled_from([np.int32, np.int64, np.uint16, np.uint32, np.float64, np.uint8])

    def array(length_max: int = 6):
        kind = data.draw(dtype)
        values = data.draw(st.lists(st.integers(-3, 9), max_size=length_max))
        return np.array(values).astype(kind)

    def index():
        return tuple(array() for _ in range(6))

    def weights():
        return (array(), array(), data.draw(st.integers(-1, 3)), data.draw(st.integers(-1, 3)), array(), array(),
                array(), array(), array(), data.draw(st.booleans()))

    method = data.draw(st.integers(0, 3))
    args = [index(), weights(), array(), array(), array(), array(), array(), array(), n_docs,
            data.draw(st.integers(-1, 4)), data.draw(st.booleans()), data.draw(st.integers(0, 3)), method,
            np.empty((2, 4), np.int64), np.empty((2, 4)), np.zeros(2, np.int64)]
    try:
        core.batch_top_k(*args)
    except (TypeError, ValueError, OverflowError):
        pass
    q_args = [index(), weights(), array(), array(), array(), array(), data.draw(st.floats(-2, 2)), n_docs,
              data.draw(st.integers(-1, 4)), data.draw(st.booleans()), method, np.full(n_docs, -0.0),
              np.zeros(n_docs, np.uint8), np.empty(n_docs, np.int64), np.empty(n_docs, np.int64), np.empty(n_docs),
              np.empty(4), np.empty(4, np.int64), np.empty(4, np.int64), np.empty(4, np.int64), np.empty(4)]
    try:
        core.query_top_k(*q_args)
    except (TypeError, ValueError, OverflowError):
        pass
    try:
        core.term_extremes(index(), weights(), array(), n_docs, data.draw(st.integers(0, 3)), np.empty(4), np.empty(4))
    except (TypeError, ValueError, OverflowError):
        pass


@given(st.data())
@FUZZ
def test_hostile_arrays_into_the_codec_entry_points_are_refused(data) -> None:
    core = kernels()
    dtype = st.sampled_from([np.int32, np.int64, np.uint8, np.float64])

    def array(length_max: int = 8):
        return np.array(data.draw(st.lists(st.integers(-3, 300), max_size=length_max))).astype(data.draw(dtype))

    calls = [
        (core.block_layout, [array() for _ in range(5)] + [np.empty(3, np.int64), np.empty(2, np.int32),
                                                            np.empty(2, np.int64), np.empty(2, np.int64)]),
        (core.write_blocks, [array() for _ in range(5)] + [np.zeros(data.draw(st.integers(0, 40)), np.uint8)]),
        (core.decode_postings, [array() for _ in range(5)] + [data.draw(st.integers(-2, 9)), data.draw(st.integers(-2, 9)),
                                                              np.empty(9, np.int32), np.empty(9, np.int32)]),
    ]
    for function, args in calls:
        try:
            function(*args)
        except (TypeError, ValueError, OverflowError):
            pass


@given(postings=collections(), data=st.data())
@FUZZ
def test_damaged_blocks_are_an_error_never_a_crash(postings: Postings, data) -> None:
    # any byte of the blocks, any last document, any position changed: decoding and both searches
    # either answer or raise ValueError (a damaged block is checked as it is read)
    from bm25lab.engine import codec
    from bm25lab.engine.backends.core_backend import index_args

    blocks = postings.blocks()
    if not blocks.num_blocks:
        return
    data_bytes, last_docs, positions = blocks.data.copy(), blocks.last_docs.copy(), blocks.positions.copy()
    what = data.draw(st.sampled_from(["byte", "last", "position"]))
    if what == "byte":
        at = data.draw(st.integers(0, data_bytes.shape[0] - 1))
        data_bytes[at] = data.draw(st.integers(0, 255))
    elif what == "last":
        at = data.draw(st.integers(0, last_docs.shape[0] - 1))
        last_docs[at] = data.draw(st.integers(-2, postings.num_docs + 2))
    else:
        at = data.draw(st.integers(0, positions.shape[0] - 1))
        positions[at] = data.draw(st.integers(-2, int(positions[-1]) + 40))
    damaged = codec.Blocks(last_docs, positions, data_bytes, blocks.bound_codes, blocks.bound_pairs, blocks.term_starts)
    try:
        codec.decode(damaged, postings.offsets, 0, postings.num_postings)
    except ValueError:
        pass
    broken = Postings(postings.terms, postings.offsets, postings.doc_nums, postings.tfs, postings.doc_lengths,
                      _blocks=damaged)
    scorer = Scorer(broken, id_ranks([f"d{d}" for d in range(postings.num_docs)]))
    batch = NUMPY.term_batch(scorer, [list(postings.terms)[:4]])
    for search in SEARCHES:
        try:
            search.top_k_batch(scorer, batch, 5, Params().resolved(), 1)
        except ValueError:
            pass
    assert index_args(scorer)[4] is data_bytes


def test_the_core_is_loaded_from_this_installation() -> None:
    assert kernels() is not None, "the tests need the compiled core (pip install . with a C compiler)"
    assert pytest.importorskip("bm25lab.engine.core._core") is kernels()
