"""What an attacker and a crash got through (issue 11), each against the real server or the
real service: bodies refused before they are read, uploads that can never become phantoms,
names the server cannot index refused, the data key never replaced silently."""

from __future__ import annotations

import contextlib
import io
import socket
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from integration.test_events_http import Live, serve
from loopback import client as api_client
from lorebase.api.app import create_app
from lorebase.app import Lorebase, open_lorebase
from lorebase.embed.fake import FakeEmbedder
from lorebase.errors import ServerFault
from lorebase.settings import ServeSettings, Settings
from lorebase.vault.keys import KEY_FILE, DataKey

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

GIGABYTE = 1 << 30
SENT_BEFORE_READING = 256 * 1024


# -- bodies before keys ----------------------------------------------------------------------
def _raw_request(live: Live, head: str, body_prefix: bytes) -> tuple[int, int]:
    """Send ``head`` and a piece of the body it announces, then read the status line; returns
    (status, bytes of body sent). The server must answer without the rest of the body."""
    host, port = live.base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(head.encode("latin-1") + b"\r\n")
        sent = 0
        try:
            sock.sendall(body_prefix)
            sent = len(body_prefix)
        except OSError:  # the server answered and closed while we were still sending
            pass
        reply = sock.makefile("rb")
        status_line = reply.readline().decode("latin-1")
        # The server closes the connection (a reset when our unread bytes were in its buffer):
        # it does not drain what is still on its way. A connection kept open would time out.
        with contextlib.suppress(ConnectionResetError):
            reply.read()
    return int(status_line.split()[1]), sent


def _head(path: str, length: int | None, key: str | None, content_type: str) -> str:
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Type: {content_type}"]
    lines.append(
        f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked"
    )
    if key:
        lines.append(f"Authorization: Bearer {key}")
    return "\r\n".join(lines) + "\r\n"


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    with serve(tmp_path) as running:
        yield running


def test_an_upload_without_a_key_is_refused_before_its_body(live: Live) -> None:
    """The key decides from the headers: 401 before the body is read. (A body announced larger
    than what a request without a key may send, 256 KB, is refused as too large instead.)"""
    kb_id = live.create_kb("alice", "mine")
    head = _head(
        f"/v1/knowledge-bases/{kb_id}/documents",
        200 * 1024,
        None,
        "multipart/form-data; boundary=x",
    )
    status, sent = _raw_request(live, head, b"--x\r\n" + b"a" * 1024)
    assert status == 401 and sent <= 1024 + 5


@pytest.mark.parametrize("user", [None, "alice"])
def test_a_gigabyte_upload_is_refused_from_its_length(live: Live, user: str | None) -> None:
    """Over the limit, with a key or without: 413 from the Content-Length, nothing read."""
    kb_id = live.create_kb("alice", "mine")
    head = _head(
        f"/v1/knowledge-bases/{kb_id}/documents",
        GIGABYTE,
        live.keys[user] if user else None,
        "multipart/form-data; boundary=x",
    )
    status, _ = _raw_request(live, head, b"--x\r\n" + b"a" * SENT_BEFORE_READING)
    assert status == 413


@pytest.mark.parametrize("path", ["/v1/search", "/v1/tools/search_knowledge_base", "/v1/ask"])
def test_a_huge_json_body_is_refused_before_it_is_read(live: Live, path: str) -> None:
    for key in (None, live.keys["alice"]):
        head = _head(path, 100 << 20, key, "application/json")
        status, _ = _raw_request(live, head, b"[" * 1024)
        assert status == 413
    small = _head(path, 64 * 1024, None, "application/json")  # under the limit: the key decides
    assert _raw_request(live, small, b"[" * 1024)[0] == 401


def test_a_chunked_json_body_is_counted_as_it_streams(live: Live) -> None:
    """No Content-Length to check: the stream is counted and refused once it passes 256 KB."""
    piece = b"[" * 65536
    chunk = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    head = _head("/v1/search", None, live.keys["alice"], "application/json")
    status, _ = _raw_request(live, head, chunk * 8)
    assert status == 413


