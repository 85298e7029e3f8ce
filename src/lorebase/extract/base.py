"""The ``Extractor`` seam and what every extractor shares.

An extractor writes one method, ``extract(data, path) -> Extracted``. It collects elements in
reading order with a :class:`DocumentBuilder`, which assigns character offsets, enforces the
text-size limit and refuses documents without text.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from pathlib import PurePath
from typing import ClassVar

from lorebase.errors import ExtractionFailed
from lorebase.settings import ExtractSettings
from lorebase.types import (
    ELEMENT_SEPARATOR,
    Box,
    Element,
    ElementKind,
    Extracted,
    FailureReason,
    MetadataValue,
    Part,
)


class Extractor(ABC):
    """Turns the bytes of one file into an :class:`Extracted` document.

    Raise :class:`ExtractionFailed` with a fixed reason for files that yield no text; any other
    exception is reported by the caller as ``corrupt``.
    """

    kind: ClassVar[str]  # the kind of its line in lorebase.formats.FORMATS

    def __init__(self, settings: ExtractSettings) -> None:
        self.settings = settings

    @abstractmethod
    def extract(self, data: bytes, path: PurePath) -> Extracted: ...

    def builder(self, data: bytes) -> DocumentBuilder:
        return DocumentBuilder(self.kind, data, max_chars=self.settings.max_text_chars)


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class DocumentBuilder:
    """Collects elements in reading order and lays them out in the canonical text."""

    def __init__(self, kind: str, data: bytes, *, max_chars: int) -> None:
        self.kind = kind
        self._hash = content_hash(data)
        self._max_chars = max_chars
        self._elements: list[Element] = []
        self._parts: list[str] = []
        self._length = 0
        self._has_text = False

    @property
    def elements(self) -> list[Element]:
        return self._elements

    def add(
        self,
        kind: ElementKind,
        text: str,
        *,
        level: int = 0,
        line: int | None = None,
        page: int | None = None,
        language: str | None = None,
        symbol: str | None = None,
        boxes: tuple[Box, ...] = (),
        header: str | None = None,
    ) -> Element | None:
        """Append one element; returns it, or ``None`` when it holds no text.

        Code keeps its indentation (only blank lines around it go); other text is stripped.
        """
        text = normalize_text(text, keep_indent=kind is ElementKind.CODE)
        if kind is ElementKind.PAGE_BREAK:
            text = ""
        elif not text:
            return None
        if text:
            if self._parts:
                self._parts.append(ELEMENT_SEPARATOR)
                self._length += len(ELEMENT_SEPARATOR)
            self._has_text = True
        start = self._length
        self._parts.append(text)
        self._length += len(text)
        if self._length > self._max_chars:
            raise ExtractionFailed(FailureReason.TOO_LARGE, "extracted text over the limit")
        element = Element(
            kind=kind,
            text=text,
            start=start,
            end=self._length,
            level=level,
            line=line,
            page=page,
            language=language,
            symbol=symbol,
            boxes=boxes,
            header=header if kind is ElementKind.TABLE and header else None,
        )
        self._elements.append(element)
        return element

    def build(
        self,
        *,
        title: str | None = None,
        encoding: str | None = None,
        language: str | None = None,
        page_count: int | None = None,
        warnings: tuple[str, ...] = (),
        metadata: dict[str, MetadataValue] | None = None,
        parts: tuple[Part, ...] = (),
    ) -> Extracted:
        """The document; ``empty`` when it holds no text (a container whose ``parts`` hold
        text is not empty: its parts are documents of their own)."""
        if not self._has_text and not any(part.extracted for part in parts):
            raise ExtractionFailed(FailureReason.EMPTY)
        elements = list(self._elements)
        while elements and elements[-1].kind is ElementKind.PAGE_BREAK:
            elements.pop()
        title = " ".join(title.split()) if title else None
        return Extracted(
            kind=self.kind,
            title=title or None,
            elements=tuple(elements),
            text="".join(self._parts),
            content_hash=self._hash,
            encoding=encoding,
            language=language,
            page_count=page_count,
            warnings=warnings,
            metadata=clean_metadata(metadata or {}),
            parts=parts,
        )


MAX_METADATA_KEYS = 64
MAX_METADATA_CHARS = 1000
"""Bounds on what metadata a document keeps: at most this many keys, each value (or item)
cut to this many characters, at most this many items in a list value."""


def clean_metadata(metadata: dict[str, MetadataValue]) -> dict[str, MetadataValue]:
    """Metadata as stored: keys lower-cased, values single-line and bounded, empty values
    dropped. Pure."""
    cleaned: dict[str, MetadataValue] = {}
    for key, value in metadata.items():
        name = " ".join(key.split()).lower()[:64]
        if isinstance(value, str):
            single = _one_line(value)
            if name and single:
                cleaned[name] = single
        else:
            items = tuple(item for item in map(_one_line, value[:MAX_METADATA_KEYS]) if item)
            if name and items:
                cleaned[name] = items
        if len(cleaned) >= MAX_METADATA_KEYS:
            break
    return cleaned


def _one_line(value: str) -> str:
    return " ".join(value.translate(_CONTROL).split())[:MAX_METADATA_CHARS]


_CONTROL = {c: None for c in range(32) if c not in (9, 10)} | {0x7F: None}


def normalize_text(text: str, *, keep_indent: bool = False) -> str:
    """Unify line ends, drop control characters and trailing spaces; strip the ends."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = text.replace("\u00a0", " ").translate(_CONTROL)
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    text = "\n".join(lines)
    return text if keep_indent else text.strip()
