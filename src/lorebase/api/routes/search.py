"""POST /v1/search: the same request as the library, over the caller's visible bases."""

from __future__ import annotations

import time

from fastapi import APIRouter

from lorebase.api.convert import search_out
from lorebase.api.deps import CallerDep, LbDep, MetricsDep
from lorebase.api.schemas import SearchIn, SearchOut

router = APIRouter(tags=["search"])


@router.post("/v1/search", response_model=SearchOut)
def search(body: SearchIn, lb: LbDep, metrics: MetricsDep, caller: CallerDep) -> SearchOut:
    """Search the given bases (ids), or every base the caller may see."""
    started = time.perf_counter()
    response = lb.search(body.request(), kb=list(body.knowledge_bases or ()), caller=caller)
    metrics.search_seconds.labels(body.mode).observe(time.perf_counter() - started)
    return search_out(lb, response)
