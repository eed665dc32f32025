"""Errors the evaluation package raises for bad input.

Bad files and bad in-memory data raise the engine's :class:`~bm25lab.engine.errors.InputError`
(``"path:line: message"``, one line), a parameter out of its range (a tuning grid, a number of
folds) its :class:`~bm25lab.engine.errors.ParameterError`; an unknown measure name or a bad
evaluation option raises :class:`MeasureError`, whose message lists the known measures. All derive from
:class:`~bm25lab.engine.errors.BM25LabError` and :class:`ValueError`; :class:`EvaluationError` is the base of
the errors only this package raises.
"""
from __future__ import annotations

from ..engine.errors import BM25LabError, InputError, ParameterError

__all__ = ["BM25LabError", "EvaluationError", "InputError", "MeasureError", "ParameterError"]


class EvaluationError(BM25LabError, ValueError):
    """Base of the evaluation package's own errors."""


class MeasureError(EvaluationError, ParameterError):
    """An unknown measure name, a bad measure parameter or a bad evaluation option (a parameter
    error: the command line's exit code 2)."""
