"""Events across processes: PostgreSQL ``LISTEN``/``NOTIFY`` on one channel of the shared
database, so a client of any API process hears what any process published.

``send`` runs ``pg_notify`` on a connection of its own (serialised: one publisher's events
arrive in order). A listener thread, on another dedicated connection (never a pooled one: a
``LISTEN`` belongs to its session), hands every notification — this process's own included —
to the bus, so each bus delivers each event exactly once. When that connection drops (the
server restarted, an administrator ended it) the thread reconnects with backoff; events
published while it was away are not replayed (streams are live views, not a log).

Payloads are the event dictionaries as JSON (ids, states, counts): far below the server's limit
of 8000 bytes. One over it is dropped, with a warning naming its kind. Logs name the server,
an event's kind and an error's class, never a payload.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from lorebase.errors import Unavailable
from lorebase.events import Event, EventTransport
from lorebase.store.postgres.database import CONNECT_TIMEOUT_SECONDS, redacted

if TYPE_CHECKING:
    import psycopg

CHANNEL = "lorebase_events"
NOTIFY_LIMIT_BYTES = 8000  # a payload must be shorter than this (PostgreSQL's default build)
POLL_SECONDS = 0.2  # the listener checks for close() this often
CLOSE_JOIN_SECONDS = 0.8  # close() waits this long for the listener thread
BACKOFF_FIRST_SECONDS = 0.25
BACKOFF_MAX_SECONDS = 30.0
SENDER_RETRY_SECONDS = 1.0  # after a failed connect, publishers drop events this long
LISTEN_APPLICATION = "lorebase-events-listen"
NOTIFY_APPLICATION = "lorebase-events-notify"

logger = logging.getLogger(__name__)


def encode(event: Event) -> str | None:
    """The ``NOTIFY`` payload of ``event``; None (and a warning) when it cannot be one."""
    try:
        payload = json.dumps(event, separators=(",", ":"))
    except (TypeError, ValueError):
        logger.warning("dropped a %s event: it is not JSON", _kind(event))
        return None
    size = len(payload.encode("utf-8"))
    if size >= NOTIFY_LIMIT_BYTES:
        logger.warning(
            "dropped a %s event: %d bytes, over the %d-byte NOTIFY limit",
            _kind(event),
            size,
            NOTIFY_LIMIT_BYTES,
        )
        return None
    return payload


def decode(payload: str) -> Event | None:
    """The event a payload carries; None (and a warning) for anything that is not one."""
    try:
        event = json.loads(payload)
    except ValueError:
        event = None
    if (
        not isinstance(event, dict)
        or not isinstance(event.get("type"), str)
        or type(event.get("knowledge_base_id")) is not int
    ):
        logger.warning("ignored a notification on the events channel that is not an event")
        return None
    return event


def _kind(event: Event) -> str:
    kind = event.get("type")
    return kind if isinstance(kind, str) and kind.isidentifier() else "malformed"


class PostgresTransport(EventTransport):
    """Events through one PostgreSQL database: ``EventBus(transport=PostgresTransport(url))``.

    The bus attaches it, which connects and starts listening (raising
    :class:`~lorebase.errors.Unavailable` when the server cannot be reached);
    ``EventBus.close()`` closes it."""

    def __init__(self, url: str, *, channel: str = CHANNEL) -> None:
        try:
            import psycopg  # noqa: F401  (the install hint, before anything else)
        except ImportError as error:
            raise Unavailable(
                "the PostgreSQL backend is not installed; run `pip install 'lorebase[postgres]'`"
            ) from error
        super().__init__()
        self.url = url
        self.name = redacted(url)
        self.channel = channel
        self._send_lock = threading.Lock()
        self._sender: psycopg.Connection[tuple[object, ...]] | None = None
        self._sender_retry_at = 0.0  # publishers do not wait on an unreachable server
        self._stopping = threading.Event()
        self._listener: threading.Thread | None = None

    # -- the bus's side ------------------------------------------------------------------------
    def attach(self, deliver: Callable[[Event], None]) -> None:
        """Connect and ``LISTEN`` before returning (so nothing published afterwards is
        missed), then hand the connection to the listener thread."""
        super().attach(deliver)
        listening = self._connect(LISTEN_APPLICATION)
        if listening is None:
            raise Unavailable(
                f"cannot reach the PostgreSQL database {self.name} for events; check that the "
                "server is running and the URL is right"
            )
        self._listener = threading.Thread(
            target=self._listen, args=(listening,), name="lorebase-events-listen", daemon=True
        )
        self._listener.start()

    def send(self, event: Event) -> None:
        payload = encode(event)
        if payload is None or self._stopping.is_set():
            return
        import psycopg

        with self._send_lock:
            for attempt in (1, 2):  # a connection the server dropped fails once: reconnect
                if self._sender is None or self._sender.closed:
                    if time.monotonic() < self._sender_retry_at:
                        break
                    self._sender = self._connect(NOTIFY_APPLICATION)
                    if self._sender is None:
                        self._sender_retry_at = time.monotonic() + SENDER_RETRY_SECONDS
                        break
                try:
                    self._sender.execute("SELECT pg_notify(%s, %s)", (self.channel, payload))
                    return
                except psycopg.Error as error:
                    self._drop_sender()
                    if attempt == 2 or not isinstance(error, psycopg.OperationalError):
                        logger.warning(
                            "could not send a %s event to %s (%s)",
                            _kind(event),
                            self.name,
                            type(error).__name__,
                        )
                        return
        logger.warning("dropped a %s event: %s is unreachable", _kind(event), self.name)

    def close(self) -> None:
        """Stop the listener (within a second) and close both connections; idempotent."""
        self._stopping.set()
        super().close()
        if self._listener is not None:
            self._listener.join(CLOSE_JOIN_SECONDS)
        with self._send_lock:
            self._drop_sender()

    # -- connections ---------------------------------------------------------------------------
    def _connect(self, application: str) -> psycopg.Connection[tuple[object, ...]] | None:
        """A new autocommit connection (listening, for the listener); None when it failed."""
        import psycopg
        from psycopg import sql

        try:
            conn = psycopg.connect(
                self.url,
                autocommit=True,
                connect_timeout=CONNECT_TIMEOUT_SECONDS,
                application_name=application,
            )
        except psycopg.Error as error:
            logger.warning("cannot connect to %s for events (%s)", self.name, type(error).__name__)
            return None
        if application == LISTEN_APPLICATION:
            try:
                conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
            except psycopg.Error as error:
                logger.warning("cannot listen on %s (%s)", self.name, type(error).__name__)
                conn.close()
                return None
        return conn

    def _drop_sender(self) -> None:
        if self._sender is not None:
            _close_quietly(self._sender)
            self._sender = None

    # -- the listener thread -------------------------------------------------------------------
    def _listen(self, conn: psycopg.Connection[tuple[object, ...]] | None) -> None:
        import psycopg

        delay = BACKOFF_FIRST_SECONDS
        while not self._stopping.is_set():
            if conn is None:
                conn = self._connect(LISTEN_APPLICATION)
                if conn is None:
                    self._stopping.wait(delay)
                    delay = min(delay * 2, BACKOFF_MAX_SECONDS)
                    continue
                if self._stopping.is_set():
                    break
                logger.info("the event listener reconnected to %s", self.name)
                delay = BACKOFF_FIRST_SECONDS
            try:
                for notification in conn.notifies(timeout=POLL_SECONDS):
                    if notification.channel == self.channel:
                        self._dispatch(notification.payload)
                    if self._stopping.is_set():
                        break
            except psycopg.Error as error:
                logger.warning(
                    "the event listener lost its connection to %s (%s); reconnecting",
                    self.name,
                    type(error).__name__,
                )
                _close_quietly(conn)
                conn = None
                self._stopping.wait(delay)
        if conn is not None:
            _close_quietly(conn)

    def _dispatch(self, payload: str) -> None:
        event = decode(payload)
        if event is None:
            return
        try:
            self.receive(event)
        except Exception as error:  # the listener outlives any one delivery
            logger.warning("could not deliver a %s event (%s)", _kind(event), type(error).__name__)


def _close_quietly(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    with contextlib.suppress(Exception):  # a connection the server dropped may complain
        conn.close()
