"""Indexing the folders and files a base follows: :class:`Passes` adds them (each becomes a
source), runs passes over them (``sync``), keeps them indexed as they change (``watch``) and
rotates the data key, each under the ingestion lock. Which base a name means is
:class:`Access`'s to say, which source a path belongs to :class:`Bases`'; a re-embed's pass
also reads the uploads :class:`Uploads` hands it.

:func:`announcing` is what the ingestor tells as each document settles: an event; :func:`pacing`
what a pass tells as it records its progress: an event with the time left."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from lorebase.errors import NotFound
from lorebase.events import EventBus
from lorebase.ingest.files import SourceFile
from lorebase.ingest.progress import Estimate, pass_seconds_left
from lorebase.ingest.report import IngestReport, Progress
from lorebase.ingest.sync import Pace, Syncer
from lorebase.ingest.watch import DEFAULT_RESCAN_SECONDS, watch
from lorebase.lock import WATCH_LOCK_FILE, IngestLock, serving_lock
from lorebase.service.access import Access
from lorebase.service.bases import DEFAULT_KB, Bases
from lorebase.service.originals import Originals
from lorebase.service.uploads import Uploads
from lorebase.settings import Settings
from lorebase.store.base import DocumentRecord, KnowledgeBase, Source, Store
from lorebase.store.states import SourceKind

if TYPE_CHECKING:
    from lorebase.vault.rotation import Rotation

log = logging.getLogger(__name__)


def announcing(events: EventBus) -> Callable[[int, DocumentRecord], None]:
    """What a pass or an upload calls as each document is indexed or fails: an event (ids
    and states)."""

    def settled(kb_id: int, document: DocumentRecord) -> None:
        events.publish(
            "document",
            kb_id,
            document_id=document.id,
            state=document.state.value,
            reason=document.reason,
        )

    return settled


def pacing(events: EventBus) -> Pace:
    """What a pass calls as it records its progress (about once a second): a
    ``knowledge_base`` event with the files done of the total and the seconds left (null
    while the rate is measured)."""

    def paced(kb_id: int, progress: Progress, guess: Estimate) -> None:
        left = guess.seconds_left
        events.publish(
            "knowledge_base",
            kb_id,
            state="indexing",
            progress_done=progress.files_done,
            progress_total=progress.files_total,
            seconds_left=None if left is None else round(left, 1),
        )

    return paced


class Passes:
    """Folder passes (``add``, ``sync``, ``watch``) and what else runs under the ingestion
    lock on the caller's thread."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        syncer: Syncer,
        lock: IngestLock,
        access: Access,
        bases: Bases,
        uploads: Uploads,
        originals: Originals,
    ) -> None:
        self._settings = settings
        self._store = store
        self._syncer = syncer
        self._lock = lock
        self._access = access
        self._bases = bases
        self._uploads = uploads
        self._originals = originals

    @contextmanager
    def ingesting(self) -> Iterator[None]:
        """Hold the ingestion lock. On first taking it, documents a crashed pass left half
        way go back to ``pending`` (holding the lock proves no other pass is running)."""
        # Over a shared store, uploads in flight are other processes' jobs.
        uploads = not self._settings.shared_store
        self._lock.acquire(on_first=lambda: self._store.reset_unfinished(uploads=uploads))
        try:
            yield
        finally:
            self._lock.release()

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
            base = self._bases.ensure_kb(kb)
            chosen: set[int] = set()
            whole: set[int] = set()  # sources named themselves (a folder, a file on its own)
            named: dict[int, set[str]] = {}  # files named inside a folder the base follows
            for path in paths:
                source = self._bases.source_for(base, path)
                chosen.add(source.id)
                inside = named_inside(source, path)
                if inside is None:
                    whole.add(source.id)
                else:
                    named.setdefault(source.id, set()).add(inside)
            # A folder added after a file inside it took that file's source over.
            sources = [s for s in self._store.list_sources(base.id) if s.id in chosen]
            return self._syncer.sync(
                base,
                sources=sources,
                on_progress=on_progress,
                stop=stop,
                defer_larger_than=defer_larger_than,
                only={source: keys for source, keys in named.items() if source not in whole},
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
        some, or holding uploads to read again). Documents an older version made are read
        again, uploads from their stored originals."""
        with self.ingesting():
            bases = [self._access.base(kb)] if kb else self._store.list_kbs()
            reports: dict[str, IngestReport] = {}
            for base in bases:
                moving = base.embedder_next is not None
                uploads = self._uploads_to_read(base, moving)
                if (
                    kb is None
                    and not moving
                    and not uploads
                    and not self._store.list_sources(base.id)
                ):
                    continue
                if stop is not None and stop.is_set():
                    break
                reports[base.name] = self._syncer.sync(
                    base,
                    full=full,
                    stop=stop,
                    on_progress=on_progress,
                    extra_files=uploads,
                )
            return reports

    def _uploads_to_read(self, base: KnowledgeBase, moving: bool) -> list[SourceFile]:
        """The uploads a pass over ``base`` reads: those a re-embed must embed again, and
        those an older version made, each once."""
        files = [
            *(self._uploads.to_reembed(base) if moving else ()),
            *self._uploads.stale_files(base),
        ]
        return list({file.key: file for file in files}.values())

    def seconds_left(self) -> dict[int, float]:
        """The time left of each pass running now, by base (a pass whose rate is still
        measured is left out)."""
        return {
            base.id: left
            for base in self._store.list_kbs(totals=False)
            if (left := pass_seconds_left(base)) is not None
        }

    def watch(
        self,
        kb: str | None = None,
        *,
        stop: threading.Event,
        rescan_seconds: float = DEFAULT_RESCAN_SECONDS,
        on_report: Callable[[KnowledgeBase, IngestReport], None] | None = None,
        stale: bool = True,
    ) -> None:
        """Keep the folders of ``kb`` (default all) indexed until ``stop`` is set; with
        ``stale`` False its passes leave documents an older version made as they are (a
        server re-reads them in the background, a few at a time)."""

        def bases() -> list[KnowledgeBase]:
            return [self._access.kb(kb)] if kb else self._store.list_kbs()

        def folders(base: KnowledgeBase) -> list[Path]:
            return [Path(s.path) for s in self._store.list_sources(base.id)]

        def run_pass(base: KnowledgeBase) -> IngestReport:
            with self.ingesting():  # one pass at a time: other indexers go in between
                base = self._store.get_kb_by_id(base.id)
                report = self._syncer.sync(base, stop=stop, stale=stale)
            if on_report is not None:
                on_report(base, report)
            return report

        # Each pass waits for another indexer (an `add` beside this watcher) to finish.
        self._lock.wait_when_busy(
            lambda other: log.info("waiting for %s to finish before the next pass", other), stop
        )
        # One process follows the folders of a data directory; Conflict names it.
        follower = IngestLock(
            self._settings.data_dir,
            self._lock.holder,
            WATCH_LOCK_FILE,
            doing="follows this data directory's folders",
        )
        with follower:
            watch(bases, folders, run_pass, stop, rescan_seconds=rescan_seconds)

    def rotate_data_key(self) -> Rotation:
        """Re-encrypt every upload and sealed name under a new data key (re-runnable: a
        rotation cut short is finished by running it again)."""
        # Never beside a server: it keeps the old key in memory and would seal with it.
        with serving_lock(self._settings.data_dir, self._lock.holder), self.ingesting():
            return self._originals.rotate()


def named_inside(source: Source, path: Path) -> str | None:
    """The key of ``path``, a file named inside the folder ``source`` follows; None when the
    path is the source itself (a folder, or a file followed on its own). Pure but for
    resolving the path."""
    if source.kind is not SourceKind.FOLDER or path.is_dir():
        return None
    absolute = path.expanduser().absolute()
    wanted = (
        absolute.parent.resolve() / absolute.name
    )  # as the source was found (a link keeps its name)
    root = Path(source.path)
    if not wanted.is_relative_to(root):
        return None
    return f"{source.label}/{wanted.relative_to(root).as_posix()}"
