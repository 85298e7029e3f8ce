"""The ``Chunks`` role: hydration, neighbours, document text. Run against every backend."""

from __future__ import annotations

import pytest
from store_contract import (
    put,
    stored_ids,
)

from lorebase.errors import NotFound
from lorebase.store.base import Store


# -- hydration ---------------------------------------------------------------------------------
def test_get_chunks_hydrates_in_the_order_asked(store: Store) -> None:
    kb = store.create_kb("docs")
    doc, chunks = put(
        store,
        kb,
        "src/a.py",
        ["zebra one", "zebra two"],
        title="A",
        symbol="f",
        trails=[("mod",), ("mod", "f")],
    )
    ids = stored_ids(doc.id, chunks)
    got = store.get_chunks([kb.id], [ids[1], "unknown", ids[0]])
    assert [c.id for c in got] == [ids[1], ids[0]]
    first = got[1]
    assert (first.kb_id, first.kb_name, first.document_id) == (kb.id, "docs", doc.id)
    assert (first.path, first.title, first.kind, first.ordinal) == ("src/a.py", "A", "py", 0)
    assert (first.text, first.trail, first.start, first.end) == ("zebra one", ("mod",), 0, 9)
    assert (first.content_kind, first.line, first.page, first.page_end) == ("code", 1, None, None)
    assert (first.language, first.symbol, first.tokens) == ("python", "f", 2)
    assert got[0].trail == ("mod", "f")
    assert store.get_chunks([kb.id], []) == []


def test_neighbors_are_the_window_around_a_chunk(store: Store) -> None:
    kb = store.create_kb("docs")
    doc, chunks = put(store, kb, "a.md", [f"zebra {i}" for i in range(6)])
    put(store, kb, "b.md", ["zebra elsewhere"])
    ids = stored_ids(doc.id, chunks)
    assert [c.ordinal for c in store.neighbors([kb.id], ids[3], 1)] == [2, 3, 4]
    assert [c.ordinal for c in store.neighbors([kb.id], ids[0], 2)] == [0, 1, 2]
    assert [c.ordinal for c in store.neighbors([kb.id], ids[5], 0)] == [5]
    assert {c.path for c in store.neighbors([kb.id], ids[5], 100)} == {"a.md"}
    with pytest.raises(NotFound):
        store.neighbors([kb.id], "unknown", 1)
