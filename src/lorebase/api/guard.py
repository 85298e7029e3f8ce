"""Checks made from the request line and headers alone, before any body is read.

FastAPI reads (and spools) a request's body before it resolves the route's dependencies, so a
key checked as a dependency comes after the body: a client without a key could make the server
spool a gigabyte before hearing ``401``. :class:`KeyFirst` answers ``401`` from the headers
first. It bounds every body too (:func:`lorebase.api.limits.body_limit`: small for JSON, the
upload limit for the upload route): a ``Content-Length`` over the limit is refused before the
key is even looked at, and a body streamed without one is counted as it arrives; ``413``
problem+json either way, with the security headers like every other error.

Credentials are an API key (``Authorization: Bearer`` or ``X-API-Key``) or, for the web page,
the session cookie :data:`SESSION_COOKIE` (HttpOnly, SameSite=Strict). A browser sends a cookie
by itself, so a change made with one (any method but GET, HEAD, OPTIONS) must also carry the
session's CSRF token in :data:`CSRF_HEADER`, which only the page was told. And a change made
without a key — with the cookie, or with keys off on loopback — is refused when the browser
says it comes from another site (``Sec-Fetch-Site``, ``Origin``): a form on a hostile page
cannot post to lorebase.

Before all of it, the ``Host`` a request names must be one this server answers to
(:func:`host_allowed`): the loopback names, the address it is bound to, and the names the
operator allowed (``--allowed-host``). A page of another site can make a browser reach a
loopback server under a name it controls (DNS rebinding); the browser then sends that name as
``Host`` — and as ``Origin``, so the cross-site check alone cannot tell. Such a request gets
``421`` whatever credentials it carries.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Collection
from urllib.parse import urlsplit

import anyio.to_thread
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import cookie_parser
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lorebase.api.limits import body_limit
from lorebase.api.problems import problem, problem_for
from lorebase.errors import Forbidden, LorebaseError, MisdirectedHost, Unauthorized
from lorebase.service import Lorebase
from lorebase.service.access import csrf_token

# Paths that answer without a key: health, readiness, metrics, the API's own description.
KEYED_PREFIXES = ("/v1/", "/mcp")
# Answers without credentials: where a key is exchanged for a session.
SESSION_PATH = "/v1/session"
SESSION_COOKIE = "lorebase_session"
CSRF_HEADER = "x-lorebase-csrf"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CALLER_STATE = "lorebase_caller"  # where KeyFirst leaves the caller it authenticated


def api_key(headers: Headers) -> str | None:
    """The key a request carries: `Authorization: Bearer KEY`, else `X-API-Key`."""
    authorization = headers.get("authorization")
    if authorization and authorization.lower().startswith("bearer "):
        return authorization[7:].strip()
    return headers.get("x-api-key")


def session_token(headers: Headers) -> str | None:
    """The sign-in session a request carries in its cookie, if any."""
    cookie = headers.get("cookie")
    return (cookie_parser(cookie).get(SESSION_COOKIE) or None) if cookie else None


def credentials(headers: Headers) -> tuple[str | None, str | None]:
    """(key, session): a key when the request carries one, else its session cookie."""
    key = api_key(headers)
    return (key, None) if key else (None, session_token(headers))


LOOPBACK_NAMES = frozenset({"localhost", "[::1]"})
SHOWN_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")  # how messages list the loopback names
ANY_HOST = "*"
WILDCARD_BINDS = frozenset({"0.0.0.0", "::", ""})


def host_name(header: str) -> str:
    """The host a ``Host`` header names: lower-case, without its port or a final dot
    (``[::1]:7700`` -> ``[::1]``, ``Docs.Example:80`` -> ``docs.example``). Pure."""
    value = header.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        return value[: end + 1] if end > 0 else value
    if value.count(":") == 1:
        value = value.split(":", 1)[0]
    return value.rstrip(".")


def url_host(address: str) -> str:
    """An address as a URL writes it: an IPv6 address in brackets. Pure."""
    if ":" in address and not address.startswith("["):
        return f"[{address.lower()}]"
    return address.lower()


def is_loopback_name(name: str) -> bool:
    """``localhost``, ``[::1]`` or an address in 127.0.0.0/8. Pure."""
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False


def host_allowed(header: str | None, allowed: Collection[str], bound: str) -> bool:
    """Whether a request naming ``header`` as its host is for this server: a loopback name,
    the address it is ``bound`` to (unless that is every address), or one of ``allowed``
    (``*``: any). A request without a ``Host`` is refused. Pure."""
    if ANY_HOST in allowed:
        return True
    if not header:
        return False
    name = host_name(header)
    if is_loopback_name(name):
        return True
    if bound not in WILDCARD_BINDS and name == url_host(bound):
        return True
    return name in {url_host(host_name(item)) for item in allowed}


def answered_names(allowed: Collection[str], bound: str) -> list[str]:
    """The host names :func:`host_allowed` accepts, as the start-up line lists them: the
    loopback names, the bound address (unless it is every address), the allowed names. Pure."""
    names = list(SHOWN_LOOPBACK)
    if bound not in WILDCARD_BINDS and url_host(bound) not in names:
        names.append(url_host(bound))
    return names + [name for name in allowed if name not in names]


MISDIRECTED = (
    "this server answers to its loopback names ({names}) and the host names its operator "
    "allowed (`lorebase serve --allowed-host NAME`); the request names another host, as a page "
    "of another site does when it tries DNS rebinding"
)


def needs_key(path: str) -> bool:
    return path == "/mcp" or path.startswith(KEYED_PREFIXES)


REFUSALS = (400, 401, 413, 421)  # malformed, no key, too large, another host


class CloseAfterRefusal:
    """A request refused before its body was read (malformed: 400; no key: 401; over the
    limit: 413) gets ``Connection: close``, so the server stops reading what the client is
    still sending instead of draining it for the next request on the connection (ASGI
    middleware, outermost)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def closing(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] in REFUSALS:
                headers = [(k, v) for k, v in message.get("headers", []) if k != b"connection"]
                message = {**message, "headers": [*headers, (b"connection", b"close")]}
            await send(message)

        await self.app(scope, receive, closing)


