"""/v1/knowledge-bases: create, list, get, update, delete; sources; sync now."""

from __future__ import annotations

import threading
from pathlib import Path

from fastapi import APIRouter, Response, status

from lorebase.api.convert import kb_out
from lorebase.api.deps import CallerDep, KbId, RowId, ServerDep
from lorebase.api.schemas import (
    KnowledgeBaseIn,
    KnowledgeBaseOut,
    KnowledgeBaseUpdate,
    SourceIn,
    SourceOut,
)
from lorebase.settings import ChunkSettings
from lorebase.store.base import Scope

router = APIRouter(prefix="/v1/knowledge-bases", tags=["knowledge bases"])


@router.get("", response_model=list[KnowledgeBaseOut])
def list_knowledge_bases(server: ServerDep, caller: CallerDep) -> list[KnowledgeBaseOut]:
    """The knowledge bases the caller may see, with totals and state."""
    return [kb_out(kb) for kb in server.visible_kbs(caller, totals=True)]


@router.post("", response_model=KnowledgeBaseOut, status_code=status.HTTP_201_CREATED)
def create_knowledge_base(
    body: KnowledgeBaseIn, server: ServerDep, caller: CallerDep
) -> KnowledgeBaseOut:
    scope = Scope(body.scope)
    team_id = server.accounts.get_team(body.team).id if body.team else None
    if scope is Scope.TEAM and team_id is None:
        from lorebase.errors import InvalidInput

        raise InvalidInput("a team knowledge base needs `team`")
    server.check_create(caller, scope, team_id)
    chunking = body.chunking
    settings = (
        ChunkSettings(chunk_size=chunking.chunk_size, max_tokens=chunking.max_tokens,
                      overlap=chunking.overlap)
        if chunking else server.lb.settings.chunk
    )  # fmt: skip
    kb = server.lb.store.create_kb(
        body.name, description=body.description, scope=scope, owner=caller.user.name,
        chunk_settings=settings, team_id=team_id if scope is Scope.TEAM else None,
    )  # fmt: skip
    server.audit(caller, "create_knowledge_base", f"kb:{kb.id}")
    return kb_out(kb)


@router.get("/{kb_id}", response_model=KnowledgeBaseOut)
def get_knowledge_base(kb_id: KbId, server: ServerDep, caller: CallerDep) -> KnowledgeBaseOut:
    return kb_out(server.kb_for(caller, kb_id, totals=True))


@router.patch("/{kb_id}", response_model=KnowledgeBaseOut)
def update_knowledge_base(
    kb_id: KbId, body: KnowledgeBaseUpdate, server: ServerDep, caller: CallerDep
) -> KnowledgeBaseOut:
    """Change the description or the chunking (documents become stale and are re-chunked by
    the next pass)."""
    kb = server.kb_for(caller, kb_id, write=True)
    if body.chunking is not None:
        c = body.chunking
        server.lb.store.update_kb_chunking(
            kb.id, ChunkSettings(chunk_size=c.chunk_size, max_tokens=c.max_tokens,
                                 overlap=c.overlap)
        )  # fmt: skip
    if body.description is not None:
        server.lb.store.set_kb_description(kb.id, body.description)
    server.audit(caller, "update_knowledge_base", f"kb:{kb.id}")
    return kb_out(server.lb.store.get_kb_by_id(kb.id))


@router.delete("/{kb_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_knowledge_base(kb_id: KbId, server: ServerDep, caller: CallerDep) -> Response:
    """Delete the base and everything in it: rows, vectors, lexical rows, blobs."""
    kb = server.kb_for(caller, kb_id, write=True)
    server.delete_kb(kb)
    server.audit(caller, "delete_knowledge_base", f"kb:{kb.id}")
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/{kb_id}/sources", response_model=list[SourceOut])
def list_sources(kb_id: KbId, server: ServerDep, caller: CallerDep) -> list[SourceOut]:
    kb = server.kb_for(caller, kb_id)
    return [
        SourceOut(id=s.id, path=s.path, label=s.label) for s in server.lb.store.list_sources(kb.id)
    ]


@router.post("/{kb_id}/sources", response_model=SourceOut, status_code=status.HTTP_201_CREATED)
def add_source(kb_id: KbId, body: SourceIn, server: ServerDep, caller: CallerDep) -> SourceOut:
    """Follow a folder on the server's machine (admins only: it reads the server's disk)."""
    kb = server.kb_for(caller, kb_id, write=True)
    if not caller.is_admin:
        from lorebase.errors import Forbidden

        raise Forbidden("only administrators may point a knowledge base at server folders")
    source = server.lb.add_source(kb.name, Path(body.path))
    server.audit(caller, "add_source", f"kb:{kb.id}")
    return SourceOut(id=source.id, path=source.path, label=source.label)


@router.delete("/{kb_id}/sources/{source_id}", status_code=status.HTTP_204_NO_CONTENT)
def remove_source(kb_id: KbId, source_id: RowId, server: ServerDep, caller: CallerDep) -> Response:
    kb = server.kb_for(caller, kb_id, write=True)
    server.lb.store.remove_source(kb.id, source_id)
    server.audit(caller, "remove_source", f"kb:{kb.id}")
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/{kb_id}/sync", status_code=status.HTTP_202_ACCEPTED)
def sync_now(kb_id: KbId, server: ServerDep, caller: CallerDep) -> dict[str, str]:
    """Start a pass over the base's folders now (it runs in the background)."""
    kb = server.kb_for(caller, kb_id, write=True)
    threading.Thread(target=server.lb.sync, kwargs={"kb": kb.name}, daemon=True).start()
    return {"status": "started"}
