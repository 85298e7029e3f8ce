"""Fixtures of the ``Store`` contract: ``backend`` (each entry of ``BACKENDS``) and ``store``
(a fresh, empty store of that backend)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from store_contract import BACKENDS, Backend

from lorebase.store.base import Store


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Backend:
    return BACKENDS[request.param]


@pytest.fixture
def store(backend: Backend, tmp_path: Path) -> Iterator[Store]:
    opened = backend.open(tmp_path)
    yield opened
    opened.close()
