"""Side-by-side search benchmark in one process: bm25lab vs bm25s (numba, numpy) vs rank-bm25 on identical tokens.

    python tests/benchmarks/bench_search.py --small          # about a minute
    python tests/benchmarks/bench_search.py                  # the issue's size: 150,000 docs, 1,000 queries
    python tests/benchmarks/bench_search.py --sections build,batch --json out.json

Every system sees the same tokens: the synthetic corpus is generated as token lists, bm25s indexes
the lists, bm25lab indexes the same tokens joined by spaces with ``Tokenizer("whitespace",
stopwords=None)`` (which splits on whitespace only and keeps case). Queries are given to both as
token lists (``Index.retrieve_tokens`` vs ``BM25.retrieve``; both return arrays). BM25 is Lucene's
with k1 = 0.9, b = 0.4 on both sides (bm25s ``method="lucene"``). rank-bm25 (``BM25Okapi``, same
k1 and b, its own idf) is timed on a small subsample of queries only and extrapolated per query.

bm25lab runs as installed and as a user's process runs it: nothing of it is imported or loaded
ahead (its compiled kernels included), no environment variable is set; whatever path its defaults
choose is the one timed. All systems share one long-lived process here, so these figures are warm
ones; ``bench_engines.py`` times the public API (``Index.build`` from texts, ``search_many``) in a
fresh process per system beside PISA and tantivy. Rows named ``build_tokens`` and
``retrieve_tokens`` use bm25lab's low-level token API (what ``Index.build`` and ``search_many``
call after their text analysis); they are labelled "(low-level)" in the tables.

Sections (``--sections``, all by default):

- ``build``: index construction after tokenization, each system from the same two inputs: token
  strings (bm25lab ``Index.build_tokens``, bm25s ``index`` with numba and numpy backends) and token
  ids into a vocabulary (bm25lab ``build_tokens(..., vocabulary=)``, bm25s ``index((ids, vocab))``,
  its fastest input). Also bm25lab ``Index.build`` from the texts (its whitespace analysis and
  document store included) and that analysis alone.
- ``batch``: throughput (queries/s) of top-10 and top-1000 over all queries.
- ``latency``: single-query latency, k = 10, median per query over ``--latency-queries`` queries.
- ``equality``: top-10 of bm25lab vs bm25s on a sample: same documents above the 10th score, same
  scores to float32 (relative 1e-5: bm25s sums in float32).
- ``rank-bm25``: BM25Okapi build and per-query search on ``--rank-bm25-queries`` queries.
- ``profile`` (not in the default set): cProfile of bm25lab's build, batch and single searches.
- ``real``: the bundled collections (cranfield, cisi, cmrc2018, lecard-10q): tokenized once by
  bm25lab's analyser for the language, then built and batch-searched (judged queries) by both,
  each timing repeating the batch up to about 2,000 queries (a batch of Cranfield takes about a
  millisecond). bm25s with its numba backend (compiled before any timing) and numpy backend;
  bm25lab with its defaults.

Ratios are ``bm25lab time / peer time``: below 1 means bm25lab is faster.
"""
from __future__ import annotations

import argparse
import copy
import gc
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402  (sibling module; see its docstring)

K1, B = 0.9, 0.4
SECTIONS = ("build", "batch", "latency", "equality", "rank-bm25", "real", "profile")
REAL_COLLECTIONS = ("cranfield", "cisi", "cmrc2018", "lecard-10q")


# ---------------------------------------------------------------------- systems
def lab_tokenizer() -> Any:
    from bm25lab.engine import Tokenizer

    return Tokenizer("whitespace", stopwords=None)


def lab_build(doc_ids: Sequence[str], texts: Sequence[str], workers: int | None = None) -> Any:
    from bm25lab.engine import Index

    return Index.build(zip(doc_ids, texts), tokenizer=lab_tokenizer(), workers=workers)


