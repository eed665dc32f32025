"""Test helpers shared by test modules (``tests/`` is on ``sys.path`` under pytest, as for ``fuzzing``)."""
from __future__ import annotations

from bm25lab.engine import backends


class RecordingAuto(backends.Auto):
    """``auto``, recording the backend it chooses for each operation."""

    def __init__(self) -> None:
        super().__init__()
        self.chosen: list[str] = []

    def choose(self, numpy_seconds: float) -> backends.Backend:
        chosen = super().choose(numpy_seconds)
        self.chosen.append(chosen.name)
        return chosen
