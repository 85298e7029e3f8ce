"""Documents an older version made (stale, see :mod:`lorebase.ingest.versions`):
:class:`StaleDocuments` counts them for ``status`` and, under ``serve``, re-reads them in the
background at low priority.

The server's queue sweep asks :meth:`StaleDocuments.due` for work only when nothing else waits
(no upload, no pass): then it queues as many stale documents as there are workers, one job
each, and each job asks the sweep again when it ends and the queue is still empty. An upload
(or a pass) that arrives waits behind at most the one document each worker is reading; searches
read their own snapshot meanwhile. A re-read is a pass of one file — a folder's file where it
lies, an upload from its stored original, a part (an attachment) with the file that holds it —
whose unchanged chunk texts keep their vectors (found by content): extraction, not embedding.

A document that cannot be re-read here is left as it is and not asked for again for
:data:`SKIP_SECONDS`: its folder is not on this machine (unmounted, or another machine's over
a shared store), its file is gone (the next pass drops it), or its original is missing.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Sequence

from lorebase.errors import LorebaseError
from lorebase.ingest.files import SourceFile, file_of, outermost
from lorebase.ingest.pipeline import Ingestor
from lorebase.ingest.queue import Job
from lorebase.ingest.versions import running_versions
from lorebase.lock import IngestLock
from lorebase.service.uploads import Uploads
from lorebase.settings import Settings
from lorebase.store.base import DocumentRecord, KnowledgeBase, Store

SKIP_SECONDS = 3600.0
"""A stale document that could not be re-read here is not asked for again for this long."""
CHECK_SECONDS = 60.0
"""With none left, the store is asked again for stale documents at most this often (another
process may have written some meanwhile)."""
BACKLOG = 64
"""Stale documents read from the store at once, handed out a few per sweep."""


class StaleDocuments:
    """Stale documents: counted, listed for the sweep, re-read one at a time."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        ingestor: Ingestor,
        lock: IngestLock,
        uploads: Uploads,
    ) -> None:
        self._settings = settings
        self._store = store
        self._ingestor = ingestor
        self._lock = lock
        self._uploads = uploads
        self._guard = threading.Lock()
        self._backlog: deque[Job] = deque()
        self._skipped: dict[str, float] = {}  # document id -> when it could not be re-read
        self._checked_at = float("-inf")  # when the store last had none

    def count(self, kb_ids: Sequence[int] | None = None) -> dict[int, int]:
        """How many stale documents each base holds (a base without any: left out)."""
        return self._store.count_stale(running_versions(), kb_ids)

    def due(self, limit: int) -> list[Job]:
        """Up to ``limit`` stale documents to re-read now, as queue jobs (none when the store
        had none a moment ago)."""
        now = time.monotonic()
        with self._guard:
            if not self._backlog and now - self._checked_at >= CHECK_SECONDS:
                self._refill(now)
            jobs: list[Job] = []
            while self._backlog and len(jobs) < limit:
                jobs.append(self._backlog.popleft())
            return jobs

    def _refill(self, now: float) -> None:
        self._skipped = {d: at for d, at in self._skipped.items() if now - at < SKIP_SECONDS}
        found = self._store.list_stale(running_versions(), BACKLOG + len(self._skipped))
        fresh = [(d.kb_id, d.id) for d in found if d.id not in self._skipped][:BACKLOG]
        self._backlog.extend(fresh)
        if not fresh:
            self._checked_at = now

    def refresh(self, kb_id: int, document_id: str) -> bool:
        """Re-read one document if it is stale (a queue worker's job). False when the job is
        not this one's: an upload that is not stale (waiting to be indexed, or gone), which
        the uploads' worker sees to; a folder's document that is no longer stale needs
        nothing."""
        document = self._store.find_document(document_id)
        if document is None or document.kb_id != kb_id:
            return False
        if not running_versions().stale(document):
            return not document.uploaded
        try:
            kb = self._store.get_kb_by_id(kb_id, totals=False)
            top = outermost(document, lambda path: self._store.get_document(kb_id, path))
            file = self._file(kb, top)
        except (LorebaseError, OSError):
            file = None
        if file is None:
            with self._guard:
                self._skipped[document_id] = time.monotonic()
            return True
        # Over the embedded store, under the ingestion lock (serve holds it; re-entrant).
        with contextlib.nullcontext() if self._settings.shared_store else self._lock:
            self._ingestor.process(kb, [file])
        return True

    def _file(self, kb: KnowledgeBase, document: DocumentRecord) -> SourceFile | None:
        """The file to read ``document`` from, if it can be read here."""
        if document.uploaded:
            return self._uploads.original_file(document)
        source = next(
            (s for s in self._store.list_sources(kb.id) if s.id == document.source_id), None
        )
        if source is None:
            return None
        path = file_of(source, document.path)
        if path is None:
            return None
        if not path.is_file():
            return None  # gone (or its folder not mounted here): the next pass sees to it
        return SourceFile(path, document.path, source.id)
