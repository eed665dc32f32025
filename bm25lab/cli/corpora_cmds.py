"""`bm25lab corpora` and `bm25lab experiment`: bundled collections, end to end."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..engine.errors import ParameterError
from ..evaluation.measures import DEFAULT_MEASURES
from .feedback_opts import BO1_OPT, FB_DOCS_OPT, FB_TERMS_OPT, OQW_OPT, RM3_OPT, ROCCHIO_OPT, chosen_feedback
from .common import (B_OPT, BACKEND_OPT, DEFAULT_B, DEFAULT_K1, DEFAULT_VARIANT_NAME, DELTA_OPT, K1_OPT, K3_OPT,
                     LANGUAGE_HELP, VARIANT_OPT, WHERE_NOT_OPT, WHERE_OPT, BackendName, Language, TableFormat, VariantName,
                     backend_name, console, QUIET_OPT, handles_errors, human_bytes, note, progress_bars, say)
from .distributed_cmds import CLUSTER_OPT, SHARDS_OPT
from .engine_cmds import make_tokenizer
from .inputs import (DUPLICATES_OPT, ID_FIELD_OPT, QUERY_ID_FIELD_OPT, QUERY_TEXT_FIELDS_OPT, TEXT_FIELDS_OPT,
                     TITLE_FIELD_OPT, CollectionQueryIds, Duplicates)


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
    from .tables import Column, Grid, print_grid

    grid = Grid("bundled collections", [Column("name"), Column("language", wrap=True), Column("documents", "right"),
                                        Column("queries (judged)", "right", wrap=True), Column("judgments", "right"),
                                        Column("grades", wrap=True), Column("size", "right"),
                                        Column("licence", wrap=True)])
    for r in rows:
        grid.add_row(r["name"], r["language"], f"{r['documents']:,}", f"{r['queries']:,} ({r['judged_queries']:,})",
                     f"{r['judgments']:,}", r["grades"], human_bytes(r["size_bytes"]), r["licence"])
    print_grid(grid)


@handles_errors
def experiment(
    corpus: Annotated[str, typer.Argument(help="A bundled corpus (see `bm25lab corpora`) or a folder with documents, queries and qrels files in any format bm25lab reads (a SMART collection's files as they come), found by their names in it or its subfolders.")],
    variant: Annotated[VariantName, VARIANT_OPT] = DEFAULT_VARIANT_NAME,
    k1: Annotated[float, K1_OPT] = DEFAULT_K1,
    b: Annotated[float, B_OPT] = DEFAULT_B,
    delta: Annotated[Optional[float], DELTA_OPT] = None,
    k3: Annotated[Optional[float], K3_OPT] = None,
    where: Annotated[Optional[list[str]], WHERE_OPT] = None,
    where_not: Annotated[Optional[list[str]], WHERE_NOT_OPT] = None,
    measure: Annotated[Optional[list[str]], typer.Option("--measure", "-m", help="Measure (repeatable). Default: " + " ".join(DEFAULT_MEASURES) + ".")] = None,
    k: Annotated[int, typer.Option("-k", help="Results per query.", min=1)] = 1000,
    docs: Annotated[Optional[Path], typer.Option("--docs", help="A folder's documents file, when its name does not tell (relative to the folder or here).")] = None,
    queries: Annotated[Optional[Path], typer.Option("--queries", help="A folder's queries file, when its name does not tell, or to choose among several.")] = None,
    qrels: Annotated[Optional[Path], typer.Option("--qrels", help="A folder's qrels file, when its name does not tell, or to choose among several.")] = None,
    language: Annotated[Optional[Language], typer.Option(help=LANGUAGE_HELP[:-1] + " (default: the corpus's language).")] = None,
    stem: Annotated[Optional[bool], typer.Option("--stem/--no-stem", help="English stemming (default: on).")] = None,
    stopwords: Annotated[Optional[Path], typer.Option(help="Stopword file, one word a line (default: built-in lists).")] = None,
    id_field: Annotated[Optional[str], ID_FIELD_OPT] = None,
    text_fields: Annotated[Optional[str], TEXT_FIELDS_OPT] = None,
    title_field: Annotated[Optional[str], TITLE_FIELD_OPT] = None,
    duplicates: Annotated[Duplicates, DUPLICATES_OPT] = Duplicates("error"),
    run_out: Annotated[Optional[Path], typer.Option("--run-out", help="Also write the TREC run here.")] = None,
    rebuild: Annotated[bool, typer.Option(help="Rebuild the cached index.")] = False,
    format: Annotated[TableFormat, typer.Option("--format", help="table or json.")] = TableFormat.table,
    query_ids: Annotated[CollectionQueryIds, typer.Option("--query-ids", help="A folder's queries: given ids, position (1, 2, ... in file order, as Cranfield's cranqrel numbers them) or auto (position when the qrels number the queries so).")] = CollectionQueryIds("auto"),
    query_id_field: Annotated[Optional[str], QUERY_ID_FIELD_OPT] = None,
    query_text_fields: Annotated[Optional[str], QUERY_TEXT_FIELDS_OPT] = None,
    quiet: Annotated[bool, QUIET_OPT] = False,
    backend: Annotated[Optional[BackendName], BACKEND_OPT] = None,
    cluster: Annotated[Optional[str], CLUSTER_OPT] = None,
    shards: Annotated[Optional[int], SHARDS_OPT] = None,
    rm3: Annotated[bool, RM3_OPT] = False,
    bo1: Annotated[bool, BO1_OPT] = False,
    rocchio: Annotated[bool, ROCCHIO_OPT] = False,
    fb_docs: Annotated[Optional[int], FB_DOCS_OPT] = None,
    fb_terms: Annotated[Optional[int], FB_TERMS_OPT] = None,
    original_query_weight: Annotated[Optional[float], OQW_OPT] = None,
    compare: Annotated[bool, typer.Option("--compare", help="With a feedback method: BM25, BM25 with feedback and their reciprocal rank fusion, every pair tested (--test, --correction), as a table with superscripts.")] = False,
    test: Annotated[str, typer.Option("--test", help="--compare's significance test (compare --test's names).")] = "t",
    correction: Annotated[str, typer.Option("--correction", help="--compare's correction: none, bonferroni, holm, bh.")] = "holm",
    compare_format: Annotated[str, typer.Option("--compare-format", help="--compare's table: table, markdown, latex or json.")] = "table",
) -> None:
    """Index a collection (cached), run every judged query, evaluate, and print the measures.

    A folder's files are found by their names and said in a note; when several files could play a part,
    --docs, --queries or --qrels chooses.

    Example: bm25lab experiment cranfield --k1 1.2 --b 0.75
    Example: bm25lab experiment nfcorpus/test --queries test.titles.queries --qrels test.3-2-1.qrel
    Example: bm25lab experiment cranfield --rm3 --compare
    """
    from ..evaluation import report, write_run
    from ..experiments import Reading, experiment as run_experiment, open_collection
    from .evaluate_cmds import render_results
    from .inputs import check_file

    feedback = chosen_feedback(rm3, bo1, rocchio, fb_docs, fb_terms, original_query_weight)
    if compare and feedback is None:
        raise ParameterError("--compare compares BM25 with feedback: give --rm3, --bo1 or --rocchio")
    if stopwords is not None:
        check_file(stopwords)
    fields = {"query_id_field": query_id_field, "query_text_fields": query_text_fields}
    files = {"docs": docs, "queries": queries, "qrels": qrels}
    reading = Reading(id_field=id_field, text_fields=text_fields, title_field=title_field,
                      duplicates=duplicates.value)
    collection = open_collection(corpus, query_ids=query_ids.value, **fields, **files, reading=reading)
    tokenizer = make_tokenizer(language or Language(collection.language), stem, stopwords, None)
    with progress_bars(quiet) as bars:
        done = run_experiment(corpus, variant=variant.value, k1=k1, b=b, delta=delta, k3=k3, measures=measure, k=k,
                              tokenizer=tokenizer, rebuild=rebuild, backend=backend_name(backend),
                              query_ids=query_ids.value, **fields, **files, reading=reading,
                              index_progress=bars.documents(f"indexing {collection.name}", collection.count, lazy=True),
                              search_progress=bars.queries(), cluster=cluster, shards=shards,
                              feedback=None if compare else feedback, where=where or None,
                              where_not=where_not or None)
    if Path(corpus).is_dir():  # said once they are read: an error in one of them is one line of its own
        note(f"{corpus}: " + ", ".join(f"{role} {path.relative_to(corpus) if path.is_relative_to(corpus) else path}"
                                       for role, path in collection.files.items()))
    if compare:
        _render_comparison(done, feedback, measure, test, correction, compare_format)
        return
    if run_out is not None:
        write_run(done.results, run_out, tag=f"bm25lab-{variant.value}")
    if format is TableFormat.json:
        document = json.loads(report.to_json([(collection.name, done.evaluation)], per_query=True))
        document["files"] = {role: str(path) for role, path in collection.files.items()}
        typer.echo(json.dumps(document, indent=1, ensure_ascii=False))
        return
    render_results([(collection.name, done.evaluation)], format.value, per_query=False)
    say(f"{collection.name}: {done.index.num_docs:,} documents ({'cached index' if done.cached else 'indexed'}), "
        f"{len(done.results):,} judged queries, {variant.value} k1={k1:g} b={b:g}"
        f"{'' if k3 is None else f' k3={k3:g}'}, k={k}, {done.seconds:.1f} s", stderr=True)


def _render_comparison(done, feedback, measures, test: str, correction: str, format: str) -> None:  # type: ignore[no-untyped-def]
    from ..evaluation.pairwise import TEXT_RENDERERS, to_rich_table
    from ..experiments import feedback_comparison

    renderers = {"table": None, **TEXT_RENDERERS}
    if format not in renderers:
        raise ParameterError(f"--compare-format {format!r}: use {', '.join(renderers)}")
    result = feedback_comparison(done, feedback, measures, test=test, correction=correction)
    if format == "table":
        console().print(to_rich_table(result.report))
    else:
        typer.echo(renderers[format](result.report), nl=False)
