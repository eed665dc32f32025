"""The adversarial audit's cases (issue 19), each through the installed command line: the entry point
next to this interpreter, run as a process, as a user runs it. Elsewhere: readers during writes
(tests/engine/test_concurrency.py), kill -9 at every step (tests/engine/test_crash.py), full disks
and file size limits (tests/engine/test_disk_full.py), huge and blank files
(tests/evaluation/test_readers.py), `run --out` naming the path given (tests/cli/test_cli.py)."""
from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bm25lab.engine import Index, Tokenizer, storage
from bm25lab.engine.scoring import Params
from bm25lab.evaluation import read_run

BM25LAB = str(Path(sys.executable).parent / "bm25lab")


def bm25lab(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([BM25LAB, *map(str, args)], capture_output=True, text=True, timeout=300, cwd=cwd,
                          env=dict(os.environ, COLUMNS="200"))


def ok(*args: str | Path) -> str:
    """The output of a command that must succeed (stderr may hold progress, never a warning)."""
    done = bm25lab(*args)
    assert done.returncode == 0 and "Warning" not in done.stderr and "Traceback" not in done.stderr, (args, done.stderr)
    return done.stdout


def error_line(*args: str | Path, code: int = 1) -> str:
    """The one stderr line of a command that must fail with ``code``."""
    done = bm25lab(*args)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == code and len(lines) == 1 and lines[0].startswith("bm25lab: error: "), (args, done)
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    return lines[0]


def jsonl(path: Path, docs: list[tuple[str, str]]) -> Path:
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in docs), encoding="utf-8")
    return path


