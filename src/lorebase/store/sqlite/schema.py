"""The SQLite schema as numbered migrations, each applied in its own transaction and recorded.

A database remembers which migrations it has (table ``migrations``, mirrored in
``PRAGMA user_version``); opening it applies the missing ones in order, so a file created by an
older lorebase opens in a newer one. Never edit a released migration: append a new one.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from lorebase.errors import Conflict
from lorebase.store.sqlite import fts
from lorebase.store.vectors import to_blobs

Step = str | Callable[[sqlite3.Connection], None]


@dataclass(frozen=True, slots=True)
class Migration:
    """One schema change: SQL statements (or callables for data changes), run in order."""

    number: int
    name: str
    steps: tuple[Step, ...]
    rebuilds_tables: bool = False
    """Runs with foreign keys off (they cannot be switched inside a transaction), checked
    before it commits: SQLite's procedure for rebuilding a table that others refer to."""


_CORE_TABLES: tuple[Step, ...] = (
    """CREATE TABLE knowledge_bases (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        description TEXT NOT NULL DEFAULT '',
        scope TEXT NOT NULL,
        owner TEXT,
        chunk_size INTEGER NOT NULL,
        max_tokens INTEGER NOT NULL,
        overlap INTEGER NOT NULL,
        identity_key TEXT,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        generation INTEGER NOT NULL DEFAULT 0
    )""",
    # ``text`` (zlib-compressed) comes last so scans of the other columns never walk its
    # overflow pages.
    """CREATE TABLE documents (
        id TEXT PRIMARY KEY,
        kb_id INTEGER NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        kind TEXT NOT NULL,
        size INTEGER NOT NULL,
        mtime REAL,
        content_hash TEXT NOT NULL,
        title TEXT,
        page_count INTEGER,
        encoding TEXT,
        state TEXT NOT NULL,
        reason TEXT,
        chunk_count INTEGER NOT NULL DEFAULT 0,
        identity_key TEXT,
        settings_key TEXT,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        text BLOB,
        UNIQUE (kb_id, path)
    )""",
    """CREATE TABLE sections (
        id INTEGER PRIMARY KEY,
        document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        ordinal INTEGER NOT NULL,
        trail TEXT NOT NULL,
        headings TEXT NOT NULL,
        UNIQUE (document_id, ordinal)
    )""",
    # section_id and kb_id carry no foreign key on purpose: a parent-key check scans the child
    # table unless the child column is indexed, and both are reached through document_id.
    """CREATE TABLE chunks (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        kb_id INTEGER NOT NULL,
        section_id INTEGER NOT NULL,
        ordinal INTEGER NOT NULL,
        text TEXT NOT NULL,
        trail TEXT NOT NULL,
        start_offset INTEGER NOT NULL,
        end_offset INTEGER NOT NULL,
        line INTEGER,
        page INTEGER,
        page_end INTEGER,
        content_kind TEXT NOT NULL,
        language TEXT,
        symbol TEXT,
        tokens INTEGER NOT NULL,
        content_hash TEXT NOT NULL
    )""",
    "CREATE UNIQUE INDEX chunks_document_ordinal ON chunks (document_id, ordinal)",
    """CREATE TABLE identities (
        id INTEGER PRIMARY KEY,
        key TEXT NOT NULL UNIQUE,
        model TEXT NOT NULL,
        digest TEXT NOT NULL,
        transform TEXT NOT NULL,
        dim INTEGER NOT NULL
    )""",
    """CREATE TABLE vectors (
        chunk_rowid INTEGER NOT NULL REFERENCES chunks(rowid) ON DELETE CASCADE,
        identity_id INTEGER NOT NULL REFERENCES identities(id),
        vector BLOB NOT NULL,
        PRIMARY KEY (chunk_rowid, identity_id)
    )""",
    # Keyed by content, not by chunk: it outlives documents so a re-sync or a copy of a file
    # elsewhere reuses vectors instead of embedding again.
    """CREATE TABLE embedding_cache (
        content_hash TEXT NOT NULL,
        identity_id INTEGER NOT NULL REFERENCES identities(id),
        vector BLOB NOT NULL,
        PRIMARY KEY (content_hash, identity_id)
    )""",
)

