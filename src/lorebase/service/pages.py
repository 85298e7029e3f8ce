"""Pages of PDF documents and images as pictures, a cited passage marked on its page
(:mod:`lorebase.extract.page_image`: found in the text layer, else by the boxes OCR gave its
lines when it was read): read from the file a folder holds or from an upload's sealed
original, checked to be the bytes that were indexed, and kept in a cache bounded in bytes (the
document view turns pages back and forth)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

from lorebase.errors import Conflict, NotFound
from lorebase.extract.base import content_hash
from lorebase.extract.page_image import (
    DEFAULT_WIDTH,
    MAX_WIDTH,
    MIN_WIDTH,
    PageImage,
    render_page,
    render_picture,
)
from lorebase.service.originals import Originals
from lorebase.store.base import DocumentRecord, KnowledgeBase, Store, StoredChunk

DEFAULT_PAGE_WIDTH, MIN_PAGE_WIDTH, MAX_PAGE_WIDTH = DEFAULT_WIDTH, MIN_WIDTH, MAX_WIDTH
"""The widths a page is rendered at, in pixels (the API's bounds)."""
CACHE_BYTES = 32 * 1024 * 1024
"""Rendered pages kept, in bytes of PNG, the least recently shown dropped first."""
PAGED_KINDS = frozenset({"pdf", "image"})
CacheKey = tuple[str, str, int, str | None, int]


class Pages:
    """Rendered pages of the documents the caller already found (access is the caller's)."""

    def __init__(self, store: Store, originals: Originals, cache_bytes: int = CACHE_BYTES) -> None:
        self._store = store
        self._originals = originals
        self._cache: OrderedDict[CacheKey, PageImage] = OrderedDict()
        self._cached_bytes = 0
        self._limit = cache_bytes
        self._guard = threading.Lock()

    def page(
        self,
        kb: KnowledgeBase,
        document: DocumentRecord,
        origin: Path | None,
        page: int,
        *,
        chunk_id: str | None = None,
        width: int = DEFAULT_WIDTH,
    ) -> PageImage:
        """Page ``page`` (1-based) of ``document``, ``width`` pixels wide, with chunk
        ``chunk_id`` (one of the document's) marked. ``origin``: where a folder's file lies
        (None: an upload, read from its original). ``NotFound`` for a document that is no
        PDF file, a page out of range, a chunk of another document, or a file gone;
        ``Conflict`` when the file changed since it was indexed."""
        if document.kind not in PAGED_KINDS or document.container is not None:
            raise NotFound(
                f"pages are shown for PDF files and images; this document is {document.kind}"
                + (" inside another file" if document.container is not None else "")
            )
        passage = self._passage(kb, document, chunk_id) if chunk_id else None
        key: CacheKey = (document.id, document.content_hash, page, chunk_id, width)
        with self._guard:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return cached
        regions = (
            self._store.regions(
                kb.id, document.id, page, passage.provenance.start, passage.provenance.end
            )
            if passage is not None
            else []
        )
        data = self.original(document, origin)
        if document.kind == "image":
            image = render_picture(data, page, regions=regions, width=width)
        else:
            text = passage.text if passage is not None else None
            image = render_page(data, page, passage=text, regions=regions, width=width)
        self._keep(key, image)
        return image

    def _passage(self, kb: KnowledgeBase, document: DocumentRecord, chunk_id: str) -> StoredChunk:
        found = [c for c in self._store.neighbors([kb.id], chunk_id, 0) if c.id == chunk_id]
        if not found or found[0].provenance.document_id != document.id:
            raise NotFound("no such chunk in this document; take a chunk_id from a search hit")
        return found[0]

    def original(self, document: DocumentRecord, origin: Path | None) -> bytes:
        """The bytes ``document`` was indexed from: an upload's original, or the file at
        ``origin``. ``NotFound`` when it is gone or the document is a part of another file;
        ``Conflict`` when the file changed since it was indexed."""
        if document.container is not None:
            raise NotFound("this document is a part of another file; open that file instead")
        data = self._read(document, origin)
        if content_hash(data) != document.content_hash:
            raise Conflict("the file changed since it was indexed; sync the base, then try again")
        return data

    def _read(self, document: DocumentRecord, origin: Path | None) -> bytes:
        if document.uploaded:
            if not self._originals.blobs.exists(document.id):
                raise NotFound("the upload's original is missing; upload the file again")
            return self._originals.blobs.get(document.id)
        if origin is None or not origin.is_file():
            raise NotFound(
                "the file is not where its folder was (moved, deleted or not mounted here)"
            )
        return origin.read_bytes()

    def _keep(self, key: CacheKey, image: PageImage) -> None:
        size = len(image.png)
        if size > self._limit:
            return
        with self._guard:
            if key in self._cache:
                return
            self._cache[key] = image
            self._cached_bytes += size
            while self._cached_bytes > self._limit:
                _, dropped = self._cache.popitem(last=False)
                self._cached_bytes -= len(dropped.png)
