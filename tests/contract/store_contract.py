"""What the ``Store`` contract tests share: the backends (``BACKENDS``; a new backend is one
more entry) and helpers that write documents through the seam."""

from __future__ import annotations

import collections
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from lorebase.embed.base import EmbedderIdentity
from lorebase.settings import ChunkSettings
from lorebase.store import stored_chunk_id
from lorebase.store.base import DocumentRecord, KnowledgeBase, NewDocument, Store
from lorebase.types import Chunk, ContentKind, Position

if TYPE_CHECKING:
    from lorebase.store.postgres import PostgresStore
    from lorebase.store.sqlite import SqliteStore
    from postgres_server import PostgresServer

DIM = 8
IDENTITY = EmbedderIdentity(model="test-model", digest="a" * 64, dim=DIM)
OTHER_IDENTITY = EmbedderIdentity(model="other-model", digest="b" * 64, dim=DIM)
SETTINGS_KEY = ChunkSettings().key


# -- backends ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Backend:
    """What the contract needs to know about one backend, beyond the ``Store`` seam."""

    open: Callable[[Path], Store]
    row_counts: Callable[[Store], dict[str, int]]
    """Rows in every table a document or base writes to (the reuse cache excepted)."""
    check_index: Callable[[Store], None]
    """Raise when the lexical index disagrees with the chunks it indexes."""
    after_chunks: Callable[[pytest.MonkeyPatch, Callable[[], None]], None]
    """Make ``replace_document`` call this hook once it has written chunks and index rows (in
    its transaction, before the vectors); a hook that raises makes the write fail half-way."""
    reuse_outlives_chunks: bool = False
    """Whether the reuse lookup (``cached_vectors``) still finds the vector of content no chunk
    holds any more: PostgreSQL keeps a reuse cache keyed by content; SQLite stores each vector
    once, with its chunk, and finds it by the chunk's content hash."""
    example_share: float = 1.0
    """The share of its examples a hypothesis test that opens a store per example runs here
    (a PostgreSQL database per example costs ~0.1 s; that backend keeps nothing in memory,
    which is what those tests check most)."""

    def examples(self, full: int) -> int:
        return max(1, round(full * self.example_share))


def _sqlite(store: Store) -> SqliteStore:
    from lorebase.store.sqlite import SqliteStore

    assert isinstance(store, SqliteStore)
    return store


_SQLITE_TABLES = ("documents", "document_texts", "sections", "chunks", "vectors")


def _sqlite_row_counts(store: Store) -> dict[str, int]:
    """The tables, and what the Tantivy index finds (after catching up with them)."""
    with _sqlite(store).database.read() as conn:
        counts = {
            table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in _SQLITE_TABLES
        }
        kb_ids = [row[0] for row in conn.execute("SELECT id FROM knowledge_bases")]
    counts["lexical(index)"] = len(store.keyword_search(kb_ids, "zebra alpha tulip", 100_000))
    return counts


def _fts5_row_counts(store: Store) -> dict[str, int]:
    tables = (
        *_SQLITE_TABLES,
        "chunks_fts",
        "chunks_fts_docsize",  # one row per indexed chunk (segments may keep tombstones)
    )
    with _sqlite(store).database.read() as conn:
        counts = {
            table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in tables
        }
        counts["chunks_fts(index)"] = conn.execute(
            "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'zebra OR alpha OR tulip'"
        ).fetchone()[0]
    return counts


def _sqlite_check_index(store: Store) -> None:
    from lorebase.store.sqlite.tantivy_index import TantivyIndexes

    lexical = _sqlite(store)._lexical
    assert isinstance(lexical, TantivyIndexes)
    with _sqlite(store).database.read() as conn:
        lexical.check(conn)


def _fts5_check_index(store: Store) -> None:
    from lorebase.store.sqlite.fts import integrity_check_sql

    with _sqlite(store).database.write() as conn:
        conn.execute(integrity_check_sql())


def _sqlite_after_chunks(monkeypatch: pytest.MonkeyPatch, hook: Callable[[], None]) -> None:
    from lorebase.store.sqlite import writes

    original = writes.write_vectors

    def hooked(*args: Any, **kwargs: Any) -> None:
        hook()
        original(*args, **kwargs)

    monkeypatch.setattr(writes, "write_vectors", hooked)


def _open_sqlite(tmp_path: Path) -> Store:
    from lorebase.store.sqlite import SqliteStore

    return SqliteStore(tmp_path / "lorebase.db")


def _open_fts5(tmp_path: Path) -> Store:
    from lorebase.store.sqlite import SqliteStore

    return SqliteStore(tmp_path / "lorebase.db", lexical="fts5")


