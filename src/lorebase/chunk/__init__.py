"""Cutting extracted documents into bounded, overlapping chunks ready to embed."""

from __future__ import annotations

from lorebase.chunk.base import Chunker
from lorebase.chunk.headers import HeaderChunker
from lorebase.chunk.tokens import estimate_tokens
from lorebase.settings import ChunkSettings
from lorebase.types import Chunk, Extracted

__all__ = ["Chunker", "HeaderChunker", "chunk_document", "estimate_tokens"]


def chunk_document(extracted: Extracted, settings: ChunkSettings) -> list[Chunk]:
    """Chunk one document with the default (header-boundary) chunker."""
    return HeaderChunker().chunk(extracted, settings)
