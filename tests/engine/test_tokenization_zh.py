"""Chinese tokenization at speed, with jieba's terms: the core's cut taking many texts at once (packed
terms, stopwords dropped in the core, the pool handing back one string per chunk) gives exactly the
terms of the text-by-text Python path; ``$BM25LAB_SEGMENTER`` chooses the cut; and an index of the
held-out LeCaRD collection built on the fast path runs its queries exactly as one built on jieba's own
cut (same documents, order and scores, bit for bit; same evaluation)."""
from __future__ import annotations

import sys
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bm25lab import corpora
from bm25lab.engine import segmentation, tokenization
from bm25lab.engine.errors import ParameterError
from bm25lab.engine.segmentation import SEGMENTER_VARIABLE, SEGMENTERS, CompiledJieba, nfkc_many, unpack_terms
from bm25lab.engine.tokenization import Tokenizer, _jieba_tokenizer

pytestmark = pytest.mark.skipif(segmentation.core_cut() is None, reason="the compiled core is not built")


@pytest.fixture()
def compiled(monkeypatch):
    """The process's compiled cut of jieba's own dictionary, with jieba's global ``Force_Split_Words``
    empty (a frequency-0 user word of another test fills it)."""
    monkeypatch.delenv(SEGMENTER_VARIABLE, raising=False)
    jt = _jieba_tokenizer(None)
    monkeypatch.setattr(sys.modules["jieba.finalseg"], "Force_Split_Words", set())
    if segmentation._COMPILED.get("") is None:
        segmentation._COMPILED[""] = CompiledJieba(jt.FREQ, jt.total)
    return segmentation._COMPILED[""]


def python_terms(monkeypatch, tokenizer: Tokenizer, texts: list[str]) -> list[list[str]]:
    """The terms of the text-by-text Python path (the compiled cut refused)."""
    with monkeypatch.context() as m:
        m.setattr(tokenization, "_compiled", lambda *args: None)
        return [tokenizer.tokenize(text) for text in texts]


def cmrc_texts() -> list[str]:
    cmrc = corpora.get("cmrc2018")
    return [d.full_text for d in cmrc.documents()] + list(cmrc.queries().values())[:500]


# letters whose lowercase Python must tell (final sigma, dotted capital I), characters beyond the BMP
# (letters and an emoji), full-width forms, cased letters beyond ASCII, words without a letter or digit
ODD_TEXTS = ["ΑΣ Σ ß İstanbul 中文ΣΑ", "𠀀中文x𪚥", "😀中文😀", "ＡＢＣ中文ｄｅｆ", "\r\n中\r\n", "iPhone15价格3.14%的人",
             "—…中国+#&._%-", "Ünïcödé ÉCOLE 的 Straße", "", "。。", "ΣΑΣ 和 σας"]


def test_packed_terms_equal_the_python_path_on_a_whole_corpus(monkeypatch, compiled) -> None:
    texts = cmrc_texts() + ODD_TEXTS
    assert sum(map(len, texts)) > 500_000  # 1,104 paragraphs, 500 questions
    every = python_terms(monkeypatch, Tokenizer("zh", stopwords=None), texts)
    for stopwords in (None, "default", ["σας", "的", "中文", "x"]):
        tokenizer = Tokenizer("zh", stopwords=stopwords)
        expected = [[term for term in terms if term not in tokenizer.stopwords] for terms in every]
        normalised = [unicodedata.normalize("NFKC", text) for text in texts]
        assert unpack_terms(*compiled.packed_terms(normalised, tokenizer._term_rules())) == expected
        assert [tokenizer.tokenize(text) for text in texts] == expected  # one text at a time, packed too
        assert list(tokenizer.tokenize_many(texts, workers=1, chunksize=97)) == expected


def test_the_pool_hands_back_packed_terms_equal_to_the_python_path(monkeypatch, compiled) -> None:
    texts = cmrc_texts()[:1500] + ODD_TEXTS
    tokenizer = Tokenizer("zh")
    packed = tokenizer._tokenize_packed(texts[:40])
    assert isinstance(packed, tuple) and isinstance(packed[0], str)  # one string crosses the process boundary
    assert list(tokenizer.tokenize_many(texts, workers=2, chunksize=64)) == python_terms(monkeypatch, tokenizer, texts)


