"""Snippets: at most 240 characters around the sentence that holds most of the question's
words, and where those words stand in it (``marks``), told by the analysis the keyword arm
uses (:mod:`lorebase.analysis`) in the passage's language: a word is marked when it is a word
of the question — the same term after stemming and folding (``indexed`` for ``indexing``,
``configuração`` for ``configuracao``) — whole, never a part of a word (``is`` in
``Missing``), never a stop word unless the question is nothing else, in every script (a
Chinese word, or one character of it that the question names)."""

from __future__ import annotations

import bisect
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from lorebase.analysis import (
    Analysis,
    LatinWords,
    analysis,
    is_latin,
    occurrences,
    word_spans,
)

SNIPPET_CHARS = 240
_SENTENCE = re.compile(r"[^.!?。！？\n]+(?:[.!?。！？]+|\n|$)")
_BREAKS = ".!?。！？\n"
"""What ends a sentence: a run of the first six, or a line's end on its own."""
_ELLIPSIS = "…"

Mark = tuple[int, int]
"""``(start, end)``: where a word of the question stands in a snippet."""


@dataclass(frozen=True, slots=True)
class Snippet:
    """A passage's snippet and where the question's words stand in it."""

    text: str
    marks: tuple[Mark, ...] = ()


def snippet(text: str, query: str, language: str | None = None, limit: int = SNIPPET_CHARS) -> str:
    """The window of ``text`` (≤ ``limit`` chars) centred on its best sentence, cut at word
    boundaries, with an ellipsis where text was left out."""
    return snippets_for(query, limit)(text, language).text


class KnownTerms:
    """The terms of the words passages were cut around, per language, kept across searches
    (a base's passages share most of their words: stemming them again cost ~0.3 ms a search);
    emptied, as a search begins, once it holds :data:`KNOWN_WORDS` words."""

    def __init__(self) -> None:
        self._by_language: dict[str, dict[str, str | None]] = {}

    def for_a_search(self) -> dict[str, dict[str, str | None]]:
        """The words' terms by language, for one search to read and add to."""
        if sum(map(len, self._by_language.values())) >= KNOWN_WORDS:
            self._by_language = {}
        return self._by_language


KNOWN_WORDS = 200_000
"""About 20 MB of words and terms at most."""


class Read:
    """What cutting a passage learned that no question changes: its text on one line and
    whether it is Latin; its words (:class:`~lorebase.analysis.LatinWords`: the text with what
    is not a word made spaces, and the words of each first letter asked), made the first time
    it is cut; where the words of each term asked of it stand (:meth:`marks`: a passage cut
    again for a term, by another question of its topic, looks it up); the words of text split
    by ICU (~0.3 ms a passage), kept the first time."""

    __slots__ = ("_runs", "flat", "latin", "spans", "terms", "words")

    def __init__(self, text: str, *, one_line: bool = True) -> None:
        """``one_line``: the text's runs of spaces and line ends made one space (a snippet's
        text); else it is read as it is (:func:`matches` of any text)."""
        self.flat = " ".join(text.split()) if one_line else text
        self.latin = is_latin(self.flat)
        self.words: LatinWords | None = None
        self.spans: Sequence[tuple[str, int, int]] | None = None
        # term -> where its words stand: those that are not stop words, then those that are
        # (tuples of numbers, as everything kept here: the collector soon stops following them)
        self.terms: dict[str, tuple[tuple[Mark, ...], tuple[Mark, ...]]] = {}
        self._runs: Runs | None = None

    @property
    def runs(self) -> Runs:
        """:func:`sentence_runs` of the passage, found the first time they are asked for."""
        if self._runs is None:
            starts, ends = sentence_runs(self.flat)
            self._runs = (tuple(starts), tuple(ends))
        return self._runs

    def may_be(self, lang: Analysis, wanted: Collection[str]) -> set[str] | None:
        """:func:`~lorebase.analysis.words_that_may_be` of the passage."""
        if not self.latin:
            return None
        if self.words is None:
            self.words = LatinWords(self.flat)
        return self.words.that_may_be(lang, wanted)

    def marks(
        self,
        lang: Analysis,
        wanted: frozenset[str],
        known: dict[str, str | None],
        only_stop: bool,
    ) -> list[Mark]:
        """Where the words of the ``wanted`` terms stand in Latin text, in order, stop words
        only if ``only_stop`` (``known``: the terms of words told before; those of the words
        read now are added). The places of the terms asked are remembered (at most
        :data:`TERMS_PER_PASSAGE` terms)."""
        terms = self.terms
        missing = {term for term in wanted if term not in terms}
        if len(terms) + len(missing) > TERMS_PER_PASSAGE:
            terms = self.terms = {}
            missing = set(wanted)
        if missing:
            present = self.may_be(lang, missing) or set()
            _learn(known, lang, present)
            fresh: dict[str, tuple[list[str], list[str]]] = {}  # term -> its words
            for word in present:
                term = known[word]
                if term in missing:
                    fresh.setdefault(term, ([], []))[lang.is_stop_word(word)].append(word)
            for term in missing:
                plain, stop = fresh.get(term, ((), ()))
                terms[term] = (
                    (tuple(occurrences(self.flat, plain)), tuple(occurrences(self.flat, stop)))
                    if plain or stop
                    else _NOWHERE
                )
        found = [mark for term in wanted for mark in terms[term][0]]
        if only_stop:
            found += [mark for term in wanted for mark in terms[term][1]]
        found.sort()
        return found

    def word_spans(self, language: str) -> Sequence[tuple[str, int, int]]:
        """:func:`~lorebase.analysis.word_spans` of the passage (in one language: a passage
        is read again under another key when its language differs)."""
        if self.spans is None:
            self.spans = tuple(word_spans(self.flat, language))
        return self.spans


