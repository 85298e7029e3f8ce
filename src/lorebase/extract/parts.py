"""What every container shares: turning the files inside it into :class:`Part` documents.

A mail's attachments and a mailbox's messages are each extracted *by their own format*, in the
same worker and within the same limits, through :func:`lorebase.extract.registry.extract_bytes`.
:class:`PartCollector` holds the bounds every container obeys:

- at most ``max_parts`` parts per container; the rest are left out with the warning
  ``parts_left_out:N``;
- at most ``max_part_depth`` levels of nesting: each part is read with one level less, and a
  container read at depth 0 keeps its parts unread (``too_large``, "nested too deep");
- at most ``max_file_bytes`` bytes of parts per container (the parts past it are
  ``too_large``).

A part's name is shown to people and becomes the last piece of its path
(``mail.eml › report.pdf``), so :func:`clean_name` keeps it to showable characters, no path
separators and no citation separator, at most :data:`MAX_NAME_CHARS`, never empty; and
:class:`UniqueNames` makes it unique within its container (``report.pdf``, ``report (2).pdf``).
"""

from __future__ import annotations

import dataclasses
import mimetypes
import re
from pathlib import PurePath

from lorebase.errors import ExtractionFailed
from lorebase.extract.base import content_hash
from lorebase.extract.registry import extract_bytes
from lorebase.formats import is_supported
from lorebase.names import unshowable
from lorebase.settings import ExtractSettings
from lorebase.types import CITATION_SEPARATOR, FailureReason, Part

MAX_NAME_CHARS = 200
"""Longest part name kept (its extension is kept when it is cut)."""

LEFT_OUT_WARNING = "parts_left_out"
"""Warning ``parts_left_out:N``: N parts past ``max_parts`` were not read."""

# A file type's extension: letters and digits, at least one letter, short.
_EXTENSION = re.compile(r"(?=[0-9]*[A-Za-z])[A-Za-z0-9]{1,15}")
_PATH_SEPARATORS = str.maketrans({"/": "_", "\\": "_"})
# Extensions for the MIME types mail carries most, so an unnamed attachment reads the same on
# every machine (mimetypes consults the system's own tables for the rest).
_EXTENSIONS = {
    "application/pdf": ".pdf",
    "application/msword": ".doc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ".xlsx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
    "application/vnd.ms-excel": ".xls",
    "application/vnd.ms-powerpoint": ".ppt",
    "application/vnd.ms-outlook": ".msg",
    "application/vnd.oasis.opendocument.text": ".odt",
    "application/vnd.oasis.opendocument.spreadsheet": ".ods",
    "application/vnd.oasis.opendocument.presentation": ".odp",
    "application/epub+zip": ".epub",
    "application/rtf": ".rtf",
    "application/zip": ".zip",
    "application/json": ".json",
    "application/xml": ".xml",
    "application/pgp-signature": ".asc",
    "application/pkcs7-signature": ".p7s",
    "application/x-pkcs7-signature": ".p7s",
    "application/ics": ".ics",
    "message/rfc822": ".eml",
    "message/global": ".eml",
    "text/plain": ".txt",
    "text/html": ".html",
    "text/csv": ".csv",
    "text/markdown": ".md",
    "text/calendar": ".ics",
    "text/rtf": ".rtf",
    "text/vcard": ".vcf",
    "text/x-vcard": ".vcf",
    "image/jpeg": ".jpg",
    "image/png": ".png",
    "image/gif": ".gif",
    "image/tiff": ".tif",
    "image/webp": ".webp",
}


def extension_for(mime: str | None) -> str:
    """The usual extension of a MIME type (``""`` when unknown). Pure for the common types."""
    if not mime:
        return ""
    mime = mime.strip().lower()
    return _EXTENSIONS.get(mime) or mimetypes.guess_extension(mime, strict=False) or ""


def clean_name(raw: str | None, index: int, mime: str | None = None) -> str:
    """A part's name as shown: without control or format characters (what
    :mod:`lorebase.names` refuses), path separators or the citation separator, whitespace
    collapsed, at most :data:`MAX_NAME_CHARS` characters; ``attachment <index>`` plus the MIME
    type's extension when nothing is left. Pure."""
    text = "".join(char for char in raw or "" if unshowable(char) is None)
    text = " ".join(text.translate(_PATH_SEPARATORS).split())
    text = text.replace(CITATION_SEPARATOR.strip(), "-") if CITATION_SEPARATOR in text else text
    if not text.strip("."):  # "", ".", "..": not a name
        return f"attachment {index}{extension_for(mime)}"
    return _shortened(text, MAX_NAME_CHARS)


