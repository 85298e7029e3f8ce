"""What the second attack on the service got through (issue 27), each against the real server
over HTTP or the real service."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from integration.serve_process import free_port, serve_command, started, wait_until_ready
from integration.test_events_http import Live, serve
from lorebase.app import Lorebase, open_lorebase
from lorebase.cli.main import app
from lorebase.embed.fake import FakeEmbedder
from lorebase.errors import InvalidInput
from lorebase.settings import Settings
from proc_state import process_state
from waiting import wait_until

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

EVIL = "evil.example"


def port_of(live: Live) -> int:
    return int(live.base.rsplit(":", 1)[1])


def as_host(
    live: Live,
    host: str,
    method: str,
    path: str,
    headers: dict[str, str] | None = None,
    json: object = None,
) -> httpx.Response:
    """A request to the live server that names ``host`` (what a rebinding page's does)."""
    named = {"Host": f"{host}:{port_of(live)}", **(headers or {})}
    return httpx.request(method, live.base + path, headers=named, json=json, timeout=10)


# -- 1. DNS rebinding ----------------------------------------------------------------------
@pytest.fixture
def open_server(tmp_path: Path) -> Iterator[Live]:
    with serve(tmp_path, auth=False) as running:
        yield running


def test_a_rebinding_page_cannot_reach_a_no_auth_server(open_server: Live, tmp_path: Path) -> None:
    """The attack as it was filed: a page of evil.example, whose name now resolves to
    127.0.0.1, adds a local folder as a source. Refused with 421, whatever the headers."""
    private = tmp_path / "private"
    private.mkdir()
    kb = httpx.post(f"{open_server.base}/v1/knowledge-bases", json={"name": "mine"}, timeout=10)
    assert kb.status_code == 201, kb.text
    rebinding = {"Origin": f"http://{EVIL}:{port_of(open_server)}", "Sec-Fetch-Site": "same-origin"}
    added = as_host(
        open_server,
        EVIL,
        "POST",
        f"/v1/knowledge-bases/{kb.json()['id']}/sources",
        headers=rebinding,
        json={"path": str(private)},
    )
    assert added.status_code == 421, added.text
    assert added.headers["content-type"].startswith("application/problem+json")
    body = added.json()
    assert body["type"] == "/problems/unknown-host" and "--allowed-host" in body["detail"]
    assert EVIL not in body["detail"]  # never echoes what the request named
    assert added.headers.get("x-content-type-options") == "nosniff"  # security headers too
    for path in ("/v1/knowledge-bases", "/", "/healthz"):
        assert as_host(open_server, EVIL, "GET", path).status_code == 421, path
    assert open_server.lb.sources("mine") == []  # nothing was added


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "LOCALHOST", "127.0.0.2", "[::1]"])
def test_loopback_names_are_answered(open_server: Live, host: str) -> None:
    assert as_host(open_server, host, "GET", "/v1/knowledge-bases").status_code == 200


def test_a_key_does_not_make_another_host_acceptable(tmp_path: Path) -> None:
    with serve(tmp_path) as live:
        refused = as_host(live, EVIL, "GET", "/v1/knowledge-bases", headers=live.headers("admin"))
        assert refused.status_code == 421
        assert httpx.get(
            live.base + "/v1/knowledge-bases", headers=live.headers("admin")
        ).is_success


def test_the_names_an_operator_allows_are_answered(tmp_path: Path) -> None:
    with serve(tmp_path, auth=False, allowed_hosts=("docs.example",)) as live:
        assert as_host(live, "docs.example", "GET", "/v1/knowledge-bases").status_code == 200
        assert as_host(live, "Docs.Example.", "GET", "/v1/knowledge-bases").status_code == 200
        assert as_host(live, EVIL, "GET", "/v1/knowledge-bases").status_code == 421
    with serve(tmp_path / "any", auth=False, allowed_hosts=("*",)) as live:
        assert as_host(live, EVIL, "GET", "/v1/knowledge-bases").status_code == 200


# -- 2. a damaged keyword index ---------------------------------------------------------------
def _folder(tmp_path: Path, name: str, count: int = 12) -> Path:
    root = tmp_path / name
    root.mkdir()
    for n in range(count):
        (root / f"note{n:02}.md").write_text(f"# Note {n}\n\nThe heron waits by the river {n}.\n")
    return root


