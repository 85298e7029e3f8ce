"""OpenDocument (ODF) packages, shared by the ODT, ODP (and ODS) readers: opening a package
safely, its metadata, and the text of its paragraphs and tables (block content is read by
:mod:`lorebase.extract.odf_blocks`).

An ODF file is a zip holding XML parts (``content.xml``, ``meta.xml``, ``styles.xml``). The
package passes the zip-bomb guard first; an encrypted package (ODF encrypts each part on its
own and says so in ``META-INF/manifest.xml``, not in the zip flags) is refused as
``encrypted``. Parts are parsed by lxml with entities left unresolved and no network.

Paragraph text follows ODF's white-space rule: runs of spaces, tabs and line ends in the XML
are one space, while ``text:s`` (with its count), ``text:tab`` and ``text:line-break`` are
kept exactly. Spans, links, fields and other inline elements give their text; notes,
comments (``office:annotation``), drawings anchored in the paragraph and deleted text of
tracked changes do not (a block reader takes notes and drawings apart: :class:`Inline`).
U+FEFF (a byte-order mark some converters leave in the first paragraph) is dropped.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field

from lxml import etree

from lorebase.errors import ExtractionFailed
from lorebase.extract.containers import check_zip
from lorebase.types import TABLE_CELL_SEPARATOR, FailureReason


def _ns(prefix: str) -> str:
    return "{urn:oasis:names:tc:opendocument:xmlns:" + prefix + "}"


OFFICE, TEXT, TABLE = _ns("office:1.0"), _ns("text:1.0"), _ns("table:1.0")
DRAW, STYLE, SVG = _ns("drawing:1.0"), _ns("style:1.0"), _ns("svg-compatible:1.0")
PRESENTATION, META = _ns("presentation:1.0"), _ns("meta:1.0")
MANIFEST = _ns("manifest:1.0")
DC = "{http://purl.org/dc/elements/1.1/}"

P, H = TEXT + "p", TEXT + "h"
LIST, LIST_ITEM, LIST_HEADER = TEXT + "list", TEXT + "list-item", TEXT + "list-header"
NOTE, NOTE_BODY, NOTE_CLASS = TEXT + "note", TEXT + "note-body", TEXT + "note-class"
SECTION = TEXT + "section"
TABLE_TABLE = TABLE + "table"
ANNOTATION = OFFICE + "annotation"
_SPACE, _TAB, _LINE_BREAK = TEXT + "s", TEXT + "tab", TEXT + "line-break"
_COUNT, _NUMBER = TEXT + "c", TEXT + "number"
# Inline elements whose content is not paragraph text: the end marker of a comment, ruby
# annotations (the base text is kept), a tracked change's deleted text, soft page breaks.
_INLINE_SKIPPED = frozenset(
    {
        OFFICE + "annotation-end",
        TEXT + "ruby-text",
        TEXT + "deletion",
        TEXT + "tracked-changes",
        TEXT + "soft-page-break",
    }
)
_ROW_CONTAINERS = frozenset(
    {TABLE + "table-header-rows", TABLE + "table-rows", TABLE + "table-row-group"}
)
_ROW, _CELL, _COVERED = TABLE + "table-row", TABLE + "table-cell", TABLE + "covered-table-cell"
_ROWS_REPEATED, _COLUMNS_REPEATED = (
    TABLE + "number-rows-repeated",
    TABLE + "number-columns-repeated",
)
_COLUMNS_SPANNED = TABLE + "number-columns-spanned"
MAX_REPEAT = 1000
"""Most times a repeated row or cell (``number-rows-repeated``, ``number-columns-repeated``)
is written out: spreadsheets repeat an empty row a million times, which is not text."""
MAX_SPACES = 1000  # most spaces one ``text:s`` stands for
_WHITE_SPACE = re.compile(r"[ \t\r\n]+")
_BOM = "\ufeff"
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)


# -- the package ---------------------------------------------------------------------------------


def open_package(data: bytes, limit: int) -> zipfile.ZipFile:
    """The package, after the zip-bomb guard (``corrupt``, ``too_large``); ``encrypted``
    when the manifest says its parts are encrypted (a password-protected document)."""
    archive = check_zip(data, limit)
    manifest = read_xml(archive, "META-INF/manifest.xml")
    if manifest is not None and manifest.find(f".//{MANIFEST}encryption-data") is not None:
        raise ExtractionFailed(
            FailureReason.ENCRYPTED, "password-protected OpenDocument: save it without one"
        )
    return archive


def read_xml(archive: zipfile.ZipFile, name: str) -> etree._Element | None:
    """A part parsed (``None`` when the package lacks it); ``corrupt`` when it is not XML."""
    try:
        content = archive.read(name)
    except KeyError:
        return None
    try:
        return etree.fromstring(content, _PARSER)
    except etree.XMLSyntaxError:
        raise ExtractionFailed(FailureReason.CORRUPT, f"{name} is not well-formed XML") from None


def read_content(archive: zipfile.ZipFile, kind: str) -> tuple[etree._Element, etree._Element]:
    """``content.xml`` and its ``office:body/office:<kind>`` (kind ``text``,
    ``presentation``, ``spreadsheet``); ``corrupt`` when the package holds no such document."""
    content = read_xml(archive, "content.xml")
    body = None if content is None else content.find(f"{OFFICE}body/{OFFICE}{kind}")
    if content is None or body is None:
        raise ExtractionFailed(FailureReason.CORRUPT, f"no office:{kind} in content.xml")
    return content, body


def automatic_styles(root: etree._Element) -> dict[str, etree._Element]:
    """The automatic styles of a part (``content.xml``) by name: where a page's visibility
    or a paragraph's parent style is said."""
    styles = root.find(f"{OFFICE}automatic-styles")
    if styles is None:
        return {}
    return {style.get(STYLE + "name", ""): style for style in styles.iterchildren(STYLE + "style")}


