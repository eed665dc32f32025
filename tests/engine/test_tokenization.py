"""Tests of engine.tokenization: the analysis chain, its configuration, workers and jieba's quiet cache."""
from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bm25lab import corpora
from bm25lab.engine.errors import IndexFormatError, InputError
from bm25lab.engine.tokenization import (_ASCII_WORD, ANALYSIS_VERSION, LANGUAGES, Tokenizer, _cut_precise, _cut_search, _is_word,
                                 _jieba_tokenizer, _word_pattern)

def run_python(code: str, env_extra: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter of this environment (bm25lab as installed), in ``cwd``."""
    env = {**os.environ, **env_extra}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                          cwd=cwd)


# --- normalisation and what may become a term ------------------------------------------------


def test_nfkc_full_width_letters_and_digits_become_ascii() -> None:
    tok = Tokenizer("en", stem=False, stopwords=None)
    assert tok.tokenize("ＡＢＣ１２３ Ｈｅｌｌｏ") == ["abc123", "hello"]
    assert Tokenizer(stem=False, stopwords=None).tokenize("ｉＰｈｏｎｅ１５价格") == ["iphone15", "价格"]
    assert tok.tokenize("① Ⅻ x²") == ["1", "xii", "x2"]


PUNCTUATED = "Hello, world! (x+y)=z; ... -- 'quoted' \"dq\" #tag @me _under_ ，。！？《书名》「引号」、；：“中文”…… 😀🎉 ✓ ★"


@pytest.mark.parametrize("language", list(LANGUAGES))
def test_punctuation_symbols_and_emoji_never_become_terms(language: str) -> None:
    terms = Tokenizer(language, stopwords=None).tokenize(PUNCTUATED + " 。 ， ! ? 😀 … — ")
    assert terms, "the words themselves must survive"
    for term in terms:
        assert any(ch.isalnum() for ch in term), term
        assert not any(ch.isspace() for ch in term), term
    assert not {"😀", "🎉", "，", "。", "!", "…", "—", "_"} & set(terms)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40))
def test_every_term_has_a_letter_or_digit_and_no_whitespace(text: str) -> None:
    for language in LANGUAGES:
        for term in Tokenizer(language, stopwords=None).tokenize(text):
            assert term and any(ch.isalnum() for ch in term) and not any(ch.isspace() for ch in term)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=60))
def test_ascii_fast_path_finds_the_same_words_as_the_unicode_pattern(text: str) -> None:
    assert _ASCII_WORD.findall(text) == _word_pattern().findall(text)


# --- English ---------------------------------------------------------------------------------


def test_english_words_lowercase_possessive_apostrophes_and_underscores() -> None:
    tok = Tokenizer("en", stem=False, stopwords=None)
    assert tok.tokenize("John's dog don't O’Neil x_y e-mail U.S.A") == [
        "john", "dog", "don't", "o'neil", "x", "y", "e", "mail", "u", "s", "a"]


def test_english_words_keep_combining_marks() -> None:
    tok = Tokenizer("en", stem=False, stopwords=None)
    assert tok.tokenize("हिन्दी भाषा, naïve café") == ["हिन्दी", "भाषा", "naïve", "café"]


def test_english_default_is_snowball_stopwords_and_stemming() -> None:
    tok = Tokenizer("en")
    assert tok.stem is True
    assert {"the", "and", "of", "don't", "yourselves"} <= tok.stopwords and "us" not in tok.stopwords
    assert tok.tokenize("The connections of the running foxes") == ["connect", "run", "fox"]
    assert Tokenizer("en", stem=False).tokenize("The connections of the running foxes") == [
        "connections", "running", "foxes"]


def test_stopword_options() -> None:
    text = "the cat and the hat"
    assert Tokenizer("en", stem=False, stopwords=None).tokenize(text) == ["the", "cat", "and", "the", "hat"]
    assert Tokenizer("en", stem=False, stopwords="none").tokenize(text) == ["the", "cat", "and", "the", "hat"]
    assert Tokenizer("en", stem=False, stopwords=["CAT", "Hat"]).tokenize(text) == ["the", "and", "the"]
    assert Tokenizer("en", stem=False, stopwords=iter(["the"])).tokenize(text) == ["cat", "and", "hat"]


def test_stopword_file(tmp_path: Path) -> None:
    path = tmp_path / "stop.txt"
    path.write_text("# a comment line\nthe\n\n  and  \n的\n", encoding="utf-8")
    tok = Tokenizer(stem=False, stopwords=path)
    assert tok.stopwords == {"the", "and", "的"}
    assert tok.tokenize("the cat and 我的猫") == ["cat", "我", "猫"]
    assert Tokenizer(stem=False, stopwords=str(path)) == tok


# --- Chinese, mixed text, whitespace ---------------------------------------------------------


def test_mixed_chinese_and_english() -> None:
    assert Tokenizer(stem=False).tokenize("iPhone 15 价格") == ["iphone", "15", "价格"]
    assert Tokenizer().tokenize("iPhone 15 价格") == ["iphon", "15", "价格"]
    assert Tokenizer(stem=False, stopwords=None).tokenize("我在Google工作，用search engines。") == [
        "我", "在", "google", "工作", "用", "search", "engines"]
    assert Tokenizer().tokenize("我在Google工作，用search engines。") == ["googl", "工作", "search", "engin"]


def test_auto_on_english_text_equals_en() -> None:
    text = "What similarity laws must be obeyed when constructing aeroelastic models of heated aircraft?"
    assert Tokenizer("auto").tokenize(text) == Tokenizer("en").tokenize(text)


def test_chinese_precise_and_search_modes() -> None:
    text = "我来到北京清华大学"
    assert Tokenizer("zh", stopwords=None).tokenize(text) == ["我", "来到", "北京", "清华大学"]
    assert Tokenizer("zh", stopwords=None, mode="search").tokenize(text) == [
        "我", "来到", "北京", "清华", "华大", "大学", "清华大学"]
    assert Tokenizer("zh").tokenize(text) == ["来到", "北京", "清华大学"]  # 我 is a stopword
    assert Tokenizer("zh").tokenize("ＴＣＰ/IP 协议，C++ 与 3.5 版本") == ["tcp", "ip", "协议", "c++", "3.5", "版本"]


def test_user_dictionary_changes_segmentation(tmp_path: Path) -> None:
    text = "李小福是创新办主任也是云计算方面的专家"
    plain = Tokenizer("zh", stopwords=None).tokenize(text)
    assert "创新办" not in plain and "云计算" not in plain
    path = tmp_path / "userdict.txt"
    path.write_text("\ufeff创新办 3 i\n云计算 5\n\n李小福 2 nr\n", encoding="utf-8")
    with_dict = Tokenizer("zh", stopwords=None, user_dict=path)
    assert with_dict.tokenize(text) == ["李小福", "是", "创新办", "主任", "也", "是", "云计算", "方面", "的", "专家"]
    assert Tokenizer("auto", stopwords=None, user_dict=path).tokenize("AI与" + text)[:4] == ["ai", "与", "李小福", "是"]
    assert Tokenizer("zh", stopwords=None).tokenize(text) == plain  # other tokenizers are unaffected


def test_whitespace_splits_only_on_whitespace() -> None:
    tok = Tokenizer("whitespace")
    assert tok.stopwords == frozenset() and tok.stem is False
    assert tok.tokenize("我 来到 北京 ， 清华大学 。 Foo-Bar  x\u3000y ！") == [
        "我", "来到", "北京", "清华大学", "Foo-Bar", "x", "y"]


def test_query_finds_document_containing_it_first() -> None:
    import bm25s  # oracle: imported only in tests

    docs = ["北京大学的校园很美", "我来到北京清华大学", "他来到了网易杭研大厦", "小明毕业于中国科学院计算所",
            "北京有很多大学"]
    default = bm25s.BM25()
    default.index(bm25s.tokenize(docs, show_progress=False), show_progress=False)
    assert default.get_scores(["清华大学"]).max() == 0.0  # bm25s's default tokenizer cannot match it
    tok = Tokenizer()
    ours = bm25s.BM25()
    ours.index([tok.tokenize(doc) for doc in docs], show_progress=False)
    scores = ours.get_scores(tok.tokenize("清华大学"))
    assert scores.argmax() == 1 and scores[1] > 0 and sorted(scores)[-2] == 0.0


# --- our re-implementation of jieba's cut against jieba itself --------------------------------


def real_chinese_texts() -> list[str]:
    """CMRC 2018 paragraphs and questions, and LeCaRD case facts (long legal text with numbers)."""
    cmrc = corpora.get("cmrc2018")
    paragraphs = [d.title + " " + d.text for _, d in zip(range(80), cmrc.documents())]
    questions = list(cmrc.queries().values())[:300]
    lecard = [d.text for _, d in zip(range(5), corpora.get("lecard-10q").documents())]
    return paragraphs + questions + lecard


def test_fast_cut_equals_jiebas_own_cut_on_real_text(tmp_path: Path) -> None:
    user_dict = tmp_path / "userdict.txt"
    user_dict.write_text("创新办 3 i\n云计算 5\n战国无双 0\n被告人应国平 9\n", encoding="utf-8")
    texts = real_chinese_texts()
    for dictionary in (None, user_dict.read_text(encoding="utf-8")):
        jt = _jieba_tokenizer(dictionary)
        for text in texts:
            assert _cut_precise(jt, text) == jt.lcut(text)
            assert _cut_search(jt, text) == jt.lcut_for_search(text)


MIXED = st.text(alphabet=st.sampled_from(list("的是了我不人在他有这个上们来到时大地为子中你说生国年着就那和要她出也得里后"
                                              "清华大学北京研究生命起源计算云创新办主任专家") + list("aZ09 .,-_%&+#\n，。！")),
                max_size=60)


@settings(max_examples=300, deadline=None)
@given(MIXED)
def test_fast_cut_equals_jiebas_own_cut_on_random_text(text: str) -> None:
    jt = _jieba_tokenizer(None)
    assert _cut_precise(jt, text) == jt.lcut(text)
    assert _cut_search(jt, text) == jt.lcut_for_search(text)


# --- configuration ---------------------------------------------------------------------------


def test_unknown_language_and_mode_list_valid_values() -> None:
    with pytest.raises(ValueError, match="auto, zh, en, ja, ko, ar, .*, whitespace"):
        Tokenizer("klingon")
    with pytest.raises(ValueError, match="default, search"):
        Tokenizer("zh", mode="full")
    with pytest.raises(ValueError, match="stemming"):
        Tokenizer("zh", stem=True)
    with pytest.raises(ValueError, match="apply to: auto, zh"):
        Tokenizer("en", mode="search")
    with pytest.raises(ValueError, match="valid modes"):
        Tokenizer("zh", mode="full", user_dict="/nonexistent/dict.txt")  # checked before any file is read


def test_missing_files_raise_input_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.txt"
    with pytest.raises(InputError, match="nope.txt: stopword file not found"):
        Tokenizer(stopwords=missing)
    with pytest.raises(InputError, match="nope.txt: user dictionary not found"):
        Tokenizer(user_dict=missing)
    bad = tmp_path / "bad.txt"
    bad.write_text("创新办 3\n云 计算 5\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        Tokenizer(user_dict=bad)
    assert info.value.line == 2 and str(info.value).startswith(f"{bad}:2: ")
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("ok\ncaf\xe9\n".encode("latin-1"))
    with pytest.raises(InputError, match=":2: stopword file is not valid UTF-8"):
        Tokenizer(stopwords=latin1)


def test_config_round_trip_gives_identical_tokens(tmp_path: Path) -> None:
    user_dict = tmp_path / "userdict.txt"
    user_dict.write_text("创新办 3 i\n云计算\n", encoding="utf-8")
    texts = ["李小福是创新办主任也是云计算方面的专家", "iPhone 15 价格", "The running foxes' dens", "ＡＢＣ　１２３"]
    tokenizers = [
        Tokenizer(),
        Tokenizer("en", stem=False),
        Tokenizer("zh", mode="search", user_dict=user_dict, stopwords=["是", "的"]),
        Tokenizer("auto", user_dict=user_dict, stopwords=None),
        Tokenizer("whitespace", stopwords=["的"]),
    ]
    for tok in tokenizers:
        config = tok.config()
        assert config["analysis_version"] == ANALYSIS_VERSION
        restored = Tokenizer.from_config(json.loads(json.dumps(config)))
        assert restored == tok and restored.config() == config and hash(restored) == hash(tok)
        user_dict_gone = [restored.tokenize(text) for text in texts]
        assert user_dict_gone == [tok.tokenize(text) for text in texts]
        assert pickle.loads(pickle.dumps(tok)) == tok
    user_dict.unlink()  # the configuration is self-contained: the file is no longer needed
    restored = Tokenizer.from_config(tokenizers[2].config())
    assert restored.tokenize(texts[0]) == ["李小福", "创新", "创新办", "主任", "也", "计算", "云计算", "方面", "专家"]
    assert "user_dict=<2 entries>" in repr(restored) and "mode='search'" in repr(restored)
    assert Tokenizer() != Tokenizer(stem=False)


@pytest.mark.parametrize("damage", [
    lambda c: c.update(analysis_version=ANALYSIS_VERSION + 1),
    lambda c: c.update(language="klingon"),
    lambda c: c.update(language=["en"]),
    lambda c: c.update(mode="full"),
    lambda c: c.update(stem="yes"),
    lambda c: c.update(stopwords="the"),
    lambda c: c.update(user_dict=["a"]),
    lambda c: c.update(user_dict="云 计算 5\n"),
    lambda c: c.pop("stopwords"),
    lambda c: c.update(language="zh", stem=True),
    lambda c: c.update(language="en", stem=True, user_dict="云计算\n"),
])
def test_bad_config_raises_index_format_error(damage) -> None:
    config = Tokenizer().config()
    damage(config)
    with pytest.raises(IndexFormatError):
        Tokenizer.from_config(config)


def test_config_that_is_not_an_object_raises_index_format_error() -> None:
    with pytest.raises(IndexFormatError, match="expected an object"):
        Tokenizer.from_config(["not", "a", "dict"])  # type: ignore[arg-type]


# --- many texts, worker processes ------------------------------------------------------------


def sample_texts() -> list[str]:
    """A few thousand short real texts: CMRC 2018 sentences and Cranfield lines, interleaved."""
    paragraphs = [d.text for _, d in zip(range(200), corpora.get("cmrc2018").documents())]
    chinese = [s for p in paragraphs for s in p.split("。") if s][:2500]
    english = [s.strip() for d in corpora.get("cranfield").documents() for s in d.text.split(" . ") if s.strip()][:2500]
    return [text for pair in zip(chinese, english) for text in pair] + ["", "。。", "  "]


def test_tokenize_many_with_workers_equals_tokenize_in_order() -> None:
    texts = sample_texts()
    assert len(texts) > 4000
    tok = Tokenizer()
    expected = [tok.tokenize(text) for text in texts]
    assert list(tok.tokenize_many(texts, workers=2, chunksize=128)) == expected
    assert list(tok.tokenize_many(iter(texts), workers=1)) == expected
    assert list(tok.tokenize_many([], workers=2)) == []


def test_small_inputs_skip_the_pool_but_short_heavy_ones_use_it(monkeypatch: pytest.MonkeyPatch) -> None:
    pools: list[int] = []
    original = Tokenizer._tokenize_pool

    def spy(self, head, rest, workers, chunksize):
        pools.append(chunksize)
        return original(self, head, rest, workers, chunksize)

    monkeypatch.setattr(Tokenizer, "_tokenize_pool", spy)
    tok = Tokenizer()
    small = ["iPhone 15 价格", "the running foxes"] * 5
    assert list(tok.tokenize_many(small, workers=2)) == [tok.tokenize(text) for text in small]
    assert pools == []
    paragraphs = [d.text for _, d in zip(range(120), corpora.get("cmrc2018").documents())]
    assert sum(map(len, paragraphs)) > 40_000
    assert list(tok.tokenize_many(paragraphs, workers=2)) == [tok.tokenize(text) for text in paragraphs]
    assert pools == [15]  # 120 texts cut into 4 chunks per worker
    split = Tokenizer("whitespace", stopwords=None)  # splitting is cheaper than a worker's round trip
    texts = [" ".join(paragraphs)] * 30  # heavy enough for the pool (_POOL_MIN_WORK) were it not whitespace
    assert list(split.tokenize_many(texts, workers=2)) == [split.tokenize(text) for text in texts]
    assert pools == [15]


def test_tokenize_many_streams_its_input() -> None:
    consumed = 0

    def texts():
        nonlocal consumed
        for number in range(100_000):
            consumed += 1
            yield f"document number {number} about aircraft"

    stream = Tokenizer("en").tokenize_many(texts(), workers=2, chunksize=100)
    assert next(stream) == ["document", "number", "0", "aircraft"]
    assert consumed < 5_000
    stream.close()


def test_tokenize_many_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="workers"):
        list(Tokenizer().tokenize_many(["x"], workers=0))
    with pytest.raises(ValueError, match="chunksize"):
        list(Tokenizer().tokenize_many(["x"], chunksize=0))


# --- jieba: cache location, silence, lazy import ---------------------------------------------


def test_jieba_cache_goes_to_user_cache_dir_and_nothing_is_printed(tmp_path: Path) -> None:
    cache, tmp = tmp_path / "cache", tmp_path / "tmp"
    tmp.mkdir()
    code = ("from bm25lab.engine.tokenization import Tokenizer\n"
            "assert Tokenizer('zh').tokenize('我来到北京清华大学') == ['来到', '北京', '清华大学']\n")
    env = {"BM25LAB_CACHE_DIR": str(cache), "TMPDIR": str(tmp)}
    for _ in range(2):  # first run builds the cache, second loads it
        done = run_python(code, env, tmp_path)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    files = sorted(cache.iterdir())  # jieba's prefix dictionary, and the core's arrays of it and Unicode tables
    assert [(path.name.split("-")[:2], path.suffix) for path in files] == [
        (["jieba", "0.42.1"], ".prefix-dict"), (["jieba", "compiled"], ".arrays"), (["unicode", "tables"], ".arrays")]
    assert list(tmp.iterdir()) == []  # jieba's own default, $TMPDIR/jieba.cache, is never written
    sizes = [path.stat().st_size for path in files]
    for path, size in zip(files, sizes):
        path.write_bytes(path.read_bytes()[: size // 2])  # a damaged cache is rebuilt, silently
    done = run_python(code, env, tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert sorted(cache.iterdir()) == files and [path.stat().st_size for path in files] == sizes


def test_chinese_tokenization_prints_nothing(capfd: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    user_dict = tmp_path / "quiet.txt"
    user_dict.write_text("安静模式 7\n", encoding="utf-8")
    assert Tokenizer("zh", user_dict=user_dict).tokenize("现在进入安静模式") == ["现在", "进入", "安静模式"]
    assert Tokenizer("auto").tokenize("北京清华大学 iPhone") == ["北京", "清华大学", "iphon"]
    assert capfd.readouterr() == ("", "")


def test_english_tokenization_does_not_import_jieba(tmp_path: Path) -> None:
    code = ("import sys\n"
            "from bm25lab.engine.tokenization import Tokenizer\n"
            "assert 'jieba' not in sys.modules\n"
            "assert Tokenizer().tokenize('The running foxes') == ['run', 'fox']\n"
            "assert Tokenizer('en').tokenize('Hello, world!') == ['hello', 'world']\n"
            "assert Tokenizer('whitespace').tokenize('a b') == ['a', 'b']\n"
            "Tokenizer().config()\n"
            "assert 'jieba' not in sys.modules, 'jieba was imported'\n")
    done = run_python(code, {"BM25LAB_CACHE_DIR": str(tmp_path)}, tmp_path)
    assert (done.returncode, done.stderr) == (0, "")


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(list("ab c\t\n\r\x0b\x0c\x1f\x7f_中文 .,!é ") + ["\u3000", "\x1c", "\u2028", "٣", "𝄞", "w1", "\u0301"]),
                max_size=40).map("".join))
def test_whitespace_analysis_shortcut_equals_the_word_filter(text: str) -> None:
    # a text of letters, digits and whitespace only is split without looking at each piece (ASCII
    # text checked by its bytes, other text by a regular expression), with and without stopwords
    for stopwords in (None, ["b", "w1"]):
        tok = Tokenizer("whitespace", stopwords=stopwords)
        words = [w for w in unicodedata.normalize("NFKC", text).split() if w.isalnum() or _is_word(w)]
        assert tok.tokenize(text) == [w for w in words if w not in (stopwords or [])]
