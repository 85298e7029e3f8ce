"""The header-boundary chunker: sections by heading, cuts at the best nearby boundary.

Each heading opens a section whose chunks carry the trail of open headings, so a passage keeps
its context ("Handbook > Leave policy > Vacation") and a chunk never mixes two topics; in
source code each top-level definition is a section too, and so is every table, so a chunk
holds one definition or one table, never a table and the prose around it. Inside
a section, each chunk reaches as far as both bounds (characters and estimated tokens) allow,
then backs off to the strongest boundary in the second half of that window (paragraph end,
sentence end, clause end, line end, whitespace), so chunks end where a reader would pause and
never mid-word unless a single "word" is longer than a chunk. Tables and code blocks that fit in
one chunk are never split; a table that does not fit is cut on row ends, and every piece
after the first begins with the table's header row (:attr:`Element.header`), so a piece of
rows 400–440 still says what its columns mean. The next chunk repeats up to ``overlap``
characters, starting at a word, so a fact cut at a boundary is still whole in one of the two
chunks.

Cost: the token prefix sums are built once per document (:class:`TokenIndex`); each chunk then
costs a few binary searches plus one scan of its own window, so chunking is linear in the text.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass

from lorebase.chunk.base import Chunker, build_chunk
from lorebase.chunk.tokens import TokenIndex, estimate_tokens
from lorebase.settings import ChunkSettings
from lorebase.types import Chunk, Element, ElementKind, Extracted

BLOCK_KINDS = frozenset({ElementKind.TABLE, ElementKind.CODE})
"""Elements kept whole when they fit, and split on line ends when they do not."""

PARAGRAPH_END = "\n\n"
LINE_END = "\n"
MAX_CLOSERS = 3
"""Closing quotes/brackets allowed after a sentence end ("Go." she said / (see above.))."""

_CLOSERS = "\"'’”)\\]」』）"
_SENTENCE_END = re.compile(rf"[.!?][{_CLOSERS}]{{0,{MAX_CLOSERS}}}(?=\s)|[。！？][{_CLOSERS}]?")
_CLAUSE_END = re.compile(r"[;:](?=\s)")
_WORD_START = re.compile(r"[\s。！？](?=\S)")
_LINE_START = re.compile(r"\n[ \t]*(?=\S)")
_NON_SPACE = re.compile(r"\S")

MAX_HEADER_SHARE = 4
"""A table's header row is repeated only when it takes at most a quarter of a chunk (a
header row longer than that would leave too little room for the rows it names)."""

Finder = Callable[[str, int, int, int], int | None]
"""(text, lo, limit, section_end) -> a cut in [lo, limit], or None."""


@dataclass(frozen=True, slots=True)
class Section:
    """The body of one heading: ``text[start:end]`` and the non-empty elements in it."""

    trail: tuple[str, ...]
    elements: tuple[Element, ...]
    start: int
    end: int

    @property
    def header(self) -> str | None:
        """The header row of a table section (None for other sections, and tables without
        one)."""
        first = self.elements[0]
        return first.header if first.kind is ElementKind.TABLE else None


def split_sections(extracted: Extracted) -> list[Section]:
    """Sections in reading order; headings without body text yield none (but stay in trails).

    Each table, and each top-level definition of source code (code elements with one symbol),
    is a section of its own under the same trail, so a table's chunks are labelled ``table``
    and a code chunk holds one definition, which its symbol names; the text around them (a
    caption, imports and constants between definitions) makes sections of its own.

    A document whose only text is headings (a note that is just ``# Meeting with the
    auditors``, a record that is a title alone) is one section of those headings with an empty
    trail, so it still gets a chunk and can be found; a document with any body text is cut as
    if this rule did not exist.
    """
    sections: list[Section] = []
    open_headings: list[tuple[int, str]] = []
    body: list[Element] = []
    headings: list[Element] = []

    def close_section() -> None:
        if body:
            trail = tuple(title for _, title in open_headings)
            sections.append(Section(trail, tuple(body), body[0].start, body[-1].end))
            body.clear()

    for element in extracted.elements:
        if element.kind is ElementKind.HEADING:
            close_section()
            if element.text.strip():
                headings.append(element)
            level = max(element.level, 1)
            while open_headings and open_headings[-1][0] >= level:
                open_headings.pop()
            open_headings.append((level, " ".join(element.text.split())))
        elif element.text.strip():
            if body and _own_section(element) != _own_section(body[-1]):
                close_section()
            body.append(element)
    close_section()
    if not sections and headings:
        sections.append(Section((), tuple(headings), headings[0].start, headings[-1].end))
    return sections


def _own_section(element: Element) -> tuple[str, int | str] | None:
    """What sets an element apart in a section of its own: a table (each one), a top-level
    definition (by its symbol: one definition may span several code elements); None for text
    that flows together."""
    if element.kind is ElementKind.TABLE:
        return ("table", element.start)
    if element.kind is ElementKind.CODE and element.symbol:
        return ("definition", element.symbol)
    return None


def _last_paragraph_end(text: str, lo: int, limit: int, end: int) -> int | None:
    found = text.rfind(PARAGRAPH_END, lo, min(limit + len(PARAGRAPH_END), end))
    return found if found >= 0 else None


def _last_line_end(text: str, lo: int, limit: int, end: int) -> int | None:
    found = text.rfind(LINE_END, lo, min(limit + len(LINE_END), end))
    return found if found >= 0 else None


def _last_match_end(
    pattern: re.Pattern[str], text: str, lo: int, limit: int, end: int
) -> int | None:
    """The last ``match.end()`` in [lo, limit]; the search sees one character past ``limit``
    so a lookahead for the following space works."""
    best = None
    for match in pattern.finditer(text, max(0, lo - MAX_CLOSERS - 1), min(limit + 1, end)):
        if lo <= match.end() <= limit:
            best = match.end()
    return best


def _last_sentence_end(text: str, lo: int, limit: int, end: int) -> int | None:
    return _last_match_end(_SENTENCE_END, text, lo, limit, end)


def _last_clause_end(text: str, lo: int, limit: int, end: int) -> int | None:
    return _last_match_end(_CLAUSE_END, text, lo, limit, end)


PROSE_BOUNDARIES: tuple[Finder, ...] = (
    _last_paragraph_end,
    _last_sentence_end,
    _last_clause_end,
    _last_line_end,
)
BLOCK_BOUNDARIES: tuple[Finder, ...] = (
    _last_paragraph_end,
    _last_line_end,
    _last_sentence_end,
    _last_clause_end,
)
"""Inside a table or code block a line end is a row or statement end: prefer it."""


def _last_space(text: str, after: int, limit: int) -> int | None:
    """The last whitespace position in (after, limit]."""
    for index in range(limit, after, -1):
        if text[index].isspace():
            return index
    return None


class _SectionCutter:
    """Finds the chunk spans of one section. Positions are offsets into the document text.

    Invariant of the loop: ``floor`` is the first non-space character not yet in any chunk;
    every chunk starts at or before it and ends after it, so nothing is skipped and every
    chunk brings new text.
    """

    def __init__(
        self, text: str, index: TokenIndex, settings: ChunkSettings, section: Section
    ) -> None:
        self.text = text
        self.index = index
        self.settings = settings
        self.end = section.end
        self.header = _repeatable(section.header, settings)
        # Room a piece that gets the header must leave for it: the row and its line end.
        self._header_chars = len(self.header) + 1 if self.header else 0
        self._header_tokens = estimate_tokens(self.header + LINE_END) if self.header else 0
        self.blocks: list[tuple[int, int, bool]] = []  # (first non-space, end, fits alone)
        for element in section.elements:
            if element.kind in BLOCK_KINDS:
                first = self._skip_space(element.start)
                self.blocks.append((first, element.end, self._fits(first, element.end)))
        self.block_starts = [start for start, _, _ in self.blocks]

    def spans(self, start: int) -> list[tuple[int, int]]:
        spans: list[tuple[int, int]] = []
        floor = self._skip_space(start)
        pos = floor
        while floor < self.end:
            pos, cut = self._next_span(pos, floor)
            spans.append((pos, cut))
            floor = self._skip_space(cut)
            if floor < self.end:
                pos = self._overlap_start(pos, cut, floor)
        return spans

    def _next_span(self, pos: int, floor: int) -> tuple[int, int]:
        """The span starting at ``pos`` (or later, when overlap cannot work) covering ``floor``."""
        while True:
            limit = self._limit(pos)
            if limit >= self.end:
                return pos, self._strip_end(pos, self.end)
            cut = self._boundary(pos, floor, limit)
            if cut is None:  # the overlap leaves no room for new text: drop it
                pos = floor
                continue
            block = self._block_around(cut)
            if block is not None and block[2]:
                if block[0] > floor:
                    cut = block[0]
                elif pos < block[0]:  # only overlap fits before the block: start at it
                    pos = block[0]
                    continue
            return pos, self._strip_end(pos, cut)

    def _limit(self, pos: int) -> int:
        """The furthest end such that ``text[pos:end]`` (after the header row, for a piece
        that gets it) is within both bounds."""
        chars, tokens = self.settings.chunk_size, self.settings.max_tokens
        if self.prefix(pos):
            chars, tokens = chars - self._header_chars, tokens - self._header_tokens
        bound = min(self.end, pos + chars)
        return self.index.furthest_end(pos, tokens, bound)

    def prefix(self, pos: int) -> str:
        """What a piece starting at ``pos`` is preceded by: the table's header row and a line
        end, unless the piece already begins with it (the table's first piece)."""
        header = self.header
        if header is None or self.text.startswith(header, pos):
            return ""
        return header + LINE_END

    def _boundary(self, pos: int, floor: int, limit: int) -> int | None:
        """The best cut in (floor, limit]; None when only a mid-word cut after overlap remains."""
        lo = max(pos + (limit - pos) // 2, floor + 1)
        if lo <= limit:
            block = self._block_around(limit)
            finders = PROSE_BOUNDARIES if block is None else BLOCK_BOUNDARIES
            for finder in finders:
                cut = finder(self.text, lo, limit, self.end)
                if cut is not None:
                    return cut
        space = _last_space(self.text, floor, limit)
        if space is not None:
            return space
        return limit if pos == floor else None

    def _overlap_start(self, prev_start: int, prev_end: int, floor: int) -> int:
        """A word start up to ``overlap`` characters before ``prev_end``, after ``prev_start``.

        Never more than half the previous chunk, so tight token bounds cannot make every chunk
        mostly repetition. Inside a table or code block it starts at a line, so the repeated
        part is whole rows or statements rather than a fragment of one.
        """
        overlap = min(self.settings.overlap, (prev_end - prev_start) // 2)
        if overlap <= 0:
            return floor
        target = max(prev_end - overlap, prev_start + 1)
        pattern = _WORD_START if self._block_around(target) is None else _LINE_START
        match = pattern.search(self.text, target - 1, prev_end)
        return match.end() if match else floor

    def _block_around(self, position: int) -> tuple[int, int, bool] | None:
        """The table/code block with ``start < position < end``, if any."""
        slot = bisect_right(self.block_starts, position - 1) - 1
        if slot >= 0 and position < self.blocks[slot][1]:
            return self.blocks[slot]
        return None

    def _fits(self, start: int, end: int) -> bool:
        settings = self.settings
        return end - start <= settings.chunk_size and (
            self.index.tokens(start, end) <= settings.max_tokens
        )

    def _skip_space(self, position: int) -> int:
        match = _NON_SPACE.search(self.text, position, self.end)
        return match.start() if match else self.end

    def _strip_end(self, start: int, end: int) -> int:
        while end > start and self.text[end - 1].isspace():
            end -= 1
        return end


def _repeatable(header: str | None, settings: ChunkSettings) -> str | None:
    """The header row when it is short enough to repeat in every piece (see
    :data:`MAX_HEADER_SHARE`); None otherwise."""
    if not header or "\n" in header:
        return None
    fits = len(header) * MAX_HEADER_SHARE <= settings.chunk_size
    if not fits or estimate_tokens(header) * MAX_HEADER_SHARE > settings.max_tokens:
        return None
    return header


def _overlapping(
    elements: tuple[Element, ...], ends: list[int], start: int, end: int
) -> list[Element]:
    """The elements intersecting [start, end), found by binary search on their ends."""
    found = []
    for slot in range(bisect_right(ends, start), len(elements)):
        element = elements[slot]
        if element.start >= end:
            break
        found.append(element)
    return found


class HeaderChunker(Chunker):
    """Splits a document into sections at its headings, then each section into chunks."""

    def chunk(self, extracted: Extracted, settings: ChunkSettings) -> list[Chunk]:
        index = TokenIndex(extracted.text)
        chunks: list[Chunk] = []
        for section in split_sections(extracted):
            cutter = _SectionCutter(extracted.text, index, settings, section)
            ends = [element.end for element in section.elements]
            for start, end in cutter.spans(section.start):
                chunks.append(
                    build_chunk(
                        extracted,
                        settings,
                        ordinal=len(chunks),
                        trail=section.trail,
                        start=start,
                        end=end,
                        elements=_overlapping(section.elements, ends, start, end),
                        tokens=index.tokens(start, end),
                        prefix=cutter.prefix(start),
                    )
                )
        return chunks
