"""Snippets and their marks: the best sentence, bounded and cut at words; the question's words
marked whole, by the keyword arm's analysis in the passage's language, never stop words."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lorebase.search.snippets import SNIPPET_CHARS, Snippet, snippet, snippets_for

LONG = (
    "The cafeteria opens at eight. Lunch is served between noon and two. "
    "Employees accrue vacation days at a rate of one and a half days per month of service. "
    "Parking permits are issued by the facilities office on the first floor. "
    "Unused vacation days carry over to the next year up to a limit of ten days. "
) * 2


def marked(found: Snippet) -> list[str]:
    return [found.text[start:end] for start, end in found.marks]


def test_short_text_is_returned_whole() -> None:
    assert snippet("Short  text\nhere.", "text") == "Short text here."


def test_snippet_centres_on_the_sentence_with_most_query_words() -> None:
    result = snippet(LONG, "how many vacation days accrue per month")
    assert len(result) <= SNIPPET_CHARS
    assert "accrue vacation days" in result


def test_accents_fold_when_matching() -> None:
    text = "Alpha beta gamma. " * 20 + "A configuração do sistema fica aqui. " + "Delta. " * 20
    found = snippets_for("configuracao")(text, "pt")
    assert "configuração" in found.text and marked(found) == ["configuração"]


def test_ellipses_mark_cut_ends() -> None:
    result = snippet(LONG, "parking permits")
    assert result.startswith("…") or result.endswith("…")


def test_whole_words_are_marked_never_a_part_or_a_stop_word() -> None:
    found = snippets_for("What is missing?")("Missing: the invoice. It is late.", "en")
    assert marked(found) == ["Missing"]  # not "is" inside "Missing", not the stop word "is"
    found = snippets_for("indexing documents")("Indexed documents and a document index.", "en")
    assert marked(found) == ["Indexed", "documents", "document", "index"]


def test_words_are_marked_in_the_passages_own_language() -> None:
    found = snippets_for("Wie viele Häuser?")("Die Häuser und das Haus stehen.", "de")
    assert marked(found) == ["Häuser", "Haus"]  # "wie" is a German stop word
    found = snippets_for("防守")("黑豹队的防守很好。", "zh")
    assert marked(found) == ["防守"]
    found = snippets_for("守")("黑豹队的防守很好。", "zh")  # one character of a word
    assert marked(found) == ["守"]


def test_a_question_of_stop_words_alone_marks_them() -> None:
    assert marked(snippets_for("the")("Over the hills.", "en")) == ["the"]


words = st.text(alphabet="abcdefghij ÄÖé東.!?\n", min_size=0, max_size=2000)


@given(words, st.text(max_size=50), st.sampled_from(["en", "de", "zh", None]))
def test_snippet_is_bounded_comes_from_the_text_and_marks_words_in_it(
    text: str, query: str, language: str | None
) -> None:
    found = snippets_for(query)(text, language)
    assert len(found.text) <= SNIPPET_CHARS
    flat = " ".join(text.split())
    assert found.text.strip("…") in flat
    for start, end in found.marks:
        piece = found.text[start:end]
        assert piece and piece.strip() == piece and "…" not in piece
    assert list(found.marks) == sorted(found.marks)


_WORDS = st.sampled_from(
    [
        "Index",
        "indexing",
        "indexed",
        "Über",
        "über",
        "naïve",
        "Naive",
        "café",
        "Café",
        "retrieval",
        "retrieved",
        "skies",
        "sky",
        "dying",
        "die",
        "lying",
        "ÉTÉ",
        "été",
        "2024",
        "x",
        "X-ray",
        "co-op",
        "Straße",
        "strasse",
        "the",
        "and",
        "fish",
        "Fishing",
    ]
)
_GLUE = st.sampled_from([" ", ", ", ". ", " — ", "’s ", "\n", " (", ") ", "_", "-"])


@given(
    st.lists(st.tuples(_WORDS, _GLUE), min_size=1, max_size=40),
    st.lists(_WORDS, min_size=1, max_size=4),
    st.sampled_from(["en", "de", "fr", "es", "nl", "tr", "ru", None]),
)
def test_looking_up_only_the_words_that_may_match_marks_what_every_word_would(
    pieces: list[tuple[str, str]], question: list[str], language: str | None
) -> None:
    """Snippets look up only the words that may be a wanted term (lorebase.analysis
    .words_that_may_be); the marks are those a lookup of every word gives."""
    from lorebase.analysis import analysis, word_spans
    from lorebase.search.snippets import matches

    text = "".join(word + glue for word, glue in pieces)
    lang = analysis(language)
    wanted = frozenset(lang.query_terms(" ".join(question)))
    held = word_spans(text, lang.language)
    terms = dict(zip([w for w, _, _ in held], lang.terms_of([w for w, _, _ in held]), strict=True))
    only_stop = all(term in lang.stop_words for term in wanted)
    singles = any(len(term) == 1 for term in wanted)
    every: list[tuple[int, int]] = []
    for word, start, end in held:
        if terms[word] in wanted and (only_stop or not lang.is_stop_word(word)):
            every.append((start, end))
        elif singles and len(word) > 1:
            every.extend((start + i, start + i + 1) for i, c in enumerate(word) if c in wanted)
    assert matches(text, lang, wanted) == every


def test_terms_kept_across_searches_cut_alike_and_stay_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A search service keeps the terms of the words it cut passages around: the next
    searches cut the same snippets, and the store of words is emptied once full."""
    from lorebase.search import snippets as module

    monkeypatch.setattr(module, "KNOWN_WORDS", 12)
    kept = module.KnownTerms()
    passages = [
        "Heat transfer in a laminar boundary layer grows with the Mach number.",
        "The boundary layers of hypersonic flows heat the wall; transfer rates were measured.",
    ]
    for query in ("boundary layer heat transfer", "hypersonic wall heating", "Mach number"):
        fresh = module.snippets_for(query)
        remembered = module.snippets_for(query, kept=kept)
        for text in passages:
            assert remembered(text, "en") == fresh(text, "en")
        assert sum(len(words) for words in kept._by_language.values()) <= 12 + 20
