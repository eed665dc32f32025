"""A cluster build where the workers read (issue 31, item 3): `distributed.build` of a glob pattern, a folder
or a Parquet dataset sends the workers names and byte ranges, never documents; the index is the one the
sharded build in one process writes of the same files read one after another (the same shards.json but for
the folders' random names, hence the same files' checksums: the same segments' arrays and stores); add,
delete and optimize run as tasks and give the index the same changes give here; a bad line stops the build
with one error naming the file and the line, and leaves the old index or nothing.

A cluster of two worker threads (``processes=False``) on 127.0.0.1: the workers run in this process, so a
test can tell the client's thread from theirs. Small corpora (a few hundred documents in several files)."""
from __future__ import annotations

import builtins
import gzip
import hashlib
import json
import logging
import pickle
import random
import re
import shutil
import threading
from pathlib import Path

import distributed  # the test extra installs it, as bm25lab[distributed] does
import numpy as np
import pytest

from bm25lab import distributed as bd
from bm25lab.engine import BM25LabError, Index, InputError, Tokenizer, shards
from bm25lab.engine.sources.pieces import plan, read_piece, read_source

WORDS = ["wind", "wave", "heat", "flow", "shock", "plate", "wing", "jet", "layer", "boundary", "laminar", "é"]
TOKENIZER = Tokenizer("en")


def normal(path: Path) -> dict:
    """``shards.json`` with the random names of its folders and files replaced by their order of
    appearance and the checksums over itself dropped: what two builds of the same documents share."""
    text = (path / "shards.json").read_text(encoding="utf-8")
    names: dict[str, str] = {}
    for name in re.findall(r"(?:shard|stats|seg|del)-[0-9a-f]{16}", text):
        names.setdefault(name, f"name-{len(names)}")
    text = re.sub(r"(?:shard|stats|seg|del)-[0-9a-f]{16}", lambda m: names[m.group(0)], text)
    manifest = json.loads(text)
    manifest.pop("checksum")
    for entry in manifest["shards"]:
        entry["manifest"].pop("checksum")
    return manifest


def snapshot(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file() and p.name != ".writer.lock"}


def text(rng: random.Random) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(0, 25)))