def bm25s_new(backend: str) -> Any:
    import bm25s

    return bm25s.BM25(method="lucene", k1=K1, b=B, backend=backend)


def bm25s_build(corpus: Any, backend: str) -> Any:
    retriever = bm25s_new(backend)
    retriever.index(corpus, show_progress=False)
    return retriever


def bm25s_numpy_view(numba_retriever: Any) -> Any:
    """The same bm25s index with the numpy retrieval backend (the index arrays are shared)."""
    view = copy.copy(numba_retriever)
    view.backend = "numpy"
    return view


def bm25s_retrieve(retriever: Any, queries: list[list[str]], k: int, n_threads: int) -> Any:
    selection = "numba" if retriever.backend == "numba" else "numpy"
    return retriever.retrieve(queries, k=k, n_threads=n_threads, show_progress=False, backend_selection=selection)


def warm_bm25s_numba() -> None:
    """Compile bm25s's numba index builder and scorer (serial and parallel) before any timing."""
    retriever = bm25s_build([["a", "b"], ["b", "c"], ["c", "a", "a"]], "numba")
    for threads in (1, 2):
        bm25s_retrieve(retriever, [["a"], ["b", "c"]], 2, threads)


# ---------------------------------------------------------------------- sections
def section_build(syn: bl.Synthetic, reps: int) -> dict[str, Any]:
    from bm25lab.engine import Index

    ids_corpus = syn.bm25s_ids()
    ids, vocab = ids_corpus
    vocabulary = sorted(vocab, key=vocab.__getitem__)
    id_arrays = [np.asarray(doc, dtype=np.int32) for doc in ids]
    tok = lab_tokenizer()
    systems: dict[str, Callable[[], Any]] = {
        "bm25lab build_tokens, token strings": lambda: Index.build_tokens(zip(syn.doc_ids, syn.tokens)),
        "bm25lab build_tokens, token ids": lambda: Index.build_tokens(zip(syn.doc_ids, id_arrays),
                                                                      vocabulary=vocabulary),
        "bm25lab build from texts (workers=1)": lambda: lab_build(syn.doc_ids, syn.texts, 1),
        "bm25lab build from texts (workers=2)": lambda: lab_build(syn.doc_ids, syn.texts, 2),
        "bm25s numba, token strings": lambda: bm25s_build(syn.tokens, "numba"),
        "bm25s numpy, token strings": lambda: bm25s_build(syn.tokens, "numpy"),
        "bm25s numba, token ids": lambda: bm25s_build(ids_corpus, "numba"),
        "bm25lab whitespace tokenization only (workers=1)": lambda: sum(
            1 for _ in tok.tokenize_many(syn.texts, workers=1)),
    }
    times = bl.alternate(systems, reps, between=gc.collect)  # each build freed before the next, untimed
    return {name: bl.median(values) for name, values in times.items()}


def batch_systems(index: Any, nb: Any, npy: Any, tokens: list[list[str]], texts: dict[str, str],
                  k: int, with_search_many: bool = True) -> dict[str, Callable[[], Any]]:
    systems: dict[str, Callable[[], Any]] = {
        "bm25lab retrieve_tokens (workers=1)": lambda: index.retrieve_tokens(tokens, k, workers=1),
        "bm25lab retrieve_tokens (workers=2)": lambda: index.retrieve_tokens(tokens, k, workers=2),
    }
    if with_search_many:
        systems["bm25lab search_many (texts, workers=2)"] = lambda: index.search_many(texts, k, workers=2)
    systems.update({
        "bm25s numba (n_threads=1)": lambda: bm25s_retrieve(nb, tokens, k, 1),
        "bm25s numba (n_threads=2)": lambda: bm25s_retrieve(nb, tokens, k, 2),
        "bm25s numpy (n_threads=0)": lambda: bm25s_retrieve(npy, tokens, k, 0),
        "bm25s numpy (n_threads=2)": lambda: bm25s_retrieve(npy, tokens, k, 2),
    })
    return systems


