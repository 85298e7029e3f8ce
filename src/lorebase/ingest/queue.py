"""The ingestion queue, the one owner of background work: bounded, non-blocking admission,
a pool of worker threads, a drain sweep.

A job is an uploaded document to index ``(kb_id, document_id)`` or a pass over a base's
folders ``(kb_id, None)`` (a sync or reindex asked for over HTTP). Admission never waits: a
full queue answers ``False`` (the HTTP layer turns that into 503 with ``Retry-After``) and the
stored upload stays ``pending``; the drain sweep re-admits pending uploads as room frees up, so
nothing accepted is lost. A document already queued or in flight is never queued twice; a pass
already waiting for a base is not queued again (one asked for while a pass runs is, so that
what changed meanwhile is seen). Stopping lets each worker finish its current job.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal, Protocol

logger = logging.getLogger(__name__)

DEFAULT_QUEUE_SIZE = 256
SWEEP_SECONDS = 5.0

Job = tuple[int, str | None]  # (knowledge base id, document id), or (id, None): a folder pass
Admission = Literal["queued", "waiting", "full"]
"""What admitting a job came to: queued now, already on its way, or turned away."""


@dataclass(slots=True)
class QueueStats:
    """Counts since the queue was made (metrics): admissions, refusals, jobs finished."""

    accepted: int = 0
    rejected: int = 0
    done: int = 0
    failed: int = 0


class JobQueue(Protocol):
    """What the service asks of an ingestion queue: this process's in-memory one
    (:class:`IngestQueue`, the embedded default) or the jobs table every process shares
    (:class:`~lorebase.ingest.jobs_postgres.PostgresJobQueue`)."""

    stats: QueueStats

    @property
    def depth(self) -> int: ...

    def admit(self, kb_id: int, document_id: str | None = None) -> bool: ...

    def sweep_now(self) -> int: ...

    def start(self) -> None: ...

    def stop(self, timeout: float = 30.0) -> None: ...

    def join(self, timeout: float = 30.0) -> bool: ...


Runner = Callable[[int, str | None], None]
Abandon = Callable[[int, str], None]
QueueFactory = Callable[[Runner, Callable[[], Iterable[Job]], Abandon], JobQueue]
"""Builds the queue from what the service gives it: the job runner, the listing of pending
uploads, and what to do with an upload whose job was cut off too often."""


class BackgroundWork:
    """What every queue shares: admission counted (``_admit`` says what became of a job), the
    drain sweep, ``workers`` threads each running one job after another (``run_one``), the
    threads of ``_helpers`` (the sweeper; a heartbeat), stopping them, and one job run with its
    outcome counted and logged. A queue implements the rest of :class:`JobQueue`."""

    IDLE_SECONDS = 0.0
    """How long a worker waits when ``run_one`` found nothing to run."""

    def __init__(
        self,
        process: Runner,
        pending: Callable[[], Iterable[Job]],
        *,
        workers: int,
        sweep_seconds: float,
    ) -> None:
        self._process = process
        self._pending = pending
        self._workers = workers
        self._sweep_seconds = sweep_seconds
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._threads: list[threading.Thread] = []
        self._counting = threading.Lock()
        self.stats = QueueStats()

    def admit(self, kb_id: int, document_id: str | None = None) -> bool:
        """Queue a document (or, with no document, a pass over the base's folders) unless it
        is already on its way (True: it is, or now is); False when the queue is full."""
        return self._counted(self._admit(kb_id, document_id)) != "full"

    def sweep_now(self) -> int:
        """Admit pending uploads that are not queued yet; returns how many were admitted."""
        admitted = 0
        for kb_id, document_id in self._pending():
            admission = self._counted(self._admit(kb_id, document_id))
            if admission == "full":
                break
            admitted += admission == "queued"
        return admitted

    def start(self) -> None:
        self._stop.clear()
        targets = [(self._work, f"lorebase-ingest-{n}") for n in range(self._workers)]
        for target, name in [*targets, *self._helpers()]:
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout: float = 30.0) -> None:
        """Workers finish the job they hold; waiting jobs stay where the queue keeps them."""
        self._stop.set()
        self._wake.set()
        for thread in self._threads:
            thread.join(timeout)
        self._threads = []

    def _run(self, kb_id: int, document_id: str | None) -> None:
        """One job; what it raises is counted and logged (by its class only: a message might
        quote what the job was reading), never raised — the document's (or base's) state
        says what failed."""
        try:
            self._process(kb_id, document_id)
            self.stats.done += 1
        except Exception as error:
            self.stats.failed += 1
            logger.error(
                "a background job for knowledge base %d failed (%s)", kb_id, type(error).__name__
            )

    def run_one(self) -> bool:
        """Take and run one job (a worker's step); False when there was none."""
        raise NotImplementedError

    def _admit(self, kb_id: int, document_id: str | None) -> Admission:
        raise NotImplementedError

    def _counted(self, admission: Admission) -> Admission:
        with self._counting:
            if admission == "queued":
                self.stats.accepted += 1
            elif admission == "full":
                self.stats.rejected += 1
        return admission

    def _work(self) -> None:
        while not self._stop.is_set():
            try:
                if self.run_one():
                    continue
            except Exception as error:  # a database unreachable for a moment
                logger.warning("taking a job failed (%s); retrying", type(error).__name__)
            self._stop.wait(self.IDLE_SECONDS)

    def _helpers(self) -> list[tuple[Callable[[], None], str]]:
        """The other threads, as ``(target, name)``."""
        return [(self._sweep, "lorebase-sweep")]

    def _sweep(self) -> None:
        """Every few seconds, and at once when woken (``_wake``)."""
        while not self._stop.is_set():
            self._wake.wait(self._sweep_seconds)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                self.sweep_now()
            except Exception:  # a busy or unreachable database; the next sweep tries again
                continue


class IngestQueue(BackgroundWork):
    def __init__(
        self,
        process: Runner,
        pending: Callable[[], Iterable[Job]],
        *,
        size: int = DEFAULT_QUEUE_SIZE,
        workers: int = 2,
        sweep_seconds: float = SWEEP_SECONDS,
    ) -> None:
        super().__init__(process, pending, workers=workers, sweep_seconds=sweep_seconds)
        self._queue: queue.Queue[Job] = queue.Queue(maxsize=size)
        self._queued: set[Job] = set()
        self._running: set[Job] = set()
        self._lock = threading.Lock()
        self._backlog = False

    @property
    def depth(self) -> int:
        return self._queue.qsize()

    def _admit(self, kb_id: int, document_id: str | None) -> Admission:
        job: Job = (kb_id, document_id)
        with self._lock:
            if self._waiting(job):
                return "waiting"
            try:
                self._queue.put_nowait(job)
            except queue.Full:
                self._backlog = True  # refill as soon as a worker frees a slot
                return "full"
            self._queued.add(job)
        return "queued"

    def _waiting(self, job: Job) -> bool:
        """Queued, or (a document) in flight. Call with the lock held."""
        return job in self._queued or (job[1] is not None and job in self._running)

    def sweep_now(self) -> int:
        self._backlog = False
        return super().sweep_now()

    def run_one(self) -> bool:
        """Take the next job (waiting a moment for one) and run it; False when there was
        none. A slot freed while uploads were turned away wakes the sweep at once."""
        try:
            job = self._queue.get(timeout=0.2)
        except queue.Empty:
            return False
        with self._lock:
            self._queued.discard(job)
            self._running.add(job)
        try:
            self._run(*job)
        finally:
            with self._lock:
                self._running.discard(job)
            self._queue.task_done()
            if self._backlog:  # uploads were turned away: a slot is free now
                self._wake.set()
        return True

    def join(self, timeout: float = 30.0) -> bool:
        """Wait until the queue is empty and nothing is in flight (tests, shutdown)."""
        done = threading.Event()

        def waiter() -> None:
            self._queue.join()
            done.set()

        threading.Thread(target=waiter, daemon=True).start()
        return done.wait(timeout)
