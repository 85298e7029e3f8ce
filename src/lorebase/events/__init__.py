"""Server-sent events: sanitised state changes (ids, states, counts — never names or text),
fanned out to each subscriber for the knowledge bases it may see.

Publishing hands an event to the bus's :class:`EventTransport`; the bus delivers what its
transport receives to its own subscribers. :class:`LocalTransport` (the default) hands each
event straight back, within this process. A transport shared by many processes (one
PostgreSQL database: :class:`lorebase.events.postgres.PostgresTransport`) brings every
event back to every process's bus, this one's included, so each bus delivers each event once.
"""

from __future__ import annotations

import json
import threading
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the event loop's module loads when a stream opens, not with the service
    import asyncio

SUBSCRIBER_BUFFER = 256
KEEPALIVE_SECONDS = 15.0
_END: dict[str, object] = {"type": "end"}  # queued by close(): the stream returns

Event = dict[str, object]
"""``{"type": kind, "knowledge_base_id": kb_id, **values}``: values are ids, states, counts."""


class EventTransport(ABC):
    """How a published event reaches the buses that deliver it. A transport writes
    :meth:`send`; the base hands what comes back (:meth:`receive`) to the one bus attached."""

    def __init__(self) -> None:
        self._deliver: Callable[[Event], None] | None = None

    def attach(self, deliver: Callable[[Event], None]) -> None:
        """Called once, by the bus that owns this transport: received events go to ``deliver``."""
        if self._deliver is not None:
            raise RuntimeError("this event transport already serves a bus")
        self._deliver = deliver

    @abstractmethod
    def send(self, event: Event) -> None:
        """Hand ``event`` on, from any thread, never raising: it must come back through
        :meth:`receive` exactly once in every bus the transport reaches (its own included)."""

    def receive(self, event: Event) -> None:
        """An event arrived (from any thread): the attached bus delivers it."""
        deliver = self._deliver  # read once: close() may clear it from another thread
        if deliver is not None:
            deliver(event)

    def close(self) -> None:
        """Stop sending and receiving; idempotent. A transport that holds connections or
        threads releases them too (calling this)."""
        self._deliver = None


class LocalTransport(EventTransport):
    """Within this process only (one process, or a SQLite store): each event comes straight
    back, in the publisher's thread."""

    def send(self, event: Event) -> None:
        self.receive(event)


@dataclass(slots=True)
class _Subscriber:
    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue[dict[str, object]]
    kb_ids: set[int] | None  # None: every base (an admin without scope limits)


@dataclass(slots=True)
class EventBus:
    """``EventBus()`` within one process; ``EventBus(transport=...)`` across processes."""

    transport: EventTransport = field(default_factory=LocalTransport)
    _subscribers: list[_Subscriber] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _closed: bool = False

    def __post_init__(self) -> None:
        self.transport.attach(self._deliver)

    def publish(self, kind: str, kb_id: int, **values: object) -> None:
        """Thread-safe, never raises; the event reaches this bus's subscribers through the
        transport, and is dropped for a subscriber whose buffer is full."""
        self.transport.send({"type": kind, "knowledge_base_id": kb_id, **values})

    def close(self) -> None:
        """End every stream with a complete response, so a server shutting down need not
        wait for its clients to leave; a stream opened afterwards ends at once. The
        transport is closed too."""
        with self._lock:
            self._closed = True
            subscribers = list(self._subscribers)
        for sub in subscribers:
            sub.loop.call_soon_threadsafe(_end, sub.queue)
        self.transport.close()

    def _deliver(self, event: Event) -> None:
        """What the transport received, offered to each subscriber that may see its base."""
        kb_id = event["knowledge_base_id"]
        with self._lock:
            subscribers = list(self._subscribers)
        for sub in subscribers:
            if sub.kb_ids is None or kb_id in sub.kb_ids:
                try:
                    sub.loop.call_soon_threadsafe(_offer, sub.queue, event)
                except RuntimeError:
                    continue  # its event loop has closed: the subscriber is gone

    async def stream(
        self, kb_ids: set[int] | None, may_see: Callable[[int], bool] | None = None
    ) -> AsyncIterator[str]:
        """``text/event-stream`` lines for one subscriber, with keep-alive comments.

        ``may_see`` is asked again (in a worker thread) before each event is sent: a base
        deleted since the stream opened may have handed its id to a base of someone else,
        and the caller may have lost access to it. When ``may_see`` raises, the stream ends
        (the caller lost access altogether)."""
        import asyncio

        sub = _Subscriber(asyncio.get_running_loop(), asyncio.Queue(SUBSCRIBER_BUFFER), kb_ids)
        with self._lock:
            if self._closed:
                return
            self._subscribers.append(sub)
        try:
            yield ": connected\n\n"
            while True:
                try:
                    event = await asyncio.wait_for(sub.queue.get(), KEEPALIVE_SECONDS)
                except TimeoutError:
                    yield ": keep-alive\n\n"
                    continue
                if event is _END:
                    return
                kb_id = event["knowledge_base_id"]
                assert isinstance(kb_id, int)  # publish() puts an int there
                if may_see is not None:
                    try:
                        allowed = await asyncio.to_thread(may_see, kb_id)
                    except Exception:
                        return
                    if not allowed:
                        continue
                yield f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"
        finally:
            with self._lock:
                self._subscribers.remove(sub)


def _offer(queue: asyncio.Queue[Event], event: Event) -> None:
    if not queue.full():
        queue.put_nowait(event)


def _end(queue: asyncio.Queue[dict[str, object]]) -> None:
    while queue.full():  # make room: the end matters more than what it displaces
        queue.get_nowait()
    queue.put_nowait(_END)