_LEXICAL_INDEX: tuple[Step, ...] = (
    fts.source_view_sql("c.text"),  # as released; migration 21 reads the text uncompressed
    fts.create_fts_sql(),
    # Index whatever chunks a database from migration 1 already holds.
    fts.rebuild_fts_sql(),
)

_LIFE_CYCLE: tuple[Step, ...] = (
    """CREATE TABLE sources (
        id INTEGER PRIMARY KEY,
        kb_id INTEGER NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        label TEXT NOT NULL,
        created_at REAL NOT NULL,
        UNIQUE (kb_id, path),
        UNIQUE (kb_id, label)
    )""",
    "ALTER TABLE documents ADD COLUMN source_id INTEGER",
    "CREATE INDEX documents_source ON documents (source_id)",
    "CREATE INDEX documents_kb_state ON documents (kb_id, state)",
    "ALTER TABLE knowledge_bases ADD COLUMN state TEXT NOT NULL DEFAULT 'pending'",
    "ALTER TABLE knowledge_bases ADD COLUMN state_reason TEXT",
    "ALTER TABLE knowledge_bases ADD COLUMN pass_started_at REAL",
    "ALTER TABLE knowledge_bases ADD COLUMN pass_finished_at REAL",
    "ALTER TABLE knowledge_bases ADD COLUMN progress_done INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE knowledge_bases ADD COLUMN progress_total INTEGER NOT NULL DEFAULT 0",
    # Bases that already hold documents were indexed by an earlier lorebase: ready.
    "UPDATE knowledge_bases SET state = 'ready' WHERE id IN (SELECT kb_id FROM documents)",
)

# As first released, this migration also created the account tables (users, teams,
# team_members, api_keys, audit_log) and made knowledge_bases.team_id a foreign key to teams.
# That half moved to the accounts' own migrations (lorebase.accounts.schema, recorded in
# ``account_migrations``), whose first one creates each table only when it is missing; to the
# store a team id is an opaque number, and the store opens without the account tables. The
# one released migration edited on purpose: a database migrated either way ends with the same
# tables once the accounts have opened it, and databases made before keep their rows and the
# foreign key (tests/unit/test_migrations.py holds the released text).
_TEAMS_AND_UPLOADS: tuple[Step, ...] = (
    "ALTER TABLE knowledge_bases ADD COLUMN team_id INTEGER",
    "ALTER TABLE documents ADD COLUMN display_name TEXT",
    "CREATE INDEX documents_hash ON documents (kb_id, content_hash)",
)

_DOCUMENT_GENERATIONS = (
    # The base generation at which a document's chunks or vectors last changed: an in-memory
    # vector index loaded at generation g re-reads only the documents stamped after g.
    "ALTER TABLE documents ADD COLUMN generation INTEGER NOT NULL DEFAULT 0",
    # Covering: a refresh lists every document's id and generation without reading the rows
    # (their compressed text sits before the generation column).
    "CREATE INDEX documents_generation ON documents (kb_id, generation, id)",
    # The uploads (the only documents with a sealed name), for the pending sweep: read from
    # the index alone, never from the rows.
    "CREATE INDEX documents_uploads ON documents (state, created_at, kb_id, id, display_name) "
    "WHERE display_name IS NOT NULL",
)


def _drop_documents_text(conn: sqlite3.Connection) -> None:
    """``DROP COLUMN`` needs SQLite 3.35; an older library empties the column instead (the
    rows shrink all the same, and nothing reads it any more)."""
    if sqlite3.sqlite_version_info >= (3, 35, 0):
        conn.execute("ALTER TABLE documents DROP COLUMN text")
    else:
        conn.execute("UPDATE documents SET text = NULL")


