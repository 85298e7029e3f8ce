"""POST /v1/search: the same request as the library, over the caller's visible bases."""

from __future__ import annotations

import time

from fastapi import APIRouter

from lorebase.api.convert import search_out
from lorebase.api.deps import CallerDep, ServerDep
from lorebase.api.schemas import SearchIn, SearchOut

router = APIRouter(tags=["search"])


@router.post("/v1/search", response_model=SearchOut)
def search(body: SearchIn, server: ServerDep, caller: CallerDep) -> SearchOut:
    if body.knowledge_bases:
        kbs = [server.kb_for(caller, kb_id) for kb_id in body.knowledge_bases]
    else:
        kbs = server.visible_kbs(caller)
    if not kbs:
        from lorebase.errors import NotFound

        raise NotFound("you can see no knowledge base yet; create one first")
    started = time.perf_counter()
    response = server.lb.search(
        body.query, kb=[kb.name for kb in kbs], top_k=body.top_k, mode=body.mode,
        rerank=body.rerank, document_ids=body.document_ids, neighbors=body.neighbors,
    )  # fmt: skip
    server.metrics.search_seconds.labels(body.mode).observe(time.perf_counter() - started)
    return search_out(server, response)
