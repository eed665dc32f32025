"""Queries whose fields have any names (issue 17): LeCaRD's raw ``query.json`` (``{"ridx": 5156, "q": ...}``)
read as it comes, the common field names detected, ``id_field`` / ``text_fields`` choosing others (JSONL, a
TSV with a header), and one line naming file, line and the fields present when the reader cannot decide."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from bm25lab import corpora
from bm25lab.engine.errors import InputError
from bm25lab.engine.sources import QUERY_ID_KEYS, QUERY_TEXT_KEYS, read_documents, read_queries

LECARD_RAW = Path(__file__).parents[1] / "data" / "lecard" / "query.json"


def write(folder: Path, name: str, lines: list[str | dict]) -> Path:
    path = folder / name
    path.write_text("".join((json.dumps(x, ensure_ascii=False) if isinstance(x, dict) else x) + "\n" for x in lines),
                    encoding="utf-8")
    return path


def fails(path: Path, line: int | None, **kwargs) -> str:
    """The one-line error reading ``path`` gives, checked to name the file and line."""
    with pytest.raises(InputError) as info:
        read_queries(path, **kwargs)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}:{line}: " if line is not None else f"{path}: "), message
    return message


def test_lecard_raw_queries_read_as_they_come():
    raw = [json.loads(line) for line in LECARD_RAW.read_text(encoding="utf-8").splitlines()]
    assert [sorted(r) for r in raw] == [["crime", "path", "q", "ridx"]] * 3 and isinstance(raw[0]["ridx"], int)
    queries = read_queries(LECARD_RAW)  # .json is JSON Lines; ridx and q are detected
    assert list(queries) == ["5156", "4891", "5187"]
    # the same queries as the bundled collection's converted file ({"id", "text"})
    bundled = corpora.get("lecard-10q").queries()
    assert queries == {qid: bundled[qid] for qid in queries}
    assert read_queries(LECARD_RAW, id_field="ridx", text_fields="q") == queries
    assert read_queries(LECARD_RAW, id_field="ridx", text_fields=["q"], ids="position") == dict(
        zip(["1", "2", "3"], queries.values()))


def test_a_field_of_another_type_is_refused_naming_it():
    message = fails(LECARD_RAW, 1, id_field="ridx", text_fields="q,crime")
    assert message.endswith("field 'crime' must be a string or null, found an array")
    message = fails(LECARD_RAW, 1, id_field="path", text_fields="crime")
    assert message.endswith("field 'crime' must be a string or null, found an array")


@pytest.mark.parametrize("id_key", QUERY_ID_KEYS)
@pytest.mark.parametrize("text_key", QUERY_TEXT_KEYS)
def test_common_field_names_are_detected(tmp_path, id_key, text_key):
    path = write(tmp_path, "q.jsonl", [{id_key: 7, "other": "x", text_key: "seven"}, {id_key: "b", text_key: ""}])
    assert read_queries(path) == {"7": "seven", "b": ""}


def test_detection_takes_the_first_name_present_in_the_documented_order(tmp_path):
    path = write(tmp_path, "q.jsonl", [{"ridx": 1, "_id": "a", "q": "short", "text": "long"}])
    assert read_queries(path) == {"a": "long"}
    assert read_queries(path, id_field="ridx", text_fields="q") == {"1": "short"}


def test_chosen_fields_join_with_spaces_null_is_empty(tmp_path):
    path = write(tmp_path, "q.jsonl", [{"num": 401, "title": "foreign minorities", "desc": None, "narr": "n"},
                                       {"num": "402", "title": "", "desc": "genetics", "narr": "m"}])
    assert read_queries(path, id_field="num", text_fields="title,desc") == {"401": "foreign minorities",
                                                                             "402": "genetics"}
    assert read_queries(path, id_field="num", text_fields=("narr", "title")) == {"401": "n foreign minorities",
                                                                                 "402": "m"}


def test_undecidable_records_name_file_line_and_fields(tmp_path):
    path = write(tmp_path, "q.jsonl", [{"ridx": 1, "q": "a"}, {"num": 2, "body": "b", "path": "p"}])
    assert fails(path, 2) == (f"{path}:2: missing query id: none of {', '.join(map(repr, QUERY_ID_KEYS))} "
                              f"(fields: 'num', 'body', 'path'); name it with id_field (--query-id-field)")
    odd = write(tmp_path, "odd.jsonl", [{"num": 1, "body": "a", "path": "p"}, {"num": 2, "body": "b", "path": "p"}])
    assert fails(odd, 1, id_field="num").endswith(
        f"missing text: none of {', '.join(map(repr, QUERY_TEXT_KEYS))} (fields: 'num', 'body', 'path'); "
        f"name it with text_fields (--query-text-fields)")
    # a field the caller named and a record lacks: no hint to name it, it was named
    assert fails(path, 2, id_field="ridx") == f"{path}:2: missing query id: no field 'ridx' (fields: 'num', 'body', 'path')"
    assert fails(path, 1, id_field="ridx", text_fields="body") == (
        f"{path}:1: missing text: no field 'body' (fields: 'ridx', 'q')")
    assert fails(write(tmp_path, "e.jsonl", ["{}"]), 1).endswith("(fields: none); name it with id_field (--query-id-field)")


@pytest.mark.parametrize("value, found", [(5156.0, "a number"), (True, "a boolean"), (None, "null"), ([1], "an array")])
def test_ids_are_strings_or_integers(tmp_path, value, found):
    path = write(tmp_path, "q.jsonl", [{"ridx": value, "q": "a"}])
    assert fails(path, 1).endswith(f"query id 'ridx' must be a string or an integer, found {found}")


def test_numeric_ids_become_strings_and_repeats_are_found(tmp_path):
    path = write(tmp_path, "q.jsonl", [{"ridx": 5156, "q": "a"}, {"ridx": "5156", "q": "b"}])
    assert fails(path, 2) == f"{path}:2: duplicate query id '5156' (first at line 1)"


def test_tsv_with_a_header_takes_the_mapping(tmp_path):
    path = tmp_path / "q.tsv"
    path.write_text("Num\tTitle\tDesc\n401\tforeign minorities\tGermany\n402\t\tgenetics\n", encoding="utf-8")
    assert read_queries(path, id_field="num") == {"401": "foreign minorities", "402": ""}
    assert read_queries(path, id_field="Num", text_fields="title,desc") == {"401": "foreign minorities Germany",
                                                                             "402": "genetics"}
    assert fails(path, 1, id_field="qid") == (f"{path}:1: no query id column 'qid' in the header (columns: Num, "
                                              f"Title, Desc); the first line must name the columns")
    bad = tmp_path / "bad.tsv"
    bad.write_text("ridx\tq\n1\ta\tb\n", encoding="utf-8")
    assert fails(bad, 2, text_fields="q").endswith("expected 2 tab-separated fields like the header, found 3")
    # without a mapping, a header of the common names is recognised and skipped, as before
    plain = tmp_path / "plain.tsv"
    plain.write_text("ridx\tq\n5156\ta query\n", encoding="utf-8")
    assert read_queries(plain) == {"5156": "a query"}


def test_formats_without_named_fields_refuse_a_mapping(tmp_path):
    smart = tmp_path / "q.qry"
    smart.write_text(".I 1\n.W\nwhat\n", encoding="utf-8")
    assert fails(smart, None, id_field="x") == (f"{smart}: a query id field and text fields can be chosen for tsv "
                                                f"and jsonl queries, not smart")
    trec = tmp_path / "q.trec"
    trec.write_text("<top>\n<num> 1\n<title> a\n</top>\n", encoding="utf-8")
    assert fails(trec, None, text_fields="desc").endswith("not trec (--topic-field picks a topic's fields)")
    with pytest.raises(InputError, match="text fields must be distinct non-empty names"):
        read_queries(LECARD_RAW, text_fields="q,q")


def test_document_messages_name_the_fields_present_too(tmp_path):
    path = write(tmp_path, "d.jsonl", [{"ajId": "x", "ajjbqk": "facts"}])
    with pytest.raises(InputError) as info:
        list(read_documents(path))
    assert str(info.value) == (f"{path}:1: missing document id: none of 'id', '_id', 'docid', 'doc_id' (fields: "
                               f"'ajId', 'ajjbqk'); name it with id_field (--id-field)")
    with pytest.raises(InputError) as info:
        list(read_documents(path, id_field="ajId", text_fields="ajjbqk,ajName"))
    assert str(info.value) == f"{path}:1: no field 'ajName' (fields: 'ajjbqk')"
    assert [d.text for d in read_documents(path, id_field="ajId", text_fields="ajjbqk")] == ["facts"]
