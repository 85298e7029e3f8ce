"""Row helpers of the relational store, as functions over a :class:`~.dialect.Bound`
connection in a transaction: the statements every role runs, written once.

Locks, where the database takes them, are taken in one order everywhere, so concurrent
writers wait for each other instead of deadlocking: the base's row first (``FOR KEY SHARE``:
writers of one base do not block each other; deleting the base waits for them), then
document rows (by path or id, in sorted order when several), then their chunks.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence

from lorebase.analysis import analysis_language
from lorebase.errors import Conflict, InvalidInput, NotFound, SourceRemoved
from lorebase.fields import field_rows
from lorebase.store.base import DocumentRecord, KnowledgeBase, NewDocument, Region
from lorebase.store.base import new_document_id as new_id
from lorebase.store.records import (
    DOCUMENT_COLUMNS,
    DOCUMENT_VALUE_COLUMNS,
    KB_COLUMNS,
    KB_EMBEDDING_COLUMNS,
    MOVED,
    SOURCE_REMOVED,
    document_from_row,
    document_values,
    kb_from_row,
    refuses_vectors,
)
from lorebase.store.relational.dialect import Bound, Lock, once_a_snapshot
from lorebase.store.states import DocumentState
from lorebase.types import Chunk, EmbedderIdentity

NO_KB = "no such knowledge base; list them to see the names"
NO_DOCUMENT = "no such document in this knowledge base; list its documents to see their ids"

KB_TOTALS_SQL = (
    "SELECT kb_id, count(*), count(*) FILTER (WHERE state = 'indexed'), "
    "count(*) FILTER (WHERE state = 'failed'), coalesce(sum(chunk_count), 0), "
    "coalesce(sum(size), 0), count(*) FILTER (WHERE state NOT IN ('indexed', 'failed')), "
    "count(*) FILTER (WHERE chunk_count > 0), "
    "count(*) FILTER (WHERE chunk_count > 0 AND identity_key IS NOT NULL), "
    "coalesce(sum(chunk_count) FILTER (WHERE identity_key IS NOT NULL), 0) "
    "FROM documents"
)
"""Totals of documents, append ``WHERE kb_id = ? GROUP BY kb_id`` (one base) or
``GROUP BY kb_id`` (all)."""


def _totals(row: Sequence[object] | None) -> tuple[int, ...] | None:
    return None if row is None else tuple(int(value) for value in row[1:])  # type: ignore[call-overload]


def load_kb(tx: Bound, column: str, value: object, *, totals: bool = True) -> KnowledgeBase:
    row = tx.one(f"SELECT {KB_COLUMNS} FROM knowledge_bases WHERE {column} = ?", (value,))
    if row is None:
        if column == "name":  # what the operator typed: say which one was not found
            raise NotFound(f"no knowledge base named {value!r}; list them to see the names")
        raise NotFound(NO_KB)
    if not totals:
        return kb_from_row(row, None)
    counted = tx.one(f"{KB_TOTALS_SQL} WHERE kb_id = ? GROUP BY kb_id", (row[0],))
    return kb_from_row(row, _totals(counted))


def kb_totals(tx: Bound, kb_ids: Sequence[int] | None) -> dict[int, tuple[int, ...]]:
    """The totals of these bases (of every base: ``None``), by id; a base without documents
    is left out."""
    if kb_ids is None:
        rows = tx.all(f"{KB_TOTALS_SQL} GROUP BY kb_id")
    else:
        where = tx.dialect.any_of("kb_id")
        rows = tx.all(f"{KB_TOTALS_SQL} WHERE {where} GROUP BY kb_id", (tx.dialect.ids(kb_ids),))
    return {int(row[0]): _totals(row) or () for row in rows}


def lock_kb(tx: Bound, kb_id: int, strength: Lock = "key share") -> None:
    """The base's row, locked for the transaction where the database locks rows (first in the
    lock order); ``NotFound`` when there is no such base."""
    found = tx.one(
        f"SELECT 1 FROM knowledge_bases WHERE id = ?{tx.dialect.lock(strength)}", (kb_id,)
    )
    if found is None:
        raise NotFound(NO_KB)


def identity_id(tx: Bound, identity: EmbedderIdentity) -> int | None:
    """The id of a registered embedding identity (``None``: not registered)."""

    def read() -> int | None:
        row = tx.one("SELECT id FROM identities WHERE key = ?", (identity.key,))
        return None if row is None else int(row[0])

    return once_a_snapshot(tx.raw, ("identity_id", identity.key), read)


def require_kb(tx: Bound, kb_id: int) -> None:
    if tx.one("SELECT 1 FROM knowledge_bases WHERE id = ?", (kb_id,)) is None:
        raise NotFound(NO_KB)


def require_source(tx: Bound, kb_id: int, source_id: int | None) -> None:
    """``SourceRemoved`` when a document's source is no longer followed by its base (a folder
    removed while a pass read it; its row share-locked, so a removal waits for this write)."""
    if source_id is None:
        return
    sql = f"SELECT 1 FROM sources WHERE id = ? AND kb_id = ?{tx.dialect.lock('key share')}"
    if tx.one(sql, (source_id, kb_id)) is None:
        raise SourceRemoved(SOURCE_REMOVED)


def followed_sources(tx: Bound, kb_id: int) -> set[int]:
    """The ids of the sources a base follows now."""
    return {int(row[0]) for row in tx.all("SELECT id FROM sources WHERE kb_id = ?", (kb_id,))}


def require_identity(tx: Bound, kb_id: int, identity_key: str) -> None:
    """``Conflict`` when the base takes no vectors of this identity (see
    :func:`~lorebase.store.records.refuses_vectors`); its row share-locked for the
    transaction, so a switch waits for this write (and then sees its document)."""
    lock = tx.dialect.lock("share")
    row = tx.one(f"SELECT {KB_EMBEDDING_COLUMNS} FROM knowledge_bases WHERE id = ?{lock}", (kb_id,))
    if row is None:
        raise NotFound(NO_KB)
    if refuses_vectors(row, identity_key):
        raise Conflict(MOVED)


def load_document(tx: Bound, kb_id: int, document_id: str, *, lock: bool = False) -> DocumentRecord:
    row = tx.one(
        f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE id = ? AND kb_id = ?"
        + (tx.dialect.lock("update") if lock else ""),
        (document_id, kb_id),
    )
    if row is None:
        raise NotFound(NO_DOCUMENT)
    return document_from_row(row)


def text_values(tx: Bound, values: Sequence[object]) -> tuple[object, ...]:
    """Values with every string made fit for the database's text (PostgreSQL text cannot hold
    NUL: it becomes U+FFFD, one character for one, so offsets into the document's text, kept
    compressed as bytes, still hold)."""
    if tx.dialect.text_holds_nul:
        return tuple(values)
    return tuple(text(value) if isinstance(value, str) else value for value in values)


def text(value: str) -> str:
    """A string fit for every database's text (see :func:`text_values`)."""
    return value.replace("\x00", "\ufffd")


