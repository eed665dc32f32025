"""Chinese tokenization: bm25lab ``Tokenizer().tokenize_many(workers=2)`` (the default, ``auto``) vs one plain
jieba process.

    python tests/benchmarks/bench_tokenize.py --small        # 1,000 texts, 3 repetitions
    python tests/benchmarks/bench_tokenize.py                # CMRC 2018 paragraphs repeated to 50,000, once
                                                             # (26 M characters: jieba alone takes minutes)
    python tests/benchmarks/bench_tokenize.py --lecard       # the held-out LeCaRD collection: indexing and runs
    python tests/benchmarks/bench_tokenize.py --lecard --fresh-only   # only its new-process rows

Texts: the CMRC 2018 documents (title and text, as indexed) repeated until ``--texts``, NFKC
normalised beforehand so that plain jieba reads exactly what bm25lab's jieba step reads. Systems,
alternating, median of ``--reps``:

- ``jieba.lcut`` over every text in this process (precise mode, HMM on: jieba's defaults);
- ``Tokenizer("zh", stopwords=None).tokenize_many(texts, workers=1)`` and ``workers=2``;
- ``Tokenizer(stopwords=None).tokenize_many(texts, workers=2)``: the default language, ``auto``.

Same tokens: bm25lab's zh path is jieba's precise cut, lowercased, with pieces that hold no letter
or digit dropped; the check applies exactly that filter to jieba's output and requires equality for
every text, and equality of the workers=1 and workers=2 outputs. ``auto``'s tokens are checked
against its definition (``tokenization._auto_terms``: each Han run cut by jieba's own ``lcut``
(``$BM25LAB_SEGMENTER=jieba``), the rest by the English path) on the first 2,000 texts. Target: the
default's workers=2 at least 10x faster than plain jieba (issue: Chinese tokenization at least 10x
one jieba process).

``--lecard``: the bundled LeCaRD excerpt (984 Chinese legal case facts, 5.8 M characters, 10 judged
queries; the tokenizer was never tuned on it), with the default tokenizer ``Tokenizer()`` (``auto``),
and ``Tokenizer("zh")`` beside it. After one untimed build (what a process loads once: the core's
dictionary arrays and tables; its time is printed), alternating, median of ``--reps``:
``Index.build`` on the fast path (all cores) with each, ``Index.build`` with
``$BM25LAB_SEGMENTER=jieba`` (jieba's own cut in every worker: the jieba-based index), and one plain
``jieba.lcut`` process over the same texts (title and text, NFKC). Then the default's two indexes
search all the queries (k=1000): the runs must hold the same documents in the same order with
bit-identical scores, and evaluate equal. Target: the default build at least 10x faster than the
plain jieba process (the issue's bar on a held-out Chinese collection).

``--lecard`` also times what a user gets from a new process (``--fresh-only``: only that):
alternating, median of ``--reps``, a new ``python`` that imports bm25lab and runs
``Index.build(docs, Tokenizer())`` on the LeCaRD documents (the defaults a user types; no warm-up;
bm25lab's on-disk cache of the jieba dictionary's arrays may be warm, filled by the untimed process
run first, whose time is printed too), the same with ``Tokenizer("zh")``, and a new ``python`` that
runs ``import jieba``, ``jieba.initialize()`` and ``jieba.lcut`` over the same texts (jieba's own
dictionary cache in the temp folder warm likewise). Each child reads the documents first, untimed,
and reports the seconds (and CPU seconds, its workers' included) of the rest; the parent times the
whole process too. One more bm25lab process runs first with an empty cache directory
(``$BM25LAB_CACHE_DIR`` set to a new folder): the very first indexing on a machine. Each new
process's index must give the run of the index built by jieba's own cut with its tokenizer
(documents, order, scores: float.hex), digested. Target: the default's new-process build at least
10x faster than the new jieba process, and within 1.2x of ``zh``'s.

The numba kernels the build may still use are compiled (``bm25lab.engine.warmup``) before anything is
timed, as after installation (jieba's cut is in the compiled core: nothing of it is compiled).
"""
from __future__ import annotations

import argparse
import re
import sys
import time
import unicodedata
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402

_WORD = re.compile(r"[^\W_]")