# -- uploads that cannot be indexed ----------------------------------------------------------
@pytest.fixture
def lb(tmp_path: Path) -> Iterator[Lorebase]:
    serve_settings = ServeSettings(workers=1, watch=False, auth=False)
    with open_lorebase(
        settings=Settings(data_dir=tmp_path / "data", serve=serve_settings), embedder=FakeEmbedder()
    ) as instance:
        yield instance


def _blobs(data_dir: Path) -> list[Path]:
    return [p for p in (data_dir / "blobs").glob("*") if p.is_file()]


@pytest.mark.parametrize("name", ["notes.xyz", "passwd", ".", "..", ""])
def test_a_name_lorebase_cannot_read_is_refused_at_upload(lb: Lorebase, name: str) -> None:
    kb = lb.create_kb("mine")
    client = api_client(create_app(lb, manage=False))
    files = {"files": (name or "x", io.BytesIO(b"some bytes"), "application/octet-stream")}
    if not name:  # an empty file name: the multipart part carries none
        files = {"files": ("", io.BytesIO(b"some bytes"), "application/octet-stream")}
    response = client.post(f"/v1/knowledge-bases/{kb.id}/documents", files=files)
    assert response.status_code in (415, 422), response.text
    if response.status_code == 415:
        assert "Markdown" in response.json()["detail"]
    assert lb.documents(kb) == [] and _blobs(lb.settings.data_dir) == []


def test_one_unreadable_name_among_many_refuses_the_whole_upload(lb: Lorebase) -> None:
    """All or nothing: the readable files of a request are not stored when one is refused."""
    kb = lb.create_kb("mine")
    client = api_client(create_app(lb, manage=False))
    files = [
        ("files", ("leave.md", io.BytesIO(b"# Leave\n\nTen days.\n"), "text/markdown")),
        ("files", ("budget.xyz", io.BytesIO(b"some bytes"), "application/octet-stream")),
    ]
    response = client.post(f"/v1/knowledge-bases/{kb.id}/documents", files=files)
    assert response.status_code == 415, response.text
    assert "budget.xyz" not in response.json()["detail"]  # a name may be what an attacker sent
    assert lb.documents(kb) == [] and _blobs(lb.settings.data_dir) == []


def test_an_upload_whose_original_is_lost_fails_at_start_and_a_reupload_repairs_it(
    lb: Lorebase,
) -> None:
    kb = lb.create_kb("mine")
    data = b"# Leave\n\nTen days carry over.\n"
    record, created = lb.upload(kb, "leave.md", [data])
    assert created and lb.blobs.exists(record.id)
    assert record.path == f"uploads/{record.id}"  # no extension, no hash of the content
    lb.blobs.delete(record.id)  # as a crash of an older version, or a lost file, leaves it
    lb.start_serving()
    failed = lb.document_in(kb, record.id)
    assert (failed.state.value, failed.reason) == ("failed", "missing_original")
    again, created = lb.upload(kb, "leave.md", [data])
    assert (again.id, created) == (record.id, False)
    assert lb.queue.join(30)
    assert lb.document_in(kb, record.id).state.value == "indexed"
    assert lb.search("carry over", kb="mine").hits


