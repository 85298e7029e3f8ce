"""The portable file of one knowledge base (``lorebase export``), as bytes: a zip holding

- ``manifest.json`` — the format and its version, the lorebase that wrote it, when, the base's
  settings, its embedding identity, its sources, counts, and the SHA-256 and size of every
  other member (written last, read first);
- ``documents.jsonl`` — one JSON line per document: its record, extracted text, chunks with
  their positions and section ordinals, the rows of its vectors, and its original's member;
- ``vectors.f32`` — every vector, little-endian float32 rows of the identity's dimension, the
  rows of one document consecutive, documents in the order of ``documents.jsonl``;
- ``originals/NNNNNN`` — each upload's original, sealed under a key derived from the export's
  passphrase (scrypt, random salt in the manifest; AES-256-GCM frames of at most 1 MiB, each
  bound to its document, place and whether it is the last).

This module knows the layout, checks a file against its manifest and seals and opens under a
passphrase; it reads no store. A member is only ever read from the zip, never extracted, so
its name decides nothing but whether the file is accepted.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import struct
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

from lorebase.errors import InvalidInput

FORMAT = "lorebase-export"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
DOCUMENTS = "documents.jsonl"
VECTORS = "vectors.f32"
ORIGINALS = "originals/"
MEMBER_NAME = re.compile(r"^(documents\.jsonl|vectors\.f32|originals/[0-9]{6,12})$")
MAX_MANIFEST_BYTES = 64 * 1024 * 1024
READ_BLOCK = 1024 * 1024
MAX_LINE_BYTES = 1024**3
"""The longest line of ``documents.jsonl`` an import reads (one document, its text included)."""
FRAME_PLAIN = 1024 * 1024
"""Most plaintext bytes of an original sealed in one frame."""

SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**15, 8, 1
MAX_SCRYPT_N = 2**20  # what an import accepts: a manifest cannot make it spend unbounded memory
KEY_CHECK = b"lorebase export key check"
NONCE_BYTES = 12
_FRAME_HEAD = struct.Struct(">IB")  # the sealed length, and whether it is the last

DAMAGED = (
    "this file is not a complete lorebase export (damaged or cut short: {why}); nothing was "
    "imported: copy the export again, or export the base again"
)


def damaged(why: str) -> InvalidInput:
    """The error of a file that fails its checks (``why``: content-free)."""
    return InvalidInput(DAMAGED.format(why=why))


def original_member(index: int) -> str:
    """The member of the ``index``-th original (1-based)."""
    return f"{ORIGINALS}{index:06d}"


# -- members written with their checksums ----------------------------------------------------
class MemberWriter:
    """One member being written into the zip, counting and hashing what goes in."""

    def __init__(self, archive: zipfile.ZipFile, name: str, *, compress: bool) -> None:
        info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
        info.external_attr = 0o600 << 16
        self.name = name
        self._handle = archive.open(info, "w", force_zip64=True)
        self._digest = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> None:
        self._handle.write(data)
        self._digest.update(data)
        self.size += len(data)

    def close(self) -> dict[str, Any]:
        """Close the member; its entry of the manifest's ``members``."""
        self._handle.close()
        return {"sha256": self._digest.hexdigest(), "size": self.size}


def write_manifest(archive: zipfile.ZipFile, manifest: dict[str, Any]) -> None:
    info = zipfile.ZipInfo(MANIFEST, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o600 << 16
    archive.writestr(info, json.dumps(manifest, ensure_ascii=False, indent=1, sort_keys=True))


# -- reading and checking ------------------------------------------------------------------
def open_archive(source: str | IO[bytes]) -> zipfile.ZipFile:
    """The zip, or :func:`damaged` when it is none (a file cut short loses its directory)."""
    try:
        return zipfile.ZipFile(source)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError):
        raise damaged("it is not a readable zip file") from None


