"""Rows to values and values to rows: the column lists the SQLite store selects and writes, and
the small functions that map them, kept apart from the code that runs the statements."""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator, Sequence
from typing import Any

from lorebase.settings import ChunkSettings
from lorebase.store.base import (
    DocumentRecord,
    DocumentState,
    KbState,
    KnowledgeBase,
    NewDocument,
    Scope,
    StoredChunk,
)
from lorebase.types import Chunk

MAX_PARAMS = 500
"""Most ids bound in one ``IN (...)`` list; long lists are looked up in batches."""

TEXT_COMPRESSION_LEVEL = 6

KB_COLUMNS = (
    "id, name, description, scope, owner, chunk_size, max_tokens, overlap, identity_key, "
    "created_at, state, state_reason, pass_started_at, pass_finished_at, progress_done, "
    "progress_total, team_id"
)
KB_TOTALS_SQL = (
    "SELECT kb_id, count(*), coalesce(sum(state = 'indexed'), 0), "
    "coalesce(sum(state = 'failed'), 0), coalesce(sum(chunk_count), 0), "
    "coalesce(sum(size), 0), coalesce(sum(state NOT IN ('indexed', 'failed')), 0) "
    "FROM documents"
)
"""Totals of documents, append ``WHERE kb_id = ?`` (one base) or ``GROUP BY kb_id`` (all)."""

DOCUMENT_COLUMNS = (
    "id, kb_id, path, kind, size, content_hash, state, mtime, title, page_count, reason, "
    "chunk_count, identity_key, settings_key, updated_at, source_id, display_name"
)

STORED_CHUNK_SELECT = (
    "SELECT c.id, c.kb_id, k.name, c.document_id, d.path, d.title, d.kind, c.ordinal, c.text, "
    "c.trail, c.start_offset, c.end_offset, c.content_kind, c.line, c.page, c.page_end, "
    "c.language, c.symbol, c.tokens, d.display_name IS NOT NULL "
    "FROM chunks AS c JOIN documents AS d ON d.id = c.document_id "
    "JOIN knowledge_bases AS k ON k.id = c.kb_id"
)

CHUNK_INSERT_SQL = (
    "INSERT INTO chunks (id, document_id, kb_id, section_id, ordinal, text, trail, "
    "start_offset, end_offset, line, page, page_end, content_kind, language, symbol, tokens, "
    "content_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def kb_from_row(row: Sequence[Any], totals: Sequence[int] | None) -> KnowledgeBase:
    """A knowledge base from a ``KB_COLUMNS`` row and its ``KB_TOTALS_SQL`` totals (after the
    kb_id column); None totals: a base without documents."""
    documents, indexed, failed, chunks, size, pending = totals or (0, 0, 0, 0, 0, 0)
    return KnowledgeBase(
        id=row[0],
        name=row[1],
        description=row[2],
        scope=Scope(row[3]),
        owner=row[4],
        chunk_settings=ChunkSettings(chunk_size=row[5], max_tokens=row[6], overlap=row[7]),
        identity_key=row[8],
        created_at=row[9],
        documents=documents,
        indexed=indexed,
        failed=failed,
        chunks=chunks,
        bytes=size,
        pending=pending,
        state=KbState(row[10]),
        state_reason=row[11],
        pass_started_at=row[12],
        pass_finished_at=row[13],
        progress_done=row[14],
        progress_total=row[15],
        team_id=row[16],
    )


def document_from_row(row: Sequence[Any]) -> DocumentRecord:
    return DocumentRecord(
        id=row[0],
        kb_id=row[1],
        path=row[2],
        kind=row[3],
        size=row[4],
        content_hash=row[5],
        state=DocumentState(row[6]),
        mtime=row[7],
        title=row[8],
        page_count=row[9],
        reason=row[10],
        chunk_count=row[11],
        identity_key=row[12],
        settings_key=row[13],
        updated_at=row[14],
        source_id=row[15],
        display_name=row[16],
    )


def stored_chunk_from_row(row: Sequence[Any]) -> StoredChunk:
    return StoredChunk(
        id=row[0],
        kb_id=row[1],
        kb_name=row[2],
        document_id=row[3],
        path=row[4],
        title=row[5],
        kind=row[6],
        ordinal=row[7],
        text=row[8],
        trail=tuple(json.loads(row[9])),
        start=row[10],
        end=row[11],
        content_kind=row[12],
        line=row[13],
        page=row[14],
        page_end=row[15],
        language=row[16],
        symbol=row[17],
        tokens=row[18],
        uploaded=bool(row[19]),
    )


DOCUMENT_VALUE_COLUMNS = (  # the columns document_values() fills, in order
    "kind",
    "size",
    "mtime",
    "content_hash",
    "title",
    "page_count",
    "encoding",
    "source_id",
    "display_name",
)


def document_values(document: NewDocument) -> tuple[Any, ...]:
    """The columns every write of a document sets, in ``DOCUMENT_VALUE_COLUMNS`` order."""
    return (
        document.kind,
        document.size,
        document.mtime,
        document.content_hash,
        document.title,
        document.page_count,
        document.encoding,
        document.source_id,
        document.display_name,
    )


def chunk_row(
    chunk: Chunk, *, stored_id: str, document_id: str, kb_id: int, section_id: int
) -> tuple[Any, ...]:
    """The values of ``CHUNK_INSERT_SQL`` for one chunk."""
    return (
        stored_id,
        document_id,
        kb_id,
        section_id,
        chunk.ordinal,
        chunk.text,
        trail_json(chunk.trail),
        chunk.start,
        chunk.end,
        chunk.line,
        chunk.page,
        chunk.page_end,
        str(chunk.content_kind),
        chunk.language,
        chunk.symbol,
        chunk.tokens,
        chunk.content_hash,
    )


def trail_json(trail: Sequence[str]) -> str:
    return json.dumps(list(trail), ensure_ascii=False)


def sections_of(chunks: Sequence[Chunk]) -> list[tuple[tuple[str, ...], list[int]]]:
    """Runs of consecutive chunks that share a heading trail: ``(trail, chunk positions)``."""
    runs: list[tuple[tuple[str, ...], list[int]]] = []
    for position, chunk in enumerate(chunks):
        if runs and runs[-1][0] == tuple(chunk.trail):
            runs[-1][1].append(position)
        else:
            runs.append((tuple(chunk.trail), [position]))
    return runs


def compress_text(text: str) -> bytes:
    return zlib.compress(text.encode("utf-8"), TEXT_COMPRESSION_LEVEL)


def decompress_text(blob: bytes | None) -> str:
    return zlib.decompress(blob).decode("utf-8") if blob else ""


def batches(items: Sequence[Any], size: int = MAX_PARAMS) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def placeholders(count: int) -> str:
    return ", ".join("?" * count)


def json_ids(ids: Sequence[Any]) -> str:
    """Ids as one JSON array parameter, read back with ``IN (SELECT value FROM json_each(?))``:
    one bound parameter however many ids there are."""
    return json.dumps(list(ids))