class KnownPassages:
    """The passages cut lately (:class:`Read`), by text and language, kept across searches:
    at most :data:`KNOWN_PASSAGES`, the least lately cut forgotten first. Safe to share
    between threads."""

    def __init__(self, size: int | None = None) -> None:
        self.size = KNOWN_PASSAGES if size is None else size
        self._kept: OrderedDict[tuple[str, str], Read] = OrderedDict()
        self._lock = threading.Lock()

    def read(self, text: str, language: str) -> Read:
        """``text`` read (before, or now)."""
        key = (text, language)
        with self._lock:
            found = self._kept.get(key)
            if found is not None:
                self._kept.move_to_end(key)
                return found
        found = Read(text)
        with self._lock:
            self._kept[key] = found
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)
        return found

    def one_line(self, text: str, language: str | None) -> str:
        """``text`` on one line as the snippets of a passage in ``language`` read it (kept
        under the same key: a shown hit's text is put on one line once a search)."""
        return self.read(text, analysis(language).language).flat


KNOWN_PASSAGES = 2_048
"""About 20 MB: a passage of ~1,000 characters, its ~100 distinct words and the places of the
terms asked of it."""
TERMS_PER_PASSAGE = 64
"""Terms a passage remembers the places of (then forgets them all)."""
_NOWHERE: tuple[tuple[Mark, ...], tuple[Mark, ...]] = ((), ())
"""The places of a term a passage does not hold."""


def snippets_for(
    query: str,
    limit: int = SNIPPET_CHARS,
    kept: KnownTerms | None = None,
    passages: KnownPassages | None = None,
) -> Callable[[str, str | None], Snippet]:
    """:func:`snippet` with its marks, for many passages (each in its language) and one
    question: the question is analysed once per language, and each word of the passages once
    (a search's passages share most of their words; ``kept`` keeps them for later searches,
    ``passages`` what was read of the passages themselves)."""
    terms: dict[str, frozenset[str]] = {}
    known = (KnownTerms() if kept is None else kept).for_a_search()

    def cut(text: str, language: str | None) -> Snippet:
        lang = analysis(language)
        wanted = terms.get(lang.language)
        if wanted is None:
            wanted = terms[lang.language] = frozenset(lang.query_terms(query))
        read = Read(text) if passages is None else passages.read(text, lang.language)
        flat = read.flat
        words = known.setdefault(lang.language, {})
        found = matches(flat, lang, wanted, words, read)
        if len(flat) <= limit:
            return Snippet(flat, tuple(found))
        start, end = best_sentence(flat, found, lang, wanted, words, read.runs)
        return _window(flat, start, end, limit, found)

    return cut


def matches(
    text: str,
    lang: Analysis,
    wanted: frozenset[str],
    known: dict[str, str | None] | None = None,
    read: Read | None = None,
) -> list[Mark]:
    """Where the words of ``text`` whose terms are ``wanted`` stand: whole words, a stop word
    only when the question was nothing but stop words (``read``: what was read of ``text``
    before, one line already; none: ``text`` read as it is)."""
    if not wanted:
        return []
    read = Read(text, one_line=False) if read is None else read
    only_stop = _only_stop(wanted, lang)
    known = {} if known is None else known  # word -> term, kept by the caller across texts
    # Latin text: only its words that may be a wanted term are looked up, then the wanted
    # ones found where they stand (it holds no character of an unspaced script: a question
    # with one, "北京 university", reads an English passage this way too).
    if read.latin:
        return read.marks(lang, wanted, known, only_stop)
    # Characters of an unspaced script ("2" or "c" are words: whole words, as every other).
    singles = {term for term in wanted if len(term) == 1 and not is_latin(term)}
    found: list[Mark] = []
    held = read.word_spans(lang.language)
    _learn(known, lang, {word for word, _, _ in held})
    for word, start, end in held:
        term = known[word]
        if term in wanted and (only_stop or not lang.is_stop_word(word)):
            found.append((start, end))
        elif singles and len(word) > 1:  # a script without spaces: a character it names
            found.extend(
                (start + offset, start + offset + 1)
                for offset, char in enumerate(word)
                if char in singles
            )
    return found


