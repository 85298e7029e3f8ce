"""The ``Chunker`` seam and what every chunker shares.

A chunker writes one method, ``chunk(extracted, settings) -> list[Chunk]``. It decides *where*
chunks start and end; :func:`build_chunk` derives everything else a chunk carries (embed text,
kind, lines, pages, ids, hashes) from those offsets and the elements they touch, so every
chunker describes its chunks the same way.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Sequence

from lorebase.chunk.tokens import estimate_tokens
from lorebase.settings import ChunkSettings
from lorebase.types import Chunk, ContentKind, Element, ElementKind, Extracted, Position

TRAIL_SEPARATOR = " > "
"""Joins the document title and heading trail in the first line of ``embed_text``."""

CHUNK_ID_HEX_CHARS = 32
"""Chunk ids are the first 128 bits of a sha256: unique enough, short enough to read."""

_ID_FIELD_SEPARATOR = "\x1f"

_KIND_OF_ELEMENT = {ElementKind.CODE: ContentKind.CODE, ElementKind.TABLE: ContentKind.TABLE}


class Chunker(ABC):
    """Cuts an :class:`Extracted` document into ordered, bounded :class:`Chunk` values.

    Must be deterministic: the same document and settings give equal chunks, ids and hashes.
    """

    @abstractmethod
    def chunk(self, extracted: Extracted, settings: ChunkSettings) -> list[Chunk]: ...


def embed_header(title: str | None, trail: Sequence[str]) -> str:
    """``title > heading > subheading``, leaving out whatever is missing. The title is left
    out when the trail already starts with it (a document whose first heading is its title)."""
    if trail and title and trail[0].casefold() == title.casefold():
        title = None
    return TRAIL_SEPARATOR.join(part for part in (title, *trail) if part)


def embed_text(title: str | None, trail: Sequence[str], text: str) -> str:
    """What the embedder sees: the header line (when there is one), then the chunk text.

    The header gives a passage like "Ten days per year." the context it needs to be found
    by a query about vacation.
    """
    header = embed_header(title, trail)
    return f"{header}\n{text}" if header else text


def chunk_id(content_hash: str, settings: ChunkSettings, ordinal: int, start: int, end: int) -> str:
    """A stable id: same document bytes, settings and position give the same id."""
    fields = (content_hash, settings.key, str(ordinal), str(start), str(end))
    digest = hashlib.sha256(_ID_FIELD_SEPARATOR.join(fields).encode("utf-8")).hexdigest()
    return digest[:CHUNK_ID_HEX_CHARS]


def content_kind(elements: Sequence[Element]) -> ContentKind:
    """CODE or TABLE when every element touched is of that kind, otherwise PROSE."""
    kinds = {_KIND_OF_ELEMENT.get(element.kind, ContentKind.PROSE) for element in elements}
    return kinds.pop() if len(kinds) == 1 else ContentKind.PROSE


def first_line(text: str, elements: Sequence[Element], start: int) -> int | None:
    """The source line of ``start``: the first element's line plus the line ends before it."""
    if not elements:
        return None
    first = elements[0]
    if first.line is None:
        return None
    return first.line + text.count("\n", first.start, max(start, first.start))


def page_range(elements: Sequence[Element]) -> tuple[int | None, int | None]:
    """First page touched, and the last one only when it differs from the first."""
    if not elements:
        return None, None
    first, last = elements[0].page, elements[-1].page
    return first, (last if last != first else None)


def code_attribute(elements: Sequence[Element], name: str) -> str | None:
    """The first ``language``/``symbol`` value among the code elements touched."""
    for element in elements:
        if element.kind is ElementKind.CODE:
            value: str | None = getattr(element, name)
            if value:
                return value
    return None


def build_chunk(
    extracted: Extracted,
    settings: ChunkSettings,
    *,
    ordinal: int,
    trail: tuple[str, ...],
    start: int,
    end: int,
    elements: Sequence[Element],
    tokens: int | None = None,
    prefix: str = "",
) -> Chunk:
    """One chunk of ``extracted.text[start:end]``, after ``prefix`` (a table's header row, for
    a piece of a table that does not begin with it); ``elements`` are the non-empty elements
    it overlaps, in order. ``tokens``, when the caller already knows ``estimate_tokens(text)``
    (from a :class:`~lorebase.chunk.tokens.TokenIndex`), saves measuring the text again."""
    body = extracted.text[start:end]
    text = prefix + body
    embedded = embed_text(extracted.title, trail, text)
    page, page_end = page_range(elements)
    line = first_line(extracted.text, elements, start)
    line_end = None if line is None else line + body.count("\n")
    return Chunk(
        id=chunk_id(extracted.content_hash, settings, ordinal, start, end),
        ordinal=ordinal,
        text=text,
        embed_text=embedded,
        tokens=estimate_tokens(text) if tokens is None or prefix else tokens,
        content_hash=hashlib.sha256(embedded.encode("utf-8")).hexdigest(),
        position=Position(
            trail=trail,
            start=start,
            end=end,
            content_kind=content_kind(elements),
            line=line,
            line_end=line_end if line_end != line else None,
            page=page,
            page_end=page_end,
            language=code_attribute(elements, "language"),
            symbol=code_attribute(elements, "symbol"),
        ),
    )