@dataclass(frozen=True, slots=True)
class Meta:
    """What ``meta.xml`` says of a document (each None when absent or blank)."""

    title: str | None = None
    author: str | None = None
    created: str | None = None
    modified: str | None = None

    def as_metadata(self) -> dict[str, str | tuple[str, ...]]:
        fields = {
            "title": self.title,
            "author": self.author,
            "created": self.created,
            "modified": self.modified,
        }
        return {key: value for key, value in fields.items() if value}


def read_meta(archive: zipfile.ZipFile) -> Meta:
    """Title (``dc:title``), author (``meta:initial-creator``, else ``dc:creator``, which
    ODF defines as the last person to edit it), created (``meta:creation-date``) and
    modified (``dc:date``). A damaged ``meta.xml`` costs the metadata, not the document."""
    try:
        root = read_xml(archive, "meta.xml")
    except ExtractionFailed:
        return Meta()
    meta = None if root is None else root.find(f"{OFFICE}meta")
    if meta is None:
        return Meta()

    def value(tag: str) -> str | None:
        found = meta.find(tag)
        text = " ".join("".join(found.itertext()).split()) if found is not None else ""
        return text.replace(_BOM, "") or None

    return Meta(
        title=value(DC + "title"),
        author=value(META + "initial-creator") or value(DC + "creator"),
        created=value(META + "creation-date"),
        modified=value(DC + "date"),
    )


# -- paragraphs ----------------------------------------------------------------------------------


@dataclass(slots=True)
class Inline:
    """The content of one paragraph: its text, and what is anchored in it but read apart:
    notes (``text:note``) and drawings (``draw:frame`` and other shapes)."""

    text: str = ""
    notes: list[etree._Element] = field(default_factory=list)
    drawings: list[etree._Element] = field(default_factory=list)


def paragraph_text(element: etree._Element) -> str:
    """The text of a ``text:p`` or ``text:h`` (or any inline content) as ODF shows it."""
    return inline_content(element).text


def inline_content(element: etree._Element) -> Inline:
    """The text of a paragraph, and the notes and drawings anchored in it (in order)."""
    inline = Inline()
    pieces: list[tuple[str, bool]] = []  # (text, literal): literal white space is kept
    _collect(element, pieces, inline)
    inline.text = _join(pieces).replace(_BOM, "")
    return inline


