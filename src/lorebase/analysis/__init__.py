"""How text becomes keyword terms, per language: one analysis that every lexical index (Tantivy,
PostgreSQL full text) and the snippets share, so a word is found the same way everywhere.

**Words.** ICU's word break rules (icu4py, with ICU's dictionaries inside the wheel) split text
in every script: at spaces and punctuation where a script has them, and by dictionary where it
has none (Chinese, Japanese, Thai, Lao, Khmer, Burmese). Each ICU word is then cut into its runs
of letters, combining marks and digits, so ``e.g.``, ``3.14`` and ``snake_case`` give the
pieces a reader would type (``e`` ``g``, ``3`` ``14``, ``snake`` ``case``) and a Thai or Hindi
word keeps its vowel signs. Words longer than :data:`MAX_TERM_BYTES` (hashes, base64) are no
search terms.

**Terms.** A word is lower-cased, stemmed by the Snowball stemmer of its language (PyStemmer:
Arabic to Yiddish, :data:`STEMMERS`) and, where the language allows it, folded to ASCII letters
(:data:`FOLDED`: ``configuracao`` finds ``Configuração``; Turkish, the Nordic languages or
Vietnamese are not folded, their accents make other letters). Words of scripts without spaces
are also indexed one character at a time (:data:`UNIGRAM_SCRIPTS`), so a question of one
character, or one the dictionary cuts differently, still finds the word. A language with no
stemmer (or none told) gets the neutral analysis: lower-cased words, nothing else, exact
words still found.

**Stop words** are indexed (lengths count every word) and left out of a *query* when it has
other words: the Snowball lists of :data:`STOP_WORD_LANGUAGES` (English: :mod:`lorebase.stopwords`).

**Queries** are analysed once per language the searched bases hold (:func:`query_variants`):
an English question asked of a base of German and English passages looks for its English
terms and its German terms; each passage was indexed in its own language, so each finds what
its analysis makes of the question.
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from lorebase.stopwords import ENGLISH_STOP_WORDS, stop_word_key

ANALYSIS_VERSION = 2
"""Of the word splitting, stemming and folding below: an index made by another is rebuilt."""

MAX_TERM_BYTES = 40
"""Longer words (hashes, base64, minified code) are left out, as Tantivy's default analyser
does; nobody types them as search words."""

MAX_QUERY_WORDS = 32
"""Words of a question beyond this many (after its stop words) are not searched for: an OR
query's cost grows with every term."""

NEUTRAL = "und"
"""The analysis of a text whose language is not known (ISO 639-2 "undetermined")."""

DEFAULT_LANGUAGE = "en"
"""The analysis of passages indexed before languages were told (and of source code, whose
comments and names are English far more often than not)."""

STEMMERS: dict[str, str] = {
    "ar": "arabic",
    "hy": "armenian",
    "eu": "basque",
    "ca": "catalan",
    "cs": "czech",
    "da": "danish",
    "nl": "dutch",
    "en": "english",
    "eo": "esperanto",
    "et": "estonian",
    "fi": "finnish",
    "fr": "french",
    "de": "german",
    "el": "greek",
    "hi": "hindi",
    "hu": "hungarian",
    "id": "indonesian",
    "ms": "indonesian",
    "ga": "irish",
    "it": "italian",
    "lt": "lithuanian",
    "ne": "nepali",
    "no": "norwegian",
    "nb": "norwegian",
    "nn": "norwegian",
    "fa": "persian",
    "pl": "polish",
    "pt": "portuguese",
    "gl": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "sr": "serbian",
    "bs": "serbian",
    "hr": "serbian",
    "es": "spanish",
    "sv": "swedish",
    "ta": "tamil",
    "tr": "turkish",
    "yi": "yiddish",
}
"""ISO 639-1 code (what :mod:`lorebase.languages` detects) -> PyStemmer's Snowball stemmer.
Close languages share one where Snowball has none of their own (Galician: Portuguese;
Bosnian, Croatian: Serbian, whose stemmer reads Latin and Cyrillic script alike)."""

