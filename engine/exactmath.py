"""Logarithms and exponentials correctly rounded: the same float64 on every machine.

numpy's ``log``, ``log1p``, ``log2``, ``exp2`` ... are vectorised per CPU: on a CPU with AVX-512 numpy
2 takes Intel's SVML routines, elsewhere the C library's, and the two differ in the last bit now and
then (of 200,000 arguments: ``log`` 9, ``log2`` 28, ``log1p`` 1,706; issue 28: 558 of the 11,200 scores
of the CISI golden run differed on an AMD EPYC). Nor is the C library's scalar ``math.log1p`` or
``math.log2`` always correctly rounded (13 of CISI's 208 distinct idf arguments were a bit off). A
result of bm25lab (an idf, a DCG discount, a geometric mean) takes its logarithms here instead: each
computed with 40 significant digits by Python's :mod:`decimal` (software, exact to its precision) and
rounded once to the nearest float64, so the same on every CPU and exactly the correctly rounded value.
A value is computed once per process (cached); arrays are mapped over their distinct values
(:func:`each`), which are few: an index's document frequencies, the ranks of a run.
"""
from __future__ import annotations

import decimal
import math
from functools import lru_cache
from pathlib import Path
from typing import Callable

import numpy as np

__all__ = ["each", "exp", "exp2", "ln", "ln1p", "log2", "log2_of_integers"]

_PRECISION = 40  # significant digits: far past the 17 a float64 needs, so the one rounding to it is exact
_CACHED = 1 << 18


def _context() -> decimal.Context:
    return decimal.Context(prec=_PRECISION, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN, traps=[])


@lru_cache(maxsize=1)
def _ln2() -> decimal.Decimal:
    return _context().ln(decimal.Decimal(2))


def _special(x: float) -> float | None:
    """What every logarithm here gives for NaN, infinity, 0 and negative numbers (as C's do), else None."""
    if math.isnan(x) or x < 0:
        return math.nan
    if x == 0:
        return -math.inf
    if math.isinf(x):
        return math.inf
    return None


@lru_cache(maxsize=_CACHED)
def ln(x: float) -> float:
    """The natural logarithm of ``x``, correctly rounded."""
    special = _special(x)
    return special if special is not None else float(_context().ln(decimal.Decimal(x)))


@lru_cache(maxsize=_CACHED)
def ln1p(x: float) -> float:
    """``ln(1 + x)`` of the float64 ``x`` (1 + x not rounded first), correctly rounded."""
    if math.isnan(x) or x < -1:
        return math.nan
    if x == -1 or math.isinf(x):
        return -math.inf if x == -1 else math.inf
    exact = decimal.Decimal(x)
    context = _context()
    context.prec += max(0, -exact.adjusted())  # 1 + x keeps the 40 digits of a small x
    return float(context.ln(context.add(1, exact)))


@lru_cache(maxsize=_CACHED)
def log2(x: float) -> float:
    """The base-2 logarithm of ``x``, correctly rounded (exact for powers of two)."""
    special = _special(x)
    if special is not None:
        return special
    mantissa, exponent = math.frexp(x)
    if mantissa == 0.5:
        return float(exponent - 1)
    context = _context()
    return float(context.divide(context.ln(decimal.Decimal(x)), _ln2()))


@lru_cache(maxsize=_CACHED)
def exp(x: float) -> float:
    """``e`` to the power ``x``, correctly rounded."""
    if math.isnan(x):
        return math.nan
    return float(_context().exp(decimal.Decimal(x)))


@lru_cache(maxsize=_CACHED)
def _exp2(x: float) -> float:
    if math.isnan(x):
        return math.nan
    if x.is_integer() and -1100 < x < 1100:
        return math.ldexp(1.0, int(x))
    context = _context()
    return float(context.exp(context.multiply(decimal.Decimal(x), _ln2())))


def exp2(values: np.ndarray) -> np.ndarray:
    """2 to the power of each of ``values`` (exact for whole numbers), correctly rounded."""
    values = np.asarray(values, dtype=np.float64)
    if values.size and np.isfinite(values).all() and (values == np.trunc(values)).all() \
            and np.abs(values).max() < 1000:
        return np.ldexp(1.0, values.astype(np.int64))
    return each(_exp2, values)


