"""The HTTP API and the page, on FastAPI: :func:`create_app` of a :class:`~.config.ServeConfig`.

    GET  /search?q=boundary+layer&k=10&where=year>=1990   one query: {"hits": [{"rank", "doc_id", "score",
                                                          "title", "metadata", "snippet"?}], ...}
    POST /search          a batch: {"queries": {"q1": "..."}, "k": 100, ...} -> {"results": {"q1": [...]}}
    GET  /documents/{id}  a stored document; GET /info, GET /indexes: what is served
    POST /documents, DELETE /documents/{id}: writes, only with --allow-writes and the token
    GET  /evaluation/sources, GET /evaluation?run=..&qrels=..: the evaluation page's table and curve
    GET  /  the page; GET /docs  the API's reference (from GET /openapi.json); no file from elsewhere

Every search parameter of the library (``variant``, ``k1``, ``b``, ``delta``, ``k3``, ``field_weights``,
``field_b``, ``where``, ``where_not``) is a parameter here, checked by the library: a search answers
the very hits and scores ``bm25lab search --format json`` prints. Bad requests are 4xx with
``{"error": "one line"}``: malformed JSON, a field or parameter the API does not know, a wrong type,
a k out of ``1..max_k``, a body over ``max_body_bytes`` (413), a bad parameter or filter (400), an
unknown index or document (404), a request that runs past ``timeout_seconds`` (503). Never a 500 for
anything a client sends.
"""

import functools
import math
import secrets
import threading
import time
from pathlib import Path
from typing import Any, Annotated, Callable, Optional, Union

import anyio
import anyio.to_thread
from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import __version__
from ..engine.errors import BM25LabError, IndexFormatError, IndexLockedError, InputError, ParameterError
from ..engine.filters import GRAMMAR
from ..engine.scoring import DEFAULT_B, DEFAULT_K1, DEFAULT_VARIANT, VARIANTS
from .config import Limits, ServeConfig
from .indexes import Catalogue, ServedIndex

__all__ = ["create_app"]

STATIC = Path(__file__).resolve().parent / "static"
DEFAULT_MEASURES_SHOWN = ("nDCG@10", "AP", "P@10", "R@100", "RR")
MAX_MEASURES = 50

Where = Union[dict[str, Any], list[str], str, None]


