"""Regenerate the golden files of this folder with NIST's trec_eval 10.0 (not run by the tests).

    python tests/evaluation/golden/trec_eval_10/make_golden.py [../shared/tools/trec_eval-10.0.tar.gz]

1. Builds trec_eval 10.0 from NIST's source archive twice in a temporary folder: as released (and
   checks that its own ``make quicktest`` passes), and a copy whose only change is its number
   format, ``%6.4f`` -> ``%.17g`` in ``meas_print_single.c`` and ``meas_print_final.c``, so that the
   golden values carry every digit of the double trec_eval computed (the NIST licence allows
   modified works that say what changed: this paragraph does, and the files it writes say which
   build made them).
2. Copies trec_eval's own ``test/`` inputs and expected outputs (those of the measures and formats
   bm25lab has) into ``quicktest/``, the large comment-test run gzipped.
3. Writes adversarial cases into ``adversarial/``: seeded random qrels and runs with score ties,
   ids that differ in case, length or script, negative and non-integer labels (``2.5``, ``1e1``,
   read by trec_eval with ``atol``), queries missing on either side, one-document rankings and
   junk after a run line's sixth field; each is evaluated by the widened build under several option
   sets (``-c``, ``-l``, ``-J``, ``-M``, ``-N``, gain maps, measure parameters), and
   ``manifest.json`` lists every (qrels, run, arguments, output) quadruple. trec_eval 10.0 stops
   with exit code 4 ("result qid ... not found in qrels") when a judged query is missing from the
   run and ``-c`` is not given: those combinations have no output.
4. Writes ``cranfield/``: bm25lab's BM25 run (default parameters, top 100) on the bundled Cranfield
   collection and its qrels (graded, 1..4) as inputs, evaluated by the widened build with ``-m
   all_trec`` under ``-l1``, ``-l2``, ``-l3`` and ``-J``: a real run, graded judgments.
"""
from __future__ import annotations

import gzip
import json
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ARCHIVE = HERE.parents[3] / ".." / "shared" / "tools" / "trec_eval-10.0.tar.gz"
QUICKTEST_FILES = [
    "qrels.test", "qrels.test.with-comments", "qrels.rel_level", "qrels.comment.test", "results.test",
    "results.trunc", "out.test", "out.test.a", "out.test.aq", "out.test.aqc", "out.test.aqcM", "out.test.aql",
    "out.test.meas_params", "out.comment.test",
]
GZIPPED = {"results.comment.test"}

# every option set runs with -q -m all_trec, and with these measure parameters
PARAMETERS = [
    "-m", "ndcg.1=3,2=0.5,0=-1,4=4.5", "-m", "G.2=0.4,1=3", "-m", "ndcg_rel.1=2,3=0.5", "-m", "Rndcg.3=1,1=3",
    "-m", "utility.2,-1,-0.5,0.25", "-m", "11pt_avg..25,.5,.75", "-m", "Rprec_mult.0.5,1.5,3",
    "-m", "relstring.5", "-m", "unj.1,3", "-m", "relative_P.2,7",
    "-m", "iprec_at_recall..15,.35,.5", "-m", "P.3,7", "-m", "success.2", "-m", "ndcg_cut.3,7",
]
# trec_eval 10.0 crashes when dcg or ideal_dcg is asked together with a gain-mapped ndcg (one shared parameter
# block in m_ndcg.c): they run on their own
DCG_MEASURES = ["-m", "dcg", "-m", "ideal_dcg", "-m", "ndcg"]
OPTION_SETS = {
    "plain": [],
    "c": ["-c"],
    "l2": ["-l2"],
    "J": ["-J"],
    "cM3": ["-c", "-M3"],
    "l2J": ["-l2", "-J"],
    "N500": ["-N500"],
}
STEMS = ["d", "D", "dd", "d1", "d10", "d2", "é", "中", "a", "A", "b", "B", "ab", "aB", "Ab", "AB"]
LABELS = ["-2", "-1", "0", "0", "0", "1", "1", "2", "3", "4", "2.5", "1e1", "-0.5", "10"]


def build(archive: Path, folder: Path, widen: bool) -> Path:
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter="data")
    source = next(folder.iterdir())
    if widen:
        for name in ("meas_print_single.c", "meas_print_final.c"):
            path = source / name
            path.write_text(path.read_text().replace("%6.4f", "%.17g"))
    subprocess.run(["make", "-s", "-C", str(source)], check=True, capture_output=True)
    return source


