"""Events across processes through one real PostgreSQL: two buses on one database, each on
connections of its own, as two API processes would be.

Every wait has a deadline and no test sleeps for timing: a bus is heard once its stream's
``: connected`` comment arrives; a listener is back once a probe published after it was cut
off is heard.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import AsyncIterator

import psycopg
import pytest

from lorebase.events import Event, EventBus
from lorebase.events.postgres import (
    LISTEN_APPLICATION,
    NOTIFY_APPLICATION,
    NOTIFY_LIMIT_BYTES,
    PostgresTransport,
)
from postgres_server import PostgresServer

WAIT_SECONDS = 10.0  # the longest a test waits for an event it expects
PROBE_SECONDS = 0.3  # how long one probe is given before another is sent
SILENCE_SECONDS = 0.5  # how long "nothing more arrives" is watched for


class Heard:
    """One subscriber of a bus: its stream read by a task into a queue of events."""

    def __init__(self, bus: EventBus) -> None:
        self.bus = bus
        self.events: asyncio.Queue[Event] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    async def open(self) -> Heard:
        stream = self.bus.stream(None)
        assert (await asyncio.wait_for(stream.__anext__(), WAIT_SECONDS)).startswith(": conn")
        self._task = asyncio.create_task(self._read(stream))
        return self

    async def _read(self, stream: AsyncIterator[str]) -> None:
        async for chunk in stream:
            if not chunk.startswith(":"):
                self.events.put_nowait(json.loads(chunk.partition("data: ")[2]))

    async def next(self, *, skip: str = "probe", timeout: float = WAIT_SECONDS) -> Event:
        """The next event (leaving out the probes of :func:`until_heard`)."""
        while True:
            event = await asyncio.wait_for(self.events.get(), timeout)
            if event["type"] != skip:
                return event

    async def nothing_more(self) -> bool:
        try:
            await self.next(timeout=SILENCE_SECONDS)
        except TimeoutError:
            return True
        return False

    async def ended(self) -> None:
        assert self._task is not None
        await asyncio.wait_for(self._task, WAIT_SECONDS)


async def until_heard(publisher: EventBus, heard: Heard) -> None:
    """Publish probes until one arrives: the listener is back (probes sent while it was away
    are lost, as any event would be)."""
    deadline = time.monotonic() + WAIT_SECONDS
    n = 0
    while time.monotonic() < deadline:
        n += 1
        publisher.publish("probe", 1, n=n)
        try:
            await heard.next(skip="", timeout=PROBE_SECONDS)
            return
        except TimeoutError:
            continue
    pytest.fail(f"no probe heard within {WAIT_SECONDS} s")


def terminate(server: PostgresServer, url: str, *applications: str) -> int:
    """End the events connections of ``url``'s database (as a server restart would)."""
    database = url.partition("?")[0].rpartition("/")[2]
    with psycopg.connect(server.admin_url, autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND application_name = ANY(%s)",
            (database, list(applications)),
        ).fetchall()
    return len(rows)


def test_an_event_reaches_both_processes_once_and_in_order(postgres_url: str) -> None:
    async def scenario() -> None:
        one = EventBus(transport=PostgresTransport(postgres_url))
        two = EventBus(transport=PostgresTransport(postgres_url))
        try:
            heard = [await Heard(one).open(), await Heard(two).open()]
            for n in range(20):
                one.publish("document", 5, document_id=f"d{n}", state="indexed", reason=None)
            two.publish("totals", 6, documents=3, chunks=12)
            for subscriber in heard:
                for n in range(20):
                    event = await subscriber.next()
                    assert event == {
                        "type": "document",
                        "knowledge_base_id": 5,
                        "document_id": f"d{n}",
                        "state": "indexed",
                        "reason": None,
                    }
                last = {"type": "totals", "knowledge_base_id": 6, "documents": 3, "chunks": 12}
                assert await subscriber.next() == last
                assert await subscriber.nothing_more()  # no event came twice
        finally:
            one.close()
            two.close()
        for subscriber in heard:
            await subscriber.ended()

    asyncio.run(scenario())


