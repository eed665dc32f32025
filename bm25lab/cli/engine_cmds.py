"""`bm25lab index`, `run` and `info`: the engine from the terminal (`search` is :mod:`bm25lab.cli.search_cmds`:
it reads no documents or queries files)."""
from __future__ import annotations

import json
import time
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from . import distributed_cmds
from .feedback_opts import BO1_OPT, FB_DOCS_OPT, FB_TERMS_OPT, OQW_OPT, RM3_OPT, ROCCHIO_OPT, chosen_feedback
from .common import (B_OPT, BACKEND_OPT, DEFAULT_B, DEFAULT_K1, DEFAULT_VARIANT_NAME, DELTA_OPT, FIELD_B_OPT,
                     FIELD_WEIGHTS_OPT, K1_OPT, K3_OPT, LANGUAGE_HELP, VARIANT_OPT, WHERE_NOT_OPT, WHERE_OPT,
                     BackendName, Language, TableFormat, VariantName,
                     QUIET_OPT, backend_name, document_progress, handles_errors, human_bytes, note,
                     query_progress, report_duplicates, say)
from .distributed_cmds import CLUSTER_OPT, PARTITION_BYTES_OPT, PARTITION_OPT, SHARDS_OPT
from .search_cmds import check_order, with_filter
from .inputs import (DUPLICATES_OPT, FORMAT_OPT, ID_FIELD_OPT, QUERY_FORMAT_OPT, QUERY_ID_FIELD_OPT, QUERY_IDS_OPT,
                     QUERY_TEXT_FIELDS_OPT, TEXT_FIELDS_OPT, TITLE_FIELD_OPT, TOPIC_FIELD_OPT, DocumentFormat, Duplicates, QueryFormat,
                     QueryIds, RunWriter)

if TYPE_CHECKING:
    from ..engine import Index, Tokenizer


def make_tokenizer(language: Enum, stem: Optional[bool], stopwords: Optional[Path],
                   user_dict: Optional[Path]) -> "Tokenizer":
    from ..engine import Tokenizer

    return Tokenizer(language.value, stem=stem, stopwords=stopwords if stopwords else "default", user_dict=user_dict)


SOURCE_HELP = ("JSONL, TSV, CSV, TREC, SMART (.I/.T/.W), Parquet or a folder of .txt files (or .gz of any), a glob "
               "pattern of such files ('docs-*.jsonl.gz', quoted), or a bundled collection's name.")


