"""What a server serves and the limits of its requests (no web framework imported here)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Limits", "ServeConfig"]


@dataclass(frozen=True)
class Limits:
    """The bounds of one request: anything past them is a 4xx answer, never work."""

    max_k: int = 1000  # results a search may ask for (page offset + page size included)
    max_queries: int = 1000  # queries of one batch (POST /search)
    max_body_bytes: int = 1 << 20  # a request's body
    max_query_chars: int = 10_000  # one query's text
    max_documents: int = 10_000  # documents of one add (POST /documents)
    timeout_seconds: float = 30.0  # a request's work; past it the answer is 503


@dataclass(frozen=True)
class ServeConfig:
    """The indexes served (name -> folder, the first the default), the runs and qrels the evaluation
    page offers (name -> file), whether writes are allowed and the token they need, the backend the
    indexes search with and the :class:`Limits`."""

    indexes: tuple[tuple[str, Path], ...]
    runs: tuple[tuple[str, Path], ...] = ()
    qrels: tuple[tuple[str, Path], ...] = ()
    allow_writes: bool = False
    token: str | None = None
    backend: str | None = None
    limits: Limits = field(default_factory=Limits)

    def __post_init__(self) -> None:
        from ..engine.errors import ParameterError

        if not self.indexes:
            raise ParameterError("serve at least one index")
        for what, pairs in (("index", self.indexes), ("run", self.runs), ("qrels", self.qrels)):
            names = [name for name, _ in pairs]
            repeated = sorted({name for name in names if names.count(name) > 1})
            if repeated:
                raise ParameterError(f"two {what} files are named {repeated[0]!r}: name them (NAME=PATH)")
        if self.allow_writes and not self.token:
            raise ParameterError("writes need a token (the Authorization: Bearer header a writer sends)")
