"""The house's floors: no module imports another that imports it back (directly or through others, at any
depth: inside functions and under TYPE_CHECKING too), the engine's modules import only from their own
floor or below (ENGINE_LAYERS), the compiled core's loader imports nothing of bm25lab, the engine never
imports the evaluation, and neither imports the command line. Read from the sources' import statements."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"bm25lab": ROOT / "bm25lab", "bm25lab.engine": ROOT / "engine", "bm25lab.evaluation": ROOT / "evaluation",
            "bm25lab.corpora": ROOT / "corpora"}

# The engine, bottom up: a module imports modules of its own floor or of floors below it.
ENGINE_LAYERS = (
    ("core", "errors", "lazy", "columns", "exactmath", "files", "compressed"),  # the ground: the compiled core,
    ("scratch", "scoring", "selection", "records", "locking", "codec"),  # plain helpers; formulas, the tie rule,
                                                                         # results, the postings' block format
    ("segmentation", "docstore", "sources"),                    # jieba's cut, the document store, inputs
    ("tokenization", "postings"),                               # text to terms; terms to postings
    ("retrieval", "searching", "filters"),                      # weights and the numpy search; the protocol
    ("backends", "feedback"),                                   # numpy or the core; feedback over searches
    ("storage",),                                               # index folders on disk
    ("segments", "lookups"),                                    # growing: segments and deletions; feedback's reads
    ("index",),                                                 # the Index
    ("shards",),                                                # many indexes searched as one
)


def _modules() -> dict[str, Path]:
    found = {}
    for package, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if package == "bm25lab" and parts and parts[0] in ("engine", "evaluation", "corpora"):
                continue
            found[".".join([package, *parts])] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """The modules of the package that ``name`` imports, anywhere in its source (a package's own
    submodules count as themselves; a module's parent packages, which Python imports first, do not)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - (node.level - 1)] if node.level else []
            module = ".".join(base + ([node.module] if node.module else [])) if node.level else node.module or ""
            subs = [f"{module}.{alias.name}" for alias in node.names if f"{module}.{alias.name}" in MODULES]
            targets = subs + ([module] if len(subs) < len(node.names) else [])
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != name and not name.startswith(target + "."):
                out.add(target)
    return out


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _cycles() -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(GRAPH[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return found


def test_no_module_imports_one_that_imports_it_back() -> None:
    assert len(MODULES) > 60
    assert _cycles() == []


def _floor(name: str) -> int | None:
    short = name.removeprefix("bm25lab.engine.").split(".")[0]
    return next((i for i, floor in enumerate(ENGINE_LAYERS) if short in floor), None)


def test_every_engine_module_imports_only_from_its_floor_or_below() -> None:
    engine = [name for name in MODULES if name.startswith("bm25lab.engine.")]
    assert [name for name in engine if _floor(name) is None] == []  # a new module is given a floor
    upward = [(name, target) for name in engine for target in GRAPH[name]
              if target.startswith("bm25lab.engine.") and _floor(target) > _floor(name)]
    assert upward == []


def test_the_ground_floor_imports_nothing_of_bm25lab() -> None:
    assert GRAPH["bm25lab.engine.core"] == set()
    assert all((ROOT / "engine" / "core").glob("*.c"))


def test_the_layers_of_the_package() -> None:
    def imports(prefix: str) -> set[str]:
        return {target for name, targets in GRAPH.items() if name.startswith(prefix) for target in targets}

    assert not {t for t in imports("bm25lab.engine") if t.startswith("bm25lab.evaluation")}
    for layer in ("bm25lab.engine", "bm25lab.evaluation", "bm25lab.corpora"):
        assert not {t for t in imports(layer) if t.startswith(("bm25lab.cli", "bm25lab.experiments"))}, layer
