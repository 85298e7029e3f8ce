"""Health, readiness, metrics and the event stream."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from lorebase.api.deps import ApiKeyDep, CallerDep, LbDep, MetricsDep, SessionDep
from lorebase.errors import Forbidden

router = APIRouter(tags=["system"])


@router.get("/healthz")
def healthz() -> dict[str, str]:
    """The process answers."""
    return {"status": "ok"}


@router.get("/readyz")
def readyz(lb: LbDep, request: Request) -> Response:
    """The store answers, the workers run, and every process of ``serve --processes N`` has
    started once (until then the first answers alone: 503 ``starting``)."""
    try:
        lb.knowledge_bases(totals=False)
    except Exception:
        return Response('{"status": "unavailable"}', status_code=503, media_type="application/json")
    starting = getattr(request.app.state, "starting", None)
    waiting = starting() if starting is not None else 0
    if waiting:
        body = f'{{"status": "starting", "processes_starting": {int(waiting)}}}'
        return Response(body, status_code=503, media_type="application/json")
    return Response('{"status": "ready"}', media_type="application/json")


@router.get("/metrics")
def metrics(registry: MetricsDep, caller: CallerDep) -> Response:
    """Prometheus text format, for administrators (with keys on, give the scraper an admin key:
    `authorization: {credentials: KEY}` in Prometheus): the counts span every base."""
    if not caller.is_admin:
        raise Forbidden("the metrics count every knowledge base; they need an administrator's key")
    return Response(generate_latest(registry.registry), media_type=CONTENT_TYPE_LATEST)


@router.get("/v1/events")
async def events(
    lb: LbDep, caller: CallerDep, key: ApiKeyDep, session: SessionDep
) -> StreamingResponse:
    """Server-sent events: document and knowledge-base state changes (ids, states, counts —
    never names or text) for the bases the caller may see. Each event is judged with the
    caller looked up afresh: a revoked key (or an ended session) ends the stream, a lost team
    membership or a deleted base stops its events."""
    visible = {kb.id for kb in lb.knowledge_bases(caller, totals=False)}

    def may_see(kb_id: int) -> bool:
        return lb.may_see(key, kb_id, session)

    return StreamingResponse(lb.events.stream(visible, may_see), media_type="text/event-stream")
