"""The compiled core's jieba cut (bm25lab.engine.segmentation, engine/core/cut.c) gives exactly the words of
the Python cut (``tokenization._cut_precise``, itself tested equal to jieba's own) and of jieba: on the
whole bundled Chinese corpora, with a user dictionary, in search mode, and on generated odd text; and
the tokenizer takes it whenever the core is built, never otherwise."""
from __future__ import annotations

import sys
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bm25lab import corpora
from bm25lab.engine import segmentation, tokenization
from bm25lab.engine.segmentation import CompiledJieba
from bm25lab.engine.tokenization import Tokenizer, _cut_precise, _cut_search, _jieba_tokenizer

pytestmark = pytest.mark.skipif(segmentation.core_cut() is None, reason="the compiled core is not built")


@pytest.fixture()
def no_force_split(monkeypatch):
    """jieba keeps user words of frequency 0 in one global set; a test that loaded such a word leaves
    it there for the rest of the process, and the compiled cut declines while it is not empty."""
    _jieba_tokenizer(None)  # imports jieba
    monkeypatch.setattr(sys.modules["jieba.finalseg"], "Force_Split_Words", set())


def python_cut(monkeypatch, jt, text: str) -> list[str]:
    with monkeypatch.context() as m:
        m.setattr(tokenization, "_compiled", lambda *args: None)
        return _cut_precise(jt, text)


def corpus_texts(name: str = "cmrc2018") -> list[str]:
    """Every document (title and text) and query of a bundled Chinese collection, NFKC as the tokenizer sees them."""
    collection = corpora.get(name)
    texts = [d.full_text for d in collection.documents()] + list(collection.queries().values())
    return [unicodedata.normalize("NFKC", text) for text in texts]


@pytest.mark.parametrize("name, size", [("cmrc2018", 600_000), ("lecard-10q", 5_000_000)])
def test_whole_bundled_corpora_are_cut_as_by_python(monkeypatch, no_force_split, name, size) -> None:
    jt = _jieba_tokenizer(None)
    compiled = CompiledJieba(jt.FREQ, jt.total)
    texts = corpus_texts(name)
    assert sum(map(len, texts)) > size  # CMRC: 1,104 paragraphs and 4,221 questions; LeCaRD: 984 case facts
    mismatched = [text for text in texts if compiled.cut(text) != python_cut(monkeypatch, jt, text)]
    assert mismatched == []


def test_a_user_dictionary_and_search_mode(monkeypatch, no_force_split, tmp_path: Path) -> None:
    user = "创新办 3 i\n云计算 5\n被告人应国平 9\n常在 1000\n1-2失利 50\n"
    jt = _jieba_tokenizer(user)
    texts = corpus_texts()[:400] + ["创新办主任也是云计算方面的专家", "被告人应国平常在较陡峭的礁岸以1-2失利"]
    compiled = CompiledJieba(jt.FREQ, jt.total)
    for text in texts:
        words = compiled.cut(text)
        assert words == python_cut(monkeypatch, jt, text) == jt.lcut(text)
    monkeypatch.setitem(segmentation._COMPILED, user, compiled)  # search mode is the precise cut plus the dictionary's 2- and 3-grams
    for text in texts[:100]:
        assert _cut_search(jt, text) == jt.lcut_for_search(text)


_COMPILED: dict[int, CompiledJieba] = {}


def _compiled(jt) -> CompiledJieba:
    if id(jt) not in _COMPILED:
        _COMPILED[id(jt)] = CompiledJieba(jt.FREQ, jt.total)
    return _COMPILED[id(jt)]


ODD_CHARS = (
    list("的是了我不人在他有这个上们来到时大地为中国常在较陡峭礁岸失利清华大学研究生命起源龘齉") +  # Han, common and rare
    list("㐀㑇䶵\u9fd5\u9fd6\u9fff\u4e00\uf900\ufa6e") + ["𠀀", "𪚥", "\U0003134f", "\U00031350"] +  # edges of the Han ranges
    list("aZz09+#&._%-") + list(" \t\r\n\u3000\x00") + list("，。！？《》、“”…—·") +  # ASCII, jieba's block signs, space
    list("ａ５ぁアß∑ΣİÉé") + ["\ud800", "\udfff", "\U0010ffff", "\ufffe", "😀", "\u0301", "\u200d"]  # odd code points
)
ODD = st.text(alphabet=st.sampled_from(ODD_CHARS), max_size=80)
LONG = st.builds(lambda c, n, tail: c * n + tail, st.sampled_from(list("的中a1.\r\n㐀")), st.integers(200, 3000),
                 st.text(alphabet=st.sampled_from(ODD_CHARS), max_size=10))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(ODD, LONG, st.just("")))
def test_odd_text_is_cut_as_by_python_and_jieba(monkeypatch, no_force_split, text: str) -> None:
    jt = _jieba_tokenizer(None)
    assert _compiled(jt).cut(text) == python_cut(monkeypatch, jt, text) == jt.lcut(text)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=60))
def test_any_text_is_cut_as_by_python(monkeypatch, no_force_split, text: str) -> None:
    jt = _jieba_tokenizer(None)
    assert _compiled(jt).cut(text) == python_cut(monkeypatch, jt, text)


def test_the_tokenizer_takes_the_core_whenever_it_is_built(monkeypatch, no_force_split) -> None:
    user = "专用词 5\n"
    _jieba_tokenizer(user)
    monkeypatch.delitem(segmentation._COMPILED, user, raising=False)
    first = tokenization._compiled(user)  # no cost model: the first call takes it
    assert isinstance(first, CompiledJieba) and tokenization._compiled(user) is first
    texts = corpus_texts()[:3]
    before = [Tokenizer("zh").tokenize(t) for t in texts]
    monkeypatch.setattr(segmentation, "core_cut", lambda: None)  # an installation built without the core
    monkeypatch.setattr(tokenization, "core_cut", lambda: None)
    assert tokenization._compiled(user) is None
    assert [Tokenizer("zh").tokenize(t) for t in texts] == before


def test_a_word_of_frequency_zero_keeps_the_python_cut(tmp_path: Path, no_force_split) -> None:
    jt = _jieba_tokenizer("战国无双 0\n")  # jieba adds it to finalseg's global Force_Split_Words
    assert sys.modules["jieba.finalseg"].Force_Split_Words
    assert tokenization._compiled("战国无双 0\n") is None
    assert _cut_precise(jt, "战国无双是一款游戏") == jt.lcut("战国无双是一款游戏")


def test_terms_made_by_the_core_equal_the_python_filter(monkeypatch, no_force_split) -> None:
    # letters with a case beyond ASCII (a final sigma, a dotted capital I), characters beyond the BMP,
    # full-width forms and words without a letter or digit: the same terms either way, stopwords too
    odd = ["ΑΣ Σ ß İstanbul 中文ΣΑ", "𠀀中文x𪚥", "ＡＢＣ中文ｄｅｆ", "\r\n中\r\n", "iPhone15价格3.14%的人", "—…中国+#&._%-"]
    texts = corpus_texts()[:300] + odd
    for stopwords in (None, "default"):
        tokenizer = Tokenizer("zh", stopwords=stopwords)
        jt = _jieba_tokenizer(None)
        monkeypatch.setitem(segmentation._COMPILED, "", _compiled(jt))
        fast = [tokenizer.tokenize(text) for text in texts]
        with monkeypatch.context() as m:
            m.setattr(tokenization, "_compiled", lambda *args: None)
            assert [tokenizer.tokenize(text) for text in texts] == fast
