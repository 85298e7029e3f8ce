"""Cutting extracted documents into bounded, overlapping chunks ready to embed."""

from __future__ import annotations

import dataclasses

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
    """Chunk one document with the default (header-boundary) chunker; a note (kind
    ``note``) with :func:`note_chunking` of ``settings``."""
    if extracted.kind == NOTE_KIND:
        settings = note_chunking(settings)
    return HeaderChunker().chunk(extracted, settings)


MAX_CHUNK_CHARS = 4000  # the longest chunk_size ChunkSettings take
NOTE_KIND = "note"  # as lorebase.extract.note names it (the chunker imports no extractor)


def note_chunking(settings: ChunkSettings) -> ChunkSettings:
    """How a note is cut: one chunk as long as the base's token limit (``max_tokens``) and
    the longest chunk allowed let it, only then into more (with the base's overlap)."""
    return dataclasses.replace(settings, chunk_size=MAX_CHUNK_CHARS)
