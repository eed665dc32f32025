"""`bm25lab search`: one query against a saved index, its best documents shown with titles and snippets.

Its own module, so that a one-shot search imports what it needs only: the index, its tokenizer and backend,
not the readers of documents, queries, qrels and runs of `index` and `run` (:mod:`bm25lab.cli.engine_cmds`).
"""
from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from . import distributed_cmds
from .common import (B_OPT, BACKEND_OPT, DEFAULT_B, DEFAULT_K1, DEFAULT_VARIANT_NAME, DELTA_OPT, FIELD_B_OPT,
                     FIELD_WEIGHTS_OPT, K1_OPT, K3_OPT, VARIANT_OPT, WHERE_NOT_OPT, WHERE_OPT, BackendName, VariantName,
                     backend_name, handles_errors)
from .distributed_cmds import CLUSTER_OPT
from .feedback_opts import BO1_OPT, FB_DOCS_OPT, FB_TERMS_OPT, OQW_OPT, RM3_OPT, ROCCHIO_OPT, chosen_feedback

if TYPE_CHECKING:
    from ..engine.scoring import Params

__all__ = ["SearchFormat", "check_order", "search", "with_filter"]


class SearchFormat(str, Enum):
    table = "table"
    json = "json"
    trec = "trec"


def _is_index(path: Path) -> bool:
    from ..engine.storage import MANIFEST

    return path.is_dir() and ((path / MANIFEST).is_file() or distributed_cmds.is_sharded(path))


def check_order(directory: Path, other: str, usage: str) -> None:
    """Arguments given the wrong way round (``run QUERIES DIR``): one line saying so, with the usage."""
    if not _is_index(directory) and _is_index(Path(other)):
        from ..engine.errors import InputError

        raise InputError(f"not an index, but {other} is: the index comes first ({usage})", directory)


def with_filter(params: "Params", where: Optional[list[str]], where_not: Optional[list[str]]) -> "Params":
    """``params`` with the filter of --where and --where-not (feedback's searches take one Params)."""
    from dataclasses import replace

    from ..engine.filters import Filter

    return replace(params, where=Filter.of(where or None, where_not or None))


RESULT_COLUMNS = (("rank", "right"), ("doc_id", "left"), ("score", "right"), ("title", "left"), ("snippet", "left"))


def results_sheet(query: str, hits: Any, tokenizer: Any) -> Any:
    """The results as a table: rank, document id, score, title and a snippet around the query's terms."""
    from .plain import Field, Sheet
    from .snippets import snippet

    terms = set(tokenizer.tokenize(query))
    sheet = Sheet(f"{len(hits)} results for {query!r}", [Field(name, justify) for name, justify in RESULT_COLUMNS])
    for r, h in enumerate(hits, 1):
        doc = h.document
        sheet.rows.append([str(r), h.doc_id, f"{h.score:.4f}", doc.title if doc else "",
                           snippet(doc.text if doc else "", terms, tokenizer)])
    return sheet


@handles_errors
def search(
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="Index directory.")],
    query: Annotated[str, typer.Argument(help="Query text.")],
    k: Annotated[int, typer.Option("-k", help="Number of results.", min=1)] = 10,
    variant: Annotated[VariantName, VARIANT_OPT] = DEFAULT_VARIANT_NAME,
    k1: Annotated[float, K1_OPT] = DEFAULT_K1,
    b: Annotated[float, B_OPT] = DEFAULT_B,
    delta: Annotated[Optional[float], DELTA_OPT] = None,
    k3: Annotated[Optional[float], K3_OPT] = None,
    field_weights: Annotated[Optional[str], FIELD_WEIGHTS_OPT] = None,
    field_b: Annotated[Optional[str], FIELD_B_OPT] = None,
    where: Annotated[Optional[list[str]], WHERE_OPT] = None,
    where_not: Annotated[Optional[list[str]], WHERE_NOT_OPT] = None,
    format: Annotated[SearchFormat, typer.Option("--format", help="table, json or trec.")] = SearchFormat.table,
    qid: Annotated[str, typer.Option("--qid", help="Query id of the --format trec lines.")] = "1",
    tag: Annotated[str, typer.Option("--tag", help="Run tag of the --format trec lines.")] = "bm25lab",
    backend: Annotated[Optional[BackendName], BACKEND_OPT] = None,
    cluster: Annotated[Optional[str], CLUSTER_OPT] = None,
    rm3: Annotated[bool, RM3_OPT] = False,
    bo1: Annotated[bool, BO1_OPT] = False,
    rocchio: Annotated[bool, ROCCHIO_OPT] = False,
    fb_docs: Annotated[Optional[int], FB_DOCS_OPT] = None,
    fb_terms: Annotated[Optional[int], FB_TERMS_OPT] = None,
    original_query_weight: Annotated[Optional[float], OQW_OPT] = None,
) -> None:
    """Search an index and show the best documents with titles and highlighted snippets.

    Example: bm25lab search my-index "boundary layer transition" -k 5 --where 'year>=1990'
    """
    check_order(directory, query, 'bm25lab search DIR "QUERY"')
    feedback = chosen_feedback(rm3, bo1, rocchio, fb_docs, fb_terms, original_query_weight)
    idx = distributed_cmds.open_index(directory, backend_name(backend), cluster)
    if feedback is None:
        hits = idx.search(query, k=k, variant=variant.value, k1=k1, b=b, delta=delta, k3=k3,
                          field_weights=field_weights, field_b=field_b, where=where or None,
                          where_not=where_not or None)
    else:
        from ..engine.feedback import search_many

        params = with_filter(idx.params(variant.value, k1, b, delta, k3, field_weights, field_b), where, where_not)
        hits = search_many(idx, {qid: query}, k, params, feedback)[qid]
    if format is SearchFormat.json:
        rows = [{"rank": r, "doc_id": h.doc_id, "score": h.score, "title": h.title} for r, h in enumerate(hits, 1)]
        typer.echo(json.dumps(rows, ensure_ascii=False, indent=1))
        return
    if format is SearchFormat.trec:  # the run writer's lines: an id that a TREC line cannot hold is refused
        import io

        from ..evaluation import write_run

        text = io.StringIO()  # printed once whole: nothing of a refused run reaches the terminal
        write_run({qid: hits}, text, tag=tag)
        typer.echo(text.getvalue(), nl=False)
        return
    from .tables import print_sheet

    print_sheet(results_sheet(query, hits, idx.tokenizer))
