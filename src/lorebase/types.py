"""The values that flow between stages: extracted elements, documents and chunks.

Data flows one way: ``bytes -> Extracted -> list[Chunk]``. Every value here is frozen.

Offsets: ``Extracted.text`` is the document's canonical extracted text: the texts of its
elements joined by :data:`ELEMENT_SEPARATOR` (elements with empty text, such as page breaks,
add nothing). ``Element.start``/``Element.end`` and ``Chunk.start``/``Chunk.end`` index into it,
so ``extracted.text[el.start:el.end] == el.text`` always holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

ELEMENT_SEPARATOR = "\n\n"


class ElementKind(StrEnum):
    HEADING = "heading"
    PARAGRAPH = "paragraph"
    LIST_ITEM = "list_item"
    TABLE = "table"
    CODE = "code"
    PAGE_BREAK = "page_break"


class DocumentKind(StrEnum):
    MARKDOWN = "md"
    TEXT = "txt"
    HTML = "html"
    PDF = "pdf"
    DOCX = "docx"
    CODE = "code"


class ContentKind(StrEnum):
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
    CORRUPT = "corrupt"
    UNREADABLE = "unreadable"
    TIMEOUT = "timeout"


@dataclass(frozen=True, slots=True)
class Element:
    """One structural element of a document, in reading order.

    ``line`` is the 1-based first source line (text family, Markdown, code), ``page`` the 1-based
    page (PDF). ``level`` is 1-6 for headings and 0 otherwise.
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


@dataclass(frozen=True, slots=True)
class Extracted:
    """A document turned into ordered elements, plus what describes it."""

    kind: DocumentKind
    title: str | None
    elements: tuple[Element, ...]
    text: str
    content_hash: str
    encoding: str | None = None
    language: str | None = None
    page_count: int | None = None
    warnings: tuple[str, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of one section, ready to embed and index.

    ``embed_text`` is what an embedder sees: ``title > trail`` on the first line, then the text.
    ``page``/``page_end`` are the first and last page it touches (PDF), ``line`` its first source
    line. ``id`` and ``content_hash`` are deterministic: same bytes and settings, same values.
    """

    id: str
    ordinal: int
    text: str
    embed_text: str
    trail: tuple[str, ...]
    start: int
    end: int
    content_kind: ContentKind
    tokens: int
    content_hash: str
    line: int | None = None
    page: int | None = None
    page_end: int | None = None
    language: str | None = None
    symbol: str | None = None
