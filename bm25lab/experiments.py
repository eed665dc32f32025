"""Experiments end to end: index a collection (cached), search its judged queries, evaluate the run.

    result = experiment("cranfield", k1=1.2, b=0.75)
    result.evaluation.mean["nDCG@10"], result.results["1"][0].doc_id

A collection is a bundled one by name (:mod:`bm25lab.corpora`) or a folder holding a documents
file, a queries file and a qrels file (:func:`open_collection`). Its index is built once per
tokenizer configuration and kept in the user's cache directory (:func:`cached_index`). This module
sits above the engine, the evaluation and the corpora, and is the only one that uses all three.
"""
from __future__ import annotations

import hashlib
import json
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from .engine.errors import IndexFormatError, InputError, ParameterError
from .engine.scoring import DEFAULT_B, DEFAULT_K1, DEFAULT_VARIANT

if TYPE_CHECKING:
    from distributed import Client

    from .engine import Index, Tokenizer
    from .engine.feedback import Feedback
    from .engine.records import Document, Results
    from .evaluation.evaluator import EvaluationResult
    from .engine.filters import WhereSpec
    from .engine.scoring import Params

__all__ = ["Collection", "ExperimentResult", "FeedbackComparison", "Reading", "cached_index", "experiment",
           "feedback_comparison", "find_files", "open_collection", "titled"]

# the names of a collection folder's files, as shell patterns (any case) on a file's name or its path in the folder,
# in the order they are looked for; any format the readers detect: docs.jsonl, corpus.jsonl.gz, docs.trec, a SMART
# collection's cran.all.1400 or CISI.ALL, NPL's doc-text, a BEIR folder's corpus.jsonl, documents in corpus/
DOCUMENT_FILES = ("docs.*", "corpus.*", "documents.*", "collection.*", "*docs*", "*corpus*", "doc-text*", "*.all",
                  "*.all.*", "corpus/*", "docs/*", "documents/*")
QUERY_FILES = ("queries.*", "topics.*", "topics", "*.qry", "query-text*", "*quer*", "*topic*")
QRELS_FILES = ("qrels.*", "qrels", "*.rel", "*qrel*", "*.qrels", "rlv-ass*")
_NOT_DATA = ("*.md", "*.txt.readme", "*.readme", "readme*", "licen[cs]e*", "meta.json", "*.py", "*.sh")
_DEPTH = 2  # a folder's files are looked for in it and in its subfolders, this deep
ROLES = {"documents": ("--docs", DOCUMENT_FILES), "qrels": ("--qrels", QRELS_FILES),
         "queries": ("--queries", QUERY_FILES)}
"""Each file of a collection folder: the option that chooses it and the names that find it, in the order looked for."""
TELLING = {"documents": ("*docs*", "*corpus*"), "queries": ("*quer*", "*topic*", "*.qry"), "qrels": ("*qrel*",)}
"""Names that tell a file's part: a file named so is never taken for another part (test.all.queries is no corpus)."""


@dataclass(frozen=True)
class Reading:
    """How a collection's documents are read (:func:`~bm25lab.engine.sources.read_documents`' options, and the
    field that holds a document's title): part of the cached index's key."""

    format: str | None = None
    id_field: str | None = None
    text_fields: str | Sequence[str] | None = None
    title_field: str | None = None
    duplicates: str = "error"

    def chosen(self) -> bool:
        return self != Reading()

    def key(self) -> list[Any]:
        fields = self.text_fields if self.text_fields is None or isinstance(self.text_fields, str) else \
            ",".join(self.text_fields)
        return [self.format, self.id_field, fields, self.title_field, self.duplicates]