class ApiError(Exception):
    """A request the API refuses: its status and one line saying why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


# ---------------------------------------------------------------------------------------------
# Request bodies: every field known, nothing else accepted


class SearchParameters(BaseModel):
    """The parameters of a search, as the library takes them."""

    model_config = ConfigDict(extra="forbid")

    variant: str = Field(DEFAULT_VARIANT, description=f"BM25 variant: {', '.join(VARIANTS)}")
    k1: float = DEFAULT_K1
    b: float = DEFAULT_B
    delta: Optional[float] = None
    k3: Optional[float] = None
    field_weights: Union[dict[str, float], str, None] = Field(None, description="BM25F: title=3,text=1")
    field_b: Union[dict[str, float], str, None] = None
    where: Where = Field(None, description="Metadata filter: {'year': {'>=': 1990}} or strings: " + GRAMMAR)
    where_not: Where = None


class BatchSearch(SearchParameters):
    """``POST /search``: many queries at once."""

    index: Optional[str] = Field(None, description="The served index's name (default: the first)")
    queries: Union[dict[str, str], list[str]] = Field(description="{qid: text}, or texts numbered 0, 1, ...")
    k: int = Field(10, ge=1, description="Results per query, at most the server's max_k")
    titles: bool = Field(False, description="Add each hit's title")


class NewDocuments(BaseModel):
    """``POST /documents``: documents as JSON objects (``id`` and ``text``, optional ``title``, any other
    key kept as metadata), each replacing a document of the same id."""

    model_config = ConfigDict(extra="forbid")

    documents: list[dict[str, Any]]


# ---------------------------------------------------------------------------------------------
# The app


def create_app(config: ServeConfig) -> FastAPI:
    """The API and the page over ``config``'s indexes (each loaded and checked now)."""
    catalogue = Catalogue(config.indexes, dict(config.runs), dict(config.qrels), config.backend)
    limits = config.limits
    writing = threading.Lock()  # this server's writes one at a time (another process's: the engine's lock)
    app = FastAPI(title="bm25lab", version=__version__, docs_url=None, redoc_url=None,
                  description="BM25 search over the served indexes, with metadata filters; the evaluation "
                              "of runs against qrels. " + __doc__.split("\n\n")[2].replace("\n", " ").replace("``", ""))
    app.state.catalogue = catalogue
    app.state.config = config
    app.add_middleware(BodyLimit, limit=limits.max_body_bytes)
    _add_error_handlers(app)

    async def work(function: Callable[..., Any], *args: Any) -> Any:
        """``function(*args)`` on a worker thread, given up (503) past the time limit."""
        try:
            with anyio.fail_after(limits.timeout_seconds):
                return await anyio.to_thread.run_sync(functools.partial(function, *args), abandon_on_cancel=True)
        except TimeoutError:
            raise ApiError(503, f"the request took longer than {limits.timeout_seconds:g} s") from None

    def served(index: Optional[str]) -> ServedIndex:
        try:
            return catalogue.index(index)
        except LookupError as exc:
            raise ApiError(404, str(exc)) from None

    # ------------------------------------------------------------------ searching
    @app.get("/search", summary="Search one query", response_description="The hits, best first")
    async def search_one(
        request: Request,
        q: Annotated[str, Query(description="The query text", max_length=limits.max_query_chars)],
        k: Annotated[int, Query(ge=1, description="Hits per page")] = 10,
        offset: Annotated[int, Query(ge=0, description="Hits to skip (paging): ranks offset+1..offset+k")] = 0,
        index: Annotated[Optional[str], Query(description="The served index's name (default: the first)")] = None,
        variant: Annotated[str, Query(description=f"BM25 variant: {', '.join(VARIANTS)}")] = DEFAULT_VARIANT,
        k1: Annotated[float, Query(description="Term frequency saturation")] = DEFAULT_K1,
        b: Annotated[float, Query(description="Length normalisation, 0..1")] = DEFAULT_B,
        delta: Annotated[Optional[float], Query(description="delta of bm25l and bm25+")] = None,
        k3: Annotated[Optional[float], Query(description="Saturation of repeated query terms")] = None,
        field_weights: Annotated[Optional[str], Query(description="BM25F: title=3,text=1")] = None,
        field_b: Annotated[Optional[str], Query(description="BM25F: each field's b, title=0.5,text=0.75")] = None,
        where: Annotated[Optional[list[str]], Query(description="A condition (repeatable): " + GRAMMAR)] = None,
        where_not: Annotated[Optional[list[str]], Query(description="A condition none may meet (repeatable)")] = None,
        snippets: Annotated[bool, Query(description="Add a snippet with the query's terms highlighted")] = False,
    ) -> JSONResponse:
        _known_parameters(request, search_one)
        _check_k(offset + k, limits, "offset + k")
        target = served(index)
        parameters = dict(variant=variant, k1=k1, b=b, delta=delta, k3=k3, field_weights=field_weights,
                          field_b=field_b, where=where or None, where_not=where_not or None)
        return JSONResponse(await work(_search_one, target, q, k, offset, parameters, snippets))

    @app.post("/search", summary="Search a batch of queries")
    async def search_batch(body: BatchSearch) -> JSONResponse:
        _check_k(body.k, limits, "k")
        if len(body.queries) > limits.max_queries:
            raise ApiError(422, f"at most {limits.max_queries:,} queries a batch, got {len(body.queries):,}")
        too_long = [q for q in (body.queries.values() if isinstance(body.queries, dict) else body.queries)
                    if len(q) > limits.max_query_chars]
        if too_long:
            raise ApiError(422, f"a query holds at most {limits.max_query_chars:,} characters")
        target = served(body.index)
        parameters = body.model_dump(exclude={"index", "queries", "k", "titles"})
        return JSONResponse(await work(_search_batch, target, body.queries, body.k, parameters, body.titles))

    # ------------------------------------------------------------------ what is served
    @app.get("/indexes", summary="The served indexes")
    async def list_indexes() -> JSONResponse:
        rows = await work(lambda: [_summary(s) for s in catalogue.indexes.values()])
        return JSONResponse({"default": catalogue.default, "indexes": rows})

    @app.get("/info", summary="One index's facts, its metadata keys and the server's limits")
    async def info(request: Request, index: Optional[str] = None) -> JSONResponse:
        _known_parameters(request, info)
        target = served(index)
        return JSONResponse(await work(_info, target, limits, config.allow_writes))

    @app.get("/documents/{doc_id:path}", summary="A stored document")
    async def document(request: Request, doc_id: str, index: Optional[str] = None) -> JSONResponse:
        _known_parameters(request, document)
        target = served(index)
        found = await work(lambda: target.current().document(doc_id))
        if found is None:
            raise ApiError(404, f"no document {doc_id!r} in {target.name}")
        return JSONResponse({"index": target.name, "doc_id": found.id, "title": found.title, "text": found.text,
                             "metadata": dict(found.metadata)})

    # ------------------------------------------------------------------ writes (behind the token)
    def writer(authorization: Annotated[Optional[str], Header(description="Bearer TOKEN")] = None) -> None:
        if not config.allow_writes:
            raise ApiError(403, "this server is read-only (start it with --allow-writes to add and delete)")
        scheme, _, given = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not given or not secrets.compare_digest(given.encode(), config.token.encode()):
            raise ApiError(401, "writes need the server's token: Authorization: Bearer TOKEN")

    @app.post("/documents", summary="Add documents (replacing those of the same ids)", dependencies=[Depends(writer)])
    async def add(body: NewDocuments, index: Optional[str] = None) -> JSONResponse:
        if len(body.documents) > limits.max_documents:
            raise ApiError(422, f"at most {limits.max_documents:,} documents a request")
        target = served(index)

        def commit() -> dict[str, Any]:
            with writing:
                change = target.growth().add_documents(target.path, body.documents, workers=1, verify=False)
            target.current()
            return {"index": target.name, **_change(change)}

        return JSONResponse(await work(commit))

    @app.delete("/documents/{doc_id:path}", summary="Delete a document", dependencies=[Depends(writer)])
    async def delete(doc_id: str, index: Optional[str] = None) -> JSONResponse:
        target = served(index)

        def commit() -> dict[str, Any]:
            if target.current().document(doc_id) is None:
                raise ApiError(404, f"no document {doc_id!r} in {target.name}")
            with writing:
                change = target.growth().delete_documents(target.path, [doc_id], verify=False)
            target.current()
            return {"index": target.name, **_change(change)}

        return JSONResponse(await work(commit))

    # ------------------------------------------------------------------ evaluation
    @app.get("/evaluation/sources", summary="The runs and qrels the server offers")
    async def evaluation_sources() -> JSONResponse:
        return JSONResponse({"runs": list(catalogue.runs), "qrels": list(catalogue.qrels),
                             "measures": list(DEFAULT_MEASURES_SHOWN)})

    @app.get("/evaluation", summary="A run evaluated against qrels: means, per query, precision-recall curve")
    async def evaluation(
        request: Request,
        run: str,
        qrels: str,
        measure: Annotated[Optional[list[str]], Query(description="Measure (repeatable): nDCG@10, AP, P.5,10, ...")]
        = None,
    ) -> JSONResponse:
        _known_parameters(request, evaluation)
        measures = list(measure or DEFAULT_MEASURES_SHOWN)
        if len(measures) > MAX_MEASURES:
            raise ApiError(422, f"at most {MAX_MEASURES} measures")
        return JSONResponse(await work(_evaluation, catalogue, run, qrels, measures))

    # ------------------------------------------------------------------ the page and the API's reference
    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    @app.get("/docs", include_in_schema=False)
    async def reference() -> FileResponse:
        return FileResponse(STATIC / "api.html")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app