class PostgresDatabases:
    """The PostgreSQL databases of the contract: one per folder a test opens a store in (a
    second store on the same folder opens the same database). The first ones are copies of a
    template that already holds the store's schema (a copy takes ~50-100 ms, the migrations
    more); after a test its databases are emptied (~5 ms) and handed to the next tests, so the
    hypothesis tests, which open a database per example, do not copy one each time.
    ``conftest`` attaches the session's server before a test and recycles after it."""

    TEMPLATE_PREFIX = "store_template"
    STORE_TABLES = ("knowledge_bases", "embedding_cache", "identities")
    """Emptying these empties every table of the store (the rest cascade from the bases)."""

    def __init__(self) -> None:
        self.server: PostgresServer | None = None
        self.template: str | None = None
        self.urls: dict[Path, str] = {}
        self.free: list[str] = []

    def attach(self, server: PostgresServer) -> None:
        from lorebase.store.postgres import PostgresStore

        if self.server is not server:
            self.server, self.urls, self.free = server, {}, []
            url = server.new_database(self.TEMPLATE_PREFIX)
            PostgresStore(url).close()  # migrated once; every test's database copies it
            self.template = url.partition("?")[0].rpartition("/")[2]

    def url(self, folder: Path) -> str:
        assert self.server is not None and self.template is not None, "no PostgreSQL attached"
        if folder not in self.urls:
            self.urls[folder] = (
                self.free.pop() if self.free else self.server.new_database(template=self.template)
            )
        return self.urls[folder]

    def recycle(self) -> None:
        """Empty the databases the test used (cutting off any connection it left open) and
        keep them for the next tests."""
        import psycopg

        for url in self.urls.values():
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
                indexes = conn.execute(
                    "SELECT indexname FROM pg_indexes WHERE tablename = 'vectors' "
                    "AND indexname LIKE 'vectors_hnsw_%'"
                ).fetchall()
                with conn.transaction():
                    for (index,) in indexes:
                        conn.execute(f'DROP INDEX "{index}"')
                    for table in self.STORE_TABLES:
                        conn.execute(f"DELETE FROM {table}")
            self.free.append(url)
        self.urls = {}


POSTGRES = PostgresDatabases()


def _postgres(store: Store) -> PostgresStore:
    from lorebase.store.postgres import PostgresStore

    assert isinstance(store, PostgresStore)
    return store


def _open_postgres(folder: Path) -> Store:
    from lorebase.store.postgres import PostgresStore

    return PostgresStore(POSTGRES.url(folder))


def _postgres_row_counts(store: Store) -> dict[str, int]:
    tables = ("documents", "document_texts", "sections", "chunks", "vectors")
    with _postgres(store).database.read() as conn:
        counts = {
            table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in tables
        }
        conn.execute("SET LOCAL enable_seqscan = off")  # through the GIN index
        counts["chunks(lexemes)"] = conn.execute(
            "SELECT count(*) FROM chunks WHERE lexemes @@ to_tsquery('lorebase', "
            "'zebra | alpha | tulip')"
        ).fetchone()[0]
        counts["documents(lexical_tokens)"] = conn.execute(
            "SELECT coalesce(sum(lexical_tokens), 0) FROM documents"
        ).fetchone()[0]
    return counts


def _postgres_check_index(store: Store) -> None:
    """Every chunk's lexemes and length are what its fields give now, and every document's
    chunk count and token total are its chunks'."""
    from lorebase.store.postgres import lexical

    expected_sql = "SELECT " + lexical.lexemes_sql("%s", "%s", "%s", "%s") + " = %s::tsvector"
    with _postgres(store).database.read() as conn:
        rows = conn.execute(
            "SELECT coalesce(d.title, ''), s.headings, d.path, coalesce(c.symbol, ''), c.text, "
            "c.lexemes::text, c.lexical_length, c.language, d.id FROM chunks AS c "
            "JOIN documents AS d ON d.id = c.document_id JOIN sections AS s ON s.id = c.section_id"
        ).fetchall()
        # A document's title and path are read in the language most of its chunks are in.
        languages: dict[str, collections.Counter[str | None]] = {}
        for *_, language, document_id in rows:
            languages.setdefault(document_id, collections.Counter())[language] += 1
        for title, headings, path, symbol, text, lexemes, length, language, document in rows:
            main = languages[document].most_common(1)[0][0]
            fields = lexical.lexical_fields(title, headings, path, symbol, text, language, main)
            assert fields.length == length
            path_body = f"{fields.path} {fields.body}"
            same = conn.execute(
                expected_sql, (fields.title, fields.headings, fields.symbol, path_body, lexemes)
            ).fetchone()[0]
            assert same, "a chunk's lexemes differ from its fields"
        wrong = conn.execute(
            "SELECT count(*) FROM documents AS d LEFT JOIN (SELECT document_id, count(*) AS n, "
            "sum(lexical_length) AS tokens FROM chunks GROUP BY document_id) AS c "
            "ON c.document_id = d.id "
            "WHERE d.chunk_count <> coalesce(c.n, 0) OR d.lexical_tokens <> coalesce(c.tokens, 0)"
        ).fetchone()[0]
        assert wrong == 0, "documents' chunk counts or token totals differ from their chunks"


