"""`bm25lab index`, `search`, `run` and `info`: the engine from the terminal."""
from __future__ import annotations

import json
import time
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from .common import (B_OPT, BACKEND_OPT, DEFAULT_B, DEFAULT_K1, DEFAULT_VARIANT_NAME, DELTA_OPT, K1_OPT,
                     VARIANT_OPT, BackendName, Language, VariantName, backend_name, console, document_progress,
                     handles_errors, human_bytes, query_progress)
from . import distributed_cmds
from .distributed_cmds import CLUSTER_OPT, PARTITION_OPT, SHARDS_OPT

if TYPE_CHECKING:
    from ..engine import Index, Tokenizer


class SearchFormat(str, Enum):
    table = "table"
    json = "json"
    trec = "trec"


def make_tokenizer(language: Enum, stem: Optional[bool], stopwords: Optional[Path],
                   user_dict: Optional[Path]) -> "Tokenizer":
    from ..engine import Tokenizer

    return Tokenizer(language.value, stem=stem, stopwords=stopwords if stopwords else "default", user_dict=user_dict)


@handles_errors
def index(
    source: Annotated[str, typer.Argument(help="JSONL, TSV, CSV, TREC or .txt folder (or .gz), or a bundled corpus name.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Index directory to write.")],
    language: Annotated[Language, typer.Option(help="Analyser: auto (CJK via jieba, rest English), zh, en, whitespace.")] = Language("auto"),
    stem: Annotated[Optional[bool], typer.Option("--stem/--no-stem", help="English Snowball stemming (default: the tokenizer's measured default).")] = None,
    stopwords: Annotated[Optional[Path], typer.Option(help="Stopword file, one word a line (default: built-in lists).", exists=True, dir_okay=False)] = None,
    user_dict: Annotated[Optional[Path], typer.Option(help="jieba user dictionary for Chinese segmentation.", exists=True, dir_okay=False)] = None,
    workers: Annotated[Optional[int], typer.Option(help="Tokenizer worker processes (default: all cores).", min=1)] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing index at --out.")] = False,
    backend: Annotated[Optional[BackendName], BACKEND_OPT] = None,
    shards: Annotated[Optional[int], SHARDS_OPT] = None,
    cluster: Annotated[Optional[str], CLUSTER_OPT] = None,
    partition_docs: Annotated[int, PARTITION_OPT] = 10_000,
) -> None:
    """Build an index from SOURCE into --out.

    Example: bm25lab index docs.jsonl --out my-index --language en
    Sharded, on a Dask cluster: bm25lab index docs.jsonl --out my-index --shards 3 --cluster tcp://HOST:8786
    """
    from ..corpora import documents_of
    from ..engine import Index
    from ..engine.errors import InputError
    from ..engine.storage import MANIFEST, check_target, size_on_disk

    if (out / MANIFEST).exists() and not overwrite:
        raise InputError("an index exists already; add --overwrite to replace it", out)
    started = time.perf_counter()
    tokenizer = make_tokenizer(language, stem, stopwords, user_dict)
    if shards is not None or cluster is not None:  # its target is checked before the work (and the cluster)
        return distributed_cmds.index_sharded(source, out, tokenizer, shards=shards, cluster=cluster,
                                              partition_docs=partition_docs, workers=workers, overwrite=overwrite,
                                              backend=backend_name(backend), started=started)
    if distributed_cmds.is_sharded(out):
        raise InputError("holds a sharded index; replace it with a sharded one (--shards N), or choose another folder", out)
    check_target(out, overwrite)  # before the work: a folder holding anything but an index is refused
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)  # the build's scratch folder goes in it: the index's own disk
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(out)) from None
    built = None
    try:
        with document_progress(f"indexing {source}") as advance:
            built = Index.build(documents_of(source), tokenizer=tokenizer, workers=workers, progress=advance,
                                source=source, backend=backend_name(backend), scratch=out)
        built.save(out, overwrite=overwrite)
    except BaseException:
        built = None  # its scratch folder goes with it
        if created:
            _remove_if_empty(out)
        raise
    elapsed = time.perf_counter() - started
    info = built.info()
    console().print(f"indexed {info.documents:,} documents: {info.terms:,} terms, {info.postings:,} postings, "
                    f"{human_bytes(size_on_disk(out))} on disk, {elapsed:.1f} s "
                    f"({info.documents / max(elapsed, 1e-9):,.0f} docs/s) -> {out}")


