from hypothesis import given
from hypothesis import strategies as st

from lorebase.search.snippets import (
    SNIPPET_CHARS,
    best_sentence,
    best_sentence_by_words,
    fold,
    query_terms,
    snippet,
)

LONG = (
    "The cafeteria opens at eight. Lunch is served between noon and two. "
    "Employees accrue vacation days at a rate of one and a half days per month of service. "
    "Parking permits are issued by the facilities office on the first floor. "
    "Unused vacation days carry over to the next year up to a limit of ten days. "
) * 2


def test_short_text_is_returned_whole() -> None:
    assert snippet("Short  text\nhere.", "text") == "Short text here."


def test_snippet_centres_on_the_sentence_with_most_query_words() -> None:
    result = snippet(LONG, "how many vacation days accrue per month")
    assert len(result) <= SNIPPET_CHARS
    assert "accrue vacation days" in result


def test_accents_fold_when_matching() -> None:
    text = "Alpha beta gamma. " * 20 + "A configuração do sistema fica aqui. " + "Delta. " * 20
    assert "configuração" in snippet(text, "configuracao")
    assert fold("Configuração") == "configuracao"


def test_ellipses_mark_cut_ends() -> None:
    result = snippet(LONG, "parking permits")
    assert result.startswith("…") or result.endswith("…")


words = st.text(alphabet="abcdefghij ÄÖé東.!?\n", min_size=0, max_size=2000)


@given(words, st.text(max_size=50))
def test_snippet_is_bounded_and_comes_from_the_text(text: str, query: str) -> None:
    result = snippet(text, query)
    assert len(result) <= SNIPPET_CHARS
    flat = " ".join(text.split())
    assert result.strip("…") in flat


ascii_text = st.text(alphabet="abcdefgh_1 .!?\n", min_size=0, max_size=600)


@given(ascii_text, st.text(alphabet="abcdefgh_1 ", max_size=40))
def test_the_fast_sentence_finder_agrees_with_counting_every_word(text: str, query: str) -> None:
    flat = " ".join(text.split())
    terms = frozenset(query_terms(query))
    stems = frozenset(t[:5] for t in terms if len(t) > 4)
    assert best_sentence(flat, terms, stems) == best_sentence_by_words(flat, terms, stems)