def _postgres_after_chunks(monkeypatch: pytest.MonkeyPatch, hook: Callable[[], None]) -> None:
    from lorebase.store.postgres import writes

    original = writes.write_vectors

    def hooked(*args: Any, **kwargs: Any) -> None:
        hook()
        original(*args, **kwargs)

    monkeypatch.setattr(writes, "write_vectors", hooked)


BACKENDS = {
    "sqlite": Backend(_open_sqlite, _sqlite_row_counts, _sqlite_check_index, _sqlite_after_chunks),
    "sqlite-fts5": Backend(_open_fts5, _fts5_row_counts, _fts5_check_index, _sqlite_after_chunks),
    "postgres": Backend(
        _open_postgres,
        _postgres_row_counts,
        _postgres_check_index,
        _postgres_after_chunks,
        reuse_outlives_chunks=True,
        example_share=0.25,
    ),
}


# -- helpers -----------------------------------------------------------------------------------
def make_chunks(
    texts: Sequence[str],
    trails: Sequence[tuple[str, ...]] | None = None,
    *,
    symbol: str | None = None,
    salt: str = "",
) -> list[Chunk]:
    chunks, offset = [], 0
    for ordinal, text in enumerate(texts):
        trail = trails[ordinal] if trails else ()
        digest = hashlib.sha256(f"{salt}|{ordinal}|{text}".encode()).hexdigest()
        chunks.append(
            Chunk(
                id=digest[:32],
                ordinal=ordinal,
                text=text,
                embed_text=" > ".join(trail) + "\n" + text,
                tokens=len(text.split()),
                content_hash=hashlib.sha256(text.encode()).hexdigest(),
                position=Position(
                    trail=trail,
                    start=offset,
                    end=offset + len(text),
                    content_kind=ContentKind.CODE if symbol else ContentKind.PROSE,
                    line=ordinal + 1,
                    language="python" if symbol else None,
                    symbol=symbol,
                ),
            )
        )
        offset += len(text) + 2
    return chunks


def new_doc(path: str, text: str = "", *, title: str | None = None, size: int = 100) -> NewDocument:
    digest = hashlib.sha256(f"{path}|{text}".encode()).hexdigest()
    kind = path.rsplit(".", 1)[-1] if "." in path else "txt"
    return NewDocument(
        path=path, kind=kind, size=size, content_hash=digest, title=title, text=text, mtime=1.5
    )


STORED_VECTOR_STEP = 1 / 127
"""How far a stored vector may come back from what was written, per component, as a share of
its largest component: SQLite keeps int8 codes with one scale per vector (half a code step of
rounding, plus the rescaling that keeps its length), PostgreSQL float32."""


def assert_stored_vector(found: np.ndarray, written: np.ndarray) -> None:
    """A vector read back is the one written, within the store's quantisation."""
    assert found.dtype == np.float32
    peak = float(np.abs(written).max())
    np.testing.assert_allclose(found, written, rtol=0, atol=peak * STORED_VECTOR_STEP)
    assert float(found @ written) / float(np.linalg.norm(found) * np.linalg.norm(written)) > 0.999


def unit(seed: int, dim: int = DIM) -> np.ndarray:
    vector = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return vector / np.linalg.norm(vector)


def put(
    store: Store,
    kb: KnowledgeBase,
    path: str,
    texts: Sequence[str],
    *,
    trails: Sequence[tuple[str, ...]] | None = None,
    title: str | None = None,
    vectors: np.ndarray | None = None,
    identity: EmbedderIdentity | None = None,
    symbol: str | None = None,
) -> tuple[DocumentRecord, list[Chunk]]:
    chunks = make_chunks(texts, trails, symbol=symbol, salt=path)
    if vectors is not None and identity is None:
        identity = IDENTITY
    record = store.replace_document(
        kb.id,
        new_doc(path, "\n\n".join(texts), title=title),
        chunks,
        vectors,
        identity,
        SETTINGS_KEY,
    )
    return record, chunks


def ids_of(hits: Sequence[tuple[str, float]]) -> list[str]:
    return [chunk_id for chunk_id, _ in hits]


def stored_ids(document_id: str, chunks: Sequence[Chunk]) -> list[str]:
    """The ids a store gives these chunks of this document (the contract every backend keeps)."""
    return [stored_chunk_id(document_id, chunk.id) for chunk in chunks]
