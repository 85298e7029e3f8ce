"""Cutting extracted documents into bounded, overlapping chunks ready to embed."""

from __future__ import annotations

from lorebase.chunk.base import Chunker
from lorebase.chunk.headers import HeaderChunker
from lorebase.chunk.tokens import estimate_tokens
from lorebase.settings import ChunkSettings
from lorebase.types import Chunk, Extracted

__all__ = ["CHUNKER_VERSION", "Chunker", "HeaderChunker", "chunk_document", "estimate_tokens"]

CHUNKER_VERSION = 2
"""Of the header-boundary chunker (:func:`chunk_document`): raise it when the same elements
are cut into other chunks, and every document becomes stale (read again by the next pass, its
unchanged chunk texts keeping their vectors). 2: a table's header row is repeated in each of
its chunks."""


def chunk_document(extracted: Extracted, settings: ChunkSettings) -> list[Chunk]:
    """Chunk one document with the default (header-boundary) chunker."""
    return HeaderChunker().chunk(extracted, settings)
