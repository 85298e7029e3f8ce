"""OpenDocument spreadsheets (.ods): ``content.xml`` streamed row by row with lxml.

Read directly rather than with odfpy (which builds the whole document as Python objects) or
calamine (which expands repeated rows and columns into a dense grid, and has no comments): a
streamed row is cleared once read, so memory holds one row, and a row or cell repeated a
million times (how LibreOffice writes the empty rest of a sheet) costs one step.

Kept: each cell's value (numbers from ``office:value``, as Excel's are; dates from
``office:date-value`` as ISO dates; durations; booleans; ``office:string-value``; otherwise
the cell's paragraphs, ``text:s`` giving its spaces; a formula gives its cached result, never
its text), cell annotations (``office:annotation``, read after the sheet's rows), sheets
hidden by their table style (``table:display="false"``), and title, author and dates from
``meta.xml``. The package, its metadata and paragraph text (ODF's
white-space rule) are read as for every ODF document (:mod:`lorebase.extract.odf`); a package
whose manifest declares encryption is ``encrypted``.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from lxml import etree

from lorebase.errors import ExtractionFailed
from lorebase.extract.odf import (
    ANNOTATION,
    OFFICE,
    STYLE,
    TABLE,
    TABLE_TABLE,
    H,
    P,
    open_package,
    paragraph_text,
    read_meta,
)
from lorebase.extract.sheets_cells import (
    MAX_COLUMNS,
    MAX_ROWS,
    Comment,
    Row,
    Sheet,
    clean_cell,
    duration_text,
    number_text,
)
from lorebase.types import FailureReason

_TABLE, _ROW = TABLE_TABLE, TABLE + "table-row"
_CELLS = (TABLE + "table-cell", TABLE + "covered-table-cell")
_NAME, _STYLE_NAME = TABLE + "name", TABLE + "style-name"
_ROWS_REPEATED = TABLE + "number-rows-repeated"
_COLUMNS_REPEATED = TABLE + "number-columns-repeated"
_DISPLAY = TABLE + "display"
_VALUE_TYPE, _VALUE = OFFICE + "value-type", OFFICE + "value"
_DATE_VALUE, _TIME_VALUE = OFFICE + "date-value", OFFICE + "time-value"
_BOOLEAN_VALUE, _STRING_VALUE = OFFICE + "boolean-value", OFFICE + "string-value"
_PARAGRAPHS = (P, H)
_STYLE, _STYLE_FAMILY, _STYLE_KEY = STYLE + "style", STYLE + "family", STYLE + "name"
_TABLE_PROPERTIES = STYLE + "table-properties"

_NUMBERS = frozenset({"float", "percentage", "currency"})
_BOOLEANS = {"true": "TRUE", "false": "FALSE"}
_XML_SPACE = re.compile(r"[ \t\n\r]+")
_DURATION = re.compile(r"^(-)?P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$")
_MIDNIGHT = "T00:00:00"


@dataclass(slots=True)
class OdsBook:
    """An opened spreadsheet: its sheets (streamed, one after the other) and properties."""

    sheets: Iterator[Sheet]
    properties: dict[str, str]


def open_spreadsheet(data: bytes, limit: int) -> OdsBook:
    """The sheets of a package (zip-bomb guard at ``limit`` bytes expanded)."""
    archive = open_package(data, limit)
    if "content.xml" not in archive.NameToInfo:
        raise ExtractionFailed(FailureReason.CORRUPT, "no content.xml in the package")
    meta = read_meta(archive)
    fields = ("title", meta.title), ("author", meta.author), ("created", meta.created)
    properties = {key: value for key, value in (*fields, ("modified", meta.modified)) if value}
    return OdsBook(_sheets(archive), properties)


def _sheets(archive: zipfile.ZipFile) -> Iterator[Sheet]:
    with archive.open("content.xml") as stream:
        events: Iterator[tuple[str, Any]] = etree.iterparse(
            stream,
            events=("start", "end"),
            tag=(_TABLE, _ROW, _STYLE),  # lxml skips the events of every other element
            resolve_entities=False,
            no_network=True,
            huge_tree=True,
        )
        hidden_styles: set[str] = set()
        for event, element in events:
            if event == "end" and element.tag == _STYLE:
                if _hides_table(element):
                    hidden_styles.add(element.get(_STYLE_KEY, ""))
                element.clear()
            elif event == "start" and element.tag == _TABLE:
                hidden = element.get(_STYLE_NAME) in hidden_styles
                sheet = Sheet(element.get(_NAME, ""), "hidden" if hidden else "visible", iter(()))
                sheet.rows = _rows(events, sheet.comments)
                yield sheet
                for _ in sheet.rows:  # rows left unread still belong to this sheet
                    pass
                element.clear()


def _hides_table(style: Any) -> bool:
    if style.get(_STYLE_FAMILY) != "table":
        return False
    properties = style.find(_TABLE_PROPERTIES)
    return properties is not None and properties.get(_DISPLAY) == "false"


def _rows(events: Iterator[tuple[str, Any]], comments: list[Comment]) -> Iterator[Row]:
    """The non-empty rows of the table just opened, until its end; a table nested in a
    cell is part of that cell (and left out of its text)."""
    number = 0  # rows read so far
    depth = 0
    for event, element in events:
        if element.tag == _TABLE:
            if event == "start":
                depth += 1
                continue
            if depth == 0:
                return
            depth -= 1
        elif event == "end" and element.tag == _ROW and depth == 0:
            repeat = _repeat(element.get(_ROWS_REPEATED))
            if number < MAX_ROWS:
                cells = _cells(element, number + 1, comments)
                if cells:
                    for offset in range(min(repeat, MAX_ROWS - number)):
                        yield number + 1 + offset, cells
            number += repeat
            element.clear()
            parent = element.getparent()
            while parent is not None and element.getprevious() is not None:
                del parent[0]


def _cells(row: Any, number: int, comments: list[Comment]) -> list[str]:
    """A row's cell texts up to its last non-empty cell; its annotations join ``comments``."""
    cells: list[str] = []
    column = 0
    for cell in row.iterchildren(*_CELLS):
        repeat = _repeat(cell.get(_COLUMNS_REPEATED))
        text = _value(cell) if len(cell) or cell.get(_VALUE_TYPE) else ""
        if text:
            cells.extend([""] * (column - len(cells)))
            cells.extend([text] * min(repeat, MAX_COLUMNS - column))
        if len(cell) > 1 or (len(cell) and cell[0].tag == ANNOTATION):
            for annotation in cell.iterchildren(ANNOTATION):
                note = clean_cell(" ".join(map(_text, annotation.iterchildren(*_PARAGRAPHS))))
                if note:
                    comments.append(Comment(number, column, note))
        column += repeat
        if column >= MAX_COLUMNS:
            break
    return cells


