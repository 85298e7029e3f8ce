"""Server-sent events: sanitised state changes (ids, states, counts — never names or text),
fanned out to each subscriber for the knowledge bases it may see."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

SUBSCRIBER_BUFFER = 256
KEEPALIVE_SECONDS = 15.0


@dataclass(slots=True)
class _Subscriber:
    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue[dict[str, object]]
    kb_ids: set[int] | None  # None: every base (an admin without scope limits)


@dataclass(slots=True)
class EventBus:
    _subscribers: list[_Subscriber] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def publish(self, kind: str, kb_id: int, **values: object) -> None:
        """Thread-safe; drops the event for a subscriber whose buffer is full."""
        event = {"type": kind, "knowledge_base_id": kb_id, **values}
        with self._lock:
            subscribers = list(self._subscribers)
        for sub in subscribers:
            if sub.kb_ids is None or kb_id in sub.kb_ids:
                sub.loop.call_soon_threadsafe(_offer, sub.queue, event)

    async def stream(self, kb_ids: set[int] | None) -> AsyncIterator[str]:
        """``text/event-stream`` lines for one subscriber, with keep-alive comments."""
        sub = _Subscriber(asyncio.get_running_loop(), asyncio.Queue(SUBSCRIBER_BUFFER), kb_ids)
        with self._lock:
            self._subscribers.append(sub)
        try:
            yield ": connected\n\n"
            while True:
                try:
                    event = await asyncio.wait_for(sub.queue.get(), KEEPALIVE_SECONDS)
                except TimeoutError:
                    yield ": keep-alive\n\n"
                    continue
                yield f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"
        finally:
            with self._lock:
                self._subscribers.remove(sub)


def _offer(queue: asyncio.Queue[dict[str, object]], event: dict[str, object]) -> None:
    if not queue.full():
        queue.put_nowait(event)