_DOCUMENT_TEXTS = (
    # A document's extracted text (compressed) in a table of its own. In the documents row it
    # sat before every column added later, so reading those (the source, the sealed name, the
    # generation) walked the text's overflow pages: listing a base read all of its text.
    """CREATE TABLE document_texts (
        document_id TEXT PRIMARY KEY REFERENCES documents(id) ON DELETE CASCADE,
        text BLOB NOT NULL
    )""",
    "INSERT INTO document_texts (document_id, text) "
    "SELECT id, text FROM documents WHERE text IS NOT NULL",
    _drop_documents_text,
)


_FILE_SOURCES = (
    # A source is a folder (walked) or one file added on its own by path (followed: re-read
    # when it changes, dropped when it is gone). Sources made before are folders.
    "ALTER TABLE sources ADD COLUMN kind TEXT NOT NULL DEFAULT 'folder'",
)

_KB_TABLE = "knowledge_bases"
_KB_CREATE = re.compile(r'^\s*CREATE\s+TABLE\s+"?knowledge_bases"?', re.IGNORECASE)
_UNIQUE_NAME = re.compile(r"\bname\s+TEXT\s+NOT\s+NULL\s+UNIQUE\b", re.IGNORECASE)


def _kb_names_per_scope(conn: sqlite3.Connection) -> None:
    """Drop ``UNIQUE`` from ``knowledge_bases.name`` by rebuilding the table (SQLite cannot drop
    a column constraint), steps 4 to 9 of SQLite's twelve-step procedure (``ALTER TABLE``,
    "Making Other Kinds Of Table Schema Changes"); :func:`migrate` does the rest (foreign keys
    off around the transaction, ``foreign_key_check`` before the commit).

    The new table is made from the stored text of the old one with only the constraint
    removed, so it keeps every column, in order, with the clauses later migrations added (in
    a database made before the accounts had migrations of their own, ``team_id`` still
    refers to ``teams``). Rows keep their ids; the tables that refer to ``knowledge_bases(id)``
    (documents, sources) name it by name and so refer to the new table once it is renamed."""
    (sql,) = conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (_KB_TABLE,)
    ).fetchone()
    new_sql, found = _UNIQUE_NAME.subn("name TEXT NOT NULL", sql)
    if found != 1:
        raise RuntimeError("knowledge_bases.name is not declared as this migration expects")
    new_sql = _KB_CREATE.sub("CREATE TABLE knowledge_bases_new", new_sql, count=1)
    # Indexes and triggers of the old table go with it; made again on the new one (step 8).
    attached = [
        row[0]
        for row in conn.execute(
            "SELECT sql FROM sqlite_master WHERE tbl_name = ? AND type IN ('index', 'trigger') "
            "AND sql IS NOT NULL",
            (_KB_TABLE,),
        )
    ]
    conn.execute(new_sql)
    columns = ", ".join(f'"{row[1]}"' for row in conn.execute(f"PRAGMA table_info({_KB_TABLE})"))
    conn.execute(f"INSERT INTO knowledge_bases_new ({columns}) SELECT {columns} FROM {_KB_TABLE}")
    conn.execute(f"DROP TABLE {_KB_TABLE}")
    conn.execute(f"ALTER TABLE knowledge_bases_new RENAME TO {_KB_TABLE}")
    for statement in attached:
        conn.execute(statement)


_NAMES_PER_SCOPE: tuple[Step, ...] = (
    _kb_names_per_scope,
    # A name is unique among the global bases, among one team's bases, and among one owner's
    # personal bases (no owner: the administrators', counted as one owner). A team base
    # without a team (the store allows one) counts as team 0.
    "CREATE UNIQUE INDEX knowledge_bases_global_name ON knowledge_bases (name) "
    "WHERE scope = 'global'",
    "CREATE UNIQUE INDEX knowledge_bases_team_name ON knowledge_bases "
    "(ifnull(team_id, 0), name) WHERE scope = 'team'",
    "CREATE UNIQUE INDEX knowledge_bases_personal_name ON knowledge_bases "
    "(ifnull(owner, ''), name) WHERE scope = 'personal'",
    # Lookups by name, which may now find several bases.
    "CREATE INDEX knowledge_bases_name ON knowledge_bases (name)",
)

