"""The text family: plain text, reStructuredText, AsciiDoc, Org, LaTeX, logs, JSON, XML.

Prose formats are read line by line: blank lines end paragraphs, and each markup's section
titles become headings (see :mod:`lorebase.extract.text_markup`). JSON is one code block, JSON
Lines one paragraph per record. Every element keeps its first source line. (CSV and TSV are
tables: :mod:`lorebase.extract.sheets`.)
"""

from __future__ import annotations

from pathlib import PurePath

from lorebase.extract.base import DocumentBuilder, Extractor
from lorebase.extract.encoding import decode
from lorebase.extract.text_markup import Block, dialect_for
from lorebase.types import DocumentKind, ElementKind, Extracted


class TextExtractor(Extractor):
    kind = DocumentKind.TEXT

    def extract(self, data: bytes, path: PurePath) -> Extracted:
        suffix = path.suffix.lower()
        decoded = decode(data, markup=suffix == ".xml")
        builder = self.builder(data)
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
