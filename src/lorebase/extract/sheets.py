"""Spreadsheets and delimited tables: Excel workbooks (.xlsx, .xlsm), OpenDocument
spreadsheets (.ods), CSV and TSV.

Each sheet is a section: a level-1 heading with its name (``Q3``; a hidden one says so:
``Q3 (hidden sheet)``), then its rows as tables, one row per line, cells joined by
:data:`~lorebase.types.TABLE_CELL_SEPARATOR` and trailing empty cells dropped. A table is a
run of consecutive non-empty rows whose ``line`` is the row number of its first row, so a
chunk's first line is the row it starts at (``budget.xlsx › Q3 (rows 12–40)``); an empty row
ends a run, so a gap of a thousand rows costs nothing (and a gap of over 64 empty cells in a
row is one cell, ``…``). Every table of a sheet carries the sheet's header row (its first
non-empty row), which the first table begins with. Cell comments follow their sheet's
tables, one paragraph each (``Comment on B3: …``), at their row. Chart sheets hold no cells
and are left out; a sheet without cells gets no heading, but every sheet is named (and
marked) in the metadata's ``sheets``.

A CSV file is one table without a heading: decoded like any text file
(:func:`~lorebase.extract.encoding.decode`), its delimiter sniffed (comma, semicolon, tab or
pipe; a ``.tsv`` is tab-separated), quoted fields kept whole, ragged rows kept as they are. A
row's ``line`` is its physical line in the file: a record whose quoted field spans lines
covers those lines, and the next row starts a new table so that lines still add up.

The readers: :mod:`lorebase.extract.sheets_xlsx` (calamine, openpyxl for sheets too spread
out for it) and :mod:`lorebase.extract.sheets_ods` (content.xml streamed with lxml).
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from itertools import islice
from pathlib import PurePath

from lorebase.errors import ExtractionFailed
from lorebase.extract.base import DocumentBuilder, Extractor
from lorebase.extract.containers import check_zip
from lorebase.extract.encoding import decode
from lorebase.extract.sheets_cells import (
    Comment,
    Row,
    Sheet,
    SheetState,
    TextBudget,
    clean_cell,
    column_name,
)
from lorebase.extract.sheets_ods import open_spreadsheet
from lorebase.extract.sheets_xlsx import open_workbook, refuse_ole
from lorebase.settings import ExtractSettings
from lorebase.types import (
    TABLE_CELL_SEPARATOR,
    ElementKind,
    Extracted,
    FailureReason,
    MetadataValue,
)

HIDDEN_MARKS: dict[SheetState, str] = {"hidden": "hidden sheet", "veryHidden": "very hidden sheet"}
"""What a hidden sheet's heading adds after its name: ``Budget (hidden sheet)``."""

MAX_EMPTY_RUN = 64
GAP = "…"
"""Inside a row, a run of more than ``MAX_EMPTY_RUN`` empty cells is written as one cell
``GAP``."""

CSV_DELIMITERS = (",", ";", "\t", "|")
"""The delimiters a .csv file is sniffed for, in order of preference on a tie."""
_FIELD_OVER_LIMIT = "field larger than field limit"
_UNNAMED = "Sheet"
SNIFF_CHARS = 64 * 1024
SNIFF_ROWS = 50
"""The delimiter is judged on the first rows (at most this many characters of them)."""


class XlsxExtractor(Extractor):
    kind = "xlsx"

    def extract(self, data: bytes, path: PurePath) -> Extracted:
        refuse_ole(data)
        archive = check_zip(data, self.settings.max_expanded_bytes)
        workbook = open_workbook(data, archive, self.settings)
        return _build_book(self.builder(data), workbook.sheets, workbook.properties, self.settings)


class OdsExtractor(Extractor):
    kind = "ods"

    def extract(self, data: bytes, path: PurePath) -> Extracted:
        book = open_spreadsheet(data, self.settings.max_expanded_bytes)
        return _build_book(self.builder(data), book.sheets, book.properties, self.settings)


class CsvExtractor(Extractor):
    kind = "csv"

    def extract(self, data: bytes, path: PurePath) -> Extracted:
        decoded = decode(data)
        text = decoded.text
        delimiter = "\t" if path.suffix.lower() == ".tsv" else sniff_delimiter(text)
        builder = self.builder(data)
        budget = TextBudget(self.settings.max_text_chars)
        with _field_limit(self.settings.max_text_chars):
            try:
                _add_rows(builder, csv_rows(text, delimiter), budget)
            except csv.Error as exc:  # the message may quote the file: only its kind is kept
                too_long = _FIELD_OVER_LIMIT in str(exc)
                reason = FailureReason.TOO_LARGE if too_long else FailureReason.CORRUPT
                raise ExtractionFailed(reason, "a record the CSV reader refused") from None
        return builder.build(encoding=decoded.encoding)