FOLDED = frozenset({"en", "fr", "es", "pt", "gl", "it", "ca", "nl", "ro", "ga", "id", "ms", "eu"})
"""Languages whose accents a reader may leave out when typing (``resume`` for ``résumé``):
their terms are folded to ASCII letters. German needs no folding (its stemmer maps ä, ö, ü to
a, o, u itself); in Turkish, Swedish, Finnish, Hungarian or Vietnamese an accent makes another
letter, so they keep theirs."""

STOP_WORD_LANGUAGES: dict[str, str] = {
    "da": "danish",
    "nl": "dutch",
    "fi": "finnish",
    "fr": "french",
    "de": "german",
    "hu": "hungarian",
    "it": "italian",
    "ne": "nepali",
    "no": "norwegian",
    "nb": "norwegian",
    "nn": "norwegian",
    "pt": "portuguese",
    "ru": "russian",
    "es": "spanish",
    "sv": "swedish",
    "tr": "turkish",
}
"""The Snowball project's stop-word lists shipped in ``analysis/stopwords`` (the files
PostgreSQL's full-text search ships), by language; English's is :mod:`lorebase.stopwords`."""

UNIGRAM_SCRIPTS = (
    (0x3040, 0x30FF),  # hiragana, katakana
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0x20000, 0x3FFFF),  # CJK extensions B-H
)
"""Scripts written without spaces whose single characters carry meaning: their words are
indexed one character at a time too."""

_WORD_CATEGORIES = frozenset("LMN")
_LATIN_WORD = re.compile(r"[^\W_]+")
_NOT_LATIN = re.compile(
    "[^\u0000-\u02ff\u0370-\u0482\u048a-\u052f\u2010-\u2027\u2030-\u205e"
    "\u20a0-\u20cf\u2190-\u23ff\u2500-\u2775\u2794-\u2bff]"
)
"""A character outside Latin letters (below the combining marks, U+0300), Greek and Cyrillic
letters (their combining marks aside), typographic punctuation (dashes, quotes, bullets,
ellipses, primes) and symbols that are neither letters nor digits (currency, arrows,
mathematical operators, technical symbols, box drawing, shapes, dingbats but their encircled
numbers): text without one is split by :data:`_LATIN_WORD` into the words ICU would give
(ICU joins letters of these scripts as it joins Latin ones and cuts at every symbol). A
minus sign or a bullet in a formula sent 6% of a real corpus's passages to ICU, at ~20 times
the cost."""


def _latin(text: str) -> bool:
    return text.isascii() or _NOT_LATIN.search(text) is None  # isascii: told at once


def latin_words(text: str) -> list[str]:
    """The words :data:`_LATIN_WORD` finds in ``text``, in order (runs of letters and digits),
    without running it: :func:`_spaced` split at spaces (a third of the regular expression's
    time on passages of 1,000 characters: the terms of every chunk indexed). Pure."""
    return _spaced(text).split()


def _spaced(text: str) -> str:
    """``text`` with each ASCII character that is neither letter nor digit, and each other
    character that is neither (a dash, a quote, a non-breaking space), made a space: its
    words (as :data:`_LATIN_WORD` finds them) are its runs of other characters."""
    if not text.isascii():
        text = _OTHER_NON_WORD.sub(" ", text)
    # What is left outside ASCII is letters and digits: their UTF-8 bytes are all >= 0x80.
    return text.encode("utf-8").translate(_WORD_BYTES).decode("utf-8")


_OTHER_NON_WORD = re.compile(r"[^\x00-\x7f\w]")
"""A character outside ASCII that is neither letter nor digit (``\\w`` is ``str.isalnum`` and the
ASCII underscore): one expression over the text, a third less than replacing each such
character found in its set."""
_WORD_BYTES = bytes(byte if byte >= 0x80 or chr(byte).isalnum() else 0x20 for byte in range(256))
"""A byte of a word kept, any other ASCII byte a space (for :func:`latin_words`)."""


_FIRST_UNIGRAM = UNIGRAM_SCRIPTS[0][0]


@dataclass(frozen=True, slots=True)
class Word:
    """A word of a text and where it stands: ``text[start:end]``."""

    text: str
    start: int
    end: int


