"""`bm25lab corpora` and `bm25lab experiment`: bundled collections, end to end."""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Callable, Iterator, Optional

import typer

from .common import Language, TableFormat, VariantName, console, handles_errors, human_bytes
from .engine_cmds import B_OPT, DELTA_OPT, K1_OPT, VARIANT_OPT, build_with_progress, make_tokenizer

if TYPE_CHECKING:
    from ..engine import Index, Tokenizer
    from ..engine.records import Document

DEFAULT_MEASURES = ["nDCG@10", "AP", "P@10", "R@100", "RR", "bpref"]


@handles_errors
def corpora_list(
    format: Annotated[TableFormat, typer.Option("--format", help="table or json.")] = TableFormat.table,
) -> None:
    """List the bundled test collections with language, size and licence.

    Example: bm25lab corpora
    """
    from .. import corpora

    rows = []
    for name in corpora.names():
        c = corpora.get(name)
        rows.append({"name": name, "language": c.language, "documents": c.num_docs, "queries": c.num_queries,
                     "judged_queries": c.num_judged_queries, "judgments": c.num_judgments, "grades": c.grades,
                     "size_bytes": c.size_bytes, "licence": c.licence, "description": c.description})
    if format is TableFormat.json:
        typer.echo(json.dumps(rows, ensure_ascii=False, indent=1))
        return
    from rich.table import Table

    table = Table(title="bundled collections")
    table.add_column("name", no_wrap=True)
    for col in ("language", "documents", "queries (judged)", "judgments", "grades", "size", "licence"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(r["name"], r["language"], f"{r['documents']:,}", f"{r['queries']:,} ({r['judged_queries']:,})",
                      f"{r['judgments']:,}", r["grades"], human_bytes(r["size_bytes"]), r["licence"])
    console().print(table)


@dataclass(frozen=True)
class Collection:
    """What an experiment needs of a collection, bundled or given as a folder."""

    name: str
    language: str
    documents: Callable[[], Iterator["Document"]]
    queries: Callable[[], dict[str, str]]
    qrels_path: Path
    fingerprint: str


def resolve_collection(spec: str) -> Collection:
    """A bundled corpus by name, or a folder with documents, queries and qrels files."""
    from .. import corpora

    if spec in corpora.names():
        c = corpora.get(spec)
        return Collection(c.name, c.language, c.documents, c.judged_queries, c.qrels_path, _fingerprint(c.docs_path))
    folder = Path(spec)
    if not folder.is_dir():
        raise FileNotFoundError(2, f"neither a bundled corpus ({', '.join(corpora.names())}) nor a folder", spec)
    docs = _find(folder, ("docs.jsonl.gz", "docs.jsonl", "corpus.jsonl.gz", "corpus.jsonl", "docs.tsv", "docs.csv"))
    queries = _find(folder, ("queries.jsonl", "queries.tsv", "topics.txt", "queries.trec"))
    qrels = _find(folder, ("qrels.trec", "qrels.txt", "qrels.tsv"))
    from ..engine.sources import read_documents, read_queries

    def judged() -> dict[str, str]:
        from ..evaluation import read_qrels

        judged_ids = set(read_qrels(qrels).to_dict())
        return {q: t for q, t in read_queries(queries).items() if q in judged_ids}

    return Collection(folder.name, "auto", lambda: read_documents(docs), judged, qrels, _fingerprint(docs))


def _find(folder: Path, names: tuple[str, ...]) -> Path:
    for name in names:
        if (folder / name).is_file():
            return folder / name
    raise FileNotFoundError(2, f"no {' / '.join(names)} in the folder", str(folder))


def _fingerprint(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


def cached_index(collection: Collection, tokenizer: "Tokenizer", rebuild: bool) -> tuple["Index", bool]:
    """The collection's index from the user's cache, built and saved there on first use."""
    from ..engine import Index, IndexFormatError
    from ..engine.storage import FORMAT_VERSION
    from ..engine.tokenization import cache_dir

    key = hashlib.sha256(json.dumps([collection.fingerprint, tokenizer.config(), FORMAT_VERSION],
                                    sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]
    path = cache_dir() / "indexes" / f"{collection.name}-{key}"
    if not rebuild and (path / "index.json").exists():
        try:
            return Index.load(path), True
        except IndexFormatError:
            pass  # a damaged cache entry is rebuilt below
    built = build_with_progress(collection.documents(), tokenizer, None, f"indexing {collection.name}")
    built.save(path, overwrite=True)
    return Index.load(path), False


@handles_errors
def experiment(
    corpus: Annotated[str, typer.Argument(help="A bundled corpus (see `bm25lab corpora`) or a folder with docs, queries and qrels.")],
    variant: Annotated[VariantName, VARIANT_OPT] = VariantName.lucene,
    k1: Annotated[float, K1_OPT] = 0.9,
    b: Annotated[float, B_OPT] = 0.4,
    delta: Annotated[Optional[float], DELTA_OPT] = None,
    measure: Annotated[Optional[list[str]], typer.Option("--measure", "-m", help="Measure (repeatable). Default: nDCG@10 AP P@10 R@100 RR bpref.")] = None,
    k: Annotated[int, typer.Option("-k", help="Results per query.", min=1)] = 1000,
    language: Annotated[Optional[Language], typer.Option(help="Analyser (default: the corpus's language).")] = None,
    stem: Annotated[Optional[bool], typer.Option("--stem/--no-stem", help="English stemming (default: on).")] = None,
    run_out: Annotated[Optional[Path], typer.Option("--run-out", help="Also write the TREC run here.")] = None,
    rebuild: Annotated[bool, typer.Option(help="Rebuild the cached index.")] = False,
    format: Annotated[TableFormat, typer.Option("--format", help="table or json.")] = TableFormat.table,
) -> None:
    """Index a collection (cached), run every judged query, evaluate, and print the measures.

    Example: bm25lab experiment cranfield --k1 1.2 --b 0.75
    """
    from ..evaluation import evaluate, read_qrels

    from .engine_cmds import batch_search, write_run_atomically
    from .evaluate_cmds import render_results

    started = time.perf_counter()
    collection = resolve_collection(corpus)
    lang = language or Language(collection.language)
    tokenizer = make_tokenizer(lang, stem, None, None)
    idx, cached = cached_index(collection, tokenizer, rebuild)
    queries = collection.queries()
    results = batch_search(idx, queries, k, variant.value, k1, b, delta)
    if run_out is not None:
        write_run_atomically(results, run_out, f"bm25lab-{variant.value}")
    run = {q: {h.doc_id: h.score for h in hits} for q, hits in results.items()}
    measures = measure or DEFAULT_MEASURES
    result = evaluate(read_qrels(collection.qrels_path), run, measures)
    elapsed = time.perf_counter() - started
    render_results([(collection.name, result)], format.value, per_query=False)
    if format is TableFormat.table:
        console(stderr=True).print(
            f"{collection.name}: {idx.num_docs:,} documents ({'cached index' if cached else 'indexed'}), "
            f"{len(queries):,} judged queries, {variant.value} k1={k1:g} b={b:g}, k={k}, {elapsed:.1f} s")