def _truncate_segments(data: Path) -> list[Path]:
    """What the attack did: every term file of the keyword index emptied in place."""
    files = sorted((data / "lorebase.lexical").glob("kb*/*.term"))
    for path in files:
        with path.open("r+b") as handle:
            handle.truncate(0)
    return files


def test_a_truncated_index_file_does_not_end_the_server(tmp_path: Path) -> None:
    """A real `lorebase serve` process: its keyword index truncated under it, searches go
    on (by meaning, with a warning), the index is rebuilt in the background, metrics and the
    event stream say so, and the process never dies of SIGBUS (exit 135)."""
    port = free_port()
    data = tmp_path / "data"
    notes = _folder(tmp_path, "notes")
    command = serve_command(data, port, "--workers", "1", "--no-auth")
    log_path = tmp_path / "serve.log"
    process = started(command, log_path, stdout=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_ready(base, process)
        made = httpx.post(f"{base}/v1/knowledge-bases", json={"name": "birds"}, timeout=10)
        kb_id = made.json()["id"]
        files = [("files", (p.name, p.read_bytes(), "text/markdown")) for p in notes.iterdir()]
        added = httpx.post(f"{base}/v1/knowledge-bases/{kb_id}/documents", files=files, timeout=10)
        assert added.status_code == 202, added.text
        wait_until(lambda: _hits(base, "heron", "keyword") == 12)
        # At rest: what a file truncated under a write in progress does (a commit or merge
        # already reading it) is not what this holds; the writes end first.
        wait_until(lambda: _at_rest(base))
        assert _hits(base, "heron", "keyword") == 12  # the index caught up, nothing pending
        assert _truncate_segments(data)
        try:
            searched = _search(base, "heron", "keyword")
        except httpx.TransportError as error:  # what the server said, not only the refusal
            process.terminate()
            process.wait(timeout=30)
            said = log_path.read_text(errors="replace")
            raise AssertionError(f"exit {process.returncode}; stderr:\n{said[-4000:]}") from error
        assert process.poll() is None, "the server died"
        warnings = searched["warnings"]
        assert isinstance(warnings, list)
        assert warnings[0].startswith("lexical_index_damaged: ")
        assert "birds" in warnings[0]
        hybrid = _search(base, "heron river", "hybrid")
        assert hybrid["hits"]  # the other arm answers meanwhile
        # Rebuilt from the database in the background: keyword search finds them all again.
        wait_until(
            lambda: (
                _hits(base, "heron", "keyword") == 12
                and not _search(base, "heron", "keyword")["warnings"]
            )
        )
        metrics = httpx.get(f"{base}/metrics", timeout=10).text
        assert "lorebase_keyword_indexes_damaged 0.0" in metrics
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert process.returncode != 135
    log = log_path.read_text(errors="replace")
    assert "keyword index of base" in log and "damaged" in log and "heron" not in log


def _search(base: str, query: str, mode: str) -> dict[str, object]:
    answer = httpx.post(
        f"{base}/v1/search", json={"query": query, "mode": mode, "top_k": 20}, timeout=20
    )
    assert answer.status_code == 200, answer.text
    result: dict[str, object] = answer.json()
    return result


def _at_rest(base: str) -> bool:
    """No job queued, no base indexing, no document waiting for its vectors."""
    status = httpx.get(f"{base}/v1/status", timeout=10).json()
    kbs = httpx.get(f"{base}/v1/knowledge-bases", timeout=10).json()
    warnings = _search(base, "heron", "hybrid")["warnings"]
    assert isinstance(warnings, list)
    return (
        not status.get("queue_depth")
        and all(kb["state"] != "indexing" for kb in kbs)
        and not any(w.startswith("still_embedding") for w in warnings)
    )


def _hits(base: str, query: str, mode: str) -> int:
    hits = _search(base, query, mode)["hits"]
    assert isinstance(hits, list)
    return len(hits)


def test_a_damaged_index_in_a_library_process_is_rebuilt_and_announced(tmp_path: Path) -> None:
    """In one process: the truncation is found before the index is read, the search says so,
    an event announces it and another the rebuild, status shows it meanwhile."""
    notes = _folder(tmp_path, "notes")
    with open_lorebase(
        settings=Settings(data_dir=tmp_path / "data"), embedder=FakeEmbedder()
    ) as lb:
        lb.add([notes], kb="birds")
        kb = lb.kb("birds")
        seen: list[dict[str, object]] = []
        transport = lb.events.transport
        sending = transport.send

        def send(event: dict[str, object]) -> None:
            seen.append(event)
            sending(event)

        transport.send = send  # type: ignore[method-assign]
        assert len(lb.search("heron", kb="birds", mode="keyword").hits) == 10
        _truncate_segments(lb.settings.data_dir)
        response = lb.search("heron", kb="birds", mode="keyword")
        assert response.damaged == (kb.id,)
        assert response.hits  # answered by meaning for the damaged base
        assert lb.damaged_keyword_indexes() in ({kb.id: "a segment file shrank (truncated)"}, {})
        wait_until(lambda: not lb.damaged_keyword_indexes())
        again = lb.search("heron", kb="birds", mode="keyword")
        assert len(again.hits) == 10 and not again.warnings and not again.damaged
        announced = [e for e in seen if "keyword_index" in e]
        assert announced == [
            {"type": "knowledge_base", "knowledge_base_id": kb.id, "keyword_index": "damaged"},
            {"type": "knowledge_base", "knowledge_base_id": kb.id, "keyword_index": "rebuilt"},
        ]


# -- 3. keys that outlive their parent ----------------------------------------------------------
def test_a_key_minted_with_a_key_dies_with_it(tmp_path: Path) -> None:
    """As filed: a 1-day key mints a key with no expiry, then is revoked. The minted key
    expires with its parent's day and stops working when the parent is revoked."""
    with serve(tmp_path) as live:
        alice = live.lb.accounts.get_user("alice")
        day, record = live.lb.accounts.create_key(alice.id, "day", time.time() + 86_400)
        headers = {"Authorization": f"Bearer {day}"}
        made = httpx.post(f"{live.base}/v1/keys", json={"name": "forever"}, headers=headers)
        assert made.status_code == 201, made.text
        minted = made.json()
        assert minted["record"]["expires_at"] == pytest.approx(record.expires_at)
        child = {"Authorization": f"Bearer {minted['key']}"}
        assert httpx.get(f"{live.base}/v1/keys", headers=child).status_code == 200
        revoked = httpx.delete(f"{live.base}/v1/keys/{record.id}", headers=headers)
        assert revoked.status_code == 204
        assert httpx.get(f"{live.base}/v1/keys", headers=child).status_code == 401


def test_a_session_mints_no_key_without_a_key_given_again(tmp_path: Path) -> None:
    with serve(tmp_path) as live:
        session = httpx.Client(base_url=live.base)
        signed = session.post("/v1/session", json={"key": live.keys["bob"]})
        assert signed.status_code == 200, signed.text
        csrf = {"X-Lorebase-CSRF": signed.json()["csrf"]}
        bare = session.post("/v1/keys", json={"name": "from the page"}, headers=csrf)
        assert bare.status_code == 403 and "API keys again" in bare.json()["detail"]
        wrong = session.post(
            "/v1/keys", json={"name": "x", "key": live.keys["alice"]}, headers=csrf
        )
        assert wrong.status_code == 403  # another user's key is no key of bob's
        given = session.post(
            "/v1/keys", json={"name": "laptop", "key": live.keys["bob"]}, headers=csrf
        )
        assert given.status_code == 201, given.text
        parent = live.lb.accounts.key_id_of(live.keys["bob"])
        assert given.json()["record"]["name"] == "laptop"
        made = next(k for k in live.lb.accounts.list_keys() if k.name == "laptop")
        assert made.parent_id == parent


# -- 4. sources that leave documents behind ----------------------------------------------------
def test_a_folder_removed_during_its_pass_leaves_nothing_searchable(tmp_path: Path) -> None:
    """The source is removed while the pass embeds its first batch: what was written goes with
    the source, what comes after is refused, and nothing of it is found by either arm."""
    notes = _folder(tmp_path, "notes", count=40)
    removed: list[int] = []
    holder: dict[str, object] = {}

    def remove_on_first_batch(texts: object, kind: str) -> None:
        lb = holder.get("lb")
        if kind == "document" and lb is not None and not removed:
            assert isinstance(lb, Lorebase)
            (source,) = lb.sources("birds")
            removed.append(lb.remove_source("birds", source.id))

    embedder = FakeEmbedder(hook=remove_on_first_batch, batch_size=4)
    with open_lorebase(settings=Settings(data_dir=tmp_path / "data"), embedder=embedder) as lb:
        lb.create_kb("birds")
        lb.add_source("birds", notes)
        holder["lb"] = lb
        lb.sync(kb="birds")
        assert removed, "the hook never ran"
        assert lb.documents("birds") == []
        for mode in ("keyword", "dense", "hybrid"):
            assert lb.search("heron river", kb="birds", mode=mode).hits == [], mode
        holder.pop("lb")
        lb.sync(kb="birds")  # a later pass brings nothing back
        assert lb.documents("birds") == []


def test_documents_of_a_source_no_longer_followed_leave_with_the_next_pass(tmp_path: Path) -> None:
    """What an older lorebase left behind (a pass that wrote a document as its folder was
    removed): such documents are dropped by the next pass."""
    notes = _folder(tmp_path, "notes", count=3)
    other = _folder(tmp_path, "other", count=2)
    with open_lorebase(
        settings=Settings(data_dir=tmp_path / "data"), embedder=FakeEmbedder()
    ) as lb:
        lb.create_kb("birds")
        lb.add_source("birds", notes)
        lb.add_source("birds", other)
        lb.sync(kb="birds")
        (gone, _) = sorted(lb.sources("birds"), key=lambda s: s.path)
        with sqlite3.connect(lb.settings.database) as conn:  # the old bug's state, by hand
            conn.execute("DELETE FROM sources WHERE id = ?", (gone.id,))
        assert len(lb.documents("birds")) == 5
        report = lb.sync(kb="birds")["birds"]
        assert report.removed == 3
        assert {d.path.split("/")[0] for d in lb.documents("birds")} == {"other"}


def test_the_data_directory_is_no_source(tmp_path: Path) -> None:
    with open_lorebase(
        settings=Settings(data_dir=tmp_path / "data"), embedder=FakeEmbedder()
    ) as lb:
        lb.create_kb("birds")
        inside = lb.settings.data_dir / "evals"
        inside.mkdir(parents=True, exist_ok=True)
        for path in (lb.settings.data_dir, inside):
            with pytest.raises(InvalidInput, match="data directory"):
                lb.add_source("birds", path)
            with pytest.raises(InvalidInput, match="data directory"):
                lb.add([path], kb="birds")
        with pytest.raises(InvalidInput, match="data directory"):
            lb.create_kb("again", sources=[lb.settings.data_dir])
        assert lb.sources("birds") == []


def test_over_http_a_source_is_an_absolute_path(tmp_path: Path) -> None:
    with serve(tmp_path) as live:
        kb = live.create_kb("admin", "birds")
        relative = live.call(
            "POST", f"/v1/knowledge-bases/{kb}/sources", "admin", json={"path": "../.."}
        )
        assert relative.status_code == 422 and "absolute path" in relative.json()["detail"]
        data = live.call(
            "POST",
            f"/v1/knowledge-bases/{kb}/sources",
            "admin",
            json={"path": str(live.lb.settings.data_dir)},
        )
        assert data.status_code == 422 and "data directory" in data.json()["detail"]


def test_the_command_line_reads_a_relative_folder_from_where_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes = _folder(tmp_path, "notes", count=1)
    monkeypatch.chdir(tmp_path)
    base = ["--data-dir", str(tmp_path / "data"), "--embedder", "fake"]
    assert CliRunner().invoke(app, [*base, "kb", "create", "birds"]).exit_code == 0
    added = CliRunner().invoke(app, [*base, "kb", "sources", "add", "birds", "notes"])
    assert added.exit_code == 0, added.output
    assert str(notes.resolve()) in added.output


# -- 5. names, body limits, zombies, file modes ------------------------------------------------
def _raw(live: Live, request: bytes) -> tuple[int, dict[str, str]]:
    """Send ``request`` as it is (a body announced, little of it sent) and read the answer's
    status and headers."""
    with socket.create_connection(("127.0.0.1", port_of(live)), timeout=10) as sock:
        with contextlib.suppress(OSError):  # the server may answer and close while we send
            sock.sendall(request)
        head = sock.makefile("rb")
        status = int(head.readline().split()[1])
        headers = {}
        while (line := head.readline().decode("latin-1").strip()) != "":
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    return status, headers


def _announced(path: str, length: int | None, key: str, body: bytes) -> bytes:
    size = f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked"
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {key}\r\n{size}\r\n\r\n"
    )
    return head.encode() + body


