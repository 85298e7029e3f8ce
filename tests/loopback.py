"""The in-process API client the tests use: requests name 127.0.0.1 as their host, one the
server answers to (a host it does not is refused: see lorebase.api.guard.host_allowed)."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from starlette.types import ASGIApp

LOOPBACK = "http://127.0.0.1"


def client(app: ASGIApp, **options: Any) -> TestClient:
    """A ``TestClient`` over ``app`` whose requests name 127.0.0.1 (not ``testserver``)."""
    return TestClient(app, base_url=LOOPBACK, **options)
