"""Metadata filters: which documents a search may return, by the metadata in the document store.

    index.search("boundary layer", where={"year": {">=": 1990}, "lang": ["en", "fr"]},
                 where_not={"status": "draft"})
    bm25lab search idx "boundary layer" --where 'year>=1990' --where 'lang in en,fr' --where-not status=draft

A :class:`Filter` is two lists of conditions on metadata keys: every condition of ``where`` must hold
and none of ``where_not`` may. It is applied inside the top-k (a document mask: see
:func:`document_mask`), so a filtered search returns the best ``k`` documents among those that pass,
never fewer while more of them match the query, and never one that does not pass.

**Conditions.** Given as a mapping (the Python and HTTP API), ``{key: spec}``:

=====================================  ==================================================
``{"lang": "en"}``                     equal (a string, a number or a boolean)
``{"lang": ["en", "fr"]}``             equal to one of them
``{"year": {">=": 1990, "<": 2000}}``  every comparison holds (``<``, ``<=``, ``>``, ``>=``; also ``=``, ``in``)
``{"doi": {"exists": True}}``          the document has the key (``False``: it has not)
=====================================  ==================================================

or as strings (the command line, ``GET /search?where=``), one condition each (:data:`GRAMMAR`):
``lang=en``, ``year>=1990``, ``year<2000``, ``lang in en,fr`` (comma-separated; a value in double
quotes may hold commas and spaces: ``title in "a, b",c``), ``doi exists``. Keys in strings cannot hold
spaces or ``=<>!``; the mapping form takes any key.

**Values.** A stored value reads as a *number* when it is a JSON number or a string that is a decimal
number (``"1990"``, ``"-2.5e3"``: metadata read from CSV or TSV are strings), and as a *text* when it
is a string (``true``/``false`` for a boolean). Equality holds when the numbers are equal or the texts
are. A comparison whose bound reads as a number compares numbers (a value without one fails it);
another bound compares texts in code point order (ISO dates compare as dates: ``date>=2020-01-01``).
A stored list holds when any of its items does; a key whose value is ``null`` is missing.

A document mask is computed once per index view and filter (:class:`Masks`) from per-key columns of
the stores' metadata (:class:`Column`, read once per segment by SQLite's JSON functions and kept).
"""
from __future__ import annotations

import csv
import json
import math
import operator
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Protocol, Sequence, Union

import numpy as np

from .errors import ParameterError

if TYPE_CHECKING:
    from .docstore import DocStore

__all__ = ["Condition", "Filter", "GRAMMAR", "Masks", "OPERATORS", "WhereSpec", "document_mask"]

Value = Union[str, float, bool]
"""A value a condition compares with (ints are kept as floats)."""

WhereSpec = Union[Mapping[str, Any], str, Sequence[str], "Filter", None]
"""What ``where=``/``where_not=`` take: a mapping, one condition as a string, a list of such strings."""

GRAMMAR = ("KEY=VALUE, KEY>=VALUE (also >, <=, <), 'KEY in V1,V2,...' (double quotes keep commas), "
           "'KEY exists'")
"""The conditions' string form, in one line (the command line's help and its errors)."""

MAX_VALUES = 10_000  # values of one 'in' condition
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


# ---------------------------------------------------------------------------------------------
# Values: each read as a number, a text, or both


def number_of(value: Any) -> float:
    """The number a stored or given value reads as (NaN: none): a JSON number, or a string that is
    a finite decimal number; never a boolean."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return math.nan
    if isinstance(value, str) and not _NUMBER.fullmatch(value.strip()):
        return math.nan
    try:
        number = float(value)
    except OverflowError:  # an integer past float's range
        return math.nan
    return number if math.isfinite(number) else math.nan


def text_of(value: Any) -> str | None:
    """The text a stored or given value reads as (None: none): a string itself, a boolean as
    ``true``/``false``; a number has none."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else None


# ---------------------------------------------------------------------------------------------
# Columns: one key's values in one segment's store


