"""Errors the evaluation package raises for bad input.

Bad files and bad in-memory data raise the engine's :class:`~bm25lab.engine.errors.InputError`
(``"path:line: message"``, one line); an unknown measure name or a bad option raises
:class:`MeasureError`, whose message lists the known measures. All derive from
:class:`~bm25lab.engine.errors.BM25LabError` and :class:`ValueError`; :class:`EvaluationError` is the base of
the errors only this package raises.
"""
from __future__ import annotations

from ..engine.errors import BM25LabError, InputError

__all__ = ["BM25LabError", "EvaluationError", "InputError", "MeasureError"]


class EvaluationError(BM25LabError, ValueError):
    """Base of the evaluation package's own errors."""


class MeasureError(EvaluationError):
    """An unknown measure name, a bad measure parameter or a bad evaluation option."""
