"""Postings in blocks of 128 (engine/codec.py, engine/core/codec.c): the core writes the bytes of the numpy
specification and reads back every posting; a block's bound is at least every weight in it, for every
variant; loaded postings decode only what is read; an index of format version 2 loads, searches and
grows (its new segments in blocks); a newer version is refused in one line that says what to do."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from recording import as_version_2, zipf_documents

from bm25lab.engine import Index, IndexFormatError, Tokenizer, codec, storage
from bm25lab.engine.postings import Postings
from bm25lab.engine.retrieval import Scorer
from bm25lab.engine.scoring import VARIANTS, Params

FUZZ = settings(max_examples=50, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
WS = Tokenizer("whitespace", stopwords=None)


@st.composite
def postings_arrays(draw) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Terms of 0 to 400 postings (whole blocks, a short last block, a single posting), documents far
    apart or adjacent, frequencies of 1 to 2**31 - 1; the documents' lengths."""
    n_docs = draw(st.sampled_from([1, 7, 300, 5_000, 2**25]))
    n_terms = draw(st.integers(0, 8))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    dfs = [min(n_docs, draw(st.sampled_from([0, 1, 2, 127, 128, 129, 256, 300, 400]))) for _ in range(n_terms)]
    docs = [np.sort(rng.choice(n_docs, df, replace=False)) if n_docs < 10**6 else
            np.unique(rng.integers(0, n_docs, df)) for df in dfs]
    dfs = [d.shape[0] for d in docs]
    top = draw(st.sampled_from([1, 2, 9, 1000, 2**31 - 1]))
    tfs = [rng.integers(1, top, df, endpoint=True) for df in dfs]
    offsets = np.concatenate([[0], np.cumsum(dfs)]).astype(np.int64)
    flat_docs = np.concatenate(docs + [np.zeros(0)]).astype(np.int32)
    flat_tfs = np.concatenate(tfs + [np.zeros(0)]).astype(np.int32)
    used = int(flat_docs.max()) + 1 if flat_docs.shape[0] else 1
    lengths = rng.integers(0, 50, max(used, min(n_docs, 5_000))).astype(np.int32)
    return offsets, flat_docs, flat_tfs, lengths