@dataclass(frozen=True)
class Column:
    """One metadata key's values in one segment's store, deleted documents included: ``present`` the
    document numbers that have the key (not null); one entry per scalar value (a list gives one per
    item) with its document number, its number (NaN: none) and its text's code into ``texts``
    (-1: none)."""

    present: np.ndarray  # int64
    docs: np.ndarray  # int64, an entry's document number
    numbers: np.ndarray  # float64
    codes: np.ndarray  # int64
    texts: tuple[str, ...]

    @classmethod
    def of_rows(cls, rows: Iterable[tuple[int, str, Any]]) -> "Column":
        """The column of ``(document number, JSON type, value)`` rows (:meth:`DocStore.metadata_values`)."""
        present: list[int] = []
        docs: list[int] = []
        values: list[Any] = []
        for num, kind, value in rows:
            if kind == "null":
                continue
            present.append(num)
            if kind == "array":
                items = [item for item in json.loads(value) if isinstance(item, (str, int, float, bool))]
            elif kind == "object":
                items = []
            else:
                items = [True if kind == "true" else False if kind == "false" else value]
            docs.extend([num] * len(items))
            values.extend(items)
        texts = [text_of(v) for v in values]
        distinct = sorted({t for t in texts if t is not None})
        code = {t: i for i, t in enumerate(distinct)}
        return cls(np.asarray(present, dtype=np.int64), np.asarray(docs, dtype=np.int64),
                   np.fromiter((number_of(v) for v in values), dtype=np.float64, count=len(values)),
                   np.fromiter((code.get(t, -1) if t is not None else -1 for t in texts), dtype=np.int64,
                               count=len(texts)),
                   tuple(distinct))

    def codes_of(self, texts: Iterable[str]) -> np.ndarray:
        """The codes of those of ``texts`` that some entry holds."""
        wanted = sorted(set(texts))
        at = np.searchsorted(np.asarray(self.texts, dtype=object), wanted) if self.texts and wanted else []
        return np.asarray([i for i, t in zip(at, wanted) if i < len(self.texts) and self.texts[i] == t], np.int64)


_COLUMNS: OrderedDict[tuple[str, str], Column] = OrderedDict()
_COLUMNS_KEPT = 256  # (store, key) columns a process keeps
_COLUMNS_LOCK = threading.Lock()


def column(store: DocStore, key: str) -> Column:
    """``key``'s :class:`Column` in ``store``, read once per store file (a store never changes once
    written, and each segment's file has a name of its own) and kept for the next filters."""
    name = (str(store.path), key)
    with _COLUMNS_LOCK:
        found = _COLUMNS.get(name)
        if found is not None:
            _COLUMNS.move_to_end(name)
            return found
    found = Column.of_rows(store.metadata_values(key))
    with _COLUMNS_LOCK:
        _COLUMNS[name] = found
        while len(_COLUMNS) > _COLUMNS_KEPT:
            _COLUMNS.popitem(last=False)
    return found


# ---------------------------------------------------------------------------------------------
# Operators: a registry, each a function of a column and the condition's values


def _entries_equal(col: Column, values: tuple[Value, ...]) -> np.ndarray:
    numbers = [n for n in map(number_of, values) if not math.isnan(n)]
    texts = [t for t in map(text_of, values) if t is not None]
    hit = np.isin(col.numbers, numbers) if numbers else np.zeros(col.docs.shape[0], dtype=bool)
    if texts and col.texts:
        hit |= np.isin(col.codes, col.codes_of(texts))
    return col.docs[hit]


def _comparison(compare: Callable[[Any, Any], Any]) -> Callable[[Column, tuple[Value, ...]], np.ndarray]:
    def entries(col: Column, values: tuple[Value, ...]) -> np.ndarray:
        bound = values[0]
        number = number_of(bound)
        if not math.isnan(number):
            with np.errstate(invalid="ignore"):
                return col.docs[compare(col.numbers, number)]
        table = np.fromiter((compare(text, bound) for text in col.texts), dtype=bool, count=len(col.texts))
        hit = np.zeros(col.docs.shape[0], dtype=bool)
        has_text = col.codes >= 0
        hit[has_text] = table[col.codes[has_text]]
        return col.docs[hit]

    return entries


def _present(col: Column, values: tuple[Value, ...]) -> np.ndarray:
    return col.present


@dataclass(frozen=True)
class Operator:
    """A condition's operator: how many values it takes (None: one or more) and the documents of a
    column for which it holds."""

    name: str
    arity: int | None
    documents: Callable[[Column, tuple[Value, ...]], np.ndarray]
    description: str


OPERATORS: dict[str, Operator] = {op.name: op for op in (
    Operator("=", 1, _entries_equal, "equal (as numbers or as texts)"),
    Operator("in", None, _entries_equal, "equal to one of the values"),
    Operator("<", 1, _comparison(operator.lt), "less than"),
    Operator("<=", 1, _comparison(operator.le), "at most"),
    Operator(">", 1, _comparison(operator.gt), "greater than"),
    Operator(">=", 1, _comparison(operator.ge), "at least"),
    Operator("exists", 0, _present, "the document has the key (not null)"),
)}
"""Registry of operators, by the name the mapping form and the strings use."""
_ALIASES = {"==": "="}