# ---------------------------------------------------------------------------------------------
# The work of each request (on a worker thread)


def _search_one(target: ServedIndex, query: str, k: int, offset: int, parameters: dict[str, Any],
                snippets: bool) -> dict[str, Any]:
    index = target.current()
    started = time.perf_counter()
    hits = index.search(query, k=offset + k, **parameters)
    took = time.perf_counter() - started
    terms = set(index.tokenizer.tokenize(query)) if snippets else set()
    rows = []
    for rank, hit in enumerate(hits[offset:offset + k], offset + 1):
        document = hit.document
        row: dict[str, Any] = {"rank": rank, "doc_id": hit.doc_id, "score": hit.score,
                               "title": document.title if document else "",
                               "metadata": dict(document.metadata) if document else {}}
        if snippets:
            row["snippet"] = _snippet(document.text if document else "", terms, index.tokenizer)
        rows.append(row)
    return {"index": target.name, "query": query, "k": k, "offset": offset, "more": len(hits) == offset + k,
            "took_ms": round(took * 1000, 3), "where": _shown_filter(parameters), "hits": rows}


def _search_batch(target: ServedIndex, queries: dict[str, str] | list[str], k: int, parameters: dict[str, Any],
                  titles: bool) -> dict[str, Any]:
    index = target.current()
    started = time.perf_counter()
    results = index.search_many(queries, k=k, workers=1, **parameters)
    took = time.perf_counter() - started
    out = {}
    for qid, hits in results.items():
        rows = [{"rank": rank, "doc_id": doc_id, "score": score}
                for rank, (doc_id, score) in enumerate(zip(hits.doc_ids, hits.scores), 1)]
        if titles:
            for row, hit in zip(rows, hits):
                row["title"] = hit.title
        out[qid] = rows
    return {"index": target.name, "k": k, "took_ms": round(took * 1000, 3), "results": out}