def section_batch(index: Any, nb: Any, npy: Any, syn: bl.Synthetic, reps: int,
                  ks: Sequence[int]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    n = len(syn.query_tokens)
    for k in ks:
        systems = batch_systems(index, nb, npy, syn.query_tokens, syn.query_texts, k)
        bl.alternate(systems, 1)  # warm-up: prepared weights, numba threads, page cache
        times = bl.alternate(systems, reps)
        out[str(k)] = {name: n / bl.median(values) for name, values in times.items()}
    return out


def section_latency(index: Any, nb: Any, npy: Any, syn: bl.Synthetic, reps: int, count: int) -> dict[str, float]:
    tokens = syn.query_tokens[:count]
    texts = [" ".join(q) for q in tokens]
    single: dict[str, Callable[[int], Any]] = {
        "bm25lab search (text)": lambda i: index.search(texts[i], 10),
        "bm25lab search_tokens": lambda i: index.search_tokens(tokens[i], 10),
        "bm25s numba retrieve([q])": lambda i: bm25s_retrieve(nb, [tokens[i]], 10, 1),
        "bm25s numpy retrieve([q])": lambda i: bm25s_retrieve(npy, [tokens[i]], 10, 0),
    }

    def per_query(fn: Callable[[int], Any]) -> Callable[[], list[float]]:
        return lambda: [bl.timed(lambda: fn(i))[0] for i in range(len(tokens))]

    medians: dict[str, list[float]] = {name: [] for name in single}
    names = list(single)
    for rep in range(reps + 1):  # the first round warms up and is dropped
        shift = rep % len(names)
        for name in names[shift:] + names[:shift]:
            samples = per_query(single[name])()
            if rep:
                medians[name].append(bl.median(samples))
    return {name: bl.median(values) * 1000 for name, values in medians.items()}


def compare_top(lab: Sequence[tuple[np.ndarray, np.ndarray]], docs: np.ndarray, scores: np.ndarray,
                rtol: float = 1e-5) -> dict[str, Any]:
    """Agreement of bm25lab's top-k with bm25s's: scores to float32, documents above the k-th score."""
    score_mismatch = doc_mismatch = 0
    worst = 0.0
    for (lab_docs, lab_scores), their_docs, their_scores in zip(lab, docs, scores):
        keep = their_scores > 0  # bm25s pads with zero-score documents when fewer match
        their_docs, their_scores = their_docs[keep], their_scores[keep].astype(np.float64)
        if lab_scores.shape != their_scores.shape:
            score_mismatch += 1
            continue
        if lab_scores.size:
            rel = np.abs(lab_scores - their_scores) / np.maximum(np.abs(lab_scores), 1e-12)
            worst = max(worst, float(rel.max()))
            if not np.allclose(lab_scores, their_scores, rtol=rtol, atol=0):
                score_mismatch += 1
            cut = lab_scores[-1] * (1 + rtol)
            if set(lab_docs[lab_scores > cut].tolist()) != set(their_docs[their_scores > cut].tolist()):
                doc_mismatch += 1
    return {"queries": len(lab), "score_mismatches": score_mismatch, "doc_set_mismatches": doc_mismatch,
            "max_relative_score_difference": worst}


def section_equality(index: Any, nb: Any, syn: bl.Synthetic, count: int) -> dict[str, Any]:
    tokens = syn.query_tokens[:count]
    lab = index.retrieve_tokens(tokens, 10, workers=1)
    docs, scores = bm25s_retrieve(nb, tokens, 10, 1)
    return compare_top(lab, np.asarray(docs), np.asarray(scores))


def section_rank_bm25(syn: bl.Synthetic, count: int) -> dict[str, float]:
    from rank_bm25 import BM25Okapi

    build_s, model = bl.timed(lambda: BM25Okapi(syn.tokens, k1=K1, b=B))

    def search(query: list[str]) -> np.ndarray:
        scores = model.get_scores(query)
        top = np.argpartition(-scores, 10)[:10]
        return top[np.argsort(-scores[top])]

    seconds, _ = bl.timed(lambda: [search(q) for q in syn.query_tokens[:count]])
    return {"build_s": build_s, "queries_timed": count, "per_query_ms": seconds / count * 1000,
            "queries_per_s": count / seconds}


def profile_lab(syn: bl.Synthetic, top: int = 14) -> str:
    """cProfile of bm25lab's build, top-10 batch and single searches: where its time goes."""
    import cProfile
    import io
    import pstats

    out = io.StringIO()
    holder: dict[str, Any] = {}
    cases: dict[str, Callable[[], Any]] = {
        "build (workers=1)": lambda: holder.update(index=lab_build(syn.doc_ids, syn.texts, 1)),
        "retrieve_tokens top-10 (workers=1)": lambda: holder["index"].retrieve_tokens(syn.query_tokens, 10, workers=1),
        "retrieve_tokens top-1000 (workers=1)": lambda: holder["index"].retrieve_tokens(syn.query_tokens, 1000,
                                                                                         workers=1),
        "search (text), k=10, one query at a time": lambda: [holder["index"].search(" ".join(q), 10)
                                                             for q in syn.query_tokens],
    }
    for name, fn in cases.items():
        profiler = cProfile.Profile()
        profiler.runcall(fn)
        out.write(f"\n#### cProfile: bm25lab {name} (sorted by own time)\n")
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


# ---------------------------------------------------------------------- real collections
def real_tokens(name: str) -> tuple[list[str], list[list[str]], list[list[str]]]:
    """(doc ids, document tokens, judged-query tokens) by bm25lab's analyser for the language."""
    from bm25lab import corpora
    from bm25lab.engine import Tokenizer

    corpus = corpora.get(name)
    tok = Tokenizer("zh" if corpus.language == "zh" else "en")
    docs = list(corpus.documents())
    doc_tokens = list(tok.tokenize_many((d.full_text for d in docs), workers=None))
    query_tokens = [tok.tokenize(text) for text in corpus.judged_queries().values()]
    for tokens in doc_tokens + query_tokens:  # identical tokens through the whitespace tokenizer
        assert " ".join(tokens).split() == tokens, "a token contains whitespace"
    return [d.id for d in docs], doc_tokens, [q for q in query_tokens if q]


_REAL_QUERIES_PER_TIMING = 2_000


def _repeated(systems: dict[str, Callable[[], Any]], times: int) -> dict[str, Callable[[], None]]:
    """Each system run ``times`` times in a row per call."""
    def wrap(fn: Callable[[], Any]) -> Callable[[], None]:
        def run() -> None:
            for _ in range(times):
                fn()
        return run
    return {name: wrap(fn) for name, fn in systems.items()}


def section_real(reps: int, names: Sequence[str]) -> dict[str, Any]:
    from bm25lab.engine import Index

    out: dict[str, Any] = {}
    for name in names:
        doc_ids, doc_tokens, queries = real_tokens(name)
        texts = [" ".join(t) for t in doc_tokens]
        build = bl.alternate({
            "bm25lab build_tokens, token strings": lambda: Index.build_tokens(zip(doc_ids, doc_tokens)),
            "bm25s numba, token strings": lambda: bm25s_build(doc_tokens, "numba"),
            "bm25s numpy, token strings": lambda: bm25s_build(doc_tokens, "numpy"),
        }, reps, between=gc.collect)
        index = lab_build(doc_ids, texts, 1)
        nb = bm25s_build(doc_tokens, "numba")
        npy = bm25s_numpy_view(nb)
        texts_q = {f"q{i}": " ".join(q) for i, q in enumerate(queries)}
        result: dict[str, Any] = {"docs": len(doc_ids), "queries": len(queries),
                                  "build_s": {n: bl.median(v) for n, v in build.items()}, "batch_qps": {}}
        inner = max(1, _REAL_QUERIES_PER_TIMING // len(queries))
        for k in (10, min(1000, len(doc_ids))):
            systems = _repeated(batch_systems(index, nb, npy, queries, texts_q, k, with_search_many=False), inner)
            bl.alternate(systems, 1)
            times = bl.alternate(systems, reps)
            result["batch_qps"][str(k)] = {n: inner * len(queries) / bl.median(v) for n, v in times.items()}
        docs, scores = bm25s_retrieve(nb, queries, 10, 1)
        result["equality"] = compare_top(index.retrieve_tokens(queries, 10, workers=1), np.asarray(docs),
                                         np.asarray(scores))
        out[name] = result
        del index, nb, npy
        gc.collect()
    return out


# ---------------------------------------------------------------------- report
LAB_BATCH = ("bm25lab retrieve_tokens (workers=1)", "bm25lab retrieve_tokens (workers=2)")


def fastest_peer(figures: dict[str, float], higher_is_better: bool = True) -> tuple[str, float]:
    """The best bm25s configuration of a table: (name, figure)."""
    peers = [(n, v) for n, v in figures.items() if n.startswith("bm25s")]
    return (max if higher_is_better else min)(peers, key=lambda item: item[1])


def best_lab(qps: dict[str, float]) -> float:
    return max(qps[n] for n in LAB_BATCH)


def report(results: dict[str, Any]) -> str:
    parts = [f"Synthetic corpus: {results['config']}", ""]
    if "build" in results:
        b = results["build"]
        rows = [(n, v) for n, v in b.items()]
        lines = [f"{form}: bm25lab {lab:.2f} s, fastest bm25s {peer:.2f} s, ratio {lab / peer:.2f}"
                 for form, lab, peer in _build_pairs(b)]
        parts += ["### Index build after tokenization (median s; build_tokens = bm25lab's low-level token API)",
                  bl.markdown_table(["system", "seconds"], rows),
                  *lines, "target: bm25lab <= 1/3 of bm25s from the same input", ""]
    if "batch" in results:
        for k, qps in results["batch"].items():
            peer_name, peer = fastest_peer(qps)
            rows = [(n, v, f"{v / peer:.2f}") for n, v in qps.items()]
            parts += [f"### Batch search, top-{k} (queries/s, median; retrieve_tokens = bm25lab's low-level token API)",
                      bl.markdown_table(["system", "queries/s", f"throughput / fastest bm25s ({peer_name})"], rows), ""]
    if "latency" in results:
        lat = results["latency"]
        peer = min(lat["bm25s numba retrieve([q])"], lat["bm25s numpy retrieve([q])"])
        rows = [(n, v, bl.ratio(v, peer)) for n, v in lat.items()]
        parts += ["### Single-query latency, k = 10 (median ms per query)",
                  bl.markdown_table(["system", "ms", "this / fastest bm25s"], rows), ""]
    if "equality" in results:
        parts += [f"### Equality, top-10 vs bm25s lucene: {results['equality']}", ""]
    if "rank-bm25" in results:
        r = results["rank-bm25"]
        parts += [f"### rank-bm25 BM25Okapi: build {r['build_s']:.1f} s; {r['per_query_ms']:.1f} ms per query "
                  f"({r['queries_per_s']:.1f} queries/s, extrapolated from {r['queries_timed']} queries)", ""]
    if "real" in results:
        rows = []
        for name, r in results["real"].items():
            bs = r["build_s"]
            peer_build = min(v for n, v in bs.items() if n.startswith("bm25s"))
            for k, qps in r["batch_qps"].items():
                lab = best_lab(qps)
                peer_name, peer = fastest_peer(qps)
                lab_build_s = bs["bm25lab build_tokens, token strings"]
                rows.append((name, r["docs"], r["queries"], lab_build_s, peer_build,
                             bl.ratio(lab_build_s, peer_build), k, lab,
                             f"{peer:,.0f} ({peer_name})", f"{lab / peer:.2f}",
                             f"{r['equality']['score_mismatches']}/{r['equality']['doc_set_mismatches']}"))
        parts += ["### Real collections (build s median; batch queries/s; bm25lab best of workers=1,2)",
                  bl.markdown_table(["collection", "docs", "queries", "bm25lab build", "fastest bm25s build",
                                     "build ratio", "k", "bm25lab q/s", "fastest bm25s q/s",
                                     "throughput bm25lab/bm25s", "score/doc mismatches"], rows), ""]
    return "\n".join(parts)


def _build_pairs(build: dict[str, float]) -> list[tuple[str, float, float]]:
    """(input form, bm25lab seconds, fastest bm25s seconds) for token strings and token ids."""
    pairs = []
    for form in ("token strings", "token ids"):
        peers = [v for n, v in build.items() if n.startswith("bm25s") and n.endswith(form)]
        pairs.append((form, build[f"bm25lab build_tokens, {form}"], min(peers)))
    return pairs


def summary_rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows for run_all's table: case, bm25lab figure, peer figure, ratio (bm25lab time / peer time), target."""
    rows: list[dict[str, Any]] = []
    if "build" in results:
        for form, lab, peer in _build_pairs(results["build"]):
            rows.append(_row(f"build {results['config']['docs']:,}-doc index from {form}, build_tokens (low-level) (s)",
                             lab, f"bm25s from {form}: {peer:.2f}", lab / peer, "<= 0.33", lab / peer <= 1 / 3,
                             f"{lab:.2f}"))
    for k, qps in results.get("batch", {}).items():
        lab = best_lab(qps)
        peer_name, peer = fastest_peer(qps)
        peer_text = f"{peer_name.removeprefix('bm25s ')}: {peer:,.0f}"
        rows.append(_row(f"batch top-{k}, retrieve_tokens (low-level), best of workers=1,2 (q/s)", lab, peer_text,
                         peer / lab, "<= 1", lab >= peer, f"{lab:,.0f}"))
        sm = qps["bm25lab search_many (texts, workers=2)"]
        rows.append(_row(f"batch top-{k}, search_many, same process (q/s)", sm, peer_text, peer / sm, "<= 1",
                         sm >= peer, f"{sm:,.0f}"))
    if "latency" in results:
        lat = results["latency"]
        peer = min(lat["bm25s numba retrieve([q])"], lat["bm25s numpy retrieve([q])"])
        lab = lat["bm25lab search (text)"]
        rows.append(_row("single-query latency, k=10 (ms)", lab, f"bm25s best: {peer:.2f}", lab / peer,
                         "<= 1", lab <= peer, f"{lab:.2f}"))
    if "rank-bm25" in results and "batch" in results:
        r = results["rank-bm25"]
        lab = best_lab(results["batch"]["10"])
        rows.append(_row("top-10 vs rank-bm25 (q/s, rank-bm25 extrapolated)", lab,
                         f"rank-bm25: {r['queries_per_s']:.1f}", r["queries_per_s"] / lab, "far below 1",
                         None, f"{lab:,.0f}"))
    if "equality" in results:
        e = results["equality"]
        ok = e["score_mismatches"] == 0 and e["doc_set_mismatches"] == 0
        rows.append(_row(f"top-10 equal to bm25s ({e['queries']} queries)", 0, "", float("nan"), "0 mismatches",
                         ok, f"{e['score_mismatches']} score / {e['doc_set_mismatches']} doc-set mismatches"))
    for name, r in results.get("real", {}).items():
        for k, qps in r["batch_qps"].items():
            lab = best_lab(qps)
            peer_name, peer = fastest_peer(qps)
            rows.append(_row(f"{name}: batch top-{k} ({r['queries']} queries, q/s)", lab,
                             f"{peer_name.removeprefix('bm25s ')}: {peer:,.0f}", peer / lab, "<= 1", lab >= peer,
                             f"{lab:,.0f}"))
    return rows


def _row(case: str, lab: float, peer: str, ratio: float, target: str, met: bool | None,
         lab_text: str) -> dict[str, Any]:
    return {"case": case, "bm25lab": lab_text, "peer": peer, "ratio": ratio, "target": target, "met": met}


# ---------------------------------------------------------------------- main
def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", action="store_true",
                        help="5,000 docs, 200 queries, 2 repetitions, real: cranfield only (about a minute)")
    parser.add_argument("--docs", type=int)
    parser.add_argument("--doc-len", type=int)
    parser.add_argument("--vocab", type=int)
    parser.add_argument("--queries", type=int)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reps", type=int, help="repetitions per measurement, median reported (3; 2 if --small)")
    parser.add_argument("--build-reps", type=int, help="repetitions of the build section (default: --reps)")
    parser.add_argument("--latency-queries", type=int, default=200)
    parser.add_argument("--equality-queries", type=int, default=200)
    parser.add_argument("--rank-bm25-queries", type=int, default=10)
    parser.add_argument("--sections", default=",".join(s for s in SECTIONS if s != "profile"),
                        help=f"comma-separated subset of {SECTIONS}")
    parser.add_argument("--real", help=f"bundled collections for 'real' (default {','.join(REAL_COLLECTIONS)})")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    args.reps = args.reps or (2 if args.small else 3)
    args.real = args.real or ("cranfield" if args.small else ",".join(REAL_COLLECTIONS))
    unknown = set(args.sections.split(",")) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)}; valid: {', '.join(SECTIONS)}")
    return args


