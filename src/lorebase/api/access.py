"""The access log as plain ASGI middleware: method, route template, status, duration and a
request id for every request — never the query string, a file name or a body — and the
response headers every answer carries (its id, the page's security headers).

Plain ASGI rather than Starlette's ``BaseHTTPMiddleware``: that one runs the app in a task of
its own and streams the body through a memory channel, a cost every search paid (measured with
``bench/lean.py``'s REST part)."""

from __future__ import annotations

import logging
import time
import traceback
import uuid

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lorebase.api import problems
from lorebase.api.metrics import Metrics
from lorebase.web import security_headers

access_log = logging.getLogger("lorebase.access")
error_log = logging.getLogger("lorebase.errors")


class AccessLog:
    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = uuid.uuid4().hex[:12]
        started = time.perf_counter()
        status = 0
        extra = {"X-Request-Id": request_id, **security_headers(scope["path"])}

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                MutableHeaders(scope=message).update(extra)
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as error:  # unexpected: logged with its id, never its message
            frames = "\n".join(  # where, not what: no source lines, no message
                f"  {f.filename}:{f.lineno} in {f.name}"
                for f in traceback.extract_tb(error.__traceback__)
            )
            error_log.error(
                "unexpected %s in request id=%s\n%s", type(error).__name__, request_id, frames
            )
            if status:  # the answer had begun: the connection ends with it
                raise
            await problems.unexpected_problem(request_id)(scope, receive, sending)
        route = scope.get("route")  # the router sets it on the scope it was given
        template = getattr(route, "path", "unmatched")
        elapsed = (time.perf_counter() - started) * 1000
        self.metrics.requests.labels(template, str(status)).inc()
        access_log.info(
            "%s %s %s %.1fms id=%s", scope["method"], template, status, elapsed, request_id
        )