@given(postings_arrays(), st.data())
@FUZZ
def test_the_core_writes_the_specifications_bytes_and_reads_back_every_posting(arrays, data) -> None:
    offsets, docs, tfs, lengths = arrays
    spec = codec.encode_numpy(offsets, docs, tfs, lengths)
    core = codec.encode(offsets, docs, tfs, lengths, threads=data.draw(st.sampled_from([1, 2, 3, 5])))  # parts by postings
    for name in ("last_docs", "positions", "data", "bound_codes", "bound_pairs", "term_starts"):
        a, b = getattr(spec, name), getattr(core, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    assert core.data.shape[0] == core.positions[-1] + codec.PAD and not core.data[-codec.PAD:].any()
    n = docs.shape[0]
    lo = data.draw(st.integers(0, n))
    hi = data.draw(st.integers(lo, n))
    for decode in (codec.decode, codec.decode_numpy):
        got_docs, got_tfs = decode(core, offsets, lo, hi)
        assert got_docs.tolist() == docs[lo:hi].tolist() and got_tfs.tolist() == tfs[lo:hi].tolist()
    # each block's bound pair: its largest frequency and its shortest document
    firsts = offsets[np.repeat(np.arange(offsets.shape[0] - 1), np.diff(core.term_starts))] + 128 * (
        np.arange(core.num_blocks) - core.term_starts[np.repeat(np.arange(offsets.shape[0] - 1),
                                                                np.diff(core.term_starts))])
    for j, first in enumerate(firsts.tolist()):
        end = min(first + 128, int(offsets[np.searchsorted(offsets, first, side="right")]))
        pair = core.bound_pairs[:, core.bound_codes[j]]
        assert pair[0] == tfs[first:end].max() and pair[1] == lengths[docs[first:end]].min()
        assert core.last_docs[j] == docs[end - 1]


def test_full_blocks_take_sixteen_bytes_a_bit_of_width() -> None:
    # 128 postings of gaps 0..3 and frequencies 1..2: widths 2 and 1, 2 + 32 + 16 bytes
    offsets = np.array([0, 128], np.int64)
    docs = np.cumsum(np.arange(128) % 4 + 1).astype(np.int32) - 1
    tfs = (np.arange(128) % 2 + 1).astype(np.int32)
    blocks = codec.encode(offsets, docs, tfs, np.ones(int(docs[-1]) + 1, np.int32))
    assert blocks.positions.tolist() == [0, 2 + 32 + 16] and blocks.data[:2].tolist() == [2, 1]


def test_the_encoder_refuses_postings_it_cannot_store() -> None:
    offsets = np.array([0, 3], np.int64)
    lengths = np.ones(10, np.int32)
    for docs, tfs in ((np.array([1, 1, 2], np.int32), np.ones(3, np.int32)),   # not ascending
                      (np.array([1, 2, 12], np.int32), np.ones(3, np.int32)),  # past the documents
                      (np.array([1, 2, 3], np.int32), np.array([1, 0, 1], np.int32))):  # a zero frequency
        for threads in (1, 2):
            with pytest.raises(ValueError):
                codec.encode(offsets, docs, tfs, lengths, threads=threads)


def test_loaded_postings_decode_only_what_is_read(tmp_path: Path) -> None:
    docs, _, _, _ = zipf_documents(2_000, 3_000, 4, longest=60)
    built = Index.build(docs, tokenizer=WS)
    built.save(tmp_path / "i")
    loaded = Index.load(tmp_path / "i")
    plain, column = built._segment.postings, loaded._segment.postings
    assert isinstance(column.doc_nums, codec.BlockColumn) and len(column.doc_nums) == plain.num_postings
    assert np.array_equal(np.asarray(column.doc_nums), plain.doc_nums)
    assert np.array_equal(np.asarray(column.tfs), plain.tfs)
    rng = np.random.default_rng(1)
    for _ in range(50):
        lo = int(rng.integers(0, plain.num_postings))
        hi = int(rng.integers(lo, plain.num_postings + 1))
        assert np.array_equal(column.doc_nums[lo:hi], plain.doc_nums[lo:hi])
        runs = np.concatenate([np.arange(a, a + int(rng.integers(1, 40))) for a in rng.integers(0, lo + 1, 5)])
        runs = runs[runs < plain.num_postings]
        assert np.array_equal(column.tfs[runs], plain.tfs[runs])
    assert np.array_equal(column.tfs[::7], plain.tfs[::7])


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_a_blocks_bound_is_at_least_every_weight_in_it(variant: str) -> None:
    # every variant's tf part grows with the frequency and falls with the length, so the block's
    # (largest tf, shortest length) bounds it, for any k1, b and delta
    docs, _, _, _ = zipf_documents(3_000, 2_000, 9, longest=90)
    index = Index.build(docs, tokenizer=WS, backend="numpy")
    scorer: Scorer = index._scorer
    postings = scorer.postings
    blocks = postings.blocks()
    from bm25lab.engine.retrieval import _block_firsts

    firsts = _block_firsts(np.asarray(postings.offsets), blocks.term_starts)
    for k1, b, delta in ((0.9, 0.4, None), (0.0, 1.0, None), (3.0, 0.0, 2.0), (1e-6, 0.75, 0.0)):
        params = Params(variant, k1, b, delta).resolved()
        prepared = scorer.prepare(params)
        entries = prepared.table[scorer.pair_lookup().codes(postings.tfs, postings.doc_nums)]
        largest = np.maximum.reduceat(entries, firsts)
        bound = scorer.block_weights(params).bound_table[blocks.bound_codes]
        assert (bound >= largest * (1 - 1e-12)).all(), (k1, b, delta)


def _runs(index: Index, queries: dict[str, str], k: int, variant: str = "lucene") -> dict:
    found = index.search_many(queries, k=k, variant=variant, workers=2)
    return {q: [(hit.doc_id, float(hit.score).hex()) for hit in hits] for q, hits in found.items()}


@pytest.mark.parametrize("pairs", [True, False])
def test_an_index_of_format_2_loads_searches_and_grows_in_blocks(tmp_path: Path, pairs: bool) -> None:
    docs, _, _, rng = zipf_documents(1_500, 2_000, 6, longest=50)
    queries = {f"q{i}": " ".join(f"w{t}" for t in rng.choice(150, size=int(m))) for i, m in
               enumerate(rng.integers(1, 6, 40))}
    built = Index.build(docs[:1_200], tokenizer=WS)
    built.save(tmp_path / "i")
    as_version_2(tmp_path / "i", pairs=pairs)
    manifest = json.loads((tmp_path / "i" / storage.MANIFEST).read_text())
    assert manifest["format_version"] == 2 and "doc_nums.npy" in manifest["segments"][0]["files"]
    old = Index.load(tmp_path / "i")
    for k in (1, 10, 1000):
        for variant in ("lucene", "bm25+"):
            assert _runs(old, queries, k, variant) == _runs(built, queries, k, variant)
    old.add(docs[1_200:])
    old.delete(["d3", "d1300"])
    fresh = Index.build([d for d in docs if d[0] not in ("d3", "d1300")], tokenizer=WS)
    manifest = json.loads((tmp_path / "i" / storage.MANIFEST).read_text())
    assert manifest["format_version"] == storage.FORMAT_VERSION == 3
    assert ["doc_nums.npy" in e["files"] for e in manifest["segments"]] == [True, False]  # the old one as it was
    assert _runs(Index.load(tmp_path / "i"), queries, 10) == _runs(fresh, queries, 10)
    old.optimize()
    manifest = json.loads((tmp_path / "i" / storage.MANIFEST).read_text())
    assert ["blocks.npy" in e["files"] for e in manifest["segments"]] == [True]
    assert _runs(Index.load(tmp_path / "i"), queries, 10) == _runs(fresh, queries, 10)


def test_a_version_this_bm25lab_does_not_read_is_refused_saying_what_to_do(tmp_path: Path) -> None:
    docs, _, _, _ = zipf_documents(200, 300, 2)
    Index.build(docs, tokenizer=WS).save(tmp_path / "i")
    manifest = json.loads((tmp_path / "i" / storage.MANIFEST).read_text())
    for version, hint in ((1, "rebuild it with this version of bm25lab"), (4, "upgrade bm25lab")):
        manifest["format_version"] = version
        manifest["checksum"] = storage.manifest_checksum(manifest)
        (tmp_path / "i" / storage.MANIFEST).write_text(json.dumps(manifest))
        with pytest.raises(IndexFormatError, match=f"format version {version}, this bm25lab reads versions 2 to 3; "
                                                   f"{hint}"):
            Index.load(tmp_path / "i")


def test_a_version_2_manifest_cannot_name_a_segment_in_blocks(tmp_path: Path) -> None:
    docs, _, _, _ = zipf_documents(200, 300, 2)
    Index.build(docs, tokenizer=WS).save(tmp_path / "i")
    manifest = json.loads((tmp_path / "i" / storage.MANIFEST).read_text())
    manifest["format_version"] = 2
    manifest["checksum"] = storage.manifest_checksum(manifest)
    (tmp_path / "i" / storage.MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(IndexFormatError, match="lists other files"):
        Index.load(tmp_path / "i")


def test_postings_without_blocks_encode_them_once() -> None:
    docs = np.array([0, 2, 1], np.int32)
    postings = Postings(["a", "b"], np.array([0, 2, 3], np.int64), docs, np.ones(3, np.int32), np.ones(3, np.int32))
    first = postings.blocks()
    assert postings.blocks() is first and first.num_blocks == 2
