"""A chunk's text stored zlib-compressed in the SQLite store, on real SQLite files: every reader
gets the text back (hydration, neighbours, a document's chunks and text, both keyword engines),
rows written before (TEXT) read beside new ones (BLOB), a database made by the previous schema
is migrated without rewriting its rows, and a damaged row is named, never shown."""

from __future__ import annotations

import json
import logging
import shutil
import sqlite3
import zlib
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contract.store_contract import put
from lorebase.errors import DamagedText, ServerFault
from lorebase.store.base import DocumentRecord, KnowledgeBase
from lorebase.store.document_text import chunk_text, stored_chunk_text
from lorebase.store.sqlite import SqliteStore
from lorebase.store.sqlite.fts import FTS_SOURCE_VIEW, integrity_check_sql
from lorebase.store.sqlite.schema import MIGRATIONS, migrate
from lorebase.store.sqlite.store import connect

LONG = (
    "The glacier survey measured meltwater in the upper valley every spring; "
    "the river sediment samples were sent to the laboratory in town. "
) * 6
NON_ASCII = "Größenordnung der Gletscherschmelze: 氷河の融解 ✓ — Überwachung jedes Frühjahr. " * 8
WITH_NUL = "before\x00after the nul character, and a replacement \ufffd sign. " * 10
SHORT = "tiny"
TEXTS = [SHORT, LONG, NON_ASCII, WITH_NUL]
ENGINES = ["tantivy", "fts5"]


# -- the stored form, pure ------------------------------------------------------------------
@given(st.text(max_size=2000))
def test_what_is_stored_reads_back_as_the_text(text: str) -> None:
    stored = stored_chunk_text(text)
    assert chunk_text(stored, "c1") == text
    if isinstance(stored, bytes):  # compressed only when that is smaller
        assert len(stored) < len(text.encode("utf-8"))
    else:
        assert stored == text


def test_short_texts_stay_text_and_long_ones_are_compressed() -> None:
    assert stored_chunk_text(SHORT) == SHORT
    assert stored_chunk_text("") == ""
    for text in (LONG, NON_ASCII, WITH_NUL):
        stored = stored_chunk_text(text)
        assert isinstance(stored, bytes) and len(stored) < len(text.encode()) // 2
    assert chunk_text(None) == ""


def test_a_stream_that_does_not_decompress_names_the_chunk_not_its_text() -> None:
    with pytest.raises(DamagedText, match="chunk c-42") as raised:
        chunk_text(b"\x78\x9cnot zlib at all", "c-42")
    assert isinstance(raised.value, ServerFault)  # a 500 problem, not a crash
    not_utf8 = zlib.compress(b"\xff\xfe glacier")
    with pytest.raises(DamagedText, match="chunk c-43") as raised:
        chunk_text(not_utf8, "c-43")
    assert "glacier" not in str(raised.value)
    # Texts are remembered decompressed; a damaged stream is not: it is named each time.
    for name in ("c-44", "c-45"):
        with pytest.raises(DamagedText, match=f"chunk {name}"):
            chunk_text(not_utf8, name)


# -- through the store --------------------------------------------------------------------------
@contextmanager
def _document(
    path: Path, engine: str, texts: list[str] = TEXTS
) -> Iterator[tuple[SqliteStore, KnowledgeBase, DocumentRecord]]:
    """The store at ``path`` with a base "docs" holding a.md, made of ``texts``."""
    with SqliteStore(path, lexical=engine) as store:
        kb = store.create_kb("docs")
        record, _ = put(store, kb, "a.md", texts)
        yield store, kb, record


def _types(path: Path) -> dict[str, str]:
    with closing(sqlite3.connect(path)) as conn:
        return dict(conn.execute("SELECT id, typeof(text) FROM chunks").fetchall())