@pytest.mark.parametrize("chunked", [False, True])
def test_a_body_over_the_limit_is_a_problem_with_the_security_headers(chunked: bool) -> None:
    """The 413 is ours, not uvicorn's text/plain one: problem+json, nosniff, a CSP."""
    with serve(Path(tempfile.mkdtemp())) as live:
        if chunked:
            piece = b"[" * 65536
            body = (f"{len(piece):x}\r\n".encode() + piece + b"\r\n") * 5
            request = _announced("/v1/search", None, live.keys["alice"], body)
        else:
            request = _announced("/v1/search", 1 << 20, live.keys["alice"], b"[" * 1024)
        status, headers = _raw(live, request)
    assert status == 413
    assert headers["content-type"] == "application/problem+json"
    assert headers["x-content-type-options"] == "nosniff"
    assert "content-security-policy" in headers


SPOOFING = [
    "report\u202efdp.md",
    "notes\x00.md",
    "a\u2066b.md",
    "zero\u200bwidth.md",
    "two\nlines.md",
]


def _multipart(files: list[tuple[str, bytes]]) -> tuple[bytes, str]:
    """A multipart body with the file names exactly as given (a client library would
    percent-encode a NUL or a newline; an attacker's need not)."""
    boundary = "lorebase-test-boundary"
    body = b""
    for name, data in files:
        body += (
            (
                f'--{boundary}\r\nContent-Disposition: form-data; name="files"; '
                f'filename="{name}"\r\nContent-Type: text/markdown\r\n\r\n'
            ).encode()
            + data
            + b"\r\n"
        )
    return body + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


