"""Server-sent events: sanitised state changes (ids, states, counts — never names or text),
fanned out to each subscriber for the knowledge bases it may see."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

SUBSCRIBER_BUFFER = 256
KEEPALIVE_SECONDS = 15.0
_END: dict[str, object] = {"type": "end"}  # queued by close(): the stream returns


@dataclass(slots=True)
class _Subscriber:
    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue[dict[str, object]]
    kb_ids: set[int] | None  # None: every base (an admin without scope limits)


@dataclass(slots=True)
class EventBus:
    _subscribers: list[_Subscriber] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _closed: bool = False

    def publish(self, kind: str, kb_id: int, **values: object) -> None:
        """Thread-safe; drops the event for a subscriber whose buffer is full."""
        event = {"type": kind, "knowledge_base_id": kb_id, **values}
        with self._lock:
            subscribers = list(self._subscribers)
        for sub in subscribers:
            if sub.kb_ids is None or kb_id in sub.kb_ids:
                sub.loop.call_soon_threadsafe(_offer, sub.queue, event)

    def close(self) -> None:
        """End every stream with a complete response, so a server shutting down need not
        wait for its clients to leave; a stream opened afterwards ends at once."""
        with self._lock:
            self._closed = True
            subscribers = list(self._subscribers)
        for sub in subscribers:
            sub.loop.call_soon_threadsafe(_end, sub.queue)

    async def stream(
        self, kb_ids: set[int] | None, may_see: Callable[[int], bool] | None = None
    ) -> AsyncIterator[str]:
        """``text/event-stream`` lines for one subscriber, with keep-alive comments.

        ``may_see`` is asked again (in a worker thread) before each event is sent: a base
        deleted since the stream opened may have handed its id to a base of someone else,
        and the caller may have lost access to it. When ``may_see`` raises, the stream ends
        (the caller lost access altogether)."""
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


def _offer(queue: asyncio.Queue[dict[str, object]], event: dict[str, object]) -> None:
    if not queue.full():
        queue.put_nowait(event)


def _end(queue: asyncio.Queue[dict[str, object]]) -> None:
    while queue.full():  # make room: the end matters more than what it displaces
        queue.get_nowait()
    queue.put_nowait(_END)
