"""One base read whole and written whole, written once: what an export reads in one snapshot
(:class:`~lorebase.store.base.KbSnapshot`: the base, its sources, every document with its
text, chunks, sections and vectors) and what an import writes in one transaction (the base,
its sources, its documents with their chunks, lexical rows and vectors, through the same
hooks a pass writes with), so that an import cut short anywhere leaves nothing.

Vectors are read through the backend's reuse lookup (``_cached_vectors``: a vector is found
by its chunk's content hash under an identity), which both backends answer from what they
keep (SQLite the stored int8 codes, PostgreSQL its full-precision cache).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from lorebase.errors import Conflict, InvalidInput
from lorebase.fields import fold
from lorebase.store import stored_chunk_id
from lorebase.store.base import (
    DocumentRecord,
    ExportedDocument,
    ImportedBase,
    ImportedDocument,
    KbSnapshot,
    KnowledgeBase,
    NewDocument,
    Region,
    Source,
)
from lorebase.store.document_text import chunk_text, read_text, spans_of, stored_text
from lorebase.store.records import (
    DOCUMENT_COLUMNS,
    DOCUMENT_FIELDS,
    DOCUMENT_VALUE_COLUMNS,
    check_chunks,
    document_from_row,
    name_taken,
    source_from_row,
)
from lorebase.store.relational import rows
from lorebase.store.relational.dialect import Bound
from lorebase.store.relational.role import DocumentChunks, RelationalRole
from lorebase.store.states import DocumentState
from lorebase.store.vectors import checked_vectors
from lorebase.types import Chunk, ContentKind, EmbedderIdentity, Position

BATCH_DOCUMENTS = 200
"""Documents an export reads per query (their texts, chunks and vectors)."""

_CHUNK_SELECT = (
    "SELECT c.document_id, c.id, c.ordinal, c.text, c.trail, c.start_offset, c.end_offset, "
    "c.line, c.page, c.page_end, c.content_kind, c.language, c.symbol, c.tokens, "
    "c.content_hash, s.ordinal FROM chunks AS c LEFT JOIN sections AS s ON s.id = c.section_id"
)

_NEW_DOCUMENT_FIELDS = frozenset(f.name for f in dataclasses.fields(NewDocument))
_WRITTEN_COLUMNS = frozenset(
    {
        "id",
        "kb_id",
        "path",
        *DOCUMENT_VALUE_COLUMNS,
        "state",
        "reason",
        "chunk_count",
        "identity_key",
        "settings_key",
    }
)
"""The columns :func:`rows.upsert_document` writes; a record's other fields the store knows
(``updated_at``, and whatever columns come later) are written after it, by name."""

DUPLICATE = (
    "two documents of what is imported share a path or an id, or an id is taken; nothing was "
    "imported: export the base again"
)


class PortableMixin(RelationalRole):
    """:class:`~lorebase.store.base.Portable` over a relational database."""

    @contextmanager
    def read_kb(self, kb_id: int) -> Iterator[KbSnapshot]:
        with self._reading() as tx:
            kb = rows.load_kb(tx, "id", kb_id)
            identity = _identity(tx, kb.identity_key)
            yield _Snapshot(self, tx, kb, identity)

    def taken_document_ids(self, document_ids: Sequence[str]) -> set[str]:
        wanted = sorted({str(document_id) for document_id in document_ids})
        taken: set[str] = set()
        with self._reading() as tx:
            for start in range(0, len(wanted), 1000):
                found = tx.all(
                    f"SELECT id FROM documents WHERE {tx.dialect.any_of('id')}",
                    (tx.dialect.ids(wanted[start : start + 1000]),),
                )
                taken.update(str(row[0]) for row in found)
        return taken

    def import_kb(
        self,
        base: ImportedBase,
        documents: Iterable[ImportedDocument],
        *,
        replacing: int | None = None,
    ) -> KnowledgeBase:
        """The identity is registered first (a short transaction of its own, as every write of
        vectors does); then one transaction deletes the replaced base, makes the new one and
        writes each document as it comes, through the backend's hooks."""
        identity_id = self._identity_id(base.identity) if base.identity is not None else None
        try:
            with self._writing() as tx:
                if replacing is not None:
                    rows.lock_kb(tx, replacing, "update")
                    self._purging(tx, "kb_id", replacing)
                    tx.execute("DELETE FROM knowledge_bases WHERE id = ?", (replacing,))
                kb_id = _insert_kb(tx, base)
                sources = {
                    source.exported_id: int(
                        tx.one(
                            "INSERT INTO sources (kb_id, path, label, created_at, kind) "
                            "VALUES (?, ?, ?, ?, ?) RETURNING id",
                            (
                                kb_id,
                                source.path,
                                source.label,
                                source.created_at,
                                source.kind.value,
                            ),
                        )[0]
                    )
                    for source in base.sources
                }
                for document in documents:
                    self._import_document(tx, kb_id, document, sources, base, identity_id)
                unsettled = tx.one(
                    "SELECT count(*) FROM documents WHERE kb_id = ? "
                    "AND state NOT IN ('indexed', 'failed')",
                    (kb_id,),
                )[0]
                tx.execute(
                    "UPDATE knowledge_bases SET state = ? WHERE id = ?",
                    ("pending" if unsettled else "ready", kb_id),
                )
                self._changed(tx, kb_id, every_document=True)
                kb = rows.load_kb(tx, "id", kb_id)
        except self._dialect.unique_violation:
            raise Conflict(DUPLICATE) from None
        if replacing is not None:
            self._forget(replacing)
        return kb

    def _import_document(
        self,
        tx: Bound,
        kb_id: int,
        document: ImportedDocument,
        sources: Mapping[int, int],
        base: ImportedBase,
        identity_id: int | None,
    ) -> None:
        fields = document.fields
        try:
            state = DocumentState(fields["state"])
            document_id = str(fields["id"])
        except (KeyError, ValueError):
            raise InvalidInput("an imported document needs an id and a known state") from None
        exported_source = fields.get("source_id")
        given = {
            name: fields[name]
            for name in _NEW_DOCUMENT_FIELDS & set(fields)
            if name not in ("text", "source_id", "regions")
        }
        new = NewDocument(
            **given,
            text=document.text or "",
            source_id=sources.get(int(exported_source)) if exported_source is not None else None,
            regions=tuple(document.regions),
        )
        chunks = document.chunks
        check_chunks(chunks)
        matrix = None
        if document.vectors is not None and chunks:
            if base.identity is None or identity_id is None:
                raise InvalidInput("vectors were given without the identity they are of")
            matrix = checked_vectors(chunks, document.vectors, base.identity)
        rows.upsert_document(
            tx,
            kb_id,
            new,
            state=state,
            reason=fields.get("reason"),
            chunk_count=len(chunks),
            identity_key=base.identity.key if matrix is not None and base.identity else None,
            settings_key=fields.get("settings_key"),
            text=(
                stored_text(document.text, spans_of(chunks)) if document.text is not None else None
            ),
            purge=self._purge,
            new_document_id=document_id,
            insert_only=True,
            extra=self._document_extra,
        )
        _write_other_fields(tx, document_id, fields)
        tx.many(
            "INSERT INTO document_fields (document_id, kb_id, field, folded, value, origin) "
            "VALUES (?, ?, 'tags', ?, ?, 'user') ON CONFLICT DO NOTHING",
            [
                rows.text_values(tx, (document_id, kb_id, fold(tag), tag))
                for tag in document.tags
                if isinstance(tag, str) and tag.strip()
            ],
        )
        if chunks:
            stored = [stored_chunk_id(document_id, chunk.id) for chunk in chunks]
            written = DocumentChunks(kb_id, document_id, chunks, stored)
            self._write_chunks(tx, written, new)
            rows.record_languages(tx, kb_id, chunks)
            if matrix is not None and identity_id is not None:
                self._write_vectors(tx, written, matrix, identity_id)


