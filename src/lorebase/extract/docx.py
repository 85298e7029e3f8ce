"""DOCX: the body in reading order (paragraphs, lists, tables, text boxes), then the notes.

python-docx opens the package; the body is walked as WordprocessingML directly, because the
library's paragraph text skips content controls and its tables repeat merged cells. Headings
come from outline levels and built-in style ids, never from style names alone, so a German
"Überschrift 1" is a heading like an English "Heading 1". Before python-docx reads anything,
the zip directory bounds what the package expands to (the zip-bomb guard). A package saved as
ISO/IEC 29500 Strict ("Strict Open XML") names the same parts with other namespaces, which
python-docx does not know: its XML parts are rewritten to the transitional names first.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePath

import docx
from docx.opc.constants import RELATIONSHIP_TYPE
from docx.oxml.ns import qn
from docx.oxml.parser import parse_xml
from lxml import etree

from lorebase.errors import ExtractionFailed
from lorebase.extract.base import DocumentBuilder, Extractor
from lorebase.extract.containers import check_zip
from lorebase.extract.properties import properties
from lorebase.types import (
    TABLE_CELL_SEPARATOR,
    DocumentKind,
    ElementKind,
    Extracted,
    FailureReason,
    MetadataValue,
)

_MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
_FALLBACK = _MC + "Fallback"
_P, _TBL, _TR, _TC = qn("w:p"), qn("w:tbl"), qn("w:tr"), qn("w:tc")
_SDT, _SDT_CONTENT, _CUSTOM_XML = qn("w:sdt"), qn("w:sdtContent"), qn("w:customXml")
_TEXTBOX = qn("w:txbxContent")
_TEXT = (qn("w:t"), qn("m:t"))  # run text, and the text of equations
_TAB, _BR, _CR = qn("w:tab"), qn("w:br"), qn("w:cr")
_NO_BREAK_HYPHEN = qn("w:noBreakHyphen")
# Subtrees whose text is not part of the paragraph: properties, moved-away text (the moved
# copy is elsewhere), and VML fallbacks that repeat the drawing's text box.
_SKIPPED = {qn("w:pPr"), qn("w:rPr"), qn("w:moveFrom"), qn("w:del"), _FALLBACK}
_VAL, _TYPE, _ID = qn("w:val"), qn("w:type"), qn("w:id")
_HEADING_ID = re.compile(r"^Heading([1-9])$")
_HEADING_NAME = re.compile(r"^heading ([1-9])$", re.I)
_LIST_STYLE_ID = re.compile(r"^List(?:Paragraph|Bullet\d?|Number\d?|\d?)$")
_BODY_TEXT_LEVEL = 9  # w:outlineLvl 9 means "body text"
_MAX_STYLE_DEPTH = 32
# Strict namespaces and relationship types are http://purl.oclc.org/ooxml/<area>/<name>[/...];
# the transitional ones are http://schemas.openxmlformats.org/<area>/2006/<name>[/...]. The
# package's own (OPC) names are the same in both.
_STRICT_PREFIX = b"http://purl.oclc.org/ooxml/"
_STRICT_NAME = re.compile(rb"http://purl\.oclc\.org/ooxml/([A-Za-z]+)/([A-Za-z]+)")
_STRICT_RENAMED = {
    b"extendedProperties": b"extended-properties",
    b"customProperties": b"custom-properties",
}
_XML_PARTS = (".xml", ".rels")
_NOTE_KINDS = (
    (RELATIONSHIP_TYPE.FOOTNOTES, qn("w:footnote")),
    (RELATIONSHIP_TYPE.ENDNOTES, qn("w:endnote")),
)


@dataclass(frozen=True, slots=True)
class _Style:
    """What a paragraph style decides, with its ``basedOn`` chain already followed."""

    outline_level: int | None = None
    num_id: str | None = None
    heading_level: int | None = None
    is_title: bool = False
    is_list: bool = False


@dataclass(slots=True)
class _Walk:
    """State of one body walk: the builder, the styles, and the first Title paragraph."""

    builder: DocumentBuilder
    styles: dict[str, _Style]
    default_style: _Style
    title_as_heading: bool
    title: str | None = None
    pending_boxes: list[etree._Element] = field(default_factory=list)


class DocxExtractor(Extractor):
    kind = DocumentKind.DOCX

    def extract(self, data: bytes, path: PurePath) -> Extracted:
        check_zip(data, self.settings.max_expanded_bytes)
        try:
            document = docx.Document(io.BytesIO(transitional(data)))
            body = document.element.body
            styles_root = document.styles.element
        except MemoryError:  # a part too big to parse within the memory limit: too_large
            raise
        except Exception as exc:  # a package python-docx cannot open: damaged or not Word
            raise ExtractionFailed(FailureReason.CORRUPT, type(exc).__name__) from None
        core_title = _core_title(document)
        styles, default_style = _read_styles(styles_root)
        walk = _Walk(self.builder(data), styles, default_style, title_as_heading=not core_title)
        _add_blocks(walk, body)
        for note in _notes(document):
            _add_blocks(walk, note)
        return walk.builder.build(title=core_title or walk.title, metadata=_core(document))


def transitional(data: bytes) -> bytes:
    """A Strict Open XML package with its XML parts renamed to the transitional namespaces and
    relationship types; any other package unchanged. Call after :func:`check_zip`, which
    bounds what the rewrite holds in memory."""
    archive = zipfile.ZipFile(io.BytesIO(data))
    try:
        package_relationships = archive.read("_rels/.rels")
    except KeyError:  # no package relationships: python-docx reports it
        return data
    if _STRICT_PREFIX not in package_relationships:
        return data
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as target:
        for entry in archive.infolist():
            content = archive.read(entry)
            if entry.filename.lower().endswith(_XML_PARTS):
                content = _STRICT_NAME.sub(_transitional_name, content)
            target.writestr(entry.filename, content)
    return buffer.getvalue()


def _transitional_name(match: re.Match[bytes]) -> bytes:
    area, name = match.group(1), match.group(2)
    return b"http://schemas.openxmlformats.org/%s/2006/%s" % (area, _STRICT_RENAMED.get(name, name))


# -- styles --------------------------------------------------------------------------------------


def _read_styles(root: etree._Element) -> tuple[dict[str, _Style], _Style]:
    """Every paragraph style by id, resolved along its ``basedOn`` chain, and the default."""
    raw: dict[str, etree._Element] = {}
    default_id: str | None = None
    for style in root.iterchildren(qn("w:style")):
        if style.get(_TYPE, "paragraph") != "paragraph":
            continue
        style_id = style.get(qn("w:styleId"))
        if style_id:
            raw[style_id] = style
            if style.get(qn("w:default")) in ("1", "true", "on"):
                default_id = style_id
    resolved = {style_id: _resolve_style(style_id, raw) for style_id in raw}
    return resolved, resolved.get(default_id or "", _Style())


def _resolve_style(style_id: str, raw: dict[str, etree._Element]) -> _Style:
    """Walk from the style up its ``basedOn`` chain; the nearest definition of each wins."""
    outline: int | None = None
    num_id: str | None = None
    heading: int | None = None
    is_title = is_list = False
    current: str | None = style_id
    seen: set[str] = set()
    while current and current in raw and current not in seen and len(seen) < _MAX_STYLE_DEPTH:
        seen.add(current)
        style = raw[current]
        outline = outline if outline is not None else _outline_level(style.find(qn("w:pPr")))
        num_id = num_id if num_id is not None else _num_id(style.find(qn("w:pPr")))
        heading = heading or _heading_from_style_id(current, style)
        is_title = is_title or current == "Title"
        is_list = is_list or _LIST_STYLE_ID.match(current) is not None
        current = _child_val(style, "w:basedOn")
    return _Style(outline, num_id, heading, is_title, is_list)


def _heading_from_style_id(style_id: str, style: etree._Element) -> int | None:
    """Built-in heading ids (``Heading1``) are the same in every language; the English name
    ``heading 1`` is a last resort for styles whose id was localized."""
    match = _HEADING_ID.match(style_id) or _HEADING_NAME.match(_child_val(style, "w:name") or "")
    return int(match.group(1)) if match else None


def _outline_level(properties: etree._Element | None) -> int | None:
    value = _child_val(properties, "w:outlineLvl")
    return int(value) if value is not None and value.isdigit() else None


def _num_id(properties: etree._Element | None) -> str | None:
    if properties is None:
        return None
    return _child_val(properties.find(qn("w:numPr")), "w:numId")


def _child_val(element: etree._Element | None, tag: str) -> str | None:
    child = element.find(qn(tag)) if element is not None else None
    return child.get(_VAL) if child is not None else None


# -- body ----------------------------------------------------------------------------------------


def _add_blocks(walk: _Walk, container: etree._Element) -> None:
    """Add the block content of a body, cell-less container (text box, note) in order."""
    for child in container.iterchildren():
        if child.tag == _P:
            _add_paragraph(walk, child)
        elif child.tag == _TBL:
            text = _table_text(child)
            rows = text.split("\n")  # its first row names the columns, as in most tables
            walk.builder.add(ElementKind.TABLE, text, header=rows[0] if len(rows) > 1 else None)
        elif child.tag in (_SDT, _CUSTOM_XML):
            content = child.find(_SDT_CONTENT) if child.tag == _SDT else child
            if content is not None:
                _add_blocks(walk, content)


def _add_paragraph(walk: _Walk, paragraph: etree._Element) -> None:
    pieces: list[str] = []
    boxes: list[etree._Element] = []
    breaks = _collect(paragraph, pieces, boxes)
    text = "".join(pieces)
    if breaks and not text.strip():
        walk.builder.add(ElementKind.PAGE_BREAK, "")
    kind, level = _classify(walk, paragraph)
    if kind is ElementKind.HEADING:
        text = " ".join(text.split())
        if level == 0:  # a Title paragraph
            walk.title = walk.title or text or None
            kind, level = (
                (ElementKind.HEADING, 1) if walk.title_as_heading else (ElementKind.PARAGRAPH, 0)
            )
    walk.builder.add(kind, text, level=level)
    for box in boxes:
        _add_blocks(walk, box)
    if breaks and text.strip():
        walk.builder.add(ElementKind.PAGE_BREAK, "")


def _classify(walk: _Walk, paragraph: etree._Element) -> tuple[ElementKind, int]:
    """Heading (level 1-6; 0 for a Title paragraph), list item or paragraph."""
    properties = paragraph.find(qn("w:pPr"))
    style_id = _child_val(properties, "w:pStyle")
    style = walk.styles.get(style_id, walk.default_style) if style_id else walk.default_style
    outline = _outline_level(properties)
    if outline is None:
        outline = style.outline_level
    if outline is not None and outline < _BODY_TEXT_LEVEL:
        return ElementKind.HEADING, min(outline + 1, 6)
    if outline is None and style.heading_level:
        return ElementKind.HEADING, min(style.heading_level, 6)
    if style.is_title:
        return ElementKind.HEADING, 0
    num_id = _num_id(properties)
    if num_id is None:
        num_id = style.num_id
    if (num_id is not None and num_id != "0") or style.is_list:
        return ElementKind.LIST_ITEM, 0
    return ElementKind.PARAGRAPH, 0


def _collect(element: etree._Element, pieces: list[str], boxes: list[etree._Element]) -> bool:
    """Gather a paragraph's text into ``pieces`` and its text boxes into ``boxes``; return
    whether it holds a hard page break."""
    page_break = False
    for child in element.iterchildren():
        tag = child.tag
        if tag in _TEXT:
            pieces.append(child.text or "")
        elif tag == _TAB:
            pieces.append("\t")
        elif tag == _BR:
            if child.get(_TYPE) == "page":
                page_break = True
            pieces.append("\n")
        elif tag == _CR:
            pieces.append("\n")
        elif tag == _NO_BREAK_HYPHEN:
            pieces.append("-")
        elif tag == _TEXTBOX:
            boxes.append(child)
        elif tag not in _SKIPPED and isinstance(tag, str):
            page_break = _collect(child, pieces, boxes) or page_break
    return page_break


def _table_text(table: etree._Element) -> str:
    """One line per row, cells joined by ``|``; nested tables flatten into their cell."""
    rows = []
    for row in _children(table, _TR):
        cells = [_cell_text(cell) for cell in _children(row, _TC)]
        if any(cells):
            rows.append(TABLE_CELL_SEPARATOR.join(cells))
    return "\n".join(rows)


def _children(element: etree._Element, tag: str) -> Iterator[etree._Element]:
    """Children with ``tag``, looking through content controls and custom XML wrappers."""
    for child in element.iterchildren():
        if child.tag == tag:
            yield child
        elif child.tag in (_SDT, _CUSTOM_XML):
            content = child.find(_SDT_CONTENT) if child.tag == _SDT else child
            if content is not None:
                yield from _children(content, tag)


def _cell_text(cell: etree._Element) -> str:
    """All paragraphs of a cell (nested tables and text boxes too) on one line."""
    pieces: list[str] = []
    for paragraph in _paragraphs_within(cell):
        _collect(paragraph, pieces, [])
        pieces.append(" ")
    return " ".join("".join(pieces).split())


def _paragraphs_within(element: etree._Element) -> Iterator[etree._Element]:
    for child in element.iterchildren():
        if child.tag == _P:
            yield child
        if child.tag != _FALLBACK and isinstance(child.tag, str):
            yield from _paragraphs_within(child)


# -- document parts ------------------------------------------------------------------------------


def _core_title(document: docx.document.Document) -> str | None:
    try:
        title = document.core_properties.title
    except Exception:  # a damaged core-properties part costs the title, not the text
        return None
    return " ".join((title or "").split()) or None


def _core(document: docx.document.Document) -> dict[str, MetadataValue]:
    """The core properties people filter on: author, created, modified, subject, keywords
    (as tags) and category."""
    try:
        core = document.core_properties
        return properties(
            [
                ("author", core.author),
                ("created", core.created),
                ("modified", core.modified),
                ("subject", core.subject),
                ("keywords", core.keywords),
                ("category", core.category),
            ]
        )
    except Exception:  # a damaged core-properties part costs the metadata, not the text
        return {}


def _notes(document: docx.document.Document) -> Iterator[etree._Element]:
    """Footnotes, then endnotes, in part order; separator notes (ids -1 and 0, or a
    separator type) hold no text of the author's."""
    for relationship_type, tag in _NOTE_KINDS:
        for relationship in document.part.rels.values():
            if relationship.is_external or relationship.reltype != relationship_type:
                continue
            root = parse_xml(relationship.target_part.blob)
            for note in root.iterchildren(tag):
                if note.get(_TYPE, "normal") == "normal" and note.get(_ID) not in ("-1", "0"):
                    yield note
