"""BM25F (Robertson and Zaragoza 2009): an index built with fields, scored with field weights and
per-field b, against a straightforward reference written from the formula; both backends, every search
path, growth and disk; an index without fields behaves as before."""
from __future__ import annotations

import json
import math
import random

import pytest

from bm25lab.engine import Index, Tokenizer, segments, storage
from bm25lab.engine.errors import IndexFormatError, ParameterError

WORDS = ["apple", "pear", "plum", "fig", "kiwi", "lime", "date"]
TOKENIZER = Tokenizer("whitespace", stopwords=None)
FIELDS = ("title", "text")


def corpus(seed: int = 0, n: int = 40) -> list[dict]:
    rng = random.Random(seed)
    words = lambda k: " ".join(rng.choice(WORDS[: rng.randint(2, 7)]) for _ in range(k))  # noqa: E731
    return [{"id": f"d{i:02d}", "title": words(rng.randint(0, 4)), "text": words(rng.randint(0, 12))} for i in range(n)]


QUERIES = {"q1": "apple pear", "q2": "fig fig kiwi", "q3": "date", "q4": "lime plum apple", "q5": "nothing"}


def reference(docs: list[dict], query: str, weights: dict[str, float], bs: dict[str, float], k1: float,
              k3: float | None = None) -> dict[str, float]:
    """sum over the query's distinct terms t of w(qf) * idf(t) * tf~ / (k1 + tf~), with
    tf~ = sum_f w_f tf_f / (1 - b_f + b_f len_f / avglen_f) and idf = ln(1 + (N - df + 0.5) / (df + 0.5)),
    df counting documents that have t in any field."""
    n = len(docs)
    tokens = {d["id"]: {f: d[f].split() for f in FIELDS} for d in docs}
    average = {f: sum(len(t[f]) for t in tokens.values()) / n for f in FIELDS}
    terms = query.split()
    scores = {}
    for doc_id, fields in tokens.items():
        present = [t for t in dict.fromkeys(terms) if any(t in fields[f] for f in FIELDS)]
        if not present:
            continue
        total = 0.0
        for term in present:
            df = sum(1 for other in tokens.values() if any(term in other[f] for f in FIELDS))
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            tilde = sum(weights[f] * fields[f].count(term) / (1 - bs[f] + bs[f] * len(fields[f]) / average[f])
                        for f in FIELDS if term in fields[f])  # a field without the term adds nothing
            qf = terms.count(term)
            total += (qf if k3 is None else qf * (k3 + 1) / (qf + k3)) * idf * tilde / (k1 + tilde)
        scores[doc_id] = total
    return scores


@pytest.fixture(scope="module", params=["numpy", "core"])
def index(request) -> Index:
    return Index.build(corpus(), tokenizer=TOKENIZER, fields=FIELDS, backend=request.param)


@pytest.mark.parametrize(("weights", "bs"), [
    ({"title": 3.0, "text": 1.0}, {"title": 0.4, "text": 0.4}),
    ({"title": 2.5, "text": 0.5}, {"title": 0.9, "text": 0.2}),
    ({"title": 0.0, "text": 1.0}, {"title": 0.4, "text": 1.0}),
])
@pytest.mark.parametrize("k3", [None, 2.0])
def test_bm25f_equals_the_reference_on_every_path(index, weights, bs, k3):
    docs = corpus()
    options = dict(k1=1.2, field_weights=weights, field_b=bs, k3=k3)
    batch = index.search_many(QUERIES, k=100, **options)
    prepared = index.batch(QUERIES).search(k=100, **options)
    for qid, query in QUERIES.items():
        single = index.search(query, k=100, **options)
        assert {h.doc_id: h.score for h in single} == pytest.approx(reference(docs, query, weights, bs, 1.2, k3),
                                                                    rel=1e-12, abs=1e-15)
        assert [(h.doc_id, h.score) for h in batch[qid]] == [(h.doc_id, h.score) for h in single]
        assert [(h.doc_id, h.score) for h in prepared[qid]] == [(h.doc_id, h.score) for h in single]


def test_the_two_backends_give_identical_floats():
    numpy_index = Index.build(corpus(3), tokenizer=TOKENIZER, fields=FIELDS, backend="numpy")
    core_index = Index.build(corpus(3), tokenizer=TOKENIZER, fields=FIELDS, backend="core")
    a = numpy_index.search_many(QUERIES, k=50, field_weights="title=3,text=1", field_b="title=0.75")
    b = core_index.search_many(QUERIES, k=50, field_weights="title=3,text=1", field_b="title=0.75")
    for qid in QUERIES:
        assert [(h.doc_id, h.score) for h in a[qid]] == [(h.doc_id, h.score) for h in b[qid]]


