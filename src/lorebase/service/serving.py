"""The background of ``serve`` (and of ``lorebase worker``): :class:`Serving` starts and stops
the ingestion queue's workers and the folder watcher, runs the queue's jobs (an upload is
:class:`Uploads`', a pass over a base's folders the ``run_pass`` it is given) and tells the
queue's sweep what is left to do. Over the embedded store it takes the ingestion lock for each
job (waiting for another indexer, such as `lorebase add`, to finish); it announces each base's
totals after a pass.

Documents an older version made (stale) are re-read at low priority: the folder watcher's
passes leave them, and the sweep queues a few (one per worker) only when nothing else waits
(:class:`~lorebase.service.stale.StaleDocuments`)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator

from lorebase.errors import Conflict, NotFound
from lorebase.events import EventBus
from lorebase.ingest.queue import Job, JobQueue
from lorebase.ingest.report import IngestReport
from lorebase.lock import IngestLock, serving_lock
from lorebase.service.originals import Originals
from lorebase.service.passes import Passes
from lorebase.service.stale import StaleDocuments
from lorebase.service.uploads import Uploads
from lorebase.settings import Settings
from lorebase.store.base import KnowledgeBase, Store
from lorebase.store.states import DocumentState
from lorebase.usage import FLUSH_SECONDS, UsageMeter

log = logging.getLogger(__name__)

WATCHER_JOIN_SECONDS = 30

PassRunner = Callable[[KnowledgeBase, threading.Event], object]
"""How a queued pass over one base runs, stopping when the event is set."""


class Serving:
    """The queue's workers, the folder watcher and the jobs they run."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        events: EventBus,
        queue: JobQueue,
        lock: IngestLock,
        originals: Originals,
        uploads: Uploads,
        passes: Passes,
        run_pass: PassRunner,
        stale: StaleDocuments | None = None,
        usage: UsageMeter | None = None,
    ) -> None:
        """``passes`` watches the folders; ``run_pass`` runs the passes the queue is asked for
        (the service's own ``sync``, the path every pass takes); ``stale`` re-reads what an
        older version made, when the queue has nothing else (None: nothing is re-read in the
        background); ``usage``: the model calls counted in memory, written every
        :data:`~lorebase.usage.FLUSH_SECONDS` while serving and when it stops."""
        self._settings = settings
        self._store = store
        self._events = events
        self._queue = queue
        self._lock = lock
        self._served = serving_lock(settings.data_dir, lock.holder)
        self._originals = originals
        self._uploads = uploads
        self._passes = passes
        self._run_pass = run_pass
        self._stale = stale
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None
        self._usage = usage
        self._flusher: threading.Thread | None = None
        self._serving = False

    def start(self) -> None:
        """Start the queue's workers (unless ``serve.ingest`` is off) and, unless turned off,
        the folder watcher.

        Over the embedded store one process indexes at a time: this one takes the ingestion
        lock for each job (waiting while another holds it), and at start, holding it, puts back
        what a crash left half way and sweeps orphaned blobs of any age. Over a shared store
        other processes index at the same time: the jobs' leases take care of crashed work, and
        orphans are swept only past the grace period (an upload in flight elsewhere has stored
        its original, not yet its row)."""
        if self._serving:
            return
        self._originals.data_key  # noqa: B018  (refuses to start with a missing or wrong key)
        shared = self._settings.shared_store
        place = self._settings.serve.sibling
        another = place is not None and not place.first  # of a server's processes
        if shared:
            self._originals.blobs.sweep_orphans(self._uploads.upload_ids())
        elif another:
            # One of a server's other processes: the first holds the server's lock, put back
            # what a crash left and sweeps (an upload in flight there is not an orphan here),
            # all before it starts the others. Whatever this one indexes (its jobs, as the
            # server's indexer, or a note) waits for the indexer of the moment.
            self._lock.wait_when_busy(self._waiting, self._stop)
        else:
            # Held for the server's life: a restore, a key rotation, a repair or a vacuum is
            # refused beside it (the ingestion lock, held only while indexing, would let them).
            self._served.acquire()
            try:
                self._start_alone()
            except BaseException:
                self._served.release()
                raise
            # From now on the lock is taken for each job and waited for: `lorebase add` beside
            # an idle server goes ahead, and the server's next job waits for it.
            self._lock.wait_when_busy(self._waiting, self._stop)
        self._serving = True
        self._stop.clear()
        if self._usage is not None:
            self._flusher = threading.Thread(
                target=self._flush_usage, name="lorebase-usage", daemon=True
            )
            self._flusher.start()
        if place is not None and not place.runs_jobs:  # the indexer is another process
            return
        # An upload whose original is missing fails now instead of being queued forever.
        self._uploads.fail_lost_uploads()
        if not self._settings.serve.ingest:
            return
        self._queue.start()
        self._queue.sweep_now()
        for base in self._store.list_kbs(totals=False):
            if base.embedder_next is not None:  # a re-embed a stop or a crash cut short
                self._queue.admit(base.id, None)
        if self._settings.serve.watch:
            self._watcher = threading.Thread(
                target=self._watch_folders, name="lorebase-watch", daemon=True
            )
            self._watcher.start()

    def stop(self) -> None:
        """Workers finish the job they hold; the watcher ends; the lock is released."""
        if not self._serving:
            return
        self._serving = False
        self._stop.set()
        if self._settings.serve.ingest:
            self._queue.stop()
        if self._watcher is not None:
            self._watcher.join(timeout=WATCHER_JOIN_SECONDS)
            self._watcher = None
        if self._flusher is not None:
            self._flusher.join(timeout=WATCHER_JOIN_SECONDS)  # it writes once more as it ends
            self._flusher = None
        if not self._settings.shared_store:
            self._served.release()

    def _start_alone(self) -> None:
        """What a server over the embedded store does first, holding the ingestion lock
        (refused, naming it, while another process indexes)."""
        with self._lock:
            self._store.reset_unfinished()
            # Holding the lock before taking uploads, none is half-stored: orphans of any age
            # can go.
            self._originals.blobs.sweep_orphans(self._uploads.upload_ids(), grace=0)

    def _flush_usage(self) -> None:
        """Write the counted model calls now and then, and once more when serving stops."""
        assert self._usage is not None
        stopping = False
        while not stopping:
            stopping = self._stop.wait(FLUSH_SECONDS)
            try:
                self._usage.flush()
            except Exception as error:  # kept in memory: written at the next flush
                log.warning("usage not written this time (%s)", type(error).__name__)

    def _waiting(self, holder: str) -> None:
        log.info("waiting for %s to finish indexing before the next job", holder)

    def _watch_folders(self) -> None:

        def on_report(kb: KnowledgeBase, report: IngestReport) -> None:
            self._publish_totals(kb.id)

        while not self._stop.is_set():
            try:
                self._passes.watch(
                    stop=self._stop,
                    rescan_seconds=self._settings.serve.rescan_seconds,
                    on_report=on_report,
                    stale=False,  # re-read in the background, a few at a time
                )
            except Conflict:
                # Another process of this machine follows its folders (a shared store: one
                # watcher per machine is enough); take over if it stops.
                self._stop.wait(self._settings.serve.rescan_seconds)

    def run_job(self, kb_id: int, document_id: str | None) -> None:
        """A queue worker's job: one upload, one stale document, or a pass over one base's
        folders."""
        if document_id is not None:
            if self._stale is not None and self._stale.refresh(kb_id, document_id):
                if self._queue.depth == 0 and not self._stop.is_set():
                    self._queue.sweep_now()  # the next stale ones, unless work arrived
                return
            self._uploads.index_upload(kb_id, document_id)
            return
        try:
            kb = self._store.get_kb_by_id(kb_id, totals=False)
        except NotFound:  # deleted while the pass waited
            return
        self._run_pass(kb, self._stop)  # the base itself: its name may be shared
        self._publish_totals(kb_id)

    def pending_jobs(self) -> Iterator[Job]:
        """What the queue's sweep finds to do: pending uploads, a pass over each base being
        re-embedded (asked for by another process, or cut short) at most every rescan
        interval, and — when none of that waits — one stale document per worker."""
        yield from self._store.list_uploads(DocumentState.PENDING)
        now = time.time()
        for base in self._store.list_kbs(totals=False):
            last = base.pass_finished_at or base.pass_started_at or 0.0
            if base.embedder_next is not None and now - last >= self._settings.serve.rescan_seconds:
                yield (base.id, None)
        if self._stale is not None and self._queue.depth == 0:
            yield from self._stale.due(max(1, self._settings.serve.workers))

    def _publish_totals(self, kb_id: int) -> None:
        """A ``knowledge_base`` event with the base's state and totals (no names)."""
        fresh = self._store.get_kb_by_id(kb_id)
        self._events.publish(
            "knowledge_base",
            kb_id,
            state=fresh.state.value,
            documents=fresh.documents,
            chunks=fresh.chunks,
        )
