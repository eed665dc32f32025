"""``bm25lab serve``: the indexes behind an HTTP JSON API and a web page (the ``serve`` extra: FastAPI
and uvicorn, imported only here).

    from bm25lab.serve import ServeConfig, create_app, running
    app = create_app(ServeConfig(indexes=(("cran", Path("cran-idx")),)))
    with running(app) as url:            # uvicorn on 127.0.0.1, a free port, in a thread
        ...                              # GET {url}/search?q=boundary+layer

Modules: ``config`` (what is served, the limits), ``indexes`` (each index at its latest committed
state), ``app`` (the API and the page), ``server`` (uvicorn: in the foreground for the command, in a
thread for tests and benchmarks), ``static`` (the page's files, shipped with the package: no CDN).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..engine.lazy import lazy_exports

_EXPORTS = {
    "Limits": ".config",
    "ServeConfig": ".config",
    "create_app": ".app",
    "running": ".server",
    "serve": ".server",
}
__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # pragma: no cover
    from .app import create_app
    from .config import Limits, ServeConfig
    from .server import running, serve

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
