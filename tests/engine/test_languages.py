"""Languages beyond Chinese and English: every Snowball language of PyStemmer with its bundled stopword
list, and CJK character bigrams for Japanese and Korean, named in the index so that queries match.

Real sentences of each family (the same sentence, "the researchers studied turbulent flows (in houses)",
in each language) with the stems Snowball gives, stopwords dropped."""
from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from bm25lab.engine import Index, ParameterError, Tokenizer
from bm25lab.engine.tokenization import LANGUAGES, SNOWBALL_LANGUAGES, _builtin_stopwords, _normalise_stopword

SENTENCES: dict[str, tuple[str, list[str]]] = {
    # Romance
    "fr": ("Les chercheurs étudiaient les écoulements turbulents.", ["chercheur", "étudi", "écoul", "turbulent"]),
    "es": ("Los investigadores estudiaron las corrientes turbulentas en las casas.",
           ["investig", "estudi", "corrient", "turbulent", "cas"]),
    "it": ("I ricercatori studiavano le correnti turbolente nelle case.",
           ["ricerc", "stud", "corrent", "turbolent", "cas"]),
    "pt": ("Os pesquisadores estudaram as correntes turbulentas nas casas.",
           ["pesquis", "estud", "corrent", "turbulent", "cas"]),
    "ro": ("Cercetătorii au studiat curenții turbulenți în case.", ["cercet", "studiat", "curenț", "turbulenț", "cas"]),
    # Germanic
    "de": ("Die Forscher untersuchten turbulente Strömungen in Häusern.",
           ["forsch", "untersucht", "turbulent", "stromung", "haus"]),
    "nl": ("De onderzoekers bestudeerden turbulente stromingen in huizen.",
           ["onderzoeker", "bestudeer", "turbulent", "stroom", "huis"]),
    "sv": ("Forskarna studerade turbulenta strömningar i husen.", ["forsk", "studer", "turbulent", "strömning", "hus"]),
    # Slavic
    "ru": ("Исследователи изучали турбулентные течения.", ["исследовател", "изуча", "турбулентн", "течен"]),
    "pl": ("Naukowcy badali przepływy turbulentne.", ["naukowc", "bad", "przepływ", "turbulentn"]),
    "cs": ("Výzkumníci studovali turbulentní proudění v domech.",
           ["výzkumník", "studoval", "turbulentn", "prouděn", "dom"]),
    # Finnic and Hungarian
    "fi": ("Tutkijat tutkivat turbulentteja virtauksia taloissa.", ["tutkij", "tutkiv", "turbulent", "virtauks", "talo"]),
    "et": ("Teadlased uurisid turbulentseid voolusid majades.", ["teadlase", "uuri", "turbulentse", "voolu", "maja"]),
    "hu": ("A kutatók turbulens áramlásokat vizsgáltak.", ["kutató", "turbulens", "áramlás", "vizsgált"]),
    # Arabic, Greek, Persian, Hindi, Turkish
    "ar": ("درس الباحثون التدفقات المضطربة", ["درس", "باحث", "تدفق", "مضطرب"]),
    "el": ("Οι ερευνητές μελέτησαν τις τυρβώδεις ροές.", ["ερευνητ", "μελετ", "τυρβωδ", "ρο"]),
    "fa": ("پژوهشگران جریان‌های آشفته را مطالعه کردند.", ["پژوهشگران", "جریان", "آشفت", "مطالعه"]),
    "hi": ("शोधकर्ताओं ने अशांत प्रवाहों का अध्ययन किया।", ["शोधकर्त", "अशांत", "प्रवाह", "अध्ययन"]),
    "tr": ("Araştırmacılar evlerdeki türbülanslı akışları incelediler.",
           ["araştırmacı", "ev", "türbülanslı", "akış", "inceledi"]),
    # Japanese and Korean: CJK runs to bigrams, the rest as English
    "ja": ("東京都の大学で研究しています。Tokyo researchers",
           ["東京", "京都", "都の", "の大", "大学", "学で", "で研", "研究", "究し", "して", "てい", "いま", "ます", "tokyo",
            "research"]),
    "ko": ("한국어 형태소 분석기를 사용합니다 running",
           ["한국", "국어", "형태", "태소", "분석", "석기", "기를", "사용", "용합", "합니", "니다", "run"]),
}


@pytest.mark.parametrize("language", list(SENTENCES))
def test_real_text_gives_the_known_stems(language: str) -> None:
    text, stems = SENTENCES[language]
    assert Tokenizer(language).tokenize(text) == stems