def cross_site(headers: Headers) -> bool:
    """Whether the browser says the request comes from a page of another origin."""
    if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        return True
    origin = headers.get("origin")
    return origin is not None and urlsplit(origin).netloc != headers.get("host", "")


def check_browser_change(method: str, headers: Headers, session: str | None) -> None:
    """``Forbidden`` for a change without a key that another site could have caused."""
    if method in SAFE_METHODS:
        return
    if cross_site(headers):
        raise Forbidden("a change from a page of another site is refused; use lorebase's page")
    if session is not None:
        sent = headers.get(CSRF_HEADER, "")
        if not hmac.compare_digest(sent.encode(), csrf_token(session).encode()):
            raise Forbidden(
                "a change made with the sign-in cookie must carry the session's CSRF token in "
                "the X-Lorebase-CSRF header (GET /v1/session tells it)"
            )


class KeyFirst:
    """Refuse a request naming a host this server does not answer to, a keyed path without
    valid credentials before the body is read, and a change made by a browser without the
    page's protection (ASGI middleware)."""

    def __init__(self, app: ASGIApp, lb: Lorebase) -> None:
        self.app = app
        self.lb = lb

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        serve = self.lb.settings.serve
        headers = Headers(scope=scope)
        if not host_allowed(headers.get("host"), serve.allowed_hosts, serve.host):
            error = MisdirectedHost(MISDIRECTED.format(names=", ".join(SHOWN_LOOPBACK)))
            await self._refuse(error, scope, receive, send)
            return
        if scope["type"] == "websocket":
            await self.app(scope, receive, send)
            return
        limit = body_limit(scope["method"], scope["path"], serve.max_upload_bytes)
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > limit:
            await _too_large(limit)(scope, receive, send)  # before the key: nothing is read
            return
        if needs_key(scope["path"]):
            key, session = credentials(headers)
            try:
                if serve.auth and scope["path"] != SESSION_PATH:
                    caller = await anyio.to_thread.run_sync(self.lb.authenticate, key, session)
                    # The route's caller dependency takes it from here: looked up once.
                    scope.setdefault("state", {})[CALLER_STATE] = caller
                if key is None:
                    check_browser_change(scope["method"], headers, session if serve.auth else None)
            except (Unauthorized, Forbidden) as error:
                await self._refuse(error, scope, receive, send)
                return
        await self.app(scope, _counted(receive, limit), send)

    @staticmethod
    async def _refuse(error: LorebaseError, scope: Scope, receive: Receive, send: Send) -> None:
        response = problem_for(error)
        response.headers["Connection"] = "close"
        await response(scope, receive, send)


TOO_LARGE = "the body is over this route's limit of {limit} bytes; send less"


def _too_large(limit: int) -> ASGIApp:
    """The problem response for a body over ``limit`` bytes, closing the connection."""
    response = problem(413, "too-large", "Content too large", TOO_LARGE.format(limit=limit))
    response.headers["Connection"] = "close"
    return response


def _counted(receive: Receive, limit: int) -> Receive:
    """``receive``, raising ``413`` as soon as the body streamed in passes ``limit`` bytes (a
    body without a ``Content-Length``): the route's error handling answers it as a problem."""
    received = 0

    async def counting() -> Message:
        nonlocal received
        message = await receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > limit:
                raise HTTPException(status_code=413, detail=TOO_LARGE.format(limit=limit))
        return message

    return counting
