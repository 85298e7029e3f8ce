"""Snippets and their marks: the best sentence, bounded and cut at words; the question's words
marked whole, by the keyword arm's analysis in the passage's language, never stop words."""

import re
from collections.abc import Callable

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


def test_a_letter_or_digit_of_the_question_is_a_whole_word() -> None:
    """ "type 2 diabetes", "vitamin c": the single character is marked where it is a word,
    never inside one ("2" of "2009"), and a Latin passage is read without splitting it by
    ICU (~0.3 ms a passage: every passage of such a question took it)."""
    from lorebase.search.snippets import KnownPassages

    passages = KnownPassages()
    text = "In 2009 the type 2 diabetes trial began. Vitamin c was given. Cc: the team."
    found = snippets_for("type 2 diabetes, vitamin c", passages=passages)(text, "en")
    assert marked(found) == ["type", "2", "diabetes", "Vitamin", "c"]
    assert passages.read(text, "en").spans is None  # its words found as Latin words
    found = snippets_for("2 号")("2号楼在2009年建成。", "zh")  # an unspaced script
    assert marked(found) == ["2", "号"]  # a character of a word, not a digit of a number
    # A question with a character of an unspaced script reads a Latin passage as Latin.
    found = snippets_for("号 type 2", passages=passages)(text, "en")
    assert marked(found) == ["type", "2"] and passages.read(text, "en").spans is None


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
    st.sampled_from(["en", "de", "fr", "es", "nl", "tr", "ru", "fi", "hu", None]),
)
def test_looking_up_only_the_words_that_may_match_marks_what_every_word_would(
    pieces: list[tuple[str, str]], question: list[str], language: str | None
) -> None:
    """Snippets look up only the words that may be a wanted term (lorebase.analysis
    .words_that_may_be, or a passage's words kept by first letter: LatinWords, and the places
    of the terms a passage was asked about remembered: Read); the marks are those a lookup of
    every word gives."""
    from lorebase.analysis import (
        SUFFIX_STEMMERS,
        LatinWords,
        analysis,
        is_latin,
        latin_words,
        word_spans,
        words_that_may_be,
    )
    from lorebase.search.snippets import Read, matches

    text = "".join(word + glue for word, glue in pieces)
    lang = analysis(language)
    wanted = frozenset(lang.query_terms(" ".join(question)))
    held = word_spans(text, lang.language)
    terms = dict(zip([w for w, _, _ in held], lang.terms_of([w for w, _, _ in held]), strict=True))
    only_stop = all(term in lang.stop_words for term in wanted)
    singles = {term for term in wanted if len(term) == 1 and not is_latin(term)}
    every: list[tuple[int, int]] = []
    for word, start, end in held:
        if terms[word] in wanted and (only_stop or not lang.is_stop_word(word)):
            every.append((start, end))
        elif singles and len(word) > 1:
            every.extend((start + i, start + i + 1) for i, c in enumerate(word) if c in singles)
    assert matches(text, lang, wanted) == every
    flat = " ".join(text.split())
    read = Read(flat)
    for _ in range(2):  # the places of the terms told, then remembered
        assert matches(flat, lang, wanted, {}, read) == matches(flat, lang, wanted)
    may_be = words_that_may_be(text, lang, wanted)
    if is_latin(text):
        kept = LatinWords(text)  # asked of one term's letter, then of all: the first kept
        fewer = frozenset(sorted(wanted)[:1])
        assert kept.that_may_be(lang, fewer) == words_that_may_be(text, lang, fewer)
        assert kept.that_may_be(lang, wanted) == may_be
        # Only words that cannot be a wanted term are left out: in a language whose stemmer
        # keeps a word's first letter, those that begin with an ASCII letter no term begins with.
        firsts = {term[0] for term in wanted if term[0].isascii()}
        keeps_first = lang.stemmer is None or lang.stemmer in SUFFIX_STEMMERS
        assert may_be == {
            word
            for word in latin_words(text)
            if not keeps_first or word[0] >= "\x80" or word[0].lower() in firsts
        }
        assert may_be >= {word for word in latin_words(text) if terms[word] in wanted}
    else:
        assert may_be is None


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


_SENTENCE_WORDS = st.sampled_from(["heat", "flow", "Mach", "wall", "layer", "x", "热", "流"])
_SENTENCE_GLUE = st.sampled_from([" ", ". ", "! ", "?", "...", "。", "！", "\n", ", ", ".\n"])