def test_packing_is_for_the_precise_cut_of_zh_and_auto(monkeypatch, compiled) -> None:
    texts = cmrc_texts()[:30]
    for tokenizer in (Tokenizer("zh"), Tokenizer("auto")):
        assert isinstance(tokenizer._tokenize_packed(texts), tuple)
    english = ["Heat transfer in a laminar boundary layer", "THE WING'S DRAG"]
    assert Tokenizer("auto")._tokenize_packed(english) == [Tokenizer("en").tokenize(text) for text in english]
    for tokenizer in (Tokenizer("zh", mode="search"), Tokenizer("auto", mode="search")):
        assert isinstance(tokenizer._tokenize_packed(texts), list)
        assert list(tokenizer.tokenize_many(texts, workers=1)) == [tokenizer.tokenize(text) for text in texts]
    monkeypatch.setenv(SEGMENTER_VARIABLE, "python")
    assert isinstance(Tokenizer("zh")._tokenize_packed(texts), list)
    assert isinstance(Tokenizer("auto")._tokenize_packed(texts), list)


TEXT = st.text(alphabet=st.sampled_from(
    list("的是了我不人在他有这个上们来到时大地为中国常在较陡峭礁岸失利清华大学研究生命起源龘") + ["𠀀", "😀"] +
    list("aZz09+#&._%-") + list(" \t\r\n") + list("，。！？…") + list("ａ５ぁßΣİÉé")), max_size=30)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(TEXT, max_size=8), st.sampled_from([frozenset(), frozenset({"的", "σ", "é", "a", "中国"})]))
def test_packed_terms_of_random_texts_keep_each_text_apart(monkeypatch, compiled, texts, stopwords) -> None:
    tokenizer = Tokenizer("zh", stopwords=stopwords)
    normalised = [unicodedata.normalize("NFKC", text) for text in texts]
    assert unpack_terms(*compiled.packed_terms(normalised, tokenizer._term_rules())) == python_terms(
        monkeypatch, tokenizer, texts)


def test_fast_nfkc_equals_unicodedata_on_whole_corpora_and_any_text() -> None:
    texts = [d.full_text for d in corpora.get("lecard-10q").documents()] + cmrc_texts() + ODD_TEXTS + [
        "㈱①Ⅻ ﬁ x² ｶﾞ ｱﾞ e\u0301 ᄀ\u1161 \ud800 Å Ω K", "\u0301，", "ＡＢＣ\u0301"]
    assert nfkc_many(texts) == [unicodedata.normalize("NFKC", text) for text in texts]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(), max_size=30), max_size=5))
def test_fast_nfkc_equals_unicodedata_on_random_text(texts: list[str]) -> None:
    assert nfkc_many(texts) == [unicodedata.normalize("NFKC", text) for text in texts]


def test_unpacking_refuses_counts_that_do_not_match() -> None:
    assert unpack_terms("a\nb\nc\n", [2, 0, 1]) == [["a", "b"], [], ["c"]]
    assert unpack_terms("", [0, 0]) == [[], []]
    with pytest.raises(RuntimeError, match="do not match"):
        unpack_terms("a\nb\n", [1])


# --- $BM25LAB_SEGMENTER -----------------------------------------------------------------------


def test_the_segmenter_variable_chooses_the_cut_and_every_cut_gives_the_same_terms(monkeypatch, compiled) -> None:
    import jieba

    texts = cmrc_texts()[:60] + ODD_TEXTS
    own: list[str] = []
    original = jieba.Tokenizer.lcut

    def spy(self, *args, **kwargs):
        own.append(args[0])
        return original(self, *args, **kwargs)

    monkeypatch.setattr(jieba.Tokenizer, "lcut", spy)
    taken: list[int] = []
    packed = CompiledJieba.packed_terms
    monkeypatch.setattr(CompiledJieba, "packed_terms", lambda self, *a: taken.append(1) or packed(self, *a))
    results = {}
    for name in SEGMENTERS:
        monkeypatch.setenv(SEGMENTER_VARIABLE, name)
        own.clear()
        taken.clear()
        for mode in ("default", "search"):
            tokenizer = Tokenizer("zh", mode=mode)
            results[name, mode] = list(tokenizer.tokenize_many(texts, workers=1))
        assert bool(own) == (name == "jieba")  # jieba's own cut, and only under "jieba"
        assert bool(taken) == (name == "auto")  # the compiled cut, and only under "auto"
    for mode in ("default", "search"):
        assert results["auto", mode] == results["python", mode] == results["jieba", mode]
    monkeypatch.setenv(SEGMENTER_VARIABLE, "fast")
    with pytest.raises(ParameterError, match="BM25LAB_SEGMENTER='fast'.*auto, python, jieba"):
        Tokenizer("zh").tokenize("中文")
    monkeypatch.setenv(SEGMENTER_VARIABLE, "")
    assert segmentation.segmenter() == "auto"


