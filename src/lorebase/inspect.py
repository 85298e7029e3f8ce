"""Extract (and optionally chunk) a file or a folder, one report per file, plus a summary.

This is the service behind ``lorebase extract`` and ``lorebase chunk``: one bad file never
stops the others, and every failure is a fixed reason.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePath

from lorebase.chunk import chunk_document
from lorebase.errors import ExtractionFailed
from lorebase.extract.registry import read_file
from lorebase.extract.sandbox import ExtractionPool
from lorebase.formats import document_kind, extension
from lorebase.ingest.sources import WalkProblem, iter_files
from lorebase.settings import ChunkSettings, ExtractSettings
from lorebase.types import Chunk, Extracted, FailureReason


@dataclass(frozen=True, slots=True)
class FileReport:
    """What became of one file. ``path`` is relative to the folder that was walked."""

    path: Path
    kind: str
    size: int
    extracted: Extracted | None = None
    chunks: list[Chunk] | None = None
    failure: ExtractionFailed | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None


@dataclass(slots=True)
class KindTotals:
    files: int = 0
    read: int = 0
    failed: int = 0
    bytes: int = 0
    elements: int = 0
    chunks: int = 0


@dataclass(slots=True)
class Summary:
    """Totals per document kind, failures per reason, unsupported files per extension."""

    kinds: dict[str, KindTotals] = field(default_factory=dict)
    reasons: Counter[str] = field(default_factory=Counter)
    unsupported: Counter[str] = field(default_factory=Counter)
    problems: list[WalkProblem] = field(default_factory=list)

    def add(self, report: FileReport) -> None:
        if report.failure is not None and report.failure.reason is FailureReason.UNSUPPORTED_FORMAT:
            self.unsupported[extension(report.path) or "(none)"] += 1
            self.reasons[report.failure.reason.value] += 1
            return
        totals = self.kinds.setdefault(report.kind, KindTotals())
        totals.files += 1
        totals.bytes += report.size
        if report.failure is not None:
            totals.failed += 1
            self.reasons[report.failure.reason.value] += 1
            return
        totals.read += 1
        if report.extracted is not None:
            totals.elements += len(report.extracted.elements)
        if report.chunks is not None:
            totals.chunks += len(report.chunks)


def inspect_file(
    path: Path,
    display: Path,
    extract_settings: ExtractSettings,
    chunk_settings: ChunkSettings | None = None,
    pool: ExtractionPool | None = None,
) -> FileReport:
    """Extract one file (and chunk it when ``chunk_settings`` is given) in a worker process
    of ``pool`` (a pool of its own when None)."""
    if pool is None:
        with ExtractionPool(extract_settings) as own:
            return inspect_file(path, display, extract_settings, chunk_settings, own)
    kind = document_kind(path)
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    try:
        extracted = pool.extract(read_file(path, extract_settings), path)
    except ExtractionFailed as failure:
        return FileReport(display, kind or "other", size, failure=failure)
    chunks = chunk_document(extracted, chunk_settings) if chunk_settings is not None else None
    return FileReport(display, str(extracted.kind), size, extracted=extracted, chunks=chunks)


def chunk_bytes(
    data: bytes,
    name: PurePath,
    extract_settings: ExtractSettings,
    chunk_settings: ChunkSettings,
    pool: ExtractionPool | None = None,
) -> list[Chunk]:
    """The chunks a file's bytes (``name`` gives its format) make with ``chunk_settings``,
    extracted in a worker process of ``pool`` (a pool of its own when None); what a
    re-chunk would store. ``ExtractionFailed`` as reading it fails."""
    if pool is None:
        with ExtractionPool(extract_settings) as own:
            return chunk_bytes(data, name, extract_settings, chunk_settings, own)
    return chunk_document(pool.extract(data, Path(name.name)), chunk_settings)


def inspect_folder(
    root: Path,
    extract_settings: ExtractSettings,
    chunk_settings: ChunkSettings | None = None,
    summary: Summary | None = None,
    pool: ExtractionPool | None = None,
) -> Iterator[FileReport]:
    """Reports for every non-hidden file under ``root``; fills ``summary`` as it goes. Files
    are read in ``pool`` (a pool of its own, for the walk, when None)."""
    if pool is None:
        with ExtractionPool(extract_settings) as own:
            yield from inspect_folder(root, extract_settings, chunk_settings, summary, own)
        return
    problems = summary.problems if summary is not None else None
    for path in iter_files(root, problems):
        report = inspect_file(
            path, path.relative_to(root.resolve()), extract_settings, chunk_settings, pool
        )
        if summary is not None:
            summary.add(report)
        yield report
