"""The files of one Tantivy index as a check, a vacuum and a backup read them, without opening
the index (pure file reads: nothing is mapped into memory, so a damaged file cannot end the
process).

Tantivy ends every file of a segment with a footer: a JSON object holding the CRC-32 of the
bytes before it, the footer's length (u32, little-endian) and a magic number (1337). The
commit in force is ``meta.json``: its segments, each with its document count and, once some
of its documents were deleted, how many and the stamp of its delete file
(``<segment>.<stamp>.del``). A truncated file loses its footer; a changed byte fails its CRC.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FOOTER_MAGIC = 1337
MAX_FOOTER_BYTES = 50_000
READ_BYTES = 1 << 20
META_FILE = "meta.json"
MANAGED_FILE = ".managed.json"


@dataclass(frozen=True, slots=True)
class Segment:
    """A committed segment: its id (as its files are named), its documents and deleted ones."""

    name: str
    documents: int
    deleted: int
    delete_stamp: int | None


def segments(folder: Path) -> list[Segment]:
    """The segments of the commit in force (``ValueError``/``OSError`` when its ``meta.json``
    cannot be read)."""
    meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
    found = []
    for segment in meta.get("segments", []):
        deletes = segment.get("deletes") or {}
        found.append(
            Segment(
                name=str(segment["segment_id"]).replace("-", ""),
                documents=int(segment.get("max_doc", 0)),
                deleted=int(deletes.get("num_deleted_docs", 0)),
                delete_stamp=int(deletes["opstamp"]) if "opstamp" in deletes else None,
            )
        )
    return found


def segment_files(folder: Path, segment: Segment) -> list[Path]:
    """The files of a committed segment: its components, and its delete file in force (older
    delete files wait for the next collection)."""
    files = []
    for entry in os.scandir(folder):
        parts = entry.name.split(".")
        if parts[0] != segment.name or not entry.is_file():
            continue
        if parts[-1] == "del" and (len(parts) != 3 or parts[1] != str(segment.delete_stamp)):
            continue
        files.append(Path(entry.path))
    return files


def managed(folder: Path) -> set[str]:
    """The files Tantivy lists as its own (it lists each before writing it)."""
    try:
        names = json.loads((folder / MANAGED_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    return {str(name) for name in names} if isinstance(names, list) else set()


def footer_problem(path: Path) -> str | None:
    """Why ``path`` fails its footer (content-free), or None: too short for one, no magic
    number, an impossible length, unreadable, or a CRC that does not match its bytes. Reads the
    file whole."""
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            if size < 8:
                return "a segment file is shorter than its footer (truncated)"
            handle.seek(size - 8)
            length, magic = struct.unpack("<II", handle.read(8))
            if magic != FOOTER_MAGIC or length > min(MAX_FOOTER_BYTES, size - 8):
                return "a segment file lost its footer (truncated or overwritten)"
            body = size - 8 - length
            handle.seek(body)
            footer = json.loads(handle.read(length))
            handle.seek(0)
            crc = 0
            left = body
            while left > 0:
                block = handle.read(min(READ_BYTES, left))
                if not block:
                    return "a segment file ended early (truncated)"
                crc = zlib.crc32(block, crc)
                left -= len(block)
    except FileNotFoundError:
        return "a file its commit names is missing"
    except OSError as error:
        return f"a segment file cannot be read ({type(error).__name__})"
    except ValueError:
        return "a segment file's footer is not readable (overwritten)"
    expected = footer.get("crc") if isinstance(footer, dict) else None
    if expected != crc:
        return "a segment file fails its checksum (altered or damaged)"
    return None


def files_problem(folder: Path) -> str | None:
    """Why the committed files of the index in ``folder`` may not be trusted (content-free),
    or None: its commit unreadable, a file it names missing, or one failing its footer."""
    try:
        committed = segments(folder)
    except (OSError, ValueError, KeyError, TypeError):
        return "its meta.json cannot be read"
    listed = managed(folder)
    for segment in committed:
        present = segment_files(folder, segment)
        names = {path.name for path in present}
        wanted = {name for name in listed if name.split(".")[0] == segment.name}
        if segment.delete_stamp is not None:
            wanted = {n for n in wanted if not n.endswith(".del")}
            wanted.add(f"{segment.name}.{segment.delete_stamp}.del")
        else:
            wanted = {n for n in wanted if not n.endswith(".del")}
        if wanted - names or not present:
            return "a file its commit names is missing"
        for path in present:
            problem = footer_problem(path)
            if problem is not None:
                return problem
    return None


def deleted_bytes(folder: Path) -> int:
    """The bytes deleted documents take in the index in ``folder``, estimated as each
    segment's deleted share of its files (what merging the segments would give back); 0 when
    the index cannot be read."""
    try:
        committed = segments(folder)
        total = 0.0
        for segment in committed:
            if segment.deleted and segment.documents:
                size = sum(path.stat().st_size for path in segment_files(folder, segment))
                total += size * segment.deleted / segment.documents
    except (OSError, ValueError, KeyError, TypeError):
        return 0
    return int(total)


def has_deletes(folder: Path) -> bool:
    """Whether a segment of the index in ``folder`` holds deleted documents."""
    try:
        return any(segment.deleted for segment in segments(folder))
    except (OSError, ValueError, KeyError, TypeError):
        return False


def folder_bytes(folder: Path) -> int:
    """The bytes the files under ``folder`` take (0 when it is not there)."""
    return sum(path.stat().st_size for path in walk(folder))


def walk(folder: Path) -> Iterator[Path]:
    """Every file under ``folder`` (none when it is not there)."""
    if not folder.is_dir():
        return
    for root, _, names in os.walk(folder):
        for name in names:
            path = Path(root) / name
            if path.is_file():
                yield path


def copy_index(source: Path, target: Path) -> list[Path]:
    """Copy the index in ``source`` (every file but Tantivy's lock files) into ``target``,
    files ``0600`` in a ``0700`` folder; the files written. The caller makes sure no commit
    runs meanwhile."""
    target.mkdir(mode=0o700, parents=True, exist_ok=True)
    written = []
    for entry in sorted(os.scandir(source), key=lambda e: e.name):
        if not entry.is_file() or entry.name.endswith(".lock"):
            continue
        path = target / entry.name
        copy_private(Path(entry.path), path)
        written.append(path)
    return written


def copy_private(source: Path, target: Path) -> None:
    """Copy one file to a new file of mode ``0600``."""
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with source.open("rb") as reading, os.fdopen(fd, "wb") as writing:
        shutil.copyfileobj(reading, writing, READ_BYTES)


def json_of(path: Path) -> Any:
    """The JSON in ``path`` (``ValueError``/``OSError`` as reading it raises)."""
    return json.loads(path.read_text(encoding="utf-8"))
