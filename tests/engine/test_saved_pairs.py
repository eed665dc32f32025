"""The postings' distinct (tf, length) pairs saved with their segment (pairs.npy; format version 2 also
kept every posting's code, pair_codes.npy): a loaded index reads them instead of computing them, and
scores exactly as the pairs computed from its postings do; a version 2 index saved without them (by
0.2.0) loads and scores as before; pair files that disagree with the postings are refused."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from recording import as_version_2, without_saved_pairs, zipf_documents

from bm25lab.engine import Index, IndexFormatError, Tokenizer, retrieval, storage
from bm25lab.engine.scoring import Params

WS = Tokenizer("whitespace", stopwords=None)


def _docs(n_docs: int = 2_000, vocab: int = 3_000, seed: int = 5) -> tuple[list[tuple[str, str]], dict[str, str]]:
    docs, _, _, rng = zipf_documents(n_docs, vocab, seed, longest=60)
    queries = {f"q{i}": " ".join(f"w{t}" for t in rng.choice(vocab // 10, size=int(m)))
               for i, m in enumerate(rng.integers(1, 6, 60))}
    return docs, queries


def _runs(index: Index, queries: dict[str, str], k: int, variant: str) -> dict[str, list[tuple[str, str]]]:
    found = index.search_many(queries, k=k, variant=variant, workers=2)
    return {q: [(hit.doc_id, float(hit.score).hex()) for hit in hits] for q, hits in found.items()}


def _rewrite_manifest(path: Path, edit) -> None:
    manifest = json.loads((path / storage.MANIFEST).read_text())
    edit(manifest)
    manifest["checksum"] = storage.manifest_checksum(manifest)
    (path / storage.MANIFEST).write_text(json.dumps(manifest))


def _record(file: Path) -> dict:
    return {"bytes": file.stat().st_size, "sha256": storage.sha256_file(file)}


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("backend", ["numpy", "core"])
def test_a_loaded_index_reads_its_pairs_and_scores_as_computed_ones(tmp_path: Path, monkeypatch, backend: str,
                                                                      version: int) -> None:
    docs, queries = _docs()
    built = Index.build(docs, tokenizer=WS, backend=backend)
    built.save(tmp_path / "i")
    if version == 2:
        as_version_2(tmp_path / "i")
    (folder,) = (tmp_path / "i").glob("seg-*")
    assert "pairs.npy" in {p.name for p in folder.iterdir()}
    assert ("pair_codes.npy" in {p.name for p in folder.iterdir()}) == (version == 2)
    loaded = Index.load(tmp_path / "i", backend=backend)
    saved = loaded._scorer._pairs
    assert saved is not None
    computed = retrieval.posting_pairs(loaded._segment.postings, retrieval.NumpyPairCoder())
    assert saved.tfs.tolist() == computed.tfs.tolist() and saved.lengths.tolist() == computed.lengths.tolist()

    variants, ks = ("lucene", "bm25l", "bm25+"), (1, 10, 1000)
    tables = {v: built._scorer.prepare(Params(v, 0.9, 0.4).resolved()).table.tobytes() for v in variants}
    runs = {(v, k): _runs(built, queries, k, v) for v in variants for k in ks}

    def not_again(*args, **kwargs):
        raise AssertionError("the pairs were computed again")

    monkeypatch.setattr(retrieval, "posting_pairs", not_again)
    for variant in variants:
        assert loaded._scorer.prepare(Params(variant, 0.9, 0.4).resolved()).table.tobytes() == tables[variant]
        for k in ks:
            assert _runs(loaded, queries, k, variant) == runs[variant, k]


def test_pairs_known_already_are_written_not_computed_again(tmp_path: Path, monkeypatch) -> None:
    # a built index whose batch computed its pairs, and a loaded index that read them, save them as they are
    docs, queries = _docs(n_docs=500)
    built = Index.build(docs, tokenizer=WS)
    expected = _runs(built, queries, 10, "lucene")  # computes the pairs
    assert built._scorer.pairs is not None

    def not_again(*args, **kwargs):
        raise AssertionError("the pairs were computed again")

    monkeypatch.setattr(retrieval, "posting_pairs", not_again)
    built.save(tmp_path / "built")
    Index.load(tmp_path / "built").save(tmp_path / "again")
    for name in ("built", "again"):
        loaded = Index.load(tmp_path / name)
        assert np.array_equal(loaded._scorer.pairs.tfs, built._scorer.pairs.tfs)
        assert np.array_equal(loaded._scorer.pairs.lengths, built._scorer.pairs.lengths)
        assert _runs(loaded, queries, 10, "lucene") == expected


def test_an_index_saved_without_pairs_scores_the_same(tmp_path: Path) -> None:
    # as bm25lab 0.2.0 wrote it: no pair files; the first batch computes them
    docs, queries = _docs(n_docs=600)
    built = Index.build(docs, tokenizer=WS)
    built.save(tmp_path / "i")
    without_saved_pairs(tmp_path / "i")
    loaded = Index.load(tmp_path / "i")
    assert loaded._scorer._pairs is None
    assert _runs(loaded, queries, 10, "lucene") == _runs(built, queries, 10, "lucene")
    assert loaded._scorer._pairs is not None  # computed by that batch


@pytest.mark.parametrize("damage", ["short codes", "one pair row", "wide codes", "zero tf", "only codes"])
def test_version_2_pairs_that_disagree_with_the_postings_are_refused(tmp_path: Path, damage: str) -> None:
    docs, _ = _docs(n_docs=300)
    Index.build(docs, tokenizer=WS).save(tmp_path / "i")
    as_version_2(tmp_path / "i")
    (folder,) = (tmp_path / "i").glob("seg-*")
    codes, pairs = np.load(folder / "pair_codes.npy"), np.load(folder / "pairs.npy")
    if damage == "short codes":
        np.save(folder / "pair_codes.npy", codes[:-1])
    elif damage == "one pair row":
        np.save(folder / "pairs.npy", pairs[:1])
    elif damage == "wide codes":
        np.save(folder / "pair_codes.npy", codes.astype(np.uint32))
    elif damage == "zero tf":
        pairs[0, 0] = 0
        np.save(folder / "pairs.npy", pairs)
    else:
        (folder / "pairs.npy").unlink()

    def rerecord(manifest: dict) -> None:
        files = manifest["segments"][0]["files"]
        if damage == "only codes":
            del files["pairs.npy"]
        for name in files:
            files[name] = _record(folder / name)

    _rewrite_manifest(tmp_path / "i", rerecord)
    message = "lists other files" if damage == "only codes" else "pair arrays disagree|unexpected shape or type"
    with pytest.raises(IndexFormatError, match=message):
        Index.load(tmp_path / "i")


@pytest.mark.parametrize("damage", ["one pair row", "zero tf", "no pairs", "no postings blocks"])
def test_pairs_and_blocks_that_disagree_are_refused(tmp_path: Path, damage: str) -> None:
    docs, _ = _docs(n_docs=300)
    Index.build(docs, tokenizer=WS).save(tmp_path / "i")
    (folder,) = (tmp_path / "i").glob("seg-*")
    pairs = np.load(folder / "pairs.npy")
    if damage == "one pair row":
        np.save(folder / "pairs.npy", pairs[:1])
    elif damage == "zero tf":
        pairs[0, 0] = 0
        np.save(folder / "pairs.npy", pairs)
    elif damage == "no pairs":
        np.save(folder / "pairs.npy", pairs[:, :0])
    else:
        np.save(folder / "last_docs.npy", np.load(folder / "last_docs.npy")[:-1])

    def rerecord(manifest: dict) -> None:
        for name in manifest["segments"][0]["files"]:
            manifest["segments"][0]["files"][name] = _record(folder / name)

    _rewrite_manifest(tmp_path / "i", rerecord)
    with pytest.raises(IndexFormatError, match="disagree|unexpected shape or type"):
        Index.load(tmp_path / "i")
