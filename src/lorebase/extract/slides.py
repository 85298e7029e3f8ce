"""Slide decks (PPTX, ODP): each slide a section on its own page number.

A slide is a level-1 heading (its title; "Slide N" when it has none; "(hidden slide)" added
for a hidden one), then its text in reading order — shapes top to bottom, then left to right,
groups read shape by shape, bulleted paragraphs as list items, tables one row per line with
their first row as header — then its speaker notes under a level-2 heading "Notes". Every
element carries the slide's number (1-based, in presentation order) as its page, so a
citation reads ``deck.pptx › Roadmap (slide 4)``. A slide with no text at all adds nothing,
so a deck without text is ``empty``.

PPTX is read with python-pptx; footers, dates and slide numbers repeated from the master,
pictures, charts and SmartArt are not read. A password-protected PPTX is not a zip but an
OLE compound file holding an ``EncryptedPackage`` stream: ``encrypted``. A Strict Open XML
deck is renamed to the transitional names first (as for DOCX). ODP is read from
``content.xml`` (see :mod:`lorebase.extract.odf`): a slide's title is its title frame, else
its name when a person gave it one.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import PurePath
from typing import Any

import pptx
from lxml import etree
from pptx.enum.shapes import PP_PLACEHOLDER
from pptx.opc.constants import RELATIONSHIP_TYPE
from pptx.oxml.ns import qn
from pptx.shapes.group import GroupShape

from lorebase.errors import ExtractionFailed
from lorebase.extract.base import DocumentBuilder, Extractor, normalize_text
from lorebase.extract.containers import check_zip
from lorebase.extract.docx import transitional
from lorebase.extract.odf import (
    DRAW,
    PRESENTATION,
    STYLE,
    automatic_styles,
    open_package,
    paragraph_text,
    paragraphs_within,
    read_content,
    read_meta,
)
from lorebase.extract.odf_blocks import Blocks, reading_order
from lorebase.types import TABLE_CELL_SEPARATOR, ElementKind, Extracted, FailureReason

HIDDEN_MARK = "(hidden slide)"
NOTES_HEADING = "Notes"
_SOFT_BREAK = "\x0b"  # PowerPoint's line break within a paragraph (<a:br/>)
# A title that only names the application or the file type, as PowerPoint and LibreOffice
# fill it in, in several languages ("PowerPoint Presentation", "Présentation PowerPoint").
_DEFAULT_TITLE_WORDS = frozenset(
    {
        *("powerpoint", "presentation", "präsentation", "présentation", "presentación"),
        *("presentazione", "apresentação", "presentatie", "prezentacja", "презентация"),
        *("microsoft", "office", "impress", "untitled", "slide", "title", "1"),
    }
)
_WORD = re.compile(r"\w+")
# A name an application gave a page: "page3", "Slide 3", "Folie 3", "Diapositive 3".
_AUTOMATIC_PAGE_NAME = re.compile(r"^[^\W\d_]{2,}\s?\d+$")


@dataclass(slots=True)
class _Recorder:
    """A slide's elements, held until the slide's heading is written before them."""

    entries: list[tuple[ElementKind, str, int, str | None]] = field(default_factory=list)

    def add(
        self,
        kind: ElementKind,
        text: str,
        *,
        level: int = 0,
        page: int | None = None,
        header: str | None = None,
    ) -> object:
        text = text.replace(_SOFT_BREAK, "\n")
        if normalize_text(text):
            self.entries.append((kind, text, level, header))
        return None

    def replay(self, builder: DocumentBuilder, page: int) -> None:
        for kind, text, level, header in self.entries:
            builder.add(kind, text, level=level, page=page, header=header)


@dataclass(slots=True)
class _Slide:
    """One slide as read: its number, title (None: it has none), whether it is hidden, and
    the elements of its body and of its speaker notes."""

    number: int
    title: str | None
    hidden: bool = False
    body: _Recorder = field(default_factory=_Recorder)
    notes: _Recorder = field(default_factory=_Recorder)


def _add_slide(builder: DocumentBuilder, slide: _Slide) -> None:
    """The slide's heading, body and notes, each on the slide's page; nothing when the
    slide holds no text."""
    if not (slide.title or slide.body.entries or slide.notes.entries):
        return
    heading = slide.title or f"Slide {slide.number}"
    if slide.hidden:
        heading = f"{heading} {HIDDEN_MARK}"
    builder.add(ElementKind.HEADING, heading, level=1, page=slide.number)
    slide.body.replay(builder, slide.number)
    if slide.notes.entries:
        builder.add(ElementKind.HEADING, NOTES_HEADING, level=2, page=slide.number)
        slide.notes.replay(builder, slide.number)


def _one_line(text: str) -> str | None:
    return " ".join(text.replace(_SOFT_BREAK, " ").split()) or None


def deck_title(title: str | None) -> str | None:
    """A title from the properties, unless it is one an application filled in. Pure."""
    words = _WORD.findall((title or "").casefold())
    return None if all(word in _DEFAULT_TITLE_WORDS for word in words) else title


# -- PPTX ----------------------------------------------------------------------------------------

_CFB_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ENCRYPTED_PACKAGE = "EncryptedPackage".encode("utf-16-le")
_TITLES = frozenset(
    {PP_PLACEHOLDER.TITLE, PP_PLACEHOLDER.CENTER_TITLE, PP_PLACEHOLDER.VERTICAL_TITLE}
)
_BODIES = frozenset(
    {
        PP_PLACEHOLDER.BODY,
        PP_PLACEHOLDER.OBJECT,
        PP_PLACEHOLDER.SUBTITLE,
        PP_PLACEHOLDER.VERTICAL_BODY,
        PP_PLACEHOLDER.VERTICAL_OBJECT,
    }
)
_REPEATED = frozenset(
    {PP_PLACEHOLDER.DATE, PP_PLACEHOLDER.FOOTER, PP_PLACEHOLDER.SLIDE_NUMBER, PP_PLACEHOLDER.HEADER}
)
"""Placeholders that repeat on every slide what the master says: not the slide's text."""
_BULLETS = frozenset({qn("a:buChar"), qn("a:buAutoNum"), qn("a:buBlip")})
_NO_BULLET = qn("a:buNone")
_LIST_STYLE = qn("a:lstStyle")


