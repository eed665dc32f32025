"""One system's run of ``bench_engines.py``, in a fresh process: import, build, batch searches.

    python tests/benchmarks/engine_runner.py SYSTEM DATA_DIR OUT_JSON OPTIONS_JSON

Started by ``bench_engines.py`` with its working directory in a temporary folder (so no checkout
folder shadows an installed package) and the parent's environment less any ``BM25LAB_*`` variable.
Only the standard library is imported before the system's own import, which is timed: a process
that times bm25lab starts as a user's does (nothing of bm25lab, numpy or numba loaded beforehand,
no variable set). It reads what ``bench_engines.py`` wrote in DATA_DIR:

- ``corpus.txt``: one document a line, its tokens joined by single spaces (document ``i`` is ``d{i}``);
- ``queries.json``: the queries as token lists (query ``i`` is ``q{i}``).

Then it builds the system's index and times batches of all queries at every k of the options: the
first batch of each (k, configuration) alone, then warm batches (at least ``min_warm``, at most
``max_warm``, stopping once ``budget_s`` seconds of warm batches have run). It writes one JSON
object to OUT_JSON: import and build seconds, the batch timings, peak RSS, and the top-10 of the first
``agree_queries`` queries (document numbers and scores), which the parent compares across systems.

Systems (the input each gets is the one its public API takes):

- ``bm25lab``: ``Index.build(zip(ids, texts), tokenizer=Tokenizer("whitespace", stopwords=None))``
  and ``index.search_many({qid: text}, k=k)``, every argument left at its default;
  ``bm25lab-numba``: the same with ``backend="numba"`` given to ``Index.build`` (skipped if
  ``Index.build`` has no ``backend`` parameter);
- ``pisa``: pyterrier-pisa, ``PisaIndex(stemmer="none", stops="none")`` indexed from the texts by
  PISA's own parser (which keeps tokens like ``w123`` whole), ``.bm25(k1=0.9, b=0.4,
  num_results=k, threads=t)`` on a DataFrame of query texts, t = 1 and 2;
- ``tantivy``: a text field with a whitespace-only analyser (no lowercasing, no stemming), term
  frequencies without positions, written with 2 threads; ``searcher.search(index.parse_query(text),
  k, count=False)`` per query (OR of the terms), in one thread and in 2 threads;
- ``bm25s``: ``BM25(method="lucene", k1=0.9, b=0.4)`` indexed from the token lists;
  ``retrieve(token lists, k)`` with the numba backend (n_threads 2 and 1) and the numpy backend;
- ``rank-bm25``: ``BM25Okapi(token lists, k1=0.9, b=0.4)``; ``get_scores`` + top-k on
  ``rank_queries`` queries only (seconds per query, extrapolated by the parent).
"""
from __future__ import annotations

import json
import os
import resource
import sys
import time
from typing import Any, Callable

K1, B = 0.9, 0.4


def now() -> float:
    return time.perf_counter()


def read_corpus(data: str) -> list[str]:
    with open(os.path.join(data, "corpus.txt"), encoding="utf-8") as stream:
        return stream.read().split("\n")[:-1]


def read_queries(data: str) -> list[list[str]]:
    with open(os.path.join(data, "queries.json"), encoding="utf-8") as stream:
        return json.load(stream)


def batches(run: Callable[[], Any], opts: dict[str, Any]) -> dict[str, Any]:
    """The first call's seconds, then warm calls' seconds (see the module docstring)."""
    start = now()
    run()
    first = now() - start
    warm: list[float] = []
    while len(warm) < opts["max_warm"] and (len(warm) < opts["min_warm"] or sum(warm) < opts["budget_s"]):
        start = now()
        run()
        warm.append(now() - start)
    return {"first_s": first, "warm_s": warm}


def doc_number(doc_id: str) -> int:
    return int(doc_id[1:])