@dataclass(frozen=True)
class Collection:
    """What an experiment needs of a collection, bundled or given as a folder."""

    name: str
    language: str  # the tokenizer language that suits it: "en", "zh" or "auto"
    documents: Callable[[], Iterator["Document"]]
    queries: Callable[[], dict[str, str]]  # the judged queries, {qid: text}
    qrels_path: Path | None  # None: the qrels come from ``load_qrels``
    fingerprint: str  # of the documents file and how it is read: a changed file gets a new cached index
    files: dict[str, Path] = field(default_factory=dict)  # documents, queries, qrels: the files used
    count: Callable[[], int | None] | None = None  # counts the documents (for a progress display)
    load_qrels: Callable[[], Any] | None = None  # an ir_datasets collection's qrels

    def qrels(self) -> Any:
        """The collection's judgments."""
        from .evaluation import read_qrels

        return self.load_qrels() if self.load_qrels is not None else read_qrels(self.qrels_path)


def open_collection(spec: str | Path, *, query_ids: str = "auto", query_id_field: str | None = None,
                    query_text_fields: str | Sequence[str] | None = None, docs: str | Path | None = None,
                    queries: str | Path | None = None, qrels: str | Path | None = None,
                    reading: Reading = Reading()) -> Collection:
    """A bundled collection by name, or a folder with a documents, a queries and a qrels file, each
    found by its name (:data:`DOCUMENT_FILES`, :data:`QUERY_FILES`, :data:`QRELS_FILES`, in the folder or
    its subfolders) or given (``docs``, ``queries``, ``qrels``: a path, relative to the folder or not), and
    read in the format its content shows (a raw SMART collection such as Cranfield's or CISI's files, a BEIR
    folder, TREC documents and topics, JSON queries...). Where several files could play one part, the choice
    is not made: an :class:`~bm25lab.engine.errors.InputError` lists them and names the option that chooses.
    ``reading`` says how the documents are read (fields, title, duplicates). ``query_ids="position"`` numbers
    the queries by their place in the file (Cranfield's ``cranqrel`` does); ``"auto"`` (the default) does so,
    with an :class:`~bm25lab.engine.errors.InputWarning`, when the qrels number their queries 1, 2, ... up
    to the file's count and the file's own ids are other numbers, else keeps the file's ids.
    ``query_id_field`` and ``query_text_fields`` name the fields of a folder's queries
    (:func:`~bm25lab.engine.sources.read_queries`' ``id_field`` and ``text_fields``)."""
    from . import corpora
    from .corpora.irds import is_irds

    if is_irds(spec) and not Path(spec).exists():
        if query_id_field is not None or query_text_fields is not None or query_ids != "auto":
            raise ParameterError(f"{spec} is an ir_datasets collection, whose queries keep their ids and fields")
        c = corpora.get(str(spec))
        return Collection(c.name, c.language, c.documents, c.judged_queries, None, c.fingerprint(), load_qrels=c.qrels)
    if str(spec) in corpora.names() and not Path(spec).exists():
        _check_bundled(str(spec), query_ids, query_id_field, query_text_fields, docs, queries, qrels, reading)
        c = corpora.get(str(spec))
        return Collection(c.name, c.language, c.documents, c.judged_queries, c.qrels_path, _fingerprint(c.docs_path),
                          {"documents": c.docs_path, "queries": c.queries_path, "qrels": c.qrels_path},
                          lambda: c.num_docs)
    folder = Path(spec)
    if not folder.is_dir():
        raise InputError(f"neither a bundled corpus ({', '.join(corpora.names())}) nor a folder", spec)
    files = find_files(folder, {"documents": docs, "queries": queries, "qrels": qrels})
    docs_path, queries_path, qrels_path = files["documents"], files["queries"], files["qrels"]

    def read_docs() -> Iterator[Document]:
        from .engine.sources import read_documents

        read = read_documents(docs_path, format=reading.format, id_field=reading.id_field,
                              text_fields=reading.text_fields, duplicates=reading.duplicates)
        return read if reading.title_field is None else titled(read, reading.title_field)

    def judged() -> dict[str, str]:
        from .engine.sources import read_queries
        from .evaluation import read_qrels

        judged_ids = set(read_qrels(qrels_path).qids)
        fields = {"id_field": query_id_field, "text_fields": query_text_fields}
        every = read_queries(queries_path, ids="given" if query_ids == "auto" else query_ids, **fields)
        if query_ids == "auto" and _by_position(every, judged_ids):
            import warnings

            from .engine.errors import InputWarning

            warnings.warn(InputWarning(f"{qrels_path.name} numbers its queries 1..{len(every)} and "
                                       f"{queries_path.name} has other ids: the queries are numbered by their "
                                       f"position in the file (--query-ids given keeps the file's ids)"), stacklevel=2)
            every = read_queries(queries_path, ids="position", **fields)
        chosen = {q: t for q, t in every.items() if q in judged_ids}
        if not chosen:
            from .evaluation.evaluator import _numbering_hint

            raise InputError(f"no query of {queries_path.name} is judged in {qrels_path.name} (queries "
                             f"{', '.join(list(every)[:3])}, ...; qrels {', '.join(sorted(judged_ids)[:3])}, ...)."
                             f"{_numbering_hint(every, judged_ids)}", folder)
        return chosen

    fingerprint = hashlib.sha256(json.dumps([_fingerprint(docs_path), reading.key()]).encode()).hexdigest()[:16]
    def count() -> int | None:
        from .engine.sources import read_documents

        return read_documents(docs_path, format=reading.format, id_field=reading.id_field,
                              text_fields=reading.text_fields).count()

    return Collection(folder.resolve().name, "auto", read_docs, judged, qrels_path, fingerprint, files, count)