def _learn(known: dict[str, str | None], lang: Analysis, words: set[str]) -> None:
    """Add the terms of ``words`` not yet in ``known`` (one call of the stemmer)."""
    fresh = [word for word in words if word not in known]
    if fresh:
        known.update(zip(fresh, lang.terms_of(fresh), strict=True))


def _only_stop(wanted: frozenset[str], lang: Analysis) -> bool:
    return all(term in lang.stop_words for term in wanted)


def best_sentence(
    flat: str,
    found: list[Mark],
    lang: Analysis,
    wanted: frozenset[str],
    known: dict[str, str | None] | None = None,
    runs: Runs | None = None,
) -> tuple[int, int]:
    """The first sentence holding the most distinct words of the question (``found``: the
    marks, in order; ``known``: the terms of words already told; ``runs``: the text's
    :func:`sentence_runs`, if read before). A sentence runs to the first run of ``.!?。！？``
    (included) or line end after its first character; only the sentences that hold a mark are
    looked for (a passage of ten sentences whose marks stand in two costs two searches), the
    first of the text when none does."""
    if not found:
        first = _SENTENCE.search(flat)
        return first.span() if first is not None else (0, 0)
    starts, ends = sentence_runs(flat) if runs is None else runs
    known = {} if known is None else known
    keys: dict[str, str] = {}  # a marked piece -> the term it counts as
    best_start, best_end, best_score = 0, 0, 0
    mark, count = 0, len(found)
    while mark < count:
        begin, stop = found[mark]
        # A mark is a word: no run of breaks holds it, so the runs before it end by its start.
        before = bisect.bisect_left(starts, begin)
        start = ends[before - 1] if before else 0
        after = bisect.bisect_left(starts, stop, before)
        end = ends[after] if after < len(starts) else len(flat)
        inside: set[str] = set()
        while mark < count and found[mark][0] < end:
            begin, stop = found[mark]
            piece = flat[begin:stop]
            key = keys.get(piece)
            if key is None:
                term = known[piece] if piece in known else lang.term(piece)
                key = keys[piece] = term or piece
            inside.add(key)
            mark += 1
        if len(inside) > best_score:
            best_start, best_end, best_score = start, end, len(inside)
    return best_start, best_end


Runs = tuple[Sequence[int], Sequence[int]]
"""Where each run of what ends a sentence (:data:`_BREAKS`) starts, and where it ends."""


def sentence_runs(text: str) -> Runs:
    """The runs of what ends a sentence in ``text``, in order (a line's end a run of its own):
    from the places of each such character (a quarter of the time a regular expression took
    on passages of 1,000 characters). Pure."""
    places: list[int] = []
    for char in _BREAKS:
        at = text.find(char)
        while at >= 0:
            places.append(at)
            at = text.find(char, at + 1)
    places.sort()
    starts: list[int] = []
    ends: list[int] = []
    for at in places:
        if ends and ends[-1] == at and text[at] != "\n" and text[at - 1] != "\n":
            ends[-1] = at + 1
        else:
            starts.append(at)
            ends.append(at + 1)
    return starts, ends


def _window(text: str, start: int, end: int, limit: int, found: list[Mark]) -> Snippet:
    """Grow [start, end) to ``limit`` characters around its centre, then trim to words; the
    marks inside it, moved to the snippet's offsets."""
    budget = limit - 2  # room for an ellipsis on each side
    if end - start > budget:
        end = start + budget
    else:
        spare = budget - (end - start)
        start = max(0, start - spare // 2)
        end = min(len(text), start + budget)
        start = max(0, end - budget)
    if start > 0:
        space = text.find(" ", start)
        start = space + 1 if 0 <= space < end else start
    if end < len(text):
        space = text.rfind(" ", start, end)
        end = space if space > start else end
    piece = text[start:end]
    stripped = piece.strip()
    first = start + (len(piece) - len(piece.lstrip()))
    prefix = _ELLIPSIS if start > 0 else ""
    shift = len(prefix) - first
    marks = tuple(
        (a + shift, b + shift) for a, b in found if first <= a and b <= first + len(stripped)
    )
    return Snippet(prefix + stripped + (_ELLIPSIS if end < len(text) else ""), marks)
