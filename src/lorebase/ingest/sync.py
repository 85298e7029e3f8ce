"""A pass over a knowledge base's folders: walk, process what changed, drop what is gone.

Vanished files are dropped after the changed ones are processed, not before: the store keeps
each vector once, with its chunk, so a file that was moved or renamed reuses the vectors of
its old document only while that document is still there.

A folder that has disappeared (unmounted, renamed) is never taken to mean "every file was
deleted": its documents stay, and the base waits with the reason until the folder is back.
A file followed on its own that is gone from a folder still there is deleted: its document
leaves the index and the base stops following it.

A pass may leave the large files the base does not hold yet for a later one
(``defer_larger_than``): a quick first look at a big folder. They are not "gone" (their
documents, if any, stay); they are recorded as ``pending`` documents (counted by ``status``),
and the base is ``pending`` until a pass without the limit reads them.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from lorebase.ingest.files import SourceFile, placeholders
from lorebase.ingest.ignore import IGNORED
from lorebase.ingest.pipeline import Ingestor
from lorebase.ingest.progress import Estimate, RateMeter, chunks_left
from lorebase.ingest.report import STOP_REQUESTED, IngestReport, Progress, merge_counts
from lorebase.ingest.sources import iter_files
from lorebase.store.base import Catalogue, Documents, KnowledgeBase, Source
from lorebase.store.states import DocumentState, KbState, SourceKind


class PassStore(Catalogue, Documents, Protocol):
    """The roles a pass uses: the base (its sources, state, progress) and its documents."""


# How often a running pass records its progress for `lorebase status` in other processes.
PROGRESS_EVERY_SECONDS = 1.0

Pace = Callable[[int, Progress, Estimate], None]
"""Told, as often as a pass records its progress, the base, where the pass is and its
estimate (rate, chunks expected, time left)."""


class Syncer:
    def __init__(self, store: PassStore, ingestor: Ingestor, on_pace: Pace | None = None) -> None:
        """``on_pace``: told each progress a pass records (the service makes it an event)."""
        self.store = store
        self.ingestor = ingestor
        self.on_pace = on_pace
        # One pass at a time in this process (a server's watcher, "sync now", reindex).
        self._one_pass = threading.Lock()

    def sync(
        self,
        kb: KnowledgeBase,
        *,
        sources: Sequence[Source] | None = None,
        extra_files: Sequence[SourceFile] = (),
        full: bool = False,
        stop: threading.Event | None = None,
        on_progress: Callable[[Progress], None] | None = None,
        defer_larger_than: int | None = None,
        stale: bool = True,
        only: Mapping[int, set[str]] | None = None,
    ) -> IngestReport:
        """One pass over ``sources`` (default: all of the base's) plus ``extra_files``; with
        ``defer_larger_than`` (bytes), the sources' files over it that the base holds no
        document of yet are left for a later pass; ``stale`` False leaves the documents an
        older version made as they are (see :meth:`Ingestor.process`). ``only`` names, by
        source id, the keys of the files to read of that source (files someone named inside a
        folder the base follows): its other files are neither read nor counted, and none of
        its documents is removed (that is for a pass over the whole folder)."""
        with self._one_pass:
            return self._sync(
                kb,
                sources,
                extra_files,
                full,
                stop,
                on_progress,
                defer_larger_than,
                stale,
                only or {},
            )

    def _sync(
        self,
        kb: KnowledgeBase,
        sources: Sequence[Source] | None,
        extra_files: Sequence[SourceFile],
        full: bool,
        stop: threading.Event | None,
        on_progress: Callable[[Progress], None] | None,
        defer_larger_than: int | None = None,
        stale: bool = True,
        only: Mapping[int, set[str]] | None = None,
    ) -> IngestReport:
        only = only or {}
        self.store.set_kb_state(kb.id, KbState.INDEXING, started=True)
        chosen = self.store.list_sources(kb.id) if sources is None else list(sources)
        files: list[SourceFile] = []
        missing: list[str] = []
        removed = 0
        # Documents of a folder the base no longer follows (left by a pass that wrote them as
        # it was removed, before the store refused such writes) leave with the next pass.
        gone = self._orphans(kb) if sources is None else []
        left_out: Counter[str] = Counter()
        for source in chosen:
            # A folder of which only some files were named counts only what befell those.
            found = self._walk(source, left_out if source.id not in only else Counter())
            if found is None:
                missing.append(source.label)
                continue
            if source.kind is SourceKind.FILE and not found:
                removed += self.store.remove_source(kb.id, source.id)
                continue
            if source.id in only:
                named = [f for f in found if f.key in only[source.id]]
                left_out[IGNORED] += len(only[source.id]) - len(named)  # its rules leave out
                files += named
                continue
            files += found
            gone += self._gone(kb, source, {f.key for f in found})
        deferred = self._deferred(kb, files, defer_larger_than)
        # Recorded as pending, so status counts them and any later pass without the limit
        # reads them, whichever command runs it.
        self.store.mark_pending(kb.id, placeholders(f for f in files if f.key in deferred))
        try:
            report = self.ingestor.process(
                kb,
                [*(f for f in files if f.key not in deferred), *extra_files],
                full=full,
                stop=stop,
                on_progress=self._recorder(kb, on_progress),
                stale=stale,
            )
        finally:
            self.store.delete_documents(kb.id, gone)
        report.removed = removed + len(gone)
        report.left_out = merge_counts(report.left_out, left_out)
        later = _left_for_later(len(deferred), defer_larger_than or 0) if deferred else None
        self._finish(kb, report, missing, later)
        return report

    def _walk(self, source: Source, left_out: Counter[str]) -> list[SourceFile] | None:
        """The source's files; None when its folder (a file's: the one holding it) is gone.
        What the walk leaves out is counted in ``left_out``, by reason."""
        root = Path(source.path)
        if source.kind is SourceKind.FILE:
            if root.is_file():
                return [SourceFile(root, source.label, source.id)]
            return [] if root.parent.is_dir() and not root.exists() else None
        if not root.is_dir():
            return None
        limits = self.ingestor.extract_settings
        return [
            SourceFile(path, f"{source.label}/{path.relative_to(root).as_posix()}", source.id)
            for path in iter_files(
                root,
                None,
                left_out,
                max_files=limits.max_source_files,
                max_bytes=limits.max_source_bytes,
            )
        ]

    def _deferred(self, kb: KnowledgeBase, files: list[SourceFile], limit: int | None) -> set[str]:
        """The keys of the files over ``limit`` bytes that the base holds no indexed or failed
        document of: a file it holds is kept up to date whatever its size."""
        if limit is None:
            return set()
        settled = (DocumentState.INDEXED, DocumentState.FAILED)
        held = {d.path for d in self.store.list_documents(kb.id) if d.state in settled}
        deferred: set[str] = set()
        for file in files:
            try:
                large = file.path.stat().st_size > limit
            except OSError:  # the pass reports what is wrong with it
                continue
            if large and file.key not in held:
                deferred.add(file.key)
        return deferred

    def _orphans(self, kb: KnowledgeBase) -> list[str]:
        """The documents of sources the base no longer follows."""
        followed = {source.id for source in self.store.list_sources(kb.id)}
        return [
            d.id
            for d in self.store.list_documents(kb.id)
            if d.source_id is not None and d.source_id not in followed
        ]

    def _gone(self, kb: KnowledgeBase, source: Source, present: set[str]) -> list[str]:
        """The documents of this source whose files are no longer there (a file's parts go
        with it: their container is the file's path)."""
        return [
            d.id
            for d in self.store.list_documents(kb.id)
            if d.source_id == source.id and (d.container or d.path) not in present
        ]

    def _recorder(
        self, kb: KnowledgeBase, on_progress: Callable[[Progress], None] | None
    ) -> Callable[[Progress], None]:
        """Records the pass's progress and pace for other processes (its rate and chunks left,
        from :class:`RateMeter`: the time left everyone shows) and tells ``on_pace``."""
        last = 0.0
        meter = RateMeter()

        def record(progress: Progress) -> None:
            nonlocal last
            now = time.monotonic()
            guess = meter.add(progress)
            finished = (
                progress.files_done == progress.files_total
                and progress.chunks_done >= progress.chunks_total
            )
            # Throttled while embedding goes on after the last file is read, too.
            if now - last >= PROGRESS_EVERY_SECONDS or finished:
                self.store.set_kb_progress(
                    kb.id,
                    progress.files_done,
                    progress.files_total,
                    rate=guess.rate,
                    left=chunks_left(progress, guess),
                )
                if self.on_pace is not None:
                    self.on_pace(kb.id, progress, guess)
                last = now
            if on_progress is not None:
                on_progress(progress)

        return record

    def _finish(
        self, kb: KnowledgeBase, report: IngestReport, missing: list[str], later: str | None
    ) -> None:
        if report.stopped == STOP_REQUESTED:
            state, reason = KbState.PENDING, "the last pass was stopped before its end"
        elif report.stopped:
            state, reason = KbState.WAITING, f"embedder_unavailable: {report.stopped}"
        elif missing:
            state = KbState.WAITING
            reason = f"source_unavailable: {', '.join(missing)} cannot be read; is it mounted?"
        elif later:
            state, reason = KbState.PENDING, later
        else:
            state, reason = KbState.READY, None
        self.store.set_kb_state(kb.id, state, reason, finished=True)


def _left_for_later(count: int, limit: int) -> str:
    """``12 files over 200 KB are left for the next pass: …`` (K = 1024)."""
    size = f"{limit // 1024} KB" if limit % 1024 == 0 else f"{limit} bytes"
    if count == 1:
        return f"1 file over {size} is left for the next pass: `lorebase sync` reads it"
    return f"{count} files over {size} are left for the next pass: `lorebase sync` reads them"