def write_corpus(root: Path, per_file: int = 60, seed: int = 31) -> Path:
    """Four JSONL files (one gzipped, blank lines among the records), a TSV with a header, a folder of
    30 .txt files and a Parquet dataset of two files; ``per_file`` records a file (the .txt files' texts
    grow with it)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    for i in range(4):
        lines = []
        for j in range(per_file):
            if j % 13 == 5:
                lines.append("\n")
            record = {"id": f"j{i}-{j}", "text": text(rng), "title": rng.choice(WORDS), "year": 1950 + j % 40}
            lines.append(json.dumps(record, ensure_ascii=False) + "\n")
        data = "".join(lines).encode("utf-8")
        if i == 1:
            (root / f"docs-{i}.jsonl.gz").write_bytes(gzip.compress(data))
        else:
            (root / f"docs-{i}.jsonl").write_bytes(data)
    (root / "docs.tsv").write_text("id\ttitle\ttext\n" + "".join(f"t{j}\t{rng.choice(WORDS)}\t{text(rng)}\n"
                                                                for j in range(per_file * 2)), encoding="utf-8")
    for j in range(30):
        folder = root / "txt" / f"part{j % 3}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"doc{j:03d}.txt").write_text(" ".join(text(rng) for _ in range(per_file // 30)), encoding="utf-8")
    (root / "parquet").mkdir(exist_ok=True)
    for i in range(2):
        rows = [{"id": f"p{i}-{j}", "text": text(rng), "lang": rng.choice(["en", "fr"])} for j in range(per_file)]
        pq.write_table(pa.Table.from_pylist(rows), root / "parquet" / f"part-{i}.parquet", row_group_size=16)
    return root


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("cluster-reading") / "corpus")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1",
                                       dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


SOURCES = [("docs-*.jsonl*", 700, 3), ("docs.tsv", 400, 2), ("txt", 200, 2), ("parquet", 1, 3)]


@pytest.mark.parametrize("name, partition_bytes, count", SOURCES)
def test_the_workers_read_and_the_index_is_the_one_built_here(client, corpus: Path, tmp_path: Path, name: str,
                                                              partition_bytes: int, count: int) -> None:
    source = str(corpus / name)
    assert len(plan(source, None, partition_bytes)) >= 2  # several pieces: byte ranges, runs of files, files
    there = bd.build(source, tmp_path / "there", shards=count, client=client, tokenizer=TOKENIZER,
                     partition_bytes=partition_bytes)
    here = shards.build(read_source(source), tmp_path / "here", count, TOKENIZER, workers=1)
    assert normal(there) == normal(here)
    assert shards.read_manifest(there)["statistics"]["documents"] >= 30


def test_the_search_equals_one_index_of_the_files(client, corpus: Path, tmp_path: Path) -> None:
    source = str(corpus / "docs-*.jsonl*")
    path = bd.build(source, tmp_path / "idx", shards=3, client=client, tokenizer=TOKENIZER, partition_bytes=500)
    one = Index.build(list(read_source(source)), tokenizer=TOKENIZER, workers=1)
    queries = {"1": "wind wave", "2": "boundary layer laminar", "3": "é jet", "4": "plate"}
    got = bd.DistributedIndex(path, client).search_many(queries, k=50)
    expected = one.search_many(queries, k=50, workers=1)
    for qid in queries:
        assert got[qid].doc_ids == expected[qid].doc_ids
        assert np.asarray(got[qid].scores).tobytes() == np.asarray(expected[qid].scores).tobytes()


def test_the_client_never_opens_a_document_file(client, corpus: Path, tmp_path: Path, monkeypatch) -> None:
    # the workers are threads of this process: every open of a file of the corpus is recorded with its thread
    opened: list[tuple[str, str]] = []
    real_open = builtins.open

    def recording_open(file, *args, **kwargs):
        if isinstance(file, (str, Path)) and str(corpus) in str(file):
            opened.append((threading.current_thread().name, str(file)))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", recording_open)
    for name in ("docs-*.jsonl*", "docs.tsv", "txt"):
        bd.build(str(corpus / name), tmp_path / name.strip("*.-"), shards=2, client=client, tokenizer=TOKENIZER,
                 partition_bytes=300)
    here = threading.current_thread().name
    assert opened and {thread for thread, _ in opened} != {here}
    assert [file for thread, file in opened if thread == here] == []


def test_what_the_client_sends_does_not_grow_with_the_documents(tmp_path: Path) -> None:
    # the same files, ten times the documents in each: the pieces sent (names, formats, ranges) weigh the same
    small, large = write_corpus(tmp_path / "a", per_file=30), write_corpus(tmp_path / "b", per_file=300)
    for name in ("docs-*.jsonl*", "txt", "parquet"):
        sent = [len(pickle.dumps(plan(str(root / name), None, 1 << 30))) for root in (small, large)]
        assert sent[0] == sent[1], (name, sent)
    assert sum(p.stat().st_size for p in large.rglob("*") if p.is_file()) > \
        5 * sum(p.stat().st_size for p in small.rglob("*") if p.is_file())


def test_pieces_read_what_the_source_reads(corpus: Path) -> None:
    # every cut of the files gives the documents of one reader, in its order (ranges of every size)
    for name, fields in (("docs-*.jsonl*", {}), ("docs.tsv", {}), ("docs.tsv", {"id_field": "id",
                                                                                 "text_fields": "title,text"})):
        whole = list(read_source(str(corpus / name), **fields))
        for partition_bytes in (1, 37, 250, 4096):
            pieces = plan(str(corpus / name), None, partition_bytes)
            assert [doc for piece in pieces for doc in read_piece(piece, **fields)] == whole, (name, partition_bytes)


def test_a_bad_line_a_worker_reads_is_one_error_naming_the_file_and_line(client, corpus: Path,
                                                                           tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(corpus, bad)
    lines = (bad / "docs-2.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    lines[47] = '{"id": "x", "text": 5}\n'
    (bad / "docs-2.jsonl").write_text("".join(lines), encoding="utf-8")
    with pytest.raises(InputError) as here:
        shards.build(read_source(str(bad / "docs-*.jsonl*")), tmp_path / "here", 2, TOKENIZER, workers=1)
    expected = f"{bad / 'docs-2.jsonl'}:48: field 'text' must be a string, found a number"
    assert str(here.value) == expected
    old = shards.build(read_source(str(corpus / "docs-0.jsonl")), tmp_path / "old", 2, TOKENIZER, workers=1)
    before = snapshot(old)
    for target, overwrite in ((tmp_path / "new", False), (old, True)):
        with pytest.raises(BM25LabError) as there:
            bd.build(str(bad / "docs-*.jsonl*"), target, shards=2, client=client, tokenizer=TOKENIZER,
                     partition_bytes=300, overwrite=overwrite)
        assert str(there.value) == expected and len(str(there.value).splitlines()) == 1
    assert not (tmp_path / "new").exists()
    assert snapshot(old) == before
    with pytest.raises(InputError, match="no file matches the pattern"):
        bd.build(str(tmp_path / "nothing-*.jsonl"), tmp_path / "none", shards=2, client=client)
    assert not (tmp_path / "none").exists()


def test_add_delete_and_optimize_on_the_cluster_change_the_index_as_here(client, corpus: Path,
                                                                         tmp_path: Path) -> None:
    here = shards.build(read_source(str(corpus / "docs-*.jsonl*")), tmp_path / "here", 3, TOKENIZER, workers=1)
    there = tmp_path / "there"
    shutil.copytree(here, there)
    new = tmp_path / "new"
    new.mkdir()
    rng = random.Random(7)
    for i in range(2):  # some ids new, some already in the index (replaced)
        (new / f"add-{i}.jsonl").write_text("".join(
            json.dumps({"id": f"j{i}-{j * 3}" if j % 4 == 0 else f"new{i}-{j}", "text": text(rng)}) + "\n"
            for j in range(40)), encoding="utf-8")
    expected = shards.add_documents(here, read_source(str(new / "add-*.jsonl")), workers=1)
    assert bd.add_documents(there, str(new / "add-*.jsonl"), client=client, partition_bytes=500) == expected
    assert expected.replaced > 0
    assert normal(there) == normal(here)
    ids = ["new0-1", "j2-7", "j3-0", "new1-3"]
    assert bd.delete_documents(there, ids, client=client) == shards.delete_documents(here, ids)
    assert normal(there) == normal(here)
    before = snapshot(there)
    with pytest.raises(InputError, match="no such documents in the index: 'nope', 'j2-7'; nothing was deleted"):
        bd.delete_documents(there, ["j2-8", "nope", "j2-7"], client=client)
    assert snapshot(there) == before
    assert bd.optimize(there, client=client) == shards.optimize(here)
    assert normal(there) == normal(here)
    # documents sent from here (not files) are added the same way
    docs = [{"id": f"late{j}", "text": text(rng)} for j in range(30)]
    assert bd.add_documents(there, docs, client=client, partition_docs=7) == shards.add_documents(here, docs, workers=1)
    assert normal(there) == normal(here)


def test_the_field_options_on_the_workers(client, corpus: Path, tmp_path: Path) -> None:
    # --id-field, --text-fields and --title-field act on the workers as they act here
    from bm25lab.experiments import titled

    source = str(corpus / "docs.tsv")
    fields = {"id_field": "id", "text_fields": "title,text"}
    there = bd.build(source, tmp_path / "fields", shards=2, client=client, tokenizer=TOKENIZER, partition_bytes=300,
                     **fields)
    here = shards.build(read_source(source, **fields), tmp_path / "fields-here", 2, TOKENIZER, workers=1)
    assert normal(there) == normal(here)
    source = str(corpus / "docs-*.jsonl*")
    there = bd.build(source, tmp_path / "titled", shards=2, client=client, tokenizer=TOKENIZER, partition_bytes=300,
                     title_field="year")
    here = shards.build(iter(titled(read_source(source), "year")), tmp_path / "titled-here", 2, TOKENIZER, workers=1)
    assert normal(there) == normal(here)
    assert shards.ShardedIndex.load(there).document("j0-3").title == "1953"
