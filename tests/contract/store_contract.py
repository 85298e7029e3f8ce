"""What the ``Store`` contract tests share: the backends (``BACKENDS``; a new backend is one
more entry) and helpers that write documents through the seam."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from lorebase.embed.base import EmbedderIdentity
from lorebase.settings import ChunkSettings
from lorebase.store import stored_chunk_id
from lorebase.store.base import KnowledgeBase, NewDocument, Store
from lorebase.types import Chunk, ContentKind, Position

if TYPE_CHECKING:
    from lorebase.store.sqlite import SqliteStore

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


def _sqlite(store: Store) -> SqliteStore:
    from lorebase.store.sqlite import SqliteStore

    assert isinstance(store, SqliteStore)
    return store


def _sqlite_row_counts(store: Store) -> dict[str, int]:
    tables = (
        "documents",
        "document_texts",
        "sections",
        "chunks",
        "vectors",
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
    from lorebase.store.sqlite.fts import integrity_check_sql

    with _sqlite(store).database.write() as conn:
        conn.execute(integrity_check_sql())


def _sqlite_after_chunks(monkeypatch: pytest.MonkeyPatch, hook: Callable[[], None]) -> None:
    from lorebase.store.sqlite import writes

    original = writes.write_vectors

    def hooked(*args: object, **kwargs: object) -> None:
        hook()
        original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(writes, "write_vectors", hooked)


def _open_sqlite(tmp_path: Path) -> Store:
    from lorebase.store.sqlite import SqliteStore

    return SqliteStore(tmp_path / "lorebase.db")


BACKENDS = {
    "sqlite": Backend(_open_sqlite, _sqlite_row_counts, _sqlite_check_index, _sqlite_after_chunks)
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
):
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