def _collect(element: etree._Element, pieces: list[tuple[str, bool]], inline: Inline) -> None:
    if element.text:
        pieces.append((element.text, False))
    for child in element.iterchildren():
        tag = child.tag
        if not isinstance(tag, str):  # a comment or processing instruction
            pass
        elif tag == _SPACE:
            pieces.append((" " * _count(child.get(_COUNT)), True))
        elif tag == _TAB:
            pieces.append(("\t", True))
        elif tag == _LINE_BREAK:
            pieces.append(("\n", True))
        elif tag == _NUMBER:  # the label of a numbered item or heading, as last shown
            pieces.append(("".join(child.itertext()).strip() + " ", True))
        elif tag == NOTE:
            inline.notes.append(child)
        elif tag.startswith(DRAW) and tag != DRAW + "a":
            inline.drawings.append(child)
        elif tag != ANNOTATION and tag not in _INLINE_SKIPPED:
            _collect(child, pieces, inline)  # spans, links (text:a, draw:a), fields
        if child.tail:
            pieces.append((child.tail, False))


def _count(value: str | None) -> int:
    return min(int(value), MAX_SPACES) if value and value.isdigit() else 1


def _join(pieces: list[tuple[str, bool]]) -> str:
    """Apply the white-space rule: XML white space collapses to one space, and is dropped at
    the start of the paragraph; literal spaces, tabs and line breaks stay."""
    out: list[str] = []
    after_space = True  # leading white space of a paragraph is not text
    for text, literal in pieces:
        if literal:
            out.append(text)
            after_space = False
            continue
        collapsed = _WHITE_SPACE.sub(" ", text)
        if after_space and collapsed.startswith(" "):
            collapsed = collapsed[1:]
        if collapsed:
            out.append(collapsed)
            after_space = collapsed.endswith(" ")
    return "".join(out)


def notes_in(element: etree._Element) -> Iterator[etree._Element]:
    """Every ``text:note`` in an element, in document order."""
    yield from element.iter(NOTE)


# -- tables --------------------------------------------------------------------------------------


def table_rows(table: etree._Element) -> list[list[str]]:
    """The rows of a ``table:table`` as cell texts, empty rows left out and trailing empty
    cells dropped. A merged cell is written once: the cells it covers to its right are left
    out, those below it are empty (so the columns under a header stay in place). Repeated
    rows and cells are written out at most :data:`MAX_REPEAT` times."""
    rows: list[list[str]] = []
    for row in _rows(table):
        cells: list[str] = []
        covered_right = 0
        for cell in row.iterchildren(_CELL, _COVERED):
            repeat = _repeat(cell.get(_COLUMNS_REPEATED))
            if cell.tag == _COVERED:
                skipped = min(covered_right, repeat)
                covered_right -= skipped
                cells.extend([""] * (repeat - skipped))
                continue
            text = cell_text(cell)
            cells.extend([text] * repeat)
            covered_right = max(_repeat(cell.get(_COLUMNS_SPANNED)) - 1, 0)
        while cells and not cells[-1]:
            cells.pop()
        if cells:
            rows.extend([cells] * _repeat(row.get(_ROWS_REPEATED)))
    return rows


def table_text(rows: list[list[str]]) -> str:
    """One line per row, cells joined by :data:`TABLE_CELL_SEPARATOR`."""
    return "\n".join(TABLE_CELL_SEPARATOR.join(cells) for cells in rows)


def _rows(table: etree._Element) -> Iterator[etree._Element]:
    for child in table.iterchildren():
        if child.tag == _ROW:
            yield child
        elif child.tag in _ROW_CONTAINERS:
            yield from _rows(child)


def _repeat(value: str | None) -> int:
    return min(int(value), MAX_REPEAT) if value and value.isdigit() and int(value) > 0 else 1


def cell_text(cell: etree._Element) -> str:
    """Every paragraph of a cell (lists and nested tables too) on one line; notes and
    comments left out."""
    texts = [paragraph_text(paragraph) for paragraph in paragraphs_within(cell)]
    return " ".join(" ".join(texts).split())


def paragraphs_within(element: etree._Element) -> Iterator[etree._Element]:
    """The ``text:p`` and ``text:h`` inside an element at any depth, in order, not looking
    into notes or comments (their paragraphs are not the element's text)."""
    for child in element.iterchildren():
        if child.tag in (P, H):
            yield child
        elif child.tag not in (NOTE, ANNOTATION) and isinstance(child.tag, str):
            yield from paragraphs_within(child)