def _remove_if_empty(folder: Path) -> None:
    """Remove a folder this command made, once its scratch folder is gone, if nothing else is in it."""
    import gc

    gc.collect()  # an index built before the failure removes its scratch folder when it is collected
    try:
        folder.rmdir()
    except OSError:
        pass


def load_index(directory: Path, backend: Optional[BackendName] = None) -> "Index":
    """The index in ``directory``, ordinary or sharded, searched in this process."""
    return distributed_cmds.open_index(directory, backend_name(backend), None)


@handles_errors
def search(
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="Index directory.")],
    query: Annotated[str, typer.Argument(help="Query text.")],
    k: Annotated[int, typer.Option("-k", help="Number of results.", min=1)] = 10,
    variant: Annotated[VariantName, VARIANT_OPT] = DEFAULT_VARIANT_NAME,
    k1: Annotated[float, K1_OPT] = DEFAULT_K1,
    b: Annotated[float, B_OPT] = DEFAULT_B,
    delta: Annotated[Optional[float], DELTA_OPT] = None,
    format: Annotated[SearchFormat, typer.Option("--format", help="table, json or trec.")] = SearchFormat.table,
    backend: Annotated[Optional[BackendName], BACKEND_OPT] = None,
    cluster: Annotated[Optional[str], CLUSTER_OPT] = None,
) -> None:
    """Search an index and show the best documents with titles and highlighted snippets.

    Example: bm25lab search my-index "boundary layer transition" -k 5
    """
    idx = distributed_cmds.open_index(directory, backend_name(backend), cluster)
    hits = idx.search(query, k=k, variant=variant.value, k1=k1, b=b, delta=delta)
    if format is SearchFormat.json:
        rows = [{"rank": r, "doc_id": h.doc_id, "score": h.score, "title": h.title} for r, h in enumerate(hits, 1)]
        typer.echo(json.dumps(rows, ensure_ascii=False, indent=1))
        return
    if format is SearchFormat.trec:  # the run writer's lines: an id that a TREC line cannot hold is refused
        import sys

        from ..evaluation import write_run

        write_run({"query": list(hits)}, sys.stdout, tag="bm25lab")
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
    variant: Annotated[VariantName, VARIANT_OPT] = DEFAULT_VARIANT_NAME,
    k1: Annotated[float, K1_OPT] = DEFAULT_K1,
    b: Annotated[float, B_OPT] = DEFAULT_B,
    delta: Annotated[Optional[float], DELTA_OPT] = None,
    backend: Annotated[Optional[BackendName], BACKEND_OPT] = None,
    cluster: Annotated[Optional[str], CLUSTER_OPT] = None,
) -> None:
    """Search every query of QUERIES and write a TREC run.

    Example: bm25lab run my-index topics.tsv --out bm25.run -k 1000
    """
    from ..engine.sources import read_queries
    from ..evaluation import write_run

    idx = distributed_cmds.open_index(directory, backend_name(backend), cluster)
    topics = read_queries(queries)
    with query_progress() as advance:
        results = idx.search_many(topics, k=k, variant=variant.value, k1=k1, b=b, delta=delta, progress=advance)
    write_run(results, out, tag=tag)
    console().print(f"{len(results):,} queries, {results.num_results:,} results -> {out}")


@handles_errors
def info(
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="Index directory.")],
    format: Annotated[Optional[str], typer.Option("--format", help="table or json.")] = "table",
) -> None:
    """Show an index's tokenizer, counts, size on disk and format version.

    Example: bm25lab info my-index
    """
    facts = load_index(directory).info().to_dict()
    facts["average_length"] = round(facts["average_length"], 3)
    facts["tokenizer"] = _tokenizer_summary(facts["tokenizer"])
    del facts["backend"]  # a property of this process, not of the index
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
