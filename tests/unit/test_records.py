"""Rows read back into records: a stored chunk's row unpacked by position matches the columns
selected by name."""

from __future__ import annotations

import json
import zlib

from lorebase.store.records import STORED_CHUNK_FIELDS, stored_chunk_from_row
from lorebase.types import ContentKind


def test_a_stored_chunk_row_is_read_field_by_field_in_the_order_selected() -> None:
    values = {
        "id": "c" * 32,
        "ordinal": 3,
        "text": zlib.compress(b"first line\nsecond line"),
        "tokens": 7,
        "knowledge_base": "notes",
        "knowledge_base_id": 4,
        "document_id": "d" * 32,
        "path": "guide/setup.md",
        "title": "Setup",
        "kind": "md",
        "uploaded": 1,
        "trail": json.dumps(["Setup", "Install"]),
        "start": 100,
        "end": 112,
        "content_kind": ContentKind.CODE.value,
        "page": 2,
        "page_end": 5,
        "line": 9,
        "language": "python",
        "symbol": "main",
    }
    assert list(values) == list(STORED_CHUNK_FIELDS)
    chunk = stored_chunk_from_row(tuple(values.values()))
    assert (chunk.id, chunk.ordinal, chunk.text, chunk.tokens) == (
        "c" * 32,
        3,
        "first line\nsecond line",
        7,
    )
    p = chunk.provenance
    assert (p.knowledge_base, p.knowledge_base_id, p.document_id) == ("notes", 4, "d" * 32)
    assert (p.path, p.title, p.kind, p.uploaded) == ("guide/setup.md", "Setup", "md", True)
    assert p.trail == ("Setup", "Install")
    assert (p.start, p.end, p.content_kind) == (100, 112, ContentKind.CODE)
    assert (p.page, p.page_end, p.line, p.line_end) == (2, 5, 9, 10)
    assert (p.language, p.symbol) == ("python", "main")
