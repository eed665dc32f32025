"""``auto`` at the speed of ``zh``: the core makes auto's terms of whole texts, many at once (engine/core/cut.c,
``cut_terms``), exactly as auto's definition does (``tokenization._auto_terms``: the text split into runs
of Han characters, each run cut by jieba alone, the rest by the English path), here computed by the
Python replica of jieba's cut: on the bundled corpora, Chinese and English, with and without stopwords
and stemming, in one process and on workers, and on generated mixed text."""
from __future__ import annotations

import sys
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bm25lab import corpora
from bm25lab.engine import segmentation, tokenization
from bm25lab.engine.tokenization import Tokenizer, _jieba_tokenizer

pytestmark = pytest.mark.skipif(segmentation.core_cut() is None, reason="the compiled core is not built")


@pytest.fixture()
def core(monkeypatch):
    """The core's cut of jieba's own dictionary, jieba's global ``Force_Split_Words`` empty."""
    monkeypatch.delenv(segmentation.SEGMENTER_VARIABLE, raising=False)
    _jieba_tokenizer(None)
    monkeypatch.setattr(sys.modules["jieba.finalseg"], "Force_Split_Words", set())
    assert tokenization._compiled(None) is not None


def defined(monkeypatch, tokenizer: Tokenizer, texts: list[str]) -> list[list[str]]:
    """auto's terms by its definition, with the Python replica of jieba's cut (the core refused)."""
    with monkeypatch.context() as m:
        m.setattr(tokenization, "_compiled", lambda *args: None)
        return [tokenization._auto_terms(tokenizer, unicodedata.normalize("NFKC", text)) for text in texts]


def texts_of(name: str) -> list[str]:
    collection = corpora.get(name)
    return [d.full_text for d in collection.documents()] + list(collection.queries().values())


@pytest.mark.parametrize("name", ["cmrc2018", "lecard-10q"])
def test_auto_on_the_bundled_chinese_corpora_is_its_definition(monkeypatch, core, name) -> None:
    texts = texts_of(name)
    tokenizer = Tokenizer("auto")
    expected = defined(monkeypatch, tokenizer, texts)
    assert sum(map(len, expected)) > 100_000
    packed = tokenizer._tokenize_packed(texts)
    assert isinstance(packed, tuple)  # one core call for all the texts
    assert segmentation.unpack_terms(*packed) == expected
    assert [tokenizer.tokenize(text) for text in texts[:300]] == expected[:300]  # one text at a time


def test_auto_with_other_options_and_on_workers(monkeypatch, core, tmp_path) -> None:
    user = tmp_path / "user.txt"
    user.write_text("交通肇事 50\nB超 3\n", encoding="utf-8")
    texts = texts_of("cmrc2018")[:400] + texts_of("lecard-10q")[:40] + texts_of("cranfield")[:100]
    for options in ({"stopwords": None}, {"stem": False}, {"stopwords": ["的", "the", "john", "b"], "stem": False},
                    {"user_dict": user}):
        tokenizer = Tokenizer("auto", **options)
        expected = defined(monkeypatch, tokenizer, texts)
        assert list(tokenizer.tokenize_many(texts, workers=1, chunksize=37)) == expected, options
    tokenizer = Tokenizer("auto")
    assert list(tokenizer.tokenize_many(texts, workers=2, chunksize=64)) == defined(monkeypatch, tokenizer, texts)


def test_auto_on_english_corpora_is_en_and_never_cuts(monkeypatch, core) -> None:
    texts = texts_of("cranfield")[:300] + texts_of("cisi")[:300]
    calls = []
    monkeypatch.setattr(segmentation.CompiledJieba, "packed_terms", lambda *a: calls.append(1))
    assert list(Tokenizer("auto").tokenize_many(texts, workers=1)) == [Tokenizer("en").tokenize(t) for t in texts]
    assert calls == []


