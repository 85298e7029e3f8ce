"""The data key and the small-string cipher used for what lorebase keeps encrypted at rest.

Uploaded originals (see :mod:`lorebase.vault.blobs`) and their display names are encrypted with one
256-bit AES-GCM key, the *data key*. It comes from ``LOREBASE_DATA_KEY`` (base64 of 32 bytes)
when that is set, else from ``<data_dir>/data.key``, which is created on first use. The key file
is created with mode 0600 by ``open(O_CREAT | O_EXCL, 0o600)`` (so it is never readable by
others, not even between create and chmod), fsynced, and only then linked to its final name, so
two processes starting at once agree on one key and no one ever reads a half-written file. A key
file that others can read is refused rather than silently used.

A key is identified in diagnostics and file headers by its *key id*: the first 8 hex characters
of its SHA-256. The id tells which key a file was written with; it never reveals the key.

Sealed strings (``seal_text``) are ``urlsafe-base64(version | key id | nonce | ciphertext+tag)``
without padding, with a caller-chosen *context* (for example ``"upload-name:<blob id>"``) as
associated data, so a token copied to another row or purpose does not open. The token length
follows the plaintext length.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import os
import secrets
import stat
from collections.abc import Sequence
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from lorebase.errors import Conflict, InvalidInput, ServerFault, WrongKey

KEY_ENV = "LOREBASE_DATA_KEY"
KEY_FILE = "data.key"
KEY_BYTES = 32
KEY_ID_BYTES = 4  # 8 hex characters
NONCE_BYTES = 12  # AES-GCM's 96-bit nonce
TAG_BYTES = 16
KEY_FILE_MODE = 0o600
SEALED_VERSION = 1
_SEALED_AAD_PREFIX = b"lorebase-sealed-text\0"
_SEALED_HEADER_BYTES = 1 + KEY_ID_BYTES

_KEY_FORMAT_HINT = (
    f"the base64 of exactly {KEY_BYTES} random bytes (44 characters); make one with: "
    "python -c 'import base64,os; print(base64.b64encode(os.urandom(32)).decode())'"
)


class DataKey:
    """A 256-bit AES-GCM key. Its ``repr`` shows the key id only, so it is safe to log."""

    __slots__ = ("_aead", "_secret", "id")

    def __init__(self, secret: bytes) -> None:
        if len(secret) != KEY_BYTES:
            raise InvalidInput(f"a data key must be {KEY_BYTES} bytes, not {len(secret)}")
        self._secret = bytes(secret)
        self._aead = AESGCM(self._secret)
        self.id = hashlib.sha256(self._secret).hexdigest()[: 2 * KEY_ID_BYTES]

    @classmethod
    def generate(cls) -> DataKey:
        return cls(secrets.token_bytes(KEY_BYTES))

    @classmethod
    def from_base64(cls, text: str, source: str = KEY_ENV) -> DataKey:
        """Parse standard or URL-safe base64 (padding optional); ``source`` names where the
        text came from in the error, which never quotes the text itself."""
        cleaned = text.strip().replace("-", "+").replace("_", "/")
        cleaned += "=" * (-len(cleaned) % 4)
        try:
            secret = base64.b64decode(cleaned, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidInput(
                f"{source} is not valid base64; it must be {_KEY_FORMAT_HINT}"
            ) from None
        if len(secret) != KEY_BYTES:
            raise InvalidInput(
                f"{source} decodes to {len(secret)} bytes; it must be {_KEY_FORMAT_HINT}"
            )
        return cls(secret)

    @classmethod
    def from_file(cls, path: Path) -> DataKey:
        """Read an existing key file, refusing one that group or others may read."""
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            raise InvalidInput(f"the key file {path} does not exist") from None
        except OSError as exc:  # a symlink (O_NOFOLLOW), a folder, no permission
            raise InvalidInput(
                f"the key file {path} cannot be opened ({exc.strerror}); it must be a plain "
                "file readable by the lorebase user"
            ) from None
        with os.fdopen(fd, "rb") as handle:
            mode = stat.S_IMODE(os.fstat(handle.fileno()).st_mode)
            if mode & 0o077:
                raise InvalidInput(
                    f"the key file {path} can be read by other users (mode {mode:04o}); "
                    f"run `chmod 600 {path}` and start lorebase again"
                )
            text = handle.read(4 * KEY_BYTES).decode("ascii", "replace")
        return cls.from_base64(text, source=f"the key file {path}")

    @classmethod
    def load(cls, data_dir: Path, configured: str | None = None, *, create: bool = True) -> DataKey:
        """The configured key (``Settings.data_key``, from ``LOREBASE_DATA_KEY``) when set,
        else ``<data_dir>/data.key``, created with a fresh random key on first use — only with
        ``create``: where something is already sealed, a missing key file is a
        :class:`~lorebase.errors.ServerFault` (a new key would lose every sealed file)."""
        if configured:
            return cls.from_base64(configured)
        path = data_dir / KEY_FILE
        if not path.exists():
            if not create:
                raise ServerFault(
                    f"the data key file {path} is missing, but uploaded files are encrypted "
                    "with it; restore it from a backup (or set LOREBASE_DATA_KEY). lorebase "
                    "does not make a new key over encrypted data"
                )
            with contextlib.suppress(Conflict):  # another process created it first: use theirs
                cls.generate().save(path)
        return cls.from_file(path)

    def save(self, path: Path) -> None:
        """Write this key to a new file with mode 0600; never replaces an existing file, since
        losing a key loses every file encrypted with it."""
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = (self.to_base64() + "\n").encode("ascii")
        temp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
        _write_new_file(temp, payload)
        try:
            os.link(temp, path)  # atomic and refuses to replace: the file appears complete
        except FileExistsError:
            raise Conflict(f"the key file {path} already exists; it was left as it is") from None
        except OSError:  # a file system without hard links: create the final name directly
            try:
                _write_new_file(path, payload)
            except FileExistsError:
                raise Conflict(f"the key file {path} already exists; it was left as is") from None
        finally:
            temp.unlink()
        fsync_dir(path.parent)

    def to_base64(self) -> str:
        """The key as text, for an operator moving it to ``LOREBASE_DATA_KEY`` or a backup.
        Never log it."""
        return base64.b64encode(self._secret).decode("ascii")

    @property
    def id_bytes(self) -> bytes:
        return bytes.fromhex(self.id)

    def encrypt(self, nonce: bytes, data: bytes, aad: bytes) -> bytes:
        return self._aead.encrypt(nonce, data, aad)

    def decrypt(self, nonce: bytes, data: bytes, aad: bytes) -> bytes:
        """Raises ``cryptography.exceptions.InvalidTag`` when the data or ``aad`` differ."""
        return self._aead.decrypt(nonce, data, aad)

    def __repr__(self) -> str:
        return f"DataKey(id={self.id})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DataKey):
            return NotImplemented
        return hmac.compare_digest(self._secret, other._secret)

    def __hash__(self) -> int:
        return hash(self.id)


def _write_new_file(path: Path, payload: bytes) -> None:
    """Create ``path`` (never an existing one) with mode 0600 from the first byte, and fsync."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, KEY_FILE_MODE)
    try:
        os.write(fd, payload)
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(folder: Path) -> None:
    """Make a rename or link in ``folder`` durable (a no-op where directories can't be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def pick_key(key_id: str, keys: Sequence[DataKey]) -> DataKey:
    """The key among ``keys`` whose id is ``key_id``, or ``WrongKey``."""
    for key in keys:
        if key.id == key_id:
            return key
    raise WrongKey(found=key_id, configured=[key.id for key in keys])


def _sealed_aad(header: bytes, context: str) -> bytes:
    return _SEALED_AAD_PREFIX + header + context.encode("utf-8")


def seal_text(key: DataKey, text: str, context: str) -> str:
    """Encrypt a short string (a display name) to a URL-safe token bound to ``context``."""
    header = bytes([SEALED_VERSION]) + key.id_bytes
    nonce = secrets.token_bytes(NONCE_BYTES)
    sealed = key.encrypt(nonce, text.encode("utf-8"), _sealed_aad(header, context))
    return base64.urlsafe_b64encode(header + nonce + sealed).rstrip(b"=").decode("ascii")


def open_text(keys: DataKey | Sequence[DataKey], token: str, context: str) -> str:
    """Decrypt a ``seal_text`` token. ``keys`` may list old keys too, mid-rotation. A token
    sealed for another context, or altered, raises ``InvalidInput``; one sealed with a key not
    in ``keys`` raises ``WrongKey``."""
    candidates = [keys] if isinstance(keys, DataKey) else list(keys)
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError):
        raise InvalidInput("the encrypted name is not valid base64; it was damaged") from None
    if len(raw) < _SEALED_HEADER_BYTES + NONCE_BYTES + TAG_BYTES:
        raise InvalidInput("the encrypted name is too short; it was damaged")
    header = raw[:_SEALED_HEADER_BYTES]
    if header[0] != SEALED_VERSION:
        raise InvalidInput(f"the encrypted name has unknown format version {header[0]}")
    key = pick_key(header[1:].hex(), candidates)
    nonce = raw[_SEALED_HEADER_BYTES : _SEALED_HEADER_BYTES + NONCE_BYTES]
    try:
        plain = key.decrypt(
            nonce, raw[_SEALED_HEADER_BYTES + NONCE_BYTES :], _sealed_aad(header, context)
        )
    except InvalidTag:
        raise InvalidInput(
            "the encrypted name does not open in this context; it was damaged or belongs "
            "to another record"
        ) from None
    return plain.decode("utf-8")