def tree(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with the SHA-256 of its content."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------------- 1. a delete that killed the index
def test_deleting_all_but_stopword_documents_keeps_the_index_usable(tmp_path: Path) -> None:
    source = jsonl(tmp_path / "d.jsonl", [("a", "hello world"), ("b", "the")])
    ok("index", source, "--out", tmp_path / "ix")
    assert "deleted 1 document" in ok("delete", tmp_path / "ix", "a")
    assert json.loads(ok("search", tmp_path / "ix", "hello", "--format", "json")) == []
    info = json.loads(ok("info", tmp_path / "ix", "--format", "json"))
    assert (info["documents"], info["terms"], info["postings"]) == (1, 0, 0)
    assert "merged 1 segment" in ok("optimize", tmp_path / "ix")
    ok("add", tmp_path / "ix", jsonl(tmp_path / "r.jsonl", [("b", "of the"), ("c", "hello")]))  # a replacement too
    assert [r["doc_id"] for r in json.loads(ok("search", tmp_path / "ix", "hello", "--format", "json"))] == ["c"]


# ---------------------------------------------------------------------- 3. k1 = 0
def test_k1_zero_is_computed_in_search_run_and_tune(tmp_path: Path) -> None:
    docs = [(f"d{i}", " ".join(["alpha"] * (i % 4 + 1) + ["beta"] * (i % 3) + [f"w{i}"])) for i in range(12)]
    ok("index", jsonl(tmp_path / "d.jsonl", docs), "--out", tmp_path / "ix", "--language", "whitespace")
    index = Index.load(tmp_path / "ix")
    for variant in ("lucene", "bm25+", "okapi"):
        rows = json.loads(ok("search", tmp_path / "ix", "alpha beta", "--k1", "0", "--variant", variant,
                             "--format", "json", "-k", "20"))
        expected = index.search("alpha beta", k=20, k1=0.0, variant=variant)
        assert [(r["doc_id"], r["score"]) for r in rows] == [(h.doc_id, h.score) for h in expected] != []
        assert all(math.isfinite(r["score"]) for r in rows)
    (tmp_path / "q.tsv").write_text("q1\talpha\nq2\tbeta w3\n")
    ok("run", tmp_path / "ix", tmp_path / "q.tsv", "--out", tmp_path / "run", "--k1", "0")
    lines = [line.split() for line in (tmp_path / "run").read_text().splitlines()]
    expected = index.search_many({"q1": "alpha", "q2": "beta w3"}, k1=0.0)
    assert [(line[0], line[2], float(line[4])) for line in lines] == \
        [(q, h.doc_id, h.score) for q, hits in expected.items() for h in hits]
    assert len(lines) == 21 and all(math.isfinite(float(line[4])) for line in lines)
    (tmp_path / "qrels").write_text("q1 0 d3 1\nq1 0 d7 1\nq2 0 d3 1\nq2 0 d5 1\n")
    # a grid of k1 = 0 alone: every query's held-out value is its value at k1 = 0 (it scored 0 before)
    tuned = json.loads(ok("tune", tmp_path / "ix", tmp_path / "q.tsv", tmp_path / "qrels", "--k1-grid", "0",
                          "--b-grid", "0.4", "--folds", "2", "-m", "AP", "--format", "json"))
    from bm25lab.evaluation import evaluate, read_qrels

    at_zero = evaluate(read_qrels(tmp_path / "qrels"), index.search_many({"q1": "alpha", "q2": "beta w3"}, k1=0.0),
                       ["AP"]).mean["AP"]
    assert at_zero > 0 and tuned["best"] == {"k1": 0.0, "b": 0.4}
    assert tuned["test_mean"] == pytest.approx(at_zero, rel=1e-12)


# ---------------------------------------------------------------------- 4. --out and the user's files
def test_an_index_never_removes_the_users_files(tmp_path: Path) -> None:
    source = jsonl(tmp_path / "d.jsonl", [("a", "alpha beta"), ("b", "beta gamma"), ("c", "gamma")])
    out = tmp_path / "mine"
    out.mkdir()
    for name in ("seg-1", "del-2.npy"):
        (out / name).write_text("my notes")
    (out / "seg-3").mkdir()
    (out / "seg-3" / "data").write_text("my data")
    before = tree(out)
    # a folder holding anything but an index is refused, with or without --overwrite
    for extra in ([], ["--overwrite"]):
        line = error_line("index", source, "--out", out, *extra)
        assert f"{out}: the folder is not empty and holds no bm25lab index" in line
    assert tree(out) == before
    # a foreign index.json is never replaced
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "index.json").write_text('{"name": "my project"}')
    line = error_line("index", source, "--out", foreign, "--overwrite")
    assert f"{foreign / 'index.json'}: not a bm25lab index manifest; refusing to replace it" in line
    assert (foreign / "index.json").read_text() == '{"name": "my project"}'
    # files that the user puts in an index folder, named like its own, outlive every change
    ok("index", source, "--out", tmp_path / "ix")
    for name in ("seg-00ff", "del-00ff.npy", ".tmp-seg-1", "notes.txt"):
        (tmp_path / "ix" / name).write_text("mine")
    ok("add", tmp_path / "ix", jsonl(tmp_path / "more.jsonl", [("d", "delta"), ("a", "alpha again")]))
    ok("delete", tmp_path / "ix", "b")
    ok("optimize", tmp_path / "ix")
    ok("index", source, "--out", tmp_path / "ix", "--overwrite")
    for name in ("seg-00ff", "del-00ff.npy", ".tmp-seg-1", "notes.txt"):
        assert (tmp_path / "ix" / name).read_text() == "mine"
    # an empty folder, or a new one, is fine
    (tmp_path / "empty").mkdir()
    ok("index", source, "--out", tmp_path / "empty")


# ---------------------------------------------------------------------- 5. damaged data is never given fresh checksums
def _flip_tfs(directory: Path) -> Path:
    (target,) = directory.glob("seg-*/blocks.npy")
    data = bytearray(target.read_bytes())
    data[-1] ^= 0x01
    target.write_bytes(bytes(data))
    return target