class _Snapshot:
    """:class:`~lorebase.store.base.KbSnapshot` over one read transaction ``tx``."""

    def __init__(
        self,
        role: RelationalRole,
        tx: Bound,
        kb: KnowledgeBase,
        identity: EmbedderIdentity | None,
    ) -> None:
        self._role = role
        self._tx = tx
        self.kb = kb
        self.identity = identity
        self._identity_id = rows.identity_id(tx, identity) if identity is not None else None

    def sources(self) -> list[Source]:
        found = self._tx.all(
            "SELECT id, kb_id, path, label, created_at, kind FROM sources WHERE kb_id = ? "
            "ORDER BY id",
            (self.kb.id,),
        )
        return [source_from_row(row) for row in found]

    def documents(self) -> Iterator[ExportedDocument]:
        tx = self._tx
        order = tx.dialect.binary_order
        records = [
            document_from_row(row)
            for row in tx.all(
                f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE kb_id = ? ORDER BY path{order}",
                (self.kb.id,),
            )
        ]
        for start in range(0, len(records), BATCH_DOCUMENTS):
            yield from self._batch(records[start : start + BATCH_DOCUMENTS])

    def _batch(self, records: list[DocumentRecord]) -> Iterator[ExportedDocument]:
        tx, dialect = self._tx, self._tx.dialect
        ids = dialect.ids([record.id for record in records])
        blobs = {
            str(document_id): blob
            for document_id, blob in tx.all(
                "SELECT document_id, text FROM document_texts "
                f"WHERE {dialect.any_of('document_id')}",
                (ids,),
            )
        }
        chunks: dict[str, list[tuple[Chunk, int]]] = {}
        for row in tx.all(
            f"{_CHUNK_SELECT} WHERE {dialect.any_of('c.document_id')} "
            "ORDER BY c.document_id, c.ordinal",
            (ids,),
        ):
            chunks.setdefault(str(row[0]), []).append(_chunk(row))
        vectors = self._vectors(records, chunks)
        tags: dict[str, list[str]] = {}
        for document_id, tag in tx.all(
            "SELECT document_id, value FROM document_fields WHERE "
            f"{dialect.any_of('document_id')} AND field = 'tags' AND origin = 'user' "
            "ORDER BY document_id, folded",
            (ids,),
        ):
            tags.setdefault(str(document_id), []).append(str(tag))
        regions: dict[str, list[Region]] = {}
        for document_id, page, start, end, boxes in tx.all(
            "SELECT document_id, page, start_offset, end_offset, boxes FROM regions "
            f"WHERE {dialect.any_of('document_id')} ORDER BY document_id, start_offset",
            (ids,),
        ):
            regions.setdefault(str(document_id), []).append(
                Region(int(page), int(start), int(end), tuple(map(tuple, json.loads(boxes))))
            )
        for record in records:
            held = chunks.get(record.id, [])
            yield ExportedDocument(
                record=record,
                text=(
                    read_text(blobs[record.id], spans_of(chunk for chunk, _ in held))
                    if record.id in blobs
                    else None
                ),
                chunks=[chunk for chunk, _ in held],
                sections=[section for _, section in held],
                vectors=vectors.get(record.id),
                tags=tags.get(record.id, []),
                regions=regions.get(record.id, []),
            )

    def _vectors(
        self, records: list[DocumentRecord], chunks: Mapping[str, list[tuple[Chunk, int]]]
    ) -> dict[str, np.ndarray]:
        """The vectors of the documents indexed under the base's identity, by document (one
        missing, the document has none)."""
        identity, identity_id = self.identity, self._identity_id
        if identity is None or identity_id is None:
            return {}
        embedded = [r.id for r in records if r.identity_key == identity.key and r.id in chunks]
        hashes = sorted({chunk.content_hash for d in embedded for chunk, _ in chunks[d]})
        if not hashes:
            return {}
        found = self._role._cached_vectors(self._tx, identity, identity_id, hashes)
        out: dict[str, np.ndarray] = {}
        for document_id in embedded:
            wanted = [chunk.content_hash for chunk, _ in chunks[document_id]]
            if all(content_hash in found for content_hash in wanted):
                out[document_id] = np.stack([found[h] for h in wanted]).astype(np.float32)
        return out