def _check_bundled(name: str, query_ids: str, query_id_field: str | None, query_text_fields: Any,
                   docs: Any, queries: Any, qrels: Any, reading: Reading) -> None:
    """A bundled collection's files and their reading are fixed: the options for a folder's are refused."""
    if query_id_field is not None or query_text_fields is not None:
        raise ParameterError(f"{name} is a bundled collection: its queries' fields cannot be chosen "
                             f"(query_id_field, query_text_fields are for a folder's queries file)")
    if query_ids != "auto":
        raise ParameterError(f"{name} is a bundled collection, whose queries keep their ids: query_ids "
                             f"(--query-ids) is for a folder's queries file")
    if docs is not None or queries is not None or qrels is not None or reading.chosen():
        raise ParameterError(f"{name} is a bundled collection: its files and how they are read are fixed "
                             f"(--docs, --queries, --qrels and the documents' options are for a folder)")


def titled(documents: Any, title_field: str) -> Any:
    """``documents`` (a :class:`~bm25lab.engine.sources.Documents`) with each one's title taken from its field
    ``title_field`` (a metadata field: ``ajName`` of LeCaRD's candidates), the rest as they were."""
    return _Titled(documents, title_field)


class _Titled:
    """Documents whose title is one of their fields; counting and the duplicates' tally are the source's."""

    def __init__(self, documents: Any, title_field: str) -> None:
        self._documents, self._field = documents, title_field

    def __iter__(self) -> Iterator[Document]:
        from dataclasses import replace

        for doc in self._documents:
            metadata = dict(doc.metadata)
            title = metadata.pop(self._field, None)
            if title is None and doc.title:
                yield doc
                continue
            yield replace(doc, title="" if title is None else str(title), metadata=metadata)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._documents, name)


def _by_position(queries: dict[str, str], judged: set[str]) -> bool:
    """The qrels' query ids are among 1..n for the n queries of the file, whose own ids are other
    numbers reaching beyond n (Cranfield: 225 queries with ids 1..365, qrels numbering them 1..225)."""
    from .evaluation.evaluator import _numbering_hint

    return bool(_numbering_hint(list(queries), judged))


def _data_files(folder: Path) -> list[Path]:
    """The folder's files, and its subfolders' down to :data:`_DEPTH`, by path; hidden ones and notes left out."""
    from fnmatch import fnmatch

    found: list[Path] = []
    level = [folder]
    for _ in range(_DEPTH):
        below: list[Path] = []
        for directory in level:
            for path in sorted(directory.iterdir()):
                if path.name.startswith("."):
                    continue
                if path.is_dir():
                    below.append(path)
                elif path.is_file() and not any(fnmatch(path.name.lower(), skip) for skip in _NOT_DATA):
                    found.append(path)
        level = below
    return found