def test_damage_is_not_rewritten_by_a_change_through_the_api(tmp_path: Path) -> None:
    docs = [(f"d{i}", f"alpha w{i} w{i % 3}") for i in range(8)]
    ok("index", jsonl(tmp_path / "d.jsonl", docs), "--out", tmp_path / "ix")
    damaged = _flip_tfs(tmp_path / "ix")
    index = Index.load(tmp_path / "ix", verify=False)  # loaded without checksums: the changes verify what they read
    before = tree(tmp_path / "ix")
    with pytest.raises(storage.IndexFormatError, match=f"{damaged}: checksum mismatch"):
        index.delete(["d1"])  # would write new counts, derived from the damaged postings (issue 28)
    with pytest.raises(storage.IndexFormatError, match=f"{damaged}: checksum mismatch"):
        index.optimize()  # would rewrite the damaged postings into a new segment with fresh checksums
    with pytest.raises(storage.IndexFormatError, match="checksum mismatch"):
        index.save(tmp_path / "copy")
    assert tree(tmp_path / "ix") == before and not (tmp_path / "copy" / "index.json").exists()
    for command in (["optimize", tmp_path / "ix"], ["search", tmp_path / "ix", "alpha"]):
        assert f"{damaged}: checksum mismatch" in error_line(*command)


def test_an_edited_tokenizer_setting_is_detected(tmp_path: Path) -> None:
    ok("index", jsonl(tmp_path / "d.jsonl", [("a", "running runners"), ("b", "run")]), "--out", tmp_path / "ix",
       "--language", "en")
    manifest = json.loads((tmp_path / "ix" / "index.json").read_text())
    assert manifest["tokenizer"]["stem"] is True
    manifest["tokenizer"]["stem"] = False  # would silently change every search
    (tmp_path / "ix" / "index.json").write_text(json.dumps(manifest, indent=1))
    for command in (["search", tmp_path / "ix", "running"], ["info", tmp_path / "ix"],
                    ["add", tmp_path / "ix", tmp_path / "d.jsonl"], ["delete", tmp_path / "ix", "a"]):
        assert "index.json: manifest checksum mismatch (the manifest was edited or damaged)" in error_line(*command)