def test_without_field_weights_a_fielded_index_scores_as_an_index_without_fields():
    plain = Index.build(corpus(), tokenizer=TOKENIZER)
    fielded = Index.build(corpus(), tokenizer=TOKENIZER, fields=FIELDS)
    assert plain.fields == () and fielded.fields == FIELDS
    for variant in ("lucene", "okapi", "bm25+"):
        for query in QUERIES.values():
            assert [(h.doc_id, h.score) for h in fielded.search(query, k=100, variant=variant)] == \
                [(h.doc_id, h.score) for h in plain.search(query, k=100, variant=variant)]
    with pytest.raises(ParameterError, match="built without fields"):
        plain.search("apple", field_weights="title=2")


def test_a_field_not_named_weighs_one_and_errors_name_the_fields(index):
    assert [(h.doc_id, h.score) for h in index.search("apple", field_weights="title=3")] == \
        [(h.doc_id, h.score) for h in index.search("apple", field_weights={"title": 3, "text": 1})]
    with pytest.raises(ParameterError, match="unknown field 'body'; this index's fields: title, text"):
        index.search("apple", field_weights="body=2")
    with pytest.raises(ParameterError, match="use the variant lucene"):
        index.search("apple", field_weights="title=2", variant="okapi")
    with pytest.raises(ParameterError, match="field=number pairs"):
        index.search("apple", field_weights="title=heavy")
    with pytest.raises(ParameterError, match="b of field 'text' must be between 0 and 1"):
        index.search("apple", field_weights="title=2", field_b="text=1.5")


def test_fields_survive_disk_growth_and_merging(tmp_path):
    docs = corpus(5, 30)
    weights = dict(field_weights="title=3,text=1", field_b="title=0.6,text=0.3")
    Index.build(docs[:20], tokenizer=TOKENIZER, fields=FIELDS).save(tmp_path / "idx")
    grown = Index.load(tmp_path / "idx")
    grown.add(docs[20:])
    grown.delete(["d03", "d21"])
    fresh = Index.build([d for d in docs if d["id"] not in ("d03", "d21")], tokenizer=TOKENIZER, fields=FIELDS)
    for query in QUERIES.values():
        expected = [(h.doc_id, h.score) for h in fresh.search(query, k=100, **weights)]
        assert [(h.doc_id, h.score) for h in grown.search(query, k=100, **weights)] == expected
    grown.optimize()
    again = Index.load(tmp_path / "idx", backend="core")
    assert again.fields == FIELDS and again.num_segments == 1
    for query in QUERIES.values():
        assert [(h.doc_id, h.score) for h in again.search(query, k=100, **weights)] == \
            [(h.doc_id, h.score) for h in fresh.search(query, k=100, **weights)]


def test_a_metadata_key_can_be_a_field():
    docs = [{"id": "a", "text": "apple", "tags": "fruit red"}, {"id": "b", "text": "fruit", "tags": "apple"}]
    index = Index.build(docs, tokenizer=TOKENIZER, fields=("text", "tags"))
    tags_only = {h.doc_id: h.score for h in index.search("apple", field_weights="text=0,tags=1")}
    assert tags_only["a"] == 0.0 and tags_only["b"] > 0.0


# ---------------------------------------------------------------- on disk: format version 2 (issue 19's rules)
def manifest_of(path):
    return json.loads((path / storage.MANIFEST).read_text(encoding="utf-8"))


def put_manifest(path, manifest, reseal: bool = True) -> None:
    body = {k: v for k, v in manifest.items() if k != "checksum"}
    (path / storage.MANIFEST).write_text(json.dumps(dict(body, checksum=storage.manifest_checksum(body)) if reseal
                                                    else manifest), encoding="utf-8")


def test_a_fielded_index_is_format_3_with_its_fields_under_the_checksum(tmp_path):
    built = Index.build(corpus(), tokenizer=TOKENIZER, fields=FIELDS)
    built.save(tmp_path / "idx")
    manifest = manifest_of(tmp_path / "idx")
    assert manifest["format_version"] == storage.FORMAT_VERSION == 3 and manifest["fields"] == list(FIELDS)
    assert manifest["checksum"] == storage.manifest_checksum(manifest)
    (entry,) = manifest["segments"]
    assert entry["fields"] == list(FIELDS)
    assert set(entry["files"]) == storage.SEGMENT_FILES | storage.FIELD_FILES
    weights = dict(field_weights="title=2,text=1", field_b="title=0.3")
    expected = [(h.doc_id, h.score) for q in QUERIES.values() for h in built.search(q, k=100, **weights)]
    for options in (dict(verify=True), dict(verify=False), dict(mmap=False)):  # the pinned files, read or mapped
        loaded = Index.load(tmp_path / "idx", **options)
        assert loaded.fields == FIELDS and loaded.info().fields == FIELDS
        assert [(h.doc_id, h.score) for q in QUERIES.values() for h in loaded.search(q, k=100, **weights)] == expected
    Index.build(corpus(), tokenizer=TOKENIZER).save(tmp_path / "plain")  # without fields: as before
    plain = manifest_of(tmp_path / "plain")
    assert "fields" not in plain and "fields" not in plain["segments"][0]
    assert set(plain["segments"][0]["files"]) == storage.SEGMENT_FILES