@pytest.mark.parametrize("name", SPOOFING)
def test_an_upload_name_that_would_not_show_as_itself_is_refused(tmp_path: Path, name: str) -> None:
    """Refused like a base name, saying which character (never echoing the name), and the
    other file of the same upload is not stored either."""
    with serve(tmp_path) as live:
        kb = live.create_kb("alice", "mine")
        body, content_type = _multipart([("fine.md", b"# Fine\n\nwords\n"), (name, b"# Spoof\n")])
        answer = httpx.post(
            f"{live.base}/v1/knowledge-bases/{kb}/documents",
            content=body,
            headers={**live.headers("alice"), "Content-Type": content_type},
            timeout=10,
        )
        assert answer.status_code == 422, answer.text
        assert answer.headers["content-type"] == "application/problem+json"
        assert "U+" in answer.json()["detail"] and "rename it" in answer.json()["detail"]
        listed = live.call("GET", f"/v1/knowledge-bases/{kb}/documents", "alice")
        assert listed.json() == []


def test_joiners_that_scripts_need_are_kept_in_names(tmp_path: Path) -> None:
    with serve(tmp_path) as live:
        kb = live.create_kb("alice", "می\u200cخواهم")  # Persian, with a zero-width non-joiner
        live.upload("alice", kb, "👩\u200d🔬 notes.md", b"# Lab\n\nwords\n")
        names = [
            d["name"]
            for d in live.call("GET", f"/v1/knowledge-bases/{kb}/documents", "alice").json()
        ]
        assert names == ["👩\u200d🔬 notes.md"]


