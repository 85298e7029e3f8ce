"""The service over a PostgreSQL store, as an operator meets it: what it needs (the shared
data key), what it refuses (a worker without a shared store), what it says (the store, never
its password), and uploads whose originals live in the database."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from typer.testing import CliRunner

from lorebase.app import open_lorebase
from lorebase.cli.main import app
from lorebase.embed.fake import FakeEmbedder
from lorebase.errors import InvalidInput, Overloaded, Unavailable
from lorebase.settings import ServeSettings, Settings
from lorebase.store.postgres.database import PostgresDatabase, redacted
from lorebase.store.states import DocumentState
from lorebase.vault.keys import DataKey
from waiting import wait_until

if TYPE_CHECKING:
    from postgres_server import PostgresServer

runner = CliRunner()


def test_a_store_that_is_not_a_postgres_url_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="postgresql://"):
        Settings(data_dir=tmp_path, store_url="mysql://somewhere/db")


def test_messages_name_the_database_never_its_password() -> None:
    assert redacted("postgresql://alice:s3cret@db.internal:6543/kb") == (
        "postgresql://alice@db.internal:6543/kb"
    )
    with pytest.raises(Unavailable) as caught:
        PostgresDatabase("postgresql://alice:s3cret@127.0.0.1:1/kb")
    assert "s3cret" not in str(caught.value) and "127.0.0.1:1/kb" in str(caught.value)


def test_uploads_over_postgres_need_the_shared_data_key(tmp_path: Path, postgres_url: str) -> None:
    settings = Settings(data_dir=tmp_path, store_url=postgres_url)
    with open_lorebase(settings=settings, embedder=FakeEmbedder()) as lb:
        kb = lb.create_kb("notes")
        with pytest.raises(InvalidInput, match="LOREBASE_DATA_KEY"):
            lb.upload(kb, "a.md", [b"# A\n\nalpha"])
        assert not (tmp_path / "data.key").exists()  # no machine-local key was made


def test_searches_over_postgres_take_no_turns_and_over_sqlite_one_at_a_time(
    tmp_path: Path, postgres_url: str
) -> None:
    """Over the embedded store a process's searches run one at a time (lorebase.search
    .turns); over PostgreSQL a search waits on the database, and all run at once."""
    over_postgres = Settings(data_dir=tmp_path / "pg", store_url=postgres_url)
    with open_lorebase(settings=over_postgres, embedder=FakeEmbedder()) as lb:
        assert lb.searcher.turns.at_once is None
    with open_lorebase(
        settings=Settings(data_dir=tmp_path / "sqlite"), embedder=FakeEmbedder()
    ) as lb:
        assert lb.searcher.turns.at_once == 1


def test_an_upload_is_stored_in_the_database_and_indexed(tmp_path: Path, postgres_url: str) -> None:
    key = DataKey.generate().to_base64()
    first = Settings(data_dir=tmp_path / "one", store_url=postgres_url, data_key=key)
    with open_lorebase(settings=first, embedder=FakeEmbedder()) as lb:
        kb = lb.create_kb("notes")
        record, created = lb.upload(kb, "turbines.md", [b"# Turbines\n\nFilm cooling of blades."])
        assert created
    assert not (tmp_path / "one" / "blobs").exists()  # the original is not on this machine
    # Another process, another machine's data directory: it finds the original and indexes it.
    second = Settings(data_dir=tmp_path / "two", store_url=postgres_url, data_key=key)
    with open_lorebase(settings=second, embedder=FakeEmbedder()) as lb:
        lb.start_serving()
        try:
            assert lb.queue.join(timeout=30)
        finally:
            lb.stop_serving()
        _, document = lb.document(record.id)
        assert document.state is DocumentState.INDEXED
        assert lb.display_name(document) == "turbines.md"
        assert lb.search("film cooling", kb="notes").hits


def test_status_names_the_store_without_its_password(tmp_path: Path, postgres_url: str) -> None:
    options = ["--data-dir", str(tmp_path), "--embedder", "fake", "--store", postgres_url]
    result = runner.invoke(app, [*options, "status"])
    assert result.exit_code == 0, result.output
    assert "store: postgresql://postgres@" in result.output
    as_json = runner.invoke(app, [*options, "status", "--json"])
    assert json.loads(as_json.output)["store"].startswith("postgresql://postgres@")


@pytest.mark.parametrize(
    "command", [["worker"], ["serve", "--no-ingest", "--port", "1"]], ids=["worker", "serve"]
)
def test_scale_out_commands_need_a_shared_store(tmp_path: Path, command: list[str]) -> None:
    result = runner.invoke(app, ["--data-dir", str(tmp_path), "--embedder", "fake", *command])
    assert result.exit_code == 2, result.output
    assert "--store postgresql://" in result.output


def test_the_queue_bound_holds_across_processes_and_nothing_is_lost(
    tmp_path: Path, postgres_url: str
) -> None:
    """Two API processes share one bound of waiting jobs; a refused upload is kept and
    indexed once a worker drains the queue."""
    key = DataKey.generate().to_base64()

    def settings(name: str) -> Settings:
        serve = ServeSettings(queue_size=2, workers=1, watch=False)
        return Settings(data_dir=tmp_path / name, store_url=postgres_url, data_key=key, serve=serve)

    with (
        open_lorebase(settings=settings("api1"), embedder=FakeEmbedder()) as one,
        open_lorebase(settings=settings("api2"), embedder=FakeEmbedder()) as two,
    ):
        kb = one.create_kb("notes")
        one.upload(kb, "a.md", [b"# A\n\nalpha"])
        two.upload(kb, "b.md", [b"# B\n\nbravo"])
        with pytest.raises(Overloaded) as refused:
            two.upload(kb, "c.md", [b"# C\n\ncharlie"])  # the third waiting job, anywhere
        assert refused.value.retry_after > 0
        assert one.queue.depth == 2
    with open_lorebase(settings=settings("worker"), embedder=FakeEmbedder()) as worker:
        worker.start_serving()
        try:
            wait_until(
                lambda: {d.state for d in worker.documents("notes")} == {DocumentState.INDEXED},
                what="every document indexed",
            )
        finally:
            worker.stop_serving()
        assert [d.state for d in worker.documents("notes")] == [DocumentState.INDEXED] * 3


def test_a_database_without_the_extensions_says_what_to_ask_for(
    postgres_server: PostgresServer,
) -> None:
    """A role that may not create the extensions (not a superuser, no CREATE on the database)
    is told which one is missing and what its administrator should run."""
    import psycopg

    name = "no_extensions"
    with psycopg.connect(postgres_server.admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
        conn.execute("DROP ROLE IF EXISTS plain_user")
        conn.execute("CREATE ROLE plain_user LOGIN")
    url = postgres_server.url(name).replace("postgres@", "plain_user@", 1)
    try:
        with pytest.raises(Unavailable, match="CREATE EXTENSION vector"):
            PostgresDatabase(url)
    finally:
        postgres_server.drop_database(postgres_server.url(name))


def test_an_upload_whose_workers_keep_dying_fails_with_a_reason(
    tmp_path: Path, postgres_url: str
) -> None:
    key = DataKey.generate().to_base64()
    settings = Settings(data_dir=tmp_path, store_url=postgres_url, data_key=key)
    with open_lorebase(settings=settings, embedder=FakeEmbedder()) as lb:
        kb = lb.create_kb("notes")
        record, _ = lb.upload(kb, "a.md", [b"# A\n\nalpha"])
        lb.abandon_upload(kb.id, record.id)  # what the jobs table does at the fourth claim
        _, document = lb.document(record.id)
        assert document.state is DocumentState.FAILED and document.reason == "worker_lost"
        lb.abandon_upload(kb.id, "0" * 32)  # deleted meanwhile: nothing to fail, no error