@pytest.mark.parametrize("engine", ENGINES)
def test_every_reader_gets_the_texts_back(tmp_path: Path, engine: str) -> None:
    path = tmp_path / "lorebase.db"
    with _document(path, engine) as (store, kb, record):
        stored = store.document_chunks(kb.id, record.id, 0, 10)
        assert [c.text for c in stored] == TEXTS
        ids = [c.id for c in stored]
        assert [c.text for c in store.get_chunks([kb.id], ids)] == TEXTS
        assert [c.text for c in store.neighbors([kb.id], ids[1], 2)] == TEXTS[:4]
        assert store.document_text(kb.id, record.id) == "\n\n".join(TEXTS)
        for word, index in (("sediment", 1), ("Gletscherschmelze", 2), ("replacement", 3)):
            hits = store.keyword_search([kb.id], word, 5)
            assert [hit[0] for hit in hits] == [ids[index]], word
        assert store.keyword_search([kb.id], "tiny", 5)[0][0] == ids[0]
        if engine == "fts5":
            with store.database.write() as conn:
                conn.execute(integrity_check_sql())
    types = _types(path)
    assert [types[i] for i in ids] == ["text", "blob", "blob", "blob"]


def _as_old_row(path: Path, chunk_id: str) -> None:
    """Write a chunk's text back as an older lorebase stored it: TEXT."""
    with closing(sqlite3.connect(path)) as conn, conn:
        (blob,) = conn.execute("SELECT text FROM chunks WHERE id = ?", (chunk_id,)).fetchone()
        conn.execute(
            "UPDATE chunks SET text = ? WHERE id = ?",
            (zlib.decompress(blob).decode("utf-8"), chunk_id),
        )


@pytest.mark.parametrize("engine", ENGINES)
def test_old_text_rows_and_new_blob_rows_read_side_by_side(tmp_path: Path, engine: str) -> None:
    path = tmp_path / "lorebase.db"
    with _document(path, engine) as (store, kb, record):
        ids = [c.id for c in store.document_chunks(kb.id, record.id, 0, 10)]
    _as_old_row(path, ids[1])
    assert [_types(path)[i] for i in ids] == ["text", "text", "blob", "blob"]
    with SqliteStore(path, lexical=engine) as store:
        assert [c.text for c in store.get_chunks([kb.id], ids)] == TEXTS
        assert store.document_text(kb.id, record.id) == "\n\n".join(TEXTS)
        assert [h[0] for h in store.keyword_search([kb.id], "sediment", 5)] == [ids[1]]
        assert [h[0] for h in store.keyword_search([kb.id], "Gletscherschmelze", 5)] == [ids[2]]
        # Replacing the document deletes the old rows' index entries with their values.
        put(store, kb, "a.md", ["glacier gone", LONG.replace("sediment", "gravel")])
        assert store.keyword_search([kb.id], "sediment", 5) == []
        assert len(store.keyword_search([kb.id], "gravel", 5)) == 1
        if engine == "fts5":
            with store.database.write() as conn:
                conn.execute(integrity_check_sql())


def test_the_tantivy_index_is_rebuilt_from_compressed_rows(tmp_path: Path) -> None:
    path = tmp_path / "lorebase.db"
    with SqliteStore(path) as store:
        kb = store.create_kb("docs")
        put(store, kb, "a.md", TEXTS)
        put(store, kb, "b.md", [LONG.replace("glacier", "moraine")])
        assert len(store.keyword_search([kb.id], "sediment", 5)) == 2
    shutil.rmtree(tmp_path / "lorebase.lexical")  # lost: rebuilt from the chunks table
    with SqliteStore(path) as store:
        assert len(store.keyword_search([kb.id], "sediment", 5)) == 2
        assert len(store.keyword_search([kb.id], "moraine", 5)) == 1
        assert len(store.keyword_search([kb.id], "Gletscherschmelze", 5)) == 1


