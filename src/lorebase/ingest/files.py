"""The files a pass is given, and what it decides about them before reading a byte: which
stored documents need no work, which files changed by size or mtime (or hold a document an
older version made: :mod:`lorebase.ingest.versions`), and the row a new path gets up front."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lorebase.embed.base import EmbedderIdentity
from lorebase.formats import document_kind
from lorebase.ingest.report import IngestReport
from lorebase.ingest.versions import running_versions
from lorebase.store.base import DocumentRecord, KnowledgeBase, NewDocument, Source
from lorebase.store.states import DocumentState, SourceKind


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file to process. ``path`` picks the extractor (by extension) and, unless ``data`` is
    given (an upload kept in the blob store), is where the bytes are read from."""

    path: Path
    key: str  # the document's path within the knowledge base
    source_id: int | None = None
    data: Callable[[], bytes] | None = None
    display_name: str | None = None


def placeholders(files: Iterable[SourceFile]) -> list[NewDocument]:
    """The rows new paths of a supported format get before they are read: pending, nothing
    known but where they are (an unsupported file gets none: it fails when read)."""
    return [
        NewDocument(path=file.key, kind=kind, size=0, content_hash="", source_id=file.source_id)
        for file in files
        if (kind := document_kind(file.path)) is not None
    ]


def up_to_date(
    document: DocumentRecord,
    kb: KnowledgeBase,
    identity: EmbedderIdentity | None,
    *,
    stale: bool = True,
) -> bool:
    """Whether a stored document needs no work while its content stays the same: indexed
    with the current chunking and embedding identity, or failed (not retried until its
    content changes); and, unless ``stale`` is False (a pass that leaves stale documents to
    the server's background), made by the running versions. Pure."""
    if stale and running_versions().stale(document):
        return False
    if document.state is DocumentState.FAILED:
        return True
    if document.state is not DocumentState.INDEXED:
        return False
    same_identity = identity is None or document.identity_key == identity.key
    return same_identity and document.settings_key == kb.chunk_settings.key


def file_of(source: Source, document_path: str) -> Path | None:
    """Where the document stored as ``document_path`` lies on this machine: the source's
    file, or the file under its folder (the path as stored begins with the folder's label).
    None when the path does not begin so, or leaves the folder (``..``, a link out: a path of
    an imported base is not trusted). Whether the file is there is the caller's to see."""
    root = Path(source.path)
    if source.kind is SourceKind.FILE:
        return root
    prefix = f"{source.label}/"
    if not document_path.startswith(prefix):
        return None
    path = root / document_path[len(prefix) :]
    try:
        return path if path.resolve().is_relative_to(root.resolve()) else None
    except (OSError, RuntimeError):  # a loop of links
        return None


def outermost(
    document: DocumentRecord, holder: Callable[[str], DocumentRecord | None]
) -> DocumentRecord:
    """The document itself, or, for a part (an attachment), the file that holds it — the
    outermost one, found through ``holder`` (a path's document, None: none); a part is read
    with the file holding it. A loop of containers ends where it repeats."""
    seen = {document.path}
    while document.container is not None:
        found = holder(document.container)
        if found is None or found.path in seen:
            break
        seen.add(found.path)
        document = found
    return document


def stale_containers(known: Iterable[DocumentRecord]) -> frozenset[str]:
    """The paths of the files holding a stale part (an attachment an older extractor read):
    the file is read again, whatever its own versions, to read its parts again. Pure."""
    running = running_versions()
    return frozenset(d.container for d in known if d.container and running.stale(d))


def to_read(
    kb: KnowledgeBase,
    files: Sequence[SourceFile],
    known: Mapping[str, DocumentRecord],
    identity: EmbedderIdentity | None,
    full: bool,
    report: IngestReport,
    *,
    stale: bool = True,
    containers: Collection[str] = (),
) -> list[SourceFile]:
    """Files whose size or mtime differ from what was indexed (all of them when ``full``),
    and, with ``stale``, those whose document is stale or holds a stale part (its path in
    ``containers``); the others are counted unchanged in ``report`` without being read."""
    todo = []
    for file in files:
        existing = known.get(file.key)
        if file.data is not None:  # uploads have no mtime: the content hash decides
            todo.append(file)
            continue
        if (
            existing is not None
            and not full
            and up_to_date(existing, kb, identity, stale=stale)
            and not (stale and file.key in containers)
        ):
            try:
                stat = file.path.stat()
            except OSError:
                todo.append(file)
                continue
            if (existing.size, existing.mtime) == (stat.st_size, stat.st_mtime):
                report.unchanged += 1
                continue
        todo.append(file)
    return todo