def cmrc_texts(count: int) -> list[str]:
    from bm25lab import corpora

    base = [unicodedata.normalize("NFKC", d.full_text) for d in corpora.get("cmrc2018").documents()]
    return (base * (count // len(base) + 1))[:count]


def jieba_filtered(tokens: list[str]) -> list[str]:
    """bm25lab's zh filter on jieba's output (no stopwords): lowercase, keep pieces with a letter or digit."""
    return [t.lower() for t in tokens if _WORD.search(t)]


def load_line() -> str:
    import os

    return f"1-min load average at end {os.getloadavg()[0]:.1f}"


def cpu_seconds() -> float:
    """CPU seconds of this process and of its children that have ended (the pool's workers)."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def with_cpu(systems: dict[str, Any], cpu: dict[str, list[float]]) -> dict[str, Any]:
    """``systems`` whose CPU seconds (this process and its workers) are appended to ``cpu[name]``: a
    figure the other engineers' load on the machine distorts less than wall time."""
    def timed(name: str, fn: Any) -> Any:
        def go() -> Any:
            start = cpu_seconds()
            result = fn()
            cpu.setdefault(name, []).append(cpu_seconds() - start)
            return result
        return go
    return {name: timed(name, fn) for name, fn in systems.items()}


def ensure_compiled() -> None:
    """Compile the kernels ahead when this installation has not (what ``auto`` then loads in 0.5 s)."""
    from bm25lab.engine.backends import numba_backend

    if not numba_backend.ready():
        from bm25lab.engine.warmup import compile_all

        print(f"compiled the kernels first -> {compile_all()}", flush=True)


def run(texts: list[str], reps: int) -> dict[str, Any]:
    import jieba

    from bm25lab.engine import Tokenizer

    jieba.setLogLevel(60)
    jieba.initialize()
    tok = Tokenizer("zh", stopwords=None)
    default = Tokenizer(stopwords=None)
    # steady state, as jieba.initialize() above: bm25lab's jieba dictionary, the compiled cut and its tables
    # loaded in this process (forked workers inherit them), what a process pays once (under a second)
    list(tok.tokenize_many(texts[:1000], workers=1))
    list(default.tokenize_many(texts[:1000], workers=1))
    outputs: dict[str, list[list[str]]] = {}

    def system(name: str, fn: Any) -> Any:
        def go() -> None:
            outputs[name] = fn()
        return go

    systems = {
        "jieba.lcut, one process": system("jieba", lambda: [jieba.lcut(t) for t in texts]),
        "bm25lab tokenize_many (workers=1)": system("w1", lambda: list(tok.tokenize_many(texts, workers=1))),
        "bm25lab tokenize_many (workers=2)": system("w2", lambda: list(tok.tokenize_many(texts, workers=2))),
        DEFAULT_ROW: system("auto", lambda: list(default.tokenize_many(texts, workers=2))),
    }
    cpu: dict[str, list[float]] = {}
    times = bl.alternate(with_cpu(systems, cpu), reps)
    same_w = outputs["w1"] == outputs["w2"]
    mismatches = sum(1 for a, b in zip(outputs["jieba"], outputs["w2"]) if jieba_filtered(a) != b)
    checked = texts[:2000]
    auto_mismatches = sum(1 for a, b in zip(auto_by_definition(default, checked), outputs["auto"]) if a != b)
    chars = sum(len(t) for t in texts)
    return {"texts": len(texts), "chars": chars, "median_s": {n: bl.median(v) for n, v in times.items()},
            "median_cpu_s": {n: bl.median(v) for n, v in cpu.items()},
            "workers_1_equals_2": same_w, "texts_differing_from_jieba": mismatches,
            "auto_checked": len(checked), "auto_texts_differing_from_definition": auto_mismatches}


DEFAULT_ROW = "bm25lab tokenize_many, default language auto (workers=2)"


def auto_by_definition(tokenizer: Any, texts: list[str]) -> list[list[str]]:
    """``auto``'s tokens of ``texts`` by its definition (``tokenization._auto_terms``), each Han run cut by
    jieba's own ``lcut`` (``$BM25LAB_SEGMENTER=jieba``)."""
    import os

    from bm25lab.engine import tokenization
    from bm25lab.engine.segmentation import SEGMENTER_VARIABLE

    os.environ[SEGMENTER_VARIABLE] = "jieba"
    try:
        return [tokenization._auto_terms(tokenizer, unicodedata.normalize("NFKC", text)) for text in texts]
    finally:
        os.environ.pop(SEGMENTER_VARIABLE, None)


def report(results: dict[str, Any]) -> str:
    t = results["tokenize"]
    med = t["median_s"]
    base = med["jieba.lcut, one process"]
    cpu = t["median_cpu_s"]
    rows = [(n, f"{s:.2f}", f"{t['chars'] / s / 1e6:.2f}", f"{base / s:.2f}x", f"{cpu[n]:.2f}",
             f"{cpu['jieba.lcut, one process'] / cpu[n]:.2f}x") for n, s in med.items()]
    return "\n".join([
        f"### Chinese tokenization of {t['texts']:,} CMRC paragraphs ({t['chars'] / 1e6:.1f} M characters; "
        f"median of {results['reps']})",
        bl.markdown_table(["system", "seconds", "M chars/s", "speed-up vs jieba", "CPU s (with workers)",
                           "CPU ratio vs jieba"], rows),
        f"same tokens: workers=1 == workers=2: {t['workers_1_equals_2']}; texts differing from filtered "
        f"jieba.lcut: {t['texts_differing_from_jieba']}; auto's texts differing from its definition (first "
        f"{t['auto_checked']:,}): {t['auto_texts_differing_from_definition']}",
    ])


def run_lecard(reps: int) -> dict[str, Any]:
    import os

    import jieba

    import bm25lab
    from bm25lab import corpora
    from bm25lab.engine import Index, Tokenizer
    from bm25lab.engine.segmentation import SEGMENTER_VARIABLE
    from bm25lab.evaluation.measures import DEFAULT_MEASURES

    jieba.setLogLevel(60)
    jieba.initialize()
    lecard = corpora.get("lecard-10q")
    docs = list(lecard.documents())
    texts = [unicodedata.normalize("NFKC", d.full_text) for d in docs]
    queries = lecard.queries()
    # steady state for both sides, as jieba.initialize() above: one untimed build loads the core's
    # dictionary arrays and tables (and numba's build kernels, if the build takes them), what a process pays once
    started = time.perf_counter()
    Index.build(docs, Tokenizer())
    first_build = time.perf_counter() - started
    indexes: dict[str, Any] = {}

    def build(name: str, segmenter: str | None, language: str = "auto") -> Any:
        def go() -> None:
            if segmenter is None:
                os.environ.pop(SEGMENTER_VARIABLE, None)
            else:
                os.environ[SEGMENTER_VARIABLE] = segmenter
            try:
                indexes[name] = Index.build(docs, Tokenizer(language))
            finally:
                os.environ.pop(SEGMENTER_VARIABLE, None)
        return go

    systems = {
        "jieba.lcut, one process": lambda: [jieba.lcut(t) for t in texts],
        FAST_ROW: build("fast", None),
        "Index.build, Tokenizer(\"zh\")": build("zh", None, "zh"),
        "Index.build, jieba's own cut ($BM25LAB_SEGMENTER=jieba)": build("jieba", "jieba"),
    }
    cpu: dict[str, list[float]] = {}
    times = bl.alternate(with_cpu(systems, cpu), reps)
    runs = {name: indexes[name].search_many(queries, k=1000) for name in ("fast", "jieba")}
    same_run = list(runs["fast"]) == list(runs["jieba"]) == list(queries) and all(
        [(h.doc_id, h.score.hex()) for h in runs["fast"][q]] == [(h.doc_id, h.score.hex()) for h in runs["jieba"][q]]
        for q in queries)
    qrels = bm25lab.read_qrels(lecard.qrels_path)
    evaluations = {name: bm25lab.evaluate(qrels, run, DEFAULT_MEASURES) for name, run in runs.items()}
    return {"docs": len(docs), "chars": sum(map(len, texts)), "queries": len(queries), "first_build_s": first_build,
            "hits": sum(len(runs["fast"][q]) for q in queries),
            "median_s": {n: bl.median(v) for n, v in times.items()},
            "median_cpu_s": {n: bl.median(v) for n, v in cpu.items()}, "same_run": same_run,
            "same_evaluation": evaluations["fast"] == evaluations["jieba"], "mean": evaluations["fast"].mean,
            "reference_run": run_digest(runs["jieba"])}


FAST_ROW = "Index.build, fast path, default Tokenizer() (auto)"


def report_lecard(results: dict[str, Any]) -> str:
    t = results["lecard"]
    med = t["median_s"]
    base = med["jieba.lcut, one process"]
    cpu = t["median_cpu_s"]
    rows = [(n, f"{s:.2f}", f"{base / s:.2f}x", f"{cpu[n]:.2f}", f"{cpu['jieba.lcut, one process'] / cpu[n]:.2f}x")
            for n, s in med.items()]
    means = ", ".join(f"{m} {v:.4f}" for m, v in t["mean"].items())
    return "\n".join([
        f"### LeCaRD (held out): {t['docs']} documents, {t['chars'] / 1e6:.1f} M characters; median of {results['reps']}; "
        f"the process's first, untimed build (loading included): {t['first_build_s']:.2f} s",
        bl.markdown_table(["system", "seconds", "speed-up vs jieba.lcut", "CPU s (with workers)", "CPU ratio"], rows),
        f"runs over all {t['queries']} queries ({t['hits']} hits), default fast index vs jieba-built index: identical documents, "
        f"order and scores (float.hex): {t['same_run']}; evaluations equal: {t['same_evaluation']} ({means})",
    ])


def summary_rows_lecard(results: dict[str, Any]) -> list[dict[str, Any]]:
    t = results["lecard"]
    med = t["median_s"]
    lab, peer = med[FAST_ROW], med["jieba.lcut, one process"]
    return [{"case": f"LeCaRD indexing, {t['docs']} docs (s)", "bm25lab": f"{lab:.2f}", "peer": f"jieba.lcut: {peer:.2f}",
             "ratio": lab / peer, "target": "<= 0.1 (10x), identical run",
             "met": lab * 10 <= peer and t["same_run"] and t["same_evaluation"]}]

# ---------------------------------------------------------------------- new processes (what a user gets)
_CHILD_PRELUDE = """
import json, resource, sys, time, unicodedata
def cpu():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
from bm25lab import corpora
lecard = corpora.get("lecard-10q")
docs = list(lecard.documents())
"""

FRESH_BUILD = _CHILD_PRELUDE + """
start, start_cpu = time.perf_counter(), cpu()
from bm25lab.engine import Index, Tokenizer
index = Index.build(docs, Tokenizer(*sys.argv[1:]))
seconds, cpu_s = time.perf_counter() - start, cpu() - start_cpu
run = index.search_many(lecard.queries(), k=1000)
digest = [[q, [(h.doc_id, h.score.hex()) for h in run[q]]] for q in run]
print(json.dumps({"seconds": seconds, "cpu_s": cpu_s, "run": digest}))
"""
"""A new process: bm25lab imported, ``Index.build`` of the LeCaRD documents timed (the documents read
first, untimed), then the run over all queries, printed for the comparison (untimed); its arguments
are the tokenizer's (none: the default)."""

FRESH_JIEBA = _CHILD_PRELUDE + """
texts = [unicodedata.normalize("NFKC", d.full_text) for d in docs]
start, start_cpu = time.perf_counter(), cpu()
import jieba
jieba.setLogLevel(60)
jieba.initialize()
words = [jieba.lcut(t) for t in texts]
print(json.dumps({"seconds": time.perf_counter() - start, "cpu_s": cpu() - start_cpu, "words": sum(map(len, words))}))
"""
"""A new process: the same texts (title and text, NFKC) read first, untimed; then ``import jieba``,
``jieba.initialize()`` and ``jieba.lcut`` over every text, timed."""


def fresh_process(code: str, env: dict[str, str] | None = None, args: Sequence[str] = ()) -> dict[str, Any]:
    """Run ``code`` with ``args`` in a new Python (in a temporary folder, so the checkout is not on
    ``sys.path``); its printed JSON, with the whole process's wall seconds (``process_s``)."""
    import json
    import os
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="bm25lab-fresh-") as folder:
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", code, *args], cwd=folder, env={**os.environ, **(env or {})},
                              capture_output=True, text=True)
        elapsed = time.perf_counter() - started
    if done.returncode:
        raise RuntimeError(f"the new process failed ({done.returncode}):\n{done.stderr}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["process_s"] = elapsed
    return result


def run_fresh(reps: int, references: dict[str, list[list[Any]]]) -> dict[str, Any]:
    """New-process rows: the very first build (empty cache directory), one untimed build filling the
    user's cache if it is empty, then new bm25lab processes (the default tokenizer, and ``zh``) and new
    jieba processes in turn, ``reps`` each; ``references``: by language, the run of the index built with
    jieba's own cut, digested as the child digests its own."""
    import json
    import os
    import tempfile

    with tempfile.TemporaryDirectory(prefix="bm25lab-empty-cache-") as empty:
        first = fresh_process(FRESH_BUILD, {"BM25LAB_CACHE_DIR": empty})
        filled = sorted(p.name for p in Path(empty).iterdir())
    filling = fresh_process(FRESH_BUILD)
    results: dict[str, list[dict[str, Any]]] = {"bm25lab": [], "bm25lab zh": [], "jieba": []}
    calls = {"bm25lab": (FRESH_BUILD, ()), "bm25lab zh": (FRESH_BUILD, ("zh",)), "jieba": (FRESH_JIEBA, ())}
    for rep in range(reps):
        names = list(results)
        for name in names[rep % 3:] + names[:rep % 3]:  # each first in turn
            code, args = calls[name]
            results[name].append(fresh_process(code, args=args))
    references = json.loads(json.dumps(references))  # tuples as lists, as the children print them
    runs = [first["run"], filling["run"], *(r["run"] for r in results["bm25lab"])]
    med = {name: {key: bl.median([r[key] for r in rows]) for key in ("seconds", "cpu_s", "process_s")}
           for name, rows in results.items()}
    return {"median": med, "first": {k: first[k] for k in ("seconds", "cpu_s", "process_s")}, "first_files": filled,
            "filling": {k: filling[k] for k in ("seconds", "cpu_s", "process_s")},
            "all_s": {name: [r["seconds"] for r in rows] for name, rows in results.items()},
            "same_run": all(run == references["auto"] for run in runs) and all(
                r["run"] == references["zh"] for r in results["bm25lab zh"]),
            "load_1min": os.getloadavg()[0]}


def run_digest(run: Any) -> list[list[Any]]:
    """A run as the new process prints it: each query's (doc id, score as float.hex) in order."""
    return [[q, [(h.doc_id, h.score.hex()) for h in run[q]]] for q in run]


def reference_run(language: str = "auto") -> list[list[Any]]:
    """The run over all LeCaRD queries of the index built by ``Tokenizer(language)`` with jieba's own cut
    (``$BM25LAB_SEGMENTER=jieba``)."""
    import os

    from bm25lab import corpora
    from bm25lab.engine import Index, Tokenizer
    from bm25lab.engine.segmentation import SEGMENTER_VARIABLE

    lecard = corpora.get("lecard-10q")
    os.environ[SEGMENTER_VARIABLE] = "jieba"
    try:
        index = Index.build(list(lecard.documents()), Tokenizer(language))
    finally:
        os.environ.pop(SEGMENTER_VARIABLE, None)
    return run_digest(index.search_many(lecard.queries(), k=1000))


def report_fresh(results: dict[str, Any]) -> str:
    f = results["fresh"]
    lab, zh, peer = f["median"]["bm25lab"], f["median"]["bm25lab zh"], f["median"]["jieba"]
    rows = [
        ("new process: import bm25lab, Index.build, default Tokenizer() (cache warm)", f"{lab['seconds']:.2f}",
         f"{peer['seconds'] / lab['seconds']:.2f}x", f"{lab['cpu_s']:.2f}", f"{peer['cpu_s'] / lab['cpu_s']:.2f}x",
         f"{lab['process_s']:.2f}", f"{peer['process_s'] / lab['process_s']:.2f}x"),
        ("new process: import bm25lab, Index.build, Tokenizer(\"zh\") (cache warm)", f"{zh['seconds']:.2f}",
         f"{peer['seconds'] / zh['seconds']:.2f}x", f"{zh['cpu_s']:.2f}", f"{peer['cpu_s'] / zh['cpu_s']:.2f}x",
         f"{zh['process_s']:.2f}", f"{peer['process_s'] / zh['process_s']:.2f}x"),
        ("new process: import jieba, initialize, lcut", f"{peer['seconds']:.2f}", "1.00x", f"{peer['cpu_s']:.2f}",
         "1.00x", f"{peer['process_s']:.2f}", "1.00x"),
        ("very first new process (empty cache directory), once", f"{f['first']['seconds']:.2f}",
         f"{peer['seconds'] / f['first']['seconds']:.2f}x", f"{f['first']['cpu_s']:.2f}",
         f"{peer['cpu_s'] / f['first']['cpu_s']:.2f}x", f"{f['first']['process_s']:.2f}",
         f"{peer['process_s'] / f['first']['process_s']:.2f}x"),
    ]
    met = "met" if fresh_met(results) else "NOT met"
    return "\n".join([
        f"### LeCaRD in new processes (what a user gets); median of {results['reps']}, alternating; "
        f"1-min load average {f['load_1min']:.1f}",
        bl.markdown_table(["system", "seconds", "speed-up vs jieba", "CPU s (with workers)", "CPU ratio",
                           "whole process s", "whole-process ratio"], rows),
        "every repetition (s): " + "; ".join(f"{name} {', '.join(f'{v:.2f}' for v in values)}"
                                             for name, values in f["all_s"].items()),
        f"default (auto) / zh: {lab['seconds'] / zh['seconds']:.2f} (seconds), {lab['cpu_s'] / zh['cpu_s']:.2f} (CPU)",
        f"the untimed process run first on the user's cache directory: {f['filling']['seconds']:.2f} s; "
        f"the empty cache directory's first process left: {', '.join(f['first_files'])}",
        f"runs of every new process's index equal the jieba-built index's (documents, order, float.hex scores): "
        f"{f['same_run']}; target: the default's new-process build >= 10x faster than the new jieba process and "
        f"within 1.2x of zh's: {met}",
    ])


def fresh_met(results: dict[str, Any]) -> bool:
    f = results["fresh"]
    lab = f["median"]["bm25lab"]["seconds"]
    return lab * 10 <= f["median"]["jieba"]["seconds"] and lab <= 1.2 * f["median"]["bm25lab zh"]["seconds"] and f[
        "same_run"]


def summary_rows_fresh(results: dict[str, Any]) -> list[dict[str, Any]]:
    f = results["fresh"]
    lab, peer = f["median"]["bm25lab"]["seconds"], f["median"]["jieba"]["seconds"]
    return [{"case": "LeCaRD indexing in a new process (s)", "bm25lab": f"{lab:.2f}",
             "peer": f"new jieba process: {peer:.2f}", "ratio": lab / peer,
             "target": "<= 0.1 (10x), <= 1.2x zh's, identical run", "met": fresh_met(results)}]



def summary_rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    t = results["tokenize"]
    med = t["median_s"]
    lab, peer = med[DEFAULT_ROW], med["jieba.lcut, one process"]
    same = (t["workers_1_equals_2"] and t["texts_differing_from_jieba"] == 0
            and t["auto_texts_differing_from_definition"] == 0)
    return [{"case": f"Chinese tokenization, {t['texts']:,} texts, 2 workers (s)", "bm25lab": f"{lab:.2f}",
             "peer": f"jieba.lcut: {peer:.2f}", "ratio": lab / peer, "target": "<= 0.1 (10x), same tokens",
             "met": lab * 10 <= peer and same}]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", action="store_true", help="1,000 texts")
    parser.add_argument("--lecard", action="store_true", help="the held-out LeCaRD collection: indexing and runs")
    parser.add_argument("--fresh-only", action="store_true", help="with --lecard: only the new-process rows")
    parser.add_argument("--texts", type=int, help="number of texts (default 50,000; 1,000 with --small)")
    parser.add_argument("--reps", type=int, help="repetitions (default 1; 3 with --small)")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    info = bl.machine_info()
    print(bl.machine_line(info), flush=True)
    ensure_compiled()
    if args.lecard:
        results: dict[str, Any] = {"machine": info, "reps": args.reps or 1, "summary": []}
        if not args.fresh_only:
            results["lecard"] = run_lecard(args.reps or 1)
            results["summary"] += summary_rows_lecard(results)
            print(report_lecard(results))
            print(load_line(), flush=True)
        references = {"auto": results["lecard"].pop("reference_run") if "lecard" in results else reference_run(),
                      "zh": reference_run("zh")}
        results["fresh"] = run_fresh(args.reps or 1, references)
        results["summary"] += summary_rows_fresh(results)
        print(report_fresh(results))
        print(load_line())
        bl.write_json(args.json, results)
        return results
    texts = cmrc_texts(args.texts or (1_000 if args.small else 50_000))
    reps = args.reps or (3 if args.small else 1)
    results = {"machine": info, "reps": reps, "tokenize": run(texts, reps)}
    results["summary"] = summary_rows(results)
    print(report(results))
    print(load_line())
    bl.write_json(args.json, results)
    return results


if __name__ == "__main__":
    main()