def read_manifest(archive: zipfile.ZipFile) -> dict[str, Any]:
    """The manifest, its format checked, and every member listed and nothing else present."""
    names = archive.namelist()
    if len(names) != len(set(names)):
        raise damaged("a member name appears twice")
    if MANIFEST not in names:
        raise damaged("its manifest.json is missing")
    info = archive.getinfo(MANIFEST)
    if info.file_size > MAX_MANIFEST_BYTES:
        raise damaged("its manifest is too large")
    try:
        manifest = json.loads(archive.read(MANIFEST).decode("utf-8"))
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError):
        raise damaged("its manifest cannot be read") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise damaged("its manifest is not a lorebase export's")
    version = manifest.get("format_version")
    if not isinstance(version, int):
        raise damaged("its manifest names no format version")
    if version > FORMAT_VERSION:
        raise InvalidInput(
            f"this export is of format {version}, made by a newer lorebase "
            f"({manifest.get('lorebase_version', 'unknown')}); this one reads format "
            f"{FORMAT_VERSION}: upgrade lorebase here, then import again"
        )
    if version < 1:
        raise damaged("its manifest names an unknown format version")
    members = manifest.get("members")
    if not isinstance(members, dict):
        raise damaged("its manifest lists no members")
    for name, entry in members.items():
        if not isinstance(name, str) or not MEMBER_NAME.match(name):
            raise damaged("its manifest lists a member of an unexpected name")
        if not isinstance(entry, dict) or not isinstance(entry.get("size"), int):
            raise damaged("its manifest lists a member without its size")
        if not isinstance(entry.get("sha256"), str):
            raise damaged("its manifest lists a member without its checksum")
        if name not in names:
            raise damaged("a member its manifest lists is missing")
    if DOCUMENTS not in members:
        raise damaged("its manifest lists no documents")
    extra = [name for name in names if name != MANIFEST and name not in members]
    if extra:
        raise damaged(f"it holds {len(extra)} member(s) its manifest does not list")
    return manifest


def check_member(
    archive: zipfile.ZipFile, name: str, entry: dict[str, Any], lines: bool = False
) -> Iterator[bytes]:
    """Read member ``name`` whole, checking its size and SHA-256 against ``entry``; with
    ``lines``, yield its lines as read (the caller consumes them all). ``damaged`` when
    anything differs, or the zip's own checks fail."""
    if archive.getinfo(name).file_size != entry["size"]:
        raise damaged("a member's size is not the size its manifest records")
    digest = hashlib.sha256()
    size = 0
    try:
        with archive.open(name) as handle:
            if lines:
                for line in _lines(handle):
                    digest.update(line)
                    size += len(line)
                    yield line
            else:
                while block := handle.read(READ_BLOCK):
                    digest.update(block)
                    size += len(block)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as error:
        raise damaged(f"a member fails the zip's own check ({type(error).__name__})") from None
    if size != entry["size"] or digest.hexdigest() != entry["sha256"]:
        raise damaged("a member's checksum is not the checksum its manifest records")


def _lines(handle: IO[bytes]) -> Iterator[bytes]:
    """The lines of ``handle``, none longer than :data:`MAX_LINE_BYTES` (a file made to hold
    one endless line is refused before it fills memory)."""
    while line := handle.readline(MAX_LINE_BYTES + 1):
        if len(line) > MAX_LINE_BYTES:
            raise damaged("a document's line is longer than an export writes")
        yield line


def read_member_lines(archive: zipfile.ZipFile, name: str) -> Iterator[bytes]:
    try:
        with archive.open(name) as handle:
            yield from _lines(handle)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError):
        raise damaged("a member cannot be read") from None


