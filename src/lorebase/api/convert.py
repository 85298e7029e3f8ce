"""Library values to API bodies."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

from lorebase.api.schemas import (
    ChunkingIn,
    DocumentOut,
    HitOut,
    KnowledgeBaseOut,
    SearchOut,
)
from lorebase.embed.registry import Reachability, shown_name
from lorebase.ingest.progress import pass_seconds_left
from lorebase.search.query import Hit, SearchResponse
from lorebase.service import DocumentRecord, KnowledgeBase, Lorebase
from lorebase.types import Provenance


def kb_out(
    kb: KnowledgeBase,
    reach: Reachability | None = None,
    *,
    stale: int = 0,
    team: str | None = None,
    shared: str | None = None,
) -> KnowledgeBaseOut:
    """``reach``: whether the base's embedder answers (None: not checked); ``stale``: how
    many of its documents an older version made (:meth:`Lorebase.stale_documents`);
    ``team``: the name of the team it belongs to; ``shared``: the access a grant gives the
    caller to it (None: they see it by its scope)."""
    settings = kb.chunk_settings
    return KnowledgeBaseOut(
        id=kb.id,
        name=kb.name,
        description=kb.description,
        scope=kb.scope.value,
        team_id=kb.team_id,
        team=team,
        shared=shared,
        owner=kb.owner,
        state=kb.state.value,
        state_reason=kb.state_reason,
        documents=kb.documents,
        indexed=kb.indexed,
        pending=kb.pending,
        failed=kb.failed,
        chunks=kb.chunks,
        searchable=kb.searchable,
        embedded=kb.embedded,
        embedded_chunks=kb.embedded_chunks,
        bytes=kb.bytes,
        chunking=ChunkingIn(
            chunk_size=settings.chunk_size, max_tokens=settings.max_tokens, overlap=settings.overlap
        ),
        embedding_identity=kb.identity_key,
        embedder=shown_name(kb.embedder),
        embedder_next=kb.embedder_next,
        embedder_reachable=reach.reachable if reach is not None else None,
        embedder_problem=reach.detail if reach is not None else None,
        last_pass_finished_at=kb.pass_finished_at,
        progress_done=kb.progress_done,
        progress_total=kb.progress_total,
        seconds_left=_rounded(pass_seconds_left(kb)),
        stale_documents=stale,
    )


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 1)


def document_out(
    lb: Lorebase,
    document: DocumentRecord,
    fields: dict[str, list[str]] | None = None,
    user_tags: list[str] | None = None,
) -> DocumentOut:
    return DocumentOut(
        id=document.id,
        knowledge_base_id=document.kb_id,
        name=lb.display_name(document),
        kind=document.kind,
        size=document.size,
        state=document.state.value,
        reason=document.reason,
        chunks=document.chunk_count,
        title=document.title,
        page_count=document.page_count,
        updated_at=document.updated_at,
        fields=fields,
        user_tags=user_tags,
    )


def hit_out(hit: Hit, names: dict[str, str]) -> HitOut:
    """The API's hit: the provenance's fields beside the hit's own (flat, the public contract),
    an upload shown by its own name."""
    provenance = hit.provenance
    if provenance.document_id in names:
        provenance = replace(provenance, path=names[provenance.document_id])
    return HitOut.model_validate(
        _passage(hit, provenance)
        | {
            "text": hit.text,
            "before": hit.before,
            "after": hit.after,
            "passages": [
                _passage(p, replace(p.provenance, path=provenance.path)) for p in hit.passages
            ],
            "fields": {name: list(values) for name, values in hit.fields.items()},
        },
        from_attributes=True,
    )


def _passage(hit: Hit, provenance: Provenance) -> dict[str, Any]:
    """What a hit and each of its document's other passages share (:class:`PassageOut`)."""
    return {f.name: getattr(provenance, f.name) for f in fields(provenance)} | {
        "chunk_id": hit.chunk_id,
        "snippet": hit.snippet,
        "highlights": [list(mark) for mark in hit.highlights],
        "citation": provenance.citation(),
        "scores": hit.scores,
    }


def search_out(lb: Lorebase, response: SearchResponse) -> SearchOut:
    names: dict[str, str] = {}
    for hit in response.hits:
        document_id = hit.provenance.document_id
        if hit.provenance.uploaded and document_id not in names:
            name = lb.upload_name(document_id)
            if name is not None:
                names[document_id] = name
    return SearchOut(
        hits=[hit_out(hit, names) for hit in response.hits],
        mode=response.mode.value,
        timings_ms=response.timings_ms,
        warnings=response.warnings,
        notes=response.notes,
        rerank=response.rerank,
        no_answer=response.no_answer,
        embedding_identities={str(kb_id): key for kb_id, key in response.identities.items()},
        teams=_teams(lb, response),
    )


def _teams(lb: Lorebase, response: SearchResponse) -> dict[str, str]:
    """The team each team base among the hits belongs to, by base name (a base shared with
    the caller names its owners); asked of the accounts only when a hit is a team base's."""
    bases = {hit.provenance.knowledge_base_id for hit in response.hits}
    owned = {kb.name: kb.team_id for kb in map(lb.kb_by_id, sorted(bases)) if kb.team_id}
    if not owned:
        return {}
    names = lb.team_names()
    return {base: names[team] for base, team in owned.items() if team in names}