# ---------------------------------------------------------------------- 6. stale temporary folders
def test_a_killed_build_leaves_no_temporary_folder_behind(tmp_path: Path) -> None:
    # kill -9 during a build: its scratch folder (in the output folder) is removed by the next command
    import signal
    import time

    docs = [(f"d{i}", " ".join(f"w{(i * j) % 97}" for j in range(40))) for i in range(30000)]
    source = jsonl(tmp_path / "big.jsonl", docs)
    out = tmp_path / "ix"
    builder = subprocess.Popen([BM25LAB, "index", str(source), "--out", str(out), "--workers", "1"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not [p for p in out.glob(".bm25lab-scratch-*/docs.sqlite")] and time.monotonic() < deadline:
        time.sleep(0.01)
    builder.send_signal(signal.SIGKILL)
    builder.wait()
    left = list(out.glob(".bm25lab-scratch-*"))
    assert left and not (out / "index.json").exists()
    ok("index", jsonl(tmp_path / "small.jsonl", [("a", "x")]), "--out", out)  # accepted: only bm25lab's own left
    assert not list(out.glob(".bm25lab-scratch-*")) and sorted(p.name for p in out.iterdir() if p.is_file()) == [
        ".writer.journal", ".writer.lock", "index.json"]


# ---------------------------------------------------------------------- 8. formats that cannot hold the data
def test_cr_only_line_endings_are_refused(tmp_path: Path) -> None:
    for name, content in (("cr.tsv", "a\thello\rb\tworld\r"), ("cr.jsonl", '{"id": "a", "text": "x"}\r{"id": "b"}\r')):
        (tmp_path / name).write_text(content, newline="")
        line = error_line("index", tmp_path / name, "--out", tmp_path / f"{name}.ix")
        assert f"{tmp_path / name}:1: a carriage return (CR) inside the line" in line and "LF" in line
        assert not (tmp_path / f"{name}.ix").exists()
    (tmp_path / "q.tsv").write_text("q1\thello\rq2\tworld\r", newline="")
    ok("index", jsonl(tmp_path / "d.jsonl", [("a", "hello")]), "--out", tmp_path / "ix")
    assert f"{tmp_path / 'q.tsv'}:1: a carriage return" in error_line("run", tmp_path / "ix", tmp_path / "q.tsv",
                                                                       "--out", tmp_path / "r")
    (tmp_path / "crlf.tsv").write_text("a\thello\r\nb\tworld\r\n", newline="")  # CRLF is fine
    ok("index", tmp_path / "crlf.tsv", "--out", tmp_path / "crlf.ix")


def test_an_id_a_trec_line_cannot_hold_is_refused(tmp_path: Path) -> None:
    ok("index", jsonl(tmp_path / "d.jsonl", [("a b", "hello world"), ("c", "hello")]), "--out", tmp_path / "ix")
    assert "document id 'a b' is empty or contains whitespace; a TREC run cannot hold it" in \
        error_line("search", tmp_path / "ix", "world", "--format", "trec")
    (tmp_path / "q.tsv").write_text("q1\thello\n")
    error_line("run", tmp_path / "ix", tmp_path / "q.tsv", "--out", tmp_path / "r")
    assert not (tmp_path / "r").exists()
    # an id that a TREC line holds: the run writer's line, six fields (the query id and tag are issue 17's
    # --qid, default 1, and --tag, default bm25lab)
    score = repr(Index.load(tmp_path / "ix").search("hello", k=1)[0].score)
    assert ok("search", tmp_path / "ix", "hello", "--format", "trec", "-k", "1").split() == \
        ["1", "Q0", "c", "1", score, "bm25lab"]
    assert ok("search", tmp_path / "ix", "hello", "--format", "trec", "-k", "1", "--qid", "q7", "--tag", "t").split() \
        == ["q7", "Q0", "c", "1", score, "t"]
    assert "a TREC run cannot hold it" in error_line("search", tmp_path / "ix", "hello", "--format", "trec", "--qid",
                                                     "q 7")


def test_cr_only_qrels_are_named_as_such(tmp_path: Path) -> None:
    # issue 28: "expected 4 fields, found 8" said nothing of the line ends
    (tmp_path / "qrels").write_text("q1 0 d1 1\rq1 0 d2 0\r", newline="")
    (tmp_path / "run").write_text("q1 Q0 d1 1 2.5 t\n")
    assert f"{tmp_path / 'qrels'}:1: a carriage return (CR) inside the line: lines ending in CR alone" in \
        error_line("evaluate", tmp_path / "qrels", tmp_path / "run")


def test_optimizing_an_empty_index_says_it_is_empty(tmp_path: Path) -> None:
    # issue 28: it said "nothing to merge (one segment, no deletions) -> 0 documents in 0 segments"
    ok("index", jsonl(tmp_path / "d.jsonl", [("a", "hello"), ("b", "world")]), "--out", tmp_path / "ix")
    ok("delete", tmp_path / "ix", "a", "b")  # a segment with nothing live left is dropped
    assert ok("optimize", tmp_path / "ix").strip() == \
        f"nothing to merge (the index holds no documents) -> {tmp_path / 'ix'}: 0 documents in 0 segments"
    ok("index", jsonl(tmp_path / "one.jsonl", [("a", "hello")]), "--out", tmp_path / "one")
    assert ok("optimize", tmp_path / "one").startswith("nothing to merge (one segment, no deletions) -> ")


@pytest.mark.parametrize("option", [["--k1", "1e308"], ["--k1", "1e101"], ["--variant", "bm25l", "--delta", "1e308"],
                                    ["--k3", "1e308"]])
def test_parameters_whose_scores_would_overflow_are_refused(tmp_path: Path, option: list[str]) -> None:
    # issue 28: --k1 1e308 printed numpy's overflow RuntimeWarning; refused in the library (ParameterError,
    # exit code 2), so the API refuses too
    from bm25lab.engine import ParameterError, ShardedIndex

    ok("index", jsonl(tmp_path / "d.jsonl", [("a", "hello world"), ("b", "hello")]), "--out", tmp_path / "ix")
    done = bm25lab("search", tmp_path / "ix", "hello", *option)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "from 0 to 1e+100" in lines[0], done
    assert "Warning" not in done.stderr + done.stdout
    name, value = option[-2].lstrip("-"), float(option[-1])
    kwargs = {name: value, **({"variant": "bm25l"} if name == "delta" else {})}
    with pytest.raises(ParameterError, match="from 0 to 1e"):
        Index.load(tmp_path / "ix").search("hello", **kwargs)
    sharded = ShardedIndex.build([("a", "hello world"), ("b", "hello")], tmp_path / "s", 2, Tokenizer("en"))
    with pytest.raises(ParameterError, match="from 0 to 1e"):
        sharded.search("hello", **kwargs)
    hits = Index.load(tmp_path / "ix").search("hello", k1=1e100)  # the largest is taken, its scores finite
    assert len(hits) == 2 and all(math.isfinite(hit.score) for hit in hits)
    with pytest.raises(ParameterError, match="weight of field 'title'"):
        Params(fields=(("title", 1e308, 0.5),)).resolved()


def test_quotes_and_other_characters_a_trec_line_holds_are_written_as_they_are(tmp_path: Path) -> None:
    # issue 28: a double quote in an id, a --tag or a --qid was an internal error (exit 3, pyarrow's CSV
    # writer refuses it); the TREC format holds any id without whitespace
    ok("index", jsonl(tmp_path / "d.jsonl", [('d"1', "hello world"), ("c,'2'", "hello")]), "--out", tmp_path / "ix")
    lines = ok("search", tmp_path / "ix", "hello", "--format", "trec", "--qid", 'q"7', "--tag", 'my"run').splitlines()
    assert [line.split()[:3] + line.split()[5:] for line in lines] == [['q"7', "Q0", "c,'2'", 'my"run'],
                                                                      ['q"7', "Q0", 'd"1', 'my"run']]
    (tmp_path / "q.tsv").write_text('q"1\thello\nq,2\tworld\n')
    for form, columns in (("trec", 6), ("msmarco", 3)):
        ok("run", tmp_path / "ix", tmp_path / "q.tsv", "--out", tmp_path / f"r.{form}", "--run-format", form, "--tag",
           '"quoted"')
        rows = [line.split() for line in (tmp_path / f"r.{form}").read_text().splitlines()]
        assert {len(row) for row in rows} == {columns} and {row[0] for row in rows} == {'q"1', "q,2"}
        assert read_run(tmp_path / f"r.{form}", format=form).to_dict()['q"1'].keys() == {'d"1', "c,'2'"}
    assert read_run(tmp_path / "r.trec").name == '"quoted"'


def test_a_folder_source_never_follows_a_link_outside_it(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text("alpha")
    (folder / "sub" / "b.txt").write_text("beta")
    (tmp_path / "secret.txt").write_text("do not index me")
    (folder / "inside.txt").symlink_to(folder / "sub" / "b.txt")  # inside the folder: followed
    ok("index", folder, "--out", tmp_path / "ix")
    assert sorted(Index.load(tmp_path / "ix").doc_ids) == ["a.txt", "inside.txt", "sub/b.txt"]
    (folder / "sub" / "leak.txt").symlink_to(tmp_path / "secret.txt")
    line = error_line("index", folder, "--out", tmp_path / "ix2")
    assert f"{folder / 'sub' / 'leak.txt'}: a symbolic link to {tmp_path / 'secret.txt'}, outside the folder" in line
    assert not (tmp_path / "ix2").exists()
    assert "outside the folder" in error_line("add", tmp_path / "ix", folder)
    assert Index.load(tmp_path / "ix").tokenizer == Tokenizer("auto")