# ---------------------------------------------------------------------- systems
def run_bm25lab(data: str, opts: dict[str, Any], backend: str | None = None) -> dict[str, Any]:
    start = now()
    from bm25lab import Index, Tokenizer
    import_s = now() - start
    import inspect

    kwargs: dict[str, Any] = {}
    if backend is not None:
        if "backend" not in inspect.signature(Index.build).parameters:
            return {"skipped": "Index.build has no backend parameter"}
        kwargs["backend"] = backend
    texts = read_corpus(data)
    ids = [f"d{i}" for i in range(len(texts))]
    queries = {f"q{i}": " ".join(q) for i, q in enumerate(read_queries(data))}
    start = now()
    index = Index.build(zip(ids, texts), tokenizer=Tokenizer("whitespace", stopwords=None), **kwargs)
    out: dict[str, Any] = {"import_s": import_s, "build_s": now() - start, "batches": {}}
    for k in opts["ks"]:
        out["batches"][f"k={k}"] = batches(lambda: index.search_many(queries, k=k), opts)
    sample = dict(list(queries.items())[:opts["agree_queries"]])
    out["top10"] = [[list(map(doc_number, hits.doc_ids)), hits.scores]
                    for hits in index.search_many(sample, k=10).values()]
    return out


def run_pisa(data: str, opts: dict[str, Any]) -> dict[str, Any]:
    start = now()
    import pandas as pd
    import pyterrier_pisa
    import_s = now() - start
    try:
        pyterrier_pisa.log_level(False)  # its C++ progress lines (absent from some builds)
    except AttributeError:
        pass
    texts = read_corpus(data)
    queries = read_queries(data)
    frame = pd.DataFrame({"qid": [f"q{i}" for i in range(len(queries))], "query": [" ".join(q) for q in queries]})
    index = pyterrier_pisa.PisaIndex(os.path.join(opts["workdir"], "pisa"), stemmer="none", stops="none",
                                     threads=opts["build_threads"])
    start = now()
    index.index({"docno": f"d{i}", "text": text} for i, text in enumerate(texts))
    index_s = now() - start
    out: dict[str, Any] = {"import_s": import_s, "index_s": index_s, "batches": {}, "terms": index.num_terms()}
    # The first bm25() over an index compresses it for the scorer (block-max data, written to the
    # index folder); later ones load that. Both are part of what a user waits for before searching.
    start = now()
    retrievers = {(10, 1): index.bm25(k1=K1, b=B, num_results=10, threads=1)}
    out["prepare_s"] = now() - start
    out["build_s"] = index_s + out["prepare_s"]
    start = now()
    for k in opts["ks"]:
        for threads in opts["pisa_threads"]:
            if (k, threads) not in retrievers:
                retrievers[(k, threads)] = index.bm25(k1=K1, b=B, num_results=k, threads=threads)
    out["load_retrievers_s"] = now() - start
    for k in opts["ks"]:
        for threads in opts["pisa_threads"]:
            out["batches"][f"k={k}, threads={threads}"] = batches(lambda: retrievers[(k, threads)](frame), opts)
    result = retrievers[(10, 1)](frame.iloc[:opts["agree_queries"]])
    found = {qid: [list(map(doc_number, group["docno"])), group["score"].astype(float).tolist()]
             for qid, group in result.groupby("qid", sort=False)}
    out["top10"] = [found.get(qid, [[], []]) for qid in frame["qid"][:opts["agree_queries"]]]
    return out


def run_tantivy(data: str, opts: dict[str, Any]) -> dict[str, Any]:
    start = now()
    import tantivy
    import_s = now() - start
    from concurrent.futures import ThreadPoolExecutor

    texts = read_corpus(data)
    queries = [" ".join(q) for q in read_queries(data)]
    builder = tantivy.SchemaBuilder()
    builder.add_unsigned_field("n", stored=True)  # the document's number, to report its results
    builder.add_text_field("body", stored=False, tokenizer_name="ws_raw", index_option="freq")
    schema = builder.build()
    start = now()
    path = os.path.join(opts["workdir"], "tantivy")
    os.mkdir(path)
    index = tantivy.Index(schema, path=path)
    index.register_tokenizer("ws_raw", tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).build())
    writer = index.writer(opts["tantivy_heap"], opts["build_threads"])
    for i, text in enumerate(texts):
        writer.add_document(tantivy.Document(n=i, body=text))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    searcher = index.searcher()
    out: dict[str, Any] = {"import_s": import_s, "build_s": now() - start, "batches": {},
                           "segments": searcher.num_segments}

    def one(text: str, k: int) -> list:
        return searcher.search(index.parse_query(text, ["body"]), k, count=False).hits

    for k in opts["ks"]:
        out["batches"][f"k={k}, threads=1"] = batches(lambda: [one(q, k) for q in queries], opts)
        with ThreadPoolExecutor(2) as pool:
            out["batches"][f"k={k}, threads=2"] = batches(
                lambda: list(pool.map(lambda q: one(q, k), queries, chunksize=50)), opts)
    top = []
    for text in queries[:opts["agree_queries"]]:
        hits = one(text, 10)
        top.append([[searcher.doc(address)["n"][0] for _, address in hits], [score for score, _ in hits]])
    out["top10"] = top
    return out