CONTENT_HASH_PREFIX = 16
"""Characters of a chunk's content hash (hex sha256) in the index that finds stored vectors by
content: 16 hex digits (64 bits) tell a million chunks apart (a false match is filtered on the
full hash), in ~24 bytes per chunk against ~74 for an index on the whole hash."""

_CONVERT_BATCH_ROWS = 5_000


def _vectors_as_int8(conn: sqlite3.Connection) -> None:
    """Every float32 vector re-encoded as int8 with one scale per vector (``dim + 4`` bytes
    instead of ``4 * dim``), into a table of the same shape that then takes the old one's name
    (a new table is filled page by page; rewriting the rows in place left the old pages three
    quarters empty). A vector whose length does not fit its identity was never searched (the
    loader refused it) and is left out. The old pages go to the free list, which later writes
    reuse; ``VACUUM`` gives them back to the file system.

    The encoding is the one of this release (``lorebase.store.vectors.to_blobs``): should the
    stored form change again, a new migration converts, and this one must keep its own copy."""
    conn.execute(
        """CREATE TABLE vectors_int8 (
        chunk_rowid INTEGER NOT NULL REFERENCES chunks(rowid) ON DELETE CASCADE,
        identity_id INTEGER NOT NULL REFERENCES identities(id),
        vector BLOB NOT NULL,
        PRIMARY KEY (chunk_rowid, identity_id)
    )"""
    )
    dims = dict(conn.execute("SELECT id, dim FROM identities").fetchall())
    cursor = conn.execute("SELECT chunk_rowid, identity_id, vector FROM vectors")
    while batch := cursor.fetchmany(_CONVERT_BATCH_ROWS):
        by_identity: dict[int, list[tuple[int, bytes]]] = {}
        for chunk_rowid, identity_id, blob in batch:
            dim = dims.get(identity_id)
            if dim and len(blob) == 4 * dim:
                by_identity.setdefault(identity_id, []).append((chunk_rowid, blob))
        for identity_id, rows in by_identity.items():
            floats = np.frombuffer(b"".join(blob for _, blob in rows), dtype="<f4")
            blobs = to_blobs(floats.reshape(len(rows), dims[identity_id]))
            conn.executemany(
                "INSERT INTO vectors_int8 (chunk_rowid, identity_id, vector) VALUES (?, ?, ?)",
                [(rowid, identity_id, blob) for (rowid, _), blob in zip(rows, blobs, strict=True)],
            )
    conn.execute("DROP TABLE vectors")
    conn.execute("ALTER TABLE vectors_int8 RENAME TO vectors")


_VECTORS_ONCE: tuple[Step, ...] = (
    _vectors_as_int8,
    # The reuse cache held a second copy of every vector (float32, keyed by content hash and
    # identity): vectors are now found by content among the stored ones (``cached_vectors``),
    # through this index on the chunks' content hashes.
    "DROP TABLE embedding_cache",
    f"CREATE INDEX chunks_content_hash ON chunks (substr(content_hash, 1, {CONTENT_HASH_PREFIX}))",
)

_KEYWORD_ONLY: tuple[Step, ...] = (
    # A pass writes a document's chunks before their vectors; a hybrid search counts the
    # documents in between (``count_keyword_only``) through this index of them alone.
    "CREATE INDEX documents_keyword_only ON documents (kb_id) WHERE "
    "chunk_count > 0 AND identity_key IS NULL",
)