def upsert_document(
    tx: Bound,
    kb_id: int,
    document: NewDocument,
    *,
    state: DocumentState,
    reason: str | None,
    chunk_count: int,
    identity_key: str | None,
    settings_key: str | None,
    text: bytes | None,
    purge: Callable[[Bound, str], None],
    new_document_id: str | None = None,
    insert_only: bool = False,
    extra: Mapping[str, object] | None = None,
) -> str:
    """Write the document row for ``document.path`` and return its id: an existing row (locked
    first) keeps its id and loses its chunks first (``purge``: before its title changes, since
    an index beside the rows deletes with the values it was built from); a new row gets
    ``new_document_id`` (or a fresh one). Two transactions writing one new path at once: the
    second waits for the first, then updates the row the first made. ``insert_only``: a new
    row or a unique violation. ``extra``: values of columns only this backend's table has."""
    if not document.path:
        raise InvalidInput("a document needs a path")
    require_source(tx, kb_id, document.source_id)
    now = time.time()
    columns = (
        *DOCUMENT_VALUE_COLUMNS,
        "state",
        "reason",
        "chunk_count",
        "identity_key",
        "settings_key",
        *(extra or {}),
    )
    values = (
        *text_values(tx, document_values(document)),
        str(state),
        reason,
        chunk_count,
        identity_key,
        settings_key,
        *(extra or {}).values(),
    )
    document_id = None if insert_only else _locked_path(tx, kb_id, document.path)
    if document_id is None:
        inserted = tx.one(
            f"INSERT INTO documents (id, kb_id, path, {', '.join(columns)}, created_at, "
            f"updated_at) VALUES ({', '.join(['?'] * (len(columns) + 5))}) "
            + ("" if insert_only else "ON CONFLICT (kb_id, path) DO NOTHING ")
            + "RETURNING id",
            (new_document_id or new_id(), kb_id, document.path, *values, now, now),
        )
        if inserted is not None:
            write_text(tx, str(inserted[0]), text)
            write_fields(tx, kb_id, str(inserted[0]), document, fresh=True)
            write_regions(tx, str(inserted[0]), document.regions, fresh=True)
            return str(inserted[0])
        document_id = _locked_path(tx, kb_id, document.path)  # made meanwhile, committed
        if document_id is None:
            raise Conflict("the document changed while it was written; try again")
    purge(tx, document_id)
    assignments = ", ".join(f"{column} = ?" for column in columns)
    tx.execute(
        f"UPDATE documents SET {assignments}, updated_at = ? WHERE id = ?",
        (*values, now, document_id),
    )
    write_text(tx, document_id, text)
    write_fields(tx, kb_id, document_id, document)
    write_regions(tx, document_id, document.regions)
    return document_id