def words(text: str, language: str | None = None) -> list[Word]:
    """The words of ``text`` in order, with their offsets (see the module's docstring). Pure.

    Text of Latin letters without combining marks (below U+0300: English and most Western
    European text), typographic dashes and quotes aside, is split by one regular expression
    instead, which gives the same words as ICU then the cut into runs does, at a fifth of the
    cost."""
    if _latin(text):
        return [Word(m.group(), m.start(), m.end()) for m in _LATIN_WORD.finditer(text)]
    return [word for _, pieces in _segments(text, language) for word in pieces]


def word_spans(text: str, language: str | None = None) -> list[tuple[str, int, int]]:
    """:func:`words` as plain ``(word, start, end)`` tuples: cheaper where many texts are
    split at once (the snippets of a search). Pure."""
    if _latin(text):
        return [(m.group(), m.start(), m.end()) for m in _LATIN_WORD.finditer(text)]
    return [(word.text, word.start, word.end) for word in words(text, language)]


SUFFIX_STEMMERS = frozenset(
    {
        "catalan",
        "danish",
        "dutch",
        "english",
        "finnish",
        "french",
        "german",
        "italian",
        "norwegian",
        "portuguese",
        "romanian",
        "spanish",
        "swedish",
    }
)
"""Snowball stemmers that change only a word's end: a word of ASCII letters keeps its first
letter (lower-cased) as its term's first letter."""


def words_that_may_be(text: str, analysis: Analysis, terms: Collection[str]) -> set[str] | None:
    """The distinct words of ``text`` (as :func:`word_spans` splits it) that may be indexed
    as one of ``terms``: in Latin text of a language whose stemmer changes only a word's end (or
    that has none), the words that begin with a term's first letter, and those that begin with a
    letter outside ASCII (folding may change it); every word otherwise. None for text that is
    not Latin (:func:`word_spans` splits it by ICU). The snippets of a search look up far fewer
    words (what the analysis of the rest would have said is known: no wanted term). Pure."""
    if not _latin(text):
        return None
    return LatinWords(text).that_may_be(analysis, terms)


def is_latin(text: str) -> bool:
    """Whether :func:`word_spans` splits ``text`` without ICU (see :data:`_NOT_LATIN`). Pure."""
    return _latin(text)


class LatinWords:
    """The words of a Latin text: :func:`words_that_may_be` for many questions without
    splitting the text again. The text is kept with every character outside a word made a
    space (one string, not a list of its words); the words that begin with a letter are found
    by one expression over it (:func:`_starting_with`, made once per letter) the first time a
    question asks for that letter, and kept. Against a list of the words passed over in Python
    for each question: a kept passage cut for a new question ~21 µs instead of ~29, a first cut
    ~5 % more, half the memory (most cuts in a server are of kept passages)."""

    __slots__ = ("_ascii", "_by_letter", "_spaced")

    def __init__(self, text: str) -> None:
        self._spaced = " " + _spaced(text)  # each word follows a space
        self._ascii = self._spaced.isascii()
        self._by_letter: dict[str, frozenset[str]] = {}

    def that_may_be(self, analysis: Analysis, terms: Collection[str]) -> set[str]:
        """What :func:`words_that_may_be` says of the text. Pure."""
        firsts = _first_letters(analysis, terms)
        if firsts is None:  # the stemmer may change a first letter: every word may be one
            return set(self._words(_EVERY_WORD))
        # A word beginning outside ASCII may fold to a term's first letter.
        return set().union(*map(self._words, firsts if self._ascii else (*firsts, _OUTSIDE_ASCII)))

    def _words(self, letter: str) -> frozenset[str]:
        """The distinct words that begin with ``letter`` (see :func:`_starting_with`; every
        word for :data:`_EVERY_WORD`), found the first time they are asked for."""
        words = self._by_letter.get(letter)
        if words is None:
            if letter == _EVERY_WORD:
                words = frozenset(self._spaced.split())
            else:
                matched = _starting_with(letter).findall(self._spaced)
                words = frozenset(word[1:] for word in matched)
            self._by_letter[letter] = words
        return words


_EVERY_WORD = ""
"""The key of all the words (:meth:`LatinWords._words`)."""
_OUTSIDE_ASCII = "\x80"
"""The key of the words that begin outside ASCII (see :func:`_starting_with`)."""