# --- the held-out collection -------------------------------------------------------------------


def test_lecard_runs_exactly_as_on_an_index_built_with_jiebas_own_cut(monkeypatch, compiled) -> None:
    import bm25lab
    from bm25lab.engine import Index
    from bm25lab.evaluation.measures import DEFAULT_MEASURES

    lecard = corpora.get("lecard-10q")
    queries = lecard.judged_queries()
    assert len(queries) == 10
    monkeypatch.setenv(SEGMENTER_VARIABLE, "jieba")
    reference = Index.build(lecard.documents(), Tokenizer("zh"), workers=2)  # forked workers inherit the variable
    reference_run = reference.search_many(queries, k=1000, workers=1)
    monkeypatch.delenv(SEGMENTER_VARIABLE)
    taken: list[int] = []
    packed = CompiledJieba.packed_terms
    monkeypatch.setattr(CompiledJieba, "packed_terms", lambda self, *a: taken.append(len(a[0])) or packed(self, *a))
    fast = Index.build(lecard.documents(), Tokenizer("zh"), workers=1)
    fast_run = fast.search_many(queries, k=1000, workers=1)
    assert sum(taken) >= 984 + 10  # every document and query went through the compiled cut
    facts = [(info.documents, info.terms, info.postings, info.average_length) for info in (fast.info(), reference.info())]
    assert facts[0] == facts[1] and facts[0][0] == 984
    assert list(fast_run) == list(reference_run) == list(queries)
    for qid in queries:
        hits, expected = fast_run[qid], reference_run[qid]
        assert len(hits) == len(expected) > 100
        assert [h.doc_id for h in hits] == [h.doc_id for h in expected]
        assert [h.score.hex() for h in hits] == [h.score.hex() for h in expected]  # bit for bit
    qrels = bm25lab.read_qrels(lecard.qrels_path)
    assert bm25lab.evaluate(qrels, fast_run, DEFAULT_MEASURES) == bm25lab.evaluate(qrels, reference_run,
                                                                                   DEFAULT_MEASURES)


def test_any_chunk_takes_the_core_at_once_with_a_user_dictionary(monkeypatch, compiled, tmp_path) -> None:
    user_dict = tmp_path / "user.txt"
    user_dict.write_text("专用词 5\n", encoding="utf-8")
    for language in ("zh", "auto"):
        tokenizer = Tokenizer(language, user_dict=user_dict)
        monkeypatch.delitem(segmentation._COMPILED, tokenizer._user_dict, raising=False)
        texts = cmrc_texts()[:3] + ["专用词和专用"]
        packed = tokenizer._tokenize_packed(texts)  # no cost to pay first: the core takes even a few paragraphs
        assert isinstance(packed, tuple)
        assert unpack_terms(*packed) == python_terms(monkeypatch, tokenizer, texts)
        assert "专用词" in unpack_terms(*packed)[-1]


def test_a_bad_segmenter_value_is_one_line_and_exit_2_from_the_command(monkeypatch, tmp_path) -> None:
    from typer.testing import CliRunner

    from bm25lab.cli import app

    docs = tmp_path / "docs.tsv"
    docs.write_text("d1\t清华大学位于北京\nd2\t中文分词\n", encoding="utf-8")
    monkeypatch.setenv(SEGMENTER_VARIABLE, "fast")
    result = CliRunner().invoke(app, ["index", str(docs), "--out", str(tmp_path / "idx"), "--language", "zh"])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output
    assert lines[0].startswith("bm25lab: error: BM25LAB_SEGMENTER='fast' is not a segmenter; choose one of: auto, python, jieba")
    assert not (tmp_path / "idx").exists()
    monkeypatch.setenv(SEGMENTER_VARIABLE, "jieba")
    assert CliRunner().invoke(app, ["index", str(docs), "--out", str(tmp_path / "idx"), "--language", "zh"]).exit_code == 0