_EMBEDDER_PER_BASE: tuple[Step, ...] = (
    # The named embedder a base is made with (NULL: the process's own, as before), and the
    # one it is being re-embedded to.
    "ALTER TABLE knowledge_bases ADD COLUMN embedder TEXT",
    "ALTER TABLE knowledge_bases ADD COLUMN embedder_next TEXT",
)

_DOCUMENT_PARTS: tuple[Step, ...] = (
    # A document held inside a file (a mail's attachment): the path of that file, and what
    # describes a document (mail headers, core properties) as a JSON object.
    "ALTER TABLE documents ADD COLUMN container TEXT",
    "ALTER TABLE documents ADD COLUMN metadata TEXT",
    "CREATE INDEX documents_container ON documents (kb_id, container) WHERE container IS NOT NULL",
)

_ANALYSES: tuple[Step, ...] = (
    # The analyses (lorebase.analysis) a base's passages were indexed with, so a question is
    # analysed as each of them; passages written before languages were told are English.
    """CREATE TABLE kb_languages (
        kb_id INTEGER NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
        language TEXT NOT NULL,
        PRIMARY KEY (kb_id, language)
    )""",
    "INSERT INTO kb_languages (kb_id, language) SELECT DISTINCT kb_id, 'en' FROM chunks",
)

_VERSIONS_AND_PACE: tuple[Step, ...] = (
    # The versions of the extractor, chunker and keyword analysis that made a document
    # (lorebase.ingest.versions: "x2.c2.a2"); rows from before have none, which makes them
    # stale: the next pass reads them again, reusing the vectors of unchanged chunk texts.
    "ALTER TABLE documents ADD COLUMN versions TEXT",
    # The pace of a running pass (chunks per second lately, chunks left), for the time left.
    "ALTER TABLE knowledge_bases ADD COLUMN progress_rate REAL",
    "ALTER TABLE knowledge_bases ADD COLUMN progress_left INTEGER",
)

_DOCUMENT_FIELDS: tuple[Step, ...] = (
    # What a search filters on (lorebase.fields): one row per value of a document's metadata
    # keys, title, kind and dates, matched on ``folded`` (case-folded; dates canonical ISO);
    # ``origin`` 'user' for the tags people set, which a new reading of the file leaves alone.
    # Documents made before are stale (no versions recorded): their next reading fills these.
    """CREATE TABLE document_fields (
        document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        kb_id INTEGER NOT NULL,
        field TEXT NOT NULL,
        folded TEXT NOT NULL,
        value TEXT NOT NULL,
        origin TEXT NOT NULL DEFAULT 'document',
        PRIMARY KEY (document_id, origin, field, folded)
    )""",
    "CREATE INDEX document_fields_match ON document_fields (kb_id, field, folded, document_id)",
)

_REGIONS: tuple[Step, ...] = (
    # Where OCR read a document's text (scanned pages, images): the line boxes of each span,
    # as JSON fractions of the page, so a passage is marked on its page (lorebase.service.pages).
    """CREATE TABLE regions (
        document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        page INTEGER NOT NULL,
        start_offset INTEGER NOT NULL,
        end_offset INTEGER NOT NULL,
        boxes TEXT NOT NULL
    )""",
    "CREATE INDEX regions_page ON regions (document_id, page, start_offset)",
)

_NOTE_VERSIONS: tuple[Step, ...] = (
    # The earlier texts of notes (lorebase.service.notes): what each edit replaced, numbered
    # per note from 1, with the edit's author; gone with their document.
    """CREATE TABLE note_versions (
        document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        kb_id INTEGER NOT NULL,
        version INTEGER NOT NULL,
        title TEXT NOT NULL,
        body TEXT NOT NULL,
        author TEXT,
        created_at REAL NOT NULL,
        PRIMARY KEY (document_id, version)
    )""",
)