def _identity(tx: Bound, key: str | None) -> EmbedderIdentity | None:
    if key is None:
        return None
    row = tx.one("SELECT model, digest, transform, dim FROM identities WHERE key = ?", (key,))
    if row is None:
        return None
    return EmbedderIdentity(model=row[0], digest=row[1], dim=int(row[3]), transform=row[2])


def _chunk(row: Sequence[Any]) -> tuple[Chunk, int]:
    """A chunk from a ``_CHUNK_SELECT`` row, and its section's ordinal."""
    (
        _,
        chunk_id,
        ordinal,
        text,
        trail,
        start,
        end,
        line,
        page,
        page_end,
        content_kind,
        language,
        symbol,
        tokens,
        content_hash,
        section,
    ) = row
    position = Position(
        trail=tuple(json.loads(trail)),
        start=int(start),
        end=int(end),
        content_kind=ContentKind(content_kind),
        page=page,
        page_end=page_end,
        line=line,
        language=language,
        symbol=symbol,
    )
    chunk = Chunk(
        id=str(chunk_id),
        ordinal=int(ordinal),
        text=chunk_text(text, chunk_id),
        embed_text="",
        tokens=int(tokens),
        content_hash=str(content_hash),
        position=position,
    )
    return chunk, int(section) if section is not None else 0