def test_cjk_bigrams_and_unigrams() -> None:
    tokenizer = Tokenizer("ja", stopwords="none")
    assert tokenizer.tokenize("東京都") == ["東京", "京都"]
    assert tokenizer.tokenize("本 と the book") == ["本", "と", "the", "book"]  # a character alone stays a unigram
    assert tokenizer.tokenize("ｶﾀｶﾅ") == ["カタ", "タカ", "カナ"]  # NFKC: half-width katakana first
    assert Tokenizer("ko").tokenize("서울특별시 Seoul's") == ["서울", "울특", "특별", "별시", "seoul"]
    assert Tokenizer("ja").tokenize("no CJK here, and the stopwords go") == Tokenizer("en").tokenize(
        "no CJK here, and the stopwords go")


@pytest.mark.parametrize("language", list(SNOWBALL_LANGUAGES))
def test_every_snowball_language_has_its_stemmer_and_a_fitting_stopword_list(language: str) -> None:
    import Stemmer

    name, algorithm = SNOWBALL_LANGUAGES[language]
    assert algorithm in Stemmer.algorithms()
    words = _builtin_stopwords(language)
    assert len(words) >= 30
    spec = LANGUAGES[language]
    assert spec.stemmer == algorithm and spec.stopword_lists == (language,) and name in spec.description
    tokenizer = Tokenizer(language)
    assert tokenizer.stem and tokenizer.stopwords == {_normalise_stopword(w, True) for w in words}
    # the list fits the analysis: its words are single words of the language's word path
    plain = Tokenizer(language, stem=False, stopwords="none")
    fits = sum(plain.tokenize(w) == [_normalise_stopword(w, True)] for w in words)
    assert fits >= 0.95 * len(words)
    assert len(tokenizer.tokenize(" ".join(words))) < 0.1 * len(words)  # only pieces of hyphenated entries are left


def test_every_data_file_is_registered_and_attributed() -> None:
    data = Path(__file__).resolve().parents[2] / "engine" / "data"
    provenance = (data / "PROVENANCE.md").read_text(encoding="utf-8")
    codes = {p.stem.removeprefix("stopwords_") for p in data.glob("stopwords_*.txt")}
    assert codes == set(SNOWBALL_LANGUAGES) | {"en", "zh"}
    for code in codes:
        assert f"stopwords_{code}.txt" in provenance
        header = (data / f"stopwords_{code}.txt").read_text(encoding="utf-8").splitlines()[:2]
        assert all(line.startswith("#") for line in header) and "licence" in header[1]


def test_the_language_is_saved_with_the_index_and_queries_match(tmp_path: Path) -> None:
    docs = [("d1", "Les chercheurs étudiaient les écoulements turbulents dans les tuyaux."),
            ("d2", "Le chercheur étudie la chaleur."), ("d3", "Une maison au bord de la mer.")]
    Index.build(docs, tokenizer=Tokenizer("fr"), workers=1).save(tmp_path / "fr")
    loaded = Index.load(tmp_path / "fr")
    assert loaded.tokenizer == Tokenizer("fr") and loaded.info().tokenizer["language"] == "fr"
    assert loaded.search("écoulement turbulent", k=3).doc_ids == ["d1"]  # singular query, plural text
    assert set(loaded.search("le chercheur", k=3).doc_ids) == {"d1", "d2"}  # "chercheurs" in d1
    assert loaded.search("les dans", k=3).doc_ids == []  # stopwords only
    ja = [("j1", "東京都の大学で研究しています"), ("j2", "京都の寺を見学しました"), ("j3", "大阪の料理")]
    Index.build(ja, tokenizer=Tokenizer("ja"), workers=1).save(tmp_path / "ja")
    assert Index.load(tmp_path / "ja").search("京都", k=3).doc_ids[:2] in (["j2", "j1"], ["j1", "j2"])
    assert Index.load(tmp_path / "ja").search("大学の研究", k=3).doc_ids[0] == "j1"


def test_stemming_does_not_apply_where_there_is_no_stemmer() -> None:
    with pytest.raises(ParameterError, match="stemming does not apply.*it applies to: auto, en, ja, ko, ar"):
        Tokenizer("whitespace", stem=True)


def test_the_command_line_lists_every_language(tmp_path: Path) -> None:
    from bm25lab.cli import app

    result = CliRunner().invoke(app, ["index", "--help"], env={"COLUMNS": "400"})
    assert result.exit_code == 0
    for code in LANGUAGES:
        assert code in result.output
    (tmp_path / "docs.tsv").write_text("d1\tDie Forscher untersuchten Strömungen.\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["index", str(tmp_path / "docs.tsv"), "--out", str(tmp_path / "idx"),
                                      "--language", "de"])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(app, ["search", str(tmp_path / "idx"), "Strömung", "--format", "json"])
    assert '"d1"' in result.stdout
    result = CliRunner().invoke(app, ["index", str(tmp_path / "docs.tsv"), "--out", str(tmp_path / "x"),
                                      "--language", "klingon"])
    assert result.exit_code == 2
