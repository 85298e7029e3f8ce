"""Fixtures of the ``Store`` contract: ``backend`` (each entry of ``BACKENDS``) and ``store``
(a fresh, empty store of that backend). A PostgreSQL test gets the session's server (started
on first use) and its databases are emptied after it for the next ones."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from contract.store_contract import BACKENDS, POSTGRES, Backend
from lorebase.store.base import Store


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    if request.param == "postgres":
        POSTGRES.attach(request.getfixturevalue("postgres_server"))
        try:
            yield BACKENDS[request.param]
        finally:
            POSTGRES.recycle()
    else:
        yield BACKENDS[request.param]


@pytest.fixture
def store(backend: Backend, tmp_path: Path) -> Iterator[Store]:
    opened = backend.open(tmp_path)
    yield opened
    opened.close()
