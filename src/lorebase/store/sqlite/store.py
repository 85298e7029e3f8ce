"""The embedded store: one SQLite file (WAL) holding knowledge bases, documents, chunks, an
external-content FTS5 index and float32 vectors.

Transactions are explicit: the connection runs in autocommit mode and every write is one
``BEGIN IMMEDIATE ... COMMIT`` (taking the write lock up front, so a writer waits on
``busy_timeout`` instead of failing half-way with SQLITE_BUSY on upgrade). Writes go through
one connection per store object, guarded by a lock; reads take a connection of their own from
a small pool, so searches run side by side with each other and with a write in progress (WAL
gives each read transaction its snapshot). Other processes share the file through WAL too.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

import numpy as np

from lorebase.embed.base import EmbedderIdentity
from lorebase.errors import Conflict, InvalidInput, NotFound
from lorebase.settings import ChunkSettings
from lorebase.store.base import (
    DocumentRecord,
    DocumentState,
    KnowledgeBase,
    NewDocument,
    Scope,
    Scored,
    Store,
    StoredChunk,
)
from lorebase.store.sqlite import dense, fts, search, writes
from lorebase.store.sqlite.lifecycle import LifecycleMixin
from lorebase.store.sqlite.rows import (
    DOCUMENT_COLUMNS,
    KB_COLUMNS,
    KB_TOTALS_SQL,
    batches,
    compress_text,
    decompress_text,
    document_from_row,
    kb_from_row,
    placeholders,
)
from lorebase.store.sqlite.schema import migrate
from lorebase.store.vectors import VECTOR_DTYPE, from_blob
from lorebase.types import Chunk

BUSY_TIMEOUT_MS = 5000
PAGE_SIZE = 16384
"""Large rows pack better in 16 KB pages: ten 1.5 KB vectors (384 float32) per page instead of
two per 4 KB page (a quarter of it wasted), and ~1 KB chunk rows and compressed document texts
waste less at page ends. Measured at 10k chunks of 1000 characters with 384-d vectors: 6018
bytes per chunk on disk against 6858 with 4 KB pages; keyword and dense latency unchanged."""


def connect(path: Path) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit) with the store's pragmas.
    ``synchronous=NORMAL`` is durable across application crashes in WAL mode; only a power
    loss can drop the last commits."""
    conn = sqlite3.connect(
        path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
    )
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")  # takes effect only for a new file
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def connect_reader(path: Path) -> sqlite3.Connection:
    """A connection for read transactions (and its own TEMP tables, such as the term-statistics
    cache of the keyword plan)."""
    conn = sqlite3.connect(
        path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
    )
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return conn


IDLE_READERS = 8
"""Read connections kept open between uses; more are opened under load and closed after."""