def test_a_row_that_cannot_be_written_takes_its_blob_with_it(
    lb: Lorebase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The original is written first; when its row then fails, the original goes too."""
    kb = lb.create_kb("mine")

    def refuse(*args: object, **kwargs: object) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(lb.store, "create_upload", refuse)
    with pytest.raises(sqlite3.OperationalError):
        lb.upload(kb, "a.md", [b"# A\n\nText.\n"])
    assert _blobs(lb.settings.data_dir) == []


def test_an_orphan_original_is_swept_at_start(lb: Lorebase) -> None:
    """A crash after the original was written and before its row: the blob is an orphan."""
    lb.blobs.put("ab" * 16, b"bytes of an upload whose row never came")
    lb.start_serving()
    assert _blobs(lb.settings.data_dir) == []


# -- the data key ----------------------------------------------------------------------------
def test_a_missing_data_key_is_never_replaced_over_encrypted_uploads(tmp_path: Path) -> None:
    data = tmp_path / "data"
    settings = Settings(data_dir=data, serve=ServeSettings(workers=1, watch=False, auth=False))
    with open_lorebase(settings=settings, embedder=FakeEmbedder()) as lb:
        kb = lb.create_kb("mine")
        lb.upload(kb, "a.md", [b"# A\n\nText.\n"])
        key_id = lb.data_key.id
    (data / KEY_FILE).rename(tmp_path / "backup.key")
    with open_lorebase(settings=settings, embedder=FakeEmbedder()) as lb:
        with pytest.raises(ServerFault, match="missing"):
            lb.start_serving()
        assert not (data / KEY_FILE).exists()  # no new key was made
    with open_lorebase(settings=settings, embedder=FakeEmbedder(), data_key=None) as lb:
        wrong = DataKey.generate()
        wrong.save(data / KEY_FILE)
        with pytest.raises(ServerFault, match=key_id):
            lb.start_serving()
    (data / KEY_FILE).unlink()
    (tmp_path / "backup.key").rename(data / KEY_FILE)
    with open_lorebase(settings=settings, embedder=FakeEmbedder()) as lb:
        lb.start_serving()
        assert lb.data_key.id == key_id


def test_a_new_data_directory_gets_a_key(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "d", serve=ServeSettings(workers=1, watch=False))
    with open_lorebase(settings=settings, embedder=FakeEmbedder()) as lb:
        lb.start_serving()
        assert (tmp_path / "d" / KEY_FILE).is_file()


def test_the_data_directory_and_database_are_private(tmp_path: Path) -> None:
    import stat

    data = tmp_path / "new" / "data"
    with open_lorebase(settings=Settings(data_dir=data), embedder=FakeEmbedder()) as lb:
        lb.add([_folder_with_a_note(tmp_path)], kb="notes")
        files = [p for p in data.iterdir() if p.name.startswith("lorebase.db")]
        assert {p.name for p in files} >= {"lorebase.db", "lorebase.db-wal"}
        for path in files:
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path.name
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    (data / "lorebase.db").chmod(0o644)  # made by an older version
    with open_lorebase(settings=Settings(data_dir=data), embedder=FakeEmbedder()):
        assert stat.S_IMODE((data / "lorebase.db").stat().st_mode) == 0o600


def _folder_with_a_note(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nA note.\n")
    return folder


def test_an_upload_whose_original_goes_missing_while_it_waits_fails_with_the_reason(
    lb: Lorebase,
) -> None:
    """Lost after the start's sweep, while queued: the worker fails it instead of crashing."""
    kb = lb.create_kb("mine")
    record, _ = lb.upload(kb, "leave.md", [b"# Leave\n\nTen days.\n"])  # queued, not yet taken
    lb.blobs.delete(record.id)
    lb.queue.start()  # the workers alone, without the start's sweep
    assert lb.queue.join(30)
    lb.queue.stop()
    assert (lb.queue.stats.done, lb.queue.stats.failed) == (1, 0)
    failed = lb.document_in(kb, record.id)
    assert (failed.state.value, failed.reason) == ("failed", "missing_original")


def test_a_pass_whose_base_was_deleted_while_it_waited_does_nothing(
    lb: Lorebase, tmp_path: Path
) -> None:
    kb = lb.create_kb("notes", sources=[_folder_with_a_note(tmp_path)])
    lb.request_pass(kb)
    lb.delete_kb(kb)
    lb.queue.start()
    assert lb.queue.join(30)
    lb.queue.stop()
    assert (lb.queue.stats.done, lb.queue.stats.failed) == (1, 0)
    assert lb.knowledge_bases() == []
