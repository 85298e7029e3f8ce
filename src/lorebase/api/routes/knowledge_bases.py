"""/v1/knowledge-bases: create, list, get, update, delete; sources; sync now."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Response, status

from lorebase.accounts.access import Caller, can_see
from lorebase.api.convert import kb_out
from lorebase.api.deps import CallerDep, KbId, LbDep, RowId
from lorebase.api.schemas import (
    ChunkingIn,
    KnowledgeBaseIn,
    KnowledgeBaseOut,
    KnowledgeBaseUpdate,
    ReembedIn,
    SourceIn,
    SourceOut,
)
from lorebase.service import KnowledgeBase, Lorebase
from lorebase.settings import ChunkSettings

router = APIRouter(prefix="/v1/knowledge-bases", tags=["knowledge bases"])


def _stale(lb: Lorebase, kb_id: int) -> int:
    """How many of the base's documents an older version made."""
    return lb.stale_documents([kb_id]).get(kb_id, 0)


def _chunking(body: ChunkingIn) -> ChunkSettings:
    return ChunkSettings(
        chunk_size=body.chunk_size, max_tokens=body.max_tokens, overlap=body.overlap
    )


def _seen(
    lb: Lorebase, caller: Caller, teams: dict[int, str] | None = None
) -> Callable[..., KnowledgeBaseOut]:
    """``kb_out`` naming the base's team and the caller's grant of it."""
    names = teams if teams is not None else lb.team_names()

    def out(kb: KnowledgeBase, *args: Any, **options: Any) -> KnowledgeBaseOut:
        grant = caller.shared.get(kb.id)
        shared = grant.value if grant is not None and not _by_scope(caller, kb) else None
        team = names.get(kb.team_id) if kb.team_id is not None else None
        return kb_out(kb, *args, team=team, shared=shared, **options)

    return out


def _by_scope(caller: Caller, kb: KnowledgeBase) -> bool:
    """Whether the caller would see the base without any grant."""
    return can_see(dataclasses.replace(caller, shared={}), kb)


@router.get("", response_model=list[KnowledgeBaseOut])
def list_knowledge_bases(lb: LbDep, caller: CallerDep) -> list[KnowledgeBaseOut]:
    """The knowledge bases the caller may see (those shared with them too: `shared` says
    how, `team` names the team each belongs to), with totals, state and embedder."""
    bases = lb.knowledge_bases(caller, totals=True)
    stale = lb.stale_documents([kb.id for kb in bases]) if bases else {}
    out = _seen(lb, caller)
    return [out(kb, lb.embedder_reachability(kb), stale=stale.get(kb.id, 0)) for kb in bases]


@router.post("", response_model=KnowledgeBaseOut, status_code=status.HTTP_201_CREATED)
def create_knowledge_base(body: KnowledgeBaseIn, lb: LbDep, caller: CallerDep) -> KnowledgeBaseOut:
    kb = lb.create_kb(
        body.name,
        description=body.description,
        scope=body.scope,
        team=body.team,
        chunk_settings=_chunking(body.chunking) if body.chunking else None,
        caller=caller,
        embedder=body.embedder,
    )
    return kb_out(kb, lb.embedder_reachability(kb))


@router.get("/{kb_id}", response_model=KnowledgeBaseOut)
def get_knowledge_base(kb_id: KbId, lb: LbDep, caller: CallerDep) -> KnowledgeBaseOut:
    kb = lb.kb_by_id(kb_id, caller, totals=True)
    return _seen(lb, caller)(kb, lb.embedder_reachability(kb), stale=_stale(lb, kb.id))


@router.patch("/{kb_id}", response_model=KnowledgeBaseOut)
def update_knowledge_base(
    kb_id: KbId, body: KnowledgeBaseUpdate, lb: LbDep, caller: CallerDep
) -> KnowledgeBaseOut:
    """Change the description or the chunking (documents become stale and are re-chunked by
    the next pass)."""
    kb = lb.kb_by_id(kb_id, caller, administer=True)
    chunking = _chunking(body.chunking) if body.chunking is not None else None
    updated = lb.update_kb(kb, chunking, description=body.description, caller=caller)
    return kb_out(updated, stale=_stale(lb, updated.id))


@router.post("/{kb_id}/reembed", response_model=KnowledgeBaseOut, status_code=202)
def reembed(kb_id: KbId, body: ReembedIn, lb: LbDep, caller: CallerDep) -> KnowledgeBaseOut:
    """Move the base to another named embedder: every document's vectors are made again in
    the background (vectors of identical texts reused); searches keep using the current
    vectors until all the new ones are made, then switch at once (`embedder_next` says it is
    under way). 404 for an unknown embedder, 503 when it does not answer now (nothing
    changes)."""
    kb = lb.kb_by_id(kb_id, caller, administer=True)
    moved = lb.reembed_kb(kb, body.embedder, caller=caller)
    lb.request_pass(moved)
    return kb_out(moved, lb.embedder_reachability(moved), stale=_stale(lb, moved.id))


@router.delete("/{kb_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_knowledge_base(kb_id: KbId, lb: LbDep, caller: CallerDep) -> Response:
    """Delete the base and everything in it: rows, vectors, lexical rows, blobs."""
    lb.delete_kb(lb.kb_by_id(kb_id, caller, administer=True), caller=caller)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/{kb_id}/sources", response_model=list[SourceOut])
def list_sources(kb_id: KbId, lb: LbDep, caller: CallerDep) -> list[SourceOut]:
    kb = lb.kb_by_id(kb_id, caller)
    return [
        SourceOut(id=s.id, path=s.path, label=s.label, kind=s.kind.value) for s in lb.sources(kb)
    ]


@router.post("/{kb_id}/sources", response_model=SourceOut, status_code=status.HTTP_201_CREATED)
def add_source(kb_id: KbId, body: SourceIn, lb: LbDep, caller: CallerDep) -> SourceOut:
    """Follow a folder on the server's machine (admins only: it reads the server's disk)."""
    source = lb.add_source(lb.kb_by_id(kb_id, caller, administer=True), body.path, caller=caller)
    return SourceOut(id=source.id, path=source.path, label=source.label, kind=source.kind.value)


@router.delete("/{kb_id}/sources/{source_id}", status_code=status.HTTP_204_NO_CONTENT)
def remove_source(kb_id: KbId, source_id: RowId, lb: LbDep, caller: CallerDep) -> Response:
    lb.remove_source(lb.kb_by_id(kb_id, caller, administer=True), source_id, caller=caller)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/{kb_id}/sync", status_code=status.HTTP_202_ACCEPTED)
def sync_now(kb_id: KbId, lb: LbDep, caller: CallerDep) -> dict[str, str]:
    """Queue a pass over the base's folders (it runs in the background; asked for again
    while it waits, it is still one pass). Whoever may change the base's documents may ask (a
    read-write grantee too): the pass reads only the folders its administrators gave it."""
    lb.request_pass(lb.kb_by_id(kb_id, caller, write=True))
    return {"status": "queued"}
