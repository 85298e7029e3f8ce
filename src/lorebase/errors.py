"""Errors lorebase raises on purpose. Every message says what to do next and never quotes
document, chunk or query text.

::

    LorebaseError
    ├── NotFound          a knowledge base, document or chunk that does not exist (or is not yours)
    ├── Conflict          the request clashes with existing state
    ├── Unsupported       a format or feature lorebase does not handle
    ├── Unavailable       a dependency (model, server) cannot be reached or is not installed
    └── InvalidInput      bad arguments or settings
        └── ExtractionFailed   a file yields no text; carries a fixed FailureReason
"""

from __future__ import annotations

from lorebase.types import FailureReason


class LorebaseError(Exception):
    """Base of every error lorebase raises on purpose."""


class NotFound(LorebaseError):
    pass


class Conflict(LorebaseError):
    pass


class Unsupported(LorebaseError):
    pass


class Unavailable(LorebaseError):
    pass


class InvalidInput(LorebaseError):
    pass


class Unauthorized(LorebaseError):
    """No valid API key."""


class Forbidden(LorebaseError):
    """A valid key without the right to do this (only where seeing is allowed)."""


class Overloaded(Unavailable):
    """The ingestion queue is full; retry later."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


_REASON_MESSAGES: dict[FailureReason, str] = {
    FailureReason.UNSUPPORTED_FORMAT: "this file type is not supported; it was left out",
    FailureReason.TOO_LARGE: "the file (or what it expands to) is over the size limit; "
    "raise the limit in the settings to read it",
    FailureReason.EMPTY: "the file is empty or holds only whitespace",
    FailureReason.ENCRYPTED: "the file is password-protected; remove the password to index it",
    FailureReason.NO_TEXT_LAYER: "the PDF has no text layer (a scan?); OCR it first, "
    "for example with ocrmypdf, then add it again",
    FailureReason.CORRUPT: "the file is damaged and no text could be recovered",
    FailureReason.UNREADABLE: "the file could not be read from disk (permissions or I/O error)",
    FailureReason.TIMEOUT: "reading the file took longer than the time limit; "
    "raise the limit in the settings to read it",
}


class ExtractionFailed(InvalidInput):
    """A file yields no text. ``reason`` is a fixed code; the message is fixed per reason,
    optionally with a content-free detail (a library's exception class name, a size)."""

    def __init__(self, reason: FailureReason, detail: str | None = None) -> None:
        self.reason = reason
        self.detail = detail
        message = f"{reason.value}: {_REASON_MESSAGES[reason]}"
        if detail:
            message += f" ({detail})"
        super().__init__(message)
