"""ODT (OpenDocument text): the body in reading order (headings, paragraphs, nested lists,
tables, sections, frames and text boxes), then the footnotes and the endnotes.

``content.xml`` is read with lxml (see :mod:`lorebase.extract.odf`). Headings are ``text:h``
with their ``text:outline-level``; a paragraph in the "Title" style is the document's title
(and its first heading when ``meta.xml`` has no ``dc:title``), as Word's Title style is for
DOCX. A table's first row is its header. Generated indexes (a table of contents), comments,
deleted text of tracked changes, images and embedded objects are not read. Notes are read
where Word puts them: after the body, footnotes first.
"""

from __future__ import annotations

import zipfile
from pathlib import PurePath

from lxml import etree

from lorebase.extract.base import DocumentBuilder, Extractor
from lorebase.extract.odf import (
    NOTE_BODY,
    NOTE_CLASS,
    OFFICE,
    STYLE,
    TEXT,
    P,
    automatic_styles,
    inline_content,
    open_package,
    read_content,
    read_meta,
    read_xml,
)
from lorebase.extract.odf_blocks import Blocks
from lorebase.types import ElementKind, Extracted

_TITLE_STYLE = "Title"
_STYLE_NAME = TEXT + "style-name"
_MAX_STYLE_DEPTH = 32


class OdtExtractor(Extractor):
    kind = "odt"

    def extract(self, data: bytes, path: PurePath) -> Extracted:
        archive = open_package(data, self.settings.max_expanded_bytes)
        content, body = read_content(archive, "text")
        meta = read_meta(archive)
        reader = _TextBlocks(
            self.builder(data),
            title_styles=_title_styles(archive, content),
            title_as_heading=not meta.title,
        )
        reader.read(body)
        _add_notes(reader)
        builder = reader.builder
        return builder.build(
            title=meta.title or reader.title or _first_heading(builder),
            metadata=meta.as_metadata(),
        )


class _TextBlocks(Blocks):
    """Blocks of a text document, where a paragraph in the Title style is the title."""

    __slots__ = ("builder", "title", "title_as_heading", "title_styles")

    def __init__(
        self, builder: DocumentBuilder, *, title_styles: frozenset[str], title_as_heading: bool
    ) -> None:
        super().__init__(builder)
        self.builder = builder
        self.title_styles = title_styles
        self.title_as_heading = title_as_heading
        self.title: str | None = None

    def paragraph(self, element: etree._Element, kind: ElementKind) -> None:
        if element.tag != P or element.get(_STYLE_NAME) not in self.title_styles:
            super().paragraph(element, kind)
            return
        inline = inline_content(element)
        text = " ".join(inline.text.split())
        self.title = self.title or text or None
        if self.title_as_heading:
            self.builder.add(ElementKind.HEADING, text, level=1)
        else:
            self.builder.add(kind, text)
        self.notes.extend(inline.notes)
        self.shapes(inline.drawings)


def _add_notes(reader: _TextBlocks) -> None:
    """The notes met in the body, footnotes first, each note's paragraphs in order."""
    notes = list(reader.notes)
    reader.notes.clear()
    notes.sort(key=lambda note: note.get(NOTE_CLASS) == "endnote")  # stable: in order
    for note in notes:
        note_body = note.find(NOTE_BODY)
        if note_body is not None:
            reader.read(note_body)


def _title_styles(archive: zipfile.ZipFile, content: etree._Element) -> frozenset[str]:
    """The paragraph styles that are the Title style: itself, the styles derived from it,
    and the automatic styles of ``content.xml`` derived from those (a title paragraph with
    direct formatting)."""
    parents: dict[str, str] = {}
    for name, style in automatic_styles(content).items():
        parent = style.get(STYLE + "parent-style-name")
        if parent:
            parents[name] = parent
    root = read_xml(archive, "styles.xml")
    common = None if root is None else root.find(OFFICE + "styles")
    if common is not None:
        for style in common.iterchildren(STYLE + "style"):
            name, parent = style.get(STYLE + "name"), style.get(STYLE + "parent-style-name")
            if name and parent and name not in parents:
                parents[name] = parent
    return frozenset(name for name in {_TITLE_STYLE, *parents} if _is_title(name, parents))


def _is_title(name: str, parents: dict[str, str]) -> bool:
    current: str | None = name
    for _ in range(_MAX_STYLE_DEPTH):
        if current is None:
            return False
        if current == _TITLE_STYLE:
            return True
        current = parents.get(current)
    return False


def _first_heading(builder: DocumentBuilder) -> str | None:
    for element in builder.elements:
        if element.kind is ElementKind.HEADING:
            return element.text
    return None
