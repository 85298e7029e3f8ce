"""Errors as RFC 9457 problem details (``application/problem+json``), one ``type`` per class.

Messages are lorebase's own (fixed, content-free); an unexpected exception becomes a 500 whose
body says nothing about it.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from lorebase.errors import (
    Conflict,
    ExtractionFailed,
    Forbidden,
    InvalidInput,
    LorebaseError,
    MisdirectedHost,
    NotFound,
    Overloaded,
    ServerFault,
    TooLarge,
    Unauthorized,
    Unavailable,
    Unsupported,
    resolve,
)

PROBLEM_JSON = "application/problem+json"
PROBLEM_BASE = "/problems/"

# (status, type slug, title) per error class, resolved along the MRO (see lorebase.errors).
PROBLEMS: dict[type[LorebaseError], tuple[int, str, str]] = {
    LorebaseError: (500, "internal", "Internal error"),
    InvalidInput: (422, "invalid-input", "Invalid input"),
    TooLarge: (413, "too-large", "Content too large"),
    ExtractionFailed: (422, "unreadable-document", "The document could not be read"),
    NotFound: (404, "not-found", "Not found"),
    Conflict: (409, "conflict", "Conflict"),
    Unsupported: (415, "unsupported", "Unsupported"),
    Unavailable: (503, "unavailable", "Unavailable"),
    Overloaded: (503, "overloaded", "Busy"),
    Unauthorized: (401, "unauthorized", "Unauthorized"),
    Forbidden: (403, "forbidden", "Forbidden"),
    MisdirectedHost: (421, "unknown-host", "Misdirected request"),
    ServerFault: (500, "server-fault", "Server fault"),
}

# Problems the web framework raises before lorebase is asked: (slug, title) per status.
REQUEST_PROBLEMS: dict[int, tuple[str, str]] = {
    404: ("not-found", "Not found"),
    405: ("method-not-allowed", "Method not allowed"),
    413: ("too-large", "Content too large"),
    422: ("invalid-request", "Invalid request"),
}
OTHER_HTTP_ERROR = "http-error"  # any other status the framework answers with


def problem(status: int, slug: str, title: str, detail: str, **extra: object) -> JSONResponse:
    body = {"type": PROBLEM_BASE + slug, "title": title, "status": status, "detail": detail}
    headers: dict[str, str] = {}
    if "retry_after" in extra:
        headers["Retry-After"] = str(extra.pop("retry_after"))
    if status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    return JSONResponse(body | extra, status_code=status, media_type=PROBLEM_JSON, headers=headers)


def problem_for(error: LorebaseError) -> JSONResponse:
    """The problem response for a lorebase error, from :data:`PROBLEMS`."""
    status, slug, title = resolve(PROBLEMS, error)
    extra: dict[str, object] = {}
    if isinstance(error, Overloaded):
        extra["retry_after"] = error.retry_after
    if isinstance(error, ExtractionFailed):
        extra["reason"] = error.reason.value
    return problem(status, slug, title, str(error), **extra)


def install(app: FastAPI) -> None:
    @app.exception_handler(LorebaseError)
    async def lorebase_error(request: Request, error: LorebaseError) -> JSONResponse:
        return problem_for(error)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, error: RequestValidationError) -> JSONResponse:
        fields = [
            {
                "field": ".".join(str(p) for p in item.get("loc", ())[1:]) or "body",
                "message": item.get("msg", "invalid"),
            }
            for item in error.errors()
        ]
        names = ", ".join(f["field"] for f in fields)
        slug, title = REQUEST_PROBLEMS[422]
        return problem(422, slug, title, f"check these fields: {names}", errors=fields)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        slug, _ = REQUEST_PROBLEMS.get(error.status_code, (OTHER_HTTP_ERROR, ""))
        return problem(error.status_code, slug, str(error.detail), str(error.detail))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception) -> JSONResponse:
        return unexpected_problem(None)


def unexpected_problem(request_id: str | None) -> JSONResponse:
    """An unexpected error: nothing about it in the body, but the request id the log line
    carries, so an operator can find it."""
    detail = "something went wrong on the server; the server's log has this request id"
    status, slug, title = PROBLEMS[LorebaseError]
    extra = {"request_id": request_id} if request_id else {}
    return problem(status, slug, title, detail, **extra)
