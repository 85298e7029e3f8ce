"""Documents and what is read from them: :class:`Documents` lists them (a page of names,
opened through :class:`Originals`), reads their text and surrounding chunks, searches (what the
agent tools and chat read through), deletes them and queues them to be indexed again. What a
caller may see is :class:`Access`'s to say; searching is the search service's; this object
announces a damaged (and later rebuilt) keyword index once each.

:func:`admit` is how every use case puts a job on the ingestion queue (``Overloaded`` when it
is full).
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from lorebase.accounts.access import Caller
from lorebase.embed.registry import Embedders
from lorebase.errors import InvalidInput, NotFound, Overloaded
from lorebase.events import EventBus
from lorebase.fields import MAX_FIELD_CHARS
from lorebase.ingest.files import file_of
from lorebase.ingest.queue import JobQueue
from lorebase.search.query import SearchRequest, SearchResponse
from lorebase.search.service import SearchService
from lorebase.service.access import Access
from lorebase.service.listing import DocumentListing, DocumentPage, page_of
from lorebase.service.originals import Originals
from lorebase.store.base import DocumentRecord, KnowledgeBase, Source, Store, StoredChunk
from lorebase.store.states import DocumentState, SourceKind
from lorebase.usage import acting

RETRY_AFTER_SECONDS = 5
# The fewest characters of an id that find a document by the start of its id (`docs list`
# shows 12).
MIN_ID_PREFIX = 6


def admit(queue: JobQueue, kb_id: int, document_id: str | None) -> None:
    """Queue an upload to index (``document_id``) or a pass over the base's folders (None);
    ``Overloaded`` when the queue is full (what was asked for is recorded and done later)."""
    if not queue.admit(kb_id, document_id):
        raise Overloaded(
            "the ingestion queue is full; what was asked for is recorded and will be done, "
            "or retry later",
            RETRY_AFTER_SECONDS,
        )


class Documents:
    """Reads, listings and searches of documents, and their deletes and reindexes."""

    def __init__(
        self,
        store: Store,
        embedders: Embedders,
        searcher: SearchService,
        events: EventBus,
        queue: JobQueue,
        access: Access,
        originals: Originals,
    ) -> None:
        self._store = store
        self._embedders = embedders
        self._searcher = searcher
        self._events = events
        self._queue = queue
        self._access = access
        self._originals = originals
        # The bases whose damaged keyword index a search event announced.
        self._announced_damage: set[int] = set()
        self._damage_lock = threading.Lock()

    def documents(
        self, kb: KnowledgeBase | str, state: DocumentState | None = None
    ) -> list[DocumentRecord]:
        """The base's documents (those in ``state``), as stored, by path."""
        return self._store.list_documents(self._access.base(kb).id, state)

    def document_page(self, kb: KnowledgeBase | str, listing: DocumentListing) -> DocumentPage:
        """The page of the base's documents ``listing`` asks for, names (decrypted for
        uploads) read only where its filter or order needs them (see :func:`page_of`)."""
        records = self.documents(kb, listing.state)
        return page_of(records, listing, self._originals.display_name)

    def document_in(self, kb: KnowledgeBase | str, document_id: str) -> DocumentRecord:
        """A document of this base by id (``NotFound`` for an id of another base)."""
        return self._store.get_document_by_id(self._access.base(kb).id, document_id)

    def find_document(self, id_or_prefix: str) -> tuple[KnowledgeBase, DocumentRecord]:
        """The operator's lookup (CLI): a document by id, or by the start of its id (at least
        ``MIN_ID_PREFIX`` characters); ``InvalidInput`` when that start fits several."""
        wanted = id_or_prefix.strip().lower()
        if self._store.find_document(wanted) is None and len(wanted) >= MIN_ID_PREFIX:
            ids = self._store.find_document_ids(wanted)
            if len(ids) > 1:
                raise InvalidInput(
                    f"several documents have an id starting with {wanted}; give more of it"
                )
            if ids:
                wanted = ids[0]
        return self._access.document(wanted)

    def source_of(self, kb: KnowledgeBase, document: DocumentRecord) -> Source | None:
        """The folder or file a document comes from; None for an upload (or a file added by
        path before lorebase followed such files: add it again to follow it)."""
        if document.source_id is None:
            return None
        sources = self._store.list_sources(kb.id)
        return next((s for s in sources if s.id == document.source_id), None)

    def origin(self, kb: KnowledgeBase, document: DocumentRecord) -> Path | None:
        """Where a document's file is on this machine (None: see :meth:`source_of`)."""
        source = self.source_of(kb, document)
        return None if source is None else file_of(source, document.path)

    def text(self, kb: KnowledgeBase | str, document_id: str) -> str:
        """The whole extracted text of a document (chunk offsets index into it)."""
        return self._store.document_text(self._access.base(kb).id, document_id)

    def read(
        self, kb: KnowledgeBase | str, document_id: str, start: int = 0, max_chars: int = 20_000
    ) -> str:
        """A bounded window of a document's extracted text."""
        return self.text(kb, document_id)[start : start + max_chars]

    def neighbors(
        self, kb: KnowledgeBase | str, chunk_id: str, window: int = 1
    ) -> list[StoredChunk]:
        """The chunk and up to ``window`` chunks each side of it in its document, in order."""
        return self._store.neighbors([self._access.base(kb).id], chunk_id, window)

    def chunks_of(
        self, kb: KnowledgeBase | str, document_id: str, start: int = 0, limit: int = 20
    ) -> list[StoredChunk]:
        """A document's chunks in order from ordinal ``start``: what the index holds of it."""
        return self._store.document_chunks(self._access.base(kb).id, document_id, start, limit)

    def fields_of(self, kb: KnowledgeBase, document: DocumentRecord) -> dict[str, list[str]]:
        """What is known of a document, by field (see :mod:`lorebase.fields`)."""
        return self._store.document_fields([kb.id], [document.id]).get(document.id, {})

    def user_tags(self, kb: KnowledgeBase, document: DocumentRecord) -> list[str]:
        """The tags people set on a document (its file's own are in its fields too)."""
        return self._store.user_tags(kb.id, document.id)

    def field_names(self, kbs: Sequence[KnowledgeBase]) -> list[str]:
        """The fields some document of these bases has (what a filter may name beside the
        fields every base knows)."""
        return self._store.field_names([kb.id for kb in kbs])

    def tag(
        self,
        kb: KnowledgeBase,
        document: DocumentRecord,
        add: Sequence[str] = (),
        remove: Sequence[str] = (),
        *,
        caller: Caller | None = None,
    ) -> list[str]:
        """Set and remove tags people set on a document (searchable at once with
        ``tags=…``); the tags people set on it now. The caller checked the right to write."""
        for tag in (*add, *remove):
            if not isinstance(tag, str) or not tag.strip() or len(tag) > MAX_FIELD_CHARS:
                raise InvalidInput(f"a tag is 1 to {MAX_FIELD_CHARS} characters")
        tags = self._store.tag_document(kb.id, document.id, add, remove)
        self._access.audit(caller, "tag_document", f"document:{document.id}")
        return tags

    def observe_embedding(self, observer: Callable[[str, float], None]) -> None:
        """Call ``observer(kind, seconds)`` after each batch the embedder answers (metrics)."""
        self._embedders.observe_batches(observer)

    def damaged_keyword_indexes(self, kb_ids: Sequence[int] | None = None) -> dict[int, str]:
        """The bases (of ``kb_ids``, or every one) whose keyword index this process found
        damaged and is rebuilding, with why (content-free)."""
        ids = [kb.id for kb in self._store.list_kbs(totals=False)] if kb_ids is None else kb_ids
        return self._store.lexical_damage(ids)

    def documents_by_state(self) -> dict[str, int]:
        """How many documents are in each state, over every base (metrics)."""
        counts = self._store.count_documents_by_state()
        return {state.value: count for state, count in counts.items()}

    # -- search --------------------------------------------------------------------------------
    def search(
        self,
        request: SearchRequest | str,
        *,
        kb: str | int | KnowledgeBase | Sequence[str | int | KnowledgeBase] | None = None,
        caller: Caller | None = None,
        **options: Any,
    ) -> SearchResponse:
        """Hybrid (or one-arm) search over the given bases — by name as :meth:`Access.kb`
        reads one, by id, or a base this service already looked up for the caller — and with
        none given, over every base the caller may see. Each is looked up (and its visibility
        checked) once.

        ``request`` is the one value every surface builds
        (:class:`~lorebase.search.query.SearchRequest`: its fields say what each option
        does), or, for a library caller, its query text with the request's other fields as
        keywords: ``lb.search("vacation policy", kb="notes", top_k=5, mode="keyword")``."""
        if isinstance(request, str):
            request = SearchRequest(request, **options)
        elif options:
            raise TypeError("give the options inside the SearchRequest, or a query text with them")
        wanted = (kb,) if isinstance(kb, str | int | KnowledgeBase) else tuple(kb or ())
        if not wanted:
            wanted = request.knowledge_bases
        bases = [
            self._access.kb(b, caller, totals=False)
            if isinstance(b, str)
            else self._access.kb_by_id(b, caller)
            if isinstance(b, int)
            else b
            for b in wanted
        ]
        if not bases and caller is not None:
            bases = self._access.knowledge_bases(caller, totals=False)
            if not bases:
                raise NotFound("you can see no knowledge base yet; create one first")
        request = dataclasses.replace(
            request, knowledge_bases=(), kb_ids=tuple(b.id for b in bases)
        )
        with acting(caller.user.name if caller is not None else None):
            response = self._searcher.search(request)
        if response.damaged or self._announced_damage:
            self._announce_damage(response.damaged)
        return response

    def _announce_damage(self, found_now: Sequence[int]) -> None:
        """An event when a search finds a base's keyword index damaged, and one when a later
        search finds it rebuilt (each once: the bases announced are remembered)."""
        with self._damage_lock:
            announced = set(self._announced_damage)
            damaged = self._store.lexical_damage(sorted(announced | set(found_now)))
            found = [kb_id for kb_id in damaged if kb_id not in announced]
            healed = [kb_id for kb_id in announced if kb_id not in damaged]
            self._announced_damage.update(found)
            self._announced_damage.difference_update(healed)
        for kb_id in found:
            self._events.publish("knowledge_base", kb_id, keyword_index="damaged")
        for kb_id in healed:
            self._events.publish("knowledge_base", kb_id, keyword_index="rebuilt")

    # -- changes ---------------------------------------------------------------------------------
    def delete_document(
        self, kb: KnowledgeBase, document: DocumentRecord, *, caller: Caller | None = None
    ) -> None:
        """Rows first (one transaction), then the stored original; a blob that will not go
        is left for the orphan sweep at the next start, and the delete still succeeds. A file
        followed on its own is no longer followed (a folder's file comes back with the next
        pass unless it is deleted from the folder)."""
        source = self.source_of(kb, document)
        if source is not None and source.kind is SourceKind.FILE:
            self._store.remove_source(kb.id, source.id)
        else:
            self._store.delete_document(kb.id, document.id)
        if document.uploaded:
            with contextlib.suppress(OSError):
                self._originals.blobs.delete(document.id)
        self._events.publish("document", kb.id, document_id=document.id, state="deleted")
        self._access.audit(caller, "delete_document", f"document:{document.id}")

    def reindex(
        self,
        kb: KnowledgeBase,
        document: DocumentRecord | None = None,
        *,
        caller: Caller | None = None,
    ) -> int:
        """Index again one document, or every document of the base, in the background: an
        upload goes to the ingestion queue, folder documents wait for one pass over the base's
        folders (queued once, however many). The queue's workers run under ``serve``; without
        them the marked documents wait for the next ``sync``. Returns how many were marked."""
        documents = [document] if document is not None else self._store.list_documents(kb.id)
        target = f"document:{document.id}" if document is not None else f"kb:{kb.id}"
        self._access.audit(caller, "reindex", target)
        folder_documents = False
        for item in documents:
            self._store.set_document_state(kb.id, item.path, DocumentState.PENDING)
            if item.uploaded:
                admit(self._queue, kb.id, item.id)
            else:
                folder_documents = True
        if folder_documents:
            admit(self._queue, kb.id, None)
        return len(documents)

    def request_pass(self, kb: KnowledgeBase) -> None:
        """A pass over the base's folders, in the background (queued once however often it
        is asked for while it waits)."""
        admit(self._queue, kb.id, None)