MIXED = st.lists(st.sampled_from(
    list("的是了我不人在他有这个上们来到时大地为中国常在较陡峭礁岸失利清华大学研究生命起源超恤") +  # Han
    list("㐀䶿\u4dc0\u4e00\u9fd5\u9fd6\u9fff\ua000\uf8ff\uf900\ufa6e\ufaff\ufb00") +  # the Han ranges' edges
    ["\U0001ffff", "\U00020000", "\U0003134f", "\U00031350", "😀", "\U0001d165"] +  # astral: Han, not, a mark
    list("abcBTZsS0129") + list(" \t\r\n'_-+#&.%,;") + ["'s", "'S", "s'"] + list("’‘") +  # ASCII, apostrophes
    list("ΑΣσςİıßÉéÅ\u212aⅠ①ｶﾞ") + list("\u0301\u0308\u200c\u200d\u00ad") +  # cased letters, marks, joiners
    list("ぁアカ한글ไทย") + list("，。！？《》、“”…—·×％\u3000") + ["\ud800", "\udfff", "\x00", "\ufffd"]),
    max_size=60).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(MIXED, min_size=1, max_size=6), st.booleans(), st.sampled_from([None, "default", ["s", "的", "b"]]))
def test_auto_on_generated_mixed_text_is_its_definition(monkeypatch, core, texts, stem, stopwords) -> None:
    tokenizer = Tokenizer("auto", stem=stem, stopwords=stopwords)
    expected = defined(monkeypatch, tokenizer, texts)
    assert [tokenizer.tokenize(text) for text in texts] == expected
    packed = tokenizer._tokenize_packed(texts)
    assert (segmentation.unpack_terms(*packed) if isinstance(packed, tuple) else packed) == expected


@settings(max_examples=200, deadline=None)
@given(st.from_regex(r"[0-9]+(?:'[0-9]+)*", fullmatch=True))
def test_snowball_leaves_words_of_digits_as_they_are(word: str) -> None:
    # cut.c leaves English words without a letter or apostrophe unstemmed
    from bm25lab.engine.tokenization import _stemmer

    assert _stemmer("english").stemWord(word.replace("'", "")) == word.replace("'", "")
    assert _stemmer("english").stemWords([word]) == [word] or "'" in word


def test_where_auto_and_zh_differ() -> None:
    # the examples of docs/decides.md and of the tokenization module's docstring
    auto, zh = Tokenizer("auto", stopwords=None), Tokenizer("zh", stopwords=None)
    cases = {  # text: (zh, auto)
        "做B超": (["做", "b超"], ["做", "b", "超"]),  # a dictionary word with a Latin letter
        "T恤衫": (["t恤衫"], ["t", "恤衫"]),
        "C++语言": (["c++", "语言"], ["c", "语言"]),  # jieba's block signs + # & . _ % -
        "增长3.14%": (["增长", "3.14%"], ["增长", "3", "14"]),
        "Python3.8版本": (["python3.8", "版本"], ["python3", "8", "版本"]),
        "iPhone 15 价格": (["iphone", "15", "价格"], ["iphon", "15", "价格"]),  # English rules: stemming, 's
        "他的running shoes": (["他", "的", "running", "shoes"], ["他", "的", "run", "shoe"]),
        "don't走": (["don", "t", "走"], ["don't", "走"]),
        "Ünïcödé的文章": (["ü", "n", "ï", "c", "ö", "d", "é", "的", "文章"], ["ünïcödé", "的", "文章"]),
        "the best of 中国": (["the", "best", "of", "中国"], ["the", "best", "of", "中国"]),  # stopwords=None here
        "清华大学的5G手机": (["清华大学", "的", "5g", "手机"], ["清华大学", "的", "5g", "手机"]),  # the same
    }
    for text, (zh_terms, auto_terms) in cases.items():
        assert (zh.tokenize(text), auto.tokenize(text)) == (zh_terms, auto_terms), text
    assert Tokenizer("zh").tokenize("the best of 中国") == ["the", "best", "of", "中国"]  # Chinese stopwords only
    assert Tokenizer("auto").tokenize("the best of 中国") == ["best", "中国"]  # and English ones
