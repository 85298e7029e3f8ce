"""The store an integration test runs against, as the tests' ``backend`` fixture gives it
(see ``conftest.py``): what a ``Lorebase``, its ``Settings`` or a ``python -m lorebase`` child
gain when it is PostgreSQL."""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lorebase.settings import Settings
from lorebase.vault.keys import DataKey

BACKENDS = ("sqlite", "postgres")


@dataclass(frozen=True)
class StoreBackend:
    """What a test adds to a ``Lorebase``, a ``Settings`` or a subprocess for its store."""

    name: str
    url: str | None = None
    key: DataKey | None = field(default=None, repr=False)

    @property
    def postgres(self) -> bool:
        return self.url is not None

    def settings(self, data_dir: Path, **options: Any) -> Settings:
        return Settings(data_dir=data_dir, store_url=self.url, **options)

    def data_key(self) -> DataKey:
        """The key to hand ``open_lorebase`` (the backend's own, or a fresh one)."""
        return self.key or DataKey.generate()

    def environ(self) -> dict[str, str]:
        """``os.environ`` plus what a ``python -m lorebase`` child needs for this store."""
        env = dict(os.environ)
        if self.url is None:
            env.pop("LOREBASE_STORE", None)
        elif self.key is not None:
            env.update(LOREBASE_STORE=self.url, LOREBASE_DATA_KEY=self.key.to_base64())
        return env

    # -- what the store holds, read past lorebase (each backend's own SQL) ----------------------
    def rows(self, data_dir: Path, sql: str) -> list[tuple[Any, ...]]:
        """The rows ``sql`` reads from the store of ``data_dir`` (SQLite: its file)."""
        if self.url is None:
            conn = sqlite3.connect(data_dir / "lorebase.db", timeout=5)
            try:
                return conn.execute(sql).fetchall()
            finally:
                conn.close()
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as pg:
            return pg.execute(sql).fetchall()

    def rows_if_ready(self, data_dir: Path, sql: str) -> list[tuple[Any, ...]] | None:
        """:meth:`rows`, or None while the store is not there yet or busy (a poller waits)."""
        if self.url is None:
            if not (data_dir / "lorebase.db").exists():
                return None
            try:
                return self.rows(data_dir, sql)
            except sqlite3.OperationalError:
                return None
        import psycopg

        try:
            return self.rows(data_dir, sql)
        except psycopg.Error:  # the tables are not made yet
            return None

    def blobs(self, data_dir: Path) -> dict[str, bytes]:
        """The stored originals as kept (sealed), by name: SQLite the files of ``blobs/``
        (a writer's temporary files included), PostgreSQL the rows of ``blobs``, parts
        joined."""
        if self.url is None:
            folder = data_dir / "blobs"
            if not folder.is_dir():
                return {}
            return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
        if not self.rows(data_dir, "SELECT to_regclass('blobs') IS NOT NULL")[0][0]:
            return {}
        stored: dict[str, bytes] = {}
        for blob_id, data in self.rows(data_dir, "SELECT id, data FROM blobs ORDER BY id, part"):
            stored[blob_id] = stored.get(blob_id, b"") + bytes(data)
        return stored

    def dump(self, data_dir: Path) -> bytes:
        """Everything the store keeps, as bytes to search for what must not be there:
        SQLite the database file, PostgreSQL every row of every table as text."""
        if self.url is None:
            return (data_dir / "lorebase.db").read_bytes()
        tables = self.rows(
            data_dir,
            "SELECT quote_ident(table_schema) || '.' || quote_ident(table_name) "
            "FROM information_schema.tables WHERE table_type = 'BASE TABLE' "
            "AND table_schema NOT IN ('pg_catalog', 'information_schema')",
        )
        text = [
            row[0]
            for (table,) in tables
            for row in self.rows(data_dir, f"SELECT t::text FROM {table} t")
        ]
        return "\n".join(text).encode()