@dataclass(frozen=True)
class Condition:
    """One condition: ``key``, an operator of :data:`OPERATORS`, its values."""

    key: str
    op: str
    values: tuple[Value, ...] = ()

    def holds(self, store: DocStore, num_docs: int) -> np.ndarray:
        """For every document number of the store's segment (``num_docs`` of them), whether it holds."""
        hit = np.zeros(num_docs, dtype=bool)
        hit[OPERATORS[self.op].documents(column(store, self.key), self.values)] = True
        return hit

    def __str__(self) -> str:
        if self.op == "exists":
            return f"{self.key} exists"
        shown = ",".join(_shown(v) for v in self.values)
        return f"{self.key} in {shown}" if self.op == "in" else f"{self.key}{self.op}{shown}"


def _shown(value: Value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 2 ** 53 else repr(value)
    return json.dumps(value, ensure_ascii=False) if re.search(r'[,"\s]', value) or not value else value


# ---------------------------------------------------------------------------------------------
# Filters and their parsing


@dataclass(frozen=True)
class Filter:
    """Conditions that must all hold (``where``) and conditions none of which may (``where_not``)."""

    where: tuple[Condition, ...] = ()
    where_not: tuple[Condition, ...] = ()

    @classmethod
    def of(cls, where: WhereSpec = None, where_not: WhereSpec = None) -> "Filter | None":
        """The filter of ``where`` and ``where_not`` (see the module docstring); None when they hold no
        condition. A malformed one is a ParameterError naming it."""
        must, must_not = _conditions(where, "where")
        more_not, more = _conditions(where_not, "where_not")
        found = cls(tuple(must + more), tuple(must_not + more_not))
        return found if found.where or found.where_not else None

    def keys(self) -> list[str]:
        """The metadata keys the filter reads."""
        return sorted({c.key for c in self.where + self.where_not})

    def to_strings(self) -> tuple[list[str], list[str]]:
        """``where`` and ``where_not`` as condition strings (the key's own spelling where it fits)."""
        return [str(c) for c in self.where], [str(c) for c in self.where_not]

    def holds(self, store: DocStore, num_docs: int) -> np.ndarray:
        """For every document number of a segment's store, whether it passes."""
        passed = np.ones(num_docs, dtype=bool)
        for condition in self.where:
            passed &= condition.holds(store, num_docs)
        for condition in self.where_not:
            passed &= ~condition.holds(store, num_docs)
        return passed


def _conditions(spec: WhereSpec, name: str) -> tuple[list[Condition], list[Condition]]:
    """The conditions of one of ``where``/``where_not``, and those it states of the opposite side
    (``{"key": {"exists": False}}``)."""
    if spec is None:
        return [], []
    if isinstance(spec, Filter):
        if name != "where":
            raise ParameterError("where_not takes conditions (a mapping or strings), not a Filter")
        return list(spec.where), list(spec.where_not)
    if isinstance(spec, str):
        return [parse_condition(spec)], []
    if isinstance(spec, Mapping):
        same: list[Condition] = []
        opposite: list[Condition] = []
        for key, value in spec.items():
            for condition, negated in _of_entry(key, value, name):
                (opposite if negated else same).append(condition)
        return same, opposite
    if isinstance(spec, (list, tuple)) and all(isinstance(item, str) for item in spec):
        return [parse_condition(item) for item in spec], []
    raise ParameterError(f"{name} takes a mapping such as {{'year': {{'>=': 1990}}, 'lang': ['en', 'fr']}}, a "
                         f"condition string such as 'year>=1990' or a list of them, not {type(spec).__name__}")


def _of_entry(key: Any, spec: Any, name: str) -> list[tuple[Condition, bool]]:
    """The conditions of one ``key: spec`` entry of a mapping, each with whether it is negated."""
    if not isinstance(key, str) or not key:
        raise ParameterError(f"{name}: a metadata key must be a non-empty string, got {_brief(key)}")
    if isinstance(spec, Mapping):
        if not spec:
            raise ParameterError(f"{name}: {_brief(key)} has no condition (an empty mapping)")
        out = []
        for op, value in spec.items():
            op = _ALIASES.get(op, op) if isinstance(op, str) else op
            if op not in OPERATORS:
                raise ParameterError(f"{name}: unknown operator {_brief(op)} for {_brief(key)}; operators: "
                                     f"{', '.join(OPERATORS)}")
            if op == "exists":
                if not isinstance(value, bool):
                    raise ParameterError(f"{name}: 'exists' takes true or false, got {_brief(value)} for {_brief(key)}")
                out.append((Condition(key, "exists"), not value))
            elif op == "in":
                out.append((Condition(key, "in", _values(value, key, name)), False))
            else:
                bound = _value(value, key, name)
                if op != "=" and isinstance(bound, bool):
                    raise ParameterError(f"{name}: {_brief(op)} compares with a number or a string, not "
                                         f"{_brief(value)} (for {_brief(key)})")
                out.append((Condition(key, op, (bound,)), False))
        return out
    if isinstance(spec, (list, tuple)):
        return [(Condition(key, "in", _values(spec, key, name)), False)]
    return [(Condition(key, "=", (_value(spec, key, name),)), False)]


def _brief(value: Any, width: int = 60) -> str:
    """``repr(value)``, cut to ``width`` characters (a client may send anything, at any length)."""
    if isinstance(value, int) and abs(value) >= 10 ** 40:
        return "a number of more than 40 digits"
    shown = repr(value)
    return shown if len(shown) <= width else shown[:width - 3] + "..."


def _values(values: Any, key: str, name: str) -> tuple[Value, ...]:
    if not isinstance(values, (list, tuple)) or not values:
        raise ParameterError(f"{name}: 'in' takes a non-empty list of values for {_brief(key)}, got {_brief(values)}")
    if len(values) > MAX_VALUES:
        raise ParameterError(f"{name}: at most {MAX_VALUES:,} values in one condition ({_brief(key)} has "
                             f"{len(values):,})")
    return tuple(_value(v, key, name) for v in values)


def _value(value: Any, key: str, name: str) -> Value:
    if isinstance(value, bool) or isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = number_of(value)
        if not math.isnan(number):
            return number
    raise ParameterError(f"{name}: {_brief(key)} compares with a string, a finite number or a boolean, not "
                         f"{_brief(value)}")


_CONDITION = re.compile(r"\s*(?P<key>[^\s=<>!]+)\s*(?:(?P<op>>=|<=|==|=|>|<)\s*(?P<value>.*?)"
                        r"|\s+(?P<in>in)\s+(?P<values>.*?)|\s+(?P<exists>exists))\s*", re.S)


def parse_condition(text: str) -> Condition:
    """One condition from its string form (:data:`GRAMMAR`); a malformed one is a ParameterError."""
    match = _CONDITION.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise ParameterError(f"bad filter {_brief(text)}: expected {GRAMMAR}")
    key = match["key"]
    if match["exists"]:
        return Condition(key, "exists")
    if match["in"]:
        values = _split_values(match["values"], text)
        if len(values) > MAX_VALUES:
            raise ParameterError(f"bad filter {_brief(text)}: at most {MAX_VALUES:,} values in one condition")
        return Condition(key, "in", tuple(values))
    value = _unquoted(match["value"], text)
    return Condition(key, _ALIASES.get(match["op"], match["op"]), (value,))


def _split_values(text: str, whole: str) -> list[str]:
    """``a,b,"c, d"`` as its values; an empty one is a ParameterError."""
    try:
        rows = list(csv.reader([text], skipinitialspace=True, strict=True))
    except csv.Error:
        rows = []
    values = [value.strip() for value in rows[0]] if len(rows) == 1 else []
    if not values or any(value == "" for value in values):
        raise ParameterError(f"bad filter {_brief(whole)}: 'in' takes values separated by commas (double quotes keep "
                             f"commas), none empty")
    return values


def _unquoted(value: str, whole: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == '"':
        try:
            loaded = json.loads(value)
        except ValueError:
            loaded = None
        if isinstance(loaded, str):
            return loaded
    if not value or '"' in value or value[0] in "=<>!":
        raise ParameterError(f"bad filter {_brief(whole)}: expected a value after the operator (in double quotes when "
                             f"it is empty, holds quotes or starts with one of =<>!)")
    return value


# ---------------------------------------------------------------------------------------------
# Masks


class Part(Protocol):
    """What a mask needs of a segment of an index (:class:`bm25lab.engine.segments.Part`, a floor above)."""

    store: DocStore

    @property
    def num_docs(self) -> int: ...

    def live_mask(self) -> np.ndarray: ...


def document_mask(where: Filter, parts: Sequence[Part]) -> np.ndarray:
    """Whether each live document of ``parts`` passes ``where``, numbered as their merged view numbers
    them (:func:`bm25lab.engine.segments.merge`: segment by segment, live documents in order)."""
    pieces = [where.holds(part.store, part.num_docs)[part.live_mask()] for part in parts]
    return np.concatenate(pieces) if pieces else np.zeros(0, dtype=bool)


class Masks:
    """The document masks of one view of ``parts`` (an index, a shard), by filter: the last few kept."""

    KEPT = 16

    def __init__(self, parts: Sequence[Part]) -> None:
        self._parts = list(parts)
        self._kept: OrderedDict[Filter, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def of(self, where: Filter | None) -> np.ndarray | None:
        """The mask (uint8, 1 for a document that passes) of ``where``; None for no filter."""
        if where is None:
            return None
        with self._lock:
            found = self._kept.get(where)
            if found is not None:
                self._kept.move_to_end(where)
                return found
        found = document_mask(where, self._parts).astype(np.uint8)
        found.flags.writeable = False
        with self._lock:
            self._kept[where] = found
            while len(self._kept) > self.KEPT:
                self._kept.popitem(last=False)
        return found
