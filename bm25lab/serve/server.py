"""Running the app on uvicorn: :func:`serve` in the foreground (the command), :func:`running` in a thread
(tests and benchmarks). Both listen on a socket bound here, so that port 0 means a free port, known
before the first request."""
from __future__ import annotations

import signal
import socket
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

__all__ = ["bind", "running", "serve"]


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (0: a free port), IPv6 for an address with a colon."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto named: asyncio turns Nagle's algorithm off only on sockets whose proto is IPPROTO_TCP, and a
    # keep-alive client then waited 40 ms (its delayed ACK) for every answer written in two parts
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except BaseException:
        sock.close()
        raise
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


def _server(app: Any, log_level: str) -> Any:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, whose SIGINT and SIGTERM end it gracefully, after which the command ends
        normally (uvicorn's own raises the signal again once it has stopped)."""

        @contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield  # a thread (running()) has no signals to take
                return
            before = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
            try:
                yield
            finally:
                for sig, handler in before.items():
                    signal.signal(sig, handler)

    config = uvicorn.Config(app, log_level=log_level, lifespan="off", access_log=False, timeout_graceful_shutdown=5)
    return Server(config)


def serve(app: Any, host: str = "127.0.0.1", port: int = 8000, ready: Callable[[str], None] | None = None,
          log_level: str = "warning") -> None:
    """Serve ``app`` on ``host``:``port`` until SIGINT or SIGTERM; ``ready`` is called with the URL once
    the socket listens."""
    sock = bind(host, port)
    try:
        server = _server(app, log_level)
        if ready is not None:
            ready(url_of(sock))
        server.run(sockets=[sock])
    finally:
        sock.close()


@contextmanager
def running(app: Any, host: str = "127.0.0.1", startup_seconds: float = 30.0) -> Iterator[str]:
    """``app`` served by uvicorn in a thread on ``host`` and a free port, for the ``with`` block's life:
    yields its URL, then stops the server and waits for the thread (nothing is left running)."""
    sock = bind(host, 0)
    server = _server(app, "warning")
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="bm25lab-serve", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + startup_seconds
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        yield url_of(sock)
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