@functools.cache
def _starting_with(letter: str) -> re.Pattern[str]:
    """A space, then a word (up to the next space) that begins with ``letter`` in either case
    (:data:`_OUTSIDE_ASCII`: with a character outside ASCII)."""
    if letter == _OUTSIDE_ASCII:
        return re.compile(" [^\x00-\x7f][^ ]*")
    return re.compile(f" [{re.escape(letter)}{re.escape(letter.upper())}][^ ]*")


def _first_letters(analysis: Analysis, terms: Collection[str]) -> str | None:
    """The ASCII first letters of ``terms``, in order: a word of ASCII letters is one of them
    only if it begins with one (any case); None when the stemmer may change a word's first
    letters (every word may be one)."""
    if analysis.stemmer is not None and analysis.stemmer not in SUFFIX_STEMMERS:
        return None
    return "".join(sorted({term[0] for term in terms if term and term[0].isascii()}))


def occurrences(text: str, words: Collection[str]) -> list[tuple[int, int]]:
    """Where each of ``words`` stands in ``text`` as a whole word (no letter or digit either
    side, as :data:`_LATIN_WORD` splits Latin text), in order. Pure."""
    found: list[tuple[int, int]] = []
    for word in words:
        size = len(word)
        start = text.find(word)
        while start >= 0:
            end = start + size
            if (start == 0 or not text[start - 1].isalnum()) and (
                end == len(text) or not text[end].isalnum()
            ):
                found.append((start, end))
            start = text.find(word, end)
    found.sort()
    return found


def _segments(text: str, language: str | None) -> Iterator[tuple[str, list[Word]]]:
    """ICU's words of ``text`` (``don't``, ``e.g``), each with the words lorebase makes of it
    (``don`` ``t``, ``e`` ``g``); spaces and punctuation give none."""
    offset = 0
    for segment in _breaker()(text, _icu_locale(language)):
        start, offset = offset, offset + len(segment)
        if segment.isalnum():
            yield segment, [Word(segment, start, offset)]
        elif not segment.isspace():
            pieces = list(_pieces(segment, start))
            if pieces:
                yield segment, pieces


def _pieces(segment: str, start: int) -> Iterator[Word]:
    """The runs of letters, marks and digits of one ICU segment."""
    begin: int | None = None
    for index, char in enumerate(segment):
        inside = unicodedata.category(char)[0] in _WORD_CATEGORIES
        if inside and begin is None:
            begin = index
        elif not inside and begin is not None:
            yield Word(segment[begin:index], start + begin, start + index)
            begin = None
    if begin is not None:
        yield Word(segment[begin:], start + begin, start + len(segment))