def _every_sentence(
    flat: str, found: list[tuple[int, int]], term: Callable[[str], str | None]
) -> tuple[int, int]:
    """The best sentence by walking every sentence of the text (what best_sentence did)."""
    import re

    best = (0, 0, -1)  # start, end, distinct words
    for match in re.finditer(r"[^.!?。！？\n]+(?:[.!?。！？]+|\n|$)", flat):
        start, end = match.span()
        inside = {term(flat[a:b]) or flat[a:b] for a, b in found if start <= a < end}
        if len(inside) > best[2]:
            best = (start, end, len(inside))
    return best[0], best[1]


@given(
    st.lists(st.tuples(_SENTENCE_WORDS, _SENTENCE_GLUE), min_size=0, max_size=30),
    st.sets(st.sampled_from(["heat", "flow", "mach", "wall", "layer", "x", "热"])),
    st.booleans(),
)
def test_the_best_sentence_is_the_one_a_walk_over_every_sentence_finds(
    pieces: list[tuple[str, str]], question: set[str], told: bool
) -> None:
    """Only the sentences holding a mark are looked for; the sentence chosen (ties: the
    first; no mark: the text's first) is the one scoring every sentence gives, whether the
    words' terms were known before or not."""
    from lorebase.analysis import analysis
    from lorebase.search.snippets import best_sentence, matches

    lang = analysis("en")
    flat = "".join(word + glue for word, glue in pieces)
    wanted = frozenset(question)
    known: dict[str, str | None] = {}
    found = matches(flat, lang, wanted, known)
    expected = _every_sentence(flat, found, lang.term)
    assert best_sentence(flat, found, lang, wanted, known if told else None) == expected


def test_passages_cut_again_cut_alike_in_every_script_and_stay_bounded() -> None:
    """A search service keeps what it read of the passages it cut (their words, sorted the
    second time; ICU's words of text it splits the first): the snippets of later searches
    are those of a first read, and the passages kept stay within their bound, the least
    lately cut forgotten first."""
    from lorebase.search.snippets import KnownPassages, KnownTerms

    passages = [
        (LONG, "en"),
        ("Die Grenzschicht wird dünner, wenn die Machzahl steigt. Wärmeübergang " * 8, "de"),
        ("边界层的热传递随着马赫数增加。高超声速流动加热壁面。" * 12, "zh"),
        ("Пограничный слой нагревает стенку. Число Маха растёт. " * 6, "ru"),
    ]
    questions = ["vacation days", "Machzahl Wärme", "热传递 马赫数", "число Маха", "parking"]
    memory = KnownPassages()
    kept = KnownTerms()
    for _ in range(3):  # first read, words sorted, then as kept
        for query in questions:
            fresh = snippets_for(query)
            remembered = snippets_for(query, kept=kept, passages=memory)
            for text, language in passages:
                assert remembered(text, language) == fresh(text, language)
    assert memory._kept[(LONG, "en")].words is not None  # sorted once cut twice
    assert memory._kept[(passages[2][0], "zh")].spans is not None  # ICU's words, kept
    bounded = KnownPassages(size=3)
    cut = snippets_for("vacation", passages=bounded)
    for text, language in passages:
        cut(text, language)
    assert len(bounded._kept) == 3
    assert (LONG, "en") not in bounded._kept  # the least lately cut


def test_a_passage_asked_about_many_terms_cuts_alike_and_forgets_them_past_its_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The places of the terms asked of a passage are remembered up to a bound, then forgotten
    all at once; the snippets of every question are those of a fresh read throughout."""
    from lorebase.search import snippets as module

    monkeypatch.setattr(module, "TERMS_PER_PASSAGE", 4)
    memory = module.KnownPassages()
    kept = module.KnownTerms()
    questions = ["vacation days", "the policy", "parking permits", "vacation policy", "the"]
    for _ in range(2):
        for query in questions:
            remembered = snippets_for(query, kept=kept, passages=memory)
            assert remembered(LONG, "en") == snippets_for(query)(LONG, "en")
            assert len(memory.read(LONG, "en").terms) <= 4


@given(st.text(alphabet="ab .!?。！？\n", max_size=60))
def test_the_runs_of_breaks_are_those_the_expression_finds(text: str) -> None:
    """A run of .!?。！？ is one, a line's end one of its own, wherever they stand."""
    from lorebase.search.snippets import sentence_runs

    spans = [match.span() for match in re.finditer(r"[.!?。！？]+|\n", text)]
    assert sentence_runs(text) == ([a for a, _ in spans], [b for _, b in spans])