def find_files(folder: Path, given: dict[str, str | Path | None]) -> dict[str, Path]:
    """The documents, queries and qrels files of a collection folder: each one given (a path, relative to the
    folder or to the current directory) or the only file of the first kind of name that matches
    (:data:`ROLES`); a file given or found plays one part only. Several candidates of one kind are an
    :class:`InputError` in one line listing them and the options that choose."""
    from fnmatch import fnmatch

    files = _data_files(folder)
    chosen: dict[str, Path] = {}
    for role, path in given.items():
        if path is not None:
            chosen[role] = _given(folder, Path(path), ROLES[role][0])
    for role, (option, patterns) in ROLES.items():
        if role in chosen:
            continue
        telling = [p for other, names in TELLING.items() if other != role for p in names]
        left = [f for f in files if f not in chosen.values() and not any(fnmatch(f.name.lower(), p) for p in telling)]
        for pattern in patterns:
            matched = [f for f in left if fnmatch(f.name.lower(), pattern)
                       or fnmatch(f.relative_to(folder).as_posix().lower(), pattern)]
            if len(matched) == 1:
                chosen[role] = matched[0]
                break
            if matched:
                names = ", ".join(f.relative_to(folder).as_posix() for f in matched)
                raise InputError(f"{len(matched)} files could be the {role} ({names}): choose one with {option} FILE "
                                 f"(--docs, --queries and --qrels choose each file)", folder)
        else:
            raise InputError(f"no file named like the {role} ({', '.join(patterns)}): give it with {option} FILE",
                             folder)
    return {role: chosen[role] for role in ("documents", "queries", "qrels")}


def _given(folder: Path, path: Path, option: str) -> Path:
    for candidate in (folder / path, path):
        if candidate.is_file():
            return candidate
    raise InputError(f"{option}: no such file, in the folder or here", path)