def refuse_compound_file(data: bytes) -> None:
    """An OLE compound file is no Office Open XML package: ``encrypted`` when it holds an
    ``EncryptedPackage`` (how Office saves a password-protected file), else ``corrupt``."""
    if not data.startswith(_CFB_MAGIC):
        return
    if _ENCRYPTED_PACKAGE in data:
        raise ExtractionFailed(
            FailureReason.ENCRYPTED, "password-protected: save it again without a password"
        )
    raise ExtractionFailed(
        FailureReason.CORRUPT, "an OLE compound file, not a package: save it as .pptx"
    )


class PptxExtractor(Extractor):
    kind = "pptx"

    def extract(self, data: bytes, path: PurePath) -> Extracted:
        refuse_compound_file(data)
        check_zip(data, self.settings.max_expanded_bytes)
        try:
            presentation = pptx.Presentation(io.BytesIO(transitional(data)))
            slides = list(presentation.slides)
        except MemoryError:  # a part too big to parse within the memory limit: too_large
            raise
        except Exception as exc:  # a package python-pptx cannot open: damaged or not a deck
            raise ExtractionFailed(FailureReason.CORRUPT, type(exc).__name__) from None
        builder = self.builder(data)
        first_title: str | None = None
        for number, slide in enumerate(slides, 1):
            read = _read_slide(slide, number)
            first_title = first_title if number > 1 else read.title
            _add_slide(builder, read)
        properties = _core_properties(presentation)
        properties["title"] = deck_title(properties.get("title"))
        metadata: dict[str, str | tuple[str, ...]] = {
            key: value for key, value in properties.items() if value
        }
        metadata["slides"] = str(len(slides))
        title = properties["title"] or first_title
        return builder.build(title=title, page_count=len(slides), metadata=metadata)


