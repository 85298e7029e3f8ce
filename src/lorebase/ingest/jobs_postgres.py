"""The ingestion queue shared by every process over one PostgreSQL database: a ``jobs`` table.

The same jobs as :class:`~lorebase.ingest.queue.IngestQueue` — an upload ``(kb_id,
document_id)`` or a pass over a base's folders ``(kb_id, None)`` — and the same promises:
admission never waits (a full queue answers ``False``; the bound counts waiting jobs of every
process), a document waiting or in flight is never queued twice, a pass waiting for a base is
not queued again, and the drain sweep re-admits pending uploads as room frees up.

Any process may run workers (``serve`` unless told ``--no-ingest``, ``lorebase worker``). A
worker claims the oldest claimable job with ``FOR UPDATE SKIP LOCKED`` and holds it under a
lease its process renews (a heartbeat) while the job runs; a job whose lease ran out (its
worker was killed, its machine lost) is claimed again by another worker. A job claimed more
than ``max_attempts`` times is abandoned (``abandon`` is called, which fails the document with a
reason) instead of killing worker after worker. A job row is deleted when its work is done.

A folder belongs to the machine that reads it: a folder pass is claimable only by workers on
the machine (host name) that asked for it.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from lorebase.ingest.queue import (
    DEFAULT_QUEUE_SIZE,
    SWEEP_SECONDS,
    Admission,
    BackgroundWork,
    Job,
    Runner,
)
from lorebase.store.postgres.migrator import PgMigration, migrate

if TYPE_CHECKING:
    from lorebase.store.postgres.database import PostgresDatabase

logger = logging.getLogger(__name__)

LEASE_SECONDS = 30.0
MAX_ATTEMPTS = 3
IDLE_POLL_SECONDS = 0.5
_ADMIT_LOCK = 0x6C62_6A6F_6273  # pg_advisory_xact_lock key: admissions, one at a time
_WAITING_SQL = "SELECT count(*) FROM jobs WHERE leased_by IS NULL"

_MIGRATIONS = (
    PgMigration(
        1,
        "jobs",
        (
            """CREATE TABLE jobs (
                id BIGSERIAL PRIMARY KEY,
                kb_id BIGINT NOT NULL,
                document_id TEXT,
                machine TEXT,
                enqueued_at TIMESTAMPTZ NOT NULL DEFAULT now(),
                leased_by TEXT,
                lease_until TIMESTAMPTZ,
                attempts INTEGER NOT NULL DEFAULT 0
            )""",
            # A document waiting or in flight is queued once; a pass waiting for a base too
            # (one asked for while a pass runs is queued: what changed meanwhile is seen).
            "CREATE UNIQUE INDEX jobs_document ON jobs (kb_id, document_id) "
            "WHERE document_id IS NOT NULL",
            "CREATE UNIQUE INDEX jobs_waiting_pass ON jobs (kb_id) "
            "WHERE document_id IS NULL AND leased_by IS NULL",
            "CREATE INDEX jobs_claimable ON jobs (id) WHERE leased_by IS NULL",
            "CREATE INDEX jobs_leases ON jobs (lease_until) WHERE leased_by IS NOT NULL",
        ),
    ),
)


class PostgresJobQueue(BackgroundWork):
    """The jobs table as this process sees it: admission, workers, heartbeat, sweep."""

    IDLE_SECONDS = IDLE_POLL_SECONDS

    def __init__(
        self,
        database: PostgresDatabase,
        process: Runner,
        pending: Callable[[], Iterable[Job]],
        *,
        size: int = DEFAULT_QUEUE_SIZE,
        workers: int = 2,
        sweep_seconds: float = SWEEP_SECONDS,
        lease_seconds: float = LEASE_SECONDS,
        max_attempts: int = MAX_ATTEMPTS,
        abandon: Callable[[int, str], None] | None = None,
        machine: str | None = None,
    ) -> None:
        super().__init__(process, pending, workers=workers, sweep_seconds=sweep_seconds)
        self._db = database
        self._abandon = abandon
        self._size = size
        self._lease = lease_seconds
        self._max_attempts = max_attempts
        self.machine = machine or socket.gethostname()
        self.worker_id = f"{self.machine}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._held: set[int] = set()
        self._held_lock = threading.Lock()
        migrate(database, _MIGRATIONS, table="job_migrations")

    # -- admission -------------------------------------------------------------------------------
    @property
    def depth(self) -> int:
        """Jobs waiting for a worker, in every process."""
        with self._db.read() as conn:
            return int(conn.execute(_WAITING_SQL).fetchone()[0])

    def _admit(self, kb_id: int, document_id: str | None) -> Admission:
        """Under an advisory lock of the admissions, so the bound counts every process's."""
        machine = self.machine if document_id is None else None
        with self._db.write() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_ADMIT_LOCK,))
            if self._waiting(conn, kb_id, document_id):
                return "waiting"
            if conn.execute(_WAITING_SQL).fetchone()[0] >= self._size:
                return "full"
            conn.execute(
                "INSERT INTO jobs (kb_id, document_id, machine) VALUES (%s, %s, %s)",
                (kb_id, document_id, machine),
            )
        return "queued"

    @staticmethod
    def _waiting(conn: Any, kb_id: int, document_id: str | None) -> bool:
        if document_id is None:
            row = conn.execute(
                "SELECT 1 FROM jobs WHERE kb_id = %s AND document_id IS NULL AND leased_by IS NULL",
                (kb_id,),
            ).fetchone()
        else:
            row = conn.execute(
                "SELECT 1 FROM jobs WHERE kb_id = %s AND document_id = %s", (kb_id, document_id)
            ).fetchone()
        return row is not None

    # -- workers ---------------------------------------------------------------------------------
    def _helpers(self) -> list[tuple[Callable[[], None], str]]:
        return [(self._heartbeat, "lorebase-heartbeat"), *super()._helpers()]

    def claim(self) -> tuple[int, int, str | None, int] | None:
        """The oldest job this process may run, leased to it: ``(job id, kb id, document id,
        attempts)``; None when there is none."""
        with self._db.write() as conn:
            row = conn.execute(
                """UPDATE jobs SET leased_by = %(me)s,
                       lease_until = now() + make_interval(secs => %(lease)s),
                       attempts = attempts + 1
                   WHERE id = (
                       SELECT id FROM jobs
                       WHERE (leased_by IS NULL OR lease_until < now())
                         AND (machine IS NULL OR machine = %(machine)s)
                       ORDER BY id
                       FOR UPDATE SKIP LOCKED
                       LIMIT 1)
                   RETURNING id, kb_id, document_id, attempts""",
                {"me": self.worker_id, "lease": self._lease, "machine": self.machine},
            ).fetchone()
        if row is None:
            return None
        with self._held_lock:
            self._held.add(row[0])
        return int(row[0]), int(row[1]), row[2], int(row[3])

    def _finish(self, job_id: int) -> None:
        """Done: the row goes, unless the lease was lost meanwhile (another worker holds the
        job again and will delete it)."""
        with self._held_lock:
            self._held.discard(job_id)
        with self._db.write() as conn:
            conn.execute(
                "DELETE FROM jobs WHERE id = %s AND leased_by = %s", (job_id, self.worker_id)
            )

    def run_one(self) -> bool:
        """Claim and run one job (a worker's step); False when there was none."""
        claimed = self.claim()
        if claimed is None:
            return False
        job_id, kb_id, document_id, attempts = claimed
        try:
            if attempts > self._max_attempts and document_id is not None:
                self._give_up(kb_id, document_id)
            else:
                self._run(kb_id, document_id)
        finally:
            self._finish(job_id)
        return True

    def _give_up(self, kb_id: int, document_id: str) -> None:
        """A job cut off too often: counted as failed, its document failed with a reason."""
        self.stats.failed += 1
        if self._abandon is None:
            return
        try:
            self._abandon(kb_id, document_id)
        except Exception as error:  # the next start's sweep finds the document again
            logger.error("failing an abandoned upload failed (%s)", type(error).__name__)

    def _heartbeat(self) -> None:
        """Renew the leases of the jobs this process holds, three times per lease."""
        while not self._stop.wait(self._lease / 3):
            with self._held_lock:
                held = list(self._held)
            if not held:
                continue
            try:
                with self._db.write() as conn:
                    conn.execute(
                        "UPDATE jobs SET lease_until = now() + make_interval(secs => %s) "
                        "WHERE id = ANY(%s) AND leased_by = %s",
                        (self._lease, held, self.worker_id),
                    )
            except Exception as error:
                logger.warning("renewing job leases failed (%s)", type(error).__name__)

    def join(self, timeout: float = 30.0) -> bool:
        """Wait until no job is left in the table, in any process (tests, shutdown)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._db.read() as conn:
                if conn.execute("SELECT count(*) FROM jobs").fetchone()[0] == 0:
                    return True
            time.sleep(0.1)
        return False