@pytest.mark.parametrize("name", ["birds\u202e", "a\u2067b", "tab\there"])
def test_base_and_key_names_are_checked_the_same_way(tmp_path: Path, name: str) -> None:
    with serve(tmp_path) as live:
        base = live.call("POST", "/v1/knowledge-bases", "alice", json={"name": name})
        assert base.status_code == 422, base.text
        key = live.call("POST", "/v1/keys", "alice", json={"name": name})
        assert key.status_code == 422, key.text
        with pytest.raises(InvalidInput, match="U\\+"):
            live.lb.create_kb(name)
    spoofed = ["--data-dir", str(tmp_path / "cli"), "--embedder", "fake"]
    for command in (["kb", "create", name], ["users", "create", name], ["teams", "create", name]):
        result = CliRunner().invoke(app, [*spoofed, *command])
        assert result.exit_code != 0 and "rename it" in result.output, result.output


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):  # a task just gone
            found += [int(p) for p in (task / "children").read_text().split()]
    return found


def _descendants(pid: int) -> list[int]:
    """The process's children, theirs, and so on (the extraction workers are the indexer's)."""
    found, todo = [], [pid]
    while todo:
        children = _children(todo.pop())
        found += children
        todo += children
    return found


def _is_extraction_worker(pid: int) -> bool:
    with contextlib.suppress(FileNotFoundError, ProcessLookupError):
        return b"lorebase.extract.sandbox" in Path(f"/proc/{pid}/cmdline").read_bytes()
    return False


