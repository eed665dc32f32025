"""Sharded indexes and Dask clusters from the terminal: the ``--shards`` and ``--cluster`` options of
`index`, `search`, `run` and `experiment`, and the routing of `add`, `delete`, `optimize` and `info`
to a sharded index. The library does the work (:mod:`bm25lab.engine.shards`, :mod:`bm25lab.distributed`)."""
from __future__ import annotations

import time
import weakref
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Optional

import typer

from .common import console, document_progress, human_bytes, say

if TYPE_CHECKING:
    from ..engine.records import Document
    from ..engine.tokenization import Tokenizer

_FORMS = " or ".join(("tcp://HOST:PORT (a running Dask scheduler)", "local:W (W local worker processes)"))
CLUSTER_OPT = typer.Option("--cluster", metavar="ADDRESS",
                           help=f"Run on a Dask cluster: {_FORMS}. Needs the index on a path every worker shares.")
SHARDS_OPT = typer.Option("--shards", min=1, help="Build a sharded index of N shards (default with --cluster: one "
                                                  "per worker).")
PARTITION_OPT = typer.Option("--partition-docs", min=1, help="Documents sent to a worker at a time (--cluster, when "
                                                             "this process reads the documents: a bundled collection, "
                                                             "--duplicates first/last).")
PARTITION_BYTES_OPT = typer.Option("--partition-bytes", min=1, help="Bytes of input a worker reads at a time (--cluster "
                                                                    "with files: big uncompressed JSONL/TSV files are "
                                                                    "cut in ranges, small files grouped). Default 64 MiB.")


def is_sharded(directory: Path) -> bool:
    """Whether ``directory`` holds a sharded index (asked without importing its module: a one-shot
    search of an ordinary index loads no more than it did)."""
    import os

    from ..engine.storage import SHARDED_MANIFEST

    return os.path.lexists(Path(directory) / SHARDED_MANIFEST)  # anything of that name: read (and refused) as such


def open_index(directory: Path, backend: Optional[str], cluster: Optional[str]) -> Any:
    """The index in ``directory`` to search: on the cluster at ``cluster`` when given (a sharded index;
    the connection, and a local cluster it started, close when the index is no longer used), else in
    this process (an ordinary or a sharded index)."""
    if cluster is None and not is_sharded(directory):
        from ..engine import Index

        return Index.load(directory, backend=backend)
    if cluster is None:
        from ..engine.shards import ShardedIndex

        return ShardedIndex.load(directory, backend=backend)
    from ..distributed import DistributedIndex, connect

    manager = connect(cluster)
    client = manager.__enter__()
    try:
        index = DistributedIndex(directory, client, backend)
    except BaseException:
        manager.__exit__(None, None, None)
        raise
    weakref.finalize(index, manager.__exit__, None, None, None)
    return index


def growth(directory: Path) -> ModuleType:
    """The module whose ``add_documents``, ``delete_documents`` and ``optimize`` change the index in
    ``directory``: :mod:`bm25lab.engine.shards` for a sharded index, else :mod:`bm25lab.engine.segments`."""
    if is_sharded(directory):
        from ..engine import shards

        return shards
    from ..engine import segments

    return segments


@contextmanager
def on_cluster(directory: Path, cluster: Optional[str]) -> Iterator[tuple[Optional[ModuleType], Any]]:
    """`add`, `delete`, `optimize --cluster ADDRESS`: (:mod:`bm25lab.distributed`, a client) for a sharded
    index, connected for the ``with`` block; (None, None) without ``cluster``."""
    if cluster is None:
        yield None, None
        return
    from ..engine.errors import IndexFormatError

    if not is_sharded(directory):
        if (directory / "index.json").is_file():
            raise IndexFormatError(f"{directory}: an ordinary index; a cluster changes a sharded index (build one "
                                   f"with --shards N)")
        from ..engine.shards import read_manifest

        read_manifest(directory.absolute())  # the one-line error of a folder holding no index
    from .. import distributed

    with distributed.connect(cluster) as client:
        yield distributed, client


def index_sharded(source: str, docs: Iterable["Document"], count: Optional[Callable[[], Optional[int]]], out: Path,
                  tokenizer: "Tokenizer", *, shards: Optional[int], cluster: Optional[str], partition_docs: int,
                  workers: Optional[int], overwrite: bool, backend: Optional[str], started: float) -> None:
    """`bm25lab index --shards N [--cluster ADDRESS]`: build a sharded index of ``docs`` (read from
    ``source`` as `index` reads it: its format, field mapping and duplicates policy), on the cluster or here."""
    from ..engine.shards import check_target
    from .common import report_duplicates

    check_target(out, overwrite)  # before the work and the cluster: a folder holding anything but a sharded index is refused
    if cluster is not None:
        from .. import distributed

        with distributed.connect(cluster) as client, \
                document_progress(f"indexing {source} on {cluster}", count) as advance:
            distributed.build(docs, out, shards=shards or distributed.worker_count(client), client=client,
                              tokenizer=tokenizer, overwrite=overwrite, partition_docs=partition_docs, backend=backend,
                              progress=advance, source_name=source)
    else:
        from ..engine import shards as sharding

        assert shards is not None
        with document_progress(f"indexing {source}", count) as advance:
            sharding.build(docs, out, shards, tokenizer, overwrite=overwrite, workers=workers,
                           progress=advance, source=source, backend=backend)
    report_duplicates(docs)
    report_built(out, time.perf_counter() - started)


def index_read_by_workers(source: str, out: Path, tokenizer: "Tokenizer", *, shards: Optional[int], cluster: str,
                          partition_bytes: Optional[int], format: Optional[str], id_field: Optional[str],
                          text_fields: Optional[str], title_field: Optional[str], overwrite: bool,
                          backend: Optional[str], started: float) -> None:
    """`bm25lab index FILES --cluster ADDRESS` (a file, a folder or a glob pattern): the workers read the
    files (this process sends them names and byte ranges, never documents)."""
    from .. import distributed
    from ..engine.shards import check_target

    check_target(out, overwrite)
    with distributed.connect(cluster) as client, \
            document_progress(f"indexing {source} on {cluster} (the workers read it)", None) as advance:
        distributed.build(source, out, shards=shards or distributed.worker_count(client), client=client,
                          tokenizer=tokenizer, overwrite=overwrite, backend=backend, progress=advance,
                          partition_bytes=partition_bytes, format=format, id_field=id_field, text_fields=text_fields,
                          title_field=title_field)
    report_built(out, time.perf_counter() - started)


def report_built(out: Path, elapsed: float) -> None:
    from ..engine.shards import read_manifest, size_on_disk

    manifest = read_manifest(out.absolute())
    stats = manifest["statistics"]
    say(f"indexed {stats['documents']:,} documents into {len(manifest['shards'])} shards: "
        f"{stats['terms']:,} terms, {stats['postings']:,} postings, {human_bytes(size_on_disk(out))} on "
        f"disk, {elapsed:.1f} s ({stats['documents'] / max(elapsed, 1e-9):,.0f} docs/s) -> {out}")
