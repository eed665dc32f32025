"""Search-result snippets: stemmed and case-folded matches, Chinese terms, a window at a word boundary."""
from __future__ import annotations

from bm25lab.engine import Tokenizer
from bm25lab.cli.snippets import highlight_spans, snippet


def test_stemmed_and_case_folded_words_are_highlighted() -> None:
    tok = Tokenizer("en")
    text = "Transitions of the Boundary layer; boundaries move."
    terms = set(tok.tokenize("boundary transition"))
    spans = highlight_spans(text, terms, tok)
    assert [text[s:e] for s, e in spans] == ["Transitions", "Boundary", "boundaries"]


def test_chinese_terms_are_highlighted_verbatim() -> None:
    tok = Tokenizer("auto")
    text = "清华大学位于北京，iPhone 价格很高。"
    terms = set(tok.tokenize("清华大学 iPhone"))
    assert [text[s:e] for s, e in highlight_spans(text, terms, tok)] == ["清华大学", "iPhone"]


def test_window_starts_at_a_word_boundary_and_marks_the_cut() -> None:
    tok = Tokenizer("en")
    text = " ".join(["filler"] * 60 + ["turbulence"] + ["tail"] * 60)
    out = snippet(text, set(tok.tokenize("turbulence")), tok, width=80)
    plain = out.plain
    assert plain.startswith("…filler ") and plain.endswith("…")
    assert "turbulence" in plain
    bold = [plain[span.start:span.end] for span in out.spans]
    assert bold == ["turbulence"]
