"""Shared test helpers. Network access is blocked for every test (see pyproject addopts)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DOCS = REPO.parent / "shared" / "data" / "docs"
SHARED_IR = REPO.parent / "shared" / "data" / "ir"


@pytest.fixture(scope="session")
def shared_docs() -> Path:
    """The real public documents in ../shared/data/docs; skips when they are absent."""
    if not SHARED_DOCS.is_dir():
        pytest.skip(f"real-corpus test: {SHARED_DOCS} is absent (CI always has it)")
    return SHARED_DOCS
