"""Errors lorebase raises on purpose. Every message says what to do next and never quotes
document, chunk or query text.

::

    LorebaseError                 anything else lorebase raises on purpose
    ├── InvalidInput              bad arguments or settings; the caller can fix them
    │   ├── ExtractionFailed      a file yields no text; carries a fixed FailureReason
    │   ├── ContentBlocked        content would leave the machine without the operator's opt-in
    │   ├── TooLarge              more than a limit allows (HTTP 413); the message names it
    │   └── ToolArgumentError     an agent tool called with arguments its schema refuses
    ├── NotFound                  a knowledge base, document or chunk that does not exist
    │   │                         (or is not yours)
    │   ├── SourceRemoved         a document of a folder or file its base stopped following
    │   ├── ToolNotFound          a base the agent tools may not see in this conversation
    │   └── UnknownTool           an agent tool that does not exist
    ├── Conflict                  the request clashes with existing state
    ├── Unsupported               a format or feature lorebase does not handle
    ├── Unavailable               a dependency (model, server) cannot be reached or is not
    │   │                         installed; retrying later may help
    │   ├── Overloaded            the ingestion queue is full; carries retry_after seconds
    │   └── ToolUnavailable       an agent tool could not produce its answer this time
    ├── Unauthorized              no valid API key
    ├── Forbidden                 a valid key without the right to do this
    │   └── MisdirectedHost       a request naming a host this server does not answer to
    └── ServerFault               the server's own data or configuration is at fault, not the
        │                         request: an operator has to act
        ├── WrongKey              data encrypted with another key than the configured one
        ├── DamagedText           a document's stored text its chunks do not rebuild
        ├── DamagedBlob           a stored file failed authentication or is not a blob file
        ├── DamagedDatabase       the database file cannot be read (corrupt or not a database)
        └── RotationIncomplete    a key rotation left some files under the old key

Each surface maps this tree once, with a table keyed by class and resolved along the MRO (so a
new subclass answers like its parent): HTTP problem responses in
:data:`lorebase.api.problems.PROBLEMS`, CLI exit codes in
:data:`lorebase.cli.common.EXIT_CODES`, agent tool error codes in
:data:`lorebase.agent.tools.TOOL_ERROR_CODES`. :func:`resolve` does the walking.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

from lorebase.formats import supported_labels
from lorebase.types import FailureReason

V = TypeVar("V")


class LorebaseError(Exception):
    """Base of every error lorebase raises on purpose."""


def resolve(table: Mapping[type[LorebaseError], V], error: LorebaseError) -> V:
    """The entry for ``error``'s class or its nearest mapped ancestor (the tables map
    :class:`LorebaseError` itself, so every error finds one)."""
    for cls in type(error).__mro__:
        if cls in table:
            return table[cls]
    raise KeyError(type(error).__name__)  # pragma: no cover - the tables map the root


class InvalidInput(LorebaseError):
    """The request is malformed or out of range (HTTP 422, exit code 2); the message says
    what is accepted."""


class TooLarge(InvalidInput):
    """More than a limit allows, such as a note longer than the notes' limit (HTTP 413); the
    message names the limit."""


class NotFound(LorebaseError):
    """No such thing, or one the caller may not see (HTTP 404): the two are told apart to
    nobody."""


class SourceRemoved(NotFound):
    """A document written for a folder or file its base no longer follows (removed while a
    pass read it): the write is refused, so nothing of it stays searchable."""


class Conflict(LorebaseError):
    """The request clashes with what is there (a name taken, a base switched meanwhile;
    HTTP 409)."""


class Unsupported(LorebaseError):
    """Something lorebase does not do, such as a file type it cannot read (HTTP 415)."""


class Unavailable(LorebaseError):
    """A part it needs is missing or does not answer (a model server, an optional package;
    HTTP 503): the message names it and what to do."""


class Unauthorized(LorebaseError):
    """No valid API key."""


class Forbidden(LorebaseError):
    """A valid key without the right to do this (only where seeing is allowed)."""


class MisdirectedHost(Forbidden):
    """A request whose ``Host`` this server does not answer to (DNS rebinding: a page of
    another site reaching a loopback server through a name it controls)."""


class ServerFault(LorebaseError):
    """The server's own data or configuration is at fault, not the request: retrying or
    changing the request will not help; an operator has to act (the message says how)."""


_REASON_MESSAGES: dict[FailureReason, str] = {
    FailureReason.UNSUPPORTED_FORMAT: "lorebase does not read this type of file; it reads "
    "{supported}. Convert the file to one of these, or leave it out with a .lorebaseignore",
    FailureReason.TOO_LARGE: "the file (or what it expands to) is over the size limit; "
    "raise the limit in the settings to read it",
    FailureReason.EMPTY: "the file is empty or holds only whitespace",
    FailureReason.ENCRYPTED: "the file is password-protected; remove the password to index it",
    FailureReason.NO_TEXT_LAYER: "the PDF has no text layer (a scan?) and OCR read no text "
    "in it; without OCR (pip install 'lorebase[ocr]'), OCR it first, for example with "
    "ocrmypdf, then add it again",
    FailureReason.OCR_UNAVAILABLE: "text in images is read by OCR, which is not installed or "
    "turned off here; install it with pip install 'lorebase[ocr]' (and leave ocr on)",
    FailureReason.CORRUPT: "the file is damaged and no text could be recovered",
    FailureReason.UNREADABLE: "the file could not be read from disk (permissions or I/O error)",
    FailureReason.MISSING_ORIGINAL: "the stored original of this upload is missing (an upload "
    "cut short, or a lost file); upload the file again to index it",
    FailureReason.TIMEOUT: "reading the file took longer than the time limit; "
    "raise the limit in the settings to read it",
}


def reason_hint(reason: str) -> str:
    """What to do about a failure reason, as ``extract`` says it; a fixed sentence per code
    (empty for a code that is not a :class:`FailureReason`). Never document text."""
    try:
        return _reason_message(FailureReason(reason))
    except ValueError:
        return ""


def _reason_message(reason: FailureReason) -> str:
    message = _REASON_MESSAGES[reason]
    if reason is FailureReason.UNSUPPORTED_FORMAT:
        message = message.format(supported=supported_labels())
    return message


class ExtractionFailed(InvalidInput):
    """A file yields no text. ``reason`` is a fixed code; the message is fixed per reason,
    optionally with a content-free detail (a library's exception class name, a size)."""

    def __init__(self, reason: FailureReason, detail: str | None = None) -> None:
        self.reason = reason
        self.detail = detail
        message = f"{reason.value}: {_reason_message(reason)}"
        if detail:
            message += f" ({detail})"
        super().__init__(message)


class ContentBlocked(InvalidInput):
    """The gate stopped a request that would have sent knowledge-base content off the
    machine without the operator's opt-in (a setting; hence ``InvalidInput``)."""


class ToolArgumentError(InvalidInput):
    """An agent tool was called with arguments its schema refuses."""


class ToolNotFound(NotFound):
    """A base (or what is in it) the agent tools may not see in this conversation."""


class UnknownTool(NotFound):
    """An agent tool that does not exist."""


class Overloaded(Unavailable):
    """The ingestion queue is full; retry after ``retry_after`` seconds."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ToolUnavailable(Unavailable):
    """An agent tool could not produce its answer this time; try again."""


WRONG_KEY_MESSAGE = (
    "the data key does not match the one these files were encrypted with; "
    "set LOREBASE_DATA_KEY to the right key"
)


class WrongKey(ServerFault):
    """Data was encrypted with another key than the one configured: the server's settings are
    at fault, and it is reported apart from damage so the operator fixes the key, not the
    files."""

    def __init__(self, found: str | None = None, configured: Sequence[str] = ()) -> None:
        self.found = found
        self.configured = tuple(configured)
        detail = ""
        if found is not None:
            detail = f" (written with key {found}; configured: {', '.join(configured) or '-'})"
        super().__init__(WRONG_KEY_MESSAGE + detail)


class DamagedText(ServerFault):
    """A document's stored text that its chunks and gaps do not rebuild (a damaged row)."""


class DamagedBlob(ServerFault):
    """A blob failed authentication or is not a blob file; it is left in place."""

    def __init__(self, blob_id: str, detail: str) -> None:
        self.blob_id = blob_id
        super().__init__(
            f"blob {blob_id} is damaged or was altered ({detail}); it was left as it is: "
            "restore it from a backup, or delete it and upload the original again"
        )


class DamagedDatabase(ServerFault):
    """The store's database file is damaged (SQLite reports it corrupt, or not a database at
    all): nothing in it can be trusted until it is restored."""

    def __init__(self, location: str, detail: str) -> None:
        super().__init__(
            f"the database {location} is damaged ({detail}); `lorebase check` reports what it "
            "can, and `lorebase restore DIR` puts back a backup"
        )


class RotationIncomplete(ServerFault):
    """Some blobs could not be re-encrypted; the rest were. ``failed`` maps each blob id to its
    ``WrongKey`` or ``DamagedBlob``; those files are untouched."""

    def __init__(self, rotated: int, failed: dict[str, LorebaseError]) -> None:
        self.rotated = rotated
        self.failed = failed
        first_id, first = next(iter(failed.items()))
        super().__init__(
            f"{len(failed)} blob(s) could not be re-encrypted and were left as they were "
            f"({rotated} were); the first, {first_id}: {first}. Fix that and run the rotation "
            "again: it skips blobs already under the new key"
        )
