"""The jobs table shared by every process (real PostgreSQL): admission and its global bound,
de-duplication, claims with SKIP LOCKED, leases renewed by a heartbeat, reclaim of a dead
worker's job, abandonment after too many attempts, folder passes bound to their machine."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from lorebase.ingest.jobs_postgres import PostgresJobQueue
from lorebase.ingest.queue import Job
from lorebase.store.postgres.database import PostgresDatabase
from waiting import wait_until


@pytest.fixture
def database(postgres_url: str) -> Iterator[PostgresDatabase]:
    db = PostgresDatabase(postgres_url)
    yield db
    db.close()


class Recorder:
    def __init__(self) -> None:
        self.done: list[Job] = []
        self.abandoned: list[Job] = []
        self.lock = threading.Lock()

    def process(self, kb_id: int, document_id: str | None) -> None:
        with self.lock:
            self.done.append((kb_id, document_id))

    def abandon(self, kb_id: int, document_id: str) -> None:
        self.abandoned.append((kb_id, document_id))


def queue(
    database: PostgresDatabase,
    recorder: Recorder,
    pending: list[Job] | None = None,
    **options: Any,
) -> PostgresJobQueue:
    return PostgresJobQueue(
        database, recorder.process, lambda: pending or [], abandon=recorder.abandon, **options
    )


def test_admission_deduplicates_and_is_bounded_across_processes(database: PostgresDatabase) -> None:
    recorder = Recorder()
    one = queue(database, recorder, size=3)
    two = queue(database, recorder, size=3)  # another process on the same database
    assert one.admit(1, "a") and two.admit(1, "a")  # the second finds it waiting
    assert one.depth == 1
    assert two.admit(1, "b") and one.admit(1, None)
    assert two.admit(1, None)  # a pass already waits for base 1
    assert one.depth == 3
    assert not two.admit(2, "c")  # the bound counts every process's waiting jobs
    assert two.stats.rejected == 1


def test_each_job_runs_once_among_competing_workers(database: PostgresDatabase) -> None:
    recorder = Recorder()
    queues = [queue(database, recorder, size=500, workers=2) for _ in range(3)]
    for n in range(60):
        assert queues[n % 3].admit(1, f"doc{n:03d}")
    for q in queues:
        q.start()
    try:
        assert queues[0].join(timeout=30)
    finally:
        for q in queues:
            q.stop()
    assert sorted(recorder.done) == sorted((1, f"doc{n:03d}") for n in range(60))


def test_a_dead_workers_job_is_reclaimed_after_its_lease(database: PostgresDatabase) -> None:
    recorder = Recorder()
    dead = queue(database, recorder, lease_seconds=2)
    dead.admit(1, "a")
    assert dead.claim() is not None  # claimed, then the process "dies": no heartbeat
    alive = queue(database, recorder, lease_seconds=2)
    assert alive.claim() is None  # still leased
    wait_until(alive.run_one, 10, what="the job claimed once its lease ran out")
    assert recorder.done == [(1, "a")]
    assert alive.depth == 0 and alive.join(timeout=1)


def test_a_heartbeat_keeps_a_long_job_leased(database: PostgresDatabase) -> None:
    started, release = threading.Event(), threading.Event()
    runs: list[str | None] = []

    def slow(kb_id: int, document_id: str | None) -> None:
        runs.append(document_id)
        started.set()
        release.wait(10)

    worker = PostgresJobQueue(database, slow, list, lease_seconds=1.5, workers=1)
    other = PostgresJobQueue(database, slow, list, lease_seconds=1.5, workers=1)
    worker.admit(1, "a")
    worker.start()
    try:
        assert started.wait(5)
        # The wait is the test: well past two leases, the heartbeat (every 0.5 s) renewed it.
        time.sleep(3.5)
        assert other.claim() is None
    finally:
        release.set()
        worker.stop()
    assert runs == ["a"]


def test_a_job_that_kills_its_workers_is_abandoned(database: PostgresDatabase) -> None:
    recorder = Recorder()
    q = queue(database, recorder, lease_seconds=0.2, max_attempts=2)
    q.admit(3, "poison")
    assert q.claim() is not None  # a worker dies holding it
    wait_until(q.claim, 10, what="a second claim once the lease ran out")  # dies too
    wait_until(q.run_one, 10, what="a third claim")  # which gives up on it
    assert recorder.abandoned == [(3, "poison")] and recorder.done == []
    assert q.join(timeout=1)


def test_a_folder_pass_runs_on_the_machine_that_asked(database: PostgresDatabase) -> None:
    recorder = Recorder()
    here = queue(database, recorder, machine="here")
    there = queue(database, recorder, machine="there")
    here.admit(1, None)
    there.admit(1, "upload")
    assert there.run_one()  # the upload: any machine
    assert not there.run_one()  # the pass is not its to run
    assert here.run_one()
    assert recorder.done == [(1, "upload"), (1, None)]


def test_the_sweep_admits_pending_uploads_without_jobs(database: PostgresDatabase) -> None:
    recorder = Recorder()
    q = queue(database, recorder, size=2, pending=[(1, "a"), (1, "b"), (1, "c")])
    assert q.sweep_now() == 2  # the bound stops it; the rest waits for room
    assert q.run_one() and q.sweep_now() == 1