def _insert_kb(tx: Bound, base: ImportedBase) -> int:
    """The base's row (``Conflict`` naming the scope when its name is taken there)."""
    now = time.time()
    settings = base.chunk_settings
    try:
        with tx.savepoint():  # the violation leaves the rest of the transaction usable
            row = tx.one(
                "INSERT INTO knowledge_bases (name, description, scope, owner, chunk_size, "
                "max_tokens, overlap, identity_key, created_at, updated_at, team_id, embedder, "
                "state, pass_finished_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (
                    base.name,
                    base.description,
                    str(base.scope),
                    base.owner,
                    settings.chunk_size,
                    settings.max_tokens,
                    settings.overlap,
                    base.identity.key if base.identity is not None else None,
                    base.created_at if base.created_at is not None else now,
                    now,
                    base.team_id,
                    base.embedder,
                    "pending",
                    base.pass_finished_at,
                ),
            )
    except tx.dialect.unique_violation:
        raise Conflict(name_taken(base.name, base.scope, base.owner, None)) from None
    return int(row[0])


def _write_other_fields(tx: Bound, document_id: str, fields: Mapping[str, Any]) -> None:
    """The record's fields the store has columns for beyond what every write sets
    (``updated_at``, and columns added later), as given: a mapping or a list as JSON."""
    extra = [name for name in DOCUMENT_FIELDS if name in fields and name not in _WRITTEN_COLUMNS]
    if not extra:
        return
    values = [_column_value(fields[name]) for name in extra]
    assignments = ", ".join(f"{name} = ?" for name in extra)
    tx.execute(
        f"UPDATE documents SET {assignments} WHERE id = ?",
        (*rows.text_values(tx, values), document_id),
    )


def _column_value(value: Any) -> Any:
    if isinstance(value, Mapping):
        return json.dumps(dict(value), ensure_ascii=False)
    if isinstance(value, list | tuple):
        return json.dumps(list(value), ensure_ascii=False)
    return value
