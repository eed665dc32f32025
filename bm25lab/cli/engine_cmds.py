"""`bm25lab index`, `search`, `run` and `info`: the engine from the terminal."""
from __future__ import annotations

import json
import time
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Iterator, Optional

import typer

from .common import (Language, VariantName, console, dir_size, document_progress, handles_errors,
                     human_bytes)

if TYPE_CHECKING:
    from ..engine import Index, Tokenizer
    from ..engine.records import Document

VARIANT_OPT = typer.Option("--variant", help="BM25 variant.")
K1_OPT = typer.Option("--k1", help="BM25 k1 (term frequency saturation).", min=0.0)
B_OPT = typer.Option("--b", help="BM25 b (length normalisation), 0..1.", min=0.0, max=1.0)
DELTA_OPT = typer.Option("--delta", help="delta of bm25l / bm25+ (default: the variant's).", min=0.0)


class SearchFormat(str, Enum):
    table = "table"
    json = "json"
    trec = "trec"


def make_tokenizer(language: Language, stem: Optional[bool], stopwords: Optional[Path],
                   user_dict: Optional[Path], mode: str = "default") -> "Tokenizer":
    from ..engine import Tokenizer

    return Tokenizer(language.value, stem=stem, stopwords=stopwords if stopwords else "default",
                     mode=mode, user_dict=user_dict)


def documents_from(source: str) -> Iterator["Document"]:
    """Documents of a file or folder, or of a bundled corpus named ``source``."""
    path = Path(source)
    if path.exists():
        from ..engine.sources import read_documents

        return read_documents(path)
    from .. import corpora

    if source in corpora.names():
        return corpora.get(source).documents()
    raise FileNotFoundError(2, "no such file, folder or bundled corpus", source)


def build_with_progress(docs: Iterator["Document"], tokenizer: "Tokenizer", workers: Optional[int],
                        label: str, source: Optional[str] = None) -> "Index":
    """Index.build with a live progress bar (documents and documents per second) on stderr."""
    from ..engine import Index

    with document_progress(label) as advance:
        return Index.build(docs, tokenizer=tokenizer, workers=workers, progress=advance, source=source)


@handles_errors
def index(
    source: Annotated[str, typer.Argument(help="JSONL, TSV, CSV, TREC or .txt folder (or .gz), or a bundled corpus name.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Index directory to write.")],
    language: Annotated[Language, typer.Option(help="Analyser: auto (CJK via jieba, rest English), zh, en, whitespace.")] = Language.auto,
    stem: Annotated[Optional[bool], typer.Option("--stem/--no-stem", help="English Snowball stemming (default: the tokenizer's measured default).")] = None,
    stopwords: Annotated[Optional[Path], typer.Option(help="Stopword file, one word a line (default: built-in lists).", exists=True, dir_okay=False)] = None,
    user_dict: Annotated[Optional[Path], typer.Option(help="jieba user dictionary for Chinese segmentation.", exists=True, dir_okay=False)] = None,
    workers: Annotated[Optional[int], typer.Option(help="Tokenizer worker processes (default: all cores).", min=1)] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing index at --out.")] = False,
) -> None:
    """Build an index from SOURCE into --out.

    Example: bm25lab index docs.jsonl --out my-index --language en
    """
    if (out / "index.json").exists() and not overwrite:
        raise ValueError(f"{out}: an index exists already; add --overwrite to replace it")
    started = time.perf_counter()
    tokenizer = make_tokenizer(language, stem, stopwords, user_dict)
    built = build_with_progress(documents_from(source), tokenizer, workers, f"indexing {source}", source)
    built.save(out, overwrite=overwrite)
    elapsed = time.perf_counter() - started
    counts = built.counts()
    console().print(f"indexed {counts['documents']:,} documents: {counts['terms']:,} terms, "
                    f"{counts['postings']:,} postings, {human_bytes(dir_size(out))} on disk, "
                    f"{elapsed:.1f} s ({counts['documents'] / max(elapsed, 1e-9):,.0f} docs/s) -> {out}")


def load_index(directory: Path) -> "Index":
    from ..engine import Index

    return Index.load(directory)


