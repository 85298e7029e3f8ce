"""The upload queue: bounded, non-blocking admission, a pool of worker threads, a drain sweep.

Admission never waits: a full queue answers ``False`` (the HTTP layer turns that into 503 with
``Retry-After``) and the stored upload stays ``pending``; the drain sweep re-admits pending
uploads as room frees up, so nothing accepted is lost. A document already queued or in flight
is never queued twice. Stopping lets each worker finish its current document.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

DEFAULT_QUEUE_SIZE = 256
SWEEP_SECONDS = 5.0

Job = tuple[int, str]  # (knowledge base id, document id)


@dataclass(slots=True)
class QueueStats:
    accepted: int = 0
    rejected: int = 0
    done: int = 0
    failed: int = 0


class IngestQueue:
    def __init__(
        self,
        process: Callable[[int, str], None],
        pending: Callable[[], Iterable[Job]],
        *,
        size: int = DEFAULT_QUEUE_SIZE,
        workers: int = 2,
        sweep_seconds: float = SWEEP_SECONDS,
    ) -> None:
        self._process = process
        self._pending = pending
        self._queue: queue.Queue[Job] = queue.Queue(maxsize=size)
        self._known: set[str] = set()  # queued or in flight
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._workers = workers
        self._sweep_seconds = sweep_seconds
        self.stats = QueueStats()

    @property
    def depth(self) -> int:
        return self._queue.qsize()

    def start(self) -> None:
        for n in range(self._workers):
            thread = threading.Thread(target=self._work, name=f"lorebase-ingest-{n}", daemon=True)
            thread.start()
            self._threads.append(thread)
        sweeper = threading.Thread(target=self._sweep, name="lorebase-sweep", daemon=True)
        sweeper.start()
        self._threads.append(sweeper)

    def stop(self, timeout: float = 30.0) -> None:
        """Workers finish the document they hold; queued ones stay pending in the store."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout)

    def admit(self, kb_id: int, document_id: str) -> bool:
        """Queue a document unless it is already queued or in flight (True: it is, or now
        is, on its way); False when the queue is full."""
        with self._lock:
            if document_id in self._known:
                return True
            try:
                self._queue.put_nowait((kb_id, document_id))
            except queue.Full:
                self.stats.rejected += 1
                return False
            self._known.add(document_id)
            self.stats.accepted += 1
            return True

    def sweep_now(self) -> int:
        """Admit pending uploads that are not queued yet; returns how many were admitted."""
        admitted = 0
        for kb_id, document_id in self._pending():
            with self._lock:
                if document_id in self._known:
                    continue
            if not self.admit(kb_id, document_id):
                break
            admitted += 1
        return admitted

    def _work(self) -> None:
        while not self._stop.is_set():
            try:
                kb_id, document_id = self._queue.get(timeout=0.2)
            except queue.Empty:
                continue
            try:
                self._process(kb_id, document_id)
                self.stats.done += 1
            except Exception:  # the document's own state says what failed; keep serving
                self.stats.failed += 1
            finally:
                with self._lock:
                    self._known.discard(document_id)
                self._queue.task_done()

    def _sweep(self) -> None:
        while not self._stop.wait(self._sweep_seconds):
            try:
                self.sweep_now()
            except Exception:  # a busy database; the next sweep tries again
                continue

    def join(self, timeout: float = 30.0) -> bool:
        """Wait until the queue is empty and nothing is in flight (tests, shutdown)."""
        done = threading.Event()

        def waiter() -> None:
            self._queue.join()
            done.set()

        threading.Thread(target=waiter, daemon=True).start()
        return done.wait(timeout)