def _read_slide(slide: Any, number: int) -> _Slide:
    shapes = list(slide.shapes)
    title_shape = next((shape for shape in shapes if _placeholder(shape) in _TITLES), None)
    title = None
    if title_shape is not None and title_shape.has_text_frame:
        title = _one_line(" ".join(p.text for p in title_shape.text_frame.paragraphs))
    read = _Slide(number, title, hidden=slide._element.get("show") in ("0", "false"))
    master = slide.slide_layout.slide_master._element
    for shape in _pptx_order(shapes):
        if shape is not title_shape:
            _read_shape(shape, read.body, master)
    if slide.has_notes_slide:
        frame = slide.notes_slide.notes_text_frame
        if frame is not None:
            _read_paragraphs(frame, read.notes, ())
    return read


def _placeholder(shape: Any) -> PP_PLACEHOLDER | None:
    return shape.placeholder_format.type if shape.is_placeholder else None


def _pptx_order(shapes: Iterable[Any]) -> list[Any]:
    def position(shape: Any) -> tuple[float, float] | None:
        top, left = shape.top, shape.left
        return (float(top), float(left)) if top is not None and left is not None else None

    return reading_order(list(shapes), position)


def _read_shape(shape: Any, sink: _Recorder, master: Any) -> None:
    if isinstance(shape, GroupShape):
        for member in _pptx_order(shape.shapes):
            _read_shape(member, sink, master)
    elif getattr(shape, "has_table", False):
        rows = _table_rows(shape.table)
        header = TABLE_CELL_SEPARATOR.join(rows[0]) if rows else None
        sink.add(ElementKind.TABLE, "\n".join(map(TABLE_CELL_SEPARATOR.join, rows)), header=header)
    elif shape.has_text_frame and _placeholder(shape) not in _REPEATED:
        _read_paragraphs(shape.text_frame, sink, _list_styles(shape, master))


def _read_paragraphs(frame: Any, sink: _Recorder, styles: tuple[Any, ...]) -> None:
    own = frame._txBody.find(_LIST_STYLE)
    chain = (own, *styles) if own is not None else styles
    for paragraph in frame.paragraphs:
        bulleted = _is_bullet(paragraph._p, paragraph.level, chain)
        sink.add(ElementKind.LIST_ITEM if bulleted else ElementKind.PARAGRAPH, paragraph.text)


def _list_styles(shape: Any, master: Any) -> tuple[Any, ...]:
    """Where a placeholder's paragraphs inherit their bullets from, nearest first: its
    layout placeholder's list style, the master placeholder's, then the master's text style
    for its kind (body text is bulleted there; titles and other text are not). Text boxes
    inherit no bullets."""
    kind = _placeholder(shape)
    if kind is None:
        return ()
    chain: list[Any] = []
    base = shape
    for _ in range(2):  # layout placeholder, then master placeholder
        base = getattr(base, "_base_placeholder", None)
        if base is None:
            break
        styles = base._element.find(f"{qn('p:txBody')}/{_LIST_STYLE}")
        if styles is not None:
            chain.append(styles)
    name = "p:titleStyle" if kind in _TITLES else "p:bodyStyle" if kind in _BODIES else None
    text_style = master.find(f"{qn('p:txStyles')}/{qn(name)}") if name else None
    if text_style is not None:
        chain.append(text_style)
    return tuple(chain)


def _is_bullet(paragraph: Any, level: int, chain: tuple[Any, ...]) -> bool:
    """Whether a paragraph shows a bullet or number: its own properties decide, else the
    nearest list style that says so for its level."""
    levels = [paragraph.find(qn("a:pPr"))]
    levels += [style.find(qn(f"a:lvl{min(level, 8) + 1}pPr")) for style in chain]
    for properties in levels:
        if properties is None:
            continue
        for child in properties.iterchildren():
            if child.tag in _BULLETS:
                return True
            if child.tag == _NO_BULLET:
                return False
    return False