def test_an_extraction_worker_killed_in_a_real_server_is_reaped(tmp_path: Path) -> None:
    """`kill -9` of a `lorebase serve` process's idle extraction worker: gone at once, not left
    a zombie, and the next upload is read by a new one."""
    port = free_port()
    command = serve_command(tmp_path / "data", port, "--workers", "1", "--no-auth")
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_ready(base, process)
        kb_id = httpx.post(f"{base}/v1/knowledge-bases", json={"name": "b"}, timeout=10).json()[
            "id"
        ]

        def upload(name: str) -> None:
            files = [("files", (name, f"# {name}\n\nThe heron waits.\n".encode(), "text/markdown"))]
            sent = httpx.post(
                f"{base}/v1/knowledge-bases/{kb_id}/documents", files=files, timeout=10
            )
            assert sent.status_code == 202, sent.text

        upload("first.md")
        wait_until(lambda: _hits(base, "heron", "keyword") == 1)
        workers = [pid for pid in _descendants(process.pid) if _is_extraction_worker(pid)]
        assert workers
        os.kill(workers[0], signal.SIGKILL)
        wait_until(lambda: process_state(workers[0]) is None, 20)
        upload("second.md")
        wait_until(lambda: _hits(base, "heron", "keyword") == 2)
        assert process.poll() is None
    finally:
        process.terminate()
        process.wait(timeout=30)


def _modes(folder: Path) -> dict[str, int]:
    return {
        str(p.relative_to(folder)): p.stat().st_mode & 0o777 for p in [folder, *folder.rglob("*")]
    }


def test_the_keyword_index_is_its_owners_alone(tmp_path: Path) -> None:
    """Folders 0700, files 0600 — segments Tantivy wrote included — and files an older
    version left readable are narrowed when the index is next opened."""
    notes = _folder(tmp_path, "notes", count=3)
    settings = Settings(data_dir=tmp_path / "data")
    lexical = settings.data_dir / "lorebase.lexical"
    with open_lorebase(settings=settings, embedder=FakeEmbedder()) as lb:
        lb.add([notes], kb="birds")
        assert lb.search("heron", kb="birds", mode="keyword").hits
    modes = _modes(lexical)
    assert any(name.endswith(".term") for name in modes)
    wide = {name: oct(mode) for name, mode in modes.items() if mode not in (0o700, 0o600)}
    assert wide == {}
    assert {mode for name, mode in modes.items() if (lexical / name).is_dir()} == {0o700}
    for path in [lexical, *lexical.rglob("*")]:  # what an older version left
        path.chmod(0o755 if path.is_dir() else 0o644)
    (notes / "more.md").write_text("# More\n\nAnother heron.\n")
    with open_lorebase(settings=settings, embedder=FakeEmbedder()) as lb:
        lb.sync("birds")
        assert len(lb.search("heron", kb="birds", mode="keyword").hits) == 4
    assert {mode for mode in _modes(lexical).values()} <= {0o700, 0o600}