@handles_errors
def search(
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="Index directory.")],
    query: Annotated[str, typer.Argument(help="Query text.")],
    k: Annotated[int, typer.Option("-k", help="Number of results.", min=1)] = 10,
    variant: Annotated[VariantName, VARIANT_OPT] = VariantName.lucene,
    k1: Annotated[float, K1_OPT] = 0.9,
    b: Annotated[float, B_OPT] = 0.4,
    delta: Annotated[Optional[float], DELTA_OPT] = None,
    format: Annotated[SearchFormat, typer.Option("--format", help="table, json or trec.")] = SearchFormat.table,
) -> None:
    """Search an index and show the best documents with titles and highlighted snippets.

    Example: bm25lab search my-index "boundary layer transition" -k 5
    """
    idx = load_index(directory)
    hits = idx.search(query, k=k, variant=variant.value, k1=k1, b=b, delta=delta)
    if format is SearchFormat.json:
        rows = [{"rank": r, "doc_id": h.doc_id, "score": h.score, "title": h.title} for r, h in enumerate(hits, 1)]
        typer.echo(json.dumps(rows, ensure_ascii=False, indent=1))
        return
    if format is SearchFormat.trec:
        for r, h in enumerate(hits, 1):
            typer.echo(f"query Q0 {h.doc_id} {r} {h.score!r} bm25lab")
        return
    from rich.table import Table

    from .snippets import snippet

    terms = set(idx.tokenizer.tokenize(query))
    table = Table(title=f"{len(hits)} results for {query!r}", show_lines=False)
    for name, justify in (("rank", "right"), ("doc_id", "left"), ("score", "right"), ("title", "left"), ("snippet", "left")):
        table.add_column(name, justify=justify, overflow="fold")
    for r, h in enumerate(hits, 1):
        doc = h.document
        table.add_row(str(r), h.doc_id, f"{h.score:.4f}", doc.title if doc else "",
                      snippet(doc.text if doc else "", terms, idx.tokenizer))
    console().print(table)


@handles_errors
def run(
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="Index directory.")],
    queries: Annotated[Path, typer.Argument(help="Queries: TSV qid<TAB>text, JSONL {_id|id, text}, or TREC topics.", exists=True, dir_okay=False)],
    out: Annotated[Path, typer.Option("--out", "-o", help="TREC run file to write.")],
    k: Annotated[int, typer.Option("-k", help="Results per query.", min=1)] = 1000,
    tag: Annotated[str, typer.Option(help="Run tag (last column).")] = "bm25lab",
    variant: Annotated[VariantName, VARIANT_OPT] = VariantName.lucene,
    k1: Annotated[float, K1_OPT] = 0.9,
    b: Annotated[float, B_OPT] = 0.4,
    delta: Annotated[Optional[float], DELTA_OPT] = None,
) -> None:
    """Search every query of QUERIES and write a TREC run.

    Example: bm25lab run my-index topics.tsv --out bm25.run -k 1000
    """
    from ..engine.sources import read_queries

    idx = load_index(directory)
    topics = read_queries(queries)
    results = batch_search(idx, topics, k, variant.value, k1, b, delta)
    write_run_atomically(results, out, tag)
    console().print(f"{len(results):,} queries, {sum(len(h) for h in results.values()):,} results -> {out}")


def batch_search(idx: "Index", topics: dict[str, str], k: int, variant: str, k1: float, b: float,
                 delta: Optional[float]) -> dict:
    """search_many in slices, with a progress bar on stderr."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    qids = list(topics)
    results: dict = {}
    step = 512
    columns = (TextColumn("[bold]searching"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console(stderr=True), transient=True) as bar:
        task = bar.add_task("search", total=len(qids))
        for start in range(0, len(qids), step):
            part = {q: topics[q] for q in qids[start:start + step]}
            results.update(idx.search_many(part, k=k, variant=variant, k1=k1, b=b, delta=delta))
            bar.update(task, advance=len(part))
    return results


def write_run_atomically(results: dict, out: Path, tag: str) -> None:
    """Write the run to a temporary file beside ``out`` and rename it into place."""
    import os

    from ..evaluation import write_run

    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        write_run(results, tmp, tag=tag)
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            tmp.unlink()


@handles_errors
def info(
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="Index directory.")],
    format: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
) -> None:
    """Show an index's tokenizer, counts, size on disk and format version.

    Example: bm25lab info my-index
    """
    from ..engine import storage

    manifest = storage.read_manifest(directory)
    idx = load_index(directory)
    facts = {
        "path": str(directory),
        "format_version": manifest["format_version"],
        "documents": idx.num_docs,
        "terms": idx.num_terms,
        "postings": idx.num_postings,
        "average_length": round(idx.avgdl, 3),
        "size_bytes": dir_size(directory),
        "segments": len(manifest["segments"]),
        "tokenizer": _tokenizer_summary(manifest["tokenizer"]),
    }
    if format == "json":
        typer.echo(json.dumps(facts, ensure_ascii=False, indent=1))
        return
    from rich.table import Table

    table = Table(title=f"index {directory}", show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    for key, value in facts.items():
        shown = human_bytes(value) if key == "size_bytes" else value
        table.add_row(key, json.dumps(shown, ensure_ascii=False) if isinstance(shown, dict) else f"{shown:,}" if isinstance(shown, int) else str(shown))
    console().print(table)


def _tokenizer_summary(config: dict) -> dict:
    """The tokenizer config with long lists replaced by their sizes."""
    return {k: (f"{len(v)} entries" if isinstance(v, (list, dict)) and len(v) > 8 else v) for k, v in config.items()}