def synthetic_config(args: argparse.Namespace) -> bl.SyntheticConfig:
    base = bl.SyntheticConfig.small() if args.small else bl.SyntheticConfig()
    return bl.SyntheticConfig(docs=args.docs or base.docs, doc_len=args.doc_len or base.doc_len,
                              vocab=args.vocab or base.vocab, queries=args.queries or base.queries,
                              seed=args.seed)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    bl.quiet_logs()
    sections = args.sections.split(",")
    config = synthetic_config(args)
    results: dict[str, Any] = {"machine": bl.machine_info(), "config": vars(config)}
    print(bl.machine_line(results["machine"]), flush=True)
    warm_bm25s_numba()  # bm25lab is not warmed ahead: batch, latency and real drop an untimed first round
    synthetic = [s for s in sections if s != "real"]
    if synthetic:
        syn = bl.make_synthetic(config)
        print(f"generated {config}", file=sys.stderr, flush=True)
        if "build" in sections:
            results["build"] = section_build(syn, args.build_reps or args.reps)
            print(f"build: {results['build']}", file=sys.stderr, flush=True)
        if "rank-bm25" in sections:
            results["rank-bm25"] = section_rank_bm25(syn, args.rank_bm25_queries)
            gc.collect()
        if {"batch", "latency", "equality"} & set(sections):
            index = lab_build(syn.doc_ids, syn.texts, 1)
            nb = bm25s_build(syn.tokens, "numba")
            npy = bm25s_numpy_view(nb)
            if "equality" in sections:
                results["equality"] = section_equality(index, nb, syn, args.equality_queries)
            if "batch" in sections:
                results["batch"] = section_batch(index, nb, npy, syn, args.reps, (10, 1000))
            if "latency" in sections:
                results["latency"] = section_latency(index, nb, npy, syn, args.reps, args.latency_queries)
            del index, nb, npy
        if "profile" in sections:
            results["profile"] = profile_lab(syn)
        del syn
        gc.collect()
    if "real" in sections:
        results["real"] = section_real(args.reps, args.real.split(","))
    results["summary"] = summary_rows(results)
    print(report(results))
    if "profile" in results:
        print(results["profile"])
    bl.write_json(args.json, results)
    return results


if __name__ == "__main__":
    main()