def _repeat(count: str | None) -> int:
    """A ``number-…-repeated`` count: 1 when absent or not a positive number."""
    return max(int(count), 1) if count and count.isdigit() else 1


def _value(cell: Any) -> str:
    """A cell's text: its typed value where it has one, else its paragraphs."""
    value_type = cell.get(_VALUE_TYPE)
    value = ""
    if value_type in _NUMBERS:
        value = _number(cell.get(_VALUE))
    elif value_type == "date":
        value = _date(cell.get(_DATE_VALUE))
    elif value_type == "time":
        value = _duration(cell.get(_TIME_VALUE))
    elif value_type == "boolean":
        value = _BOOLEANS.get(cell.get(_BOOLEAN_VALUE, ""), "")
    elif value_type == "string":  # a formula's text result may be here rather than in text:p
        value = clean_cell(cell.get(_STRING_VALUE) or "")
    if value:
        return value
    return clean_cell(" ".join(map(_text, cell.iterchildren(*_PARAGRAPHS))))


def _number(raw: str | None) -> str:
    try:
        return number_text(float(raw)) if raw else ""
    except ValueError:
        return ""


def _date(raw: str | None) -> str:
    """``2024-03-01`` (a midnight time dropped) or ``2024-03-01 14:30:00``."""
    if not raw:
        return ""
    raw = raw.removesuffix(_MIDNIGHT)
    return raw.replace("T", " ", 1)


def _duration(raw: str | None) -> str:
    """``PT36H00M00S`` -> ``36:00:00``."""
    match = _DURATION.match(raw or "")
    if match is None or not any(match.groups()[1:]):
        return ""
    sign, days, hours, minutes, seconds = match.groups()
    total = int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes or 0) * 60
    total_seconds = total + float(seconds or 0)
    return duration_text(-total_seconds if sign else total_seconds)


def _text(paragraph: Any) -> str:
    """A paragraph's text as ODF shows it (``text:s`` as its spaces; annotations out)."""
    if not len(paragraph):  # text alone, the common case
        return _XML_SPACE.sub(" ", paragraph.text or "")
    return paragraph_text(paragraph)