def _build_book(
    builder: DocumentBuilder,
    sheets: Iterable[Sheet],
    properties: dict[str, str],
    settings: ExtractSettings,
) -> Extracted:
    """Every sheet in order; ``empty`` when no sheet holds a cell or a comment."""
    budget = TextBudget(settings.max_text_chars)
    labels = []
    for sheet in sheets:
        label = sheet_label(sheet.name, sheet.state)
        labels.append(label)
        heading: str | None = label or _UNNAMED
        if _add_rows(builder, sheet.rows, budget, heading):
            heading = None
        _add_comments(builder, sheet.comments, budget, heading)
    if not builder.elements:
        raise ExtractionFailed(FailureReason.EMPTY, "no sheet holds a cell")
    metadata: dict[str, MetadataValue] = dict(properties)
    if labels:
        metadata["sheets"] = tuple(labels)
    return builder.build(title=properties.get("title"), metadata=metadata)


def sheet_label(name: str, state: SheetState) -> str:
    """A sheet's heading: its name, and the mark of a hidden one. Pure."""
    name = clean_cell(name)
    mark = HIDDEN_MARKS.get(state)
    return f"{name} ({mark})" if mark else name


def _add_rows(
    builder: DocumentBuilder, rows: Iterable[Row], budget: TextBudget, heading: str | None = None
) -> bool:
    """Rows as tables of consecutive rows under the first row (the header), after
    ``heading`` when there is one; whether there was any."""
    header: str | None = None
    run: list[str] = []
    first = last = 0
    for number, cells in rows:
        end = len(cells)
        while end and not cells[end - 1]:
            end -= 1
        if not end:
            continue
        text = _row_text(cells, end)
        budget.spend(len(text) + 1)
        if header is None:
            header = text.strip()
            if heading is not None:
                builder.add(ElementKind.HEADING, heading, level=1)
        if run and number != last + 1:
            builder.add(ElementKind.TABLE, "\n".join(run), line=first, header=header)
            run = []
        if not run:
            first = number
        run.append(text)
        last = number
    if run:
        builder.add(ElementKind.TABLE, "\n".join(run), line=first, header=header)
    return header is not None


def _row_text(cells: list[str], end: int) -> str:
    """The first ``end`` cells joined; a run of more than :data:`MAX_EMPTY_RUN` empty cells
    is one cell :data:`GAP` (a stray value in column XFD adds one cell, not 16,000)."""
    if end <= MAX_EMPTY_RUN:
        return TABLE_CELL_SEPARATOR.join(cells[:end])
    kept: list[str] = []
    empty = 0
    for cell in cells[:end]:
        if not cell:
            empty += 1
            continue
        kept.extend([GAP] if empty > MAX_EMPTY_RUN else [""] * empty)
        empty = 0
        kept.append(cell)
    return TABLE_CELL_SEPARATOR.join(kept)


def _add_comments(
    builder: DocumentBuilder, comments: list[Comment], budget: TextBudget, heading: str | None
) -> None:
    """One paragraph per comment, at its row; ``heading`` first when the sheet has none yet."""
    for comment in comments:
        if heading is not None:
            builder.add(ElementKind.HEADING, heading, level=1)
            heading = None
        text = f"Comment on {column_name(comment.column)}{comment.row}: {comment.text}"
        budget.spend(len(text))
        builder.add(ElementKind.PARAGRAPH, text, line=comment.row)


# -- CSV ----------------------------------------------------------------------------------------


def csv_rows(text: str, delimiter: str) -> Iterator[Row]:
    """Records with the physical line each starts on (blank lines are empty records)."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    line = 1
    for record in reader:
        yield line, [clean_cell(field) for field in record]
        line = reader.line_num + 1


def sniff_delimiter(text: str) -> str:
    """The candidate that splits the first rows most alike: most rows with the most common
    field count (of at least two), then the most fields; a comma when none splits. Pure."""
    sample = text[:SNIFF_CHARS]
    cut = len(text) > SNIFF_CHARS
    best, best_score = CSV_DELIMITERS[0], (0, 0)
    for delimiter in CSV_DELIMITERS:
        reader = csv.reader(io.StringIO(sample, newline=""), delimiter=delimiter)
        try:
            widths = [len(record) for record in islice(reader, SNIFF_ROWS + 1) if record]
        except csv.Error:
            continue
        if cut and len(widths) > 1:
            widths.pop()  # the last record may be cut short by the sample
        if not widths:
            continue
        width, agreeing = Counter(widths[:SNIFF_ROWS]).most_common(1)[0]
        if width > 1 and (agreeing, width) > best_score:
            best, best_score = delimiter, (agreeing, width)
    return best


@contextmanager
def _field_limit(chars: int) -> Iterator[None]:
    """Let one CSV field be as long as a document may be (the csv module's own limit is
    128 KB): a longer one is ``too_large``, said by the reader's error."""
    previous = csv.field_size_limit(max(chars, 1))
    try:
        yield
    finally:
        csv.field_size_limit(previous)