# -- the export key ------------------------------------------------------------------------
@dataclass(frozen=True)
class ExportKey:
    """The AES-256-GCM key a passphrase gives with a salt (never printed)."""

    aead: AESGCM
    kdf: dict[str, Any]

    def __repr__(self) -> str:
        return "ExportKey(...)"

    @classmethod
    def new(cls, passphrase: str) -> ExportKey:
        """A key for a new export: a fresh random salt."""
        kdf = {
            "name": "scrypt",
            "salt": base64.b64encode(secrets.token_bytes(16)).decode(),
            "n": SCRYPT_N,
            "r": SCRYPT_R,
            "p": SCRYPT_P,
        }
        return cls(_derive(passphrase, kdf), kdf)

    @classmethod
    def of(cls, passphrase: str, manifest: dict[str, Any]) -> ExportKey:
        """The key of an export, checked against its manifest: ``InvalidInput`` when the
        passphrase is not the one it was made with."""
        sealing = manifest.get("sealing")
        if not isinstance(sealing, dict) or not isinstance(sealing.get("kdf"), dict):
            raise damaged("its manifest records no key")
        key = cls(_derive(passphrase, sealing["kdf"]), sealing["kdf"])
        try:
            key.open(_b64(sealing.get("check")), b"check")
        except InvalidInput:
            raise InvalidInput(
                "that key does not open this export (it was sealed with another passphrase); "
                "give the passphrase it was exported with (--key-file or LOREBASE_EXPORT_KEY)"
            ) from None
        return key

    def sealing(self) -> dict[str, Any]:
        """What the manifest records of the key: how to derive it, and a check."""
        return {"kdf": self.kdf, "check": base64.b64encode(self.seal(KEY_CHECK, b"check")).decode()}

    def seal(self, data: bytes, aad: bytes) -> bytes:
        nonce = secrets.token_bytes(NONCE_BYTES)
        return nonce + self.aead.encrypt(nonce, data, aad)

    def open(self, sealed: bytes, aad: bytes) -> bytes:
        try:
            return self.aead.decrypt(sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], aad)
        except (InvalidTag, ValueError):
            raise InvalidInput(
                "a sealed part of this export does not open with the key given; give the "
                "passphrase it was exported with"
            ) from None

    def seal_name(self, name: str, document_id: str) -> str:
        return base64.b64encode(
            self.seal(name.encode(), b"name\x1f" + document_id.encode())
        ).decode()

    def open_name(self, sealed: str, document_id: str) -> str:
        return self.open(_b64(sealed), b"name\x1f" + document_id.encode()).decode()

    # -- originals, as frames ----------------------------------------------------------------
    def seal_stream(self, document_id: str, pieces: Iterable[bytes]) -> Iterator[bytes]:
        """An original's frames: each at most :data:`FRAME_PLAIN` plaintext bytes, bound to
        its document, index and whether it is the last (an original cut short is noticed)."""
        index = 0
        held: bytes | None = None
        for piece in _resized(pieces):
            if held is not None:
                yield self._frame(document_id, index, held, final=False)
                index += 1
            held = piece
        yield self._frame(document_id, index, held or b"", final=True)

    def _frame(self, document_id: str, index: int, plain: bytes, *, final: bool) -> bytes:
        sealed = self.seal(plain, _frame_aad(document_id, index, final))
        return _FRAME_HEAD.pack(len(sealed), int(final)) + sealed

    def open_stream(self, document_id: str, handle: IO[bytes]) -> Iterator[bytes]:
        """The plaintext of an original's frames, read from ``handle``."""
        index = 0
        while True:
            head = handle.read(_FRAME_HEAD.size)
            if len(head) != _FRAME_HEAD.size:
                raise damaged("an original ends before its last part")
            length, final = _FRAME_HEAD.unpack(head)
            if length > FRAME_PLAIN + 64 or final not in (0, 1):
                raise damaged("an original holds a part of an impossible size")
            sealed = handle.read(length)
            yield self.open(sealed, _frame_aad(document_id, index, bool(final)))
            if final:
                return
            index += 1


def _frame_aad(document_id: str, index: int, final: bool) -> bytes:
    return f"original\x1f{document_id}\x1f{index}\x1f{int(final)}".encode()


def _resized(pieces: Iterable[bytes]) -> Iterator[bytes]:
    """The bytes of ``pieces`` again, in pieces of :data:`FRAME_PLAIN` (the last shorter)."""
    held = bytearray()
    for piece in pieces:
        held += piece
        while len(held) >= FRAME_PLAIN:
            yield bytes(held[:FRAME_PLAIN])
            del held[:FRAME_PLAIN]
    if held:
        yield bytes(held)


def _derive(passphrase: str, kdf: dict[str, Any]) -> AESGCM:
    if not passphrase:
        raise InvalidInput("the export key is empty; give a passphrase")
    try:
        n, r, p = int(kdf["n"]), int(kdf["r"]), int(kdf["p"])
        salt = _b64(kdf["salt"])
    except (KeyError, TypeError, ValueError):
        raise damaged("its manifest records an unreadable key derivation") from None
    if kdf.get("name") != "scrypt" or not (2 <= n <= MAX_SCRYPT_N) or not (1 <= r <= 16):
        raise damaged("its manifest records an unknown key derivation")
    if not (1 <= p <= 4) or len(salt) < 16:
        raise damaged("its manifest records an unknown key derivation")
    secret = Scrypt(salt=salt, length=32, n=n, r=r, p=p).derive(passphrase.encode("utf-8"))
    return AESGCM(secret)


def _b64(value: object) -> bytes:
    if not isinstance(value, str):
        raise damaged("its manifest records a sealed value that is not text")
    try:
        return base64.b64decode(value, validate=True)
    except ValueError:
        raise damaged("its manifest records a sealed value that is not base64") from None