def _table_rows(table: Any) -> list[list[str]]:
    """Cell texts row by row: a merged cell once, the cells it spans to the right left out
    and those below it empty (columns stay under their header); empty rows left out."""
    rows: list[list[str]] = []
    for row in table.rows:
        cells: list[str] = []
        for cell in row.cells:
            if cell._tc.hMerge:
                continue
            text = "" if cell._tc.vMerge else " ".join(p.text for p in cell.text_frame.paragraphs)
            cells.append(" ".join(text.replace(_SOFT_BREAK, " ").split()))
        while cells and not cells[-1]:
            cells.pop()
        if cells:
            rows.append(cells)
    return rows


def _core_properties(presentation: Any) -> dict[str, str | None]:
    """Title, author, created and modified from the core properties part; nothing when the
    package has none (python-pptx would make up defaults) or it is damaged."""
    try:
        presentation.part.package.part_related_by(RELATIONSHIP_TYPE.CORE_PROPERTIES)
        core = presentation.core_properties
        created, modified = core.created, core.modified
        return {
            "title": _one_line(core.title or ""),
            "author": _one_line(core.author or ""),
            "created": created.isoformat() if created else None,
            "modified": modified.isoformat() if modified else None,
        }
    except Exception:  # no core properties, or damaged ones: the deck is still read
        return {}


# -- ODP -----------------------------------------------------------------------------------------

_CLASS = PRESENTATION + "class"
_NOT_BODY = frozenset({"title", "header", "footer", "date-time", "page-number"})


class OdpExtractor(Extractor):
    kind = "odp"

    def extract(self, data: bytes, path: PurePath) -> Extracted:
        archive = open_package(data, self.settings.max_expanded_bytes)
        content, body = read_content(archive, "presentation")
        hidden_styles = _hidden_page_styles(automatic_styles(content))
        meta = read_meta(archive)
        builder = self.builder(data)
        pages = list(body.iterchildren(DRAW + "page"))
        first_title: str | None = None
        for number, page in enumerate(pages, 1):
            read = _read_page(page, number, hidden_styles)
            first_title = first_title if number > 1 else read.title
            _add_slide(builder, read)
        meta = replace(meta, title=deck_title(meta.title))
        metadata = meta.as_metadata()
        metadata["slides"] = str(len(pages))
        title = meta.title or first_title
        return builder.build(title=title, page_count=len(pages), metadata=metadata)


def _read_page(page: etree._Element, number: int, hidden_styles: frozenset[str]) -> _Slide:
    shapes = [child for child in page.iterchildren() if isinstance(child.tag, str)]
    titles = [shape for shape in shapes if shape.get(_CLASS) == "title"]
    title = (
        _one_line(" ".join(map(paragraph_text, paragraphs_within(titles[0])))) if titles else None
    )
    if title is None:
        name = " ".join((page.get(DRAW + "name") or "").split())
        title = None if not name or _AUTOMATIC_PAGE_NAME.match(name) else name
    read = _Slide(number, title, hidden=page.get(DRAW + "style-name") in hidden_styles)
    body = Blocks(read.body, page=number, headings=False, sort_shapes=True)
    body.shapes([shape for shape in shapes if shape.get(_CLASS) not in _NOT_BODY])
    notes = Blocks(read.notes, page=number, headings=False, sort_shapes=True)
    for page_notes in page.iterchildren(PRESENTATION + "notes"):
        notes.shapes(list(page_notes.iterchildren()))
    return read


def _hidden_page_styles(styles: dict[str, etree._Element]) -> frozenset[str]:
    """The drawing-page styles that hide a slide (``presentation:visibility="hidden"``)."""
    hidden = set()
    for name, style in styles.items():
        properties = style.find(STYLE + "drawing-page-properties")
        if properties is not None and properties.get(PRESENTATION + "visibility") == "hidden":
            hidden.add(name)
    return frozenset(hidden)
