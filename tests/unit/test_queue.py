"""The ingestion queue: admission, deduplication, and refilling as soon as a slot frees."""

from __future__ import annotations

import threading
from collections.abc import Iterator

from lorebase.ingest.queue import IngestQueue, Job

NEVER = 3600.0  # a sweep interval no test waits for


class Uploads:
    """Pending uploads as the store would list them; processing one removes it."""

    def __init__(self, count: int) -> None:
        self.pending: list[Job] = [(1, f"{n:032x}") for n in range(count)]
        self.done: list[Job] = []
        self.all_done = threading.Event()
        self.lock = threading.Lock()

    def process(self, kb_id: int, document_id: str | None) -> None:
        with self.lock:
            self.pending.remove((kb_id, document_id))
            self.done.append((kb_id, document_id))
            if not self.pending:
                self.all_done.set()

    def listing(self) -> Iterator[Job]:
        with self.lock:
            return iter(list(self.pending))


def test_a_backlog_refills_as_soon_as_a_slot_frees_not_at_the_next_sweep() -> None:
    uploads = Uploads(12)
    queue = IngestQueue(uploads.process, uploads.listing, size=1, workers=1, sweep_seconds=NEVER)
    admitted = [queue.admit(*job) for job in list(uploads.pending)]
    assert admitted.count(True) == 1  # one slot: the others are turned away (503 upstream)
    queue.start()
    try:
        assert uploads.all_done.wait(30), f"{len(uploads.done)} of 12 done"
    finally:
        queue.stop()
    assert sorted(uploads.done) == sorted((1, f"{n:032x}") for n in range(12))


def test_a_pass_is_queued_once_while_it_waits_and_again_while_it_runs() -> None:
    started, release = threading.Event(), threading.Event()
    ran: list[Job] = []

    def process(kb_id: int, document_id: str | None) -> None:
        ran.append((kb_id, document_id))
        started.set()
        release.wait(10)

    queue = IngestQueue(process, lambda: iter(()), size=8, workers=1, sweep_seconds=NEVER)
    assert queue.admit(1) and queue.admit(1) and queue.depth == 1  # waiting: once
    queue.start()
    try:
        assert started.wait(10)
        assert queue.admit(1) and queue.depth == 1  # running: once more, for what changed
        assert queue.admit(1, "a" * 32) and queue.admit(1, "a" * 32) and queue.depth == 2
        release.set()
        assert queue.join(10)
    finally:
        queue.stop()
    assert ran == [(1, None), (1, None), (1, "a" * 32)]
