"""Collections by ir_datasets id, offline: the files are laid where ir_datasets keeps its downloads
(IR_DATASETS_HOME in a temporary folder) and every command runs in a process whose sockets refuse to
connect, so a test that tried the network would fail loudly. ir_datasets reads IR_DATASETS_HOME when it is
imported, hence the subprocesses."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("ir_datasets")

DATA = Path(__file__).resolve().parents[1] / "data"
NO_NETWORK = '''import socket
def _refuse(*args, **kwargs):
    raise RuntimeError("network access attempted in an offline test")
socket.socket.connect = socket.getaddrinfo = socket.create_connection = _refuse
'''


@pytest.fixture(scope="module")
def places(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("irds")
    home = root / "home"
    (home / "vaswani").mkdir(parents=True)
    for source, target in (("doc-text", "docs.txt"), ("query-text", "queries.txt"), ("rlv-ass", "qrels.txt")):
        shutil.copyfile(DATA / "glasgow" / "npl" / source, home / "vaswani" / target)
    (home / "beir" / "scifact").mkdir(parents=True)
    with zipfile.ZipFile(home / "beir" / "scifact" / "source.zip", "w") as archive:
        for path in sorted((DATA / "irds" / "scifact").rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(DATA / "irds"))
    (root / "guard").mkdir()
    (root / "guard" / "sitecustomize.py").write_text(NO_NETWORK)
    (root / "without").mkdir()
    (root / "without" / "ir_datasets.py").write_text("raise ImportError('not installed')\n")
    return {"root": root, "home": home, "empty": root / "empty"}


def _bm25lab(places: dict[str, Path], *args: str, home: str = "home", hide_package: bool = False
             ) -> subprocess.CompletedProcess[str]:
    paths = [str(places["root"] / "guard")] + ([str(places["root"] / "without")] if hide_package else [])
    env = {**os.environ, "IR_DATASETS_HOME": str(places[home]), "PYTHONPATH": os.pathsep.join(paths),
           "BM25LAB_CACHE_DIR": str(places["root"] / "cache")}
    return subprocess.run([sys.executable, "-m", "bm25lab", *args], capture_output=True, text=True, env=env,
                          timeout=120, cwd=places["root"])


def test_the_guard_refuses_the_network(places):
    code = "import urllib.request; urllib.request.urlopen('http://example.com')"
    env = {**os.environ, "PYTHONPATH": str(places["root"] / "guard")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode != 0 and "network access attempted" in done.stderr


def test_experiment_on_irds_vaswani_equals_the_same_files_read_directly(places, tmp_path):
    done = _bm25lab(places, "experiment", "irds:vaswani", "-m", "AP", "-m", "P@5", "--format", "json")
    assert done.returncode == 0, done.stderr
    ours = json.loads(done.stdout)
    # the same NPL files as a folder: documents, queries and qrels read by bm25lab's own NPL readers
    folder = tmp_path / "npl"
    shutil.copytree(DATA / "glasgow" / "npl", folder)
    (folder / "doc-text").rename(folder / "docs.npl")
    (folder / "rlv-ass").rename(folder / "qrels.rel")
    direct = _bm25lab(places, "experiment", str(folder), "-m", "AP", "-m", "P@5", "--format", "json")
    assert direct.returncode == 0, direct.stderr
    theirs = json.loads(direct.stdout)
    assert ours["mean"] == theirs["mean"] and ours["queries"] == theirs["queries"]


def test_evaluate_and_corpora_get_on_beir_scifact(places, tmp_path):
    run = tmp_path / "r.run"
    run.write_text("1 Q0 4983 1 2.0 x\n1 Q0 7912 2 1.0 x\n3 Q0 7912 1 3.0 x\n3 Q0 5836 2 1.0 x\n")
    done = _bm25lab(places, "evaluate", "irds:beir/scifact/test", str(run), "-m", "RR", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["per_query"] == {"1": {"RR": 1.0}, "3": {"RR": 0.5}}
    code = ("from bm25lab import corpora; c = corpora.get('irds:beir/scifact/test'); docs = list(c.documents()); "
            "print(c.language, len(docs), docs[0].title, sorted(c.judged_queries()), c.qrels().to_dict())")
    env = {**os.environ, "IR_DATASETS_HOME": str(places["home"]), "PYTHONPATH": str(places["root"] / "guard")}
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split("\n")[0] == ("en 3 Microstructural development of human newborn cerebral white matter "
                                           "['1', '3'] {'1': {'4983': 1}, '3': {'5836': 1}}")


def test_one_line_errors(places):
    missing = _bm25lab(places, "experiment", "irds:vaswani", home="empty")
    assert missing.returncode == 1
    line = missing.stderr.strip().splitlines()[-1]
    assert line.startswith("bm25lab: error: irds:vaswani: its data is not where ir_datasets keeps it, ")
    assert str(places["empty"] / "vaswani") in line and "could not be downloaded" in line
    assert "network access attempted" in missing.stderr  # ir_datasets tried, and the guard refused
    without = _bm25lab(places, "evaluate", "irds:vaswani", "r.run", hide_package=True)
    assert without.returncode == 1
    assert without.stderr.strip() == ('bm25lab: error: irds: collections need the ir_datasets package: '
                                      'pip install "bm25lab[irds]"')
    unknown = _bm25lab(places, "evaluate", "irds:no/such", "r.run")
    assert unknown.returncode == 1 and "ir_datasets has no dataset 'no/such'" in unknown.stderr
