"""Documents and what is read from them: listing, text, surrounding chunks, search, the agent
tools and chat over them, deleting and reindexing."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import TYPE_CHECKING

from lorebase.accounts.access import Caller
from lorebase.errors import NotFound, Overloaded
from lorebase.search.query import Mode, SearchRequest, SearchResponse
from lorebase.service.bases import Bases
from lorebase.store.base import DocumentRecord, DocumentState, KnowledgeBase, StoredChunk

if TYPE_CHECKING:
    from lorebase.agent.chat import ChatClient
    from lorebase.agent.tools import ToolBox

RETRY_AFTER_SECONDS = 5


class Documents(Bases):
    def documents(
        self, kb: KnowledgeBase | str, state: DocumentState | None = None
    ) -> list[DocumentRecord]:
        return self.store.list_documents(self._base(kb).id, state)

    def document_in(self, kb: KnowledgeBase | str, document_id: str) -> DocumentRecord:
        """A document of this base by id (``NotFound`` for an id of another base)."""
        return self.store.get_document_by_id(self._base(kb).id, document_id)

    def text(self, kb: KnowledgeBase | str, document_id: str) -> str:
        """The whole extracted text of a document (chunk offsets index into it)."""
        return self.store.document_text(self._base(kb).id, document_id)

    def read(
        self, kb: KnowledgeBase | str, document_id: str, start: int = 0, max_chars: int = 20_000
    ) -> str:
        """A bounded window of a document's extracted text."""
        return self.text(kb, document_id)[start : start + max_chars]

    def neighbors(
        self, kb: KnowledgeBase | str, chunk_id: str, window: int = 1
    ) -> list[StoredChunk]:
        """The chunk and up to ``window`` chunks each side of it in its document, in order."""
        return self.store.neighbors([self._base(kb).id], chunk_id, window)

    def observe_embedding(self, observer: Callable[[str, float], None]) -> None:
        """Call ``observer(kind, seconds)`` after each batch the embedder answers (metrics)."""
        if self.embedder is not None:
            self.embedder.observe_batches(observer)

    def documents_by_state(self) -> dict[str, int]:
        """How many documents are in each state, over every base (metrics)."""
        counts = self.store.count_documents_by_state()
        return {state.value: count for state, count in counts.items()}

    # -- search --------------------------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        kb: str | Sequence[str] | None = None,
        top_k: int = 10,
        mode: Mode | str = Mode.HYBRID,
        rerank: bool = False,
        document_ids: Sequence[str] | None = None,
        neighbors: int = 0,
        fusion: str = "rrf",
        caller: Caller | None = None,
    ) -> SearchResponse:
        """Hybrid (or one-arm) search over the named bases; with none named, over every base
        the caller may see."""
        names = (kb,) if isinstance(kb, str) else tuple(kb or ())
        if caller is not None:
            if names:
                names = tuple(self.kb(name, caller, totals=False).name for name in names)
            else:
                names = tuple(b.name for b in self.knowledge_bases(caller, totals=False))
                if not names:
                    raise NotFound("you can see no knowledge base yet; create one first")
        request = SearchRequest(
            query=query,
            knowledge_bases=names,
            top_k=top_k,
            mode=Mode(mode) if mode in tuple(Mode) else mode,  # type: ignore[arg-type]
            rerank=rerank,
            document_ids=tuple(document_ids) if document_ids is not None else None,
            neighbors=neighbors,
            fusion=fusion,
        )
        return self.searcher.search(request)

    # -- agents ----------------------------------------------------------------------------------
    def toolbox(
        self,
        caller: Caller | None = None,
        profile: str | None = None,
        only: Collection[int] | None = None,
    ) -> ToolBox:
        """The agent tools over the bases the caller may see (and, with a profile, only the
        profile's bases; with ``only``, only those base ids: the bases switched on for one
        conversation); without a caller and profile, every base, including later ones."""
        from lorebase.agent.profiles import Profiles
        from lorebase.agent.tools import ToolBox

        names: set[str] | None = None
        if caller is not None:
            names = {kb.name for kb in self.knowledge_bases(caller, totals=False)}
        if profile is not None:
            wanted = set(Profiles(self.settings.data_dir).get(profile).knowledge_bases)
            names = wanted if names is None else names & wanted
        if only is not None:
            chosen = {kb.name for kb in self.knowledge_bases(caller, totals=False) if kb.id in only}
            names = chosen if names is None else names & chosen
        return ToolBox(self, names, upload_names=self.upload_name)  # type: ignore[arg-type]

    def chat_client(
        self,
        *,
        url: str | None = None,
        model: str | None = None,
        local_hosts: Iterable[str] = (),
        allow_cloud: bool | None = None,
    ) -> ChatClient:
        """A client for the configured chat model (options override the settings), behind the
        locality gate: knowledge-base content goes only to a local endpoint unless allowed."""
        from lorebase.agent.chat import ChatClient, ChatSettings
        from lorebase.agent.gate import LocalityGate

        chat = self.settings.chat
        gate = LocalityGate.from_config(chat, local_hosts=local_hosts, allow_cloud=allow_cloud)
        return ChatClient(ChatSettings.from_config(chat, url=url, model=model), gate)

    # -- changes ---------------------------------------------------------------------------------
    def delete_document(
        self, kb: KnowledgeBase, document: DocumentRecord, *, caller: Caller | None = None
    ) -> None:
        """Rows first (one transaction), then the stored original; a blob that will not go
        is left for the orphan sweep at the next start, and the delete still succeeds."""
        self.store.delete_document(kb.id, document.id)
        if document.uploaded:
            with contextlib.suppress(OSError):
                self.blobs.delete(document.id)
        self.events.publish("document", kb.id, document_id=document.id, state="deleted")
        self.audit(caller, "delete_document", f"document:{document.id}")

    def reindex(self, kb: KnowledgeBase, document: DocumentRecord | None = None) -> int:
        """Index again one document, or every document of the base, in the background: an
        upload goes to the ingestion queue, folder documents wait for one pass over the base's
        folders (queued once, however many). Returns how many documents were marked."""
        documents = [document] if document is not None else self.store.list_documents(kb.id)
        folder_documents = False
        for item in documents:
            self.store.set_document_state(kb.id, item.path, DocumentState.PENDING)
            if item.uploaded:
                self._admit(kb.id, item.id)
            else:
                folder_documents = True
        if folder_documents:
            self._admit(kb.id, None)
        return len(documents)

    def request_pass(self, kb: KnowledgeBase) -> None:
        """A pass over the base's folders, in the background (queued once however often it
        is asked for while it waits)."""
        self._admit(kb.id, None)

    def _admit(self, kb_id: int, document_id: str | None) -> None:
        if not self.queue.admit(kb_id, document_id):
            raise Overloaded(
                "the ingestion queue is full; what was asked for is recorded and will be done, "
                "or retry later",
                RETRY_AFTER_SECONDS,
            )
