"""The messages between the processes of one `serve --processes N`: real datagram sockets,
two channels standing for two processes."""

from __future__ import annotations

import asyncio
import json
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from lorebase.events import EventBus
from lorebase.settings import SiblingPlace
from lorebase.siblings import ForwardingQueue, SiblingChannel, SiblingTransport, socket_path
from waiting import wait_until


@pytest.fixture
def folder() -> Iterator[Path]:
    # Short: a socket's path is limited to ~100 bytes, a test's tmp_path can be longer.
    with tempfile.TemporaryDirectory(prefix="lb-sib-") as name:
        yield Path(name)


def channels(folder: Path, count: int = 2) -> list[SiblingChannel]:
    return [SiblingChannel(SiblingPlace(folder, index, count)) for index in range(count)]


def test_an_event_reaches_every_process_once(folder: Path) -> None:
    first, second = channels(folder)
    buses = [
        EventBus(transport=SiblingTransport(first)),
        EventBus(transport=SiblingTransport(second)),
    ]
    seen: list[list[dict[str, object]]] = [[], []]

    async def listen() -> None:
        streams = [bus.stream(None) for bus in buses]
        for stream in streams:
            assert await anext(stream) == ": connected\n\n"
        buses[1].publish("document", 7, document_id="d1", state="indexed")
        for n, stream in enumerate(streams):
            frame = await asyncio.wait_for(anext(stream), 10)
            seen[n].append(json.loads(frame.split("data: ", 1)[1]))
        buses[0].publish("document", 7, document_id="d2", state="pending")
        for n, stream in enumerate(streams):
            frame = await asyncio.wait_for(anext(stream), 10)
            seen[n].append(json.loads(frame.split("data: ", 1)[1]))
        for bus in buses:
            bus.close()

    asyncio.run(listen())
    for events in seen:
        assert [(e["document_id"], e["state"]) for e in events] == [
            ("d1", "indexed"),
            ("d2", "pending"),
        ]
    assert not socket_path(folder, 0).exists() and not socket_path(folder, 1).exists()


def test_a_job_asked_of_another_process_is_admitted_by_the_first(folder: Path) -> None:
    first, second = channels(folder)
    admitted: list[tuple[int, str | None]] = []
    first.on_admit = lambda kb_id, document_id: admitted.append((kb_id, document_id))
    queue = ForwardingQueue(second)
    assert queue.admit(3, "doc") and queue.admit(4, None)
    wait_until(lambda: len(admitted) == 2, 10, what="both jobs at the first process")
    assert admitted == [(3, "doc"), (4, None)]
    assert (queue.stats.accepted, queue.stats.rejected, queue.depth) == (2, 0, 0)
    first.close()
    # The first is gone: a pass is not handed over, and the caller hears so; an upload,
    # stored pending before it is asked for, waits for the indexer's sweep.
    assert not queue.admit(5, None)
    assert queue.admit(5, "stored")
    assert queue.stats.rejected == 2
    second.close()


def test_jobs_go_to_the_indexer_and_events_reach_every_process(folder: Path) -> None:
    """A server of two answering processes and an indexer of its own (the last): a job asked
    of either answering process reaches the indexer only; what the indexer publishes reaches
    both answering processes' subscribers."""
    places = [SiblingPlace(folder, index, 3, indexer=2) for index in range(3)]
    assert [(p.first, p.runs_jobs, p.answers) for p in places] == [
        (True, False, True),
        (False, False, True),
        (False, True, False),
    ]
    first, second, indexer = (SiblingChannel(place) for place in places)
    try:
        admitted: dict[int, list[tuple[int, str | None]]] = {0: [], 1: [], 2: []}
        for index, channel in enumerate((first, second, indexer)):
            channel.on_admit = lambda kb, doc, index=index: admitted[index].append((kb, doc))
        for channel in (first, second):
            assert ForwardingQueue(channel, places[0].indexer).admit(7, f"d{channel.place.index}")
        wait_until(lambda: len(admitted[2]) == 2, 10, what="both jobs at the indexer")
        assert sorted(admitted[2]) == [(7, "d0"), (7, "d1")] and not admitted[0] + admitted[1]
        heard: dict[int, list[dict[str, object]]] = {0: [], 1: []}
        first.on_event, second.on_event = heard[0].append, heard[1].append
        indexer.broadcast({"event": {"document_id": "d0", "state": "indexed"}})
        wait_until(lambda: heard[0] and heard[1], 10, what="the event at both answering ones")
    finally:
        for channel in (first, second, indexer):
            channel.close()


