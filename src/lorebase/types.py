"""The values that flow between stages: extracted elements, documents and chunks.

Data flows one way: ``bytes -> Extracted -> list[Chunk]``. Every value here is frozen.

Provenance is declared once: a chunk's :class:`Position` (what the chunker knows), which the
store completes into a :class:`Provenance` (plus the document and knowledge base). Stored
chunks, search hits, API hits and agent citations all hold that one value, and
:meth:`Provenance.citation` is the one way a passage is cited.

Offsets: ``Extracted.text`` is the document's canonical extracted text: the texts of its
elements joined by :data:`ELEMENT_SEPARATOR` (elements with empty text, such as page breaks,
add nothing). ``Element.start``/``Element.end`` and ``Position.start``/``Position.end`` index
into it, so ``extracted.text[el.start:el.end] == el.text`` always holds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from lorebase.formats import Locator, citation_locator

ELEMENT_SEPARATOR = "\n\n"

TABLE_CELL_SEPARATOR = " | "
"""Joins the cells of a table row in extracted text (one row per line)."""

CITATION_SEPARATOR = " › "
"""Joins the path and headings of a citation: ``path › heading › subheading``."""


class ElementKind(StrEnum):
    HEADING = "heading"
    PARAGRAPH = "paragraph"
    LIST_ITEM = "list_item"
    TABLE = "table"
    CODE = "code"
    PAGE_BREAK = "page_break"


class DocumentKind(StrEnum):
    """The kinds of the built-in formats. A document's kind is a plain string: the ``kind`` of
    its format in :data:`lorebase.formats.FORMATS`, which a new format names there."""

    MARKDOWN = "md"
    TEXT = "txt"
    HTML = "html"
    PDF = "pdf"
    DOCX = "docx"
    CODE = "code"


class ContentKind(StrEnum):
    """What a passage is: running text, source code, or a table (a citation says which)."""

    PROSE = "prose"
    CODE = "code"
    TABLE = "table"


class FailureReason(StrEnum):
    """Fixed, content-free reasons a file yields no text. Never carries document text."""

    UNSUPPORTED_FORMAT = "unsupported_format"
    TOO_LARGE = "too_large"
    EMPTY = "empty"
    ENCRYPTED = "encrypted"
    NO_TEXT_LAYER = "no_text_layer"
    OCR_UNAVAILABLE = "ocr_unavailable"
    CORRUPT = "corrupt"
    UNREADABLE = "unreadable"
    MISSING_ORIGINAL = "missing_original"
    TIMEOUT = "timeout"
    WORKER_LOST = "worker_lost"


Box = tuple[float, float, float, float]
"""``(x0, y0, x1, y1)``: a rectangle on a page, in fractions of its width and height."""

MetadataValue = str | tuple[str, ...]
"""A metadata value: one string, or several (a mail's recipients, a document's tags)."""


@dataclass(frozen=True, slots=True)
class Element:
    """One structural element of a document, in reading order.

    ``line`` is the 1-based first source line (text family, Markdown, code; a spreadsheet's
    row), ``page`` the 1-based page (PDF; a slide, a notebook's cell: the format's locator
    says which). ``level`` is 1-6 for headings and 0 otherwise. ``boxes`` are where the text
    stands on its page, as ``(x0, y0, x1, y1)`` fractions of the page's width and height from
    its top left (OCR gives them; empty when unknown).

    A table is one row per line, its cells joined by :data:`TABLE_CELL_SEPARATOR`; its
    ``header`` is its header row (None when it has none), which the chunker puts before
    every piece of the table that does not already begin with it. A spreadsheet's table is
    a run of consecutive rows, ``line`` the first one's row number.
    """

    kind: ElementKind
    text: str
    start: int
    end: int
    level: int = 0
    line: int | None = None
    page: int | None = None
    language: str | None = None
    symbol: str | None = None
    boxes: tuple[Box, ...] = ()
    header: str | None = None


@dataclass(frozen=True, slots=True)
class Part:
    """A document held inside another (a mail's attachment, a message of a mailbox),
    indexed as a document of its own: its path is the container's, then
    :data:`CITATION_SEPARATOR`, then ``name``, so its citations read
    ``mail.eml › report.pdf (p. 3)``. ``extracted`` is None when it could not be read, and
    ``reason`` says why."""

    name: str
    size: int
    content_hash: str
    extracted: Extracted | None
    reason: FailureReason | None = None


@dataclass(frozen=True, slots=True)
class Extracted:
    """A document turned into ordered elements, plus what describes it: ``metadata`` (a
    mail's headers, a document's properties; searchable through the text too, where the
    extractor puts them there), ``parts`` (documents inside it, each indexed on its own)."""

    kind: str  # its format's kind (lorebase.formats)
    title: str | None
    elements: tuple[Element, ...]
    text: str
    content_hash: str
    encoding: str | None = None
    language: str | None = None
    page_count: int | None = None
    warnings: tuple[str, ...] = field(default=())
    metadata: Mapping[str, MetadataValue] = field(default_factory=dict)
    parts: tuple[Part, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Position:
    """Where a passage sits in its document: what the chunker knows.

    ``trail`` is the heading trail (outermost first), ``start``/``end`` character offsets into
    the document's extracted text, ``page``/``page_end`` the first and last page it touches
    (PDF; a slide or a notebook's cell; ``page_end`` only when it differs), ``line`` its first
    source line and ``line_end`` its last (a spreadsheet's rows; only when it differs);
    ``language`` and ``symbol`` describe code.
    """

    trail: tuple[str, ...] = ()
    start: int = 0
    end: int = 0
    content_kind: ContentKind = ContentKind.PROSE
    page: int | None = None
    page_end: int | None = None
    line: int | None = None
    language: str | None = None
    symbol: str | None = None
    line_end: int | None = None

    @property
    def location(self) -> str:
        """``p. 3–4``, ``p. 3`` or ``line 12``, or empty when neither is known."""
        return self.place(None)

    def place(self, locator: Locator | None) -> str:
        """Where the passage stands, in the words of its format's ``locator``: ``p. 3–4``,
        ``slide 4``, ``cells 7–8``, ``rows 12–40``, ``line 12``; without one (or for a
        locator the position has no number for), by what it knows. Pure."""
        if locator in _NUMBERED_BY_PAGE and self.page is not None:
            return _span(_UNITS[locator], self.page, self.page_end)
        if locator == "row" and self.line is not None:
            return _span(_UNITS["row"], self.line, self.line_end)
        if self.page is not None:
            return _span(_UNITS["page"], self.page, self.page_end)
        return f"line {self.line}" if self.line is not None else ""


_UNITS: dict[str, tuple[str, str]] = {
    "page": ("p.", "p."),
    "slide": ("slide", "slides"),
    "cell": ("cell", "cells"),
    "row": ("row", "rows"),
}
_NUMBERED_BY_PAGE = frozenset({"page", "slide", "cell"})


def _span(unit: tuple[str, str], first: int, last: int | None) -> str:
    """``p. 3``, ``slides 4–5``: one number, or a range when ``last`` differs."""
    if last is None or last == first:
        return f"{unit[0]} {first}"
    return f"{unit[1]} {first}–{last}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Provenance(Position):
    """Where a passage comes from: its position plus the document and knowledge base the
    store knows. ``path`` is relative to its source; ``uploaded`` marks an uploaded file, whose
    path is the stored blob's (surfaces show the upload's own name instead)."""

    knowledge_base: str
    knowledge_base_id: int
    document_id: str
    path: str
    title: str | None
    kind: str
    uploaded: bool = False

    @property
    def location(self) -> str:
        """Where the passage stands, in its format's words (:meth:`Position.place`)."""
        return self.place(citation_locator(self.kind))

    def citation(self, clean: Callable[[str], str] = str) -> str:
        """``path › heading › subheading (p. 12)`` or ``(line 40)``: how a person cites the
        passage. ``clean`` is applied to each document-controlled part (path, headings);
        parts it leaves empty are dropped."""
        parts = (clean(part) for part in (self.path, *self.trail))
        text = CITATION_SEPARATOR.join(part for part in parts if part)
        return f"{text} ({self.location})" if self.location else text


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of one section, ready to embed and index.

    ``embed_text`` is what an embedder sees: ``title > trail`` on the first line, then the text.
    ``position`` says where it sits in the document. ``id`` and ``content_hash`` are
    deterministic: same bytes and settings, same values.
    """

    id: str
    ordinal: int
    text: str
    embed_text: str
    tokens: int
    content_hash: str
    position: Position


@dataclass(frozen=True, slots=True)
class EmbedderIdentity:
    """What makes two vectors comparable: model, weights digest, transform and dimension."""

    model: str
    digest: str
    dim: int
    transform: str = "none"

    @property
    def key(self) -> str:
        """A stable string naming this identity (stored with every vector)."""
        return f"{self.model}@{self.digest[:16]}/{self.transform}/{self.dim}"
