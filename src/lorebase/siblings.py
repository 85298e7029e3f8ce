"""The processes of one ``lorebase serve`` over the embedded store, talking to each other.

The ``--processes`` answer requests on the same port; one process, the *indexer*, runs the
ingestion jobs and follows the folders (one indexer at a time: the SQLite store and its
keyword indexes have one writer) — a process of its own that answers no request
(``--indexer``, the default), or else the first. What must cross between them goes as
small datagrams through a socket each process binds in a private folder
(``SiblingPlace.folder``, ``0700``): ids, states and counts, never a name or a text, as the
events themselves are.

- **Events** (:class:`SiblingTransport`): what a process publishes reaches its own
  subscribers at once and every other process's through its socket, so an event stream
  opened on any process sees the uploads, passes and deletes made through any other (the
  indexer's progress included).
- **Jobs** (:class:`ForwardingQueue`): a process other than the indexer hands each job it is
  asked for to the indexer, whose queue admits it as if asked directly. An upload is stored
  (``pending``) before its job is asked for, so a job the indexer never hears of is still
  found by its queue's sweep a few seconds later; only a pass asked for over HTTP would be
  lost, and the caller is then told to retry (503).

A datagram to a process that is not listening (not started yet, or gone) is dropped: events
are announcements, and what they announce is in the store.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
from collections.abc import Callable
from pathlib import Path

from lorebase.events import Event, EventTransport
from lorebase.ingest.queue import QueueStats
from lorebase.settings import SiblingPlace

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 60_000
"""The largest datagram sent or read: an event or a job is a few hundred bytes."""
RECEIVE_TIMEOUT_S = 0.5
"""How often the receiving thread looks whether the channel was closed."""

OnEvent = Callable[[Event], None]
OnAdmit = Callable[[int, "str | None"], object]


def socket_path(folder: Path, index: int) -> Path:
    """Where process ``index`` of a server receives its messages."""
    return folder / f"{index}.sock"


class SiblingChannel:
    """This process's socket among its siblings': sends to them, and a thread that hands what
    arrives to ``on_event`` (every process) and ``on_admit`` (the first)."""

    def __init__(self, place: SiblingPlace) -> None:
        self.place = place
        self.on_event: OnEvent | None = None
        self.on_admit: OnAdmit | None = None
        self.dropped = 0
        self._closed = threading.Event()
        self._path = socket_path(place.folder, place.index)
        self._path.unlink(missing_ok=True)  # left by a process of this index that crashed
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            self._socket.bind(str(self._path))
            self._socket.settimeout(RECEIVE_TIMEOUT_S)
        except BaseException:
            self._socket.close()
            raise
        self._sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        # Never waits: a process that stopped reading (hung, paused) must not slow the one
        # publishing (an indexing pass announces every document).
        self._sender.setblocking(False)
        self._send_lock = threading.Lock()
        self._thread = threading.Thread(
            target=self._receive, name=f"lorebase-siblings-{place.index}", daemon=True
        )
        self._thread.start()

    def broadcast(self, message: dict[str, object]) -> None:
        """To every other process (not this one)."""
        for index in range(self.place.count):
            if index != self.place.index:
                self.send(index, message)

    def send(self, index: int, message: dict[str, object]) -> bool:
        """To process ``index``; False when it could not be handed over (not listening, gone,
        or its socket full)."""
        if self._closed.is_set():
            return False
        data = json.dumps(message, separators=(",", ":")).encode()
        if len(data) > MAX_MESSAGE_BYTES:
            log.warning("a message to the other serving processes was too large; dropped")
            return False
        try:
            with self._send_lock:
                self._sender.sendto(data, str(socket_path(self.place.folder, index)))
        except OSError as error:  # FileNotFoundError, ConnectionRefusedError, BlockingIOError
            self.dropped += 1
            log.debug("serving process %d did not take a message (%s)", index, type(error).__name__)
            return False
        return True

    def close(self) -> None:
        """Stop receiving; this process's socket file is removed. Idempotent."""
        if self._closed.is_set():
            return
        self._closed.set()
        if self._thread is not threading.current_thread():
            self._thread.join(RECEIVE_TIMEOUT_S * 4)
        self._socket.close()
        self._sender.close()
        self._path.unlink(missing_ok=True)

    def _receive(self) -> None:
        while not self._closed.is_set():
            try:
                data = self._socket.recv(MAX_MESSAGE_BYTES)
            except TimeoutError:
                continue
            except OSError:
                return  # closed under us
            try:
                self._dispatch(json.loads(data))
            except Exception as error:  # a malformed message, or a handler that failed
                log.warning(
                    "a message from another serving process was not handled (%s)",
                    type(error).__name__,
                )

    def _dispatch(self, message: dict[str, object]) -> None:
        event = message.get("event")
        if isinstance(event, dict) and self.on_event is not None:
            self.on_event(event)
        admit = message.get("admit")
        if isinstance(admit, list) and self.on_admit is not None:
            kb_id, document_id = admit
            self.on_admit(int(kb_id), None if document_id is None else str(document_id))


class SiblingTransport(EventTransport):
    """Events to this process's subscribers at once and to every other serving process's
    through :class:`SiblingChannel`; closing it closes the channel."""

    def __init__(self, channel: SiblingChannel) -> None:
        super().__init__()
        self.channel = channel
        channel.on_event = self.receive

    def send(self, event: Event) -> None:
        self.receive(event)
        with contextlib.suppress(Exception):  # never raises: a publisher is mid-job
            self.channel.broadcast({"event": event})

    def close(self) -> None:
        super().close()
        self.channel.close()


class ForwardingQueue:
    """The ingestion queue of a process other than the indexer: each job goes to the
    indexer's queue. Nothing runs here (``start``/``stop`` do nothing, ``depth`` is 0)."""

    def __init__(self, channel: SiblingChannel, indexer: int = 0) -> None:
        self.channel = channel
        self.indexer = indexer
        self.stats = QueueStats()

    @property
    def depth(self) -> int:
        return 0

    def admit(self, kb_id: int, document_id: str | None = None) -> bool:
        """Handed to the indexer, or an upload (True); a pass the indexer is not listening
        for (False: asked again, later). An upload not handed over is stored ``pending``
        already: the indexer's sweep finds it once it listens again (a restart)."""
        handed = self.channel.send(self.indexer, {"admit": [kb_id, document_id]})
        if handed:
            self.stats.accepted += 1
        else:
            self.stats.rejected += 1
        return handed or document_id is not None

    def sweep_now(self) -> int:
        return 0

    def start(self) -> None:
        return None

    def stop(self, timeout: float = 30.0) -> None:
        return None

    def join(self, timeout: float = 30.0) -> bool:
        return True