@dataclass(frozen=True)
class Analysis:
    """How one language's words become terms (see the module's docstring)."""

    language: str
    stemmer: str | None
    fold: bool
    stop_words: frozenset[str]

    def term(self, word: str) -> str | None:
        """The term one word is indexed and searched by; None for a word too long to be one."""
        term = word.lower()
        if self.fold:  # before stemming: a word typed without its accents stems alike
            term = fold(term)
        if self.stemmer is not None:
            term = _stemmer(self.stemmer).stemWord(term)
        return term if len(term.encode("utf-8")) <= MAX_TERM_BYTES else None

    def terms_of(self, words: Sequence[str]) -> list[str | None]:
        """:meth:`term` of each of ``words``, in one call of the stemmer. Pure."""
        lowered = [word.lower() for word in words]
        if self.fold:  # most words are ASCII: fold left uncalled for them
            lowered = [word if word.isascii() else fold(word) for word in lowered]
        if self.stemmer is not None:
            lowered = _stemmer(self.stemmer).stemWords(lowered)
        return [
            term
            if len(term) * 4 <= MAX_TERM_BYTES or len(term.encode("utf-8")) <= MAX_TERM_BYTES
            else None
            for term in lowered
        ]

    def terms(self, text: str) -> list[str]:
        """Every term of ``text``, in order (a word of a script without spaces adds its
        characters too): what an index holds of it. :meth:`term` for every word, in one
        call of the stemmer."""
        if _latin(text):  # as words() splits it, without offsets
            found = latin_words(text)
        else:
            found = [word.text for word in words(text, self.language)]
        lowered = [word.lower() for word in found]
        if self.fold:
            lowered = [fold(word) for word in lowered]
        if self.stemmer is not None:
            lowered = _stemmer(self.stemmer).stemWords(lowered)
        out: list[str] = []
        for word, term in zip(found, lowered, strict=True):
            if len(term) * 4 <= MAX_TERM_BYTES or len(term.encode("utf-8")) <= MAX_TERM_BYTES:
                out.append(term)
            if len(word) > 1 and ord(word[0]) >= _FIRST_UNIGRAM and _unigram_script(word[0]):
                out.extend(char for char in word if _unigram_script(char))
        return out

    def is_stop_word(self, word: str) -> bool:
        return stop_word_key(word) in self.stop_words

    def query_terms(self, text: str, stop_words: frozenset[str] | None = None) -> dict[str, int]:
        """The terms a question searches for, each with how many of its words give it: its
        words without stop words (this language's, or ``stop_words``; unless nothing else is
        left), analysed. Two words with one stem (``retrieval``, ``retrieved``) count it
        twice, and so does a word given twice: the question's own term frequency, as BM25
        weighs it (bench/README.md, "Languages": on CISI's long questions it is worth .04)."""
        stops = self.stop_words if stop_words is None else stop_words
        return self.word_counts(question_words(text, stops, self.language))

    def word_counts(self, words: Sequence[str]) -> dict[str, int]:
        """The terms of ``words`` (a question's: :func:`question_words`), each with how many
        of them give it. Pure."""
        counts: dict[str, int] = {}
        for word in words:
            for term in self._word_terms(word):
                counts[term] = counts.get(term, 0) + 1
        return counts

    def _word_terms(self, word: str) -> list[str]:
        term = self.term(word)
        if len(word) == 1 and _unigram_script(word):
            return [word]  # one character: it is its own term, and its unigram
        return [] if term is None else [term]


@cache
def analysis(language: str | None) -> Analysis:
    """The analysis of passages in ``language`` (an ISO 639-1 code; a programming language's
    name or None: :data:`DEFAULT_LANGUAGE`; a language with no stemmer: the neutral one)."""
    code = analysis_language(language)
    return Analysis(code, STEMMERS.get(code), code in FOLDED, _stop_words(code))


def analysis_language(language: str | None) -> str:
    """The analysis a passage of ``language`` gets, as its code: a language lorebase stems or
    has stop words for, a language of a script without spaces (segmented by dictionary), or
    :data:`NEUTRAL` (a language told for sure that lorebase has no stemmer for: its words as
    they are). None, ``und`` (a passage whose language could not be told) and programming
    languages (``python``): :data:`DEFAULT_LANGUAGE` — text the detector cannot place is
    mostly English-like (lower-cased abstracts, identifiers, numbers; measured on NPL's 11,429
    lower-case abstracts: 3% undetermined), and on any other script English's stemmer leaves
    the words as they are."""
    if not language or len(language) > 3 or not language.isalpha() or language == NEUTRAL:
        return DEFAULT_LANGUAGE  # unknown (indexed before languages), undetermined, or code
    code = language.lower()
    if code in STEMMERS or code in STOP_WORD_LANGUAGES or code in _SEGMENTED:
        return code
    return NEUTRAL


def question_words(text: str, stop_words: frozenset[str], language: str | None = None) -> list[str]:
    """The words of a question that a search looks up, in order: those of its first
    :data:`MAX_QUERY_WORDS` words that are not stop words (a word as ICU splits it: ``don't``
    is one, looked up as ``don`` and ``t``), every word when it is nothing else. ``language``:
    the locale ICU is given (its word boundaries are the same in every locale lorebase
    analyses: tests/unit/test_analysis.py holds that). Pure."""
    found = list(_segments(text, language))
    kept = [pieces for segment, pieces in found if stop_word_key(segment) not in stop_words]
    looked_up = (kept or [pieces for _, pieces in found])[:MAX_QUERY_WORDS]
    return [word.text for pieces in looked_up for word in pieces]


def query_variants(text: str, languages: Iterable[str | None]) -> list[dict[str, int]]:
    """The question analysed once per analysis the passages of ``languages`` get (each once,
    in a stable order); variants that find no term are left out. A word that is a stop word
    in any of these languages is left out of every variant (``what`` of an English question
    would otherwise be a search word of its German variant, found in every English passage)."""
    codes = tuple(
        sorted({analysis_language(language) for language in languages} or {DEFAULT_LANGUAGE})
    )
    return list(_query_variants(text, codes))