def _fingerprint(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


def cached_index(collection: Collection, tokenizer: Tokenizer, *, rebuild: bool = False,
                 progress: Callable[[int], None] | None = None, backend: str | None = None,
                 shards: int | None = None, client: Client | None = None) -> tuple[Index, bool]:
    """The collection's index from the user's cache (built and saved there on first use, keyed by the
    documents' fingerprint, the tokenizer's configuration and the index format), and whether it
    came from the cache. A damaged cached index is rebuilt. With ``shards``, a sharded index of that
    many shards, built and searched on the Dask cluster of ``client`` when given
    (:mod:`bm25lab.distributed`), else in this process (:mod:`bm25lab.engine.shards`)."""
    from .engine import Index
    from .engine.storage import FORMAT_VERSION
    from .engine.tokenization import cache_dir

    key = hashlib.sha256(json.dumps([collection.fingerprint, tokenizer.config(), FORMAT_VERSION],
                                    sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]
    path = cache_dir() / "indexes" / f"{re.sub(r'[^A-Za-z0-9._-]', '_', collection.name)}-{key}"
    if shards is not None:
        return _cached_sharded(collection, tokenizer, path.with_name(f"{path.name}-{shards}-shards"), rebuild=rebuild,
                               progress=progress, backend=backend, shards=shards, client=client)
    if not rebuild and (path / "index.json").exists():
        try:
            return Index.load(path, backend=backend), True
        except IndexFormatError:
            shutil.rmtree(path, ignore_errors=True)  # a damaged cache entry (the cache's own folder) is rebuilt
    built = Index.build(collection.documents(), tokenizer=tokenizer, progress=progress, backend=backend)
    built.save(path, overwrite=True)
    return Index.load(path, backend=backend), False


def _cached_sharded(collection: Collection, tokenizer: Tokenizer, path: Path, *, rebuild: bool,
                    progress: Callable[[int], None] | None, backend: str | None, shards: int,
                    client: Client | None) -> tuple[Any, bool]:
    from .engine import shards as sharding

    def opened() -> Any:
        if client is None:
            return sharding.ShardedIndex.load(path, backend=backend)
        from .distributed import DistributedIndex

        return DistributedIndex(path, client, backend)

    if not rebuild and sharding.is_sharded(path):
        try:
            return opened(), True
        except IndexFormatError:
            shutil.rmtree(path, ignore_errors=True)  # a damaged cache entry (the cache's own folder) is rebuilt
    if client is None:
        sharding.build(collection.documents(), path, shards, tokenizer, overwrite=True, progress=progress,
                       backend=backend)
    else:
        from .distributed import build

        build(collection.documents(), path, shards=shards, client=client, tokenizer=tokenizer, overwrite=True,
              backend=backend, progress=progress)
    return opened(), False


@dataclass(frozen=True)
class ExperimentResult:
    """An experiment's index, search results and evaluation."""

    collection: Collection
    index: Index
    cached: bool  # whether the index came from the cache
    results: Results
    evaluation: EvaluationResult
    params: Params  # the search's, checked
    k: int
    seconds: float

    @property
    def variant(self) -> str:
        return self.params.variant

    @property
    def k1(self) -> float:
        return self.params.k1

    @property
    def b(self) -> float:
        return self.params.b


def experiment(spec: str | Path, *, variant: str = DEFAULT_VARIANT, k1: float = DEFAULT_K1, b: float = DEFAULT_B,
               delta: float | None = None, k3: float | None = None, measures: Sequence[str] | None = None, k: int = 1000,
               tokenizer: Tokenizer | None = None, rebuild: bool = False, backend: str | None = None,
               query_ids: str = "auto", query_id_field: str | None = None,
               query_text_fields: str | Sequence[str] | None = None,
               index_progress: Callable[[int], None] | None = None,
               search_progress: Callable[[int, int], None] | None = None,
               cluster: str | Client | None = None, shards: int | None = None, docs: str | Path | None = None,
               queries: str | Path | None = None, qrels: str | Path | None = None,
               reading: Reading = Reading(), params: Params | None = None,
               feedback: Feedback | None = None, where: WhereSpec = None,
               where_not: WhereSpec = None) -> ExperimentResult:
    """Index the collection ``spec`` (:func:`open_collection`; cached), search every judged query and
    evaluate the run with ``measures`` (default :data:`bm25lab.evaluation.measures.DEFAULT_MEASURES`)
    over every judged query. ``tokenizer`` defaults to ``Tokenizer(the collection's language)``;
    ``query_ids``, ``query_id_field``, ``query_text_fields``, ``docs``, ``queries``, ``qrels`` and ``reading``
    are :func:`open_collection`'s (a folder's files and how its documents are read); ``k3`` saturates repeated query terms
    (:func:`bm25lab.engine.scoring.query_term_weight`, None: off).

    ``cluster`` (an address of :data:`bm25lab.distributed.ADDRESS_FORMS`, or a Dask client) builds and
    searches a sharded index of ``shards`` shards (default: one per worker) on that cluster; ``shards``
    alone, a sharded index in this process. The results are those of one index. ``params``: the search's
    parameters as one value, instead of ``variant``, ``k1``, ``b``, ``delta`` and ``k3``. ``feedback``
    (:class:`~bm25lab.engine.feedback.Feedback`: RM3, Bo1, Rocchio) searches with pseudo-relevance feedback.
    ``where`` and ``where_not`` (or ``params.where``) search only the documents whose metadata pass them
    (:mod:`bm25lab.engine.filters`)."""
    from .engine import Tokenizer
    from .engine.filters import Filter
    from .engine.scoring import Params

    started = time.perf_counter()
    if params is None:
        params = Params(variant, k1, b, delta, k3, where=Filter.of(where, where_not))
    elif where is not None or where_not is not None:
        raise ParameterError("give the experiment's filter as params.where or as where=/where_not=, not both")
    collection = open_collection(spec, query_ids=query_ids, query_id_field=query_id_field,
                                 query_text_fields=query_text_fields, docs=docs, queries=queries, qrels=qrels,
                                 reading=reading)
    tokenizer = tokenizer or Tokenizer(collection.language)
    if cluster is None:
        index, cached = cached_index(collection, tokenizer, rebuild=rebuild, progress=index_progress, backend=backend,
                                     shards=shards)
        results = _search(index, collection.queries(), k, search_progress, params, feedback)
    else:
        from .distributed import connect, worker_count

        with connect(cluster) as client:
            count = shards or worker_count(client)
            index, cached = cached_index(collection, tokenizer, rebuild=rebuild, progress=index_progress,
                                         backend=backend, shards=count, client=client)
            results = _search(index, collection.queries(), k, search_progress, params, feedback)
    return _evaluated(collection, index, cached, results, measures, params.resolved(), k, started)


def _search(index: Any, queries: dict[str, str], k: int, progress: Callable[[int, int], None] | None, params: Params,
            feedback: Feedback | None) -> Results:
    """The queries' results: the index's own search, or with pseudo-relevance feedback."""
    if feedback is None:
        return index.search_many(queries, k=k, progress=progress, params=params)
    from .engine.feedback import search_many

    return search_many(index, queries, k, params, feedback)


@dataclass(frozen=True)
class FeedbackComparison:
    """BM25, BM25 with feedback and their fusion (reciprocal rank fusion) on one collection: each one's
    evaluation and the all-pairs significance report."""

    evaluations: dict[str, EvaluationResult]
    report: Any  # bm25lab.evaluation.pairwise.PairwiseReport
    results: dict[str, Any]


def feedback_comparison(done: ExperimentResult, feedback: Feedback, measures: Sequence[str] | None = None,
                        test: str = "t", correction: str = "holm", fusion: str = "rrf") -> FeedbackComparison:
    """Compare the experiment ``done`` (no feedback) with the same search under ``feedback`` and with the two
    runs fused (``fusion``, reciprocal rank fusion by default): each evaluated with ``measures``, every pair
    tested (:func:`bm25lab.evaluation.pairwise.all_pairs`)."""
    from .engine.feedback import search_many
    from .evaluation import evaluate
    from .evaluation.fusion import fuse
    from .evaluation.measures import DEFAULT_MEASURES
    from .evaluation.pairwise import all_pairs
    from .evaluation.ranking import Run

    names = ("bm25", f"bm25+{feedback.method}", f"{fusion}(bm25, bm25+{feedback.method})")
    expanded = search_many(done.index, done.collection.queries(), done.k, done.params, feedback)
    runs = {names[0]: Run.from_results(done.results), names[1]: Run.from_results(expanded)}
    runs[names[2]] = fuse([runs[names[0]], runs[names[1]]], fusion, depth=done.k)
    qrels = done.collection.qrels()
    chosen = list(measures or DEFAULT_MEASURES)
    evaluations = {name: evaluate(qrels, run, chosen, collection_size=done.index.num_docs) for name, run in runs.items()}
    report = all_pairs({name: e.per_query for name, e in evaluations.items()}, list(evaluations[names[0]].measures),
                       test=test, correction=correction)
    return FeedbackComparison(evaluations, report, runs)


def _evaluated(collection: Collection, index: Any, cached: bool, results: Results, measures: Sequence[str] | None,
               params: Params, k: int, started: float) -> ExperimentResult:
    from .evaluation import evaluate
    from .evaluation.measures import DEFAULT_MEASURES

    evaluation = evaluate(collection.qrels(), results, measures or DEFAULT_MEASURES,
                          collection_size=index.num_docs)  # TN, accuracy, FPR, specificity need it
    return ExperimentResult(collection, index, cached, results, evaluation, params, k, time.perf_counter() - started)
