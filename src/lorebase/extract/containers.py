"""The guard every zip container passes before a parser opens it (DOCX, XLSX, PPTX, ODF,
EPUB): the decompression-bomb check, from the zip directory alone.

The declared sizes in the zip directory are a sound bound: ``zipfile`` never reads more than
an entry's declared size, so a package whose entries declare little cannot expand to much.
"""

from __future__ import annotations

import io
import zipfile

from lorebase.errors import ExtractionFailed
from lorebase.types import FailureReason

BOMB_ENTRY_BYTES = 10 * 1024 * 1024
BOMB_RATIO = 1000
"""An entry larger than ``BOMB_ENTRY_BYTES`` that compresses better than ``BOMB_RATIO`` to one
is a bomb, whatever the total."""

MAX_MEMBERS = 20_000
"""Most entries a package may hold: real documents hold tens to a few thousand (a book with
its images); a zip of a hundred thousand empty entries costs time to list and nothing else."""


def check_zip(data: bytes, limit: int) -> zipfile.ZipFile:
    """Refuse a package that is not a zip (``corrupt``), is encrypted (``encrypted``), holds
    more than :data:`MAX_MEMBERS` entries or expands past ``limit`` bytes (``too_large``);
    return it opened, for a parser that reads the zip itself."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        entries = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as exc:
        raise ExtractionFailed(FailureReason.CORRUPT, type(exc).__name__) from None
    if len(entries) > MAX_MEMBERS:
        raise ExtractionFailed(FailureReason.TOO_LARGE, "too many entries in the package")
    if sum(entry.file_size for entry in entries) > limit:
        raise ExtractionFailed(FailureReason.TOO_LARGE, "expands past the limit")
    for entry in entries:
        if entry.flag_bits & 0x1:
            raise ExtractionFailed(FailureReason.ENCRYPTED, "an encrypted zip entry")
        if entry.file_size > BOMB_ENTRY_BYTES and entry.file_size > BOMB_RATIO * max(
            entry.compress_size, 1
        ):
            raise ExtractionFailed(FailureReason.TOO_LARGE, "compression ratio of a zip bomb")
    return archive
