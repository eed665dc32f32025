"""Regenerate the bundled corpora from the raw collections in ``../shared/corpora``.

Usage::

    python -m bm25lab.corpora.convert /work/shared/corpora [--out corpora/] [NAME ...]

Each collection becomes ``<out>/<name>/`` holding

- ``docs.jsonl.gz``: one ``{"id", "title", "text", ...metadata}`` object per line (UTF-8, compact JSON,
  gzip level 9 with mtime 0 and no file name, so re-running gives byte-identical files);
- ``queries.jsonl``: one ``{"id", "text", ...metadata}`` object per line, every query of the source;
- ``qrels.trec``: TREC qrels ``qid 0 docid grade``, one judgment a line;
- ``meta.json``: name, language, description, licence, source and the counts the loader reports;
- ``LICENCE`` (and other files) copied byte for byte where the source ships them.

The hand-written ``README.md`` of each collection is left alone. The conversion checks what the
loaders rely on (unique ids, every judged query and document present) and stops with an error
otherwise. Only the standard library is used; the bundle never needs ``../shared`` at run time.
"""
from __future__ import annotations

import argparse
import gzip
import io
import json
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from . import DOCS_FILE, FORMAT_VERSION, META_FILE, QRELS_FILE, QUERIES_FILE

Record = dict[str, Any]
Qrel = tuple[str, str, int]


@dataclass(frozen=True)
class Converted:
    """One collection in the bundle's shape, before it is written."""

    documents: list[Record]
    queries: list[Record]
    qrels: list[Qrel]
    copies: dict[str, Path] = field(default_factory=dict)  # bundle file name -> source file


@dataclass(frozen=True)
class Spec:
    """What the bundle says about a collection and how to convert it from its raw folder."""

    folder: str
    language: str
    description: str
    licence: str
    source: str
    grades: str
    convert: Callable[[Path], Converted]


# --------------------------------------------------------------------------- SMART format

_MARKER = re.compile(r"^\.([A-Z])(?:[ \t]+(\S+))?[ \t]*$")


def _smart_records(path: Path) -> Iterator[tuple[str, list[tuple[str, list[str]]]]]:
    """``(id, [(field letter, lines), ...])`` per ``.I`` record of a SMART file (CRLF or LF)."""
    record_id: str | None = None
    blocks: list[tuple[str, list[str]]] = []
    for line in path.read_text(encoding="ascii").splitlines():
        marker = _MARKER.match(line)
        if marker and marker.group(1) == "I":
            if record_id is not None:
                yield record_id, blocks
            record_id, blocks = marker.group(2), []
        elif marker and marker.group(2) is None:
            blocks.append((marker.group(1), []))
        elif blocks:
            blocks[-1][1].append(line)
        elif line.strip():
            raise ValueError(f"{path}: text before the first field marker: {line!r}")
    if record_id is not None:
        yield record_id, blocks


def _squash(lines: Iterable[str]) -> str:
    """Hard-wrapped lines joined into one line, runs of whitespace collapsed."""
    return " ".join(" ".join(lines).split())


def _fields_strays_in_text(blocks: list[tuple[str, list[str]]]) -> dict[str, list[list[str]]]:
    """Cranfield: once ``.W`` has started, later markers are stray lines inside the text.

    Three Cranfield records (240, 576, 578) repeat ``.A``/``.B``/``.W`` inside their abstract; their
    content stays in the text and the marker lines are dropped.
    """
    fields: dict[str, list[list[str]]] = {}
    for letter, lines in blocks:
        if "W" in fields:
            fields["W"][0].extend(lines)
        else:
            fields.setdefault(letter, []).append(list(lines))
    return fields


def _fields_repeatable(blocks: list[tuple[str, list[str]]]) -> dict[str, list[list[str]]]:
    """CISI: a repeated marker starts another value of the field (one ``.A`` per author)."""
    fields: dict[str, list[list[str]]] = {}
    for letter, lines in blocks:
        fields.setdefault(letter, []).append(list(lines))
    return fields


def _one(fields: dict[str, list[list[str]]], letter: str) -> str:
    return " ".join(_squash(v) for v in fields.get(letter, []) if _squash(v))


# --------------------------------------------------------------------------- Cranfield


def _cranfield_grade(raw: str, where: str) -> int:
    """Cleverdon's inverted scale to gains: 1 (complete answer) .. 4 (minimum interest) -> 4 .. 1.

    ``-1`` ("references of no interest", Cleverdon's code 5) becomes 0: judged non-relevant.
    """
    grade = int(raw)
    if grade == -1:
        return 0
    if 1 <= grade <= 4:
        return 5 - grade
    raise ValueError(f"{where}: unexpected Cranfield grade {raw}")