def adversarial_case(seed: int) -> tuple[str, str]:
    """(qrels text, run text) of one generated case."""
    rng = random.Random(seed)
    docs = list(dict.fromkeys(rng.choice(STEMS) + str(rng.randint(0, 6)) for _ in range(45)))
    qrels, run = [], []
    every_query_ranked = rng.random() < 0.5  # else some judged queries miss from the run (for -c)
    for q in range(rng.randint(2, 6)):
        qid = f"q{q}"
        judged = rng.sample(docs, rng.randint(1, min(18, len(docs))))
        labels = [rng.choice(LABELS) for _ in judged]
        if all(label.startswith("-") for label in labels):
            labels[0] = "0"
        if rng.random() < 0.85:
            qrels += [f"{qid} 0 {doc} {label}" for doc, label in zip(judged, labels)]
        if every_query_ranked or rng.random() < 0.8:
            depth = rng.choice([1, 1, 2, 5, 12, 20, len(docs)])
            ties = rng.choice([None, [0.0, 1.0], [0.0, 0.5, 1.0, 1.5], [-1.0, 0.0], [2.0]])
            for rank, doc in enumerate(rng.sample(docs, depth), 1):
                score = rng.choice(ties) if ties else round(rng.uniform(-5, 5), rng.choice([1, 3, 9]))
                junk = " more junk" if rng.random() < 0.1 else ""
                run.append(f"{qid} Q0 {doc} {rank} {score} run{seed}{junk}")
    if not qrels:
        qrels.append(f"q0 0 {docs[0]} 1")
    if not run:
        run.append(f"q0 Q0 {docs[0]} 1 1.0 run{seed}")
    rng.shuffle(run)
    return "\n".join(qrels) + "\n", "\n".join(run) + "\n"


def cranfield(widened: Path) -> list[dict]:
    """The real-run cases: inputs and outputs in ``cranfield/``, manifest entries relative to ``adversarial/``."""
    from bm25lab import corpora
    from bm25lab.engine import Index, Tokenizer
    from bm25lab.evaluation import write_run

    folder = HERE / "cranfield"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    collection = corpora.get("cranfield")
    index = Index.build(collection.documents(), tokenizer=Tokenizer("en"))
    write_run(index.search_many(collection.queries(), k=100), folder / "bm25-top100.run")
    shutil.copyfile(collection.qrels_path, folder / "qrels.trec")
    entries = []
    for label, options in {"l1": ["-l1"], "l2": ["-l2"], "l3": ["-l3"], "J": ["-J"]}.items():
        args = ["-q", "-m", "all_trec", *options]
        done = subprocess.run([str(widened / "trec_eval"), *args, "qrels.trec", "bm25-top100.run"], cwd=folder,
                              capture_output=True, text=True, check=True)
        (folder / f"bm25.{label}.out.gz").write_bytes(gzip.compress(done.stdout.encode(), mtime=0))
        entries.append({"qrels": "../cranfield/qrels.trec", "run": "../cranfield/bm25-top100.run.gz", "args": args,
                        "out": f"../cranfield/bm25.{label}.out.gz"})
    run_path = folder / "bm25-top100.run"
    (folder / "bm25-top100.run.gz").write_bytes(gzip.compress(run_path.read_bytes(), mtime=0))
    run_path.unlink()
    return entries


def main(archive: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        released = build(archive, Path(tmp) / "released", widen=False)
        subprocess.run(["make", "-s", "-C", str(released), "quicktest"], check=True, capture_output=True)
        widened = build(archive, Path(tmp) / "widened", widen=True)

        quick = HERE / "quicktest"
        quick.mkdir(exist_ok=True)
        for name in QUICKTEST_FILES:
            shutil.copyfile(released / "test" / name, quick / name)
        for name in GZIPPED:
            (quick / f"{name}.gz").write_bytes(gzip.compress((released / "test" / name).read_bytes(), mtime=0))
        shutil.copyfile(released / "LICENSE.md", HERE / "LICENSE.md")

        cases = HERE / "adversarial"
        shutil.rmtree(cases, ignore_errors=True)
        cases.mkdir()
        manifest = []
        for seed in range(40):
            qrels, run = adversarial_case(seed)
            (cases / f"case{seed:02d}.qrels").write_text(qrels)
            (cases / f"case{seed:02d}.run").write_text(run)
            runs = [(label, ["-q", "-m", "all_trec", *PARAMETERS, *options]) for label, options in OPTION_SETS.items()]
            runs += [(f"dcg.{label}", ["-q", *DCG_MEASURES, *OPTION_SETS[label]]) for label in ("plain", "J", "cM3")]
            for label, args in runs:
                done = subprocess.run([str(widened / "trec_eval"), *args, f"case{seed:02d}.qrels", f"case{seed:02d}.run"],
                                      cwd=cases, capture_output=True, text=True)
                out = f"case{seed:02d}.{label}.out.gz"
                if done.returncode != 0:  # 10.0 stops when a judged query misses from the run without -c
                    continue
                (cases / out).write_bytes(gzip.compress(done.stdout.encode(), mtime=0))
                manifest.append({"qrels": f"case{seed:02d}.qrels", "run": f"case{seed:02d}.run", "args": args, "out": out})
        manifest += cranfield(widened)
        (cases / "manifest.json").write_text(json.dumps({
            "made_by": "trec_eval 10.0 (NIST) built from trec_eval-10.0.tar.gz with its printf formats widened "
                       "from %6.4f to %.17g (meas_print_single.c, meas_print_final.c); nothing else changed",
            "cases": manifest,
        }, indent=1) + "\n")
        print(f"{len(manifest)} outputs in {cases}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ARCHIVE)