class SqliteStore(LifecycleMixin, Store):
    """:class:`Store` over one SQLite file. Safe to share between threads (writes through one
    connection under a lock, reads through pooled connections); several processes may open
    the same file."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._conn = connect(self.path)
        try:
            migrate(self._conn)
        except BaseException:
            self._conn.close()
            raise
        self._dense = dense.DenseIndexes()
        self._dense_lock = threading.Lock()
        self._pool_lock = threading.Lock()
        self._idle: list[sqlite3.Connection] = []
        self._closed = False

    # -- transactions ------------------------------------------------------------------------
    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; anything raised inside rolls all of it back."""
        with self._lock:
            self._check_open()
            with _transaction(self._conn, "BEGIN IMMEDIATE") as conn:
                yield conn

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """One read transaction on a pooled connection: every statement inside sees the same
        snapshot, and neither waits for nor blocks a writer."""
        conn = self._take_reader()
        try:
            with _transaction(conn, "BEGIN") as snapshot:
                yield snapshot
        finally:
            self._return_reader(conn)

    def _take_reader(self) -> sqlite3.Connection:
        with self._pool_lock:
            self._check_open()
            if self._idle:
                return self._idle.pop()
        return connect_reader(self.path)

    def _return_reader(self, conn: sqlite3.Connection) -> None:
        with self._pool_lock:
            reusable = not conn.in_transaction  # a failed rollback leaves it unusable
            if reusable and not self._closed and len(self._idle) < IDLE_READERS:
                self._idle.append(conn)
                return
        conn.close()

    def _check_open(self) -> None:
        if self._closed:
            raise InvalidInput("this store is closed; open it again")

    # -- knowledge bases ---------------------------------------------------------------------
    def create_kb(
        self,
        name: str,
        *,
        description: str = "",
        scope: Scope = Scope.PERSONAL,
        owner: str | None = None,
        chunk_settings: ChunkSettings | None = None,
        team_id: int | None = None,
    ) -> KnowledgeBase:
        if not name or not name.strip():
            raise InvalidInput("a knowledge base needs a name")
        try:
            scope = Scope(scope)
        except ValueError:
            raise InvalidInput("scope must be one of: global, team, personal") from None
        settings = chunk_settings or ChunkSettings()
        now = time.time()
        with self._write() as conn:
            try:
                kb_id = conn.execute(
                    "INSERT INTO knowledge_bases (name, description, scope, owner, chunk_size, "
                    "max_tokens, overlap, created_at, updated_at, team_id) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        name,
                        description,
                        str(scope),
                        owner,
                        settings.chunk_size,
                        settings.max_tokens,
                        settings.overlap,
                        now,
                        now,
                        team_id,
                    ),
                ).lastrowid
            except sqlite3.IntegrityError:
                raise Conflict(
                    f"a knowledge base named {name!r} already exists; choose another name"
                ) from None
            return writes.load_kb(conn, "id", kb_id)

    def get_kb(self, name: str, *, totals: bool = True) -> KnowledgeBase:
        with self._read() as conn:
            return writes.load_kb(conn, "name", name, totals=totals)

    def get_kb_by_id(self, kb_id: int, *, totals: bool = True) -> KnowledgeBase:
        with self._read() as conn:
            return writes.load_kb(conn, "id", kb_id, totals=totals)

    def list_kbs(self, *, totals: bool = True) -> list[KnowledgeBase]:
        """Two queries however many bases: the rows, then every base's totals at once."""
        with self._read() as conn:
            rows = conn.execute(f"SELECT {KB_COLUMNS} FROM knowledge_bases ORDER BY name")
            kbs = rows.fetchall()
            counted = (
                {row[0]: row[1:] for row in conn.execute(f"{KB_TOTALS_SQL} GROUP BY kb_id")}
                if totals
                else {}
            )
        return [kb_from_row(row, counted.get(row[0])) for row in kbs]

    def delete_kb(self, kb_id: int) -> None:
        with self._write() as conn:
            writes.require_kb(conn, kb_id)
            # The index rows go first, while the rows they were built from still exist.
            conn.execute(fts.fts_delete_sql("kb_id"), (kb_id,))
            conn.execute("DELETE FROM knowledge_bases WHERE id = ?", (kb_id,))  # cascades
        with self._dense_lock:
            self._dense.forget({kb_id})

    def set_kb_identity(self, kb_id: int, identity: EmbedderIdentity) -> None:
        with self._write() as conn:
            writes.require_kb(conn, kb_id)
            writes.identity_row(conn, identity, create=True)
            conn.execute(
                "UPDATE knowledge_bases SET identity_key = ? WHERE id = ?", (identity.key, kb_id)
            )
            writes.bump(conn, kb_id)

    # -- documents ---------------------------------------------------------------------------
    def get_document(self, kb_id: int, path: str) -> DocumentRecord | None:
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE kb_id = ? AND path = ?",
                (kb_id, path),
            ).fetchone()
        return document_from_row(row) if row else None

    def get_document_by_id(self, kb_id: int, document_id: str) -> DocumentRecord:
        with self._read() as conn:
            return writes.load_document(conn, kb_id, document_id)

    def list_documents(
        self, kb_id: int, state: DocumentState | None = None
    ) -> list[DocumentRecord]:
        sql = f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE kb_id = ?"
        params: list[object] = [kb_id]
        if state is not None:
            sql += " AND state = ?"
            params.append(str(DocumentState(state)))
        with self._read() as conn:
            rows = conn.execute(sql + " ORDER BY path", params).fetchall()
        return [document_from_row(row) for row in rows]

    def document_text(self, kb_id: int, document_id: str) -> str:
        with self._read() as conn:
            row = conn.execute(
                "SELECT t.text FROM documents AS d "
                "LEFT JOIN document_texts AS t ON t.document_id = d.id "
                "WHERE d.id = ? AND d.kb_id = ?",
                (document_id, kb_id),
            ).fetchone()
        if row is None:
            raise NotFound(writes.NO_DOCUMENT)
        return decompress_text(row[0])

    def replace_document(
        self,
        kb_id: int,
        document: NewDocument,
        chunks: Sequence[Chunk],
        vectors: np.ndarray | None,
        identity: EmbedderIdentity | None,
        settings_key: str,
    ) -> DocumentRecord:
        """Everything happens in one transaction, in this order: drop the old index rows,
        chunks (vectors cascade) and sections; update or insert the document row; write
        sections, chunks and index rows; write vectors and the reuse cache; bump the base's
        generation. Input is checked before the transaction starts."""
        matrix = writes.checked_vectors(chunks, vectors, identity)
        writes.check_chunks(chunks)
        with self._write() as conn:
            writes.require_kb(conn, kb_id)
            document_id = writes.upsert_document(
                conn,
                kb_id,
                document,
                state=DocumentState.INDEXED,
                reason=None,
                chunk_count=len(chunks),
                identity_key=identity.key if matrix is not None and identity else None,
                settings_key=settings_key,
                text=compress_text(document.text),
            )
            stored_ids = writes.write_chunks(conn, kb_id, document_id, chunks)
            if matrix is not None and identity is not None:
                writes.write_vectors(conn, document_id, chunks, stored_ids, matrix, identity)
            writes.bump(conn, kb_id, [document_id])
            return writes.load_document(conn, kb_id, document_id)

    def record_failure(self, kb_id: int, document: NewDocument, reason: str) -> DocumentRecord:
        with self._write() as conn:
            writes.require_kb(conn, kb_id)
            document_id = writes.upsert_document(
                conn,
                kb_id,
                document,
                state=DocumentState.FAILED,
                reason=reason,
                chunk_count=0,
                identity_key=None,
                settings_key=None,
                text=None,
            )
            writes.bump(conn, kb_id, [document_id])
            return writes.load_document(conn, kb_id, document_id)

    def find_document(self, document_id: str) -> DocumentRecord | None:
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE id = ?", (document_id,)
            ).fetchone()
        return document_from_row(row) if row else None

    def create_upload(self, kb_id: int, document: NewDocument) -> DocumentRecord:
        with self._write() as conn:
            writes.require_kb(conn, kb_id)
            taken = conn.execute(
                "SELECT 1 FROM documents WHERE kb_id = ? AND path = ?", (kb_id, document.path)
            ).fetchone()
            if taken:
                raise Conflict("a document with this path already exists in this base")
            document_id = writes.upsert_document(
                conn,
                kb_id,
                document,
                state=DocumentState.PENDING,
                reason=None,
                chunk_count=0,
                identity_key=None,
                settings_key=None,
                text=None,
            )
            return writes.load_document(conn, kb_id, document_id)

    def find_by_hash(self, kb_id: int, content_hash: str) -> DocumentRecord | None:
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE kb_id = ? AND content_hash = ? "
                "ORDER BY created_at LIMIT 1",
                (kb_id, content_hash),
            ).fetchone()
        return document_from_row(row) if row else None

    def delete_document(self, kb_id: int, document_id: str) -> None:
        with self._write() as conn:
            writes.load_document(conn, kb_id, document_id)  # NotFound when not in this base
            writes.purge_chunks(conn, document_id)
            conn.execute("DELETE FROM documents WHERE id = ?", (document_id,))
            writes.bump(conn, kb_id)

    # -- embedding reuse ---------------------------------------------------------------------
    def cached_vectors(
        self, identity: EmbedderIdentity, content_hashes: Sequence[str]
    ) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        expected_bytes = identity.dim * VECTOR_DTYPE.itemsize
        with self._read() as conn:
            identity_id = writes.identity_row(conn, identity, create=False)
            if identity_id is None:
                return found
            for batch in batches(list(dict.fromkeys(content_hashes))):
                rows = conn.execute(
                    "SELECT content_hash, vector FROM embedding_cache WHERE identity_id = ? "
                    f"AND content_hash IN ({placeholders(len(batch))})",
                    (identity_id, *batch),
                )
                for content_hash, blob in rows:
                    if len(blob) == expected_bytes:
                        found[content_hash] = from_blob(blob)
        return found

    # -- search ------------------------------------------------------------------------------
    def keyword_search(
        self,
        kb_ids: Sequence[int],
        query: str,
        limit: int,
        document_ids: Sequence[str] | None = None,
    ) -> Scored:
        with self._read() as conn:
            return search.keyword_search(conn, _ids(kb_ids), query, limit, _docs(document_ids))

    def dense_search(
        self,
        kb_ids: Sequence[int],
        identity: EmbedderIdentity,
        vector: np.ndarray,
        limit: int,
        document_ids: Sequence[str] | None = None,
    ) -> Scored:
        """Indexes are fetched (and reloaded when stale) under a lock of their own; the matrix
        products run outside it, so concurrent searches overlap."""
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query.shape[0] != identity.dim:
            raise InvalidInput(
                f"the query vector has {query.shape[0]} dimensions; {identity.key} has "
                f"{identity.dim}"
            )
        document_ids = _docs(document_ids)
        if limit <= 0 or not kb_ids or document_ids == []:
            return []
        with self._read() as conn, self._dense_lock:
            identity_id = writes.identity_row(conn, identity, create=False)
            if identity_id is None:
                return []
            indexes = self._dense.indexes_for(conn, _ids(kb_ids), identity_id, identity.dim)
        return search.merge_top(
            [index.search(query, limit, document_ids) for index in indexes], limit
        )

    def get_chunks(self, kb_ids: Sequence[int], chunk_ids: Sequence[str]) -> list[StoredChunk]:
        with self._read() as conn:
            return search.get_chunks(conn, _ids(kb_ids), list(chunk_ids))

    def neighbors(self, kb_ids: Sequence[int], chunk_id: str, window: int) -> list[StoredChunk]:
        with self._read() as conn:
            return search.neighbors(conn, _ids(kb_ids), chunk_id, window)

    def close(self) -> None:
        with self._lock, self._pool_lock:
            if not self._closed:
                self._closed = True
                self._dense = dense.DenseIndexes()
                self._conn.close()
                for conn in self._idle:
                    conn.close()
                self._idle.clear()

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


@contextmanager
def _transaction(conn: sqlite3.Connection, begin: str) -> Iterator[sqlite3.Connection]:
    conn.execute(begin)
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _ids(kb_ids: Sequence[int]) -> list[int]:
    return [int(kb_id) for kb_id in kb_ids]


def _docs(document_ids: Sequence[str] | None) -> list[str] | None:
    return None if document_ids is None else [str(d) for d in document_ids]