def _snippet(text: str, terms: set[str], tokenizer: Any) -> dict[str, Any]:
    from ..cli.snippets import snippet_window

    window = snippet_window(text, terms, tokenizer)
    return {"text": window.text, "highlights": [list(span) for span in window.highlights]}


def _shown_filter(parameters: dict[str, Any]) -> dict[str, list[str]]:
    from ..engine.filters import Filter

    found = Filter.of(parameters.get("where"), parameters.get("where_not"))
    where, where_not = found.to_strings() if found is not None else ([], [])
    return {"where": where, "where_not": where_not}


def _summary(target: ServedIndex) -> dict[str, Any]:
    index = target.current()
    return {"name": target.name, "documents": index.num_docs, "terms": index.num_terms,
            "language": index.tokenizer.language, "shards": getattr(index, "num_shards", None)}


def _info(target: ServedIndex, limits: Limits, writes: bool) -> dict[str, Any]:
    facts = target.current().info().to_dict()
    del facts["path"]  # a folder of the server's machine: the name is what a client needs
    tokenizer = dict(facts["tokenizer"])
    tokenizer["stopwords"] = len(tokenizer["stopwords"])
    tokenizer["user_dict"] = tokenizer["user_dict"] is not None
    facts.update(name=target.name, tokenizer=tokenizer, metadata_keys=target.metadata_keys(),
                 variants=list(VARIANTS), where_grammar=GRAMMAR, writes=writes,
                 limits={name: getattr(limits, name) for name in limits.__dataclass_fields__})
    facts["fields"] = list(facts["fields"])
    return facts


def _change(change: Any) -> dict[str, int]:
    return {name: int(getattr(change, name)) for name in ("added", "replaced", "deleted", "documents", "segments")}


