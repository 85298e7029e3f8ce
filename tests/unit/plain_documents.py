"""Documents made straight from a list of texts (one prose chunk each, no headings), for tests
that write to a store below the ingestion pipeline."""

from __future__ import annotations

from lorebase.store.base import NewDocument
from lorebase.types import Chunk, Position


def plain_document(number: int, texts: list[str]) -> tuple[NewDocument, list[Chunk]]:
    """``doc-<number>.txt`` with one chunk per text; a chunk's content hash changes with it."""
    body = "\n\n".join(texts)
    chunks, offset = [], 0
    for ordinal, text in enumerate(texts):
        chunks.append(
            Chunk(
                id=f"d{number}-{ordinal}",
                ordinal=ordinal,
                text=text,
                embed_text=text,
                tokens=len(text.split()),
                content_hash=f"{number}-{ordinal}-{len(text)}",
                position=Position(start=offset, end=offset + len(text)),
            )
        )
        offset += len(text) + 2
    document = NewDocument(
        path=f"doc-{number}.txt", kind="txt", size=len(body), content_hash=f"h{number}", text=body
    )
    return document, chunks
