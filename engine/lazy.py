"""Public names loaded on first use: the one ``__getattr__``/``__dir__`` pair behind every package's
front (PEP 562), so that importing a package imports none of its heavy modules (numpy, jieba, pyarrow)."""
from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str], namespace: dict[str, Any],
                 subpackages: frozenset[str] = frozenset()) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: ``exports`` maps a public name to the module
    (relative to ``package``) that defines it, ``subpackages`` are imported by name; a name, once
    loaded, is kept in the package's ``namespace`` (its ``globals()``)."""

    def __getattr__(name: str) -> Any:
        if name in subpackages:
            return importlib.import_module(f".{name}", package)
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name], package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports) | subpackages)

    return __getattr__, __dir__