@handles_errors
def index(
    source: Annotated[str, typer.Argument(help=SOURCE_HELP)],
    out: Annotated[Path, typer.Option("--out", "-o", help="Index directory to write.")],
    language: Annotated[Language, typer.Option(help=LANGUAGE_HELP)] = Language("auto"),
    stem: Annotated[Optional[bool], typer.Option("--stem/--no-stem", help="Snowball stemming of the language's words (default: on where the language has a stemmer).")] = None,
    stopwords: Annotated[Optional[Path], typer.Option(help="Stopword file, one word a line (default: built-in lists).")] = None,
    user_dict: Annotated[Optional[Path], typer.Option(help="jieba user dictionary for Chinese segmentation.")] = None,
    workers: Annotated[Optional[int], typer.Option(help="Tokenizer worker processes (default: all cores).", min=1)] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing index at --out.")] = False,
    format: Annotated[DocumentFormat, FORMAT_OPT] = DocumentFormat("auto"),
    id_field: Annotated[Optional[str], ID_FIELD_OPT] = None,
    text_fields: Annotated[Optional[str], TEXT_FIELDS_OPT] = None,
    duplicates: Annotated[Duplicates, DUPLICATES_OPT] = Duplicates("error"),
    fields: Annotated[Optional[str], typer.Option("--fields", help="BM25F: also index each of these document fields on its own (title, text or metadata keys, comma-separated, e.g. title,text), for --field-weights at search time; --text-fields chooses what makes up the text.")] = None,
    backend: Annotated[Optional[BackendName], BACKEND_OPT] = None,
    shards: Annotated[Optional[int], SHARDS_OPT] = None,
    cluster: Annotated[Optional[str], CLUSTER_OPT] = None,
    partition_docs: Annotated[int, PARTITION_OPT] = 10_000,
    partition_bytes: Annotated[Optional[int], PARTITION_BYTES_OPT] = None,
    title_field: Annotated[Optional[str], TITLE_FIELD_OPT] = None,
    quiet: Annotated[bool, QUIET_OPT] = False,
) -> None:
    """Build an index from SOURCE into --out.

    Example: bm25lab index cran.all.1400 --out cran-idx --language en
    Sharded, on a Dask cluster: bm25lab index 'docs-*.jsonl.gz' --out my-index --shards 3 --cluster tcp://HOST:8786
    (the workers read the files; the index folder and the files on paths every worker shares)
    """
    from ..engine import Index
    from ..engine.errors import InputError, ParameterError
    from ..engine.storage import MANIFEST, check_target, size_on_disk
    from .inputs import documents, is_files

    if (out / MANIFEST).exists() and not overwrite:
        raise InputError("an index exists already; add --overwrite to replace it", out)
    for given in (stopwords, user_dict):
        if given is not None and not given.is_file():
            raise InputError("no such file" if not given.exists() else "is a folder, expected a file", given)
    started = time.perf_counter()
    tokenizer = make_tokenizer(language, stem, stopwords, user_dict)
    if shards is not None or cluster is not None:  # its target is checked before the work (and the cluster)
        if fields is not None:
            raise ParameterError("--fields (BM25F) builds an ordinary index: a sharded index (--shards, --cluster) "
                                 "has no fields")
        if cluster is not None and duplicates.value == "error" and is_files(source):  # the workers read it
            return distributed_cmds.index_read_by_workers(
                source, out, tokenizer, shards=shards, cluster=cluster, partition_bytes=partition_bytes,
                format=None if format.value == "auto" else format.value, id_field=id_field, text_fields=text_fields,
                title_field=title_field, overwrite=overwrite, backend=backend_name(backend), started=started)
        docs, count = documents(source, format, id_field, text_fields, duplicates, title_field)
        return distributed_cmds.index_sharded(source, docs, count, out, tokenizer, shards=shards, cluster=cluster,
                                              partition_docs=partition_docs, workers=workers, overwrite=overwrite,
                                              backend=backend_name(backend), started=started)
    if distributed_cmds.is_sharded(out):
        raise InputError("holds a sharded index; replace it with a sharded one (--shards N), or choose another folder", out)
    check_target(out, overwrite)  # before the work: a folder holding anything but an index is refused
    docs, count = documents(source, format, id_field, text_fields, duplicates, title_field)
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)  # the build's scratch folder goes in it: the index's own disk
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(out)) from None
    built = None
    try:
        with document_progress(f"indexing {source}", count, quiet) as advance:
            built = Index.build(docs, tokenizer=tokenizer, workers=workers, progress=advance, source=source,
                                backend=backend_name(backend), fields=None if fields is None else fields.split(","),
                                scratch=out)
        report_duplicates(docs)
        built.save(out, overwrite=overwrite)
    except BaseException:
        built = None  # its scratch folder goes with it
        if created:
            _remove_if_empty(out)
        raise
    elapsed = time.perf_counter() - started
    info = built.info()
    say(f"indexed {info.documents:,} documents: {info.terms:,} terms, {info.postings:,} postings, "
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


QUERIES_HELP = ("Queries: TSV qid<TAB>text, JSONL {_id|id, text}, TREC topics or SMART (.I/.W), or a bundled "
                "collection's name (its queries).")


@handles_errors
def run(
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="Index directory.")],
    queries: Annotated[str, typer.Argument(help=QUERIES_HELP)],
    out: Annotated[Path, typer.Option("--out", "-o", help="Run file to write.")],
    k: Annotated[int, typer.Option("-k", help="Results per query.", min=1)] = 1000,
    tag: Annotated[str, typer.Option(help="Run tag (last column).")] = "bm25lab",
    variant: Annotated[VariantName, VARIANT_OPT] = DEFAULT_VARIANT_NAME,
    k1: Annotated[float, K1_OPT] = DEFAULT_K1,
    b: Annotated[float, B_OPT] = DEFAULT_B,
    delta: Annotated[Optional[float], DELTA_OPT] = None,
    k3: Annotated[Optional[float], K3_OPT] = None,
    field_weights: Annotated[Optional[str], FIELD_WEIGHTS_OPT] = None,
    field_b: Annotated[Optional[str], FIELD_B_OPT] = None,
    where: Annotated[Optional[list[str]], WHERE_OPT] = None,
    where_not: Annotated[Optional[list[str]], WHERE_NOT_OPT] = None,
    query_format: Annotated[QueryFormat, QUERY_FORMAT_OPT] = QueryFormat("auto"),
    topic_field: Annotated[str, TOPIC_FIELD_OPT] = "title",
    query_ids: Annotated[QueryIds, QUERY_IDS_OPT] = QueryIds("given"),
    query_id_field: Annotated[Optional[str], QUERY_ID_FIELD_OPT] = None,
    query_text_fields: Annotated[Optional[str], QUERY_TEXT_FIELDS_OPT] = None,
    run_format: Annotated[RunWriter, typer.Option("--run-format", help="Run file to write: trec, msmarco (qid docid rank) or ranx (JSON).")] = RunWriter("trec"),
    backend: Annotated[Optional[BackendName], BACKEND_OPT] = None,
    cluster: Annotated[Optional[str], CLUSTER_OPT] = None,
    rm3: Annotated[bool, RM3_OPT] = False,
    bo1: Annotated[bool, BO1_OPT] = False,
    rocchio: Annotated[bool, ROCCHIO_OPT] = False,
    fb_docs: Annotated[Optional[int], FB_DOCS_OPT] = None,
    fb_terms: Annotated[Optional[int], FB_TERMS_OPT] = None,
    original_query_weight: Annotated[Optional[float], OQW_OPT] = None,
    quiet: Annotated[bool, QUIET_OPT] = False,
) -> None:
    """Search every query of QUERIES and write a run (TREC by default).

    Example: bm25lab run cran-idx cran.qry --query-ids position --out bm25.run
    """
    from ..evaluation import write_run
    from .inputs import queries as read_topics

    check_order(directory, queries, "bm25lab run DIR QUERIES --out RUN")
    feedback = chosen_feedback(rm3, bo1, rocchio, fb_docs, fb_terms, original_query_weight)
    idx = distributed_cmds.open_index(directory, backend_name(backend), cluster)
    topics = without_blank_queries(read_topics(queries, query_format, topic_field, query_ids, query_id_field,
                                               query_text_fields), queries)
    if feedback is not None:
        from ..engine.feedback import search_many

        params = with_filter(idx.params(variant.value, k1, b, delta, k3, field_weights, field_b), where, where_not)
        results = search_many(idx, topics, k, params, feedback)
    else:
        with query_progress(quiet=quiet) as advance:
            results = idx.search_many(topics, k=k, variant=variant.value, k1=k1, b=b, delta=delta, progress=advance,
                                      k3=k3, field_weights=field_weights, field_b=field_b, where=where or None,
                                      where_not=where_not or None)
    write_run(results, out, tag=tag, format=run_format.value)
    say(f"{len(results):,} queries, {results.num_results:,} results -> {out}")
    explain_empty_results(idx, topics, results)


