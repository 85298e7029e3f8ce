"""The FastAPI application: routes, problem responses, and access logs without content."""

from __future__ import annotations

import gc
import socket
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi_offline import FastAPIOffline
from starlette.routing import Route
from starlette.types import ASGIApp

from lorebase import __version__
from lorebase.api import problems
from lorebase.api.access import AccessLog
from lorebase.api.guard import CloseAfterRefusal, KeyFirst
from lorebase.api.mcp_http import MCP_PATH, McpEndpoint
from lorebase.api.metrics import Metrics
from lorebase.api.routes import (
    account,
    ask,
    audit,
    documents,
    embedders,
    knowledge_bases,
    notes,
    own_keys,
    portable,
    search,
    session,
    sharing,
    system,
    tools,
    usage,
)
from lorebase.api.routes.documents import MAX_FILES_PER_UPLOAD
from lorebase.logs import configure_logging
from lorebase.service import Lorebase
from lorebase.web import install as install_page

SWITCH_INTERVAL_S = 0.001
"""How long a thread holds the interpreter before another waiting for it may take it (Python's
default: 5 ms)."""


def create_app(lb: Lorebase, *, manage: bool = True) -> FastAPI:
    """The app over ``lb``. With ``manage`` the app starts and stops lb's background work
    (the ingestion queue's workers, the folder watcher) with its own life span."""

    mcp = McpEndpoint(lb)
    metrics = Metrics(
        lb.documents_by_state,
        lambda: lb.queue.depth,
        lambda: (lb.queue.stats.accepted, lb.queue.stats.rejected),
        lambda: len(lb.damaged_keyword_indexes()),
        stale_documents=lb.stale_documents,
        seconds_left=lb.seconds_left,
        usage=lb.usage_meter.totals,
    )
    lb.observe_embedding(lambda kind, seconds: metrics.embed_batch_seconds.observe(seconds))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if manage:
            lb.start_serving()
        try:
            async with mcp.running():
                yield
        finally:
            if manage:
                lb.stop_serving()

    # Swagger UI and ReDoc from assets shipped in a package, not a CDN: nothing leaves the
    # machine, and /docs renders offline.
    app = FastAPIOffline(
        title="lorebase",
        version=__version__,
        description="A local-first knowledge base with hybrid retrieval and cited answers.",
        lifespan=lifespan,
        form_limits={"max_files": MAX_FILES_PER_UPLOAD, "max_fields": MAX_FILES_PER_UPLOAD},
    )
    app.add_middleware(KeyFirst, lb=lb)
    app.add_middleware(AccessLog, metrics=metrics)  # outermost: it logs refusals too
    app.state.lb = lb
    app.state.metrics = metrics
    problems.install(app)
    # A route, not a mount: `/mcp` itself answers (a mount would redirect it to `/mcp/`).
    app.router.routes.append(Route(MCP_PATH, endpoint=mcp, methods=["GET", "POST", "DELETE"]))
    for module in (
        knowledge_bases,
        sharing,
        embedders,
        documents,
        notes,
        search,
        system,
        tools,
        ask,
        session,
        account,
        own_keys,
        audit,
        usage,
        portable,
    ):
        app.include_router(module.router)
    app.include_router(tools.profiles_router)
    install_page(app)

    return app


def serving_app(lb: Lorebase, starting: Callable[[], int] | None = None) -> ASGIApp:
    """What uvicorn serves: the app, with refusals closing their connection. ``starting``:
    how many of the server's other processes are still starting (``/readyz`` waits for
    them)."""
    app = create_app(lb)
    if starting is not None:
        app.state.starting = starting
    return CloseAfterRefusal(app)


def run(
    lb: Lorebase,
    host: str = "127.0.0.1",
    port: int = 7700,
    *,
    listener: socket.socket | None = None,
    on_ready: Callable[[], object] | None = None,
) -> None:
    """Serve ``lb`` with uvicorn until SIGINT/SIGTERM, on HOST:PORT or on ``listener`` (the
    port as one of ``serve --processes N``'s other processes binds it). Open event streams are
    ended as the shutdown begins: uvicorn waits for every response to finish, and an event
    stream never would. With ``processes`` above 1 the first process starts the others once
    its own background work has started (:mod:`lorebase.api.processes`). ``on_ready`` is
    called once the server accepts connections."""
    import asyncio

    import uvicorn

    from lorebase.api.processes import ServingProcesses, child_count, shared_port

    configure_logging()
    # A request thread waiting for the interpreter gets it within 1 ms, not 5: a search
    # beside an indexing thread (bench/lean.py's ingest part).
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    children: ServingProcesses | None = None
    if listener is None and child_count(lb.settings) > 0:
        if lb.settings.serve.processes > 1:
            listener = shared_port(host, port)
        children = ServingProcesses(lb.settings, lb.lock.holder)
    config = uvicorn.Config(
        serving_app(lb, children.starting if children is not None else None),
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
    )

    class EndingStreams(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            # What the start made (modules, the app, the models' tables) lives as long as the
            # server: the collector stops walking it, and a request's collection pause shrinks
            # (measured: the young collections of 300 searches 73 -> 26 ms in all).
            gc.freeze()
            if children is not None:
                children.start()
            if on_ready is not None:
                on_ready()

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            lb.events.close()
            if children is not None:
                await asyncio.to_thread(children.stop)
            await super().shutdown(sockets)

    EndingStreams(config).run(sockets=None if listener is None else [listener])