def run_bm25s(data: str, opts: dict[str, Any]) -> dict[str, Any]:
    start = now()
    import bm25s
    import_s = now() - start
    import copy
    import logging

    logging.getLogger("bm25s").setLevel(logging.ERROR)
    tokens = [text.split(" ") for text in read_corpus(data)]
    queries = read_queries(data)
    start = now()
    retriever = bm25s.BM25(method="lucene", k1=K1, b=B, backend="numba")
    retriever.index(tokens, show_progress=False)
    out: dict[str, Any] = {"import_s": import_s, "build_s": now() - start, "batches": {}}
    numpy_view = copy.copy(retriever)  # the same index arrays, retrieved by the numpy backend
    numpy_view.backend = "numpy"
    configs = {"numba, n_threads=2": (retriever, "numba", 2), "numba, n_threads=1": (retriever, "numba", 1),
               "numpy, n_threads=0": (numpy_view, "numpy", 0)}
    for k in opts["ks"]:
        for name, (model, backend, threads) in configs.items():
            def run(model: Any = model, backend: str = backend, threads: int = threads) -> Any:
                return model.retrieve(queries, k=k, n_threads=threads, show_progress=False,
                                      backend_selection=backend)
            out["batches"][f"k={k}, {name}"] = batches(run, opts)
    docs, scores = retriever.retrieve(queries[:opts["agree_queries"]], k=10, n_threads=1, show_progress=False,
                                      backend_selection="numba")
    out["top10"] = [[[int(d) for d, s in zip(row_d, row_s) if s > 0], [float(s) for s in row_s if s > 0]]
                    for row_d, row_s in zip(docs.tolist(), scores.tolist())]
    return out


def run_rank_bm25(data: str, opts: dict[str, Any]) -> dict[str, Any]:
    start = now()
    import numpy as np
    from rank_bm25 import BM25Okapi
    import_s = now() - start

    tokens = [text.split(" ") for text in read_corpus(data)]
    queries = read_queries(data)[:opts["rank_queries"]]
    start = now()
    model = BM25Okapi(tokens, k1=K1, b=B)
    out: dict[str, Any] = {"import_s": import_s, "build_s": now() - start, "batches": {}}
    for k in opts["ks"]:
        def run() -> list:
            found = []
            for query in queries:
                scores = model.get_scores(query)
                top = np.argpartition(-scores, min(k, len(scores) - 1))[:k]
                found.append(top[np.argsort(-scores[top])])
            return found
        start = now()
        run()
        out["batches"][f"k={k}"] = {"first_s": now() - start, "warm_s": [], "queries": len(queries)}
    return out


SYSTEMS: dict[str, Callable[[str, dict[str, Any]], dict[str, Any]]] = {
    "bm25lab": run_bm25lab,
    "bm25lab-numba": lambda data, opts: run_bm25lab(data, opts, backend="numba"),
    "pisa": run_pisa,
    "tantivy": run_tantivy,
    "bm25s": run_bm25s,
    "rank-bm25": run_rank_bm25,
}


def main() -> None:
    system, data, out_path, options = sys.argv[1:5]
    opts = json.loads(options)
    load_start = os.getloadavg()[0]
    out = SYSTEMS[system](data, opts)
    out["loadavg_start"] = load_start
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with open(out_path, "w", encoding="utf-8") as stream:
        json.dump(out, stream)


if __name__ == "__main__":
    main()
