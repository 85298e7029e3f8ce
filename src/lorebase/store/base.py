"""The ``Store`` seam: the records a store keeps, and the roles it plays.

A backend plays every role; a consumer is typed with the roles it uses:

- :class:`Catalogue` — knowledge bases: create, find, delete; their settings, identity, state,
  progress and the folders they follow.
- :class:`Documents` — document records and their life cycle: indexed (with chunks and
  vectors, atomically), keyword-searchable while its vectors are made, failed, pending,
  touched, deleted, reset after a crash.
- :class:`Uploads` — uploaded files: create, find by content hash, list, sealed names.
- :class:`Notes` — the earlier texts of notes (a note is an upload a user writes; an edit
  keeps the text it replaces as a version).
- :class:`Grants` — a team base shared with another team or a user, read-only or read-write.
- :class:`Usage` — what model calls cost, one row per hour, base, user, model and role.
- :class:`LexicalIndex` — keyword (BM25) search.
- :class:`Vectors` — dense search, vector reuse by content, identity switches.
- :class:`Chunks` — hydration: chunks by id, a chunk's neighbours, a document's text.
- :class:`Fields` — what searches filter on: a document's fields and the tags people set.
- :class:`Metrics` — counts for monitoring.
- :class:`Portable` — one base read whole in one snapshot (an export), and one base written
  whole in one transaction (an import).

:class:`Store` is all of them plus ``close``. Every read and write is scoped by knowledge base:
a document or chunk id from another knowledge base finds nothing. A document's rows (document,
chunks, lexical rows, vectors) are written in one transaction, or in two (its chunks, then all
their vectors; see :class:`Documents`): a search never sees half a document, and replacing one
is atomic.

The roles are :class:`typing.Protocol` classes: a backend subclasses :class:`Store` (so a
type checker proves it complete); a consumer accepts anything that has the role's methods.
Importing this module loads neither numpy nor any backend.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from lorebase.settings import ChunkSettings
from lorebase.store.maintenance import Maintenance
from lorebase.store.states import (
    DocumentState,
    GrantAccess,
    KbState,
    Scope,
    SourceKind,
)

if TYPE_CHECKING:
    import numpy as np

    from lorebase.fields import Condition
    from lorebase.types import Box, Chunk, EmbedderIdentity, MetadataValue, Provenance
    from lorebase.usage import UsageRow


DOCUMENT_ID_BYTES = 16


def new_document_id() -> str:
    """A new document id: random, hex (what every backend stores and the API accepts)."""
    return secrets.token_hex(DOCUMENT_ID_BYTES)


# A knowledge base follows at most this many folders (files followed one by one not counted).
MAX_SOURCES = 16


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
    pending: int = 0
    searchable: int = 0  # documents whose chunks are written: found by keyword
    embedded: int = 0  # of those, the documents whose chunks have their vectors too
    embedded_chunks: int = 0
    state: KbState = KbState.PENDING
    state_reason: str | None = None
    pass_started_at: float | None = None
    pass_finished_at: float | None = None
    progress_done: int = 0
    progress_total: int = 0
    team_id: int | None = None
    # The named embedder its vectors are made with (None: the process's own), and the one it
    # is being re-embedded to (None: none); see lorebase.embed.registry.
    embedder: str | None = None
    embedder_next: str | None = None
    # The pace of a running pass, as it last recorded it: chunks done per second lately (None
    # while it is measured) and the chunks it still expects to do (None: not told).
    progress_rate: float | None = None
    progress_left: int | None = None


@dataclass(frozen=True, slots=True)
class Source:
    """A folder a knowledge base follows (``label`` prefixes its documents' paths), or one
    file (``kind`` FILE; its one document's path is the label)."""

    id: int
    kb_id: int
    path: str
    label: str
    created_at: float
    kind: SourceKind = SourceKind.FOLDER


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
    source_id: int | None = None  # the folder it came from; None for files added directly
    display_name: str | None = None  # uploads: the file's name, sealed (encrypted) by the caller
    container: str | None = None  # a part (an attachment): the path of the file holding it
    metadata: Mapping[str, MetadataValue] = field(default_factory=dict)  # headers, properties
    versions: str | None = None  # of what made it (see RunningVersions); None: not recorded
    regions: tuple[Region, ...] = ()  # where OCR read its text (scans, images)


@dataclass(frozen=True, slots=True)
class Region:
    """Where a span of a document's text (``start``..``end``, offsets into its text) stands on
    page ``page``: the ``boxes`` of its lines as fractions of the page (from the top left),
    as OCR gives them. A passage read by OCR is marked on its page by these."""

    page: int
    start: int
    end: int
    boxes: tuple[Box, ...]


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
    source_id: int | None = None
    display_name: str | None = None
    container: str | None = None
    metadata: Mapping[str, MetadataValue] = field(default_factory=dict)
    versions: str | None = None  # of what made it (see RunningVersions); None: not recorded

    @property
    def uploaded(self) -> bool:
        """An uploaded file (its original is an encrypted blob, its name sealed), as opposed
        to a file of a folder, whatever its path looks like."""
        return self.display_name is not None


@dataclass(frozen=True, slots=True)
class RunningVersions:
    """The versions a document made now records, as one compact key per document kind
    (``x2.c2.a2``: its extractor's, the chunker's and the keyword analysis's; built in
    :mod:`lorebase.ingest.versions`), and ``other``'s for a kind no format gives. A settled
    document that recorded another key, or none (made before versions were recorded), is
    stale: the next pass reads it again."""

    by_kind: Mapping[str, str]
    other: str

    def of(self, kind: str) -> str:
        """The key a document of ``kind`` records when made now."""
        return self.by_kind.get(kind, self.other)

    def stale(self, document: DocumentRecord) -> bool:
        """Whether an indexed or failed document was made by other versions. Pure."""
        settled = document.state in (DocumentState.INDEXED, DocumentState.FAILED)
        return settled and document.versions != self.of(document.kind)


@dataclass(frozen=True, slots=True)
class StoredChunk:
    """A chunk as search hydrates it: its text and where it comes from."""

    id: str
    ordinal: int
    text: str
    tokens: int
    provenance: Provenance


Scored = list[tuple[str, float]]  # (chunk id, score), best first


@dataclass(frozen=True, slots=True)
class DocumentVectors:
    """A document's vectors for its stored chunks (``vectors[i]`` belongs to ``chunks[i]``)."""

    document_id: str
    chunks: Sequence[Chunk]
    vectors: np.ndarray


@dataclass(frozen=True, slots=True)
class ExportedDocument:
    """One document of a base as an export reads it (:meth:`Portable.read_kb`): its record,
    its extracted text (None: it has none), its chunks in order (``Chunk.id`` is the id the
    store keeps it under; ``embed_text`` is empty: the store does not keep it), the ordinal of
    each chunk's section (a run of consecutive chunks sharing a heading trail) and the chunks'
    vectors of the base's identity (``vectors[i]`` belongs to ``chunks[i]``; None when some
    chunk has none)."""

    record: DocumentRecord
    text: str | None
    chunks: Sequence[Chunk]
    sections: Sequence[int]
    vectors: np.ndarray | None
    tags: Sequence[str] = ()  # the tags people set on it (its own are in its metadata)
    regions: Sequence[Region] = ()  # where OCR read its text


@dataclass(frozen=True, slots=True)
class ImportedSource:
    """A folder or file an imported base follows; ``exported_id`` is the id its documents
    name as their ``source_id`` in what is imported."""

    path: str
    label: str
    kind: SourceKind
    created_at: float
    exported_id: int


@dataclass(frozen=True, slots=True)
class ImportedBase:
    """The base an import makes: its settings, the named ``embedder`` it is made with (None:
    the process's own), the ``identity`` of the vectors its documents bring (None: none), and
    the folders and files it follows."""

    name: str
    description: str
    scope: Scope
    owner: str | None
    team_id: int | None
    chunk_settings: ChunkSettings
    embedder: str | None
    identity: EmbedderIdentity | None
    sources: Sequence[ImportedSource] = ()
    created_at: float | None = None
    pass_finished_at: float | None = None


@dataclass(frozen=True, slots=True)
class ImportedDocument:
    """One document an import writes: ``fields`` are a record's (the names of
    :class:`DocumentRecord`'s fields; the importing store writes those it knows): ``id`` the
    id to write it under, ``source_id`` the *exported* id of its source (None: none). Its
    extracted text (None: none), its chunks in order (each stored under
    :func:`lorebase.store.stored_chunk_id` of the document and ``Chunk.id``) and their vectors
    of :attr:`ImportedBase.identity` (None: found by keyword only until a pass embeds them)."""

    fields: Mapping[str, Any]
    text: str | None
    chunks: Sequence[Chunk]
    vectors: np.ndarray | None
    tags: Sequence[str] = ()  # the tags people set on it
    regions: Sequence[Region] = ()  # where OCR read its text


class KbSnapshot(Protocol):
    """One base as a single read transaction sees it: what an export reads."""

    kb: KnowledgeBase
    identity: EmbedderIdentity | None
    """The identity of the base's vectors (its ``identity_key``, resolved), None: none."""

    def sources(self) -> list[Source]: ...

    def documents(self) -> Iterator[ExportedDocument]:
        """Every document of the base (every state), in path order, read in batches."""
        ...


class Catalogue(Protocol):
    """The knowledge bases: their rows, settings, embedding identity, state and progress of a
    pass, and the folders (sources) they follow."""

    def snapshot(self) -> AbstractContextManager[object]:
        """The reads inside, on this thread, as one snapshot where the backend makes that
        cheap (SQLite: one read transaction); each read its own elsewhere (PostgreSQL: a
        search would hold a pooled connection while its question embeds). For reads only: a
        write inside would read what the snapshot holds."""
        ...

    def create_kb(
        self,
        name: str,
        *,
        description: str = "",
        scope: Scope = Scope.PERSONAL,
        owner: str | None = None,
        chunk_settings: ChunkSettings | None = None,
        team_id: int | None = None,
        embedder: str | None = None,
    ) -> KnowledgeBase:
        """Create a knowledge base (``embedder``: the named embedder it is made with; None:
        the process's own); ``Conflict`` when the name is taken in its scope: among the
        global bases, among the team's bases, among the owner's personal bases (no owner: the
        administrators', counted as one owner). The message names only that scope's base."""
        ...

    def get_kb(self, name: str, *, totals: bool = True) -> KnowledgeBase:
        """By name, for the operator (who sees every base); ``NotFound`` when there is none,
        ``InvalidInput`` (listing their ids and scopes) when several bases of different scopes
        or owners share the name. Counting the totals reads every document
        row of the base: hot paths that need only the base itself (a search) pass
        ``totals=False`` and get zeros."""
        ...

    def kbs_named(self, name: str, *, totals: bool = False) -> list[KnowledgeBase]:
        """Every base of this name, oldest first (a name is unique only within a scope: among
        the global bases, one team's bases, one owner's personal bases)."""
        ...

    def get_kb_by_id(self, kb_id: int, *, totals: bool = True) -> KnowledgeBase: ...

    def list_kbs(self, *, totals: bool = True) -> list[KnowledgeBase]: ...

    def delete_kb(self, kb_id: int) -> None:
        """Delete a knowledge base and every row that belongs to it."""
        ...

    def set_kb_description(self, kb_id: int, description: str) -> None: ...

    def update_kb_chunking(self, kb_id: int, settings: ChunkSettings) -> None:
        """New chunking settings: every document becomes stale for the next pass."""
        ...

    def set_kb_identity(self, kb_id: int, identity: EmbedderIdentity) -> None:
        """Record the embedding identity the knowledge base's vectors are made with."""
        ...

    def switch_kb_embedder(
        self, kb_id: int, identity: EmbedderIdentity, embedder: str | None
    ) -> bool:
        """In one transaction, unless an indexed document holds vectors of another identity
        (then nothing changes and False is returned): the base answers from now on with
        ``identity``, made by the named ``embedder`` (None: the process's own); a re-embed to
        that name is done (one asked for since, to another name, stays asked for); the
        vectors of other identities go. While a named base is not being re-embedded, writes
        of vectors of another identity than its own are refused (``Conflict``)."""
        ...

    def set_kb_embedder_target(self, kb_id: int, embedder: str | None) -> None:
        """Re-embed the base with the named ``embedder`` (None: no re-embed): its passes make
        vectors with it while searches keep using the current ones until the switch."""
        ...

    def set_kb_state(
        self,
        kb_id: int,
        state: KbState,
        reason: str | None = None,
        *,
        started: bool = False,
        finished: bool = False,
    ) -> None:
        """Record the base's state (and the start or end time of a pass)."""
        ...

    def set_kb_progress(
        self,
        kb_id: int,
        done: int,
        total: int,
        *,
        rate: float | None = None,
        left: int | None = None,
    ) -> None:
        """Record where a running pass is: files ``done`` of ``total``, its recent ``rate``
        (chunks per second; None while measured) and the chunks ``left`` it expects."""
        ...

    def add_source(self, kb_id: int, path: str, kind: SourceKind = SourceKind.FOLDER) -> Source:
        """Follow a folder or a file (an absolute path). ``Conflict`` when it is, contains or
        lies inside one the base already follows; ``InvalidInput`` past ``MAX_SOURCES``
        folders (files do not count). A file's label is its name (made unique), and a
        document added before at that path, neither uploaded nor from a source, becomes the
        file's (so it is followed from now on)."""
        ...

    def list_sources(self, kb_id: int) -> list[Source]: ...

    def remove_source(self, kb_id: int, source_id: int) -> int:
        """Stop following a folder or file and drop its documents (one transaction); returns
        how many documents were dropped."""
        ...


class Documents(Protocol):
    """Document records and their life cycle: ``pending`` (search keeps answering from the
    indexed version), then ``indexed`` with exactly its chunks and vectors or ``failed`` with a
    reason, each switch atomic; touched when only the modification time changed; deleted with
    all their rows; reset to ``pending`` after a crash.

    A pass writes a document in two steps: its chunks first (``replace_document`` with
    ``awaiting_vectors``: state ``embedding``, found by keyword, no vectors, no identity),
    then their vectors (:meth:`Vectors.add_vectors`: ``indexed``). Each step is atomic; a
    document between the two is counted by :meth:`Vectors.count_keyword_only`."""

    def get_document(self, kb_id: int, path: str) -> DocumentRecord | None: ...

    def get_document_by_id(self, kb_id: int, document_id: str) -> DocumentRecord:
        """``NotFound`` when the id is unknown *or belongs to another knowledge base*."""
        ...

    def find_document(self, document_id: str) -> DocumentRecord | None:
        """A document by id in any base — for callers that check visibility themselves."""
        ...

    def find_document_ids(self, prefix: str, limit: int = 2) -> list[str]:
        """Up to ``limit`` ids (in order) of documents in any base whose id starts with
        ``prefix`` — for callers that check visibility themselves."""
        ...

    def list_documents(
        self, kb_id: int, state: DocumentState | None = None
    ) -> list[DocumentRecord]: ...

    def replace_document(
        self,
        kb_id: int,
        document: NewDocument,
        chunks: Sequence[Chunk],
        vectors: np.ndarray | None,
        identity: EmbedderIdentity | None,
        settings_key: str,
        *,
        awaiting_vectors: bool = False,
    ) -> DocumentRecord:
        """Atomically make ``document`` (by path) indexed with exactly these chunks and
        vectors (``vectors[i]`` belongs to ``chunks[i]``; None when there is no embedder),
        replacing whatever was stored for that path (the old chunks go with their vectors).
        The vectors can then be found by ``(chunk.content_hash, identity)``
        (:meth:`Vectors.cached_vectors`). The document keeps its id when replaced.

        ``awaiting_vectors`` (``vectors`` must be None): the first step of a pass — the
        chunks are searchable by keyword now, the document stays ``embedding`` (no identity)
        until :meth:`Vectors.add_vectors` gives them their vectors."""
        ...

    def record_failure(self, kb_id: int, document: NewDocument, reason: str) -> DocumentRecord:
        """Atomically mark the path ``failed`` with a reason, dropping any chunks it had."""
        ...

    def mark_pending(self, kb_id: int, documents: Sequence[NewDocument]) -> None:
        """Record that these paths need work (state ``pending``) without touching what is
        indexed for them, so search keeps answering from the old version."""
        ...

    def set_document_state(self, kb_id: int, path: str, state: DocumentState) -> None: ...

    def touch_document(self, kb_id: int, document_id: str, mtime: float | None) -> None:
        """Same content, new modification time: remember it so the file is not read again."""
        ...

    def delete_document(self, kb_id: int, document_id: str) -> None:
        """Delete a document and all its rows; ``NotFound`` when not in this base."""
        ...

    def parts_of(self, kb_id: int, container: str) -> list[DocumentRecord]:
        """The documents held inside the file at path ``container`` (a mail's attachments),
        in path order."""
        ...

    def count_stale(
        self, running: RunningVersions, kb_ids: Sequence[int] | None = None
    ) -> dict[int, int]:
        """How many indexed or failed documents of these bases (every base: None) were made
        by other versions than ``running`` or recorded none, by base (a base without any is
        left out)."""
        ...

    def list_stale(
        self, running: RunningVersions, limit: int, kb_ids: Sequence[int] | None = None
    ) -> list[DocumentRecord]:
        """Up to ``limit`` of the documents :meth:`count_stale` counts, by base, then path."""
        ...

    def delete_documents(self, kb_id: int, document_ids: Sequence[str]) -> None:
        """Delete documents and all their rows in one transaction (the parts a document
        holds go with it)."""
        ...

    def reset_unfinished(self, *, uploads: bool = True) -> int:
        """Documents left in ``extracting``/``chunking``/``embedding`` (a crash) go back to
        ``pending``; returns how many. Call only while holding the ingestion lock.
        ``uploads=False``: files of folders only (over a shared store an upload in flight is
        another process's job, held under its lease)."""
        ...


class Uploads(Protocol):
    """Uploaded files: a pending document per upload (its bytes live in the blob store under
    the document's id), found again by content hash, listed across bases, with a sealed
    (encrypted) display name."""

    def create_upload(
        self, kb_id: int, document: NewDocument, document_id: str | None = None
    ) -> DocumentRecord:
        """A pending document for an uploaded file; ``document.path`` must be unique in the
        base. ``document_id``: the id its original is already stored under (the blob is
        written first, so a crash never leaves a row without its bytes); a new id when None.
        ``Conflict`` when the path or the id is taken, or the base already holds these bytes
        (two uploads of one file at once become one document)."""
        ...

    def find_by_hash(self, kb_id: int, content_hash: str) -> DocumentRecord | None:
        """A document of this base with exactly these bytes (upload de-duplication)."""
        ...

    def list_uploads(self, state: DocumentState | None = None) -> list[tuple[int, str]]:
        """``(kb_id, document_id)`` of the uploaded documents of every base, in upload order."""
        ...

    def set_display_name(self, kb_id: int, document_id: str, sealed: str) -> None:
        """Replace an upload's sealed display name (data-key rotation)."""
        ...


@dataclass(frozen=True, slots=True)
class NoteVersion:
    """An earlier text of a note: what an edit replaced, numbered from 1 in the order kept,
    with who wrote the edit that replaced it (None: the operator) and when."""

    document_id: str
    version: int
    title: str
    text: str
    author: str | None
    created_at: float


class Notes(Protocol):
    """The earlier versions of notes (their document rows are uploads'; see
    :mod:`lorebase.service.notes`). Deleted with their document."""

    def keep_note_version(
        self, kb_id: int, document_id: str, title: str, text: str, author: str | None
    ) -> NoteVersion:
        """Keep ``title`` and ``text`` as the next version of the note (``NotFound`` when the
        document is not in this base)."""
        ...

    def note_versions(self, kb_id: int, document_id: str) -> list[NoteVersion]:
        """The kept versions of a note, oldest first (none for another base's document)."""
        ...

    def every_note_version(self) -> list[NoteVersion]:
        """Every kept version of every note (a data-key rotation seals them again)."""
        ...

    def replace_note_version(self, document_id: str, version: int, title: str, text: str) -> None:
        """Store another title and text (sealed again) for one kept version."""
        ...


class Grantee(StrEnum):
    """Whom a base is shared with: a team (its members) or one user."""

    TEAM = "team"
    USER = "user"


@dataclass(frozen=True, slots=True)
class Grant:
    """A base shared with a team or a user (by account id), and who shared it."""

    id: int
    kb_id: int
    grantee: Grantee
    grantee_id: int
    access: GrantAccess
    granted_by: str | None
    created_at: float


class Grants(Protocol):
    """Bases shared beyond their scope; gone with their base."""

    def grant(
        self,
        kb_id: int,
        grantee: Grantee,
        grantee_id: int,
        access: GrantAccess,
        granted_by: str | None,
    ) -> Grant:
        """Share the base (again: the access given replaces the one before); ``NotFound``
        for a base that does not exist."""
        ...

    def revoke_grant(self, kb_id: int, grant_id: int) -> Grant:
        """End a grant of this base (``NotFound`` when it has none of that id)."""
        ...

    def grants(self, kb_id: int) -> list[Grant]:
        """The base's grants, in the order they were made."""
        ...

    def shared_with(self, user_id: int, team_ids: Sequence[int]) -> dict[int, GrantAccess]:
        """The bases shared with the user or any of these teams, with the most each grant
        of them allows (write over read)."""
        ...


class Usage(Protocol):
    """Usage accounting in aggregate (see :mod:`lorebase.usage`); kept after its base goes."""

    def add_usage(self, rows: Sequence[UsageRow]) -> None:
        """Add each row's counts to its bucket's row (made when missing), in one transaction."""
        ...

    def usage(self, since: float | None = None, user: str | None = None) -> list[UsageRow]:
        """The counts from the hour holding ``since`` on (of ``user``'s calls only, when
        given), summed per base, user, model and role (``key.hour``: the first hour counted),
        the most tokens first."""
        ...


class LexicalIndex(Protocol):
    """Keyword search over the indexed chunks of some bases."""

    def keyword_search(
        self,
        kb_ids: Sequence[int],
        query: str,
        limit: int,
        document_ids: Sequence[str] | None = None,
    ) -> Scored:
        """BM25 over the lexical index. ``query`` is raw user text: the store escapes it (no
        FTS syntax injection) and OR-joins its terms. Higher score is better."""
        ...

    def keyword_ceiling(self, kb_ids: Sequence[int], query: str) -> float:
        """The most BM25 a chunk of these bases could score for ``query``: every query term's
        idf times ``k1 + 1`` (:func:`lorebase.store.terms.bm25_ceiling`), with the statistics
        :meth:`keyword_search` ranks by (the largest over bases ranked apart). No hit scores
        more. A search judges keyword evidence as a share of it (see
        :mod:`lorebase.search.floor`); 0 when the query has no searchable term."""
        ...

    def lexical_damage(self, kb_ids: Sequence[int]) -> dict[int, str]:
        """The bases among ``kb_ids`` whose keyword index was found damaged and is being
        rebuilt, each with why (content-free): their keyword search finds nothing until then.
        A backend whose index lives in its database has none."""
        ...


class Vectors(Protocol):
    """Chunk vectors, kept per embedding identity and never mixed across two: dense search,
    the reuse cache keyed by chunk content, and the vectors of a switch of identity (made by
    :meth:`Catalogue.switch_kb_embedder`, which purges the others)."""

    def dense_search(
        self,
        kb_ids: Sequence[int],
        identity: EmbedderIdentity,
        vector: np.ndarray,
        limit: int,
        document_ids: Sequence[str] | None = None,
    ) -> Scored:
        """Inner product of a unit query vector against the vectors of this identity."""
        ...

    def dense_scores(
        self,
        kb_ids: Sequence[int],
        identity: EmbedderIdentity,
        vector: np.ndarray,
        chunk_ids: Sequence[str],
    ) -> dict[str, float]:
        """The inner product of a unit query vector with each of these chunks' vectors of this
        identity, as :meth:`dense_search` scores them: what a search fills in for the keyword
        arm's candidates the dense arm did not return. A chunk outside ``kb_ids``, or without
        a vector of this identity, is left out."""
        ...

    def cached_vectors(
        self, identity: EmbedderIdentity, content_hashes: Sequence[str]
    ) -> dict[str, np.ndarray]:
        """Vectors already computed for these chunk content hashes under this identity, as
        stored (a backend may keep them quantised: SQLite's come back within one int8 step).

        Found at least while a stored chunk with that content holds one, in any base: the
        pipeline asks before it replaces a document's chunks, so an edited document reuses
        the vectors of its unchanged chunks. A backend may remember more (PostgreSQL keeps a
        cache keyed by content that outlives the chunks)."""
        ...

    def add_vectors(
        self,
        kb_id: int,
        document_id: str,
        chunks: Sequence[Chunk],
        vectors: np.ndarray,
        identity: EmbedderIdentity,
    ) -> None:
        """Vectors for a document's stored chunks (exactly these, or ``Conflict``), and the
        document ``indexed`` under ``identity``, in one transaction: the second step of a
        pass (its chunks were written ``awaiting_vectors``), or vectors of another identity
        for unchanged chunks, kept beside the current ones until the base switches identity
        (search never mixes two). ``NotFound`` when the document is gone."""
        ...

    def add_vectors_many(
        self, kb_id: int, documents: Sequence[DocumentVectors], identity: EmbedderIdentity
    ) -> list[str]:
        """:meth:`add_vectors` for several documents in one transaction (the second write of
        a pass, for one embedding batch). A document gone, or whose chunks changed, since its
        chunks were written is left as it is: the vectors belonged to what is gone. Returns
        the ids of the documents written."""
        ...

    def count_keyword_only(self, kb_ids: Sequence[int]) -> int:
        """How many documents of these bases are searchable by keyword but have no vectors:
        their chunks are written and their vectors not yet (a pass still embedding, or
        stopped before it could), or were written by a pass without an embedder."""
        ...


class Chunks(Protocol):
    """Reading what was indexed: chunks by id (search hits), the chunks around one, and a
    document's extracted text."""

    def get_chunks(self, kb_ids: Sequence[int], chunk_ids: Sequence[str]) -> list[StoredChunk]:
        """Hydrate chunks, in the order asked; ids outside ``kb_ids`` are left out."""
        ...

    def chunk_documents(self, kb_ids: Sequence[int], chunk_ids: Sequence[str]) -> dict[str, str]:
        """The document of each of these chunks (ids outside ``kb_ids`` are left out): what a
        search groups its candidates by before it reads any text."""
        ...

    def neighbors(self, kb_ids: Sequence[int], chunk_id: str, window: int) -> list[StoredChunk]:
        """The chunk and up to ``window`` chunks each side of it in its document, in order."""
        ...

    def document_chunks(
        self, kb_id: int, document_id: str, start: int, limit: int
    ) -> list[StoredChunk]:
        """A document's chunks in order, from ordinal ``start``, at most ``limit`` (what the
        index holds of it); ``NotFound`` when the document is not in this base."""
        ...

    def document_text(self, kb_id: int, document_id: str) -> str:
        """The stored extracted text of a document (chunk offsets index into it)."""
        ...

    def matching_documents(
        self,
        kb_ids: Sequence[int],
        *,
        path_prefix: str | None = None,
        language: str | None = None,
        conditions: Sequence[Condition] = (),
    ) -> Sequence[str]:
        """The ids (in order) of the documents of these bases whose path as stored (what a
        hit's provenance shows, e.g. ``folder/src/x.py``) starts with ``path_prefix``
        (case-sensitive), whose indexed chunks are all code in ``language``
        (case-insensitive: source files in it, not pages with fenced examples), and whose
        fields meet every one of ``conditions`` (see :mod:`lorebase.fields`); None: no such
        condition. What a search filter resolves to before both arms run; a store may give the
        same (immutable) sequence again while the bases have not changed, and the arms may keep
        what they derive from it (see :mod:`lorebase.store.restriction`)."""
        ...


class Regions(Protocol):
    """Where OCR read a document's text, for marking a passage on its page."""

    def regions(self, kb_id: int, document_id: str, page: int, start: int, end: int) -> list[Box]:
        """The boxes, on page ``page``, of the document's OCR-read text overlapping
        ``start``..``end`` (a passage's offsets), in reading order; none when that page was
        not read by OCR or the document is not in this base."""
        ...


class Fields(Protocol):
    """The fields of documents a search filters on (:mod:`lorebase.fields`): those a reading
    gives (written with the document) and the tags users set."""

    def field_names(self, kb_ids: Sequence[int]) -> list[str]:
        """The fields some document of these bases has, sorted."""
        ...

    def document_fields(
        self, kb_ids: Sequence[int], document_ids: Sequence[str]
    ) -> dict[str, dict[str, list[str]]]:
        """Each of these documents' fields (as given, not folded) by field name, the tags
        users set merged into ``tags``; a document without any is left out."""
        ...

    def user_tags(self, kb_id: int, document_id: str) -> list[str]:
        """The tags people set on a document (not those its file gives), sorted; none for a
        document not in this base."""
        ...

    def tag_document(
        self, kb_id: int, document_id: str, add: Sequence[str], remove: Sequence[str]
    ) -> list[str]:
        """Set and remove tags users set on a document; the tags users set on it now,
        sorted. ``NotFound`` when the document is not in this base; ``InvalidInput`` when a
        tag to remove comes from the document itself (its front matter or properties)."""
        ...


class Metrics(Protocol):
    """Counts over every base, for monitoring."""

    def count_documents_by_state(self) -> dict[DocumentState, int]:
        """How many documents are in each state, over every base."""
        ...


class Portable(Protocol):
    """A base read whole, in one snapshot (an export), and written whole, in one transaction
    (an import): all of it or nothing."""

    def read_kb(self, kb_id: int) -> AbstractContextManager[KbSnapshot]:
        """The base as one read transaction sees it, for the length of the ``with`` block;
        ``NotFound`` when there is no such base."""
        ...

    def taken_document_ids(self, document_ids: Sequence[str]) -> set[str]:
        """Those of these ids that a document of any base has."""
        ...

    def import_kb(
        self,
        base: ImportedBase,
        documents: Iterable[ImportedDocument],
        *,
        replacing: int | None = None,
    ) -> KnowledgeBase:
        """Make ``base`` with its sources and ``documents`` (consumed inside the
        transaction: anything raised while they are read undoes all of it), in one write
        transaction; ``replacing``: the id of a base deleted in that same transaction (its
        name freed for this one). A document's state, text, chunks, vectors and the columns of
        its record the store knows are written as given (its identity is ``base.identity``
        when it brings vectors, else none). ``Conflict`` when the name is taken in the base's
        scope or two documents share a path or an id; nothing is written then."""
        ...


class Store(
    Catalogue,
    Documents,
    Uploads,
    Notes,
    Grants,
    Usage,
    LexicalIndex,
    Vectors,
    Chunks,
    Fields,
    Regions,
    Metrics,
    Portable,
    Maintenance,
    Protocol,
):
    """Every role, and ``close``: what a backend implements (SQLite, PostgreSQL) and what the
    composition root holds."""

    @property
    def location(self) -> str:
        """Where the rows live, for people: a file, or a database's URL without its password."""
        ...

    def close(self) -> None: ...
