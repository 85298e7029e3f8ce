"""Text to keyword terms, per language: words in every script with their offsets, Snowball
stemming and stop words per language, folding only where a language allows it, scripts
without spaces segmented (and their characters kept), and a question analysed as each
language of the passages it is asked of."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from lorebase.analysis import (
    DEFAULT_LANGUAGE,
    NEUTRAL,
    STEMMERS,
    STOP_WORD_LANGUAGES,
    analysis,
    analysis_language,
    fold,
    index_text,
    merged,
    query_variants,
    words,
)


@given(st.text(max_size=200))
def test_every_word_is_the_text_between_its_offsets(text: str) -> None:
    found = words(text)
    for word in found:
        assert text[word.start : word.end] == word.text and word.text
        assert not any(char.isspace() for char in word.text)
    assert [w.start for w in found] == sorted(w.start for w in found)


@given(st.text(max_size=200), st.sampled_from(["en", "de", "zh", "th", "ar", "und", None]))
def test_analysis_never_fails_and_gives_terms_without_spaces(
    text: str, language: str | None
) -> None:
    for term in analysis(language).terms(text):
        assert term and not any(char.isspace() for char in term)
        assert len(term.encode()) <= 40


def test_words_in_scripts_with_and_without_spaces() -> None:
    assert [w.text for w in words("e.g. 3.14, snake_case and don't")] == [
        *("e", "g", "3", "14", "snake", "case", "and", "don", "t"),
    ]
    assert analysis("en").query_terms("don't panic") == {"panic": 1}  # "don't": a stop word
    assert [w.text for w in words("黑豹队的防守很好。")] == ["黑", "豹", "队", "的", "防守", "很好"]
    assert [w.text for w in words("ภาษาไทยง่ายนิดเดียว")] == ["ภาษา", "ไทย", "ง่าย", "นิด", "เดียว"]
    assert [w.text for w in words("नमस्ते दुनिया")] == ["नमस्ते", "दुनिया"]  # vowel signs kept
    assert [w.text for w in words("مرحبا بالعالم")] == ["مرحبا", "بالعالم"]  # right to left
    assert words("😀 🎉 — …") == []  # emoji only: nothing to search for, no error


def test_each_language_is_stemmed_by_its_own_stemmer() -> None:
    assert analysis("en").terms("The runners were running") == ["the", "runner", "were", "run"]
    assert analysis("de").terms("Die Häuser liefen schön") == ["die", "haus", "lief", "schon"]
    assert analysis("es").terms("Las canciones") == ["las", "cancion"]
    assert analysis("ru").terms("Книги") == ["книг"]


def test_accents_are_folded_only_where_a_language_allows_it() -> None:
    assert analysis("pt").terms("Configuração") == analysis("pt").terms("configuracao")
    assert analysis("en").terms("résumé") == ["resum"]
    assert analysis("tr").terms("ılık") != analysis("tr").terms("ilik")  # ı is another letter
    assert fold("ødegård straße") == "odegard strasse"
    assert fold("東京") == "東京"
    # A word of nothing but combining marks (hypothesis found one) stays itself: no empty term.
    assert fold("\u1dc0") == "\u1dc0" and analysis("en").terms("\u1dc0") == ["\u1dc0"]


def test_a_language_without_a_stemmer_gets_the_neutral_analysis() -> None:
    assert analysis_language("sw") == NEUTRAL
    assert analysis("sw").terms("Habari za asubuhi") == ["habari", "za", "asubuhi"]
    assert analysis_language(None) == DEFAULT_LANGUAGE  # passages from before languages
    assert analysis_language("und") == DEFAULT_LANGUAGE  # a language not told
    assert analysis_language("python") == DEFAULT_LANGUAGE  # source code
    assert analysis_language("zh") == "zh" and analysis_language("ja") == "ja"


def test_a_script_without_spaces_is_indexed_by_word_and_by_character() -> None:
    assert index_text("黑豹队的防守", "zh").split() == ["黑", "豹", "队", "的", "防守", "防", "守"]
    # A question of one character finds the word it is part of.
    assert query_variants("守", ["zh"]) == [{"守": 1}]


def test_a_question_counts_a_stem_once_per_word_and_drops_stop_words() -> None:
    terms = analysis("en").query_terms("Retrieval of retrieved documents, e.g. the RETRIEVAL")
    assert terms == {"retriev": 3, "document": 1, "e": 1, "g": 1}  # each word counts
    assert analysis("en").query_terms("the") == {"the": 1}  # only stop words: they are kept
    assert analysis("en").query_terms("?! --") == {}
    assert analysis("de").query_terms("Wie viele Punkte gab die Verteidigung?") == {
        "viel": 1,
        "punkt": 1,
        "gab": 1,
        "verteid": 1,
    }


def test_a_question_is_analysed_as_each_language_of_the_passages() -> None:
    variants = query_variants("How many points did the Panthers defense give up?", ["en", "de"])
    assert (
        variants
        == [
            {"panth": 1, "point": 1, "defens": 1, "give": 1},
            {"point": 1, "panther": 1, "defens": 1, "give": 1},
        ]
        or len(variants) == 2
    )
    # A stop word of either language is nobody's search word ("die" is German's article).
    assert all("the" not in v and "did" not in v for v in variants)
    assert merged([{"a": 1, "b": 2}, {"b": 1, "c": 1}]) == {"a": 1, "b": 2, "c": 1}
    assert query_variants("anything", []) == [analysis("en").query_terms("anything")]


def _analysed() -> list[str]:
    from lorebase.analysis import _SEGMENTED

    return sorted({*STEMMERS, *STOP_WORD_LANGUAGES, *_SEGMENTED, NEUTRAL, DEFAULT_LANGUAGE})


# Letters of several scripts (with and without spaces) and what ICU treats specially between
# them: apostrophes, colons (Finnish and Swedish "EU:n"), periods, dashes.
QUESTION_CHARACTERS = list("abcxyzEU éüßİıñ:'’.,-_03αβγПриветмир北京大学日本語ですภาษาไทย")


@given(
    st.text(alphabet=st.sampled_from(QUESTION_CHARACTERS), max_size=60),
    st.lists(st.sampled_from(_analysed()), min_size=1, max_size=8, unique=True),
)
@example("EU:n jäsen, don't l'homme: aujourd'hui 3.14", ["fi", "sv", "en", "fr", "de"])
@example("北京大学 ภาษาไทย 日本語です", ["zh", "th", "ja", "ko", "en"])
def test_a_question_split_once_is_each_language_s_own_analysis(
    text: str, languages: list[str]
) -> None:
    """query_variants splits a question once and analyses its words once per stemmer and
    folding: the variants of analysing it in each language, split in that language's locale
    (ICU's word boundaries are the same in every locale lorebase analyses)."""
    codes = sorted({analysis_language(language) for language in languages})
    stops = frozenset().union(*(analysis(code).stop_words for code in codes))
    own = [analysis(code).query_terms(text, stops) for code in codes]
    assert query_variants(text, languages) == [variant for variant in own if variant]


LATIN = st.characters(max_codepoint=0x2FF, categories=["Lu", "Ll", "Nd", "Zs", "Po", "Pd", "Cc"])


@given(st.text(alphabet=LATIN, max_size=300))
def test_latin_text_is_split_alike_by_the_fast_path_and_by_icu(text: str) -> None:
    """Letters, digits, spaces and punctuation (not every symbol: ICU cuts ``0¼`` in two)."""
    from lorebase.analysis import _segments

    icu = [word for _, pieces in _segments(text, "en") for word in pieces]
    assert words(text) == icu


@given(
    st.lists(st.text(min_size=1, max_size=12), max_size=30),
    st.sampled_from(["en", "de", "fr", "zh", "ru"]),
)
def test_terms_of_many_words_are_the_terms_of_each(words: list[str], language: str) -> None:
    lang = analysis(language)
    assert lang.terms_of(words) == [lang.term(word) for word in words]


BESIDE_LATIN = st.one_of(
    LATIN,
    st.characters(min_codepoint=0x370, max_codepoint=0x482),  # Greek, Cyrillic
    st.characters(min_codepoint=0x48A, max_codepoint=0x52F),
    st.characters(min_codepoint=0x20A0, max_codepoint=0x20CF),  # currency
    st.characters(min_codepoint=0x2190, max_codepoint=0x23FF),  # arrows, operators
    st.characters(min_codepoint=0x2500, max_codepoint=0x2775),  # boxes, shapes, symbols
    st.characters(min_codepoint=0x2794, max_codepoint=0x2BFF),
)


@given(st.text(alphabet=BESIDE_LATIN, max_size=80), st.sampled_from(["en", "ru", "el"]))
def test_greek_cyrillic_and_symbols_take_the_fast_path_and_split_as_icu_does(
    text: str, language: str
) -> None:
    """A formula's minus sign or arrow, a Cyrillic word: still one expression, ICU's words."""
    from lorebase.analysis import _NOT_LATIN, _segments

    assert _NOT_LATIN.search(text) is None
    icu = [(w.text, w.start, w.end) for _, pieces in _segments(text, language) for w in pieces]
    assert [(w.text, w.start, w.end) for w in words(text, language)] == icu


LATIN_AND_PUNCTUATION = (
    "abcXYZéèüßøÆ019 .,;:'\"-_()!?"
    "\u2010\u2013\u2014\u2018\u2019\u201c\u201d\u2022\u2026\u2032\u203f"
)


@given(st.text(alphabet=LATIN_AND_PUNCTUATION, max_size=80))
def test_latin_text_with_typographic_punctuation_splits_as_icu_does(text: str) -> None:
    """The fast path (one expression) gives ICU's words, dashes and curly quotes included."""
    from lorebase.analysis import _segments

    icu = [(w.text, w.start, w.end) for _, pieces in _segments(text, "en") for w in pieces]
    assert [(w.text, w.start, w.end) for w in words(text, "en")] == icu


@given(st.text(max_size=120) | st.text(alphabet=LATIN_AND_PUNCTUATION, max_size=120))
@example("snake_case e.g. 3.14\u00a0non\u2011breaking \u2153 \u00b2 \u0131 \ud800 x")
@example("")
def test_latin_words_are_the_expression_s_words(text: str) -> None:
    """The fast word split (translated bytes) gives what the expression finds, in every
    script, with lone surrogates, digits of other scripts and non-breaking spaces."""
    from lorebase.analysis import _LATIN_WORD, latin_words

    assert latin_words(text) == _LATIN_WORD.findall(text)
