"""Fixtures of the integration tests: ``backend``, the store a test runs against (``sqlite``:
the file of the data directory; ``postgres``: a fresh database of the session's PostgreSQL,
with a data key, since a shared store keeps none in the data directory)."""

from __future__ import annotations

import pytest

from integration.store_backends import BACKENDS, StoreBackend
from lorebase.vault.keys import DataKey


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> StoreBackend:
    if request.param == "postgres":
        return StoreBackend("postgres", request.getfixturevalue("postgres_url"), DataKey.generate())
    return StoreBackend("sqlite")
