"""The compiled jieba cut (bm25lab.engine.segmentation) gives exactly the words of the Python cut
(``tokenization._cut_precise``, itself tested equal to jieba's own) and of jieba: on a whole bundled
Chinese corpus, with a user dictionary, in search mode, and on odd text; and the tokenizer takes it
only when it may."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bm25lab import corpora
from bm25lab.engine import segmentation, tokenization
from bm25lab.engine.segmentation import CompiledJieba
from bm25lab.engine.tokenization import Tokenizer, _cut_precise, _cut_search, _jieba_tokenizer


@pytest.fixture()
def no_force_split(monkeypatch):
    """jieba keeps user words of frequency 0 in one global set; a test that loaded such a word leaves
    it there for the rest of the process, and the compiled cut declines while it is not empty."""
    _jieba_tokenizer(None)  # imports jieba
    monkeypatch.setattr(sys.modules["jieba.finalseg"], "Force_Split_Words", set())


def python_cut(monkeypatch, jt, text: str) -> list[str]:
    with monkeypatch.context() as m:
        m.setattr(tokenization, "compiled_of", lambda *args: None)
        return _cut_precise(jt, text)


def corpus_texts() -> list[str]:
    """Every CMRC 2018 paragraph (title and text, NFKC as the tokenizer sees them) and question."""
    import unicodedata

    cmrc = corpora.get("cmrc2018")
    texts = [d.full_text for d in cmrc.documents()] + list(cmrc.queries().values())
    return [unicodedata.normalize("NFKC", text) for text in texts]


def test_the_whole_cmrc_corpus_is_cut_as_by_python(monkeypatch, no_force_split) -> None:
    jt = _jieba_tokenizer(None)
    compiled = CompiledJieba(jt.FREQ, jt.total)
    texts = corpus_texts()
    assert sum(map(len, texts)) > 600_000  # 1,104 paragraphs and 4,221 questions
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


ODD = st.text(alphabet=st.sampled_from(
    list("的是了我不人在他有这个上们来到时大地为中国常在较陡峭礁岸失利清华大学研究生命起源龘齉") +  # Han, common and rare
    list("㐀㑇䶵") + ["𠀀", "𪚥"] +  # outside jieba's Han range: Ext-A, astral
    list("aZz09+#&._%-") + list(" \t\r\n\u3000") + list("，。！？《》、“”…—·") + list("ａ５ぁアß∑")), max_size=80)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ODD)
def test_odd_text_is_cut_as_by_jieba(monkeypatch, no_force_split, text: str) -> None:
    jt = _jieba_tokenizer(None)
    assert _compiled(jt).cut(text) == python_cut(monkeypatch, jt, text) == jt.lcut(text)


def test_the_tokenizer_takes_the_compiled_cut_once_it_pays(monkeypatch, no_force_split) -> None:
    from bm25lab.engine.backends import numba_backend

    _jieba_tokenizer("专用词 5\n")
    monkeypatch.delitem(segmentation._COMPILED, "专用词 5\n", raising=False)
    monkeypatch.setattr(segmentation, "_WORK", [0])
    monkeypatch.setattr(numba_backend, "ready", lambda: True)
    monkeypatch.delitem(sys.modules, numba_backend.SEGMENT_KERNELS, raising=False)  # not loaded: it must pay
    texts = corpus_texts()[:60]
    before = [Tokenizer("zh", user_dict=None).tokenize(t) for t in texts[:3]]
    assert segmentation.compiled_of("专用词 5\n", 10) is None  # ten characters never pay
    budget = numba_backend.LOAD_SECONDS / segmentation.PYTHON_SECONDS_PER_CHAR
    assert segmentation.compiled_of("专用词 5\n", int(budget)) is not None  # half a second of Python cutting does
    assert segmentation._COMPILED["专用词 5\n"] is segmentation.compiled_of("专用词 5\n", 1)
    assert [Tokenizer("zh").tokenize(t) for t in texts[:3]] == before


def test_a_word_of_frequency_zero_keeps_the_python_cut(tmp_path: Path, no_force_split) -> None:
    jt = _jieba_tokenizer("战国无双 0\n")  # jieba adds it to finalseg's global Force_Split_Words
    assert sys.modules["jieba.finalseg"].Force_Split_Words
    assert segmentation.compiled_of("战国无双 0\n", 10**9) is None
    assert _cut_precise(jt, "战国无双是一款游戏") == jt.lcut("战国无双是一款游戏")


def test_terms_made_in_the_kernels_equal_the_python_filter(monkeypatch, no_force_split) -> None:
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
            m.setattr(tokenization, "compiled_of", lambda *args: None)
            assert [tokenizer.tokenize(text) for text in texts] == fast
