"""Numbered, transactional, recorded migrations: an old database opens in a newer lorebase."""

from __future__ import annotations

import json
import sqlite3
import zlib
from pathlib import Path

import pytest

from lorebase.accounts.base import Role
from lorebase.accounts.schema import (
    ACCOUNT_MIGRATIONS,
    ACCOUNT_MIGRATIONS_TABLE,
    migrate_accounts,
)
from lorebase.accounts.sqlite import SqliteAccounts, key_hash
from lorebase.errors import Conflict
from lorebase.store.base import NewDocument
from lorebase.store.sqlite import SqliteStore
from lorebase.store.sqlite.schema import MIGRATIONS, Migration, applied_migrations, migrate
from lorebase.store.sqlite.store import connect
from lorebase.store.states import Scope

LEGACY_TEXT = "Intro\n\nthe quarterly flamingo census"


def _recorded(path: Path) -> tuple[list[tuple[int, str]], int]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT number, name FROM migrations ORDER BY number").fetchall()
        version = conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()
    return rows, version


def test_a_new_database_gets_every_migration(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    SqliteStore(path).close()
    rows, version = _recorded(path)
    assert rows == [(m.number, m.name) for m in MIGRATIONS]
    assert version == MIGRATIONS[-1].number


def test_reopening_applies_nothing_twice(tmp_path: Path) -> None:
    path = tmp_path / "again.db"
    SqliteStore(path).close()
    conn = connect(path)
    try:
        assert migrate(conn) == []
    finally:
        conn.close()
    assert len(_recorded(path)[0]) == len(MIGRATIONS)


def test_a_database_from_migration_1_is_upgraded_with_its_data(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = connect(path)
    assert migrate(conn, MIGRATIONS[:1]) == [1]
    # Rows as an old lorebase (core tables only, no lexical index) would have written them.
    conn.execute(
        "INSERT INTO knowledge_bases (id, name, scope, chunk_size, max_tokens, overlap, "
        "created_at, updated_at) VALUES (1, 'old', 'personal', 1200, 320, 200, 0, 0)"
    )
    conn.execute(
        "INSERT INTO documents (id, kb_id, path, kind, size, content_hash, title, state, "
        "chunk_count, created_at, updated_at, text) "
        "VALUES ('d1', 1, 'notes/legacy.md', 'md', 10, 'h', 'Legacy', 'indexed', 1, 0, 0, ?)",
        (zlib.compress(LEGACY_TEXT.encode()),),
    )
    conn.execute(
        "INSERT INTO sections (id, document_id, ordinal, trail, headings) "
        "VALUES (1, 'd1', 0, ?, 'Intro')",
        (json.dumps(["Intro"]),),
    )
    conn.execute(
        "INSERT INTO chunks (id, document_id, kb_id, section_id, ordinal, text, trail, "
        "start_offset, end_offset, content_kind, tokens, content_hash) "
        "VALUES ('c1', 'd1', 1, 1, 0, 'the quarterly flamingo census', ?, 0, 29, 'prose', 5, "
        "'ch')",
        (json.dumps(["Intro"]),),
    )
    conn.close()
    assert _recorded(path) == ([(1, MIGRATIONS[0].name)], 1)

    with SqliteStore(path) as store:
        kb = store.get_kb("old")
        assert kb.documents == 1 and kb.chunks == 1
        legacy = store.get_document(kb.id, "notes/legacy.md")
        assert legacy is not None
        # Migration 6 moved the text out of the documents row, into a table of its own.
        assert store.document_text(kb.id, legacy.id) == LEGACY_TEXT
        # Migration 2 built the lexical index over the chunks that were already there.
        assert [hit[0] for hit in store.keyword_search([kb.id], "flamingo", 5)] == ["c1"]
        assert [hit[0] for hit in store.keyword_search([kb.id], "legacy intro", 5)] == ["c1"]
    rows, version = _recorded(path)
    assert [number for number, _ in rows] == [m.number for m in MIGRATIONS]
    assert version == MIGRATIONS[-1].number


def test_an_older_sqlite_without_drop_column_empties_the_text_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "old-sqlite.db"
    conn = connect(path)
    migrate(conn, MIGRATIONS[:5])
    conn.execute(
        "INSERT INTO knowledge_bases (id, name, scope, chunk_size, max_tokens, overlap, "
        "created_at, updated_at) VALUES (1, 'old', 'personal', 1200, 320, 200, 0, 0)"
    )
    conn.execute(
        "INSERT INTO documents (id, kb_id, path, kind, size, content_hash, state, "
        "chunk_count, created_at, updated_at, text) "
        "VALUES ('d1', 1, 'a.md', 'md', 10, 'h', 'indexed', 0, 0, 0, ?)",
        (zlib.compress(LEGACY_TEXT.encode()),),
    )
    monkeypatch.setattr(sqlite3, "sqlite_version_info", (3, 31, 1))  # the module schema.py reads
    assert migrate(conn) == [m.number for m in MIGRATIONS[5:]]
    assert conn.execute("SELECT text FROM documents").fetchall() == [(None,)]
    conn.close()
    monkeypatch.undo()
    with SqliteStore(path) as store:
        assert store.document_text(1, "d1") == LEGACY_TEXT


def test_a_failing_migration_leaves_no_trace(tmp_path: Path) -> None:
    path = tmp_path / "fail.db"
    conn = connect(path)
    broken = Migration(99, "broken", ("CREATE TABLE half_done (x INTEGER)", "THIS IS NOT SQL"))
    with pytest.raises(sqlite3.OperationalError):
        migrate(conn, (*MIGRATIONS, broken))
    assert applied_migrations(conn) == {m.number for m in MIGRATIONS}
    assert (
        conn.execute("SELECT name FROM sqlite_master WHERE name = 'half_done'").fetchone() is None
    )
    assert not conn.in_transaction
    conn.close()


def test_a_database_from_a_newer_lorebase_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "newer.db"
    conn = connect(path)
    migrate(conn, (*MIGRATIONS, Migration(MIGRATIONS[-1].number + 1, "future", ())))
    conn.close()
    with pytest.raises(Conflict, match="upgrade lorebase"):
        SqliteStore(path)


def test_callable_steps_run_in_the_migration_transaction(tmp_path: Path) -> None:
    conn = connect(tmp_path / "callable.db")
    seen: list[bool] = []

    def step(c: sqlite3.Connection) -> None:
        seen.append(c.in_transaction)

    migrate(conn, (*MIGRATIONS, Migration(MIGRATIONS[-1].number + 1, "data", (step,))))
    assert seen == [True]
    conn.close()


# -- accounts: migrations of their own -----------------------------------------------------------
# Migration 4 as released before the accounts had migrations of their own: it created the
# account tables in the store's namespace and made knowledge_bases.team_id a foreign key.
RELEASED_MIGRATION_4 = Migration(
    4,
    "users, teams, keys, audit log; uploads",
    (
        "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, "
        "role TEXT NOT NULL CHECK (role IN ('admin', 'member')), created_at REAL NOT NULL)",
        "CREATE TABLE teams (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, "
        "created_at REAL NOT NULL)",
        "CREATE TABLE team_members ("
        "team_id INTEGER NOT NULL REFERENCES teams(id) ON DELETE CASCADE, "
        "user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE, "
        "role TEXT NOT NULL CHECK (role IN ('admin', 'member')), "
        "PRIMARY KEY (team_id, user_id))",
        "CREATE TABLE api_keys (id INTEGER PRIMARY KEY, "
        "user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE, "
        "prefix TEXT NOT NULL, hash TEXT NOT NULL UNIQUE, name TEXT NOT NULL DEFAULT '', "
        "created_at REAL NOT NULL, expires_at REAL, revoked_at REAL, last_used_at REAL)",
        "CREATE TABLE audit_log (id INTEGER PRIMARY KEY, at REAL NOT NULL, "
        "actor TEXT NOT NULL, action TEXT NOT NULL, target TEXT NOT NULL)",
        "ALTER TABLE knowledge_bases ADD COLUMN team_id INTEGER REFERENCES teams(id)",
        "ALTER TABLE documents ADD COLUMN display_name TEXT",
        "CREATE INDEX documents_hash ON documents (kb_id, content_hash)",
    ),
)
RELEASED = (*MIGRATIONS[:3], RELEASED_MIGRATION_4, *MIGRATIONS[4:])
OLD_KEY = "lb_" + "k" * 43


def test_released_migration_4_differs_only_by_the_account_tables() -> None:
    assert [m.number for m in RELEASED] == [m.number for m in MIGRATIONS]
    assert set(MIGRATIONS[3].steps) < set(RELEASED_MIGRATION_4.steps) | {
        "ALTER TABLE knowledge_bases ADD COLUMN team_id INTEGER"
    }


def test_a_database_with_accounts_in_the_store_schema_keeps_them(tmp_path: Path) -> None:
    path = tmp_path / "accounts-before.db"
    conn = connect(path)
    assert migrate(conn, RELEASED) == [m.number for m in MIGRATIONS]
    conn.execute("INSERT INTO users (id, name, role, created_at) VALUES (1, 'dana', 'admin', 0)")
    conn.execute("INSERT INTO teams (id, name, created_at) VALUES (1, 'ops', 0)")
    conn.execute("INSERT INTO team_members (team_id, user_id, role) VALUES (1, 1, 'admin')")
    conn.execute(
        "INSERT INTO api_keys (user_id, prefix, hash, name, created_at) VALUES (1, ?, ?, '', 0)",
        (OLD_KEY[:10], key_hash(OLD_KEY)),
    )
    conn.execute(
        "INSERT INTO audit_log (at, actor, action, target) VALUES (0, 'cli', 'create_user', 'dana')"
    )
    conn.execute(
        "INSERT INTO knowledge_bases (id, name, scope, chunk_size, max_tokens, overlap, "
        "created_at, updated_at, team_id) VALUES (1, 'ops-notes', 'team', 1200, 320, 200, 0, 0, 1)"
    )
    conn.close()

    with SqliteStore(path) as store:
        accounts = SqliteAccounts(store)
        user = accounts.resolve_key(OLD_KEY)
        assert user is not None and (user.name, user.role) == ("dana", Role.ADMIN)
        assert accounts.memberships(user.id) == {1: Role.ADMIN}
        assert [e.action for e in accounts.audit_log()] == ["create_user"]
        assert store.get_kb("ops-notes").team_id == accounts.get_team("ops").id
        # Both keep working: new rows in either namespace.
        accounts.create_user("eli")
        assert store.create_kb("more", scope=Scope.TEAM, team_id=1).team_id == 1
    assert _recorded(path)[0] == [(m.number, m.name) for m in RELEASED]
    conn = connect(path)
    try:
        assert applied_migrations(conn, ACCOUNT_MIGRATIONS_TABLE) == {
            m.number for m in ACCOUNT_MIGRATIONS
        }
        assert migrate_accounts(conn) == []
    finally:
        conn.close()
    with SqliteAccounts.open(path) as reopened:
        assert reopened.resolve_key(OLD_KEY) is not None
        assert [u.name for u in reopened.list_users()] == ["dana", "eli"]


def test_the_store_and_the_accounts_migrate_apart(tmp_path: Path) -> None:
    path = tmp_path / "apart.db"
    with SqliteStore(path) as store:
        # No account tables yet: a base of a team is just a number to the store.
        assert store.create_kb("t", scope=Scope.TEAM, team_id=7).team_id == 7
        with store.database.read() as conn:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        assert "users" not in tables and ACCOUNT_MIGRATIONS_TABLE not in tables
    with SqliteAccounts.open(path) as accounts:
        key, _ = accounts.create_key(accounts.create_user("dana").id)
    with SqliteStore(path) as store:
        assert SqliteAccounts(store).resolve_key(key) is not None
    rows, version = _recorded(path)
    assert rows == [(m.number, m.name) for m in MIGRATIONS]
    assert version == MIGRATIONS[-1].number  # the store's version; the accounts keep theirs


def test_accounts_from_a_newer_lorebase_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "newer-accounts.db"
    conn = connect(path)
    newer = Migration(ACCOUNT_MIGRATIONS[-1].number + 1, "future", ())
    migrate_accounts(conn, (*ACCOUNT_MIGRATIONS, newer))
    conn.close()
    SqliteStore(path).close()  # the store's schema is its own business
    with pytest.raises(Conflict, match="upgrade lorebase"):
        SqliteAccounts.open(path)


# -- migration 8: base names unique per scope, the table rebuilt ----------------------------------
def _kb_row(
    conn: sqlite3.Connection,
    kb_id: int,
    name: str,
    scope: str,
    owner: str | None,
    team_id: int | None = None,
) -> None:
    conn.execute(
        "INSERT INTO knowledge_bases (id, name, description, scope, owner, chunk_size, "
        "max_tokens, overlap, identity_key, created_at, updated_at, generation, state, "
        "state_reason, progress_done, progress_total, team_id) "
        "VALUES (?, ?, 'd', ?, ?, 800, 200, 100, 'ident', 1.5, 2.5, 7, 'ready', 'why', 3, 4, ?)",
        (kb_id, name, scope, owner, team_id),
    )


@pytest.mark.parametrize("accounts", [False, True], ids=["current", "accounts-in-store"])
def test_names_per_scope_rebuilds_the_table_keeping_rows_ids_and_cascades(
    tmp_path: Path, accounts: bool
) -> None:
    """From a database at migration 7 (made as today, or with the account tables and the
    foreign key from team_id to teams that the released migration 4 made)."""
    path = tmp_path / "before-8.db"
    conn = connect(path)
    assert migrate(conn, (RELEASED if accounts else MIGRATIONS)[:7]) == list(range(1, 8))
    if accounts:  # team rows for team_id's foreign key
        conn.execute("INSERT INTO teams (id, name, created_at) VALUES (1, 'eng', 0), (2, 'ops', 0)")
    _kb_row(conn, 3, "notes", "personal", "alice")
    _kb_row(conn, 5, "eng-notes", "team", "bob", 1)
    _kb_row(conn, 9, "handbook", "global", None)
    for kb_id in (3, 5, 9):
        conn.execute(
            "INSERT INTO documents (id, kb_id, path, kind, size, content_hash, state, "
            "chunk_count, created_at, updated_at) "
            "VALUES (?, ?, 'a.md', 'md', 10, 'h', 'indexed', 0, 0, 0)",
            (f"d{kb_id}", kb_id),
        )
        conn.execute(
            "INSERT INTO sources (kb_id, path, label, created_at) VALUES (?, '/srv/x', 'x', 0)",
            (kb_id,),
        )
    before = conn.execute("SELECT * FROM knowledge_bases ORDER BY id").fetchall()
    columns = [row[1] for row in conn.execute("PRAGMA table_info(knowledge_bases)")]
    conn.close()

    with SqliteStore(path) as store:
        with store.database.read() as read:
            # Every column, in order, every row with its id and values (and the columns the
            # later migrations add, empty).
            later = ["embedder", "embedder_next", "progress_rate", "progress_left"]
            assert [row[1] for row in read.execute("PRAGMA table_info(knowledge_bases)")] == (
                columns + later
            )
            after = read.execute("SELECT * FROM knowledge_bases ORDER BY id").fetchall()
            assert after == [(*row, *[None] * len(later)) for row in before]
            assert read.execute("PRAGMA foreign_key_check").fetchall() == []
            assert read.execute("SELECT count(*) FROM documents").fetchone() == (3,)
            references = {
                (row[2], row[3], row[4], row[6])
                for table in ("documents", "sources")
                for row in read.execute(f"PRAGMA foreign_key_list({table})")
            }
            assert ("knowledge_bases", "kb_id", "id", "CASCADE") in references
            team_fk = [row[2] for row in read.execute("PRAGMA foreign_key_list(knowledge_bases)")]
            assert team_fk == (["teams"] if accounts else [])
        # The new uniqueness: per scope, per team, per owner.
        assert store.create_kb("notes", owner="bob").id == 10
        assert store.create_kb("notes", scope=Scope.GLOBAL).scope is Scope.GLOBAL
        with pytest.raises(Conflict):
            store.create_kb("notes", owner="alice")
        with pytest.raises(Conflict):
            store.create_kb("handbook", scope=Scope.GLOBAL)
        assert store.create_kb("eng-notes", scope=Scope.TEAM, team_id=2).team_id == 2
        with pytest.raises(Conflict):
            store.create_kb("eng-notes", scope=Scope.TEAM, team_id=1)
        # The cascades still hold: deleting a base deletes its documents and sources.
        store.delete_kb(3)
        with store.database.read() as read:
            assert read.execute("SELECT kb_id FROM documents ORDER BY kb_id").fetchall() == [
                (5,),
                (9,),
            ]
            assert read.execute("SELECT kb_id FROM sources ORDER BY kb_id").fetchall() == [
                (5,),
                (9,),
            ]
    rows, version = _recorded(path)
    assert (8, "base names unique per scope") in rows and version == MIGRATIONS[-1].number


def test_migration_9_stores_vectors_once_as_int8(tmp_path: Path) -> None:
    """float32 vectors become int8 with a scale (dim + 4 bytes), the reuse cache's copies go,
    and the vectors are still searched and found by content."""
    import numpy as np

    from lorebase.embed.base import EmbedderIdentity
    from lorebase.store.vectors import blob_bytes

    identity = EmbedderIdentity("model", "d" * 64, 4)
    path = tmp_path / "before-9.db"
    conn = connect(path)
    migrate(conn, MIGRATIONS[:8])
    conn.execute(
        "INSERT INTO knowledge_bases (id, name, scope, chunk_size, max_tokens, overlap, "
        "created_at, updated_at, state) VALUES (1, 'old', 'personal', 1200, 320, 200, 0, 0, "
        "'ready')"
    )
    conn.execute(
        "INSERT INTO documents (id, kb_id, path, kind, size, content_hash, state, chunk_count, "
        "identity_key, created_at, updated_at) "
        "VALUES ('d1', 1, 'a.md', 'md', 10, 'h', 'indexed', 3, ?, 0, 0)",
        (identity.key,),
    )
    conn.execute(
        "INSERT INTO sections (id, document_id, ordinal, trail, headings) "
        "VALUES (1, 'd1', 0, '[]', '')"
    )
    conn.execute(
        "INSERT INTO identities (id, key, model, digest, transform, dim) VALUES (1, ?, ?, ?, ?, ?)",
        (identity.key, identity.model, identity.digest, identity.transform, identity.dim),
    )
    vectors = np.asarray([[0.6, 0.8, 0, 0], [0, 0, 1, 0], [0.5, 0.5, 0.5, 0.5]], dtype="<f4")
    hashes = ["a" * 64, "b" * 64, "c" * 64]
    for row, (vector, digest) in enumerate(zip(vectors, hashes, strict=True), start=1):
        conn.execute(
            "INSERT INTO chunks (rowid, id, document_id, kb_id, section_id, ordinal, text, trail, "
            "start_offset, end_offset, content_kind, tokens, content_hash) "
            "VALUES (?, ?, 'd1', 1, 1, ?, 'text', '[]', 0, 4, 'prose', 1, ?)",
            (row, f"c{row}", row, digest),
        )
        blob = vector.tobytes() if row != 3 else vector[:3].tobytes()  # one of a wrong length
        conn.execute("INSERT INTO vectors VALUES (?, 1, ?)", (row, blob))
        conn.execute("INSERT INTO embedding_cache VALUES (?, 1, ?)", (digest, vector.tobytes()))
    assert migrate(conn, MIGRATIONS[:9]) == [9]
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert "embedding_cache" not in tables and "vectors_int8" not in tables
    assert "chunks_content_hash" in tables
    stored = conn.execute("SELECT chunk_rowid, length(vector) FROM vectors ORDER BY 1").fetchall()
    assert stored == [(1, blob_bytes(4)), (2, blob_bytes(4))]
    plan = " ".join(
        str(row[3])
        for row in conn.execute(
            "EXPLAIN QUERY PLAN SELECT rowid FROM chunks WHERE substr(content_hash, 1, 16) IN (?)",
            ("a" * 16,),
        )
    )
    assert "chunks_content_hash" in plan
    conn.close()
    with SqliteStore(path) as store:
        hits = store.dense_search([1], identity, vectors[0], 5)
        assert [chunk for chunk, _ in hits] == ["c1", "c2"]
        assert hits[0][1] == pytest.approx(1.0, abs=1e-3)  # still a cosine
        found = store.cached_vectors(identity, hashes)
        assert set(found) == {"a" * 64, "b" * 64}
        np.testing.assert_allclose(found["a" * 64], vectors[0], atol=1e-2)


def test_migration_10_indexes_the_documents_awaiting_vectors(tmp_path: Path) -> None:
    """A database from migration 9 gains the partial index the keyword-only count reads (and
    the count reads it, not the whole documents table)."""
    path = tmp_path / "nine.db"
    conn = connect(path)
    try:
        migrate(conn, MIGRATIONS[:9])
        conn.execute(
            "INSERT INTO knowledge_bases (name, description, scope, chunk_size, max_tokens, "
            "overlap, created_at, updated_at) VALUES ('docs', '', 'global', 1000, 400, 100, 0, 0)"
        )
        conn.commit()
    finally:
        conn.close()
    with SqliteStore(path) as store:
        kb = store.get_kb("docs")
        assert store.count_keyword_only([kb.id]) == 0
        with store.database.read() as conn:
            plan = " ".join(
                str(row[-1])
                for row in conn.execute(
                    "EXPLAIN QUERY PLAN SELECT count(*) FROM documents WHERE kb_id IN "
                    "(SELECT value FROM json_each(?)) AND chunk_count > 0 "
                    "AND identity_key IS NULL",
                    ("[1]",),
                )
            )
    assert "documents_keyword_only" in plan
    assert (10, "the documents awaiting vectors") in _recorded(path)[0]


def test_migration_11_gives_every_base_an_embedder_name_left_empty(tmp_path: Path) -> None:
    """A database from migration 10: its bases keep answering with the process's embedder
    (no name), and a base made now records the name it is made with."""
    path = tmp_path / "ten.db"
    conn = connect(path)
    try:
        migrate(conn, MIGRATIONS[:10])
        conn.execute(
            "INSERT INTO knowledge_bases (name, description, scope, chunk_size, max_tokens, "
            "overlap, created_at, updated_at) VALUES ('old', '', 'global', 1000, 400, 100, 0, 0)"
        )
        conn.commit()
    finally:
        conn.close()
    with SqliteStore(path) as store:
        old = store.get_kb("old")
        assert (old.embedder, old.embedder_next) == (None, None)
        new = store.create_kb("new", embedder="nomic")
        assert (new.embedder, new.embedder_next) == ("nomic", None)
    assert (11, "an embedder per knowledge base") in _recorded(path)[0]


def test_migration_12_leaves_documents_whole_and_holding_no_parts(tmp_path: Path) -> None:
    """A database from migration 11: its documents have no container and no metadata, and
    a part written now belongs to its file and leaves with it."""
    path = tmp_path / "eleven.db"
    with SqliteStore(path) as store:
        kb = store.create_kb("notes")
        store.record_failure(
            kb.id, NewDocument(path="a.md", kind="md", size=1, content_hash="x"), "corrupt"
        )
    conn = connect(path)
    try:  # as migration 11 left it: without the two columns
        conn.execute("DROP INDEX documents_container")
        conn.execute("ALTER TABLE documents DROP COLUMN container")
        conn.execute("ALTER TABLE documents DROP COLUMN metadata")
        conn.execute("DELETE FROM migrations WHERE number = 12")
        conn.commit()
    finally:
        conn.close()
    with SqliteStore(path) as store:
        (old,) = store.list_documents(kb.id)
        assert (old.container, old.metadata) == (None, {})
        mail = NewDocument(
            path="m.eml",
            kind="eml",
            size=1,
            content_hash="y",
            metadata={"from": "ann@example.org", "to": ("bo@example.org",)},
        )
        store.record_failure(kb.id, mail, "corrupt")
        part = NewDocument(
            path="m.eml › a.pdf", kind="pdf", size=1, content_hash="z", container="m.eml"
        )
        store.record_failure(kb.id, part, "corrupt")
        assert [d.path for d in store.parts_of(kb.id, "m.eml")] == ["m.eml › a.pdf"]
        stored = store.get_document(kb.id, "m.eml")
        assert stored is not None and stored.metadata == mail.metadata
        store.delete_documents(kb.id, [stored.id])
        assert [d.path for d in store.list_documents(kb.id)] == ["a.md"]
    assert (12, "documents inside documents; metadata") in _recorded(path)[0]
