"""What the second attack on the service got through (issue 27), each against the real server
over HTTP or the real service."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from test_events_http import Live, serve

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