def _split_extension(name: str) -> tuple[str, str]:
    """``("report", ".pdf")``; no extension for ``"Version 2.0"`` or ``"v1.2 notes"``."""
    stem, dot, extension = name.rpartition(".")
    if not (dot and stem and _EXTENSION.fullmatch(extension)):
        return name, ""
    return stem, dot + extension


def _shortened(name: str, limit: int) -> str:
    if len(name) <= limit:
        return name
    stem, extension = _split_extension(name)
    return stem[: max(limit - len(extension), 1)].rstrip() + extension


class UniqueNames:
    """Names made unique within one container, ignoring case: ``report.pdf``, then
    ``report (2).pdf``, ``report (3).pdf``."""

    def __init__(self) -> None:
        self._taken: set[str] = set()

    def claim(self, name: str) -> str:
        candidate, number = name, 1
        while candidate.casefold() in self._taken:
            number += 1
            stem, extension = _split_extension(name)
            suffix = f" ({number}){extension}"
            candidate = stem[: max(MAX_NAME_CHARS - len(suffix), 1)].rstrip() + suffix
        self._taken.add(candidate.casefold())
        return candidate


class PartCollector:
    """The parts of one container, read within the container's bounds (module docstring)."""

    def __init__(self, settings: ExtractSettings) -> None:
        self.settings = settings
        self._names = UniqueNames()
        self._parts: list[Part] = []
        self._left_out = 0
        self._bytes = 0

    @property
    def names(self) -> list[str]:
        """The names of the parts kept, in order."""
        return [part.name for part in self._parts]

    @property
    def has_text(self) -> bool:
        """Whether any part was read."""
        return any(part.extracted is not None for part in self._parts)

    @property
    def full(self) -> bool:
        """Whether ``max_parts`` parts are kept already (any more is left out)."""
        return len(self._parts) >= self.settings.max_parts

    def parts(self) -> tuple[Part, ...]:
        return tuple(self._parts)

    def warnings(self) -> tuple[str, ...]:
        return (f"{LEFT_OUT_WARNING}:{self._left_out}",) if self._left_out else ()

    def leave_out(self) -> None:
        """Count one part left out without being looked at (past ``max_parts``)."""
        self._left_out += 1

    def add(
        self,
        name: str | None,
        data: bytes,
        *,
        mime: str | None = None,
        extension: str | None = None,
    ) -> None:
        """Read ``data`` as a part named ``name`` (cleaned and made unique here). Its format
        is that of ``extension`` when given (a mail is read as a mail whatever its subject
        says), else its name's, else its MIME type's."""
        if self.full:
            self._left_out += 1
            return
        shown = self._names.claim(clean_name(name, len(self._parts) + 1, mime))
        self._parts.append(self._read(shown, data, mime, extension))

    def add_unread(
        self, name: str | None, size: int, reason: FailureReason, *, mime: str | None = None
    ) -> None:
        """A part whose bytes cannot be had (a link, a broken entry): listed, with why."""
        if self.full:
            self._left_out += 1
            return
        shown = self._names.claim(clean_name(name, len(self._parts) + 1, mime))
        self._parts.append(Part(shown, size, content_hash(b""), None, reason))

    def _read(self, name: str, data: bytes, mime: str | None, extension: str | None) -> Part:
        size, digest = len(data), content_hash(data)
        if self.settings.max_part_depth <= 0:
            return Part(name, size, digest, None, FailureReason.TOO_LARGE)  # nested too deep
        if self._bytes + size > self.settings.max_file_bytes:
            return Part(name, size, digest, None, FailureReason.TOO_LARGE)
        self._bytes += size
        nested = dataclasses.replace(self.settings, max_part_depth=self.settings.max_part_depth - 1)
        try:
            extracted = extract_bytes(data, _format_path(name, mime, extension), nested)
        except ExtractionFailed as failed:  # every failure comes out so (registry)
            return Part(name, size, digest, None, failed.reason)
        return Part(name, size, digest, extracted)


def _format_path(name: str, mime: str | None, extension: str | None) -> PurePath:
    """The path whose extension picks the part's extractor."""
    if extension:
        return PurePath(f"part{extension}")
    path = PurePath(name)
    if is_supported(path):
        return path
    hinted = extension_for(mime)
    return PurePath(f"part{hinted}") if hinted else path