def _evaluation(catalogue: Catalogue, run_name: str, qrels_name: str, measures: list[str]) -> dict[str, Any]:
    from ..evaluation import evaluate
    from ..evaluation.evaluator import precision_recall_curve

    try:
        qrels, run = catalogue.qrel(qrels_name), catalogue.run(run_name)
    except LookupError as exc:
        raise ApiError(404, str(exc)) from None
    result = evaluate(qrels, run, measures)
    curve = precision_recall_curve(qrels, run)
    return {"run": run_name, "qrels": qrels_name, "measures": list(result.measures),
            "num_queries": result.num_queries, "missing_from_run": len(result.missing_from_run),
            "not_judged": len(result.not_judged), "mean": _finite(result.summary),
            "per_query": {qid: _finite(values) for qid, values in result.per_query.items()},
            "curve": {"recall": list(curve), "precision": [_number(v) for v in curve.values()]}}


def _number(value: Any) -> Any:
    """A JSON-able value: NaN and infinities as null (JSON has none)."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _finite(values: dict[str, Any]) -> dict[str, Any]:
    return {name: _number(value) for name, value in values.items()}


# ---------------------------------------------------------------------------------------------
# Checks, limits and errors


def _known_parameters(request: Request, endpoint: Callable[..., Any]) -> None:
    """A query parameter the endpoint does not take is a 422 naming it (FastAPI would ignore it)."""
    known = _parameter_names(endpoint)
    unknown = sorted(set(request.query_params) - known)
    if unknown:
        raise ApiError(422, f"unknown parameter {unknown[0]!r}; this endpoint takes: {', '.join(sorted(known))}")


@functools.lru_cache(maxsize=None)
def _parameter_names(endpoint: Callable[..., Any]) -> frozenset[str]:
    import inspect

    return frozenset(inspect.signature(endpoint).parameters) - {"request"}


def _check_k(k: int, limits: Limits, what: str) -> None:
    if k > limits.max_k:
        shown = f"{k:,}" if k < 10 ** 15 else "more"
        raise ApiError(422, f"{what} must be at most {limits.max_k:,} (this server's max_k), got {shown}")


_STATUS: tuple[tuple[type[Exception], int], ...] = (
    (ParameterError, 400), (InputError, 400), (IndexLockedError, 409), (IndexFormatError, 503),
    (BM25LabError, 400),
)
"""The library's errors as HTTP statuses, most specific first (an evaluation's MeasureError and
EvaluationError are BM25LabErrors: 400)."""


def _error(status: int, message: str, **more: Any) -> JSONResponse:
    return JSONResponse({"error": message, **more}, status_code=status)


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return _error(exc.status, exc.message)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        details = [{key: value for key, value in error.items() if key not in ("input", "url", "ctx")}
                   for error in exc.errors()[:20]]
        first = details[0] if details else {"loc": (), "msg": "invalid request"}
        if first.get("type") == "json_invalid":
            return _error(422, f"the body is not valid JSON (at character {first['loc'][-1]})",
                          detail=jsonable_encoder(details))
        where = ".".join(str(part) for part in first.get("loc", ())[1:]) or str(first.get("loc", ("request",))[0])
        return _error(422, f"{where}: {first.get('msg', 'invalid')}", detail=jsonable_encoder(details))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, str(exc.detail))

    for kind, status in _STATUS:
        app.add_exception_handler(kind, functools.partial(_library_error, status))


async def _library_error(status: int, request: Request, exc: Exception) -> JSONResponse:
    text = str(exc).strip().splitlines()
    return _error(status, text[0] if text else type(exc).__name__)


class BodyLimit:
    """Reads a request's body up to ``limit`` bytes before the app sees it: a body past it (by its
    Content-Length or as it comes) is answered 413 and read no further."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None:
            try:
                length = int(declared)
            except ValueError:
                length = -1
            if length < 0:
                await _send(send, 400, "a bad Content-Length")
                return
            if length > self.limit:
                await _send(send, 413, f"the body holds more than {self.limit:,} bytes")
                return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            body += message.get("body", b"")
            if len(body) > self.limit:
                await _send(send, 413, f"the body holds more than {self.limit:,} bytes")
                return
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


async def _send(send: Send, status: int, message: str) -> None:
    import json

    payload = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": payload})
