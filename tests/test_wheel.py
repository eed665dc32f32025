"""Installing as a user installs: ``python -m build`` makes an sdist and, from it, a wheel that carries
the compiled core and works installed alone; without a C compiler the wheel is still made, works with
numpy (the same results) and says once that the core is missing."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "bm25lab", "engine", "evaluation", "corpora")
PROBE = """
import json, sys, warnings
from bm25lab import Index, Tokenizer
from bm25lab.engine import core
docs = [("d1", "boundary layer flow"), ("d2", "wing flow flow"), ("d3", "heat transfer"), ("d4", "layer")]
index = Index.build(docs, tokenizer=Tokenizer("en"), workers=1)
hits = index.search_many({"1": "flow layer", "2": "wing"}, k=3, variant="bm25+")
print(json.dumps({"core": core.kernels() is not None, "backend": index.backend,
                  "hits": {q: [[h.doc_id, h.score.hex()] for h in found] for q, found in hits.items()}}))
"""


def _source_copy(target: Path) -> Path:
    """The files a build reads, copied (a build writes build/ and egg-info folders beside them)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.egg-info", "build", ".*")
    target.mkdir()
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=ignore)
        else:
            shutil.copy2(source, target / name)
    return target


def _installed(wheel: Path, target: Path) -> dict[str, str]:
    """The wheel installed alone into ``target`` (its dependencies are this environment's), and the
    environment in which Python imports it from there."""
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target),
                           str(wheel)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return {**os.environ, "PYTHONPATH": str(target)}


def _probe(env: dict[str, str], cwd: Path) -> tuple[dict, str]:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300, env=env,
                          cwd=cwd)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """A wheel built by ``python -m build`` (sdist first, the wheel from it) and one built without a C compiler."""
    if sys.platform != "linux":  # pragma: no cover
        pytest.skip("the compiler-less build is simulated with CC=false on Linux")
    work = tmp_path_factory.mktemp("build")
    source = _source_copy(work / "src")
    dist = work / "dist"
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(source)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    plain = work / "plain"
    env = {**os.environ, "CC": "false", "LDSHARED": "false"}
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                           "--wheel-dir", str(plain), str(_source_copy(work / "src-plain"))],
                          capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    (wheel,) = dist.glob("*.whl")
    (sdist,) = dist.glob("*.tar.gz")
    (no_core,) = plain.glob("*.whl")
    return {"wheel": wheel, "sdist": sdist, "no_core": no_core, "work": work}


def test_the_wheel_carries_the_core_and_only_bm25lab(built) -> None:
    names = zipfile.ZipFile(built["wheel"]).namelist()
    assert any(n.startswith("bm25lab/engine/core/_core") and n.endswith(".so") for n in names)
    assert {n.split("/")[0] for n in names if ".dist-info/" not in n} == {"bm25lab"}
    assert not any(n.endswith((".c", ".h")) for n in names)  # sources belong to the sdist
    packages = {f"bm25lab/{folder.relative_to(ROOT)}/__init__.py".replace("bm25lab/bm25lab/", "bm25lab/")
                for top in ("bm25lab", "engine", "evaluation", "corpora") for folder in (ROOT / top).rglob("*")
                if (folder / "__init__.py").is_file() and "__pycache__" not in folder.parts}
    assert packages <= set(names), sorted(packages - set(names))  # every package of the sources is installed
    with __import__("tarfile").open(built["sdist"]) as sdist:
        sources = {Path(n).name for n in sdist.getnames() if "engine/core/" in n}
    assert {"core.h", "module.c", "search.c", "build.c"} <= sources


def test_a_wheel_with_and_without_the_core_gives_the_same_results(built) -> None:
    with_core, quiet = _probe(_installed(built["wheel"], built["work"] / "site"), built["work"])
    without, said = _probe(_installed(built["no_core"], built["work"] / "site-plain"), built["work"])
    assert (with_core["core"], with_core["backend"]) == (True, "core") and "compiled core" not in quiet
    assert (without["core"], without["backend"]) == (False, "numpy")
    assert without["hits"] == with_core["hits"]
    assert said.count("compiled core is not built") == 1


def test_the_command_line_says_once_that_the_core_is_missing(built, tmp_path: Path) -> None:
    env = _installed(built["no_core"], built["work"] / "site-cli")
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n"
                                                 for i, t in enumerate(["wing flow", "layer flow", "heat"])))
    done = subprocess.run([sys.executable, "-m", "bm25lab", "index", str(tmp_path / "docs.jsonl"), "--out",
                           str(tmp_path / "idx")], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("compiled core is not built") == 1 and "Traceback" not in done.stderr