@pytest.mark.parametrize("edit, reseal, message", [
    (lambda m: m.update(fields=["text", "title"]), False, "manifest checksum mismatch"),
    (lambda m: m.update(fields=["text", "title"]), True, "segment seg-[0-9a-f]+'s fields"),
    (lambda m: m.pop("fields"), True, "segment seg-[0-9a-f]+'s fields"),
    (lambda m: m.update(fields=["title", "title"]), True, "a malformed list of fields"),
    (lambda m: [m.pop("fields"), m["segments"][0].pop("fields")], True, "lists other files than"),
    (lambda m: m["segments"][0]["files"].pop("field_tfs.npy"), True, "lists other files than"),
])
def test_an_edited_list_of_fields_is_refused(tmp_path, edit, reseal, message):
    Index.build(corpus(), tokenizer=TOKENIZER, fields=FIELDS).save(tmp_path / "idx")
    manifest = manifest_of(tmp_path / "idx")
    edit(manifest)
    put_manifest(tmp_path / "idx", manifest, reseal)
    for verify in (True, False):
        with pytest.raises(IndexFormatError, match=message):
            Index.load(tmp_path / "idx", verify=verify)


def field_array_replaced(path, name: str, array) -> None:
    """The field array ``name`` of the index's segment replaced by ``array``, its record and the
    manifest's checksum made to agree (what only the reader's checks of the array itself can catch)."""
    import numpy as np

    manifest = manifest_of(path)
    (entry,) = manifest["segments"]
    file = path / entry["name"] / name
    np.save(file, array, allow_pickle=False)
    entry["files"][name] = {"bytes": file.stat().st_size, "sha256": storage.sha256_file(file)}
    put_manifest(path, manifest)


def test_damaged_or_reshaped_field_arrays_are_refused(tmp_path):
    import numpy as np

    path = tmp_path / "idx"
    Index.build(corpus(), tokenizer=TOKENIZER, fields=FIELDS).save(path)
    (entry,) = manifest_of(path)["segments"]
    tfs_file = path / entry["name"] / "field_tfs.npy"
    good = tfs_file.read_bytes()
    damaged = bytearray(good)
    damaged[-1] ^= 1
    tfs_file.write_bytes(bytes(damaged))
    with pytest.raises(IndexFormatError, match="field_tfs.npy: checksum mismatch"):
        Index.load(path)
    tfs_file.write_bytes(good[:-4])
    with pytest.raises(IndexFormatError, match="field_tfs.npy: size differs from the manifest"):
        Index.load(path, verify=False)
    tfs_file.write_bytes(good)
    lengths = np.load(path / entry["name"] / "field_lengths.npy")
    cases = [(lengths.reshape(-1), "unexpected shape or type"),  # 1-D
             (np.asfortranarray(lengths), "unexpected shape or type"),  # the bytes of another order
             (lengths.astype(np.int64), "unexpected shape or type"),
             (np.ascontiguousarray(lengths.T), "field arrays disagree with the postings")]
    for array, message in cases:
        field_array_replaced(path, "field_lengths.npy", array)
        for options in (dict(verify=True), dict(verify=False), dict(mmap=False)):
            with pytest.raises(IndexFormatError, match=message):
                Index.load(path, **options)


def test_an_add_to_an_index_replaced_meanwhile_by_one_without_fields_is_refused(tmp_path):
    """The new documents are analysed with the index's fields before the writer's lock is taken; if the
    index was replaced meanwhile by one with other fields, the commit is refused (it would mix segments
    with and without fields: an index nobody could load), and the index stays as the other writer left it."""
    path = tmp_path / "idx"
    Index.build(corpus(0, 10), tokenizer=TOKENIZER, fields=FIELDS).save(path)
    other = Index.build(corpus(1, 12), tokenizer=TOKENIZER)

    def docs():
        yield from corpus(2, 5)
        other.save(path, overwrite=True)  # another writer, while these documents are being analysed

    with pytest.raises(IndexFormatError, match="other fields"):
        segments.add_documents(path, docs(), workers=1)
    after = Index.load(path)
    assert after.fields == () and after.num_docs == 12
