"""The sealing of an export's originals: frames bound to their document, place and end, a key
derived from a passphrase and checked at once."""

from __future__ import annotations

import io
import secrets

import pytest

from lorebase.errors import InvalidInput
from lorebase.service.export_format import FRAME_PLAIN, ExportKey

DATA = secrets.token_bytes(2 * FRAME_PLAIN + 12345)


def frames(key: ExportKey, document_id: str = "ab12") -> list[bytes]:
    return list(key.seal_stream(document_id, [DATA[:1000], DATA[1000:]]))


def opened(key: ExportKey, sealed: bytes, document_id: str = "ab12") -> bytes:
    return b"".join(key.open_stream(document_id, io.BytesIO(sealed)))


def test_an_original_opens_whole_in_frames_of_at_most_a_mebibyte() -> None:
    key = ExportKey.new("passphrase")
    sealed = frames(key)
    assert len(sealed) == 3
    assert opened(key, b"".join(sealed)) == DATA
    assert opened(key, b"".join(key.seal_stream("ab12", []))) == b""


def test_a_frame_dropped_moved_or_of_another_document_does_not_open() -> None:
    key = ExportKey.new("passphrase")
    sealed = frames(key)
    with pytest.raises(InvalidInput, match="ends before its last part"):
        opened(key, b"".join(sealed[:2]))  # the last frame cut off
    with pytest.raises(InvalidInput, match="does not open"):
        opened(key, b"".join([sealed[1], sealed[0], sealed[2]]))
    with pytest.raises(InvalidInput, match="does not open"):
        opened(key, b"".join(sealed), document_id="cd34")


def test_the_passphrase_is_checked_against_the_manifest() -> None:
    key = ExportKey.new("right")
    manifest = {"sealing": key.sealing()}
    again = ExportKey.of("right", manifest)
    assert opened(again, b"".join(frames(key))) == DATA
    with pytest.raises(InvalidInput, match="does not open this export"):
        ExportKey.of("wrong", manifest)
    assert "right" not in repr(again)


def test_a_manifest_cannot_ask_for_an_unbounded_key_derivation() -> None:
    sealing = ExportKey.new("right").sealing()
    sealing["kdf"]["n"] = 2**30
    with pytest.raises(InvalidInput, match="unknown key derivation"):
        ExportKey.of("right", {"sealing": sealing})
