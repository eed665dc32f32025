"""The installed package: one import package ``bm25lab`` with its version, public names and entry points."""
from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

import bm25lab

PUBLIC = ["Index", "Tokenizer", "evaluate", "compare", "tune", "Qrels", "Run", "read_qrels", "read_run",
          "write_run", "read_documents", "read_queries", "Hit", "Hits", "Document"]


def run_python(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """This interpreter (bm25lab as installed), in ``cwd`` so that no source folder shadows it."""
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_version_is_the_distributions() -> None:
    assert bm25lab.__version__ == metadata.version("bm25lab")


def test_the_distribution_installs_one_import_package(tmp_path: Path) -> None:
    # asked outside the checkout: at its root, pip's bm25lab.egg-info would answer for the installation
    code = "from importlib import metadata; print('\\n'.join(map(str, metadata.files('bm25lab') or [])))"
    listed = run_python("-c", code, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    files = [Path(line) for line in listed.stdout.splitlines()]
    tops = {f.parts[0] for f in files if f.suffix == ".py" and not f.parts[0].endswith((".dist-info", ".data"))
            and not f.name.startswith("__editable__")}  # a development install's import hook
    assert tops <= {"bm25lab"}
    for name in ("engine", "evaluation", "corpora"):
        found = run_python("-c", f"import importlib.util, sys; sys.exit(importlib.util.find_spec({name!r}) is not None)",
                           cwd=tmp_path)
        assert found.returncode == 0, f"a top-level package {name!r} is importable"


def test_public_api_is_reachable_from_the_front_door() -> None:
    for name in PUBLIC:
        assert getattr(bm25lab, name) is not None, name
    assert bm25lab.engine.Index is bm25lab.Index
    assert {"cranfield", "cisi", "cmrc2018", "lecard-10q"} <= set(bm25lab.corpora.names())


def test_import_loads_nothing_heavy(tmp_path: Path) -> None:
    code = ("import sys, bm25lab\n"
            "heavy = [m for m in ('numpy', 'jieba', 'numba', 'pyarrow', 'typer', 'rich') if m in sys.modules]\n"
            "assert not heavy, heavy\n")
    done = run_python("-c", code, cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_python_dash_m_and_version_flag(tmp_path: Path) -> None:
    done = run_python("-m", "bm25lab", "--version", cwd=tmp_path)
    assert (done.returncode, done.stdout.strip()) == (0, f"bm25lab {bm25lab.__version__}")
    listed = run_python("-m", "bm25lab", "corpora", "--format", "json", cwd=tmp_path)
    assert listed.returncode == 0 and '"cranfield"' in listed.stdout


def test_compare_and_tune_are_exported() -> None:
    import bm25lab
    import bm25lab.evaluation

    from bm25lab.evaluation.compare import compare
    from bm25lab.evaluation.tuning import tune

    assert bm25lab.compare is compare and bm25lab.tune is tune and {"compare", "tune"} <= set(bm25lab.__all__)


def test_the_checkout_itself_imports_as_the_installation_does() -> None:
    # at the checkout's root, `python -m pytest` and `python -c` import its bm25lab/ folder ahead of the
    # installed package; its sub-packages are the top-level folders (a non-editable install failed here)
    root = Path(__file__).resolve().parents[1]
    code = ("import bm25lab, bm25lab.engine, bm25lab.evaluation, bm25lab.corpora; "
            "print(bm25lab.__file__); print(bm25lab.engine.__file__); print(bm25lab.Index.__module__)")
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    front, engine, index = done.stdout.split()
    assert Path(front) == root / "bm25lab" / "__init__.py" and Path(engine) == root / "engine" / "__init__.py"
    assert index == "bm25lab.engine.index"


def test_indexing_searching_and_evaluating_english_never_import_numba(tmp_path: Path) -> None:
    # a user's process with the defaults: an English corpus indexed, saved, loaded, searched one query and
    # a batch at a time, the run written and evaluated: the compiled core throughout, no JIT compiler
    code = ("import sys\n"
            "from bm25lab import Index, Tokenizer, corpora, evaluate, read_qrels, read_run, write_run\n"
            "cranfield = corpora.get('cranfield')\n"
            "Index.build(cranfield.documents(), Tokenizer('en')).save('idx')\n"
            "index = Index.load('idx')\n"
            "assert index.backend == 'core' and index.search('boundary layer', k=5)\n"
            "write_run(index.search_many(cranfield.queries(), k=100), 'bm25.run')\n"
            "result = evaluate(read_qrels(cranfield.qrels_path), read_run('bm25.run'), ['nDCG@10', 'AP'])\n"
            "assert 0.3 < result.mean['nDCG@10'] < 0.4\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numba', 'llvmlite')))\n")
    done = run_python("-c", code, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