def write_regions(
    tx: Bound, document_id: str, regions: Sequence[Region], *, fresh: bool = False
) -> None:
    """Where OCR read the document's text, in place of what an earlier reading recorded."""
    if not fresh:
        tx.execute("DELETE FROM regions WHERE document_id = ?", (document_id,))
    tx.many(
        "INSERT INTO regions (document_id, page, start_offset, end_offset, boxes) "
        "VALUES (?, ?, ?, ?, ?)",
        [
            (document_id, r.page, r.start, r.end, json.dumps([list(b) for b in r.boxes]))
            for r in regions
        ],
    )


def write_fields(
    tx: Bound, kb_id: int, document_id: str, document: NewDocument, *, fresh: bool = False
) -> None:
    """The fields a search filters on (:func:`lorebase.fields.field_rows`) of the document as
    read now, in place of those an earlier reading gave (the tags users set stay)."""
    if not fresh:
        tx.execute(
            "DELETE FROM document_fields WHERE document_id = ? AND origin = 'document'",
            (document_id,),
        )
    found = field_rows(
        document.metadata, title=document.title, kind=document.kind, mtime=document.mtime
    )
    tx.many(
        "INSERT INTO document_fields (document_id, kb_id, field, folded, value, origin) "
        "VALUES (?, ?, ?, ?, ?, 'document') ON CONFLICT DO NOTHING",
        [text_values(tx, (document_id, kb_id, n, f, v)) for n, v, f in found],
    )


def _locked_path(tx: Bound, kb_id: int, path: str) -> str | None:
    row = tx.one(
        f"SELECT id FROM documents WHERE kb_id = ? AND path = ?{tx.dialect.lock('update')}",
        (kb_id, path),
    )
    return None if row is None else str(row[0])


def write_text(tx: Bound, document_id: str, text: bytes | None) -> None:
    """The document's (compressed) extracted text, or none: it has no text now."""
    if text is None:
        tx.execute("DELETE FROM document_texts WHERE document_id = ?", (document_id,))
    else:
        tx.execute(
            "INSERT INTO document_texts (document_id, text) VALUES (?, ?) "
            "ON CONFLICT (document_id) DO UPDATE SET text = excluded.text",
            (document_id, text),
        )


def in_base(tx: Bound, kb_id: int, document_ids: Sequence[str]) -> list[str]:
    """Those of the documents that are in this base, locked in id order where rows lock."""
    rows = tx.all(
        f"SELECT id FROM documents WHERE kb_id = ? AND {tx.dialect.any_of('id')} ORDER BY id"
        + tx.dialect.lock("update"),
        (kb_id, tx.dialect.ids(sorted(set(document_ids)))),
    )
    return [str(row[0]) for row in rows]


def parts_within(tx: Bound, kb_id: int, document_ids: Sequence[str]) -> list[str]:
    """The documents held inside these ones (their ``container`` is one of their paths) and
    not among them, locked in id order where rows lock."""
    dialect = tx.dialect
    rows = tx.all(
        "SELECT p.id FROM documents AS p JOIN documents AS d "
        "ON d.kb_id = p.kb_id AND d.path = p.container "
        f"WHERE p.kb_id = ? AND {dialect.any_of('d.id')} AND NOT {dialect.any_of('p.id')} "
        "ORDER BY p.id" + dialect.lock("update"),
        (kb_id, dialect.ids(document_ids), dialect.ids(document_ids)),
    )
    return [str(row[0]) for row in rows]


def record_languages(tx: Bound, kb_id: int, chunks: Sequence[Chunk]) -> None:
    """Remember the analyses these chunks are indexed with (see :mod:`lorebase.analysis`), so
    a question asked of the base is analysed as each of them."""
    codes = sorted({analysis_language(chunk.position.language) for chunk in chunks})
    tx.many(
        "INSERT INTO kb_languages (kb_id, language) VALUES (?, ?) ON CONFLICT DO NOTHING",
        [(kb_id, code) for code in codes],
    )


def kb_languages(tx: Bound, kb_ids: Sequence[int]) -> dict[int, frozenset[str]]:
    """The analyses each base's chunks were indexed with (a base without chunks: none)."""

    def read() -> dict[int, frozenset[str]]:
        found: dict[int, set[str]] = {kb_id: set() for kb_id in kb_ids}
        for kb_id, language in tx.all(
            f"SELECT kb_id, language FROM kb_languages WHERE {tx.dialect.any_of('kb_id')}",
            (tx.dialect.ids(list(kb_ids)),),
        ):
            found.setdefault(int(kb_id), set()).add(str(language))
        return {kb_id: frozenset(codes) for kb_id, codes in found.items()}

    return dict(once_a_snapshot(tx.raw, ("kb_languages", tuple(kb_ids)), read))
