"""Rows to values and values to rows, the SQLite parts: what every backend shares is in
:mod:`lorebase.store.records` (re-exported here); this adds SQLite's SQL around it."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from lorebase.store.records import CHUNK_INSERT_COLUMNS as CHUNK_INSERT_COLUMNS
from lorebase.store.records import DOCUMENT_COLUMNS as DOCUMENT_COLUMNS
from lorebase.store.records import DOCUMENT_FIELDS as DOCUMENT_FIELDS
from lorebase.store.records import DOCUMENT_VALUE_COLUMNS as DOCUMENT_VALUE_COLUMNS
from lorebase.store.records import KB_COLUMNS as KB_COLUMNS
from lorebase.store.records import KB_FIELDS as KB_FIELDS
from lorebase.store.records import STORED_CHUNK_FIELDS as STORED_CHUNK_FIELDS
from lorebase.store.records import STORED_CHUNK_SELECT as STORED_CHUNK_SELECT
from lorebase.store.records import chunk_row as chunk_row
from lorebase.store.records import document_from_row as document_from_row
from lorebase.store.records import document_values as document_values
from lorebase.store.records import kb_from_row as kb_from_row
from lorebase.store.records import named as named
from lorebase.store.records import sections_of as sections_of
from lorebase.store.records import stored_chunk_from_row as stored_chunk_from_row
from lorebase.store.records import trail_json as trail_json
from lorebase.store.relational.dialect import once_a_snapshot

MAX_PARAMS = 500
"""Most ids bound in one ``IN (...)`` list; long lists are looked up in batches."""

KB_TOTALS_SQL = (
    "SELECT kb_id, count(*), coalesce(sum(state = 'indexed'), 0), "
    "coalesce(sum(state = 'failed'), 0), coalesce(sum(chunk_count), 0), "
    "coalesce(sum(size), 0), coalesce(sum(state NOT IN ('indexed', 'failed')), 0), "
    "coalesce(sum(chunk_count > 0), 0), "
    "coalesce(sum(chunk_count > 0 AND identity_key IS NOT NULL), 0), "
    "coalesce(sum(CASE WHEN identity_key IS NOT NULL THEN chunk_count ELSE 0 END), 0) "
    "FROM documents"
)
"""Totals of documents, append ``WHERE kb_id = ?`` (one base) or ``GROUP BY kb_id`` (all)."""

CHUNK_INSERT_SQL = (
    f"INSERT INTO chunks ({', '.join(CHUNK_INSERT_COLUMNS)}) "
    f"VALUES ({', '.join(':' + name for name in CHUNK_INSERT_COLUMNS)})"
)


def batches(items: Sequence[Any], size: int = MAX_PARAMS) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def placeholders(count: int) -> str:
    return ", ".join("?" * count)


def json_ids(ids: Sequence[Any]) -> str:
    """Ids as one JSON array parameter, read back with ``IN (SELECT value FROM json_each(?))``:
    one bound parameter however many ids there are."""
    return json.dumps(list(ids))


def base_generations(
    conn: sqlite3.Connection, kb_ids: Sequence[int]
) -> list[tuple[int, int, float]]:
    """``(id, generation, created_at)`` of these bases as ``conn`` sees them (deleted ones
    left out): what the indexes kept beside the rows (dense, lexical) check to know they are
    stale, or belong to a deleted base whose id was reused."""

    def read() -> tuple[tuple[int, int, float], ...]:
        rows = conn.execute(
            "SELECT id, generation, created_at FROM knowledge_bases "
            "WHERE id IN (SELECT value FROM json_each(?))",
            (json_ids(kb_ids),),
        )
        return tuple((int(kb_id), int(gen), float(made)) for kb_id, gen, made in rows)

    # A search asks it of the same bases three times in its snapshot (its indexes, twice).
    return list(once_a_snapshot(conn, ("base_generations", tuple(kb_ids)), read))
