"""The seam under the event bus: the in-process transport, the PostgreSQL payload codec, and
the PostgreSQL transport's import staying out of ``lorebase.events``."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys

import pytest

from lorebase.errors import Unavailable
from lorebase.events import Event, EventBus, EventTransport, LocalTransport
from lorebase.events.postgres import NOTIFY_LIMIT_BYTES, PostgresTransport, decode, encode


class Recording(EventTransport):
    """Sends nothing back until told to: shows publish goes through the transport only."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[Event] = []

    def send(self, event: Event) -> None:
        self.sent.append(event)


def test_the_default_transport_is_in_process() -> None:
    assert isinstance(EventBus().transport, LocalTransport)


def test_publish_goes_through_the_transport_and_back() -> None:
    async def scenario() -> tuple[list[Event], str]:
        transport = Recording()
        bus = EventBus(transport=transport)
        stream = bus.stream(None)
        await stream.__anext__()  # ": connected"
        bus.publish("document", 7, document_id="abc", state="indexed")
        sent = list(transport.sent)
        transport.receive(transport.sent[0])  # what the transport brings back is delivered
        chunk = await asyncio.wait_for(stream.__anext__(), 2)
        bus.close()
        return sent, chunk

    sent, chunk = asyncio.run(scenario())
    event = {"type": "document", "knowledge_base_id": 7, "document_id": "abc", "state": "indexed"}
    assert sent == [event]
    assert chunk == f"event: document\ndata: {json.dumps(event)}\n\n"


def test_a_transport_serves_one_bus() -> None:
    transport = LocalTransport()
    EventBus(transport=transport)
    with pytest.raises(RuntimeError):
        EventBus(transport=transport)


def test_the_codec_round_trips_an_event() -> None:
    event: Event = {"type": "totals", "knowledge_base_id": 3, "documents": 2, "chunks": 40}
    payload = encode(event)
    assert payload is not None and decode(payload) == event


def test_an_event_over_the_notify_limit_is_dropped_by_kind(
    caplog: pytest.LogCaptureFixture,
) -> None:
    secret = "BLUEHERON" * (NOTIFY_LIMIT_BYTES // 9 + 1)
    with caplog.at_level(logging.WARNING):
        assert encode({"type": "document", "knowledge_base_id": 1, "state": secret}) is None
    assert "document" in caplog.text and "BLUEHERON" not in caplog.text


@pytest.mark.parametrize(
    "payload",
    [
        "not json",
        "[1, 2]",
        '{"type": "document"}',
        '{"type": 1, "knowledge_base_id": 1}',
        '{"type": "document", "knowledge_base_id": true}',
    ],
)
def test_a_notification_that_is_not_an_event_is_ignored(
    payload: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        assert decode(payload) is None
    assert payload not in caplog.text


def test_importing_the_bus_does_not_import_psycopg() -> None:
    code = "import sys, lorebase.events; assert 'psycopg' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_without_psycopg_the_transport_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(Unavailable, match=r"lorebase\[postgres\]"):
        PostgresTransport("postgresql://nobody@localhost/none")