LISTED = 10  # query ids a note names before "..."


def _listed(qids: list[str]) -> str:
    return ", ".join(qids[:LISTED]) + (", ..." if len(qids) > LISTED else "")


def without_blank_queries(topics: dict[str, str], source: str) -> dict[str, str]:
    """The queries with some text; the others (CACM's empty ``.I 0`` record) are left out, with a note."""
    blank = [qid for qid, text in topics.items() if not text.strip()]
    if blank:
        note(f"{source}: {len(blank)} {'query has' if len(blank) == 1 else 'queries have'} no text and "
             f"{'is' if len(blank) == 1 else 'are'} left out: {_listed(blank)}")
    return {qid: text for qid, text in topics.items() if text.strip()} if blank else topics


def explain_empty_results(idx: object, topics: dict[str, str], results: object) -> None:
    """Notes on the queries that returned nothing, and why: no term left after analysis (stopwords,
    punctuation), or no term found in the index."""
    nothing = [qid for qid in topics if len(results[qid]) == 0]  # type: ignore[index]
    if not nothing:
        return
    tokenizer = getattr(idx, "tokenizer", None)
    unanalysed = [qid for qid in nothing if tokenizer is not None and not tokenizer.tokenize(topics[qid])]
    unmatched = [qid for qid in nothing if qid not in set(unanalysed)]
    if unanalysed:
        note(f"{len(unanalysed)} of {len(topics):,} queries returned nothing: no term is left after analysis "
             f"(only stopwords, punctuation or spaces): {_listed(unanalysed)}")
    if unmatched:
        note(f"{len(unmatched)} of {len(topics):,} queries returned nothing: none of their terms is in the index: "
             f"{_listed(unmatched)}")


@handles_errors
def info(
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="Index directory.")],
    format: Annotated[TableFormat, typer.Option("--format", help="table or json.")] = TableFormat.table,
) -> None:
    """Show an index's tokenizer, counts, size on disk and format version.

    Example: bm25lab info my-index
    """
    facts = load_index(directory).info().to_dict()
    facts["average_length"] = round(facts["average_length"], 3)
    facts["tokenizer"] = _tokenizer_summary(facts["tokenizer"])
    del facts["backend"]  # a property of this process, not of the index
    if format is TableFormat.json:
        typer.echo(json.dumps(facts, ensure_ascii=False, indent=1))
        return
    from .tables import Column, Grid, print_grid

    grid = Grid(f"index {directory}", [Column("field"), Column("value", wrap=True)])
    for key, value in facts.items():
        shown = human_bytes(value) if key == "size_bytes" else value
        if isinstance(shown, dict):  # the tokenizer: a row per setting, each whole
            for name, setting in shown.items():
                grid.add_row(f"{key}.{name}", json.dumps(setting, ensure_ascii=False) if not isinstance(setting, str)
                             else setting)
        else:
            grid.add_row(key, f"{shown:,}" if isinstance(shown, int) and not isinstance(shown, bool) else str(shown))
    print_grid(grid)


def _tokenizer_summary(config: dict) -> dict:
    """The tokenizer config with long lists replaced by their sizes."""
    return {k: (f"{len(v)} entries" if isinstance(v, (list, dict)) and len(v) > 8 else v) for k, v in config.items()}
