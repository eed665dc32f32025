"""`bm25lab add`, `delete` and `optimize`: changing an index in place.

Each change is committed atomically under the index's writer lock (:mod:`bm25lab.engine.segments`): a
reader sees the index before or after it, a second writer gets "index is locked by process N", and
bad input stops the command before anything is written.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from .common import document_progress, handles_errors
from .distributed_cmds import CLUSTER_OPT, PARTITION_BYTES_OPT, growth, on_cluster
from .inputs import DUPLICATES_OPT, FORMAT_OPT, ID_FIELD_OPT, TEXT_FIELDS_OPT, DocumentFormat, Duplicates

if TYPE_CHECKING:
    from ..engine.segments import Change

DIR_ARG = typer.Argument(metavar="DIR", help="Index directory (built with `bm25lab index`; a sharded one routes each "
                                            "document to the shard of its id).")


def _after(change: "Change", directory: Path) -> str:
    segments = f"{change.segments:,} segment{'s' if change.segments != 1 else ''}"
    return f"{directory}: {change.documents:,} documents in {segments}"


@handles_errors
def add(
    directory: Annotated[Path, DIR_ARG],
    source: Annotated[str, typer.Argument(help="JSONL, TSV, CSV, TREC, SMART or a folder of .txt files (or .gz of "
                                                "any), or a bundled collection's name.")],
    workers: Annotated[Optional[int], typer.Option(help="Tokenizer worker processes (default: all cores).", min=1)] = None,
    format: Annotated[DocumentFormat, FORMAT_OPT] = DocumentFormat("auto"),
    id_field: Annotated[Optional[str], ID_FIELD_OPT] = None,
    text_fields: Annotated[Optional[str], TEXT_FIELDS_OPT] = None,
    duplicates: Annotated[Duplicates, DUPLICATES_OPT] = Duplicates("error"),
    cluster: Annotated[Optional[str], CLUSTER_OPT] = None,
    partition_bytes: Annotated[Optional[int], PARTITION_BYTES_OPT] = None,
) -> None:
    """Add the documents of SOURCE to the index in DIR; a document whose id is already in the
    index replaces it. Analysed with the index's own tokenizer; searches then score exactly as a
    fresh build of all the documents would.

    Example: bm25lab add my-index new-docs.jsonl
    On a Dask cluster (a sharded index; the workers read the files): bm25lab add my-index 'new-*.jsonl' --cluster tcp://HOST:8786
    """
    from .common import report_duplicates
    from .inputs import documents, is_files

    started = time.perf_counter()
    if cluster is not None and duplicates.value == "error" and is_files(source):  # the workers read it
        with on_cluster(directory, cluster) as (bd, client), \
                document_progress(f"adding {source} on {cluster} (the workers read it)") as advance:
            change = bd.add_documents(directory, source, client=client, partition_bytes=partition_bytes,
                                      format=None if format.value == "auto" else format.value, id_field=id_field,
                                      text_fields=text_fields, backend=None, progress=advance)
        docs = None
    else:
        docs, count = documents(source, format, id_field, text_fields, duplicates)
        with on_cluster(directory, cluster) as (bd, client), document_progress(f"adding {source}", count) as advance:
            if client is None:
                change = growth(directory).add_documents(directory, docs, workers=workers, progress=advance,
                                                         source=source)
            else:
                change = bd.add_documents(directory, docs, client=client, progress=advance, source_name=source)
    report_duplicates(docs)
    replaced = f" ({change.replaced:,} replaced)" if change.replaced else ""
    typer.echo(f"added {change.added:,} documents{replaced} in {time.perf_counter() - started:.1f} s -> "
                    f"{_after(change, directory)}")


@handles_errors
def delete(
    directory: Annotated[Path, DIR_ARG],
    doc_ids: Annotated[list[str], typer.Argument(metavar="DOC_ID...", help="Ids of the documents to delete.")],
    cluster: Annotated[Optional[str], CLUSTER_OPT] = None,
) -> None:
    """Delete documents from the index in DIR by id. If any id is not in the index, nothing is
    deleted and the unknown ids are named.

    Example: bm25lab delete my-index d17 d42
    """
    with on_cluster(directory, cluster) as (bd, client):
        change = growth(directory).delete_documents(directory, doc_ids) if client is None else \
            bd.delete_documents(directory, doc_ids, client=client)
    typer.echo(f"deleted {change.deleted:,} document{'s' if change.deleted != 1 else ''} -> "
                    f"{_after(change, directory)}")


@handles_errors
def optimize(directory: Annotated[Path, DIR_ARG], cluster: Annotated[Optional[str], CLUSTER_OPT] = None) -> None:
    """Merge the segments of the index in DIR into one and drop deleted documents. Scores do not
    change; searches load faster.

    Example: bm25lab optimize my-index
    """
    with on_cluster(directory, cluster) as (bd, client):
        change = growth(directory).optimize(directory) if client is None else bd.optimize(directory, client=client)
    if not change.merged:
        why = "the index holds no documents" if not change.documents else "one segment, no deletions"
        typer.echo(f"nothing to merge ({why}) -> {_after(change, directory)}")
        return
    typer.echo(f"merged {change.merged:,} segment{'s' if change.merged != 1 else ''}, dropped "
                    f"{change.purged:,} deleted documents -> {_after(change, directory)}")
