"""Block content of OpenDocument text and slides: paragraphs, headings, lists, tables,
sections and drawings read in order into a builder (ODT) or a slide's recorder (ODP).

The text of each paragraph and table comes from :mod:`lorebase.extract.odf`. Drawings (frames,
text boxes, shapes, groups) are read where they are anchored; on a slide they are read top
to bottom, then left to right, by where they stand (:func:`reading_order`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from lxml import etree

from lorebase.extract.odf import (
    DRAW,
    LIST,
    LIST_HEADER,
    LIST_ITEM,
    SECTION,
    SVG,
    TABLE_TABLE,
    TEXT,
    H,
    P,
    inline_content,
    notes_in,
    table_rows,
    table_text,
)
from lorebase.types import TABLE_CELL_SEPARATOR, ElementKind

T = TypeVar("T")


# -- blocks -------------------------------------------------------------------------------------


class Sink(Protocol):
    """Where block content goes: a :class:`~lorebase.extract.base.DocumentBuilder`, or a
    recorder that holds a slide's elements until its heading is known."""

    def add(
        self,
        kind: ElementKind,
        text: str,
        *,
        level: int = 0,
        page: int | None = None,
        header: str | None = None,
    ) -> object: ...


_INDEXES = frozenset(
    TEXT + name
    for name in (
        "table-of-content",
        "illustration-index",
        "table-index",
        "object-index",
        "user-index",
        "alphabetical-index",
        "bibliography",
    )
)
"""Generated indexes: a table of contents repeats the headings (with page numbers), so it is
not read."""
_DRAWING_SKIPPED = frozenset({DRAW + "page-thumbnail", DRAW + "image", DRAW + "object"})


@dataclass(slots=True)
class Blocks:
    """Reads ODF block content (paragraphs, headings, lists, tables, sections, drawings) in
    order into a sink, every element on ``page`` (a slide's number; None for text
    documents). ``headings``: ``text:h`` are headings (text documents) rather than
    paragraphs (slides, whose headings are their titles). ``sort_shapes``: the shapes of a
    group are read top to bottom, then left to right (slides), not in the order written.
    Notes met on the way are kept in ``notes`` for the reader to add after the body."""

    sink: Sink
    page: int | None = None
    headings: bool = True
    sort_shapes: bool = False
    notes: list[etree._Element] = field(default_factory=list)

    def read(self, container: etree._Element) -> None:
        """Every block child of a container (``office:text``, a section, a text box, a
        note's body, a shape holding paragraphs), in order."""
        for child in container.iterchildren():
            self.block(child)

    def block(self, element: etree._Element) -> None:
        tag = element.tag
        if not isinstance(tag, str) or tag in _INDEXES:
            return
        if tag == P:
            self.paragraph(element, ElementKind.PARAGRAPH)
        elif tag == H:
            self.heading(element)
        elif tag == LIST:
            self.read_list(element)
        elif tag == TABLE_TABLE:
            self.table(element)
        elif tag == SECTION:
            self.read(element)
        elif tag.startswith(DRAW):
            self.drawing(element)

    def paragraph(self, element: etree._Element, kind: ElementKind) -> None:
        inline = inline_content(element)
        self.sink.add(kind, inline.text, page=self.page)
        self.notes.extend(inline.notes)
        self.shapes(inline.drawings)

    def heading(self, element: etree._Element) -> None:
        if not self.headings:
            self.paragraph(element, ElementKind.PARAGRAPH)
            return
        inline = inline_content(element)
        level = element.get(TEXT + "outline-level", "1")
        level_number = min(max(int(level), 1), 6) if level.isdigit() else 1
        text = " ".join(inline.text.split())
        self.sink.add(ElementKind.HEADING, text, level=level_number, page=self.page)
        self.notes.extend(inline.notes)
        self.shapes(inline.drawings)

    def read_list(self, element: etree._Element) -> None:
        """Each paragraph of each item a list item; nested lists follow their parent item."""
        for item in element.iterchildren(LIST_ITEM, LIST_HEADER):
            for child in item.iterchildren():
                if child.tag == P:
                    self.paragraph(child, ElementKind.LIST_ITEM)
                else:
                    self.block(child)

    def table(self, element: etree._Element) -> None:
        rows = table_rows(element)
        header = TABLE_CELL_SEPARATOR.join(rows[0]) if rows else None
        self.sink.add(ElementKind.TABLE, table_text(rows), page=self.page, header=header)
        self.notes.extend(notes_in(element))

    def drawing(self, element: etree._Element) -> None:
        """A frame's text box or table, a group's shapes, a shape's own paragraphs; images
        and embedded objects (charts, formulas) hold no text of the document's."""
        tag = element.tag
        if tag in _DRAWING_SKIPPED:
            return
        if tag == DRAW + "frame":
            for child in element.iterchildren(DRAW + "text-box", TABLE_TABLE):
                if child.tag == TABLE_TABLE:
                    self.table(child)
                else:
                    self.read(child)
        elif tag in (DRAW + "g", DRAW + "a"):
            self.shapes(list(element.iterchildren()))
        else:
            self.read(element)

    def shapes(self, elements: list[etree._Element]) -> None:
        ordered = reading_order(elements, position_mm) if self.sort_shapes else elements
        for element in ordered:
            self.block(element)


def reading_order(items: list[T], position: Callable[[T], tuple[float, float] | None]) -> list[T]:
    """Items top to bottom, then left to right, by ``position`` (``(top, left)``); an item
    without one stays right after the item before it. Pure."""
    keyed: list[tuple[tuple[float, float], int, T]] = []
    last = (float("-inf"), float("-inf"))
    for index, item in enumerate(items):
        last = position(item) or last
        keyed.append((last, index, item))
    keyed.sort(key=lambda entry: (entry[0], entry[1]))
    return [item for _, _, item in keyed]


# -- lengths -------------------------------------------------------------------------------------

_LENGTH = re.compile(r"^\s*(-?[0-9]*\.?[0-9]+)\s*(cm|mm|in|pt|pc|px)?\s*$")
_MM_PER_UNIT = {"cm": 10.0, "mm": 1.0, "in": 25.4, "pt": 25.4 / 72, "pc": 25.4 / 6, "px": 25.4 / 96}
_TRANSLATE = re.compile(r"translate\s*\(\s*([^\s,)]+)[\s,]+([^\s,)]+)\s*\)")


def length_mm(value: str | None) -> float | None:
    """An ODF length (``2.5cm``, ``12pt``, ``1in``) in millimetres; None when unreadable."""
    match = _LENGTH.match(value or "")
    if not match:
        return None
    return float(match.group(1)) * _MM_PER_UNIT[match.group(2) or "cm"]


def position_mm(shape: etree._Element) -> tuple[float, float] | None:
    """Where a drawing shape's top left stands, ``(y, x)`` in millimetres: from ``svg:y`` and
    ``svg:x``, else from the ``translate`` of its ``draw:transform`` (rotated shapes); a
    group stands where its topmost shape does."""
    if shape.tag == DRAW + "g":
        members = [position_mm(member) for member in shape.iterchildren()]
        return min((where for where in members if where is not None), default=None)
    y, x = length_mm(shape.get(SVG + "y")), length_mm(shape.get(SVG + "x"))
    if y is None or x is None:
        match = _TRANSLATE.search(shape.get(DRAW + "transform") or "")
        if match:
            x, y = length_mm(match.group(1)), length_mm(match.group(2))
    return (y, x) if y is not None and x is not None else None
