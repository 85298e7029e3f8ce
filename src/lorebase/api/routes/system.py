"""Health, readiness, metrics and the event stream."""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.responses import StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from lorebase.api.deps import ApiKeyDep, CallerDep, ServerDep
from lorebase.errors import NotFound

router = APIRouter(tags=["system"])


@router.get("/healthz")
def healthz() -> dict[str, str]:
    """The process answers."""
    return {"status": "ok"}


@router.get("/readyz")
def readyz(server: ServerDep) -> Response:
    """The store answers and the workers run."""
    try:
        server.lb.store.list_kbs()
    except Exception:
        return Response('{"status": "unavailable"}', status_code=503,
                        media_type="application/json")  # fmt: skip
    return Response('{"status": "ready"}', media_type="application/json")


@router.get("/metrics")
def metrics(server: ServerDep) -> Response:
    """Prometheus text format."""
    return Response(generate_latest(server.metrics.registry), media_type=CONTENT_TYPE_LATEST)


@router.get("/v1/events")
async def events(server: ServerDep, caller: CallerDep, key: ApiKeyDep) -> StreamingResponse:
    """Server-sent events: document and knowledge-base state changes (ids, states, counts —
    never names or text) for the bases the caller may see."""
    visible = {kb.id for kb in server.visible_kbs(caller)}

    def may_see(kb_id: int) -> bool:
        """Asked per event, with the caller looked up afresh: a revoked key ends the stream
        (Unauthorized), a lost team membership or a deleted base stops its events."""
        try:
            server.kb_for(server.caller(key), kb_id)
        except NotFound:
            return False
        return True

    return StreamingResponse(server.events.stream(visible, may_see),
                             media_type="text/event-stream")  # fmt: skip
