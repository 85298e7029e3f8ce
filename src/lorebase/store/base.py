"""The ``Store`` seam: knowledge bases, documents, chunks, vectors and the lexical index.

Every read and write is scoped by knowledge base: a document or chunk id from another
knowledge base finds nothing. A document's rows (document, chunks, lexical rows, vectors) are
written in one transaction: a search never sees half a document, and replacing one is atomic.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from lorebase.embed.base import EmbedderIdentity
from lorebase.settings import ChunkSettings
from lorebase.types import Chunk


class Scope(StrEnum):
    GLOBAL = "global"
    TEAM = "team"
    PERSONAL = "personal"


class DocumentState(StrEnum):
    PENDING = "pending"
    EXTRACTING = "extracting"
    CHUNKING = "chunking"
    EMBEDDING = "embedding"
    INDEXED = "indexed"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class KnowledgeBase:
    id: int
    name: str
    description: str
    scope: Scope
    owner: str | None
    chunk_settings: ChunkSettings
    identity_key: str | None
    created_at: float
    documents: int = 0
    indexed: int = 0
    failed: int = 0
    chunks: int = 0
    bytes: int = 0


@dataclass(frozen=True, slots=True)
class NewDocument:
    """What the pipeline hands the store about one source file (or upload)."""

    path: str  # relative to its source, POSIX separators; unique within a knowledge base
    kind: str
    size: int
    content_hash: str
    mtime: float | None = None
    title: str | None = None
    page_count: int | None = None
    encoding: str | None = None
    text: str = ""  # the canonical extracted text (chunk offsets index into it)


@dataclass(frozen=True, slots=True)
class DocumentRecord:
    id: str
    kb_id: int
    path: str
    kind: str
    size: int
    content_hash: str
    state: DocumentState
    mtime: float | None
    title: str | None
    page_count: int | None
    reason: str | None
    chunk_count: int
    identity_key: str | None
    settings_key: str | None
    updated_at: float


@dataclass(frozen=True, slots=True)
class StoredChunk:
    """A chunk as search hydrates it: the chunk plus where it lives."""

    id: str
    kb_id: int
    kb_name: str
    document_id: str
    path: str
    title: str | None
    kind: str
    ordinal: int
    text: str
    trail: tuple[str, ...]
    start: int
    end: int
    content_kind: str
    line: int | None
    page: int | None
    page_end: int | None
    language: str | None
    symbol: str | None
    tokens: int


Scored = list[tuple[str, float]]  # (chunk id, score), best first


class Store(ABC):
    """Persistence for everything lorebase indexes. Implementations: SQLite, PostgreSQL."""

    # -- knowledge bases ---------------------------------------------------------------------
    @abstractmethod
    def create_kb(
        self,
        name: str,
        *,
        description: str = "",
        scope: Scope = Scope.PERSONAL,
        owner: str | None = None,
        chunk_settings: ChunkSettings | None = None,
    ) -> KnowledgeBase:
        """Create a knowledge base; ``Conflict`` when the name is taken."""

    @abstractmethod
    def get_kb(self, name: str) -> KnowledgeBase:
        """By name, with totals; ``NotFound`` when there is none."""

    @abstractmethod
    def get_kb_by_id(self, kb_id: int) -> KnowledgeBase: ...

    @abstractmethod
    def list_kbs(self) -> list[KnowledgeBase]: ...

    @abstractmethod
    def delete_kb(self, kb_id: int) -> None:
        """Delete a knowledge base and every row that belongs to it."""

    @abstractmethod
    def set_kb_identity(self, kb_id: int, identity: EmbedderIdentity) -> None:
        """Record the embedding identity the knowledge base's vectors are made with."""

    # -- documents ---------------------------------------------------------------------------
    @abstractmethod
    def get_document(self, kb_id: int, path: str) -> DocumentRecord | None: ...

    @abstractmethod
    def get_document_by_id(self, kb_id: int, document_id: str) -> DocumentRecord:
        """``NotFound`` when the id is unknown *or belongs to another knowledge base*."""

    @abstractmethod
    def list_documents(
        self, kb_id: int, state: DocumentState | None = None
    ) -> list[DocumentRecord]: ...

    @abstractmethod
    def document_text(self, kb_id: int, document_id: str) -> str:
        """The stored extracted text of a document (chunk offsets index into it)."""

    @abstractmethod
    def replace_document(
        self,
        kb_id: int,
        document: NewDocument,
        chunks: Sequence[Chunk],
        vectors: np.ndarray | None,
        identity: EmbedderIdentity | None,
        settings_key: str,
    ) -> DocumentRecord:
        """Atomically make ``document`` (by path) indexed with exactly these chunks and
        vectors (``vectors[i]`` belongs to ``chunks[i]``; None when there is no embedder),
        replacing whatever was stored for that path. Vectors also go to the reuse cache
        under ``(chunk.content_hash, identity)``. The document keeps its id when replaced."""

    @abstractmethod
    def record_failure(self, kb_id: int, document: NewDocument, reason: str) -> DocumentRecord:
        """Atomically mark the path ``failed`` with a reason, dropping any chunks it had."""

    @abstractmethod
    def delete_document(self, kb_id: int, document_id: str) -> None:
        """Delete a document and all its rows; ``NotFound`` when not in this base."""

    # -- embedding reuse ---------------------------------------------------------------------
    @abstractmethod
    def cached_vectors(
        self, identity: EmbedderIdentity, content_hashes: Sequence[str]
    ) -> dict[str, np.ndarray]:
        """Vectors already computed for these chunk content hashes under this identity."""

    # -- search ------------------------------------------------------------------------------
    @abstractmethod
    def keyword_search(
        self,
        kb_ids: Sequence[int],
        query: str,
        limit: int,
        document_ids: Sequence[str] | None = None,
    ) -> Scored:
        """BM25 over the lexical index. ``query`` is raw user text: the store escapes it (no
        FTS syntax injection) and OR-joins its terms. Higher score is better."""

    @abstractmethod
    def dense_search(
        self,
        kb_ids: Sequence[int],
        identity: EmbedderIdentity,
        vector: np.ndarray,
        limit: int,
        document_ids: Sequence[str] | None = None,
    ) -> Scored:
        """Inner product of a unit query vector against the vectors of this identity."""

    @abstractmethod
    def get_chunks(self, kb_ids: Sequence[int], chunk_ids: Sequence[str]) -> list[StoredChunk]:
        """Hydrate chunks, in the order asked; ids outside ``kb_ids`` are left out."""

    @abstractmethod
    def neighbors(self, kb_ids: Sequence[int], chunk_id: str, window: int) -> list[StoredChunk]:
        """The chunk and up to ``window`` chunks each side of it in its document, in order."""

    @abstractmethod
    def close(self) -> None: ...
