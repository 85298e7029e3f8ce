"""The text family: plain text, reStructuredText, AsciiDoc, Org, LaTeX, logs, CSV/TSV, JSON.

Prose formats are read line by line: blank lines end paragraphs, and each markup's section
titles become headings (see :mod:`lorebase.extract.text_markup`). Tabular and data formats are
read with the standard library's parsers. Every element keeps its first source line.
"""

from __future__ import annotations

import csv
import io
from pathlib import PurePath

from lorebase.extract.base import DocumentBuilder, Extractor
from lorebase.extract.encoding import decode
from lorebase.extract.text_markup import Block, dialect_for
from lorebase.types import DocumentKind, ElementKind, Extracted

TABLE_CELL_SEPARATOR = " | "
# CSV files are cut into tables of this many rows (each repeats the header row), so that
# every piece a chunker makes of it still says what its columns mean.
CSV_ROWS_PER_TABLE = 50


class TextExtractor(Extractor):
    kind = DocumentKind.TEXT

    def extract(self, data: bytes, path: PurePath) -> Extracted:
        suffix = path.suffix.lower()
        decoded = decode(data, markup=suffix == ".xml")
        builder = self.builder(data)
        if suffix in (".csv", ".tsv"):
            _add_delimited(builder, decoded.text, "\t" if suffix == ".tsv" else ",")
            return builder.build(encoding=decoded.encoding)
        if suffix == ".jsonl":
            _add_lines(builder, decoded.text)
            return builder.build(encoding=decoded.encoding)
        if suffix == ".json":
            builder.add(ElementKind.CODE, decoded.text, line=1, language="json")
            return builder.build(encoding=decoded.encoding)
        title = _add_blocks(builder, dialect_for(suffix).blocks(decoded.text.split("\n")))
        return builder.build(title=title, encoding=decoded.encoding)


def _add_blocks(builder: DocumentBuilder, blocks: list[Block]) -> str | None:
    """Add parsed blocks; the title is a declared one, else the first top heading."""
    title: str | None = None
    first_heading: str | None = None
    for block in blocks:
        if block.kind is None:  # a declared document title
            title = title or block.text
            continue
        element = builder.add(
            block.kind, block.text, level=block.level, line=block.line, language=block.language
        )
        if element is not None and block.kind is ElementKind.HEADING and first_heading is None:
            first_heading = element.text
    return title or first_heading


def _add_lines(builder: DocumentBuilder, text: str) -> None:
    """JSON Lines: one record, one paragraph."""
    for number, line in enumerate(text.split("\n"), start=1):
        builder.add(ElementKind.PARAGRAPH, line, line=number)


def _add_delimited(builder: DocumentBuilder, text: str, delimiter: str) -> None:
    """CSV/TSV as tables of at most ``CSV_ROWS_PER_TABLE`` rows under the header row."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    header: str | None = None
    rows: list[str] = []
    first_line = 1
    line = 1
    for record in reader:
        row = TABLE_CELL_SEPARATOR.join(cell.strip() for cell in record)
        if not row.strip(" |"):
            line = reader.line_num + 1
            continue
        if header is None:
            header, first_line = row, line
        else:
            if not rows:
                first_line = line
            rows.append(row)
            if len(rows) == CSV_ROWS_PER_TABLE:
                builder.add(ElementKind.TABLE, "\n".join([header, *rows]), line=first_line)
                rows = []
        line = reader.line_num + 1
    if rows or (header is not None and not builder.elements):
        builder.add(ElementKind.TABLE, "\n".join([header or "", *rows]), line=first_line)
