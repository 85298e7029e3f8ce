"""The web page: static HTML, CSS and ES modules shipped in the package, served at ``/`` and
``/web/`` by the same server as ``/v1`` (no CDN, no build step). The page calls only the public
``/v1`` API; this module adds no data route.

Every response carries headers that keep the page to itself: a strict Content-Security-Policy
(scripts and styles from this origin only, no inline script or style attribute, no framing;
pictures from this origin or made by its own script — a document's page, fetched with the
session and shown from a ``blob:`` URL),
``X-Content-Type-Options: nosniff`` and ``Referrer-Policy: no-referrer``. The API docs pages
(``/docs``, ``/redoc``) run inline script of their own and get the other headers only.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from starlette.staticfiles import StaticFiles

STATIC = Path(str(files("lorebase.web") / "static"))
ASSETS_PATH = "/web"
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
DOCS_PATHS = ("/docs", "/redoc", "/static-offline-docs")


def security_headers(path: str) -> dict[str, str]:
    """The headers every response to ``path`` carries."""
    if path.startswith(DOCS_PATHS):
        return HEADERS
    return HEADERS | {"Content-Security-Policy": CONTENT_SECURITY_POLICY}


def install(app: FastAPI) -> None:
    """Serve the page at ``/`` and its assets under ``/web/``."""

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    app.mount(ASSETS_PATH, StaticFiles(directory=STATIC), name="web")