_GRANTS: tuple[Step, ...] = (
    # A team base shared with another team or a user (account ids), read-only or read-write
    # (lorebase.service.sharing); one grant per grantee, gone with its base.
    """CREATE TABLE kb_grants (
        id INTEGER PRIMARY KEY,
        kb_id INTEGER NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
        grantee TEXT NOT NULL CHECK (grantee IN ('team', 'user')),
        grantee_id INTEGER NOT NULL,
        access TEXT NOT NULL CHECK (access IN ('read', 'write')),
        granted_by TEXT,
        created_at REAL NOT NULL,
        UNIQUE (kb_id, grantee, grantee_id)
    )""",
    "CREATE INDEX kb_grants_by_grantee ON kb_grants (grantee, grantee_id)",
)

_USAGE: tuple[Step, ...] = (
    # What model calls cost (lorebase.usage): one row per hour (its start, epoch seconds),
    # base (0: several at once), user ('': none), model and role, added to as calls are
    # counted; kept when its base is deleted (no foreign key).
    """CREATE TABLE usage_hours (
        hour INTEGER NOT NULL,
        kb_id INTEGER NOT NULL,
        user_name TEXT NOT NULL,
        model TEXT NOT NULL,
        role TEXT NOT NULL,
        calls INTEGER NOT NULL,
        texts INTEGER NOT NULL,
        tokens INTEGER NOT NULL,
        seconds REAL NOT NULL,
        PRIMARY KEY (hour, kb_id, user_name, model, role)
    )""",
)

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "core tables", _CORE_TABLES),
    Migration(2, "lexical index (FTS5)", _LEXICAL_INDEX),
    Migration(3, "sources and the life cycle", _LIFE_CYCLE),
    Migration(4, "team of a base; uploads", _TEAMS_AND_UPLOADS),
    Migration(5, "document generations; the uploads index", _DOCUMENT_GENERATIONS),
    Migration(6, "document texts in a table of their own", _DOCUMENT_TEXTS),
    Migration(7, "files followed one by one", _FILE_SOURCES),
    Migration(8, "base names unique per scope", _NAMES_PER_SCOPE, rebuilds_tables=True),
    Migration(9, "vectors stored once, as int8", _VECTORS_ONCE),
    Migration(10, "the documents awaiting vectors", _KEYWORD_ONLY),
    Migration(11, "an embedder per knowledge base", _EMBEDDER_PER_BASE),
    Migration(12, "documents inside documents; metadata", _DOCUMENT_PARTS),
    Migration(13, "the languages of a base's passages", _ANALYSES),
    Migration(14, "the versions that made a document; the pace of a pass", _VERSIONS_AND_PACE),
    Migration(15, "the fields of a document a search filters on", _DOCUMENT_FIELDS),
    Migration(16, "where OCR read a document's text", _REGIONS),
    # Nothing to change in the tables: a document's text may now be stored as the gaps
    # between its chunks (lorebase.store.document_text), which an older lorebase cannot read,
    # so it must refuse the database (it refuses any migration it does not know).
    Migration(17, "a document's text stored as the gaps between its chunks", ()),
    Migration(18, "the earlier versions of notes", _NOTE_VERSIONS),
    Migration(19, "bases shared with another team or a user", _GRANTS),
    Migration(20, "what model calls cost, by hour", _USAGE),
    # A chunk's text may now be stored zlib-compressed, as a BLOB (lorebase.store.
    # document_text.stored_chunk_text); rows written before stay as they are (TEXT) and read
    # as they did, so nothing is rewritten. The FTS5 engine's source view reads the text
    # through chunk_text() from now on; an older lorebase, which would index and show the
    # compressed bytes, refuses the database (it refuses any migration it does not know).
    Migration(21, "chunk texts stored compressed", fts.recreate_source_view_sql()),
)

STORE_MIGRATIONS_TABLE = "migrations"
"""The store's record of its migrations. Other stores in the same file (the accounts) keep
their own numbering in a table of their own."""

_TABLE_NAME = re.compile(r"[a-z_]+")


def _create_migrations_table(table: str) -> str:
    return f"""CREATE TABLE IF NOT EXISTS {table} (
    number INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at REAL NOT NULL
)"""


