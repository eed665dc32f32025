"""Chinese tokenization: bm25lab ``Tokenizer("zh").tokenize_many(workers=2)`` vs one plain jieba process.

    python tests/benchmarks/bench_tokenize.py --small        # 1,000 texts, 3 repetitions
    python tests/benchmarks/bench_tokenize.py                # CMRC 2018 paragraphs repeated to 50,000, once
                                                             # (26 M characters: jieba alone takes minutes)

Texts: the CMRC 2018 documents (title and text, as indexed) repeated until ``--texts``, NFKC
normalised beforehand so that plain jieba reads exactly what bm25lab's jieba step reads. Systems,
alternating, median of ``--reps``:

- ``jieba.lcut`` over every text in this process (precise mode, HMM on: jieba's defaults);
- ``Tokenizer("zh", stopwords=None).tokenize_many(texts, workers=1)`` and ``workers=2``.

Same tokens: bm25lab's zh path is jieba's precise cut, lowercased, with pieces that hold no letter
or digit dropped; the check applies exactly that filter to jieba's output and requires equality for
every text, and equality of the workers=1 and workers=2 outputs. Target: workers=2 at least 10x
faster than plain jieba (issue: Chinese tokenization at least 10x one jieba process).
"""
from __future__ import annotations

import argparse
import re
import sys
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


def run(texts: list[str], reps: int) -> dict[str, Any]:
    import jieba

    from bm25lab.engine import Tokenizer

    jieba.setLogLevel(60)
    jieba.initialize()
    tok = Tokenizer("zh", stopwords=None)
    tok.tokenize(texts[0])  # loads bm25lab's jieba dictionary in this process (forked workers inherit it)
    outputs: dict[str, list[list[str]]] = {}

    def system(name: str, fn: Any) -> Any:
        def go() -> None:
            outputs[name] = fn()
        return go

    systems = {
        "jieba.lcut, one process": system("jieba", lambda: [jieba.lcut(t) for t in texts]),
        "bm25lab tokenize_many (workers=1)": system("w1", lambda: list(tok.tokenize_many(texts, workers=1))),
        "bm25lab tokenize_many (workers=2)": system("w2", lambda: list(tok.tokenize_many(texts, workers=2))),
    }
    times = bl.alternate(systems, reps)
    same_w = outputs["w1"] == outputs["w2"]
    mismatches = sum(1 for a, b in zip(outputs["jieba"], outputs["w2"]) if jieba_filtered(a) != b)
    chars = sum(len(t) for t in texts)
    return {"texts": len(texts), "chars": chars, "median_s": {n: bl.median(v) for n, v in times.items()},
            "workers_1_equals_2": same_w, "texts_differing_from_jieba": mismatches}


def report(results: dict[str, Any]) -> str:
    t = results["tokenize"]
    med = t["median_s"]
    base = med["jieba.lcut, one process"]
    rows = [(n, f"{s:.2f}", f"{t['chars'] / s / 1e6:.2f}", f"{base / s:.2f}x") for n, s in med.items()]
    return "\n".join([
        f"### Chinese tokenization of {t['texts']:,} CMRC paragraphs ({t['chars'] / 1e6:.1f} M characters; "
        f"median of {results['reps']})",
        bl.markdown_table(["system", "seconds", "M chars/s", "speed-up vs jieba"], rows),
        f"same tokens: workers=1 == workers=2: {t['workers_1_equals_2']}; texts differing from filtered "
        f"jieba.lcut: {t['texts_differing_from_jieba']}",
    ])


def summary_rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    t = results["tokenize"]
    med = t["median_s"]
    lab, peer = med["bm25lab tokenize_many (workers=2)"], med["jieba.lcut, one process"]
    same = t["workers_1_equals_2"] and t["texts_differing_from_jieba"] == 0
    return [{"case": f"Chinese tokenization, {t['texts']:,} texts, 2 workers (s)", "bm25lab": f"{lab:.2f}",
             "peer": f"jieba.lcut: {peer:.2f}", "ratio": lab / peer, "target": "<= 0.1 (10x), same tokens",
             "met": lab * 10 <= peer and same}]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", action="store_true", help="1,000 texts")
    parser.add_argument("--texts", type=int, help="number of texts (default 50,000; 1,000 with --small)")
    parser.add_argument("--reps", type=int, help="repetitions (default 1; 3 with --small)")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    info = bl.machine_info()
    print(bl.machine_line(info), flush=True)
    texts = cmrc_texts(args.texts or (1_000 if args.small else 50_000))
    reps = args.reps or (3 if args.small else 1)
    results = {"machine": info, "reps": reps, "tokenize": run(texts, reps)}
    results["summary"] = summary_rows(results)
    print(report(results))
    bl.write_json(args.json, results)
    return results


if __name__ == "__main__":
    main()
