"""Usage accounting: what each embedding (and chat) call cost, per knowledge base, user,
model and role, kept in aggregate.

:class:`UsageMeter` is what the hot paths touch: :meth:`UsageMeter.record` adds a call to an
in-memory bucket (hour, base, user, model, role) under a lock — no I/O, no row per call — and
keeps this process's running totals for the metrics. :meth:`UsageMeter.flush` hands the
buckets to the store, which adds them to one row per bucket (an upsert): at the end of a
pass, every :data:`FLUSH_SECONDS` while serving, before usage is read, and at close.

Who is recorded comes from :func:`acting`, a context variable the service sets around a
caller's request (a search, a note): the thread that embeds for it sees it. Work done in the
background (a queued upload, a folder pass) is recorded without a user.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

HOUR = 3600
FLUSH_SECONDS = 30.0
"""How often a server writes what it counted (and at the end of every pass)."""
NO_BASE = 0
"""The base of a call that served several bases at once (one query over several)."""

_actor: contextvars.ContextVar[str | None] = contextvars.ContextVar("usage_actor", default=None)


class Role(StrEnum):
    """What a model call was for: embedding (passes, queries, re-embeds) or chat (``ask``)."""

    EMBEDDING = "embedding"
    CHAT = "chat"


@dataclass(frozen=True, slots=True)
class UsageKey:
    hour: int  # the start of the hour, in seconds since the epoch (UTC)
    kb_id: int  # NO_BASE: several bases at once
    user: str  # "": no user (the operator's command line, background work)
    model: str  # the named embedder (or the chat model)
    role: Role


@dataclass(frozen=True, slots=True)
class UsageRow:
    """What was counted in one bucket (or, read back, summed over a window)."""

    key: UsageKey
    calls: int
    texts: int
    tokens: int
    seconds: float


class UsageStore(Protocol):
    def add_usage(self, rows: Sequence[UsageRow]) -> None: ...


@contextmanager
def acting(user: str | None) -> Iterator[None]:
    """Record the calls made inside the block as ``user``'s."""
    token = _actor.set(user)
    try:
        yield
    finally:
        _actor.reset(token)


def actor() -> str:
    """Whose calls are being made now ("" for none)."""
    return _actor.get() or ""


class UsageMeter:
    """The in-memory buckets and this process's totals (see the module docstring)."""

    def __init__(self, store: UsageStore, clock: Callable[[], float]) -> None:
        self._store = store
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets: dict[UsageKey, list[float]] = {}
        self._totals: dict[tuple[Role, str], list[float]] = {}

    def record(
        self,
        kb_id: int | None,
        model: str,
        role: Role,
        *,
        texts: int,
        tokens: int,
        seconds: float,
        user: str | None = None,
    ) -> None:
        """Count one call (no I/O), as ``user``'s (default: whoever :func:`acting` names)."""
        hour = int(self._clock()) // HOUR * HOUR
        who = actor() if user is None else user
        key = UsageKey(hour, NO_BASE if kb_id is None else kb_id, who, model, role)
        with self._lock:
            for bucket in (
                self._buckets.setdefault(key, [0, 0, 0, 0.0]),
                self._totals.setdefault((role, model), [0, 0, 0, 0.0]),
            ):
                bucket[0] += 1
                bucket[1] += texts
                bucket[2] += tokens
                bucket[3] += seconds

    def flush(self) -> None:
        """Write what was counted since the last flush (kept for the next one if the write
        fails)."""
        with self._lock:
            taken, self._buckets = self._buckets, {}
        if not taken:
            return
        rows = [UsageRow(key, int(c), int(t), int(k), s) for key, (c, t, k, s) in taken.items()]
        try:
            self._store.add_usage(rows)
        except BaseException:
            with self._lock:  # put them back: counted at the next flush
                for key, values in taken.items():
                    bucket = self._buckets.setdefault(key, [0, 0, 0, 0.0])
                    for index, value in enumerate(values):
                        bucket[index] += value
            raise

    def totals(self) -> dict[tuple[str, str], tuple[int, int, int, float]]:
        """What this process counted since it started, by (role, model): calls, texts,
        tokens, seconds (the metrics)."""
        with self._lock:
            return {
                (role.value, model): (int(c), int(t), int(k), s)
                for (role, model), (c, t, k, s) in self._totals.items()
            }


def usage_json(rows: Sequence[UsageRow], names: Mapping[int, str]) -> list[dict[str, Any]]:
    """Rows as the API and ``--json`` show them: the base's id and name (``names``; null for
    several bases, or one since deleted), the user (null for none), the model, the role, and
    what was counted — ``tokens`` among them. Pure."""
    return [
        {
            "knowledge_base_id": None if row.key.kb_id == NO_BASE else row.key.kb_id,
            "knowledge_base": names.get(row.key.kb_id),
            "user": row.key.user or None,
            "model": row.key.model,
            "role": row.key.role.value,
            "calls": row.calls,
            "texts": row.texts,
            "tokens": row.tokens,
            "seconds": round(row.seconds, 3),
            "since": float(row.key.hour),
        }
        for row in rows
    ]