@functools.lru_cache(maxsize=64)
def _query_variants(text: str, codes: tuple[str, ...]) -> tuple[dict[str, int], ...]:
    """:func:`query_variants` of analysis codes, kept for the few questions last asked: a
    search asks it of the keyword arm and of its ceiling. A base of many languages makes it
    one variant per language, but the question is split once (every variant leaves out the
    same stop words, and ICU splits it alike in every locale), and its words are analysed
    once per stemmer and folding (what a variant depends on): ~0.05 ms for the 25 languages
    of the shared documents, against ~0.35 ms split and analysed for each. The dicts are
    shared: never changed."""
    words = question_words(text, _stop_words_of(codes))
    by_kind: dict[tuple[str | None, bool], dict[str, int]] = {}
    variants = []
    for code in codes:
        language = analysis(code)
        kind = (language.stemmer, language.fold)
        counts = by_kind.get(kind)
        if counts is None:
            counts = by_kind[kind] = language.word_counts(words)
        variants.append(counts)
    return tuple(variant for variant in variants if variant)


@functools.lru_cache(maxsize=64)
def _stop_words_of(codes: tuple[str, ...]) -> frozenset[str]:
    """The stop words of every analysis of ``codes``, joined once per set of codes (a base of
    many languages joined thousands of words for each question)."""
    return frozenset().union(*(analysis(code).stop_words for code in codes))


def merged(variants: Sequence[dict[str, int]]) -> dict[str, int]:
    """One query of several variants: each term once, at the most words any variant gives it.
    Pure."""
    out: dict[str, int] = {}
    for variant in variants:
        for term, count in variant.items():
            out[term] = max(out.get(term, 0), count)
    return out


def index_text(text: str, language: str | None) -> str:
    """What a lexical index reads of ``text``: its terms, one space apart."""
    return " ".join(analysis(language).terms(text))


def fold(term: str) -> str:
    """``term`` without its accents (``configuração`` -> ``configuracao``), when that leaves
    ASCII letters; a term of another script is kept as it is."""
    if term.isascii():
        return term
    stripped = "".join(
        char for char in unicodedata.normalize("NFKD", term) if not unicodedata.combining(char)
    )
    if not stripped:  # nothing but marks ("\u1dc0"): no term is empty
        return term
    return stripped.replace("ß", "ss").replace("æ", "ae").replace("œ", "oe").replace("ø", "o")


_SEGMENTED = frozenset({"zh", "ja", "th", "lo", "km", "my", "wuu", "yue", "ko", "bo", "dz"})
"""Languages of scripts with no spaces between words (or, Korean, few enough that particles
stick to words), segmented by ICU's dictionaries; no stemmer."""


def _unigram_script(char: str) -> bool:
    code = ord(char)
    return any(first <= code <= last for first, last in UNIGRAM_SCRIPTS)


def _icu_locale(language: str | None) -> str:
    return language if language and language.isalpha() and len(language) <= 3 else "en"


@cache
def _breaker() -> Any:
    """ICU's word breaker, imported on first use."""
    from icu4py.breakers import WordBreaker

    return WordBreaker


_STEMMERS = threading.local()


def _stemmer(name: str) -> Any:
    """This thread's Snowball stemmer for ``name`` (a PyStemmer object is not thread-safe)."""
    held: dict[str, Any] | None = getattr(_STEMMERS, "by_name", None)
    if held is None:
        held = _STEMMERS.by_name = {}
    stemmer = held.get(name)
    if stemmer is None:
        import Stemmer

        stemmer = held[name] = Stemmer.Stemmer(name)
    return stemmer


@cache
def _stop_words(code: str) -> frozenset[str]:
    if code == "en":
        return ENGLISH_STOP_WORDS
    name = STOP_WORD_LANGUAGES.get(code)
    if name is None:
        return frozenset()
    listed = resources.files(__package__).joinpath("stopwords", f"{name}.stop").read_text("utf-8")
    return frozenset(stop_word_key(word) for word in listed.split())