def test_a_database_of_the_previous_schema_is_migrated_without_rewriting_rows(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    conn = connect(path)
    previous = [m for m in MIGRATIONS if m.number < 21]
    migrate(conn, previous)
    (old_view,) = conn.execute(
        "SELECT sql FROM sqlite_master WHERE name = ?", (FTS_SOURCE_VIEW,)
    ).fetchone()
    assert "chunk_text" not in old_view
    conn.execute(
        "INSERT INTO knowledge_bases (id, name, scope, chunk_size, max_tokens, overlap, "
        "created_at, updated_at) VALUES (1, 'old', 'personal', 1200, 320, 200, 0, 0)"
    )
    conn.execute(
        "INSERT INTO documents (id, kb_id, path, kind, size, content_hash, title, state, "
        "chunk_count, created_at, updated_at) "
        "VALUES ('d1', 1, 'legacy.md', 'md', 10, 'h', 'Legacy', 'indexed', 1, 0, 0)"
    )
    conn.execute(
        "INSERT INTO sections (id, document_id, ordinal, trail, headings) "
        "VALUES (1, 'd1', 0, ?, '')",
        (json.dumps([]),),
    )
    conn.execute(
        "INSERT INTO chunks (id, document_id, kb_id, section_id, ordinal, text, trail, "
        "start_offset, end_offset, content_kind, tokens, content_hash) "
        "VALUES ('c1', 'd1', 1, 1, 0, ?, '[]', 0, ?, 'prose', 5, 'ch')",
        (LONG, len(LONG)),
    )
    conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")  # as it indexed them
    conn.close()

    with SqliteStore(path, lexical="fts5") as store:
        assert [hit[0] for hit in store.keyword_search([1], "sediment", 5)] == ["c1"]
        assert store.get_chunks([1], ["c1"])[0].text == LONG
        kb = store.get_kb("old")
        put(store, kb, "new.md", [NON_ASCII])  # compressed: found through the new view
        assert len(store.keyword_search([1], "Gletscherschmelze", 5)) == 1
        with store.database.write() as write:
            write.execute(integrity_check_sql())
            (view,) = write.execute(
                "SELECT sql FROM sqlite_master WHERE name = ?", (FTS_SOURCE_VIEW,)
            ).fetchone()
    assert "chunk_text(c.text, c.id)" in view
    assert _types(path)["c1"] == "text"  # not rewritten by the upgrade


@pytest.mark.parametrize("engine", ENGINES)
def test_a_damaged_row_is_named_and_the_rest_still_works(
    tmp_path: Path, engine: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "lorebase.db"
    with _document(path, engine, [LONG, NON_ASCII]) as (store, kb, record):
        put(store, kb, "b.md", [LONG.replace("glacier", "moraine")])
        ids = [c.id for c in store.document_chunks(kb.id, record.id, 0, 10)]
        with store.database.write() as conn:
            conn.execute("UPDATE chunks SET text = ? WHERE id = ?", (b"\x78\x9c damaged", ids[0]))
        with pytest.raises(DamagedText, match=f"chunk {ids[0]}") as raised:
            store.get_chunks([kb.id], ids)
        assert "glacier" not in str(raised.value)
        with pytest.raises(DamagedText, match=f"chunk {ids[0]}"):
            store.document_text(kb.id, record.id)
        assert [c.text for c in store.get_chunks([kb.id], ids[1:])] == [NON_ASCII]
        (found,) = [f for f in store.check() if "decompress" in f.problem]
        assert (found.area, found.kb_id, found.document_id) == ("database", kb.id, record.id)
        assert not found.repairable and "glacier" not in found.problem
        assert len(store.keyword_search([kb.id], "moraine", 5)) == 1
        # The damaged document can be read again: its rows are replaced.
        with caplog.at_level(logging.WARNING, logger="lorebase.store.sqlite.database"):
            put(store, kb, "a.md", [LONG])
        assert all("glacier" not in message for message in caplog.messages)
        if engine == "fts5":  # its index entries were deleted through the view: named
            assert any(ids[0] in message for message in caplog.messages)
        assert len(store.keyword_search([kb.id], "sediment", 5)) == 2
        assert store.document_text(kb.id, record.id) == LONG
        # The newest chunk damaged, then replaced: its rowid is reused, with nothing of it.
        with store.database.write() as conn:
            conn.execute(
                "UPDATE chunks SET text = ? WHERE rowid = (SELECT max(rowid) FROM chunks)",
                (b"\x78\x9c damaged",),
            )
        put(store, kb, "a.md", ["the flamingo census, counted at dawn by the lake " * 4])
        assert store.keyword_search([kb.id], "glacier", 5) == []
        assert len(store.keyword_search([kb.id], "flamingo", 5)) == 1
        if engine == "fts5":
            with store.database.write() as conn:
                conn.execute(integrity_check_sql())