def each(function: Callable[[float], float], values: np.ndarray) -> np.ndarray:
    """``function`` of every element of ``values`` (float64, same shape), computed once per distinct value."""
    values = np.asarray(values, dtype=np.float64)
    if not values.size:
        return np.zeros(values.shape, dtype=np.float64)
    distinct, where = np.unique(values, return_inverse=True)
    out = _wide(function, distinct)
    if out is None:
        out = np.array([function(v) for v in distinct.tolist()], dtype=np.float64)
    else:
        unsure = np.flatnonzero(np.isnan(out))
        out[unsure] = [function(v) for v in distinct[unsure].tolist()]
    return out[where].reshape(values.shape)


_WIDE_ULPS = 16
"""How many units in the last place of the C library's long double ``logl``/``log1pl`` :func:`_wide` allows for
their error (glibc documents them within a few)."""


def _wide(function: Callable[[float], float], values: np.ndarray) -> np.ndarray | None:
    """:func:`ln` or :func:`ln1p` of the float64 ``values`` where a long double logarithm decides the
    correctly rounded float64 (NaN elsewhere, for the 40-digit computation), or None (another function, or no
    long double with 11 bits more than float64). A long double result within _WIDE_ULPS of its units of the
    true logarithm rounds to the same float64 as it whenever it lies farther than that from each midpoint
    between its float64 and the neighbours: then that float64 is the correctly rounded one, the 40-digit
    result (about 1 in 40 values is not, near a midpoint: those are computed in decimal)."""
    if function is ln:
        wide = np.log
    elif function is ln1p:
        wide = np.log1p
    else:
        return None
    info = np.finfo(np.longdouble)
    if info.nmant < 63:
        return None
    with np.errstate(all="ignore"):
        y = wide(values.astype(np.longdouble))
        out = y.astype(np.float64)
        f = out.astype(np.longdouble)
        above = (f + np.nextafter(out, np.inf).astype(np.longdouble)) / 2  # exact: 54 bits
        below = (f + np.nextafter(out, -np.inf).astype(np.longdouble)) / 2
        margin = np.abs(y) * (info.eps * _WIDE_ULPS)
        sure = np.isfinite(out) & (np.abs(out) >= np.finfo(np.float64).tiny) & np.isfinite(values) \
            & (values > (-1.0 if function is ln1p else 0.0)) & (y + margin < above) & (y - margin > below)
    out[~sure] = np.nan
    return out


LOG2_TABLE_FILE = Path(__file__).resolve().parent / "data" / "log2_integers.f64"
"""log2(0), log2(1) ... log2(LOG2_SHIPPED - 1) by :func:`log2`, little-endian float64: a run's discounts at
its ranks without computing a thousand logarithms in :mod:`decimal` at every start (0.03 s of a small
evaluation). Written by :func:`write_log2_table`; a test checks it equals :func:`log2` bit for bit."""
LOG2_SHIPPED = 4096

_LOG2_TABLE = np.zeros(0, dtype=np.float64)


def _computed_log2_table(start: int, stop: int) -> np.ndarray:
    return np.array([log2(float(i)) for i in range(start, stop)], dtype=np.float64)


def write_log2_table(path: Path = LOG2_TABLE_FILE) -> None:
    """Write the shipped table (run by hand when :data:`LOG2_SHIPPED` changes)."""
    _computed_log2_table(0, LOG2_SHIPPED).astype("<f8").tofile(path)


def _shipped_log2_table() -> np.ndarray:
    try:
        table = np.fromfile(LOG2_TABLE_FILE, dtype="<f8")
    except OSError:
        table = np.zeros(0, dtype=np.float64)
    if table.size != LOG2_SHIPPED:  # missing or cut short: computed as before
        return _computed_log2_table(0, 1024)
    return table.astype(np.float64)


def log2_of_integers(values: np.ndarray) -> np.ndarray:
    """The base-2 logarithms of whole numbers ``values`` (>= 0; log2(0) = -inf), from a table of
    :func:`log2` kept for this process (the shipped one, grown as needed): a run's discounts at its ranks."""
    global _LOG2_TABLE
    values = np.asarray(values)
    integers = values.astype(np.int64)
    assert not values.size or ((integers == values).all() and integers.min() >= 0), "whole numbers >= 0"
    if not _LOG2_TABLE.size:
        _LOG2_TABLE = _shipped_log2_table()
    largest = int(integers.max(initial=0))
    if largest >= _LOG2_TABLE.size:
        size = max(largest + 1, 2 * _LOG2_TABLE.size)
        _LOG2_TABLE = np.concatenate([_LOG2_TABLE, _computed_log2_table(_LOG2_TABLE.size, size)])
    return _LOG2_TABLE[integers]
