"""Every option of the command line does what it says: each command's output with the option equals
the library (or an independent oracle) called with the same setting, and differs from its output
without the option. A command that dropped the option silently would fail here (issue 19: removing
evaluate -c/-l/-J, compare --seed/--alpha/-c, run/experiment --variant/--k1/--b/--delta and
index/experiment --stem/--no-stem/--stopwords/--user-dict from the command code left every test green).
Issues 17 and 18's options where cheap: run --k3, index --fields with run --field-weights/--field-b,
evaluate -M/--depth (their other options have tests of their own: tests/cli/test_formats_cli.py,
tests/cli/test_cli_measures.py).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bm25lab.cli import app
from bm25lab.engine import Index, Tokenizer
from bm25lab.evaluation import evaluate, read_qrels, read_run
from bm25lab.evaluation.compare import compare, to_markdown

runner = CliRunner()

DOCS = [  # English with inflections and stopwords, Chinese with a word jieba splits by default
    ("d1", "The runners were running in the races of the city"),
    ("d2", "A runner runs one race"),
    ("d3", "Running shoes for city runners and walkers"),
    ("d4", "The city council met about the race track"),
    ("d5", "机器学习是人工智能的一个分支"),
    ("d6", "深度学习模型需要大量数据"),
    ("d7", "walkers walk; a walker walked the track of the race"),
    ("d8", "the the the running"),
]
QUERIES = {"q1": "running race", "q2": "the city", "q3": "人工智能", "q4": "walkers track", "q5": "runner shoes"}
QRELS = "q1 0 d1 2\nq1 0 d2 1\nq1 0 d8 0\nq2 0 d4 1\nq3 0 d5 2\nq4 0 d7 1\nq4 0 d4 0\nq5 0 d3 1\nq6 0 d6 1\n"


def invoke(*args: str | Path) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, (args, result.output, result.stderr)
    return result.stdout


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("options")
    (root / "docs.jsonl").write_text("".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n"
                                             for i, t in DOCS), encoding="utf-8")
    (root / "queries.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in QUERIES.items()), encoding="utf-8")
    (root / "qrels.trec").write_text(QRELS)
    (root / "stop.txt").write_text("running\nrace\n")
    (root / "user.dict").write_text("机器学习 100000\n", encoding="utf-8")  # one word, not two, with it
    invoke("index", root / "docs.jsonl", "--out", root / "idx")
    return root


def as_run(results) -> dict[str, dict[str, float]]:
    """Search results as a run file holds them: queries without a result have no line."""
    return {q: {h.doc_id: h.score for h in v} for q, v in results.items() if len(v)}


def hits(directory: Path, query: str) -> list[tuple[str, float]]:
    return [(h.doc_id, h.score) for h in Index.load(directory).search(query, k=10)]


# ---------------------------------------------------------------------- index: the tokenizer's options
@pytest.mark.parametrize("options, tokenizer", [
    (["--no-stem"], dict(stem=False)),
    (["--stem", "--language", "en"], dict(language="en", stem=True)),
    (["--no-stem", "--language", "en"], dict(language="en", stem=False)),
    (["--stopwords", "{stop}"], dict(stopwords="{stop}")),
    (["--user-dict", "{dict}"], dict(user_dict="{dict}")),
    (["--language", "whitespace"], dict(language="whitespace")),
])
def test_index_tokenizer_options(folder: Path, tmp_path: Path, options: list[str], tokenizer: dict) -> None:
    paths = {"{stop}": str(folder / "stop.txt"), "{dict}": str(folder / "user.dict")}
    options = [paths.get(o, o) for o in options]
    settings = {k: paths.get(v, v) if isinstance(v, str) else v for k, v in tokenizer.items()}
    invoke("index", folder / "docs.jsonl", "--out", tmp_path / "ix", *options)
    expected = Tokenizer(**settings)
    built = Index.load(tmp_path / "ix")
    assert built.tokenizer == expected and built.tokenizer != Index.load(folder / "idx").tokenizer
    library = Index.build(DOCS, tokenizer=expected)
    texts = [t for _, t in DOCS] + list(QUERIES.values())
    assert [built.tokenizer.tokenize(t) for t in texts] != [Tokenizer().tokenize(t) for t in texts]
    for query in QUERIES.values():
        assert hits(tmp_path / "ix", query) == [(h.doc_id, h.score) for h in library.search(query, k=10)]


# ---------------------------------------------------------------------- run: the scoring options
@pytest.mark.parametrize("options, params", [
    (["--variant", "okapi"], dict(variant="okapi")),
    (["--k1", "2.5"], dict(k1=2.5)),
    (["--b", "1"], dict(b=1.0)),
    (["--variant", "bm25+", "--delta", "0.25"], dict(variant="bm25+", delta=0.25)),
    (["--variant", "bm25l", "--delta", "2"], dict(variant="bm25l", delta=2.0)),
])
def test_run_scoring_options(folder: Path, tmp_path: Path, options: list[str], params: dict) -> None:
    invoke("run", folder / "idx", folder / "queries.tsv", "--out", tmp_path / "run", *options)
    got = read_run(tmp_path / "run").to_dict()
    index = Index.load(folder / "idx")
    assert got == as_run(index.search_many(QUERIES, **params))
    # and not what the same command gives without the option (or with only the variant, for delta)
    baseline = {k: v for k, v in params.items() if k == "variant" and "delta" in params}
    assert got != as_run(index.search_many(QUERIES, **baseline))


# ---------------------------------------------------------------------- run: issue 18's --k3, index --fields and BM25F
def test_run_k3_and_bm25f_options(folder: Path, tmp_path: Path) -> None:
    repeated = {"r1": "running running race", "r2": "the city city walkers walkers walkers", "r3": "人工智能 人工智能"}
    (tmp_path / "repeated.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in repeated.items()), encoding="utf-8")
    index = Index.load(folder / "idx")
    invoke("run", folder / "idx", tmp_path / "repeated.tsv", "--out", tmp_path / "k3.run", "--k3", "0.5")
    got = read_run(tmp_path / "k3.run").to_dict()
    assert got == as_run(index.search_many(repeated, k3=0.5)) != as_run(index.search_many(repeated))
    titled = [{"id": i, "title": t.split()[0], "text": t} for i, t in DOCS]
    (tmp_path / "titled.jsonl").write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in titled),
                                           encoding="utf-8")
    invoke("index", tmp_path / "titled.jsonl", "--out", tmp_path / "fielded", "--fields", "title,text")
    fielded = Index.load(tmp_path / "fielded")
    assert fielded.fields == ("title", "text") and Index.load(folder / "idx").fields == ()
    weights = dict(field_weights={"title": 3.0, "text": 1.0}, field_b={"text": 0.2})
    invoke("run", tmp_path / "fielded", folder / "queries.tsv", "--out", tmp_path / "f.run",
           "--field-weights", "title=3,text=1", "--field-b", "text=0.2")
    library = Index.build(titled, tokenizer=Tokenizer(), fields=("title", "text"))
    expected = as_run(library.search_many(QUERIES, **weights))
    assert read_run(tmp_path / "f.run").to_dict() == expected == as_run(fielded.search_many(QUERIES, **weights))
    assert expected != as_run(fielded.search_many(QUERIES))


# ---------------------------------------------------------------------- experiment: scoring and tokenizer options
@pytest.mark.parametrize("options, params", [
    (["--variant", "atire"], dict(variant="atire")),
    (["--k1", "0.3"], dict(k1=0.3)),
    (["--b", "0.9"], dict(b=0.9)),
    (["--variant", "bm25+", "--delta", "3"], dict(variant="bm25+", delta=3.0)),
    (["--no-stem"], dict(tokenizer=dict(stem=False))),
    (["--language", "en"], dict(tokenizer=dict(language="en"))),
])
def test_experiment_options(folder: Path, tmp_path: Path, options: list[str], params: dict) -> None:
    from bm25lab.experiments import experiment

    collection = tmp_path / "collection"
    collection.mkdir()
    for name in ("docs.jsonl", "queries.tsv", "qrels.trec"):
        (collection / name).write_bytes((folder / name).read_bytes())
    measures = ["AP", "nDCG@10", "RR", "P@1"]
    args = ["experiment", collection, "--format", "json", "--run-out", tmp_path / "run", *sum(([["-m", m] for m in measures]), [])]
    printed = json.loads(invoke(*args, *options))
    settings = dict(params)
    if "tokenizer" in settings:
        settings["tokenizer"] = Tokenizer(**{"language": "auto", **settings["tokenizer"]})
    library = experiment(collection, measures=measures, **settings)
    assert printed["mean"] == library.evaluation.mean
    assert read_run(tmp_path / "run").to_dict() == as_run(library.results)
    default = experiment(collection, measures=measures, **({"variant": "bm25+"} if "delta" in params else {}))
    assert read_run(tmp_path / "run").to_dict() != as_run(default.results)


# ---------------------------------------------------------------------- evaluate -c, -l, -J
@pytest.fixture(scope="module")
def partial_run(folder: Path) -> Path:
    """A run missing q3 and q6 (judged) and holding unjudged documents."""
    path = folder / "partial.run"
    path.write_text("q1 Q0 d5 1 9 t\nq1 Q0 d2 2 8 t\nq1 Q0 d1 3 7 t\nq2 Q0 d3 1 5 t\nq2 Q0 d4 2 4 t\n"
                    "q4 Q0 d4 1 3 t\nq4 Q0 d7 2 2 t\nq5 Q0 d1 1 1 t\nq5 Q0 d3 2 0.5 t\n")
    return path


@pytest.mark.parametrize("options, kwargs", [
    (["-c"], dict(complete=True)), (["--complete"], dict(complete=True)),
    (["-l", "2"], dict(rel=2)), (["--rel", "2"], dict(rel=2)),
    (["-J"], dict(judged_only=True)), (["--judged-only"], dict(judged_only=True)),
    (["-c", "-J", "-l", "2"], dict(complete=True, judged_only=True, rel=2)),
    (["-M", "1"], dict(depth=1)), (["--depth", "2"], dict(depth=2)),  # issue 18's, cheap to cover here
])
def test_evaluate_options(folder: Path, partial_run: Path, options: list[str], kwargs: dict) -> None:
    measures = ["AP", "P@1", "RR", "nDCG@10", "R@5", "bpref"]
    args = ["evaluate", folder / "qrels.trec", partial_run, "--format", "json", *sum(([["-m", m] for m in measures]), [])]
    printed = json.loads(invoke(*args, *options))
    library = evaluate(read_qrels(folder / "qrels.trec"), read_run(partial_run), measures, **kwargs)
    assert printed["mean"] == library.mean and printed["queries"] == library.num_queries
    assert printed["per_query"] == library.per_query
    assert printed["mean"] != json.loads(invoke(*args))["mean"]


# ---------------------------------------------------------------------- compare --seed, --alpha, -c
@pytest.mark.parametrize("options, kwargs", [
    (["--seed", "7"], dict(seed=7)),
    (["--alpha", "0.5"], dict(alpha=0.5)),
    (["-c"], dict(complete=True)), (["--complete"], dict(complete=True)),
])
def test_compare_options(folder: Path, partial_run: Path, tmp_path: Path, options: list[str], kwargs: dict) -> None:
    other = tmp_path / "other.run"
    invoke("run", folder / "idx", folder / "queries.tsv", "--out", other, "--k1", "2", "--b", "0.9")
    measures = ["AP", "nDCG@10", "P@1"]
    args = ["compare", folder / "qrels.trec", partial_run, other, "--format", "markdown", "--test", "randomization",
            "--trials", "200", *sum(([["-m", m] for m in measures]), [])]
    printed = invoke(*args, *options)
    complete = kwargs.pop("complete", False)
    qrels = read_qrels(folder / "qrels.trec")
    per_query = {p.stem: evaluate(qrels, read_run(p), measures, complete=complete).per_query for p in (partial_run, other)}
    expected = compare(per_query["partial"], {"other": per_query["other"]}, measures, test="randomization",
                       trials=200, baseline_name="partial", **kwargs)
    assert printed.rstrip("\n") == to_markdown(expected).rstrip("\n")
    assert printed != invoke(*args)
