"""`bm25lab serve`: the indexes behind an HTTP JSON API and a web page (:mod:`bm25lab.serve`; FastAPI and
uvicorn, the ``serve`` extra, are imported only when the command runs)."""
from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from .common import BACKEND_OPT, BackendName, backend_name, console, handles_errors, note

TOKEN_VARIABLE = "BM25LAB_TOKEN"
EXTRA_HINT = "bm25lab serve needs the serve extra: pip install 'bm25lab[serve]'"


def named(spec: str, what: str) -> tuple[str, Path]:
    """``NAME=PATH`` or ``PATH`` (named by its file or folder name) as (name, path)."""
    name, sep, path = spec.partition("=")
    if not sep or not name or "/" in name:
        name, path = Path(spec).name or spec, spec
    return name, Path(path)


def _evaluation_files(runs: list[str], qrels: list[str], folder: Optional[Path]) -> tuple[list, list]:
    """The runs and qrels offered: those named, and a folder's files (a name holding "qrel" is qrels, any
    other file a run); a bundled collection's name as qrels is its qrels."""
    from ..engine.errors import InputError
    from .inputs import bundled

    found_runs = [named(spec, "run") for spec in runs]
    found_qrels = []
    for spec in qrels:
        collection = bundled(spec)
        if collection is not None:
            from .. import corpora

            found_qrels.append((collection, Path(corpora.get(collection).qrels_path)))
        else:
            found_qrels.append(named(spec, "qrels"))
    if folder is not None:
        if not folder.is_dir():
            raise InputError("not a folder", folder)
        for path in sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")):
            (found_qrels if "qrel" in path.name.lower() else found_runs).append((path.name, path))
    for _, path in found_runs + found_qrels:
        if not path.is_file():
            raise InputError("no such file", path)
    return found_runs, found_qrels


@handles_errors
def serve(
    directories: Annotated[list[str], typer.Argument(metavar="DIR...", help="Index folders to serve (ordinary or sharded), each named by its folder's name or NAME=DIR; the first is the default.")],
    host: Annotated[str, typer.Option(help="Address to listen on (127.0.0.1: this machine only).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (0: a free one, printed).", min=0, max=65535)] = 8000,
    runs: Annotated[Optional[list[str]], typer.Option("--runs", help="A run file the evaluation page offers (repeatable; NAME=FILE).")] = None,
    qrels: Annotated[Optional[list[str]], typer.Option("--qrels", help="Qrels the evaluation page offers (repeatable; NAME=FILE, or a bundled collection's name).")] = None,
    eval_dir: Annotated[Optional[Path], typer.Option("--eval-dir", help="A folder of runs and qrels to offer (a file whose name holds 'qrel' is qrels, any other a run).")] = None,
    allow_writes: Annotated[bool, typer.Option("--allow-writes", help=f"Allow POST /documents and DELETE /documents/ID with the token (${TOKEN_VARIABLE}, else one is made and printed).")] = False,
    max_k: Annotated[int, typer.Option("--max-k", help="Most results one request may ask for.", min=1)] = 1000,
    max_body: Annotated[int, typer.Option("--max-body", help="Largest request body, in bytes.", min=1)] = 1 << 20,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds a request may take before it is answered 503.", min=0.001)] = 30.0,
    backend: Annotated[Optional[BackendName], BACKEND_OPT] = None,
) -> None:
    """Serve indexes over HTTP: a JSON API (GET/POST /search, /documents/ID, /info; reference at /docs)
    and a search page at /. Read-only unless --allow-writes. Ctrl-C stops it.

    Example: bm25lab serve cran-idx --runs bm25.run --qrels cranfield
    """
    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        from ..engine.errors import BM25LabError

        raise BM25LabError(EXTRA_HINT) from None
    from ..serve import Limits, ServeConfig, create_app
    from ..serve import serve as run_server

    found_runs, found_qrels = _evaluation_files(runs or [], qrels or [], eval_dir)
    token = os.environ.get(TOKEN_VARIABLE) or (secrets.token_urlsafe(24) if allow_writes else None)
    config = ServeConfig(indexes=tuple(named(d, "index") for d in directories), runs=tuple(found_runs),
                         qrels=tuple(found_qrels), allow_writes=allow_writes, token=token,
                         backend=backend_name(backend),
                         limits=Limits(max_k=max_k, max_body_bytes=max_body, timeout_seconds=timeout))
    app = create_app(config)

    def ready(url: str) -> None:
        names = ", ".join(name for name, _ in config.indexes)
        console().print(f"serving {names} at {url} (the page at {url}/, the API's reference at {url}/docs); "
                        f"Ctrl-C stops", soft_wrap=True)
        sys.stdout.flush()  # the address, for whoever reads this output through a pipe
        if allow_writes and not os.environ.get(TOKEN_VARIABLE):
            note(f"writes need the header 'Authorization: Bearer {token}' (set ${TOKEN_VARIABLE} to choose it)")
        if host not in ("127.0.0.1", "localhost", "::1"):
            note(f"listening on {host}: other machines can reach this server")

    run_server(app, host, port, ready=ready)
