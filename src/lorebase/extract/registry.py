"""Which extractor reads which file (the one table of formats is
:mod:`lorebase.formats`), and the one place that turns any failure into a reason.

Extractors are imported lazily: reading Markdown never imports the PDF library.
"""

from __future__ import annotations

from pathlib import Path, PurePath

from lorebase.errors import ExtractionFailed
from lorebase.extract.base import Extractor
from lorebase.formats import format_for, is_supported
from lorebase.settings import ExtractSettings
from lorebase.types import Extracted, FailureReason


def extractor_for(path: PurePath, settings: ExtractSettings) -> Extractor:
    """The extractor for ``path``; raises ``ExtractionFailed(unsupported_format)``."""
    found = format_for(path)
    if found is None:
        raise ExtractionFailed(FailureReason.UNSUPPORTED_FORMAT)
    return found.load()(settings)


def extract_bytes(data: bytes, path: PurePath, settings: ExtractSettings) -> Extracted:
    """Extract one file's bytes. Every failure comes out as :class:`ExtractionFailed`."""
    extractor = extractor_for(path, settings)
    if len(data) > settings.max_file_bytes:
        raise ExtractionFailed(FailureReason.TOO_LARGE)
    if not data.strip():
        raise ExtractionFailed(FailureReason.EMPTY)
    try:
        return extractor.extract(data, path)
    except ExtractionFailed:
        raise
    except MemoryError:
        raise ExtractionFailed(FailureReason.TOO_LARGE, "out of memory while reading") from None
    except Exception as exc:  # a parser choking on bad input: the file is damaged
        # The library's message may quote the document, so only its class name is kept.
        raise ExtractionFailed(FailureReason.CORRUPT, type(exc).__name__) from None


def extract_file(path: Path, settings: ExtractSettings) -> Extracted:
    """Read and extract one file in this process (see ``lorebase.extract.sandbox`` for the
    bounded way); the size limit is checked before any byte is read."""
    return extract_bytes(read_file(path, settings), path, settings)


def read_file(path: Path, settings: ExtractSettings) -> bytes:
    """The bytes of a supported file within the size limit; raises ``ExtractionFailed``
    (``unsupported_format``, ``too_large``, ``unreadable``) without reading otherwise."""
    if not is_supported(path):  # unsupported files are never opened
        raise ExtractionFailed(FailureReason.UNSUPPORTED_FORMAT)
    try:
        size = path.stat().st_size
        if size > settings.max_file_bytes:
            raise ExtractionFailed(FailureReason.TOO_LARGE)
        return path.read_bytes()
    except OSError as exc:
        raise ExtractionFailed(FailureReason.UNREADABLE, type(exc).__name__) from None
