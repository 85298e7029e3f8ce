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
    NotFound,
    Overloaded,
    Unauthorized,
    Unavailable,
    Unsupported,
)

PROBLEM_JSON = "application/problem+json"
PROBLEM_BASE = "/problems/"

# (status, type slug, title) per error class; the most specific class wins.
STATUS: dict[type[LorebaseError], tuple[int, str, str]] = {
    NotFound: (404, "not-found", "Not found"),
    Conflict: (409, "conflict", "Conflict"),
    ExtractionFailed: (422, "unreadable-document", "The document could not be read"),
    InvalidInput: (422, "invalid-input", "Invalid input"),
    Unsupported: (415, "unsupported", "Unsupported"),
    Unavailable: (503, "unavailable", "Unavailable"),
}


STATUS.update(
    {
        Unauthorized: (401, "unauthorized", "Unauthorized"),
        Forbidden: (403, "forbidden", "Forbidden"),
        Overloaded: (503, "overloaded", "Busy"),
    }
)


def problem(status: int, slug: str, title: str, detail: str, **extra: object) -> JSONResponse:
    body = {"type": PROBLEM_BASE + slug, "title": title, "status": status, "detail": detail}
    headers: dict[str, str] = {}
    if "retry_after" in extra:
        headers["Retry-After"] = str(extra.pop("retry_after"))
    if status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    return JSONResponse(body | extra, status_code=status, media_type=PROBLEM_JSON,
                        headers=headers)  # fmt: skip


def install(app: FastAPI) -> None:
    @app.exception_handler(LorebaseError)
    async def lorebase_error(request: Request, error: LorebaseError) -> JSONResponse:
        for cls in type(error).__mro__:
            if cls in STATUS:
                status, slug, title = STATUS[cls]  # type: ignore[index]
                break
        else:
            status, slug, title = 500, "internal", "Internal error"
        extra: dict[str, object] = {}
        if isinstance(error, Overloaded):
            extra["retry_after"] = error.retry_after
        if isinstance(error, ExtractionFailed):
            extra["reason"] = error.reason.value
        return problem(status, slug, title, str(error), **extra)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, error: RequestValidationError) -> JSONResponse:
        fields = [
            {"field": ".".join(str(p) for p in item.get("loc", ())[1:]) or "body",
             "message": item.get("msg", "invalid")}
            for item in error.errors()
        ]  # fmt: skip
        names = ", ".join(f["field"] for f in fields)
        return problem(422, "invalid-request", "Invalid request", f"check these fields: {names}",
                       errors=fields)  # fmt: skip

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        slugs = {404: "not-found", 405: "method-not-allowed", 413: "too-large"}
        slug = slugs.get(error.status_code, "http-error")
        return problem(error.status_code, slug, str(error.detail), str(error.detail))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception) -> JSONResponse:
        detail = "something went wrong on the server; the log has the request id"
        return problem(500, "internal", "Internal error", detail)
