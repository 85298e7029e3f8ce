"""Request and response bodies of the REST API (they make the OpenAPI document)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from lorebase.fields import conditions_from_json
from lorebase.search.bounds import (
    MAX_LANGUAGE_CHARS,
    MAX_NEIGHBORS,
    MAX_PATH_PREFIX_CHARS,
    MAX_QUERY_CHARS,
    MAX_TOP_K,
)
from lorebase.search.query import RerankStatus, SearchRequest


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ChunkingIn(Strict):
    chunk_size: int = Field(1200, ge=200, le=4000)
    max_tokens: int = Field(320, ge=32, le=8192)
    overlap: int = Field(200, ge=0, le=2000)


class KnowledgeBaseIn(Strict):
    name: str = Field(min_length=1, max_length=64, pattern=r"^[^\x00-\x1f/]+$")
    description: str = Field("", max_length=2000)
    scope: Literal["global", "team", "personal"] = "personal"
    team: str | None = Field(None, max_length=64)
    chunking: ChunkingIn | None = None
    embedder: str | None = Field(
        None,
        max_length=64,
        description="The named embedder the base is made with (`GET /v1/embedders` lists "
        "them); default: the server's default. Kept for the base's life unless it is "
        "re-embedded (`POST /v1/knowledge-bases/{id}/reembed`).",
    )


class ReembedIn(Strict):
    embedder: str = Field(
        min_length=1,
        max_length=64,
        description="The named embedder to move the base to (it may be its current one: "
        "after its configuration changed, every vector is made again).",
    )


class KnowledgeBaseUpdate(Strict):
    description: str | None = Field(None, max_length=2000)
    chunking: ChunkingIn | None = None


class KnowledgeBaseOut(BaseModel):
    id: int
    name: str
    description: str
    scope: str
    team_id: int | None
    team: str | None = Field(None, description="The name of the team a team base belongs to.")
    shared: Literal["read", "write"] | None = Field(
        None,
        description="How you reach it when it is shared with you or your team (`read`, "
        "`write`: you may change its documents); null when you see it by its scope.",
    )
    owner: str | None
    state: str
    state_reason: str | None
    documents: int
    indexed: int
    pending: int
    failed: int
    chunks: int
    searchable: int = Field(description="Documents found by keyword: their chunks are written.")
    embedded: int = Field(description="Documents found by vector too: their chunks have vectors.")
    embedded_chunks: int
    bytes: int
    chunking: ChunkingIn
    embedding_identity: str | None = Field(
        description="The identity (model@digest/transform/dims) its searchable vectors have."
    )
    embedder: str = Field(
        description="The named embedder its vectors are made by and its queries embedded "
        "with; `default`: the server's own (a base made before named embedders)."
    )
    embedder_next: str | None = Field(
        description="The embedder the base is being re-embedded to; searches keep using "
        "`embedder` until every document has its new vectors, then switch at once. Null: none."
    )
    embedder_reachable: bool | None = Field(
        description="Whether `embedder` answered a probe in the last half minute (a base "
        "whose embedder does not answer is searched by keyword only); null: not checked."
    )
    embedder_problem: str | None = Field(
        description="Why `embedder` is not reachable (a host and a status, never a text)."
    )
    last_pass_finished_at: float | None
    progress_done: int = Field(0, description="Files a running pass has done.")
    progress_total: int = Field(0, description="Files a running pass goes over.")
    seconds_left: float | None = Field(
        None,
        description="The time a running pass has left, from its recent rate (chunks per "
        "second) and the chunks it still expects; null when no pass runs or its rate is "
        "still being measured.",
    )
    stale_documents: int = Field(
        0,
        description="Documents an older version of lorebase made (another extractor, "
        "chunker or keyword analysis, or made before versions were recorded): the next "
        "sync reads them again, and a server re-reads them in the background; vectors of "
        "unchanged chunk texts are reused.",
    )


class DocumentOut(BaseModel):
    id: str
    knowledge_base_id: int
    name: str
    kind: str
    size: int
    state: str
    reason: str | None
    chunks: int
    title: str | None
    page_count: int | None
    updated_at: float
    fields: dict[str, list[str]] | None = Field(
        None,
        description="What is known of the document, by field (`tags` — its own and those "
        "people set —, `author`, `title`, dates in ISO, `kind`, any key of its front matter "
        "or properties); null in listings.",
    )
    user_tags: list[str] | None = Field(
        None,
        description="Of `fields.tags`, those people set (`PATCH` removes these; the others "
        "come from the file); null in listings.",
    )


class DocumentPatch(Strict):
    """Tags people set on a document (a tag its file gives is changed in the file)."""

    add_tags: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(
        default_factory=list, max_length=50
    )
    remove_tags: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(
        default_factory=list, max_length=50
    )


class UploadOut(BaseModel):
    documents: list[DocumentOut]
    created: list[bool]


class SourceIn(Strict):
    path: str = Field(min_length=1, max_length=4096)


class SourceOut(BaseModel):
    id: int
    path: str
    label: str
    kind: str = "folder"  # "folder", or "file": a file added on its own


class SearchIn(Strict):
    """The REST spelling of :class:`~lorebase.search.query.SearchRequest`: the same fields
    (a test holds them together), but bases by id, and without what only evaluations set."""

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    knowledge_bases: list[Annotated[int, Field(ge=1, le=2**63 - 1)]] | None = Field(
        None, max_length=100
    )
    top_k: int = Field(10, ge=1, le=MAX_TOP_K)
    mode: Literal["hybrid", "keyword", "dense"] = "hybrid"
    rerank: bool = False
    document_ids: list[str] | None = Field(None, max_length=1000)
    neighbors: int = Field(0, ge=0, le=MAX_NEIGHBORS)
    path_prefix: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_PATH_PREFIX_CHARS,
        description="Only documents whose path as hits show it (the followed folder's name "
        "first: `docs/src/`) starts with this; case-sensitive.",
    )
    language: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_LANGUAGE_CHARS,
        description="Only source files in this programming language (`python`; "
        "case-insensitive: every passage of the document is code in it), or documents with "
        "passages in this natural language (an ISO 639-1 code: `de`, `es`, `zh`).",
    )
    collapse: bool = Field(
        True,
        description="One hit per document (the default): its best passage, with the "
        "document's other matching passages in `passages`; `top_k` counts documents. False: "
        "every matching passage a hit of its own.",
    )
    filter: dict[str, Any] | None = Field(
        None,
        description='Only documents whose fields meet every entry: `{"tags": "policy"}`, '
        '`{"author": ["Ann", "Bob"]}` (any of; a list field matches when any of its values '
        'does), `{"status": {"$ne": "draft"}}`, `{"date": {"$gte": "2025-01-01", "$lt": '
        '"2026"}}` (operators `$eq $in $ne $nin $gt $gte $lt $lte`; ranges over dates: '
        'YYYY, YYYY-MM, YYYY-MM-DD or ISO times); `{"$and": [{…}, {…}]}`: all of them. '
        "Fields: tags, author, title, date, created, "
        "modified, kind and any key of the documents' front matter or properties; an "
        "unknown one is refused (422) with the fields known.",
        examples=[{"tags": "policy", "date": {"$gte": "2025-01-01"}}],
    )

    def request(self) -> SearchRequest:
        """The search this body asks for (its bases, by id, are the caller's to resolve)."""
        fields = self.model_dump(exclude={"knowledge_bases", "filter"})
        if fields["document_ids"] is not None:
            fields["document_ids"] = tuple(fields["document_ids"])
        return SearchRequest(**fields, filters=tuple(conditions_from_json(self.filter)))


class StepScoreOut(BaseModel):
    score: float
    rank: int | None = Field(
        description="From 1; null for a dense score read to fuse a passage the dense arm did "
        "not return among its candidates."
    )


SCORES_DESCRIPTION = (
    "The hit's score and rank (from 1) in each step that saw it, keyed by step: `keyword` "
    "(BM25, higher is better, unbounded), `dense` (cosine similarity, -1 to 1), `fused` (both "
    "arms combined, 0 to 1), `rerank` (the reranker's own scale). A score compares only with "
    "scores of the same step."
)


class NeighborOut(BaseModel):
    chunk_id: str
    ordinal: int
    text: str


class PassageOut(BaseModel):
    """A matching passage: where it stands in its document, a snippet, its scores. A hit's
    document's other passages are these; a hit adds its document and text."""

    chunk_id: str
    trail: list[str]
    page: int | None = Field(description="The first page, slide or notebook cell it stands on.")
    page_end: int | None = Field(description="The last page, slide or cell, when it differs.")
    line: int | None = Field(description="Its first source line, or a spreadsheet's first row.")
    line_end: int | None = Field(description="Its last line or row, when it differs.")
    start: int
    end: int
    content_kind: str
    snippet: str
    highlights: list[list[int]] = Field(
        description="Where the question's words stand in the snippet: [start, end] character "
        "offsets, whole words in the passage's language, never stop words."
    )
    citation: str
    scores: dict[str, StepScoreOut] = Field(description=SCORES_DESCRIPTION)


class HitOut(PassageOut):
    knowledge_base: str
    knowledge_base_id: int
    document_id: str
    path: str
    title: str | None
    kind: str
    language: str | None
    symbol: str | None
    text: str
    before: list[NeighborOut]
    after: list[NeighborOut]
    passages: list[PassageOut] = Field(
        default_factory=list,
        description="The document's other matching passages, best first (at most 3; empty "
        "with `collapse: false`).",
    )
    fields: dict[str, list[str]] = Field(
        default_factory=dict,
        description="What is known of the document, by field: `tags` (its own and those "
        "people set), `author`, `title`, dates (`date`, `created`, `modified`: ISO), `kind` "
        "and any key of its front matter or properties.",
    )


class SearchOut(BaseModel):
    hits: list[HitOut]
    mode: str
    timings_ms: dict[str, float]
    warnings: list[str] = Field(
        description="How the search degraded, each `reason: text` (e.g. `embedder_unavailable`, "
        "`rerank_timeout`, `reranker_unavailable`, `reranker_refused`)."
    )
    notes: list[str] = Field(
        description="What is worth knowing and no fault, each `reason: text` "
        "(`rerank_skipped`: the first hit was clearly ahead, the reranker was not asked)."
    )
    rerank: RerankStatus | None = Field(
        description="What the rerank step did when the request asked for it: `reranked`, or "
        "the reason code of the note or warning saying why the fused order was kept; null when "
        "reranking was not asked for."
    )
    teams: dict[str, str] = Field(
        default_factory=dict,
        description="The team each team base among the hits belongs to, by the base's name (a "
        "base another team shared with you names its owners).",
    )
    no_answer: bool = Field(
        description="Nothing relevant was found: no passage matches a query term or is close "
        "enough in meaning (the relevance floor); `hits` is empty. Do not answer from it."
    )
    embedding_identities: dict[str, str] = Field(
        default_factory=dict,
        description="The embedding identity each knowledge base's vector ranking came from, by "
        "base id (bases embedded with different models are searched each with its own; a base "
        "searched by keyword only is absent).",
    )


class ChunkOut(BaseModel):
    chunk_id: str
    ordinal: int
    text: str
    trail: list[str]
    page: int | None
    line: int | None
    page_end: int | None = None
    content_kind: str = "prose"
    language: str | None = None
    tokens: int = 0
    embedded: bool | None = Field(
        None,
        description="Whether the index holds its vector (null in a re-chunk preview: nothing "
        "is stored).",
    )


class TextOut(BaseModel):
    document_id: str
    start: int
    text: str
    total_chars: int


class GrantIn(Strict):
    """Share a team base with one team or one user (give exactly one)."""

    team: str | None = Field(None, min_length=1, max_length=64)
    user: str | None = Field(None, min_length=1, max_length=64)
    access: Literal["read", "write"] = Field(
        "read", description="`write`: the grantees may change its documents too."
    )


class GrantOut(BaseModel):
    id: int
    knowledge_base_id: int
    grantee: Literal["team", "user"]
    name: str = Field(description="The team's or the user's name.")
    access: Literal["read", "write"]
    granted_by: str | None
    created_at: float


class NoteIn(Strict):
    """A note to write. Its length is checked against the server's limit
    (`LOREBASE_MAX_NOTE_CHARS`): longer answers 413 naming it."""

    text: str = Field(min_length=1, description="The note's text (plain text).")
    title: str | None = Field(
        None, max_length=200, description="A short title (default: the start of the text)."
    )


class NotePatch(Strict):
    """What an edit replaces (either or both); the note's previous title and text are kept
    as a version."""

    text: str | None = Field(None, min_length=1)
    title: str | None = Field(None, min_length=1, max_length=200)


class NoteOut(BaseModel):
    id: str = Field(description="The note's document id (searches cite it like any document).")
    knowledge_base_id: int
    title: str
    text: str | None = Field(None, description="Its text (null in listings).")
    state: str = Field(
        description="`indexed` once searchable (at once, unless the embedder "
        "is down: then found by keyword when its chunks are written)."
    )
    chunks: int
    updated_at: float
    created: bool | None = Field(
        None, description="On a write: false when the same title and text were there already."
    )


class NoteVersionOut(BaseModel):
    version: int
    title: str
    text: str
    author: str | None = Field(description="Who wrote the edit that replaced it.")
    replaced_at: float