def applied_migrations(conn: sqlite3.Connection, table: str = STORE_MIGRATIONS_TABLE) -> set[int]:
    """Numbers of the migrations recorded in this database (in ``table``)."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).fetchone()
    if not exists:
        return set()
    return {row[0] for row in conn.execute(f"SELECT number FROM {_checked(table)}")}


def migrate(
    conn: sqlite3.Connection,
    migrations: Sequence[Migration] = MIGRATIONS,
    *,
    table: str = STORE_MIGRATIONS_TABLE,
) -> list[int]:
    """Apply the missing migrations in order, each in one ``BEGIN IMMEDIATE`` transaction that
    also records it (in ``table``), so a crash leaves the database at a migration boundary and
    two processes opening the same file at once apply each migration once. Returns the
    numbers applied. Only the store's migrations are mirrored in ``PRAGMA user_version``.

    ``conn`` must be in autocommit mode (``isolation_level=None``).
    """
    table = _checked(table)
    known = max((migration.number for migration in migrations), default=0)
    applied = applied_migrations(conn, table)
    _refuse_newer(applied, known)
    if applied.issuperset(migration.number for migration in migrations):
        return []  # the common case: no write lock taken just to open the file
    done: list[int] = []
    for migration in sorted(migrations, key=lambda m: m.number):
        if migration.number in applied:
            continue
        foreign_keys = conn.execute("PRAGMA foreign_keys").fetchone()[0]
        if migration.rebuilds_tables:
            # Dropping the old table with foreign keys on would delete, by cascade, every
            # row that refers to it.
            conn.execute("PRAGMA foreign_keys = OFF")
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(_create_migrations_table(table))
                applied = applied_migrations(conn, table)  # again: another process migrated?
                _refuse_newer(applied, known)
                if migration.number not in applied:
                    _apply(conn, migration, table)
                    if migration.rebuilds_tables and foreign_keys:
                        _check_foreign_keys(conn)
                    done.append(migration.number)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        finally:
            if migration.rebuilds_tables and foreign_keys:
                conn.execute("PRAGMA foreign_keys = ON")
    return done


def _check_foreign_keys(conn: sqlite3.Connection) -> None:
    """Step 10 of the rebuild: every row that refers to a rebuilt table (knowledge_bases) still
    finds its row. Only those references: an old inconsistency elsewhere is not this
    migration's to refuse."""
    tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    for child in tables:
        parents = {row[2] for row in conn.execute(f'PRAGMA foreign_key_list("{child}")')}
        if _KB_TABLE not in parents:
            continue
        for broken in conn.execute(f'PRAGMA foreign_key_check("{child}")'):
            if broken[2] == _KB_TABLE:
                raise Conflict(
                    f"rebuilding {_KB_TABLE} would leave rows of {child} without their base; "
                    "the database is unchanged (restore a backup if it was damaged before)"
                )


def _refuse_newer(applied: set[int], known: int) -> None:
    newest = max(applied, default=0)
    if newest > known:
        raise Conflict(
            f"this database has schema version {newest}, newer than this lorebase knows "
            f"({known}); upgrade lorebase to open it"
        )


def _apply(conn: sqlite3.Connection, migration: Migration, table: str) -> None:
    for step in migration.steps:
        if callable(step):
            step(conn)
        else:
            conn.execute(step)
    conn.execute(
        f"INSERT INTO {table} (number, name, applied_at) VALUES (?, ?, ?)",
        (migration.number, migration.name, time.time()),
    )
    if table == STORE_MIGRATIONS_TABLE:
        # user_version lives in the database header, written inside this transaction.
        conn.execute(f"PRAGMA user_version = {int(migration.number)}")


def _checked(table: str) -> str:
    """A migrations table name is spliced into SQL: only lower-case letters and underscores."""
    if not _TABLE_NAME.fullmatch(table):
        raise ValueError(f"not a migrations table name: {table!r}")
    return table