def test_subscribers_see_only_their_bases_across_processes(postgres_url: str) -> None:
    async def scenario() -> list[str]:
        one = EventBus(transport=PostgresTransport(postgres_url))
        two = EventBus(transport=PostgresTransport(postgres_url))
        try:
            stream = two.stream({2})
            await asyncio.wait_for(stream.__anext__(), WAIT_SECONDS)
            one.publish("document", 1, document_id="hidden", state="indexed")
            one.publish("document", 2, document_id="shown", state="indexed")
            chunk = await asyncio.wait_for(stream.__anext__(), WAIT_SECONDS)
            two.close()
            return [chunk] + [rest async for rest in stream]
        finally:
            one.close()
            two.close()

    chunks = asyncio.run(scenario())
    assert len(chunks) == 1 and '"shown"' in chunks[0]


def test_close_ends_the_listener_within_a_second(postgres_url: str) -> None:
    async def scenario() -> float:
        before = set(threading.enumerate())
        bus = EventBus(transport=PostgresTransport(postgres_url))
        heard = await Heard(bus).open()
        started = [t for t in threading.enumerate() if t not in before and t.is_alive()]
        assert [t.name for t in started] == ["lorebase-events-listen"]
        began = time.monotonic()
        bus.close()
        took = time.monotonic() - began
        await heard.ended()  # the stream ended with a complete response
        assert not started[0].is_alive()
        bus.publish("document", 1, document_id="late", state="indexed")  # a no-op now
        return took

    assert asyncio.run(scenario()) < 1.0


def test_the_listener_reconnects_after_its_connection_is_ended(
    postgres_server: PostgresServer, postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        one = EventBus(transport=PostgresTransport(postgres_url))
        two = EventBus(transport=PostgresTransport(postgres_url))
        try:
            heard = await Heard(one).open()
            # Only the listeners go: the publishers' connections stay.
            assert terminate(postgres_server, postgres_url, LISTEN_APPLICATION) == 2
            await until_heard(two, heard)
            two.publish("document", 1, document_id="after", state="indexed")
            assert (await heard.next())["document_id"] == "after"
            # A restart ends every connection, the publishers' too: they reconnect as well.
            terminate(postgres_server, postgres_url, LISTEN_APPLICATION, NOTIFY_APPLICATION)
            await until_heard(two, heard)
            for n in range(3):
                two.publish("document", 1, document_id=f"again{n}", state="indexed")
            assert [(await heard.next())["document_id"] for _ in range(3)] == [
                "again0",
                "again1",
                "again2",
            ]
            assert await heard.nothing_more()
        finally:
            one.close()
            two.close()

    with caplog.at_level(logging.WARNING):
        asyncio.run(scenario())
    lost = [r for r in caplog.records if "lost its connection" in r.getMessage()]
    assert lost and all("postgresql://" in r.getMessage() for r in lost)
    assert "again" not in caplog.text and "after" not in caplog.text


def test_an_event_over_the_payload_limit_does_not_break_the_bus(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        bus = EventBus(transport=PostgresTransport(postgres_url))
        try:
            heard = await Heard(bus).open()
            huge = "BLUEHERON" * (NOTIFY_LIMIT_BYTES // 9 + 1)
            bus.publish("document", 1, document_id=huge, state="indexed")
            bus.publish("document", 1, document_id="small", state="indexed")
            assert (await heard.next())["document_id"] == "small"
            assert await heard.nothing_more()
        finally:
            bus.close()

    with caplog.at_level(logging.WARNING):
        asyncio.run(scenario())
    assert "dropped a document event" in caplog.text and "BLUEHERON" not in caplog.text


def test_an_unreachable_database_is_reported_when_the_bus_is_built(tmp_path: object) -> None:
    from lorebase.errors import Unavailable

    url = f"postgresql://nobody@/none?host={tmp_path}"  # a folder with no server socket
    with pytest.raises(Unavailable, match="events"):
        EventBus(transport=PostgresTransport(url))