def test_a_malformed_message_is_dropped_and_the_channel_keeps_working(folder: Path) -> None:
    (first,) = channels(folder, 1)
    got: list[tuple[int, str | None]] = []
    first.on_admit = lambda kb_id, document_id: got.append((kb_id, document_id))
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as raw:
        for junk in (b"not json", b"[]", b'{"admit": [1]}', b'{"event": 3}'):
            raw.sendto(junk, str(socket_path(folder, 0)))
        raw.sendto(b'{"admit": [2, "x"]}', str(socket_path(folder, 0)))
    wait_until(lambda: got, 10, what="the well-formed job")
    assert got == [(2, "x")]
    first.close()
    first.close()  # idempotent
    assert not first.send(0, {"admit": [1, None]})


def test_a_socket_left_by_a_crashed_process_is_replaced(folder: Path) -> None:
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    stale.bind(str(socket_path(folder, 1)))
    stale.close()  # the file stays, as after a kill -9
    first, second = channels(folder)
    got: list[object] = []
    second.on_event = got.append
    first.broadcast({"event": {"type": "document", "knowledge_base_id": 1}})
    wait_until(lambda: got, 10, what="the event at the restarted process")
    first.close()
    second.close()


def test_a_process_that_stops_reading_never_slows_the_sender(folder: Path) -> None:
    """Its socket fills up; what does not fit is dropped at once, not waited for."""
    import time

    first, second = channels(folder)
    second.close()  # stands for a process that stopped reading: its socket stays bound
    stuck = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    stuck.bind(str(socket_path(folder, 1)))
    try:
        started = time.monotonic()
        handed = [first.send(1, {"event": {"n": n, "pad": "x" * 500}}) for n in range(2000)]
        assert time.monotonic() - started < 5
        assert handed[0] and not all(handed) and first.dropped > 0
    finally:
        stuck.close()
        first.close()


@pytest.mark.parametrize(("processes", "apart"), [(1, True), (2, True), (2, False), (1, False)])
def test_each_process_of_a_server_knows_its_part(
    tmp_path: Path, processes: int, apart: bool
) -> None:
    """From the first's settings: who answers, who indexes and follows the folders, who
    makes a question's model session; a lone process with no indexer of its own has no
    siblings at all."""
    from lorebase.api.processes import child_count, child_settings, needs_siblings, siblings_of
    from lorebase.settings import EmbedSettings, ServeSettings, Settings

    serve = ServeSettings(auth=False, processes=processes, indexer_process=apart)
    settings = Settings(data_dir=tmp_path, embed=EmbedSettings("fake"), serve=serve)
    assert needs_siblings(settings) == (processes > 1 or apart)
    if not needs_siblings(settings):
        return
    with siblings_of(settings) as first:
        assert child_count(first) == processes - 1 + apart
        every = [first] + [child_settings(first, i) for i in range(1, child_count(first) + 1)]
        places = [s.serve.sibling for s in every]
        assert all(p is not None for p in places)
        indexing = [i for i, p in enumerate(places) if p is not None and p.runs_jobs]
        assert indexing == [processes if apart else 0]
        for index, each in enumerate(every):
            runs = index in indexing
            assert each.answers_queries == (index < processes)
            assert (each.serve.ingest, each.serve.watch) == (
                (True, True) if runs or not index else (False, False)
            )
