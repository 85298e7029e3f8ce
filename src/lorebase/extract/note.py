"""Notes: a short text a user writes straight into a base (see :mod:`lorebase.service.notes`).

A note is stored as UTF-8 bytes: its title on the first line, then its text. The title
becomes the document's title (searched with it); the text is read as plain text, paragraph by
paragraph, and never as headings, so a note stays one section — one chunk unless it is longer
than a chunk may be (see :func:`lorebase.chunk.note_chunking`).
"""

from __future__ import annotations

from pathlib import PurePath

from lorebase.extract.base import Extractor
from lorebase.extract.encoding import decode
from lorebase.types import ElementKind, Extracted

NOTE_KIND = "note"
NOTE_EXTENSION = ".note"


def note_bytes(title: str, text: str) -> bytes:
    """A note as it is stored: the title's line, then the text."""
    return f"{title}\n{text}".encode()


def note_parts(data: bytes) -> tuple[str, str]:
    """A stored note's (title, text)."""
    title, _, text = data.decode("utf-8", errors="replace").partition("\n")
    return title, text


class NoteExtractor(Extractor):
    kind = NOTE_KIND

    def extract(self, data: bytes, path: PurePath) -> Extracted:
        decoded = decode(data)
        title, _, text = decoded.text.partition("\n")
        builder = self.builder(data)
        paragraph: list[str] = []
        first_line = 1
        for number, line in enumerate(text.split("\n"), start=1):
            if line.strip():
                if not paragraph:
                    first_line = number
                paragraph.append(line)
                continue
            if paragraph:
                builder.add(ElementKind.PARAGRAPH, "\n".join(paragraph), line=first_line)
                paragraph = []
        if paragraph:
            builder.add(ElementKind.PARAGRAPH, "\n".join(paragraph), line=first_line)
        return builder.build(title=title.strip() or None, encoding=decoded.encoding)
