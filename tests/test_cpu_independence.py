"""The same scores and measures on every CPU (issue 28: on an AMD EPYC, AVX2 without AVX-512, 558 of the
11,200 scores of the CISI golden run differed in their last digits: numpy's vectorised ``log`` takes
Intel's SVML routines where a CPU has AVX-512, the C library's elsewhere, and the two differ in the last
bit now and then).

numpy's dispatch can be limited to its baseline with ``NPY_DISABLE_CPU_FEATURES`` (every dispatchable
feature this CPU has: ``X86_V3 X86_V4 AVX512_ICL AVX512_SPR`` here, read from numpy itself, which
refuses to disable a baseline one), and OpenBLAS's kernel chosen with ``OPENBLAS_CORETYPE``: a process
started so computes what a CPU without them computes. It must compute every score and measure value
here bit for bit as this process does: Cranfield searched with every BM25 variant on the numpy and the
compiled backends, with BM25F field weights, k3 and two shards; its run evaluated with graded,
geometric and user-model measures; and the golden CISI run of tests/evaluation/test_cisi_bar_golden.py.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve()
MEASURES = ["all_trec", "nDCG@10", "nDCG(dcg='exp-log2')@10", "ERR@20", "RBP@0.8", "bpref", "gm_map", "gm_bpref",
            "ndcg_cut.5,10", "ndcg_rel", "G", "binG", "Rndcg"]


def _bits(values) -> str:
    return hashlib.sha256(np.ascontiguousarray(values, dtype=np.float64).view(np.int64).tobytes()).hexdigest()[:16]


def fingerprint(folder: Path) -> dict[str, str]:
    """Digests of the float64 bits of every result computed here."""
    import tempfile

    from bm25lab import corpora
    from bm25lab.engine import Index, ShardedIndex, Tokenizer
    from bm25lab.engine.scoring import VARIANTS
    from bm25lab.evaluation import evaluate, read_qrels

    corpus = corpora.get("cranfield")
    docs, queries = list(corpus.documents()), corpus.judged_queries()
    out: dict[str, str] = {}
    tokenizer = Tokenizer("en")
    plain = Index.build(docs, tokenizer=tokenizer, workers=1, fields=["title", "text"])
    for backend in ("numpy", "core"):
        index = Index.build(docs, tokenizer=tokenizer, workers=1, backend=backend)
        for variant in VARIANTS:
            found = index.search_many(queries, k=100, variant=variant, workers=1)
            out[f"{backend} {variant}"] = _bits(np.concatenate([h.scores for h in found.values()]))
            if variant == "lucene":
                run = found
        found = index.search_many(queries, k=100, k3=8.0, workers=1)
        out[f"{backend} k3"] = _bits(np.concatenate([h.scores for h in found.values()]))
    found = plain.search_many(queries, k=100, field_weights="title=3,text=1", field_b="title=0.5", workers=1)
    out["bm25f"] = _bits(np.concatenate([h.scores for h in found.values()]))
    with tempfile.TemporaryDirectory(dir=folder) as where:
        sharded = ShardedIndex.build(docs, Path(where) / "s", 2, tokenizer=tokenizer, workers=1)
        for variant in ("lucene", "okapi", "bm25+"):
            found = sharded.search_many(queries, k=100, variant=variant, workers=1)
            out[f"sharded {variant}"] = _bits(np.concatenate([h.scores for h in found.values()]))
    result = evaluate(read_qrels(corpus.qrels_path), run, MEASURES)
    for measure, values in sorted(result.per_query.items()):
        ordered = [values[q] for q in sorted(values)]
        texts = any(isinstance(value, str) for value in ordered)  # relstring: the labels as text
        out[f"measure {measure}"] = hashlib.sha256(repr(ordered).encode()).hexdigest()[:16] if texts else _bits(ordered)
    out["means"] = _bits([result.mean[m] for m in sorted(result.mean) if isinstance(result.mean[m], float)])
    return out


def _disabled_features() -> str:
    """numpy's dispatchable CPU features that this CPU has (the baseline cannot be disabled)."""
    from numpy._core import _multiarray_umath as core

    return " ".join(f for f in core.__cpu_dispatch__ if core.__cpu_features__.get(f))


def _limited() -> dict[str, str]:
    return dict(os.environ, NPY_DISABLE_CPU_FEATURES=_disabled_features(), OPENBLAS_CORETYPE="Prescott")


def test_scores_and_measures_are_the_same_with_numpy_s_dispatch_limited(tmp_path: Path) -> None:
    here = fingerprint(tmp_path)
    done = subprocess.run([sys.executable, str(HERE), str(tmp_path)], capture_output=True, text=True, timeout=900,
                          env=_limited())
    assert done.returncode == 0, done.stderr[-3000:]
    there = json.loads(done.stdout.splitlines()[-1])
    assert there.keys() == here.keys()
    differ = [key for key in here if here[key] != there[key]]
    assert not differ, f"{len(differ)} results differ: {', '.join(differ)}"


def test_the_golden_cisi_run_with_numpy_s_dispatch_limited() -> None:
    golden = HERE.parent / "evaluation" / "test_cisi_bar_golden.py"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           f"{golden}::test_the_run_comes_from_the_original_files"], capture_output=True, text=True,
                          timeout=900, env=_limited(), cwd=HERE.parent.parent)
    assert done.returncode == 0, done.stdout[-3000:]


if __name__ == "__main__":
    print(json.dumps(fingerprint(Path(sys.argv[1]))))
