"""Indexing: files and folders added, passes over the folders a base follows, watching them,
and the background of ``serve`` (the ingestion queue's workers and the folder watcher)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from lorebase.errors import Conflict, NotFound
from lorebase.ingest.queue import Job
from lorebase.ingest.report import IngestReport, Progress
from lorebase.ingest.watch import DEFAULT_RESCAN_SECONDS, watch
from lorebase.service.bases import DEFAULT_KB
from lorebase.service.uploads import Uploads
from lorebase.store.base import DocumentState, KnowledgeBase

if TYPE_CHECKING:
    from lorebase.vault.rotation import Rotation

WATCHER_JOIN_SECONDS = 30


class Passes(Uploads):
    _watcher: threading.Thread | None
    _serving: bool

    def _init_passes(self) -> None:
        self._stop = threading.Event()
        self._watcher = None
        self._serving = False

    @contextmanager
    def ingesting(self) -> Iterator[None]:
        """Hold the ingestion lock. On first taking it, documents a crashed pass left half
        way go back to ``pending`` (holding the lock proves no other pass is running)."""
        first = not self.lock.held
        self.lock.acquire()
        try:
            if first:  # over a shared store, uploads in flight are other processes' jobs
                self.store.reset_unfinished(uploads=not self.settings.shared_store)
            yield
        finally:
            self.lock.release()

    def add(
        self,
        paths: Sequence[Path],
        kb: str = DEFAULT_KB,
        on_progress: Callable[[Progress], None] | None = None,
        stop: threading.Event | None = None,
        defer_larger_than: int | None = None,
    ) -> IngestReport:
        """Index files and folders into ``kb`` (created if needed). Each becomes a source the
        base follows (``sync`` and ``watch`` keep it up to date: a changed file is read again,
        a deleted one leaves the index); a file inside a folder the base follows is indexed
        with that folder. With ``defer_larger_than`` (bytes), files over it that the base does
        not hold yet are left for the next pass (the base is ``pending`` until then)."""
        for path in paths:
            if not path.exists():
                raise NotFound(f"{path} does not exist; check the path and try again")
        with self.ingesting():
            base = self.ensure_kb(kb)
            chosen = {self.source_for(base, path).id for path in paths}
            # A folder added after a file inside it took that file's source over.
            sources = [s for s in self.store.list_sources(base.id) if s.id in chosen]
            return self.syncer.sync(
                base,
                sources=sources,
                on_progress=on_progress,
                stop=stop,
                defer_larger_than=defer_larger_than,
            )

    def sync(
        self,
        kb: KnowledgeBase | str | None = None,
        *,
        full: bool = False,
        stop: threading.Event | None = None,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> dict[str, IngestReport]:
        """One pass over the folders and files of ``kb`` (default: every base following
        some)."""
        with self.ingesting():
            bases = [self._base(kb)] if kb else self.store.list_kbs()
            reports: dict[str, IngestReport] = {}
            for base in bases:
                moving = base.embedder_next is not None
                if kb is None and not moving and not self.store.list_sources(base.id):
                    continue
                if stop is not None and stop.is_set():
                    break
                reports[base.name] = self.syncer.sync(
                    base,
                    full=full,
                    stop=stop,
                    on_progress=on_progress,
                    extra_files=self._uploads_to_reembed(base) if moving else (),
                )
            return reports

    def watch(
        self,
        kb: str | None = None,
        *,
        stop: threading.Event,
        rescan_seconds: float = DEFAULT_RESCAN_SECONDS,
        on_report: Callable[[KnowledgeBase, IngestReport], None] | None = None,
    ) -> None:
        """Keep the folders of ``kb`` (default all) indexed until ``stop`` is set."""

        def bases() -> list[KnowledgeBase]:
            return [self.kb(kb)] if kb else self.store.list_kbs()

        def folders(base: KnowledgeBase) -> list[Path]:
            return [Path(s.path) for s in self.store.list_sources(base.id)]

        def run_pass(base: KnowledgeBase) -> IngestReport:
            report = self.syncer.sync(self.store.get_kb_by_id(base.id), stop=stop)
            if on_report is not None:
                on_report(base, report)
            return report

        with self.ingesting():
            watch(bases, folders, run_pass, stop, rescan_seconds=rescan_seconds)

    def rotate_data_key(self) -> Rotation:
        """Re-encrypt every upload and sealed name under a new data key (re-runnable: a
        rotation cut short is finished by running it again)."""
        from lorebase.vault.rotation import rotate_data_key

        with self.ingesting():
            rotation = rotate_data_key(
                self.settings.data_dir,
                self.store,
                self.settings.data_key,
                blobs=self._blob_storage,
            )
        self._data_key, self._blobs = rotation.new_key, None
        return rotation

    # -- the background of `serve` ---------------------------------------------------------------
    def start_serving(self) -> None:
        """Start the background of ``serve`` (or of ``lorebase worker``): the queue's workers
        (unless ``serve.ingest`` is off) and, unless turned off, the folder watcher.

        Over the embedded store this process is the only indexer: it holds the ingestion lock
        for its life, and at start puts back what a crash left half way and sweeps orphaned
        blobs of any age. Over a shared store other processes index at the same time: the
        jobs' leases take care of crashed work, and orphans are swept only past the grace
        period (an upload in flight elsewhere has stored its original, not yet its row)."""
        if self._serving:
            return
        self.data_key  # noqa: B018  (refuses to start with a missing or wrong data key)
        shared = self.settings.shared_store
        if not shared:
            self.lock.acquire()
        self._serving = True
        self._stop.clear()
        if shared:
            self.blobs.sweep_orphans(self.upload_ids())
        else:
            self.store.reset_unfinished()
            # Holding the lock, no upload is half-stored: orphans of any age can go.
            self.blobs.sweep_orphans(self.upload_ids(), grace=0)
        # An upload whose original is missing fails now instead of being queued forever.
        self.fail_lost_uploads()
        if not self.settings.serve.ingest:
            return
        self.queue.start()
        self.queue.sweep_now()
        for base in self.store.list_kbs(totals=False):
            if base.embedder_next is not None:  # a re-embed a stop or a crash cut short
                self.queue.admit(base.id, None)
        if self.settings.serve.watch:
            self._watcher = threading.Thread(
                target=self._watch_folders, name="lorebase-watch", daemon=True
            )
            self._watcher.start()

    def stop_serving(self) -> None:
        """Workers finish the job they hold; the watcher ends; the lock is released."""
        if not self._serving:
            return
        self._serving = False
        self._stop.set()
        if self.settings.serve.ingest:
            self.queue.stop()
        if self._watcher is not None:
            self._watcher.join(timeout=WATCHER_JOIN_SECONDS)
            self._watcher = None
        if not self.settings.shared_store:
            self.lock.release()

    def _watch_folders(self) -> None:
        def on_report(kb: KnowledgeBase, report: IngestReport) -> None:
            self._publish_totals(kb.id)

        while not self._stop.is_set():
            try:
                self.watch(
                    stop=self._stop,
                    rescan_seconds=self.settings.serve.rescan_seconds,
                    on_report=on_report,
                )
            except Conflict:
                # Another process of this machine follows its folders (a shared store: one
                # watcher per machine is enough); take over if it stops.
                self._stop.wait(self.settings.serve.rescan_seconds)

    def _run_job(self, kb_id: int, document_id: str | None) -> None:
        """A queue worker's job: one upload, or a pass over one base's folders."""
        if document_id is not None:
            self._index_upload(kb_id, document_id)
            return
        try:
            kb = self.store.get_kb_by_id(kb_id, totals=False)
        except NotFound:  # deleted while the pass waited
            return
        self.sync(kb, stop=self._stop)  # the base itself: its name may be shared
        self._publish_totals(kb_id)

    def _pending_jobs(self) -> Iterator[Job]:
        """What the queue's sweep finds to do: pending uploads, and a pass over each base
        being re-embedded (asked for by another process, or cut short) at most every rescan
        interval."""
        yield from self.store.list_uploads(DocumentState.PENDING)
        now = time.time()
        for base in self.store.list_kbs(totals=False):
            last = base.pass_finished_at or base.pass_started_at or 0.0
            if base.embedder_next is not None and now - last >= self.settings.serve.rescan_seconds:
                yield (base.id, None)