def _convert_cranfield(folder: Path) -> Converted:
    documents = []
    for doc_id, blocks in _smart_records(folder / "cran.all.1400"):
        fields = _fields_strays_in_text(blocks)
        documents.append(
            {"id": doc_id, "title": _one(fields, "T"), "text": _one(fields, "W"),
             "author": _one(fields, "A"), "bib": _one(fields, "B")}
        )
    queries = []
    for number, (qry_id, blocks) in enumerate(_smart_records(folder / "cran.qry"), start=1):
        fields = _fields_repeatable(blocks)
        queries.append({"id": str(number), "text": _one(fields, "W"), "cran_qry_id": qry_id})
    qrels = []
    for lineno, line in enumerate((folder / "cranqrel").read_text(encoding="ascii").splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 3:
            raise ValueError(f"cranqrel:{lineno}: expected 'qid docid grade': {line!r}")
        qrels.append((str(int(parts[0])), str(int(parts[1])), _cranfield_grade(parts[2], f"cranqrel:{lineno}")))
    return Converted(documents, queries, qrels)


# --------------------------------------------------------------------------- CISI


def _convert_cisi(folder: Path) -> Converted:
    documents = []
    for doc_id, blocks in _smart_records(folder / "CISI.ALL"):
        fields = _fields_repeatable(blocks)
        doc: Record = {"id": doc_id, "title": _one(fields, "T"), "text": _one(fields, "W"),
                       "author": "; ".join(_squash(v) for v in fields.get("A", []) if _squash(v))}
        if _one(fields, "B"):
            doc["bib"] = _one(fields, "B")
        documents.append(doc)
    queries = []
    for qid, blocks in _smart_records(folder / "CISI.QRY"):
        fields = _fields_repeatable(blocks)
        text = " ".join(t for t in (_one(fields, "T"), _one(fields, "W")) if t)
        queries.append({"id": qid, "text": text})
    qrels = []
    for lineno, line in enumerate((folder / "CISI.REL").read_text(encoding="ascii").splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 4 or parts[2] != "0" or float(parts[3]) != 0.0:
            raise ValueError(f"CISI.REL:{lineno}: expected 'qid docid 0 0.000000': {line!r}")
        qrels.append((parts[0], parts[1], 1))
    return Converted(documents, queries, qrels)


# --------------------------------------------------------------------------- CMRC 2018


def _jsonl(path: Path) -> Iterator[Record]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as stream:  # type: ignore[operator]
        for line in stream:
            if line.strip():
                yield json.loads(line)


def _convert_cmrc2018(folder: Path) -> Converted:
    documents = [{"id": d["_id"], "title": d["title"], "text": d["text"]}
                 for d in _jsonl(folder / "derived_corpus.jsonl")]
    queries = [{"id": q["_id"], "text": q["text"]} for q in _jsonl(folder / "derived_queries.jsonl")]
    qrels = []
    lines = (folder / "derived_qrels.tsv").read_text(encoding="utf-8").splitlines()
    if lines[0].split("\t") != ["query-id", "corpus-id", "score"]:
        raise ValueError(f"derived_qrels.tsv: unexpected header {lines[0]!r}")
    for qid, docid, score in (line.split("\t") for line in lines[1:] if line.strip()):
        qrels.append((qid, docid, int(score)))
    return Converted(documents, queries, qrels, {"LICENCE": folder / "raw" / "LICENCE"})


# --------------------------------------------------------------------------- LeCaRD


def _convert_lecard(folder: Path) -> Converted:
    documents = [{"id": d["id"], "title": d["ajName"].strip(), "text": d["ajjbqk"].strip()}
                 for d in _jsonl(folder / "corpus.jsonl.gz")]
    queries = [{"id": str(q["ridx"]), "text": q["q"].strip(), "crime": q["crime"]}
               for q in _jsonl(folder / "queries.jsonl")]
    qrels = []
    for lineno, line in enumerate((folder / "qrels_top30.trec").read_text(encoding="utf-8").splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 4 or parts[1] != "0" or parts[3] not in {"0", "1", "2", "3"}:
            raise ValueError(f"qrels_top30.trec:{lineno}: expected 'qid 0 docid 0..3': {line!r}")
        qrels.append((parts[0], parts[2], int(parts[3])))
    return Converted(documents, queries, qrels,
                     {"LICENCE": folder / "LICENSE", "candidates.tsv": folder / "candidate_pools.tsv"})


SPECS: dict[str, Spec] = {
    "cranfield": Spec(
        folder="cranfield",
        language="en",
        description="Cranfield 1400: aeronautics abstracts, 225 queries with graded judgments",
        licence="none stated (classic research collection distributed by the Glasgow IR group)",
        source="github.com/noramtboraas/information-retrieval@4ea1b8e02da1db64b68b0364d50620b3c95528dc",
        grades="0-4 (gain = 5 - Cleverdon grade; -1 'no interest' -> 0)",
        convert=_convert_cranfield,
    ),
    "cisi": Spec(
        folder="cisi",
        language="en",
        description="CISI: library and information science abstracts, 112 queries (76 judged), binary judgments",
        licence="none stated (classic research collection distributed by the Glasgow IR group)",
        source="github.com/Shakiba-Alipour/Information-Retrieval-on-CISI@7a23c34602e8949d795bb1835004546e00d1d1ba",
        grades="1 (binary)",
        convert=_convert_cisi,
    ),
    "cmrc2018": Spec(
        folder="cmrc2018",
        language="zh",
        description="CMRC 2018 (dev + trial) Wikipedia paragraphs; each question judged relevant to its paragraph",
        licence="CC BY-SA 4.0",
        source="github.com/ymcui/cmrc2018@c0eb1b6ba219847457e6af3180da722bbeb656af",
        grades="1 (binary, one paragraph per question)",
        convert=_convert_cmrc2018,
    ),
    "lecard-10q": Spec(
        folder="lecard-10q",
        language="zh",
        description="LeCaRD legal case retrieval, first 10 queries and their candidate pools (case facts)",
        licence="MIT",
        source="github.com/myx666/LeCaRD (candidates via github.com/Wenorm/BERT-PLI@9d1e5c0b8cd3afc50cce599ea417009e710815fc)",
        grades="0-3 (top 30 of each pool judged)",
        convert=_convert_lecard,
    ),
}


# --------------------------------------------------------------------------- checks and writing


def check(name: str, converted: Converted) -> None:
    """Raise ValueError unless ids are unique and every judgment names a known query and document."""
    doc_ids = [d["id"] for d in converted.documents]
    query_ids = [q["id"] for q in converted.queries]
    for what, ids in (("document", doc_ids), ("query", query_ids)):
        if len(set(ids)) != len(ids):
            raise ValueError(f"{name}: duplicate {what} ids")
        if any(not isinstance(i, str) or not i or i != i.strip() or " " in i for i in ids):
            raise ValueError(f"{name}: empty or blank-containing {what} id")
    known_docs, known_queries = set(doc_ids), set(query_ids)
    pairs = [(q, d) for q, d, _ in converted.qrels]
    if len(set(pairs)) != len(pairs):
        raise ValueError(f"{name}: duplicate (query, document) judgments")
    unknown = sorted({d for _, d in pairs} - known_docs) + sorted({q for q, _ in pairs} - known_queries)
    if unknown:
        raise ValueError(f"{name}: qrels name unknown ids: {unknown[:10]}")


def _jsonl_bytes(records: Iterable[Record]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records).encode("utf-8")


def gzip_bytes(data: bytes) -> bytes:
    """Deterministic gzip: level 9, mtime 0, no file name, so equal input gives equal bytes."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, compresslevel=9, mtime=0) as stream:
        stream.write(data)
    return buffer.getvalue()


def meta_for(name: str, spec: Spec, converted: Converted) -> dict[str, Any]:
    """The ``meta.json`` content: descriptive fields and the counts the loader reports."""
    return {
        "format_version": FORMAT_VERSION,
        "name": name,
        "language": spec.language,
        "description": spec.description,
        "licence": spec.licence,
        "source": spec.source,
        "grades": spec.grades,
        "num_docs": len(converted.documents),
        "num_queries": len(converted.queries),
        "num_judged_queries": len({q for q, _, _ in converted.qrels}),
        "num_judgments": len(converted.qrels),
    }


def write(name: str, spec: Spec, converted: Converted, out: Path) -> Path:
    """Write one collection's files under ``out/name`` and return that folder."""
    check(name, converted)
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / DOCS_FILE).write_bytes(gzip_bytes(_jsonl_bytes(converted.documents)))
    (folder / QUERIES_FILE).write_bytes(_jsonl_bytes(converted.queries))
    qrels = "".join(f"{q} 0 {d} {g}\n" for q, d, g in converted.qrels)
    (folder / QRELS_FILE).write_bytes(qrels.encode("utf-8"))
    meta = json.dumps(meta_for(name, spec, converted), ensure_ascii=False, indent=2) + "\n"
    (folder / META_FILE).write_bytes(meta.encode("utf-8"))
    for target, source in converted.copies.items():
        shutil.copyfile(source, folder / target)
    return folder


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: convert the named collections (all by default) from SOURCE into OUT."""
    parser = argparse.ArgumentParser(prog="python -m bm25lab.corpora.convert", description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="folder holding the raw collections (../shared/corpora)")
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"collections to convert (default: all of {', '.join(SPECS)})")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent,
                        help="bundle folder (default: this package)")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in SPECS]
    if unknown:
        parser.error(f"unknown collection {unknown[0]!r}; known: {', '.join(SPECS)}")
    for name in args.names or list(SPECS):
        spec = SPECS[name]
        converted = spec.convert(args.source / spec.folder)
        folder = write(name, spec, converted, args.out)
        size = sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
        meta = meta_for(name, spec, converted)
        print(f"{name}: {meta['num_docs']} docs, {meta['num_queries']} queries "
              f"({meta['num_judged_queries']} judged), {meta['num_judgments']} judgments, {size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
